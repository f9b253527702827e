"""``moeconsole verify PATH|RUN [--full] [--compare OTHER] [--json]``

PATH may be a checkpoint directory, a single .safetensors file, or a directory holding several
checkpoints (each is verified, newest first). Anything else is taken as a run: its checkpoints
are those under ``state.json``'s ``checkpoint_root`` (else ``<run>/output``), checked against
the run's current recipe hash (drift) and its grad-norm history (suspect saves).

Exit 0: every checkpoint ok (for a run: its newest resume point ok, as a resume judges it;
older bad saves are a warning line), and with --compare identical; 1: bad, none found, or
different; 2: unreadable input; 3: nothing bad, but a save is still being written (in progress,
by the rule the runner's live watcher uses: ``discover.save_underway``). ``--wait`` waits for
such saves to settle first. A run that has ended (its status no longer live) writes nothing more:
its unfinished saves are verified as they are, from the disk with today's checks (as a restart's check
would), not the verdict its runner recorded then (review R53).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from moeconsole.runner.rundir import jsonio, paths, rundir
from moeconsole.runner.checkpoints import suspect
from moeconsole.runner.checkpoints.compare import Comparison, compare_checkpoints
from moeconsole.runner.checkpoints.discover import (MERGED_SUFFIX, Checkpoint, find_checkpoints, is_export,
                                                   save_underway)
from moeconsole.runner.checkpoints.order import SaveOrder, save_order
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.recipes.model import RunRecipe
from moeconsole.runner.recipes.runargs import workdir
from moeconsole.runner.checkpoints.watch import signature, vanished
from moeconsole.runner.core.units import NA, duration, human_bytes, human_count
from moeconsole.runner.checkpoints.verify import CheckpointVerdict, verify_found
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.shellwords import quote

_HELPER_FILES = (".safetensors.index.json", "adapter_config.json", "config.json")


@dataclass
class Target:
    """What the user named, resolved to checkpoints and run context."""
    label: str
    root: Path
    checkpoints: list[Checkpoint]
    expected_recipe_hash: str | None = None
    grad_norms: list[tuple[int, float]] = field(default_factory=list)
    run_id: str | None = None
    order: SaveOrder = field(default_factory=SaveOrder)   # how the run's saves are judged, which is newest
    no_dir: bool = False     # a run whose recipe names no checkpoints.dir (its saves are wherever its command puts them)
    logged_saves: Path | None = None   # ... where its log says it saved (``logged_save_dir``)
    run: rundir.RunDir | None = None   # the run named (None: a path)
    ended: bool = False      # the run named has ended: none of its saves is still being written


def _path_target(p: Path) -> Target:
    if p.is_file():
        if p.name.endswith(".safetensors"):
            return Target(str(p), p, [Checkpoint(p, None, "file")])
        if p.name.endswith(_HELPER_FILES):
            return _path_target(p.parent)
        raise InputError(f"{p}: not a .safetensors file or a checkpoint directory")
    if not os.access(p, os.R_OK | os.X_OK):
        raise InputError(f"{p}: permission denied")
    return Target(str(p), p, find_checkpoints(p))


def _run_target(run: rundir.RunDir) -> Target:
    state = run.read_state()
    named_root = state.get("checkpoint_root")
    root = Path(named_root or run.path / "output")
    points = suspect.points_from_records(rec for _, rec in jsonio.iter_jsonl(run.metrics))
    expected = state.get("recipe_hash") if isinstance(state.get("recipe_hash"), str) else None
    try:
        recipe: RunRecipe | None = recipes.saved_recipe(run.path)
    except InputError:
        recipe = None
    # what saves the run's checkpoints and in what order: the rule its runner uses (a bare path cannot say)
    order = save_order(run, recipe, Path(named_root) if named_root else None, state)
    found = find_checkpoints(root, rewrites=order.rewrites)
    # a recipe that names no checkpoints.dir: its command saves wherever it likes (its log may say where)
    no_dir = recipe is not None and not recipe.checkpoints.dir and not named_root
    logged = logged_save_dir(run, recipe) if recipe is not None and no_dir and not found else None
    return Target(f"run {run.run_id}", root, found, expected, points, run.run_id, order, no_dir, logged, run,
                  ended=state.get("status") in rundir.TERMINAL)


def logged_save_dir(run: rundir.RunDir, recipe: RunRecipe) -> Path | None:
    """The directory of the newest save the run's log names ("Saving model checkpoint to
    out/checkpoint-40": the parser's ``checkpoint_saved`` mark), relative to the directory the
    attempt that wrote it ran its command in (``runargs.workdir``, the launcher's rule); None when
    the log names none that exists here."""
    from moeconsole.runner.ingest import marks_from_path
    try:
        marks = marks_from_path(run.log)
    except InputError:
        return None
    attempt, saved = 1, None
    for m in marks:
        if m.get("kind") == "attempt_marker":
            attempt = m["attempt"]
        elif m.get("kind") == "checkpoint_saved" and m.get("path"):
            saved = (m["path"], attempt)
    if saved is None:
        return None
    where = (Path(workdir(run, recipe, saved[1])) / saved[0]).parent
    return where if where.is_dir() else None


def resolve_target(ref: str | None, runs_dir: str | None) -> Target:
    """What ``verify`` reads: a checkpoint path, a directory of them, or a run; ``None`` the
    newest live run, else the newest (as ``attach`` picks it: it had asked for PATH|RUN after a
    newcomer's first run), named on stderr so that --json stays one document."""
    if ref is None:
        run = rundir.resolve(paths.runs_base(runs_dir), None)
        sys.stderr.write(f"verifying the newest run, {run.run_id} (`moeconsole verify RUN|PATH` names another)\n")
        return _run_target(run)
    p = Path(ref).expanduser()
    if p.exists() and not (p.is_dir() and rundir.is_run_dir(p)):
        return _path_target(p)
    base = paths.runs_base(runs_dir)
    try:
        return _run_target(rundir.resolve(base, ref))
    except InputError as exc:
        if p.exists():
            raise
        raise InputError(f"{ref}: no such checkpoint path, and {exc}") from None


def _pairs(a: list[Checkpoint], b: list[Checkpoint]) -> list[tuple[Checkpoint, Checkpoint]]:
    """Two single checkpoints pair up; otherwise checkpoints pair by step (and merged-ness)."""
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    index: dict[tuple[int | None, bool], Checkpoint] = {(c.step, c.layout == "merged"): c for c in b if c.step is not None}
    return [(c, index[(c.step, c.layout == "merged")]) for c in a if (c.step, c.layout == "merged") in index]


IN_PROGRESS = "in_progress"
EXIT_IN_PROGRESS = 3


# A save whose files have all been quiet this long is said to have maybe died: the merged save of a
# large model pauses for minutes between shards, never for this long.
QUIET_SHOWN_S = 600.0


def quiet_for(ckpt: Checkpoint) -> float | None:
    """Seconds since anything in the save (and its ``-merged`` sibling) was last written, by the
    files' modification times (wall clock, as the writer stamped them); None when nothing reads."""
    newest = None
    for root in (ckpt.path, ckpt.path.with_name(ckpt.path.name + MERGED_SUFFIX)):
        try:
            for p in [root, *root.rglob("*")]:
                m = p.stat().st_mtime
                newest = m if newest is None or m > newest else newest
        except OSError:
            continue
    return None if newest is None else max(0.0, time.time() - newest)


def in_progress_verdict(ckpt: Checkpoint, why: str) -> CheckpointVerdict:
    """The verdict of a save still being written: not bad, not ok yet. A save that looks unfinished
    but has not changed for ``QUIET_SHOWN_S`` says so: its writer may have died mid-save (a killed
    run); the runner's watcher then verifies it as it is, after ``stale_s``."""
    reason = f"still being written: {why}"
    quiet = quiet_for(ckpt)
    if quiet is not None and quiet >= QUIET_SHOWN_S:
        reason += f"; nothing written for {duration(quiet)}: its writer may have died mid-save"
    return CheckpointVerdict(path=ckpt.path, ok=False, verdict=IN_PROGRESS, reason=reason,
                             step=ckpt.step, layout=ckpt.layout)


def wait_settled(target: Target, *, timeout: float, settle: float, poll: float = 0.2) -> Target:
    """Wait until no checkpoint under the target is still being written (``save_underway``) and
    every checkpoint's files (names, sizes and times, ``watch.signature``) have not changed for ``settle``
    seconds, or ``timeout`` passed; the target's checkpoints re-discovered then."""
    deadline = time.monotonic() + timeout
    last: dict[Path, tuple] = {}
    quiet_since = time.monotonic()
    told = False
    while True:
        ckpts = find_checkpoints(target.root, rewrites=target.order.rewrites)
        sigs = {c.path: signature(c.path) for c in ckpts}
        now = time.monotonic()
        if sigs != last:
            last, quiet_since = sigs, now
        underway = [c for c in ckpts if not target.ended and save_underway(c, **target.order.flags()) is not None]
        if (not underway and now - quiet_since >= settle) or now >= deadline:
            target.checkpoints = ckpts
            return target
        if underway and not told:
            names = ", ".join(c.path.name for c in underway[:3]) + (" ..." if len(underway) > 3 else "")
            sys.stderr.write(f"waiting up to {timeout:g} s for {len(underway)} save(s) still being written: {names}\n")
            sys.stderr.flush()
            told = True
        time.sleep(poll)


def _judged_by(target: Target) -> dict[str, Any]:
    """What a target's saves are verified against: its run's recipe hash, grad norms and order."""
    return {"expected_recipe_hash": target.expected_recipe_hash, "grad_norms": target.grad_norms or None,
            **target.order.flags()}


def _verify_or_wait(ckpt: Checkpoint, target: Target, *, full: bool) -> CheckpointVerdict:
    why = None if target.ended else save_underway(ckpt, **target.order.flags())
    return in_progress_verdict(ckpt, why) if why is not None else verify_found(ckpt, full=full, **_judged_by(target))


# --- output -------------------------------------------------------------------------

def _counts(v: CheckpointVerdict) -> str:
    if not v.counted:    # a Megatron save whose DCP .metadata was not read: no count, not zero
        return f"{'-':>6} tensors {'-':>7} params"
    return f"{v.tensors:>6} tensors {human_count(v.params):>7} params"


def shared_notes(verdicts: list[CheckpointVerdict]) -> list[str]:
    """The notes every one of several verdicts carries (the demo's "LoRA coverage not checked"
    on each of its 16 saves): said once, after the list, not under each checkpoint."""
    if len(verdicts) < 2:
        return []
    first = [n for n in verdicts[0].notes if n]
    return [n for n in dict.fromkeys(first) if all(n in v.notes for v in verdicts[1:])]


# what a merged export is, after its verdict (``discover.is_export``)
EXPORT_WORDS = "export (merged weights, no optimizer or trainer state): no resume point"


def _verdict_lines(v: CheckpointVerdict, said: Iterable[str] = ()) -> list[str]:
    word = "ok" if v.ok else v.verdict.upper()
    export = f"  {EXPORT_WORDS}" if is_export(v.layout) else ""
    if v.verdict == IN_PROGRESS:
        return [f"{word:<15} {v.path}  {v.reason}{export}"]
    lines = [f"{word:<15} {v.path}  {_counts(v)}  {v.reason}{export}"]
    for p in v.problems[1:4] if not v.ok else ():
        lines.append(f"    also {p['verdict']}: {p['reason']}")
    if v.suspect:
        lines.append(f"    SUSPECT: {v.suspect_reason}")
    if v.drift:
        lines.append(f"    DRIFT: saved under recipe {v.recipe_hash}, the run's recipe is now different")
    if v.full:
        f = v.full
        speed = f"{f['mb_per_s']} MB/s" if f.get("mb_per_s") else NA
        lines.append(f"    {f['hash_algo']} {f['hash'] or NA}  {human_bytes(f['bytes'])} hashed at {speed}; "
                     f"{f['tensors_scanned']} tensors scanned, {f['nonfinite_tensors']} with NaN/inf, "
                     f"{f['zero_tensor_count']} all zeros")
    for note in v.notes:
        if note not in said:
            lines.append(f"    note: {note}")
    return lines


def _compare_lines(c: Comparison) -> list[str]:
    if c.identical:
        return [f"IDENTICAL       {c.a}  ==  {c.b}  ({len(c.files)} weight files, equal sha256)"]
    lines = [f"DIFFERENT       {c.a}  !=  {c.b}"]
    for name in c.only_a:
        lines.append(f"    only in the first: {name}")
    for name in c.only_b:
        lines.append(f"    only in the second: {name}")
    for m in c.mismatched[:10]:
        lines.append(f"    {m['file']}:{m['tensor']}: {m['a'] or 'absent'} vs {m['b'] or 'absent'}")
    differ = c.to_dict()["tensors_differ"]
    if differ:
        lines.append(f"    {len(c.differ)} of {c.tensors_compared} tensors differ:")
    for d in differ[:20]:
        mad = "unknown" if d["max_abs_diff"] is None else f"{d['max_abs_diff']:.6g}"
        lines.append(f"      {d['tensor']}  max abs diff {mad}  ({d['n_diff']}/{d['numel']} elements)")
    if len(differ) > 20:
        lines.append(f"      ... {len(c.differ) - 20} more")
    for note in c.notes:
        lines.append(f"    note: {note}")
    return lines


def _summary(target: Target, verdicts: list[CheckpointVerdict]) -> str:
    if not verdicts:
        if target.logged_saves is not None:
            return (f"no checkpoints found under {target.root}: the run names no checkpoints.dir, and its log "
                    f"says it saved in {target.logged_saves}: `moeconsole verify {quote(str(target.logged_saves))}`")
        if target.no_dir:
            return (f"no checkpoints found under {target.root}: the run names no checkpoints.dir; verify the "
                    "directory its command saves into: `moeconsole verify DIR`")
        return f"no checkpoints found under {target.root}"
    bad: dict[str, int] = {}
    for v in verdicts:
        if not v.ok and v.verdict != IN_PROGRESS:
            bad[v.verdict] = bad.get(v.verdict, 0) + 1
    good = [v for v in verdicts if v.ok]
    text = f"{len(verdicts)} checkpoint{'s' if len(verdicts) != 1 else ''}: {len(good)} ok"
    underway = sum(v.verdict == IN_PROGRESS for v in verdicts)
    if underway:
        text += f", {underway} in progress"
    if bad:
        text += f", {sum(bad.values())} bad (" + ", ".join(f"{n} {k}" for k, n in sorted(bad.items())) + ")"
    saves = [v for v in good if not is_export(v.layout)]   # the newest ok save: never an export
    newest = saves[0] if saves else None
    text += f"; newest ok: {newest.path}" if newest else "; none verified ok"
    exports = sum(is_export(v.layout) for v in verdicts)
    if exports:
        text += f"; {exports} export{'s' if exports != 1 else ''} (merged weights, no resume point)"
    return text


def _prune(args: argparse.Namespace, target: Target, verdicts: list[CheckpointVerdict]) -> list[dict]:
    """Earlier attempts' ``v<N>-<time>/`` a later verified save went beyond (runner/checkpoints/
    prune.py), never one holding a save the next attempt may resume from (``_kept``); removed only
    with ``--yes``."""
    import shutil
    from moeconsole.runner.checkpoints.prune import superseded
    out = []
    for d in superseded([(v.path, v.step, v.ok) for v in verdicts], _kept(target)):
        files = [p for p in d.rglob("*") if p.is_file()]
        out.append({"path": str(d), "checkpoints": sum(1 for v in verdicts if d in v.path.parents),
                    "bytes": sum(p.stat().st_size for p in files)})
        if args.yes:
            shutil.rmtree(d)
    return out


def _kept(target: Target) -> list[Path]:
    """The saves a restart may resume from, by the rules the runner uses: of a run, the resume point
    its runner wrote and the one asked of the disk with its drift allowance (``order.run_resume_point``),
    and the save ``restart --from`` chose (``resume_choice``, kept until the next attempt starts);
    of a path, ``order.resume_point`` under the recipe hash it names."""
    from moeconsole.runner.checkpoints.order import resume_point, run_resume_point
    if target.run is None:
        good = resume_point(target.root, target.order, recipe_hash=target.expected_recipe_hash)
        return [Path(str(good["path"]))] if good else []
    state = target.run.read_state()
    points = [state.get("resume_point"), run_resume_point(target.run, state, order=target.order),
              state.get("resume_choice")]
    return [Path(str(p["path"])) for p in points if isinstance(p, dict) and p.get("path")]


def exit_status(verdicts: list[CheckpointVerdict], comparisons: list[Comparison],
                judged: CheckpointVerdict | None = None) -> int:
    """0 all ok (and identical); 1 any bad, none, or different; 3 only saves still being written.
    A run is ``judged`` by its newest resume point alone (older bad saves are a warning)."""
    if judged is not None:
        if judged.verdict == IN_PROGRESS:
            return EXIT_IN_PROGRESS
        return 0 if judged.ok else 1
    if not verdicts or any(not v.ok and v.verdict != IN_PROGRESS for v in verdicts) \
            or not all(c.identical for c in comparisons):
        return 1
    return EXIT_IN_PROGRESS if any(v.verdict == IN_PROGRESS for v in verdicts) else 0


def newest_resume_point(checkpoints: list[Checkpoint], verdicts: list[CheckpointVerdict]) -> CheckpointVerdict | None:
    """The checkpoint a resume would start from if it verifies: the newest that is not a
    ``-merged`` export (the newest of all when every one is)."""
    for c, v in zip(checkpoints, verdicts):
        if not c.export:
            return v
    return verdicts[0] if verdicts else None


def _older_bad_line(judged: CheckpointVerdict, verdicts: list[CheckpointVerdict]) -> str | None:
    older = [v for v in verdicts if v is not judged and not v.ok and not is_export(v.layout)]
    if not older or not judged.ok:
        return None
    names = ", ".join(f"{Path(v.path).name} ({v.verdict})" for v in older)
    return (f"warning: {len(older)} older save{'s' if len(older) != 1 else ''} bad: {names}; "
            f"the newest, {Path(judged.path).name}, is ok and is what a resume uses")


def run(args: argparse.Namespace) -> int:
    target = resolve_target(args.target, args.runs_dir)
    if getattr(args, "wait", None) is not None:
        target = wait_settled(target, timeout=args.wait, settle=args.settle)
    comparisons: list[Comparison] = []
    deleted: list[Path] = []
    if args.compare:
        other = resolve_target(args.compare, args.runs_dir)
        pairs = _pairs(target.checkpoints, other.checkpoints)
        if not pairs:
            raise InputError(f"nothing to compare: {target.label} and {other.label} have no checkpoints "
                             "at the same step")
        checkpoints = [a for a, _ in pairs] + [b for _, b in pairs]
        comparisons = [compare_checkpoints(a.path, b.path) for a, b in pairs]
        verdicts = [verify_found(c, full=args.full, **_judged_by(target)) for c in checkpoints[:len(pairs)]]
        verdicts += [verify_found(c, full=args.full, **_judged_by(other)) for c in checkpoints[len(pairs):]]
    else:
        verdicts, kept = [], []
        for ck in target.checkpoints:
            before = signature(ck.path)
            v = _verify_or_wait(ck, target, full=args.full)
            if vanished(ck.path, before):   # a live run's trainer deleted it meanwhile (--save_total_limit)
                deleted.append(ck.path)
                continue
            verdicts.append(v)
            kept.append(ck)
        target.checkpoints = kept
    judged = newest_resume_point(target.checkpoints, verdicts) if target.run_id and not args.compare else None
    status = exit_status(verdicts, comparisons, judged)  # a run is judged as a resume would: by its newest save
    ok = status == 0
    older_bad = _older_bad_line(judged, verdicts) if judged is not None else None
    pruned = _prune(args, target, verdicts) if getattr(args, "prune_superseded", False) else None
    if args.json:
        out = {"v": 1, "target": target.label, "checkpoints": [v.to_dict() for v in verdicts], "ok": ok}
        if judged is not None:
            out["judged"] = str(judged.path)
            out["older_bad"] = [str(v.path) for v in verdicts if v is not judged and not v.ok]
        if args.compare:
            out["compare"] = [c.to_dict() for c in comparisons]
        if pruned is not None:
            out["superseded"] = pruned
        if deleted:
            out["deleted"] = [str(d) for d in deleted]
        sys.stdout.write(jsonio.dumps(out) + "\n")
    else:
        lines: list[str] = []
        common = shared_notes(verdicts)
        for v in verdicts:
            lines += _verdict_lines(v, common)
        lines += [f"note (all {len(verdicts)} checkpoints): {note}" for note in common]
        lines += [f"{'deleted':<15} {d}  deleted while it was verified (the trainer's --save_total_limit?): "
                  "no verdict" for d in deleted]
        for c in comparisons:
            lines += _compare_lines(c)
        if older_bad:
            lines.append(older_bad)
        lines.append(_summary(target, verdicts))
        if pruned is not None:
            done = "removed" if args.yes else "superseded (remove with --yes)"
            lines += [f"{done}: {d['path']} ({d['checkpoints']} checkpoint(s), {human_bytes(d['bytes'])})"
                      for d in pruned] or ["no superseded attempt directory"]
        sys.stdout.write("\n".join(lines) + "\n")
    return status
