"""Fuzz: 1,200 mutated safetensors files (flipped bytes, truncations, huge header lengths, bad
JSON, negative/overlapping offsets, unknown dtypes...). Each must get a verdict with a reason,
never an exception, in bounded memory; and "ok" must agree with the safetensors library on
whether the file loads with at least one tensor.

The fuzz runs in a child process (this file run as a script) so its peak memory is measured
apart from pytest's, and the checker's growth of it apart from torch's and the library's.
"""
from __future__ import annotations

import json
import random
import resource
import struct
import subprocess
import sys
import traceback
from pathlib import Path

CASES = 1200
SEED = 20260102
MAX_CHECKER_GROWTH_MB = 64   # what 1,200 checks may add to the process's peak: bounded, not per file


# --- mutations (pure functions of bytes) ------------------------------------------------

def _split(raw: bytes) -> tuple[int, dict, bytes]:
    n = struct.unpack("<Q", raw[:8])[0]
    return n, json.loads(raw[8:8 + n]), raw[8 + n:]


def _join(header: dict | bytes, data: bytes) -> bytes:
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def flip_bytes(rng: random.Random, raw: bytes) -> bytes:
    b = bytearray(raw)
    n = struct.unpack("<Q", raw[:8])[0]
    for _ in range(rng.randint(1, 8)):
        hi = min(len(b), 8 + n) if rng.random() < 0.8 else len(b)
        i = rng.randrange(hi)
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def truncate(rng: random.Random, raw: bytes) -> bytes:
    return raw[:rng.randrange(len(raw))]


def huge_length(rng: random.Random, raw: bytes) -> bytes:
    n = rng.choice([2**64 - 1, 2**63, 2**40, (100 << 20) + 1, len(raw), len(raw) * 3, 0, 1, 7])
    return struct.pack("<Q", n) + raw[8:]


def bad_json(rng: random.Random, raw: bytes) -> bytes:
    n, _, data = _split(raw)
    text = raw[8:8 + n]
    i = rng.randrange(max(1, len(text)))
    choice = rng.randrange(6)
    if choice == 0:
        text = text[:i] + text[i + 1:]
    elif choice == 1:
        text = text[:i] + bytes([rng.choice(b'{}[],:"x0-\\\x00\xff')]) + text[i:]
    elif choice == 2:
        text = text.replace(b"}", b"]", 1)
    elif choice == 3:
        text = b"[" + text + b"]"
    elif choice == 4:
        text = text[: len(text) // 2]
    else:
        text = text.replace(b'"dtype"', b'"dtype": "F32", "dtype"', 1)
    return _join(text, data)


def _tensor_names(header: dict) -> list[str]:
    return [k for k in header if k != "__metadata__"]


def bad_offsets(rng: random.Random, raw: bytes) -> bytes:
    _, header, data = _split(raw)
    names = _tensor_names(header)
    if not names:
        return huge_length(rng, raw)
    t = header[rng.choice(names)]
    a, b = t["data_offsets"]
    other = header[rng.choice(names)]["data_offsets"]
    t["data_offsets"] = rng.choice([[-a - 1, b], [a, -b], [b, a], [other[0], other[0] + (b - a)],
                                    [a + 1, b + 1], [a, b + len(data) + 1], [a - 1 if a else 1, b - 1 if a else b + 1],
                                    [a], [a, b, b], ["0", b], [float(a), b]])
    return _join(header, data)


def bad_dtype_or_shape(rng: random.Random, raw: bytes) -> bytes:
    _, header, data = _split(raw)
    names = _tensor_names(header)
    if not names:
        return bad_json(rng, raw)
    t = header[rng.choice(names)]
    choice = rng.randrange(7)
    if choice == 0:
        t["dtype"] = rng.choice(["Q4", "f32", "", "FLOAT", "F8_E4M3FN", 5, None])
    elif choice == 1:
        t["dtype"] = rng.choice(["F64", "U8", "BF16", "F4", "F6_E2M3", "C64"])   # valid but wrong size
    elif choice == 2:
        t["shape"] = t["shape"] + [rng.choice([2, 0, 10**6])]
    elif choice == 3:
        t["shape"] = [-1] + t["shape"][1:]
    elif choice == 4:
        t["shape"] = [2**70]
    elif choice == 5:
        t["shape"] = "[2, 2]"
    else:
        del t[rng.choice(["dtype", "shape", "data_offsets"])]
    return _join(header, data)


def extend(rng: random.Random, raw: bytes) -> bytes:
    return raw + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))


