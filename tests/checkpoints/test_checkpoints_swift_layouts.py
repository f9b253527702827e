"""Every save layout ms-swift 4.2.0 and 4.6 write on the Megatron path gets the right verdict.

The layouts follow ms-swift's ``MegatronTrainer.save_checkpoint`` (swift/megatron/trainers/base.py)
and ``save_mcore_checkpoint`` (swift/megatron/utils/megatron_lm_utils.py): with
``--save_safetensors true --no_save_optim true`` the Megatron part is ``iter_N/common.pt`` only;
the weights are the adapter (``--merge_lora false``) or ``checkpoint-N-merged/`` (``true``).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from moeconsole.runner.checkpoints.discover import find_checkpoints
from moeconsole.runner.checkpoints.verify import verify_checkpoint
from moeconsole.runner.checkpoints.watch import latest_good
from tests.checkpoints.conftest import merged_model, swift_common, write_adapter, write_megatron_iter, write_stub


def v46_adapter_save(out: Path, n: int) -> Path:
    """4.6, --merge_lora false: checkpoint-N/ = adapter + adapter_config + args.json + tracker + common.pt."""
    ck = write_adapter(out / f"checkpoint-{n}")
    return swift_common(ck, n)


def test_46_adapter_with_common_pt_only_is_ok_not_a_stub(tmp_path):
    ck = v46_adapter_save(tmp_path, 100)
    assert sorted(p.name for p in ck.iterdir()) == ["adapter_config.json", "adapter_model.safetensors", "args.json",
                                                    "iter_0000100", "latest_checkpointed_iteration.txt"]
    v = verify_checkpoint(ck)
    assert (v.ok, v.verdict, v.step) == (True, "ok", 100), v.problems
    assert v.tensors == 16 and "LoRA r=8" in v.reason
    assert any("--finetune false" in n for n in v.notes)


def test_the_records_39kb_stub_beside_common_pt_stays_empty_stub(tmp_path):
    ck = swift_common(tmp_path / "checkpoint-200", 200)
    write_stub(ck / "adapter_model.safetensors")
    (ck / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    assert (ck / "adapter_model.safetensors").stat().st_size == 39 * 1024
    v = verify_checkpoint(ck)
    assert (v.ok, v.verdict) == (False, "empty_stub")
    assert "adapter_model.safetensors" in v.reason


def test_merge_lora_save_metadata_dir_is_as_good_as_its_merged_model(tmp_path):
    # 4.2.0 (and 4.6 without grouped-LoRA bridge support): checkpoint-N/ has no weights at all.
    ck = swift_common(tmp_path / "checkpoint-300", 300)
    merged = merged_model(tmp_path / "checkpoint-300-merged", 300)
    v = verify_checkpoint(ck)
    assert v.ok and "checkpoint-300-merged" in v.reason, v.problems
    mv = verify_checkpoint(merged)
    assert (mv.ok, mv.layout, mv.tensors) == (True, "merged", 8)


def test_metadata_dir_without_weights_anywhere_is_empty_stub(tmp_path):
    ck = swift_common(tmp_path / "checkpoint-300", 300)
    v = verify_checkpoint(ck)
    assert (v.ok, v.verdict) == (False, "empty_stub")
    assert "common.pt" in v.reason and "checkpoint-300-merged" in v.reason


def test_metadata_dir_whose_merged_model_is_a_stub_is_bad(tmp_path):
    ck = swift_common(tmp_path / "checkpoint-300", 300)
    merged_model(tmp_path / "checkpoint-300-merged", 300, stub=True)
    v = verify_checkpoint(ck)
    assert (v.ok, v.verdict) == (False, "empty_stub")
    assert "checkpoint-300-merged" in v.reason


def test_optimizer_state_saved_gives_torch_dist_shards_beside_the_adapter(tmp_path):
    # --no_save_optim false: save_mcore_checkpoint runs dist_checkpointing.save (distcp shards).
    ck = write_adapter(tmp_path / "checkpoint-50")
    write_megatron_iter(ck, 50)
    v = verify_checkpoint(ck)
    assert v.ok, v.problems
    assert {"iter_0000050/.metadata", "iter_0000050/common.pt"} <= {f["path"] for f in v.files}
    (ck / "iter_0000050" / "__0_0.distcp").unlink()
    bad = verify_checkpoint(ck)
    assert not bad.ok and bad.verdict in ("missing_shard", "empty_stub")


def test_a_merged_dir_is_never_the_resume_point_on_46(tmp_path):
    run = tmp_path / "v0-20260101-000000"
    v46_adapter_save(run, 100)
    ck200 = v46_adapter_save(run, 200)
    merged_model(run / "checkpoint-200-merged", 200)    # newest by mtime, a full model
    assert [c.layout for c in find_checkpoints(tmp_path)][:1] == ["merged"]
    assert latest_good(tmp_path).path == ck200
    shutil.rmtree(ck200)
    assert latest_good(tmp_path).path.name == "checkpoint-100"


def test_the_watcher_waits_for_an_ms_swift_save_to_finish(tmp_path):
    """ms-swift writes args.json, then iter_N/common.pt and the tracker, then the weights: the
    watcher never reports the save in between (it would read as a stub)."""
    from moeconsole.runner.checkpoints.watch import CheckpointWatcher

    now = [0.0]
    w = CheckpointWatcher(tmp_path, settle_s=1.0, stale_s=100.0, clock=lambda: now[0])

    def settle():
        got = []
        for _ in range(3):
            got += w.poll()
            now[0] += 2.0
        return got

    ck = tmp_path / "checkpoint-100"
    ck.mkdir()
    (ck / "args.json").write_text("{}")
    assert settle() == []
    swift_common(ck, 100)
    assert settle() == []                     # metadata only, no weights, no -merged yet
    merged_model(tmp_path / "checkpoint-100-merged", 100)
    ready = settle()
    assert {c.path.name for c in ready} == {"checkpoint-100", "checkpoint-100-merged"}
    assert all(verify_checkpoint(c.path).ok for c in ready)
    # An adapter save is ready once the adapter is there.
    ck2 = swift_common(tmp_path / "checkpoint-200", 200)
    assert settle() == []
    write_adapter(ck2)
    assert [c.path.name for c in settle()] == ["checkpoint-200"]


def test_a_checkpoint_dir_left_holding_only_our_sidecar_is_not_a_bad_save(tmp_path):
    """ms-swift's --save_total_limit deletes old saves with ``shutil.rmtree(checkpoint,
    ignore_errors=True)`` (4.6.0 swift/trainers/mixin.py:507, swift/megatron/trainers/base.py:918);
    a sidecar written during that delete survives it in a ``checkpoint-N/`` of its own. That dir
    is not a checkpoint (never an empty-stub alert, never a resume point); an empty
    ``checkpoint-N/`` (a save that wrote nothing) still is a stub."""
    from moeconsole.runner.checkpoints.sidecar import write_sidecar

    out = tmp_path / "out"
    good = write_adapter(out / "checkpoint-4")
    old = write_adapter(out / "checkpoint-2")
    write_sidecar(old, run_id="r", recipe_hash="h", step=2, verdict="ok", suspect=False)
    for f in old.iterdir():
        if f.name != "moeconsole.json":
            f.unlink()          # what rmtree did before our write landed
    (out / "checkpoint-6").mkdir()
    listed = {c.path.name: c.layout for c in find_checkpoints(out)}
    assert listed == {"checkpoint-6": "unknown", "checkpoint-4": "hf_adapter"}, listed
    assert verify_checkpoint(out / "checkpoint-6").verdict == "empty_stub"
    assert latest_good(out) is not None and latest_good(out).path == good


def test_our_sidecar_does_not_change_which_save_ms_swift_rotates_away(tmp_path):
    """ms-swift's Megatron trainer deletes the oldest saves by the directory's mtime
    (4.6.0 swift/megatron/trainers/base.py:926-929, ``_sorted_checkpoints``: ``glob('checkpoint-*')``,
    ``sorted(..., key=os.path.getmtime)``), and so does transformers on the HF path
    (5.19.0 trainer.py:3382-3388, trainer_utils.py:305-310, keeping the newest by mtime). Stamping
    a verdict late into an older save must not make it the newest, or --save_total_limit would
    delete the newer one instead."""
    import os

    from moeconsole.runner.checkpoints.sidecar import read_sidecar, write_sidecar

    def swift_order(out: Path) -> list[str]:   # the source's ordering, as written there
        dirs = [str(p) for p in out.glob("checkpoint-*") if p.is_dir() and not p.name.endswith("-merged")]
        return [Path(p).name for p in sorted(dirs, key=os.path.getmtime)]

    out = tmp_path / "out"
    old, new = v46_adapter_save(out, 100), v46_adapter_save(out, 200)
    os.utime(old, (1_000_000, 1_000_000))
    os.utime(new, (1_000_100, 1_000_100))
    assert swift_order(out) == ["checkpoint-100", "checkpoint-200"]
    write_sidecar(old, run_id="r", recipe_hash="h", step=100, verdict="ok", suspect=False)
    assert read_sidecar(old) is not None
    assert swift_order(out) == ["checkpoint-100", "checkpoint-200"]
    assert [c.path.name for c in find_checkpoints(out)] == ["checkpoint-200", "checkpoint-100"]


def test_an_async_megatron_save_is_not_reported_before_megatron_core_finishes_it(tmp_path):
    """``--async_save``: ms-swift 4.x writes the tracker as soon as it has scheduled the save, while
    the torch_dist shards are still being written in the background (4.6.0 swift/megatron/utils/
    megatron_lm_utils.py:376-398, ``save_mcore_checkpoint``; 4.2.0 l.281-301 the same), then the
    adapter at once (trainers/base.py:860-869). megatron-core writes ``.metadata`` and
    ``metadata.json`` in the request's finalize functions, which ms-swift runs at a later step
    (megatron/core/dist_checkpointing/serialization.py ``save``, step 7 of its docstring;
    base.py:736 ``maybe_finalize_async_save``). Until then the save is still being written, not
    an incomplete one; one that never finishes is judged when it has gone stale."""
    from moeconsole.runner.checkpoints.discover import Checkpoint, save_underway
    from moeconsole.runner.checkpoints.watch import CheckpointWatcher

    now = [0.0]
    w = CheckpointWatcher(tmp_path, settle_s=1.0, stale_s=100.0, clock=lambda: now[0])

    def settle(rounds: int = 3) -> list[str]:
        got = []
        for _ in range(rounds):
            got += [c.path.name for c in w.poll()]
            now[0] += 2.0
        return got

    done = v46_adapter_save(tmp_path, 40)
    assert settle() == ["checkpoint-40"]
    ck = write_adapter(tmp_path / "checkpoint-50")
    it = write_megatron_iter(ck, 50)            # the tracker names 50 already, as ms-swift writes it
    aside = tmp_path.parent / f"{tmp_path.name}-finalize"
    aside.mkdir()
    for name in (".metadata", "metadata.json"):
        (it / name).rename(aside / name)        # what the finalize functions have not written yet
    why = save_underway(Checkpoint(ck, 50, "hf_adapter")) or ""
    assert "iter_0000050" in why and "metadata" in why, why
    assert settle() == []
    for name in (".metadata", "metadata.json"):
        (aside / name).rename(it / name)
    assert settle() == ["checkpoint-50"]
    assert verify_checkpoint(ck).ok
    # a save that died before its finalize: reported once stale, and not the resume point
    dead = write_adapter(tmp_path / "checkpoint-60")
    (write_megatron_iter(dead, 60) / ".metadata").unlink()
    (dead / "iter_0000060" / "metadata.json").unlink()
    assert settle() == []
    assert settle(60) == ["checkpoint-60"]
    assert not verify_checkpoint(dead).ok
    assert latest_good(tmp_path).path == ck
