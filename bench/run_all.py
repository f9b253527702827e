"""Run every benchmark (or some) and rebuild docs/benchmarks.md.

    .venv/bin/python bench/run_all.py            all of them (about 20 minutes)
    .venv/bin/python bench/run_all.py verify ui  only these areas
    .venv/bin/python bench/run_all.py --collect  no run: rebuild docs/benchmarks.md from the area files

Each ``bench/bench_<area>.py`` prints a Markdown section; its latest output, with the command
that produced it, is kept in ``docs/benchmarks-<area>.md``, and ``docs/benchmarks.md`` gathers
them all. The machine is noisy: every figure is a median or a ratio against a baseline measured
in the same run.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
ORDER = ("runner", "parse", "ingest", "open", "snapshot", "once", "latency", "telemetry", "verify", "ui", "scale", "nodes", "demo",
         "recipe")


def areas() -> list[str]:
    found = sorted(p.stem.removeprefix("bench_") for p in (REPO / "bench").glob("bench_*.py"))
    return [a for a in ORDER if a in found] + [a for a in found if a not in ORDER]


def run_area(area: str) -> None:
    cmd = [sys.executable, f"bench/bench_{area}.py"]
    print(f"== {area}: {' '.join(cmd)}", flush=True)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    took = time.time() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-3000:])
        raise SystemExit(f"bench_{area} failed (exit {proc.returncode}); docs left unchanged")
    header = (f"<!-- written by bench/run_all.py on {time.strftime('%Y-%m-%d %H:%M')} -->\n\n"
              f"Command (from the repository root, {took:.0f} s):\n\n"
              f"    .venv/bin/python bench/bench_{area}.py\n\n")
    (DOCS / f"benchmarks-{area}.md").write_text(header + proc.stdout.strip() + "\n")


def collect() -> None:
    parts = ["# Benchmarks\n",
             "All benchmarks run with one command, `make bench` (or `.venv/bin/python bench/run_all.py "
             "[AREA ...]`), on this project's 2-core, no-GPU machine. Figures are medians, p99s and ratios "
             "against a baseline measured in the same run; absolute numbers move with machine load.\n",
             "Each section below is the latest output of `bench/bench_<area>.py`, kept in "
             "`docs/benchmarks-<area>.md`.\n"]
    for area in areas():
        f = DOCS / f"benchmarks-{area}.md"
        if not f.exists():
            parts.append(f"\n## {area}\n\nNot run yet: `.venv/bin/python bench/run_all.py {area}`.\n")
            continue
        text = f.read_text().strip()
        lines = text.splitlines()
        if lines and lines[0].startswith("# "):
            lines[0] = "## " + lines[0][2:]
        else:
            lines.insert(0, f"## {area}\n")
        body = "\n".join(l if not l.startswith("## ") or l is lines[0] else "#" + l for l in lines)
        parts.append("\n" + body + "\n")
    (DOCS / "benchmarks.md").write_text("\n".join(parts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("areas", nargs="*", help=f"areas to run (default all: {', '.join(areas())})")
    ap.add_argument("--collect", action="store_true", help="only rebuild docs/benchmarks.md")
    args = ap.parse_args()
    if not args.collect:
        unknown = set(args.areas) - set(areas())
        if unknown:
            ap.error(f"unknown area(s): {', '.join(sorted(unknown))}")
        for area in args.areas or areas():
            run_area(area)
    collect()
    print(f"wrote {DOCS / 'benchmarks.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
