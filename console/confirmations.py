"""The texts of the confirmation dialogs: every process-changing action names the PIDs it will
hit and the escalation timer before anything is sent. Pure functions, tested on plain data."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from moeconsole.runner.core.state import ATTEMPT_LIVE, LIVE
from moeconsole.runner.core.units import clip
from moeconsole.console import format as fmt
from moeconsole.runner.supervisor import control

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

# A live run with no attempt's processes (core.state): a kill then ends it without a signal
BETWEEN_ATTEMPTS = frozenset(str(s) for s in LIVE - ATTEMPT_LIVE)
DEFAULT_GRACE_S = 60.0
DEFAULT_FLOOR_S = 10.0
DEFAULT_CEILING_S = 90.0


@dataclass(frozen=True)
class Confirmation:
    title: str
    lines: tuple[str, ...]
    request: control.Request  # what goes to the control socket on "yes"
    # the machine a live run's runner ran on, given up for gone: "yes" records the run killed from here and
    # signals nothing (``killrun.end_elsewhere``, `kill RUN --machine-gone`); nothing goes to the socket
    machine_gone: str | None = None


def _grace(recipe: "RunRecipe | None") -> float:
    """The run's kill grace (None: its recipe.yaml does not read; the default)."""
    return float(recipe.kill.grace_s) if recipe is not None else DEFAULT_GRACE_S


def pid_list(pids: list, limit: int = 12) -> str:
    """"1234 (torchrun), 1240, 1241 and 3 more" from state.json pid records."""
    out = []
    for p in pids or []:
        if isinstance(p, dict):
            name = p.get("role") or p.get("name") or p.get("cmd") or ""
            if isinstance(name, list):
                name = " ".join(str(x) for x in name)
            name = clip(str(name).split("/")[-1], 24) if name else ""
            out.append(f"{p.get('pid')}" + (f" ({name})" if name else ""))
        else:
            out.append(str(p))
    if not out:
        return "none recorded"
    more = len(out) - limit
    return ", ".join(out[:limit]) + (f" and {more} more" if more > 0 else "")


def _job(run: dict) -> dict | None:
    """The batch job of a run under a batch engine (Slurm), while it is not over."""
    job = run.get("job") or None
    return job if job and job.get("job_id") and job.get("ended_at") is None else None


def _no_attempt_words(run: dict, status: str) -> str:
    """A kill or restart of a run between attempts: nothing to signal (``BETWEEN_ATTEMPTS``)."""
    ended = f" (attempt {run['attempt']} ended)" if run.get("attempt") and status != "starting" else ""
    return f"No attempt is running: the run is {status.upper()}{ended}; no signal is sent."


def _starts_from(run: dict, recipe: "RunRecipe | None") -> str:
    """Where the new attempt starts, in ``launch.resume_plan``'s words: a recipe with no resume setting
    (every `run -- COMMAND`) starts from step 0 whatever was saved, else the run's resume point. The
    confirmation had said "from the latest verified checkpoint" of a run that watches none (newcomer round 13)."""
    from moeconsole.runner.process.launch import NO_RESUME_WORDS
    if recipe is not None and not (recipe.resume.arg or recipe.resume.args):
        return NO_RESUME_WORDS
    return fmt.resume_words(run.get("last_good_checkpoint"))


def kill(run: dict, recipe: "RunRecipe | None") -> Confirmation:
    grace = _grace(recipe)
    status = str(run.get("status") or "").lower()
    host = run.get("runner_elsewhere")
    if run.get("stale") and host and not run.get("copy_of"):
        # no runner here to ask, no process here to signal (round 30): the kill is the user's word that the
        # machine is gone, as `kill RUN --machine-gone` takes it
        return Confirmation(
            title=f"Record {run.get('name') or run.get('id')} killed? Its runner's machine {host} is gone?",
            lines=(
                f"Its runner ran on {host}, which nothing here can reach, and state.json has stopped changing.",
                f"Nothing is signalled: if {host} still runs the training, it goes on there.",
                "The run ends as KILLED (a later restart resumes it here).",
            ),
            request=control.KillRequest(grace_s=grace, by="console"),
            machine_gone=str(host),
        )
    if status in BETWEEN_ATTEMPTS:
        # the runner signals nothing then (core.lifecycle ``_control``: a kill is ``busy`` only while an attempt
        # lives): the plan of SIGTERM, grace and SIGKILL to a process group that ended was untrue (newcomer round 13)
        return Confirmation(
            title=f"Clean kill of {run.get('name') or run.get('id')}?",
            lines=(
                _no_attempt_words(run, status),
                "The run ends as KILLED. It is not restarted.",
            ),
            request=control.KillRequest(grace_s=grace, by="console"),
        )
    pgid = f" and process group {run['pgid']}" if run.get("pgid") else ""
    job = _job(run)
    what = (f"{run.get('engine') or 'slurm'} job {job['job_id']} ({job.get('state') or 'state unknown'})." if job
            else f"PIDs: {pid_list(run.get('pids') or [])}{pgid}.")
    how = (f"scancel --signal=TERM to the job's step now; a plain scancel after {fmt.duration(grace)} (kill grace); "
           "then a check that Slurm reports the job ended." if job else
           f"SIGTERM to the whole tree now; SIGKILL to whatever is left after {fmt.duration(grace)} "
           f"(kill grace); then a check that no process of the tree survives.")
    return Confirmation(
        title=f"Clean kill of {run.get('name') or run.get('id')}?",
        lines=(
            what,
            how,
            "The run ends as KILLED. It is not restarted.",
        ),
        request=control.KillRequest(grace_s=grace, by="console"),
    )


