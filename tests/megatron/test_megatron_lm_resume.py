"""A plain Megatron-LM save directory under the real runner (tests/fakes/pretrain_gpt.py: its
``iter_N/`` + tracker layout, ``--load``/``--ckpt-step`` resume and log lines): the resume point
is ``iter_000000N``, and its step is known, so the no-progress rule sees an attempt that never
gets past it."""
from __future__ import annotations

import json
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


def test_a_finetune_run_saving_into_its_load_dir_resumes_from_the_save_written_last(harness):
    """Megatron-LM ``--finetune`` with ``--save`` = ``--load``: each attempt loads its resume point
    and counts from iteration 1 again (checkpointing.py ``load_checkpoint``: ``iteration = 0``),
    writing ``iter_*`` and the tracker over the earlier attempt's. Attempt 1 saves iter 4 and 8 and
    dies at 10; attempt 2 (resumed from iter 8) saves iter 4 again, the tracker now names 4, and
    dies at 6. Attempt 1's iter_0000008 is a finished save (the tracker named it when it was
    written), not ``incomplete``; the resume point is the save written last, iter_0000004, and
    ``verify RUN``, ``--json``, ``runs show`` and ``restart``'s plan all name it. Before, ``verify
    RUN`` judged iter_0000008 by its step, called it incomplete (above the tracker) and exited 1,
    and the screen's last good checkpoint said step 8."""
    run = harness.start(harness.recipe(
        command=["{python}", str(FAKE), "--save", "{run_dir}/save", "--train-iters", "12", "--save-interval", "4",
                 "--log-interval", "1", "--finetune"],
        env={"OMP_NUM_THREADS": "1", "FAKE_STEP_S": "0.05", "FAKE_CRASH_AT": "10@1,6@2"},
        resume={"arg": None, "args": MEGATRON_LM_RESUME},
        checkpoints={"dir": "{run_dir}/save", "settle_s": 0.2},
        restart={"max_restarts": 1}))
    st = run.wait_status("failed", "succeeded", timeout=180)
    assert st["status"] == "failed", st
    starts = run.events("attempt_start")
    assert [Path(s["resumed_from"]).name if s["resumed_from"] else None for s in starts] == [None, "iter_0000008"]
    save = Path(st["checkpoint_root"])
    assert (save / "latest_checkpointed_iteration.txt").read_text().strip() == "4"
    # the runner's resume point, in state.json
    assert Path(st["resume_point"]["path"]).name == "iter_0000004" and st["resume_point"]["step"] == 4, st
    out = json.loads(harness.cli("verify", run.id, "--json").stdout)
    verdicts = {Path(c["path"]).name: c["verdict"] for c in out["checkpoints"]}
    assert verdicts == {"iter_0000004": "ok", "iter_0000008": "ok"}, out
    assert out["ok"] is True and Path(out["judged"]).name == "iter_0000004", out
    snap = json.loads(harness.cli("--json", run.id, "--once").stdout)
    assert Path(snap["run"]["last_good_checkpoint"]["path"]).name == "iter_0000004", snap["run"]
    assert snap["run"]["last_good_checkpoint"]["step"] == 4
    # the screen: the run's critical crash alert shows its last good checkpoint, the resume point
    assert "last good checkpoint: step 4" in _screen_status(harness.runs_dir, run.path), "the run screen"
    show = harness.cli("runs", "show", run.id)
    assert "  resume    from iter_0000004 (step 4)" in show.stdout.splitlines(), show.stdout
    plan = harness.cli("restart", run.id)     # says where it resumes, then restarts: attempt 3 runs to the end
    assert "resumed from iter_0000004 (step 4, the checkpoint written last that verified ok)" in plan.stderr, \
        plan.stdout + plan.stderr
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert Path(run.events("attempt_start")[2]["resumed_from"]).name == "iter_0000004", st


def _screen_status(base: Path, run_dir: Path) -> str:
    """The run screen's second status line once it names a last good checkpoint (Pilot; 160 columns:
    at 80 the open crash alert and the failure come first and the rest is cut)."""
    import asyncio

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.status import StatusLine
    from moeconsole.runner.rundir import rundir
    from tests.waiting import until_ui

    async def go() -> str:
        app = MoeConsole(base, rundir.RunDir(run_dir), gpu=False, interval=0.25)
        async with app.run_test(size=(160, 30)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            status = app.screen.query_one(StatusLine)
            await until_ui(pilot, lambda: "last good checkpoint" in status.plain_lines[1], what="the last good checkpoint")
            return status.plain_lines[1]
    return asyncio.run(go())
