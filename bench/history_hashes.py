"""sha256 of everything a history read makes (metrics.jsonl, evals.jsonl, the chart book's
document), for code of two trees compared on one log: the parse result must not move.

    python bench/history_hashes.py LOG [--old DIR] [--workers 1|2]

Without --old, prints the hashes of this tree's reader; with --old DIR (a ``git archive`` of
the code before), runs DIR's reader and this tree's in fresh processes and says whether every
output hashes the same (exit 1 if not); each reader's CPU seconds are printed beside (with
--workers 1 the whole read's, in a fresh process each; with --workers 2 this process's and the
started part reader's).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def hashes(log: str, workers: int) -> dict[str, str]:
    from moeconsole.runner.ingest.history import HistoryFold, read_history
    d = Path(tempfile.mkdtemp(prefix="history-hashes-"))
    fold = HistoryFold(d / "metrics.jsonl", d / "evals.jsonl")
    import resource
    import time
    cpu = time.process_time()
    fold, stats = read_history(log, fold, workers=workers)
    out = {"cpu s (this process)": f"{time.process_time() - cpu:.2f}"}
    # the started process (two processes), reaped by the read: its CPU counts as this one's child's
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["cpu s (started process)"] = f"{child.ru_utime + child.ru_stime:.2f}"
    for name in ("metrics", "evals"):
        p = getattr(fold, name)
        out[name + ".jsonl"] = hashlib.sha256(p.read_bytes() if p.exists() else b"").hexdigest()
    doc = json.dumps(fold.book.to_doc(), sort_keys=True).encode()
    out["book"] = hashlib.sha256(doc).hexdigest()
    out["records"] = str(fold.records)
    out["steps/grads"] = hashlib.sha256(fold.steps.tobytes() + fold.grads.tobytes()).hexdigest()
    out["processes"] = str(stats.processes)
    for p in d.iterdir():
        p.unlink()
    d.rmdir()
    return out


def run(tree: Path, log: str, workers: int) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    got = subprocess.run([sys.executable, "-c", "import sys, json; sys.path.insert(0, sys.argv[1]); "
                          "import moeconsole; assert moeconsole.__file__.startswith(sys.argv[1]), moeconsole.__file__; "
                          "sys.path.insert(0, sys.argv[2]); from history_hashes import hashes; "
                          "print(json.dumps(hashes(sys.argv[3], int(sys.argv[4]))))",
                          str(tree), str(ROOT / "bench"), log, str(workers)],
                         env=env, capture_output=True, text=True, cwd=str(tree))
    if got.returncode:
        sys.exit(f"history_hashes: the reader of {tree} failed: {got.stderr.strip().splitlines()[-1:]}")
    return json.loads(got.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log")
    ap.add_argument("--old", help="a git archive of the code before")
    ap.add_argument("--workers", type=int, default=1, choices=(1, 2))
    a = ap.parse_args()
    if not os.path.isfile(a.log):
        sys.exit(f"history_hashes: no such log: {a.log}")
    new = run(ROOT, a.log, a.workers)
    if a.old is None:
        print(json.dumps(new, indent=1))
        return 0
    old = run(Path(a.old).resolve(), a.log, a.workers)
    same = True
    for k in sorted(set(old) | set(new)):
        ok = old.get(k) == new.get(k) or k in ("processes", "cpu s (this process)", "cpu s (started process)")
        same &= ok
        print(f"{k:24} {'same' if ok else 'DIFFERENT'}  old {old.get(k, '-')[:16]}  new {new.get(k, '-')[:16]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
