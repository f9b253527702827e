"""Find the checkpoints of a run or a directory, newest first.

Layouts we recognise (see docs/checkpoints.md):

- ms-swift / HF Trainer: ``checkpoint-N/`` holding ``adapter_model.safetensors`` (+ config),
  ``model.safetensors``, or shards ``model-0000X-of-0000Y.safetensors`` + an index;
  ``checkpoint-N-merged/`` from a LoRA merge; ms-swift puts runs in ``v<N>-<time>/`` subdirs.
- Megatron: ``iter_0000100/`` dirs next to ``latest_checkpointed_iteration.txt``; ms-swift 4.x
  Megatron nests one such dir (and its tracker) inside each ``checkpoint-N/``.
- The demo trainer uses the ms-swift layout.

Discovery only lists directories (no file is opened except ``trainer_state.json`` for the
step of a directory whose name has none), so the runner can call it every second.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from moeconsole.runner.checkpoints.sharded import SHARD_NAME
from moeconsole.runner.core.ending import GRACEFUL_EXIT, GRACEFUL_STOP_FILE, EarlyStopState, StopSave
from moeconsole.runner.rundir import jsonio

CHECKPOINT_DIR = re.compile(r"^checkpoint-(\d+)(-merged)?$")
ITER_DIR = re.compile(r"^iter_(\d{7,})$")
# The step other writers put in a save's name: DeepSpeed's default tag ``global_step{N}``
# (deepspeed/runtime/engine.py ``save_checkpoint``), torchtitan's ``step-{N}`` (torchtitan
# docs/checkpoint.md, components/checkpoint.py), and a loop of one's own (``ckpt_N``, ``step_N``).
# Not accelerate's ``checkpoint_{N}``: ``save_state`` numbers its saves, not steps; nor a short
# ``iter_N``: Megatron's is ``iter_{:07d}`` (ITER_DIR), and a Megatron-looking name must be Megatron's.
STEP_NAMED = re.compile(r"^(?:global_step|step|ckpt)[-_]?(\d+)$")
# Weights saved with save_safetensors=False: torch pickles we can only check for size.
PICKLE_WEIGHTS = re.compile(r"^(pytorch_model|adapter_model)(-\d{5}-of-\d{5})?\.bin$")
# A save of one's own training loop: ``torch.save({"model": ..., "optimizer": ..., "step": N},
# "out/checkpoint-20/state.pt")`` (PyTorch's recipe "Saving and loading a general checkpoint" names such a
# file ``.tar``, a model's ``.pt`` or ``.pth``; ``.ckpt`` as Lightning names its files, though Lightning's own
# ``epoch=3-step=1000.ckpt`` lives in ``checkpoints/``, no step-named directory, and is not found). Counted only in
# a directory whose name carries its step (``step_in_name``: what a resume and ``--from`` need), and only a file
# in torch.save's formats (``torch_format``: a real tarball ``model.tar`` is none). The files a Trainer writes
# beside its weights (``TRAINER_SIDE_FILE``) or another process's shard (``NODE_SHARD``) do not make a directory
# a save (``own_torch_save``), but once it is one every torch.save file in it is checked whole
# (``torch_save_files``): a cut ``optimizer.pt`` fails every resume as a cut model does (review R60). Before,
# such a save was ``empty_stub`` ("holds no weight files") and two of them paused the run (newcomer round 6).
OWN_TORCH_SAVE = re.compile(r"^[^.].*\.(?:pt|pth|ckpt|tar)$")
# What transformers' Trainer writes beside the weights, never the weights: OPTIMIZER_NAME, SCHEDULER_NAME,
# SCALER_NAME (trainer.py / trainer_utils.py: optimizer.pt, scheduler.pt, scaler.pt) and ``_save_rng_state``'s
# rng_state.pth / rng_state_{process_index}.pth.
TRAINER_SIDE_FILE = re.compile(r"^(?:optimizer|scheduler|scaler|rng_state(?:_\d+)?)\.pth?$")
# A process's own RNG state in a save of a world of several processes: transformers' ``_save_rng_state``
# (trainer.py l.3470-3477, 5.19.0; the same since 4.x) runs on every process, makes checkpoint-N/ ("a process
# can arrive here before the process 0 has a chance to save the model") and writes
# ``rng_state_{process_index}.pth`` there, while the weights, optimizer and trainer_state.json are process
# zero's (``should_save``). Files of processes other than 0 alone are another process's share of a save whose
# weights are elsewhere: on a node of a multi-node job with a disk of its own (measured: NNODES=2, node 1's
# checkpoint-N/ holds rng_state_1.pth alone, for good; docs/swift-recipe.md), or for a moment before process 0's
# weights land. Not a save of this node, and no stub: it was called ``empty_stub``, a critical bad save per dir.
# Only a set one other node can hold (``other_processes_share``): torchrun numbers the processes of node n of k
# each ``RANK = n*k + local_rank`` (torch/distributed/elastic/agent/server/api.py ``_assign_worker_ranks``), and
# accelerate's ``process_index`` is that RANK, so node n >= 1 holds indices in [n*k, n*k+k-1], whose largest is below
# twice the smallest. rng_state_1..7 alone (largest >= twice the smallest) is node 0 whose process 0 wrote nothing:
# a stub, as before (review R28).
OTHER_PROCESS_RNG = re.compile(r"^rng_state_([1-9]\d*)\.pth$")
# That node's shards of the same save, in the subfolders the save's writer makes, without the metadata process 0
# writes: DeepSpeed's ``global_stepN/`` (deepspeed/runtime/engine.py ``_get_zero_ckpt_prefix`` / ``_get_ckpt_name``:
# ``{bf16_}zero_pp_rank_{dp_rank}_mp_rank_{mp:02d}_optim_states.pt`` and, ZeRO-3,
# ``zero_pp_rank_{dp_rank}_mp_rank_{mp:02d}_model_states.pt``; dp rank 0's ``mp_rank_00_model_states.pt`` is not
# this), and accelerate's FSDP SHARDED_STATE_DICT ``pytorch_model_fsdp_{i}/`` and ``optimizer_{i}/`` (accelerate
# utils/fsdp_utils.py l.177 and l.344, 1.x) written by torch.distributed.checkpoint as ``__{rank}_{n}.distcp``
# (torch/distributed/checkpoint/filesystem.py l.690, prefix ``__{rank}_``), its ``.metadata`` the coordinator's.
NODE_SHARD_DIR = re.compile(r"^(?:global_step\d+|pytorch_model_fsdp_\d+|optimizer_\d+)$")
NODE_SHARD = re.compile(r"^(?:(?:bf16_)?zero_pp_rank_(?P<dp>[1-9]\d*)_mp_rank_\d{2}_(?:optim|model)_states\.pt"
                        r"|__(?P<dcp>[1-9]\d*)_\d+\.distcp)$")
TRACKER = "latest_checkpointed_iteration.txt"
SIDECAR_NAME = "moeconsole.json"
# The arguments ms-swift writes beside a run's log and into every checkpoint: ``args.json`` in 3.x
# and 4.x; ``sft_args.json`` (beside ``training_args.json``) in 2.x (2.6.1 swift/llm/sft.py l.487,
# swift/trainers/mixin.py l.167-172 ``_save_sft_args``).
SWIFT_ARGS_FILES = ("args.json", "sft_args.json")

LAYOUTS = ("hf_adapter", "hf_full", "hf_sharded", "merged", "megatron", "torch_save", "file", "unknown")

# Directories that never hold checkpoints: TensorBoard runs, plots, caches.
_SKIP_DIRS = frozenset({"runs", "images", "logs", "__pycache__", "wandb", "swanlab", "tensorboard"})
# A save being written, renamed to its name once whole: transformers 4.36-4.38 stage each save in
# ``tmp-checkpoint-N`` beside the output's checkpoints (4.37.2 trainer.py l.2368-2417 ``_save_checkpoint``:
# model, optimizer, RNG state, trainer_state.json last, then ``os.rename`` to ``checkpoint-N`` on the
# process that renames), and only ``checkpoint-N`` is a save to transformers itself (``get_last_checkpoint``'s
# ``^checkpoint-(\d+)$``). One left behind (a crash mid-save; another node's, which no process there renames)
# is none either. (4.49.0 and later write ``checkpoint-N`` in place, l.3188-3197.) The demo's and
# ``jsonio.replace_dir``'s staging names start with a dot.
STAGING_DIR = re.compile(r"^tmp-checkpoint-\d+$")


def walked(name: str) -> bool:
    """Whether a directory of this name under an output dir is looked into for saves: not a hidden one,
    not one that never holds saves (``_SKIP_DIRS``), not a save being staged (``STAGING_DIR``). The one
    rule of every walk here."""
    return not name.startswith(".") and name not in _SKIP_DIRS and not STAGING_DIR.match(name)
_MAX_DEPTH = 3
_MAX_DIRS = 20000


def is_export(layout: str | None) -> bool:
    """Is a checkpoint of this layout (``layout_of``) an export, never a save of the training nor a resume
    point? The one rule every reader asks (the watcher's verdicts and bad-save count, the resume point,
    the final check, ``v``, ``moeconsole verify``, the checkpoints panel). ``checkpoint-N-merged/`` is a
    merged model: ms-swift 4.6 ``swift export --merge_lora`` writes it beside the adapter it merges
    (swift/pipelines/export/merge_lora.py ``merge_lora``: ``output_dir = getattr(args, 'output_dir', None) or
    f'{args.adapters[0]}-merged'``), and its Megatron trainer's ``--merge_lora`` saves do too
    (swift/megatron/trainers/base.py, ``f'{output_dir}-merged'``): full weights, a config and a tokenizer, no
    optimizer, scheduler, RNG or trainer state, and no adapter a LoRA training resumes from."""
    return layout == "merged"


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    step: int | None
    layout: str   # one of LAYOUTS

    @property
    def export(self) -> bool:
        """A merged export, not a save (``is_export``)."""
        return is_export(self.layout)

    def to_dict(self) -> dict:
        return {"path": str(self.path), "step": self.step, "layout": self.layout}


def _names(path: Path) -> tuple[set[str], set[str]]:
    """(file names, dir names) directly inside ``path``; empty when unreadable."""
    files: set[str] = set()
    dirs: set[str] = set()
    try:
        with os.scandir(path) as it:
            for entry in it:
                try:
                    if entry.is_dir():
                        dirs.add(entry.name)
                    else:
                        files.add(entry.name)
                except OSError:
                    continue
    except OSError:
        pass
    return files, dirs


def is_megatron_iter_dir(path: Path) -> bool:
    return bool(ITER_DIR.match(path.name)) or (path.name == "release" and (path.parent / TRACKER).is_file())


def is_sidecar_file(name: str) -> bool:
    """The sidecar, or its temp file while it is written atomically (``jsonio.atomic_write_bytes``)."""
    return name == SIDECAR_NAME or name.startswith(f".{SIDECAR_NAME}.")


def other_processes_share(files: set[str], dirs: Collection[str] = (), path: Path | None = None) -> bool:
    """Do ``files`` (and ``dirs`` inside ``path``) hold nothing but one other node's share of a save: the RNG states
    of processes other than 0 that one node can hold (``OTHER_PROCESS_RNG``), our sidecar, and that node's shards
    without the save's metadata (``NODE_SHARD_DIR``, ``NODE_SHARD``)?"""
    rng = [int(m.group(1)) for f in files if (m := OTHER_PROCESS_RNG.match(f))]
    if not rng or max(rng) >= 2 * min(rng):
        return False
    if not all(OTHER_PROCESS_RNG.match(f) or is_sidecar_file(f) for f in files):
        return False
    for d in dirs:
        if path is None or not NODE_SHARD_DIR.match(d):
            return False
        sub_files, sub_dirs = _names(path / d)
        if sub_dirs or not sub_files or not all(NODE_SHARD.match(f) for f in sub_files):
            return False
    return True