def restart(run: dict, recipe: "RunRecipe | None") -> Confirmation:
    grace = _grace(recipe)
    floor = recipe.cooldown.floor_s if recipe is not None else DEFAULT_FLOOR_S
    ceiling = recipe.cooldown.ceiling_s if recipe is not None else DEFAULT_CEILING_S
    if (run.get("status") or "").lower() == "paused":
        return Confirmation(
            title=f"Resume {run.get('name') or run.get('id')}?",
            lines=(
                f"The run is PAUSED{': ' + fmt.strip_word(run['pause_reason'], 'paused') if run.get('pause_reason') else ''}.",
                f"Cool down (at least {fmt.duration(floor)}, at most {fmt.duration(ceiling)}) until GPU memory "
                f"is released and the rendezvous port is free, then start a new attempt {_starts_from(run, recipe)}.",
            ),
            request=control.Resume(by="console"),
        )
    pgid = f" and process group {run['pgid']}" if run.get("pgid") else ""
    job = _job(run)
    status = str(run.get("status") or "").lower()
    if status == "cooldown":   # core.lifecycle ``_control``: the cooldown starts again, nothing is signalled
        stop: tuple[str, ...] = (_no_attempt_words(run, status),)
    elif job:
        stop = (f"{run.get('engine') or 'slurm'} job {job['job_id']} ({job.get('state') or 'state unknown'}).",
                f"scancel --signal=TERM to the job's step now; a plain scancel after {fmt.duration(grace)} "
                "(kill grace). The new attempt is a new job.")
    else:
        stop = (f"PIDs: {pid_list(run.get('pids') or [])}{pgid}.",
                f"SIGTERM to the whole tree now; SIGKILL to whatever is left after {fmt.duration(grace)} (kill grace).")
    return Confirmation(
        title=f"Wait-and-restart {run.get('name') or run.get('id')}?",
        lines=(
            *stop,
            f"Then cool down{' anew' if status == 'cooldown' else ''} (at least {fmt.duration(floor)}, at most "
            f"{fmt.duration(ceiling)}) until no process of the old tree is left, GPU memory is released and the "
            "rendezvous port is free.",
            f"Then start a new attempt {_starts_from(run, recipe)}.",
        ),
        request=control.Restart(now=False, by="console"),
    )


def kill_zombie(blocker: dict, recipe: "RunRecipe | None") -> Confirmation:
    grace = _grace(recipe)
    mem = f", {fmt.intc(blocker.get('gpu_mem_mib'))} MiB of GPU memory" if blocker.get("gpu_mem_mib") else ""
    labels = ", ".join(blocker.get("labels") or ()) or "blocker"
    return Confirmation(
        title=f"End process {blocker.get('pid')}?",
        lines=(
            f"PID {blocker.get('pid')} (user {blocker.get('user') or fmt.NA}, age {fmt.duration(blocker.get('age_s'))}"
            f"{mem}; {labels}):",
            f"  {fmt.blocker_cmd(blocker, 200)}",
            f"SIGTERM now; SIGKILL after {fmt.duration(grace)} if it is still there. The runner first checks "
            "that the PID still has the same start time, so a reused PID is never hit.",
        ),
        request=control.KillPid(pid=blocker["pid"], start_time=blocker["start_time"], grace_s=grace, by="console"),
    )
