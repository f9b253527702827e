"""Where a run screen gets its data and sends its requests: the run directory (through
``RunWatcher``) and the runner's control socket. Never signals a process itself. UI-free."""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.rundir.snapshot import RunWatcher, Snapshot, Telemetry

if TYPE_CHECKING:
    from moeconsole.runner.supervisor import control
    from moeconsole.runner.recipes.model import RunRecipe

# The host line's sampler: a function, True for this host's (with a live run), None or False for none.
HostSampler = Callable[[dict], dict | None] | None | bool


# The blocker scan reads every process (and its environment): about 7 ms of CPU with 80
# processes, so it runs every few seconds, and on every poll only while it matters most.
BLOCKER_SCAN_S = 5.0
SCAN_EVERY_POLL = frozenset({"starting", "cooldown", "stopping"})
# recipe.yaml read at once to look for a log_format (a recipe is a few KiB)
RECIPE_PEEK_BYTES = 256 << 10
# The runner's hang limit when a recipe does not set heartbeat.timeout_s.
DEFAULT_HEARTBEAT_S = 1800.0


def _live_telemetry(blocker_scan_s: float = BLOCKER_SCAN_S, run_dir: Path | None = None) -> Telemetry:
    """GPU telemetry every call, blockers every ``blocker_scan_s`` (or every call during a
    start or a cooldown); a missing driver or module becomes a GPU dict that says why."""
    try:
        from moeconsole.runner.rundir.snapshot import LiveTelemetry
        live = LiveTelemetry(run_dir)
    except Exception as exc:  # the telemetry layer itself missing or broken: say so on screen
        reason = f"GPU telemetry failed to start: {exc}"

        def none(state: dict) -> tuple[dict | None, list[dict]]:
            return {"available": False, "backend": "none", "reason": reason, "gpus": []}, []
        return none

    last_scan = [-1e9]
    blockers: list[list[dict]] = [[]]

    def call(state: dict) -> tuple[dict | None, list[dict]]:
        now = time.monotonic()
        try:
            if now - last_scan[0] >= blocker_scan_s or state.get("status") in SCAN_EVERY_POLL:
                gpu, blockers[0] = live(state)
                last_scan[0] = now
                return gpu, blockers[0]
            return live.gpu(state), blockers[0]
        except Exception as exc:  # never let one bad poll break the screen
            return {"available": False, "backend": "none", "reason": f"telemetry error: {exc}", "gpus": []}, []
    return call


