"""The sixth newcomer round (README and docs/ only, their own trainer, tmux at 80x24 over SSH as a
non-root user): what each screen and command said of a log format of their own."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.runner.conftest import Run
from tests.runner.test_runner_bare_command import cli
from tests.waiting import until

# a trainer printing its metrics as bare numbers: `#00012 2.1034 1.0e-04` (step, loss, lr)
ODD = """\
import math, os, pathlib, time
for i in range(1, 31):
    print(f"#{i:05d} {2.5 * math.exp(-i / 50):.4f} {1e-4:.1e}", flush=True)
while os.environ.get("HOLD") and not pathlib.Path("go").exists():   # running until the test has looked
    time.sleep(0.05)
"""
FORMAT = r"#(?P<step>\d+) (?P<loss>\S+) (?P<lr>\S+)"


def _run(tmp_path: Path, runs: Path, *sets: str, hold: bool = False) -> Run:
    (tmp_path / "odd.py").write_text(ODD)
    held = ("--set", "env.HOLD=1") if hold else ()
    proc = cli(runs, tmp_path, "run", "--detach", "--set", "restart.max_restarts=0", *held, *sets,
               "--", sys.executable, "odd.py")
    assert proc.returncode == 0, proc.stderr
    run = Run(runs / proc.stdout.strip().splitlines()[0])
    if hold:   # the hint is said while the run runs (review R60): it stays running until `go`
        until(lambda: (run.path / "train.log").exists()
              and (run.path / "train.log").read_text().count("\n#") >= 29, 120, "30 lines in the log")
        return run
    assert run.wait_status("succeeded", "failed", timeout=120)["status"] == "succeeded"
    return run


def _screen(runs: Path, run: Run) -> str:
    from tests.console.test_console_app import _screen_text, app_for, attached
    from moeconsole.runner.rundir import rundir

    async def go() -> str:
        app = app_for(runs, rundir.RunDir(run.path))
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.pause()
            return _screen_text(app)
    return asyncio.run(go())


def test_a_log_of_its_own_format_says_no_step_was_read_and_where_to_declare_it(tmp_path):
    """The run screen showed `step —` and "no data yet" beside 40 lines of `#00045 1.0164 1.0e-04`
    for minutes, and `parse` said "no metric records found" and no more: the lines were
    "understood, carrying nothing". Both now name the recipe key (and flag) that reads them."""
    runs = tmp_path / "runs"
    run = _run(tmp_path, runs, hold=True)
    try:
        assert run.metrics() == []
        text = _screen(runs, run)
        assert "no step read from 30 alike log lines: set log_format (docs/parsing.md)" in text, text
    finally:
        (tmp_path / "go").write_text("x")
    assert run.wait_status("succeeded", "failed", timeout=120)["status"] == "succeeded"
    parsed = cli(runs, tmp_path, "parse", str(run.path / "train.log"))
    assert "no metric records found; if its lines hold metrics, declare their format: --log-format" in parsed.stdout, \
        parsed.stdout


def test_set_log_format_starting_with_a_hash_is_the_format_not_a_yaml_comment(tmp_path):
    """`--set 'log_format=#(?P<step>...'`, as docs/parsing.md has one write it, was read as YAML,
    where `#` begins a comment: the value was null, the recipe's default (no format), and the
    run read no step, without a word. A command-line value holds no comment."""
    runs = tmp_path / "runs"
    run = _run(tmp_path, runs, "--set", f"log_format={FORMAT}")
    assert f"log_format: '{FORMAT}'" in (run.path / "recipe.yaml").read_text()
    steps = [m["step"] for m in run.metrics()]
    assert steps[-1] == 30 and run.metrics()[-1]["loss"] is not None, steps
    assert "no step read" not in _screen(runs, run)


def test_an_unread_shape_is_one_shape_printed_often_with_its_numbers_changing():
    """The rule behind the words (``ingest.explain.unread_shape``): setup lines, a line repeated
    as it is, or lines of one number are no unread metric line."""
    from moeconsole.runner.ingest.explain import UNREAD_REPEATS, unread_shape
    odd = [f"#{i:05d} {1 / i:.4f} 1.0e-04" for i in range(1, UNREAD_REPEATS + 1)]
    assert unread_shape(odd) == (UNREAD_REPEATS, odd[0])
    assert unread_shape(odd[:-1]) is None
    assert unread_shape(["waiting for GPU 0 of 1"] * 20) is None
    assert unread_shape([f"Loading shard {i}" for i in range(20)]) is None
    assert unread_shape([f"Downloading: {i}%|##  | {i}M/100M [00:{i:02d}<00:10, 9MB/s]" for i in range(20)]) is None
