"""The keeper's count of bad saves in a row, and when a newer good save ends the streak."""
from __future__ import annotations

from pathlib import Path

from moeconsole.runner.checkpoints.keeper import CheckpointKeeper
from moeconsole.runner.checkpoints.order import SaveOrder


class Recorder:
    def __init__(self, path: Path) -> None:
        self.run_id, self.path, self.events = "r", path, []

    def event(self, type_: str, **fields) -> dict:
        self.events.append({"type": type_, **fields})
        return self.events[-1]


def keeper_with_streak(tmp_path: Path, *steps: int) -> CheckpointKeeper:
    out = tmp_path / "out"
    bad = {"total": len(steps), "in_a_row": [str(out / f"checkpoint-{s}") for s in steps]}
    return CheckpointKeeper(Recorder(tmp_path), out, recipe_hash="h", settle_s=0.1, bad_saves=bad)


def test_a_good_save_newer_than_the_streak_ends_it(tmp_path):
    keeper = keeper_with_streak(tmp_path, 8, 12)
    assert keeper.streak_broken_by({"path": str(tmp_path / "out" / "checkpoint-16"), "step": 16})


def test_a_good_save_older_than_the_streak_is_the_resume_point_not_a_recovery(tmp_path):
    keeper = keeper_with_streak(tmp_path, 8, 12)
    assert not keeper.streak_broken_by({"path": str(tmp_path / "out" / "checkpoint-4"), "step": 4})
    assert not keeper.streak_broken_by(None)
    assert not keeper_with_streak(tmp_path).streak_broken_by({"path": "x", "step": 99})


def test_a_good_verdict_after_bad_ones_resets_the_streak_but_not_the_total(tmp_path):
    keeper = keeper_with_streak(tmp_path)
    keeper._count("/o/checkpoint-8", ok=False)
    keeper._count("/o/checkpoint-12", ok=False)
    assert keeper.bad_saves == {"total": 2, "in_a_row": ["/o/checkpoint-8", "/o/checkpoint-12"]}
    keeper._count("/o/checkpoint-16", ok=True)
    assert keeper.bad_saves == {"total": 2, "in_a_row": []}


def test_a_save_changed_after_its_verdict_is_verified_again_and_listed_once(tmp_path):
    """A checkpoint rewritten after it was verified (a save that went on) is verified again;
    state.json's ``verified`` names it once, newest last, so a new runner reads one list."""
    import os

    from tests.checkpoints.conftest import lora_tensors, write_adapter
    from tests.waiting import until

    out = tmp_path / "out"
    rec = Recorder(tmp_path)
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05)
    write_adapter(out / "checkpoint-1", lora_tensors(r=4, layers=2, hidden=64))
    write_adapter(out / "checkpoint-2", lora_tensors(r=4, layers=2, hidden=64))

    def verdicts():
        keeper.poll(lambda step, path: [], 1)
        return [e for e in rec.events if e["type"] == "checkpoint"]
    until(lambda: len(verdicts()) == 2, timeout=30, what="both saves verified")
    write_adapter(out / "checkpoint-1", lora_tensors(r=8, layers=2, hidden=64))   # rewritten, bigger
    later = os.stat(out / "checkpoint-1").st_mtime + 5
    for f in (out / "checkpoint-1").iterdir():
        os.utime(f, (later, later))
    until(lambda: len(verdicts()) == 3, timeout=30, what="the rewritten save verified again")
    assert keeper.verified == [str(out / "checkpoint-2"), str(out / "checkpoint-1")], keeper.verified


