"""Which saves of a run are whole and which is the newest: the one rule the runner's checkpoint
keeper (its watcher, the resume point, the final check), ``moeconsole verify RUN``,
``moeconsole restart``'s plan and the resume point in state.json all ask (``save_order``).

Two facts of the run decide it, both read from its recipe's command and its log:

- ``trainer``: the run saves through transformers' Trainer (``flags.run_saves_through_trainer``),
  so a ``checkpoint-N/`` without ``trainer_state.json`` is unfinished, the first one too;
- ``rewrites``: its resumed attempts count from step 1 again into one directory
  (``step_count.restarts_step_count``: ms-swift's ``--resume_only_model --ignore_data_skip`` with
  ``--add_version false``; Megatron-LM's ``--finetune`` with ``--save`` = ``--load``), so a save
  is written again under the same name, a step says nothing across attempts and the newest save
  is the one written last (``discover.sort_newest_first``, ``verify.stale_trainer_state``,
  ``discover.megatron_save_complete``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe
    from moeconsole.runner.rundir.rundir import RunDir


@dataclass(frozen=True)
class SaveOrder:
    """How a run's saves are judged and which is the newest."""
    trainer: bool = False    # the run saves through transformers' Trainer
    rewrites: bool = False   # its resumes count from step 1 again into one directory: newest = written last

    def flags(self) -> dict[str, bool]:
        """As the keyword arguments ``verify_checkpoint``, ``save_underway`` and ``known_verdict`` take."""
        return {"trainer": self.trainer, "rewrites": self.rewrites}


def resume_restarts_count(run: RunDir, recipe: RunRecipe, checkpoint_root: Path | None) -> str | None:
    """Why this run's resumed attempts count from step 1 again (``step_count.restarts_step_count``
    on the argv a resume runs), or None (they go on from the checkpoint's step; or the recipe
    never resumes)."""
    from moeconsole.runner.recipes.runargs import trainer_argv_of
    from moeconsole.runner.recipes.step_count import restarts_step_count
    if not (recipe.resume.arg or recipe.resume.args):
        return None
    sample = str((checkpoint_root or run.path) / "checkpoint-1")
    return restarts_step_count(trainer_argv_of(run, recipe, 1, sample), recipe.swift.version)


def save_order(run: RunDir, recipe: RunRecipe | None, checkpoint_root: Path | None,
               state: Mapping[str, Any]) -> SaveOrder:
    """The run's ``SaveOrder``: its recipe's command and what its log showed (``state``). A run
    without a readable recipe (``recipe`` None) is judged by its log alone."""
    from moeconsole.runner.recipes.swift.flags import run_saves_through_trainer
    if recipe is None:
        return SaveOrder(trainer=run_saves_through_trainer([], state))
    return SaveOrder(trainer=run_saves_through_trainer(list(recipe.command), state),
                     rewrites=resume_restarts_count(run, recipe, checkpoint_root) is not None)


def resume_point(root: Path | None, order: SaveOrder, *, recipe_hash: str | None,
                 allow_drift: bool = False, suspect_too: bool = False) -> dict | None:
    """The run's resume point as ``{path, step}``: the newest save that verifies ok by the run's
    order (``latest_good``), saved under ``recipe_hash`` unless drift is allowed, and not suspect
    unless no clean save verifies (``suspect_too``: the newest that verifies ok, suspect or not:
    whether the saves recovered, not where to resume); None when there is none. The runner's keeper
    writes it into state.json; a run whose runner is gone is asked the same from disk
    (``run_resume_point``)."""
    from moeconsole.runner.checkpoints.watch import latest_good
    if root is None or not root.is_dir():
        return None
    # A save made during a grad-norm excursion (suspect: a NaN's own step, a spike) holds the weights
    # the run diverged with: the newest clean one is the resume point, a suspect one only when no
    # clean save verifies (the design's "do not restart blindly" after a divergence).
    ck = None
    for allow_suspect in ((True,) if suspect_too else (False, True)):
        ck = latest_good(root, expected_recipe_hash=None if allow_drift else recipe_hash, trainer=order.trainer,
                         rewrites=order.rewrites, allow_suspect=allow_suspect)
        if ck is not None:
            break
    return {"path": str(ck.path), "step": ck.step} if ck is not None else None


