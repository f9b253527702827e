"""Read a torch distributed-checkpoint (DCP) ``.metadata`` without executing it.

``.metadata`` is a pickle of ``torch.distributed.checkpoint.metadata.Metadata`` (torch 2.13
filesystem.py ``FileSystemWriter.finish``: ``pickle.dump(metadata, metadata_file)``). Unpickling it
with ``pickle.load`` would run whatever callables it names, so it is read by a restricted
unpickler whose ``find_class`` hands out plain stand-ins for the DCP dataclasses only, and refuses
every other global (``os.system``, ``builtins.eval``, ...) before anything is called. What comes
back is the index of the save:

- ``state_dict_metadata``: ``{fqn: TensorStorageMetadata(properties, size, chunks) |
  BytesStorageMetadata()}`` (metadata.py), a tensor's global ``size`` (``torch.Size``, read as a
  tuple), its ``properties.dtype`` (``torch.float32``, read as the name ``"float32"``) and its
  ``chunks`` (``ChunkStorageMetadata(offsets, sizes)``);
- ``storage_data``: ``{MetadataIndex(fqn, offset): _StorageInfo(relative_path, offset, length)}``
  (filesystem.py ``_StorageInfo``): which ``.distcp`` file holds each chunk, and where.

Megatron-core's torch_dist strategy writes the same Metadata through its FileSystemWriterAsync and
may attach ``all_local_plans`` (SavePlan / WriteItem / TensorWriteData from
torch/distributed/checkpoint/planner.py; megatron/core/dist_checkpointing/strategies/
state_dict_saver.py ``global_metadata.all_local_plans = all_local_plans``); older mcore saves
pickle ``MCoreMetadata`` / ``MCoreSavePlan`` (strategies/torch.py keeps them as empty classes so
those load). Those are allowed as stand-ins too; nothing else is.

Pure: bytes in, :class:`DcpIndex` out (or :class:`DcpMetadataError`).
"""
from __future__ import annotations

import io
import math
import pickle
from dataclasses import dataclass, field
from typing import Any

from moeconsole.runner.collector import collector_paused
from moeconsole.runner.core.errors import shown


class DcpMetadataError(ValueError):
    """``.metadata`` cannot be read as a DCP index. ``refused`` names a global outside the
    allow-list (the pickle tried to reach it: it was not called)."""

    def __init__(self, message: str, refused: str | None = None) -> None:
        super().__init__(message)
        self.refused = refused


class _Sealed(type):
    """The stand-ins' metaclass: a pickle's BUILD can set attributes on the object it is given,
    and it can be given a class (``(None, {"__setstate__": ...})``); a stand-in class changed so
    would stay changed for every later read in this process. So the classes refuse it."""

    def __setattr__(cls, name: str, value: Any) -> None:
        raise pickle.UnpicklingError("a DCP index does not change classes")

    def __delattr__(cls, name: str) -> None:
        raise pickle.UnpicklingError("a DCP index does not change classes")


class _StandIn(metaclass=_Sealed):
    """Holds the attributes a pickle's BUILD gives it, nothing else (no methods run)."""


def _stand_in(name: str) -> type[_StandIn]:
    cls: type[_StandIn] = _Sealed(name, (_StandIn,), {"__module__": __name__})   # type: ignore[assignment]
    return cls


class _TensorProperties(_StandIn):
    """torch's TensorProperties pickles a tuple (dtype, layout, requires_grad, memory format,
    pin_memory) through ``__getstate__`` (metadata.py); older versions pickle the ``__dict__``."""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and state and not isinstance(state[0], dict | type(None)):
            self.__dict__["dtype"] = state[0]
        elif isinstance(state, dict):
            self.__dict__.update(state)
        elif isinstance(state, tuple) and len(state) == 2:
            for part in state:
                if isinstance(part, dict):
                    self.__dict__.update(part)
        else:
            raise pickle.UnpicklingError("TensorProperties with an unknown state")