def test_a_save_on_a_filling_disk_raises_the_disk_alert(tmp_path):
    """A real small file system (tmpfs, 1 MiB): after a verified ~300 KB save, room for fewer than
    three more is a warning naming the sizes; once the next may not fit, critical; one alert per level."""
    import os
    import subprocess

    import numpy as np
    import pytest

    from tests.checkpoints.conftest import lora_tensors, write_adapter
    from tests.waiting import until

    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("tmpfs mount not permitted here")
    try:
        out = mnt / "out"
        rec = Recorder(tmp_path)
        keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05)
        big = lora_tensors(r=8, layers=8, hidden=512)          # ~1 MB of float32: too big, so
        tensors = {k: v[:, :160] if v.shape[0] == 8 else v[:160] for k, v in big.items()}   # ~330 KB
        write_adapter(out / "checkpoint-1", tensors)

        def alerts():
            keeper.poll(lambda step, path: [], 1)
            return [e for e in rec.events if e["type"] == "alert" and e["rule"] == "disk_filling"]

        (warn,) = until(alerts, timeout=30, what="the disk alert")
        assert warn["level"] == "warning" and "room for 2 more such save(s)" in warn["message"] and "took 328.0 KB" in warn["message"], warn["message"]
        write_adapter(out / "checkpoint-2", tensors)
        got = until(lambda: (lambda a: a if len(a) == 2 else None)(alerts()), timeout=30, what="critical")
        assert got[1]["level"] == "critical" and "the next save may not fit" in got[1]["message"]
        assert np.isfinite(got[1]["values"]["free_bytes"])
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def _rotated_mid_verify(tmp_path: Path):
    """An ms-swift checkpoint-N (adapter, optimizer.pt, trainer_state.json) that the trainer's
    ``--save_total_limit`` deletes while the keeper verifies it (``delete_when_read``). Returns the
    keeper's events, its bad-save counts and the checkpoint's path."""
    from tests.checkpoints.conftest import delete_when_read, write_demo_checkpoint
    from tests.waiting import until

    out = tmp_path / "out"
    ck = write_demo_checkpoint(out / "checkpoint-2", 2)
    thread, done = delete_when_read(ck)
    rec = Recorder(tmp_path)
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05)
    until(lambda: keeper.poll(lambda step, path: [], 1) or not thread.is_alive(), timeout=60,
          what="the keeper verifying the save")
    thread.join(timeout=60)
    assert done == ["deleted"], done
    return rec.events, keeper.bad_saves, ck


def test_a_save_deleted_by_save_total_limit_while_verified_is_not_a_bad_save(tmp_path):
    """No critical ``checkpoint_bad`` alert, no bad-save count (which pauses a run), no verdict,
    and no sidecar left behind in a directory the trainer removed."""
    events, bad, ck = _rotated_mid_verify(tmp_path)
    assert [e for e in events if e["type"] == "alert"] == [], events
    assert [e for e in events if e["type"] == "checkpoint"] == [], events
    assert bad == {"total": 0, "in_a_row": []}
    assert not ck.exists(), sorted(p.name for p in ck.iterdir())


def test_a_save_whose_tensors_are_not_counted_is_recorded_without_a_count(tmp_path):
    """A legacy Megatron save (torch pickles, never read): the checkpoint events and the `v`
    message carry no tensor count rather than "0 tensors", which reads as a save without weights;
    a counted save still carries its count."""
    from tests.checkpoints.conftest import lora_tensors, write_adapter, write_megatron_legacy
    from tests.waiting import until

    out = tmp_path / "out"
    write_megatron_legacy(out, 10)
    rec = Recorder(tmp_path)
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05)

    def checks():
        keeper.poll(lambda step, path: [], 1)
        return [e for e in rec.events if e["type"] == "checkpoint"]

    (polled,) = until(checks, timeout=30, what="the legacy save verified")
    assert polled["ok"] and (polled["tensors"], polled["params"]) == (None, None), polled
    asked = keeper.verify_latest()
    assert asked["ok"] and "tensors" not in asked["message"], asked
    assert (rec.events[-1]["tensors"], rec.events[-1]["params"]) == (None, None), rec.events[-1]
    adapter = tmp_path / "adapter"
    write_adapter(adapter / "checkpoint-1", lora_tensors(r=4, layers=2, hidden=64))
    counted = CheckpointKeeper(rec, adapter, recipe_hash="h", settle_s=0.05).verify_latest()
    assert f"({counted['verdict']['tensors']} tensors)" in counted["message"] and rec.events[-1]["tensors"] > 0


