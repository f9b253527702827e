"""A stop that only a save shows, within the last logging interval (runner/supervisor/judge.py, runner/core/ending.py
``below_total``): no ms-swift needed (tests/swift/test_swift_round10.py is the real run). transformers'
EarlyStoppingCallback logged and evaluated every 4 steps stops at 8 of 10, within one interval of the total, where
``short_end`` without the saves says nothing, and the judge did not read them: plain ``training finished (exit 0)``.
The other saves that prove a stop are read there too: a graceful exit's at the last step (here a log whose last
step, 9 of 10, came within an interval of 4; ms-swift's summary dict, a step of its own, makes that interval 1)."""
from __future__ import annotations

from moeconsole.runner.checkpoints.keeper import SaveCheck
from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.ending import StopSave, below_total
from moeconsole.runner.core.policy import RestartSettings
from moeconsole.runner.supervisor.judge import EndedAttempt, judge

SETTINGS = RestartSettings(max_restarts=3, backoff_initial_s=1.0, backoff_max_s=8.0)


def _judge(last_step: int, total: int, saves: list[StopSave], log_every: int = 4):
    asked: list[bool] = []

    def stop_saves() -> list[StopSave]:
        asked.append(True)
        return saves
    e = EndedAttempt(run_id="r1", attempt=1, returncode=0, ended_at=1000.0, started_at=900.0, steps_seen=3,
                     last_step=last_step, max_steps=total, log_every=log_every,
                     tail=[f"{{'train_runtime': '25.1', 'global_step/max_steps': '{last_step}/{total}'}}"])
    out = judge(e, [], SETTINGS, floor_s=2.0, saved=lambda: SaveCheck(True), stop_saves=stop_saves)
    return out, bool(asked)


def test_an_early_stop_within_the_last_interval_is_named_from_its_save():
    out, _ = _judge(8, 10, [StopSave(8, "checkpoint-8", (1, 1))])
    assert out.judged == lc.Judged("succeed", "training finished (exit 0), stopped by transformers "
                                              "EarlyStoppingCallback at step 8 of 10")
    assert out.state["stopped_by"]["line"].startswith("checkpoint-8/trainer_state.json: EarlyStoppingCallback's")
    assert "ended_short" not in out.state


def test_a_graceful_exit_within_the_last_interval_is_a_preemption_resumed():
    out, _ = _judge(9, 10, [StopSave(9, "checkpoint-9", asked=False, graceful_exit=True)])
    assert out.verdict is not None and out.verdict.cls == "preempted", out
    assert out.judged.action == "restart", out.judged


def test_within_the_interval_without_a_stop_save_it_reached_its_total():
    """Refusals: no save says a stop (a save at another step, one that did not ask), or none at all: finished."""
    for saves in ([], [StopSave(4, "checkpoint-4", (1, 1))], [StopSave(8, "checkpoint-8", asked=False)]):
        out, _ = _judge(8, 10, saves)
        assert out.judged == lc.Judged("succeed", "training finished (exit 0)"), saves
        assert "stopped_by" not in out.state and "ended_short" not in out.state


def test_at_its_total_the_saves_are_not_read():
    out, asked = _judge(10, 10, [StopSave(10, "checkpoint-10", (1, 1))])
    assert not asked and out.judged == lc.Judged("succeed", "training finished (exit 0)")
    assert not below_total(10, 10) and not below_total(None, 10) and not below_total(8, None) and below_total(8, 10)
