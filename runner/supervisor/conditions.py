"""What keeps the next attempt from launching, and the ending of processes outside the attempt.

During a cooldown the runner asks ``ConditionsCheck.probe`` each ``cooldown.poll_s``: the
run's own survivors, the run directory refusing the log, the rendezvous port (and whoever holds
it), GPU memory and foreign processes on the GPUs the recipe uses. The answer is a ``Probe``
the lifecycle turns into "wait", "launch", "launch on a new port" or "kill the blockers"
(``moeconsole.runner.core.lifecycle.ConditionsProbe``). Leftovers of other runs that hold neither a GPU of
ours nor the port do not block this one.

``Terminations`` ends a process that is not part of the attempt (a blocker under
``preflight.on_busy: kill``, a PID the user picked) with the same checked SIGTERM -> deadline
-> SIGKILL as everything else, advanced by the runner's loop: it never waits.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from moeconsole.runner.core import bounds
from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.lifecycle import Cooldown
from moeconsole.runner.telemetry.kill import KillResult, Termination, start_termination
from moeconsole.runner.telemetry.procs import BLOCKING, PORT_HOLDER, ProcInfo

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import KillSettings, RunRecipe


def kill_grace(recipe_kill: "KillSettings", asked: Any = None) -> float:
    """The SIGTERM -> SIGKILL grace: what the request asked, else the recipe's, else 10 s
    (every value through ``bounds.sane_seconds``: NaN or a negative number is never a grace)."""
    return bounds.sane_seconds(asked, bounds.sane_seconds(recipe_kill.grace_s, 10.0, bounds.GRACE),
                               bounds.GRACE)


@dataclass(frozen=True)
class Probe:
    """One look at the launch conditions."""
    waiting: tuple[str, ...]            # one human line per unmet condition
    port_busy: bool = False             # the rendezvous port is taken (a new port helps)
    blockers: tuple[ProcInfo, ...] = ()  # processes of others in the way (``on_busy: kill`` ends them)
    hold: bool = False                  # no room to save yet: the ceiling does not launch


# Tests only: a file holding a number of MiB that replaces ``cooldown.disk_free_min_mib`` at every
# look (a test cannot fill a real disk; it asks for more than the filesystem has, then lowers it).
DISK_MIN_FREE_FILE_ENV = "MOECONSOLE_TEST_DISK_MIN_FREE_FILE"


def existing_dir(path: Path) -> Path:
    """``path`` or its nearest existing ancestor (the output dir may not exist yet): the filesystem it lands on."""
    for p in (path, *path.parents):
        if p.is_dir():
            return p
    return Path("/")


@dataclass
class RoomWait:
    """After a ``disk_full`` crash: the launch waits until the output's filesystem has room again."""
    where: Path                 # the run's output directory (checkpoints.dir, else the working directory)
    largest_save: int           # bytes of the largest checkpoint seen
    margin: float
    min_free_mib: float
    largest_files: int = 0      # files and directories of the save that has the most (its inodes)
    min_files: int = 1          # the fewest free files the wait ends with (``diskroom.files_needed``)

    def need(self) -> int:
        from moeconsole.runner.checkpoints.diskroom import room_needed
        min_free = self.min_free_mib
        override = os.environ.get(DISK_MIN_FREE_FILE_ENV)
        if override:
            try:
                min_free = float(Path(override).read_text().strip())
            except (OSError, ValueError):
                pass
        return room_needed(self.largest_save, margin=self.margin, min_free_mib=min_free)

    def _look(self) -> tuple[Path, os.statvfs_result] | None:
        """The directory measured and its filesystem's numbers, read once; None when it cannot be read."""
        where = existing_dir(self.where)
        try:
            return where, os.statvfs(where)
        except OSError:
            return None

    def measure(self) -> tuple[Path, int, int] | None:
        """(the directory measured, free bytes, bytes needed); None when the filesystem cannot be read."""
        got = self._look()
        return None if got is None else (got[0], got[1].f_bavail * got[1].f_frsize, self.need())

    def missing(self) -> tuple[str, int, int] | None:
        """(the waiting line, free, need) while there is not enough room, in bytes, else in files
        (inodes: a filesystem that counts them and has fewer free than the next save makes);
        None once there is (or the filesystem cannot be read: a wait nobody can measure never
        ends). One statvfs."""
        from moeconsole.runner.checkpoints.diskroom import files_needed, files_wait_line, free_files, room_wait_line
        got = self._look()
        if got is None:
            return None
        where, vfs = got
        free, need = vfs.f_bavail * vfs.f_frsize, self.need()
        if free < need:
            return room_wait_line(str(where), free, need, self.largest_save, self.margin), free, need
        files = files_needed(self.largest_files, margin=self.margin, min_files=self.min_files)
        free_now = free_files(vfs)
        if free_now is not None and free_now < files:
            return files_wait_line(str(where), free_now, files, self.largest_files, self.margin), free, need
        return None


