"""Review R37 of newcomer round 3: the run browser's stat-gated refresh. A runner writes the index
last (its status event, then state.json, then ``index_run``): a commit landing while the browser
read the index whole had been in the look the browser kept but not in its rows, and a run just
started, or a failed run restarted in its own directory, stayed out of the list (or FAILED) until
F5. The runner's commit is made here from another connection while the browser's read is under
way, as the reviewer's race_pilot.py did."""
from __future__ import annotations

import asyncio
import os

from tests.console.conftest import write_run


def _commit_during_next_read(monkeypatch, base, run):
    """The runner's ``index_run`` for ``run``, committed by another connection in the middle of
    the browser's next whole read (after its SELECT, before it returns)."""
    from moeconsole.runner.rundir import store
    names = store.display_names
    pending = [run]

    def display_names(rows, conn=None):
        while pending:
            r = pending.pop()
            other = store.connect(base)
            try:
                store.upsert(other, store.row_from_state(r, r.read_state(), {}))
            finally:
                other.close()
        return names(rows, conn)
    monkeypatch.setattr(store, "display_names", display_names)
    return pending


def _browse(base, until_shown):
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console.screens.browser import BrowserScreen

    async def go(start):
        app = app_for(base, None, interval=0.2)
        async with app.run_test(size=(160, 30)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows
                                     and app.screen, what="the list")
            pending = start()
            await until_ui(pilot, lambda: not pending, what="the runner's index write")
            return await until_ui(pilot, lambda: until_shown(browser.rows), timeout=30,
                                  what="the run as the index has it")
    return go


def test_a_run_started_while_the_browser_reads_the_index_is_listed_without_f5(base, monkeypatch):
    from moeconsole.runner.rundir import store
    for i in range(3):
        write_run(base, f"20240101-00000{i}-old{i}-b00{i}", name=f"old{i}", status="succeeded")
    store.rebuild(base)
    new_id = "20240105-000000-new-n001"

    def start():
        new = write_run(base, new_id, name="new", status="running", runner_pid=os.getpid())
        return _commit_during_next_read(monkeypatch, base, new)
    rows = asyncio.run(_browse(base, lambda rows: new_id in [r["id"] for r in rows] and rows)(start))
    assert len(rows) == 4


def test_a_failed_run_restarted_in_its_directory_while_the_browser_reads_shows_running(base, monkeypatch):
    from moeconsole.runner.rundir import store
    run_id = "20240101-000000-again-b001"
    write_run(base, run_id, name="again", status="failed")
    write_run(base, "20240101-000001-other-b002", name="other", status="succeeded")
    store.rebuild(base)

    def start():
        again = write_run(base, run_id, name="again", status="running", runner_pid=os.getpid())
        return _commit_during_next_read(monkeypatch, base, again)
    row = asyncio.run(_browse(base, lambda rows: next((r for r in rows if r["id"] == run_id
                                                      and r["status"] == "running"), None))(start))
    assert row["status"] == "running"


def test_another_tools_word_to_start_or_list_is_offered_run_and_runs_ls_never_restart_or_lint(tmp_path):
    """`moeconsole start` was told "did you mean `moeconsole restart`?" (2 edits: `re` dropped), a
    command that ends the run's processes; `list` was told `lint`, and `runs list` nothing. The
    command for another tool's word is offered first; a slip of a letter is still a typo."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo), "MOECONSOLE_RUNS_DIR": str(tmp_path)}

    def cli(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True, text=True,
                             cwd=tmp_path, env=env, timeout=120)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        return out.stderr
    for word, meant in (("start", "run"), ("launch", "run"), ("list", "runs ls"),
                        ("estart", "restart"), ("restrat", "restart")):   # a slip: the typo's command
        err = cli(word)
        assert f"did you mean `moeconsole {meant}`?" in err, (word, err)
    for word in ("start", "list"):
        assert "`moeconsole restart`" not in cli(word) and "`moeconsole lint`" not in cli(word)
    assert "did you mean `moeconsole runs ls`?" in cli("runs", "list")
    assert "did you mean" not in cli("runs", "build")   # `build` is not `rebuild` with a slip
    assert "did you mean `moeconsole runs rebuild`?" in cli("runs", "rebulid")
