"""Review R44, findings 5 and 6: the date words of ``runs ls --since`` and the browser's ``since:``.

A compact day is a run id's: exactly 8 digits. Before, ``--since 202611`` (November, as a run id
begins) read as 2026-01-01 and listed the whole year, silently. The browser's filter read
``since:2026-11-20 14:30`` as the day and a name "14:30" (no rows, no error) and refused
``since:2 days`` as '2'; it now takes the words that continue the time phrase, as ``--since`` does
(``core.when.phrase_words``). Real processes for the command line, Pilot for the browser."""
from __future__ import annotations

import asyncio
import time

from moeconsole.console.screens.browser import BrowserScreen, parse_filter
from moeconsole.console.screens.dialogs import PromptScreen
from tests.console.test_console_app import app_for
from tests.console.test_console_newcomer8 import NEW, OLD, _cli, _runs
from tests.waiting import until_ui


def test_a_compact_day_is_exactly_eight_digits(base, make_run):
    _runs(base, make_run)
    for word in ("202611", "2026111", "2026111200"):
        bad = _cli(base, "runs", "ls", "--since", word, "--json")
        assert bad.returncode == 2 and bad.stdout == "", (word, bad)
        assert len(bad.stderr.strip().splitlines()) == 1 and f"cannot read '{word}'" in bad.stderr, bad.stderr
    week_ago = time.strftime("%Y%m%d", time.localtime(time.time() - 7 * 86400))
    ok = _cli(base, "runs", "ls", "--since", week_ago, "--json")
    assert ok.returncode == 0 and NEW in ok.stdout and OLD not in ok.stdout, ok


def test_the_filter_reads_since_as_the_whole_time_phrase():
    assert parse_filter("since:2026-11-20 14:30") == (None, None, "2026-11-20 14:30")
    assert parse_filter("since:2 days") == (None, None, "2 days")
    assert parse_filter("since:3 hours ago llama status:failed") == ("failed", "llama", "3 hours ago")
    assert parse_filter("since:2d llama 14:30") == (None, "llama 14:30", "2d")   # 14:30 alone is a name
    assert parse_filter("since:soon llama") == (None, "llama", "soon")          # refused by since_of, as before


def test_the_browser_keeps_runs_since_a_date_and_time_or_an_age_in_words(base, make_run):
    _runs(base, make_run)
    week_ago = time.strftime("%Y-%m-%d", time.localtime(time.time() - 7 * 86400))

    async def go() -> list[list[str]]:
        app = app_for(base, None)
        seen = []
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 2)
            browser = app.screen
            for text in (f"since:{week_ago} 00:00", "since:2 days", "since:2 weeks new"):
                await pilot.press("slash")
                await until_ui(pilot, lambda: isinstance(app.screen, PromptScreen))
                await pilot.press("ctrl+u", *text, "enter")
                await until_ui(pilot, lambda: app.screen is browser and browser.filter_text == text)
                await until_ui(pilot, lambda: [r["id"] for r in browser.rows] == [NEW])
                seen.append([r["id"] for r in browser.rows])
            assert not any("since" in str(n.message) for n in app._notifications)
        return seen

    assert asyncio.run(go()) == [[NEW], [NEW], [NEW]]