class RunSource:
    """One run: snapshots from its directory (with GPU telemetry when asked), requests to its runner."""

    def __init__(self, run: rundir.RunDir, *, gpu: bool = True, telemetry: Telemetry | None = None,
                 control_timeout: float = 10.0, importing: Any = None,
                 host: HostSampler = True) -> None:
        """``importing``: the ``moeconsole.console.foreign.Import`` reading this (foreign) log; its book
        feeds the charts while the history is read. ``host``: the host line's sampler (True:
        this host's, with a live run; a test that injects ``telemetry`` injects this too, else
        there is no host line)."""
        self.run = run
        self.gpu = gpu
        self.control_timeout = control_timeout
        self._telemetry = telemetry
        self._lock = threading.Lock()
        self.importing = importing
        if host is True:   # sampled with the GPUs only: without them (a past run, a log) never made
            from moeconsole.runner.rundir.snapshot import HostLine
            host = HostLine(run.path) if telemetry is None and gpu else None
        self.watcher = RunWatcher(run, telemetry=self._telemetry_call if gpu else None,
                                  book_source=importing.current_book if importing is not None else None,
                                  host=host or None, line_records=True)
        # the run screen: past 16 nodes it shows one summary line per node, so the agents'
        # files are read only for what those lines and the judgement use (``whole_nodes``)
        self.watcher.nodes.whole = False
        self._recipe: RunRecipe | None = None
        self._recipe_read = False
        self._last_gpu: tuple[dict | None, tuple[dict, ...], dict | None] | None = None

    def whole_nodes(self, whole: bool) -> None:
        """Every node's whole agent file from the next poll on (the GPU view shows each node's
        rows and processes), or only the glance the run screen's summary lines use."""
        self.watcher.nodes.whole = whole

    def _telemetry_call(self, state: dict) -> tuple[dict | None, list[dict]]:
        if self._telemetry is None:
            self._telemetry = _live_telemetry(run_dir=self.run.path)
        return self._telemetry(state)

    def poll(self, telemetry: bool = True, files_only: bool = False) -> Snapshot:
        """Read what is new in the run directory (file I/O: call from a worker thread).
        ``telemetry=False`` (a poll woken by a file change between two timer polls): the GPU
        reading, blockers and agents' nodes of the last full poll are shown again, the driver and
        the nodes' files are not asked (a 128-node run's agents write 128 files a second).
        ``files_only``: the run's files alone, no GPU reading, blockers or host line (the first
        frame, painted before the driver, the process scan and the first CPU figure answer;
        the poll after it brings them)."""
        with self._lock:
            if files_only:
                return self.watcher.poll(with_gpu=False)
            if telemetry or self._last_gpu is None or not self.gpu:
                snap = self.watcher.poll(with_gpu=self.gpu)
                self._last_gpu = (snap.gpu, snap.blockers, snap.host)
                return snap
            snap = self.watcher.poll(with_gpu=False, nodes=False)
            return dataclasses.replace(snap, gpu=self._last_gpu[0], blockers=self._last_gpu[1], host=self._last_gpu[2])

    def last_output_t(self, snap: Snapshot) -> float | None:
        """When the training last showed life: the newest of train.log's mtime and the time of
        the last metric record (file I/O: call from a worker thread)."""
        times = []
        try:
            times.append(self.run.log.stat().st_mtime)
        except OSError:
            pass
        t = (snap.last_metrics or {}).get("t")
        if isinstance(t, (int, float)):
            times.append(float(t))
        return max(times) if times else None

    def heartbeat_s(self) -> float:
        """The recipe's hang limit (heartbeat.timeout_s; the runner's default when unset)."""
        recipe = self.recipe()
        return float(recipe.heartbeat.timeout_s) if recipe is not None else DEFAULT_HEARTBEAT_S

    def start_runner(self) -> int:
        """Start a new runner for this run (it adopts live training); returns its pid. It runs
        in a session of its own and outlives the console; if it ends first, it is reaped
        (``moeconsole.runner.process.launch.spawn_runner``)."""
        from moeconsole.runner.process.launch import spawn_runner
        return spawn_runner(self.run)

    def request(self, req: control.Request) -> control.Answer:
        """One typed control request; a missing runner becomes a refusal that says so."""
        from moeconsole.runner.supervisor import control   # at the first request (a key), not at the start
        try:
            from moeconsole.runner.process.launch import read_named_runner_pid
            return control.send(self.run.sock, req, timeout=self.control_timeout, runner_pid=read_named_runner_pid(self.run))
        except control.ControlError as exc:
            return control.refusal(str(exc))

    def end_elsewhere(self, say: Callable[[str], Any] | None = None) -> tuple[bool, str]:
        """The run recorded killed from here, its runner's machine given up for gone, nothing signalled
        (``killrun.end_elsewhere``, `kill RUN --machine-gone`): (recorded or already over, its words).
        ``say``: told first when a watch of state.json of a few seconds comes before it."""
        from moeconsole.runner.process import killrun   # at the key that uses it
        outcome, words = killrun.end_elsewhere(self.run, by="console", say=say)
        return outcome != killrun.ELSEWHERE_REFUSED, words

    def line_format(self) -> Any:
        """The log's declared line format, or None: the one a foreign log was opened with
        (``attach PATH --log-format``), else the run recipe's ``log_format``. recipe.yaml is read
        once (a regular file only: a FIFO planted there never blocks the poller) and parsed
        only when it names a format; the model is kept for ``recipe``."""
        if self.importing is not None:
            return getattr(self.importing, "line_format", None)
        if not self._recipe_read:
            try:   # a regular file only, opened without blocking (the YAML reader loads only if needed)
                with os.fdopen(jsonio.open_read(self.run.recipe), "rb") as f:
                    data = f.read(RECIPE_PEEK_BYTES + 1)
            except OSError:
                return None
            if b"log_format" not in data:
                return None
            try:   # a recipe past the peek is read again by the reader, which says what is wrong
                text = data.decode("utf-8") if len(data) <= RECIPE_PEEK_BYTES else None
            except UnicodeDecodeError:
                text = None
            self._recipe, self._recipe_read = read_recipe(self.run.recipe, text), True
        recipe = self._recipe
        if recipe is None or not recipe.log_format:
            return None
        from moeconsole.runner.ingest.userformat import LineFormatError, line_format_of
        try:
            return line_format_of(recipe.log_format)
        except LineFormatError:
            return None

    def recipe(self) -> "RunRecipe | None":
        """The run's recipe.yaml (for the grace period and cooldown shown in confirmations)."""
        if not self._recipe_read:
            self._recipe, self._recipe_read = read_recipe(self.run.recipe), True
        return self._recipe


def read_recipe(path: Path, text: str | None = None) -> "RunRecipe | None":
    """A run's recipe.yaml (``path``; ``text``: its text, already read) as the model; None when
    missing or unusable: that only loses the numbers in a dialog."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.recipes.recipe import saved_recipe
    try:
        return saved_recipe(path.parent, text)
    except InputError:
        return None
