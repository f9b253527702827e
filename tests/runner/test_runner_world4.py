"""The supervised run in a hostile world, round 4: a machine that is not a clean test box. Each
through the real CLI, the real detached runner and a real training process; asserted on what the
user sees (state.json, events.jsonl, metrics.jsonl, `runs show`)."""
from __future__ import annotations

import json

from tests.runner.conftest import ticker
from tests.waiting import gone, until

NO_SAVES = {"checkpoints": {"dir": None}, "resume": {"arg": None}}


def test_a_run_that_ends_while_the_disk_refuses_writes_keeps_its_runner_until_its_records_are_written(
        harness, tmp_path, monkeypatch):
    """The disk under the run directory fails every write (EIO: the test-only
    ``MOECONSOLE_TEST_WRITE_FAULT_FILE``) when the training ends. The records of its last steps
    and of its end wait in the runner's memory. The runner used to exit at once: the records were
    lost, state.json said `running` for good (`runs show`: "RUNNING? (runner gone)") while the
    index said SUCCEEDED at an older step. Now it stays until the disk takes them."""
    fault = tmp_path / "write_fault"
    monkeypatch.setenv("MOECONSOLE_TEST_WRITE_FAULT_FILE", str(fault))
    run = harness.start(harness.recipe(command=ticker(40, 0.1), **NO_SAVES))
    runner = run.wait(lambda s: (s.get("step") or 0) >= 5, what="step 5")["runner"]["pid"]
    fault.write_text("EIO")
    until(lambda: (run.path / "train.log").read_text().count("global_step") >= 40, 120, what="the training's 40 steps")
    # the run is over for the runner (its training ended): it exits, or says it waits for the disk
    until(lambda: gone(runner) or "records that wait for the disk" in (run.path / "runner.log").read_text(), 120,
          what="the runner to end the run")
    fault.unlink()
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded" and st["step"] == 40 and st["storage"] is None, st
    assert [m["step"] for m in run.metrics()] == list(range(1, 41))
    assert [e["step"] for e in run.events("success")] == [40]
    said = [e for e in run.events("alert") if e.get("rule") == "storage"]
    assert len(said) == 1 and "none lost" in said[0]["message"], said
    until(lambda: gone(runner), 120, what="the runner to exit once every record is written")
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert "SUCCEEDED" in shown.splitlines()[0] and "RUNNING" not in shown, shown
    assert json.loads((run.path / "state.json").read_text())["status"] == "succeeded"
