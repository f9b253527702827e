"""Megatron checkpoints: check that a save's files exist, are non-empty and are complete.

The ``.distcp`` payloads and ``common.pt`` are torch pickles, never loaded; a Megatron check is
structural, plus what DCP's own index says the shards hold:

- ``torch_dist`` (distributed checkpoint, megatron-core ``dist_checkpointing.save``): ``common.pt``
  first, the ``*.distcp`` shards, torch DCP's index ``.metadata``, then ``metadata.json``
  (Megatron's, names the backend) last. ``.metadata`` is read by a restricted unpickler that
  builds plain stand-ins for DCP's own classes and refuses every other global (dcp_metadata.py:
  nothing in it is executed): the tensors (name, size, dtype, chunks) are counted, and every
  ``.distcp`` it names must exist and be at least as long as the largest offset + length it
  places in that file (a shard cut short is ``truncated``).
- ``fsdp_dtensor`` (ms-swift 4.6 with ``--use_megatron_fsdp``): plain torch DCP, ``*.distcp`` +
  ``.metadata`` and no ``common.pt`` or ``metadata.json``; the args and iteration live inside the
  DCP state (4.6.0 swift/megatron/utils/megatron_fsdp_checkpoint.py ``save_checkpoint``,
  ``is_checkpoint``).
- legacy torch format: ``mp_rank_XX[_YYY]/model_optim_rng.pt`` per model-parallel rank.
- the tracker ``latest_checkpointed_iteration.txt``, written after every rank finished: an
  iteration newer than the tracker is an unfinished save (ms-swift 4.x with ``--async_save``
  writes it before the shards are closed: ``discover._unfinished_dist_save``).
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from moeconsole.runner.checkpoints.dcp_metadata import DcpIndex, DcpMetadataError, parse_dcp_metadata, summarize
from moeconsole.runner.checkpoints.discover import (CHECKPOINT_DIR, ITER_DIR, MERGED_SUFFIX, TRACKER, has_hf_weights,
                                         is_megatron_iter_dir, megatron_model_state_saved, tracker_iteration,
                                         tracker_passed_over, weights_sibling)
from moeconsole.runner.core.units import human_bytes
from moeconsole.runner.rundir import jsonio

COMMON = "common.pt"
MP_RANK_DIR = re.compile(r"^mp_rank_\d{2}(_\d{3})?$")
_MAX_DCP_METADATA_BYTES = 512 << 20
UNJUDGED_WHY = (".metadata was not read, and torch's writer leaves a writer thread's .distcp empty when it was "
                "given no item, so this one may hold nothing by design or may have lost its data")


@dataclass
class MegatronReport:
    """Problems as (verdict, reason) pairs, and the files looked at."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    format: str = "unknown"
    notes: list[str] = field(default_factory=list)
    weights_elsewhere: Path | None = None   # where this save's weights are: the -merged sibling, or for
                                            # an iter_N/ alone, the checkpoint-N/ holding it
    tensors: int = 0                # model tensors listed by DCP's .metadata (not optimizer state)
    params: int = 0                 # their elements
    optimizer_tensors: int = 0      # optimizer-state tensors listed beside them (is_optimizer_state)
    optimizer_values: int = 0
    indexed: bool = False           # a .metadata was read: the counts above are known
    unjudged_empty: list[str] = field(default_factory=list)   # 0-byte .distcp files no index could judge
    index_sha256: dict[str, str] = field(default_factory=dict)   # relative path -> digest of each .metadata read


def _file_entry(path: Path, base: Path, verdict: str = "ok", reason: str = "") -> dict:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return {"path": str(path.relative_to(base)), "size": size, "ok": verdict == "ok", "verdict": verdict,
            "reason": reason}


