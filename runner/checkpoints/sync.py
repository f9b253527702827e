"""Copy verified checkpoints to persistent storage, prove each copy, keep the recipe's retention.

Checkpoints are written to fast local disk that does not outlive the machine; the run is only
safe once a verified copy lives elsewhere. Only a checkpoint that verified ok is ever synced (a
stub or an unverified save never is). Each copy goes to a temporary name, is verified there
(the same header checks as the original, every file's size against the source, and with
``full`` the content hashes), and only then renamed into place, so the destination never holds
a half-copied checkpoint under a real name.

The copying runs in a child process (``python -m moeconsole.runner.checkpoints.sync``) so hundreds of GB
never block the runner's loop; :class:`CheckpointSyncer` starts it, reads its result file, retries
a failure after ``retry_s`` and reports the lag.

    sync:
      dest: /mnt/persistent/qwen397b        # where copies go (None: no sync)
      keep_last: 3                          # synced copies kept; the newest verified always
      full: false                           # also compare content hashes (reads both copies)
      retry_s: 60
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from moeconsole.runner.process import pyexec
from moeconsole.runner.rundir import jsonio
from moeconsole.runner.core import schema

MARKER = ".moeconsole-sync.json"      # in each synced copy: where it came from, when, how checked
PARTIAL = ".partial-"


class SyncSettings(schema.Section, frozen=True):
    """The recipe's ``sync:`` section (the module docstring shows it)."""
    dest: schema.PathText | None = None
    keep_last: schema.PositiveCount = 3
    full: bool = False
    retry_s: schema.Seconds = 60.0

    @property
    def enabled(self) -> bool:
        return bool(self.dest)

    @classmethod
    def from_recipe(cls, section: Any) -> "SyncSettings":
        """SettingsError (a ValueError) naming the key; the recipe loader adds the file."""
        return schema.convert({} if section is None else section, cls, "sync")


@dataclass
class SyncResult:
    v: int
    ok: bool
    src: str
    dest: str
    step: int | None
    bytes: int
    seconds: float
    method: str
    reason: str
    t: float
    deleted: list[str] = field(default_factory=list)


def _files(root: Path) -> dict[str, int]:
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            rel = str(p.relative_to(root))
            if rel in (MARKER,) or n.startswith(".moeconsole.json."):
                continue
            out[rel] = p.stat().st_size
    return out


