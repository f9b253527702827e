"""One verdict per checkpoint, whatever its layout, without loading weights.

The fast path reads each safetensors header (plus ``stat``), the index and config JSON files,
and Megatron's small metadata files. ``full=True`` adds the streaming hash and the NaN/inf and
all-zeros scan. Every problem found is kept (``problems``); the headline verdict is the most
serious one, so an empty stub is never hidden behind a lesser complaint.
"""
from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moeconsole.runner.rundir import jsonio
from moeconsole.runner.checkpoints import adapter, megatron, sharded, suspect
from moeconsole.runner.checkpoints.discover import (CHECKPOINT_DIR, is_export, ITER_DIR, JIT_INCOMPLETE_MARKER, PICKLE_WEIGHTS, torch_save_files, SIDECAR_NAME, SWIFT_ARGS_FILES,
                                         TRAINER_STATE, Checkpoint, layout_of, step_of,
                                         missing_rank_share, trainer_writes_state, transformers_save)
from moeconsole.runner.checkpoints.safetensors_file import FileVerdict, TensorEntry, check_safetensors
from moeconsole.runner.core.units import human_bytes, human_count
from moeconsole.runner.checkpoints.scan import HASH_ALGO, hash_file, scan_tensors
from moeconsole.runner.checkpoints.sidecar import read_sidecar, sidecar_watched

# Most serious first: the headline verdict is the first of these among the problems found.
SEVERITY = ("empty_stub", "truncated", "corrupt_header", "overlapping", "missing_shard", "index_mismatch",
            "lora_coverage", "incomplete", "missing_config", "lora_mismatch", "nonfinite", "all_zeros", "unreadable")

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
MODEL_CONFIG = "config.json"


@dataclass
class CheckpointVerdict:
    path: Path
    ok: bool
    verdict: str
    reason: str
    step: int | None = None
    layout: str = "unknown"
    tensors: int = 0
    params: int = 0
    files: list[dict] = field(default_factory=list)
    suspect: bool = False
    suspect_reason: str | None = None
    recipe_hash: str | None = None
    drift: bool | None = None
    full: dict | None = None
    problems: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    counted: bool = True      # tensors/params were read from headers; False: a Megatron save whose DCP
                              # .metadata was not read (legacy torch pickles, a corrupt or too large index)
    header_sha256: str | None = None   # identity from the headers the fast path read (header_digest); None: none

    def counts(self) -> dict[str, int | None]:
        """``tensors`` and ``params`` for an event or a record: None when not counted (unknown, not 0)."""
        return {"tensors": self.tensors if self.counted else None, "params": self.params if self.counted else None}

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "ok": self.ok, "verdict": self.verdict, "reason": self.reason,
                "step": self.step, "layout": self.layout, "tensors": self.tensors, "params": self.params,
                "files": self.files, "suspect": self.suspect, "suspect_reason": self.suspect_reason,
                "recipe_hash": self.recipe_hash, "drift": self.drift, "full": self.full,
                "problems": self.problems, "notes": self.notes, "seconds": round(self.seconds, 6),
                "counted": self.counted, "export": is_export(self.layout)}


