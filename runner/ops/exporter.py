"""The metrics exporter: a small process beside the runner that serves a run's Prometheus metrics.

It is a process of its own, not a thread of the runner, so a slow or hostile scraper can never
stall supervision, and the runner stays single-threaded. It reads only the run directory (like
the console does), incrementally, so a scrape of a run with a million steps costs only what is
new since the last one.

    python -m moeconsole.runner.ops.exporter RUN_DIR [--port N] [--addr 127.0.0.1] [--textfile PATH]
                                          [--interval S] [--parent-pid PID] [--no-gpu]

``--port`` serves ``/metrics`` over HTTP (bound to loopback unless ``--addr`` says otherwise;
port 0 picks a free one). ``--textfile`` rewrites a file for node_exporter's textfile
collector every interval (atomically: temp file + rename). The bound address is written to
``exporter.json`` in the run directory. It stops when ``--parent-pid`` (the runner) is gone,
or, without one, once the run is over and a last textfile has been written.
"""
from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import Metric

from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.core import bounds
from moeconsole.runner.ops.prometheus import MetricsView, metric_families
from moeconsole.runner.ops.tally import EventTally
from moeconsole.runner.rundir.snapshot import RunWatcher

EXPORTER_FILE = "exporter.json"
EXPORTER_LOG = "exporter.log"
CANNOT_LISTEN = "exporter: cannot listen on"
# a port another process holds (on a shared node, often another user's run or exporter: its PID is
# not ours to see): what to type instead
PORT_TAKEN_HINT = ("another process holds it (on a shared machine perhaps another user's): "
                   "`metrics: {port: 0}` (`--set metrics.port=0`) picks a free one, named in exporter.json")
PARENT_CHECK_S = 0.5  # how soon an exporter notices its runner is gone (and frees the port)


class RunMetrics:
    """A prometheus_client collector over one run directory (thread-safe: HTTP scrapes and the
    textfile writer share it)."""

    def __init__(self, run: rundir.RunDir, *, gpu: bool = True) -> None:
        self.run = run
        self.watcher = RunWatcher(run)
        self.tally = EventTally()
        self._events_off = 0
        self._lock = threading.Lock()
        self._backend: Any = None
        if gpu:
            from moeconsole.runner.telemetry.gpu import get_backend
            self._backend = get_backend()
        self.last_status: str | None = None

    def view(self) -> MetricsView:
        snap = self.watcher.poll(with_gpu=False)
        for off, ev in jsonio.iter_jsonl(self.run.events, self._events_off):
            self._events_off = off
            self.tally.add(ev)
        state = self.run.read_state()
        updated = state.get("updated_at")
        gpu = self._backend.snapshot().to_dict() if self._backend is not None else None
        self.last_status = snap.run.get("status")
        return MetricsView(now=time.time(), run=snap.run, last_metrics=snap.last_metrics, tally=self.tally,
                           gpu=gpu, state_updated_at=updated if isinstance(updated, (int, float)) else None)

    def refresh(self) -> None:
        """Read what is new without serving it (notices the run's end between scrapes)."""
        with self._lock:
            self.view()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            fams = list(metric_families(self.view()))
        yield from fams


def write_textfile(path: Path, registry: CollectorRegistry) -> None:
    """node_exporter reads ``*.prom`` files: replace atomically so it never reads half a file.
    Readable by others: the collector runs as another user, and metrics hold no secrets."""
    jsonio.atomic_write_bytes(path, generate_latest(registry), mode=0o644, follow_dir=True)


def _textfile_problem(path: Path) -> str | None:
    """Why metrics cannot be written to ``path`` (a directory, a missing parent), else None."""
    try:
        if path.is_dir():
            return "is a directory; give a file path ending in .prom"
        if not path.parent.is_dir():
            return f"its directory {path.parent} does not exist"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m moeconsole.runner.ops.exporter")
    p.add_argument("run_dir")
    p.add_argument("--port", type=int)
    p.add_argument("--addr", default="127.0.0.1")
    p.add_argument("--textfile")
    p.add_argument("--interval", type=float, default=15.0)
    p.add_argument("--parent-pid", type=int)
    p.add_argument("--no-gpu", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    run = rundir.RunDir(Path(args.run_dir))
    if not rundir.is_run_dir(run.path):
        sys.stderr.write(f"exporter: {args.run_dir}: not a run directory\n")
        return 2
    if args.port is None and not args.textfile:
        sys.stderr.write("exporter: nothing to do: give --port and/or --textfile\n")
        return 2
    if args.port is not None and not 0 <= args.port <= 65535:
        sys.stderr.write(f"exporter: --port {args.port}: must be 0..65535\n")
        return 2
    if not bounds.INTERVAL.contains(args.interval):
        sys.stderr.write(f"exporter: --interval {args.interval}: must be {bounds.INTERVAL.describe()}\n")
        return 2
    if args.textfile:
        problem = _textfile_problem(Path(args.textfile))
        if problem:
            sys.stderr.write(f"exporter: --textfile {args.textfile}: {problem}\n")
            return 2
    registry = CollectorRegistry(auto_describe=False)
    collector = RunMetrics(run, gpu=not args.no_gpu)
    registry.register(collector)
    bound: dict[str, Any] = {"v": jsonio.SCHEMA_VERSION, "pid": os.getpid(), "addr": None, "port": None,
                             "textfile": args.textfile}
    if args.port is not None:
        try:
            server, _thread = start_http_server(args.port, addr=args.addr, registry=registry)
        except OSError as exc:
            busy = exc.errno == errno.EADDRINUSE
            sys.stderr.write(f"{CANNOT_LISTEN} {args.addr}:{args.port}: {exc.strerror or exc}"
                             + (f"; {PORT_TAKEN_HINT}" if busy else "") + "\n")
            return 2
        bound["addr"], bound["port"] = server.server_address[0], server.server_address[1]
    jsonio.atomic_write_json(run.path / EXPORTER_FILE, bound)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    textfile = Path(args.textfile) if args.textfile else None
    written = False
    next_write = 0.0
    while not stop.is_set():
        now = time.monotonic()
        if now >= next_write:
            next_write = now + args.interval
            if textfile is not None:
                try:
                    write_textfile(textfile, registry)
                except OSError as exc:
                    sys.stderr.write(f"exporter: cannot write {textfile}: {exc.strerror or exc}\n")
                    if not written:
                        return 2  # never written: a usage problem, not a passing one
                else:
                    written = True
            else:
                collector.refresh()
            # By hand, the textfile of a run that is not live (finished, damaged) is written
            # once; /metrics is served until stopped (a past run's numbers stay scrapeable).
            # Beside a runner: until it ends.
            if args.parent_pid is None and textfile is not None and args.port is None and \
                    collector.last_status not in rundir.LIVE:
                break
        if args.parent_pid is not None and not rundir.pid_alive(args.parent_pid):
            break
        stop.wait(min(PARENT_CHECK_S, args.interval))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
