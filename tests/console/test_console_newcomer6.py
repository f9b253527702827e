"""The sixth newcomer round (README only, tmux over SSH on a machine set up differently: an ASCII
locale, TERM=screen, 8 colours, NO_COLOR, a read-only HOME, files of their own in the directory):
what misled them, as they met it."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console


def _help_lines(app) -> list[str]:
    """The whole help as the help screen lays it out at the app's width (every row, scrolled or not)."""
    from textual.widgets import Static
    table = app.screen.query_one("#help-table", Static).content
    console = Console(width=app.size.width, file=open(os.devnull, "w"), record=True, color_system=None)
    console.print(table)
    return console.export_text().splitlines()


def help_shown(base, run, size: tuple[int, int]) -> list[str]:
    """The help (`?`) of the run screen of ``run`` at ``size``, as ``_help_lines`` lays it out."""
    from tests.console.test_console_app import app_for, attached
    from tests.waiting import until_ui
    from moeconsole.console.screens.dialogs import HelpScreen

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=size) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            return _help_lines(app)
    return asyncio.run(go())


def test_g_is_the_gpu_view_in_every_screen_and_reload_and_top_have_keys_of_their_own(base, make_run):
    """`g` was the GPU view on the run screen, "Reload the index" in the run browser and the first
    line in the log view: a newcomer who learnt `g` GPU view from the README pressed it in the
    browser and got a reload. One key, one meaning: the help lists `g` only as the GPU view; the
    browser reloads on F5, the log goes to its first and last lines on Home and End."""
    lines = help_shown(base, make_run(base, status="succeeded"), (100, 30))
    rows = {line.split(None, 1)[0]: line for line in lines if line.strip()}
    g_rows = [line for line in lines if line.split(None, 1)[:1] == ["g"]]
    assert g_rows and all("GPU view" in line for line in g_rows), g_rows
    # m: the bell (the comparison's metric had been m too; it is c there, as the run screen's charts)
    m_rows = [line for line in lines if line.split(None, 1)[:1] == ["m"]]
    assert m_rows and all("bell" in line for line in m_rows), m_rows
    assert "Reload the index" in rows.get("F5", ""), "\n".join(lines)
    assert "first line" in rows.get("Home", "") and "last line" in rows.get("End", ""), "\n".join(lines)


REPO = Path(__file__).resolve().parents[2]


def test_a_home_where_no_runs_directory_can_be_made_names_the_way_to_put_runs_elsewhere(tmp_path):
    """`make demo` with a HOME the runs directory cannot be made under (read-only on a shared
    login node; here a HOME below a file, which fails the same way and needs no mount) said
    "cannot create a run directory under ~/.local/share/moeconsole/runs: Read-only file system"
    and nothing more: the line names the way out, MOECONSOLE_RUNS_DIR (or --runs-dir)."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("MOECONSOLE_RUNS_DIR", "XDG_DATA_HOME")}
    env.update(HOME=str(blocked / "home"), PYTHONPATH=str(REPO), COLUMNS="80")
    out = subprocess.run([sys.executable, "-m", "moeconsole", "run", "--detach", "--", sys.executable, "-c", "pass"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    [line] = out.stderr.splitlines()
    assert f"{blocked}/home/.local/share/moeconsole/runs: " in line, line
    assert line.endswith("`export MOECONSOLE_RUNS_DIR=DIR` (or --runs-dir DIR)"), line


def test_run_of_a_bare_python_where_only_python3_is_installed_names_python3(tmp_path):
    """The README's `moeconsole run -- python my_train.py` on a machine with only `python3` (PEP
    394 lets a distribution ship no `python`: Debian, Ubuntu) said "'python' is not an executable
    on PATH here; install it, or name it by its full path": the line names `python3`, which is."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    (tmp_path / "train.py").write_text("print('step 1')\n")
    env = {**os.environ, "PATH": str(bin_dir), "PYTHONPATH": str(REPO), "MOECONSOLE_RUNS_DIR": str(tmp_path / "runs")}
    out = subprocess.run([sys.executable, "-m", "moeconsole", "run", "--detach", "--", "python", "train.py"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 1, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    [line] = [ln for ln in out.stderr.splitlines() if "executable_missing" in ln]
    assert "'python' is not an executable on PATH here; this machine has `python3`: name that instead" in line, line


def test_in_ascii_the_helps_scrollbar_is_whole_cells_not_oo(base, make_run, monkeypatch):
    """Under LANG=C in tmux the console draws in ASCII (console/glyphs.py), and the help's
    scrollbar thumb ended in Textual's eighth blocks, written as bar heights: "oo" beside the
    help's heading row. The thumb is whole reverse-video cells: nothing but spaces in its column."""
    from tests.console.test_console_app import app_for, attached
    from tests.waiting import until_ui
    from moeconsole.console.screens.dialogs import HelpScreen
    from textual.scrollbar import ScrollBar
    monkeypatch.setenv("MOECONSOLE_ASCII", "1")
    monkeypatch.setattr(ScrollBar, "renderer", ScrollBar.renderer)   # the process's other apps draw as before
    run = make_run(base, status="succeeded")
    eighths = set("▁▂▃▄▅▆▇▉▊▋▌▍▎▏")

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            help_box = await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen)
                                      and app.screen.query_one("#help"))
            cells = []
            for _ in range(6):   # the thumb's ends fall elsewhere as the help scrolls
                await pilot.pause()
                region = help_box.region
                strips = app.screen._compositor.render_strips()
                cells.append("".join(strips[y].text[region.x:region.right] for y in range(region.y, region.bottom)))
                await pilot.press("pagedown")
            return help_box.max_scroll_y, cells
    scrollable, cells = asyncio.run(go())
    assert scrollable > 0   # the help is longer than the screen: it has a scrollbar
    assert not eighths & set("".join(cells)), cells


