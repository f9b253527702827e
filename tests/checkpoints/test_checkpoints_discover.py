"""Checkpoint discovery over the layouts users have, newest first."""
from __future__ import annotations

import os
import time

from moeconsole.runner.checkpoints.discover import find_checkpoints, megatron_save_complete


def _names(cks):
    return [(c.path.name, c.step, c.layout) for c in cks]


def test_swift_output_dir_with_versions_symlink_and_merged(mk, tmp_path):
    out = tmp_path / "output"
    mk.adapter(out / "v0-20260101-000000" / "checkpoint-10")
    mk.adapter(out / "v0-20260101-000000" / "checkpoint-20")
    mk.adapter(out / "v1-20260102-000000" / "checkpoint-30")
    merged = mk.sharded(out / "v1-20260102-000000" / "checkpoint-30-merged")
    (out / "v1-20260102-000000" / "images").mkdir()
    (out / "v1-20260102-000000" / "runs").mkdir()
    os.symlink(out / "v1-20260102-000000" / "checkpoint-30", out / "v1-20260102-000000" / "last-checkpoint")
    os.utime(merged, (time.time() + 5, time.time() + 5))
    cks = find_checkpoints(out)
    assert _names(cks) == [("checkpoint-30-merged", 30, "merged"), ("checkpoint-30", 30, "hf_adapter"),
                           ("checkpoint-20", 20, "hf_adapter"), ("checkpoint-10", 10, "hf_adapter")]
    assert all(not c.path.is_symlink() for c in cks)


def test_demo_trainer_layout(mk, tmp_path):
    for step in (5, 15, 10):
        mk.demo(tmp_path / "out" / f"checkpoint-{step}", step)
    assert [c.step for c in find_checkpoints(tmp_path / "out")] == [15, 10, 5]


def test_megatron_save_dir(mk, tmp_path):
    save = tmp_path / "save"
    mk.megatron(save, 100)
    mk.megatron(save, 200)
    cks = find_checkpoints(save)
    assert _names(cks) == [("iter_0000200", 200, "megatron"), ("iter_0000100", 100, "megatron")]
    assert all(megatron_save_complete(c) for c in cks)


def test_megatron_iteration_newer_than_tracker_is_not_complete(mk, tmp_path):
    save = tmp_path / "save"
    mk.megatron(save, 100)
    mk.megatron(save, 200, tracker=False)
    newest = find_checkpoints(save)[0]
    assert newest.step == 200 and not megatron_save_complete(newest)


def test_swift_megatron_checkpoint_nests_an_iter_dir(mk, tmp_path):
    out = tmp_path / "out" / "v0-x"
    ck = out / "checkpoint-50"
    mk.megatron(ck, 50)                       # iter_0000050/ + tracker inside checkpoint-50/
    mk.adapter(out / "checkpoint-100")
    mk.megatron(out / "checkpoint-100", 100)  # HF adapter saved next to the Megatron one
    assert _names(find_checkpoints(tmp_path / "out")) == [("checkpoint-100", 100, "hf_adapter"),
                                                          ("checkpoint-50", 50, "megatron")]
    assert _names(find_checkpoints(ck)) == [("checkpoint-50", 50, "megatron")]


def test_root_is_a_checkpoint_or_a_file(mk, tmp_path):
    ck = mk.adapter(tmp_path / "checkpoint-7")
    assert _names(find_checkpoints(ck)) == [("checkpoint-7", 7, "hf_adapter")]
    f = ck / "adapter_model.safetensors"
    assert _names(find_checkpoints(f)) == [("adapter_model.safetensors", None, "file")]
    assert _names(find_checkpoints(mk.megatron(tmp_path / "save", 3))) == [("iter_0000003", 3, "megatron")]


def test_final_model_in_output_dir_beside_checkpoints(mk, tmp_path):
    out = mk.sharded(tmp_path / "out")
    mk.adapter(out / "checkpoint-4")
    assert _names(find_checkpoints(out)) == [("checkpoint-4", 4, "hf_adapter"), ("out", None, "hf_sharded")]


