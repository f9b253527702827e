"""Pure formatting: numbers, durations, status lines, events, confirmations, the key tables."""
from __future__ import annotations

from moeconsole.console import confirmations, keys
from moeconsole.console import format as fmt
from moeconsole.runner.supervisor import control


def test_num_and_short_handle_missing_and_non_finite():
    assert fmt.num(None) == fmt.NA
    assert fmt.num("nan") == "nan"
    assert fmt.num(float("inf")) == "inf"
    assert fmt.num("-inf") == "-inf"
    assert fmt.num(2.34567) == "2.346"
    assert fmt.num(1.2e-5).startswith("1.2")
    assert fmt.short(1_200_000) == "1.2M"
    assert fmt.short(950) == "950"
    assert fmt.short(12_000) == "12k"


def test_duration_scales():
    assert fmt.duration(42) == "42s"
    assert fmt.duration(456) == "7m36s"
    assert fmt.duration(3 * 3600 + 125) == "3h02m"
    assert fmt.duration(50 * 3600) == "2d02h"
    assert fmt.duration(None) == fmt.NA


def _run(**kw):
    base = {"id": "r1", "name": "qwen-fp8", "status": "running", "status_word": "RUNNING", "attempt": 2,
            "restarts": 1, "max_restarts": 5, "step": 500, "max_steps": 1000, "step_time_s": 2.0,
            "eta_s": 1000.0, "elapsed_s": 3600.0}
    base.update(kw)
    return base


def test_status_line_names_state_steps_eta_restarts_and_cost():
    lines = [fmt.plain(x) for x in fmt.status_lines(_run(cost_per_hour=70.0, cost_so_far=70.0,
                                                            cost_projected=89.44))]
    assert "qwen-fp8" in lines[0] and "RUNNING" in lines[0]
    assert "step 500/1,000 (50.0%)" in lines[0]
    assert "2 s/step" in lines[0] and "ETA 16m40s" in lines[0]
    assert "attempt 2" in lines[1] and "restarts 1/5" in lines[1]
    assert "$70.00/h" in lines[1] and "$89.44 projected" in lines[1]


def test_status_line_cooldown_says_what_it_waits_on():
    run = _run(status="cooldown", status_word="COOLDOWN 42s", eta_s=None,
               cooldown={"until": 0, "waiting_on": ["gpu memory on GPU 3", "port 29500"], "remaining_s": 42})
    line1, line2 = (fmt.plain(x) for x in fmt.status_lines(run))
    assert "COOLDOWN 42s" in line1
    assert "waiting on: gpu memory on GPU 3, port 29500" in line2


def test_status_line_paused_failed_stale_and_readonly():
    assert "paused: NaN loss at step 12" in fmt.plain(
        fmt.status_lines(_run(status="paused", status_word="PAUSED", pause_reason="NaN loss at step 12"))[1])
    assert "last crash: cuda_oom" in fmt.plain(
        fmt.status_lines(_run(status="failed", status_word="FAILED", last_crash={"class": "cuda_oom"}))[1])
    assert "runner is gone" in fmt.plain(fmt.status_lines(_run(stale=True))[1])
    assert "READ-ONLY" in fmt.plain(fmt.status_lines(_run(), readonly=True)[0])
    # the state word always travels with a style, never as colour alone
    styles = dict((t.strip(), s) for t, s in fmt.status_lines(_run(status="failed", status_word="FAILED"))[0])
    assert styles["FAILED"] == "status--failed"


def test_a_stale_runs_second_status_line_says_what_its_first_says():
    """Line 1 of a stale run whose runner is stopped reads `RUNNING? (runner stopped: kill -CONT N)`,
    of one whose runner lives but writes no state.json `RUNNING? (runner alive, state.json not
    written: ...)`: line 2 had said "the runner is gone: nothing supervises this run" under both.
    Now both lines take the snapshot's words (``snapshot.stale_runner_words``); gone only when it is."""
    from moeconsole.runner.rundir.snapshot import status_word

    def lines(**kw):
        run = _run(stale=True, eta_s=None, runner_pid=4242, **kw)
        return [fmt.plain(x) for x in fmt.status_lines({**run, "status_word": status_word(run)})]

    stopped = lines(runner_alive=True, runner_stopped=True)
    assert "RUNNING? (runner stopped: kill -CONT 4242)" in stopped[0]
    assert "runner stopped: kill -CONT 4242" in stopped[1] and "gone" not in stopped[1]
    unwritten = lines(runner_alive=True, runner_stopped=False)
    assert "RUNNING? (runner alive, state.json not written" in unwritten[0]
    assert "runner alive, state.json not written: see runner.log" in unwritten[1] and "gone" not in unwritten[1]
    gone = lines(runner_alive=False, runner_stopped=False)
    assert "RUNNING? (runner gone)" in gone[0] and "the runner is gone: nothing supervises this run" in gone[1]


