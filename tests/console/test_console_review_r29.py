"""Review R29 of the newcomer round (short ids, the browser that follows the index): a printed short
id never names another run, now or after later runs start; the browser's refresh writes only the
cells that changed and keeps the user's scroll."""
from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from moeconsole.runner.rundir import rundir

REPO = Path(__file__).resolve().parents[2]


def test_a_short_id_is_the_shortest_end_with_a_letter_that_no_other_id_holds():
    """A suffix of digits only (``1541``, about 15% of ``token_hex(2)``) is in the time stamp of
    every run started at 15:41: it names its run only until then, and `kill 1541` then said
    "matches 2 runs" and offered the other one. Such a run takes its name's last part with the
    suffix (``demo-1541``: a letter is never in a stamp); the whole id there had wrapped the lines
    that name the run's next commands mid-id at 80 columns (CI, one run in seven). A suffix with a
    hex letter is short unless another id holds it (in its name); an id with no letter after its
    stamp is named whole."""
    ids = ["20261201-022057-demo-1541", "20261201-154100-sweep-7e0a", "20261201-000000-lone-9999",
           "20261201-010203-x-ab12", "20261201-010204-ab12-c0de", "20261201-010205-tiny-moe-cpu-8994",
           "20261201-010206-moe-cpu-8994", "20261201-010207-7-1234"]
    short = rundir.short_refs(ids)
    assert short["20261201-022057-demo-1541"] == "demo-1541"
    assert short["20261201-000000-lone-9999"] == "lone-9999"   # `9999` is unique today, not tomorrow
    assert short["20261201-010203-x-ab12"] == "x-ab12"         # another run's name holds `ab12`
    assert short["20261201-154100-sweep-7e0a"] == "7e0a"
    assert short["20261201-010204-ab12-c0de"] == "c0de"
    # `moe-cpu-8994` is in both ids: the longer name goes one part further
    assert short["20261201-010205-tiny-moe-cpu-8994"] == "tiny-moe-cpu-8994"
    assert short["20261201-010206-moe-cpu-8994"] == "20261201-010206-moe-cpu-8994"
    assert short["20261201-010207-7-1234"] == "20261201-010207-7-1234"   # no letter after the stamp
    for rid, ref in short.items():   # what `resolve` does with what was printed: exactly that run
        assert [i for i in ids if ref in i] == [rid]


def test_the_commands_for_a_run_named_by_a_long_ref_are_each_on_a_line_within_80_columns():
    """A run named by its whole id (or with `--runs-dir DIR`) had its two commands on one line of
    120 columns, wrapped by the terminal mid-id: each command then stands whole on its own line."""
    from moeconsole.console.format import watch_words
    assert watch_words("a3f2") == "`moeconsole attach a3f2` watches it, `moeconsole kill a3f2` stops it"
    long = "20261201-073811-tiny-moe-cpu-8994"
    lines = watch_words(long).splitlines()
    assert lines == [f"`moeconsole attach {long}` watches it,", f"`moeconsole kill {long}` stops it"]
    assert all(len(line) <= 80 for line in lines)


def _env(default: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MOECONSOLE_RUNS_DIR": str(default), "COLUMNS": "200"}
    return env


def _cli(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=180)


def _fake_live(base: Path, run_id: str) -> Path:
    path = base / run_id
    path.mkdir(parents=True)
    (path / "state.json").write_text(json.dumps({"v": 1, "run_id": run_id, "status": "running", "name": "other",
                                                 "started_at": time.time()}))
    return path


def test_a_run_outside_the_default_runs_directory_is_named_with_its_directory(tmp_path):
    """`moeconsole --runs-dir /other run --detach` printed `moeconsole kill c282`: typed as printed,
    it looked in the default runs directory, where `c282` named no run, or (a run whose id holds
    the suffix) a different running run, which `kill` would have stopped. The printed commands
    carry `--runs-dir DIR`; typed as printed they stop the run that was started, and the run in
    the default directory goes on."""
    from tests.waiting import until
    default, other = tmp_path / "default", tmp_path / "other"
    default.mkdir()
    env = _env(default)
    train = [sys.executable, "-c", "import time; print('step 1', flush=True); time.sleep(120)"]
    out = _cli(["--runs-dir", str(other), "run", "--detach", "--", *train], env, tmp_path)
    run_id = out.stdout.strip()
    try:
        assert out.returncode == 0 and run_id, out.stderr
        short = rundir.short_refs([run_id])[run_id]
        # a run in the default directory whose id holds the printed short id
        decoy = _fake_live(default, f"20261201-000000-{run_id.rsplit('-', 1)[-1]}-f00d")
        commands = re.findall(r"`moeconsole ([^`]*)`", out.stderr)
        assert commands and all(f"--runs-dir {other}" in c for c in commands), out.stderr
        [kill] = [shlex.split(c) for c in commands if c.startswith("kill ")]
        assert kill[1] == short, kill
        stopped = _cli(kill, env, tmp_path)
        assert stopped.returncode == 0, stopped.stderr
        run = rundir.RunDir(other / run_id)
        until(lambda: run.read_state().get("status") in rundir.TERMINAL, timeout=120, what="the run stopped")
        assert json.loads((decoy / "state.json").read_text())["status"] == "running"
    finally:
        _cli(["kill", run_id, "--runs-dir", str(other)], env, tmp_path)


def test_a_run_in_the_default_runs_directory_is_named_without_one(tmp_path):
    """The run in the directory a bare command uses (given as --runs-dir too): no `--runs-dir`."""
    default = tmp_path / "default"
    env = _env(default)
    for extra in ([], ["--runs-dir", str(default)]):
        out = _cli([*extra, "run", "--detach", "--", sys.executable, "-c",
                    "import time; print('step 1', flush=True); time.sleep(120)"], env, tmp_path)
        run_id = out.stdout.strip()
        try:
            assert out.returncode == 0 and run_id, out.stderr
            assert "`moeconsole kill " in out.stderr and "--runs-dir" not in out.stderr, out.stderr
        finally:
            _cli(["kill", run_id], env, tmp_path)


def test_a_filter_does_not_make_a_hidden_runs_suffix_unique(base, make_run):
    """Runs `…-demo-ab12` and `…-ab12-7e0a` (a run named ab12): the ID column showed the whole
    demo id; after `/ demo` it showed `ab12`, which `attach` found in both runs. Short ids are
    told apart among every run under the directory, whatever the filter: `demo-ab12` (``short_refs``)."""
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.runner.rundir import store
    demo = make_run(base, "20261201-022057-demo-ab12", status="succeeded")
    make_run(base, "20261201-154100-ab12-7e0a", name="ab12", status="succeeded")
    store.rebuild(base)

    async def go():
        app = app_for(base, None)
        async with app.run_test(size=(200, 30)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen)
                                     and len(app.screen.rows) == 2 and app.screen, what="both runs")
            await pilot.press("slash")
            await pilot.press(*"demo", "enter")
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(browser.rows) == 1,
                           what="the filtered list")
            table = browser.query_one("DataTable")
            await pilot.pause()
            return str(table.get_cell(demo.run_id, "id"))
    assert asyncio.run(go()) == "demo-ab12"     # never `ab12`, which the hidden run holds too