def save_on_disk(path: str) -> bool:
    """Whether a save this run verified is on disk here now: its path is there and holds more than
    moeconsole's sidecar (a directory left with the sidecar alone is gone: transformers'
    ``rmtree(..., ignore_errors=True)`` raced the sidecar's write; ``discover.layout_of`` takes it for no
    save either). A directory that cannot be listed is not known to be gone: on disk."""
    from moeconsole.runner.checkpoints.discover import is_sidecar_file
    p = Path(path)
    if not os.path.lexists(p):
        return False
    try:
        if not p.is_dir():
            return True
        names = os.listdir(p)
    except OSError:
        return True
    return not names or not all(is_sidecar_file(n) for n in names)


# How a save this run verified is gone from disk (``saves_gone``), the one word per case every reader keys on.
GONE_DELETED = "deleted"          # rotated away: a newer save of the run, or its best, in the same directory is still there
GONE_REMOVED = "removed"          # removed with its directory (a v<N>-<time>/ pruned), a newer save elsewhere is there
GONE_UNREACHABLE = "unreachable"  # none newer is there: a disk not mounted, a directory moved; nobody proved a deletion


def saves_gone(saves: Sequence[tuple[str, int | None]], on_disk: Mapping[str, bool] | None = None,
               best: str | None = None) -> dict[str, str]:
    """The saves this run verified (``saves``: path and step) that are not on disk now, each with how it
    is gone (``GONE_*``); ``on_disk``: ``save_on_disk`` of each path when the caller looked already.
    A trainer's rotation never deletes the newest save: transformers 5.19.0 ``rotate_checkpoints``
    (trainer_utils.py l.342-386) removes the oldest of ``checkpoints_sorted[:-save_total_limit]``, and
    ms-swift's Megatron ``_rotate_checkpoints`` (trainers/base.py) keeps the last ``save_total_limit``. So a
    save gone while a newer save of the run in its own directory is still there was deleted by its trainer.
    Nor does it delete the best save its state names (``best``: the trainer_state.json's
    ``best_model_checkpoint``), and with ``--save_total_limit 1`` the Trainer's end deletes every save but that
    one, the newest too (trainer.py ``_finalize_training`` l.2006-2011; measured with ms-swift 4.6: best
    ``checkpoint-2``, ``checkpoint-4`` and ``-6`` verified, then gone, and they had read "a disk not mounted?"). So
    a save gone while the best save of the run in its own directory is still there was deleted by its trainer too;
    one whose directory is gone too while a newer save in a directory beside it is there was removed with it (``verify
    --prune-superseded --yes`` removes whole ``v<N>-<time>/`` directories, or a user by hand). When no newer
    save of the run is there, nothing proves a deletion: an output dir on a disk that is not mounted is an
    empty mount point (review R72), a directory moved: "unreachable", never "deleted"."""
    here = dict(on_disk) if on_disk is not None else {p: save_on_disk(p) for p, _ in saves}
    newest_in: dict[str, int] = {}     # per parent directory: the newest step still on disk there
    newest_beside: dict[str, int] = {}  # per parent's parent (an output dir of v<N>-<time>/ dirs): the same
    for p, step in saves:
        if here.get(p) and isinstance(step, int):
            parent = Path(p).parent
            newest_in[str(parent)] = max(newest_in.get(str(parent), -1), step)
            newest_beside[str(parent.parent)] = max(newest_beside.get(str(parent.parent), -1), step)
    kept_in = str(Path(best).parent) if best is not None and here.get(best, False) else None
    gone: dict[str, str] = {}
    for p, step in saves:
        if here.get(p):
            continue
        s = step if isinstance(step, int) else None
        parent = Path(p).parent
        if (s is not None and newest_in.get(str(parent), -1) > s) or str(parent) == kept_in:
            gone[p] = GONE_DELETED
        elif s is not None and newest_beside.get(str(parent.parent), -1) > s and not parent.is_dir():
            gone[p] = GONE_REMOVED
        else:
            gone[p] = GONE_UNREACHABLE
    return gone


