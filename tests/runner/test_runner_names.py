"""``run --name alpha``: the given name is the run's name everywhere a user reads it (the status
line, ``runs ls`` also at 80 columns, ``runs show``, ``runs diff``, the receipt, ``--json``, the
compare legend), not only inside the run id; ``demo --name`` works too."""
from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.compare import CompareScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import rundir
from tests.runner.conftest import REPO
from tests.waiting import until_ui


def _on_a_terminal(harness, *args: str, cols: int = 80) -> str:
    """The CLI on a pseudo-terminal ``cols`` wide (what a user at an 80-column terminal sees)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": str(cols), "LINES": "24"}
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(harness.runs_dir)],
                            stdout=follower, stderr=subprocess.PIPE, env=env, cwd=REPO)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(leader)
    return out.decode(errors="replace")


def test_the_given_name_is_the_runs_name_everywhere(harness, runs_dir):
    recipe = harness.recipe()  # the demo recipe, named "t"
    alpha = harness.start(recipe, "--name", "alpha")
    other = harness.start(recipe)
    for run in (alpha, other):
        run.wait_status(*rundir.TERMINAL, timeout=120)
    assert alpha.state()["name"] == "alpha" and other.state()["name"] == "t"

    listed = harness.cli("runs", "ls", check=True).stdout.splitlines()
    row = next(l for l in listed if alpha.id in l)
    assert row.split()[1] == "alpha", listed
    narrow = next(l for l in _on_a_terminal(harness, "runs", "ls").splitlines() if "alpha" in l or alpha.id[-4:] in l)
    assert "alpha" in narrow, narrow
    assert harness.cli("runs", "show", alpha.id, check=True).stdout.startswith("alpha ")
    diff = harness.cli("runs", "diff", alpha.id, other.id, "--json", check=True).stdout
    assert json.loads(diff)["a"]["label"] == "alpha"
    harness.cli("runs", "receipt", alpha.id, "--out", str(harness.tmp / "rc"), check=True)
    assert (harness.tmp / "rc" / "receipt.md").read_text().startswith("# Run receipt: alpha")
    snap = json.loads(harness.cli("--json", "--once", alpha.id, check=True).stdout.splitlines()[-1])
    assert snap["run"]["name"] == "alpha"

    async def screens() -> tuple[str, str]:
        app = MoeConsole(runs_dir, rundir.resolve(runs_dir, alpha.id), gpu=False, interval=0.25)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            status = app.screen.query_one(StatusLine).plain_lines[0]
            app.push_screen(CompareScreen([alpha.id, other.id], base=runs_dir))
            await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and len(app.screen.sides) == 2,
                           what="the comparison")
            await pilot.pause()
            return status, str(app.screen.query_one("#compare-title").render())

    status, legend = asyncio.run(screens())
    assert status.split()[0] == "alpha", status
    assert "alpha" in legend, legend


def test_demo_takes_a_name(harness):
    proc = harness.cli("demo", "--name", "beta", "--detach", "--set", "args.max_steps=3", "--set", "args.step_delay=0")
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.strip().splitlines()[-1]
    try:
        assert "-beta-" in run_id
        assert harness.cli("runs", "show", run_id, check=True).stdout.startswith("beta ")
    finally:
        harness.cli("kill", run_id)
