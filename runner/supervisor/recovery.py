"""A runner taking over a run directory: the run's recipe as it was launched, and its state
rebuilt from the append-only records when ``state.json`` is missing or damaged."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.core.errors import InputError
from runner.core.policy import AttemptRecord
from runner.core.state import Status
from runner.process import proctree
from runner.recipes import recipe as recipes
from runner.rundir import jsonio, rundir


def recover_state(run: rundir.RunDir, partial: dict[str, Any], problem: str) -> dict[str, Any]:
    """``state.json`` is missing or damaged: rebuild what a runner needs from the append-only
    records (status and attempt from events, progress from metrics, the ingest offset from the
    attempt's marker in the log, the attempt's waiter from its run marker)."""
    state = dict(partial)
    status, attempt, waiter, restarts = None, 0, None, 0
    for _, ev in jsonio.iter_jsonl(run.events):
        kind = ev.get("type")
        if kind == "status" and Status.parse(ev.get("status")):
            status = Status(ev["status"])
        elif kind == "attempt_start" and isinstance(ev.get("attempt"), int):
            attempt, waiter = ev["attempt"], ev.get("pid")
            status = status if status in rundir.TERMINAL else Status.RUNNING
        elif kind == "crash" and ev.get("decision") == "restart":
            restarts += 1
        elif kind == "drift" and ev.get("policy") == "allow":
            state["allow_drift"] = True
    if status is None:
        return state
    state.update(status=status, attempt=attempt, restarts=restarts, recovered_from=problem)
    last = None
    for _, rec in jsonio.iter_jsonl(run.metrics):
        if rec.get("attempt") == attempt and isinstance(rec.get("step"), int):
            last = rec
    if last:
        state.update(step=last["step"], max_steps=last.get("max_steps"))
    state["log_offset"] = _marker_offset(run.log, attempt)
    if isinstance(waiter, int) and waiter in proctree.marked_processes(run.run_id):
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
                         memory_verdict=d.get("memory_verdict"))


def load_run_recipe(run: rundir.RunDir) -> dict[str, Any]:
    """The recipe the run was launched with (recipe.yaml), validated, with where it was launched."""
    raw, problem = recipes.read_saved(run.path)
    if problem:
        raise InputError(f"cannot use the run's recipe: {problem}")
    launch = raw.pop("_launch", {})
    launch = launch if isinstance(launch, dict) else {}
    recipe = recipes.validate(raw, run.recipe)
    recipe["_recipe_dir"] = launch.get("recipe_dir", "")
    recipe["_launch_cwd"] = launch.get("cwd")
    return recipe


def step_of(path: str | None) -> int | None:
    """The step a checkpoint directory's name ends in (``checkpoint-40`` -> 40)."""
    if not path:
        return None
    tail = Path(path).name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None