def saves_unreachable_refusal(root: Path | str, verified: Sequence[str],
                              link: tuple[Path, str] | None = None) -> str | None:
    """Why the next attempt may not start from scratch when none of the saves this run verified under
    the checkpoints directory ``root`` (``verified``: their paths) is on disk (``save_on_disk``), or None.
    ``link``: the first link on the recipe's way to it whose target is not there (``rundir.dangling_link``),
    named too. Round 18: the output dir a link to a scratch disk that was unmounted after a crash (an NFS
    export gone): the runner found no resume point, attempt 2 started from step 0, the trainer's
    ``makedirs`` made the directory again on the disk beneath, and the run SUCCEEDED with no word of the
    verified save of step 4 on the disk that was away. Review R72: the same with ``root`` itself the mount
    point: the directory is there, empty, and the saves are on the disk that is not mounted; a trainer's
    rotation always keeps the newest save (``saves_gone``), so none of them there is no trainer's doing.
    Only when this run verified a save under ``root``: a directory not made yet, before any save, is the
    trainer's to make. Starting from scratch is the user's word: the recipe run as a new run."""
    under = [v for v in verified if Path(v).is_relative_to(Path(root))]
    if not under or any(save_on_disk(v) for v in under):
        return None
    via = f", reached through {link[0]}, a link to {link[1]}" if link is not None else ""
    where = (f"the checkpoints directory {root}{via} is not there" if not os.path.isdir(root) else
             f"the checkpoints directory {root} holds none of the saves this run verified there")
    return (f"{where} (a disk not mounted, a directory moved or removed): the saves this run verified there "
            f"(the last: {Path(under[-1]).name}) are out of reach, and the next attempt would start from scratch; "
            "put them back (mount the disk) and restart the run, or, to start from scratch, run the recipe as a "
            "new run (moeconsole run RECIPE)")


def node_resume_refusal(node_rank: str, resume: Mapping[str, Any] | None,
                        shares: list[tuple[int, Path]], stamped: Sequence[Path] = ()) -> str | None:
    """Why node ``node_rank`` (> 0) of a multi-node world may not start its next attempt from ``resume`` (its
    own resume point, ``{path, step}``, None: from scratch), or None. Its ``shares`` (``discover.node_shares``:
    the dirs where it wrote only its share of a save the world's process 0 wrote on node 0) prove the world
    saved step S; node 0's runner resumes from that save, found on its own disk. A node that has no save of S
    itself (its disk is its own: no shared storage) would start from step 0, or an older save, beside it: two
    halves of one world training different steps, which neither torchrun nor the Trainer checks (transformers
    5.19.0 trainer.py l.1539-1551: each process loads the path it is given; given a path without weights,
    ``_load_from_checkpoint`` raises "Can't find a valid checkpoint", l.3623). Measured with two runners on
    loopback: node 0 resumed at step 4 and logged steps 5-8 (its max_steps) while node 1 trained steps 1-4
    beside it, no error said (tests/runner/test_runner_node_resume.py).

    Since review R45 the line claims no more than the node knows, and advises nothing that splits the world:
    - a node's share proves its processes reached step S, not that node 0 finished its save: transformers
      writes ``rng_state_{i}.pth`` on every process with no barrier before process 0's weights (trainer.py
      l.3335-3361, and l.3470 "a process can arrive here before the process 0 has a chance to save the
      model"), so node 0 may resume from an older save; the line says so, and offers ``restart --from``;
    - no "shared storage": each node's runner stamps its saves with its own recipe hash, which covers the
      node rank (``recipes.recipe_hash``), so two runners over one output dir each take the other's saves for
      another recipe's and skip them (measured: node 0 resumed from step 2, node 1 from step 4);
    - a copy of node 0's save carries node 0's sidecar, whose recipe hash is node 0's: this runner takes it for
      another recipe's save. The line says to leave it out, and ``stamped`` (whole saves newer than ``resume``, newest first,
      stamped by another recipe: ``watch.unfit``'s "drift") are named with the file to
      remove."""
    if not shares:
        return None
    step, share = shares[0]
    have = None if resume is None else resume.get("step")
    if isinstance(have, int) and have >= step:
        return None
    own = f"its newest save is step {have} ({resume.get('path')})" if resume is not None else "it has no save"
    if stamped:
        newest = stamped[0]
        return (f"node {node_rank} cannot resume with node 0: {newest} carries another recipe's moeconsole.json "
                f"(node 0's, copied with the save?), so this node's runner does not resume from it, and {own}: "
                f"delete {newest / 'moeconsole.json'}, then restart the run")
    return (f"node {node_rank} cannot resume with node 0: this node wrote its share of the world's save of step "
            f"{step} ({share}; node 0 resumes from it if node 0 finished writing it), and {own}: copy node 0's "
            f"checkpoint-{step} there without its moeconsole.json and restart the run, or restart it --from "
            f"a save of a step both nodes hold")


