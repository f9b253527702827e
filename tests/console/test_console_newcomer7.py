"""The seventh newcomer round (README only, tmux over SSH, keyboard only): what misled them, as they
met it."""
from __future__ import annotations

import asyncio
import os

from tests.console.test_console_newcomer6 import help_shown


def test_s_c_and_d_mean_one_thing_in_every_screen_of_the_help(base, make_run):
    """`s` was the browser's sort and the run screen's start runner, `c` the run screen's charts
    and the browser's compare, `d` the run screen's alert and the chart picker's defaults: a
    newcomer who learnt a key on one screen pressed it on another and got something else. The help
    (every screen's table) lists each of them with one meaning: `s` sorts, `c` chooses the charts
    (or the metric a comparison overlays), `d` opens the alert; compare is `x`, start runner `u`,
    the defaults `0`; and no key of any screen (the dialogs' y/n aside) has two meanings."""
    from moeconsole.console import keys
    lines = help_shown(base, make_run(base, status="succeeded"), (120, 40))

    def rows(key: str) -> list[str]:
        return [line for line in lines if line.split(None, 1)[:1] == [key]]
    assert rows("s") and all("Sort by the next column" in r for r in rows("s")), rows("s")
    assert rows("c") and all("Choose the" in r for r in rows("c")), rows("c")
    assert rows("d") and all("newest active alert" in r for r in rows("d")), rows("d")
    assert any("Compare the marked runs" in r for r in rows("x")), rows("x")
    assert any("start a new runner" in r for r in rows("u")), rows("u")
    assert any("default charts" in r for r in rows("0")), rows("0")
    assert keys.more_than_one_meaning() == {}


def test_x_compares_the_marked_runs_in_the_browser_and_t_aligns_them_by_time(base, make_run):
    """The browser's compare is `x` (its footer and title say so), and in the comparison `t`
    switches step / wall time (`x` had been that there)."""
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.console.screens.compare import CompareScreen
    for i, name in enumerate(("moe-a", "moe-b")):
        make_run(base, f"20240101-00000{i}-{name}-000{i}", name=name, status="succeeded")

    async def go():
        app = app_for(base, None)
        async with app.run_test(size=(120, 36)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 2
                                     and app.screen)
            title = str(browser.query_one("#browser-title").render())
            assert "space marks runs to compare (x)" in title, title
            await pilot.press("space", "down")
            await pilot.press("c")   # c is the charts' key: nothing here
            await pilot.pause()
            assert app.screen is browser
            await pilot.press("x")
            screen = await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.result
                                    and app.screen)
            assert "c metric, t step/time" in str(screen.query_one("#compare-title").render())
            await pilot.press("t")
            await until_ui(pilot, lambda: screen.result["by_time"])
    asyncio.run(go())


def test_the_browser_reads_the_index_again_only_when_it_or_the_run_directories_changed(base, make_run, monkeypatch):
    """At each refresh the browser read the whole index (500 runs: 35 ms on an idle machine, 140
    ms on a busy one, with one live run whose step alone changed). It looks first (the run
    directories and the index by stat): a live run's new step is read from its own files and
    written in place; a run removed, or a run the index got, is a whole read."""
    import shutil
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.runner.rundir import jsonio, store
    for i in range(12):
        make_run(base, f"20240101-0000{i:02d}-old{i}-b{i:03d}", name=f"old{i}", status="succeeded")
    live = make_run(base, "20240102-000000-live-c001", name="live", status="running", steps=60,
                    runner_pid=os.getpid())
    store.rebuild(base)
    reads = []
    whole = store.listing   # the browser's whole read (``list_runs``' rows and their look)
    monkeypatch.setattr(store, "listing", lambda *a, **kw: reads.append(1) or whole(*a, **kw))

    async def go():
        app = app_for(base, None, interval=0.2)
        async with app.run_test(size=(140, 30)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen)
                                     and len(app.screen.rows) == 13 and app.screen, what="the runs")
            table = browser.query_one("DataTable")
            step = lambda: str(table.get_cell(live.run_id, "last_step"))   # noqa: E731
            before, read_once, row = step(), len(reads), table.rows[live.run_id]
            state = live.read_state()
            state["step"] = 77
            jsonio.atomic_write_json(live.state, state)
            await until_ui(pilot, lambda: "77" in step() and step() != before, what="the live run's new step")
            for _ in range(5):   # refreshes with nothing changed
                await pilot.pause(0.2)
            assert len(reads) == read_once, "the index was read again though nothing but the live run changed"
            assert table.rows[live.run_id] is row, "the row was written in place"
            shutil.rmtree(base / "20240101-000003-old3-b003")   # a run removed: read whole
            await until_ui(pilot, lambda: len(browser.rows) == 12, what="the removed run gone")
            assert len(reads) > read_once
            make_run(base, "20240103-000000-new-d001", name="new", status="succeeded")
            store.rebuild(base)   # the index got a run: read whole
            await until_ui(pilot, lambda: "20240103-000000-new-d001" in [r["id"] for r in browser.rows],
                           what="the new run")
    asyncio.run(go())


