"""One-shot commands as whole processes, against ``nvitop --once`` and a baseline revision, in
the same run: what a script pays each time it asks.

    .venv/bin/python bench/bench_once.py [--baseline REV] [--runs 15] [--nvitop PATH] [--installed VENV]
                                         [--installed-baseline VENV]

Each command runs start to exit (``python -m ...`` of this tree; of the baseline's tree, exported
with ``git archive``, when ``--baseline`` is given) on the same 8 fake GPUs (tests/fakes' NVML
library), in two runs directories:
  - "no runner": a run directory that says it is running, no runner on the host: a one-shot's host
    line has nothing to start its CPU figure from but its own first reading (``host.first_window_s``);
  - "live runner": a real runner supervising a sleeping trainer, which shares its reading of
    ``/proc/stat`` every 2 s (``host.CpuMark``): the one-shot's CPU figure starts there.
The commands:
  - ``moeconsole --json RUN --once``: the UI's snapshot, one NDJSON line;
  - ``moeconsole gpus --json``: per-GPU telemetry and blockers;
  - ``nvitop --once`` (``.venv-bench``, ``make bench``): the anchor.
Each row also says where its CPU figures started (the JSON's ``host.cpu_source``, all rounds).
With ``--installed VENV`` (a venv this tree's wheel is installed into, as ``scripts/wheel-check.sh``
does), the same two commands also run as a user runs them, ``VENV/bin/moeconsole``: no editable
install's import hook in ``site`` (about 15 ms of start-up the user never pays), .pyc files
compiled at install, like nvitop's; ``--installed-baseline VENV``: the baseline's wheel likewise.
Rounds alternate the order of the commands. Medians with min-max, and each median over
nvitop's (below 1.00x: faster than nvitop).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
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


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str | None]:
    """Wall seconds of the whole process, its CPU seconds (user + system: what a busy machine
    stretches less than the wall), and where its host line's CPU figure started."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return took, cpu, cpu_source(proc.stdout)


def cpu_source(out: bytes) -> str | None:
    """``host.cpu_source`` of a one-shot's JSON ("-" where the JSON has none: an older tree)."""
    if not out.startswith(b"{"):
        return None
    host = json.loads(out.splitlines()[-1]).get("host") or {}
    return str(host.get("cpu_source") or "-")


