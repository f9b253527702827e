"""Layout-aware checkpoint verdicts: adapters, shards, Megatron saves, --full, suspect, drift."""
from __future__ import annotations

import hashlib
import json
import subprocess

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file as np_save
from safetensors.torch import save_file as pt_save

from moeconsole.runner.checkpoints.sidecar import write_sidecar
from moeconsole.runner.checkpoints.verify import verify_checkpoint


def _problems(v):
    return {p["verdict"] for p in v.problems}


# --- adapters ----------------------------------------------------------------------------

def test_adapter_ok_with_counts_and_lora_summary(mk, tmp_path):
    v = verify_checkpoint(mk.adapter(tmp_path / "checkpoint-10", r=8))
    assert (v.ok, v.verdict, v.step, v.layout) == (True, "ok", 10, "hf_adapter")
    assert v.tensors == 16 and v.params == 16 * 8 * 32
    assert "r=8" in v.reason and "8 pairs" in v.reason
    assert v.files[0]["path"] == "adapter_model.safetensors" and v.files[0]["ok"]


def test_demo_trainer_checkpoint_written_with_torch(mk, tmp_path):
    v = verify_checkpoint(mk.demo(tmp_path / "checkpoint-3", 3))
    assert v.ok and v.tensors == 8, v.reason


def test_stub_adapter_is_empty_stub_even_with_other_problems(mk, tmp_path):
    d = tmp_path / "checkpoint-20"
    mk.stub(d / "adapter_model.safetensors")            # and no adapter_config.json either
    v = verify_checkpoint(d)
    assert (v.ok, v.verdict) == (False, "empty_stub")
    assert "adapter_model.safetensors" in v.reason and "no tensors" in v.reason
    assert {"empty_stub", "missing_config"} <= _problems(v)


def test_adapter_without_config(mk, tmp_path):
    v = verify_checkpoint(mk.adapter(tmp_path / "checkpoint-1", with_config=False))
    assert v.verdict == "missing_config" and "adapter_config.json" in v.reason


def test_lora_half_missing(mk, tmp_path):
    tensors = mk.lora_tensors(r=8)
    del tensors["base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"]
    v = verify_checkpoint(mk.adapter(tmp_path / "c", tensors))
    assert v.verdict == "lora_mismatch" and "layers.1.self_attn.v_proj has lora_A but no lora_B" in v.reason


def test_lora_rank_differs_from_config(mk, tmp_path):
    v = verify_checkpoint(mk.adapter(tmp_path / "c", mk.lora_tensors(r=4), r=8))
    assert v.verdict == "lora_mismatch" and "rank 4" in v.reason and "r=8" in v.reason


def test_lora_rank_pattern_and_expert_stacked_rank(mk, tmp_path):
    tensors = mk.lora_tensors(r=8, modules=("q_proj",))
    tensors.update(mk.lora_tensors(r=16, modules=("o_proj",), seed=1))
    # target_parameters LoRA on 4 stacked experts: rank axis is r * num_experts
    tensors["base_model.model.model.layers.0.mlp.experts.lora_A.weight"] = np.ones((32, 32), np.float32)
    tensors["base_model.model.model.layers.0.mlp.experts.lora_B.weight"] = np.ones((64, 32), np.float32)
    v = verify_checkpoint(mk.adapter(tmp_path / "c", tensors, r=8, config={"rank_pattern": {"o_proj": 16}}))
    assert v.ok, v.problems


def test_adapter_without_any_lora_tensor(mk, tmp_path):
    v = verify_checkpoint(mk.adapter(tmp_path / "c", {"lm_head.weight": np.ones((4, 4), np.float32)}))
    assert v.verdict == "lora_mismatch" and "none of the 1 tensors" in v.reason


# --- full and sharded models ---------------------------------------------------------------

def test_sharded_ok(mk, tmp_path):
    v = verify_checkpoint(mk.sharded(tmp_path / "checkpoint-9", shards=3, per_shard=2))
    assert (v.ok, v.layout, v.tensors, v.params) == (True, "hf_sharded", 6, 6 * 64), v.problems


def test_shard_missing_from_the_index(mk, tmp_path):
    d = mk.sharded(tmp_path / "m", shards=3)
    (d / "model-00002-of-00003.safetensors").unlink()
    v = verify_checkpoint(d)
    assert v.verdict == "missing_shard" and "model-00002-of-00003.safetensors" in v.reason


