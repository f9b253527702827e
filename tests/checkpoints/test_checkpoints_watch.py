"""The live watcher, the sidecar, and the choice of a resume point.

The watcher takes a clock so these tests step time explicitly (no sleeps, no timing races);
one test drives it with the real clock against a real writer process."""
from __future__ import annotations

import json
import subprocess
import sys

from moeconsole.runner.checkpoints.discover import find_checkpoints
from moeconsole.runner.checkpoints.sidecar import fingerprint, read_sidecar, sidecar_current, write_sidecar
from moeconsole.runner.checkpoints.verify import verify_checkpoint
from moeconsole.runner.checkpoints.watch import CheckpointWatcher, latest_good
from tests.waiting import reached


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_reports_a_checkpoint_once_after_its_files_settle(mk, tmp_path):
    clock = Clock()
    w = CheckpointWatcher(tmp_path / "out", settle_s=2.0, clock=clock)
    assert w.poll() == []                                   # the output dir does not exist yet
    d = tmp_path / "out" / "checkpoint-10"
    d.mkdir(parents=True)
    (d / "adapter_model.safetensors").write_bytes(b"\0" * 100)   # a save in progress
    assert w.poll() == []
    clock.now += 1.0
    mk.adapter(d)                                           # the file grows: the clock restarts
    assert w.poll() == []
    clock.now += 1.9
    assert w.poll() == []
    clock.now += 0.2
    (ready,) = w.poll()
    assert (ready.path, ready.step) == (d, 10)
    clock.now += 10
    assert w.poll() == []                                   # reported once


def test_known_checkpoints_are_not_reported(mk, tmp_path):
    clock = Clock()
    old = mk.adapter(tmp_path / "out" / "checkpoint-1")
    w = CheckpointWatcher(tmp_path / "out", settle_s=1.0, known=[old], clock=clock)
    new = mk.adapter(tmp_path / "out" / "checkpoint-2")
    w.poll()
    clock.now += 1.5
    assert [c.path for c in w.poll()] == [new]


def test_a_save_that_changes_after_being_reported_is_reported_again(mk, tmp_path):
    clock = Clock()
    w = CheckpointWatcher(tmp_path / "out", settle_s=1.0, clock=clock)
    d = tmp_path / "out" / "checkpoint-5"
    mk.stub(d / "adapter_model.safetensors")                # the writer paused after a first file
    w.poll()
    clock.now += 1.5
    assert len(w.poll()) == 1
    write_sidecar(d, run_id="r", recipe_hash="h", step=5, verdict="empty_stub", suspect=False)
    clock.now += 1.5
    assert w.poll() == []                                   # our own sidecar is not a change
    mk.adapter(d)                                           # the real weights land later
    w.poll()
    clock.now += 1.5
    assert [c.path for c in w.poll()] == [d]


def test_megatron_iteration_waits_for_its_tracker(mk, tmp_path):
    clock = Clock()
    save = tmp_path / "save"
    w = CheckpointWatcher(save, settle_s=1.0, stale_s=60.0, clock=clock)
    mk.megatron(save, 100, tracker=False)
    w.poll()
    clock.now += 5
    assert w.poll() == []                                   # files settled but the tracker is absent
    (save / "latest_checkpointed_iteration.txt").write_text("100")
    (ready,) = w.poll()
    assert ready.step == 100


def test_megatron_save_that_died_is_reported_after_stale_s(mk, tmp_path):
    clock = Clock()
    save = tmp_path / "save"
    w = CheckpointWatcher(save, settle_s=1.0, stale_s=30.0, clock=clock)
    mk.megatron(save, 100, tracker=False)
    w.poll()
    clock.now += 29
    assert w.poll() == []
    clock.now += 2
    assert [c.step for c in w.poll()] == [100]


def test_rotated_away_before_settling(mk, tmp_path):
    import shutil
    clock = Clock()
    w = CheckpointWatcher(tmp_path / "out", settle_s=1.0, clock=clock)
    d = mk.adapter(tmp_path / "out" / "checkpoint-1")
    w.poll()
    assert w.pending == [d.resolve()]
    shutil.rmtree(d)
    w.poll()
    assert w.pending == []


WRITER = r"""
import sys, time, numpy as np
from pathlib import Path
from safetensors.numpy import save_file
out = Path(sys.argv[1])
for step in (10, 20):
    d = out / f"checkpoint-{step}"
    d.mkdir(parents=True)
    arrays = {f"layers.{i}.lora_A.weight": np.ones((4, 8), np.float32) for i in range(2)}
    arrays.update({f"layers.{i}.lora_B.weight": np.ones((8, 4), np.float32) for i in range(2)})
    save_file(arrays, str(d / "adapter_model.safetensors"))
    (d / "adapter_config.json").write_text('{"r": 4, "peft_type": "LORA"}')
    time.sleep(0.3)  # the writer's pace: the two saves land apart, as a trainer's do
"""


def test_real_writer_process_and_real_clock(tmp_path):
    out = tmp_path / "out"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(out)])
    try:
        w = CheckpointWatcher(out, settle_s=0.2)
        seen: list[int] = []

        def both_seen() -> bool:
            seen.extend(c.step for c in w.poll())
            return len(seen) >= 2
        reached(both_seen, timeout=30)
        assert seen == [10, 20]
        assert writer.wait(timeout=30) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


# --- sidecar and resume point -------------------------------------------------------