def run_order(run: RunDir, state: Mapping[str, Any]) -> SaveOrder:
    """``save_order`` of a run from its run directory: its saved recipe (none readable: its log alone)."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.recipes import recipe as recipes
    root = state.get("checkpoint_root")
    try:
        saved = recipes.saved_recipe(run.path)
    except InputError:
        saved = None
    return save_order(run, saved, Path(root) if root else None, state)


def run_resume_point(run: RunDir, state: Mapping[str, Any], *, order: SaveOrder | None = None) -> dict | None:
    """``resume_point`` of a run computed from disk, by the rule its runner uses (``run_order``,
    the recipe hash and drift allowance in state.json): for a run whose runner is gone. ``order``:
    the run's ``save_order`` when the caller has it already (else read from its recipe)."""
    root = state.get("checkpoint_root")
    recipe_hash = state.get("recipe_hash")
    return resume_point(Path(root) if isinstance(root, str) and root else None, order or run_order(run, state),
                        recipe_hash=recipe_hash if isinstance(recipe_hash, str) else None,
                        allow_drift=bool(state.get("allow_drift")))


# The resume point is asked again this often where nothing else says a save changed: by the runner
# (is the save it names still on disk?), and by a reader of a run whose runner is gone (a save
# rewritten in place).
RESUME_POINT_S = 10.0


def current_resume_point(run: RunDir, state: Mapping[str, Any], *, runner_alive: bool,
                         order: SaveOrder | None = None) -> dict | None:
    """The run's resume point as one fact: what its runner wrote into state.json (``resume_point``;
    a runner that is gone: while the save it names is still there, as the runner itself asks every
    ``RESUME_POINT_S``), else (it never wrote one, or its save was deleted since) ``run_resume_point``
    from disk. The screen's last good checkpoint, ``--json``, ``runs show`` and ``restart``'s plan
    read this; reading the runner's word is a stat at most (``--json --once`` reads no recipe and
    verifies no save for it)."""
    if "resume_point" in state:
        good = state.get("resume_point")
        good = dict(good) if isinstance(good, Mapping) else None
        if runner_alive or good is None or Path(str(good.get("path"))).exists():
            return good
    return run_resume_point(run, state, order=order)


def chosen_save(root: Path | None, order: SaveOrder, which: str, *, recipe_hash: str | None,
                allow_drift: bool = False) -> dict | str:
    """The save ``moeconsole restart RUN --from WHICH`` names, as ``{path, step, suspect}``, or the
    one line that refuses it. ``which``: a checkpoint directory's name (``checkpoint-40``, ``iter_0000040``),
    its path (relative, or through a symlink: the same directory), or a step (``40``); a name or step
    that several saves have (``v<N>-<time>/`` folders of several attempts) is refused for its path. It
    must be a save of this run (under its checkpoint root) that verifies ok by the run's order, saved
    under ``recipe_hash`` unless drift is allowed: the same judgement as ``resume_point``
    (``watch.unfit``), with the save named by the user instead of the newest. A suspect save (one made
    during a grad-norm excursion) may be chosen: the user asked for it by name.
    ``console/commands/restart.py`` asks it before anything is sent, the runner again on receipt."""
    from moeconsole.runner.checkpoints.discover import find_checkpoints
    from moeconsole.runner.checkpoints.watch import unfit
    if root is None or not root.is_dir():
        return f"--from {which}: this run has no checkpoint directory to resume from"
    saves = [c for c in find_checkpoints(root, rewrites=order.rewrites) if not c.export]
    wanted = which.strip()
    found = _saves_named(saves, wanted)
    if len(found) > 1:
        return f"--from {which}: {len(found)} saves of this run are named so ({', '.join(str(c.path) for c in found)}): " \
               "give its path"
    if found:
        ck = found[0]
        why, stored_hash, suspect = unfit(ck, expected_recipe_hash=None if allow_drift else recipe_hash,
                                          allow_suspect=True, trainer=order.trainer, rewrites=order.rewrites)
        if why == "drift":
            return f"--from {which}: {ck.path.name} was saved under another recipe ({stored_hash}, this run's is " \
                   f"{recipe_hash}): the run resumes only from its own recipe's saves"
        if why is not None:
            return f"--from {which}: {ck.path.name} is {why}: only a save that verifies ok is resumed from " \
                   "(`moeconsole verify RUN` lists the saves)"
        return {"path": str(ck.path), "step": ck.step, "suspect": suspect}
    names = ", ".join(c.path.name for c in saves[:6]) + (", ..." if len(saves) > 6 else "")
    return f"--from {which}: no save of this run is named so" + (f" (its saves, newest first: {names})" if saves
                                                                 else f" (no save under {root})")


