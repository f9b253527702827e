"""Fast, strict verification of one safetensors file from its header alone.

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON, then the data
section. We read the length and the header (after refusing an absurd N) plus one ``fstat``,
never the data: the check costs the same for a 39 KB stub and a 30 GB shard.

Every problem becomes a verdict with a reason a user can act on; nothing here raises on bad
input (I/O errors become the ``unreadable`` verdict).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from moeconsole.runner.core.units import clip, human_bytes, human_count
from moeconsole.runner.checkpoints.dtypes import DTYPE_BITS, nbytes_for

DEFAULT_MAX_HEADER_BYTES = 100 << 20   # the safetensors library refuses headers above 100 MB too
# Parsing JSON costs memory per value (a 100 MB header of `{},{},...` would take ~2.6 GB), so
# before parsing we bound the number of values by counting commas. A tensor entry has about 6;
# 2 million allows ~300,000 tensors in one file (real shards hold a few thousand) and keeps the
# worst case near 300 MB.
MAX_HEADER_VALUES = 2_000_000

OK, EMPTY_STUB, TRUNCATED, CORRUPT_HEADER, OVERLAPPING, UNREADABLE = (
    "ok", "empty_stub", "truncated", "corrupt_header", "overlapping", "unreadable")
FILE_VERDICTS = (OK, EMPTY_STUB, TRUNCATED, CORRUPT_HEADER, OVERLAPPING, UNREADABLE)


class TensorEntry(NamedTuple):
    """One tensor as the header describes it; offsets are relative to the data section."""
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int
    numel: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclass(frozen=True)
class Header:
    header_len: int
    entries: tuple[TensorEntry, ...]     # sorted by offset
    metadata: dict[str, str] | None
    sha256: str = field(default="", compare=False)   # of the header's bytes, as read (the checkpoint's identity)

    @property
    def data_start(self) -> int:
        return 8 + self.header_len


class HeaderProblem(Exception):
    """A verdict other than ok, with its reason."""

    def __init__(self, verdict: str, reason: str) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


@dataclass(frozen=True)
class FileVerdict:
    path: Path
    ok: bool
    verdict: str
    reason: str
    tensors: int = 0
    params: int = 0
    dtypes: dict[str, int] = field(default_factory=dict)
    names: tuple[str, ...] = ()
    size: int = 0
    header: Header | None = field(default=None, repr=False, compare=False)

    def to_dict(self, *, with_names: bool = False) -> dict[str, Any]:
        d = {"path": str(self.path), "ok": self.ok, "verdict": self.verdict, "reason": self.reason,
             "tensors": self.tensors, "params": self.params, "dtypes": dict(self.dtypes), "size": self.size}
        if with_names:
            d["names"] = list(self.names)
        return d


# --- pure parsing ------------------------------------------------------------------------
#
# Headers of big shards list thousands of tensors, so the common (valid) case takes a tight
# path: a plain json.loads, then one cheap pass per entry. Only when something looks wrong do
# we re-run the slow checks that explain exactly what.

_ENTRY_KEYS = ("dtype", "shape", "data_offsets")


def _no_constants(name: str) -> Any:
    raise HeaderProblem(CORRUPT_HEADER, f"header holds the non-JSON constant {name}")


def _strict_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Reject a tensor named twice or an entry field given twice (the library rejects the
    latter; for the former it silently keeps one). Repeated __metadata__ keys are allowed,
    as the library allows them."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            if key in _ENTRY_KEYS:
                raise HeaderProblem(CORRUPT_HEADER, f"a tensor entry gives {key!r} twice")
            if key == "__metadata__" or (isinstance(value, dict) and "data_offsets" in value):
                raise HeaderProblem(CORRUPT_HEADER, f"header names {clip(key, 80)!r} twice")
        out[key] = value
    return out


def _may_repeat_keys(raw: bytes, obj: dict[str, Any]) -> bool:
    """Could the text hold a repeated key that json.loads silently merged? (Cheap byte counts;
    a yes only means the strict parse runs.)"""
    if b"\\u" in raw:
        return True
    n = len(obj) - ("__metadata__" in obj)
    return raw.count(b'"__metadata__"') > 1 or any(raw.count(f'"{k}"'.encode()) > n for k in _ENTRY_KEYS)


def load_header_json(raw: bytes) -> dict[str, Any]:
    """The header bytes as a JSON object, or HeaderProblem(corrupt_header)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HeaderProblem(CORRUPT_HEADER, f"header is not UTF-8 (byte {exc.start})") from None
    if not text.startswith("{"):
        raise HeaderProblem(CORRUPT_HEADER, f"header does not start with '{{' (starts with {text[:12]!r})")
    values = raw.count(b",")
    if values > MAX_HEADER_VALUES:
        raise HeaderProblem(CORRUPT_HEADER, f"header holds about {values} JSON values (limit {MAX_HEADER_VALUES}): "
                                            "not a plausible tensor table")
    try:
        obj = json.loads(text, parse_constant=_no_constants)
        if isinstance(obj, dict) and _may_repeat_keys(raw, obj):
            obj = json.loads(text, object_pairs_hook=_strict_pairs, parse_constant=_no_constants)
    except HeaderProblem:
        raise
    except RecursionError:
        raise HeaderProblem(CORRUPT_HEADER, "header JSON is nested too deeply") from None
    except ValueError as exc:
        raise HeaderProblem(CORRUPT_HEADER, f"header is not valid JSON: {clip(str(exc), 120)}") from None
    if not isinstance(obj, dict):
        raise HeaderProblem(CORRUPT_HEADER, f"header is a JSON {type(obj).__name__}, not an object")
    return obj


