"""A Hugging Face Trainer that logs its dicts with no step and no progress bar
(``{'loss': ..., 'epoch': ...}``, transformers' ``Trainer.log`` printed by a plain
``print(logs)`` callback): the parser numbers them in order. Every view said "step N" as if the
trainer had; each says it is a log entry, from one field (``state.json``'s ``step_numbered``,
the records' ``extra.step_numbered``)."""
from __future__ import annotations

import asyncio
import json

import pytest

from moeconsole.runner.rundir import rundir

from moeconsole.console import format as fmt
from tests.runner.conftest import Harness

# transformers' Trainer.log: logs = {**logs, "epoch": self.state.epoch}, then the callbacks'
# on_log; the PrinterCallback prints the dict as it is (trainer_callback.py, PrinterCallback.on_log)
SCRIPT = ("import time\n"
          "for i in range(1, 6):\n"
          "    print({'loss': round(2.0 - i * 0.1, 4), 'grad_norm': 1.0, 'learning_rate': 5e-05, "
          "'epoch': round(i * 0.2, 2)}, flush=True)\n"
          "    time.sleep(0.02)\n")


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def test_dict_logs_without_a_step_are_shown_as_log_entries_in_every_view(harness, tmp_path):
    script = tmp_path / "hf_train.py"
    script.write_text(SCRIPT)
    run = harness.start(harness.recipe(command=["{python}", str(script)], checkpoints={"dir": None},
                                       resume={"arg": None}))
    st = run.wait_status("succeeded", "unsaved", "failed", timeout=240)
    assert st["status"] in ("succeeded", "unsaved") and st["step"] == 5 and st["step_numbered"] is True, st

    snap = harness.cli("--json", run.id, "--once", "--no-gpu")
    info = json.loads(snap.stdout.splitlines()[-1])["run"]
    assert info["step"] == 5 and info["step_numbered"] is True, info
    line1 = "".join(text for text, _ in fmt.status_lines(info)[0])
    assert "log entry 5" in line1 and "step 5" not in line1, line1

    ls = harness.cli("runs", "ls")
    row = next(line for line in ls.stdout.splitlines() if run.id in line)
    assert "entry 5" in row, ls.stdout
    listed = json.loads(harness.cli("runs", "ls", "--json").stdout)["runs"]
    assert next(r for r in listed if r["id"] == run.id)["step_numbered"] == 1

    records = [json.loads(line) for line in run.path.joinpath("metrics.jsonl").read_text().splitlines()]
    assert [r["extra"].get("step_numbered") for r in records] == [1.0] * 5

    parsed = harness.cli("parse", str(run.path / "train.log"))
    assert "log entries  1 -> 5" in parsed.stdout and "not optimizer steps" in parsed.stdout, parsed.stdout

    # the run screen (Pilot): its status line and the log tail's column header
    from moeconsole.console.widgets.panes import LogTail
    from tests.console.test_console_app import app_for, attached, telemetry
    from tests.waiting import until_ui

    async def screen() -> list[str]:
        app = app_for(harness.runs_dir, rundir.RunDir(run.path), telemetry=telemetry())
        async with app.run_test(size=(120, 40)) as pilot:
            await attached(pilot)
            tail = app.screen.query_one(LogTail)
            await until_ui(pilot, lambda: any("2.0" in line or "1.5" in line for line in tail.plain_lines),
                           what="the records in the tail")
            await pilot.pause()
            return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]
    lines = asyncio.run(screen())
    assert "log entry 5" in lines[0] and "step 5" not in lines[0], lines[0]
    header = next(line for line in lines if "grad norm" in line and "loss" in line and "lr" in line.split())
    assert "entry" in header.split() and "step" not in header.split(), header
    assert any("training finished at log entry 5" in line for line in lines), lines
    ended = [e for e in run.events() if e.get("type") in ("success", "unsaved")]
    assert ended and ended[-1]["step_numbered"] is True, ended