def test_event_lines_start_with_a_word_for_their_kind():
    alert = {"t": 0, "type": "alert", "level": "critical", "rule": "grad_norm_spike", "step": 12, "message": "x"}
    text, style = fmt.event_line(alert)
    assert "CRIT grad_norm_spike @12" in text and style == "event--crit"
    text, _ = fmt.event_line({"t": 0, "type": "checkpoint", "path": "/o/checkpoint-40", "step": 40, "ok": False,
                              "verdict": "empty_stub", "reason": "empty header"})
    assert "BAD" in text and "checkpoint-40" in text and "empty header" in text
    text, _ = fmt.event_line({"t": 0, "type": "kill", "requested_by": "console",
                              "pids": [{"pid": 11}, {"pid": 12}], "grace_s": 5})
    assert "11, 12" in text and "5s" in text


def _recipe(**sections):
    """A run's recipe as the console reads it (recipe.yaml through the model)."""
    from moeconsole.runner.recipes.recipe import validate
    return validate({"command": ["train"], **sections})


def test_kill_confirmation_names_pids_and_escalation_timer():
    run = _run(pids=[{"pid": 4100, "start_time": 1.0, "role": "leader"}, {"pid": 4101, "start_time": 2.0}],
               pgid=4100)
    c = confirmations.kill(run, _recipe(kill={"grace_s": 45}))
    body = " ".join(c.lines)
    assert "4100 (leader)" in body and "4101" in body and "process group 4100" in body
    assert "SIGKILL" in body and "45s" in body
    assert c.request == control.KillRequest(grace_s=45.0, by="console")


def test_restart_confirmation_names_cooldown_and_resumes_a_paused_run():
    c = confirmations.restart(_run(pids=[{"pid": 7}]), _recipe(kill={"grace_s": 5},
                                                                        cooldown={"floor_s": 2, "ceiling_s": 15}))
    body = " ".join(c.lines)
    assert "7" in body and "5s" in body and "15s" in body and c.request.cmd == "restart"
    paused = confirmations.restart(_run(status="paused", pause_reason="divergence"), None)
    assert paused.request.cmd == "resume" and "divergence" in " ".join(paused.lines)


def test_zombie_confirmation_sends_pid_with_start_time():
    b = {"pid": 999, "start_time": 123.5, "user": "bob", "cmdline": ["python", "serve.py"], "age_s": 60,
         "gpu_mem_mib": 2048, "labels": ["foreign_gpu"]}
    c = confirmations.kill_zombie(b, _recipe(kill={"grace_s": 3}))
    body = " ".join(c.lines)
    assert "999" in body and "bob" in body and "python serve.py" in body and "3s" in body
    assert isinstance(c.request, control.KillPid) and c.request.pid == 999 and c.request.start_time == 123.5


def test_every_run_key_has_help_and_process_keys_are_marked():
    rows = keys.help_rows(keys.RUN_KEYS)
    # one row per key pressed: q (Detach while live, Quit once ended) is one row saying both
    assert [r[0] for r in rows] == list(dict.fromkeys(k.shown_key for k in keys.RUN_KEYS))
    (q_row,) = [r for r in rows if r[0] == "q"]
    assert "attach again" in q_row[1] and "run that is over" in q_row[1]
    assert all(r[1] for r in rows)
    marked = {r[0] for r in rows if r[2]}
    assert marked == {"k", "r", "z"} == set(keys.PROCESS_KEYS)
    issue_keys = {"k", "r", "v", "z", "b", "l", "?", "q"}
    assert issue_keys <= {k.shown_key for k in keys.RUN_KEYS}


def test_exit_words_name_the_signal_not_a_missing_code():
    from moeconsole.console.format import crash_line, exit_words
    assert exit_words({"signal": 9, "exit_code": None}) == "killed by SIGKILL"
    assert exit_words({"signal": None, "exit_code": 1}) == "exit 1"
    assert exit_words({}) == "exit unknown"
    assert crash_line({"attempt": 1, "class": "segfault", "signal": 11, "summary": "SIGSEGV"}) == \
        "attempt 1: segfault (killed by SIGSEGV) SIGSEGV"


