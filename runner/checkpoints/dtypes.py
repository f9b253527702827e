"""Safetensors dtypes: their sizes, and how to tell NaN/inf and zeros from raw bytes.

numpy has no bfloat16 or float8 types, and torch may be absent where the console runs, so
the non-finite and all-zeros checks for those types read the bit patterns directly.
"""
from __future__ import annotations

import numpy as np

# Every dtype code safetensors 0.8 writes, with its size in bits.
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8,
    "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32,
    "I64": 64, "U64": 64, "F64": 64, "C64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

# Dtypes the safetensors library can hand over as numpy arrays.
NUMPY_DTYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype("<u1"), "I8": np.dtype("<i1"),
    "I16": np.dtype("<i2"), "U16": np.dtype("<u2"), "F16": np.dtype("<f2"),
    "I32": np.dtype("<i4"), "U32": np.dtype("<u4"), "F32": np.dtype("<f4"),
    "I64": np.dtype("<i8"), "U64": np.dtype("<u8"), "F64": np.dtype("<f8"), "C64": np.dtype("<c8"),
}

FLOAT_DTYPES = frozenset({"F16", "BF16", "F32", "F64", "C64", "F8_E5M2", "F8_E4M3", "F8_E8M0",
                          "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2"})


def nbytes_for(dtype: str, shape: tuple[int, ...]) -> int | None:
    """Bytes a tensor of this dtype and shape occupies, or None when it does not end on a byte."""
    bits = DTYPE_BITS[dtype] * _prod(shape)
    if bits % 8:
        return None
    return bits // 8


def _prod(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def numel(shape: tuple[int, ...]) -> int:
    return _prod(shape)


# --- bit-level checks for types numpy cannot represent -------------------------------------

def _u16(raw: np.ndarray) -> np.ndarray:
    return raw.view("<u2")


def nonfinite_count(dtype: str, raw: np.ndarray) -> int:
    """How many elements of a little-endian byte buffer (uint8 array) are NaN or infinite.

    The buffer must hold whole elements (whole bytes for the packed 4/6-bit types)."""
    if dtype in NUMPY_DTYPES:
        arr = raw.view(NUMPY_DTYPES[dtype])
        if dtype in ("F16", "F32", "F64", "C64"):
            return int(arr.size - np.count_nonzero(np.isfinite(arr)))
        return 0
    if dtype == "BF16":
        return int(np.count_nonzero((_u16(raw) & 0x7F80) == 0x7F80))
    if dtype == "F8_E5M2":          # IEEE-like: exponent all ones is inf or NaN
        return int(np.count_nonzero((raw & 0x7C) == 0x7C))
    if dtype == "F8_E4M3":          # e4m3fn: no inf, NaN is S.1111.111
        return int(np.count_nonzero((raw & 0x7F) == 0x7F))
    if dtype in ("F8_E4M3FNUZ", "F8_E5M2FNUZ"):   # the only NaN is the negative-zero pattern
        return int(np.count_nonzero(raw == 0x80))
    if dtype == "F8_E8M0":          # scale type: 0xFF is NaN
        return int(np.count_nonzero(raw == 0xFF))
    return 0                        # F4, F6: no NaN or inf encodings


def is_all_zero(dtype: str, raw: np.ndarray) -> bool:
    """Every element is zero (either sign). An empty buffer counts as zero."""
    if raw.size == 0:
        return True
    if dtype in ("F16",):
        return not np.any(_u16(raw) & 0x7FFF)
    if dtype == "BF16":
        return not np.any(_u16(raw) & 0x7FFF)
    if dtype == "F32":
        return not np.any(raw.view("<u4") & 0x7FFFFFFF)
    if dtype == "F64":
        return not np.any(raw.view("<u8") & 0x7FFFFFFFFFFFFFFF)
    if dtype in ("F8_E5M2", "F8_E4M3"):
        return not np.any(raw & 0x7F)
    if dtype == "F8_E8M0":
        return False                # no zero encoding at all
    if dtype == "F4":               # two e2m1 values per byte, sign in bit 3 of each nibble
        return not np.any(raw & 0x77)
    if dtype == "C64":
        return not np.any(raw.view("<u4") & 0x7FFFFFFF)
    return not np.any(raw)          # integers, bool, FNUZ types, F6 (negative zero counts as nonzero)


# --- decoding to float64, for max-abs-diff comparisons -----------------------------------

def _fp8_table(exp_bits: int, man_bits: int, bias: int, *, fn: bool = False, fnuz: bool = False) -> np.ndarray:
    """All 256 values of an 8-bit float format, computed from its bit layout."""
    values = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exp = (code >> man_bits) & ((1 << exp_bits) - 1)
        man = code & ((1 << man_bits) - 1)
        if fnuz and code == 0x80:
            values[code] = np.nan
            continue
        if not fn and not fnuz and exp == (1 << exp_bits) - 1:
            values[code] = sign * np.inf if man == 0 else np.nan
            continue
        if fn and exp == (1 << exp_bits) - 1 and man == (1 << man_bits) - 1:
            values[code] = np.nan
            continue
        if exp == 0:
            values[code] = sign * (man / (1 << man_bits)) * 2.0 ** (1 - bias)
        else:
            values[code] = sign * (1 + man / (1 << man_bits)) * 2.0 ** (exp - bias)
    return values


_FP8_TABLES: dict[str, np.ndarray] = {}


def _fp8_values(dtype: str) -> np.ndarray:
    if dtype not in _FP8_TABLES:
        if dtype == "F8_E4M3":
            _FP8_TABLES[dtype] = _fp8_table(4, 3, 7, fn=True)
        elif dtype == "F8_E5M2":
            _FP8_TABLES[dtype] = _fp8_table(5, 2, 15)
        elif dtype == "F8_E4M3FNUZ":
            _FP8_TABLES[dtype] = _fp8_table(4, 3, 8, fnuz=True)
        elif dtype == "F8_E5M2FNUZ":
            _FP8_TABLES[dtype] = _fp8_table(5, 2, 16, fnuz=True)
        elif dtype == "F8_E8M0":
            t = 2.0 ** (np.arange(256, dtype=np.float64) - 127)
            t[255] = np.nan
            _FP8_TABLES[dtype] = t
        else:
            raise KeyError(dtype)
    return _FP8_TABLES[dtype]


def can_decode(dtype: str) -> bool:
    return dtype in NUMPY_DTYPES or dtype == "BF16" or dtype.startswith("F8_")


def decode(dtype: str, raw: np.ndarray) -> np.ndarray:
    """Values of a byte buffer as float64 (complex64 as its magnitude-comparable complex128)."""
    if dtype in NUMPY_DTYPES:
        arr = raw.view(NUMPY_DTYPES[dtype])
        return arr.astype(np.complex128 if dtype == "C64" else np.float64)
    if dtype == "BF16":
        with np.errstate(invalid="ignore"):     # signalling NaN patterns: quiet NaN is what we want
            return (_u16(raw).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return _fp8_values(dtype)[raw]
