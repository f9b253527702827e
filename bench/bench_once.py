"""One-shot commands as whole processes, against ``nvitop --once`` and a baseline revision, in
the same run: what a script pays each time it asks.

    .venv/bin/python bench/bench_once.py [--baseline REV] [--runs 15] [--nvitop PATH] [--installed VENV]

Each command runs start to exit (``python -m ...`` of this tree; of the baseline's tree, exported
with ``git archive``, when ``--baseline`` is given) on the same 8 fake GPUs (tests/fakes' NVML
library) and the same running run directory:
  - ``moeconsole --json RUN --once``: the UI's snapshot, one NDJSON line;
  - ``moeconsole gpus --json``: per-GPU telemetry and blockers;
  - ``nvitop --once`` (``.venv-bench``, ``make bench``): the anchor.
With ``--installed VENV`` (a venv this tree's wheel is installed into, as ``scripts/wheel-check.sh``
does), the same two commands also run as a user runs them, ``VENV/bin/moeconsole``: no editable
install's import hook in ``site`` (about 15 ms of start-up the user never pays), .pyc files
compiled at install, like nvitop's.
Rounds alternate the order of the commands. Medians with min-max, and each median over
nvitop's (below 1.00x: faster than nvitop).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.bench_ingest import export  # noqa: E402


def cli_of(tree: Path) -> list[str]:
    """How a tree's command line starts: ``python -m moeconsole`` once the package has its one
    install name, ``python -m moeconsole.console.cli`` before."""
    return [sys.executable, "-P", "-m", "moeconsole"] if (tree / "moeconsole" / "__init__.py").exists() \
        else [sys.executable, "-m", "moeconsole.console.cli"]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="git revision to compare against (its code, exported)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--nvitop", default=str(REPO / ".venv-bench" / "bin" / "nvitop"))
    ap.add_argument("--installed", metavar="VENV", help="also time VENV/bin/moeconsole (this tree's wheel installed)")
    args = ap.parse_args()
    from tests.console.conftest import write_run
    from tests.fakes.nvml import build_fake_nvml, fake_env, write_scenario
    work = Path(tempfile.mkdtemp(prefix="mcbench-once-"))
    base = work / "runs"
    base.mkdir()
    run_id = "20260101-000000-bench-0001"
    write_run(base, run_id, status="running")
    env = fake_env(build_fake_nvml(work / "nvml"), write_scenario(work / "scenario.txt", 8))
    # No MOECONSOLE_ settings, and .pyc files written on the warm-up round (as every user has them:
    # PYTHONDONTWRITEBYTECODE in the caller's environment would compile every module on every run).
    env = {k: v for k, v in env.items() if not k.startswith("MOECONSOLE_") and k != "PYTHONDONTWRITEBYTECODE"}
    trees = [("this code", REPO)]
    if args.baseline:
        trees.append((f"baseline ({args.baseline})", export(args.baseline, work / "baseline")))
    cases: list[tuple[str, list[str], dict[str, str], Path]] = []
    for name, tree in trees:
        tenv = {**env, "PYTHONPATH": str(tree)}
        cases.append((f"`moeconsole --json RUN --once`, {name}", cli_of(tree) + ["--json", run_id, "--once", "--runs-dir",
                                                                               str(base)], tenv, work))
        cases.append((f"`moeconsole gpus --json`, {name}", cli_of(tree) + ["gpus", "--json"], tenv, work))
    if args.installed:
        mc = str(Path(args.installed) / "bin" / "moeconsole")
        ienv = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        cases.append(("`moeconsole --json RUN --once`, installed wheel", [mc, "--json", run_id, "--once", "--runs-dir",
                                                                         str(base)], ienv, work))
        cases.append(("`moeconsole gpus --json`, installed wheel", [mc, "gpus", "--json"], ienv, work))
    nvitop = args.nvitop if Path(args.nvitop).is_file() else None
    if nvitop:
        cases.append(("`nvitop --once` (anchor)", [nvitop, "--once"], {**env, "TERM": "xterm-256color"}, work))
    else:
        print(f"(nvitop not found at {args.nvitop}: `make bench` builds .venv-bench; its row is left out)",
              file=sys.stderr)
    for _, argv, cenv, cwd in cases:      # warm the page cache and the .pyc files
        timed(argv, cenv, cwd)
    times: dict[str, list[float]] = {c[0]: [] for c in cases}
    load_before = os.getloadavg()[0]
    for r in range(args.runs):
        for label, argv, cenv, cwd in (cases if r % 2 == 0 else cases[::-1]):
            times[label].append(timed(argv, cenv, cwd))
    load_after = os.getloadavg()[0]
    cmd = " ".join(["bench/bench_once.py", "--runs", str(args.runs)] + (["--baseline", args.baseline] if args.baseline
                                                                         else [])
                   + (["--installed", args.installed] if args.installed else []))
    print("### One-shot commands as whole processes, against `nvitop --once`\n")
    print(f"Command: `.venv/bin/python {cmd}`. 8 fake GPUs (tests/fakes NVML), one running run; {args.runs} rounds, "
          f"order alternating; load average {load_before:.2f} before, {load_after:.2f} after. Median (min-max).\n")
    anchor = statistics.median(times[cases[-1][0]]) if nvitop else None
    print("| command | wall (median) | min-max | vs nvitop --once |")
    print("|---|---|---|---|")
    for label, xs in times.items():
        med = statistics.median(xs)
        ratio = f"{med / anchor:.2f}x" if anchor else "—"
        print(f"| {label} | {med * 1000:.0f} ms | {min(xs) * 1000:.0f}-{max(xs) * 1000:.0f} ms | {ratio} |")
    print("\nvs nvitop --once: the command's median over nvitop's (at most 1.00x is the goal).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