def test_an_ok_stored_for_a_cut_first_trainer_save_by_older_checks_is_not_the_resume_point(tmp_path):
    """A runner before the run told its saver (checks 2) verified a Trainer run's first save cut
    after its weights ok and stamped that; the files are unchanged since. A runner that knows the
    run saves through the Trainer judges it again (incomplete) instead of resuming from it."""
    from moeconsole.runner.checkpoints.sidecar import fingerprint
    from moeconsole.runner.rundir import jsonio
    from tests.checkpoints.conftest import write_adapter

    first = write_adapter(tmp_path / "out" / "v0-20261129-190230" / "checkpoint-4", extras=False)
    old = {"v": 1, "run_id": "r", "recipe_hash": "h", "step": 4, "verdict": "ok", "suspect": False,
           "verified_at": 1767323045.1, "files": fingerprint(first), "checks": 2}
    jsonio.atomic_write_json(first / "moeconsole.json", old)
    keeper = CheckpointKeeper(Recorder(tmp_path), tmp_path / "out", recipe_hash="h", settle_s=0.1,
                              verified=[str(first)], order=SaveOrder(trainer=True))
    assert keeper.resume_point(allow_drift=False) is None
    plain = CheckpointKeeper(Recorder(tmp_path), tmp_path / "out", recipe_hash="h", settle_s=0.1, verified=[str(first)])
    assert plain.resume_point(allow_drift=False) == str(first)    # weights alone, saver unknown: a whole save


def test_when_resumes_count_from_step_1_into_one_directory_the_save_written_last_is_the_resume_point(tmp_path):
    """ms-swift with --add_version false (every PAI job) and --resume_only_model --ignore_data_skip:
    attempt 1 saved checkpoint-8, attempt 2 resumed from it, counted from step 1 and saved
    checkpoint-4 into the same directory. checkpoint-4 holds the newer weights; by step alone the
    restart went back to checkpoint-8 and lost attempt 2's training, on every attempt again."""
    import os

    from tests.checkpoints.conftest import write_adapter

    out = tmp_path / "out"
    older = write_adapter(out / "checkpoint-8", extras=False)
    newer = write_adapter(out / "checkpoint-4", extras=False)
    for d, t in ((older, 1_800_000_000), (newer, 1_700_000_000)):   # checkpoint-4 first saved by attempt 1 ...
        for p in [d, *d.iterdir()]:
            os.utime(p, (t, t))
    # ... and written again in place by attempt 2 (its files rewritten, the directory's time kept)
    os.utime(newer / "adapter_model.safetensors", (1_800_000_600, 1_800_000_600))
    keeper = CheckpointKeeper(Recorder(tmp_path), out, recipe_hash="h", settle_s=0.1, order=SaveOrder(rewrites=True))
    assert keeper.resume_point(allow_drift=False) == str(newer)
    assert keeper.last_good() == {"path": str(newer), "step": 4}
    by_step = CheckpointKeeper(Recorder(tmp_path), out, recipe_hash="h", settle_s=0.1)
    assert by_step.resume_point(allow_drift=False) == str(older)   # steps that go on: the highest is the newest


def test_a_save_rewritten_in_place_with_files_of_the_same_sizes_is_verified_again_at_the_attempts_end(tmp_path):
    """Attempt 2 of a run whose resumes count from step 1 into one directory writes checkpoint-4 again:
    weights of the same shapes, so every file keeps its size. Cut before its trainer_state.json (a
    SIGKILL), the save is incomplete (the state is attempt 1's), but by names and sizes nothing had
    changed: attempt 1's `ok` stood in events.jsonl and no alert was raised. Its files' times
    changed: the sweep at the attempt's end verifies it again, `incomplete`, with the critical alert."""
    import json
    import os

    from tests.checkpoints.conftest import lora_tensors, write_adapter
    from tests.waiting import until

    out = tmp_path / "out"
    ck = write_adapter(out / "checkpoint-4", lora_tensors(seed=0), extras=False)
    (ck / "optimizer.pt").write_bytes(b"x")
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": []}))
    past = os.stat(ck / "trainer_state.json").st_mtime - 60
    for f in ck.iterdir():
        os.utime(f, (past, past))
    rec = Recorder(tmp_path)
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05, order=SaveOrder(trainer=True, rewrites=True))

    def verdicts():
        keeper.poll(lambda step, path: [], 1)
        return [(e["verdict"], e["attempt"]) for e in rec.events if e["type"] == "checkpoint"]
    until(lambda: verdicts() == [("ok", 1)], timeout=30, what="attempt 1's checkpoint-4 verified")
    sizes = {f.name: f.stat().st_size for f in ck.iterdir() if f.name != "moeconsole.json"}
    write_adapter(ck, lora_tensors(seed=1), extras=False)   # attempt 2's weights; killed before its state
    assert {f.name: f.stat().st_size for f in ck.iterdir() if f.name != "moeconsole.json"} == sizes
    keeper.sweep(lambda step, path: [], 2)
    assert [(e["verdict"], e["attempt"]) for e in rec.events if e["type"] == "checkpoint"] == [("ok", 1), ("incomplete", 2)]
    assert any(e["type"] == "alert" and e["rule"] == "checkpoint_bad" for e in rec.events)
    assert keeper.resume_point(allow_drift=False) is None


