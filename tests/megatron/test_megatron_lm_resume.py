"""A plain Megatron-LM save directory under the real runner (tests/fakes/pretrain_gpt.py: its
``iter_N/`` + tracker layout, ``--load``/``--ckpt-step`` resume and log lines): the resume point
is ``iter_000000N``, and its step is known, so the no-progress rule sees an attempt that never
gets past it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner.conftest import Harness

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fakes" / "pretrain_gpt.py"
# Megatron-LM --load takes the save directory (its tracker), --ckpt-step the iteration in it
# (checkpointing.py _load_base_checkpoint): the iter dir's parent and its step.
MEGATRON_LM_RESUME = ["--load", "{checkpoint}/..", "--ckpt-step", "{step}"]


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def megatron_lm_recipe(**env: str) -> dict:
    return dict(
        command=["{python}", str(FAKE), "--save", "{run_dir}/save", "--train-iters", "12", "--save-interval", "4",
                 "--log-interval", "1"],
        env={"OMP_NUM_THREADS": "1", "FAKE_STEP_S": "0.05", **env},
        resume={"arg": None, "args": MEGATRON_LM_RESUME},
        checkpoints={"dir": "{run_dir}/save", "settle_s": 0.2})


@pytest.mark.parametrize("crash_at", ["4", "6"])
def test_an_attempt_that_never_gets_past_its_megatron_resume_point_is_no_progress(harness, crash_at):
    """Attempt 1 saves iter_0000004 and dies (at 4, or at 6 past the save); every attempt after
    it resumes from iter_0000004 and dies before its first iteration. Two such attempts in a row
    are no progress: the run fails saying so, as it does for checkpoint-N, instead of restarting
    until the cap. Two ways it was missed: the resumed step was unknown for an ``iter_N`` name
    (any step counted as progress), and an attempt that logged no step was judged at the run's
    last step (attempt 1's 6, past the resume point 4)."""
    run = harness.start(harness.recipe(
        **megatron_lm_recipe(FAKE_CRASH_AT=crash_at, FAKE_CRASH_ON_RESUME="1"),
        restart={"max_restarts": 6, "no_progress_attempts": 2}))
    st = run.wait_status("failed", "paused", "succeeded", timeout=180)
    crashes = run.events("crash")
    assert st["status"] == "failed", (st, crashes)
    assert "no step progress in 2 attempts" in (st.get("pause_reason") or ""), st
    assert st["attempt"] == 3, st                 # 1 trained to 4; 2 and 3 made none
    starts = run.events("attempt_start")
    assert [Path(s["resumed_from"]).name if s["resumed_from"] else None for s in starts] == \
        [None, "iter_0000004", "iter_0000004"]
    argv = starts[1]["argv"]
    assert argv[argv.index("--ckpt-step") + 1] == "4"
    history = st["history"]
    assert [(h["resumed_step"], h["last_step"]) for h in history] == [(None, int(crash_at)), (4, None), (4, None)]
    assert [c["step"] for c in run.events("crash")] == [int(crash_at), None, None]   # where each attempt crashed
    assert run.crash(2)["class"] == "segfault"
