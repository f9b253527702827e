"""A crash after the save at the training's total is not restarted (runner/supervisor/judge.py ``_pause_at_total``,
runner/checkpoints/discover.py ``finished_save``): transformers 5.19 resumes a save at its max_steps by training one
step past it. Measured with real ms-swift 4.6 (tests/swift/test_swift_round10.py): a crash in the training's end
after checkpoint-6 of 6 was restarted from it, trained step 7 of 6 and saved checkpoint-7, then read SUCCEEDED."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from moeconsole.runner.checkpoints.discover import finished_save
from moeconsole.runner.core.policy import RESUME_UNKNOWN, RestartSettings
from moeconsole.runner.supervisor.judge import EndedAttempt, judge

SETTINGS = RestartSettings(max_restarts=3, backoff_initial_s=1.0, backoff_max_s=8.0)
TAIL = ["{'loss': '6.8', 'global_step/max_steps': '6/6'}", "Traceback (most recent call last):",
        "RuntimeError: crashed in the training's end, after its last save"]


def _save(root: Path, name: str, step: object, total: object) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": total, "log_history": []}))
    return d


def _judge(resume_next: str | None, max_steps: int | None = 6, kill_reason: str | None = None):
    e = EndedAttempt(run_id="r1", attempt=1, returncode=1, ended_at=1000.0, started_at=900.0, steps_seen=6,
                     last_step=6, max_steps=max_steps, log_every=1, tail=list(TAIL), resume_next=resume_next,
                     kill_reason=kill_reason)
    return judge(e, [], SETTINGS, floor_s=2.0, saved=lambda: None,  # type: ignore[arg-type, return-value]
                 finished=lambda p: finished_save(Path(p)))


def test_a_crash_after_the_save_at_the_total_pauses_naming_the_result(tmp_path):
    out = _judge(str(_save(tmp_path, "checkpoint-6", 6, 6)))
    assert out.judged.action == "pause", out.judged
    assert out.judged.reason.startswith("it ended after the training reached its total: checkpoint-6 holds step 6 of "
                                        "6 (its trainer_state.json); not restarted"), out.judged.reason
    assert "training one step past it (step 7 of 6" in out.judged.reason
    crash = dict(out.events)["crash"]
    assert crash["decision"] == "pause" and crash["class"] == "unknown", crash


@pytest.mark.parametrize("step, total, max_steps", [(3, 6, 6),          # a save before the total: resumed as ever
                                                    (30, 30, 60),       # the recipe's total raised since that save
                                                    (6, 6, None),       # the attempt gave no total
                                                    (True, 6, 6), ("6", 6, 6), (6, 0, 6)])   # not a count
def test_any_other_resume_point_restarts(tmp_path, step, total, max_steps):
    out = _judge(str(_save(tmp_path, "checkpoint-x", step, total)), max_steps=max_steps)
    assert out.judged.action == "restart", out.judged


def test_no_resume_point_or_an_unknown_one_restarts(tmp_path):
    assert _judge(None).judged.action == "restart"
    assert _judge(RESUME_UNKNOWN).judged.action == "restart"
    assert _judge(str(tmp_path / "checkpoint-6")).judged.action == "restart"    # no trainer_state.json there


def test_the_users_kill_is_judged_as_before(tmp_path):
    out = _judge(str(_save(tmp_path, "checkpoint-6", 6, 6)), kill_reason="user")
    assert out.judged.action != "restart" and "reached its total" not in out.judged.reason


def test_finished_save_reads_the_trainer_state(tmp_path):
    assert finished_save(_save(tmp_path, "a", 6, 6)) == (6, 6)
    assert finished_save(_save(tmp_path, "b", 7, 6)) == (7, 6)
    assert finished_save(_save(tmp_path, "c", 5, 6)) is None
    assert finished_save(tmp_path / "missing") is None