def test_a_slow_tmux_does_not_hold_the_first_frame_and_its_answer_still_decides(base, monkeypatch):
    """Inside tmux the console asks tmux whether its clients take UTF-8; the terminal driver waited
    for that answer (up to 5 s from a busy tmux server) in the console's constructor, before the
    first frame, and an answer later than that was lost. Now the first frame is drawn by the locale
    rule while tmux answers, and when the answer comes (a client attached from LANG=C: no UTF-8)
    the console draws in ASCII from then on, every cell again. (Measured on a pty with a tmux that
    answers once the first frame is seen: main drew its first frame after the wait, in UTF-8 and
    for good; this code at once, and in ASCII 0.2 s after the answer; docs/console.md.)"""
    import threading
    from textual.scrollbar import ScrollBar
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console import glyphs
    from moeconsole.console.screens.browser import BrowserScreen
    gate = threading.Event()

    def ask(env, timeout=3.0):
        gate.wait(120)
        return False   # a client attached from a locale without UTF-8
    monkeypatch.setattr(glyphs, "started_environ", lambda: {"TMUX": "/nowhere/tmux-0/x,1,0", "TMUX_PANE": "%0",
                                                            "LANG": "C.UTF-8"})
    monkeypatch.delenv("MOECONSOLE_ASCII", raising=False)
    monkeypatch.setattr(glyphs, "tmux_clients_utf8", ask)
    monkeypatch.setattr(glyphs, "_EARLY", [])
    monkeypatch.setattr(ScrollBar, "renderer", ScrollBar.renderer)
    glyphs.ask_tmux_early()
    app = app_for(base, None)
    try:
        assert not gate.is_set() and glyphs.tmux_pending(), "made while tmux has not answered"
        assert glyphs.DRAWING_ASCII == [False], "the locale rule (UTF-8) draws until tmux answers"

        async def go():
            async with app.run_test(size=(100, 30)) as pilot:
                await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen), what="the first screen")
                assert glyphs.DRAWING_ASCII == [False]
                gate.set()
                await until_ui(pilot, lambda: glyphs.DRAWING_ASCII == [True], what="tmux's answer drawn")
                assert ScrollBar.renderer.__name__ == "WholeCells"
        asyncio.run(go())
    finally:
        gate.set()
        glyphs.draw_ascii(False)


def test_another_tools_word_for_a_command_is_not_offered_a_command_that_ends_processes(tmp_path):
    """`moeconsole status` (what other tools call their listing) answered "did you mean
    `moeconsole restart`?", a command that kills the run's processes, by similarity alone. A
    command is offered for a typo or a shortening of it only, and the line names where the runs
    are listed."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo), "MOECONSOLE_RUNS_DIR": str(tmp_path)}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=120)
    for word in ("status", "statsu"):
        out = cli(word)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert "did you mean" not in out.stderr, out.stderr
        assert "`moeconsole runs` lists the runs" in out.stderr, out.stderr
    for word, meant in (("verfy", "verify"), ("superv", "supervise"), ("rnus", "runs")):
        assert f"did you mean `moeconsole {meant}`?" in cli(word).stderr, word
    out = cli("runs", "lss")   # a runs action: its near miss too (it had only the list)
    assert out.returncode == 2 and "did you mean `moeconsole runs ls`?" in out.stderr, out.stderr


def test_a_mistyped_recipe_key_names_lint_fix_which_renames_it(tmp_path):
    """`moeconsole lint` (and `run`) of a recipe with `restart.max_restart` said "unknown key (did
    you mean max_restarts?)" and stopped: the newcomer edited the file by hand, not knowing that
    `lint --fix` renames it. The line names that command; running it makes the recipe load."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    recipe = tmp_path / "my recipe.yaml"
    recipe.write_text("name: mine\ncommand: [python3, train.py]\nrestart:\n  max_restart: 3\n")
    env = {**os.environ, "PYTHONPATH": str(repo), "MOECONSOLE_RUNS_DIR": str(tmp_path / "runs")}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=120)
    out = cli("lint", str(recipe))
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    [line] = out.stderr.splitlines()
    assert line.endswith(f"unknown key (did you mean max_restarts?); `moeconsole lint --fix '{recipe}'` renames it"), line
    assert cli("lint", "--fix", str(recipe)).returncode == 0
    assert "max_restarts: 3" in recipe.read_text()
