"""Restart policy: after a crash, restart (after which backoff), pause, fail or stop.

Pure: it sees the crash verdict, the attempt history and the recipe's ``restart:`` settings,
never a process or a clock of its own (``now`` is passed in). The rules and their order are
documented in docs/crash-classes.md ("Restart policy").
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Iterable, Sequence

from moeconsole.runner.core import bounds, schema

if TYPE_CHECKING:   # the verdict is only named here: the crash rules (and their OOM and memory
    # modules, ~1.6 MiB) stay out of a console that reads alert groups (``is_crash_class``)
    from moeconsole.runner.core.crash import CrashVerdict

RESTART, PAUSE, FAIL, STOP = "restart", "pause", "fail", "stop"
CRITICAL, WARNING = "critical", "warning"


_FACTOR = bounds.Range(1.0, 100.0, unit="factor")


class RestartSettings(schema.Section, frozen=True):
    """The recipe's ``restart:`` section; defaults from design.md. The model is the schema:
    counts and seconds in the ranges of moeconsole.runner.core.bounds, unknown keys refused."""

    max_restarts: schema.Count = 10
    backoff_initial_s: schema.Seconds = 30.0
    backoff_max_s: schema.Seconds = 600.0
    backoff_factor: Annotated[float, schema.within(_FACTOR)] = 2.0
    reset_after_s: schema.Seconds = 3600.0        # a run stable this long resets the backoff
    max_crashes_per_window: schema.PositiveCount = 3   # more than this many crashes ...
    crash_window_s: schema.Seconds = 3600.0       # ... within this window => pause with an alert
    no_progress_attempts: schema.PositiveCount = 3     # this many attempts in a row without step progress => fail
    gpu_wait_s: schema.Seconds = 60.0             # gpu_unavailable: wait this long before the next try ...
    gpu_wait_max_s: schema.Seconds = 900.0        # ... and fail once the waits in a row would pass this
    submit_wait_s: schema.Seconds = 60.0          # slurm_unavailable: submit again after this long ...
    submit_wait_max_s: schema.Seconds = 3600.0    # ... while the waits in a row stay within this
    hub_wait_s: schema.Seconds = 300.0            # hub_rate_limited: try again after one 5-minute window ...
    hub_wait_max_s: schema.Seconds = 1800.0       # ... while the waits in a row stay within this

    def __post_init__(self) -> None:
        if self.backoff_initial_s > self.backoff_max_s:
            raise ValueError("backoff_initial_s: must not exceed backoff_max_s "
                             f"({self.backoff_initial_s:g} > {self.backoff_max_s:g})")

    @classmethod
    def from_recipe(cls, section: Any, *, ignore: Iterable[str] = ()) -> "RestartSettings":
        """The section as settings (None: the defaults); SettingsError naming the key.
        ``ignore`` names keys of the same section that other parts of the runner own."""
        if isinstance(section, dict) and ignore:
            section = {k: v for k, v in section.items() if k not in set(ignore)}
        return schema.convert({} if section is None else section, cls, "restart")


@dataclass(frozen=True)
class AttemptRecord:
    attempt: int
    started_at: float
    ended_at: float
    resumed_step: int | None     # the step this attempt resumed from (None: fresh start)
    last_step: int | None        # the last training step it logged (None: none)
    crash_class: str | None      # None: it did not crash (clean exit)
    memory_verdict: str | None = None   # a CUDA OOM's verdict (moeconsole.runner.core.oom): leak, transient, ...
    # The monotonic clock's view (CLOCK_MONOTONIC is one clock for every process of one boot):
    # how long the attempt ran, and when it ended, on the boot ``boot_id``. A wall-clock step (NTP,
    # a resumed VM) moves ``started_at``/``ended_at`` but not these; None for records without them.
    ran_s: float | None = None
    ended_mono: float | None = None
    boot_id: str | None = None
    # What the repeated-crash rule (``repeated_crash``) needs; None in records of older runners (the rule
    # then never matches them). ``signature``: the crash's error identity (``crash.error_identity``: class,
    # exception type, masked message); ``resumed_from``: the checkpoint this attempt started from;
    # ``resume_next``: the one the next attempt would start from, as it stood when this one ended (None for
    # both: no checkpoint, a start from scratch); ``gpus``: the GPUs the run uses (None: not known).
    signature: str | None = None
    resumed_from: str | None = None
    resume_next: str | None = None    # RESUME_UNKNOWN: the runner could not tell (never "the same")
    gpus: int | None = None


@dataclass(frozen=True)
class Clock:
    """Now, on both clocks: ``wall`` (``time.time()``), ``mono`` (``time.monotonic()``) on the boot
    ``boot_id``. Durations and ages are taken on ``mono`` whenever the record was made on the same
    boot, on the wall clock only for records without it (older runners, another boot)."""
    wall: float
    mono: float | None = None
    boot_id: str | None = None


def ran_for(rec: AttemptRecord) -> float:
    """How long an attempt ran: on the monotonic clock when its runner measured it so, else by its
    wall-clock times (a step of the clock during the attempt then counts)."""
    return rec.ran_s if rec.ran_s is not None else rec.ended_at - rec.started_at


def ended_ago(rec: AttemptRecord, now: Clock) -> float:
    """How long ago an attempt ended: on the monotonic clock when both are of one boot, else wall."""
    if rec.ended_mono is not None and now.mono is not None and rec.boot_id and rec.boot_id == now.boot_id:
        return now.mono - rec.ended_mono
    return now.wall - rec.ended_at


@dataclass(frozen=True)
class Decision:
    action: str          # "restart" | "pause" | "fail" | "stop"
    delay_s: float       # backoff delay before the cooldown may end
    reason: str          # one human line
    alert: str | None    # "critical" / "warning" when the user must be told

    def to_dict(self) -> dict:
        return {"action": self.action, "delay_s": self.delay_s, "reason": self.reason,
                "alert": self.alert}


def backoff_delay(consecutive_crashes: int, settings: RestartSettings) -> float:
    """initial * factor**(n-1), capped: 30, 60, 120, ... 600 s with the defaults; 0 for n <= 0."""
    if consecutive_crashes <= 0:
        return 0.0
    delay = settings.backoff_initial_s
    for _ in range(consecutive_crashes - 1):
        if delay >= settings.backoff_max_s:
            break
        delay *= settings.backoff_factor
    return min(delay, settings.backoff_max_s)


# Classes that wait for something outside the training (a device, a controller, the Hub's rate limit) and retry.
WAIT_CLASSES = frozenset({"gpu_unavailable", "slurm_unavailable", "hub_rate_limited"})


def is_crash_class(cls: str | None) -> bool:
    """A class that is a crash: not the user's own kill (an attempt the user ended is no crash:
    never counted, never the run's "last crash")."""
    return cls is not None and cls != "user_kill"


