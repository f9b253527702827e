"""The keeper's count of bad saves in a row, and when a newer good save ends the streak."""
from __future__ import annotations

from pathlib import Path

from runner.checkpoints.keeper import CheckpointKeeper


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
