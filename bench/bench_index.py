"""``runs ls`` over many finished runs: the run index rebuilt on the way, then answering alone.

Run from the repository root:

    .venv/bin/python bench/bench_index.py [--runs 2001] [--reps 5]

``--runs`` finished runs sharing one name (each with its recipe.yaml, as ``moeconsole run``
writes it, told apart by one ``--lr`` value, and a few metric records) are generated in a
temp directory without an index. Timed, as whole commands (``moeconsole runs ls``):

1. the first ``runs ls``: no index, so it is rebuilt from the run directories on the way;
2. the following ones (median of ``--reps``): the index answers, the display values of runs that
   share a name (``many --lr=7``) included;
3. baseline, in the same run: the same command with the index's cached recipe values cleared
   before each call, which is what every ``runs ls`` did before they were kept (a YAML parse of
   every run's recipe.yaml per call).

Medians with min-max; the files are deleted afterwards.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_")}
    e["PYTHONPATH"] = str(REPO)
    return e


def make_runs(base: Path, n: int) -> None:
    from moeconsole.runner.process import launch
    from moeconsole.runner.recipes import model, recipe as recipes
    from moeconsole.runner.rundir import seriesfile
    src = base.parent / "many.yaml"
    src.write_text(json.dumps({"name": "many", "command": ["python", "train.py", "--lr", "0"],
                               "lint": {"ignore": ["no_checkpoint_dir"]}}))
    rec = recipes.load(src)
    now = time.time()
    for i in range(n):
        # a recipe is a typed model (``recipes.model.RunRecipe``): a copy with its own command
        run = launch.create_run(base, model.run_recipe(rec, command=["python", "train.py", "--lr", str(i)]))
        with open(run.metrics, "w") as f:
            for s in range(1, 21):
                f.write(json.dumps({"v": 1, "t": now, "attempt": 1, "step": s, "max_steps": 20,
                                    "loss": 2.0 - s / 40}) + "\n")
        run.write_state({"status": "succeeded", "name": "many", "attempt": 1, "step": 20, "max_steps": 20,
                         "started_at": now - n + i, "ended_at": now - n + i + 1, "restarts": 0})
        seriesfile.save_book(run, seriesfile.load_book(run))


def ls(base: Path) -> float:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "ls", "--runs-dir", str(base)],
                       capture_output=True, text=True, env=env(), cwd=REPO, timeout=600)
    took = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"runs ls failed: {p.stderr[-500:]}")
    return took


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2001)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-index-"))
    try:
        base = tmp / "runs"
        t = time.perf_counter()
        make_runs(base, args.runs)
        made = time.perf_counter() - t
        first = ls(base)
        warm = [ls(base) for _ in range(args.reps)]
        cold = []
        for _ in range(args.reps):
            with sqlite3.connect(base / "index.sqlite") as conn:
                conn.execute("UPDATE runs SET recipe_values = NULL")
            conn.close()
            cold.append(ls(base))
        print(f"### `runs ls` over {args.runs:,} finished runs sharing one name\n")
        print(f"Machine: {os.uname().machine}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
              f"1-minute load average {os.getloadavg()[0]:.2f}. Runs generated in {made:.0f} s.\n")
        print("| `moeconsole runs ls` | wall time |\n|---|---:|")
        print(f"| first, without an index (rebuilt on the way) | {first:.2f} s |")
        print(f"| then, the index answering (median of {args.reps}) | {spread(warm)} |")
        print(f"| baseline: every recipe.yaml read on each call, as before the index kept them | {spread(cold)} |")
        print(f"\nRatio baseline / index answering (medians): {statistics.median(cold) / statistics.median(warm):.1f}x; "
              f"first call / index answering: {first / statistics.median(warm):.1f}x.")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