def test_index_names_a_tensor_no_shard_has(mk, tmp_path):
    d = mk.sharded(tmp_path / "m")
    index = json.loads((d / "model.safetensors.index.json").read_text())
    index["weight_map"]["model.layers.99.mlp.weight"] = "model-00001-of-00003.safetensors"
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    v = verify_checkpoint(d)
    assert v.verdict == "index_mismatch" and "model.layers.99.mlp.weight" in v.reason


def test_shard_series_incomplete_without_index(mk, tmp_path):
    d = mk.sharded(tmp_path / "m", shards=3)
    (d / "model.safetensors.index.json").unlink()
    (d / "model-00003-of-00003.safetensors").unlink()
    v = verify_checkpoint(d)
    assert v.verdict == "missing_shard" and "3 of 3" in v.reason


def test_one_stub_shard_is_the_headline(mk, tmp_path):
    d = mk.sharded(tmp_path / "m")
    mk.stub(d / "model-00002-of-00003.safetensors")
    v = verify_checkpoint(d)
    assert v.verdict == "empty_stub" and "model-00002-of-00003" in v.reason
    assert "index_mismatch" not in _problems(v)     # the stub's tensors are unknown, not absent


def test_full_model_without_config_json(mk, tmp_path):
    d = mk.sharded(tmp_path / "checkpoint-5-merged", config=False)
    v = verify_checkpoint(d)
    assert (v.layout, v.verdict) == ("merged", "missing_config")


def test_a_plain_state_dict_save_needs_no_config_json(tmp_path):
    """A training script of one's own saves its weights with safetensors' save_file and its
    optimizer with torch.save into ckpt_N/: no transformers file anywhere, so no config.json is
    owed (the run was paused as 2 bad saves in a row, missing_config). A transformers save of the
    same weights (Trainer's checkpoint-N/, or a file only transformers writes beside them) still
    needs it."""
    state = {"weight": torch.randn(1, 16), "bias": torch.zeros(1)}
    own = tmp_path / "out" / "ckpt_25"
    own.mkdir(parents=True)
    pt_save(state, str(own / "model.safetensors"))
    torch.save({"state": {}, "param_groups": []}, own / "optim.pt")
    v = verify_checkpoint(own)
    assert (v.ok, v.verdict, v.tensors) == (True, "ok", 2), v.reason
    assert any("config.json" in n and "from_pretrained" in n for n in v.notes), v.notes

    for name, extra in (("checkpoint-25", None), ("final", "generation_config.json"), ("final2", "training_args.bin")):
        hf = tmp_path / name
        hf.mkdir()
        pt_save(state, str(hf / "model.safetensors"))
        if extra:
            (hf / extra).write_bytes(b"{}")
        v = verify_checkpoint(hf)
        assert "missing_config" in _problems(v), (name, v.verdict, v.reason)


def test_empty_checkpoint_dir(tmp_path):
    d = tmp_path / "checkpoint-3"
    d.mkdir()
    v = verify_checkpoint(d)
    assert v.verdict == "empty_stub" and "no weight files" in v.reason


def test_single_file(tmp_path):
    p = tmp_path / "w.safetensors"
    np_save({"a": np.ones(3, np.float32)}, str(p))
    v = verify_checkpoint(p)
    assert (v.ok, v.layout, v.tensors) == (True, "file", 1)


# --- Megatron ---------------------------------------------------------------------------

def test_megatron_torch_dist_ok(mk, tmp_path):
    v = verify_checkpoint(mk.megatron(tmp_path / "save", 100))
    assert (v.ok, v.layout, v.step) == (True, "megatron", 100), v.problems
    assert {f["path"] for f in v.files} >= {"common.pt", "__0_0.distcp", ".metadata", "metadata.json"}


def test_megatron_distcp_named_by_metadata_is_missing(mk, tmp_path):
    d = mk.megatron(tmp_path / "save", 100)
    (d / "__0_0.distcp").rename(d / "__0_9.distcp")
    v = verify_checkpoint(d)
    assert v.verdict == "missing_shard" and "__0_0.distcp" in v.reason


def test_megatron_empty_distcp(mk, tmp_path):
    d = mk.megatron(tmp_path / "save", 100)
    (d / "__0_0.distcp").write_bytes(b"")
    v = verify_checkpoint(d)
    assert v.verdict == "empty_stub" and "__0_0.distcp is empty" in v.reason