def test_a_newer_whole_save_made_during_a_spike_still_ends_the_bad_streak(tmp_path, mk):
    """The saves recovered (checkpoint-16 verifies ok) though it was made during a grad-norm excursion:
    no pause for bad saves; the resume point named is still the clean checkpoint-4."""
    from moeconsole.runner.checkpoints.sidecar import write_sidecar
    from moeconsole.runner.supervisor.judge import bad_saves_pause
    out = tmp_path / "out"
    clean, spike = mk.adapter(out / "checkpoint-4"), mk.adapter(out / "checkpoint-16")
    write_sidecar(clean, run_id="r", recipe_hash="h", step=4, verdict="ok", suspect=False)
    write_sidecar(spike, run_id="r", recipe_hash="h", step=16, verdict="ok", suspect=True)
    keeper = keeper_with_streak(tmp_path, 8, 12)
    assert bad_saves_pause(keeper, 2) is None
    assert keeper.last_good() == {"path": str(clean), "step": 4}


def test_the_saves_on_disk_give_the_largest_bytes_and_the_most_files_in_one_walk(tmp_path):
    """After disk_full the wait for room needs the bytes of the largest verified save and the
    files of the one with the most (``diskroom``): two walks of every save, one after the other,
    became one; a save removed since counts for nothing."""
    out = tmp_path / "out"
    big, many = out / "checkpoint-2", out / "checkpoint-4"
    (big / "sub").mkdir(parents=True)
    (big / "sub" / "weights.bin").write_bytes(b"w" * 50_000)
    many.mkdir()
    for i in range(30):
        (many / f"shard-{i}.json").write_bytes(b"{}")
    keeper = CheckpointKeeper(Recorder(tmp_path), out, recipe_hash="h", settle_s=0.05, verify=False,
                              verified=[str(big), str(many), str(out / "checkpoint-6")])
    assert keeper.on_disk() == (50_000, 31)   # checkpoint-4 itself and its 30 files


