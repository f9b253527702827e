"""The twelfth newcomer round (README only, a fresh clone, tmux, real ms-swift 4.6 through the console):
where the console said something untrue about the run in front of them.

A run that FAILED on its command's own refusal (ms-swift's `ValueError: remaining_argv: ['--learning_rte',
'5e-3']`, config_error) ended on "once the crash is fixed, `moeconsole restart 153d` will start attempt 2",
and its screen's banner said "next: the fix (d), then moeconsole restart 153d". The newcomer fixed the
recipe and typed it: the restart ran the run's own copy of the recipe (recipe.yaml), the refused flag and
all, three attempts more. Every place that names the next step now says to start the fixed recipe anew
(``snapshot.command_refused``, the one owner), and the restart itself says it repeats the command.
Pilot for the screen, real processes for the command line."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from textual.widgets import Static

from moeconsole.console.screens.run import RunScreen
from tests.console.test_console_app import app_for, attached, telemetry
from tests.waiting import until_ui

REPO = Path(__file__).resolve().parents[2]
REFUSED = {"class": "config_error",
           "summary": "configuration error (exit 1): ValueError: remaining_argv: ['--learning_rte', '5e-3']"}


def _refused_run(base, make_run):
    return make_run(base, "20261204-065314-swift-tiny-cpu-153d", name="swift-tiny-cpu", status="failed", steps=0,
                    attempt=1, restarts=0, restart_at=None, checkpoints=(), crash=REFUSED)


def _screen(base, run, keys=()) -> tuple[list[str], bool, list[str]]:
    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await attached(pilot)
            polls = screen.polls
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.polls > polls,
                           what="a poll drawn")
            await pilot.pause()
            said: list[str] = []
            for key in keys:
                await pilot.press(key)
                said.append(await until_ui(pilot, lambda: next((str(n.message) for n in app._notifications
                                                                if str(n.message).startswith(f"{key}: ")), None),
                                           what=f"what {key} says"))
            banner = screen.query_one("#runner-gone", Static).display
            return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()], banner, said
    return asyncio.run(go())


def cli(base: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(base)],
                          capture_output=True, text=True, timeout=60, cwd=REPO)


def test_a_run_whose_command_was_refused_is_not_sent_to_restart_once_fixed(base, make_run):
    """The banner names a new run of the fixed recipe, on one line at 80 columns, and no `moeconsole
    restart` as the way on; `r` (not in the footer of a run that is over) says the restart would run the
    refused command again."""
    run = _refused_run(base, make_run)
    lines, banner, said = _screen(base, run, keys=("r",))
    assert banner
    assert any(line.strip() == "next: the fix (d), then moeconsole run it anew (restart repeats its command)"
               for line in lines), lines
    assert not any("moeconsole restart" in line for line in lines), lines
    assert "; it runs the refused command again, unchanged" in said[0] and "`moeconsole run` it anew" in said[0], said


def test_a_run_that_failed_otherwise_is_still_sent_to_restart(base, make_run):
    """The refusal: a crash a restart can get past (a fixed node, a freed port) keeps `restart` as the next step."""
    run = make_run(base, "20261204-065314-swift-tiny-cpu-0c1d", name="swift-tiny-cpu", status="failed", steps=30,
                   crash={"class": "nccl_error", "summary": "NCCL watchdog timeout"})
    lines, banner, _ = _screen(base, run)
    assert banner and any(line.strip().startswith("next: the fix (d), then moeconsole restart ") for line in lines), lines


def test_runs_show_json_and_runs_last_line_say_the_same(base, make_run):
    """`runs show` names no restart for it, `--json`'s next_command is null (no command starts it again as it
    is), and `run`'s last line no longer says "once the crash is fixed, `moeconsole restart ...`"."""
    run = _refused_run(base, make_run)
    show = cli(base, "runs", "show", "153d")
    assert show.returncode == 0, show.stderr
    nxt = [line for line in show.stdout.splitlines() if line.strip().startswith("next")]
    assert nxt and "moeconsole run it anew (restart repeats its command)" in nxt[0], show.stdout
    assert "moeconsole restart" not in show.stdout, show.stdout
    snap = cli(base, "--json", "153d", "--once")
    assert snap.returncode == 0, snap.stderr
    assert json.loads(snap.stdout.splitlines()[0])["run"]["next_command"] is None
    from moeconsole.console.commands.run import ended_line
    state = json.loads((run.path / "state.json").read_text())
    last = ended_line(run.run_id, state, base).splitlines()[-1]
    assert not last.startswith("once the crash is fixed") and "`moeconsole run` it anew" in last, last


