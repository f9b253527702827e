"""The deep checks behind ``verify --full``: a streaming content hash, and a per-tensor
NaN/inf and all-zeros scan, both in bounded memory.

Hash: SHA-256 over each whole file, read in large chunks into one reused buffer. It is the
same digest ``sha256sum`` prints, so a user can cross-check by hand, and Python's hashlib
(OpenSSL, SHA-NI where the CPU has it) runs at or above ``sha256sum``'s speed (see
docs/benchmarks-verify.md).

Scan: tensors numpy can represent are read through the safetensors library
(``safe_open(framework="numpy")``, sliced along the first axis so one chunk is at most
``chunk_bytes``). bfloat16 and the float8/float4/float6 types have no numpy dtype; for those
we read the raw byte range (already bounds-checked by the header check) in chunks and test the
exponent bits directly.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from moeconsole.runner.checkpoints.dtypes import FLOAT_DTYPES, NUMPY_DTYPES, is_all_zero, nonfinite_count
from moeconsole.runner.checkpoints.safetensors_file import Header, TensorEntry

HASH_ALGO = "sha256"
HASH_CHUNK = 8 << 20
SCAN_CHUNK = 32 << 20
_LIST_CAP = 50


def hash_file(path: Path | str, *, chunk: int = HASH_CHUNK) -> tuple[str, int, float]:
    """(hex digest, bytes hashed, seconds) of one file, streamed through one reused buffer."""
    h = hashlib.new(HASH_ALGO)
    buf = bytearray(chunk)
    view = memoryview(buf)
    total = 0
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            total += n
    return h.hexdigest(), total, time.perf_counter() - t0


@dataclass
class TensorScan:
    """Per-file scan result; lists are capped, counts are not."""
    scanned: int = 0
    nonfinite: list[dict] = field(default_factory=list)
    nonfinite_tensors: int = 0
    zero: list[str] = field(default_factory=list)
    zero_tensors: int = 0
    float_tensors: int = 0
    zero_float_tensors: int = 0
    zero_names: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def add(self, entry: TensorEntry, bad: int, zero: bool) -> None:
        self.scanned += 1
        if bad:
            self.nonfinite_tensors += 1
            if len(self.nonfinite) < _LIST_CAP:
                self.nonfinite.append({"tensor": entry.name, "count": bad, "numel": entry.numel})
        is_float = entry.dtype in FLOAT_DTYPES
        self.float_tensors += is_float
        if zero and entry.numel:
            self.zero_tensors += 1
            self.zero_float_tensors += is_float
            self.zero_names.add(entry.name)
            if len(self.zero) < _LIST_CAP:
                self.zero.append(entry.name)


def _scan_numpy(handle, entry: TensorEntry, chunk_bytes: int) -> tuple[int, bool]:
    """NaN/inf count and all-zero flag through the library, one first-axis slice at a time."""
    if entry.nbytes <= chunk_bytes or len(entry.shape) == 0:
        arr = handle.get_tensor(entry.name)
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        return nonfinite_count(entry.dtype, raw), is_all_zero(entry.dtype, raw)
    row_bytes = max(1, entry.nbytes // max(1, entry.shape[0]))
    rows = max(1, chunk_bytes // row_bytes)
    sl = handle.get_slice(entry.name)
    bad, zero = 0, True
    for start in range(0, entry.shape[0], rows):
        arr = sl[start:start + rows]
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        bad += nonfinite_count(entry.dtype, raw)
        zero = zero and is_all_zero(entry.dtype, raw)
    return bad, zero


def _scan_raw(fd: int, data_start: int, entry: TensorEntry, chunk_bytes: int) -> tuple[int, bool]:
    """Same, reading the tensor's bytes directly (bf16, fp8, packed fp4/fp6)."""
    align = 2 if entry.dtype == "BF16" else 1
    step = max(align, chunk_bytes - chunk_bytes % align)
    bad, zero = 0, True
    pos, end = data_start + entry.begin, data_start + entry.end
    while pos < end:
        want = min(step, end - pos)
        data = os.pread(fd, want, pos)
        if len(data) != want:
            raise OSError(f"short read in tensor {entry.name!r} (file shrank?)")
        raw = np.frombuffer(data, dtype=np.uint8)
        bad += nonfinite_count(entry.dtype, raw)
        zero = zero and is_all_zero(entry.dtype, raw)
        pos += want
    return bad, zero


def scan_tensors(path: Path | str, header: Header, *, chunk_bytes: int = SCAN_CHUNK) -> TensorScan:
    """NaN/inf and all-zeros per tensor of a file whose header already passed ``read_header``."""
    from safetensors import safe_open  # imported here: the fast path never needs it

    result = TensorScan()
    native = [e for e in header.entries if e.dtype in NUMPY_DTYPES]
    raw = [e for e in header.entries if e.dtype not in NUMPY_DTYPES]
    try:
        if native:
            with safe_open(str(path), framework="numpy") as handle:
                for e in native:
                    result.add(e, *_scan_numpy(handle, e, chunk_bytes))
        if raw:
            fd = os.open(path, os.O_RDONLY)
            try:
                for e in raw:
                    result.add(e, *_scan_raw(fd, header.data_start, e, chunk_bytes))
            finally:
                os.close(fd)
    except Exception as exc:   # the library's own SafetensorError, OSError, a file changing under us
        result.errors.append(f"scan stopped: {type(exc).__name__}: {exc}")
    return result
