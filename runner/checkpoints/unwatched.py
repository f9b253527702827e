"""Saves a run makes where nothing watches them.

A run with no ``checkpoints.dir`` (`moeconsole run -- python train.py`, where it is only a `--set`
away) verifies no save and restarts from step 0, and said so once, in a lint warning printed
before the screen opened: the run screen, `--json` and `runs show` never mentioned checkpoints
again, while the script wrote `out/checkpoint-20/`, `-40/`, ... that a crash would then not resume
from (newcomer round 10). The runner looks for saves written under the command's directory since
it started, by the one rule that finds saves (``discover.find_checkpoints``, a bounded walk), and
says once what it found and the `--set` that watches them.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from moeconsole.runner.checkpoints.discover import Checkpoint, attempt_dir, find_checkpoints, written_at

LOOK_S = 10.0         # how often a run without checkpoints.dir looks, until it finds a save
LOOK_SHARE = 0.01     # at most this share of the runner's time spent looking (a slow disk looks less often)
LOOK_MAX_DIRS = 2000  # a walk's bound: a command run from a home directory costs no more than this
RULE = "saves_unwatched"


def saves_made(workdir: Path, since: float, before: frozenset[Path] = frozenset()) -> list[Checkpoint]:
    """Saves under ``workdir`` (the command's directory) this run made: written at or after ``since``
    (wall clock, as a file's modification time is), or not there at the first look (``before``), so a
    wall clock stepped back after the start hides none; never an older run's left there. Newest first."""
    return _made(find_checkpoints(workdir, max_dirs=LOOK_MAX_DIRS), since, before)


def _made(saves: list[Checkpoint], since: float, before: frozenset[Path]) -> list[Checkpoint]:
    return [c for c in saves if c.path not in before or written_at(c.path) >= since]


class SavesLook:
    """A run's looks for saves where nothing watches them: the first look notes what is already
    there; each later one returns the saves made since (``saves_made``); once the run said them
    (``done``), no more."""

    def __init__(self, since: float, every_s: float = LOOK_S) -> None:
        self.since = since
        self.every_s = every_s
        self.before: frozenset[Path] | None = None
        self.theirs: set[Path] = set()   # saves found that another run watches (``ignore``)
        self.done = False
        self.next_at = 0.0   # time.monotonic() of the next look

    def due(self, now: float) -> bool:
        """Whether to look now (``now``: time.monotonic()): every ``every_s``, or less often where a
        look took long (a network home directory), so looking costs at most LOOK_SHARE of the time."""
        return not self.done and now >= self.next_at

    def look(self, workdir: Path) -> list[Checkpoint]:
        if self.done:
            return []
        began = time.monotonic()
        try:
            return self._look(workdir)
        finally:
            took = time.monotonic() - began
            self.next_at = time.monotonic() + max(self.every_s, took / LOOK_SHARE)

    def _look(self, workdir: Path) -> list[Checkpoint]:
        saves = find_checkpoints(workdir, max_dirs=LOOK_MAX_DIRS)
        if self.before is None:
            self.before = frozenset(c.path for c in saves)
        return [c for c in _made(saves, self.since, self.before) if c.path not in self.theirs]

    def ignore(self, saves: list[Checkpoint]) -> None:
        """Saves found that are not this run's (another live run's checkpoints.dir holds them): not again."""
        self.theirs.update(c.path for c in saves)


def others_saves(found: list[Checkpoint], roots: list[Path]) -> list[Checkpoint]:
    """The saves of ``found`` under another run's checkpoints.dir (``roots``): a run beside this one in the
    same directory (an ablation started from the same checkout) watches its own, and they are not this run's."""
    resolved = [r.resolve() for r in roots]
    return [c for c in found if any(c.path.resolve().is_relative_to(r) for r in resolved)]


def unwatched_alert(found: list[Checkpoint], workdir: Path) -> tuple[str, str, str]:
    """(headline, message, the directory to watch) for saves found where nothing watches them."""
    newest = found[0].path
    # ms-swift writes each invocation into a new <output_dir>/v<N>-<time>/: the next run's saves go
    # into another one, so the directory to watch is output_dir, which holds them all
    invocation = attempt_dir(newest)
    root = invocation.parent if invocation is not None else newest.parent
    try:
        where = os.path.relpath(root, workdir)
    except ValueError:
        where = str(root)
    where = str(root) if where.startswith("..") else where
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    headline = f"saves in {where}/ are not watched (checkpoints.dir is not set)"
    message = (f"the training saves into {where}/ ({newest.name}{more}) but checkpoints.dir is not set: no save "
               f"is verified and a restart starts from step 0; start the run with --set checkpoints.dir={where} "
               f"(and --set resume.arg=FLAG, the flag your script resumes from)")
    return headline, message, where