def _copy_tree(src: Path, tmp: Path, *, use_rsync: bool) -> str:
    """Copy ``src`` into the new directory ``tmp``; data reaches the disk before the rename."""
    rsync = shutil.which("rsync") if use_rsync else None
    if rsync:
        proc = subprocess.run([rsync, "-a", "--whole-file", f"{src}/", f"{tmp}/"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise OSError(f"rsync exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
        method = "rsync"
    else:
        shutil.copytree(src, tmp, symlinks=True)
        method = "copy"
    for dirpath, _dirs, names in os.walk(tmp):
        for n in names:
            fd = os.open(os.path.join(dirpath, n), os.O_RDONLY | os.O_NOFOLLOW)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    return method


def _track_megatron_copy(src: Path, dest_root: Path, step: int | None) -> None:
    """A Megatron-LM ``iter_N/`` copied into ``dest_root``: name it in ``dest_root``'s own
    ``latest_checkpointed_iteration.txt``, as Megatron does once every rank saved
    (checkpointing.py ``iter_finalize_fn``), so ``--load dest_root`` resumes from the copy
    (without a tracker Megatron-LM "will not load any checkpoints and will start from random",
    ``_load_base_checkpoint``). Never moved back to an older iteration."""
    from moeconsole.runner.checkpoints.discover import ITER_DIR, TRACKER, tracker_iteration
    if step is None or not ITER_DIR.match(src.name):
        return
    tracked = tracker_iteration(dest_root)
    if isinstance(tracked, int) and tracked >= step:
        return
    jsonio.atomic_write_bytes(dest_root / TRACKER, str(step).encode())


def retention(synced: list[tuple[str, int | None]], keep_last: int, newest_verified: str) -> list[str]:
    """Which synced copies to delete: all but the ``keep_last`` newest by step, never the newest
    verified one. Pure, so the rule is tested without files."""
    with_step = sorted((x for x in synced if x[1] is not None), key=lambda x: (x[1], x[0]), reverse=True)
    ordered = with_step + [x for x in synced if x[1] is None]
    keep = {name for name, _ in ordered[:keep_last]} | {newest_verified}
    return [name for name, _ in synced if name not in keep]


def sync_one(src: Path, dest_root: Path, *, full: bool = False, keep_last: int = 3, use_rsync: bool = True,
             expected_recipe_hash: str | None = None) -> SyncResult:
    """Copy, verify, rename into place, apply retention. Never raises for an I/O problem: the
    result says what went wrong, and no half copy is left under a real name.

    A metadata-only ``checkpoint-N/`` whose weights are its ``checkpoint-N-merged/`` sibling
    (ms-swift 4.2 with ``--merge_lora true``) is copied with that sibling: both are staged in one
    temporary directory, the copy is verified there as a pair, and the sibling is renamed into
    place first, so the destination never holds the metadata without its weights."""
    from moeconsole.runner.checkpoints.discover import step_in_name, weights_sibling
    from moeconsole.runner.checkpoints.verify import verify_checkpoint

    t0 = time.monotonic()
    src = src.resolve()
    final = dest_root / src.name
    staging = dest_root / f"{PARTIAL}{src.name}.{os.getpid()}"
    step = step_in_name(src.name)
    sibling = weights_sibling(src)
    members = ([sibling] if sibling is not None else []) + [src]

    def fail(reason: str, method: str = "") -> SyncResult:
        shutil.rmtree(staging, ignore_errors=True)
        return SyncResult(jsonio.SCHEMA_VERSION, False, str(src), str(final), step, 0,
                          round(time.monotonic() - t0, 3), method, reason, time.time())

    source = verify_checkpoint(src, full=full, expected_recipe_hash=expected_recipe_hash)
    if not source.ok:
        return fail(f"source is not a good checkpoint ({source.verdict}: {source.reason}); not synced")
    method = ""
    try:
        dest_root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        for m in members:
            method = _copy_tree(m, staging / m.name, use_rsync=use_rsync)
    except OSError as exc:
        return fail(f"copy failed: {exc}", method)
    total = 0
    for m in members:
        try:
            want, got = _files(m), _files(staging / m.name)
        except OSError as exc:
            return fail(f"cannot list the copy: {exc}", method)
        total += sum(want.values())
        missing = sorted(set(want) - set(got))
        wrong = sorted(r for r in want if r in got and got[r] != want[r])
        if missing or wrong:
            return fail(f"copy of {m.name} differs from the source: " + "; ".join(
                [f"missing {', '.join(missing[:5])}"] * bool(missing) + [f"size differs: {', '.join(wrong[:5])}"] * bool(wrong)),
                method)
    copy = verify_checkpoint(staging / src.name, full=full)
    if not copy.ok:
        return fail(f"the copy does not verify ({copy.verdict}: {copy.reason})", method)
    if full and (source.full or {}).get("hash") != (copy.full or {}).get("hash"):
        return fail("content hash of the copy differs from the source", method)
    record = {"v": jsonio.SCHEMA_VERSION, "src": str(src), "step": step, "synced_at": time.time(), "method": method,
              "verdict": copy.verdict, "tensors": copy.tensors, "full_hash": (copy.full or {}).get("hash"),
              "with": [m.name for m in members if m != src]}
    try:
        jsonio.atomic_write_json(staging / src.name / MARKER, record, follow_dir=True)
        for m in members:                          # the weights first, the checkpoint that names them last
            jsonio.replace_dir(staging / m.name, dest_root / m.name)
        os.rmdir(staging)
        _track_megatron_copy(src, dest_root, step)
        dfd = os.open(dest_root, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError as exc:
        return fail(f"cannot put the copy in place: {exc}", method)
    synced = [(p.name, step_in_name(p.name)) for p in dest_root.iterdir()
              if p.is_dir() and not p.name.startswith(PARTIAL) and (p / MARKER).is_file()]
    deleted = retention(synced, keep_last, final.name)
    for name in deleted:
        shutil.rmtree(dest_root / name, ignore_errors=True)
        shutil.rmtree(dest_root / f"{name}-merged", ignore_errors=True)    # its weights, synced with it
    return SyncResult(jsonio.SCHEMA_VERSION, True, str(src), str(final), step, total,
                      round(time.monotonic() - t0, 3), method, "copied and verified", time.time(), deleted)


@dataclass
class SyncStatus:
    """What the runner reports (state.json ``sync``; the snapshot, UI, --json and metrics)."""
    dest: str
    last_synced_step: int | None = None
    last_synced_at: float | None = None
    pending: str | None = None            # checkpoint being or waiting to be synced
    pending_since: float | None = None    # when it verified ok: the lag counts from here
    failures: int = 0
    last_error: str | None = None

    def lag_s(self, now: float) -> float:
        return 0.0 if self.pending_since is None else max(0.0, now - self.pending_since)

    def to_dict(self, now: float) -> dict[str, Any]:
        return {**asdict(self), "lag_s": round(self.lag_s(now), 3)}


class CheckpointSyncer:
    """One sync at a time, newest verified checkpoint first; a failure is retried after
    ``retry_s`` and reported, never raised into the runner's loop."""

    def __init__(self, settings: SyncSettings, status_dir: Path, *, python: str = sys.executable,
                 recipe_hash: str | None = None) -> None:
        assert settings.dest
        self.settings = settings
        self.status_dir = status_dir
        self.python = python
        self.recipe_hash = recipe_hash
        self.status = SyncStatus(dest=settings.dest)
        self.proc: subprocess.Popen | None = None
        self.running: str | None = None
        self.retry_at: float | None = None

    def offer(self, path: str, verified_at: float) -> None:
        """A checkpoint verified ok: it becomes the one to sync (an older pending one is
        superseded: retention would delete it anyway)."""
        if self.status.pending != path:
            self.status.pending, self.status.pending_since = path, verified_at
            self.retry_at = None

    def _result_file(self) -> Path:
        return self.status_dir / "sync-result.json"

    def poll(self, now: float) -> list[dict[str, Any]]:
        """Advance; returns events to record (``sync`` results, ``alert`` on failure)."""
        events: list[dict[str, Any]] = []
        if self.proc is not None:
            if self.proc.poll() is None:
                return events
            self.proc = None
            res = jsonio.read_json(self._result_file())
            if not isinstance(res, dict) or res.get("src") != str(Path(self.running or "").resolve()):
                res = {"ok": False, "reason": "the sync process ended without a result", "src": self.running}
            events.append({"type": "sync", **res})
            if res.get("ok"):
                if self.status.pending == self.running:
                    self.status.pending = self.status.pending_since = None
                self.status.last_synced_step, self.status.last_synced_at = res.get("step"), res.get("t")
                self.status.failures, self.status.last_error = 0, None
            elif not Path(self.running or "").exists():
                # The trainer deleted the source (ms-swift's --save_total_limit rotation,
                # shutil.rmtree right after a later save) before the copy finished: not a failure
                # of the sync, and nothing to retry; the next verified save is offered as usual.
                name = Path(self.running or "").name
                if self.status.pending == self.running:
                    self.status.pending = None     # pending_since stays: the lag goes on counting
                self.status.last_error = f"{name} was deleted by the trainer before its copy finished"
                events.append({"type": "alert", "level": "warning", "rule": "sync_failed",
                               "message": f"checkpoint {name} was deleted by the trainer (--save_total_limit) "
                                          f"before its sync to {self.settings.dest} finished: the copy is slower "
                                          "than the saves rotate; not retried, the next good save is synced"})
            else:
                self.status.failures += 1
                self.status.last_error = str(res.get("reason"))
                self.retry_at = time.monotonic() + self.settings.retry_s  # a delay: monotonic
                events.append({"type": "alert", "level": "warning", "rule": "sync_failed",
                               "message": f"checkpoint sync to {self.settings.dest} failed "
                                          f"({self.status.failures}x): {res.get('reason')}; retrying in "
                                          f"{self.settings.retry_s:g}s"})
            self.running = None
        if self.status.pending and (self.retry_at is None or time.monotonic() >= self.retry_at):
            self._start(self.status.pending)
        return events

    def _start(self, path: str) -> None:
        try:
            os.unlink(self._result_file())
        except FileNotFoundError:
            pass
        argv = [*pyexec.module_argv("moeconsole.runner.checkpoints.sync", python=self.python), path, self.settings.dest or "",
                "--keep", str(self.settings.keep_last), "--result", str(self._result_file())]
        if self.settings.full:
            argv.append("--full")
        if self.recipe_hash:
            argv += ["--recipe-hash", self.recipe_hash]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, close_fds=True)
        self.running = path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m moeconsole.runner.checkpoints.sync")
    ap.add_argument("src")
    ap.add_argument("dest_root")
    ap.add_argument("--keep", type=int, default=3)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--no-rsync", action="store_true")
    ap.add_argument("--recipe-hash")
    ap.add_argument("--result", help="write the result JSON here (atomically) instead of stdout")
    args = ap.parse_args(argv)
    res = sync_one(Path(args.src), Path(args.dest_root), full=args.full, keep_last=max(1, args.keep),
                   use_rsync=not args.no_rsync, expected_recipe_hash=args.recipe_hash)
    if args.result:
        jsonio.atomic_write_json(args.result, asdict(res), follow_dir=True)
    else:
        sys.stdout.write(jsonio.dumps(asdict(res)) + "\n")
    return 0 if res.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