def start_live_run(tree: Path, base: Path, env: dict[str, str]) -> str:
    """A real runner (this tree's) supervising a trainer that sleeps: ``run --detach``."""
    from tests.runner.conftest import base_recipe
    import yaml
    recipe = base.parent / "sleep.yaml"
    recipe.write_text(yaml.safe_dump(base_recipe(command=["{python}", "-c", "import time; time.sleep(3600)"],
                                                 checkpoints={"dir": None}, resume={"arg": None})))
    proc = subprocess.run(cli_of(tree) + ["run", str(recipe), "--detach", "--runs-dir", str(base)], env=env,
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise SystemExit(f"the live run did not start: {proc.stderr[-500:]}")
    run_id = Path(proc.stdout.strip().splitlines()[0]).name
    from moeconsole.runner.telemetry.host import cpu_mark_path
    mark = cpu_mark_path(base)
    deadline = time.monotonic() + 120
    while not mark.exists():   # the runner's first reading (every 2 s while the attempt runs)
        if time.monotonic() > deadline:
            raise SystemExit(f"no shared CPU reading from the live runner in {base}")
        time.sleep(0.2)
    return run_id


def end_runner(run_dir: Path, wait_s: float = 60.0) -> None:
    """Wait for the live run's runner to leave after ``kill`` (it exits once the run is killed);
    one still there after ``wait_s`` is ended by its PID, checked against its start time."""
    from moeconsole.runner.process.proctree import same_process
    runner = json.loads((run_dir / "state.json").read_text()).get("runner") or {}
    pid, started = runner.get("pid"), runner.get("start_time")
    if not isinstance(pid, int) or not isinstance(started, (int, float)):
        return
    deadline = time.monotonic() + wait_s
    while same_process(pid, started):
        if time.monotonic() > deadline:
            print(f"the live run's runner {pid} did not leave after kill: SIGTERM", file=sys.stderr)
            os.kill(pid, 15)
            return
        time.sleep(0.2)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="git revision to compare against (its code, exported)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--nvitop", default=str(REPO / ".venv-bench" / "bin" / "nvitop"))
    ap.add_argument("--installed", metavar="VENV", help="also time VENV/bin/moeconsole (this tree's wheel installed)")
    ap.add_argument("--installed-baseline", metavar="VENV", help="also time VENV/bin/moeconsole (the baseline's wheel)")
    args = ap.parse_args()
    from tests.console.conftest import write_run
    from tests.fakes.nvml import build_fake_nvml, fake_env, write_scenario
    work = Path(tempfile.mkdtemp(prefix="mcbench-once-"))
    cold, live = work / "runs", work / "live-runs"
    cold.mkdir()
    live.mkdir()
    run_id = "20260101-000000-bench-0001"
    write_run(cold, run_id, status="running")
    env = fake_env(build_fake_nvml(work / "nvml"), write_scenario(work / "scenario.txt", 8))
    # No MOECONSOLE_ settings, and .pyc files written on the warm-up round (as every user has them:
    # PYTHONDONTWRITEBYTECODE in the caller's environment would compile every module on every run).
    env = {k: v for k, v in env.items() if not k.startswith("MOECONSOLE_") and k != "PYTHONDONTWRITEBYTECODE"}
    live_id = start_live_run(REPO, live, {**env, "PYTHONPATH": str(REPO)})
    trees = [("this code", REPO)]
    if args.baseline:
        trees.append((f"baseline ({args.baseline})", export(args.baseline, work / "baseline")))
    cases: list[tuple[str, list[str], dict[str, str], Path]] = []

    def both(name: str, cli: list[str], cenv: dict[str, str], with_live: bool) -> None:
        for where, base, rid in [("no runner", cold, run_id)] + ([("live runner", live, live_id)] if with_live else []):
            cases.append((f"`moeconsole --json RUN --once`, {name}, {where}",
                          cli + ["--json", rid, "--once", "--runs-dir", str(base)], cenv, work))
            cases.append((f"`moeconsole gpus --json`, {name}, {where}", cli + ["gpus", "--json", "--runs-dir", str(base)],
                          cenv, work))
    for name, tree in trees:
        # a baseline never reads the runner's CPU reading: its live-runner rows would time the same thing
        both(name, cli_of(tree), {**env, "PYTHONPATH": str(tree)}, with_live=tree == REPO)
    ienv = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    if args.installed:
        both("installed wheel", [str(Path(args.installed) / "bin" / "moeconsole")], ienv, with_live=True)
    if args.installed_baseline:
        both("installed baseline wheel", [str(Path(args.installed_baseline) / "bin" / "moeconsole")], ienv,
             with_live=False)
    nvitop = args.nvitop if Path(args.nvitop).is_file() else None
    if nvitop:
        cases.append(("`nvitop --once` (anchor)", [nvitop, "--once"], {**env, "TERM": "xterm-256color"}, work))
    else:
        print(f"(nvitop not found at {args.nvitop}: `make bench` builds .venv-bench; its row is left out)",
              file=sys.stderr)
    try:
        for _, argv, cenv, cwd in cases:      # warm the page cache and the .pyc files
            timed(argv, cenv, cwd)
        times: dict[str, list[float]] = {c[0]: [] for c in cases}
        sources: dict[str, list[str | None]] = {c[0]: [] for c in cases}
        cpus: dict[str, list[float]] = {c[0]: [] for c in cases}
        load_before = os.getloadavg()[0]
        for r in range(args.runs):
            for label, argv, cenv, cwd in (cases if r % 2 == 0 else cases[::-1]):
                took, cpu, source = timed(argv, cenv, cwd)
                times[label].append(took)
                cpus[label].append(cpu)
                sources[label].append(source)
        load_after = os.getloadavg()[0]
    finally:
        subprocess.run(cli_of(REPO) + ["kill", live_id, "--runs-dir", str(live)], env={**env, "PYTHONPATH": str(REPO)},
                       capture_output=True, timeout=120)
        end_runner(live / live_id)
    cmd = " ".join(["bench/bench_once.py", "--runs", str(args.runs)] + (["--baseline", args.baseline] if args.baseline
                                                                         else [])
                   + (["--installed", args.installed] if args.installed else [])
                   + (["--installed-baseline", args.installed_baseline] if args.installed_baseline else []))
    print("### One-shot commands as whole processes, against `nvitop --once`\n")
    print(f"Command: `.venv/bin/python {cmd}`. 8 fake GPUs (tests/fakes NVML); {args.runs} rounds, "
          f"order alternating; load average {load_before:.2f} before, {load_after:.2f} after. Median (min-max).\n")
    anchor = statistics.median(times[cases[-1][0]]) if nvitop else None
    cpu_anchor = statistics.median(cpus[cases[-1][0]]) if nvitop else None
    print("| command | wall (median) | min-max | vs nvitop --once | CPU time (median) | vs nvitop | CPU figure from |")
    print("|---|---|---|---|---|---|---|")
    for label, xs in times.items():
        med = statistics.median(xs)
        ratio = f"{med / anchor:.2f}x" if anchor else "—"
        seen = [x for x in sources[label] if x is not None]
        origin = ", ".join(f"{k} {seen.count(k)}/{len(seen)}" for k in sorted(set(seen))) or "—"
        cpu = statistics.median(cpus[label])
        cpu_ratio = f"{cpu / cpu_anchor:.2f}x" if cpu_anchor else "—"
        print(f"| {label} | {med * 1000:.0f} ms | {min(xs) * 1000:.0f}-{max(xs) * 1000:.0f} ms | {ratio} | "
              f"{cpu * 1000:.0f} ms | {cpu_ratio} | {origin} |")
    print("\nvs nvitop --once: the command's median over nvitop's (at most 1.00x is the goal). CPU time: user + "
          "system of the whole process (a one-shot's wait for its CPU window is wall time, not CPU). CPU figure from: "
          "the JSON's `host.cpu_source` over the rounds (`-`: a tree whose JSON does not say).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
