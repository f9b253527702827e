"""The run index: one SQLite file in the base directory for the run browser and ``runs ls``.

It is a cache. The run directories are the truth, and ``rebuild`` recreates the index from them.
Writers (the runner) upsert one row at status changes; SQLite's WAL mode and a busy timeout
let several runners and a UI share it.
"""
from __future__ import annotations

import math
import sqlite3
import time
from pathlib import Path

from runner import jsonio, rundir

INDEX_NAME = "index.sqlite"
COLUMNS = ("id", "name", "recipe_hash", "status", "started_at", "ended_at", "attempts", "restarts",
           "last_step", "max_steps", "last_loss", "min_loss", "path", "updated_at")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    name TEXT, recipe_hash TEXT, status TEXT,
    started_at REAL, ended_at REAL, attempts INTEGER, restarts INTEGER,
    last_step INTEGER, max_steps INTEGER, last_loss REAL, min_loss REAL,
    path TEXT, updated_at REAL
);
CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at);
"""


def connect(base: Path) -> sqlite3.Connection:
    base.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(base / INDEX_NAME, timeout=10.0)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(_SCHEMA)
    return conn


def _finite(x) -> float | None:
    v = jsonio.as_float(x)
    return v if v is not None and math.isfinite(v) else None


def upsert(conn: sqlite3.Connection, row: dict) -> None:
    row = {k: row.get(k) for k in COLUMNS}
    row["updated_at"] = time.time()
    cols = ", ".join(COLUMNS)
    marks = ", ".join(f":{c}" for c in COLUMNS)
    updates = ", ".join(f"{c}=excluded.{c}" for c in COLUMNS if c != "id")
    with conn:
        conn.execute(f"INSERT INTO runs ({cols}) VALUES ({marks}) ON CONFLICT(id) DO UPDATE SET {updates}", row)


def row_from_run_dir(run: rundir.RunDir) -> dict:
    """Summarise a run directory (reads its metrics once: used by rebuild and for foreign dirs)."""
    state = run.read_state()
    last_step = last_loss = min_loss = max_steps = None
    for _, rec in jsonio.iter_jsonl(run.metrics):
        if isinstance(rec.get("step"), int):
            last_step = rec["step"]
            max_steps = rec.get("max_steps") or max_steps
            loss = _finite(rec.get("loss"))
            if loss is not None:
                last_loss = loss
                min_loss = loss if min_loss is None else min(min_loss, loss)
    return {
        "id": run.run_id, "name": state.get("name") or run.run_id, "recipe_hash": state.get("recipe_hash"),
        "status": state.get("status") or "unknown", "started_at": state.get("started_at"),
        "ended_at": state.get("ended_at"), "attempts": state.get("attempt"), "restarts": state.get("restarts"),
        "last_step": state.get("step", last_step) if state.get("step") is not None else last_step,
        "max_steps": state.get("max_steps") or max_steps, "last_loss": last_loss, "min_loss": min_loss,
        "path": str(run.path),
    }


def row_from_state(run: rundir.RunDir, state: dict, summary: dict) -> dict:
    """The row a live runner upserts: no file scan, it already knows the numbers."""
    return {
        "id": run.run_id, "name": state.get("name") or run.run_id, "recipe_hash": state.get("recipe_hash"),
        "status": state.get("status"), "started_at": state.get("started_at"), "ended_at": state.get("ended_at"),
        "attempts": state.get("attempt"), "restarts": state.get("restarts"), "last_step": state.get("step"),
        "max_steps": state.get("max_steps"), "last_loss": summary.get("last_loss"),
        "min_loss": summary.get("min_loss"), "path": str(run.path),
    }


def rebuild(base: Path) -> int:
    """Recreate the index from the run directories; returns how many runs were indexed."""
    conn = connect(base)
    try:
        with conn:
            conn.execute("DELETE FROM runs")
        runs = rundir.list_run_dirs(base)
        for run in runs:
            upsert(conn, row_from_run_dir(run))
        return len(runs)
    finally:
        conn.close()


def list_runs(base: Path, *, status: str | None = None, name_like: str | None = None,
              order: str = "started_at", descending: bool = True) -> list[dict]:
    """Rows of the index; rebuilt first if the index is missing but run directories exist."""
    if order not in COLUMNS:
        order = "started_at"
    if not (base / INDEX_NAME).exists() and rundir.list_run_dirs(base):
        rebuild(base)
    conn = connect(base)
    try:
        where, args = [], []
        if status:
            where.append("status = ?")
            args.append(status)
        if name_like:
            where.append("(name LIKE ? OR id LIKE ?)")
            args += [f"%{name_like}%", f"%{name_like}%"]
        sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        sql += f" ORDER BY {order} {'DESC' if descending else 'ASC'}, id DESC"
        return [dict(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()
