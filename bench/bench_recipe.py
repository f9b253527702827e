"""Benchmark of reading a recipe: ``moeconsole lint RECIPE`` as a whole process, and the load
(read, override, validate) alone, against a baseline tree in the same run.

Run from the repository root:

    .venv/bin/python bench/bench_recipe.py [--baseline-ref REF | --baseline DIR] [--runs 31] [--loads 200]

The baseline is ``REF``'s tree (default: the last commit before the recipe became declarative
models), extracted with ``git archive`` into a temporary directory and deleted afterwards.

The two trees run alternately (this tree, then the baseline, ``--runs`` times each) so a load on
the shared machine hits both alike; ``python -c pass`` is the floor of any process. Prints a
Markdown section: medians with min-max.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
RECIPE = "recipes/qwen3.5-397b-a17b-8xh200-swift4.6.yaml"
BEFORE_MODELS = "917947d"   # hand-written section parsers, a default table and a range table

_LOADS = """
import sys, time
from moeconsole.runner.recipes import recipe
path, n = sys.argv[1], int(sys.argv[2])
from moeconsole.runner.rundir import yamlio
recipe.load(path, ["args.max_steps=100"])
t = time.perf_counter()
for _ in range(n):
    recipe.load(path, ["args.max_steps=100"])
whole = (time.perf_counter() - t) / n
raw = yamlio.load_yaml_file(path)
t = time.perf_counter()
for _ in range(n):
    recipe.validate(raw, path)
print(whole, (time.perf_counter() - t) / n)
"""


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def _lint(tree: Path, recipe: str) -> float:
    t = time.perf_counter()
    proc = subprocess.run([PY, "-m", "moeconsole.console.cli", "lint", recipe], cwd=tree, env=_env(tree),
                          capture_output=True, text=True)
    took = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        raise SystemExit(f"lint in {tree} exited {proc.returncode}: {proc.stderr.strip()}")
    return took


def _pass() -> float:
    t = time.perf_counter()
    subprocess.run([PY, "-c", "pass"], check=True)
    return time.perf_counter() - t


def _load(tree: Path, recipe: str, n: int) -> tuple[float, float]:
    """Seconds per ``recipes.load`` (read, --set, validate) and per ``validate`` alone."""
    out = subprocess.run([PY, "-c", _LOADS, recipe, str(n)], cwd=tree, env=_env(tree),
                         capture_output=True, text=True, check=True)
    whole, check = out.stdout.split()
    return float(whole), float(check)


def row(name: str, xs: list[float], unit: float = 1e3, fmt: str = "{:.0f} ms") -> str:
    med, lo, hi = statistics.median(xs), min(xs), max(xs)
    return f"| {name} | {fmt.format(med * unit)} | {fmt.format(lo * unit)} - {fmt.format(hi * unit)} |"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", type=Path, help="a tree of the code to compare against")
    ap.add_argument("--baseline-ref", default=BEFORE_MODELS, help="a commit whose tree is the baseline")
    ap.add_argument("--recipe", default=RECIPE)
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--loads", type=int, default=200)
    opts = ap.parse_args()
    if opts.baseline:
        return measure(opts, opts.baseline.resolve(), str(opts.baseline))
    tmp = Path(tempfile.mkdtemp(prefix="bench-recipe-"))
    try:
        archive = subprocess.run(["git", "archive", opts.baseline_ref], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        return measure(opts, tmp, f"the tree of {opts.baseline_ref}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(opts: argparse.Namespace, base: Path, label: str) -> int:
    mine: list[float] = []
    theirs: list[float] = []
    floor: list[float] = []
    load_mine: list[tuple[float, float]] = []
    load_theirs: list[tuple[float, float]] = []
    for _ in range(2):  # warm the page cache of both trees
        _lint(REPO, opts.recipe), _lint(base, opts.recipe)
    for _ in range(opts.runs):
        mine.append(_lint(REPO, opts.recipe))
        theirs.append(_lint(base, opts.recipe))
        floor.append(_pass())
    for _ in range(5):
        load_mine.append(_load(REPO, opts.recipe, opts.loads))
        load_theirs.append(_load(base, opts.recipe, opts.loads))
    print(f"### `moeconsole lint {opts.recipe}` ({opts.runs} runs each, alternating; baseline: {label})\n")
    print("| what | median | min - max |\n|---|---|---|")
    print(row("this tree: `lint`, whole process", mine))
    print(row("baseline tree: `lint`, whole process", theirs))
    print(row("`python -c pass` (floor)", floor))
    us = "{:.0f} us"
    each = f"(mean of {opts.loads}, 5 processes)"
    print(row(f"this tree: `recipes.load` with one `--set` {each}", [x[0] for x in load_mine], 1e6, us))
    print(row(f"baseline tree: `recipes.load` with one `--set` {each}", [x[0] for x in load_theirs], 1e6, us))
    print(row(f"this tree: `recipes.validate` alone {each}", [x[1] for x in load_mine], 1e6, us))
    print(row(f"baseline tree: `recipes.validate` alone {each}", [x[1] for x in load_theirs], 1e6, us))
    print("\nA `lint` process is mostly imports and the lint rules; a load is mostly reading the YAML "
          "(`runner/rundir/yamlio.py`), and `validate` (the models, or the hand-written parsers of the "
          "baseline) is a small part of either. Whole-process medians move with the load of the shared "
          "machine; compare the two trees only within one run.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