def test_the_run_browser_follows_the_runs_without_a_key(base, make_run):
    """The run browser showed the index as first read: a newcomer left it open on a RUNNING demo
    that had long SUCCEEDED (its reload key was not in the footer). It reads the index again at
    the console's refresh period: a run that ends and a run that starts appear by themselves,
    and the cursor stays on the run it was on."""
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.runner.rundir import jsonio, store
    first = make_run(base, status="running")
    store.rebuild(base)

    async def go():
        app = app_for(base, None)
        async with app.run_test(size=(100, 30)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows
                                     and app.screen, what="the browser with the run")
            assert browser.rows[0]["status"] == "running"
            state = first.read_state()
            state["status"] = "succeeded"
            jsonio.atomic_write_json(first.state, state)
            second = make_run(base, "20240102-000000-demo-0002", status="running")
            store.rebuild(base)      # what the runners' writes do to the index
            await until_ui(pilot, lambda: {r["id"]: r["status"] for r in browser.rows}
                           == {first.run_id: "succeeded", second.run_id: "running"}, what="both runs as they are now")
            table = browser.query_one("DataTable")
            return browser.rows[table.cursor_row]["id"]
    assert asyncio.run(go()) == first.run_id


def test_an_option_before_the_command_is_the_commands(tmp_path):
    """`moeconsole --runs-dir DIR demo` (the README: `--runs-dir` overrides all) said "unknown
    command 'demo': did you mean `moeconsole demo`?", the very word typed. Options before the
    command are the command's, as after it; one the command does not take is its usual one line."""
    base = tmp_path / "runs"
    run = base / "20260101-000000-sft-a1b2"
    run.mkdir(parents=True)
    (run / "state.json").write_text('{"v": 1, "status": "succeeded", "name": "sft", "started_at": 100.0}')
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120"}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    for argv in (["--runs-dir", str(base), "runs"], [f"--runs-dir={base}", "runs", "ls"]):
        out = subprocess.run([sys.executable, "-m", "moeconsole", *argv], capture_output=True, text=True,
                             cwd=tmp_path, env=env, timeout=120)
        assert out.returncode == 0 and "sft" in out.stdout and "SUCCEEDED" in out.stdout, (argv, out.stderr)
    out = subprocess.run([sys.executable, "-m", "moeconsole", "--runs-dir", str(base), "parse", "x.log"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert out.returncode == 2 and "unknown command" not in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert "moeconsole parse: error: unrecognized arguments" in out.stderr, out.stderr


def test_a_log_panel_of_one_row_shows_the_newest_line_not_an_empty_log():
    """Two tmux panes of 15 rows on one run: the run screen's log panel had one row, the metric
    columns' header took it and dropped the only line, and the panel said "(train.log is empty)"
    of a log of 15 KB. One row shows the newest line as the log has it."""
    from moeconsole.console.logtail import MetricColumns
    lines = ("[INFO:swift] model: tiny MoE", "{'loss': 2.825, 'grad_norm': 0.777, 'learning_rate': 0.003, "
             "'global_step/max_steps': '39/100000'}")
    assert MetricColumns().rows(lines, 1) == [lines[-1]]
    two = MetricColumns().rows(lines, 2)   # two rows: the header and the newest values, as before
    assert len(two) == 2 and "loss" in two[0] and "2.825" in two[1], two