# What only the world's process 0 writes into an output dir while it trains: ms-swift's ``logging.jsonl``
# (swift/trainers/patcher.py ``on_log`` l.51-54, 4.6.0: ``if state.is_world_process_zero``; ``is_master()`` for its
# summary, swift/pipelines/train/sft.py l.233), and the demo's as ms-swift writes it.
WORLD_ZERO_FILES = frozenset({"logging.jsonl"})


def _world_zero_files(root: Path) -> list[Path]:
    """The files only the world's process 0 writes (``WORLD_ZERO_FILES``) at ``root`` or in a folder under it (an
    ms-swift ``v<N>-<time>/``, as deep as ``find_checkpoints`` looks; checkpoint dirs and symlinks skipped)."""
    found: list[Path] = []
    stack: list[tuple[Path, int]] = [(Path(root), 0)]
    while stack:
        current, depth = stack.pop()
        files, dirs = _names(current)
        found.extend(current / f for f in sorted(files) if f in WORLD_ZERO_FILES)
        for name in dirs:
            if depth + 1 < _MAX_DEPTH and walked(name) \
                    and not CHECKPOINT_DIR.match(name) and not (current / name).is_symlink():
                stack.append((current / name, depth + 1))
    return found


def world_zero_on_disk(root: Path | str) -> dict[str, float]:
    """Every file ``_world_zero_files`` finds under ``root``, by path under it, with its modification time: the
    record a run of a node of rank > 0 keeps of them when it began (``world_zero_writes_here``'s ``before``)."""
    root = Path(root)
    return {str(p.relative_to(root)): _mtime(p) for p in _world_zero_files(root)}


def world_zero_writes_here(root: Path | str, since: float | None = None,
                           before: Mapping[str, float] | None = None) -> bool:
    """Does the world's process 0 write into this output dir: a file only it writes (``_world_zero_files``)
    written since the run began? On a node of rank > 0 it proves the dir is shared with node 0 (NFS, Lustre): a
    ``checkpoint-N/`` there holding this node's share alone is a save node 0 did not finish, not one it holds on
    a disk of its own (round 19). An earlier run's file proves nothing; a trainer that writes no such file (plain
    transformers) proves nothing either. ``before``: the run's record of those files when it began
    (``world_zero_on_disk``); a file counts unless it is one of them unchanged, no clock compared (as
    ``node_shares``'s ``before``, round 18: a wall clock stepped back after the start left a file written since
    uncounted). ``since`` (wall clock, the run's start) is the rule only for a run begun without that record."""
    root = Path(root)
    for path in _world_zero_files(root):
        when = _mtime(path)
        if before is not None:
            if before.get(str(path.relative_to(root))) != when:
                return True
        elif since is not None and when >= since:
            return True
    return False


def node_shares(root: Path | str, since: float | None = None,
                before: Mapping[str, float] | None = None) -> list[tuple[int, Path]]:
    """The ``checkpoint-N/`` dirs at or under ``root`` (as deep as ``find_checkpoints`` looks) that hold another
    node's share of a save alone (``other_processes_share``), as (step, dir), newest step first: on a node of a
    multi-node world with a disk of its own, the only trace there of the saves the world's process 0 made on its
    node (transformers' ``_save_rng_state`` runs on every process, trainer.py l.3470-3477, 5.19.0; the weights,
    optimizer and trainer_state.json are process 0's, ``should_save``). ``since`` (wall clock, the run's start):
    only the shares written since (``written_at``). Since review R45: the Trainer rotates saves only where
    ``should_save`` (``rotate_checkpoints`` under ``if self.args.should_save``, trainer.py l.3380-3388, 5.19.0),
    so on a node of rank > 0 an earlier run's shares stay in a reused output dir for ever: they prove nothing of
    this run's world. ``before`` (round 18): the shares on disk when the run began, by path under ``root`` with
    their ``written_at`` then (``shares_on_disk``); a share counts unless it is one of them unchanged. No clock
    compares a file's time with the run's start, so a wall clock stepped back between the start and a save (NTP
    after a suspend, ``date -s``) no longer leaves this run's share uncounted, as ``since`` did; ``since`` is
    the rule only for a run begun without that record (an older runner's)."""
    found: list[tuple[int, Path]] = []
    root = Path(root)
    stack: list[tuple[Path, int]] = [(Path(root), 0)]
    while stack:
        current, depth = stack.pop()
        for name in sorted(_names(current)[1]):
            if not walked(name):
                continue
            child = current / name
            named = CHECKPOINT_DIR.match(name)
            if named and not named.group(2):
                files, dirs = _names(child)
                if not other_processes_share(files, dirs, child):
                    continue
                when = written_at(child)
                if before is not None:
                    if before.get(str(child.relative_to(root))) != when:
                        found.append((int(named.group(1)), child))
                elif since is None or when >= since:
                    found.append((int(named.group(1)), child))
            elif depth + 1 < _MAX_DEPTH and not child.is_symlink():
                stack.append((child, depth + 1))
    return sorted(found, key=lambda f: -f[0])


def shares_on_disk(root: Path | str) -> dict[str, float]:
    """Every share ``node_shares`` finds under ``root``, by path under it, with its ``written_at``: the
    record a run of a node of rank > 0 keeps of the shares there when it began (``node_shares``'s ``before``)."""
    root = Path(root)
    return {str(p.relative_to(root)): written_at(p) for _, p in node_shares(root)}


