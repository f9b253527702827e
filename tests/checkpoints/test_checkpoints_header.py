"""The header-only safetensors check on real files and on hand-broken ones."""
from __future__ import annotations

import json
import os
import struct

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.numpy import save_file as np_save
from safetensors.torch import save_file as pt_save

from moeconsole.runner.checkpoints.safetensors_file import check_safetensors


def _rchar() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    raise RuntimeError("no rchar")


def test_numpy_file_counts_tensors_params_and_dtypes(tmp_path):
    p = tmp_path / "m.safetensors"
    np_save({"a": np.ones((3, 4), np.float32), "b": np.zeros(5, np.int64), "c": np.ones((2, 2), np.float16)},
            str(p), metadata={"format": "np"})
    v = check_safetensors(p)
    assert (v.ok, v.verdict, v.tensors, v.params) == (True, "ok", 3, 12 + 5 + 4)
    assert v.dtypes == {"F32": 1, "I64": 1, "F16": 1}
    assert sorted(v.names) == ["a", "b", "c"]
    assert v.size == p.stat().st_size


def test_torch_file_with_bf16_fp8_bool_and_scalar(tmp_path):
    p = tmp_path / "t.safetensors"
    tensors = {"w": torch.randn(4, 3).to(torch.bfloat16), "s": torch.randn(7).to(torch.float8_e4m3fn),
               "e": torch.randn(2, 2).to(torch.float8_e5m2), "m": torch.ones(3, dtype=torch.bool),
               "scalar": torch.tensor(2.0), "empty": torch.zeros(0, 5)}
    pt_save(tensors, str(p))
    v = check_safetensors(p)
    assert v.ok, v.reason
    assert v.tensors == 6 and v.params == 12 + 7 + 4 + 3 + 1 + 0
    assert v.dtypes["BF16"] == 1 and v.dtypes["F8_E4M3"] == 1 and v.dtypes["F8_E5M2"] == 1
    with safe_open(str(p), framework="pt") as f:       # the library agrees on what is inside
        assert sorted(f.keys()) == sorted(v.names)


@pytest.mark.parametrize("metadata,pad_in_header", [(True, False), (False, False), (True, True), (False, True)])
def test_39kb_stub_is_an_empty_stub(mk, tmp_path, metadata, pad_in_header):
    p = mk.stub(tmp_path / "adapter_model.safetensors", metadata=metadata, pad_in_header=pad_in_header)
    assert p.stat().st_size == 39 * 1024
    v = check_safetensors(p)
    assert (v.ok, v.verdict, v.tensors) == (False, "empty_stub", 0)
    assert "no tensors" in v.reason and "39.0 KB" in v.reason
    assert ("__metadata__" in v.reason) == metadata


def test_library_made_stub_is_an_empty_stub(tmp_path):
    p = tmp_path / "s.safetensors"
    np_save({}, str(p), metadata={"format": "pt"})
    v = check_safetensors(p)
    assert v.verdict == "empty_stub" and "only __metadata__" in v.reason


def test_zero_byte_and_tiny_files(tmp_path):
    (tmp_path / "zero.safetensors").write_bytes(b"")
    (tmp_path / "tiny.safetensors").write_bytes(b"\x10\x00\x00")
    assert check_safetensors(tmp_path / "zero.safetensors").verdict == "empty_stub"
    tiny = check_safetensors(tmp_path / "tiny.safetensors")
    assert tiny.verdict == "truncated" and "3 bytes" in tiny.reason


