"""Review R53 (s4): a save lacking one process's RNG share, and shares an earlier attempt left behind.

transformers resumes from a save whose ``rng_state_{i}.pth`` is absent (``_load_rng_state`` logs and returns,
5.19.0 trainer.py l.3809-3817; each process writes its share after every collective step of the save,
l.3356-3361): only process i's RNG restarts fresh. A share cut short (no zip end) makes ``torch.load`` raise on
every resume. Shares older than the attempt that wrote the save (ms-swift's run-level args.json, written at each
launch) are an earlier attempt's, and not counted."""
from __future__ import annotations

import json
import os

import torch

from moeconsole.runner.checkpoints.verify import verify_checkpoint
from moeconsole.runner.checkpoints.watch import latest_good
from tests.checkpoints.test_checkpoints_verify import _rank_save


def _warned(v, share: str) -> bool:
    return any(f"{share} is missing" in n and "starting fresh" in n for n in v.notes)


def test_a_save_lacking_only_an_absent_share_stays_the_resume_point_with_a_warning(tmp_path):
    """The reviewer's input: checkpoint-500 of a 2-process world (args 2/2) holding only rng_state_0.pth.
    Before: `incomplete`, and latest_good returned None (the restart began at step 0, 500 steps lost)."""
    out = tmp_path / "v0-20261201-120000"
    save = _rank_save(out / "checkpoint-500", 2, 2, (0,))
    v = verify_checkpoint(save, trainer=True)
    assert v.verdict == "ok", v.reason
    assert _warned(v, "rng_state_1.pth") and "process 1" in " ".join(v.notes)
    good = latest_good(out, trainer=True)
    assert good is not None and good.path == save
    # (with an older save holding more shares, latest_good's round-19 comparison, ``discover.process_shares``,
    # decides between the two: not this rule's)


def test_a_share_cut_short_keeps_the_save_incomplete_and_the_older_one_is_the_resume_point(tmp_path):
    out = tmp_path / "v0-20261201-120000"
    older = _rank_save(out / "checkpoint-250", 2, 2, (0, 1))
    cut = _rank_save(out / "checkpoint-500", 2, 2, (0, 1))
    whole = (cut / "rng_state_1.pth").read_bytes()
    (cut / "rng_state_1.pth").write_bytes(whole[: len(whole) // 2])
    v = verify_checkpoint(cut, trainer=True)
    assert v.verdict == "incomplete" and "rng_state_1.pth" in v.reason and "cut short" in v.reason
    good = latest_good(out, trainer=True)
    assert good is not None and good.path == older
    # a cut share is reported before an absent one (the worse of the two decides)
    both = _rank_save(out / "checkpoint-750", 4, 4, (0, 2, 3))
    whole = (both / "rng_state_3.pth").read_bytes()
    (both / "rng_state_3.pth").write_bytes(whole[:10])
    v = verify_checkpoint(both, trainer=True)
    assert v.verdict == "incomplete" and "rng_state_3.pth" in v.reason


def _age(path, seconds: float) -> None:
    st = path.stat()
    os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


def test_shares_an_earlier_attempt_left_in_a_rewritten_save_are_not_counted(tmp_path):
    """Finding 4: `--add_version false`, an earlier 6-process attempt left rng_state_4/_5 in checkpoint-8; the
    new attempt, 2 nodes x 4 on disks of their own (args 8/4), writes 0..3 there again. Before: "rng_state_6.pth
    ... missing" (incomplete under checks 6). The earlier attempt's shares are older than the run dir's
    args.json that ms-swift writes at each launch."""
    out = tmp_path / "out"
    save = out / "checkpoint-8"
    save.mkdir(parents=True)
    for i in (4, 5):
        torch.save({"cpu": torch.random.get_rng_state()}, save / f"rng_state_{i}.pth")
        _age(save / f"rng_state_{i}.pth", 3600)
    (out / "args.json").write_text(json.dumps({"global_world_size": 8, "local_world_size": 4}))
    _age(out / "args.json", 60)   # this attempt's launch, before its save
    _rank_save(save, 8, 4, (0, 1, 2, 3))
    v = verify_checkpoint(save, trainer=True)
    assert v.verdict == "ok" and not any("rng_state_" in n for n in v.notes), v.notes
    # the same shares written by this attempt (newer than its launch): a disk the nodes share, all 8 due
    for i in (4, 5):
        torch.save({"cpu": torch.random.get_rng_state()}, save / f"rng_state_{i}.pth")
    assert _warned(verify_checkpoint(save, trainer=True), "rng_state_6.pth")


def test_a_save_of_an_earlier_attempt_counts_all_its_shares(tmp_path):
    """A save not written again since a later launch rewrote args.json: every share is older than that
    args.json, and all of them are this save's own (a shared disk: 0, 1 and 3 of 4 there, 2 absent)."""
    out = tmp_path / "out"
    save = _rank_save(out / "checkpoint-4", 4, 2, (0, 1, 3))
    for f in save.iterdir():
        _age(f, 3600)
    (out / "args.json").write_text(json.dumps({"global_world_size": 4, "local_world_size": 2}))
    assert _warned(verify_checkpoint(save, trainer=True), "rng_state_2.pth")


def test_the_best_save_named_is_parsed_once_per_version_of_trainer_state(tmp_path, monkeypatch):
    """Finding 6 (cost): a trainer_state.json of 100k logged steps is ~21 MB and ~0.7 s to parse; every
    watcher of the run asked it again at each resume-point change. Parsed again only when it changes
    (path, mtime, size)."""
    from moeconsole.runner.checkpoints import discover
    d = _rank_save(tmp_path / "v0-1" / "checkpoint-12", 1, 1, ())
    (d / "args.json").write_text(json.dumps({"metric_for_best_model": "loss"}))
    state = {"global_step": 12, "best_metric": 6.8, "best_global_step": 8,
             "best_model_checkpoint": str(d.parent / "checkpoint-8"), "log_history": [{"step": 8, "eval_loss": 6.8}]}
    (d / "trainer_state.json").write_text(json.dumps(state))
    parsed: list[int] = []
    real = json.loads

    def counted(text, *a, **k):
        if "best_model_checkpoint" in text:
            parsed.append(len(text))
        return real(text, *a, **k)
    monkeypatch.setattr(discover.json, "loads", counted)
    first = discover.best_save_named(d)
    assert discover.best_save_named(d) == first and len(parsed) == 1
    state["best_metric"], state["log_history"] = 6.5, [*state["log_history"], {"step": 12, "eval_loss": 6.9}]
    (d / "trainer_state.json").write_text(json.dumps(state))
    assert discover.best_save_named(d)["value"] == 6.5 and len(parsed) == 2