def restarts_used(classes: Sequence[str | None]) -> int:
    """Automatic restarts used against ``restart.max_restarts`` by the attempts that ended with
    these crash classes (oldest first): every crash counts, whatever followed it (the runner's own
    restart, or the user's ``r`` after a pause), except a wait for a GPU, the Slurm controller or
    the Hub (``WAIT_CLASSES``: its own capped wait) and the user's kill. The one owner of the count:
    ``decide``'s cap check and its reasons ("restart 2/3"), state.json's ``restarts`` (the runner
    sets it from the attempts ended so far: judge.py, supervisor ``_launch``) and every screen."""
    return sum(1 for c in classes if is_crash_class(c) and c not in WAIT_CLASSES)


def _classes(verdict: CrashVerdict, history: list[AttemptRecord]) -> list[str | None]:
    """Crash class per attempt; the last attempt's class is the verdict's."""
    return [r.crash_class for r in history[:-1]] + [verdict.cls]


def consecutive_crashes(verdict: CrashVerdict, history: list[AttemptRecord],
                        settings: RestartSettings) -> int:
    """Crashes in a row ending with this one; an attempt that ran for at least
    ``reset_after_s`` starts the count afresh (it counts as the first)."""
    if not history:
        return 1
    count = 0
    for rec, cls in zip(reversed(history), reversed(_classes(verdict, history))):
        if not is_crash_class(cls):
            break
        count += 1
        if ran_for(rec) >= settings.reset_after_s:
            break
    return max(count, 1)


