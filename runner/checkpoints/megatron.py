"""Megatron checkpoints: check that a save's files exist, are non-empty and are complete.

We cannot read distcp tensors without torch, so a Megatron check is structural:

- ``torch_dist`` (distributed checkpoint, megatron-core ``dist_checkpointing.save``): ``common.pt``
  first, the ``*.distcp`` shards, torch DCP's index ``.metadata``, then ``metadata.json``
  (Megatron's, names the backend) last. The shard names DCP expects are read from ``.metadata``'s
  pickle opcodes *without unpickling it* (``pickletools.genops`` only decodes; nothing is
  executed), so a missing shard is found.
- ``fsdp_dtensor`` (ms-swift 4.6 with ``--use_megatron_fsdp``): plain torch DCP, ``*.distcp`` +
  ``.metadata`` and no ``common.pt`` or ``metadata.json``; the args and iteration live inside the
  DCP state (4.6.0 swift/megatron/utils/megatron_fsdp_checkpoint.py ``save_checkpoint``,
  ``is_checkpoint``).
- legacy torch format: ``mp_rank_XX[_YYY]/model_optim_rng.pt`` per model-parallel rank.
- the tracker ``latest_checkpointed_iteration.txt``, written after every rank finished: an
  iteration newer than the tracker is an unfinished save.
"""
from __future__ import annotations

import io
import os
import pickletools
import re
from dataclasses import dataclass, field
from pathlib import Path

from moeconsole.runner.checkpoints.discover import (CHECKPOINT_DIR, ITER_DIR, MERGED_SUFFIX, TRACKER, has_hf_weights,
                                         is_megatron_iter_dir, tracker_iteration, weights_sibling)
from moeconsole.runner.rundir import jsonio

COMMON = "common.pt"
MP_RANK_DIR = re.compile(r"^mp_rank_\d{2}(_\d{3})?$")
_MAX_DCP_METADATA_BYTES = 512 << 20


