"""Checkpoint sync on real safetensors checkpoints: a verified copy lands under its real name,
a stub is never copied, retention keeps the newest, a full destination leaves no half copy and
is retried with an alert, and the runner-side syncer never waits on the copy."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moeconsole.runner.checkpoints.sync import MARKER, PARTIAL, CheckpointSyncer, SyncSettings, retention, sync_one
from tests.checkpoints.conftest import write_adapter, write_stub
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]


def test_retention_keeps_the_newest_and_always_the_newest_verified():
    synced = [("checkpoint-100", 100), ("checkpoint-200", 200), ("checkpoint-300", 300), ("checkpoint-400", 400)]
    assert sorted(retention(synced, 2, "checkpoint-400")) == ["checkpoint-100", "checkpoint-200"]
    # a resync of an older good checkpoint (the newest verified) is never deleted by retention
    assert sorted(retention(synced, 1, "checkpoint-200")) == ["checkpoint-100", "checkpoint-300"]


@pytest.mark.parametrize("bad, problem", [({"dest": 3}, "dest"), ({"keep_last": 0}, "keep_last"),
                                          ({"retry_s": float("inf")}, "retry_s"), ({"dst": "/x"}, "unknown")])
def test_bad_settings(bad, problem):
    with pytest.raises(ValueError, match=problem):
        SyncSettings.from_recipe(bad)


def _ckpt(root: Path, step: int) -> Path:
    return write_adapter(root / f"checkpoint-{step}")


@pytest.mark.parametrize("use_rsync", [False, pytest.param(True, marks=pytest.mark.skipif(
    shutil.which("rsync") is None, reason="rsync not installed (.ci/run installs it)"))])
def test_sync_copies_verifies_and_applies_retention(tmp_path, use_rsync):
    src_root, dest = tmp_path / "local", tmp_path / "persistent"
    results = [sync_one(_ckpt(src_root, s), dest, keep_last=2, use_rsync=use_rsync, full=True) for s in (10, 20, 30)]
    assert all(r.ok for r in results), [r.reason for r in results]
    assert results[0].method == ("rsync" if use_rsync else "copy")
    assert sorted(p.name for p in dest.iterdir()) == ["checkpoint-20", "checkpoint-30"]
    assert results[2].deleted == ["checkpoint-10"]
    copy = dest / "checkpoint-30"
    assert (copy / "adapter_model.safetensors").read_bytes() == \
        (src_root / "checkpoint-30" / "adapter_model.safetensors").read_bytes()
    marker = json.loads((copy / MARKER).read_text())
    assert marker["step"] == 30 and marker["verdict"] == "ok" and len(marker["full_hash"]) == 64


def test_a_stub_is_never_synced(tmp_path):
    d = tmp_path / "local" / "checkpoint-5"
    d.mkdir(parents=True)
    (d / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    write_stub(d / "adapter_model.safetensors")
    res = sync_one(d, tmp_path / "persistent")
    assert not res.ok and "not a good checkpoint" in res.reason
    assert not (tmp_path / "persistent" / "checkpoint-5").exists()


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_destination_leaves_no_half_copy(tmp_path, tiny_tmpfs):
    src = write_adapter(tmp_path / "local" / "checkpoint-7", r=64)   # ~70 KB: does not fit in 16 KB
    res = sync_one(src, tiny_tmpfs)
    assert not res.ok and "copy failed" in res.reason and "No space left" in res.reason
    assert list(tiny_tmpfs.iterdir()) == []


def _poll_until(syncer: CheckpointSyncer, pred, timeout: float = 120.0) -> list[dict]:
    events: list[dict] = []

    def polled() -> bool:
        events.extend(syncer.poll(time.time()))
        return pred(events)
    try:
        until(polled, timeout, what="the syncer's events")
    except AssertionError:
        raise AssertionError(f"timed out; events so far: {events}") from None
    return events


def test_syncer_runs_in_a_child_retries_and_reports_lag(tmp_path, tiny_tmpfs):
    src = write_adapter(tmp_path / "local" / "checkpoint-7", r=64)
    status_dir = tmp_path / "run"
    status_dir.mkdir()
    syncer = CheckpointSyncer(SyncSettings(dest=str(tiny_tmpfs), retry_s=0.2), status_dir)
    t0 = time.time()
    syncer.offer(str(src), verified_at=t0)
    started = time.monotonic()
    assert syncer.poll(time.time()) == []                     # starts the child and returns at once
    assert time.monotonic() - started < 2.0 and syncer.proc is not None
    events = _poll_until(syncer, lambda evs: any(e["type"] == "alert" for e in evs))
    alert = next(e for e in events if e["type"] == "alert")
    assert alert["rule"] == "sync_failed" and "No space left" in alert["message"]
    assert syncer.status.failures == 1 and syncer.status.lag_s(time.time()) > 0

    # space returns (a bigger destination): the retry succeeds and the lag is gone
    syncer.settings = SyncSettings(dest=str(tmp_path / "persistent"), retry_s=0.2)
    events = _poll_until(syncer, lambda evs: any(e["type"] == "sync" and e.get("ok") for e in evs))
    assert (tmp_path / "persistent" / "checkpoint-7" / "adapter_model.safetensors").exists()
    st = syncer.status.to_dict(time.time())
    assert st["pending"] is None and st["lag_s"] == 0 and st["failures"] == 0 and st["last_synced_step"] == 7
    assert not [p for p in (tmp_path / "persistent").iterdir() if p.name.startswith(PARTIAL)]


def test_sync_cli_result_and_exit_code(tmp_path):
    src = _ckpt(tmp_path / "local", 3)
    proc = subprocess.run([sys.executable, "-m", "moeconsole.runner.checkpoints.sync", str(src), str(tmp_path / "p"),
                           "--no-rsync"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["ok"] and res["step"] == 3 and res["method"] == "copy"


def test_a_source_the_trainer_rotated_away_is_not_a_failed_sync_retried_forever(tmp_path):
    """A save verified ok and offered, then deleted by ms-swift's --save_total_limit
    (``shutil.rmtree(checkpoint, ignore_errors=True)``, 4.6.0 swift/trainers/mixin.py:507,
    swift/megatron/trainers/base.py:918) before the copy got it: one warning saying so, no
    failure counted, no retry of a path that is gone."""
    src = _ckpt(tmp_path / "local", 4)
    status_dir = tmp_path / "run"
    status_dir.mkdir()
    syncer = CheckpointSyncer(SyncSettings(dest=str(tmp_path / "persistent"), retry_s=0.05), status_dir)
    syncer.offer(str(src), verified_at=time.time())
    shutil.rmtree(src, ignore_errors=True)
    events = _poll_until(syncer, lambda evs: any(e["type"] == "alert" for e in evs))
    (alert,) = [e for e in events if e["type"] == "alert"]
    assert "checkpoint-4 was deleted by the trainer" in alert["message"], alert
    assert syncer.status.failures == 0 and syncer.status.pending is None
    assert syncer.poll(time.time()) == [] and syncer.proc is None and syncer.running is None


def test_a_synced_megatron_save_dir_is_one_megatron_resumes_from(tmp_path):
    """Megatron-LM's ``iter_N/`` copied alone is no resume point: ``--load`` reads the save dir's
    tracker. The destination gets its own tracker naming the newest copy (never moved back by an
    older one), and the Megatron-LM double (tests/fakes/pretrain_gpt.py) resumes from the copy."""
    from moeconsole.runner.checkpoints.discover import find_checkpoints, megatron_save_complete, tracker_iteration
    from tests.checkpoints.conftest import write_megatron_iter

    save, dest = tmp_path / "save", tmp_path / "persistent"
    for it in (40, 80):
        res = sync_one(write_megatron_iter(save, it), dest, keep_last=1, use_rsync=False)
        assert res.ok and res.step == it, res.reason
    assert sorted(p.name for p in dest.iterdir()) == ["iter_0000080", "latest_checkpointed_iteration.txt"]
    assert tracker_iteration(dest) == 80
    newest = find_checkpoints(dest)[0]
    assert newest.step == 80 and megatron_save_complete(newest)
    assert sync_one(save / "iter_0000040", dest, keep_last=2, use_rsync=False).ok
    assert tracker_iteration(dest) == 80
    out = subprocess.run([sys.executable, str(REPO / "tests" / "fakes" / "pretrain_gpt.py"), "--load", str(dest),
                          "--train-iters", "81"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "FAKE_STEP_S": "0", "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    assert f"successfully loaded checkpoint from {dest} [ t 1/1, gtp_remat 1/1, p 1/1 ] at iteration 80" in out.stdout
    assert "iteration       81/      81 |" in out.stdout