def test_status_lines_fit_their_width_cut_between_words_never_inside_one():
    """At every width the status lines fit and every word shown is a whole word of the full line:
    an ETA, a cost or a quiet time is shown whole or left out ("…" says so), never `ETA 15h…`."""
    runs = [
        _run(name="qwen3-moe-lora-alpha", step=1234, max_steps=4473, step_time_s=12.3, eta_s=15 * 3600 + 600,
             elapsed_s=20 * 3600, cost_per_hour=70.0, cost_so_far=1400.0, cost_projected=2500.0),
        _run(status="cooldown", status_word="COOLDOWN", waiting_on="room on /ckpt/run: 3.0 GB free, need 12.0 GB "
             "(1.2 x the largest checkpoint, 10.0 GB)"),
        _run(status="paused", status_word="PAUSED", pause_reason="divergence: non-finite loss or grad norm seen by "
             "the monitors; the run waits for you", last_good_checkpoint={"step": 50, "path": "/c/checkpoint-50"}),
    ]
    for run in runs:
        shown = dict(quiet_s=125.0, heartbeat_s=1800.0, show_last_good=True, now=1000.0)
        full = [fmt.plain(x) for x in fmt.status_lines(run, **shown)]
        whole = {w.strip(",;:()") for line in full for w in line.split()}
        for width in range(50, 161, 3):
            for line in (fmt.plain(x) for x in fmt.status_lines(run, **shown, width=width)):
                assert len(line) <= width, (width, line)
                for i, word in enumerate(line.split()):
                    if i == 0 and word.endswith("…") and str(run.get("name")).startswith(word[:-1]):
                        continue   # a long name is cut as the run list cuts it (``format._name_cut``)
                    word = word.rstrip("…").strip(",;:()")
                    assert not word or word in whole, (width, word, line)


def test_a_long_pause_reason_leaves_room_for_the_last_good_checkpoint_at_80_columns():
    run = _run(status="paused", status_word="PAUSED", pause_reason="divergence: non-finite loss or grad norm seen "
               "by the monitors; the run waits for you", last_good_checkpoint={"step": 50, "path": "/c/checkpoint-50"})
    line = fmt.plain(fmt.status_lines(run, width=80, show_last_good=True)[1])
    assert len(line) <= 80 and line.startswith("paused: divergence") and "last good checkpoint: step 50" in line, line


def test_a_status_line_never_hides_that_something_was_left_out():
    """Whatever the width (50 to 160 columns, every one), a status line that does not show the end
    of the full line says so with "…": pieces left out at the end are never dropped unmarked, even
    when the pieces kept fill the line to within the width of the "· …" mark. (Little words and
    number-less asides that fit_words leaves out inside a piece are not marked, by design.)"""
    runs = [
        _run(name="qwen3-moe-lora-alpha", step=1234, max_steps=4473, step_time_s=12.3, eta_s=15 * 3600 + 600,
             elapsed_s=20 * 3600, cost_per_hour=70.0, cost_so_far=1400.0, cost_projected=2500.0),
        _run(status="cooldown", status_word="COOLDOWN", waiting_on="room on /ckpt/run: 3.0 GB free, need 12.0 GB "
             "(1.2 x the largest checkpoint, 10.0 GB)"),
        _run(status="paused", status_word="PAUSED", pause_reason="divergence: non-finite loss or grad norm seen by "
             "the monitors; the run waits for you", last_good_checkpoint={"step": 50, "path": "/c/checkpoint-50"}),
        _run(name="q" * 40, step=7, max_steps=9, elapsed_s=61.0, cost_per_hour=3.0, cost_so_far=1.0),
    ]
    marked = 0
    for run in runs:
        for quiet in (None, 125.0):
            shown = dict(quiet_s=quiet, heartbeat_s=1800.0, show_last_good=True, now=1000.0)
            full = [fmt.plain(x) for x in fmt.status_lines(run, **shown)]
            for width in range(50, 161):
                fitted = [fmt.plain(x) for x in fmt.status_lines(run, **shown, width=width)]
                for whole, line in zip(full, fitted):
                    assert len(line) <= width, (width, line)
                    if line.split()[-1:] != whole.split()[-1:]:    # the end of the line is not shown
                        marked += 1
                        assert "…" in line, (width, whole, line)
    assert marked
    # the pieces kept fill the line to within the mark's width: the last of them gives way to it
    pieces = [("run-name", "status--name"), ("  ", ""), (" RUNNING ", ""), (" · ", ""), ("step 5/9", ""),
              (" · ", ""), ("ETA 3m", "")]
    width = len("run-name   RUNNING  · step 5/9") + 1
    assert fmt.plain(fmt.fit_pieces(pieces, width)) == "run-name   RUNNING  · …"
    for width in (30, 31):                           # a first piece that fills the line alone
        line = fmt.plain(fmt.fit_pieces([("a" * 30, ""), (" · more", "")], width))
        assert len(line) <= width and line.endswith("…"), line