def _saves_named(saves: list, wanted: str) -> list:
    """The saves ``--from WANTED`` names: the directory a path names (relative, or through a symlink),
    else those of that directory name or that step."""
    as_path = Path(wanted).expanduser()
    found = [ck for ck in saves if _same_dir(as_path, ck.path)] if as_path.exists() else []
    if found:
        return found
    step = int(wanted) if wanted.isdigit() else None
    return [ck for ck in saves if ck.path.name == wanted or (step is not None and ck.step == step)]


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def no_resume_setting(which: str) -> str:
    """The refusal of ``restart --from`` for a run whose recipe cannot be told where to resume."""
    # the next step (newcomer round 6: a run started without one cannot take one; a new run's first attempt
    # takes the save as a flag of its command, which a restart then replaces in place: cmdline.set_flag)
    return (f"--from {which}: the recipe has no resume setting (resume.arg): an attempt cannot be told where to "
            f"resume; a new run can: `moeconsole run --set resume.arg=FLAG --set checkpoints.dir=DIR -- COMMAND "
            f"FLAG SAVE` (docs/recipes.md)")


def run_chosen_save(run: RunDir, state: Mapping[str, Any], which: str) -> dict | str:
    """``chosen_save`` of a run from its run directory, as its runner will ask it (its saved recipe's
    order, the recipe hash and drift allowance in state.json): ``restart --from`` before it sends anything."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.recipes import recipe as recipes
    root = state.get("checkpoint_root")
    path = Path(root) if isinstance(root, str) and root else None
    try:
        saved = recipes.saved_recipe(run.path)
    except InputError:
        saved = None
    if saved is None or not (saved.resume.arg or saved.resume.args):
        return no_resume_setting(which)
    recipe_hash = state.get("recipe_hash")
    return chosen_save(path, save_order(run, saved, path, state), which,
                       recipe_hash=recipe_hash if isinstance(recipe_hash, str) else None,
                       allow_drift=bool(state.get("allow_drift")))


def save_before(root: Path | None, order: SaveOrder, step: int, *, recipe_hash: str | None,
                allow_drift: bool = False) -> dict | None:
    """The newest clean save (not suspect) that verifies ok by the run's order from before ``step``
    (where a divergence began), as ``{path, step, which}`` (``which``: what ``--from`` takes for it,
    its name or, when saves of several attempts share the name, its path); None when there is none. The divergence
    hint names it in the ``restart --from`` command (``crash.divergence_hint``)."""
    from moeconsole.runner.checkpoints.watch import latest_good
    if root is None or not root.is_dir():
        return None
    from moeconsole.runner.checkpoints.discover import find_checkpoints
    ck = latest_good(root, expected_recipe_hash=None if allow_drift else recipe_hash, allow_suspect=False,
                     trainer=order.trainer, rewrites=order.rewrites, before_step=step)
    if ck is None:
        return None
    # what `--from` takes for it: its name, or its path when saves of several attempts share the name
    saves = [c for c in find_checkpoints(root, rewrites=order.rewrites) if not c.export]
    which = ck.path.name if len(_saves_named(saves, ck.path.name)) == 1 else str(ck.path)
    return {"path": str(ck.path), "step": ck.step, "which": which}
