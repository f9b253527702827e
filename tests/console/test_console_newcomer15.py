"""Newcomer round 15: the demo and the 8xH200 recipe at 80 columns on a machine without a GPU: the
events pane, the log view's search and lint (Textual Pilot and the real CLI)."""
from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.runner.rundir import jsonio
from moeconsole.runner.telemetry.gpu import get_backend, no_gpu_here
from tests.console.test_console_app import app_for, attached

REPO = Path(__file__).resolve().parents[2]


def _long_event(run) -> str:
    """An event whose sentence is longer than the pane: the runner's no-GPU warning."""
    message = ("the recipe uses GPU 0,1,2,3,4,5,6,7, and this machine has no GPU (NVIDIA driver library "
               "libnvidia-ml.so.1 not found): attempts start without waiting for GPU memory")
    jsonio.append_jsonl(run.events, {"v": 1, "t": 1_700_000_999.0, "type": "alert", "level": "warning",
                                     "rule": "no_gpu_here", "message": message})
    return message


def test_events_pane_at_80_columns_cuts_lines_between_words(base, make_run):
    """At 80x24 the events pane (about 38 columns) showed `18:23:25 PRE-FLIGHT: checking leftove…`:
    each line cut mid-word by the widget's ellipsis. Each line now fits the pane by words (the time
    stays, the sentence loses whole words); at 120 columns the same lines keep more words."""
    from moeconsole.console.widgets.panes import EventPane
    run = make_run(base, "20261204-182325-tiny-moe-cpu-1a2b", name="tiny-moe-cpu")
    _long_event(run)

    async def prompts(size) -> tuple[int, list[str], list[str]]:
        app = app_for(base, run)
        async with app.run_test(size=size) as pilot:
            screen = await attached(pilot)
            await pilot.pause()
            pane = screen.query_one(EventPane)
            shown = [str(pane.get_option_at_index(i).prompt) for i in range(pane.option_count)]
            return pane.scrollable_content_region.width, shown, [e.line for e in pane.entries]

    for size in ((80, 24), (120, 40)):
        width, shown, whole = asyncio.run(prompts(size))
        assert len(shown) == len(whole) and any(s != w for s, w in zip(shown, whole)), (size, shown)
        for line, full in zip(shown, whole):
            assert len(line) <= width, (size, width, line)
            if line != full:
                full = " ".join(full.split())     # a cut line's spaces as fit_words gives them
                kept = line.removesuffix("…")
                assert line.endswith("…"), line
                # the sentence's first words as written, each whole: nothing dropped between them
                assert full.startswith(kept) and full[len(kept)] in " ,;:", (line, full)


def test_log_search_pans_to_a_match_past_the_right_edge(base, make_run):
    """At 80 columns `/elapsed_time` on the demo's log put the found line mid-screen with its match
    behind the `…` at the right edge: nothing on screen showed what was found. The view now pans to
    the match (the title says `columns N+`); a match near the start scrolls back to column 1."""
    from moeconsole.console.screens.logview import LogScreen, LogView
    from tests.waiting import until_ui
    run = make_run(base, "20261204-182325-tiny-moe-cpu-1a2b", name="tiny-moe-cpu")
    pad = ", ".join(f"'k{i}': '{i}'" for i in range(20))
    with run.log.open("a") as f:
        f.write(f"{{'loss': '2.9', {pad}, 'elapsed_time': '20s'}}\n[INFO:swift] saved\n")

    async def go() -> tuple[list[str], list[str], str]:
        app = app_for(base, run)
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("l")
            await until_ui(pilot, lambda: isinstance(app.screen, LogScreen))
            screen = app.screen
            view = screen.query_one(LogView)
            found = []
            for needle in ("elapsed_time", "INFO:swift"):
                await pilot.press("/")
                await pilot.pause()
                for ch in needle:
                    await pilot.press(ch)
                await pilot.press("enter")
                await until_ui(pilot, lambda: view.current is not None and view.needle == needle)
                await pilot.pause()
                row = view.current - view.scroll_offset.y
                strip = view.render_line(row)
                found.append(strip.text)
            return found[0:1], found[1:], str(screen.query_one("#log-title").render())

    [far], [near], _title = asyncio.run(go())
    assert "elapsed_time" in far, far
    assert "INFO:swift" in near and "…[INFO" not in near, near