def test_step_from_trainer_state_when_the_name_has_none(mk, tmp_path):
    d = mk.demo(tmp_path / "best", 42)
    assert find_checkpoints(d)[0].step == 42


def test_empty_checkpoint_dir_is_found_as_unknown(tmp_path):
    (tmp_path / "out" / "checkpoint-3").mkdir(parents=True)
    assert _names(find_checkpoints(tmp_path / "out")) == [("checkpoint-3", 3, "unknown")]


def test_nothing_to_find(tmp_path):
    assert find_checkpoints(tmp_path / "missing") == []
    (tmp_path / "notes.txt").write_text("x")
    assert find_checkpoints(tmp_path) == []
    assert find_checkpoints(tmp_path / "notes.txt") == []


def test_same_step_newest_by_mtime(mk, tmp_path):
    a = mk.adapter(tmp_path / "out" / "v0" / "checkpoint-10")
    b = mk.adapter(tmp_path / "out" / "v1" / "checkpoint-10")
    os.utime(a, (time.time() + 100, time.time() + 100))
    assert [c.path for c in find_checkpoints(tmp_path / "out")] == [a, b]


def test_one_rule_for_the_step_of_a_checkpoint_or_resume_point(mk, tmp_path):
    """``step_of`` is the one rule (the resume's ``{step}``, an attempt's resumed step, sync's
    retention): each framework's real layout, and the names that carry no step."""
    from moeconsole.runner.checkpoints.discover import step_in_name, step_of

    save = tmp_path / "save"                             # Megatron-LM --save/--load dir
    mk.megatron(save, 40)
    assert step_of(save / "iter_0000040") == 40
    assert step_of(save) == 40                           # a --load dir: its tracker's iteration
    swift = tmp_path / "out" / "v0-x"                    # ms-swift 4.x Megatron: checkpoint-N/iter_N + tracker
    mk.megatron(swift / "checkpoint-8", 8)
    mk.adapter(swift / "checkpoint-8")
    assert step_of(swift / "checkpoint-8") == 8
    assert step_of(swift / "checkpoint-8" / "iter_0000008") == 8
    os.symlink(swift / "checkpoint-8", swift / "last-checkpoint")   # ms-swift's update_last_checkpoint_symlink
    assert step_of(swift / "last-checkpoint") == 8
    assert step_of(mk.demo(tmp_path / "best", 42)) == 42             # trainer_state.json global_step
    release = tmp_path / "release_save"
    (release / "release").mkdir(parents=True)
    (release / "latest_checkpointed_iteration.txt").write_text("release")
    assert step_of(release) is None                      # a release checkpoint is no training step
    assert step_in_name("checkpoint-30-merged") == 30
    for name in ("iter_40", "my-40", "checkpoint-40.bak", "checkpoint-", "v0-20260101-000000", "release"):
        assert step_in_name(name) is None, name


def test_a_later_ms_swift_invocations_save_is_newer_even_at_a_lower_step(tmp_path):
    """ms-swift counts from step 1 again after `--resume_only_model true --ignore_data_skip true`
    (measured with 4.6.0): the second invocation's checkpoint-3 holds weights trained after the
    first one's checkpoint-6, and is the resume point; by step alone v0's checkpoint-6 won and a
    restart went back to older weights."""
    from moeconsole.runner.checkpoints.watch import latest_good
    from tests.checkpoints.conftest import write_adapter

    out = tmp_path / "output"
    for version, steps in (("v0-20261129-100000", (3, 6)), ("v1-20261129-110000", (3,)),
                           ("v10-20261129-120000", ()), ("v2-20261129-113000", (2,))):
        (out / version).mkdir(parents=True)
        for step in steps:
            write_adapter(out / version / f"checkpoint-{step}")
    found = [(c.path.parent.name.split("-")[0], c.step) for c in find_checkpoints(out)]
    assert found == [("v2", 2), ("v1", 3), ("v0", 6), ("v0", 3)]
    good = latest_good(out)
    assert good is not None and good.path == out / "v2-20261129-113000" / "checkpoint-2"