@dataclass
class _Findings:
    """What the checks of one checkpoint collect before the verdict is decided."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    file_verdicts: list[FileVerdict] = field(default_factory=list)
    summary: str = ""
    dcp_tensors: int = 0        # model tensors (and their elements) DCP's .metadata lists (Megatron saves)
    dcp_params: int = 0
    dcp_indexed: bool = False   # a DCP .metadata was read: dcp_tensors/dcp_params are known
    unjudged: int = 0           # 0-byte .distcp files no index judged (said on the ok line itself)
    headers: dict[str, tuple[int, str]] = field(default_factory=dict)   # relative path -> (size, sha256 of the
                                # header or .metadata as read; "" when not read: bad, or above its read limit)


def _read_json_object(path: Path) -> tuple[dict | None, str | None]:
    try:
        obj = jsonio.loads(path.read_text())
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"{path.name} is not readable JSON: {exc}"
    if not isinstance(obj, dict):
        return None, f"{path.name} is not a JSON object"
    return obj, None


def _check_files(base: Path, paths: list[Path], found: _Findings) -> None:
    for p in paths:
        fv = check_safetensors(p)
        found.file_verdicts.append(fv)
        d = fv.to_dict()
        d["path"] = str(p.relative_to(base)) if p != base else p.name
        found.files.append(d)
        found.headers[d["path"]] = (fv.size, fv.header.sha256 if fv.header is not None else "")
        if not fv.ok:
            found.problems.append((fv.verdict, f"{d['path']}: {fv.reason}"))


def _check_adapter(d: Path, found: _Findings) -> None:
    config, err = _read_json_object(d / ADAPTER_CONFIG)
    if err:
        found.problems.append(("missing_config", err))
    elif config is None:
        found.problems.append(("missing_config", f"{ADAPTER_CONFIG} is missing next to {ADAPTER_WEIGHTS}"))
    weights = [fv for fv in found.file_verdicts if fv.path.name == ADAPTER_WEIGHTS]
    if not weights:
        if not (d / "adapter_model.bin").is_file():
            found.problems.append(("empty_stub", f"{ADAPTER_WEIGHTS} is missing"))
        return
    fv = weights[0]
    if not fv.ok or fv.header is None:
        return
    peft_type = str((config or {}).get("peft_type", "LORA")).upper()
    if peft_type not in ("LORA", "ADALORA"):
        found.notes.append(f"peft_type {peft_type}: LoRA pair checks skipped")
        return
    lora = adapter.check_lora(fv.header.entries, config)
    for problem in lora.problems[:5]:
        found.problems.append(("lora_mismatch", problem))
    if len(lora.problems) > 5:
        found.problems.append(("lora_mismatch", f"... and {len(lora.problems) - 5} more LoRA problems"))
    if lora.pairs:
        ranks = "/".join(str(r) for r in lora.ranks)
        found.summary = f"LoRA r={(config or {}).get('r', '?')}, {lora.pairs} pairs (rank axis {ranks})"
    if config is not None:
        _check_coverage(d, fv.header.entries, config, found)


def model_config_for(d: Path, adapter_config: dict) -> Path | None:
    """The base model's config.json for an adapter in ``d``: adapter_config.json's
    ``base_model_name_or_path``, else the ``model`` ms-swift copied into args.json, as a local
    directory or a download in the Hugging Face / ModelScope cache."""
    from moeconsole.runner.recipes.swift.sizes import find_model_config
    args: dict = {}
    for fname in SWIFT_ARGS_FILES:
        got, _err = _read_json_object(d / fname)
        if got:
            args = got
            break
    # 3.x/4.x args.json ``model``; 2.x sft_args.json ``model_id_or_path``
    for name in (adapter_config.get("base_model_name_or_path"), args.get("model"), args.get("model_id_or_path")):
        if isinstance(name, str) and name:
            found = find_model_config(name)
            if found is not None:
                return found
    return None


def _check_coverage(d: Path, entries: Iterable[TensorEntry], config: dict, found: _Findings) -> None:
    """Far fewer LoRA parameters than the adapter config and the model call for (coverage.py)."""
    from moeconsole.runner.checkpoints.coverage import lora_coverage
    path = model_config_for(d, config)
    if path is None:
        found.notes.append("LoRA coverage not checked: the base model's config.json is not on this machine "
                           "(adapter_config.json base_model_name_or_path / args.json model)")
        return
    model, err = _read_json_object(path)
    if model is None:
        found.notes.append(f"LoRA coverage not checked: {err or f'{path} is missing'}")
        return
    cov = lora_coverage(entries, config, model)
    if cov.skipped:
        found.notes.append(f"LoRA coverage not checked: {cov.skipped}")
        return
    missing = cov.missing()
    share = cov.saved_total / cov.expected_total if cov.expected_total else 1.0
    if missing:
        found.problems.append(("lora_coverage", f"the adapter holds {share:.1%} of the ~{cov.expected_total:,} LoRA "
                                                f"parameters r={config.get('r')} on {config.get('target_modules')} "
                                                f"of {path.parent.name} calls for; missing: " + "; ".join(missing)))
    elif found.summary:
        found.summary += f", {share:.0%} of the expected LoRA parameters"


def _check_sharded(d: Path, indexes: list[Path], found: _Findings, files_on_disk: set[str]) -> None:
    names = {fv.path.name: (set(fv.names) if fv.ok else None) for fv in found.file_verdicts}
    for index_path in indexes:
        report = sharded.read_index(index_path)
        found.problems += report.problems
        if report.weight_map:
            found.problems += sharded.check_index(index_path.name, report.weight_map, names, files_on_disk)
            indexed = set(report.weight_map)
            extra = sum(len(n - indexed) for f, n in names.items()
                        if n is not None and f in set(report.weight_map.values()))
            if extra:
                found.notes.append(f"{extra} tensor(s) in the shards are not named by {index_path.name} "
                                   "(loaders ignore them)")


def _check_hf(d: Path, layout: str, found: _Findings, trainer: bool = False, rewrites: bool = False,
              watched: Mapping[str, int] | None = None, kept: Mapping[str, int] | None = None) -> None:
    try:
        files_on_disk = {p.name for p in d.iterdir() if p.is_file()}
    except OSError as exc:
        found.problems.append(("unreadable", f"{d}: {exc.strerror or exc}"))
        return
    weights = sorted(d / f for f in files_on_disk if f.endswith(".safetensors"))
    _check_files(d, weights, found)
    pickles = sorted(d / f for f in files_on_disk if PICKLE_WEIGHTS.match(f))
    _check_pickles(d, pickles, found)
    indexes = sorted(d / f for f in files_on_disk if f.endswith((".safetensors.index.json", ".bin.index.json")))
    if indexes:
        _check_sharded(d, indexes, found, files_on_disk)
    elif weights or pickles:
        found.problems += sharded.check_series([w.name for w in weights + pickles], files_on_disk)
    if layout == "hf_adapter":
        _check_adapter(d, found)
    elif weights or indexes or pickles:
        config, err = _read_json_object(d / MODEL_CONFIG)
        if err:
            found.problems.append(("missing_config", err))
        elif config is None and transformers_save(d, files_on_disk):
            found.problems.append(("missing_config", f"{MODEL_CONFIG} is missing next to the model weights"))
        elif config is None:
            found.notes.append(f"no {MODEL_CONFIG}: a plain state dict, not a transformers save "
                               "(from_pretrained would need one; load_file reads it)")
    if not weights and not pickles and layout != "hf_adapter" and not indexes:
        found.problems.append(("empty_stub", "directory holds no weight files"))
    _check_trainer_state(d, files_on_disk, weights + pickles, found, trainer, rewrites, watched, kept)


def _check_trainer_state(d: Path, files_on_disk: set[str], weights: list[Path], found: _Findings,
                         trainer: bool, rewrites: bool = False, watched: Mapping[str, int] | None = None,
                         kept: Mapping[str, int] | None = None) -> None:
    """A Trainer checkpoint (optimizer/scheduler/args saved) is a resume point only with its
    trainer_state.json, which the Trainer writes last: without it the save was cut short and a
    resume from here fails (FileNotFoundError) on every attempt. With it, it must be this save's
    own (``stale_trainer_state``)."""
    if not trainer_writes_state(d, files_on_disk, trainer=trainer):
        return
    state, err = _read_json_object(d / TRAINER_STATE)
    if err:
        found.problems.append(("incomplete", err))
    elif state is None:
        found.problems.append(("incomplete", "trainer_state.json is missing (written last by the Trainer: "
                                             "the save was cut short, and resuming from it fails)"))
    else:
        stale = stale_trainer_state(d, state, weights, rewrites=rewrites, watched=watched, kept=kept)
        if stale:
            found.problems.append(("incomplete", stale))
        share = missing_rank_share(d, files_on_disk)
        if share and share.cut:
            # on resume each process torch.loads its own share (trainer.py l.3809-3825): a file cut short
            # raises on every attempt
            found.problems.append(("incomplete", f"{share} is cut short: process {share.process} was stopped "
                                                 "while it wrote its share of the save, and resuming from it fails"))
        elif share:
            # absent, transformers only logs it and resumes (``_load_rng_state``, trainer.py l.3809-3817); each
            # process writes its share after every collective step of the save (l.3356-3361), so only that
            # process's RNG stream is lost: still a resume point
            found.notes.append(f"warning: {share.name} is missing (process {share.process} of {share.world} was "
                               f"stopped before it wrote its RNG state): a resume from here goes on with process "
                               f"{share.process}'s random state starting fresh")


def _watched_order(watched: Mapping[str, int] | None, weights: list[Path]) -> tuple[int, int, Path] | None:
    """The look trainer_state.json was seen written at, the newest weights' look and that file, as
    ``watched`` tells them (``CheckpointWatcher.written``); None where it tells no order: a file
    left out (changed since its last look, or never looked at), or every one there at the
    watcher's first look (all 0: a runner that started after the save, a new runner re-checking
    it; ``sidecar.watched_orders``)."""
    if watched is None or TRAINER_STATE not in watched or not all(w.name in watched for w in weights):
        return None
    newest_look, newest = max((watched[w.name], w) for w in weights)
    at = watched[TRAINER_STATE]
    return (at, newest_look, newest) if at or newest_look else None


def stale_trainer_state(d: Path, state: dict, weights: list[Path], *, rewrites: bool = False,
                        watched: Mapping[str, int] | None = None,
                        kept: Mapping[str, int] | None = None) -> str | None:
    """Why the trainer_state.json in ``d`` is an earlier save's, not this one's (None: it is this
    save's). A save written again under the same name (a resume that counts from step 1 again into
    the same directory: ms-swift's ``--add_version false`` with ``--resume_only_model
    --ignore_data_skip``; a restart that starts over) rewrites its files in place, in the order of
    transformers' ``Trainer._save_checkpoint`` (5.19.0 trainer.py l.3321-3375: ``save_model``, the
    optimizer and scheduler, the RNG state, ``state.save_to_json`` last). Cut before that last
    write, the directory holds the new weights beside the previous attempt's state, which reads
    fine. Two signs: the state's ``global_step`` is not the step the directory is named by (the
    Trainer names it ``checkpoint-{global_step}``, l.3328), or the state was written before the
    weights it should follow. That second sign is read only where saves are written again in place
    (``rewrites``: the run's resumes count from step 1 again into one directory, the keeper's
    ``rewrites``): a writer that fills the weights in after the state (an asynchronous or flash
    checkpoint, a stub completed later) leaves the same order in a save of its own. A copy that
    did not keep modification times (``cp`` without ``-p``) can look the same: the reason says so.

    The order is the runner's own where it watched the save (``watched``: the look at which its
    checkpoint watcher saw each file written, ``CheckpointWatcher.written``, on the monotonic
    clock): a file's modification time is the wall clock's at its write, and a step back of that
    clock between the weights and the state (NTP correcting a fast clock, an admin's `date -s`)
    made a whole save read "an earlier save's", its critical alert raised and the resume point moved
    back past it. The state is this save's when the runner saw it written at the look the newest
    weights were, or later (a stale state is one the rewrite never touched: it was last written by
    an attempt before, a restart and a model load away). Where this runner's looks give no order
    (both there at its first look: a runner taking over, or re-checking a save its state.json no
    longer lists as verified), the order a runner watched and kept in the save's sidecar
    (``kept``, ``sidecar.sidecar_watched``: only while the files are exactly those it saw) decides;
    the times decide only for a save no runner watched (reviewed R27: a good save re-checked by a
    new runner was called an earlier save's from the stepped-back times, and its sidecar's order
    overwritten with zeros)."""
    named = CHECKPOINT_DIR.match(d.name)
    step = state.get("global_step")
    if named and not named.group(2) and isinstance(step, int) and not isinstance(step, bool) \
            and step != int(named.group(1)):
        return (f"trainer_state.json says global_step {step}, not {named.group(1)}: an earlier save's state "
                f"(this save was written again and cut before the Trainer wrote its own; resuming "
                f"from it would restart at step {step})")
    if not rewrites or not weights:
        return None
    for order in (watched, kept):   # this runner's looks first, then those its sidecar kept
        seen = _watched_order(order, weights)
        if seen is None:
            continue
        at, newest_look, newest = seen
        if at >= newest_look:
            return None
        return (f"trainer_state.json was last written before {newest.name}, as the runner watched this save "
                f"being written, and the Trainer writes it after the weights: it is an earlier save's (this "
                f"save was written again in place and cut before its own state)")
    try:
        state_at = (d / TRAINER_STATE).stat().st_mtime_ns
        newest_at, newest = max((w.stat().st_mtime_ns, w) for w in weights)
    except OSError:
        return None
    if state_at >= newest_at:
        return None
    behind = (newest_at - state_at) / 1e9
    return (f"trainer_state.json was written {behind:.1f}s before {newest.name}, and the Trainer writes it "
            f"after the weights: it is an earlier save's (this save was written again in place and cut "
            f"before its own state; a copy that did not keep modification times looks the same: copy "
            f"with rsync -a or cp -p)")


def _check_pickles(d: Path, pickles: list[Path], found: _Findings) -> None:
    """Torch-pickle weights (save_safetensors false): reading them needs torch and runs
    pickle, so we only check that they are there and not empty."""
    for p in pickles:
        size = p.stat().st_size
        entry = {"path": p.name, "ok": size > 0, "verdict": "ok" if size else "empty_stub",
                 "reason": "torch pickle: size checked only" if size else "0 bytes", "size": size}
        found.files.append(entry)
        if not size:
            found.problems.append(("empty_stub", f"{p.name} is empty (0 bytes)"))
    if pickles:
        found.notes.append(f"{len(pickles)} torch-pickle weight file(s): tensors not verified (safetensors only)")


# torch.save's zip format (torch/serialization.py ``_save``): records under one folder, ``data.pkl`` (the
# pickle) and ``data/<key>`` for each storage the object holds; the zip's end record is written on close.
# The legacy format is a bare pickle (``discover.torch_format``, given by ``torch_save_files``).


def _check_torch_saves(d: Path, found: _Findings) -> None:
    """A save of one's own loop (``discover.torch_save_files``): every torch.save file in it, the optimizer's,
    the scheduler's and each rank's shard as much as the weights, is whole (its zip end record written: a cut
    one fails every resume, review R60) and a torch.save archive (a ``data.pkl``). The save as a whole holds
    weights: a tensor in some file, or DCP shards beside (Lightning Fabric's FSDP save: ``.distcp`` shards and
    a ``meta.pt`` of plain values, lightning/fabric/strategies/fsdp.py ``_METADATA_FILENAME``); a save of plain
    values only is ``empty_stub``. Read from the zip's directory only: the pickle is never run, so tensors are
    not counted (``counted``)."""
    names = {p.name for p in d.iterdir() if p.is_file()}
    saves = torch_save_files(d, names)
    dcp = sorted(f for f in names if f.endswith(".distcp"))
    storages = 0
    legacy: list[str] = []
    empty: list[str] = []
    for name, kind in saves.items():
        p = d / name
        entry: dict[str, Any] = {"path": name, "size": p.stat().st_size}
        found.files.append(entry)
        problem: tuple[str, str] | None = None
        if kind == "empty":
            empty.append(name)
            entry["reason"] = f"{name} is empty (0 bytes)"
        elif kind == "legacy":
            legacy.append(name)
            entry["reason"] = "legacy torch.save format: size checked only"
        else:
            import zipfile   # here, not at import (discover._whole_torch_file says why)
            try:
                with zipfile.ZipFile(p) as z:
                    records = z.namelist()
            except (zipfile.BadZipFile, OSError):
                problem = ("truncated", f"{name} ends before torch.save finished it (no zip end record)")
            else:
                if not any(r.endswith("/data.pkl") for r in records):
                    problem = ("corrupt_header", f"{name} is a zip archive, not a torch.save file (no data.pkl)")
                else:
                    held = sum(1 for r in records if r.split("/")[1:2] == ["data"] and r.count("/") == 2)
                    storages += held
                    entry["storages"] = held
        entry["ok"] = problem is None and kind != "empty"
        entry["verdict"] = problem[0] if problem else "empty_stub" if kind == "empty" else "ok"
        entry.setdefault("reason", problem[1] if problem else "torch.save archive whole")
        if problem:
            found.problems.append(problem)
    if empty and not storages and not legacy and not dcp:
        found.problems.append(("empty_stub", f"{empty[0]} is empty (0 bytes)"))
    elif not storages and not legacy and not dcp and not found.problems:
        found.problems.append(("empty_stub", f"{', '.join(saves)}: no tensors in the save "
                                             "(torch.save of plain values only)"))
    found.summary = f"torch.save: {', '.join(saves)}" + (f", {storages} storages" if storages else "") \
        + (f", {len(dcp)} DCP shard(s)" if dcp else "") \
        + (f" ({', '.join(legacy)}: legacy format, size only)" if legacy else "")
    found.notes.append("a torch.save file: tensors not read (that would run its pickle); "
                       "safetensors are checked tensor by tensor")


def _check_dir(d: Path, layout: str, step: int | None, found: _Findings, trainer: bool = False,
               rewrites: bool = False, watched: Mapping[str, int] | None = None,
               kept: Mapping[str, int] | None = None) -> None:
    if (d / JIT_INCOMPLETE_MARKER).exists():   # whatever the files beside it say (discover.JIT_INCOMPLETE_MARKER)
        found.problems.append(("incomplete", f"{JIT_INCOMPLETE_MARKER} is still there: transformers' JIT save "
                                             "(--enable_jit_checkpoint) was cut before it finished"))
    nested_iters = layout != "megatron" and any(p.is_dir() and ITER_DIR.match(p.name) for p in d.iterdir())
    if layout == "megatron" or nested_iters:
        report = megatron.check_megatron(d, step, rewrites=rewrites)
        found.problems += report.problems
        found.files += report.files
        found.notes += report.notes
        found.dcp_tensors += report.tensors
        found.dcp_params += report.params
        found.dcp_indexed = found.dcp_indexed or report.indexed
        for f in report.files:
            if f["path"].rsplit("/", 1)[-1] == ".metadata":
                found.headers[f["path"]] = (f.get("size", 0), report.index_sha256.get(f["path"], ""))
        if report.weights_elsewhere is not None:
            _check_weights_elsewhere(d, report.weights_elsewhere, found)
        elif report.format == "common_only" and layout in ("hf_adapter", "hf_full", "hf_sharded"):
            found.notes.append(resume_hint(d, layout))
        if not found.summary and report.format not in ("unknown", "common_only"):
            found.summary = f"Megatron {report.format}, {len(report.files)} files"
            if report.optimizer_tensors:
                found.summary += (f", {report.tensors} model tensors + {report.optimizer_tensors} optimizer-state "
                                  f"tensors ({human_count(report.optimizer_values)} values)")
        found.unjudged += len(report.unjudged_empty)
    if layout in ("hf_adapter", "hf_full", "hf_sharded", "merged"):
        _check_hf(d, layout, found, trainer, rewrites, watched, kept)
    elif layout == "torch_save":
        _check_torch_saves(d, found)
    elif layout == "unknown":
        found.problems.append(("empty_stub", "checkpoint directory holds no weight files"))
    if layout.startswith("hf") or layout == "merged":
        # ms-swift writes its arguments into the output directory at the start and copies them into
        # each checkpoint when they are there (4.6.0 swift/trainers/mixin.py _save_checkpoint
        # l.436-438; 2.x sft_args.json, discover.SWIFT_ARGS_FILES): a plain Trainer's save (a script
        # of one's own) has them in neither place and lacks nothing.
        def has_args(folder: Path) -> bool:
            return any((folder / name).is_file() for name in SWIFT_ARGS_FILES)
        if CHECKPOINT_DIR.match(d.name) and not has_args(d) and has_args(d.parent):
            found.notes.append("args.json is missing (ms-swift copies it into every checkpoint)")


def resume_hint(d: Path, layout: str) -> str:
    """How ms-swift resumes from this save, and what that resume keeps (BaseMegatronTrainer.
    _load_checkpoint, trainers/base.py): the iteration and data position, not the optimizer or
    the LR schedule, which load only from torch_dist state with --mcore_adapter/--mcore_model."""
    flag = "--adapters" if layout == "hf_adapter" else "--model"
    return (f"Megatron state is {megatron.COMMON} only (--no_save_optim): resume with {flag} {d} --finetune false "
            "(the iteration and data position continue; the optimizer and the LR schedule start over)")


def _check_weights_elsewhere(d: Path, where: Path, found: _Findings) -> None:
    """A save whose weights are not in ``d``: a metadata-only ``checkpoint-N/`` whose merged model
    ms-swift wrote to ``checkpoint-N-merged/`` (``--merge_lora true``), or an ``iter_N/`` holding
    only ``common.pt`` inside ``checkpoint-N/``. The save is as good as those weights."""
    merged = where.name.endswith(megatron.MERGED_SUFFIX)
    mv = verify_checkpoint(where)
    if mv.header_sha256 is not None:
        found.headers[os.path.relpath(where, d)] = (0, mv.header_sha256)
    what = "the merged full model" if merged else (
        "the adapter" if (where / ADAPTER_WEIGHTS).is_file() else "the model weights")
    if not mv.ok:
        found.problems.append((mv.verdict, f"{d.name}/ holds Megatron metadata only; the weights of this save are "
                                           f"{what} in {where.name}/, which is {mv.verdict}: {mv.reason}"))
        return
    found.summary = f"weights in {where.name}/ ({mv.tensors} tensors, {what})"
    found.notes.append(f"{d.name}/ holds Megatron metadata only ({megatron.COMMON}); the weights of this save are "
                       f"{what} in {where}")
    if merged:
        found.notes.append(f"resume (4.2) with --model {where} --finetune false: the merged weights become the base "
                           "and a new LoRA starts on them; the optimizer and the LR schedule start over")


def _hash_files(base: Path, found: _Findings) -> dict[str, Any]:
    """SHA-256 of every file the fast path looked at (weights, Megatron files)."""
    digests: dict[str, str] = {}
    total, seconds = 0, 0.0
    errors: list[str] = []
    for f in found.files:
        rel = f["path"]
        p = base if base.is_file() else base / rel
        if p.name == SIDECAR_NAME or not p.is_file():
            continue
        try:
            digest, n, dt = hash_file(p)
        except OSError as exc:
            errors.append(f"{rel}: {exc.strerror or exc}")
            continue
        digests[rel] = digest
        total += n
        seconds += dt
    combined = hashlib.new(HASH_ALGO)
    for rel, digest in sorted(digests.items()):
        combined.update(f"{digest}  {rel}\n".encode())
    return {"hash_algo": HASH_ALGO, "hash": combined.hexdigest() if digests else None, "file_hashes": digests,
            "bytes": total, "hash_seconds": round(seconds, 4),
            "mb_per_s": round(total / seconds / 1e6, 1) if seconds > 0 else None, "errors": errors}


def _scan_files(base: Path, found: _Findings, full: dict[str, Any]) -> None:
    """NaN/inf and all-zeros per tensor of every healthy safetensors file; adds the problems."""
    nonfinite: list[dict] = []
    zero: list[dict] = []
    scanned = float_tensors = zero_float = nonfinite_count = 0
    zero_names: set[str] = set()
    lora_b: set[str] = set()
    for fv in found.file_verdicts:
        if not fv.ok or fv.header is None:
            continue
        rel = fv.path.name if base.is_file() else str(fv.path.relative_to(base))
        res = scan_tensors(fv.path, fv.header)
        scanned += res.scanned
        float_tensors += res.float_tensors
        zero_float += res.zero_float_tensors
        nonfinite_count += res.nonfinite_tensors
        zero_names |= {f"{rel}:{n}" for n in res.zero_names}
        lora_b |= {f"{rel}:{e.name}" for e in fv.header.entries if ".lora_B" in e.name or ".lora_embedding_B" in e.name}
        nonfinite += [{"file": rel, **x} for x in res.nonfinite]
        zero += [{"file": rel, "tensor": x} for x in res.zero]
        full["errors"] += [f"{rel}: {e}" for e in res.errors]
    full.update(tensors_scanned=scanned, nonfinite=nonfinite, nonfinite_tensors=nonfinite_count,
                zero_tensors=zero, zero_tensor_count=len(zero_names))
    if nonfinite_count:
        names = ", ".join(f"{x['tensor']} ({x['count']})" for x in nonfinite[:3])
        found.problems.append(("nonfinite", f"{nonfinite_count} tensor(s) hold NaN/inf: {names}"))
    if float_tensors and zero_float == float_tensors:
        found.problems.append(("all_zeros", f"every one of the {float_tensors} float tensors is all zeros"))
    elif lora_b and lora_b <= zero_names:
        found.problems.append(("all_zeros", f"every lora_B ({len(lora_b)}) is all zeros: the adapter changes "
                                            "nothing (untrained, or zeros were saved)"))


def _full_checks(base: Path, found: _Findings, verdict: CheckpointVerdict) -> None:
    """The --full checks: content hash, then the value scan."""
    full = _hash_files(base, found)
    _scan_files(base, found, full)
    verdict.full = full
    for e in full["errors"]:
        found.problems.append(("unreadable", e))


def _suspect(path: Path, step: int | None, sidecar: dict | None,
             grad_norms: Sequence[tuple[int, float]] | None) -> str | None:
    if sidecar and sidecar.get("suspect"):
        return "the runner's grad-norm monitor flagged an excursion when this was saved"
    if step is None:
        return None
    points = list(grad_norms or ())
    if not points and path.is_dir():
        points = suspect.points_from_trainer_state(path)
    reason = suspect.excursion_at(points, step) if points else None
    return f"saved during a grad-norm excursion: {reason}" if reason else None


def _headline(problems: list[tuple[str, str]]) -> tuple[str, str]:
    rank = {v: i for i, v in enumerate(SEVERITY)}
    ordered = sorted(problems, key=lambda p: rank.get(p[0], len(SEVERITY)))
    verdict, reason = ordered[0]
    if len(ordered) > 1:
        reason += f" (+{len(ordered) - 1} more problem{'s' if len(ordered) > 2 else ''})"
    return verdict, reason


def header_digest(headers: dict[str, tuple[int, str]]) -> str | None:
    """A checkpoint's cheap identity: sha256 over (relative path, size, digest of the header) of each
    safetensors file and each DCP ``.metadata`` (a Megatron save's header), from the bytes the fast path
    read anyway and within its limits (a header above 100 MB, a ``.metadata`` above 512 MB: its size
    only). Changes when tensor names, shapes, dtypes or a file's size change; None without such files."""
    if not headers:
        return None
    h = hashlib.sha256()
    for rel in sorted(headers):
        size, digest = headers[rel]
        h.update(f"{rel}\0{size}\0{digest}\n".encode())
    return h.hexdigest()


def verify_checkpoint(path: Path | str, *, full: bool = False, expected_recipe_hash: str | None = None,
                      grad_norms: Sequence[tuple[int, float]] | None = None, layout: str | None = None,
                      step: int | None = None, trainer: bool = False, rewrites: bool = False,
                      watched: Mapping[str, int] | None = None) -> CheckpointVerdict:
    """Verify one checkpoint (a directory or a single .safetensors file).

    ``grad_norms``: the run's (step, grad_norm) points (``suspect.points_from_records``), to
    decide whether the save is suspect when no sidecar says so (else trainer_state.json's). ``layout``/``step`` may be passed from discovery to skip re-detection.
    ``trainer``: the run that saved it trains through transformers' Trainer
    (``flags.saves_through_trainer``), so a checkpoint-N/ of weights without trainer_state.json
    is a save cut short even when no file of its own says it is a Trainer's. ``watched``: the
    order the runner saw the files written in (``CheckpointWatcher.written``), which decides
    whether trainer_state.json is this save's before the files' times do (``stale_trainer_state``)."""
    t0 = time.perf_counter()
    path = Path(path)
    layout = layout or layout_of(path) or "unknown"
    step = step if step is not None else step_of(path)
    found = _Findings()
    sidecar = read_sidecar(path) if path.is_dir() else None
    # the order a runner watched the save written in, as its sidecar keeps it while the files are
    # the ones it saw: it decides where ``watched`` (this runner's looks) gives no order
    kept = sidecar_watched(path, sidecar)
    if not path.exists():
        found.problems.append(("unreadable", f"{path} does not exist"))
    elif path.is_file():
        _check_files(path, [path], found)
    else:
        try:
            _check_dir(path, layout, step, found, trainer, rewrites, watched, kept)
        except OSError as exc:
            found.problems.append(("unreadable", f"{path}: {exc.strerror or exc}"))
    v = CheckpointVerdict(path=path, ok=True, verdict="ok", reason="", step=step, layout=layout)
    good = [fv for fv in found.file_verdicts if fv.ok]
    v.tensors = sum(fv.tensors for fv in good)
    v.params = sum(fv.params for fv in good)
    if not v.tensors:       # a Megatron-only save: the tensors DCP's .metadata lists
        v.tensors, v.params = found.dcp_tensors, found.dcp_params
        v.counted = layout not in ("megatron", "torch_save") or found.dcp_indexed   # a torch.save: its pickle is never run
    elif found.dcp_tensors:   # safetensors beside Megatron state: count the weights once, say what else is there
        found.notes.append(f"Megatron state beside the safetensors: {found.dcp_tensors} model tensors "
                           f"({human_count(found.dcp_params)} params) listed by its .metadata")
    if full and path.exists():
        _full_checks(path, found, v)
    if sidecar:
        v.recipe_hash = sidecar.get("recipe_hash") if isinstance(sidecar.get("recipe_hash"), str) else None
    if expected_recipe_hash is not None and v.recipe_hash is not None:
        v.drift = v.recipe_hash != expected_recipe_hash
    v.suspect_reason = _suspect(path, step, sidecar, grad_norms)
    v.suspect = v.suspect_reason is not None
    v.files = found.files
    v.notes = found.notes
    v.header_sha256 = header_digest(found.headers)
    v.problems = [{"verdict": a, "reason": b} for a, b in found.problems]
    if found.problems:
        v.ok = False
        v.verdict, v.reason = _headline(found.problems)
    else:
        size = sum(f.get("size", 0) for f in found.files)
        unjudged = f"{found.unjudged} empty .distcp not judged (.metadata not read)" if found.unjudged else ""
        v.reason = "; ".join(x for x in (found.summary, unjudged, human_bytes(size) if size else "") if x) or "ok"
    v.seconds = time.perf_counter() - t0
    return v


def verify_found(ckpt: Checkpoint, **kwargs: Any) -> CheckpointVerdict:
    """``verify_checkpoint`` for a discovered checkpoint (layout and step already known)."""
    return verify_checkpoint(ckpt.path, layout=ckpt.layout, step=ckpt.step, **kwargs)
