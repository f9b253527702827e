"""The runner's collaborators on their own: the ingest pipe, the attempt watch, the launcher, the
launch conditions and the recovery of a run, each driven directly (a real run directory, real
processes, real sockets), and the Supervisor's lifecycle refusing re-entry.

The end-to-end suite (tests/runner/test_runner_*.py) covers them together through the CLI; these
pin each seam: what a collaborator returns for the loop to apply, and that it calls nobody back.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.recipes.model import Launch, RunRecipe
from moeconsole.runner.core.state import Status
from moeconsole.runner.process import proctree
from moeconsole.runner.process.attempt import Ended, LaunchSpec, NoAttempt, Running
from moeconsole.runner.process.engines.local import LocalEngine
from moeconsole.runner.process.launch import create_run
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.rundir.journal import Journal
from moeconsole.runner.rundir.secrets import Redactor
from moeconsole.runner.supervisor.attempt_watch import AttemptWatch
from moeconsole.runner.supervisor.conditions import ConditionsCheck
from moeconsole.runner.supervisor.ingest_pipe import INGEST_SUBSLICE_BYTES, SLOW_TURNS, Ingested, IngestPipe
from moeconsole.runner.supervisor.launcher import LaunchedAttempt, Launcher
from moeconsole.runner.supervisor.memory_feed import MemoryFeed
from moeconsole.runner.supervisor.recovery import recover_state, takeover
from moeconsole.runner.supervisor.supervisor import Supervisor
from tests.runner.conftest import base_recipe
from tests.waiting import until

LOG_LINES: list[str] = []


def _diag(msg: str) -> None:
    LOG_LINES.append(msg)


@pytest.fixture
def made(tmp_path: Path):
    """A real run directory made the way ``moeconsole run`` makes it, and its validated recipe."""
    def make(**over) -> tuple[rundir.RunDir, RunRecipe]:
        recipe = recipes.validate(base_recipe(**over), launch=Launch(recipe_dir=str(tmp_path)))
        return create_run(tmp_path / "runs", recipe), recipe
    return make


def _pipe(run: rundir.RunDir, recipe: RunRecipe) -> IngestPipe:
    journal = Journal(run, _diag)
    return IngestPipe(run, journal, Redactor([]), MemoryFeed(recipe, _diag), recipe.alerts,
                      start_offset=0, attempt=1, progress={}, diag=_diag)


def _log(run: rundir.RunDir, *lines: str) -> None:
    with open(run.log, "a") as f:
        f.write("".join(line + "\n" for line in lines))


# ---- IngestPipe ------------------------------------------------------------------------------
def test_ingest_pipe_returns_progress_saves_and_a_divergence_instead_of_calling_back(made):
    run, recipe = made()
    pipe = _pipe(run, recipe)
    pipe.launched(1)
    _log(run, *(json.dumps({"step": s, "loss": 2.0 - s / 10}) for s in (1, 2, 3)),
         f"[INFO:swift] Saving model checkpoint to {run.path}/output/checkpoint-3")
    got = pipe.read()
    assert isinstance(got, Ingested) and got.read and not got.more
    assert got.progress["step"] == 3 and got.progress["last_loss"] == pytest.approx(1.7)
    assert got.progress["min_loss"] == pytest.approx(1.7)
    assert got.saves == [(f"{run.path}/output/checkpoint-3", False)]
    assert got.divergence is None
    pipe.journal.flush()
    assert [r["step"] for r in map(json.loads, run.metrics.read_text().splitlines())] == [1, 2, 3]

    _log(run, json.dumps({"step": 4, "loss": float("nan")}))
    got = pipe.read()
    assert got.divergence == "loss is nan at step 4"
    assert got.progress.get("step") == 4
    assert not pipe.read().read, "nothing new: an empty result"


def test_ingest_pipe_reads_one_sub_slice_and_says_more_is_waiting(made):
    run, recipe = made()
    pipe = _pipe(run, recipe)
    line = json.dumps({"step": 1, "loss": 1.0, "note": "x" * 200})
    _log(run, *([line] * (3 * INGEST_SUBSLICE_BYTES // len(line))))
    first = pipe.read()
    assert first.read and first.more and pipe.offset == INGEST_SUBSLICE_BYTES
    rest = pipe.catch_up()
    assert rest.read and not rest.more and pipe.offset == run.log.stat().st_size


def _watched(pipe, start: float, until: float) -> float:
    """The runner's loop looking at the log every tick (0.1 s of monotonic time) from ``start`` to
    ``until``, as ``Supervisor.tick`` does before it asks ``hang``: the silence it watched."""
    t = start
    while t < until:
        t = min(until, t + 0.1)
        pipe.look(t)
    return until


def test_ingest_pipe_hang_clock_is_monotonic(made):
    run, recipe = made(heartbeat={"timeout_s": 5, "startup_s": 50})
    pipe = _pipe(run, recipe)
    pipe.launched(1)
    now = time.monotonic()
    pipe.look(now)
    assert pipe.hang(_watched(pipe, now, now + 49), recipe.heartbeat) is None, "start-up allowance before the first step"
    hang = pipe.hang(_watched(pipe, now + 49, now + 51), recipe.heartbeat)
    assert isinstance(hang, lc.Hang) and hang.limit_s == 50
    _log(run, json.dumps({"step": 1, "loss": 1.0}))
    pipe.read()
    now = time.monotonic()
    assert pipe.hang(_watched(pipe, now, now + 4), recipe.heartbeat) is None
    assert isinstance(pipe.hang(_watched(pipe, now + 4, now + 6), recipe.heartbeat), lc.Hang)
    # a batch job waiting in the queue: silence is expected, the clock starts over
    assert pipe.hang(_watched(pipe, now + 6, now + 600), recipe.heartbeat, pending=True) is None
    assert pipe.hang(_watched(pipe, now + 600, now + 601), recipe.heartbeat) is None


def test_ingest_pipe_hang_clock_counts_only_the_silence_the_runner_watched(made):
    """The runner away (stopped, frozen with its training) for longer than the heartbeat: its
    first look after calls no hang, nor does a hang asked before that look; the silence before
    the absence and after it add up, and a heartbeat of watched silence is a hang."""
    run, recipe = made(heartbeat={"timeout_s": 5, "startup_s": 50})
    pipe = _pipe(run, recipe)
    pipe.launched(1)
    _log(run, json.dumps({"step": 1, "loss": 1.0}))
    pipe.read()
    now = time.monotonic()
    _watched(pipe, now, now + 3)                                # 3 s watched
    assert pipe.hang(now + 603, recipe.heartbeat) is None      # 600 s away, not looked yet
    pipe.look(now + 603)                                        # back: the 600 s are not silence
    assert pipe.hang(now + 603, recipe.heartbeat) is None
    assert pipe.hang(_watched(pipe, now + 603, now + 604.9), recipe.heartbeat) is None
    assert isinstance(pipe.hang(_watched(pipe, now + 604.9, now + 605.2), recipe.heartbeat), lc.Hang)


def test_ingest_pipe_slow_work_every_tick_delays_a_hang_never_hides_it(made):
    """The runner's own work is watched time: a tick whose NVML sample takes 2 s after the hang
    check, or 2 s of work between the look and the hang check, on every tick (a GPU fault that
    slows NVML, a stalled disk), used to move the hang clock on at every look, so a training that
    hung was never called hung. Now the first is no absence at all and the second is credited on
    one tick in two: a hang within a bounded delay of the heartbeat (simulated monotonic time).
    Round 16: a gap anywhere in the turn is the runner's absence (a freeze after the hang check was
    erased), unless the ``SLOW_TURNS`` turns before it each had one: slowness is credited
    ``SLOW_TURNS`` times, then the hang clock runs."""
    run, recipe = made(heartbeat={"timeout_s": 5, "startup_s": 50})
    for slow_before_hang in (False, True):
        pipe = _pipe(run, recipe)
        pipe.launched(1)
        _log(run, json.dumps({"step": 1, "loss": 1.0}))
        pipe.read()
        t0 = t = time.monotonic()
        pipe.watched(t)
        hang = None
        while hang is None and t < t0 + 120:
            pipe.look(t + 0.1)                           # the wait, then the look at the log
            t += 0.1 + (2.0 if slow_before_hang else 0.01)
            hang = pipe.hang(t, recipe.heartbeat)
            t += 0.01 if slow_before_hang else 2.0     # the rest of the tick's work
            pipe.watched(t)
        assert isinstance(hang, lc.Hang), slow_before_hang
        # the heartbeat (5 s) plus at most SLOW_TURNS slow gaps credited, and the turn that calls it
        assert t - t0 < 5 + (SLOW_TURNS + 2) * 2.2, (slow_before_hang, t - t0)


def test_a_second_stop_of_the_same_processes_after_they_ran_again_is_said_again(made):
    """`docker pause`, a thaw, output, `docker pause` again: the second freeze had no warning (the
    set of processes said was kept until a hang was called)."""
    run, recipe = made(heartbeat={"timeout_s": 5, "startup_s": 50})
    pipe = _pipe(run, recipe)
    pipe.launched(1)
    _log(run, json.dumps({"step": 1, "loss": 1.0}))
    pipe.read()

    def frozen_warnings() -> int:
        pipe.journal.flush()
        return sum(1 for _, e in jsonio.iter_jsonl(run.events) if e.get("rule") == "stopped")

    for n in (1, 2):
        now = time.monotonic()
        t = _watched(pipe, now, now + 6)
        assert pipe.hang(t, recipe.heartbeat, frozen=lambda: {4242: "/sys/fs/cgroup/freezer/job"}) is None
        assert frozen_warnings() == n
        _log(run, json.dumps({"step": 1 + n, "loss": 1.0}))   # thawed: it trains on
        pipe.read()


# ---- AttemptWatch and the local engine ----------------------------------------------------------
def _reap_until_end(watch: AttemptWatch) -> tuple[bool, int | None]:
    def ended():
        got = watch.noticed_end(proctree.reap_children(), live=True)
        return got if got[0] else None
    return until(ended, timeout=60, what="the attempt's end")


def test_attempt_watch_signals_and_sees_the_end_only_through_the_attempt(made, tmp_path):
    run, _ = made()
    engine = LocalEngine(run)
    watch = AttemptWatch(run.run_id, engine)
    assert isinstance(watch.procs, NoAttempt) and watch.probe().alive is False
    fd = jsonio.open_append(run.log)
    try:
        attempt = engine.start(LaunchSpec(1, [sys.executable, "-c", "import time\nwhile True: time.sleep(0.1)"],
                                          {**os.environ, "MOECONSOLE_RUN_ID": run.run_id}, str(tmp_path)), fd)
    finally:
        os.close(fd)
    watch.launched(attempt)
    try:
        assert isinstance(attempt.poll({}), Running)
        assert watch.noticed_end({}, live=True) == (False, None)
        watch.refresh()
        roles = {p["role"] for p in attempt.tracked()}
        assert roles == {"waiter", "leader"}
        assert watch.probe().alive
        leader = next(p["pid"] for p in attempt.tracked() if p["role"] == "leader")
        sent = watch.terminate()
        # the command's group got it; the waiter too, unless it had already recorded the command's
        # end and exited (a busy machine can hold this process between the group's signal and the
        # waiter's own): either way it ends the way its command did, below
        assert leader in sent and set(sent) <= set(attempt.pids), (sent, attempt.pids)
        ended, rc = _reap_until_end(watch)
        assert ended and rc == -signal.SIGTERM, "the waiter ends the way its command did"
        watch.ended(1, rc)
        assert watch.end_facts()["detected_after_s"] >= 0
        until(lambda: not watch.probe().alive, timeout=30, what="nothing of the attempt alive")
    finally:
        attempt.signal(signal.SIGKILL)
        proctree.reap_children()


def test_local_attempt_poll_is_running_or_ended():
    assert Ended(-9).signal == 9 and Ended(1).signal is None and Ended(None).returncode is None


# ---- Launcher ------------------------------------------------------------------------------------
def test_launcher_starts_the_attempt_and_names_its_processes(made):
    run, recipe = made(command=["{python}", "-c", "import os, time\nprint('pid', os.getpid(), flush=True)\n"
                                                  "time.sleep(60)"], checkpoints={"dir": None}, resume={"arg": None})
    env = recipes.resolve_env(recipe.env)
    journal = Journal(run, _diag)
    launcher = Launcher(run, recipe, recipe_hash=recipes.recipe_hash(recipe), env=env, redactor=Redactor([]),
                        engine=LocalEngine(run), journal=journal, alert=lambda *a, **k: None, diag=_diag)
    fd = launcher.open_log(1)
    assert isinstance(fd, int)
    try:
        started = launcher.start(1, fd, resume_from=None, next_env={})
    finally:
        os.close(fd)
    assert isinstance(started, LaunchedAttempt)
    try:
        printed = until(lambda: [l for l in run.log.read_text().splitlines() if l.startswith("pid ")],
                        what="the command's pid in train.log")
        command_pid = int(printed[0].split()[1])
        assert started.event["command_pid"] == command_pid
        assert started.event["pid"] == started.attempt.leader_pid != command_pid  # the waiter is the root
        assert started.event["argv"][0] == sys.executable
        with open(f"/proc/{command_pid}/environ", "rb") as f:
            assert f"MOECONSOLE_RUN_ID={run.run_id}".encode() in f.read().split(b"\0")
    finally:
        started.attempt.signal(signal.SIGKILL)
        until(lambda: started.attempt.leader_pid in proctree.reap_children(), timeout=30, what="the waiter reaped")


def test_launcher_refuses_a_command_that_cannot_start(made):
    run, recipe = made(command=["/nonexistent/trainer"], checkpoints={"dir": None}, resume={"arg": None})
    launcher = Launcher(run, recipe, recipe_hash="h", env={}, redactor=Redactor([]), engine=LocalEngine(run),
                        journal=Journal(run, _diag), alert=lambda *a, **k: None, diag=_diag)
    fd = launcher.open_log(1)
    assert isinstance(fd, int)
    try:
        started = launcher.start(1, fd, resume_from=None, next_env={})
    finally:
        os.close(fd)
    # the waiter started; the exec failed inside it: its exit record says so
    assert isinstance(started, LaunchedAttempt)
    until(lambda: started.attempt.leader_pid in proctree.reap_children(), timeout=30, what="the waiter reaped")
    status = LocalEngine(run).exit_status(1)
    assert status is not None and status.error and "nonexistent" in status.error


# ---- ConditionsCheck ---------------------------------------------------------------------------
def test_conditions_name_a_busy_port_and_survivors_and_clear_when_free(made):
    run, recipe = made()
    check = ConditionsCheck(run.run_id, recipe, gpu_backend=None, diag=_diag)
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        busy = check.look(unwritable=None, survivors={4242: 0.0}, tree_blocking=["Slurm job 5 still RUNNING"], port=port)
        assert busy.port_busy
        assert busy.waiting[:3] == ("survivors of this run: PIDs [4242]", "Slurm job 5 still RUNNING",
                                    f"port {port} busy")
        event = check.probe(unwritable="the run directory refuses the log", survivors={}, tree_blocking=[], port=port)
        assert isinstance(event, lc.ConditionsProbe) and event.port_busy
        assert event.waiting[0] == "the run directory refuses the log"
    finally:
        holder.close()
    clear = check.look(unwritable=None, survivors={}, tree_blocking=[], port=port)
    assert clear.waiting == () and not clear.port_busy


# ---- recovery ------------------------------------------------------------------------------------
def test_takeover_decides_adopt_judge_or_start():
    pids = [{"pid": 10, "start_time": 1.0, "role": "waiter"}]
    alive = takeover(Status.RUNNING, {"attempt": 2, "pids": pids}, lambda n, p: True)
    assert (alive.leader_alive, alive.leader_known, alive.ended_unwatched) == (True, True, False)
    gone = takeover(Status.RUNNING, {"attempt": 2, "pids": pids}, lambda n, p: False)
    assert (gone.leader_alive, gone.ended_unwatched) == (True, True), "ended unwatched: read its log, then judge"
    fresh = takeover(Status.STARTING, {"attempt": 0, "pids": []}, lambda n, p: pytest.fail("never asked"))
    assert (fresh.leader_alive, fresh.leader_known) == (False, False)
    over = takeover(Status.SUCCEEDED, {"attempt": 3, "pids": pids}, lambda n, p: pytest.fail("never asked"))
    assert not over.leader_alive and not over.ended_unwatched


def test_recover_state_rebuilds_the_status_through_the_lifecycle(made):
    run, _ = made()
    for ev in ({"type": "status", "status": "running"}, {"type": "attempt_start", "attempt": 1, "pid": 77},
               {"type": "crash", "attempt": 1, "class": "cuda_oom", "decision": "restart"},
               {"type": "status", "status": "cooldown"}, {"type": "attempt_start", "attempt": 2, "pid": 78},
               # a wait for a GPU is no restart used against the cap (policy.restarts_used)
               {"type": "crash", "attempt": 2, "class": "gpu_unavailable", "decision": "restart"},
               {"type": "attempt_start", "attempt": 3, "pid": 79}):
        jsonio.append_jsonl(run.events, {"v": 1, "t": time.time(), **ev})
    state = recover_state(run, {}, "state.json missing")
    assert state["status"] == Status.RUNNING and state["attempt"] == 3 and state["restarts"] == 1
    jsonio.append_jsonl(run.events, {"v": 1, "t": time.time(), "type": "status", "status": "killed"})
    assert recover_state(run, {}, "state.json missing")["status"] == Status.KILLED
    # the replay rule on its own: a run that ended and started again runs
    assert lc.replayed(Status.COOLDOWN, "attempt_start") == Status.RUNNING
    assert lc.replayed(Status.KILLED, "attempt_start") == Status.KILLED
    assert lc.replayed(Status.RUNNING, "status", "no such status") == Status.RUNNING


# ---- the Supervisor's lifecycle ------------------------------------------------------------------
def test_apply_refuses_reentry(made):
    """Carrying out an effect may raise the next event, never apply one inside another apply:
    the nested call trips the assertion."""
    run, _ = made()
    sup = Supervisor(run)
    nested: list[str] = []

    def record_status(status, reason):
        nested.append(str(status))
        sup.apply(lc.Tick())  # what a callback into the driver used to do

    sup._record_status = record_status  # type: ignore[method-assign]
    with pytest.raises(AssertionError, match="re-entered"):
        sup.apply(lc.Started(leader_alive=False, leader_known=False, drift_refused="changed: command"))
    assert nested == ["failed"]
    assert sup.apply(lc.Tick()) is None, "after the refusal the lifecycle takes events again"


def test_ingest_pipe_builds_the_reading_context_only_when_something_was_read(made, monkeypatch):
    """state.json's ``log_context`` follows the lines read; a poll that read nothing rebuilt it
    all the same (every shape's digests hashed, twice a second per run). Now it is built again
    only when bytes were read or records given, and the context saved is the same."""
    run, recipe = made()
    pipe = _pipe(run, recipe)
    built: list[int] = []
    real = pipe.reader.context
    monkeypatch.setattr(pipe.reader, "context", lambda: built.append(1) or real())
    _log(run, "  Total optimization steps = 40", "{'loss': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}",
         "{'loss': 1.4, 'learning_rate': 1e-05, 'epoch': 0.2}")
    pipe.read()
    n = len(built)
    assert n and pipe.journal.log_context["run_total"] == 40
    for _ in range(5):
        assert not pipe.read().read
    assert len(built) == n and pipe.journal.log_context["run_total"] == 40
    _log(run, "{'loss': 1.3, 'learning_rate': 1e-05, 'epoch': 0.3}")
    pipe.read()
    assert len(built) > n


def test_ingest_pipe_leaves_a_header_naming_a_secret_out_of_the_reading_context(made):
    """A metrics CSV header with a column named by a token (or by one of the run's secret values)
    went into state.json's ``log_context`` as it was printed; the records are masked, the context
    was not. Now such a header is left out whole (its separator too): a new runner reads its
    rows from the next header, as before contexts."""
    run, recipe = made()
    token = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ12"
    pipe = IngestPipe(run, Journal(run, _diag), Redactor(["runsecretvalue"]), MemoryFeed(recipe, _diag), recipe.alerts,
                      start_offset=0, attempt=1, progress={}, diag=_diag)
    _log(run, f"epoch,step,train_loss,{token}", "0,1,0.5,0.9", "0,2,0.4,0.8")
    pipe.read()
    saved = json.dumps(pipe.journal.log_context)
    assert pipe.journal.log_context["last_step"] == 2
    assert token not in saved and "csv" not in pipe.journal.log_context
    _log(run, "epoch,step,train_loss,runsecretvalue_acc", "0,3,0.5,0.9", "0,4,0.4,0.8")
    pipe.read()
    assert pipe.journal.log_context["last_step"] == 4 and "runsecretvalue" not in json.dumps(pipe.journal.log_context)
    _log(run, "epoch,step,train_loss,acc", "0,5,0.5,0.9", "0,6,0.4,0.8")
    pipe.read()
    assert pipe.journal.log_context["csv"] == ["epoch", "step", "train_loss", "acc"]


def test_a_thawed_training_gets_the_whole_hang_limit_from_the_thaw(made):
    """A training frozen by its cgroup (or stopped) is not hung: the hang clock restarts each time the
    silence is found held. Once thawed, the clock ran on from that last restart, so a training thawed
    late in the window was killed as hung within a tick of the thaw (the real frozen-cgroup test failed
    so under load). The silence counts from when the runner saw it run again."""
    run, recipe = made(heartbeat={"timeout_s": 5, "startup_s": 50})
    pipe = _pipe(run, recipe)
    pipe.launched(1)
    _log(run, json.dumps({"step": 1, "loss": 1.0}))
    pipe.read()
    held = {"frozen": True}

    def frozen() -> dict[int, str]:
        return {4242: "/paused"} if held["frozen"] else {}

    t = time.monotonic()
    thawed_at = t + 14.0
    seen_run = None
    while t < thawed_at + 4.5:
        t += 0.1
        pipe.look(t)
        held["frozen"] = t < thawed_at
        if seen_run is None and not held["frozen"] and pipe.held is None:
            seen_run = t
        assert pipe.hang(t, recipe.heartbeat, frozen=frozen) is None, (t - thawed_at, pipe.held)
    assert seen_run is not None and seen_run - thawed_at < 2.0
    # silent from the thaw on: a hang once the whole limit has passed since the runner saw it run
    hang = None
    while hang is None and t < thawed_at + 20:
        t += 0.1
        pipe.look(t)
        hang = pipe.hang(t, recipe.heartbeat, frozen=frozen)
    assert isinstance(hang, lc.Hang) and t - seen_run >= 4.8, (t - seen_run)


# ---- Ownership ----------------------------------------------------------------------------------
def test_ownership_looks_at_most_once_per_period_keeps_a_loss_and_is_asked_by_the_journal(made):
    """The runner's claim on its run (``rundir.ownership``) is a collaborator the journal asks: it never
    calls into the Supervisor. A look reads state.json; between looks it answers from memory; a loss, once
    seen, is kept (the journal drops what waits, the loop stands down)."""
    from moeconsole.runner.process import proctree
    from moeconsole.runner.rundir.ownership import Ownership
    run, _ = made()
    clock = [100.0]
    owner = Ownership(every_s=5.0, clock=lambda: clock[0])
    journal = Journal(run, _diag, owner=owner)
    owner.claim({**rundir.runner_record(run.path), "start_time": proctree.start_time(os.getpid())})
    assert owner.still_ours(run) and owner.lost_to is None
    # another machine's kill written meanwhile
    there = rundir.RunDir(run.path)   # the login node's own handle on the shared directory
    there.write_state({**there.read_state(), "status": "killed",
                       "runner": {"pid": None, "host": "login-1", "boot_id": "another-boot", "pidns": 1}})
    clock[0] += 1.0
    journal.event("alert", step=1)
    assert journal.flush() and [json.loads(l)["type"] for l in run.events.read_text().splitlines()][-1] == "alert"
    assert owner.lost_to is None   # within the period: no look yet
    assert not owner.still_ours(run, now=True) and owner.lost_to == "login-1"   # a state write looks at once
    journal.event("alert", step=2)
    journal.flush()   # (each record is written as it is queued: dropped there)
    assert not journal.pending
    assert [json.loads(l).get("step") for l in run.events.read_text().splitlines()][-1] == 1
    clock[0] += 60.0
    assert not owner.still_ours(run)   # kept