@dataclass
class MegatronReport:
    """Problems as (verdict, reason) pairs, and the files looked at."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    format: str = "unknown"
    weights_elsewhere: Path | None = None   # where this save's weights are: the -merged sibling, or for
                                            # an iter_N/ alone, the checkpoint-N/ holding it


def _file_entry(path: Path, base: Path, verdict: str = "ok", reason: str = "") -> dict:
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return {"path": str(path.relative_to(base)), "size": size, "ok": verdict == "ok", "verdict": verdict,
            "reason": reason}


def distcp_names_from_metadata(raw: bytes) -> set[str] | None:
    """The ``*.distcp`` file names a torch DCP ``.metadata`` pickle refers to, found by walking
    its opcodes (no object is built, no code runs). None if the bytes are not a valid pickle."""
    names: set[str] = set()
    try:
        for opcode, arg, _pos in pickletools.genops(io.BytesIO(raw)):
            if isinstance(arg, str) and arg.endswith(".distcp") and "/" not in arg:
                names.add(arg)
            elif isinstance(arg, bytes) and arg.endswith(b".distcp") and b"/" not in arg:
                names.add(arg.decode("utf-8", "replace"))
            if opcode.name == "STOP":
                return names
    except Exception:   # genops raises ValueError and friends on damaged input; any of them means "not a pickle"
        return None
    return None          # no STOP opcode: the pickle is cut short


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
        expected = None
    else:
        expected = _expected_shards(d / ".metadata", base, report)
    _check_shards(d, base, ["common.pt", *distcp] if "common.pt" in files else distcp, expected, report)


def _check_fsdp_dcp(d: Path, base: Path, files: set[str], report: MegatronReport) -> None:
    """A Megatron-FSDP ``fsdp_dtensor`` save: torch DCP writes the shards, then ``.metadata``."""
    report.format = "fsdp_dtensor"
    distcp = sorted(f for f in files if f.endswith(".distcp"))
    expected = _expected_shards(d / ".metadata", base, report)
    _check_shards(d, base, distcp, expected, report)


def _check_shards(d: Path, base: Path, names: list[str], expected: set[str] | None, report: MegatronReport) -> None:
    """Each file non-empty, at least one ``.distcp`` shard, and every shard ``.metadata`` names on disk."""
    distcp = [n for n in names if n.endswith(".distcp")]
    for name in names:
        entry = _file_entry(d / name, base)
        if entry["size"] == 0:
            entry.update(ok=False, verdict="empty_stub", reason="0 bytes")
            report.problems.append(("empty_stub", f"{d.name}/{name} is empty (0 bytes)"))
        report.files.append(entry)
    if not distcp:
        report.problems.append(("empty_stub", f"{d.name} holds no .distcp shard"))
    if expected:
        missing = sorted(expected - set(distcp))
        if missing:
            report.problems.append(("missing_shard", f"{d.name}/.metadata names {len(missing)} shard(s) that do "
                                                     f"not exist: {', '.join(missing[:5])}"))


def _expected_shards(path: Path, base: Path, report: MegatronReport) -> set[str] | None:
    try:
        size = path.stat().st_size
        if size == 0:
            report.problems.append(("empty_stub", f"{path.parent.name}/.metadata is empty (0 bytes)"))
            return None
        if size > _MAX_DCP_METADATA_BYTES:
            return None     # too big to walk cheaply; existence and size checks still apply
        raw = path.read_bytes()
    except OSError as exc:
        report.problems.append(("unreadable", f"{path.parent.name}/.metadata: {exc.strerror or exc}"))
        return None
    names = distcp_names_from_metadata(raw)
    if names is None:
        report.problems.append(("corrupt_header", f"{path.parent.name}/.metadata is not a complete pickle"))
    report.files.append(_file_entry(path, base))
    return names


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
    elif ".metadata" in files and COMMON not in files and "metadata.json" not in files:
        _check_fsdp_dcp(d, base, files, report)
    elif any(f.endswith(".distcp") for f in files) or "metadata.json" in files or ".metadata" in files:
        _check_torch_dist(d, base, files, report)
    elif any(MP_RANK_DIR.match(x) for x in dirs):
        _check_legacy(d, base, dirs, report)
    else:
        report.problems.append(("empty_stub", f"{d.name} holds no Megatron checkpoint files"))
    return report


def check_tracker(save_dir: Path, iteration: int | None, *, required: bool) -> list[tuple[str, str]]:
    """Is the save of ``iteration`` finished according to ``save_dir``'s tracker?"""
    if not (save_dir / TRACKER).exists():
        if required:
            return [("incomplete", f"{TRACKER} is missing: the Megatron save did not finish")]
        return []
    tracked = tracker_iteration(save_dir)
    if tracked is None:
        return [("corrupt_header", f"{TRACKER} holds neither an iteration number nor 'release'")]
    if isinstance(tracked, int) and iteration is not None and iteration > tracked:
        return [("incomplete", f"iteration {iteration} is newer than {TRACKER} ({tracked}): "
                               "the save did not finish")]
    return []


def check_megatron(path: Path, step: int | None) -> MegatronReport:
    """Check a Megatron checkpoint: an ``iter_*`` dir itself, or an ms-swift ``checkpoint-N/``
    that nests one (with its own tracker). With ``--save_safetensors true --no_save_optim true``
    ms-swift's ``iter_N/`` holds only ``common.pt`` (``save_mcore_checkpoint`` with no models):
    the weights are then elsewhere, and ``weights_elsewhere`` says where."""
    if is_megatron_iter_dir(path):
        report = check_iter_dir(path)
        report.problems += check_tracker(path.parent, step, required=False)
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
        report.format = sub.format
        m = ITER_DIR.match(d.name)
        report.problems += check_tracker(path, int(m.group(1)) if m else None, required=True)
    if report.format == "common_only" and not has_hf_weights(path):
        report.weights_elsewhere = weights_sibling(path)
        if report.weights_elsewhere is None and not path.name.endswith(MERGED_SUFFIX):
            report.problems.append(("empty_stub", f"no weights: {iter_dirs[-1].name} holds only {COMMON} (saved with "
                                                  "--no_save_optim) and there is neither an adapter/model "
                                                  f"safetensors here nor a {path.name}{MERGED_SUFFIX}/ beside it"))
    return report