def test_truncated_in_data_and_in_header(tmp_path):
    p = tmp_path / "m.safetensors"
    np_save({"a": np.ones((64, 64), np.float32)}, str(p))
    raw = p.read_bytes()
    (tmp_path / "cut_data.safetensors").write_bytes(raw[:-1000])
    v = check_safetensors(tmp_path / "cut_data.safetensors")
    assert v.verdict == "truncated" and "1000 bytes missing" in v.reason
    n = struct.unpack("<Q", raw[:8])[0]
    (tmp_path / "cut_header.safetensors").write_bytes(raw[:8 + n // 2])
    v = check_safetensors(tmp_path / "cut_header.safetensors")
    assert v.verdict == "truncated" and "ends inside the header" in v.reason


def test_absurd_header_length_is_refused_without_reading(mk, tmp_path):
    p = tmp_path / "huge.safetensors"
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", 2**64 - 1) + b"{}")
        f.truncate(512 << 20)          # sparse: 512 MB of nothing after the length field
    before = _rchar()
    v = check_safetensors(p)
    read = _rchar() - before
    assert v.verdict == "corrupt_header" and str(2**64 - 1) in v.reason
    assert read < 64 << 10, f"read {read} bytes to refuse the header"


def test_a_header_of_millions_of_tiny_values_is_refused_before_parsing(mk, tmp_path):
    """`[{},{},...]` would cost ~80 bytes of memory per 3 header bytes if parsed."""
    raw = b'{"a":[' + b"{}," * 2_500_000 + b"{}]}"
    v = check_safetensors(mk.raw(tmp_path / "x.safetensors", raw))
    assert v.verdict == "corrupt_header" and "JSON values (limit 2000000)" in v.reason


def test_header_length_within_limit_but_past_the_end_with_intact_json(mk, tmp_path):
    p = tmp_path / "m.safetensors"
    np_save({"a": np.ones(4, np.float32)}, str(p))
    raw = bytearray(p.read_bytes())
    raw[0:8] = struct.pack("<Q", 5000)      # a flipped length byte; the JSON is fine
    p.write_bytes(bytes(raw))
    v = check_safetensors(p)
    assert v.verdict == "corrupt_header" and "length field says 5000" in v.reason


def test_fast_path_reads_the_header_only(tmp_path):
    """A 2 GB (sparse) shard with a real header: verdict ok after reading a few KB."""
    p = tmp_path / "big.safetensors"
    header = {f"layers.{i}.w": {"dtype": "BF16", "shape": [1024, 1024], "data_offsets": [i * 2**21, (i + 1) * 2**21]}
              for i in range(1024)}
    raw = json.dumps(header).encode()
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + 1024 * 2**21)
    before = _rchar()
    v = check_safetensors(p)
    read = _rchar() - before
    assert v.ok and v.tensors == 1024 and v.params == 1024 * 1024 * 1024
    assert read < len(raw) + (64 << 10)


@pytest.mark.parametrize("header,data,verdict,words", [
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12, "overlapping", "overlaps"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}}, b"\0" * 8, "overlapping", "overlaps"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12, "corrupt_header", "belong to no tensor"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 20, "corrupt_header", "after the last tensor"),
    ({"a": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, "corrupt_header", "unknown dtype"),
    ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, "corrupt_header", "needs 12 bytes"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}, b"", "corrupt_header", "negative"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, b"\0" * 8, "corrupt_header", "ends before"),
    ({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8, "corrupt_header", "non-negative"),
    ({"a": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}}, b"\0" * 8, "corrupt_header", "shape"),
    ({"a": {"dtype": "F32", "shape": [True, 2], "data_offsets": [0, 8]}}, b"\0" * 8, "corrupt_header", "shape"),
    ({"a": {"dtype": "F32", "shape": [2]}}, b"\0" * 8, "corrupt_header", "lacks data_offsets"),
    ({"a": [1, 2]}, b"", "corrupt_header", "not an object"),
    ({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, b"\0\0", "corrupt_header", "byte boundary"),
    ({"__metadata__": {"x": 1}}, b"", "corrupt_header", "__metadata__"),
    ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8, "truncated", "8 bytes missing"),
])
def test_malformed_headers(mk, tmp_path, header, data, verdict, words):
    v = check_safetensors(mk.raw(tmp_path / "x.safetensors", header, data))
    assert (v.ok, v.verdict) == (False, verdict), v.reason
    assert words in v.reason


@pytest.mark.parametrize("raw,words", [
    (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}', "not valid JSON"),
    (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
     b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', "names 'a' twice"),
    (b'{"a": {"dtype": "F32", "dtype": "F16", "shape": [1], "data_offsets": [0, 4]}}', "gives 'dtype' twice"),
    (b'{"a": {"dt\\u0079pe": "F32", "dtype": "F16", "shape": [1], "data_offsets": [0, 4]}}', "gives 'dtype' twice"),
    (b'\xff\xfe{}', "not UTF-8"),
    (b'  {}', "does not start"),
    (b'[1, 2, 3]', "does not start"),
    (b'{"a": NaN}', "NaN"),
    (b'{"a":' + b"[" * 200000 + b"]" * 200000 + b"}", "nested too deeply"),
    (b'{"a": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 4]}}', "not valid JSON"),
])
def test_bad_json(mk, tmp_path, raw, words):
    v = check_safetensors(mk.raw(tmp_path / "x.safetensors", raw))
    assert v.verdict == "corrupt_header" and words in v.reason, v.reason


def test_repeated_metadata_keys_are_allowed_like_the_library_does(mk, tmp_path):
    raw = b'{"__metadata__": {"k": "1", "k": "2"}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    p = mk.raw(tmp_path / "x.safetensors", raw, b"\0" * 4)
    assert check_safetensors(p).ok
    with safe_open(str(p), framework="numpy") as f:
        assert f.metadata() == {"k": "2"}


def test_f4_packed_and_fp8_sizes_agree_with_the_library(tmp_path):
    p = tmp_path / "packed.safetensors"
    pt_save({"q": torch.zeros(4, 8, dtype=torch.float8_e4m3fn), "scale": torch.ones(4, dtype=torch.float8_e8m0fnu)},
            str(p))
    v = check_safetensors(p)
    assert v.ok and v.dtypes == {"F8_E4M3": 1, "F8_E8M0": 1}


def test_unreadable_file_and_directory(tmp_path):
    d = tmp_path / "dir.safetensors"
    d.mkdir()
    assert check_safetensors(d).verdict == "unreadable"
    assert check_safetensors(tmp_path / "missing.safetensors").verdict == "unreadable"
    if os.geteuid() != 0:
        p = tmp_path / "locked.safetensors"
        np_save({"a": np.ones(2, np.float32)}, str(p))
        p.chmod(0)
        assert check_safetensors(p).verdict == "unreadable"
