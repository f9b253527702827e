"""What the runner does with a checkpoint the watcher reports: verify it, store the verdict
with it, record an event, and raise a critical alert at once when the save is bad.

Events appended to ``events.jsonl``:

- ``{"type": "checkpoint", ...CheckpointVerdict.to_dict()}`` for every verification;
- ``{"type": "alert", "level": "critical", "rule": "checkpoint_<verdict>", "message", "path", "step"}``
  when the verdict is not ok (an empty stub, a truncated or corrupt save...);
- ``{"type": "alert", "level": "warning", "rule": "checkpoint_suspect" | "checkpoint_drift", ...}``
  for a save made during a grad-norm excursion, or under another recipe.
"""
from __future__ import annotations

from collections.abc import Sequence

from runner.checkpoints.discover import Checkpoint
from runner.checkpoints.sidecar import write_sidecar
from runner.checkpoints.verify import CheckpointVerdict, verify_found
from runner.rundir import RunDir


def alerts_for(v: CheckpointVerdict) -> list[dict]:
    """Alert event fields (without v/t) for one verdict; empty when all is well."""
    where = {"path": str(v.path), "step": v.step}
    out = []
    if not v.ok:
        out.append({"type": "alert", "level": "critical", "rule": f"checkpoint_{v.verdict}",
                    "message": f"checkpoint {v.path.name} is bad ({v.verdict}): {v.reason}", **where})
    if v.suspect:
        out.append({"type": "alert", "level": "warning", "rule": "checkpoint_suspect",
                    "message": f"checkpoint {v.path.name} is suspect: {v.suspect_reason}", **where})
    if v.drift:
        out.append({"type": "alert", "level": "warning", "rule": "checkpoint_drift",
                    "message": f"checkpoint {v.path.name} was saved under recipe {v.recipe_hash}", **where})
    return out


def verify_and_record(run: RunDir, ckpt: Checkpoint, *, run_id: str, recipe_hash: str,
                      suspect: bool = False, suspect_reason: str | None = None,
                      grad_norms: Sequence[tuple[int, float]] | None = None) -> CheckpointVerdict:
    """Verify a newly settled checkpoint, write its sidecar, and append the events.

    ``suspect``: the runner's live grad-norm monitor was in an excursion when the save
    appeared (it knows best); otherwise ``grad_norms`` decide as in ``verify_checkpoint``."""
    v = verify_found(ckpt, grad_norms=grad_norms)
    if suspect and not v.suspect:
        v.suspect, v.suspect_reason = True, suspect_reason or "grad-norm excursion active when the save appeared"
    if ckpt.path.is_dir():
        try:
            write_sidecar(ckpt.path, run_id=run_id, recipe_hash=recipe_hash, step=v.step, verdict=v.verdict,
                          suspect=v.suspect, reason=v.reason)
            v.recipe_hash = recipe_hash
            v.drift = False
        except OSError as exc:
            v.notes.append(f"could not write the sidecar: {exc.strerror or exc}")
    run.event("checkpoint", **v.to_dict())
    for alert in alerts_for(v):
        fields = {k: val for k, val in alert.items() if k != "type"}
        run.event("alert", **fields)
    return v
