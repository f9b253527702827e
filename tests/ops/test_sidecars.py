"""The runner-side ops object: recipe sections validated, the exporter started beside the
runner and ended with it, a dead exporter started again, sync offered only good checkpoints."""
from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest

from moeconsole.runner.ops.sidecars import EXPORTER_RESPAWN_S, MetricsSettings, OpsSidecars
from moeconsole.runner.recipes.recipe import validate
from tests.checkpoints.conftest import write_adapter
from tests.ops.ops_helpers import read_json, wait_for
from tests.runner.conftest import Harness


@pytest.mark.parametrize("bad, problem", [({"port": 70000}, "port"), ({"textfile": "/tmp/x.txt"}, ".prom"),
                                          ({"interval_s": 0}, "interval_s"), ({"prot": 1}, "unknown")])
def test_metrics_section_is_checked(bad, problem):
    with pytest.raises(ValueError, match=problem):
        MetricsSettings.from_recipe(bad)


def _bound(run_path: Path) -> dict | None:
    return read_json(run_path / "exporter.json")


def test_exporter_lives_and_dies_with_the_sidecars(tmp_path, runs_dir):
    h = Harness(tmp_path, runs_dir)
    run = h.start(h.recipe())
    run.wait_status("succeeded", "failed", "killed", timeout=240)
    ops = OpsSidecars.from_recipe(validate({"command": ["x"], "metrics": {"port": 0, "interval_s": 0.2}}), run.path, run.id)
    ops.start()
    try:
        first = wait_for(lambda: _bound(run.path))
        with urllib.request.urlopen(f"http://127.0.0.1:{first['port']}/metrics", timeout=30) as resp:
            assert b'moeconsole_step{run_id="' in resp.read()
        # an exporter that dies is started again (not at once: a port may still be held)
        (run.path / "exporter.json").unlink()
        ops.exporter.kill()
        ops.exporter.wait()
        ops.poll(time.time())
        def respawned() -> dict | None:
            ops.poll(time.time())
            return _bound(run.path)
        assert wait_for(respawned, EXPORTER_RESPAWN_S + 60, what="a new exporter")["pid"] == ops.exporter.pid
    finally:
        ops.close()
    assert ops.exporter.poll() is not None


def test_only_good_checkpoints_are_offered_to_sync(tmp_path):
    ck = write_adapter(tmp_path / "out" / "checkpoint-4")
    ops = OpsSidecars.from_recipe(validate({"command": ["x"], "sync": {"dest": str(tmp_path / "keep")}}), tmp_path, "r")
    ops.on_checkpoint({"type": "checkpoint", "ok": False, "path": str(ck), "verdict": "empty_stub", "t": 1.0})
    assert ops.state(2.0)["pending"] is None
    ops.on_checkpoint({"type": "checkpoint", "ok": True, "path": str(ck), "verdict": "ok", "t": 1.0})
    assert ops.state(2.0)["pending"] == str(ck) and ops.state(2.0)["lag_s"] == 1.0
    events = []

    def synced() -> bool:
        events.extend(ops.poll(time.time()))
        return any(e["type"] == "sync" for e in events)
    wait_for(synced, 120, what="the sync event")
    assert next(e for e in events if e["type"] == "sync")["ok"] is True
    assert (tmp_path / "keep" / "checkpoint-4" / "adapter_model.safetensors").exists()


def test_status_line_says_how_the_sync_stands():
    from moeconsole.console.format import plain, status_lines
    base = {"id": "r", "name": "r", "status": "running", "attempt": 1, "restarts": 0, "max_restarts": 3}
    def line2(sync):
        return plain(status_lines({**base, "sync": sync})[1])
    assert "synced step 400" in line2({"last_synced_step": 400, "failures": 0, "pending": None, "lag_s": 0})
    assert "syncing checkpoint-500, lag 2m" in line2({"pending": "/ckpt/checkpoint-500", "failures": 0, "lag_s": 125})
    assert "sync failing (3x): No space left" in line2({"failures": 3, "last_error": "No space left", "lag_s": 9})
    assert "sync" not in plain(status_lines(base)[1])