def _made_progress(rec: AttemptRecord) -> bool:
    return rec.last_step is not None and rec.last_step > (rec.resumed_step or 0)


def decide(verdict: CrashVerdict, history: list[AttemptRecord], settings: RestartSettings,
           now: float | Clock, *, floor_s: float = 0.0) -> Decision:
    """What to do after the attempt that just ended (``history[-1]``). ``floor_s``: the
    cooldown floor the runner keeps for this crash (the recipe's, scaled by the class: NCCL
    waits longer); a restart says the wait it really gets, the larger of floor and backoff.

    Order: user kill -> stop; gpu_unavailable / slurm_unavailable / hub_rate_limited -> wait for the
    device, the Slurm controller or the Hub's next window (its own capped wait,
    outside the restart cap) or fail; not retryable -> pause (divergence) or fail; restart cap ->
    fail; no progress for N attempts -> fail; the same crash at the same step as the attempt before,
    with nothing newer to resume from (``repeated_crash``) -> pause; too many crashes in the window -> pause;
    otherwise restart after the backoff delay (with a warning for killed_oom, a repeated
    cuda_oom, or a divergence Megatron asked to rerun).
    """
    if verdict.cls == "user_kill":
        return Decision(STOP, 0.0, "stopped by the user; no restart", None)
    if verdict.cls == "gpu_unavailable":
        return _wait_for(verdict, history, settings.gpu_wait_s, settings.gpu_wait_max_s, "gpu_wait_max_s",
                         "a usable GPU", "no device")
    if verdict.cls == "slurm_unavailable":
        return _wait_for(verdict, history, settings.submit_wait_s, settings.submit_wait_max_s, "submit_wait_max_s",
                         "the Slurm controller", "no controller")
    if verdict.cls == "hub_rate_limited":
        return _wait_for(verdict, history, settings.hub_wait_s, settings.hub_wait_max_s, "hub_wait_max_s",
                         "the Hugging Face Hub's rate limit to reset", "rate-limited")
    if not verdict.retryable:
        action = PAUSE if verdict.recovery == "pause" else FAIL
        verb = "paused" if action == PAUSE else "failed"
        return Decision(action, 0.0, f"{verb}: {verdict.cls}: {verdict.summary}", CRITICAL)

    classes = _classes(verdict, history)
    # waits for a GPU have their own cap: they use neither restarts nor the no-progress count
    used = restarts_used(classes[:-1])   # this crash (a counted one: waits and kills returned above) is the next
    if used >= settings.max_restarts:
        return Decision(FAIL, 0.0, f"restart cap reached ({used}/{settings.max_restarts} "
                                   f"restarts used); last crash: {verdict.cls}: {verdict.summary}",
                        CRITICAL)

    n = settings.no_progress_attempts
    tried = [r for r, c in zip(history, classes) if c not in WAIT_CLASSES]
    if len(tried) >= n and not any(_made_progress(r) for r in tried[-n:]):
        # the last crash's summary too, as the restart cap's reason has it (review R50: an ``unknown``
        # refusal under an address-space limit FAILED here with the limit left out of the reason)
        return Decision(FAIL, 0.0, f"no step progress in {n} attempts in a row (last crash: "
                                   f"{verdict.cls}: {verdict.summary}); restarting again would not help", CRITICAL)

    same = repeated_crash(verdict, history)
    if same is not None:
        return Decision(PAUSE, 0.0, same, CRITICAL)

    clock = now if isinstance(now, Clock) else Clock(now)
    recent = sum(1 for rec, c in zip(history, classes)
                 if is_crash_class(c) and c not in WAIT_CLASSES and ended_ago(rec, clock) <= settings.crash_window_s)
    if recent > settings.max_crashes_per_window:
        return Decision(PAUSE, 0.0, f"{recent} crashes within {settings.crash_window_s:g} s "
                                    f"(limit {settings.max_crashes_per_window}); paused",
                        CRITICAL)

    run_of = consecutive_crashes(verdict, history, settings)
    delay = backoff_delay(run_of, settings)
    wait = max(delay, floor_s if math.isfinite(floor_s) else 0.0)
    why = (f"cooldown floor {floor_s:g} s for {verdict.cls}" if floor_s > delay
           else f"backoff after crash {run_of} in a row: {verdict.cls}")
    reason = f"restart {used + 1}/{settings.max_restarts} after at least {wait:g} s ({why})"
    alert = None
    if verdict.cls == "killed_oom":
        # host RAM or a SIGKILL: the verdict says how the process ended (the OOM killer's SIGKILL, Ray's memory
        # monitor, an ENOMEM; or a SIGKILL this machine's kernel did not count as an OOM kill, "another process
        # sent it", crash._signal_verdict)
        alert, reason = WARNING, reason + f"; {verdict.summary}"
    elif verdict.cls == "cuda_oom" and len(classes) >= 2 and classes[-2] == "cuda_oom":
        alert, reason = WARNING, reason + "; CUDA out of memory again"
    elif verdict.cls == "divergence":
        alert, reason = WARNING, reason + "; Megatron asked for a rerun of a suspect step"
    elif verdict.cls == "disk_full":
        alert, reason = WARNING, reason + "; a write ran out of room: the launch also waits for room where the run saves"
    return Decision(RESTART, delay, reason, alert)


