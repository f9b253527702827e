"""A runner taking over a run directory: the run's recipe as it was launched, and its state
rebuilt from the append-only records when ``state.json`` is missing or damaged."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.policy import AttemptRecord, restarts_used
from moeconsole.runner.core.schema import as_dict
from moeconsole.runner.ingest.records import step_numbered
from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.state import LIVE, Status
from moeconsole.runner.process import proctree
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.supervisor.judge import VERDICT_EVENTS

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe


def takeover_state(run: rundir.RunDir, diag: Callable[[str], None]) -> dict[str, Any]:
    """The run's state for a runner taking it over: state.json, or rebuilt from the records
    when it is missing or damaged; InputError when nothing says where the run stands (starting
    it again could repeat a finished run)."""
    loaded = run.load_state()
    state = dict(loaded.state)
    if loaded.newer:   # another schema: neither rebuilt from the records nor rewritten as this one's
        raise InputError(f"{run.run_id}: {loaded.problem}; no runner of this version takes it over")
    if loaded.problem:
        diag(f"{loaded.problem}: rebuilding the run's state from its records")
        state = recover_state(run, state, loaded.problem)
        if Status.parse(state.get("status")) is None:
            raise InputError(f"{run.run_id}: {loaded.problem}, and events.jsonl does not say where the run "
                             f"stands; no runner takes it over (the run directory is left as it is)")
    return state


@dataclass(frozen=True)
class Takeover:
    """What a new runner finds of the recorded attempt."""
    leader_alive: bool      # adopt it (also an attempt that ended unwatched: adopted as if it just ended)
    leader_known: bool      # an attempt was launched at all
    ended_unwatched: bool   # runner and training died while nobody watched: read its log, then judge it


def takeover(status: Status, state: dict[str, Any], attempt_alive: Callable[[int, list[Any]], bool]) -> Takeover:
    """Is the attempt ``state`` records still running (``attempt_alive``: the engine's check)?"""
    attempt, pids = int(state.get("attempt") or 0), state.get("pids") or []
    leader = next((p for p in pids if p.get("role") in ("waiter", "leader")), None)
    alive = bool(status in LIVE and status != Status.STARTING and attempt_alive(attempt, pids))
    known = bool(leader or attempt)
    unwatched = not alive and status in (Status.RUNNING, Status.STOPPING) and known
    return Takeover(alive or unwatched, known, unwatched)


def kill_under_way(run: rundir.RunDir, attempt: int) -> tuple[str, str] | None:
    """The kill a dead runner had begun on attempt ``attempt`` (its last ``kill`` event with no
    ``kill_done`` after it): (reason, requested_by), for the new runner to carry on."""
    found: tuple[str, str] | None = None
    for _, ev in jsonio.iter_jsonl(run.events):
        if ev.get("attempt") != attempt:
            continue
        if ev.get("type") == "kill" and isinstance(ev.get("reason"), str):
            by = ev.get("requested_by")
            found = (ev["reason"], by if isinstance(by, str) else "runner")
        elif ev.get("type") == "kill_done":
            found = None
    return found


def verdict_recorded(run: rundir.RunDir, attempt: int) -> bool:
    """Whether events.jsonl holds attempt ``attempt``'s verdict (``judge.VERDICT_EVENTS``): a runner that died
    after writing the verdict's events and before state.json cleared its ``judging`` left it there, and the
    runner judging the attempt again writes them no second time (one ``crash`` event, one notification)."""
    return any(ev.get("type") in VERDICT_EVENTS and ev.get("attempt") == attempt
               for _, ev in jsonio.iter_jsonl(run.events))


def recover_state(run: rundir.RunDir, partial: dict[str, Any], problem: str) -> dict[str, Any]:
    """``state.json`` is missing or damaged: rebuild what a runner needs from the append-only
    records (status and attempt from events, progress from metrics, the ingest offset from the
    attempt's marker in the log, the attempt's waiter from its run marker)."""
    state = dict(partial)
    status, attempt, waiter = None, 0, None
    crashed: dict[int, str | None] = {}   # attempt -> its crash class
    for _, ev in jsonio.iter_jsonl(run.events):
        kind = ev.get("type")
        if kind == "status":
            status = lc.replayed(status, "status", ev.get("status"))
        elif kind == "attempt_start" and isinstance(ev.get("attempt"), int):
            attempt, waiter = ev["attempt"], ev.get("pid")
            status = lc.replayed(status, "attempt_start")
        elif kind == "crash" and isinstance(ev.get("attempt"), int):
            crashed[ev["attempt"]] = ev.get("class")
        elif kind == "drift" and ev.get("policy") == "allow":
            state["allow_drift"] = True
    if status is None:
        return state
    # the restarts the current attempt has used: the crashes of the attempts before it (policy.restarts_used)
    restarts = restarts_used([c for a, c in sorted(crashed.items()) if a < attempt])
    state.update(status=status, attempt=attempt, restarts=restarts, recovered_from=problem)
    last = None
    for _, rec in jsonio.iter_jsonl(run.metrics):
        if rec.get("attempt") == attempt and isinstance(rec.get("step"), int):
            last = rec
    if last:
        state.update(step=last["step"], max_steps=last.get("max_steps"), step_numbered=step_numbered(last))
    state["log_offset"] = _marker_offset(run.log, attempt)
    state["log_seen"] = None   # the marker's offset: no digest of what was read before it
    state["log_context"] = None   # ... and no reading context: the attempt's lines are read from its start
    if isinstance(waiter, int) and waiter in proctree.marked_processes(run.run_id, run.path):
        state["pids"] = [{"pid": waiter, "start_time": proctree.start_time(waiter), "role": "waiter"}]
    else:
        state["pids"] = []
    return state


def _marker_offset(log: Path, attempt: int) -> int:
    """Where attempt ``attempt`` starts in ``train.log`` (0 when its marker is not found)."""
    marker = rundir.ATTEMPT_MARKER.format(attempt=attempt).encode()
    offset = found = 0
    try:
        with open(log, "rb") as f:
            for line in f:
                if line.startswith(marker):
                    found = offset
                offset += len(line)
    except OSError:
        return 0
    return found


def attempt_record(d: dict[str, Any]) -> AttemptRecord:
    """One entry of state.json's ``history`` as the restart policy reads it."""
    return AttemptRecord(attempt=int(d.get("attempt") or 0), started_at=float(d.get("started_at") or 0.0),
                         ended_at=float(d.get("ended_at") or 0.0), resumed_step=d.get("resumed_step"),
                         last_step=d.get("last_step"), crash_class=d.get("crash_class"),
                         memory_verdict=d.get("memory_verdict"), ran_s=d.get("ran_s"),
                         ended_mono=d.get("ended_mono"), boot_id=d.get("boot_id"), signature=d.get("signature"),
                         resumed_from=d.get("resumed_from"), resume_next=d.get("resume_next"), gpus=d.get("gpus"))


def load_run_recipe(run: rundir.RunDir) -> "RunRecipe":
    """The recipe the run was launched with (recipe.yaml), validated, with where it was
    launched and its literal secrets restored from secrets.json."""
    from moeconsole.runner.rundir import runfiles
    recipe = recipes.saved_recipe(run.path)
    secrets = runfiles.read_secrets(run.path)
    return recipes.restore_secrets(recipe, as_dict(secrets) if secrets else None)