class ConditionsCheck:
    def __init__(self, run_id: str, recipe: "RunRecipe", *, gpu_backend: Any,
                 diag: Callable[[str], None], run_dir: Path | None = None) -> None:
        """``recipe``: the GPUs it uses, the cooldown's GPU memory tolerance, ``preflight.on_busy``.
        ``run_dir``: the run's directory (a process marked with the run's id for another is a stranger)."""
        self.run_id = run_id
        self.run_dir = run_dir
        self.devices: list[int] = list(recipe.gpus.devices or [])
        self.tolerance_mib = float(recipe.cooldown.gpu_mem_tolerance_mib)
        self.on_busy = str(recipe.preflight.on_busy)
        self.gpu_backend = gpu_backend
        # why the recipe's GPUs can never be looked at here (no GPU driver on this machine: ``telemetry.gpu.no_gpu_here``),
        # else None. No GPU memory can be released on GPUs there are none of: no wait (newcomer round 14: the 8-GPU
        # recipe on a machine without a driver waited the whole cooldown ceiling, 300 s, before every attempt, then
        # launched anyway); the runner says it once (``Supervisor._say_no_gpu``)
        from moeconsole.runner.telemetry.gpu import no_gpu_reason
        self.no_gpu: str | None = no_gpu_reason(gpu_backend) if self.devices else None
        self.diag = diag
        self.blockers: tuple[ProcInfo, ...] = ()  # the last probe's (``on_busy: kill`` ends them)
        self.room: RoomWait | None = None  # set after a disk_full crash, cleared once there is room
        self.room_back: tuple[Path, int, int] | None = None  # (where, free, need) when the wait ended

    def probe(self, *, unwritable: str | None, survivors: Mapping[int, float], tree_blocking: list[str],
              port: int | None) -> lc.ConditionsProbe:
        """The lifecycle's event for one look at the conditions (``look``)."""
        found = self.look(unwritable=unwritable, survivors=survivors, tree_blocking=tree_blocking, port=port)
        self.blockers = found.blockers
        return lc.ConditionsProbe(found.waiting, self.on_busy, port_busy=found.port_busy, blockers=bool(found.blockers),
                                  hold=found.hold)

    def take_blockers(self) -> tuple[ProcInfo, ...]:
        """The blockers the last probe found, once (a second kill order finds none)."""
        found, self.blockers = self.blockers, ()
        return found

    def look(self, *, unwritable: str | None, survivors: Mapping[int, float], tree_blocking: list[str],
             port: int | None) -> Probe:
        """What still keeps us from launching. ``unwritable``: why the log cannot be opened;
        ``survivors``: processes of this run still alive, {pid: start time} (``ProcTree.survivors``:
        the pre-flight checks each start, so a survivor that ended and whose PID a stranger has
        since been given is the stranger's, not the run's); ``tree_blocking``: what the attempt's
        engine still waits for (a batch job not yet ended)."""
        from moeconsole.runner.telemetry.preflight import gpu_problems, port_free, preflight
        waiting: list[str] = [unwritable] if unwritable else []
        # a directory the launch needs (the log's, the command's working directory) is a wait the ceiling
        # never ends: the launch would not start (``Launcher.open_log``); round 20: at each ceiling the run said
        # "cooldown ceiling reached: launched anyway" of an attempt that never launched, an alert a ceiling
        hold = bool(unwritable)
        if self.room is not None:
            short = self.room.missing()
            if short is None:
                self.room_back, self.room = self.room.measure(), None
            else:
                waiting.append(short[0])
                hold = True
        alive = sorted(survivors)
        if alive:
            waiting.append(f"survivors of this run: PIDs {alive[:8]}")
        waiting += tree_blocking
        port_busy = bool(port) and not port_free(port)  # type: ignore[arg-type]
        if port_busy:
            waiting.append(f"port {port} busy")
        if not (port or self.devices):
            return Probe(tuple(waiting), port_busy, hold=hold)
        try:
            # the run's survivors are waited for above, as the run's: not also strangers holding
            # a GPU (what they started, or is in their sessions, with them: ``find_blockers``)
            res = preflight(self.gpu_backend, devices=self.devices, tolerance_mib=self.tolerance_mib, port=port,
                            run_id=self.run_id, exclude_pids={os.getpid(), *alive}, tracked=dict(survivors),
                            run_dir=self.run_dir)
        except Exception as exc:  # a scan racing with exits must not stop supervision
            self.diag(f"pre-flight check failed: {exc}")
            return Probe(tuple(waiting), port_busy, hold=hold)
        blockers = tuple(b for b in res.blockers if PORT_HOLDER in b.labels or (self.devices and b.gpus))
        if self.devices and self.no_gpu is None:
            waiting += gpu_problems(res.gpu, self.devices, self.tolerance_mib)
        waiting += [b.describe() for b in blockers]
        return Probe(tuple(waiting), port_busy, blockers, hold)