RESUME_UNKNOWN = "?"         # AttemptRecord.resume_next when the runner could not read the checkpoints: no repeat
SAME_STEP_STEPS = 5          # two crashes this close (or within SAME_STEP_FRAC of the step) are "at the same step"
SAME_STEP_FRAC = 0.05

# Classes whose repetition at the same step proves nothing about the next attempt: the cause lies outside
# the run's code, data and checkpoint, so they keep their own rules (backoff, crash rate, restart cap,
# no-progress). docs/crash-classes.md ("Restart policy") gives the reason per class.
REPEAT_PROVES_NOTHING = frozenset({
    "nccl_error",        # a sick link, a flapping node or a stuck peer rank times out wherever training stands
    "hang",              # no error of its own to compare; a slow filesystem or a stuck peer stalls any step
    "killed_oom",        # the host's memory is shared with whatever else runs there
    "port_in_use",       # another process's port, before any step
    "gpu_busy_at_init",  # another process's GPU memory, before any step
    "node_fail", "preempted", "job_cancelled",   # the batch system's decisions
    "divergence",        # restartable only as Megatron's rerun request (exit 16), which replays the step on purpose
    "user_kill", *WAIT_CLASSES,
})


def crashes_passed(history: Sequence[AttemptRecord], attempt: int, step: int | None, *,
                   start: int | None = None, resumed_from: str | None = None,
                   finished: bool = False) -> list[AttemptRecord]:
    """The attempts before ``attempt`` that crashed and that ``attempt`` has now passed, oldest first:
    the run has trained through the point where each crashed, so those crashes are history, no longer
    news. ``attempt`` passes a crashed attempt when

    - it ``finished`` the run (it succeeded: the run's result holds, whatever the crash was, even one
      at the last step, the final save or teardown, where no later step exists to log; review R44), or
    - it logged ``step`` past the crashed attempt's last logged step (any step, for one that crashed
      before logging a step) and itself ran through that step: it started (``start``, its count base:
      ``launcher.count_start``, as ``_made_progress`` reads ``resumed_step``) at or before it, and the
      two counted from the same base (``_same_count``); a save verified ok at or after the crash
      step passes it too (``saved_past``).

    The runner says so once per crashed attempt (the ``past_crash`` event); ``rundir.alertgroups``
    resolves a crash's alert group once every attempt in it is passed, and a new crash of the same
    cause opens the group again. Until then a crash stays an open alert: a restart that crashes again
    at the same step (``repeated_crash``) has recovered nothing; an attempt resumed from a checkpoint
    beyond the crash step never reran it. Pure."""
    crashed = [r for r in history if r.attempt < attempt and is_crash_class(r.crash_class)]
    if finished:
        return crashed
    if step is None:
        return []
    return [r for r in crashed if r.last_step is None
            or (_same_count(r, start, resumed_from) and (start or 0) <= r.last_step < step)]


