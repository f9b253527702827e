"""Review R27 (hostile round 14): the order a runner watched a save written in, kept in its
sidecar, holds when a new runner checks the save again (its own first look sees every file at
once: all look 0, no order)."""
from __future__ import annotations

from pathlib import Path

import pytest

from moeconsole.runner.checkpoints.keeper import CheckpointKeeper
from moeconsole.runner.checkpoints.order import SaveOrder
from moeconsole.runner.checkpoints.sidecar import read_sidecar
from moeconsole.runner.checkpoints.verify import verify_checkpoint
from tests.checkpoints.test_checkpoints_keeper import Recorder, _save, _verdicts


def _watched_by_runner_one(tmp_path: Path, *, cut: bool) -> tuple[Path, Path]:
    """Runner 1 watches attempt 1 save checkpoint-4 and attempt 2 write it again in place: whole
    with the wall clock an hour back between weights and state (``cut`` False), or cut before its
    state after attempt 1 saved with the clock an hour fast (``cut`` True)."""
    out = tmp_path / "out"
    ck = out / "checkpoint-4"
    rec = Recorder(tmp_path / "one")
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05, order=SaveOrder(trainer=True, rewrites=True))
    keeper.poll(lambda step, path: [], 1)
    _save(ck, 0, state_mtime_shift=3600.0 if cut else 0.0)
    assert _verdicts(keeper, rec, 1, 1) == [("ok", 1)]
    _save(ck, 1, state_mtime_shift=None)
    keeper.poll(lambda step, path: [], 2)
    if cut:
        keeper.sweep(lambda step, path: [], 2)
        expect = "incomplete"
    else:
        _save(ck, 1, state_mtime_shift=-3600.0)
        expect = "ok"
        assert _verdicts(keeper, rec, 2, 2)[-1] == ("ok", 2)
    assert [e["verdict"] for e in rec.events if e["type"] == "checkpoint"][-1] == expect
    assert read_sidecar(ck)["watched"]
    return out, ck


@pytest.mark.parametrize("cut", [False, True], ids=["whole_save_stays_ok", "cut_save_stays_incomplete"])
def test_a_new_runner_checking_a_watched_save_again_keeps_the_order_its_sidecar_kept(tmp_path, cut):
    """A new runner (state.json rebuilt by ``recover_state`` without ``verified``, a runner dead
    between the sidecar and its next state write, the save fell out of VERIFIED_KEEP) checks
    checkpoint-4 again. Its watcher saw every file at its first look (all 0): no order. Before, the
    files' stepped times decided: the whole save became `incomplete` with a critical alert, its
    sidecar's order was overwritten with zeros (and `verify RUN` followed), and the cut one
    became `ok`, a resume point that restarts at the wrong step. The sidecar's order decides."""
    out, ck = _watched_by_runner_one(tmp_path, cut=cut)
    kept = read_sidecar(ck)["watched"]
    expect = "incomplete" if cut else "ok"
    rec = Recorder(tmp_path / "two")
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05, order=SaveOrder(trainer=True, rewrites=True),
                              verified=[])
    assert _verdicts(keeper, rec, 3, 1) == [(expect, 3)], rec.events
    bad = [e for e in rec.events if e["type"] == "alert" and e.get("rule") == "checkpoint_bad"]
    assert bool(bad) == cut
    assert read_sidecar(ck)["watched"] == kept          # not overwritten with the all-0 looks
    assert verify_checkpoint(ck, trainer=True, rewrites=True).verdict == expect   # `verify RUN`
    assert keeper.resume_point(allow_drift=False) == (None if cut else str(ck))


def test_an_order_nobody_watched_is_still_decided_by_the_times(tmp_path):
    """The fallback stays: a save no runner watched (no ``watched`` in its sidecar, every file
    there at the first look) with its state older than its weights is an earlier save's."""
    out = tmp_path / "out"
    ck = out / "checkpoint-4"
    _save(ck, 1, state_mtime_shift=-3600.0)
    rec = Recorder(tmp_path)
    keeper = CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05, order=SaveOrder(trainer=True, rewrites=True))
    assert _verdicts(keeper, rec, 1, 1) == [("incomplete", 1)]
    assert "watched" not in read_sidecar(ck)