def test_megatron_save_without_index_or_tracker_is_incomplete(mk, tmp_path):
    save = tmp_path / "save"
    mk.megatron(save, 100)
    d = mk.megatron(save, 200, tracker=False)
    v = verify_checkpoint(d)
    assert v.verdict == "incomplete" and "newer than latest_checkpointed_iteration.txt (100)" in v.reason
    (d / ".metadata").unlink()
    assert "the index it writes last" in " ".join(p["reason"] for p in verify_checkpoint(d).problems)


def test_swift_megatron_checkpoint_needs_its_tracker(mk, tmp_path):
    ck = tmp_path / "checkpoint-50"
    mk.megatron(ck, 50, tracker=False)
    v = verify_checkpoint(ck)
    assert v.verdict == "incomplete" and "latest_checkpointed_iteration.txt is missing" in v.reason
    (ck / "latest_checkpointed_iteration.txt").write_text("50")
    assert verify_checkpoint(ck).ok


def test_megatron_legacy_ranks(mk, tmp_path):
    d = mk.megatron_legacy(tmp_path / "save", 10)
    assert verify_checkpoint(d).ok
    (d / "mp_rank_01" / "model_optim_rng.pt").write_bytes(b"")
    assert verify_checkpoint(d).verdict == "empty_stub"


# --- --full -------------------------------------------------------------------------------

def test_full_hash_matches_sha256sum_and_scans_clean(mk, tmp_path):
    d = mk.demo(tmp_path / "checkpoint-2", 2)
    v = verify_checkpoint(d, full=True)
    assert v.ok, v.problems
    out = subprocess.run(["sha256sum", str(d / "adapter_model.safetensors")], capture_output=True, text=True)
    assert v.full["file_hashes"]["adapter_model.safetensors"] == out.stdout.split()[0]
    assert v.full["tensors_scanned"] == 8 and v.full["nonfinite_tensors"] == 0 and v.full["mb_per_s"] > 0


@pytest.mark.parametrize("dtype,bad", [(torch.bfloat16, float("nan")), (torch.float32, float("inf")),
                                       (torch.float16, float("-inf")), (torch.float8_e4m3fn, float("nan")),
                                       (torch.float8_e5m2, float("inf"))])
def test_full_finds_nonfinite_values(tmp_path, dtype, bad):
    t = torch.randn(64, 8)
    t[5, 3] = bad
    t[9, 1] = bad
    p = tmp_path / "w.safetensors"
    pt_save({"ok": torch.randn(4, 4), "broken": t.to(dtype)}, str(p))
    assert verify_checkpoint(p).ok                       # the fast path cannot see values
    v = verify_checkpoint(p, full=True)
    assert v.verdict == "nonfinite" and "broken (2)" in v.reason
    assert v.full["nonfinite"] == [{"file": "w.safetensors", "tensor": "broken", "count": 2, "numel": 512}]


def test_full_scan_is_chunked_over_large_tensors(tmp_path):
    """A tensor far larger than the scan chunk is scanned slice by slice and still found."""
    from moeconsole.runner.checkpoints.safetensors_file import read_header
    from moeconsole.runner.checkpoints.scan import scan_tensors

    big = np.random.default_rng(0).standard_normal((4096, 64)).astype(np.float32)
    big[4000, 7] = np.nan
    bf = torch.zeros(4096, 64, dtype=torch.bfloat16)
    bf[4095, 63] = float("inf")
    p = tmp_path / "w.safetensors"
    pt_save({"big": torch.from_numpy(big), "bf": bf}, str(p))
    header, _ = read_header(p)
    res = scan_tensors(p, header, chunk_bytes=4096)
    assert {x["tensor"]: x["count"] for x in res.nonfinite} == {"big": 1, "bf": 1}
    assert res.zero == []


def test_full_all_zero_weights(tmp_path):
    p = tmp_path / "w.safetensors"
    pt_save({"a": torch.zeros(8, 8), "b": torch.zeros(4, dtype=torch.bfloat16), "c": -torch.zeros(3)}, str(p))
    v = verify_checkpoint(p, full=True)
    assert v.verdict == "all_zeros" and "every one of the 3 float tensors" in v.reason


