"""Notice new checkpoints of a live run as soon as their files are complete, and pick the
checkpoint a resume should start from.

The watcher polls (the runner calls ``poll()`` about once a second): checkpoints sit on
shared or network file systems where inotify does not see other hosts' writes, and a listing
per second is cheap. A checkpoint is ready when its file names and sizes have not changed for
``settle_s``; a Megatron save is ready only once its tracker file names it (the tracker is
written after every rank finished) and megatron-core has closed its shards with ``metadata.json``
(ms-swift's ``--async_save`` writes the tracker first), or after ``stale_s`` without change (a
save that died): ``discover.save_underway``.

A writer can pause longer than ``settle_s`` between files (HF gathers optimizer state after
writing the weights). So for ``recheck_s`` after reporting a checkpoint the watcher keeps
comparing its files, and reports it again once they change and settle: the later verdict
supersedes the earlier one.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from moeconsole.runner.checkpoints.discover import Checkpoint, find_checkpoints, megatron_save_complete
from moeconsole.runner.checkpoints.sidecar import fingerprint, read_sidecar, verdict_current


Signature = tuple[tuple[str, int, int], ...]


def signature(path: Path) -> Signature:
    """Names, sizes and modification times of a checkpoint's files (recursive, the sidecar and temp
    files excluded). The time is there for a save written again in place with files of the same
    sizes (a resume that counts from step 1 again into one directory rewrites checkpoint-4 with
    weights of the same shapes): by names and sizes alone it never changed, so its first verdict
    stood, and a rewrite cut before its trainer_state.json raised no alert."""
    if path.is_file():
        try:
            st = path.stat()
            return ((path.name, st.st_size, st.st_mtime_ns),)
        except OSError:
            return ()
    return tuple(sorted((name, size, mtime) for name, (size, mtime) in fingerprint(path).items()))


def vanished(path: Path, before: Signature) -> bool:
    """Is the checkpoint gone, or has it lost files it had (``before``: its ``signature`` when it
    was judged settled)? The trainer is deleting it: ms-swift's ``--save_total_limit`` removes old
    ``checkpoint-N`` dirs with ``shutil.rmtree(checkpoint, ignore_errors=True)`` right after each
    save (4.6.0 swift/trainers/mixin.py:507, swift/megatron/trainers/base.py:918, and transformers'
    own ``_rotate_checkpoints``), as does a flash-checkpoint save it gives up on (mixin.py:742). A
    verdict on what is left is not a bad save."""
    if not path.exists():
        return True
    now = {name for name, _size, _mtime in signature(path)}
    return any(name not in now for name, _size, _mtime in before)


class CheckpointWatcher:
    """Reports each checkpoint under ``root`` when its files have settled (again if they change
    within ``recheck_s`` of being reported)."""

    def __init__(self, root: Path | str, *, settle_s: float = 2.0, known: Iterable[Path] = (),
                 stale_s: float = 120.0, recheck_s: float = 600.0,
                 clock: Callable[[], float] = time.monotonic, trainer: bool = False, rewrites: bool = False) -> None:
        self.root = Path(root)
        self.trainer = trainer      # the run's order.SaveOrder: it saves through transformers' Trainer,
        self.rewrites = rewrites    # and its resumes count from step 1 again into one directory
        self.settle_s = settle_s
        self.stale_s = max(stale_s, settle_s)
        self.recheck_s = recheck_s
        self._clock = clock
        self._reported: set[Path] = {self._key(Path(p)) for p in known}
        # Recently reported: key -> (signature when reported, when reported).
        self._recent: dict[Path, tuple[Signature, float]] = {}
        self._pending: dict[Path, tuple[Signature, float]] = {}
        # The order the files were written in, as this watcher saw them change (its own looks, not
        # the files' times, which follow the wall clock): key -> file -> (size, mtime, the look at
        # which it was last seen to change; 0: already there at the first look). ``written``.
        self._looks = 0
        self._seen_at: dict[Path, dict[str, tuple[int, int, int]]] = {}

    @staticmethod
    def _key(path: Path) -> Path:
        try:
            return path.resolve()
        except OSError:
            return path.absolute()

    def poll(self) -> list[Checkpoint]:
        """Checkpoints that appeared and whose files have not changed for ``settle_s``, oldest first."""
        now = self._clock()
        self._looks += 1
        ready: list[Checkpoint] = []
        present: set[Path] = set()
        for ckpt in find_checkpoints(self.root):
            key = self._key(ckpt.path)
            present.add(key)
            if key in self._reported and not self._changed_since_report(key, ckpt.path):
                continue
            sig = signature(ckpt.path)
            self._observe(key, sig)
            prev = self._pending.get(key)
            if prev is None or prev[0] != sig:
                self._pending[key] = (sig, now)
                continue
            quiet = now - prev[1]
            if quiet < self.settle_s:
                continue
            if (not sig or not megatron_save_complete(ckpt, trainer=self.trainer, rewrites=self.rewrites)) and quiet < self.stale_s:
                continue    # an empty dir or an unfinished Megatron save: give the writer time
            ready.append(ckpt)
            self._reported.add(key)
            self._recent[key] = (sig, now)
            del self._pending[key]
        for key in list(self._pending):
            if key not in present:      # rotated away (save_total_limit) before it settled
                del self._pending[key]
        for key in list(self._recent):
            if key not in present or now - self._recent[key][1] > self.recheck_s:
                del self._recent[key]
        for key in list(self._seen_at):
            if key not in present:
                del self._seen_at[key]
        return sorted(ready, key=lambda c: (c.step is None, c.step or 0))

    def _observe(self, key: Path, sig: Signature) -> None:
        """Note the look at which each file of a checkpoint was seen to change (written anew)."""
        seen = self._seen_at.setdefault(key, {})
        for name, size, mtime in sig:
            was = seen.get(name)
            if was is None or was[:2] != (size, mtime):
                seen[name] = (size, mtime, self._looks if self._looks > 1 else 0)

    def written(self, path: Path) -> dict[str, int]:
        """File (relative path) -> the look at which this watcher last saw it written (0: it was
        there at the watcher's first look), for the files of ``path`` whose size and time are still
        those it saw; a file changed since its last look (or never looked at) is left out. The order
        the runner watched a save written in, which ``verify.stale_trainer_state`` takes over the
        files' modification times: those are the wall clock's, which NTP or an admin may step back
        between two writes of one save."""
        seen = self._seen_at.get(self._key(path))
        if not seen:
            return {}
        now = {name: (size, mtime) for name, size, mtime in signature(path)}
        return {name: at for name, (size, mtime, at) in seen.items() if now.get(name) == (size, mtime)}

    def _changed_since_report(self, key: Path, path: Path) -> bool:
        """A recently reported checkpoint whose files changed goes back to pending."""
        recent = self._recent.get(key)
        if recent is None or key in self._pending:
            return key in self._pending
        sig = signature(path)
        if sig == recent[0]:
            return False
        self._observe(key, sig)
        self._recent.pop(key)
        return True

    def reported_signature(self, path: Path) -> Signature | None:
        """The files of a checkpoint as they were when it was last reported, if recently."""
        recent = self._recent.get(self._key(path))
        return recent[0] if recent is not None else None

    @property
    def pending(self) -> list[Path]:
        return sorted(self._pending)


def known_verdict(ckpt: Checkpoint, *, trainer: bool = False, rewrites: bool = False) -> tuple[str, str | None, bool]:
    """(verdict, recipe hash, suspect) of a checkpoint: its sidecar's while the files are
    unchanged since it was written by the current checks, else verified now (fast path;
    ``trainer``: the run's saver is transformers' Trainer, ``verify_checkpoint``)."""
    from moeconsole.runner.checkpoints.verify import verify_found

    record = read_sidecar(ckpt.path) if ckpt.path.is_dir() else None
    if record is not None and verdict_current(ckpt.path, record):
        return str(record["verdict"]), record.get("recipe_hash"), bool(record.get("suspect"))
    v = verify_found(ckpt, trainer=trainer, rewrites=rewrites)
    return v.verdict, v.recipe_hash, v.suspect


def latest_good(root: Path | str, *, expected_recipe_hash: str | None = None, allow_suspect: bool = True,
                include_merged: bool = False, trainer: bool = False, rewrites: bool = False,
                before_step: int | None = None) -> Checkpoint | None:
    """The newest checkpoint under ``root`` that verifies ok: a resume point, never a stub.

    A sidecar verdict is trusted while the checkpoint's files are unchanged since it was
    written; otherwise the checkpoint is verified now (fast path). With
    ``expected_recipe_hash``, checkpoints whose stored recipe hash differs are skipped
    (a checkpoint without a stored hash is not known to drift). ``-merged`` exports are not
    resume points unless ``include_merged``; suspect saves are skipped unless ``allow_suspect``.
    ``trainer``: the run saves through transformers' Trainer (``flags.saves_through_trainer``);
    ``rewrites``: its resumes count from step 1 again, so the newest is the last written
    (``discover.sort_newest_first``). ``before_step``: only a save of a known step below it.

    A save some node had not finished its part of when the world ended (one output dir shared by several nodes,
    round 19) verifies incomplete (``discover.missing_rank_share``, by the world its own args.json says), so
    every node's runner, reading the same dir, passes over the same save. Since review R48 D3 no save is judged
    by the shares of an older one: a world that lost a GPU or a node saves fewer, and its first save is whole."""
    for ckpt in find_checkpoints(root, rewrites=rewrites):
        if ckpt.export and not include_merged:
            continue
        if before_step is not None and (ckpt.step is None or ckpt.step >= before_step):
            continue
        if unfit(ckpt, expected_recipe_hash=expected_recipe_hash, allow_suspect=allow_suspect, trainer=trainer,
                 rewrites=rewrites)[0] is not None:
            continue
        return ckpt
    return None


def unfit(ckpt: Checkpoint, *, expected_recipe_hash: str | None, allow_suspect: bool, trainer: bool,
          rewrites: bool) -> tuple[str | None, str | None, bool]:
    """Why ``ckpt`` is no resume point, as ``(why, stored recipe hash, suspect)``: ``why`` is its verdict
    when that is not ok, ``"suspect"`` (unless ``allow_suspect``), ``"drift"`` (saved under a recipe hash
    other than ``expected_recipe_hash``; none stored is not known to drift), or None when it is one.
    The one judgement of ``latest_good`` and of a save the user names (``order.chosen_save``)."""
    verdict, stored_hash, is_suspect = known_verdict(ckpt, trainer=trainer, rewrites=rewrites)
    if verdict != "ok":
        return verdict, stored_hash, is_suspect
    if is_suspect and not allow_suspect:
        return "suspect", stored_hash, is_suspect
    if expected_recipe_hash is not None and stored_hash is not None and stored_hash != expected_recipe_hash:
        return "drift", stored_hash, is_suspect
    return None, stored_hash, is_suspect