# The callables a DCP index may REDUCE, as slot-less instances: nothing about them can be set
# (BUILD on a function could set its ``__defaults__`` for every later read), and each one only
# passes plain values through, never formats or repeats what it is given (a pickle can reference
# one large string 10^5 times for 2 bytes each: joining or printing that is a memory bomb).
_MAX_NAME = 4096
_MAX_DIMS = 64      # no model tensor comes near; it bounds the work of multiplying a size out


class _EnumValue:
    """An Enum member pickles as ``Enum(value)`` (REDUCE): keep the value."""
    __slots__ = ()

    def __call__(self, value: Any = None) -> Any:
        return value


class _Path:
    """``pathlib.PosixPath(*parts)`` (StorageMeta's ``checkpoint_id``): the path as text."""
    __slots__ = ()

    def __call__(self, *parts: Any) -> str:
        if not all(isinstance(p, str) for p in parts) or sum(len(p) for p in parts) > _MAX_NAME:
            raise pickle.UnpicklingError("a path that is not a few strings")
        return "/".join(parts)


class _Layout:
    """``torch.serialization._get_layout('torch.strided')``: the layout's name."""
    __slots__ = ()

    def __call__(self, name: Any = "torch.strided") -> str:
        if not isinstance(name, str) or len(name) > _MAX_NAME:
            raise pickle.UnpicklingError("a layout that is not a name")
        return name


_enum_value, _path, _layout = _EnumValue(), _Path(), _Layout()


_Metadata = _stand_in("Metadata")
_TensorStorage = _stand_in("TensorStorageMetadata")
_BytesStorage = _stand_in("BytesStorageMetadata")
_Chunk = _stand_in("ChunkStorageMetadata")
_Index = _stand_in("MetadataIndex")
_StorageInfo = _stand_in("_StorageInfo")

_DCP = "torch.distributed.checkpoint"
_OLD_SHARD_META = "torch.distributed._shard.sharded_tensor.metadata"   # TensorProperties before torch 2.4
_MCORE = "megatron.core.dist_checkpointing.strategies.torch"

# torch's dtype and layout names, pickled as the global ``torch.<name>`` (torch.dtype.__reduce__).
DTYPE_NAMES = frozenset({
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "complex32", "chalf",
    "complex64", "cfloat", "complex128", "cdouble", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
    "short", "int32", "int", "int64", "long", "bool", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16", "int1", "int2", "int3", "int4", "int5", "int6", "int7",
    "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7"})
_LAYOUTS = frozenset({"strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn",
                      "jagged"})
_MEMORY_FORMATS = frozenset({"contiguous_format", "channels_last", "channels_last_3d", "preserve_format"})


def _allowed() -> dict[tuple[str, str], Any]:
    table: dict[tuple[str, str], Any] = {}
    for module in (f"{_DCP}.metadata", _OLD_SHARD_META):
        table[(module, "TensorProperties")] = _TensorProperties
        table[(module, "_MEM_FORMAT_ENCODING")] = _enum_value
        table[(module, "MEM_FORMAT_ENCODING")] = _enum_value
    table.update({
        (f"{_DCP}.metadata", "Metadata"): _Metadata,
        (f"{_DCP}.metadata", "TensorStorageMetadata"): _TensorStorage,
        (f"{_DCP}.metadata", "BytesStorageMetadata"): _BytesStorage,
        (f"{_DCP}.metadata", "ChunkStorageMetadata"): _Chunk,
        (f"{_DCP}.metadata", "MetadataIndex"): _Index,
        (f"{_DCP}.metadata", "StorageMeta"): _stand_in("StorageMeta"),
        (f"{_DCP}.filesystem", "_StorageInfo"): _StorageInfo,
        (f"{_DCP}.filesystem", "_StoragePrefix"): _stand_in("_StoragePrefix"),
        (f"{_DCP}.planner", "SavePlan"): _stand_in("SavePlan"),
        (f"{_DCP}.planner", "WriteItem"): _stand_in("WriteItem"),
        (f"{_DCP}.planner", "WriteItemType"): _enum_value,
        (f"{_DCP}.planner", "TensorWriteData"): _stand_in("TensorWriteData"),
        (f"{_DCP}.planner", "BytesIOWriteData"): _stand_in("BytesIOWriteData"),
        (_MCORE, "MCoreMetadata"): _Metadata,
        (_MCORE, "MCoreSavePlan"): _stand_in("MCoreSavePlan"),
        ("pathlib", "PosixPath"): _path,
        ("pathlib", "PurePosixPath"): _path,
        ("pathlib", "WindowsPath"): _path,
        ("pathlib", "PureWindowsPath"): _path,
        ("torch", "Size"): tuple,     # torch.Size(seq) -> a plain tuple (the builtin: C speed, runs nothing)
        ("torch.serialization", "_get_layout"): _layout,
    })
    for name in DTYPE_NAMES | _LAYOUTS | _MEMORY_FORMATS:
        table[("torch", name)] = name
    return table