def _check_torch_dist(d: Path, base: Path, files: set[str], report: MegatronReport) -> None:
    report.format = "torch_dist"
    distcp = sorted(f for f in files if f.endswith(".distcp"))
    for name in ("metadata.json", "common.pt"):
        if name not in files:
            report.problems.append(("missing_shard", f"{d.name}/{name} is missing"))
    if "metadata.json" in files:
        try:
            meta = jsonio.loads((d / "metadata.json").read_text())
            if not isinstance(meta, dict):
                raise ValueError("not an object")
        except (OSError, ValueError) as exc:
            report.problems.append(("corrupt_header", f"{d.name}/metadata.json is unreadable: {exc}"))
        report.files.append(_file_entry(d / "metadata.json", base))
    if ".metadata" not in files:
        report.problems.append(("incomplete", f"{d.name}/.metadata is missing: torch wrote the shards but "
                                              "not the index it writes last"))
        index = None
    else:
        index = _read_dcp_index(d / ".metadata", base, report)
    _check_shards(d, base, ["common.pt", *distcp] if "common.pt" in files else distcp, index, report)


def _check_fsdp_dcp(d: Path, base: Path, files: set[str], report: MegatronReport) -> None:
    """A Megatron-FSDP ``fsdp_dtensor`` save: torch DCP writes the shards, then ``.metadata``."""
    report.format = "fsdp_dtensor"
    distcp = sorted(f for f in files if f.endswith(".distcp"))
    index = _read_dcp_index(d / ".metadata", base, report)
    _check_shards(d, base, distcp, index, report)


def _check_shards(d: Path, base: Path, names: list[str], index: DcpIndex | None, report: MegatronReport) -> None:
    """Each file non-empty, at least one ``.distcp`` shard, every shard ``.metadata`` names on disk
    and as long as the data it places there, and at least one model tensor listed."""
    distcp = [n for n in names if n.endswith(".distcp")]
    extents = index.extents if index else {}
    # a file the index places data in below the directory (DCP's relative_path may hold a '/')
    nested = sorted(rel for rel in extents if "/" in rel and (d / rel).is_file())
    entries = [_file_entry(d / name, base) for name in names + nested]
    sizes = {name: e["size"] for name, e in zip(names + nested, entries)}
    # torch's FileSystemWriter opens one file per writer thread (thread_count, 2 in Megatron-core)
    # and leaves it empty when its bucket got no item (filesystem.py _split_by_size_and_type, then
    # _write_files_from_queue opens every bucket's file): an empty .distcp is no fault by itself.
    # Only the index tells which are empty by design; without it, one is judged only when every
    # shard is empty (then the save holds no data at all).
    all_empty = bool(distcp) and all(sizes[n] == 0 for n in distcp)
    unjudged = [] if index is not None or all_empty else [n for n in distcp if sizes[n] == 0]
    for name, entry in zip(names + nested, entries):
        end = extents.get(name)
        if entry["size"] == 0 and index is not None and name.endswith(".distcp") and end is None:
            entry["reason"] = "0 bytes; .metadata places nothing in it"
        elif name in unjudged:
            entry["reason"] = f"0 bytes; not judged: {UNJUDGED_WHY}"
        elif entry["size"] == 0:
            entry.update(ok=False, verdict="empty_stub", reason="0 bytes")
            report.problems.append(("empty_stub", f"{d.name}/{name} is empty (0 bytes)"))
        elif end is not None and entry["size"] < end:
            why = (f"{entry['size']:,} bytes, but .metadata places data up to byte {end:,}: "
                   "the shard was cut short")
            entry.update(ok=False, verdict="truncated", reason=why)
            report.problems.append(("truncated", f"{d.name}/{name} is {why}"))
        if index is not None and name.endswith(".distcp"):
            entry["items"] = index.storage_entries.get(name, 0)
        report.files.append(entry)
    if not distcp:
        report.problems.append(("empty_stub", f"{d.name} holds no .distcp shard"))
    if unjudged:
        report.unjudged_empty += [f"{d.name}/{n}" for n in unjudged]
        report.notes.append(f"{len(unjudged)} .distcp file(s) of 0 bytes not judged ({', '.join(unjudged[:3])}"
                            f"{', ...' if len(unjudged) > 3 else ''}): {UNJUDGED_WHY}")
    if index is not None:
        missing = sorted(set(extents) - set(distcp) - set(nested))
        if missing:
            report.problems.append(("missing_shard", f"{d.name}/.metadata names {len(missing)} shard(s) that do "
                                                     f"not exist: {', '.join(missing[:5])}"))
        _count_tensors(d, index, report)


