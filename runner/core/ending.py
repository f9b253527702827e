"""A training that exited 0 short of its known total: the one place that decides what the runner
can say about it, and the words it says.

transformers stops its loop before ``max_steps`` only when a callback sets
``control.should_training_stop`` (trainer.py's inner loop; ``DefaultFlowCallback`` sets it at
``global_step >= max_steps``, trainer_callback.py l.593). Two of transformers' own callbacks do so below
the total and both end with exit 0:

- ``EarlyStoppingCallback`` (trainer_callback.py, 5.19 l.711-790, l.773): after an evaluation that did not
  improve ``patience`` times. It logs nothing when it stops. A real success.
- ``JITCheckpointCallback`` (``--enable_jit_checkpoint``, trainer_jit_checkpoint.py, 5.19): its
  SIGTERM handler (l.31-36) logs "SIGTERM received, will request JIT checkpoint after 3s", arms a
  timer (l.38-40), and at the next step hook (l.99-119) the callback saves ``checkpoint-<global_step>``
  (l.42-72: "Saving JIT checkpoint at step N") and stops training; the process exits 0. A
  preemption (Kubernetes, Slurm's ``--signal``), not a success. Its lines are ``logger.info``, which
  ms-swift does not print at its default level.

ms-swift adds its own (``--max_epochs``, swift/trainers/patcher.py; ``--early_stop_interval``,
swift/callbacks/early_stop.py), and any script may stop where it likes. So the step short of the
total proves only that the training stopped itself early; it proves a SIGTERM when the
training's own line says it handled one (``HANDLED_SIGTERM``), or when one of the attempt's saves was
made in the middle of a step with the stop requested (``STOP_SAVED_MID_STEP``). The runner did not send
it: the judge asks this only when no kill of the runner's ended the attempt.

What else was looked at and proves nothing: the exit status (the trainer's 0, and ms-swift's wrapper's;
the runner reaps only the wrapper, never the trainer's ``siginfo``), torchrun's agent (it prints nothing
when its worker ends with 0, and a SIGTERM to the agent itself ends it with its own non-zero exit, a
crash), the JIT's sentinel ``checkpoint-is-incomplete.txt`` (removed once the save completes, l.67-70;
one left behind is a cut save, ``verify``'s ``incomplete``), and a save at a step off the ``--save_steps``
cadence or ``global_step < max_steps`` (ms-swift's ``--max_epochs`` saves at an epoch's end and stops,
swift/trainers/patcher.py l.75-84).

Some of those stops say so in the training's own line, and then the runner knows the training
stopped itself on purpose (``STOPPED_ITSELF``): ms-swift 4.6's ``--max_epochs``
(swift/trainers/patcher.py ``DefaultFlowCallbackNew.on_epoch_end``, l.77-83: ``logger.info('Training has
reached `max_epochs`. The model will be saved and the training will be exited.')``, then
``should_save`` and ``should_training_stop``) and ``--early_stop_interval`` (swift/callbacks/early_stop.py
``EarlyStopCallback.on_save``, l.33-34: ``logger.info(f'Training stop because of eval metric is stable at
step {state.global_step}')``, then ``should_training_stop``); ms-swift's logger prints INFO
(swift/utils/logger.py, ``[%(levelname)s:%(name)s] %(message)s``), so the lines read ``[INFO:swift] ...``.
Megatron-LM's own clean exits (megatron/training/training.py ``checkpoint_and_decide_exit``: save, then
``print_datetime(...)``, which prints ``[<words>] datetime: <time>`` on rank 0; ``train`` then
``sys.exit(exit_code)`` with ``exit_code = 0``): ``--exit-interval`` (and ``--phase-transition-iterations``)
``exiting program at iteration N``, ``--exit-duration-in-mins`` ``exiting program after M minutes``. Such
an end is a success that names what stopped it (``ShortEnd.stopped_by``), never "ended short". Megatron's
``--exit-signal-handler`` (``exiting program after receiving SIGTERM.``) is a SIGTERM it handled:
``HANDLED_SIGTERM``.

transformers' ``EarlyStoppingCallback`` prints nothing, but its stop is in the save of the step it stopped at
(``StopSave.early_stopping``): it sets ``should_training_stop`` in ``on_evaluate`` (trainer_callback.py l.758-773),
the Trainer saves after that evaluation in the same ``_maybe_log_save_evaluate`` (trainer.py l.2252-2261) and
writes every ``ExportableState`` callback's state with the ``TrainerControl``'s into that save's
``trainer_state.json`` (``_save_checkpoint``, l.3363-3375): ``stateful_callbacks.EarlyStoppingCallback``'s
``early_stopping_patience_counter`` at its ``early_stopping_patience`` beside ``should_training_stop: true``, at
the step the loop then stops at (l.1946-1949). That is a stop on purpose, named like ms-swift's. When the
stopping evaluation had no save of its own (``--save_steps`` a multiple of ``--eval_steps``), or its save was
deleted (``--save_total_limit 1``), the stop is replayed from an earlier save's callback state over the evaluations
logged after it (``early_stop_replayed``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

# The training's own words that it handled a SIGTERM and is saving before it stops
# (transformers 5.19 trainer_jit_checkpoint.py l.35, l.39, l.49).
# Megatron-LM's ``--exit-signal-handler`` (training.py ``checkpoint_and_decide_exit``: saves, prints this, exits 0).
HANDLED_SIGTERM = ("SIGTERM received, will request JIT checkpoint", "Kill wait period elapsed, requesting checkpoint",
                   "Saving JIT checkpoint at step", "[exiting program after receiving SIGTERM.]")

# The training's own words that it stopped itself on purpose, and what stopped it (the module docstring
# says where each is printed). Each is the logger's or ``print_datetime``'s whole print, its prefix
# included, so a line that only quotes the words (a hint, an f-string in a traceback) is not one.
STOPPED_ITSELF: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\[INFO:swift\] Training has reached `max_epochs`\. The model will be saved"), "ms-swift --max_epochs"),
    (re.compile(r"\[INFO:swift\] Training stop because of eval metric is stable at step \d+"),
     "ms-swift --early_stop_interval"),
    (re.compile(r"\[exiting program at iteration \d+\] datetime: "), "Megatron --exit-interval"),
    (re.compile(r"\[exiting program after \d+(?:\.\d+)?(?:[eE][-+]?\d+)? minutes\] datetime: "),
     "Megatron --exit-duration-in-mins"),
)


def stopped_itself(line: str) -> str | None:
    """What stopped the training, when ``line`` is its own word that it stopped itself on purpose
    (``STOPPED_ITSELF``), else None."""
    return next((by for pattern, by in STOPPED_ITSELF if pattern.search(line)), None)


# What transformers' EarlyStoppingCallback stop is called (``ShortEnd.stopped_by``).
EARLY_STOPPING = "transformers EarlyStoppingCallback"


# ms-swift's ``--callbacks graceful_exit`` (swift/callbacks/deepspeed_elastic.py ``GracefulExitCallback``, 4.6.0
# l.13-45): its ShutdownManager (swift/utils/shutdown_manager.py l.5-35) takes SIGTERM, SIGINT, SIGUSR1 and SIGUSR2
# in the trainer and only notes them; at the end of the step that sees one, or sees the file ``/tmp/stop``, the
# callback asks for a save (``on_step_end``: ``should_save``), and once saved it stops (``on_save``:
# ``should_training_stop``, set after trainer_state.json was written, so the save says nothing of it). The loop
# ends at that step and the trainer exits 0; nothing is printed. The save of the attempt's last step with the
# callback in its args.json is that stop (``StopSave.graceful_exit``): a signal this runner did not send, a
# preemption, unless the stop file is there (someone asked it to stop: then a stop on purpose).
GRACEFUL_EXIT = "graceful_exit"
GRACEFUL_STOP_FILE = "/tmp/stop"


@dataclass(frozen=True)
class StopSave:
    """A save whose trainer_state.json says its Trainer was asked to stop (``asked``; ``discover.stop_save``), or
    one of a run with ms-swift's graceful_exit callback (``graceful_exit``): its step, its directory's name,
    ``early_stopping`` (the EarlyStoppingCallback's patience counter and patience) when that callback's own
    state in the save had reached its patience, and ``stop_file``: the graceful exit's stop file was there when
    the save was read."""
    step: int
    name: str = ""
    early_stopping: tuple[int, int] | None = None
    asked: bool = True
    graceful_exit: bool = False
    stop_file: bool = False
    replayed: str = ""

    def graceful_words(self) -> str:
        """Why a graceful exit's save at the last step is a signal the training handled."""
        return (f"{self.name or f'checkpoint-{self.step}'} was saved at step {self.step}, where the training stopped, "
                f"by ms-swift's graceful_exit callback (--callbacks graceful_exit), which saves and stops on a "
                f"SIGTERM, SIGINT, SIGUSR1 or SIGUSR2 (or the file {GRACEFUL_STOP_FILE})")

    def early_stop_words(self) -> str:
        """Where the stop is read: "checkpoint-4/trainer_state.json: EarlyStoppingCallback ..."."""
        if self.replayed:   # read from an earlier save and the evaluations after it (``early_stop_replayed``)
            return self.replayed
        counter, patience = self.early_stopping or (0, 0)
        return (f"{self.name or f'checkpoint-{self.step}'}/trainer_state.json: EarlyStoppingCallback's "
                f"early_stopping_patience_counter {counter} of early_stopping_patience {patience}, "
                f"should_training_stop true at step {self.step}")


@dataclass(frozen=True)
class EarlyStopState:
    """The ``EarlyStoppingCallback``'s state as a save keeps it (``discover.early_stop_state``): the save's ``step``
    and directory ``name``, the callback's ``patience``, ``threshold`` and ``counter`` there, the Trainer's
    ``best`` metric value then (``best_metric``), the metric's key (``eval_`` + ``metric_for_best_model``) and
    whether higher is better."""
    step: int
    name: str
    patience: int
    threshold: float
    counter: int
    best: float | None
    metric: str
    greater: bool


# transformers deletes the save of the step the EarlyStoppingCallback stopped at when it is not the best and
# ``--save_total_limit 1`` (trainer.py 5.19 ``_finalize_training`` l.2005-2011: every save but the best goes), and a
# stopping evaluation with no save of its own (``--save_steps`` a multiple of ``--eval_steps``) has none: then the
# proof is an earlier save's callback state and the evaluations after it. The callback's ``on_evaluate`` runs inside
# ``_evaluate`` (l.2858), before ``_determine_best_metric`` (l.2254): it compares each evaluation with the best
# before it (``check_metric_value``, trainer_callback.py l.735-745: reset on ``operator(value, best)`` by more
# than the threshold, else one more), and the Trainer then keeps a better value as the best by ``operator`` alone
# (l.3413-3414). The first evaluation whose counter reaches the patience stops the training (l.772-773).
def early_stop_replayed(kept: EarlyStopState, evals: Iterable[tuple[int, dict]]) -> StopSave | None:
    """The EarlyStoppingCallback's stop replayed from ``kept`` over ``evals`` (``(step, values)`` in the order
    logged; the newest of a step counts, a resumed attempt's; ``values`` the evaluation's keys, ``eval_loss`` ...):
    a ``StopSave`` at the step of the first evaluation after ``kept`` whose counter reaches the patience, else
    None (no such evaluation, or one without the metric: the callback skips it and says so)."""
    by_step: dict[int, float] = {}
    for step, values in evals:
        value = values.get(kept.metric)
        if step > kept.step and isinstance(value, (int, float)) and not isinstance(value, bool):
            by_step[step] = float(value)
    counter, best, steps = kept.counter, kept.best, []
    for step in sorted(by_step):
        value = by_step[step]
        better = best is None or (value > best if kept.greater else value < best)
        counter = 0 if best is None or (better and abs(value - best) > kept.threshold) else counter + 1
        best = value if better else best
        steps.append(step)
        if counter >= kept.patience:
            shown = (f"evaluations at steps {', '.join(map(str, steps))}" if len(steps) > 1 else
                     f"evaluation at step {steps[0]}")
            return StopSave(step, kept.name, (counter, kept.patience), asked=False, replayed=(
                f"{kept.name}/trainer_state.json: EarlyStoppingCallback's early_stopping_patience {kept.patience} "
                f"(threshold {kept.threshold:g}, counter {kept.counter} at step {kept.step}), and the {shown} "
                f"did not improve {kept.metric} on {kept.best:.7g}: the counter reached "
                f"{counter} at step {step}, where the save of that step is not on disk" if kept.best is not None else
                f"{kept.name}/trainer_state.json: EarlyStoppingCallback's early_stopping_patience {kept.patience}; "
                f"the counter reached {counter} at step {step}"))
    return None


# A save whose trainer_state.json says the Trainer was asked to stop (``discover.stop_requested_at``) at a
# step before the attempt's last one was made in the middle of a step, and only the JIT checkpoint saves
# there: its ``on_step_begin`` and ``on_pre_optimizer_step`` (trainer_jit_checkpoint.py l.99-107) set
# ``should_training_stop`` and save at once, and the loop stops only at the step's end, one step later
# (measured: ``checkpoint-5``, the summary at 6/400). Every other stop is decided at a step's end and its
# save, if any, is that step's: ``DefaultFlowCallback`` at max_steps (trainer_callback.py l.589-604),
# ``EarlyStoppingCallback`` in ``on_evaluate`` before the save (l.773), ms-swift's ``--max_epochs`` at the
# epoch's end (patcher.py l.75-84), its ``--early_stop_interval`` in ``on_save``, after the state is
# written (swift/callbacks/early_stop.py l.25-34). (The JIT's ``on_step_end``/``on_epoch_end`` saves are
# at the last step: they prove nothing this way.)
def stop_saved_mid_step(stop_saves: Iterable[StopSave | int], last_step: int) -> int | None:
    """The step of such a save (the newest), else None."""
    mid = [s for s in map(_as_stop_save, stop_saves) if s.asked and s.step < last_step and s.early_stopping is None]
    return max(s.step for s in mid) if mid else None


def early_stopped(stop_saves: Iterable[StopSave | int], last_step: int) -> StopSave | None:
    """The save that shows transformers' EarlyStoppingCallback stopped the training at ``last_step`` (its
    patience reached, the stop requested, at that very step: the module docstring), else None."""
    return next((s for s in map(_as_stop_save, stop_saves) if s.early_stopping is not None and s.step == last_step),
                None)


def graceful_exit_at(stop_saves: Iterable[StopSave | int], last_step: int) -> StopSave | None:
    """The save that shows ms-swift's graceful_exit callback stopped the training at ``last_step`` (a save of a
    run with the callback, at that very step: ``GRACEFUL_EXIT``), else None."""
    return next((s for s in map(_as_stop_save, stop_saves) if s.graceful_exit and s.step == last_step), None)


def _as_stop_save(s: StopSave | int) -> StopSave:
    """A bare step as the save at it that says nothing more (``discover.stop_save`` reads one from disk)."""
    return s if isinstance(s, StopSave) else StopSave(s)


@dataclass(frozen=True)
class ShortEnd:
    """An attempt that exited 0 at ``step`` of a known ``total`` > step; ``sigterm_line``: the proof
    that it handled a SIGTERM, the training's own line or what its mid-step save shows (None: nothing
    says why it stopped). ``stopped_by``: what stopped it on purpose, as its own line ``stop_line``
    says (``STOPPED_ITSELF``: a success, not a short end); None when no such line was printed."""
    step: int
    total: int
    sigterm_line: str | None = None
    stopped_by: str | None = None
    stop_line: str | None = None

    @property
    def where(self) -> str:
        """"step 9 of 400"."""
        return f"step {self.step} of {self.total}"

    def summary(self) -> str:
        """The crash summary of a proven one (the training handled a SIGTERM the runner did not send)."""
        return (f"the training handled a SIGTERM this runner did not send (a preemption?): it saved and exited 0 "
                f"at {self.where}")

    def stopped_words(self) -> str:
        """The status reason of one that stopped itself on purpose: "stopped by ms-swift --max_epochs at
        step 27 of 81"."""
        return f"stopped by {self.stopped_by} at {self.where}"

    def reason(self, run_id: str) -> str:
        """The status reason of an unproven one: it succeeded as far as the runner can tell, but ended
        short of its total, and the user is offered the resume."""
        return (f"training ended (exit 0) at {self.where}, short of its total: early stopping, or a SIGTERM it "
                f"handled by saving (transformers' --enable_jit_checkpoint)? If something stopped it, resume it: "
                f"moeconsole restart {run_id} --force")


def below_total(last_step: int | None, total: int | None) -> bool:
    """Whether the attempt's last logged step is below the total its log gave (both known): the only ends
    ``short_end`` may call short, and the ones whose saves it reads (``stop_saves``), within an interval too."""
    return last_step is not None and bool(total) and last_step < (total or 0)


def short_end(last_step: int | None, total: int | None, tail: Iterable[str],
              log_every: int | None = None, stop_saves: Iterable[StopSave | int] = ()) -> ShortEnd | None:
    """The attempt's end when its last logged step is short of the total its log gave (both known),
    else None. ``tail``: the attempt's last log lines. ``log_every``: the gap between its last two
    steps logged. The steps after the last logging step are trained but print nothing of their own
    (transformers logs at ``global_step % logging_steps == 0``, DefaultFlowCallback.on_step_end,
    trainer_callback.py, and stops at ``max_steps`` without a log of its own), so a run logged every
    10 steps that ends at 1,230 of 1,234 reached its total: short only by at least one interval
    (a proven SIGTERM of its own words, or a stop one of its saves shows, still counts within it).
    ``stop_saves``: the steps of the attempt's saves made with the stop requested (``stop_saved_mid_step``;
    ``early_stopped``; ``graceful_exit_at``), to be given whenever the end is ``below_total``, within the last
    interval too: transformers' EarlyStoppingCallback that stops there (evaluated and logged every 4 steps, stopped
    at 8 of 10) says so only in its save."""
    if last_step is None or total is None or not below_total(last_step, total):
        return None
    # the newest of its own words on why it stopped: a SIGTERM it handled, or a stop of its own
    said = next((ln for ln in reversed(list(tail)) if any(w in ln for w in HANDLED_SIGTERM) or stopped_itself(ln)),
                None)
    if said is None:
        line = None
    elif any(w in said for w in HANDLED_SIGTERM):
        line = said.strip()
    else:   # it stopped itself on purpose, and said so: within an interval too
        return ShortEnd(last_step, total, stopped_by=stopped_itself(said), stop_line=_own_words(said))
    saves = list(stop_saves)
    early = early_stopped(saves, last_step) if line is None else None
    if early is not None:   # its save says the EarlyStoppingCallback stopped it: on purpose, within an interval too
        return ShortEnd(last_step, total, stopped_by=EARLY_STOPPING, stop_line=early.early_stop_words())
    graceful = graceful_exit_at(saves, last_step) if line is None else None
    if graceful is not None and graceful.stop_file:   # someone asked it to stop through the file: on purpose
        return ShortEnd(last_step, total, stopped_by=f"ms-swift graceful_exit ({GRACEFUL_STOP_FILE})",
                        stop_line=f"{graceful.graceful_words()}; {GRACEFUL_STOP_FILE} is there")
    if graceful is not None:   # a signal it handled by saving: the proof of a SIGTERM (or its kin) as the JIT's
        line = graceful.graceful_words()
    mid = stop_saved_mid_step(saves, last_step) if line is None else None
    if mid is not None:
        line = (f"checkpoint-{mid} was saved in the middle of step {mid + 1} with the stop requested, which only "
                f"transformers' JIT checkpoint does on a SIGTERM (its trainer_state.json: should_training_stop)")
    if line is None and log_every is not None and total - last_step < log_every:
        return None
    return ShortEnd(last_step, total, line)


def _own_words(line: str) -> str:
    """The part of a log line from its stop words on (ms-swift's line follows tqdm's bar after a carriage
    return, in one line of the file)."""
    for pattern, _ in STOPPED_ITSELF:
        m = pattern.search(line)
        if m:
            return line[m.start():].strip()
    return line.strip()


def at_total_words(resume: str, done: tuple[int, int]) -> str:
    """Why no attempt resumes from ``resume``, a save at its training's total ``done`` (``discover.finished_save``):
    the automatic restart's pause reason (``judge._pause_at_total``) and the refusal of one the user asked for
    (``resume_at_total_refusal``)."""
    step, total = done
    name = resume.rstrip("/").rsplit("/", 1)[-1]
    return (f"{name} holds step {step} of {total} (its trainer_state.json); not restarted, as transformers resumes "
            f"a save at its max_steps by training one step past it (step {total + 1} of {total}, a learning rate "
            f"from the schedule's end). The trained result is {name}")


def resume_at_total_refusal(run_id: str, resume: str | None, done: tuple[int, int] | None, total: int | None,
                            count_start: int | None) -> str | None:
    """Why an attempt the user asked for (``moeconsole restart``, ``restart --from``, ``--force`` after a success)
    does not start, else None: the save it would resume from (``resume``) holds ``done``, its training's total
    ``total`` (the run's, as its log gave it), and the attempt would count on from it (``count_start``, the
    launcher's: 0 when its trainer counts from step 1 again, ``--resume_only_model --ignore_data_skip``, which trains
    the whole total again). Measured with ms-swift 4.6 (tests/swift/test_swift_round11.py): after the pause
    ``judge._pause_at_total`` gives, ``moeconsole restart`` trained step 5 of 4 (``'global_step/max_steps': '5/4'``,
    ``remaining_time`` "23h 59m 57s"), saved checkpoint-5 and SUCCEEDED at step 5 of 4."""
    if resume is None or done is None or total is None or done[1] != total or count_start == 0:
        return None
    return (f"nothing left to train: {at_total_words(resume, done)}. To train on, raise --max_steps in a new run; to "
            f"redo the end, resume an earlier save: moeconsole restart {run_id} --from checkpoint-N")
