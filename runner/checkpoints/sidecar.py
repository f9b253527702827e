"""What the runner stores with each checkpoint it verified: ``<ckpt>/moeconsole.json``.

``{"v":1, "run_id", "recipe_hash", "step", "verdict", "suspect", "verified_at", "files", "checks"}`` where
``files`` maps each file of the checkpoint (relative path) to ``[size, mtime_ns]`` at
verification time, so a later reader can trust the stored verdict only while the files are
unchanged, and ``checks`` is the revision of the checks that gave it (``CHECKS``): a verdict from
older checks is judged again (``verdict_current``), since they may have passed what the current
ones find. A metadata-only ``checkpoint-N/`` whose weights are its ``checkpoint-N-merged/``
sibling (ms-swift ``--merge_lora true``) includes the sibling's files as ``../checkpoint-N-merged/...``:
the verdict is the sibling's, so a change there (a merged model still being written when it was
first judged) makes the verdict stale. Written atomically.
"""
from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from moeconsole.runner.rundir import jsonio
from moeconsole.runner.checkpoints.discover import SIDECAR_NAME, is_sidecar_file, weights_sibling

_MAX_DEPTH = 3

# The revision of what the fast path checks; a stored verdict given by older checks is not trusted.
# 1 (no "checks" key): Megatron torch_dist / DCP saves checked for presence and non-zero size only.
# 2: DCP's .metadata read: model tensors counted, every .distcp as long as the data placed in it.
# 3: a run that saves through transformers' Trainer says so (``flags.saves_through_trainer``): its
#    first save cut after the weights, before trainer_state.json, is incomplete (2 called it ok).
# 4: a trainer_state.json that is an earlier save's (``verify.stale_trainer_state``: a save rewritten in
#    place and cut before its own state) is incomplete (3 called it ok).
# 5: a save that still holds transformers' JIT sentinel (``discover.JIT_INCOMPLETE_MARKER``) is
#    incomplete (4 called it ok).
# 6: a save of several processes that lacks one process's share (``discover.missing_rank_share``: its
#    ``rng_state_{i}.pth`` absent or cut short) is incomplete (5 called it ok).
# 7: only a share cut short is incomplete; an absent one is a warning and the save stays a resume point
#    (transformers resumes with that process's RNG fresh), and shares an earlier attempt left are not counted
#    (6 called both incomplete).
CHECKS = 7


def fingerprint(ckpt_dir: Path) -> dict[str, list[int]]:
    """Relative path -> [size, mtime_ns] of every file in the checkpoint (the sidecar excluded)."""
    out: dict[str, list[int]] = {}

    def walk(d: Path, prefix: str, depth: int) -> None:
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            return
        for e in entries:
            rel = prefix + e.name
            try:
                if e.is_dir(follow_symlinks=False):
                    if depth < _MAX_DEPTH:
                        walk(Path(e.path), rel + "/", depth + 1)
                elif not (depth == 0 and is_sidecar_file(e.name)):
                    st = e.stat()
                    out[rel] = [st.st_size, st.st_mtime_ns]
            except OSError:
                continue

    walk(Path(ckpt_dir), "", 0)
    sibling = weights_sibling(Path(ckpt_dir))
    if sibling is not None:
        walk(sibling, f"../{sibling.name}/", 0)
    return out


def write_sidecar(ckpt_dir: Path | str, *, run_id: str, recipe_hash: str, step: int | None, verdict: str,
                  suspect: bool, reason: str | None = None, watched: Mapping[str, int] | None = None) -> None:
    """``watched``: the order the runner saw the files written in (``CheckpointWatcher.written``),
    kept as ``"watched"`` for a later `verify` of the same files (``sidecar_watched``). One that
    gives no order (empty, or every file there at the watcher's first look: a new runner
    re-checking the save) never replaces the ordered one a runner before kept for these same files
    (reviewed R27: it was overwritten with zeros, and the save's verdict went with it)."""
    ckpt_dir = Path(ckpt_dir)
    if not watched_orders(watched):
        before_kept = sidecar_watched(ckpt_dir, read_sidecar(ckpt_dir))
        if watched_orders(before_kept):
            watched = before_kept
    record: dict[str, Any] = {"v": jsonio.SCHEMA_VERSION, "run_id": run_id, "recipe_hash": recipe_hash,
                              "step": step, "verdict": verdict, "suspect": bool(suspect),
                              "verified_at": time.time(), "files": fingerprint(ckpt_dir), "checks": CHECKS}
    if reason is not None:
        record["reason"] = reason
    if watched and watched_orders(watched):   # an all-0 order is none: not kept
        record["watched"] = dict(watched)
    try:
        before = os.stat(ckpt_dir)
    except OSError:
        before = None
    jsonio.atomic_write_json(ckpt_dir / SIDECAR_NAME, record, follow_dir=True)
    if before is not None:
        # Writing the sidecar touched the directory's mtime; put it back. The trainers pick the
        # saves --save_total_limit deletes by that mtime, oldest first, and keep the newest by it
        # (transformers 5.19.0 trainer.py:3382-3388 ``rotate_checkpoints(..., use_mtime=True)``,
        # trainer_utils.py:309-310; ms-swift 4.6.0 swift/megatron/trainers/base.py:929
        # ``sorted(glob_checkpoints, key=os.path.getmtime)``), and so do we between saves of one
        # step (``discover.sort_newest_first``): a late stamp on an older save must not make it
        # the newest.
        try:
            os.utime(ckpt_dir, ns=(before.st_atime_ns, before.st_mtime_ns))
        except OSError:
            pass


def read_sidecar(ckpt_dir: Path | str) -> dict | None:
    """The stored record, or None when absent, unreadable, or not ours."""
    path = Path(ckpt_dir) / SIDECAR_NAME
    if not path.is_file():
        return None
    rec = jsonio.read_json(path)
    if not isinstance(rec, dict) or rec.get("v") != 1 or not isinstance(rec.get("verdict"), str):
        return None
    return rec


def sidecar_current(ckpt_dir: Path | str, record: dict) -> bool:
    """Are the checkpoint's files exactly as they were when ``record`` was written?"""
    files = record.get("files")
    return isinstance(files, dict) and bool(files) and files == fingerprint(Path(ckpt_dir))


def watched_orders(watched: Mapping[str, int] | None) -> bool:
    """Does a watched order (``CheckpointWatcher.written``) tell any order at all? Not when empty,
    nor when every file was there at the watcher's first look (all look 0)."""
    return bool(watched) and any(v for v in (watched or {}).values())


def sidecar_watched(ckpt_dir: Path | str, record: dict | None) -> dict[str, int] | None:
    """The order the runner saw the files written in, as its sidecar keeps it (``write_sidecar``),
    while the files are exactly those it saw (None otherwise: the times decide,
    ``verify.stale_trainer_state``)."""
    watched = (record or {}).get("watched")
    if not isinstance(watched, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in watched.items()):
        return None
    return dict(watched) if record is not None and sidecar_current(ckpt_dir, record) else None


def verdict_current(ckpt_dir: Path | str, record: dict) -> bool:
    """May the stored verdict stand? Only while the files are unchanged and it was given by the
    current checks (a save an older version called ok may be truncated by today's rules). The
    stored recipe hash stays evidence of drift while the files are unchanged (``sidecar_current``)."""
    return record.get("checks") == CHECKS and sidecar_current(ckpt_dir, record)
