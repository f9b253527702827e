"""The zombie list is current and says what the process is: a real leftover of a live demo run
(this run's id in its environment, outside its tree), started through a long interpreter path,
shown at 120x36: its age keeps counting while the list does not change, and its command shows the
executable's name and its arguments, not a directory cut in the middle."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from moeconsole.console.widgets.blockers import BLOCKER_COLUMNS, BlockerTable
from tests.console.test_console_app import attached
from tests.console.test_console_live import app_for, demo  # noqa: F401  (demo: the live run fixture)
from tests.waiting import until_ui


def _cells(table: BlockerTable, pid: int) -> list[str]:
    """The row's cells by ``BLOCKER_COLUMNS`` (a column the width leaves out: "")."""
    row = [b["pid"] for b in table.blockers].index(pid)
    shown = dict(zip((str(c.key.value) for c in table.ordered_columns), (str(c) for c in table.get_row_at(row))))
    return [shown.get(head, "") for head in BLOCKER_COLUMNS]


def test_a_zombie_shows_a_live_age_and_its_command(demo, tmp_path):
    base, run = demo
    # a long interpreter path: what a venv or conda python looks like
    deep = tmp_path / "opt" / "conda" / "envs" / "training-env-with-a-long-name" / "bin"
    deep.mkdir(parents=True)
    python = deep / "python3"
    python.symlink_to(sys.executable)
    env = {**os.environ, "MOECONSOLE_RUN_ID": run.run_id}  # a leftover of this run, outside its tree
    zombie = subprocess.Popen([str(python), "-c", "import time; time.sleep(300)", "--marker", "leftover"], env=env)
    try:
        async def go() -> tuple[list[str], list[str]]:
            app = app_for(base, run)
            async with app.run_test(size=(120, 36)) as pilot:
                screen = await attached(pilot)
                # the table is mounted at the first zombie
                await until_ui(pilot, lambda: screen.blocker_table is not None
                               and any(b["pid"] == zombie.pid for b in screen.blocker_table.blockers))
                table = screen.blocker_table
                first = _cells(table, zombie.pid)
                # the list does not change; the age still counts up
                await until_ui(pilot, lambda: _cells(table, zombie.pid)[4] != first[4], timeout=30,
                               what="the zombie's age to move")
                # what the pane shows of the row at 120 columns (no horizontal scrolling)
                row = [b["pid"] for b in table.blockers].index(zombie.pid)
                visible = table.render_line(row + 1).text
                return first, _cells(table, zombie.pid) + [visible]
        first, later = asyncio.run(go())
        assert later[0] == first[0] == str(zombie.pid)
        command = later[5]
        assert command.startswith("python3 -c 'import time"), command
        assert "/opt/conda" not in command
        visible = later[6]
        # the executable's name and its first arguments are on screen (the PID's width and a scrollbar move
        # the cut: at -n 4 under load the row ended "python3 -c 'impor")
        assert str(zombie.pid) in visible and "python3 -c '" in visible, visible
    finally:
        zombie.kill()
        zombie.wait(timeout=10)


def test_moeconsole_gpus_labels_a_leftover_as_the_console_does(demo):
    """One labelling: ``moeconsole gpus`` (no run named) judges a process marked with a live run
    by that run's tree, as the run's console does: a leftover outside the tree is an ``orphan``
    in both, and the run's own training processes are no leftovers in either."""
    import json
    from tests.console.test_console_live import REPO
    base, run = demo
    env = {**os.environ, "MOECONSOLE_RUN_ID": run.run_id, "MOECONSOLE_RUN_DIR": str(run.path)}
    zombie = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], env=env)
    cli_env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        def labels_of(argv: list[str]) -> dict[int, list[str]]:
            out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *argv], cwd=REPO, env=cli_env,
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            return {b["pid"]: b["labels"] for b in json.loads(out.stdout.splitlines()[-1])["blockers"] if "pid" in b}

        def both() -> tuple[dict, dict] | None:
            console = labels_of(["--json", "--once", run.run_id, "--runs-dir", str(base)])
            survey = labels_of(["gpus", "--json"])
            return (console, survey) if zombie.pid in console and zombie.pid in survey else None

        from tests.waiting import until
        console, survey = until(both, timeout=60, what="the leftover in both listings")
        assert survey[zombie.pid] == console[zombie.pid] == ["orphan"], (survey, console)
        own = {p["pid"] for p in run.read_state().get("pids") or []}
        assert not [pid for pid in own if "orphan" in survey.get(pid, [])], survey
    finally:
        zombie.kill()
        zombie.wait(timeout=10)


def test_a_listed_command_shows_as_it_is_never_as_markup(base, make_run):
    """A process's command line is data: brackets and colons in it (``[rank0]``, ``:fire:``,
    ``[bold]x[/bold]``) show as typed in the zombie list, never read as Rich markup or emoji."""
    from tests.console.test_console_app import ZOMBIE, judged, live_run, telemetry
    from tests.console.test_console_app import app_for as app_with
    run = live_run(base, make_run)
    cmd = ["python", "serve.py", "[rank0]", ":fire:", "[bold]x[/bold]"]
    zombie = judged({**ZOMBIE, "cmdline": cmd})

    async def go() -> tuple[list[str], str, str]:
        app = app_with(base, run, telemetry=telemetry([zombie]))
        async with app.run_test(size=(160, 40)) as pilot:
            screen = await attached(pilot)
            await until_ui(pilot, lambda: screen.blocker_table is not None and screen.blocker_table.row_count == 1)
            table = screen.query_one(BlockerTable)
            await pilot.pause()
            return _cells(table, ZOMBIE["pid"]), table.render_line(0).text, table.render_line(1).text
    cells, header, visible = asyncio.run(go())
    assert cells[5] == "python serve.py [rank0] :fire: [bold]x[/bold]", cells
    assert "python serve.py [rank0] :fire: [b" in visible, visible   # the pane's width cuts the rest
    assert "COMMAND" in header and "GPU MiB" in header, header