def layout_of(path: Path) -> str | None:
    """The layout of a checkpoint directory, or None if ``path`` is not one."""
    if path.is_file():
        return "file" if path.name.endswith(".safetensors") else None
    if not path.is_dir():
        return None
    if is_megatron_iter_dir(path):
        return "megatron"
    files, dirs = _names(path)
    named = CHECKPOINT_DIR.match(path.name)
    if named and named.group(2):
        return "merged"
    if "adapter_model.safetensors" in files or "adapter_config.json" in files or "adapter_model.bin" in files:
        return "hf_adapter"
    if any(f.endswith((".safetensors.index.json", ".bin.index.json")) for f in files):
        return "hf_sharded"
    if any(f.endswith(".safetensors") or PICKLE_WEIGHTS.match(f) for f in files):
        return "hf_full"
    if named and any(ITER_DIR.match(d) for d in dirs):
        return "megatron"           # ms-swift 4.x Megatron checkpoint-N/ without HF weights
    if own_torch_save(path, files):
        return "torch_save"         # a loop of one's own: torch.save into checkpoint-N/ (or ckpt_N/, step_N/)
    if named and not dirs and files and all(is_sidecar_file(f) for f in files):
        # Only our sidecar: the trainer deleted the checkpoint (--save_total_limit rmtree with
        # ignore_errors) while the sidecar was being written. Not a save, and not a stub.
        return None
    if named and other_processes_share(files, dirs, path):
        return None                 # another node's share alone (OTHER_PROCESS_RNG, NODE_SHARD): no save here
    if named:
        return "unknown"            # a checkpoint-N/ dir with nothing recognisable in it
    return None


def megatron_save_dir(root: str, iteration: int) -> str:
    """The directory Megatron's save of ``iteration`` under its save root (``--save``) is:
    ``get_checkpoint_name(checkpoints_path, iteration)``, ``os.path.join(checkpoints_path,
    'iter_{:07d}'.format(iteration))`` (megatron/training/checkpointing.py; ``ITER_DIR``). Its save line
    names the root (``'successfully saved checkpoint from iteration {:7d} to {}'.format(iteration,
    args.save)``, beside ``get_checkpoint_tracker_filename(args.save)``), so the log's words give
    the verified dir only so (review R50). A path as the log printed it: never the file system."""
    return f"{root.rstrip('/')}/iter_{iteration:07d}" if root else f"iter_{iteration:07d}"


def step_in_name(name: str) -> int | None:
    """The training step a checkpoint's name carries: ``checkpoint-N`` (and its ``checkpoint-N-merged``
    export), Megatron's ``iter_N`` (``iter_{:07d}``, megatron/training/checkpointing.py
    ``get_checkpoint_name``) and the names of ``STEP_NAMED``; None for any other name. Names only (a path printed in a log, a synced
    copy's name); ``step_of`` is the rule for a path on disk."""
    m = CHECKPOINT_DIR.match(name) or ITER_DIR.match(name) or STEP_NAMED.match(name)
    return int(m.group(1)) if m else None


def step_of(path: Path) -> int | None:
    """The training step a checkpoint (or a resume point) was saved at: the one rule every caller
    asks, the resume's ``{step}`` and ``resumed_step`` included.

    In order: its name (``step_in_name``; a symlink such as ms-swift's ``last-checkpoint`` by the
    name it points at); a Megatron ``--load`` directory by its tracker
    ``latest_checkpointed_iteration.txt`` (what Megatron-LM ``read_metadata`` and ms-swift 4.6
    ``_load_iteration`` (megatron/trainers/base.py l.526-551) resume from; ``release`` is no
    training step); a Trainer's ``trainer_state.json`` ``global_step``."""
    step = step_in_name(path.name)
    if step is not None:
        return step
    if path.is_symlink():
        try:
            step = step_in_name(path.resolve().name)
        except (OSError, RuntimeError):
            step = None
        if step is not None:
            return step
    if path.is_dir():
        tracked = tracker_iteration(path)
        if isinstance(tracked, int):
            return tracked
        try:
            step = jsonio.load_file(path / "trainer_state.json").get("global_step")
            if isinstance(step, int) and not isinstance(step, bool):
                return step
        except (OSError, ValueError, AttributeError):
            pass
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def written_at(path: Path) -> float:
    """When a save was last written: the newest modification time of its directory and the files
    in it (our sidecar aside). A save written again under the same name rewrites its files in place
    (transformers' ``_save_checkpoint``, safetensors' ``save_file``, ``torch.save``), which leaves the
    directory's own time as the first save set it."""
    newest = _mtime(path)
    try:
        with os.scandir(path) as it:
            for entry in it:
                if is_sidecar_file(entry.name):
                    continue
                try:
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
                except OSError:
                    continue
    except OSError:
        pass
    return newest


# ms-swift writes each invocation into a new ``<output_dir>/v<N>-<time>/`` (``add_version_to_work_dir``).
VERSION_DIR = re.compile(r"^v(\d+)-\d{8}-\d{6}$")


def attempt_dir(path: Path) -> Path | None:
    """The ``v<N>-<time>/`` a checkpoint lives in, if any."""
    for p in (path, *path.parents):
        if VERSION_DIR.match(p.name):
            return p
    return None


def attempt_number(path: Path) -> int:
    """N of the ``v<N>-<time>/`` a checkpoint lives in; -1 outside one."""
    d = attempt_dir(path)
    m = VERSION_DIR.match(d.name) if d is not None else None
    return int(m.group(1)) if m else -1


def sort_newest_first(checkpoints: list[Checkpoint], *, rewrites: bool = False) -> list[Checkpoint]:
    """Newest first: by ms-swift's invocation (``v<N>-``), then step, then modification time. A
    later invocation's save is the newer even at a lower step: ms-swift counts from step 1 again
    after ``--resume_only_model true --ignore_data_skip true`` (measured with 4.6.0), and its
    ``checkpoint-3`` then holds weights trained after the earlier invocation's ``checkpoint-6``.
    ``rewrites``: the run's resumed attempts count from step 1 again (``step_count.restarts_step_count``)
    into the same directory (ms-swift's ``--add_version false``, set for every PAI job by
    sft_args.py ``_handle_pai_compat``; Megatron-LM's ``--finetune`` with ``--save`` = ``--load``): a
    step says nothing across attempts there, so within an invocation the save written last is the
    newest (the trainers' own rule for the newest save: transformers ``rotate_checkpoints``
    ``use_mtime=True``)."""
    if rewrites:
        return sorted(checkpoints, key=lambda c: (c.step is not None, attempt_number(c.path), written_at(c.path),
                                                  c.step or 0), reverse=True)
    return sorted(checkpoints, key=lambda c: (c.step is not None, attempt_number(c.path), c.step or 0,
                                              _mtime(c.path)), reverse=True)


def _is_container(path: Path) -> bool:
    """Does ``path`` hold checkpoints (checkpoint-N/ or Megatron iter_*/ subdirs)? A Megatron
    save dir is a container; ms-swift's checkpoint-N/ with one iter dir inside is a checkpoint."""
    if CHECKPOINT_DIR.match(path.name):
        return False
    _files, dirs = _names(path)
    return any(CHECKPOINT_DIR.match(d) or ITER_DIR.match(d) for d in dirs)


def find_checkpoints(root: Path | str, *, rewrites: bool = False, max_dirs: int = _MAX_DIRS) -> list[Checkpoint]:
    """Checkpoints at or under ``root``, newest first (``sort_newest_first``: by step, then
    modification time; by the time written for a run whose resumes count from step 1 again, ``rewrites``).

    ``root`` may be a checkpoint itself (a dir or a single .safetensors file), an output dir,
    an ms-swift output dir with ``v*/`` run subdirs, or a Megatron save dir. Symlinks such as
    ms-swift's ``last-checkpoint`` are followed but each checkpoint is listed once; given as
    ``root``, such a link is the one checkpoint it points at (4.6.0 ``update_last_checkpoint_symlink``,
    swift/utils/io_utils.py, links ``last-checkpoint`` to ``checkpoint-N`` after every save), not a
    container of its ``iter_*`` dir. ``max_dirs``: how many directories the walk reads at most."""
    root = Path(root)
    if root.is_symlink() and CHECKPOINT_DIR.match(root.resolve().name):
        root = root.resolve()
    if root.is_file():
        return [Checkpoint(root, None, "file")] if root.name.endswith(".safetensors") else []
    if not root.is_dir():
        return []
    found: dict[Path, Checkpoint] = {}
    own = layout_of(root)
    if own is not None:
        if not _is_container(root):
            return [Checkpoint(root, step_of(root), own)]
        found[root.resolve()] = Checkpoint(root, step_of(root), own)   # e.g. a final model saved in output_dir
    seen_dirs: set[Path] = {root.resolve()}
    stack: list[tuple[Path, int]] = [(root, 0)]
    visited = 0
    while stack and visited < max_dirs:
        current, depth = stack.pop()
        visited += 1
        _files, dirs = _names(current)
        for name in sorted(dirs):
            if not walked(name):
                continue
            child = current / name
            try:
                real = child.resolve()
            except OSError:
                continue
            if real in seen_dirs:
                continue
            seen_dirs.add(real)
            child_layout = layout_of(child)
            if child_layout is not None:
                # Prefer the real name over a symlink's (``last-checkpoint`` -> checkpoint-30).
                path = real if child.is_symlink() else child
                found.setdefault(real, Checkpoint(path, step_of(path), child_layout))
            if (child_layout is None or _is_container(child)) and depth + 1 < _MAX_DEPTH:
                stack.append((child, depth + 1))
    return sort_newest_first(list(found.values()), rewrites=rewrites)