def _is_json_int(x: Any) -> bool:
    return type(x) is int      # not bool, which JSON true/false become


def _entry(name: str, info: Any) -> TensorEntry:
    """One validated entry. The fast path accepts a well-formed entry; anything else goes to
    ``_explain``, which raises the precise problem."""
    if type(info) is dict:
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        bits = DTYPE_BITS.get(dtype) if type(dtype) is str else None
        if bits and type(shape) is list and type(offsets) is list and len(offsets) == 2:
            begin, end = offsets
            if type(begin) is int and type(end) is int and 0 <= begin <= end:
                n = 1
                for d in shape:
                    if type(d) is not int or d < 0:
                        break
                    n *= d
                else:
                    total = n * bits
                    if not total & 7 and total >> 3 == end - begin:
                        return TensorEntry(name, str(dtype), tuple(shape), begin, end, n)
    _raise_entry_problem(name, info)
    raise HeaderProblem(CORRUPT_HEADER, f"tensor {clip(name, 80)!r}: invalid entry")   # not reached


def _raise_entry_problem(name: str, info: Any) -> None:
    label = f"tensor {clip(name, 80)!r}"
    if not isinstance(info, dict):
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: entry is not an object")
    missing = [k for k in _ENTRY_KEYS if k not in info]
    if missing:
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: entry lacks {', '.join(missing)}")
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: unknown dtype {clip(repr(dtype), 40)}")
    if not isinstance(shape, list) or not all(_is_json_int(d) and d >= 0 for d in shape):
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: shape {clip(repr(shape), 60)} is not a list of "
                                            "non-negative integers")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_json_int(o) for o in offsets):
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: data_offsets {clip(repr(offsets), 60)} is not "
                                            "a pair of integers")
    begin, end = offsets
    if begin < 0 or end < 0:
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: negative data offset [{begin}, {end}]")
    if end < begin:
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: data range [{begin}, {end}] ends before it begins")
    need = nbytes_for(dtype, tuple(shape))
    if need is None:
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: {dtype} shape {shape} does not end on a byte boundary")
    if need != end - begin:
        raise HeaderProblem(CORRUPT_HEADER, f"{label}: {dtype} shape {shape} needs {need} bytes "
                                            f"but its data range [{begin}, {end}] holds {end - begin}")


def parse_entries(obj: dict[str, Any]) -> tuple[tuple[TensorEntry, ...], dict[str, str] | None]:
    """Validate every entry of a header object; entries come back sorted by offset."""
    metadata = obj.get("__metadata__")
    if metadata is not None and not (isinstance(metadata, dict)
                                     and all(isinstance(v, str) for v in metadata.values())):
        raise HeaderProblem(CORRUPT_HEADER, "__metadata__ is not a map of strings to strings")
    entries = [_entry(name, info) for name, info in obj.items() if name != "__metadata__"]
    entries.sort(key=_BY_OFFSET)
    return tuple(entries), metadata


_BY_OFFSET = itemgetter(3, 4)


