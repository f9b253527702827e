"""One verdict per fact, in every state a run can be in: the run screen's status line (a real app
driven by Pilot), the run browser's row (the same app on the runs directory), `runs ls`, `runs
show` and `moeconsole --json --once` (real processes on the same run directory) say the same
status word, the screen shows an ETA exactly when ``--json`` has one, and the next step (the
command its banner gives) is ``--json``'s ``run.next_command`` and `runs show`'s ``next`` line.

Each state is a run directory as the runner leaves it in that state (``write_run``, then the
state.json fields the runner writes there: ``runner.core.state``). Disagreements this found:
`runs ls` and the browser said `STALE RUNNING` where the screen said `RUNNING? (runner gone)`,
`RUNNING` for a runner that lives but no longer moves its state (now everywhere: runner alive,
state.json not written, and no `supervise` offered: it is refused while that runner lives),
`COOLDOWN` for the checks before the first launch (`PRE-FLIGHT`) and for a cooldown whose floor
passed (`COOLDOWN waiting`), `PENDING` for a queued Slurm job (`PENDING (Priority)`); and
``--json`` gave an ETA for a paused, stopping, cooling-down or stale run whose screen shows none;
the banner's next command (``supervise``, ``restart``, ``restart --force``) was in neither `runs
show` nor ``--json``."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moeconsole.runner.core.lifecycle import PREFLIGHT
from moeconsole.runner.rundir import jsonio, rundir
from tests.waiting import until_ui

REPO = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=30)
    return p.pid


def _cooldown(reason: str, left_s: float, waiting: list[str]) -> dict:
    now = time.time()
    return {"until": now + left_s, "ceiling_at": now + 600, "waiting_on": waiting, "reason": reason}


# state -> (write_run arguments, state.json fields the runner writes in that state)
STATES: dict[str, tuple[dict, dict]] = {
    "running": ({"status": "running"}, {}),
    "paused": ({"status": "paused", "crash": {"class": "divergence"}},
               {"pause_reason": "paused: divergence: non-finite loss or grad norm seen by the monitors"}),
    "stopping": ({"status": "stopping"}, {}),
    "preflight": ({"status": "cooldown", "steps": 0, "restart_at": None, "checkpoints": ()},
                  {"cooldown": _cooldown(PREFLIGHT, 600, ["port 29500 busy"])}),
    "cooldown_waiting": ({"status": "cooldown", "crash": {"class": "cuda_oom"}},
                         {"cooldown": _cooldown("crash", -5, ["gpu memory on GPU 3"])}),
    "runner_gone": ({"status": "running", "runner_pid": "dead"}, {}),
    "runner_frozen": ({"status": "running"}, {"updated_at": time.time() - 600, "stale_after_s": 30.0}),
    "slurm_pending": ({"status": "running", "steps": 0, "restart_at": None, "checkpoints": ()},
                      {"engine": "slurm", "job": {"job_id": "7", "state": "PENDING", "reason": "Priority",
                                                  "ended_at": None, "nodes": []}}),
    "killed": ({"status": "killed"}, {}),
    "failed": ({"status": "failed", "crash": {"class": "nccl_error"}}, {}),
    # failed on its command's own refusal: a restart repeats it, so no command is named (newcomer round 12)
    "refused": ({"status": "failed", "crash": {"class": "config_error"}}, {}),
    "succeeded": ({"status": "succeeded", "steps": 100, "restart_at": None, "checkpoints": ((100, True),)}, {}),
    "unsaved": ({"status": "unsaved", "steps": 100, "restart_at": None, "checkpoints": ((100, False),)},
                {"pause_reason": "training finished (exit 0) but the newest checkpoint checkpoint-100 is "
                                 "empty_stub; no checkpoint verified ok"}),
}


def _make(base: Path, make_run, state_name: str) -> rundir.RunDir:
    kw, fields = STATES[state_name]
    kw = dict(kw)
    pid = kw.pop("runner_pid", None)
    # a live run's runner: this test's process (alive on this host), else one that has exited
    kw["runner_pid"] = _dead_pid() if pid == "dead" else (os.getpid() if kw["status"] in rundir.LIVE else None)
    run = make_run(base, f"20240101-000000-{state_name.replace('_', '-')}-0001", name=state_name, **kw)
    state = run.read_state()
    state.update(fields)
    jsonio.atomic_write_json(run.state, state)
    return run


def _cli(base: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(base)],
                          cwd=REPO, capture_output=True, text=True, timeout=90,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _screens(base: Path, run: rundir.RunDir) -> tuple[list[str], str, str, set[str]]:
    """The run screen's status lines and its banner (what to do next, "" when not shown), and the
    browser row's status cell (the mark before it left out)."""
    from textual.widgets import DataTable, Static

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.status import StatusLine

    async def go() -> tuple[list[str], str, str, set[str]]:
        app = MoeConsole(base, run, interval=3600, gpu=False)
        async with app.run_test(size=(200, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot
                                    is not None and app.screen, what="the run screen's first snapshot")
            status = await until_ui(pilot, lambda: screen.query_one(StatusLine).plain_lines, what="the status drawn")
            banner = screen.query_one("#runner-gone", Static)
            next_words = str(banner.render()) if banner.display else ""
            footer = {k for k, b in screen.active_bindings.items() if b.binding.show}
        browser_app = MoeConsole(base, None, gpu=False)
        async with browser_app.run_test(size=(200, 40)) as pilot:
            await until_ui(pilot, lambda: isinstance(browser_app.screen, BrowserScreen), what="the browser")
            table = browser_app.screen.query_one(DataTable)
            await until_ui(pilot, lambda: table.row_count == 1, what="the run's row")
            cell = table.get_cell(run.run_id, "status")
        return list(status), next_words, str(getattr(cell, "plain", cell))[1:], footer
    return asyncio.run(go())


@pytest.mark.parametrize("state_name", list(STATES))
def test_the_screen_the_browser_runs_ls_runs_show_and_json_say_the_same(base, make_run, state_name):
    run = _make(base, make_run, state_name)
    d = json.loads(_cli(base, "--json", "--once", "--no-gpu", run.run_id))["run"]
    word = d["status_word"]
    status, banner, browser_cell, footer = _screens(base, run)

    # the status line's badge: the word, alone between its separators (after "CRIT · " when a
    # critical alert takes over the headline)
    assert f" {word}  " in status[0] and (f"  {word}  " in status[0] or f"· {word}  " in status[0]), (word, status)
    assert browser_cell == word, (state_name, browser_cell, word)
    ls = _cli(base, "runs", "ls").splitlines()
    row = next(line for line in ls if run.run_id in line)
    assert row.startswith(word + "  "), (state_name, ls[0], row)
    show = _cli(base, "runs", "show", run.run_id).splitlines()
    assert show[0] == f"{state_name}  {word}", (state_name, show[0])

    # an ETA: the screen shows one exactly when --json has one (only while the run trains)
    assert ("ETA " in status[0]) == (d["eta_s"] is not None), (state_name, d["eta_s"], status[0])
    assert d["eta_s"] is None or state_name == "running", (state_name, d["eta_s"])
    # the next step: the command the screen's banner gives is --json's and `runs show`'s
    command = d.get("next_command")
    # (a runner that lives but no longer moves its state is given none: `supervise` is refused while
    # it lives; the banner points at its runner.log instead)
    assert bool(command) == (state_name in ("runner_gone", "failed", "unsaved")), (state_name, d)
    assert ("u" in footer) == (state_name == "runner_gone"), (state_name, footer)   # u starts a runner
    if command:
        # the same command (``snapshot.next_command``); the banner and `runs show` name the run as the
        # screen's r does (``rundir.command_ref``: short id, --runs-dir; `runs show` had said the whole
        # id alone, which a bare command looks for elsewhere: newcomer round 11), --json by its whole id
        from moeconsole.runner.rundir.rundir import command_ref
        from moeconsole.runner.rundir.snapshot import next_command
        typed = next_command(d, command_ref(base, run.run_id)[1])
        assert typed and banner.endswith(typed) and f"  next      {typed}" in show, (state_name, banner, show[:3])
        assert command == next_command(d), (command, d)
    elif state_name == "refused":
        from moeconsole.runner.rundir.snapshot import REFUSED_NEXT
        assert banner == f"next: the fix (d), then {REFUSED_NEXT}", banner
        assert any(line.startswith("  next ") and line.endswith(REFUSED_NEXT) for line in show), show[:3]
    elif state_name == "runner_frozen":
        assert word == "RUNNING? (runner alive, state.json not written: see runner.log)", word
        assert banner.startswith("STATE NOT WRITTEN") and "runner.log" in banner, banner
        assert "u" not in footer, footer        # no "start a runner": one lives (supervise would refuse)
        assert not any(line.startswith("  next ") for line in show), show[:3]
    else:
        assert banner == "" and not any(line.startswith("  next ") for line in show), (state_name, banner)
    # the stale verdict is the same in the row `runs ls --json` gives
    rows = json.loads(_cli(base, "runs", "ls", "--json"))["runs"]
    listed = next(r for r in rows if r["id"] == run.run_id)
    assert listed["stale"] == d["stale"], state_name
    # ... and so are the open alert causes, the step and the last crash's class
    crash = d["last_crash"]["class"] if d["last_crash"] else None
    assert (listed["open_alerts"], listed["last_step"], listed["last_crash_class"]) == \
        (d["open_alerts"], d["step"], crash), (state_name, listed, d)


def test_a_status_change_and_a_crash_reach_the_attached_screen_as_json_says_them(tmp_path, runs_dir):
    """A real runner's run, watched by a console at its default refresh (1 Hz, no key pressed):
    the crash and the cooldown it starts reach the status line as the runner writes them, in
    the words ``--json`` has at that moment (state word, crash class, what the cooldown waits on,
    no ETA), and so does the user's kill from another terminal."""
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.status import StatusLine
    from tests.runner.conftest import Harness
    h = Harness(tmp_path, runs_dir)
    run = h.start(h.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                    "{run_dir}/output", "--max_steps", "400", "--save_steps", "50",
                                    "--step_delay", "0.2", "--fault", "oom@3"],
                           cooldown={"floor_s": 600.0, "ceiling_s": 900.0},
                           restart={"backoff_initial_s": 600.0, "backoff_max_s": 600.0}))
    rd = rundir.RunDir(run.path)

    async def go() -> tuple[list[str], dict, list[str]]:
        app = MoeConsole(runs_dir, rd, gpu=False)   # the default refresh
        async with app.run_test(size=(250, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen, what="the run screen")
            status = screen.query_one(StatusLine)
            await until_ui(pilot, lambda: "COOLDOWN" in (status.plain_lines or [""])[0], timeout=120,
                           what="the cooldown on the status line")
            await until_ui(pilot, lambda: "cuda_oom" in " ".join(status.plain_lines), timeout=60,
                           what="the crash class on the status line")
            cooling = list(status.plain_lines)
            d = json.loads(_cli(runs_dir, "--json", "--once", "--no-gpu", run.id))["run"]
            d["show"] = _cli(runs_dir, "runs", "show", run.id).splitlines()
            assert h.cli("kill", run.id).returncode == 0
            await until_ui(pilot, lambda: " KILLED " in (status.plain_lines or [""])[0], timeout=120,
                           what="KILLED on the status line")
            return cooling, d, list(status.plain_lines)

    cooling, d, killed = asyncio.run(go())
    assert d["status"] == "cooldown" and d["status_word"].startswith("COOLDOWN ") and d["eta_s"] is None, d
    assert d["last_crash"]["class"] == "cuda_oom"
    # what the cooldown waits on: the status line's words are `runs show`'s (the count of seconds
    # aside; a line fitted to the screen drops little words such as "the" first)
    waits = d["show"][1].strip()
    words = [w for w in waits.split(" (at least")[0].split() if len(w) > 3]
    shown = cooling[1][cooling[1].index("waiting on:"):]
    assert waits.startswith("waiting on: ") and [w for w in shown.split() if w in words] == words, (waits, cooling)
    assert "ETA" not in cooling[0], cooling
    assert json.loads(_cli(runs_dir, "--json", "--once", "--no-gpu", run.id))["run"]["status_word"] == "KILLED"
    assert "ETA" not in killed[0], killed


def test_a_foreign_log_says_the_same_on_the_screen_in_runs_show_and_in_json(tmp_path, base):
    """A training log not made by moeconsole: `attach PATH` shows it and `runs show PATH`
    summarises it; ``--json PATH`` refused it ("not a run directory"), so a script could not read
    what the screen shows. Now it prints the same snapshot, once (nothing supervises the log)."""
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.status import StatusLine
    log = tmp_path / "train.log"
    log.write_text("".join(f"{{'loss': '{3.0 - i / 100:.3f}', 'grad_norm': '1.5', 'global_step/max_steps': "
                           f"'{i}/40', 'train_speed(s/it)': '0.5'}}\n" for i in range(1, 31)))
    d = json.loads(_cli(base, "--json", "--once", str(log)))
    show = _cli(base, "runs", "show", str(log)).splitlines()

    async def go() -> list[str]:
        app = MoeConsole(base, None, gpu=False, open_path=log)
        async with app.run_test(size=(200, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot
                                    is not None and app.screen, what="the log's run screen")
            status = screen.query_one(StatusLine)
            return await until_ui(pilot, lambda: status.plain_lines and "reading history" not in status.plain_lines[0]
                                  and list(status.plain_lines), what="the log read")
    lines = asyncio.run(go())
    run = d["run"]
    assert d["imported_from"] == run["dir"] == str(log.resolve())
    assert (run["status_word"], run["step"], run["max_steps"], run["eta_s"], run["next_command"]) == \
        ("IMPORTED", 30, 40, None, None), run
    assert show[0] == f"{run['name']}  {run['status_word']}" and "  steps     30/40" in show
    assert lines[0].startswith(f"{run['name']}   {run['status_word']}   step 30/40 (75.0%)"), lines
    assert "ETA" not in lines[0] and lines[1].startswith("imported: ")


def test_a_run_resumed_from_an_earlier_checkpoint_lists_the_step_its_screen_shows(base, make_run):
    """A live run trained to step 60, crashed, and resumed from checkpoint-40: its screen and
    ``--json`` show step 45 of the new attempt, but `runs ls` (and the browser) kept the highest
    step it had ever listed (60) until the new attempt passed it, since the index took the largest
    of its old row, state.json's step and the newest record. The step is state.json's, as the
    snapshot has it."""
    run = make_run(base, "20240101-000000-resumed-0001", name="resumed", status="running", steps=60,
                   runner_pid=os.getpid(), checkpoints=((20, True), (40, True)))
    first = _cli(base, "runs", "ls").splitlines()
    assert " 60/100 " in next(line for line in first if run.run_id in line)   # listed (and indexed) at 60
    for step in range(41, 46):   # attempt 3, resumed from checkpoint-40
        jsonio.append_jsonl(run.metrics, {"v": 1, "t": time.time(), "attempt": 3, "step": step, "max_steps": 100,
                                          "loss": 0.6, "step_time_s": 0.5})
    state = run.read_state()
    jsonio.atomic_write_json(run.state, {**state, "step": 45, "attempt": 3, "restarts": 2})
    d = json.loads(_cli(base, "--json", "--once", "--no-gpu", run.run_id))["run"]
    row = next(line for line in _cli(base, "runs", "ls").splitlines() if run.run_id in line)
    show = _cli(base, "runs", "show", run.run_id).splitlines()
    assert d["step"] == 45
    assert " 45/100 " in row, row
    assert "  steps     45/100" in show, show


def test_runs_diff_says_each_runs_status_as_its_screen_does(base, make_run):
    """`runs diff` printed the raw status (`RUNNING` for a run whose runner is gone, where its
    screen and ``--json`` say `RUNNING? (runner gone)`); its JSON keeps the raw ``status`` and
    carries the word as ``status_word``."""
    gone = _make(base, make_run, "runner_gone")
    killed = _make(base, make_run, "killed")
    words = [json.loads(_cli(base, "--json", "--once", "--no-gpu", r.run_id))["run"]["status_word"]
             for r in (gone, killed)]
    assert words == ["RUNNING? (runner gone)", "KILLED"]
    row = next(line for line in _cli(base, "runs", "diff", gone.run_id, killed.run_id).splitlines()
               if line.startswith("status "))
    assert row.split(None, 1)[1].split("  ")[0] == words[0] and f"  {words[1]}" in row, row
    d = json.loads(_cli(base, "runs", "diff", gone.run_id, killed.run_id, "--json"))
    assert (d["a"]["status"], d["a"]["status_word"], d["b"]["status_word"]) == ("running", *words)


def test_a_runs_own_log_is_the_run_in_runs_show_as_in_json(base, make_run):
    """`runs show RUN/train.log` imported the run's own log as a log not made by moeconsole (a
    scratch run, "IMPORTED"), while `--json RUN/train.log` and `attach RUN/train.log` showed the
    run: one rule says what is not a moeconsole run (attach.foreign_path), every command asks it."""
    run = make_run(base, status="succeeded")
    log = str(run.path / "train.log")
    d = json.loads(_cli(base, "--json", "--once", "--no-gpu", log))
    show = _cli(base, "runs", "show", log)
    assert show == _cli(base, "runs", "show", run.run_id)
    assert show.splitlines()[0] == f"{d['run']['name']}  {d['run']['status_word']}" and "imported" not in show
    assert json.loads(_cli(base, "runs", "show", "--json", log))["id"] == run.run_id


LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


@pytest.mark.skipif(not os.path.exists(LIBFAKETIME), reason="libfaketime not installed (apt-get install faketime)")
def test_a_run_started_under_a_clock_hours_fast_shows_its_true_start_time(base, make_run):
    """The run's start stamp written on a wall clock 3 h fast (libfaketime: ``rundir.start_stamp``
    in a process that sees +3 h; the boot clock, /proc/uptime, is the real one), the clock since
    corrected. Its age and elapsed time were right (the boot clock), but the STARTED column of
    `runs ls` and the browser, `runs show`'s started and the receipt's printed state.json's wall
    time, 3 h ahead. The start shown is derived as the age is (``rundir.start_shown``)."""
    from textual.widgets import DataTable

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.format import date
    from moeconsole.console.screens.browser import BrowserScreen
    run = make_run(base, status="running", runner_pid=os.getpid())
    stamp = subprocess.run([sys.executable, "-c", "import json; from moeconsole.runner.rundir import rundir; "
                            "print(json.dumps(rundir.start_stamp()))"], cwd=REPO, capture_output=True, text=True,
                           timeout=60, check=True,
                           env={**os.environ, "PYTHONPATH": str(REPO), "LD_PRELOAD": LIBFAKETIME, "FAKETIME": "+3h"})
    fast = json.loads(stamp.stdout)
    assert fast["started_at"] > time.time() + 3600, fast      # the clock really was 3 h fast
    # started half an hour ago (both stamps moved back alike), so a start shown as "now" is wrong too
    fast["started_at"] -= 1800
    fast["started_uptime_s"] -= 1800
    state = jsonio.read_json(run.state)
    jsonio.atomic_write_json(run.state, {**state, **fast})
    right = {date(time.time() - 1805), date(time.time() - 1800), date(time.time() - 1740)}   # a minute's turn

    listed = _cli(base, "runs", "ls").splitlines()
    at = listed[0].index("STARTED")
    assert listed[1][at:at + 16] in right, listed
    show = _cli(base, "runs", "show", run.run_id)
    assert next(line for line in show.splitlines() if line.startswith("  started"))[12:28] in right, show
    receipt = _cli(base, "runs", "receipt", run.run_id)
    assert next(line for line in receipt.splitlines() if line.startswith("- started "))[10:26] in right, receipt

    async def go() -> str:
        app = MoeConsole(base, None, gpu=False)
        async with app.run_test(size=(250, 40)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen), what="the browser")
            table = app.screen.query_one(DataTable)
            await until_ui(pilot, lambda: table.row_count == 1, what="the run's row")
            cell = table.get_cell(run.run_id, "started_at")
        return str(getattr(cell, "plain", cell)).strip()
    assert asyncio.run(go()) in right