def saved_past(history: Sequence[AttemptRecord], attempt: int, saved_step: int | None, *,
               start: int | None = None, resumed_from: str | None = None,
               own_step: int | None = None, named: bool = False) -> list[AttemptRecord]:
    """The crashed attempts before ``attempt`` that a save of ``attempt``, verified ok at
    ``saved_step``, has passed: it ran through the crash step (``start`` at or before it, the same
    count base: ``_same_count``) and saved at or after it, past where it started (the checkpoint it
    resumed from is no save of its own). A crash at the last step or in the final
    save is passed so, though no later step is ever logged (review R44).

    The save must be ``attempt``'s own, proven by the save's step and the attempt's own record, not
    by when it was verified (round 18): ``attempt``'s log named it (the trainer's save line read in
    this attempt: ``named``), or ``attempt`` itself logged a step at or past it (``own_step``, its
    newest step, from the same base). A save an earlier attempt left unfinished whose files came
    whole while a later one runs (an async writer that outlived its attempt, a network filesystem's
    late attributes) is verified then, but no later attempt wrote it, nor ran through its step. Pure."""
    if saved_step is None or not (named or (own_step is not None and own_step >= saved_step)):
        return []
    return [r for r in history if r.attempt < attempt and is_crash_class(r.crash_class)
            and r.last_step is not None and _same_count(r, start, resumed_from)
            and (start or 0) <= r.last_step <= saved_step and saved_step > (start or 0)]


def _same_count(rec: AttemptRecord, start: int | None, resumed_from: str | None) -> bool:
    """Whether an attempt that started from ``start`` (its count base, ``launcher.count_start``:
    0 for a trainer that counts from step 1 again after resuming ``resumed_from``,
    ``step_count.restarts_step_count``) numbers its steps as ``rec`` did: both count the run's
    global steps, or both count from 1 after resuming the same checkpoint. Local step numbers from
    different bases say nothing about each other."""
    mine = resumed_from if start == 0 and resumed_from else None
    theirs = rec.resumed_from if rec.resumed_step == 0 and rec.resumed_from else None
    return mine == theirs


def same_step(a: int, b: int) -> bool:
    """Two crashes at about the same step: within SAME_STEP_STEPS steps or SAME_STEP_FRAC of the step."""
    return abs(a - b) <= max(SAME_STEP_STEPS, SAME_STEP_FRAC * max(a, b))