def test_full_adapter_whose_lora_b_are_all_zero_is_a_no_op(mk, tmp_path):
    tensors = mk.lora_tensors()
    for k in tensors:
        if ".lora_B." in k:
            tensors[k] = np.zeros_like(tensors[k])
    d = mk.adapter(tmp_path / "checkpoint-1", tensors)
    assert verify_checkpoint(d).ok
    v = verify_checkpoint(d, full=True)
    assert v.verdict == "all_zeros" and "every lora_B (8)" in v.reason
    assert v.full["zero_tensor_count"] == 8


def test_full_on_megatron_hashes_every_file(mk, tmp_path):
    d = mk.megatron(tmp_path / "save", 100)
    v = verify_checkpoint(d, full=True)
    assert v.ok
    expected = hashlib.sha256((d / "__0_0.distcp").read_bytes()).hexdigest()
    assert v.full["file_hashes"]["__0_0.distcp"] == expected


# --- suspect and drift ------------------------------------------------------------------------

def test_suspect_from_trainer_state_grad_norm_spike(mk, tmp_path):
    calm = mk.demo(tmp_path / "checkpoint-40", 40, grad_norms=[1.0] * 40)
    assert not verify_checkpoint(calm).suspect
    spiky = mk.demo(tmp_path / "checkpoint-41", 41, grad_norms=[1.0] * 40 + [50.0])
    v = verify_checkpoint(spiky)
    assert v.ok and v.suspect and "50x" in v.suspect_reason and "step 41" in v.suspect_reason


def test_suspect_from_run_grad_norms_and_from_sidecar(mk, tmp_path):
    d = mk.adapter(tmp_path / "checkpoint-30")
    points = [(s, 1.0) for s in range(1, 30)] + [(30, float("nan"))]
    assert verify_checkpoint(d, grad_norms=points).suspect
    assert not verify_checkpoint(d, grad_norms=points[:-1]).suspect
    write_sidecar(d, run_id="r1", recipe_hash="abc", step=30, verdict="ok", suspect=True)
    assert verify_checkpoint(d).suspect


def test_drift_against_the_stored_recipe_hash(mk, tmp_path):
    d = mk.adapter(tmp_path / "checkpoint-30")
    assert verify_checkpoint(d, expected_recipe_hash="abc").drift is None     # nothing stored: unknown
    write_sidecar(d, run_id="r1", recipe_hash="abc", step=30, verdict="ok", suspect=False)
    v = verify_checkpoint(d, expected_recipe_hash="def")
    assert (v.recipe_hash, v.drift, v.ok) == ("abc", True, True)
    assert verify_checkpoint(d, expected_recipe_hash="abc").drift is False


# --- the incident layout and pickle weights --------------------------------------------------

def test_swift_megatron_checkpoint_with_a_stub_adapter_beside_a_good_megatron_save(mk, tmp_path):
    """ms-swift Megatron with save_safetensors: checkpoint-N/ holds iter_N/ and the HF adapter.
    The Megatron part is fine; the safetensors adapter is the 39 KB stub of the incident."""
    ck = tmp_path / "v0-x" / "checkpoint-200"
    mk.megatron(ck, 200)
    mk.stub(ck / "adapter_model.safetensors")
    (ck / "adapter_config.json").write_text('{"r": 8, "peft_type": "LORA"}')
    v = verify_checkpoint(ck)
    assert (v.layout, v.verdict) == ("hf_adapter", "empty_stub")
    assert any(f["path"] == "iter_0000200/__0_0.distcp" and f["ok"] for f in v.files)
    mk.adapter(ck)
    assert verify_checkpoint(ck).ok


def test_torch_pickle_weights_are_size_checked_only(tmp_path):
    d = tmp_path / "checkpoint-3"
    d.mkdir()
    torch.save({"w": torch.ones(2)}, d / "pytorch_model-00001-of-00002.bin")
    torch.save({"w": torch.ones(2)}, d / "pytorch_model-00002-of-00002.bin")
    (d / "config.json").write_text("{}")
    v = verify_checkpoint(d)
    assert (v.layout, v.ok) == ("hf_full", True) and any("not verified" in n for n in v.notes)
    (d / "pytorch_model-00002-of-00002.bin").unlink()
    assert verify_checkpoint(d).verdict == "missing_shard"
    (d / "pytorch_model-00001-of-00002.bin").write_bytes(b"")
    assert verify_checkpoint(d).verdict == "empty_stub"