def test_sidecar_round_trip_and_staleness(mk, tmp_path):
    d = mk.adapter(tmp_path / "checkpoint-3")
    write_sidecar(d, run_id="run-1", recipe_hash="abc123", step=3, verdict="ok", suspect=False)
    rec = read_sidecar(d)
    assert {k: rec[k] for k in ("v", "run_id", "recipe_hash", "step", "verdict", "suspect")} == \
        {"v": 1, "run_id": "run-1", "recipe_hash": "abc123", "step": 3, "verdict": "ok", "suspect": False}
    assert rec["verified_at"] > 0 and "moeconsole.json" not in rec["files"]
    assert sidecar_current(d, rec)
    (d / "adapter_model.safetensors").write_bytes(b"changed")
    assert not sidecar_current(d, rec)
    (d / "moeconsole.json").write_text("{not json")
    assert read_sidecar(d) is None


def test_fingerprint_covers_nested_megatron_files(mk, tmp_path):
    ck = tmp_path / "checkpoint-50"
    mk.megatron(ck, 50)
    assert "iter_0000050/__0_0.distcp" in fingerprint(ck)


def test_latest_good_skips_stubs_and_merged_exports(mk, tmp_path):
    out = tmp_path / "out"
    mk.adapter(out / "checkpoint-10")
    mk.stub(out / "checkpoint-30" / "adapter_model.safetensors")
    mk.adapter(out / "checkpoint-20")
    mk.sharded(out / "checkpoint-20-merged")
    assert latest_good(out).path == out / "checkpoint-20"
    assert latest_good(out, include_merged=True).path == out / "checkpoint-20-merged"


def test_latest_good_trusts_a_current_sidecar_but_not_a_stale_one(mk, tmp_path):
    out = tmp_path / "out"
    mk.adapter(out / "checkpoint-10")
    d = mk.adapter(out / "checkpoint-20")
    write_sidecar(d, run_id="r", recipe_hash="h", step=20, verdict="truncated", suspect=False)
    assert latest_good(out).path == out / "checkpoint-10"          # the stored verdict is used
    write_sidecar(d, run_id="r", recipe_hash="h", step=20, verdict="ok", suspect=False)
    assert latest_good(out).path == d
    mk.stub(d / "adapter_model.safetensors")                       # replaced after verification
    assert latest_good(out).path == out / "checkpoint-10"


def test_latest_good_skips_drifted_and_optionally_suspect(mk, tmp_path):
    out = tmp_path / "out"
    a = mk.adapter(out / "checkpoint-10")
    b = mk.adapter(out / "checkpoint-20")
    c = mk.adapter(out / "checkpoint-30")
    write_sidecar(a, run_id="r", recipe_hash="old", step=10, verdict="ok", suspect=False)
    write_sidecar(b, run_id="r", recipe_hash="new", step=20, verdict="ok", suspect=False)
    write_sidecar(c, run_id="r", recipe_hash="new", step=30, verdict="ok", suspect=True)
    assert latest_good(out).path == c
    assert latest_good(out, allow_suspect=False).path == b
    assert latest_good(out, expected_recipe_hash="old").path == a
    assert latest_good(out, expected_recipe_hash="other") is None


def test_latest_good_never_returns_a_stub_even_alone(mk, tmp_path):
    mk.stub(tmp_path / "out" / "checkpoint-1" / "adapter_model.safetensors")
    (tmp_path / "out" / "checkpoint-1" / "adapter_config.json").write_text(json.dumps({"r": 8}))
    assert find_checkpoints(tmp_path / "out") and latest_good(tmp_path / "out") is None


def test_watch_poll_cost_is_a_listing(mk, tmp_path):
    """A poll over many settled checkpoints re-reads no file contents (only names and sizes)."""
    out = tmp_path / "out"
    for step in range(1, 21):
        mk.adapter(out / f"checkpoint-{step}", mk.lora_tensors(r=2, layers=1), r=2)
    clock = Clock()
    w = CheckpointWatcher(out, settle_s=0.0, clock=clock, known=[c.path for c in find_checkpoints(out)])
    before = _rchar()
    for _ in range(5):
        assert w.poll() == []
    assert _rchar() - before < 64 << 10


def _rchar() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def test_trainer_checkpoint_cut_short_before_trainer_state_is_never_resumed(mk, tmp_path):
    # The HF Trainer writes trainer_state.json last: a kill during the save leaves weights,
    # optimizer and args but no state, and ms-swift's resume then fails on every attempt.
    out = tmp_path / "out"
    good = mk.demo(out / "checkpoint-20", 20)
    cut = mk.demo(out / "checkpoint-25", 25)
    (cut / "trainer_state.json").unlink()
    v = verify_checkpoint(cut)
    assert not v.ok and v.verdict == "incomplete" and "trainer_state.json" in v.reason
    assert verify_checkpoint(good).ok
    assert latest_good(out).path == good


def test_the_resume_point_passes_over_a_save_made_during_a_divergence(mk, tmp_path):
    """A save at a NaN's own step (suspect: made during the grad-norm excursion) holds the weights the
    run diverged with: a restart resumes from the newest clean save before it (the screen, --json and
    restart's plan show that one); a suspect save only when no clean one verifies."""
    from moeconsole.runner.checkpoints.order import SaveOrder, resume_point
    out = tmp_path / "out"
    a = mk.adapter(out / "checkpoint-50")
    b = mk.adapter(out / "checkpoint-60")
    write_sidecar(a, run_id="r", recipe_hash="h", step=50, verdict="ok", suspect=False)
    write_sidecar(b, run_id="r", recipe_hash="h", step=60, verdict="ok", suspect=True)
    assert resume_point(out, SaveOrder(), recipe_hash="h") == {"path": str(a), "step": 50}
    write_sidecar(a, run_id="r", recipe_hash="h", step=50, verdict="ok", suspect=True)
    assert resume_point(out, SaveOrder(), recipe_hash="h") == {"path": str(b), "step": 60}
