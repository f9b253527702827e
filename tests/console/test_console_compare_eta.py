"""Compare showed an ETA for a PAUSED and a COOLDOWN run ("22s", "28s") while the run screen of
the same run shows none (a run that does not train has no time left to count): both ask one
rule now (``fmt.eta_shown``)."""
from __future__ import annotations

import asyncio
import os

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.compare import CompareScreen
from tests.waiting import until_ui


def _lines(app) -> list[str]:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]



async def _compare_all(app, pilot, n: int) -> list[str]:
    """Mark each of the browser's ``n`` runs, open compare (`x`), and its screen's lines."""
    browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == n
                             and app.screen)
    table = browser.query_one("#runs")
    for i in range(n):
        table.move_cursor(row=i)
        await pilot.press("space")
    await pilot.press("x")
    await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.result)
    await pilot.pause()
    return _lines(app)

def test_compare_shows_an_eta_only_for_the_run_that_trains(base, make_run):
    me = os.getpid()  # a live runner for each run: none of them is stale
    make_run(base, "20240101-000000-train-0001", name="trains", status="running", steps=40, runner_pid=me)
    make_run(base, "20240102-000000-pause-0002", name="paused", status="paused", steps=40, runner_pid=me)
    make_run(base, "20240103-000000-cool-0003", name="cooling", status="cooldown", steps=40, runner_pid=me)

    async def go() -> dict[str, list[str]]:
        app = MoeConsole(base, None, gpu=False)
        async with app.run_test(size=(120, 36)) as pilot:
            lines = await _compare_all(app, pilot, 3)
            at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["run", "status"])
            head = lines[at]
            eta_at = head.index("ETA")
            rows = {}
            for name in ("trains", "paused", "cooling"):
                row = next(line for line in lines[at + 1:] if line.split()[1:2] == [name])
                rows[name] = row[eta_at:].split()[:1]
            return rows
    rows = asyncio.run(go())
    assert rows["paused"] == ["—"] and rows["cooling"] == ["—"], rows
    assert rows["trains"] != ["—"] and rows["trains"][0][0].isdigit(), rows  # the one that trains has its ETA


def test_compare_says_the_unit_of_peak_memory(base, make_run):
    """The compare table's "peak mem" column showed "64" with no unit (`runs diff` says "peak memory
    GiB", the run screen "60/80G"): its head says GiB now."""
    make_run(base, "20240101-000000-a-0001", name="a", status="succeeded", steps=20, restart_at=None, mem_base=60.0)
    make_run(base, "20240102-000000-b-0002", name="b", status="failed", steps=20, mem_base=70.0)

    async def go() -> list[str]:
        app = MoeConsole(base, None, gpu=False)
        async with app.run_test(size=(120, 36)) as pilot:
            return await _compare_all(app, pilot, 2)
    lines = asyncio.run(go())
    head = next(line for line in lines if line.split()[:2] == ["run", "status"])
    assert "peak GiB" in head, head
    col = head.index("peak GiB")
    rows = [line for line in lines[lines.index(head) + 1:] if line.split()[:1] in (["•"], ["×"])]
    assert sorted(row[col:].split()[0] for row in rows) == ["64", "74"], rows  # mem_base + 4, the peak of each
