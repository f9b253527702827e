"""The attempt judge on plain data: exit codes and log tails in, the crash report, the events,
the state fields and the lifecycle's next event out (runner/supervisor/judge.py)."""
from __future__ import annotations

import msgspec
import pytest

from moeconsole.runner.checkpoints.keeper import SaveCheck
from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.policy import AttemptRecord, RestartSettings
from moeconsole.runner.process.attempt import ExitStatus
from moeconsole.runner.rundir import runfiles
from moeconsole.runner.supervisor.judge import CRASH_REPORT_TAIL, EndedAttempt, judge

OOM_TAIL = ["step 3 loss 1.2", "Traceback (most recent call last):",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.15 GiB of which 1.00 GiB is free."]
SETTINGS = RestartSettings(max_restarts=3, backoff_initial_s=1.0, backoff_max_s=8.0)


def ended(**kw) -> EndedAttempt:
    base = dict(run_id="r1", attempt=2, returncode=1, ended_at=1000.0, started_at=900.0, exit_seen_at=999.5, detected_after_s=0.5,
                steps_seen=3, last_step=3, tail=list(OOM_TAIL))
    return EndedAttempt(**{**base, **kw})


def never_asked() -> SaveCheck:
    raise AssertionError("the saves are asked about only after exit 0")


def run_judge(e: EndedAttempt, history=(), saved=never_asked, **kw):
    return judge(e, list(history), SETTINGS, floor_s=2.0, saved=saved, **kw)


def test_exit_0_with_a_good_save_succeeds_without_a_report():
    out = run_judge(ended(returncode=0, tail=["done"]), saved=lambda: SaveCheck(True))
    assert out.judged == lc.Judged("succeed", "training finished (exit 0)")
    assert out.report is None and out.state == {"exit_code": 0}
    assert out.events == (("success", {"attempt": 2, "step": 3}),)
    assert out.record.crash_class is None and out.record.started_at == 900.0


def test_exit_0_without_a_good_save_is_unsaved_and_says_why():
    lost = SaveCheck(False, "the newest checkpoint checkpoint-8 is stub; no checkpoint verified ok")
    out = run_judge(ended(returncode=0, tail=[]), saved=lambda: lost)
    assert out.judged.action == "unsaved" and "checkpoint-8 is stub" in out.judged.reason
    kinds = [k for k, _ in out.events]
    assert kinds == ["alert", "unsaved"]
    alert = out.events[0][1]
    assert alert["level"] == "critical" and alert["rule"] == "unsaved" and alert["step"] == 3


def test_a_cuda_oom_gets_a_report_that_fits_its_model_and_a_restart():
    tail = [f"noise {i}" for i in range(500)] + OOM_TAIL
    out = run_judge(ended(tail=tail))
    assert out.report is not None and out.report.cls == "cuda_oom"
    assert out.report.exit_code == 1 and out.report.signal is None and out.report.steps_seen == 3
    assert len(out.report.log_tail) == CRASH_REPORT_TAIL and out.report.log_tail[-1] == OOM_TAIL[-1]
    assert out.report.detected_after_s == 0.5
    # the file's JSON is read back through the same model every reader uses
    data = msgspec.json.encode(out.report)
    again = msgspec.json.decode(data, type=runfiles.CrashReport)
    assert again == out.report and msgspec.json.decode(data)["class"] == "cuda_oom"
    assert out.judged.action == "restart" and out.judged.reason.startswith("cuda_oom: ")
    assert out.judged.floor_s == 2.0 and out.state["restarts"] == 1 and "restart 1/3 " in out.judged.reason
    assert out.state["last_crash"] == {"class": "cuda_oom", "attempt": 2, "summary": out.report.summary}
    assert out.events[0][0] == "crash" and out.events[0][1]["decision"] == "restart"
    assert out.record.crash_class == "cuda_oom"


def test_a_sigkill_names_the_signal_and_the_host_oom_killer():
    out = run_judge(ended(returncode=-9, tail=["step 3"]))
    assert out.report is not None
    assert (out.report.cls, out.report.signal, out.report.signal_name, out.report.exit_code) == \
        ("killed_oom", 9, "SIGKILL", None)
    assert [e[1]["rule"] for e in out.events if e[0] == "alert"] == ["restart_policy"]


def test_the_restart_cap_fails_the_run():
    history = [AttemptRecord(attempt=i, started_at=0.0, ended_at=1.0, resumed_step=None, last_step=None,
                             crash_class="cuda_oom") for i in (1, 2, 3)]
    out = run_judge(ended(attempt=4), history=history)
    assert out.judged.action == "fail" and "restart cap reached" in out.judged.reason
    assert "restarts" not in out.state and out.next_env == {}


def test_a_user_kill_stops_and_a_requested_restart_writes_no_report():
    stop = run_judge(ended(returncode=-15, kill_reason="user", tail=[]))
    assert stop.judged == lc.Judged("stop", stop.judged.reason) and stop.report is not None
    assert stop.report.cls == "user_kill"
    restart = run_judge(ended(returncode=-15, kill_reason="restart", now_restart=True))
    assert restart.judged == lc.Judged("restart", "restart requested", 0.0, 0.0)
    assert restart.report is None and restart.events == (("restart", {"attempt": 2, "requested_by": "user"}),)


def test_bad_saves_pause_with_the_reason_and_a_command_that_never_started_fails():
    paused = run_judge(ended(kill_reason="bad_saves", bad_saves_reason="2 bad saves in a row"))
    assert paused.judged == lc.Judged("pause", "2 bad saves in a row") and paused.report is None
    failed = run_judge(ended(returncode=127, exit_status=ExitStatus(127, error="cannot start 'trian.py'")))
    assert failed.judged == lc.Judged("fail", "cannot start 'trian.py'") and failed.state == {"exit_code": None}


def test_a_batch_jobs_timeout_outranks_its_exit_code_0():
    out = run_judge(ended(returncode=0, exit_status=ExitStatus(0, job_state="TIMEOUT"), tail=[]))
    assert out.report is not None and out.report.cls != "unknown"
    assert out.judged.action != "succeed"


@pytest.mark.parametrize("explain,verdict", [
    (lambda v, step: {"verdict": "leak", "summary": "grew 1 GiB per step"}, "leak"),
    (lambda v, step: 1 / 0, "unknown"),
])
def test_an_oom_carries_the_memory_verdict_and_a_failing_one_never_stops_the_judging(explain, verdict):
    out = run_judge(ended(), explain=explain)
    assert out.report is not None and out.report.memory is not None
    assert out.report.memory["verdict"] == verdict and out.record.memory_verdict == verdict
    assert out.events[0][1]["memory_verdict"] == verdict


def test_the_same_crash_at_the_same_step_from_the_same_checkpoint_is_judged_a_pause_with_its_alert():
    """The judge records what the repeated-crash rule reads (the error identity, where the attempt
    resumed from, where the next one would, the GPUs) and the second identical crash pauses."""
    ck = "/out/checkpoint-40"
    tail = ["step 50 loss 1.1", "Traceback (most recent call last):",
            "AssertionError: sample 123456 has no labels (worker pid {pid})"]
    first = run_judge(ended(attempt=1, last_step=50, tail=[t.format(pid=4321) for t in tail],
                            resumed_from=ck, resume_next=ck, gpus=8, ran_s=3600.0))
    assert first.judged.action == "restart"
    assert first.record.signature == "unknown: AssertionError: sample # has no labels (worker pid #)"
    assert (first.record.resumed_from, first.record.resume_next, first.record.gpus) == (ck, ck, 8)
    second = run_judge(ended(attempt=2, last_step=51, tail=[t.format(pid=9876) for t in tail],
                             resumed_from=ck, resume_next=ck, gpus=8, ran_s=3600.0), history=[first.record])
    assert second.judged.action == "pause"
    assert second.judged.reason.startswith("paused: the same crash twice at step 51 (attempt 2; attempt 1 at step 50)")
    assert "16.00 GPU-hours (8 GPUs, 2.00 h)" in second.judged.reason
    alerts = [f for k, f in second.events if k == "alert"]
    assert len(alerts) == 1 and alerts[0]["level"] == "critical" and alerts[0]["message"] == second.judged.reason
    # a newer checkpoint to resume from: the next attempt starts further on, so it restarts
    moved = run_judge(ended(attempt=2, last_step=51, tail=[t.format(pid=9876) for t in tail],
                            resumed_from=ck, resume_next="/out/checkpoint-50", gpus=8), history=[first.record])
    assert moved.judged.action == "restart"


GPU_GONE = ["Traceback (most recent call last):", "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"]


def test_the_restarts_shown_are_the_ones_the_cap_counts():
    """Review R22 #1: three waits for a GPU, then two CUDA OOMs, max_restarts=2. The runner's reasons
    say "restart 1/2", "restart 2/2"; state.json's ``restarts`` (what every screen shows against the
    cap) said 5 (one per "restart" decision, waits included). It is the policy's own count."""
    from moeconsole.console import format as fmt
    settings = RestartSettings(max_restarts=2, gpu_wait_s=1.0, gpu_wait_max_s=100.0, no_progress_attempts=10)
    history: list[AttemptRecord] = []
    state = {"restarts": 0, "max_restarts": 2, "status": "running"}
    reasons, shown = [], []
    for n, tail in enumerate([GPU_GONE] * 3 + [OOM_TAIL] * 2 + [OOM_TAIL], start=1):
        out = judge(ended(attempt=n, ended_at=1000.0 + 1000 * n, started_at=900.0 + 1000 * n, last_step=100 * n, tail=tail),
                    list(history), settings, floor_s=0.0, saved=never_asked)
        history.append(out.record)
        state.update(out.state)
        reasons.append(out.judged.action + ": " + out.judged.reason)
        shown.append(" ".join(t for line in fmt.status_lines(state) for t, _ in line))
    assert "restart 1/2 after" in reasons[3] and "restart 2/2 after" in reasons[4], reasons
    assert "restart cap reached (2/2 restarts used)" in reasons[5], reasons
    assert [f"{fmt.RESTARTS_WORD} 0/2" in s for s in shown[:3]] == [True] * 3, shown
    assert f"{fmt.RESTARTS_WORD} 1/2" in shown[3] and f"{fmt.RESTARTS_WORD} 2/2" in shown[4] and \
        f"{fmt.RESTARTS_WORD} 2/2" in shown[5], shown


SWIFT_REFUSAL = ["[INFO:swift] output_dir: /runs/x/output", "Traceback (most recent call last):",
                 '  File "/env/lib/python3.11/site-packages/swift/arguments/base_args/base_args.py", line 90, in _parse_args',
                 "    raise ValueError(f'remaining_argv: {remaining_argv}')",
                 "ValueError: remaining_argv: ['--learning_rte', '5e-3']"]


def test_a_relaunch_of_the_same_command_with_nothing_run_before_is_judged_as_its_first_attempt():
    """`moeconsole restart` of a run that failed on its command's own refusal runs the same command again: the
    same refusal is config_error again and fails the run at once (newcomer round 12: it was `unknown`, restarted
    twice more, and the run's last crash read `unknown`). Where the command ran before (a step logged, or a
    resume), a usage text stays no configuration error."""
    first = AttemptRecord(attempt=1, started_at=0.0, ended_at=1.0, resumed_step=None, last_step=None,
                          crash_class="config_error")
    again = run_judge(ended(attempt=2, steps_seen=0, last_step=None, tail=SWIFT_REFUSAL, ran_before=False),
                      history=[first])
    assert again.report is not None and again.report.cls == "config_error"
    assert again.judged.action == "fail" and "remaining_argv" in again.judged.reason
    ran = run_judge(ended(attempt=2, steps_seen=0, last_step=None, tail=SWIFT_REFUSAL, ran_before=True),
                    history=[first])
    assert ran.report is not None and ran.report.cls != "config_error"