def tracker_iteration(save_dir: Path) -> int | str | None:
    """The iteration named by Megatron's tracker file: an int, "release", or None (absent or garbage)."""
    try:
        text = (save_dir / TRACKER).read_text(errors="replace").strip()
    except OSError:
        return None
    if text == "release":
        return "release"
    return int(text) if text.isdigit() else None


_SWIFT_FIRST_FILES = frozenset({"args.json", SIDECAR_NAME})
# What a transformers Trainer checkpoint holds besides the weights; trainer_state.json comes last.
TRAINER_RESUME_FILES = ("optimizer.pt", "scheduler.pt", "training_args.bin")
TRAINER_STATE = "trainer_state.json"
# transformers' JIT checkpoint (``--enable_jit_checkpoint``, 5.x trainer_jit_checkpoint.py
# ``CheckpointManager.execute_jit_checkpoint`` l.51-70): on SIGTERM it creates ``checkpoint-<global_step>/``,
# writes this sentinel into it, calls ``Trainer._save_checkpoint`` and removes the sentinel only when
# that returned; a save that still holds it was cut (killed, or the save raised, l.74-76).
JIT_INCOMPLETE_MARKER = "checkpoint-is-incomplete.txt"
MERGED_SUFFIX = "-merged"

def stop_requested_at(path: Path) -> int | None:
    """The ``global_step`` of a transformers save written while its Trainer was asked to stop, else None
    (``stop_save``)."""
    got = stop_save(path)
    return got.step if got is not None and got.asked else None


def stop_save(path: Path) -> StopSave | None:
    """A transformers save written while its Trainer was asked to stop, else None.
    ``_save_checkpoint`` writes the ``TrainerControl``'s state into ``trainer_state.json``
    (``stateful_callbacks.TrainerControl.args.should_training_stop``; transformers 5.x trainer.py
    l.3363-3375, trainer_callback.py l.283-291), and beside it every ``ExportableState`` callback's: the
    ``EarlyStoppingCallback``'s ``args.early_stopping_patience`` and ``attributes.early_stopping_patience_counter``
    (trainer_callback.py l.775-784), kept as ``StopSave.early_stopping`` when the counter reached the patience
    (it stops the training then, l.772-773). Read by ``core.ending.short_end``: such a save at a step before the
    attempt's last one was made in the middle of a step, which only the JIT checkpoint does; one at the last
    step with the patience reached is the EarlyStoppingCallback's stop. A save of a run with ms-swift's
    graceful_exit callback is one too (``asked`` False when its state did not ask: the callback asks after the
    save, ``core.ending.GRACEFUL_EXIT``)."""
    try:
        state = json.loads((path / TRAINER_STATE).read_text(encoding="utf-8"))
        callbacks = state["stateful_callbacks"]
        control = callbacks["TrainerControl"]
        control = control[-1] if isinstance(control, list) else control
        step = state["global_step"]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    if not _is_int(step):
        return None
    asked = isinstance(control, dict) and (control.get("args") or {}).get("should_training_stop") is True
    graceful = GRACEFUL_EXIT in _swift_callbacks(path)
    if not (asked or graceful):
        return None
    return StopSave(step, path.name, _early_stopping(callbacks.get("EarlyStoppingCallback")) if asked else None,
                    asked=asked, graceful_exit=graceful, stop_file=graceful and os.path.exists(GRACEFUL_STOP_FILE))