ALLOWED_GLOBALS: dict[tuple[str, str], Any] = _allowed()


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            what = f"{module}.{name}"[:200]
            raise DcpMetadataError(f"refers to {what}, which a DCP index never holds (not unpickled: "
                                   "nothing in it was run)", refused=what) from None

    def persistent_load(self, pid: Any) -> Any:
        raise DcpMetadataError("holds a persistent reference, which a DCP index never does")


@dataclass(frozen=True)
class DcpTensor:
    fqn: str
    size: tuple[int, ...]
    dtype: str
    chunks: int

    @property
    def numel(self) -> int:
        return math.prod(self.size)


@dataclass
class DcpIndex:
    """What a DCP ``.metadata`` says the save holds."""
    tensors: list[DcpTensor] = field(default_factory=list)
    byte_items: int = 0                              # non-tensor entries (pickled objects, ms-swift/mcore args, RNG)
    extents: dict[str, int] = field(default_factory=dict)   # file -> largest offset+length it must hold
    storage_entries: dict[str, int] = field(default_factory=dict)   # file -> how many items it holds
    unstored: list[str] = field(default_factory=list)       # tensors with no storage entry


def is_optimizer_state(fqn: str) -> bool:
    """Optimizer state, told apart from the model's tensors by its key: Megatron-core names it
    ``optimizer.state.<exp_avg|exp_avg_sq|fp32_param>.<param key>`` (megatron/core/optimizer/
    optimizer.py ``make_sharded_optimizer_tensor(..., prefix='optimizer.state...')``) and, for the
    distributed optimizer, ``optimizer.distributed.*``; a torch DCP state dict flattened from
    ``{"model": ..., "optimizer": ...}`` (ms-swift 4.6 Megatron-FSDP: swift/megatron/utils/
    megatron_fsdp_checkpoint.py ``save_checkpoint`` saves that dict, ``is_checkpoint`` looks for
    ``model.*`` keys beside ``args`` and ``iteration``) starts with ``optimizer.`` too. Model tensors never do (``decoder.layers...``, ``embedding...``, ``model.module...``)."""
    return fqn == "optimizer" or fqn.startswith("optimizer.")


def _quoted_name(name: Any) -> str:
    """A name from the file quoted for a message (``errors.shown``: the one quote-and-cut rule),
    a non-string by its type's name."""
    return shown(name if isinstance(name, str) else type(name).__name__, 122)


def _tensor(fqn: str, meta: Any) -> DcpTensor:
    size = getattr(meta, "size", None)
    chunks = getattr(meta, "chunks", None)
    if not isinstance(size, tuple) or not isinstance(chunks, list):
        raise DcpMetadataError(f"tensor {_quoted_name(fqn)} has no size or chunk list")
    if len(size) > _MAX_DIMS or not all(type(s) is int and 0 <= s < 1 << 63 for s in size):
        raise DcpMetadataError(f"tensor {_quoted_name(fqn)} has a size that is not up to {_MAX_DIMS} non-negative "
                               "64-bit integers")
    for c in chunks:
        if not isinstance(c, _Chunk):
            raise DcpMetadataError(f"tensor {_quoted_name(fqn)} has a chunk that is not ChunkStorageMetadata")
    dtype = getattr(getattr(meta, "properties", None), "dtype", None)
    return DcpTensor(fqn, size, dtype if isinstance(dtype, str) else "unknown", len(chunks))