def test_the_browser_refresh_writes_the_ticking_ages_in_place_and_keeps_the_scroll(base, make_run):
    """With a run live, its AGE changes every second, and every refresh cleared the table and added
    every row again: a mouse-wheel scroll snapped back to the cursor each period, and with 500
    runs a key took a second. A refresh that changes only cells writes them in place: the
    table's rows are the same objects, the scroll and the cursor stay where the user left them."""
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.runner.rundir import store
    for i in range(60):
        make_run(base, f"20240101-0000{i:02d}-run{i}-a{i:03d}", status="succeeded")
    from tests.console.conftest import T0
    now = [T0 + 40]    # every AGE `40s`
    store.rebuild(base)

    async def go():
        app = app_for(base, None, interval=0.2)
        async with app.run_test(size=(160, 20)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen)
                                     and len(app.screen.rows) == 60 and app.screen, what="the runs")
            browser.clock = lambda: now[0]
            table = browser.query_one("DataTable")
            await until_ui(pilot, lambda: str(table.get_cell(browser.rows[0]["id"], "age")) == "40s",
                           what="the ages at the pinned clock")
            table.move_cursor(row=2)
            await pilot.pause()
            table.scroll_end(animate=False, immediate=True)   # the mouse wheel, the cursor left behind
            await until_ui(pilot, lambda: table.scroll_y == table.max_scroll_y > 0, what="scrolled down")
            ages = [str(table.get_cell(r["id"], "age")) for r in browser.rows]
            rows_before = dict(table.rows)
            now[0] += 10     # the ages tick (`50s`, as wide): every AGE cell changes
            await until_ui(pilot, lambda: [str(table.get_cell(r["id"], "age")) for r in browser.rows] != ages,
                           what="the ages redrawn")
            await pilot.pause()
            return (table.scroll_y, table.max_scroll_y, table.cursor_row,
                    all(table.rows.get(k) is v for k, v in rows_before.items()))
    scroll_y, max_y, cursor, same_rows = asyncio.run(go())
    assert scroll_y == max_y, (scroll_y, max_y)
    assert cursor == 2
    assert same_rows


def test_a_run_whose_directory_is_gone_names_the_reload_key_the_browser_binds(base, make_run):
    """Enter on a run whose directory was removed said "(g reloads the index)": g is the GPU view
    and does nothing here; the reload is F5. The line names the key the browser binds."""
    import shutil
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.runner.rundir import store
    run = make_run(base, "20261201-000000-gone-beef", status="succeeded")
    store.rebuild(base)

    async def go():
        # no refresh in between: the browser drops a run whose directory went at its next look
        # (``store.listing_seen``), and Enter is for a row still listed
        app = app_for(base, None, interval=3600)
        async with app.run_test(size=(120, 30)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows, what="the run")
            shutil.rmtree(run.path)
            await pilot.press("enter")
            note = await until_ui(pilot, lambda: next((n.message for n in app._notifications
                                                       if "directory is gone" in n.message), None),
                                  what="the message")
            return note
    note = asyncio.run(go())
    assert "(F5 reloads the index)" in note, note