def early_stop_state(path: Path) -> EarlyStopState | None:
    """The ``EarlyStoppingCallback``'s state in a transformers save that was not asked to stop (one asked is
    ``stop_save``'s), for ``core.ending.early_stop_replayed``: its trainer_state.json's
    ``stateful_callbacks.EarlyStoppingCallback`` (one callback; trainer_callback.py l.775-784), ``global_step``
    and ``best_metric``, and the metric from the save's args.json (ms-swift copies its arguments there,
    swift/trainers/mixin.py l.435-438: ``metric_for_best_model``, ``greater_is_better``). None without any of
    them (a plain transformers save holds no args.json: its metric is in the pickled training_args.bin, not read)."""
    state = _trainer_state_cached(path)
    try:
        callbacks = state["stateful_callbacks"] if state is not None else None
        early = callbacks["EarlyStoppingCallback"] if isinstance(callbacks, dict) else None
        control = callbacks["TrainerControl"] if isinstance(callbacks, dict) else None
        args = json.loads((path / "args.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (isinstance(state, dict) and isinstance(early, dict) and isinstance(args, dict)):
        return None
    control = control[-1] if isinstance(control, list) and control else control
    if isinstance(control, dict) and (control.get("args") or {}).get("should_training_stop") is True:
        return None
    given = early.get("args") or {}
    patience, threshold = given.get("early_stopping_patience"), given.get("early_stopping_threshold") or 0.0
    counter = (early.get("attributes") or {}).get("early_stopping_patience_counter")
    step, best, metric = state.get("global_step"), _number_as_written(state.get("best_metric")), \
        args.get("metric_for_best_model")
    if not (_is_int(patience) and _is_int(counter) and _is_int(step) and isinstance(metric, str) and metric
            and isinstance(threshold, (int, float)) and not isinstance(threshold, bool)):
        return None
    key = metric if metric.startswith("eval_") else f"eval_{metric}"
    return EarlyStopState(int(step or 0), path.name, int(patience or 0), float(threshold), int(counter or 0),
                          None if best is None else float(best), key,
                          greater_is_better(metric, args.get("greater_is_better")))


def logged_evals(path: Path) -> list[tuple[int, dict]]:
    """The evaluations ms-swift logged beside the save at ``path``, as ``(step, values)`` in the order written:
    the ``eval_*`` dicts of ``logging.jsonl`` in the save's output dir (``ProgressCallbackNew.on_log``,
    swift/trainers/patcher.py 4.6.0 l.50-55; its step in ``global_step/max_steps``, l.18). Their values are what the
    Trainer's callbacks compared: ms-swift rounds the metrics dict to 8 decimals in place (``add_train_message``
    l.24-26) before ``EarlyStoppingCallback.on_evaluate`` gets it, and the Trainer's ``best_metric`` is that rounded
    value; the console line (4 digits) and ``log_history`` (unrounded) are not."""
    found: list[tuple[int, dict]] = []
    for _, rec in jsonio.iter_jsonl(path.parent / "logging.jsonl"):
        where = rec.get("global_step/max_steps")
        m = re.fullmatch(r"(\d+)/\d+", where) if isinstance(where, str) else None
        if m is not None and any(isinstance(k, str) and k.startswith("eval_") for k in rec):
            found.append((int(m.group(1)), rec))
    return found


def finished_save(path: Path) -> tuple[int, int] | None:
    """(global_step, max_steps) of a transformers save made at its training's total, else None: its
    trainer_state.json's ``global_step`` at or past ``max_steps`` (``TrainerState``, written by
    ``_save_checkpoint``). A restart from it is no resume: transformers 5.19 trains one step past the total
    before its loop stops (the stop check, ``DefaultFlowCallback.on_step_end`` trainer_callback.py l.591-592,
    runs only after a step; measured with ms-swift 4.6: ``'global_step/max_steps': '7/6'``, ``checkpoint-7``
    saved, its learning rate from the schedule's end). Read by ``supervisor.judge``."""
    state = _trainer_state_cached(path)
    if state is None:
        return None
    step, total = state.get("global_step"), state.get("max_steps")
    if not (isinstance(step, int) and isinstance(total, int)) or isinstance(step, bool) or isinstance(total, bool):
        return None
    return (step, total) if 0 < total <= step else None


def _swift_callbacks(path: Path) -> list[str]:
    """The ``callbacks`` of the ms-swift arguments copied into the save (args.json, swift/trainers/mixin.py
    l.435-438; ``--callbacks``, swift/trainers/arguments.py l.177, with the ones ms-swift adds itself, l.264-273)."""
    try:
        args = json.loads((path / "args.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    named = args.get("callbacks") if isinstance(args, dict) else None
    return [c for c in named if isinstance(c, str)] if isinstance(named, list) else []


def _early_stopping(saved: object) -> tuple[int, int] | None:
    """(counter, patience) of an EarlyStoppingCallback's saved state whose counter reached its patience (any of
    several such callbacks: transformers keeps a list of their states then, trainer.py l.3371-3374), else None."""
    for one in saved if isinstance(saved, list) else [saved]:
        args = one.get("args") if isinstance(one, dict) else None
        attributes = one.get("attributes") if isinstance(one, dict) else None
        patience = args.get("early_stopping_patience") if isinstance(args, dict) else None
        counter = attributes.get("early_stopping_patience_counter") if isinstance(attributes, dict) else None
        if isinstance(patience, int) and isinstance(counter, int) and not isinstance(patience, bool) \
                and not isinstance(counter, bool) and counter >= patience:
            return counter, patience
    return None


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number_as_written(v: object) -> float | int | None:
    """A JSON number of trainer_state.json as it was written (an int stays an int, a bool is none), for the data
    ``best_save_named`` gives on; ``units.number`` is the shown form."""
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# trainer_state.json read for ``best_save_named``, by (path, mtime_ns, size): one of 100k logged steps is
# ~21 MB and ~0.7 s to parse (review R53), asked by every watcher of the run in this process
_STATE_CACHE: dict[str, tuple[tuple[int, int], dict | None]] = {}


def _trainer_state_cached(path: Path) -> dict | None:
    f = path / TRAINER_STATE
    try:
        st = f.stat()
    except OSError:
        return None
    key, sig = str(f), (st.st_mtime_ns, st.st_size)
    hit = _STATE_CACHE.get(key)
    if hit is not None and hit[0] == sig:
        return hit[1]
    try:
        state = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = None
    if not isinstance(state, dict):
        state = None
    if len(_STATE_CACHE) >= 16:
        _STATE_CACHE.pop(next(iter(_STATE_CACHE)))
    _STATE_CACHE[key] = (sig, state)
    return state


def greater_is_better(metric: str, given: object = None) -> bool:
    """Does the Trainer keep the higher value of ``metric`` as the best (``_determine_best_metric``
    compares with ``np.greater`` if ``args.greater_is_better``, else ``np.less``: transformers 5.19.0
    trainer.py l.3413)? ``given``: the run's own ``greater_is_better`` when it is a bool: ms-swift's args.json
    always holds it, as its ``__post_init__`` left it (``'loss' not in metric`` unless given:
    swift/arguments/sft_args.py l.433-434; megatron_args.py l.915-918), and that is what the Trainer got.
    Without it the args.json is not ms-swift's, and the Trainer that compared decided by transformers' own
    default, ``not metric.endswith("loss")`` (training_args.py l.1559-1560; "loss_ema" is higher-better there)."""
    if isinstance(given, bool):
        return given
    return not metric.endswith("loss")


def best_save_named(path: Path) -> dict | None:
    """The best save a transformers save names, as ``{path, step, metric, value, unsaved, greater_is_better}``,
    or None (no
    evaluation metric chosen, none evaluated yet, or no readable trainer_state.json). With
    ``metric_for_best_model`` set (or ``load_best_model_at_end``) the Trainer keeps the best evaluation's
    value and step at every evaluation (``_determine_best_metric``: ``eval_`` + the metric's name unless it
    has it, trainer.py l.3399-3420, ``best_metric``, ``best_global_step``), but names a save
    ``best_model_checkpoint`` only when ``checkpoint-<best_global_step>`` is on disk at a save
    (``_save_checkpoint`` l.3336-3353): with ``eval_steps`` != ``save_steps`` the named save can be an earlier
    best evaluation's. So ``step`` is the named save's own (its name), ``value`` that step's evaluation in
    ``log_history``, and ``unsaved`` ``{step, value}`` the best evaluation when no save holds it (else None).
    ``path``: the named save in this save's own directory: the Trainer joins the same ``run_dir`` for both
    (l.3329-3351), as a string that may name a symlink or another machine's copy. The metric's name:
    args.json's ``metric_for_best_model`` (ms-swift copies its arguments into the save,
    swift/trainers/mixin.py l.435-438), else the values are unnamed and only ``best_metric`` is known;
    ``greater_is_better`` the direction the Trainer kept it by (``greater_is_better``; None: unnamed)."""
    state = _trainer_state_cached(path)
    if state is None or not isinstance(state.get("best_model_checkpoint"), str):
        return None
    best_value, best_step = _number_as_written(state.get("best_metric")), state.get("best_global_step")
    best_step = best_step if isinstance(best_step, int) and not isinstance(best_step, bool) else None
    metric, higher = None, None
    for where in (path / "args.json", path.parent / "args.json"):
        try:
            args = json.loads(where.read_text(encoding="utf-8"))
            named, given = args.get("metric_for_best_model"), args.get("greater_is_better")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(named, str) and named:
            metric = named if named.startswith("eval_") else f"eval_{named}"
            higher = greater_is_better(named, given)
        break
    name = Path(state["best_model_checkpoint"]).name
    step = step_in_name(name)
    if step is not None and step == best_step:
        value = best_value
    else:
        logged = [e for e in state.get("log_history") or () if isinstance(e, dict) and e.get("step") == step
                  and metric and _number_as_written(e.get(metric)) is not None]
        value = _number_as_written(logged[-1][metric]) if logged and metric else None
    unsaved = {"step": best_step, "value": best_value} if best_step is not None and best_step != step else None
    return {"path": str(path.parent / name), "step": step, "metric": metric, "value": value, "unsaved": unsaved,
            "greater_is_better": higher}


# Each process's share of a Trainer save in a world of several: ``_save_rng_state`` runs on every process and
# writes ``rng_state_{process_index}.pth`` (transformers 5.19.0 trainer.py l.3470-3477) after process 0's weights
# and optimizer, and no barrier orders it against process 0's trainer_state.json (``_save_checkpoint``
# l.3355-3375): a process killed while it writes its file leaves a save whose trainer_state.json is there.
RANK_SHARE = re.compile(r"^rng_state_(\d+)\.pth$")


def _world_of(path: Path) -> tuple[int, int] | None:
    """(world size, processes on process 0's node) of the ms-swift run that wrote the save at ``path``, or
    None (one process, ``--save_only_model``: no RNG state is saved, l.3356; or no ms-swift arguments).
    ms-swift's ``save_args`` dumps its arguments' ``__dict__`` into args.json on the master
    (swift/arguments/base_args/base_args.py l.342-349), ``global_world_size`` and ``local_world_size`` from
    ``get_dist_setting`` (l.214; swift/utils/env.py l.27-34: torchrun's WORLD_SIZE, LOCAL_WORLD_SIZE), and
    copies it into every checkpoint (swift/trainers/mixin.py l.435-438)."""
    for where in (path / "args.json", path.parent / "args.json"):
        try:
            args = json.loads(where.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(args, dict):
            return None
        world, local = args.get("global_world_size"), args.get("local_world_size")
        if args.get("save_only_model") is True or not isinstance(world, int) or not isinstance(local, int) \
                or isinstance(world, bool) or world <= 1:
            return None
        return world, max(1, min(local, world))
    return None


# torch.save's formats (torch/serialization.py ``_save``: a zip archive since torch 1.6; ``_legacy_save`` with
# ``_use_new_zipfile_serialization=False``: a bare pickle, protocol 2's PROTO opcode first).
ZIP_LOCAL_HEADER = b"PK\x03\x04"
PICKLE_PROTO = b"\x80"


def torch_format(path: Path) -> str | None:
    """``"zip"``, ``"legacy"`` (a bare pickle: size checked only), ``"empty"`` (0 bytes: just created, or a
    stub), or None: not a torch.save file (a tarball, text) or unreadable."""
    try:
        with path.open("rb") as f:
            head = f.read(len(ZIP_LOCAL_HEADER))
    except OSError:
        return None
    if not head:
        return "empty"
    if head == ZIP_LOCAL_HEADER:
        return "zip"
    return "legacy" if head.startswith(PICKLE_PROTO) else None


def _whole_torch_file(path: Path) -> bool:
    """Did ``torch.save`` finish ``path``? Its zip format (the default since torch 1.6) ends with the zip's
    end-of-central-directory record, written when the file is closed; a write cut short has none."""
    import zipfile   # here, not at import: zipfile brings shutil, bz2 and lzma to every command that lists runs
    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


@dataclass(frozen=True)
class ShareGap:
    """A process share a Trainer save lacks (``missing_rank_share``). ``cut``: the file is there but
    ``torch.save`` never finished it (no zip end), so ``torch.load`` raises on every resume from the save;
    otherwise it is absent, and transformers resumes all the same with that process's RNG starting fresh
    (``_load_rng_state`` only logs a missing file and returns, 5.19.0 trainer.py l.3809-3817)."""
    process: int
    world: int
    cut: bool

    @property
    def name(self) -> str:
        return f"rng_state_{self.process}.pth"

    def __str__(self) -> str:
        return f"{self.name} (process {self.process} of {self.world}'s RNG state)"


def _leftover_shares(path: Path, files: Collection[str]) -> set[str]:
    """The shares in ``path`` that an earlier attempt left there (a save step written again into the same
    directory, ``--add_version false``, perhaps by a world of another layout): older than the attempt that
    wrote this save's trainer_state.json started. ms-swift's ``save_args`` writes the run directory's
    args.json at each launch, before any step (swift/arguments/base_args/base_args.py l.342-349), so every
    share this attempt wrote is newer than it. Not the save's trainer_state.json itself: process 0 writes
    its own share before it (trainer.py l.3355-3375). A save older than that args.json (an earlier
    attempt's, not written again) has none."""
    try:
        started = (path.parent / "args.json").stat().st_mtime
        if (path / TRAINER_STATE).stat().st_mtime < started:
            return set()
    except OSError:
        return set()
    old = set()
    for f in files:
        if RANK_SHARE.match(f):
            try:
                if (path / f).stat().st_mtime < started:
                    old.add(f)
            except OSError:
                continue
    return old


def _shared_by_the_world(path: Path, world: tuple[int, int]) -> bool:
    """Does another save beside ``path`` (a ``checkpoint-N/`` in the same dir) of the same world (its args.json
    says the same ``world``) hold a share of a node other than process 0's (``rng_state_{i}``, i >= the
    processes on process 0's node)? Then the nodes share this output dir (NFS, Lustre): node 0's saves on a disk
    of its own never hold one (round 19; review R48 D3: a world of another size, after a node or a GPU was lost,
    proves nothing of this one's)."""
    local = world[1]
    for name in sorted(_names(path.parent)[1]):
        named = CHECKPOINT_DIR.match(name)
        other = path.parent / name
        if not named or named.group(2) or other == path or other.is_symlink():
            continue
        if any((m := RANK_SHARE.match(f)) and int(m.group(1)) >= local for f in _names(other)[0]) \
                and _world_of(other) == world:
            return True
    return False


def missing_rank_share(path: Path, files: Collection[str]) -> ShareGap | None:
    """The process share a Trainer save of several processes lacks (``RANK_SHARE``), as a ``ShareGap``: the
    first one cut short, else the first absent; None when it holds every share expected here.
    Expected: the shares of process 0's node, processes 0 .. local_world_size-1 (torchrun numbers node n's
    processes n*k .. n*k+k-1, torch/distributed/elastic/agent/server/api.py ``_assign_worker_ranks``; on a
    disk of its own node 0 holds only those, docs/swift-recipe.md), and every process's of the world when a
    share of another node is there, or in another save of the same world beside it (a disk the nodes share:
    ``_shared_by_the_world``). Shares an earlier attempt left (``_leftover_shares``) are not counted. The one
    judgement of a save missing a process's share: a save is judged by the world its own args.json says
    (review R48 D3: a world that lost a GPU or a node saves fewer shares, and its first save is whole). Only
    with trainer_state.json there and args.json saying the world (``_world_of``): before, the save is
    unfinished for that reason already."""
    if TRAINER_STATE not in files or not any(RANK_SHARE.match(f) for f in files):
        return None
    world = _world_of(path)
    if world is None:
        return None
    size, local = world
    old = _leftover_shares(path, files)
    present = {int(m.group(1)) for f in files if f not in old and (m := RANK_SHARE.match(f))}
    shared = any(i >= local for i in present) or _shared_by_the_world(path, world)
    expected = range(size) if shared else range(local)
    absent = [i for i in expected if i not in present]
    cut = [i for i in expected if i in present and not _whole_torch_file(path / f"rng_state_{i}.pth")]
    if cut:
        return ShareGap(cut[0], size, True)
    return ShareGap(absent[0], size, False) if absent else None


# mcore-bridge's StreamingSafetensorSaver (mcore_bridge/utils/safetensors.py, 1.5 and 1.6) writes
# each shard as model-0000i-of-?????.safetensors and renames the set in finalize().
_UNNUMBERED_SHARD = "-of-?????."


def torch_save_files(path: Path, files: Collection[str]) -> dict[str, str]:
    """Every torch.save file (``OWN_TORCH_SAVE``) among ``files`` of the directory ``path``, sorted, with its
    format (``torch_format``: a file in none of them is left out): the weights and what is saved beside them
    (an optimizer, a scheduler, every rank's DeepSpeed shard), each of which a resume loads."""
    found = {f: torch_format(path / f) for f in sorted(files) if OWN_TORCH_SAVE.match(f)}
    return {f: kind for f, kind in found.items() if kind is not None}


def own_torch_save(path: Path, files: Collection[str]) -> bool:
    """Whether the directory ``path`` holding ``files`` is a save of one's own loop: its name carries its step
    and a torch.save file in it is its own (not ``TRAINER_SIDE_FILE`` nor ``NODE_SHARD``). For choosing the
    layout only: the files beside are checked as well (``torch_save_files``)."""
    return step_in_name(path.name) is not None and any(
        not TRAINER_SIDE_FILE.match(f) and not NODE_SHARD.match(f) for f in torch_save_files(path, files))


# DeepSpeed's end of a save: ``save_checkpoint`` writes the tag into ``<save_dir>/latest`` after the model and
# ZeRO files of the tag are written (deepspeed/runtime/engine.py ``save_checkpoint``: ``_save_checkpoint``,
# ``_save_zero_checkpoint``, then "Save latest checkpoint tag" / ``checkpoint_engine.commit(tag)``, rank 0).
DEEPSPEED_LATEST = "latest"
DEEPSPEED_TAG = re.compile(r"^global_step(\d+)$")


def _deepspeed_unfinished(ckpt: Checkpoint) -> str | None:
    """A DeepSpeed ``global_stepN/`` whose ``latest`` (beside it) names no tag of step N or later yet: still
    being written, or its save died. Rank 0 writes ``latest`` before the barrier, while other ranks may still
    write their shards: those are checked whole as well (``torch_save_files``)."""
    tag = DEEPSPEED_TAG.match(ckpt.path.name)
    if not tag:
        return None
    try:
        named = (ckpt.path.parent / DEEPSPEED_LATEST).read_text(errors="replace").strip()
    except OSError:
        return f"no {DEEPSPEED_LATEST} beside it naming it yet (DeepSpeed writes it when the save is complete)"
    m = DEEPSPEED_TAG.match(named)
    if named == ckpt.path.name or (m and int(m.group(1)) >= int(tag.group(1))):
        return None
    return (f"{DEEPSPEED_LATEST} still names {named[:40]!r} (DeepSpeed writes the tag there when the save is "
            "complete)")


def has_hf_weights(path: Path) -> bool:
    """Does an ms-swift checkpoint dir hold HF weights (safetensors or torch pickles) itself?"""
    files, _dirs = _names(path)
    return any(f.endswith(".safetensors") or PICKLE_WEIGHTS.match(f) for f in files)


def weights_sibling(path: Path) -> Path | None:
    """``checkpoint-N-merged/`` when it holds the weights of ``checkpoint-N/``: ms-swift with
    ``--merge_lora true`` writes the merged model there, and 4.2.0 writes no adapter into
    ``checkpoint-N/`` then (``save_checkpoint``, trainers/base.py), so the save's weights are the
    sibling's. None for a ``-merged`` dir itself, a dir with weights of its own, or no sibling."""
    m = CHECKPOINT_DIR.match(path.name)
    if not m or m.group(2) or has_hf_weights(path):
        return None
    sib = path.with_name(path.name + MERGED_SUFFIX)
    return sib if sib.is_dir() else None


def merged_weights_settled(path: Path) -> bool:
    """Has a merged save (``checkpoint-N-merged/``) finished writing its model? ms-swift writes, in
    order: the tracker, args.json and iter_N/common.pt copied from checkpoint-N/, the weights
    (``GPTBridge.save_weights``: shards under temporary ``-of-?????`` names, renamed at the end,
    then ``model.safetensors.index.json``), then ``config.json`` and the tokenizer files
    (ms-swift init.py ``_patch_mcore_bridge``'s ``save_weights``). So it is finished once
    ``config.json`` is there, no shard has its temporary name, and the index's shards all exist."""
    files, _dirs = _names(path)
    if "config.json" not in files or any(_UNNUMBERED_SHARD in f for f in files):
        return False
    index = path / "model.safetensors.index.json"
    if index.is_file():
        # finalize() renames every shard before it writes the index, and config.json comes after
        # both: an index naming a shard that is not on disk is a finished save that lost it
        # (verify says missing_shard), not one still being written; an index that does not read
        # may be half written
        try:
            return bool(json.loads(index.read_text()).get("weight_map"))
        except (OSError, ValueError, AttributeError):
            return False
    return any(f.endswith(".safetensors") for f in files)


def unfinished_series(files: set[str]) -> str | None:
    """A ``-0000i-of-0000Y`` shard series still being written by transformers' ``save_pretrained``
    (modeling_utils.py: config.json first, the shards one by one under their final names, then
    ``model.safetensors.index.json``, or ``pytorch_model.bin.index.json``, after the last): some
    of the Y shards are there and no index yet. A shard can take seconds to serialize before its
    file appears, so quiet files alone do not say the save ended. Once the index is written, a
    shard missing is lost, not late (verify: ``missing_shard``)."""
    series: dict[tuple[str, int, str], int] = {}
    for f in files:
        m = SHARD_NAME.match(f)
        if m:
            key = (m.group("stem"), int(m.group("n")), m.group("ext"))
            series[key] = series.get(key, 0) + 1
    # model.safetensors.index.json; with a variant, model.safetensors.index.fp16.json (_add_variant)
    indexes = {ext for f in files for ext in (".safetensors", ".bin") if f.endswith(".json") and f"{ext}.index" in f}
    for (stem, total, ext), have in sorted(series.items()):
        if have < total and ext not in indexes:
            return (f"{have} of {total} shards of {stem}-*-of-{total:05d}{ext} so far and no {stem}{ext}.index.json "
                    "yet (written after the last shard)")
    return None


def trainer_writes_state(path: Path, files: set[str], dirs: set[str] | None = None, *, trainer: bool = False) -> bool:
    """Is ``path`` a transformers Trainer save, which is whole only with its trainer_state.json?
    Its optimizer state or training_args.bin says so; before those, a Trainer's save holds only
    the weights (``Trainer._save_checkpoint``: ``save_model`` first, training_args.bin at the end of
    ``_save``, then the optimizer and scheduler, the RNG state, trainer_state.json last), which
    ``trainer`` says (the run knows its saver is a Trainer: ``flags.saves_through_trainer``) or a
    sibling ``checkpoint-M/`` holding trainer_state.json proves (a Megatron save has its iteration
    dirs and tracker instead, and never a trainer_state.json). Without either, a directory of
    weights is a whole save (PEFT's or a model's ``save_pretrained`` writes no trainer state)."""
    if any(f in files for f in TRAINER_RESUME_FILES):
        return True
    named = CHECKPOINT_DIR.match(path.name)
    if not named or named.group(2) or TRACKER in files:
        return False
    if any(ITER_DIR.match(d) for d in (_names(path)[1] if dirs is None else dirs)):
        return False
    if trainer:
        return True
    try:
        siblings = list(os.scandir(path.parent))
    except OSError:
        return False
    return any(e.name != path.name and CHECKPOINT_DIR.match(e.name) and not e.name.endswith(MERGED_SUFFIX)
               and os.path.isfile(os.path.join(e.path, TRAINER_STATE)) for e in siblings)


# Files only a transformers (or ms-swift) save writes beside its weights: a directory holding one
# is such a save, whose weights load only with their config.json. ``optimizer.pt`` and
# ``scheduler.pt`` are left out: a training script of one's own names its files so too.
TRANSFORMERS_FILES = frozenset({"generation_config.json", "tokenizer_config.json", "special_tokens_map.json",
                                "training_args.bin", TRAINER_STATE, *SWIFT_ARGS_FILES})


def transformers_save(path: Path, files: set[str]) -> bool:
    """Is ``path`` a transformers save, whose weights owe a ``config.json``? The Trainer names
    every save ``checkpoint-<global_step>`` (transformers trainer_utils.py ``PREFIX_CHECKPOINT_DIR``,
    ``Trainer._save_checkpoint``; ms-swift the same, and its ``-merged`` export), and
    ``save_pretrained`` writes ``config.json`` first, then ``generation_config.json`` for a model
    that generates (modeling_utils.py ``PreTrainedModel.save_pretrained``), a tokenizer its own
    files. A directory with none of these holds a plain state dict (``safetensors.torch.save_file``
    of one's own script, accelerate's ``save_model``): nothing there reads a config."""
    return bool(CHECKPOINT_DIR.match(path.name)) or bool(files & TRANSFORMERS_FILES)


def save_underway(ckpt: Checkpoint, *, trainer: bool = False, rewrites: bool = False) -> str | None:
    """Why a checkpoint is still being written, or None: the one rule for "in progress" that the
    runner's live watcher (``megatron_save_complete``, watch.py) and the one-shot ``verify`` share.

    ms-swift's Megatron ``save_checkpoint`` (trainers/base.py, 4.2.0 and 4.6.0) writes, in order:
    args.json, iter_N/common.pt and the tracker (``save_mcore_checkpoint``), the adapter
    (adapter_model.safetensors, then adapter_config.json) unless 4.2 merges, then the merged model
    into checkpoint-N-merged/. mcore-bridge's ``StreamingSafetensorSaver`` (mcore_bridge/utils/
    safetensors.py, 1.6.5 l.142 and ``finalize`` l.153-183) writes shards as
    ``model-0000i-of-?????.safetensors`` and renames them, then writes the index. A save is still
    being written while:

    - any shard still has its temporary ``-of-?????`` name;
    - checkpoint-N/ holds only args.json (and our sidecar);
    - checkpoint-N/ holds metadata and no weights, and its -merged sibling is absent or has not
      finished (``merged_weights_settled``): its weights are the sibling's;
    - checkpoint-N-merged/ itself has not finished, or a full model saved into checkpoint-N/
      itself (``--tuner_type full``) has not (the same writer, ``merged_weights_settled``);
    - a Megatron save's adapter has no adapter_config.json yet;
    - a transformers shard series lacks shards and its index (``unfinished_series``);
    - a Megatron iteration the tracker does not name yet (``_untracked_iteration``), or whose
      torch_dist shards megatron-core has not closed with ``.metadata`` and ``metadata.json``
      (``_unfinished_dist_save``: under ``--async_save`` ms-swift names it in the tracker first);
    - a Trainer checkpoint-N/ (``trainer_writes_state``; ``trainer``: the run's saver is one)
      has not written trainer_state.json yet.

    ``trainer``, ``rewrites``: the run's ``order.SaveOrder``."""
    if not ckpt.path.is_dir():
        return None
    files, dirs = _names(ckpt.path)
    temp = sorted(f for f in files if _UNNUMBERED_SHARD in f)
    if temp:
        return f"{temp[0]} still has mcore-bridge's temporary shard name (renamed when the save finishes)"
    series = unfinished_series(files)
    if series:
        return series
    untracked = _untracked_iteration(ckpt, dirs, rewrites) or _unfinished_dist_save(ckpt, files, dirs)
    if untracked:
        return untracked
    if ckpt.layout == "torch_save":
        # torch.save writes the zip's end record when it closes the file (``_whole_torch_file``): every file
        # of the save, the optimizer's and each rank's shard as much as the weights (review R60)
        open_ = [f for f, kind in torch_save_files(ckpt.path, files).items()
                 if kind == "zip" and not _whole_torch_file(ckpt.path / f)]
        if open_:
            return f"{open_[0]} still being written (torch.save has not closed it)"
        return _deepspeed_unfinished(ckpt)
    named = CHECKPOINT_DIR.match(ckpt.path.name)
    if not named:
        return None
    if named.group(2):
        if (bool(files & {TRACKER, "args.json"}) or any(ITER_DIR.match(d) for d in dirs)) \
                and not merged_weights_settled(ckpt.path):
            return "the merged model is still being written (no config.json or index shards yet)"
        return None
    if files and files <= _SWIFT_FIRST_FILES and not dirs:
        return "only args.json so far (ms-swift copies it first)"
    if TRAINER_STATE not in files and trainer_writes_state(ckpt.path, files, dirs, trainer=trainer):
        # transformers' Trainer._save_checkpoint: the weights and training_args.bin (save_model),
        # then optimizer.pt and scheduler.pt (minutes for a full fine-tune's optimizer), the RNG
        # state, and trainer_state.json last; a save killed before it is verified `incomplete`
        return "trainer_state.json not written yet (the Trainer writes it last, after the optimizer state)"
    share = missing_rank_share(ckpt.path, files)
    if share:
        # every process writes its share itself, unordered with process 0's trainer_state.json
        return f"{share} " + ("still being written (torch.save has not closed it)" if share.cut
                              else "not written yet (each process writes its own into the save)")
    if "adapter_model.safetensors" in files and "adapter_config.json" not in files and TRACKER in files:
        return "adapter_config.json not written yet (the bridge writes it right after the adapter)"
    iters = [d for d in dirs if ITER_DIR.match(d)]
    if not iters or TRACKER not in files:
        return None
    if "adapter_model.safetensors" not in files and any(f.endswith(".safetensors") for f in files) \
            and not merged_weights_settled(ckpt.path):
        # a full model saved into checkpoint-N/ itself (--tuner_type full --save_safetensors): the
        # same GPTBridge.save_weights as a merged save, so the same order, config.json last
        return "the model is still being written (no config.json yet; ms-swift writes it after the weights)"
    weights = any(f.endswith((".safetensors", ".bin")) for f in files)
    common_only = all(_names(ckpt.path / d)[0] <= {"common.pt"} and not _names(ckpt.path / d)[1] for d in iters)
    if not common_only or weights:
        return None
    merged = ckpt.path.parent / (ckpt.path.name + MERGED_SUFFIX)
    if merged.is_dir() and merged_weights_settled(merged):
        return None
    return (f"Megatron metadata only; its weights go to {merged.name}/, "
            + ("still being written" if merged.is_dir() else "not started yet"))


def tracker_superseded(iteration_dir: Path, tracker_dir: Path) -> bool:
    """Was ``tracker_dir``'s tracker written after every file of ``iteration_dir``, which it does
    not name? Then a later save rewrote it, not this one's writer: Megatron-LM writes the tracker
    with the iteration it just saved, lower or not (megatron/training/checkpointing.py d98e8a6
    ``iter_finalize_fn`` l.1083-1084), and under ``--finetune`` every load starts the iteration at
    0 again (``load_checkpoint`` l.2852-2853), so an attempt saving into its load directory names
    a lower iteration than an earlier attempt's finished saves. Asked only of a run whose resumes
    count from step 1 again into one directory (``order.SaveOrder.rewrites``): elsewhere an
    iteration above the tracker is a save that did not finish. Such a save is judged by its own
    files then (a torch_dist iteration's ``metadata.json``, written last: ``_unfinished_dist_save``);
    a legacy ``mp_rank_XX/`` save cut short before an earlier attempt ended has none to judge by."""
    try:
        tracker_at = (tracker_dir / TRACKER).stat().st_mtime
    except OSError:
        return False
    return written_at(iteration_dir) < tracker_at


def tracker_passed_over(iteration_dir: Path, tracker_dir: Path, *, rewrites: bool) -> bool:
    """Is ``iteration_dir``, above the iteration ``tracker_dir``'s tracker names, a finished save
    all the same? Only in a run whose resumes count from step 1 again into one directory
    (``rewrites``), when a later save rewrote the tracker (``tracker_superseded``), and never in
    ms-swift's ``checkpoint-N/``: it holds iteration N alone with its own tracker (4.6.0
    swift/megatron/trainers/base.py ``save_checkpoint`` l.832-847: ``checkpoint-{iteration}``), so
    a lower tracker there is its own save unfinished. The one rule the verifier
    (``megatron.check_tracker``) and the watcher (``_untracked_iteration``) ask."""
    return rewrites and not CHECKPOINT_DIR.match(tracker_dir.name) and tracker_superseded(iteration_dir, tracker_dir)


def _untracked_iteration(ckpt: Checkpoint, dirs: set[str], rewrites: bool = False) -> str | None:
    """Megatron writes ``latest_checkpointed_iteration.txt`` only after every rank finished saving
    (megatron/training/checkpointing.py ``save_checkpoint``: the tracker after the barrier): a
    Megatron save (``iter_N/``, or ms-swift's ``checkpoint-N/`` holding one with its own tracker)
    whose iteration the tracker does not name yet is still being written (or its save died).
    ``rewrites``: unless a later save rewrote the tracker (``tracker_passed_over``)."""
    if ckpt.layout != "megatron" and not any(ITER_DIR.match(d) for d in dirs):
        return None
    tracker_dir = ckpt.path.parent if is_megatron_iter_dir(ckpt.path) else ckpt.path
    tracked = tracker_iteration(tracker_dir)
    if tracked == "release" or (ckpt.step is None and tracked is not None):
        return None
    if isinstance(tracked, int) and ckpt.step is not None and tracked >= ckpt.step:
        return None
    if isinstance(tracked, int) and is_megatron_iter_dir(ckpt.path) \
            and tracker_passed_over(ckpt.path, tracker_dir, rewrites=rewrites):
        return None
    if tracked is None:
        return f"no {TRACKER} naming it yet (Megatron writes it after every rank finished saving)"
    return f"{TRACKER} still names iteration {tracked} (Megatron writes it after every rank finished saving)"


def _unfinished_dist_save(ckpt: Checkpoint, files: set[str], dirs: set[str]) -> str | None:
    """A distributed-checkpoint iteration dir whose shards are not closed yet. megatron-core's
    ``dist_checkpointing.save`` writes ``common.pt``, the ``*.distcp`` shards, torch DCP's index
    ``.metadata``, then ``metadata.json`` last (megatron/core/dist_checkpointing/serialization.py
    ``save``: "metadata.json is written only if the checkpoint is complete"); plain DCP
    (ms-swift's ``fsdp_dtensor``) ends with ``.metadata``. Megatron-LM writes the tracker after
    that, but ms-swift 4.x with ``--async_save`` writes it as soon as the save is scheduled, and the
    shards, the index and metadata.json land later, at a following step (4.6.0 swift/megatron/
    utils/megatron_lm_utils.py:376-398 ``save_mcore_checkpoint``, 4.2.0 l.281-301; the finalize
    runs in trainers/base.py:736 ``maybe_finalize_async_save``): the tracker alone does not say
    finished there."""
    if is_megatron_iter_dir(ckpt.path):
        targets = [(ckpt.path.name, files)]
    else:
        targets = [(d, _names(ckpt.path / d)[0]) for d in sorted(dirs) if ITER_DIR.match(d)]
    for name, names in targets:
        if not any(f.endswith(".distcp") for f in names):
            if "common.pt" in names and ".metadata" not in names and megatron_model_state_saved(ckpt.path):
                return (f"{name}/ has common.pt but none of the model state its arguments save yet (megatron-core "
                        "writes the shards after it; an --async_save writes them in the background)")
            continue
        last = ".metadata" if ".metadata" not in names else \
            "metadata.json" if "common.pt" in names and "metadata.json" not in names else None
        if last:
            return (f"{name}/ has shards but no {last} yet (megatron-core writes it when the save is complete; "
                    "an --async_save finishes at a later step)")
    return None


def megatron_model_state_saved(path: Path) -> bool:
    """Does the ms-swift Megatron save at ``path`` (a checkpoint-N/ or its iter_N/) write model state into
    iter_N/, by the arguments it copied into checkpoint-N/args.json first? ms-swift saves no model there only
    with --save_safetensors true and --no_save_optim true (4.6.0 swift/megatron/trainers/base.py l.836-839,
    4.2.0 l.731: ``model = []``, then iter_N/common.pt alone, utils/megatron_lm_utils.py l.348-353);
    otherwise ``dist_checkpointing.save`` writes common.pt first and the shards after it (megatron-core
    0.16.1 dist_checkpointing/serialization.py l.411), under --async_save in a background writer that may
    not have made its first file yet while the tracker already names the iteration (l.378-384). Without
    ms-swift's Megatron arguments (both flags as booleans) nothing is assumed; a ``checkpoint-N-merged/``
    gets only a copy of common.pt (trainers/base.py l.871-877), whatever the arguments."""
    base = path.parent if is_megatron_iter_dir(path) else path
    if base.name.endswith(MERGED_SUFFIX):
        return False
    try:
        args = json.loads((base / "args.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(args, dict):
        return False
    safetensors, no_optim = args.get("save_safetensors"), args.get("no_save_optim")
    if not isinstance(safetensors, bool) or not isinstance(no_optim, bool):
        return False
    return not (safetensors and no_optim)


def megatron_save_complete(ckpt: Checkpoint, *, trainer: bool = False, rewrites: bool = False) -> bool:
    """Finished by every rule of ``save_underway`` (a Megatron save: once the tracker names its
    iteration, ``_untracked_iteration``)."""
    return save_underway(ckpt, trainer=trainer, rewrites=rewrites) is None
