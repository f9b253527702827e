"""Newcomer round 13: a user's own training script (`run -- torchrun ... train.py`, no recipe, no
checkpoints.dir) through the console, as the screen says it (Textual Pilot)."""
from __future__ import annotations

from tests.console.test_console_newcomer11 import _said_after


def test_v_on_an_ended_run_without_checkpoints_dir_names_the_command_that_works(base, make_run):
    """`v` on the KILLED run said "`moeconsole verify 8eb9` verifies its newest checkpoint"; that command
    found nothing (the run names no checkpoints.dir) and asked for `moeconsole verify DIR`. The refusal: a
    run with a checkpoint directory keeps the line."""
    bare = make_run(base, "20261204-101404-train-8eb9", name="train", status="killed", checkpoints=(),
                    restart_at=None, recipe={"name": "train", "command": ["torchrun", "--nproc_per_node", "2", "train.py"]})
    [v] = _said_after(base, bare, "v")
    assert v == ("v: the run is KILLED, no runner watches it: it names no checkpoints.dir: in a shell, "
                 "`moeconsole verify DIR` verifies the directory its command saves into"), v
    watched = make_run(base, "20261204-090000-demo-1a2b", name="demo", status="killed", restart_at=None)
    [v] = _said_after(base, watched, "v")
    assert "in a shell, `moeconsole verify 1a2b" in v and v.endswith("verifies its newest checkpoint"), v


def test_q_on_another_runs_screen_still_says_the_paused_run_the_console_was_opened_on(base, make_run, capsys):
    """`moeconsole run -- python train.py` (PAUSED after the same OOM twice), `b`, Enter on an older KILLED run,
    `q` (Quit there): the console closed without a word of the paused run it had started, which waits for the
    user. The line is said for the run it was opened on; the refusal: a console left on that run's own screen
    says it once."""
    import asyncio
    import os
    from moeconsole.console.app import left_runs
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.screens.messages import OpenRun
    from tests.console.test_console_app import app_for, attached, telemetry
    from tests.waiting import until_ui
    paused = make_run(base, "20261204-101955-train-248b", name="train", status="paused", checkpoints=(),
                      runner_pid=os.getpid(), restart_at=None)
    from moeconsole.runner.process.proctree import start_time
    from moeconsole.runner.rundir import jsonio
    state = paused.read_state()   # a runner alive: this process, as it started
    state["runner"] = {**state["runner"], "start_time": start_time(os.getpid())}
    jsonio.atomic_write_json(paused.state, state)
    killed = make_run(base, "20261204-101404-train-8eb9", name="train", status="killed", checkpoints=(),
                      restart_at=None)

    async def go(other: bool):
        app = app_for(base, paused, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            if other:
                await pilot.press("b")
                browser = await until_ui(pilot, lambda: app.screen if isinstance(app.screen, BrowserScreen) else None,
                                         what="the run browser")
                browser.post_message(OpenRun(killed))   # what Enter on its row sends
                await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.source.run.path
                               == killed.path and app.screen.snapshot is not None, what="the killed run's screen")
            await pilot.press("q")
            await until_ui(pilot, lambda: app.return_code is not None or app._exit_renderables is not None
                           or not app.is_running, what="q to close the console")
        return app
    for other in (True, False):
        app = asyncio.run(go(other))
        capsys.readouterr()
        left_runs(app)
        err = capsys.readouterr().err
        assert err.count("is paused, its training stopped") == 1 and "restart 248b" in err, (other, err)
        assert "8eb9" not in err, err
