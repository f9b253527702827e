"""Superseded attempt directories: what a run with restarts leaves behind, and may remove.

ms-swift writes every invocation into a new ``<output_dir>/v<N>-<time>/`` (``add_version_to_work_dir``)
and rotates only inside it (``_rotate_checkpoints``), so each restart leaves its predecessor's saves
on disk. A ``v<N>-<time>/`` is superseded once a later one holds a checkpoint that verified ok at
a step beyond every save of ``v<N>`` (the resume from a newer save succeeded and went further),
and it never holds a save the next attempt may resume from (the run's resume point, the save
``restart --from`` chose). Nothing is
removed unless asked (``moeconsole verify ... --prune-superseded --yes``).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from moeconsole.runner.checkpoints.discover import attempt_dir, attempt_number


def superseded(verdicts: Iterable[tuple[Path, int | None, bool]], keep: Iterable[Path]) -> list[Path]:
    """``verdicts``: (checkpoint path, step, verified ok) of every checkpoint under one output dir.
    The ``v<N>-<time>/`` directories a later directory's verified save went beyond, oldest first,
    never one holding a save in ``keep`` (the saves a restart may resume from)."""
    by_dir: dict[Path, list[tuple[int | None, bool]]] = {}
    for path, step, ok in verdicts:
        d = attempt_dir(path)
        if d is not None:
            by_dir.setdefault(d, []).append((step, ok))
    order = sorted(by_dir, key=attempt_number)
    kept = {attempt_dir(p) for p in keep} - {None}
    out = []
    for i, d in enumerate(order):
        if d in kept:
            continue
        steps = [s for s, _ in by_dir[d] if s is not None]
        top = max(steps) if steps else -1
        later_ok = [s for later in order[i + 1:] for s, ok in by_dir[later] if ok and s is not None]
        if later_ok and max(later_ok) > top:
            out.append(d)
    return out