def metadata_mess(rng: random.Random, raw: bytes) -> bytes:
    _, header, data = _split(raw)
    header["__metadata__"] = rng.choice([{"a": 1}, ["x"], "s", {"k": None}, {}, None])
    return _join(header, data)


MUTATIONS = (flip_bytes, truncate, huge_length, bad_json, bad_offsets, bad_dtype_or_shape, extend, metadata_mess)


def seeds(d: Path) -> list[bytes]:
    import numpy as np
    import torch
    from safetensors.numpy import save_file as np_save
    from safetensors.torch import save_file as pt_save

    np_save({"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.ones(5, np.int64),
             "c": np.zeros((2, 2), np.float16)}, str(d / "np.safetensors"), metadata={"format": "np"})
    pt_save({"w": torch.randn(4, 3).to(torch.bfloat16), "s": torch.randn(7).to(torch.float8_e4m3fn),
             "m": torch.ones(3, dtype=torch.bool), "scalar": torch.tensor(2.0), "empty": torch.zeros(0, 5)},
            str(d / "pt.safetensors"), metadata={"format": "pt"})
    pt_save({f"base_model.model.layers.{i}.q_proj.lora_{ab}.weight": torch.randn(8, 16) if ab == "A" else torch.randn(16, 8)
             for i in range(3) for ab in "AB"}, str(d / "lora.safetensors"))
    np_save({}, str(d / "stub.safetensors"), metadata={"format": "pt"})
    return [(d / f).read_bytes() for f in ("np.safetensors", "pt.safetensors", "lora.safetensors", "stub.safetensors")]


def library_loads_tensors(path: Path) -> bool:
    """The safetensors library opens the file and reads at least one tensor from it."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            keys = list(f.keys())
            for k in keys:
                f.get_tensor(k)
        return bool(keys)
    except Exception:    # SafetensorError and friends: the library refuses the file
        return False


def run_fuzz(workdir: Path) -> dict:
    """Run every case; report verdicts, disagreements with the library, crashes and the checker's
    peak memory: how far the process's peak grew while only the checker ran (the library's own
    reads, and torch, which the seeds import, are not the checker's)."""
    from moeconsole.runner.checkpoints.safetensors_file import FILE_VERDICTS, check_safetensors

    rng = random.Random(SEED)
    base = seeds(workdir)
    counts: dict[str, int] = {}
    crashes, bad_results, disagree = [], [], []
    checked: list[tuple[int, str, Path, object]] = []
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for i in range(CASES):
        mutation = MUTATIONS[i % len(MUTATIONS)]
        raw = mutation(rng, rng.choice(base))
        if rng.random() < 0.15:           # a second mutation on top now and then
            try:
                raw = rng.choice(MUTATIONS)(rng, raw)
            except (ValueError, struct.error, UnicodeDecodeError, IndexError, KeyError, TypeError):
                pass                      # the first mutation left nothing the second could parse
        path = workdir / f"case-{i}.safetensors"
        path.write_bytes(raw)
        try:
            v = check_safetensors(path)
        except BaseException:
            crashes.append({"case": i, "mutation": mutation.__name__, "traceback": traceback.format_exc()})
            path.unlink()
            continue
        checked.append((i, mutation.__name__, path, v))
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    for i, name, path, v in checked:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
        if v.verdict not in FILE_VERDICTS or not isinstance(v.reason, str) or not v.reason.strip():
            bad_results.append({"case": i, "verdict": v.verdict, "reason": v.reason})
        if (v.verdict == "ok") != library_loads_tensors(path):
            disagree.append({"case": i, "mutation": name, "verdict": v.verdict, "reason": v.reason})
        path.unlink()
    return {"cases": CASES, "counts": counts, "crashes": crashes, "bad_results": bad_results,
            "disagree": disagree, "checker_grew_mb": grew_mb}


def test_fuzz_every_mutated_file_gets_a_clear_verdict(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, __file__, str(tmp_path)], cwd=repo, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["crashes"] == [], report["crashes"][:3]
    assert report["bad_results"] == []
    assert sum(report["counts"].values()) == CASES >= 1000
    # Every kind of failure shows up, so the mutations reach every branch that names one.
    for verdict in ("ok", "empty_stub", "truncated", "corrupt_header", "overlapping"):
        assert report["counts"].get(verdict, 0) > 0, report["counts"]
    assert report["disagree"] == [], report["disagree"][:5]
    assert report["checker_grew_mb"] < MAX_CHECKER_GROWTH_MB, report["checker_grew_mb"]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    print(json.dumps(run_fuzz(Path(sys.argv[1]))))