def cooldown_record(cd: Cooldown | None, wall: Callable[[float], float]) -> dict[str, Any] | None:
    """state.json's ``cooldown``: the earliest launch and the ceiling as wall-clock times, what
    the last probe is still waiting on, and why the run cools down."""
    if cd is None:
        return None
    return {"until": wall(cd.earliest), "ceiling_at": wall(cd.ceiling_at), "waiting_on": list(cd.waiting_on),
            "reason": cd.reason}


class Terminations:
    """Processes outside the attempt being ended, each recorded as a ``blocker_kill`` event when
    its outcome is known."""

    def __init__(self, record: Callable[..., Any]) -> None:
        self.record = record  # journal.event
        self.under_way: dict[int, tuple[Termination, dict[str, Any]]] = {}

    def __bool__(self) -> bool:
        return bool(self.under_way)

    def start(self, pid: int, start_time: float | None, grace_s: float, **fields: Any) -> KillResult | Termination:
        """SIGTERM now (start time checked); a ``KillResult`` when that already settled it."""
        if pid in self.under_way:
            return self.under_way[pid][0]
        term = start_termination(pid, start_time, grace_s=grace_s)
        if isinstance(term, KillResult):
            self.record("blocker_kill", pid=pid, result=term.to_dict(), **fields)
            return term
        self.under_way[pid] = (term, fields)
        return term

    def kill_blockers(self, blockers: Iterable[ProcInfo], grace_s: float) -> None:
        for b in blockers:
            if BLOCKING & set(b.labels):  # foreign GPU user, orphan, port holder
                self.start(b.pid, b.start_time, grace_s, labels=list(b.labels))

    def progress(self) -> None:
        """SIGKILL what outlived its grace; record what ended."""
        for pid, (term, fields) in list(self.under_way.items()):
            res = term.step()
            if res is not None:
                del self.under_way[pid]
                self.record("blocker_kill", pid=pid, result=res.to_dict(), **fields)