def test_at_80_columns_the_zombie_table_shows_whole_columns(base, make_run):
    """The side pane at 80 columns holds about 38 cells: the table keeps the columns that fit
    whole (PID, why, the command first) and leaves the others out, never a header or a value
    cut at the pane's edge (``AG``, ``1m0``); wider, every column is there."""
    import re
    from tests.console.test_console_app import ZOMBIE, judged, live_run, telemetry
    from tests.console.test_console_app import app_for as app_with
    run = live_run(base, make_run)
    zombie = judged({**ZOMBIE, "user": "someuser", "labels": ["orphan"], "age_s": 60})

    async def go(size) -> tuple[str, str, int]:
        app = app_with(base, run, telemetry=telemetry([zombie]))
        async with app.run_test(size=size) as pilot:
            screen = await attached(pilot)
            await until_ui(pilot, lambda: screen.blocker_table is not None and screen.blocker_table.row_count == 1)
            table = screen.query_one(BlockerTable)
            await pilot.pause()
            return table.render_line(0).text, table.render_line(1).text, table.size.width
    header, row, width = asyncio.run(go((80, 24)))
    heads = re.split(r"\s{2,}", header.strip())
    assert heads and all(h in BLOCKER_COLUMNS for h in heads), (header, width)
    assert heads[:2] == ["PID", "WHY"] and "COMMAND" in heads, header
    assert len(header.rstrip()) <= width and len(row.rstrip()) <= width
    values = {"PID": str(ZOMBIE["pid"]), "WHY": "orphan", "GPU MiB": "12,000", "USER": "someuser", "AGE": "1m00s"}
    for head in heads:   # every value under a shown header is whole
        if head in values:
            assert values[head] in row.split(), (head, row)
    header, row, width = asyncio.run(go((160, 40)))
    assert re.split(r"\s{2,}", header.strip()) == list(BLOCKER_COLUMNS), header
    assert "someuser" in row.split() and "12,000" in row.split(), row


def test_a_command_with_a_newline_keeps_its_row_in_gpus_and_the_zombie_list(base, make_run, tmp_path):
    """Anybody's GPU job may have a newline or ESC in its arguments (``python -c`` with a script, a
    JSON config given inline). `moeconsole gpus` printed it as it was: its row split in two, the
    second line looking like a row of its own, and ESC sequences went to the terminal. Every list
    of processes shows it on one line with those characters escaped; ``--json`` keeps it exact."""
    import json
    from tests.console.test_console_app import ZOMBIE, judged, live_run, telemetry
    from tests.console.test_console_app import app_for as app_with
    from tests.console.test_console_live import REPO
    from tests.fakes.nvml import FakeProc, build_fake_nvml, fake_env, write_scenario
    script = "import time\ntime.sleep(600)  # \x1b[31mred\x1b[0m\n#  1234  root  fake row"
    job = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        scenario = write_scenario(tmp_path / "gpus", gpus=1, processes=[FakeProc(gpu=0, pid=job.pid, used_mib=1000)])
        env = fake_env(build_fake_nvml(), scenario)
        env["PYTHONPATH"] = str(REPO)
        for k in ("MOECONSOLE_RUN_ID", "MOECONSOLE_RUN_DIR"):
            env.pop(k, None)

        def gpus(*argv: str) -> str:
            out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "gpus", *argv], cwd=REPO, env=env,
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            return out.stdout
        text = gpus()
        rows = [line for line in text.splitlines() if f" {job.pid} " in line]
        assert len(rows) == 1 and "\\ntime.sleep(600)" in rows[0] and "\\x1b[31m" in rows[0], text
        assert "\x1b" not in text and not any("fake row" in line and line not in rows for line in text.splitlines()), text
        listed = [b for b in json.loads(gpus("--json").splitlines()[-1])["blockers"] if b.get("pid") == job.pid]
        assert listed and script in listed[0]["cmdline"], listed   # the data, exact (newline and ESC kept)
    finally:
        job.kill()
        job.wait(60)
    run = live_run(base, make_run)
    zombie = judged({**ZOMBIE, "cmdline": ["python", "-c", "a\nb\x1b[2J"]})

    async def go() -> list[str]:
        app = app_with(base, run, telemetry=telemetry([zombie]))
        async with app.run_test(size=(160, 40)) as pilot:
            screen = await attached(pilot)
            await until_ui(pilot, lambda: screen.blocker_table is not None and screen.blocker_table.row_count == 1)
            await pilot.pause()
            return _cells(screen.query_one(BlockerTable), ZOMBIE["pid"])
    assert asyncio.run(go())[5] == "python -c a\\nb\\x1b[2J"
