"""The run screen in a hostile world, round 30 (docs/reliability.md): `k` on a live run whose runner's
machine is gone for good. Textual Pilot over a real run directory; asserts on what the user sees and on
the run's own records."""
from __future__ import annotations

import asyncio
import json

from moeconsole.console.screens.dialogs import ConfirmScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import jsonio
from tests.console.test_console_app import app_for, attached
from tests.runner.test_runner_world28 import _elsewhere_run
from tests.waiting import until_ui


def _notes(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def test_k_on_a_run_whose_runners_machine_is_gone_asks_and_records_it_killed_signalling_nothing(base):
    """Round 29 gave the shell `kill RUN --machine-gone`; on the run screen the banner named it, but `k` was
    not in the footer (no runner to ask) and did nothing. `k` now asks, in words that say nothing is
    signalled, and `y` records the run killed as the command does; `n` leaves it as it was."""
    run = _elsewhere_run(base, "20261204-080000-demo-0e30", written_ago=3600.0)
    before = run.state.read_text()

    async def go() -> tuple[list[str], list[str], str, list[str]]:
        app = app_for(base, run)
        async with app.run_test(size=(132, 40)) as pilot:
            screen = await attached(pilot)
            await until_ui(pilot, lambda: screen.check_action("kill", ()) is True, what="k offered")
            await pilot.press("k")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
            asked = [app.screen.confirmation.title, *app.screen.confirmation.lines]
            await pilot.press("n")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
            kept = run.state.read_text()
            await pilot.press("k")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question again")
            await pilot.press("y")
            seen: set[str] = set()

            def final() -> list[str] | None:
                seen.update(_notes(app))
                return [m for m in _notes(app) if m.startswith("kill: ") and "making sure" not in m] or None
            said = await until_ui(pilot, final, what="the kill's words", timeout=40)
            # the watch of state.json said first (a clock here ahead of gpu-07's must not end a live run)
            assert [m for m in seen if "making sure its runner on gpu-07 is silent" in m], seen
            status = await until_ui(pilot, lambda: (s := list(screen.query_one(StatusLine).plain_lines))
                                    and "KILLED" in s[0] and s, what="KILLED on screen", timeout=20)
            return asked, said, kept, status
    asked, said, kept, status = asyncio.run(go())
    assert kept == before
    assert "gpu-07" in asked[0] and any("Nothing is signalled" in l for l in asked), asked
    assert not any("SIGTERM" in l for l in asked), asked
    assert said[0].startswith("kill: its runner's machine gpu-07 given up for gone"), said
    state = jsonio.read_json(run.state)
    assert state["status"] == "killed", state
    events = [json.loads(l) for l in run.events.read_text().splitlines() if l.strip()]
    kills = [e for e in events if e["type"] == "kill"]
    assert len(kills) == 1 and kills[0]["pids"] == [] and kills[0]["requested_by"] == "console", kills


def test_k_on_a_run_whose_runner_elsewhere_still_writes_asks_the_plain_kill(base):
    """Refusal: the same run whose state.json was written 2 s ago (its machine lives): `k` asks the kill
    it asked before (its runner is asked, over a filesystem that reaches it), never to give the machine up."""
    run = _elsewhere_run(base, "20261204-080000-demo-0e31", written_ago=2.0)

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(132, 40)) as pilot:
            await attached(pilot)
            await pilot.press("k")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the question")
            asked = app.screen.confirmation
            await pilot.press("n")
            return asked
    asked = asyncio.run(go())
    assert getattr(asked, "machine_gone", None) is None and asked.title.startswith("Clean kill of"), asked
