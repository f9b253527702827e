"""Alerts against the real runner and the real demo trainer (a NaN injected at one step),
driven with Pilot at 80x24 in two consoles attached at once: one cause gives one alert and one
toast, the toasts stay off the charts, a critical alert takes over the headline and fits 80
columns, ``a`` in one console clears the alert in the other, and ``--json`` carries the same
alert state."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from textual.widgets._toast import Toast

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.dialogs import DetailScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.panes import AlertBar
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import rundir
from tests.console.test_console_live import REPO, reap, start_demo, wait_state
from tests.waiting import until_ui

NAN_AT = 60


class BellCounter(MoeConsole):
    CSS_PATH = str(Path(sys.modules[MoeConsole.__module__].__file__).parent / "console.tcss")
    rings = 0

    def bell(self) -> None:
        self.rings += 1


def alert_toasts(app) -> list:
    return [n for n in app._notifications if n.title in ("crash", "CRIT alert", "WARN alert")
            or n.title.endswith("new alerts")]


def regions_overlap(a, b) -> bool:
    return a.x < b.right and b.x < a.right and a.y < b.bottom and b.y < a.bottom


def test_one_nan_one_alert_headline_and_an_ack_in_one_console_clears_every_console():
    base = Path(tempfile.mkdtemp(prefix="mcalert-"))
    run = None
    try:
        run = start_demo_with_nan(base)
        wait_state(run, lambda s: s.get("status") == "running" and (s.get("step") or 0) >= 1, timeout=90)

        async def go():
            one = BellCounter(base, run, gpu=False, interval=0.25, bell=True)
            two = MoeConsole(base, run, gpu=False, interval=0.25)
            async with one.run_test(size=(80, 24)) as p1, two.run_test(size=(80, 24)) as p2:
                s1, s2 = await attached(p1), await attached(p2)
                assert (s1.snapshot.run["step"] or 0) < NAN_AT, "attached before the NaN"
                most_toasts = 0

                def paused_with_an_alert(polls_after: int = 0) -> bool:
                    nonlocal most_toasts
                    most_toasts = max(most_toasts, len(alert_toasts(one)))  # every toast seen on the way
                    return s1.snapshot.run["status"] == "paused" and bool(s1.active_alerts) \
                        and s1.polls >= polls_after
                await until_ui(p1, paused_with_an_alert, timeout=120, what="the run to pause on the NaN")
                # four polls after the pause: still one cause, one toast
                polls = s1.polls
                await until_ui(p1, lambda: paused_with_an_alert(polls + 4), what="four more polls")
                # one cause, one alert: the NaN's five events are one group
                assert [(g.key, g.level) for g in s1.active_alerts] == [("divergence", "critical")]
                group = s1.active_alerts[0]
                assert group.count >= 4 and group.first_step == NAN_AT and group.last_step == NAN_AT
                assert most_toasts == 1 and len(alert_toasts(one)) == 1, "one toast, never a pile"
                assert one.rings >= 1
                # toasts never cover the charts
                charts = s1.query_one("#charts").region
                for toast in one.screen.query(Toast):
                    assert not regions_overlap(toast.region, charts), (toast.region, charts)
                # the headline itself says it, in 80 columns, most telling part first
                status = s1.query_one(StatusLine).plain_lines
                assert status[0].split()[1:4] == ["CRIT", "·", "PAUSED"], status
                assert status[1].startswith(f"CRIT loss is nan at step {NAN_AT} (x"), status
                assert len(status[1].split(" · ")[0]) <= 78, "the alert itself is never cut at 80 columns"
                badge = s1.query_one(StatusLine).get_component_rich_style("status--critical")
                assert badge.bold and contrast(badge.color, badge.bgcolor) >= 7.0
                # the other console, attached all along, shows the same
                await until_ui(p2, lambda: [g.key for g in s2.active_alerts] == ["divergence"])
                # d opens the alert with the crash report's hint
                await p1.press("d")
                await until_ui(p1, lambda: isinstance(one.screen, DetailScreen))
                body = "\n".join(one.screen.lines)
                assert "cause: divergence" in body and f"steps: step {NAN_AT}" in body and "hint: " in body
                await p1.press("escape")
                # a in console one: console two clears too, and both name the last good checkpoint
                await p1.press("a")
                await until_ui(p1, lambda: not s1.active_alerts)
                await until_ui(p2, lambda: not s2.active_alerts and not s2.query_one(AlertBar).display)
                for screen in (s1, s2):
                    await until_ui(p1, lambda: "CRIT" not in screen.query_one(StatusLine).plain_lines[0])
                    line = screen.query_one(StatusLine).plain_lines[1]
                    assert f"last good checkpoint: step {NAN_AT - 10}, " in line and " ago" in line, line
            return group

        group = asyncio.run(go())
        # --json carries the same alert state: acknowledged, no longer active, the crash's hint
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "--json", "--once", run.run_id,
                               "--runs-dir", str(base)], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=60)
        d = json.loads(done.stdout)
        (g,) = d["alert_groups"]
        assert (g["key"], g["acknowledged"], g["active"], g["count"]) == ("divergence", True, False, group.count)
        assert g["hint"] and d["crashes"][0]["hint"] == g["hint"]
        assert d["run"]["open_alerts"] == 0
    finally:
        reap(base, run)
        shutil.rmtree(base, ignore_errors=True)


def start_demo_with_nan(base: Path) -> rundir.RunDir:
    return start_demo(base, "--set", f"args.fault=nan@{NAN_AT}", "--set", "args.step_delay=0.25")


async def attached(pilot) -> RunScreen:
    await until_ui(pilot, lambda: isinstance(pilot.app.screen, RunScreen) and pilot.app.screen.snapshot is not None)
    return pilot.app.screen


def contrast(fg, bg) -> float:
    """WCAG contrast ratio of two Rich colours."""
    def lum(c):
        r, g, b = (v / 255 for v in c.get_truecolor())
        lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