def _save(ck: Path, seed: int, *, state_mtime_shift: float | None) -> None:
    """checkpoint-4 written in the Trainer's order: weights, optimizer, then trainer_state.json (None:
    cut before it), the state's modification time moved by ``state_mtime_shift`` seconds (the wall
    clock stepped between the two writes)."""
    import json
    import os

    from tests.checkpoints.conftest import lora_tensors, write_adapter
    write_adapter(ck, lora_tensors(seed=seed), extras=False)
    (ck / "optimizer.pt").write_bytes(b"x" * (seed + 1))
    if state_mtime_shift is not None:
        (ck / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": [], "seed": seed}))
        at = os.stat(ck / "adapter_model.safetensors").st_mtime + state_mtime_shift
        os.utime(ck / "trainer_state.json", (at, at))


def _verdicts(keeper: CheckpointKeeper, rec: Recorder, attempt: int, count: int) -> list[tuple[str, int]]:
    from tests.waiting import until

    def got():
        keeper.poll(lambda step, path: [], attempt)
        seen = [(e["verdict"], e["attempt"]) for e in rec.events if e["type"] == "checkpoint"]
        return seen if len(seen) >= count else None
    return until(got, timeout=60, what=f"{count} verdicts")


def test_a_rewritten_save_whose_state_the_wall_clock_dated_before_its_weights_is_whole_as_the_runner_watched_it(tmp_path):
    """Resumes count from step 1 into one directory (``rewrites``): attempt 2 writes checkpoint-4
    again, weights then trainer_state.json, and NTP steps the wall clock an hour back between the
    two writes. By modification times the state is older than the weights: "an earlier save's",
    `incomplete`, a critical alert, the resume point moved back past a whole save (round 13's open
    item). The runner watched the files being written (its own looks, on the monotonic clock):
    the state came after the weights, the save is ok, and a later `verify` of the same files (the
    sidecar keeps the order) says so too."""
    from moeconsole.runner.checkpoints.verify import verify_checkpoint

    out = tmp_path / "out"
    ck = out / "checkpoint-4"
    rec = Recorder(tmp_path)
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05, order=SaveOrder(trainer=True, rewrites=True))
    keeper.poll(lambda step, path: [], 1)   # the runner's first look: nothing there yet
    _save(ck, 0, state_mtime_shift=0.0)
    assert _verdicts(keeper, rec, 1, 1) == [("ok", 1)]
    _save(ck, 1, state_mtime_shift=None)          # attempt 2's weights ...
    keeper.poll(lambda step, path: [], 2)          # (seen being written)
    _save(ck, 1, state_mtime_shift=-3600.0)        # ... and its state, the clock an hour back
    assert _verdicts(keeper, rec, 2, 2) == [("ok", 1), ("ok", 2)], rec.events
    assert not [e for e in rec.events if e["type"] == "alert" and e.get("rule") == "checkpoint_bad"]
    assert keeper.resume_point(allow_drift=False) == str(ck)
    assert verify_checkpoint(ck, trainer=True, rewrites=True).verdict == "ok"   # `verify RUN` later


def test_a_rewrite_cut_before_its_state_after_the_clock_went_back_is_incomplete_as_the_runner_watched_it(tmp_path):
    """The other way: attempt 1 saved checkpoint-4 with the clock an hour fast, NTP set it right,
    and attempt 2 wrote the weights again and was cut before its state. By modification times the
    state (attempt 1's, an hour "ahead") is newer than the weights: ok, and a resume from it would
    start over at the wrong step. The runner saw the weights written after the state: incomplete."""
    out = tmp_path / "out"
    ck = out / "checkpoint-4"
    rec = Recorder(tmp_path)
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05, order=SaveOrder(trainer=True, rewrites=True))
    keeper.poll(lambda step, path: [], 1)
    _save(ck, 0, state_mtime_shift=3600.0)
    assert _verdicts(keeper, rec, 1, 1) == [("ok", 1)]
    _save(ck, 1, state_mtime_shift=None)   # attempt 2's weights, then a SIGKILL
    keeper.poll(lambda step, path: [], 2)
    keeper.sweep(lambda step, path: [], 2)
    assert [(e["verdict"], e["attempt"]) for e in rec.events if e["type"] == "checkpoint"] == [("ok", 1), ("incomplete", 2)]
    assert any(e["type"] == "alert" and e.get("rule") == "checkpoint_bad" for e in rec.events)
    assert keeper.resume_point(allow_drift=False) is None


def test_v_on_a_run_without_checkpoints_dir_does_not_say_yet(tmp_path):
    """Newcomer round 13: `v` on `run -- torchrun ... train.py` (no checkpoints.dir) said "this run has no
    checkpoint directory yet", as if one were coming; none ever is. A directory set but not made yet is
    still "yet"."""
    rec = Recorder(tmp_path)
    said = CheckpointKeeper(rec, None, recipe_hash="h", settle_s=0.05).verify_latest()
    assert not said["ok"] and "yet" not in said["message"], said
    assert "checkpoints.dir is not set" in said["message"] and "moeconsole verify PATH" in said["message"], said
    later = CheckpointKeeper(rec, tmp_path / "out", recipe_hash="h", settle_s=0.05).verify_latest()
    assert not later["ok"] and "yet" in later["message"] and str(tmp_path / "out") in later["message"], later
