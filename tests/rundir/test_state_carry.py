"""state.json as one runner rewrites it (``RunDir.write_state``): the top-level keys it does not
know (a newer runner's, written in by another writer) are written back as they were, and the
file is read back only when someone else replaced it since this runner's last write."""
from __future__ import annotations

import json
import os

from moeconsole.runner.rundir import jsonio, rundir, runfiles


def _state(status: str) -> dict:
    return {"status": status, "name": "carry", "attempt": 1, "stale_after_s": 30.0}


def _counting_reads(monkeypatch) -> list[str]:
    reads: list[str] = []
    real = runfiles.carried

    def counted(path):
        reads.append(str(path))
        return real(path)
    monkeypatch.setattr(runfiles, "carried", counted)
    return reads


def test_a_key_another_writer_added_between_two_writes_is_carried(tmp_path, monkeypatch):
    run = rundir.create(tmp_path / "runs", "carry")
    run.write_state(_state("running"))
    reads = _counting_reads(monkeypatch)
    doc = json.loads(run.state.read_text())
    doc["future_key"] = {"from": "a newer runner", "n": [1, 2]}
    jsonio.atomic_write_bytes(run.state, json.dumps(doc).encode())   # another writer: a new file
    run.write_state(_state("paused"))
    after = json.loads(run.state.read_text())
    assert after["status"] == "paused" and after["future_key"] == {"from": "a newer runner", "n": [1, 2]}
    run.write_state(_state("succeeded"))   # still carried from what this runner wrote itself
    after = json.loads(run.state.read_text())
    assert after["status"] == "succeeded" and after["future_key"] == {"from": "a newer runner", "n": [1, 2]}
    assert len(reads) == 1


def test_a_runner_rewriting_its_own_state_json_does_not_read_it_back(tmp_path, monkeypatch):
    run = rundir.create(tmp_path / "runs", "carry")
    reads = _counting_reads(monkeypatch)
    for status in ("starting", "running", "cooldown", "running", "succeeded"):
        run.write_state(_state(status))
    assert json.loads(run.state.read_text())["status"] == "succeeded"
    assert len(reads) == 1   # the first write, of a file it had not written
    os.unlink(run.state)   # gone since (a user's cleanup): asked again
    run.write_state(_state("failed"))
    assert len(reads) == 2 and json.loads(run.state.read_text())["status"] == "failed"
