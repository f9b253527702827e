"""``moeconsole attach [RUN] [--readonly]`` (and ``moeconsole`` with no command): the UI on a
run; with no RUN the newest live run, else the run browser. Closing it leaves the run alone."""
from __future__ import annotations

import sys

from runner import rundir
from runner.errors import InputError
from runner.paths import runs_base


def run(args) -> int:
    base = runs_base(getattr(args, "runs_dir", None))
    ref = getattr(args, "run", None)
    target = rundir.resolve(base, ref) if ref is not None else rundir.newest_live(base)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        where = f" (the run {target.run_id} goes on)" if target else ""
        raise InputError(f"the console needs a terminal{where}; use `moeconsole --json [RUN]` in scripts")
    from console.app import run_app
    return run_app(base, target, readonly=bool(getattr(args, "readonly", False)),
                   gpu=not getattr(args, "no_gpu", False),
                   bell=False if getattr(args, "no_bell", False) else None)
