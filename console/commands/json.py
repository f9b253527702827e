"""``moeconsole --json [RUN] [--once] [--interval S]``: the UI's snapshot as NDJSON."""
from __future__ import annotations

import sys
import time


def run(args) -> int:
    if not args.no_gpu:   # first: the host line's first CPU figure needs a window, spent on the imports below
        from moeconsole.runner.telemetry.host import prime_cpu
        prime_cpu()
    from moeconsole.runner.rundir import jsonio, rundir
    from moeconsole.runner.rundir.paths import runs_base
    from moeconsole.runner.rundir.snapshot import HostLine, LiveTelemetry, RunWatcher
    run_dir = rundir.resolve(runs_base(args.runs_dir), args.run)
    host = None if args.no_gpu else HostLine(run_dir.path)
    telemetry = None if args.no_gpu else LiveTelemetry()
    # the runner's record of each log tail line, as the run screen's tail shows them
    watcher = RunWatcher(run_dir, telemetry=telemetry, host=host, line_records=True)
    interval = float(args.interval)  # already in bounds.INTERVAL (the parser checks it)
    while True:
        snap = watcher.poll()
        sys.stdout.write(jsonio.dumps(snap.to_dict()) + "\n")
        sys.stdout.flush()
        if args.once:
            return 0
        if snap.run.get("status") in rundir.TERMINAL:
            return 0  # the last snapshot of a finished run has been printed
        time.sleep(interval)
