"""Run a module under cProfile, every thread of it, and write the stats when the process is
asked to end.

    python bench/profiled.py OUT.prof -m moeconsole.console.cli attach RUN ...

``bench_scale.py --profile OUT.prof`` starts the 1,024-GPU console this way. cProfile profiles
only the thread that enabled it and writes nothing when a process ends by a signal: here every
thread started with ``threading`` gets a profiler of its own (the console's poll thread does its
reading there), and SIGTERM writes the main thread's stats to OUT.prof and each other thread's
to OUT.prof.<i>-<thread name> (``i`` its place among the profiled threads: two threads may
share a name), then exits. Read them together:
``pstats.Stats(*glob.glob("OUT.prof*"))``.
"""
from __future__ import annotations

import cProfile
import marshal
import os
import runpy
import signal
import sys
import threading

PROFILES: list[tuple[str, cProfile.Profile]] = []


def _profiled_run(run):  # type: ignore[no-untyped-def]
    def wrapped(self: threading.Thread) -> None:
        profile = cProfile.Profile()
        PROFILES.append((self.name, profile))
        profile.enable()
        try:
            run(self)
        finally:
            profile.disable()
    return wrapped


def _dump(out: str, main: cProfile.Profile) -> None:
    main.disable()
    main.dump_stats(out)
    for i, (name, profile) in enumerate(PROFILES):
        profile.snapshot_stats()   # without disable: it belongs to another thread
        with open(f"{out}.{i}-{name}", "wb") as f:
            marshal.dump(profile.stats, f)  # type: ignore[attr-defined]


def main() -> None:
    out, flag, module, *rest = sys.argv[1:]
    if flag != "-m":
        raise SystemExit("usage: profiled.py OUT.prof -m MODULE [ARGS...]")
    threading.Thread.run = _profiled_run(threading.Thread.run)  # type: ignore[method-assign]
    profile = cProfile.Profile()

    def dump(signum: int, frame: object) -> None:
        _dump(out, profile)
        os._exit(0)
    signal.signal(signal.SIGTERM, dump)
    sys.argv = [module, *rest]
    profile.enable()
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        _dump(out, profile)


if __name__ == "__main__":
    main()