def _count_tensors(d: Path, index: DcpIndex, report: MegatronReport) -> None:
    report.indexed = True
    t, p, ot, op = summarize(index)
    report.tensors += t
    report.params += p
    report.optimizer_tensors += ot
    report.optimizer_values += op
    if not t:
        what = (f"only optimizer state ({ot} tensors)" if ot else
                f"no tensors at all ({index.byte_items} non-tensor item(s))")
        report.problems.append(("empty_stub", f"{d.name}/.metadata lists {what}: the save holds no model weights"))
    if index.unstored:
        report.problems.append(("corrupt_header", f"{d.name}/.metadata lists {len(index.unstored)} tensor(s) with "
                                                  "no place in any .distcp: "
                                                  + ", ".join(n[:120] for n in index.unstored[:3])))


def _read_dcp_index(path: Path, base: Path, report: MegatronReport) -> DcpIndex | None:
    """DCP's index of the save, read without executing it; None (and a problem) when unreadable.
    Its file entry carries its own verdict (an empty or corrupt index is named as the bad file),
    and is listed even when too large to read, so ``--full`` hashes it with the shards."""
    where = f"{path.parent.name}/.metadata"
    try:
        size = path.stat().st_size
        raw = path.read_bytes() if 0 < size <= _MAX_DCP_METADATA_BYTES else b""
    except OSError as exc:
        report.problems.append(("unreadable", f"{where}: {exc.strerror or exc}"))
        return None
    entry = _file_entry(path, base)
    report.files.append(entry)
    if size == 0:
        entry.update(ok=False, verdict="empty_stub", reason="0 bytes")
        report.problems.append(("empty_stub", f"{where} is empty (0 bytes)"))
        return None
    if size > _MAX_DCP_METADATA_BYTES:
        entry["reason"] = f"not read (above {human_bytes(_MAX_DCP_METADATA_BYTES)})"
        report.notes.append(f"{where} is {human_bytes(size)}: not read (above "
                            f"{human_bytes(_MAX_DCP_METADATA_BYTES)}); tensors not counted, shards checked "
                            "for presence and size only")
        return None
    report.index_sha256[entry["path"]] = hashlib.sha256(raw).hexdigest()
    try:
        return parse_dcp_metadata(raw)
    except DcpMetadataError as exc:
        entry.update(ok=False, verdict="corrupt_header", reason=str(exc))
        report.problems.append(("corrupt_header", f"{where} {exc}"))
        return None


def _check_legacy(d: Path, base: Path, dirs: set[str], report: MegatronReport) -> None:
    report.format = "torch"
    for name in sorted(dirs):
        if not MP_RANK_DIR.match(name):
            continue
        shard = d / name / "model_optim_rng.pt"
        if not shard.is_file():
            # Optimizer-only distrib files may sit beside it, but the model file must be there.
            report.problems.append(("missing_shard", f"{d.name}/{name}/model_optim_rng.pt is missing"))
            continue
        entry = _file_entry(shard, base)
        if entry["size"] == 0:
            entry.update(ok=False, verdict="empty_stub", reason="0 bytes")
            report.problems.append(("empty_stub", f"{d.name}/{name}/model_optim_rng.pt is empty (0 bytes)"))
        report.files.append(entry)


def check_iter_dir(d: Path, base: Path | None = None) -> MegatronReport:
    """Structural check of one ``iter_NNNNNNN`` (or ``release``) directory; file paths in the
    report are relative to ``base`` (default: the directory itself)."""
    base = base or d
    report = MegatronReport()
    try:
        with os.scandir(d) as it:
            entries = list(it)
    except OSError as exc:
        report.problems.append(("unreadable", f"{d.name}: {exc.strerror or exc}"))
        return report
    files = {e.name for e in entries if e.is_file()}
    dirs = {e.name for e in entries if e.is_dir()}
    if files == {COMMON} and not dirs:
        # ms-swift with --no_save_optim and --save_safetensors saves no model state here
        # (save_mcore_checkpoint with models=[]): common.pt holds the iteration and args only.
        report.format = "common_only"
        entry = _file_entry(d / COMMON, base)
        if entry["size"] == 0:
            entry.update(ok=False, verdict="empty_stub", reason="0 bytes")
            report.problems.append(("empty_stub", f"{d.name}/{COMMON} is empty (0 bytes)"))
        report.files.append(entry)
        if megatron_model_state_saved(d):
            # the save's own arguments save model state here: its shards never came (discover's rule)
            report.problems.append(("incomplete", f"{d.name}/ holds {COMMON} alone, but the save's arguments "
                                                  "(args.json) save model state into it: the shards never came "
                                                  "(the save did not finish)"))
    elif ".metadata" in files and COMMON not in files and "metadata.json" not in files:
        _check_fsdp_dcp(d, base, files, report)
    elif any(f.endswith(".distcp") for f in files) or "metadata.json" in files or ".metadata" in files:
        _check_torch_dist(d, base, files, report)
    elif any(MP_RANK_DIR.match(x) for x in dirs):
        _check_legacy(d, base, dirs, report)
    else:
        report.problems.append(("empty_stub", f"{d.name} holds no Megatron checkpoint files"))
    return report


