"""The corpus of real public training logs (tests/ingest/corpus): each log read through the
pipe (``records_from_path``, what ``parse`` reads) and compared with the values written by hand
in ``expected.json``. Also a script: ``python -m tests.ingest.corpus_check`` prints the exact
count per family (the numbers in docs/parsing.md)."""
from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

CORPUS = Path(__file__).with_name("corpus")


def expected() -> dict[str, dict]:
    data = json.loads((CORPUS / "expected.json").read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def pending() -> dict[str, dict]:
    """Held-out logs the parser does not read right yet (``_pending``: their expected values,
    written by hand like the others, the logs in ``corpus/pending/``; no test runs them, the
    script counts them)."""
    return json.loads((CORPUS / "expected.json").read_text()).get("_pending", {})


def _same(a: object, b: object) -> bool:
    if b == "nan":
        return isinstance(a, float) and math.isnan(a)
    if isinstance(a, float) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return a == b


def differences(name: str, want: dict) -> list[str]:
    """What the parser gives that differs from the hand-written values (empty: exact)."""
    from moeconsole.runner.ingest import marks_from_path, records_from_path
    path = CORPUS / f"{name}.log"
    if not path.exists():
        path = CORPUS / "pending" / f"{name}.log"   # a held-out log not read right yet
    recs, _ = records_from_path(path)
    train = [r for r in recs if r["src"] not in ("megatron_mem", "deepspeed_mem")]
    out = []
    got = [[r["step"], r["loss"]] for r in train]
    if len(got) != len(want["steps"]) or not all(
            g[0] == w[0] and (_same(g[1], w[1]) if w[1] is not None else g[1] is None)
            for g, w in zip(got, want["steps"])):
        out.append(f"steps {got} != {want['steps']}")
    if "evals" in want:
        evs = [[m["step"], m["loss"]] for m in marks_from_path(path) if m["kind"] == "eval"]
        if len(evs) != len(want["evals"]) or not all(
                g[0] == w[0] and (_same(g[1], w[1]) if w[1] is not None else g[1] is None)
                for g, w in zip(evs, want["evals"])):
            out.append(f"evals {evs} != {want['evals']}")
    by_step = {r["step"]: r for r in train}
    for step, fields in want.get("at", {}).items():
        rec = by_step.get(int(step))
        for key, value in fields.items():
            have = None if rec is None else rec.get(key)
            if not _same(have, value):
                out.append(f"step {step} {key} {have!r} != {value!r}")
    return out


def main() -> int:
    exact: Counter = Counter()
    total: Counter = Counter()
    for name, want in sorted(expected().items()):
        diff = differences(name, want)
        total[want["family"]] += 1
        if not diff:
            exact[want["family"]] += 1
        else:
            print(f"{name}: " + "; ".join(diff)[:400])
    for fam in sorted(total):
        print(f"| {fam} | {exact[fam]} / {total[fam]} |")
    print(f"exact {sum(exact.values())} / {sum(total.values())}")
    waiting = pending()
    for name, want in sorted(waiting.items()):
        diff = differences(name, want)
        print(f"pending {name} [{want['family']}]: " + ("now exact" if not diff else "; ".join(diff)[:300]))
    claimed = expected()
    for batch in sorted({w["batch"] for w in list(claimed.values()) + list(waiting.values()) if "batch" in w}):
        inside = sum(1 for w in claimed.values() if w.get("batch") == batch)
        left = sum(1 for w in waiting.values() if w.get("batch") == batch)
        print(f"batch {batch} (held out): {inside} / {inside + left} in the corpus, {left} pending")
    return 0


if __name__ == "__main__":
    sys.exit(main())
