"""Open a log or directory not made by moeconsole (a swift output dir, a Megatron log, a
logging.jsonl) the same way as a run: its records are ingested into a scratch run directory
(metrics.jsonl, events.jsonl with checkpoint verdicts, train.log linked to the original log),
which the ordinary run screen then shows. The original files are only read."""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from runner.core.numbers import as_float
from runner.rundir import jsonio, rundir
from runner.core.errors import InputError

IMPORTED = "imported"


def open_path(path: Path, scratch: Path) -> rundir.RunDir:
    """A RunDir for ``path``: the path itself if it is a moeconsole run dir, else a scratch copy
    of its ingested records. Raises InputError when nothing can be read."""
    path = path.expanduser()
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir() and rundir.is_run_dir(path):
        return rundir.RunDir(path.resolve())
    try:
        from runner.ingest.files import records_from_path, resolve_log
    except ImportError:
        raise InputError("reading logs not made by moeconsole needs runner.ingest (not installed)") from None
    log, _kind = resolve_log(path)
    records = [r for r in records_from_path(path)[0] if isinstance(r, dict)]
    steps = [r for r in records if isinstance(r.get("step"), int)]
    if not steps:
        raise InputError(f"{path}: no training steps found")
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
    run = rundir.RunDir(scratch / f"imported-{path.name}-{key}")
    run.path.mkdir(parents=True, exist_ok=True)
    (run.path / "crashes").mkdir(exist_ok=True)
    for f in (run.metrics, run.events):
        f.unlink(missing_ok=True)
    _write_metrics(run, steps)
    root = path if path.is_dir() else path.parent
    if path.is_dir() or any(n.startswith(("checkpoint-", "iter_")) for n in os.listdir(root)):
        _record_checkpoints(run, root, steps)
    if run.log.is_symlink() or run.log.exists():
        run.log.unlink()
    os.symlink(log.resolve(), run.log)
    times = [t for t in (as_float(r.get("t")) for r in steps) if t]
    last = steps[-1]
    run.write_state({
        "run_id": run.run_id, "name": f"{path.name} (imported)", "status": IMPORTED,
        "step": last["step"], "max_steps": last.get("max_steps"),
        "started_at": min(times) if times else None, "ended_at": max(times) if times else None,
        "source_path": str(path.resolve()), "imported_at": time.time(),
    })
    return run


def _write_metrics(run: rundir.RunDir, steps: list[dict], chunk: int = 20_000) -> None:
    """metrics.jsonl in writes of ``chunk`` records, and the series.json a runner would keep,
    so the run screen opens the import without reading it again."""
    from runner.rundir import seriesfile
    book = seriesfile.SeriesBook()
    for i in range(0, len(steps), chunk):
        recs = [{"v": jsonio.SCHEMA_VERSION, **rec} for rec in steps[i:i + chunk]]
        jsonio.append_bytes(run.metrics, "".join(jsonio.dumps(r) + "\n" for r in recs).encode(), line=True)
        for r in recs:
            book.feed(r)
    book.offset = run.metrics.stat().st_size
    seriesfile.save(run, book)


def _record_checkpoints(run: rundir.RunDir, root: Path, steps: list[dict]) -> None:
    """Verify (headers only) the checkpoints found beside the log and record the verdicts."""
    try:
        from runner.checkpoints.discover import find_checkpoints
        from runner.checkpoints.suspect import points_from_records
        from runner.checkpoints.verify import verify_found
    except ImportError:
        return
    try:
        found = find_checkpoints(root)
    except OSError:
        return
    points = points_from_records(steps)
    for ckpt in found[:50]:
        try:
            verdict = verify_found(ckpt, grad_norms=points)
        except Exception:  # one unreadable checkpoint must not hide the others
            continue
        run.event("checkpoint", **verdict.to_dict())