def _memory_rows(base, run) -> str:
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.widgets.chart import ChartView

    async def go() -> str:
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)

            def rows() -> str:
                for chart in app.screen.query(ChartView):
                    text = chart.text_rows() if chart.display else []
                    if text and text[0].lower().startswith("mem"):
                        return " ".join(text)
                return ""
            return await until_ui(pilot, rows, what="the memory chart")
    return asyncio.run(go())


def test_a_live_runs_memory_chart_says_its_steps_carry_none_not_no_data_yet(base, make_run):
    """ms-swift writes `memory(GiB)` only where a device's reserved memory is above 0 (swift/trainers/patcher.py
    l.27-29): a CPU run on a machine without NVML never fills the memory chart, which said "no data yet"
    through all its 200 steps. Once the run has logged steps an empty chart says they carry none, so far;
    before its first step it still says "no data yet"."""
    import os
    from moeconsole.runner.rundir import jsonio
    run = make_run(base, "20261204-065434-swift-tiny-cpu-e380", name="swift-tiny-cpu", status="running",
                   runner_pid=os.getpid(), steps=35, max_steps=200)
    records = [json.loads(line) for line in run.metrics.read_text().splitlines()]
    run.metrics.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "mem_gib"}) + "\n" for r in records))
    stepping = _memory_rows(base, run)
    assert "not in its steps so far" in stepping and "no data yet" not in stepping, stepping
    state = jsonio.read_json(run.state)
    jsonio.atomic_write_json(run.state, {**state, "step": None})
    run.metrics.write_text("")
    assert "no data yet" in _memory_rows(base, run)


def test_runs_last_line_says_failed_once():
    """`run` ended on "run 153d ended FAILED: failed: config_error: ..." (the restart policy's reason opens with
    its verdict); the status is said once, as "ended KILLED" is (newcomer round 5). A reason that does not
    open with the status reads as before."""
    from moeconsole.console.commands.run import ended_line
    summary = "configuration error (exit 1): ValueError: remaining_argv: ['--learning_rte', '5e-3']"
    line = ended_line("153d", {"status": "failed", "attempt": 1, "pause_reason": f"failed: config_error: {summary}"})
    assert line == f"run 153d ended FAILED: config_error: {summary}", line
    other = ended_line("153d", {"status": "failed", "attempt": 3, "pause_reason": "no step progress in 3 attempts"})
    assert other == "run 153d ended FAILED: no step progress in 3 attempts", other


def _log_title(base, run, *, end_it: bool = False) -> list[str]:
    """The log view's title (l) as drawn; with ``end_it``, again after the run's state says it succeeded."""
    from moeconsole.console.screens.logview import LogScreen
    from moeconsole.runner.rundir import jsonio

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(100, 24)) as pilot:
            await attached(pilot)
            await pilot.press("l")
            screen = await until_ui(pilot, lambda: isinstance(app.screen, LogScreen) and app.screen, what="the log view")
            title = screen.query_one("#log-title", Static)
            titles = [await until_ui(pilot, lambda: " lines " in str(title.render()) and str(title.render()),
                                     what="the log's title")]
            if end_it:
                state = json.loads(run.state.read_text())
                jsonio.atomic_write_json(run.state, {**state, "status": "succeeded", "ended_at": state["started_at"] + 99})
                titles.append(await until_ui(pilot, lambda: "run is over" in str(title.render()) and str(title.render()),
                                             what="the title once the run ended"))
            return titles
    return asyncio.run(go())


def test_the_log_view_of_a_finished_run_does_not_say_following(base, make_run):
    """Newcomer round 12 opened the log of a finished ms-swift run: its title said "following", as if lines
    were still to come. A run that is over says it is at the end; a live run's log still follows."""
    done = make_run(base, "20261204-070000-swift-tiny-cpu-aa01", status="succeeded", steps=40)
    [title] = _log_title(base, done)
    assert "at the end, the run is over" in title and "following" not in title, title


def test_the_log_view_says_the_run_is_over_when_it_ends_with_the_view_open(base, make_run):
    live = make_run(base, "20261204-070000-swift-tiny-cpu-aa02", status="running", steps=40)
    before, after = _log_title(base, live, end_it=True)
    assert "following" in before and "run is over" not in before, before
    assert "at the end, the run is over" in after and "following" not in after, after