def check_tracker(save_dir: Path, iteration: int | None, *, required: bool,
                  iteration_dir: Path | None = None, rewrites: bool = False) -> list[tuple[str, str]]:
    """Is the save of ``iteration`` (in ``iteration_dir``) finished according to ``save_dir``'s
    tracker? ``rewrites``: the run's resumes count from step 1 again into one directory, where an
    iteration above the tracker may be an earlier attempt's finished save (``discover.tracker_passed_over``)."""
    if not (save_dir / TRACKER).exists():
        if required:
            return [("incomplete", f"{TRACKER} is missing: the Megatron save did not finish")]
        return []
    tracked = tracker_iteration(save_dir)
    if tracked is None:
        return [("corrupt_header", f"{TRACKER} holds neither an iteration number nor 'release'")]
    if isinstance(tracked, int) and iteration is not None and iteration > tracked \
            and not (iteration_dir is not None and tracker_passed_over(iteration_dir, save_dir, rewrites=rewrites)):
        return [("incomplete", f"iteration {iteration} is newer than {TRACKER} ({tracked}): "
                               "the save did not finish")]
    return []


def check_megatron(path: Path, step: int | None, *, rewrites: bool = False) -> MegatronReport:
    """Check a Megatron checkpoint: an ``iter_*`` dir itself, or an ms-swift ``checkpoint-N/``
    that nests one (with its own tracker). With ``--save_safetensors true --no_save_optim true``
    ms-swift's ``iter_N/`` holds only ``common.pt`` (``save_mcore_checkpoint`` with no models):
    the weights are then elsewhere, and ``weights_elsewhere`` says where. ``rewrites``: the run's
    resumes count from step 1 again into one directory (``order.SaveOrder``)."""
    if is_megatron_iter_dir(path):
        report = check_iter_dir(path)
        report.problems += check_tracker(path.parent, step, required=False, iteration_dir=path, rewrites=rewrites)
        if report.format == "common_only" and CHECKPOINT_DIR.match(path.parent.name):
            report.weights_elsewhere = (path.parent if has_hf_weights(path.parent) else
                                        weights_sibling(path.parent) or path.parent)
        return report
    iter_dirs = sorted(p for p in path.iterdir() if p.is_dir() and ITER_DIR.match(p.name))
    report = MegatronReport()
    for d in iter_dirs:
        sub = check_iter_dir(d, path)
        report.problems += sub.problems
        report.files += sub.files
        report.notes += sub.notes
        report.format = sub.format
        report.tensors += sub.tensors
        report.params += sub.params
        report.optimizer_tensors += sub.optimizer_tensors
        report.optimizer_values += sub.optimizer_values
        report.indexed = report.indexed or sub.indexed
        report.index_sha256.update(sub.index_sha256)
        report.unjudged_empty += sub.unjudged_empty
        m = ITER_DIR.match(d.name)
        report.problems += check_tracker(path, int(m.group(1)) if m else None, required=True,
                                         iteration_dir=d, rewrites=rewrites)
    if report.format == "common_only" and not has_hf_weights(path):
        report.weights_elsewhere = weights_sibling(path)
        if report.weights_elsewhere is None and not path.name.endswith(MERGED_SUFFIX):
            report.problems.append(("empty_stub", f"no weights: {iter_dirs[-1].name} holds only {COMMON} (saved with "
                                                  "--no_save_optim) and there is neither an adapter/model "
                                                  f"safetensors here nor a {path.name}{MERGED_SUFFIX}/ beside it"))
    return report

