"""``moeconsole --json [RUN] [--once] [--interval S]``: the UI's snapshot as NDJSON."""
from __future__ import annotations

import sys
import time
from pathlib import Path


def run(args) -> int:
    if not args.no_gpu:   # first: the host line's first CPU figure needs a window, spent on the imports below
        from moeconsole.runner.telemetry.host import prime_cpu
        prime_cpu()
    from moeconsole.runner.rundir import jsonio, rundir
    from moeconsole.runner.rundir.paths import runs_base
    from moeconsole.runner.rundir.snapshot import HostLine, LiveTelemetry, RunWatcher
    from moeconsole.console.commands.attach import foreign_path
    foreign = foreign_path(args.run)
    if foreign is not None:
        return _foreign_snapshot(foreign)
    run_dir = rundir.resolve(runs_base(args.runs_dir), args.run)
    host = None if args.no_gpu else HostLine(run_dir.path)
    telemetry = None if args.no_gpu else LiveTelemetry(run_dir.path)
    # the runner's record of each log tail line, as the run screen's tail shows them
    watcher = RunWatcher(run_dir, telemetry=telemetry, host=host, line_records=True)
    interval = float(args.interval)  # already in bounds.INTERVAL (the parser checks it)
    while True:
        snap = watcher.poll(saves_gone=True)
        sys.stdout.write(jsonio.dumps(snap.to_dict()) + "\n")
        sys.stdout.flush()
        if args.once:
            return 0
        if snap.run.get("status") in rundir.TERMINAL:
            return 0  # the last snapshot of a finished run has been printed
        time.sleep(interval)


def _foreign_snapshot(path: Path) -> int:
    """``--json PATH`` of a log or directory not made by moeconsole: the snapshot `attach PATH`
    shows (and `runs show PATH` summarises), read into a scratch run directory, printed once
    (nothing supervises it: it does not change), then removed."""
    import shutil
    import tempfile
    from moeconsole.console.foreign import open_path
    from moeconsole.runner.rundir import jsonio
    from moeconsole.runner.rundir.snapshot import RunWatcher
    scratch = Path(tempfile.mkdtemp(prefix="moeconsole-json-"))
    try:
        doc = RunWatcher(open_path(path, scratch), line_records=True).poll(with_gpu=False, saves_gone=True).to_dict()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    doc["imported_from"] = doc["run"]["dir"] = str(path.resolve())   # not the scratch copy, gone now
    sys.stdout.write(jsonio.dumps(doc) + "\n")
    return 0