def check_ranges(entries: tuple[TensorEntry, ...], data_len: int) -> None:
    """Ranges must tile the data section exactly: no overlap, no gap, nothing past the end."""
    expected = 0
    prev: TensorEntry | None = None
    for e in entries:
        if e.begin < expected:
            assert prev is not None
            raise HeaderProblem(OVERLAPPING, f"tensor {clip(e.name, 80)!r} [{e.begin}, {e.end}) overlaps "
                                             f"{clip(prev.name, 80)!r} [{prev.begin}, {prev.end})")
        if e.begin > expected:
            raise HeaderProblem(CORRUPT_HEADER, f"{e.begin - expected} bytes before tensor {clip(e.name, 80)!r} "
                                                "belong to no tensor (ranges must be contiguous)")
        expected = e.end
        prev = e
    if expected > data_len:
        raise HeaderProblem(TRUNCATED, f"tensor data needs {expected} bytes but the file holds {data_len}: "
                                       f"{expected - data_len} bytes missing at the end")
    if expected < data_len:
        raise HeaderProblem(CORRUPT_HEADER, f"{data_len - expected} bytes after the last tensor belong to "
                                            "no tensor")


def _length_disagrees(available: bytes) -> int | None:
    """When the file ends before the declared header does, is a complete JSON header already
    there (so the length field is what is wrong)? Returns that header's length if so."""
    text = available.decode("utf-8", errors="surrogateescape")   # tensor bytes may follow the JSON
    try:
        obj, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return len(text[:end].encode("utf-8", errors="surrogateescape")) if isinstance(obj, dict) else None


# --- file access ------------------------------------------------------------------------

def read_header(path: Path | str, *, max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> tuple[Header, int]:
    """Parse and validate the header of ``path``: (header, file size), or HeaderProblem.

    OSError passes through (the caller decides what unreadable means)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise HeaderProblem(EMPTY_STUB, "file is empty (0 bytes)")
        if size < 8:
            raise HeaderProblem(TRUNCATED, f"file is {size} bytes; the 8-byte header length is incomplete")
        n = int.from_bytes(f.read(8), "little")
        if n > max_header_bytes:
            raise HeaderProblem(CORRUPT_HEADER, f"header length field says {n} bytes (limit {max_header_bytes}); "
                                                "not a safetensors header")
        if n < 2:
            raise HeaderProblem(CORRUPT_HEADER, f"header length field says {n} bytes; too short for a JSON object")
        if 8 + n > size:
            available = f.read(size - 8)
            real = _length_disagrees(available)
            if real is not None:
                raise HeaderProblem(CORRUPT_HEADER, f"header length field says {n} bytes but the JSON header "
                                                    f"is {real} bytes and the file only {size}")
            raise HeaderProblem(TRUNCATED, f"file ends inside the header: header needs {n} bytes, "
                                           f"file has {size - 8} after the length field")
        raw = f.read(n)
        if len(raw) != n:      # the file shrank under us
            raise HeaderProblem(TRUNCATED, f"file ended after {8 + len(raw)} bytes while reading the header")
    entries, metadata = parse_entries(load_header_json(raw))
    header = Header(n, entries, metadata, hashlib.sha256(raw).hexdigest())
    if entries:
        check_ranges(entries, size - 8 - n)
    return header, size


def _stub_reason(header: Header, size: int) -> str:
    what = "the header holds only __metadata__" if header.metadata is not None else "the header is {}"
    return f"no tensors: {what}; the {human_bytes(size)} file carries no weights"


def check_safetensors(path: Path | str, *, max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> FileVerdict:
    """Verdict for one safetensors file from its header and size only (no tensor data read)."""
    path = Path(path)
    try:
        header, size = read_header(path, max_header_bytes=max_header_bytes)
    except HeaderProblem as p:
        return FileVerdict(path, False, p.verdict, p.reason, size=_size_or_zero(path))
    except OSError as exc:
        return FileVerdict(path, False, UNREADABLE, f"cannot read: {exc.strerror or exc}", size=_size_or_zero(path))
    if not header.entries:
        return FileVerdict(path, False, EMPTY_STUB, _stub_reason(header, size), size=size, header=header)
    dtypes: dict[str, int] = {}
    for e in header.entries:
        dtypes[e.dtype] = dtypes.get(e.dtype, 0) + 1
    params = sum(e.numel for e in header.entries)
    return FileVerdict(path, True, OK, f"{len(header.entries)} tensors, {human_count(params)} params",
                       tensors=len(header.entries), params=params, dtypes=dtypes,
                       names=tuple(e.name for e in header.entries), size=size, header=header)


def _size_or_zero(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
