"""The determinism compare: byte-identical or not, and which tensors differ by how much."""
from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import save_file as pt_save

from moeconsole.runner.checkpoints.compare import compare_checkpoints
from moeconsole.runner.checkpoints.dtypes import decode, is_all_zero, nonfinite_count


def test_two_same_seed_saves_are_identical(mk, tmp_path):
    a = mk.demo(tmp_path / "a" / "checkpoint-5", 5, seed=7)
    b = mk.demo(tmp_path / "b" / "checkpoint-5", 5, seed=7)
    (b / "trainer_state.json").write_text('{"global_step": 5, "train_runtime": 12.3}')   # timings always differ
    c = compare_checkpoints(a, b)
    assert c.identical and c.differ == [] and [f["file"] for f in c.files] == ["adapter_model.safetensors"]


def test_different_seeds_name_the_tensors_and_the_max_abs_diff(tmp_path):
    g = torch.Generator().manual_seed(0)
    base = {"same": torch.randn(16, 16, generator=g), "moved": torch.randn(32, 8, generator=g),
            "bf": torch.randn(8, 8, generator=g).to(torch.bfloat16)}
    other = {k: v.clone() for k, v in base.items()}
    other["moved"][3, 4] += 0.25
    other["moved"][30, 0] -= 0.5
    other["bf"][0, 0] = other["bf"][0, 0].float() + 1.0
    pt_save(base, str(tmp_path / "a.safetensors"))
    pt_save(other, str(tmp_path / "b.safetensors"))
    c = compare_checkpoints(tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert not c.identical and c.tensors_compared == 3
    diffs = {d.tensor: d for d in c.differ}
    assert set(diffs) == {"moved", "bf"}
    assert diffs["moved"].n_diff == 2 and diffs["moved"].max_abs_diff == pytest.approx(0.5, rel=1e-6)
    expected_bf = abs(other["bf"][0, 0].float().item() - base["bf"][0, 0].float().item())
    assert diffs["bf"].n_diff == 1 and diffs["bf"].max_abs_diff == pytest.approx(expected_bf)
    assert c.to_dict()["tensors_differ"][0]["tensor"] == "bf"      # largest difference first


def test_diff_chunked_across_a_large_tensor(tmp_path):
    a = torch.zeros(1000, 100)
    b = a.clone()
    b[999, 99] = 3.0
    b[0, 0] = -1.0
    pt_save({"w": a}, str(tmp_path / "a.safetensors"))
    pt_save({"w": b}, str(tmp_path / "b.safetensors"))
    c = compare_checkpoints(tmp_path / "a.safetensors", tmp_path / "b.safetensors", chunk=4096)
    (d,) = c.differ
    assert (d.n_diff, d.max_abs_diff, d.numel) == (2, 3.0, 100000)


def test_nan_on_one_side_only(tmp_path):
    a = torch.ones(4)
    b = a.clone()
    b[2] = float("nan")
    pt_save({"w": a}, str(tmp_path / "a.safetensors"))
    pt_save({"w": b}, str(tmp_path / "b.safetensors"))
    (d,) = compare_checkpoints(tmp_path / "a.safetensors", tmp_path / "b.safetensors").differ
    assert math.isnan(d.max_abs_diff) and d.n_diff == 1


def test_missing_tensor_file_and_shape_change(mk, tmp_path):
    a = mk.sharded(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    (b / "model-00003-of-00003.safetensors").unlink()
    pt_save({"model.layers.0.mlp.weight": torch.zeros(4, 4), "model.layers.1.mlp.weight": torch.zeros(8, 8),
             "extra": torch.zeros(1)}, str(b / "model-00001-of-00003.safetensors"))
    c = compare_checkpoints(a, b)
    assert not c.identical
    assert c.only_a == ["model-00003-of-00003.safetensors"]
    mism = {m["tensor"]: (m["a"], m["b"]) for m in c.mismatched}
    assert mism["model.layers.0.mlp.weight"] == ("F32[8, 8]", "F32[4, 4]")
    assert mism["extra"] == (None, "F32[1]")
    assert [d.tensor for d in c.differ] == ["model.layers.1.mlp.weight"]


def test_megatron_saves_compared_by_file(mk, tmp_path):
    a = mk.megatron(tmp_path / "a", 10, seed=1)
    b = mk.megatron(tmp_path / "b", 10, seed=1)
    c = compare_checkpoints(a, b)
    distcp = [f for f in c.files if f["file"].endswith(".distcp")]
    assert distcp and all(f["identical"] for f in distcp)
    d = mk.megatron(tmp_path / "d", 10, seed=2)
    assert not compare_checkpoints(a, d).identical


@pytest.mark.parametrize("dtype,code", [(torch.float8_e4m3fn, "F8_E4M3"), (torch.float8_e5m2, "F8_E5M2"),
                                        (torch.float8_e4m3fnuz, "F8_E4M3FNUZ"), (torch.float8_e5m2fnuz, "F8_E5M2FNUZ"),
                                        (torch.float8_e8m0fnu, "F8_E8M0"), (torch.bfloat16, "BF16")])
def test_bit_level_decoding_matches_torch(dtype, code):
    """Our decoding of the types numpy lacks agrees with torch on every bit pattern."""
    width = 2 if code == "BF16" else 1
    codes = np.arange(2 ** (8 * width), dtype=np.uint16 if width == 2 else np.uint8)
    raw = codes.view(np.uint8)
    ours = decode(code, raw)
    theirs = torch.from_numpy(codes.view(np.int16 if width == 2 else np.uint8).copy()).view(dtype).double().numpy()
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    finite = ~np.isnan(ours)
    assert np.array_equal(ours[finite], theirs[finite])
    # the scan's bit tests agree with the decoded values, one element at a time
    per_elem = raw.reshape(-1, width)
    bad = np.array([nonfinite_count(code, e) for e in per_elem]) == 1
    assert np.array_equal(bad, ~np.isfinite(theirs))
    zero = np.array([is_all_zero(code, e) for e in per_elem])
    assert np.array_equal(zero, theirs == 0)
