"""The determinism check: are two checkpoints byte-identical, and if not, which tensors differ
and by how much?

Weight files are paired by relative path (``*.safetensors`` and Megatron iteration files).
Equal SHA-256 means identical. For differing safetensors files, tensors are paired by name and
compared chunk by chunk from their byte ranges (bounded memory); the max absolute difference
is computed in float64 (bfloat16 and float8 decoded from their bits). Non-weight files
(trainer_state.json, optimizer.pt, logs) are not compared: they hold timings that always differ.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from moeconsole.runner.checkpoints.dtypes import can_decode, decode
from moeconsole.runner.checkpoints.discover import ITER_DIR, SIDECAR_NAME, is_megatron_iter_dir
from moeconsole.runner.checkpoints.safetensors_file import Header, HeaderProblem, TensorEntry, read_header
from moeconsole.runner.checkpoints.scan import hash_file

CHUNK = 16 << 20
_LIST_CAP = 100


def weight_files(path: Path) -> dict[str, Path]:
    """Relative path -> file for every weight file of a checkpoint (or the file itself)."""
    if path.is_file():
        return {path.name: path}
    if is_megatron_iter_dir(path):
        return _all_files(path, path)
    out: dict[str, Path] = {}
    for p in sorted(path.iterdir()):
        if p.is_file() and p.name.endswith(".safetensors"):
            out[p.name] = p
        elif p.is_dir() and ITER_DIR.match(p.name):
            out.update(_all_files(p, path))
    return out


def _all_files(d: Path, base: Path) -> dict[str, Path]:
    return {str(q.relative_to(base)): q for q in sorted(d.rglob("*")) if q.is_file() and q.name != SIDECAR_NAME}


@dataclass
class TensorDiff:
    file: str
    tensor: str
    max_abs_diff: float | None
    n_diff: int
    numel: int

    def to_dict(self) -> dict:
        return {"file": self.file, "tensor": self.tensor, "max_abs_diff": self.max_abs_diff,
                "n_diff": self.n_diff, "numel": self.numel}


@dataclass
class Comparison:
    a: Path
    b: Path
    identical: bool = True
    files: list[dict] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    differ: list[TensorDiff] = field(default_factory=list)
    mismatched: list[dict] = field(default_factory=list)   # same name, other dtype/shape, or missing
    tensors_compared: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        differ = sorted(self.differ, key=_severity, reverse=True)
        return {"v": 1, "a": str(self.a), "b": str(self.b), "identical": self.identical, "files": self.files,
                "only_a": self.only_a, "only_b": self.only_b, "tensors_compared": self.tensors_compared,
                "tensors_differ": [d.to_dict() for d in differ[:_LIST_CAP]],
                "tensors_differ_count": len(differ), "tensors_mismatched": self.mismatched[:_LIST_CAP],
                "notes": self.notes}


def _severity(d: TensorDiff) -> tuple[int, float]:
    """NaN disagreements first, then by magnitude; unknown magnitudes last."""
    if d.max_abs_diff is None:
        return (0, 0.0)
    if math.isnan(d.max_abs_diff):
        return (2, 0.0)
    return (1, d.max_abs_diff)


def _range_equal_and_diff(fa: int, fb: int, ea: TensorEntry, ha: Header, eb: TensorEntry, hb: Header,
                          chunk: int) -> tuple[bool, float | None, int]:
    """(bytes equal, max abs diff, differing elements) of one tensor pair, chunk by chunk.
    The max abs diff is NaN when only one side is NaN there, None for packed 4/6-bit types."""
    itemsize = max(1, ea.nbytes // ea.numel) if ea.numel else 1
    step = max(itemsize, chunk - chunk % itemsize)
    decodable = can_decode(ea.dtype) and ea.nbytes == ea.numel * itemsize
    equal, max_diff, n_diff = True, 0.0, 0
    pos = 0
    while pos < ea.nbytes:
        n = min(step, ea.nbytes - pos)
        da = os.pread(fa, n, ha.data_start + ea.begin + pos)
        db = os.pread(fb, n, hb.data_start + eb.begin + pos)
        if len(da) != n or len(db) != n:
            raise OSError("short read (file changed during compare?)")
        pos += n
        if da == db:
            continue
        equal = False
        ra, rb = np.frombuffer(da, dtype=np.uint8), np.frombuffer(db, dtype=np.uint8)
        if not decodable:       # packed 4/6-bit types: count differing bytes, no magnitude
            n_diff += int(np.count_nonzero(ra != rb))
            continue
        va, vb = decode(ea.dtype, ra), decode(eb.dtype, rb)
        same_nan = np.isnan(va) & np.isnan(vb) if va.dtype.kind == "f" else np.zeros(va.shape, bool)
        with np.errstate(invalid="ignore", over="ignore"):     # inf - inf is NaN: reported as such
            diff = np.abs(va - vb)
        diff[same_nan] = 0.0
        n_diff += int(np.count_nonzero((ra != rb).reshape(-1, itemsize).any(axis=1)))
        if np.isnan(diff).any():
            max_diff = math.nan
        elif not math.isnan(max_diff):
            max_diff = max(max_diff, float(diff.max()))
    return equal, (max_diff if decodable else None), n_diff


def _compare_safetensors(rel: str, pa: Path, pb: Path, out: Comparison, chunk: int) -> None:
    try:
        ha, _ = read_header(pa)
        hb, _ = read_header(pb)
    except (HeaderProblem, OSError) as exc:
        out.notes.append(f"{rel}: cannot compare tensors: {exc}")
        return
    ta = {e.name: e for e in ha.entries}
    tb = {e.name: e for e in hb.entries}
    for name in sorted(set(ta) ^ set(tb)):
        out.mismatched.append({"file": rel, "tensor": name, "a": _describe(ta.get(name)), "b": _describe(tb.get(name))})
    if ha.metadata != hb.metadata:
        out.notes.append(f"{rel}: header __metadata__ differs")
    fa, fb = os.open(pa, os.O_RDONLY), os.open(pb, os.O_RDONLY)
    try:
        for name in sorted(set(ta) & set(tb)):
            ea, eb = ta[name], tb[name]
            if (ea.dtype, ea.shape) != (eb.dtype, eb.shape):
                out.mismatched.append({"file": rel, "tensor": name, "a": _describe(ea), "b": _describe(eb)})
                continue
            out.tensors_compared += 1
            equal, max_diff, n_diff = _range_equal_and_diff(fa, fb, ea, ha, eb, hb, chunk)
            if not equal:
                out.differ.append(TensorDiff(rel, name, max_diff, n_diff, ea.numel))
    finally:
        os.close(fa)
        os.close(fb)


def _describe(e: TensorEntry | None) -> str | None:
    return None if e is None else f"{e.dtype}{list(e.shape)}"


def compare_checkpoints(a: Path | str, b: Path | str, *, chunk: int = CHUNK) -> Comparison:
    """Compare the weights of two checkpoints (directories or single files)."""
    a, b = Path(a), Path(b)
    out = Comparison(a, b)
    wa, wb = weight_files(a), weight_files(b)
    if a.is_file() and b.is_file():        # two single files: pair them whatever their names
        wa, wb = {"weights": a}, {"weights": b}
    out.only_a = sorted(set(wa) - set(wb))
    out.only_b = sorted(set(wb) - set(wa))
    if not wa and not wb:
        out.notes.append("no weight files to compare")
    for rel in sorted(set(wa) & set(wb)):
        try:
            ha, _, _ = hash_file(wa[rel])
            hb, _, _ = hash_file(wb[rel])
        except OSError as exc:
            out.identical = False
            out.notes.append(f"{rel}: cannot read: {exc.strerror or exc}")
            continue
        same = ha == hb
        out.files.append({"file": rel, "identical": same, "sha256_a": ha, "sha256_b": hb})
        if not same:
            out.identical = False
            if rel.endswith(".safetensors") or rel == "weights":
                try:
                    _compare_safetensors(rel, wa[rel], wb[rel], out, chunk)
                except OSError as exc:
                    out.notes.append(f"{rel}: compare stopped: {exc}")
    if out.only_a or out.only_b or out.mismatched:
        out.identical = False
    return out
