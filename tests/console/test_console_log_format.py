"""``moeconsole attach PATH --log-format SPEC``: a log nothing reads, opened with its declared line
format, shows its steps (the import's tail, its whole history, the run screen's chart); without
the declaration it has none. A bad spec is one line and exit 2."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from moeconsole.console import foreign
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.runner.ingest.userformat import parse_line_format
from tests.waiting import until_ui

REPO = Path(__file__).resolve().parents[2]
SPEC = r"^#(?P<step>\d+)# ce~(?P<loss>\S+)"


def odd_log(path: Path, n: int = 40) -> Path:
    path.write_text("".join(f"#{i * 10:05d}# ce~{3.0 - i / 100:.2f} ~ rate~1e-4\n" for i in range(1, n + 1)))
    return path


def test_import_reads_a_declared_format(tmp_path):
    log = odd_log(tmp_path / "odd.log")
    run, job = foreign.start_import(log, tmp_path / "scratch", parse_line_format(SPEC))
    assert job is not None and job.current_book().last_metrics["step"] == 400
    job.start()
    job.wait(60)
    assert job.done and job.error is None and job.records == 40
    recs = [json.loads(ln) for ln in run.metrics.read_text().splitlines()]
    assert [r["step"] for r in recs] == [10 * i for i in range(1, 41)] and {r["src"] for r in recs} == {"user"}
    assert recs[-1]["loss"] == 2.6
    # without the declaration the same log has no steps
    run2, job2 = foreign.start_import(log, tmp_path / "scratch2")
    job2.start()
    job2.wait(60)
    assert job2.records == 0 and job2.error == "no training steps found"


def test_run_screen_charts_the_declared_format(tmp_path):
    log = odd_log(tmp_path / "odd.log")

    async def go():
        app = MoeConsole(tmp_path / "runs", None, interval=0.2, gpu=False, open_path=log,
                         line_format=parse_line_format(SPEC))
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                                    and (app.screen.snapshot.run.get("import") or {}).get("done") and app.screen,
                                    timeout=60, what="the imported log")
            assert screen.snapshot.series["loss"].last_x == 400 and screen.snapshot.series["loss"].n == 40
    asyncio.run(go())


def test_attach_with_a_bad_spec_is_one_line_exit_2(tmp_path):
    log = odd_log(tmp_path / "odd.log")
    res = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "attach", str(log), "--log-format", "^#(?P<stp>\\d+",
                          "--runs-dir", str(tmp_path / "runs")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("moeconsole: log format: ")
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def _tail_text(screen) -> str:
    from moeconsole.console.widgets.panes import LogTail
    return "\n".join(screen.query_one(LogTail).plain_lines)


def _tail_once_columns(app: MoeConsole) -> str:
    """The run screen's log tail, once it shows a column header."""
    async def go():
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                                    and "step" in _tail_text(app.screen) and app.screen, timeout=60,
                                    what="the tail's columns")
            return _tail_text(screen)
    return asyncio.run(go())


def test_the_log_tail_reads_a_declared_format_as_columns(tmp_path):
    """The tail shows a declared format's metric lines as columns, as it does a known format's
    (before, the tail's own parse ignored the declaration and showed them raw)."""
    log = odd_log(tmp_path / "odd.log")
    tail = _tail_once_columns(MoeConsole(tmp_path / "runs", None, interval=0.2, gpu=False, open_path=log,
                                         line_format=parse_line_format(SPEC)))
    assert "ce~" not in tail, tail          # no metric line left raw
    assert "400" in tail and "2.6" in tail   # the newest step and its loss, as cells


def test_the_log_tail_of_a_run_reads_its_recipes_log_format(tmp_path):
    from tests.console.conftest import write_run
    run = write_run(tmp_path / "runs", status="succeeded", recipe={
        "name": "odd", "command": ["train"], "log_format": SPEC})
    odd_log(run.log, 20)
    tail = _tail_once_columns(MoeConsole(tmp_path / "runs", run, interval=0.2, gpu=False))
    assert "ce~" not in tail, tail