@pytest.mark.skipif(not no_gpu_here(get_backend()), reason="this machine has a GPU")
def test_lint_says_the_recipes_gpus_are_not_on_this_machine():
    """`moeconsole lint` of the 8xH200 recipe on a machine without a GPU: `0 error(s), 3 warning(s)`, not a
    word that its 8 GPUs are not here (the run screen said it only after the launch). Lint now warns with
    the runner's own sentence (`no_gpu_here`); a recipe naming no GPU (torchrun on CPU) gets no such line."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80"}

    def lint(recipe: str) -> str:
        done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "lint", str(REPO / "recipes" / recipe)],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
        return done.stdout + done.stderr

    out = lint("qwen3.5-397b-a17b-8xh200-swift4.6.yaml")
    assert "no_gpu_here: the recipe uses 8 GPUs (0,1,2,3,4,5,6,7), and this machine has no GPU (" in out, out
    assert "set gpus.devices to [] for a run on CPU" in out and "Traceback" not in out, out
    assert "no_gpu_here" not in lint("torchrun-cpu.yaml")


def test_an_empty_chart_at_80_columns_says_its_words_whole():
    """`run -- python3 train.py` (a log of step, loss and lr) at 80x24: the grad norm and memory charts
    read `not in its steps s…`, one row of a 20-column plot. The words now take the plot's rows, broken
    between them; a plot too small for them all marks its cut after a whole word."""
    from moeconsole.console.chart import STEPS_LACK_IT, ChartOptions, render_chart, rows_text
    from moeconsole.runner.core.series import Series

    def body(width: int, height: int) -> list[str]:
        rows = rows_text(render_chart([Series()], width, height, title="grad norm",
                                      options=ChartOptions(stepping=True)))
        return [r.split("│", 1)[1].strip() for r in rows[1:-1]]

    text = body(27, 9)     # the run screen's chart at 80 columns
    assert " ".join(t for t in text if t) == STEPS_LACK_IT, text
    small = body(27, 3)    # a single row for them
    assert small[0].endswith("…") and STEPS_LACK_IT.startswith(small[0][:-1] + " "), small


def test_restart_names_its_next_commands_on_a_line_an_80_column_terminal_keeps_whole(tmp_path):
    """`moeconsole restart e214` of a KILLED run at 80 columns: `20261204-182953-train-e214: `moeconsole
    attach e214` watches it, `moeconsole kil` / `l e214` stops it`, the terminal breaking the command in
    two. The commands now have their line (74 columns), under the line naming the whole id."""
    from tests.conftest import end_processes, run_processes
    base = tmp_path / "runs"
    env = {k: v for k, v in os.environ.items() if k not in ("MOECONSOLE_RUNS_DIR", "XDG_DATA_HOME")}
    env = {**env, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO), "COLUMNS": "80",
           "MOECONSOLE_RUNS_DIR": str(base)}   # the user's own runs directory: commands by the short id alone

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True,
                              text=True, cwd=tmp_path, env=env, timeout=180, stdin=subprocess.DEVNULL)

    try:
        started = cli("run", "--detach", "--", sys.executable, "-c",
                      "import time; print('step 1 loss 2.0', flush=True); time.sleep(120)")
        assert started.returncode == 0, started.stderr
        [run_dir] = [p for p in base.iterdir() if p.is_dir()]
        short = run_dir.name.rsplit("-", 1)[1]
        assert cli("kill", short).returncode == 0
        out = cli("restart", short)
        assert out.returncode == 0, out.stderr
        lines = out.stderr.splitlines()
        at = next(i for i, line in enumerate(lines) if "watches it" in line)
        # one line of 74 columns; a longer short id (`python-2311`: a suffix of digits takes the name's
        # last part) puts each command on a line of its own (``format.watch_words``)
        watch = lines[at:at + 1] if "stops it" in lines[at] else lines[at:at + 2]
        assert all(len(line) <= 80 for line in watch), out.stderr
        assert re.fullmatch(r"`moeconsole attach (\S+)` watches it,\s`moeconsole kill \1` stops it", "\n".join(watch)), watch
        assert f"{run_dir.name}: attempt 2 running" in out.stdout, out.stdout
    finally:
        end_processes(run_processes(base))