def _unpickle_restricted(raw: bytes) -> Any:
    try:
        return _RestrictedUnpickler(io.BytesIO(raw)).load()
    except DcpMetadataError:
        raise
    except EOFError:
        raise DcpMetadataError("is cut short (the pickle ends early)") from None
    except pickle.UnpicklingError as exc:
        if "truncated" in str(exc):
            raise DcpMetadataError("is cut short (the pickle ends early)") from None
        raise DcpMetadataError(f"is not a DCP index pickle ({str(exc)[:120]})") from None
    except Exception as exc:   # TypeError from a stand-in given odd args, ...: damaged input
        raise DcpMetadataError(f"is not a DCP index pickle ({type(exc).__name__}: {str(exc)[:120]})") from None


def parse_dcp_metadata(raw: bytes) -> DcpIndex:
    """The index of a DCP save from its ``.metadata`` bytes; raises :class:`DcpMetadataError`.

    A 397B save's index holds ~10^5 entries of a few small objects each; the cyclic collector,
    run again and again while they are built (none is garbage yet), makes the read 3.5 times as
    slow (0.74 s against 2.7 s of CPU for 100,000 entries), so for an index from
    ``GC_PAUSE_FROM_BYTES`` up it is paused for the parse (``collector_paused``)."""
    if len(raw) < GC_PAUSE_FROM_BYTES:
        return _build_index(raw)
    with collector_paused():
        return _build_index(raw)


# Below this an index parses in a few ms with the collector on: not worth pausing it for every thread.
GC_PAUSE_FROM_BYTES = 1 << 20


def _build_index(raw: bytes) -> DcpIndex:
    md = _unpickle_restricted(raw)
    if not isinstance(md, _Metadata):
        raise DcpMetadataError(f"holds a {type(md).__name__}, not a DCP Metadata")
    sdm = getattr(md, "state_dict_metadata", None)
    if not isinstance(sdm, dict):
        raise DcpMetadataError("has no state_dict_metadata")
    index = DcpIndex()
    for fqn, meta in sdm.items():
        if not isinstance(fqn, str):
            raise DcpMetadataError(f"has a state dict key that is not a name ({type(fqn).__name__})")
        if isinstance(meta, _TensorStorage):
            index.tensors.append(_tensor(fqn, meta))
        elif isinstance(meta, _BytesStorage):
            index.byte_items += 1
        else:
            raise DcpMetadataError(f"entry {_quoted_name(fqn)} is neither tensor nor bytes storage metadata")
    storage = getattr(md, "storage_data", None)
    if not isinstance(storage, dict):
        raise DcpMetadataError("has no storage_data (the map from items to .distcp files)")
    stored: set[str] = set()
    for key, info in storage.items():
        if not isinstance(info, _StorageInfo):
            raise DcpMetadataError(f"storage entry of type {type(info).__name__}, not _StorageInfo")
        rel = getattr(info, "relative_path", None)
        if not isinstance(rel, str) or not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise DcpMetadataError(f"storage entry with a bad file name {_quoted_name(rel)}")
        offset, length = getattr(info, "offset", None), getattr(info, "length", None)
        if type(offset) is not int or type(length) is not int or offset < 0 or length < 0:
            raise DcpMetadataError(f"storage entry in {_quoted_name(rel)} without a non-negative offset and length")
        end = offset + length
        if end > index.extents.get(rel, -1):
            index.extents[rel] = end
        index.storage_entries[rel] = index.storage_entries.get(rel, 0) + 1
        fqn = getattr(key, "fqn", None)
        if isinstance(fqn, str):
            stored.add(fqn)
    index.unstored = [t.fqn for t in index.tensors if t.chunks and t.fqn not in stored]
    return index


def summarize(index: DcpIndex) -> tuple[int, int, int, int]:
    """(model tensors, their parameters, optimizer-state tensors, their values)."""
    t = p = ot = op = 0
    for x in index.tensors:
        if is_optimizer_state(x.fqn):
            ot += 1
            op += x.numel
        else:
            t += 1
            p += x.numel
    return t, p, ot, op
