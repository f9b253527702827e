"""A live run's checkpoints, as its runner keeps them: verify each save the moment its files
settle, record the verdict (event + sidecar), raise a critical alert on a stub, remember which
saves landed during a grad-norm excursion, and name the resume point and any recipe drift.

The runner owns the loop and the run's state; this object owns everything about checkpoints.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

from moeconsole.runner.checkpoints.discover import Checkpoint, find_checkpoints, step_of
from moeconsole.runner.checkpoints.sidecar import read_sidecar, sidecar_current, verdict_current, write_sidecar
from moeconsole.runner.checkpoints.verify import CheckpointVerdict, verify_checkpoint
from moeconsole.runner.checkpoints.order import SaveOrder, resume_point
from moeconsole.runner.checkpoints.watch import CheckpointWatcher, Signature, known_verdict, signature, vanished
from moeconsole.runner.core.ending import StopSave
from moeconsole.runner.rundir import rundir


@dataclass(frozen=True)
class SaveCheck:
    """Whether a run's newest save holds its result: ``ok`` False when no checkpoint verified
    or the newest one is bad; ``reason`` says which in one line; ``last_good`` names the newest
    good one ({path, step}) if any."""
    ok: bool
    reason: str = ""
    last_good: dict | None = None


def describe_good(good: dict | None) -> str:
    """"last good checkpoint: checkpoint-40 (step 40)" (or that there is none)."""
    if not good:
        return "no checkpoint verified ok"
    step = f" (step {good['step']})" if good.get("step") is not None else ""
    return f"last good checkpoint: {Path(str(good['path'])).name}{step}"

class RunWriter(Protocol):
    """Where the keeper records verdicts: a RunDir, or the runner's Journal (which survives a
    full disk)."""

    @property
    def run_id(self) -> str: ...

    @property
    def path(self) -> Path: ...

    def event(self, type_: str, **fields: Any) -> dict: ...


VERIFIED_KEEP = 200  # names kept in state.json so a new runner does not verify them again


class CheckpointKeeper:
    def __init__(self, run: RunWriter, root: Path | None, *, recipe_hash: str, settle_s: float,
                 verify: bool = True, verified: Iterable[str] = (), bad_saves: dict | None = None,
                 diag: Callable[[str], None] = lambda msg: None, order: SaveOrder = SaveOrder(),
                 writes_saves: bool = True) -> None:
        """``order``: how the run's saves are judged and which is the newest (``order.save_order``):
        ``trainer``, its saves are whole only with trainer_state.json, the first one too (verify,
        the watcher's "still being written", the resume point); ``rewrites``, the newest save is
        the one written last, not the highest step (``discover.sort_newest_first``).
        ``writes_saves``: False on a node that joins another node's rendezvous (node rank 1 and
        up), whose world's process zero, on node 0, writes the saves: none here is no lost result."""
        self.run = run
        self.writes_saves = writes_saves
        self.order = order
        self.root = root
        self.hash = recipe_hash
        self.diag = diag
        self.verified: list[str] = list(verified)[-VERIFIED_KEEP:]
        self.newest_step: int | None = None
        self.last: dict | None = None
        self.saved_marks: dict[str, bool] = {}  # checkpoint dir name -> saved during an excursion
        # Bad saves: how many in all, and the newest ones in a row (paths, oldest first); a new
        # runner takes them over from state.json.
        prior = bad_saves or {}
        self.bad_total = int(prior.get("total") or 0)
        self.bad_in_a_row: list[str] = [str(p) for p in prior.get("in_a_row") or []]
        self.watcher: CheckpointWatcher | None = None
        # the files (names, sizes, times) of each save this runner verified, as they were then
        self._signatures: dict[str, Signature] = {}
        self._disk_level: str | None = None     # the disk_filling level last alerted (diskroom.py)
        self.largest_save = 0                   # bytes of the largest good save seen (room to wait for after disk_full)
        if root is not None and verify:
            done = set(self.verified)
            known = [c.path for c in find_checkpoints(root) if str(c.path) in done] if root.exists() else []
            # Checkpoints from before this runner that were never verified get verified now.
            self.watcher = CheckpointWatcher(root, settle_s=settle_s, known=known, trainer=order.trainer,
                                             rewrites=order.rewrites)

    def saves_through_trainer(self) -> None:
        """The log showed transformers' Trainer at work (``flags.run_saves_through_trainer``): from
        now on a ``checkpoint-N/`` without trainer_state.json is a Trainer save still being written,
        then ``incomplete``, the first one too."""
        self.order = replace(self.order, trainer=True)
        if self.watcher is not None:
            self.watcher.trainer = True

    @property
    def active(self) -> bool:
        return self.watcher is not None

    def note_saved(self, path: str | None, suspect: bool) -> None:
        """A save line in the log, judged in log order with the steps (at verification time
        the excursion may be over)."""
        if path:
            self.saved_marks[Path(str(path).rstrip("/")).name] = suspect

    def poll(self, on_checkpoint: Callable[[int | None, str], list[dict]], attempt: int | None) -> bool:
        """Verify what settled since the last poll; True if anything was recorded."""
        if not self.watcher:
            return False
        try:
            ready = self.watcher.poll()
        except OSError as exc:
            self.diag(f"checkpoint watch failed: {exc}")
            return False
        ready = [ck for ck in ready if not self._already_verified(ck.path)]
        self._record(ready, on_checkpoint, attempt)
        return bool(ready)

    def _already_verified(self, path: Path) -> bool:
        """Verified before (e.g. by the sweep at the end of an attempt) and unchanged since."""
        if str(path) not in self.verified:
            return False
        side = read_sidecar(path)
        return side is not None and verdict_current(path, side)

    def sweep(self, on_checkpoint: Callable[[int | None, str], list[dict]], attempt: int | None) -> None:
        """At the end of a run nothing writes any more: verify the saves newer than the newest
        verified one that the watcher had not settled yet."""
        if not (self.watcher and self.root and self.root.exists()):
            return
        done = set(self.verified)
        pending = [c for c in reversed(find_checkpoints(self.root))
                   if (str(c.path) not in done and (self.newest_step is None or c.step is None or c.step > self.newest_step))
                   or self._rewritten(c.path)]
        self._record(pending, on_checkpoint, attempt)

    def _rewritten(self, path: Path) -> bool:
        """A save this runner verified whose files changed since: the same name saved again by a
        later attempt (one resumed from before it, or one that cannot resume and starts over),
        still settling when the attempt ended. Its old verdict does not hold for the new files."""
        before = self._signatures.get(str(path))
        return before is not None and signature(path) != before

    def _record(self, ready: list[Checkpoint], on_checkpoint, attempt: int | None) -> None:
        for ck in ready:
            before = (self.watcher.reported_signature(ck.path) if self.watcher else None) or signature(ck.path)
            watched = self.watcher.written(ck.path) if self.watcher else None
            v = verify_checkpoint(ck.path, trainer=self.order.trainer, rewrites=self.order.rewrites, watched=watched)
            if vanished(ck.path, before):
                # Deleted by the trainer while we read it (--save_total_limit): no verdict, no
                # alert, and no sidecar written into a directory being removed (it would be left
                # behind holding only our file).
                self.diag(f"{ck.path.name}: deleted while it was verified (the trainer's save_total_limit?); "
                          "no verdict recorded")
                continue
            rec = v.to_dict()
            if ck.export:
                # a merged export (``discover.is_export``): its verdict is shown, but it is no save of the
                # training: not the last checkpoint, not in the bad-save count, never a resume point
                self._record_export(ck, v, rec, attempt)
                self._note_verified(ck.path, before)
                continue
            if ck.path.name in self.saved_marks:
                alerts: list[dict] = []
                suspect = self.saved_marks[ck.path.name]
            else:  # the log named no save for it: judge by the monitors' state now
                alerts = on_checkpoint(ck.step, str(ck.path)) if v.ok else []
                suspect = bool(alerts)
            self.run.event("checkpoint", path=str(ck.path), step=ck.step, verdict=rec.get("verdict"), ok=v.ok,
                           reason=rec.get("reason"), suspect=suspect, **v.counts(), recipe_hash=self.hash,
                           attempt=attempt, **rundir.moment_stamp())   # its age: rundir.moment_age
            for a in alerts:
                self.run.event("alert", attempt=attempt, **a)
            if v.ok:
                self._disk_room(ck, rec, attempt)
            if not v.ok:
                self.run.event("alert", attempt=attempt, level="critical", rule="checkpoint_bad", step=ck.step,
                               message=f"checkpoint {ck.path.name} is {rec.get('verdict')}: {rec.get('reason')}",
                               values={"path": str(ck.path), "verdict": rec.get("verdict")})
            if self._stamped_by_other_recipe(ck.path):
                # Saved under another recipe and unchanged since: its sidecar is the drift guard's
                # evidence; stamping our hash over it would let the drifted recipe resume next time.
                self.diag(f"{ck.path.name}: saved by another recipe; its sidecar is kept")
            else:
                self._stamp(ck, rec, suspect, watched)
            self._note_verified(ck.path, before)
            if ck.step is not None:
                self.newest_step = max(ck.step, self.newest_step or ck.step)
            self.last = {"path": str(ck.path), "step": ck.step, "verdict": rec.get("verdict"), "ok": v.ok}
            self._count(str(ck.path), v.ok)

    def _note_verified(self, path: Path, before: Signature) -> None:
        """Once each, newest last: a save verified again (it changed since) moves to the end."""
        self.verified = ([p for p in self.verified if p != str(path)] + [str(path)])[-VERIFIED_KEEP:]
        self._signatures[str(path)] = before
        if len(self._signatures) > VERIFIED_KEEP:   # as many as verified keeps, no more
            self._signatures = {p: self._signatures[p] for p in self.verified if p in self._signatures}

    def _record_export(self, ck: Checkpoint, v: CheckpointVerdict, rec: dict, attempt: int | None) -> None:
        """A merged export's verdict: a ``checkpoint`` event with ``export: true``, and a warning (never the
        critical ``checkpoint_bad``) when it is not whole. No sidecar is written into it."""
        self.run.event("checkpoint", path=str(ck.path), step=ck.step, verdict=rec.get("verdict"), ok=v.ok,
                       reason=rec.get("reason"), suspect=False, export=True, **v.counts(), recipe_hash=self.hash,
                       attempt=attempt, **rundir.moment_stamp())
        if not v.ok:
            self.run.event("alert", attempt=attempt, level="warning", rule="export_bad", step=ck.step,
                           message=f"export {ck.path.name} (merged weights, no resume point) is {rec.get('verdict')}: "
                                   f"{rec.get('reason')}", values={"path": str(ck.path), "verdict": rec.get("verdict")})

    def _count(self, path: str, ok: bool) -> None:
        """A verdict for the bad-save counts. A save reported again (its files changed after a
        first verdict) replaces its earlier verdict instead of counting twice."""
        again = path in self.bad_in_a_row
        if ok:
            if again:
                self.bad_total = max(0, self.bad_total - 1)
                self.bad_in_a_row.remove(path)
            if not again or not self.bad_in_a_row:
                self.bad_in_a_row = []
            return
        if not again:
            self.bad_total += 1
            self.bad_in_a_row.append(path)

    @property
    def bad_saves(self) -> dict:
        """For state.json: ``{total, in_a_row: [paths]}``."""
        return {"total": self.bad_total, "in_a_row": list(self.bad_in_a_row)}

    def final_check(self) -> SaveCheck:
        """Does the newest save hold the run's result? Asked when the training ends with exit 0.
        Without a checkpoint directory (or with ``checkpoints.verify: false``) nothing is
        judged. Merged exports are not the training's own saves and are skipped."""
        if not self.watcher or self.root is None:
            return SaveCheck(True)
        found = find_checkpoints(self.root, rewrites=self.order.rewrites)
        saves = [c for c in found if not c.export]
        if not saves:
            # transformers saves on the world's process zero (Trainer._save_checkpoint, should_save),
            # Megatron's rank 0: node 1's own output holds at most its RNG state (no save, discover)
            return SaveCheck(not self.writes_saves, "" if not self.writes_saves else
                             f"no checkpoint was saved under {self.root}")
        newest = saves[0]
        good = self.last_good()
        verdict = known_verdict(newest, trainer=self.order.trainer, rewrites=self.order.rewrites)[0]
        if verdict == "ok":
            return SaveCheck(True, last_good=good)
        return SaveCheck(False, f"the newest checkpoint {newest.path.name} is {verdict}; {describe_good(good)}", good)

    def stop_saves(self, since: float | None) -> list[StopSave]:
        """The saves written since ``since`` (the attempt's start, wall clock) while the Trainer was asked
        to stop (``discover.stop_save``), by step; merged exports aside. When none of them holds an
        EarlyStoppingCallback stop, the newest save on disk with that callback's state and the evaluations its
        trainer logged after it (``discover.logged_evals``) may show it: the stop replayed
        (``ending.early_stop_replayed``; the stopping step's save deleted by ``--save_total_limit 1``, or never made)."""
        if not self.watcher or self.root is None or since is None or not self.root.exists():
            return []
        from moeconsole.runner.checkpoints.discover import early_stop_state, logged_evals, stop_save, written_at
        from moeconsole.runner.core.ending import early_stop_replayed
        found = [c for c in find_checkpoints(self.root, rewrites=self.order.rewrites) if not c.export]
        saves = [s for s in (stop_save(c.path) for c in found if written_at(c.path) >= since) if s is not None]
        if not any(s.early_stopping for s in saves):
            kept = next(((c.path, k) for c in found for k in [early_stop_state(c.path)] if k is not None), None)
            replayed = early_stop_replayed(kept[1], logged_evals(kept[0])) if kept is not None else None
            saves += [replayed] if replayed is not None else []
        return sorted(saves, key=lambda s: s.step)

    def last_good(self, *, allow_drift: bool = False, suspect_too: bool = False) -> dict | None:
        """The resume point as {path, step}: the newest checkpoint verified ok by the run's order
        (``order.resume_point``), under this recipe unless drift is allowed."""
        return resume_point(self.root, self.order, recipe_hash=self.hash, allow_drift=allow_drift,
                            suspect_too=suspect_too)

    def streak_broken_by(self, good: dict | None) -> bool:
        """A save verified ok that is newer than the newest bad one in a row: the saves recovered
        before the watcher settled it (a busy machine, or several saves in one sweep)."""
        if not (good and self.bad_in_a_row) or good.get("step") is None:
            return False
        bad_step = step_of(Path(self.bad_in_a_row[-1]))
        return bad_step is not None and int(good["step"]) > bad_step

    def _stamped_by_other_recipe(self, path: Path) -> bool:
        side = read_sidecar(path)
        return side is not None and side.get("recipe_hash") not in (None, self.hash) and sidecar_current(path, side)

    def on_disk(self) -> tuple[int, int]:
        """(bytes of the largest, files and directories of the one with the most, itself included)
        of the checkpoints this run verified that are still on disk, in one walk of each (a new
        runner has not seen the saves itself): the room and the inodes a save needs after a
        disk_full crash (``diskroom.room_needed``, ``diskroom.files_needed``)."""
        largest = most = 0
        for path in self.verified:
            size = files = 0
            try:
                for f in Path(path).rglob("*"):
                    files += 1
                    if f.is_file():
                        size += f.stat().st_size
            except OSError:
                continue
            largest, most = max(largest, size), max(most, files + 1)
        return largest, most

    def _disk_room(self, ck: Checkpoint, rec: dict, attempt: int | None) -> None:
        """After a good save: will the next ones fit (diskroom.py)? An alert when the level changes."""
        import shutil
        from moeconsole.runner.checkpoints.diskroom import disk_alert, level_for
        size = sum(int(f.get("size") or 0) for f in rec.get("files") or [])
        self.largest_save = max(self.largest_save, size)
        try:
            free = shutil.disk_usage(ck.path).free
        except OSError:
            return
        level = level_for(free, size)
        if level != self._disk_level:
            self._disk_level = level
            alert = disk_alert(free, size, str(ck.path.parent), ck.step, ck.path.name)
            if alert:
                self.run.event("alert", attempt=attempt, **alert)

    def _stamp(self, ck: Checkpoint, rec: dict, suspect: bool, watched: dict[str, int] | None = None) -> None:
        try:
            write_sidecar(ck.path, run_id=self.run.run_id, recipe_hash=self.hash, step=ck.step,
                          verdict=str(rec.get("verdict")), suspect=suspect, watched=watched)
        except OSError as exc:
            self.diag(f"cannot write sidecar in {ck.path}: {exc}")

    def verify_latest(self) -> dict:
        """The user's `v`: verify the newest checkpoint now, whatever the watcher thinks."""
        if self.root is None:   # `run -- COMMAND` without checkpoints.dir: no directory will ever come (newcomer round 13)
            return {"ok": False, "message": "this run watches no checkpoint directory (checkpoints.dir is not set): "
                                            "`moeconsole verify PATH` checks a save your command wrote"}
        if not self.root.exists():
            return {"ok": False, "message": f"no checkpoint directory yet: {self.root} is not there"}
        found = find_checkpoints(self.root, rewrites=self.order.rewrites)
        cks = [c for c in found if not c.export] or found   # the newest save; an export only when there is no save
        if not cks:
            return {"ok": False, "message": f"no checkpoints under {self.root}"}
        verdict = verify_checkpoint(cks[0].path, expected_recipe_hash=self.hash, trainer=self.order.trainer,
                                    rewrites=self.order.rewrites)
        v, counts = verdict.to_dict(), verdict.counts()
        self.run.event("checkpoint", path=str(cks[0].path), step=cks[0].step, verdict=v.get("verdict"),
                       ok=v.get("ok"), reason=v.get("reason"), suspect=v.get("suspect", False), **counts,
                       **({"export": True} if cks[0].export else {}),
                       requested_by="user", **rundir.moment_stamp())
        counted = f" ({counts['tensors']} tensors)" if counts["tensors"] is not None else ""
        return {"ok": True, "message": f"{v.get('verdict')}: {cks[0].path.name}{counted} "
                                       f"{v.get('reason') or ''}".strip(), "verdict": v}

    def resume_point(self, *, allow_drift: bool) -> str | None:
        """The newest checkpoint that verified ok under this recipe (any recipe if drift is allowed)."""
        good = self.last_good(allow_drift=allow_drift)
        return str(good["path"]) if good else None

    def drifted(self) -> tuple[Path, str] | None:
        """The newest checkpoint, if a sidecar says it was saved under another recipe hash."""
        if not (self.root and self.root.exists()):
            return None
        for ck in find_checkpoints(self.root, rewrites=self.order.rewrites):
            if ck.export:
                continue
            other = (read_sidecar(ck.path) or {}).get("recipe_hash")
            return (ck.path, other) if other and other != self.hash else None
        return None