def test_full_counts_every_bad_tensor_but_lists_a_bounded_number(tmp_path):
    tensors = {f"layers.{i}.w": torch.full((4,), float("nan")) for i in range(60)}
    p = tmp_path / "w.safetensors"
    pt_save(tensors, str(p))
    v = verify_checkpoint(p, full=True)
    assert v.verdict == "nonfinite" and v.reason.startswith("60 tensor(s) hold NaN/inf")
    assert v.full["nonfinite_tensors"] == 60 and len(v.full["nonfinite"]) == 50


def test_a_trainer_save_cut_after_its_weights_is_incomplete_once_a_sibling_shows_the_trainer(tmp_path):
    """transformers' Trainer writes a save's weights first (save_model), then training_args.bin,
    the optimizer, the RNG state and trainer_state.json last. A save cut in its first moments holds
    only the adapter (what SIGTERM to a real ms-swift 4.6 run left: README.md, adapter_config.json,
    adapter_model.safetensors, additional_config.json); a resume from it loads the weights and
    starts again at step 0 (transformers reads trainer_state.json only if it is there). Beside a
    whole save of the same run it is not the run's resume point."""
    from moeconsole.runner.checkpoints.discover import Checkpoint, save_underway
    from tests.checkpoints.conftest import write_adapter

    out = tmp_path / "v0-20261129-190230"
    whole = write_adapter(out / "checkpoint-4", extras=False)
    for name in ("training_args.bin", "optimizer.pt", "scheduler.pt"):
        (whole / name).write_bytes(b"x")
    (whole / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": []}))
    cut = write_adapter(out / "checkpoint-8", extras=False)
    (cut / "additional_config.json").write_text("{}")
    (cut / "README.md").write_text("---\n")
    assert verify_checkpoint(whole).verdict == "ok"
    v = verify_checkpoint(cut)
    assert v.verdict == "incomplete" and "trainer_state.json is missing" in v.reason
    assert "trainer_state.json not written yet" in (save_underway(Checkpoint(cut, 8, "hf_adapter")) or "")
    # alone (an adapter copied by hand, a first save), the adapter is what it is: verified ok
    alone = write_adapter(tmp_path / "elsewhere" / "checkpoint-8", extras=False)
    assert verify_checkpoint(alone).verdict == "ok"


def _rank_save(d, world: int, local: int, shares, *, save_only_model: bool = False):
    """An ms-swift LoRA save of a world of ``world`` processes, ``local`` of them on process 0's node, holding
    the RNG state files of ``shares`` (written by torch.save, as transformers' ``_save_rng_state`` does) and
    args.json as ms-swift copies it in (``global_world_size``, ``local_world_size``, ``save_only_model``)."""
    from tests.checkpoints.conftest import write_adapter
    write_adapter(d, extras=False)
    for name in ("training_args.bin", "optimizer.pt", "scheduler.pt"):
        (d / name).write_bytes(b"x")
    (d / "args.json").write_text(json.dumps({"rank": 0, "global_world_size": world, "local_world_size": local,
                                             "save_only_model": save_only_model}))
    for i in shares:
        torch.save({"cpu": torch.random.get_rng_state()}, d / f"rng_state_{i}.pth")
    step = int(d.name.rsplit("-", 1)[1])
    (d / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    return d


def test_a_save_of_several_processes_is_whole_only_with_every_process_share(tmp_path):
    """Every process writes its own rng_state_{i}.pth into a Trainer save, unordered with process 0's
    trainer_state.json (transformers 5.19.0 trainer.py l.3355-3375, l.3470-3477): a process killed while it
    writes its file leaves trainer_state.json there and its own share absent or cut short. Such a save is
    `incomplete` when cut short, a warning when absent (and still being written while it lasts); measured with real ms-swift in
    tests/swift/test_swift_multiproc.py. Node 0 of two nodes with disks of their own holds only its own
    processes' shares; with a share of another node there, the disk is shared and every share is due."""
    from moeconsole.runner.checkpoints.discover import Checkpoint, save_underway
    out = tmp_path / "v0-20261201-110000"
    whole = _rank_save(out / "checkpoint-4", 2, 2, (0, 1))
    assert verify_checkpoint(whole, trainer=True).verdict == "ok"
    assert save_underway(Checkpoint(whole, 4, "hf_adapter"), trainer=True) is None
    lacking = _rank_save(out / "checkpoint-8", 2, 2, (0,))
    v = verify_checkpoint(lacking, trainer=True)
    # absent, transformers resumes with process 1's RNG fresh (review R53): a warning, still a resume point
    assert v.verdict == "ok" and any("rng_state_1.pth is missing" in n for n in v.notes), v.notes
    why = save_underway(Checkpoint(lacking, 8, "hf_adapter"), trainer=True) or ""
    assert "rng_state_1.pth (process 1 of 2's RNG state) not written yet" in why
    cut = _rank_save(out / "checkpoint-12", 4, 4, (0, 1, 2, 3))
    whole_bytes = (cut / "rng_state_2.pth").read_bytes()
    (cut / "rng_state_2.pth").write_bytes(whole_bytes[: len(whole_bytes) // 2])
    v = verify_checkpoint(cut, trainer=True)
    assert v.verdict == "incomplete" and "rng_state_2.pth" in v.reason and "cut short" in v.reason
    # node 0 of NNODES=2, one process each, its own disk: rng_state_0 alone is all of it
    assert verify_checkpoint(_rank_save(tmp_path / "n0" / "checkpoint-4", 2, 1, (0,)), trainer=True).verdict == "ok"
    # a disk both nodes share: node 1's share there, node 0's second process's missing
    shared = _rank_save(tmp_path / "sh" / "checkpoint-4", 4, 2, (0, 2, 3))
    assert any("rng_state_1.pth is missing" in n for n in verify_checkpoint(shared, trainer=True).notes)
    # one process, or --save_only_model (no RNG state saved, trainer.py l.3356): nothing expected
    assert verify_checkpoint(_rank_save(tmp_path / "one" / "checkpoint-4", 1, 1, ()), trainer=True).verdict == "ok"
    only = _rank_save(tmp_path / "som" / "checkpoint-4", 2, 2, (), save_only_model=True)
    assert verify_checkpoint(only, trainer=True).verdict == "ok"


def test_the_step_of_a_save_is_read_from_the_names_other_writers_give_it(tmp_path):
    """ckpt_25/ of one's own script was "step —": never the last good checkpoint (that needs a
    step), never a resume point. DeepSpeed's global_stepN, torchtitan's step-N, ckpt_N / step_N of a
    loop of one's own give their step; accelerate's checkpoint_N counts saves, not steps, and a short
    iter_N is not Megatron's (tests/checkpoints/test_checkpoints_discover.py)."""
    from moeconsole.runner.checkpoints.discover import find_checkpoints, step_in_name
    state = {"weight": torch.randn(1, 16)}
    for name, step in (("ckpt_25", 25), ("ckpt-50", 50), ("step_75", 75), ("step-100", 100),
                       ("global_step125", 125), ("iter_150", None), ("checkpoint_3", None), ("best", None)):
        d = tmp_path / "out" / name
        d.mkdir(parents=True)
        pt_save(state, str(d / "model.safetensors"))
        assert step_in_name(name) == step, name
        assert verify_checkpoint(d).step == step, name
    found = find_checkpoints(tmp_path / "out")
    assert [c.path.name for c in found if c.step is not None][:2] == ["global_step125", "step-100"], found


def test_a_first_save_of_weights_only_is_incomplete_when_the_run_saves_through_a_trainer(tmp_path):
    """The first save of a run has no sibling to prove its saver: the run says so itself
    (``flags.saves_through_trainer``: `swift sft/pt/rlhf`, not `megatron sft`), and then weights
    without trainer_state.json are a save cut short (and still being written while it lasts). A bare
    directory of the same files stays a whole PEFT / save_pretrained save."""
    from moeconsole.runner.checkpoints.discover import Checkpoint, save_underway
    from moeconsole.runner.recipes.swift.flags import saves_through_trainer
    from tests.checkpoints.conftest import write_adapter

    first = write_adapter(tmp_path / "v0-20261129-190230" / "checkpoint-4", extras=False)
    (first / "README.md").write_text("---\n")
    assert saves_through_trainer(["/x/.venv-swift/bin/swift", "sft", "--model", "m"])
    assert saves_through_trainer(["python", "-m", "swift.cli.rlhf", "--rlhf_type", "dpo"])
    assert not saves_through_trainer(["megatron", "sft", "--model", "m"])
    assert not saves_through_trainer(["python", "train.py"])
    v = verify_checkpoint(first, trainer=True)
    assert v.verdict == "incomplete" and "trainer_state.json is missing" in v.reason
    assert "trainer_state.json not written yet" in (save_underway(Checkpoint(first, 4, "hf_adapter"), trainer=True) or "")
    assert verify_checkpoint(first).verdict == "ok"
    assert save_underway(Checkpoint(first, 4, "hf_adapter")) is None


def test_a_save_rewritten_in_place_and_cut_before_its_state_keeps_an_earlier_state_and_is_incomplete(tmp_path):
    """A resume that counts from step 1 again into one directory (ms-swift's `--add_version false`
    with `--resume_only_model --ignore_data_skip`) writes checkpoint-4 again over attempt 1's, in the
    Trainer's order: weights, training_args.bin, optimizer, trainer_state.json last. Cut before that
    last write, the directory holds the new weights beside attempt 1's trainer_state.json, which
    reads fine: it was `ok`, so a resume took it. In a run whose saves are written again in place
    (``rewrites``: the run's order.SaveOrder), a state written before the weights is an earlier save's:
    `incomplete`, with the reason; elsewhere a writer may fill the weights in after the state (a
    stub completed later, a flash checkpoint), so that order alone is no sign. A state naming another
    global_step than the directory is an earlier save's anywhere: `moeconsole verify` says it (exit 1).
    A whole rewrite (state written after) is ok."""
    import os
    import time
    from tests.checkpoints.conftest import write_adapter, lora_tensors
    from tests.checkpoints.test_checkpoints_cli import cli

    out = tmp_path / "output"
    ck = write_adapter(out / "checkpoint-4", extras=False)
    for name in ("training_args.bin", "optimizer.pt"):
        (ck / name).write_bytes(b"x")
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": []}))
    assert verify_checkpoint(ck).verdict == "ok"
    past = time.time() - 300   # attempt 1 wrote it five minutes ago
    for f in ck.iterdir():
        os.utime(f, (past, past))
    write_adapter(ck, lora_tensors(seed=1), extras=False)   # attempt 2 writes the weights again, then dies
    v = verify_checkpoint(ck, rewrites=True)
    assert v.verdict == "incomplete", v.reason
    assert "trainer_state.json was written 300" in v.reason and "an earlier save's" in v.reason, v.reason
    assert verify_checkpoint(ck).verdict == "ok"     # a save of its own: weights filled in after the state
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": 4, "log_history": []}))  # the rewrite ends
    assert verify_checkpoint(ck, rewrites=True).verdict == "ok"
    # the state of another step (a save named for its global_step holds another step's state)
    (ck / "trainer_state.json").write_text(json.dumps({"global_step": 16, "log_history": []}))
    proc = cli("verify", str(ck))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert proc.stdout.startswith("INCOMPLETE") and "global_step 16, not 4" in proc.stdout, proc.stdout


def test_the_best_save_a_trainer_save_names_is_read_with_its_metric(tmp_path):
    """transformers writes the best evaluation's value and step, and `checkpoint-<best step>` when it is on
    disk, into every save's trainer_state.json (trainer.py l.3336-3353, l.3399-3420); its metric is `eval_` +
    `metric_for_best_model` (args.json, which ms-swift copies into the save). No best save named: None."""
    from moeconsole.console.format import best_words
    from moeconsole.runner.checkpoints.discover import best_save_named
    d = _rank_save(tmp_path / "v0-1" / "checkpoint-12", 1, 1, ())
    assert best_save_named(d) is None                                  # no evaluation metric chosen
    (d / "args.json").write_text(json.dumps({"metric_for_best_model": "loss"}))
    (d / "trainer_state.json").write_text(json.dumps({
        "global_step": 12, "best_metric": 6.8123, "best_global_step": 8,
        "best_model_checkpoint": str(d.parent / "checkpoint-8"), "log_history": []}))
    best = best_save_named(d)
    assert best == {"path": str(d.parent / "checkpoint-8"), "step": 8, "metric": "eval_loss", "value": 6.8123,
                    "unsaved": None, "greater_is_better": False}
    assert best_words({**best, "verdict": "ok", "ok": True}) == "checkpoint-8 (step 8, eval_loss 6.812, lower is better): verified ok"
    assert best_words({**best, "verdict": "incomplete", "ok": False}).endswith(": INCOMPLETE, not a save to use")