def gpu_hours_text(records: Iterable[AttemptRecord]) -> str:
    """What attempts cost: "3.20 GPU-hours (8 GPUs, 0.40 h)" when the run's GPU count is known, "0.40 h on
    CPU (no GPUs)" for a run on CPU (count 0, ``memory_estimate.gpus_of_command``), else the hours they ran
    ("0.40 h of the run's GPUs"); run times on the monotonic clock where measured so (``ran_for``)."""
    recs = list(records)
    hours = sum(max(ran_for(r), 0.0) for r in recs) / 3600.0
    gpus = next((r.gpus for r in reversed(recs) if r.gpus is not None), None)
    if gpus == 0:
        return f"{hours:.2f} h on CPU (no GPUs)"
    if gpus:
        return f"{hours * gpus:.2f} GPU-hours ({gpus} GPU{'s' if gpus != 1 else ''}, {hours:.2f} h)"
    return f"{hours:.2f} h of the run's GPUs"


def _checkpoint_name(path: str | None) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] if path else "the start (no checkpoint to resume from)"


def repeated_crash(verdict: CrashVerdict, history: list[AttemptRecord]) -> str | None:
    """The pause reason when this attempt crashed the same way, at about the same step, as the one before
    it and the next attempt would start where this one did: a third try would replay it; None otherwise.

    "The same way": the same class and the same error identity (``AttemptRecord.signature``, the crash's
    exception type and masked message line), or, for CUDA OOMs, a memory leak both times (a leak's OOM
    text names different sizes; it runs out at the same step after any resume). "Where this one did":
    the newest checkpoint to resume from when it ended is the one it resumed from (or there is none, and
    none was there when it started). Classes in REPEAT_PROVES_NOTHING never match."""
    if verdict.cls in REPEAT_PROVES_NOTHING or len(history) < 2:
        return None
    now, before = history[-1], history[-2]
    if before.crash_class != verdict.cls or now.last_step is None or before.last_step is None:
        return None
    if not same_step(now.last_step, before.last_step):
        return None
    cost = gpu_hours_text((before, now))
    if verdict.cls == "cuda_oom" and now.memory_verdict == "leak" and before.memory_verdict == "leak":
        return (f"paused: a memory leak ran out of CUDA memory at step {now.last_step} (attempt {now.attempt}) "
                f"and at step {before.last_step} (attempt {before.attempt}): restarting would loop; "
                f"the two attempts cost {cost}")
    if now.signature is None or now.signature != before.signature or now.resume_next == RESUME_UNKNOWN \
            or now.resume_next != now.resumed_from:
        return None
    where = _checkpoint_name(now.resumed_from)
    todo = verdict.hint or ("fix what the error says (the crash report keeps the log tail) or change what "
                            "reaches it at that step")
    return (f"paused: the same crash twice at step {now.last_step} (attempt {now.attempt}; attempt "
            f"{before.attempt} at step {before.last_step}), and the next attempt would resume from {where} "
            f"again: {verdict.cls}: {verdict.summary}. The two attempts cost {cost}; restarting would "
            f"repeat it. What to do: {todo}; then restart the run (`r`, or `moeconsole restart RUN`)")


def _wait_for(verdict: CrashVerdict, history: list[AttemptRecord], wait_s: float, max_s: float, max_key: str,
              what: str, still: str) -> Decision:
    """Not a crash of the training (no usable GPU, no Slurm controller, the Hub's rate limit), so no blind restart:
    wait ``wait_s`` and try again while the waits in a row stay within ``max_s``; then fail
    with the reason. These waits use neither the restart cap nor the no-progress count."""
    in_a_row = 0
    for cls in reversed(_classes(verdict, history)):
        if cls != verdict.cls:
            break
        in_a_row += 1
    waited = (in_a_row - 1) * wait_s
    if wait_s <= 0 or waited + wait_s > max_s:
        return Decision(FAIL, 0.0, f"failed: {verdict.cls}: {verdict.summary} (still {still} "
                                   f"after {in_a_row} tries, {waited:g} s of waiting; limit "
                                   f"{max_key} {max_s:g} s)", CRITICAL)
    return Decision(RESTART, wait_s,
                    f"waiting {wait_s:g} s for {what} (try {in_a_row}, "
                    f"{waited:g} of {max_s:g} s waited): {verdict.summary}",
                    WARNING)