def test_kill_confirmation_of_a_paused_run_promises_no_signal():
    """Newcomer round 13: `k` on a run PAUSED after the same crash twice said "PIDs: none recorded and
    process group 9523. SIGTERM to the whole tree now; SIGKILL ... after 1m00s": that group had ended, and
    the runner answered "run stopped (was paused); nothing was running". A running run's plan is kept."""
    for status in ("paused", "cooldown"):
        c = confirmations.kill(_run(status=status, attempt=2, pgid=9523), _recipe(kill={"grace_s": 60}))
        body = " ".join(c.lines)
        assert f"No attempt is running: the run is {status.upper()} (attempt 2 ended); no signal is sent." in body
        assert "SIGTERM" not in body and "SIGKILL" not in body and "9523" not in body, body
        assert "The run ends as KILLED" in body and c.request.cmd == "kill"
    running = " ".join(confirmations.kill(_run(status="running", pgid=9523), None).lines)
    assert "SIGTERM" in running and "process group 9523" in running


def test_restart_confirmation_says_where_the_attempt_starts_and_signals_nothing_in_cooldown():
    """Newcomer round 13: `r` on a `run -- torchrun ... train.py` run in COOLDOWN after a crash promised
    "SIGTERM to the whole tree now; SIGKILL ... after 1m00s" (the runner only starts the cooldown again)
    and "a new attempt from the latest verified checkpoint" of a run that watches none and has no resume
    setting; `r` on its PAUSED twin said the same checkpoint."""
    bare = _recipe(resume={"arg": None})
    cooling = " ".join(confirmations.restart(_run(status="cooldown", attempt=1, pgid=15346), bare).lines)
    assert "No attempt is running: the run is COOLDOWN (attempt 1 ended); no signal is sent." in cooling
    assert "SIGTERM" not in cooling and "15346" not in cooling and "cool down anew" in cooling, cooling
    assert "a new attempt from step 0 (the recipe has no resume setting)." in cooling
    assert "latest verified checkpoint" not in cooling
    paused = " ".join(confirmations.restart(_run(status="paused", pause_reason="paused: the same crash"), bare).lines)
    assert "from step 0 (the recipe has no resume setting)" in paused and "latest verified" not in paused, paused
    saved = _recipe(resume={"arg": "--resume_from_checkpoint {ckpt}"})
    good = {"path": "/o/checkpoint-20", "step": 20}
    resumed = " ".join(confirmations.restart(_run(last_good_checkpoint=good, pids=[{"pid": 7}]), saved).lines)
    assert "SIGTERM" in resumed and "a new attempt from checkpoint-20 (step 20)." in resumed, resumed
    none_yet = " ".join(confirmations.restart(_run(pids=[{"pid": 7}]), saved).lines)
    assert "from step 0 (no checkpoint verified ok)" in none_yet, none_yet


def test_preflight_without_a_gpu_keeps_the_cause_on_the_fitted_status_line():
    """Newcomer round 14: the 8xH200 recipe started on a machine with no NVIDIA driver showed, at 132
    columns, `waiting on: recipe uses GPU 0,1,2,3,4,5,6,7 but there is…`: the cause was clipped."""
    from moeconsole.runner.telemetry.preflight import gpu_problems
    from moeconsole.runner.telemetry.gpu import GpuSnapshot
    reason = "NVIDIA driver library libnvidia-ml.so.1 not found (no NVIDIA driver installed)"
    snap = GpuSnapshot(available=False, backend="none", reason=reason, driver=None, taken_at=0.0)
    waiting = gpu_problems(snap, list(range(8)), 1024.0)
    run = _run(name="my-qwen-moe", status="cooldown", status_word="PRE-FLIGHT", step=None, max_steps=None, eta_s=None,
               attempt=0, restarts=0, max_restarts=20, elapsed_s=7.0, cost_per_hour=22.2, cost_so_far=0.04,
               cooldown={"until": 0, "waiting_on": waiting, "remaining_s": 0})
    for width in (132, 80):
        line2 = fmt.plain(fmt.status_lines(run, width=width)[1])
        assert "no NVIDIA GPU" in line2, (width, line2)
    # refusal: a GPU that is there but busy reads as before
    assert gpu_problems(None, None, 1024.0) == []
