"""The run index: one SQLite file in the base directory for the run browser and ``runs ls``.

It is a cache. The run directories are the truth, and ``rebuild`` recreates the index from them.
Writers (the runner) upsert one row at status changes; SQLite's WAL mode and a busy timeout
let several runners and a UI share it. Readers refresh the rows of live runs from their
``state.json`` and the tail of ``metrics.jsonl`` (the runner writes the index only at status
changes), mark a live run whose runner is gone as stale, and give runs that share a name a
display name with the recipe values that tell them apart.
"""
from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

    from moeconsole.runner.rundir.seriesfile import SeriesBook

from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.core.units import clip
from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.telemetry import identity
from moeconsole.runner.core.errors import InputError, not_utf8, printable
from moeconsole.runner.ingest.records import step_numbered

INDEX_NAME = "index.sqlite"
COLUMNS = ("id", "name", "recipe_hash", "status", "started_at", "ended_at", "attempts", "restarts",
           "last_step", "max_steps", "last_loss", "min_loss", "path", "updated_at", "crashes",
           "last_crash_class", "bad_saves", "open_alerts", "open_critical", "problem", "recipe_values",
           "step_numbered", "started_uptime_s", "started_boot_id", "ended_uptime_s", "last_loss_text",
           "alerts_seen", "ended_short", "stopped_by")
# Added after the first release: older index files get them by ALTER TABLE.
ADDED_COLUMNS = {"crashes": "INTEGER", "last_crash_class": "TEXT", "bad_saves": "INTEGER",
                 "open_alerts": "INTEGER", "open_critical": "INTEGER", "problem": "TEXT", "recipe_values": "TEXT",
                 "step_numbered": "INTEGER", "started_uptime_s": "REAL", "started_boot_id": "TEXT", "ended_uptime_s": "REAL",
                 "last_loss_text": "TEXT", "alerts_seen": "TEXT", "ended_short": "TEXT",
                 "stopped_by": "TEXT"}
# SQLite stores a NaN REAL as NULL: a last loss that is not finite is kept as its text ("nan", "inf",
# "-inf") in ``last_loss_text`` (``_storable``) and read back as the float (``_loaded``); a row
# written before the column existed has none and reads as before.
STORED_ONLY = ("last_loss_text",)
ALERT_FACTS = ("bad_saves", "open_alerts", "open_critical")
DAMAGED = "damaged"  # the status shown for a run whose state.json cannot be used (``problem`` says why)
# The status of a run this user may not read (another user's run, 0700): not damaged, only closed
# to us (``unreadable_problem`` says whose it is). It had been listed as DAMAGED.
UNREADABLE = "unreadable"
# How much of metrics.jsonl a reader looks at to find a live run's newest step.
METRICS_TAIL_BYTES = 16 * 1024
# Recipe keys that differ between runs of one name but never tell a user which run is which
# (``_launch``: the directory a run was started from and its recipe's; first by key, it had
# filled the 80-column NAME with "…_launch.cwd=/tmp/…" and hidden the flag that differed).
# ``setup``: prose on how to install the command (a run made before the key existed has none, a
# later one ``''``: the demo's runs were named "tiny-moe-cpu ... setup=").
NOT_DISTINGUISHING = ("name", "description", "setup", "_launch")
DISPLAY_VALUES = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    name TEXT, recipe_hash TEXT, status TEXT,
    started_at REAL, ended_at REAL, attempts INTEGER, restarts INTEGER,
    last_step INTEGER, max_steps INTEGER, last_loss REAL, min_loss REAL,
    path TEXT, updated_at REAL, crashes INTEGER, last_crash_class TEXT,
    bad_saves INTEGER, open_alerts INTEGER, open_critical INTEGER, problem TEXT,
    recipe_values TEXT, step_numbered INTEGER, started_uptime_s REAL, started_boot_id TEXT, ended_uptime_s REAL,
    last_loss_text TEXT, alerts_seen TEXT, ended_short TEXT, stopped_by TEXT
);
CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at);
"""


class IndexUnavailable(InputError):
    """The index cannot be opened for writing (a read-only or foreign runs directory, a path
    that is not a directory): readers fall back to the run directories."""


def connect(base: Path) -> "sqlite3.Connection":
    """The index, created owner-only (0600 whatever the umask: it names runs, their statuses and
    losses; SQLite gives its -wal and -shm files the database file's mode), in a runs directory
    of this user's only. An index file someone else owns or may write (planted while the
    directory was open) is never read or written: it is removed and rebuilt privately from the
    run directories. ``IndexUnavailable`` (one line) when it cannot be opened for writing."""
    import sqlite3  # the index only: `runs show` and `--json` start faster without it
    path = base / INDEX_NAME
    try:
        rundir.make_private_dirs(base)
        st = os.stat(base)
        why = rundir.unsafe_dir(base, st, owned=True)
        if why:
            raise IndexUnavailable(f"run index {path}: not written: runs directory {why}")
        replaced = _claim_index(base)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            st = os.fstat(fd)
            if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != 0o600:
                os.fchmod(fd, 0o600)  # an index from an older version was 0644; the umask never decides
        finally:
            os.close(fd)
        conn = _open(path)
        if replaced:
            _insert_all_runs(conn, base)
        return conn
    except (OSError, sqlite3.Error) as exc:
        raise IndexUnavailable(f"run index {path}: {getattr(exc, 'strerror', None) or exc}") from None


INDEX_FILES = ("", "-wal", "-shm", "-journal")


def _claim_index(base: Path) -> bool:
    """Remove the index and its SQLite side files when any of them is not a regular file of this
    user's that only this user may write (another user's ``index.sqlite`` 0666 would read our
    rows; a planted ``-wal`` would inject theirs). True when something was removed."""
    path = base / INDEX_NAME
    bad = False
    for suffix in INDEX_FILES:
        try:
            st = os.lstat(f"{path}{suffix}")
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            if suffix == "" and stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022:
                continue  # ours, only readable by others (an older 0644): connect chmods it
            bad = True
    if bad:
        for suffix in INDEX_FILES:
            try:
                os.unlink(f"{path}{suffix}")
            except FileNotFoundError:
                pass
    return bad


# How long a reader or writer of the index waits for another connection's lock. Ours hold it for
# milliseconds (one row, one listing); a lock held longer is someone else's: the user's `sqlite3`
# shell in a transaction, a backup tool, a viewer. The index is a cache: what it cannot take now is
# written again later and read from the run directories meanwhile (``listing``). Round 18: 10 s,
# and a runner waited that long at each status change with the user's shell holding the lock, so
# a `kill` (10 s to answer) took it for an unfit runner and SIGKILLed it, the run left STOPPING.
INDEX_BUSY_S = 1.0


class ListingWrites:
    """A listing's writes to the index on ``conn`` (the rows it lacks, the deleted runs, the live rows
    refreshed, the recipe values kept): each batch in one transaction, and none after the first that
    another's lock refused, so a listing waits ``INDEX_BUSY_S`` once at most for a lock it cannot
    take, whatever the number of rows. Review R50: with the user's `sqlite3` shell in a transaction
    each row's write waited a second of its own, and `runs ls` of 9 runs the index lacked took 9.2 s."""

    def __init__(self, conn: "sqlite3.Connection") -> None:
        self.conn = conn
        self.ok = True   # no write of this listing was refused yet

    def __call__(self, sql: str, rows: list) -> None:
        """``sql`` for each of ``rows`` in one transaction; nothing once a write was refused."""
        import sqlite3
        if not self.ok or not rows:
            return
        try:
            with self.conn:
                self.conn.executemany(sql, rows)
        except sqlite3.Error:   # a busy or read-only index: the listing is right all the same
            self.ok = False


def _open(path: Path) -> "sqlite3.Connection":
    import sqlite3
    conn = sqlite3.connect(path, timeout=INDEX_BUSY_S)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(_SCHEMA)
    have = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    for name, kind in ADDED_COLUMNS.items():
        if name not in have:
            try:
                with conn:
                    conn.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
            except sqlite3.OperationalError:  # another process added it first
                pass
    return conn


def crash_facts(run: rundir.RunDir, state: dict) -> tuple[int, str | None]:
    """How many crashes the run had (its crash reports but the user's kills:
    ``moeconsole.runner.core.policy.is_crash_class``), and the class of the last crash."""
    from moeconsole.runner.core.policy import is_crash_class
    try:
        names = [name for name in os.listdir(run.crashes) if name.startswith("attempt-") and name.endswith(".json")]
    except OSError:
        names = []
    reports = [jsonio.read_json(run.crashes / name) for name in names]
    n = sum(1 for r in reports if not isinstance(r, dict) or is_crash_class(r.get("class")))
    # an attempt whose crash report is not on disk (it waits for an inode: ``Journal.flush``; a
    # cleaner took it) counted from state.json's history, which the runner writes without one
    reported = {name[len("attempt-"):-len(".json")] for name in names}
    history = state.get("history")
    n += sum(1 for h in (history if isinstance(history, list) else ())
             if isinstance(h, dict) and str(h.get("attempt")) not in reported and is_crash_class(h.get("crash_class")))
    last = state.get("last_crash")
    cls = last.get("class") if isinstance(last, dict) else (str(last) if last else None)
    return n, cls if is_crash_class(cls) else None


def alert_facts(run: rundir.RunDir, state: dict) -> dict[str, Any]:
    """Bad saves (the runner's count, else the checkpoint verdicts in events.jsonl) and the alert
    groups nobody acknowledged yet (``moeconsole.runner.rundir.alertgroups``, with acks.json), all and
    critical; with ``alerts_seen``, the files as they were read (``_alert_files_seen``)."""
    from moeconsole.runner.rundir.alertgroups import AlertBook, active, read_acks
    seen = _alert_files_seen(run)   # before the read: a write during it is read next time
    book = AlertBook()
    bad_paths: set[str] = set()
    for _, ev in jsonio.iter_jsonl(run.events):
        book.feed(ev)
        if ev.get("type") == "checkpoint" and ev.get("ok") is False and ev.get("requested_by") != "user":
            bad_paths.add(str(ev.get("path")))
    open_groups = active(book.groups(read_acks(run.path)))
    counted = (state.get("bad_saves") or {}).get("total") if isinstance(state.get("bad_saves"), dict) else None
    return {"bad_saves": counted if isinstance(counted, int) else len(bad_paths),
            "open_alerts": len(open_groups), "open_critical": sum(1 for g in open_groups if g.critical),
            "alerts_seen": seen}


def _alert_files_seen(run: rundir.RunDir) -> str:
    """events.jsonl and acks.json as a reader finds them (inode, size and modification time in ns
    each; ``-`` for a file missing): the alert facts of an ended run are read again when this
    differs from the row's. Compared for equality, never against a clock: the row's wall-clock
    ``updated_at`` had been compared with the files' times, and after a wall clock stepped back
    (NTP correcting a clock that ran fast) an acknowledgement was older than the row: `runs ls`
    and the browser kept its alerts open for as long as the step."""
    return _alert_files_at(str(run.path))


def _alert_files_at(path: str) -> str:
    """``_alert_files_seen`` of the run directory at ``path`` (a string: 500 of them are looked
    at by each refresh of the run browser, ``listing_seen``)."""
    from moeconsole.runner.rundir.alertgroups import ACKS_NAME
    out = []
    for name in (rundir.EVENTS_NAME, ACKS_NAME):
        try:
            st = os.stat(os.path.join(path, name))
            out.append(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            out.append("-")
    return " ".join(out)


def upsert(conn: "sqlite3.Connection", row: dict) -> None:
    with conn:
        conn.execute(_UPSERT, _stored_row(row))


def _stored_row(row: dict) -> dict:
    """``row`` as the index stores it (its columns, ``_storable``), stamped now."""
    out = _storable({k: row.get(k) for k in COLUMNS})
    out["updated_at"] = time.time()
    return out


def _storable(row: dict) -> dict:
    """A row as SQLite can store it: text that is not UTF-8 (a runs directory reached through a
    latin-1 name, a hand-written state's name) cannot be, and one such row had ended `runs ls` in a
    traceback for every run. The path is left out (``NULL``: readers take the run's directory
    under the base, ``_with_path``); other text keeps its undecodable bytes as ``\\udcNN`` escapes."""
    out = dict(row)
    for key, value in row.items():
        if isinstance(value, str) and not_utf8(value) is not None:
            out[key] = None if key == "path" else value.encode("utf-8", "backslashreplace").decode("utf-8")
    loss = row.get("last_loss")
    if isinstance(loss, float) and not math.isfinite(loss):
        # 'nan', 'inf', '-inf' (a numpy float's repr is 'np.float64(nan)', which ``_loaded`` cannot read)
        out["last_loss"], out["last_loss_text"] = None, str(float(loss))
    else:
        out["last_loss_text"] = None
    return out


def _short_text(state: dict) -> str | None:
    """state.json's ``ended_short`` ({"step", "max_steps"}: exit 0 short of the total, ``core.ending``) as the
    index keeps it (JSON text), so ``runs ls`` and the browser say ENDED SHORT as ``runs show`` does."""
    short = state.get("ended_short")
    return json.dumps(short) if isinstance(short, dict) and state.get("status") == rundir.SUCCEEDED else None


def _stopped_text(state: dict) -> str | None:
    """state.json's ``stopped_by`` (what stopped a training on purpose short of its total, ``core.ending``)
    as the index keeps it (JSON text, its line left out), so ``runs ls`` and the browser name it as
    ``runs show`` does."""
    stopped = state.get("stopped_by")
    if not isinstance(stopped, dict) or state.get("status") != rundir.SUCCEEDED:
        return None
    return json.dumps({k: stopped.get(k) for k in ("by", "step", "max_steps")})


def _loaded(row: dict) -> dict:
    """A row as read from the index: a last loss that was not finite is the float again; ``ended_short``
    and ``stopped_by`` their objects again."""
    for key in ("ended_short", "stopped_by"):
        raw = row.get(key)
        if isinstance(raw, str):
            try:
                row[key] = json.loads(raw)
            except ValueError:
                row[key] = None
    text = row.pop("last_loss_text", None)
    if row.get("last_loss") is None and isinstance(text, str):
        try:
            row["last_loss"] = float(text)
        except ValueError:
            pass
    return row


def loss_facts(book: "SeriesBook") -> dict[str, float | None]:
    """The run's ``last_loss`` and ``min_loss``, the one owner of both: the last loss logged, nan
    or inf included (the run screen's loss; a run that diverged shows nan, never the finite loss
    before it), and the lowest finite one. ``runs show``, ``runs ls`` (the index, which the runner
    writes from its own book) and the browser read them."""
    loss = book.series["loss"]
    newest = loss.recent(1)
    lowest = loss.finite_min()
    return {"last_loss": newest[-1] if newest else None, "min_loss": lowest[0] if lowest else None}


def _with_path(base: Path, row: dict) -> dict:
    """A row from the index with the path of its run directory: the base's own when none is
    stored, or when the stored one is gone and the base holds it. The index moves with its runs
    directory (`mv ~/runs /data/runs` to a bigger disk, `mv runs runs.old` under a live runner)
    while every row keeps the old absolute path: `runs ls` in the new place listed "no runs" and
    dropped every row as deleted (``_forget_deleted``), the runs there unlisted for good (round 15).
    A runs directory copied with its index (`cp -a runs runs.bak`, an rsync backup) keeps the
    original's paths, still there: `runs ls` of the copy listed the original runs as they went on
    (a run killed there read `killed` here), and the browser opened them. The base's own directory
    decides whenever it holds the run (round 28)."""
    here = str(base / row["id"])
    stored = row.get("path")
    if not stored or (stored != here and os.path.isdir(here)):
        row["path"] = here
    return row


_UPSERT = (f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join(f':{c}' for c in COLUMNS)}) "
           "ON CONFLICT(id) DO UPDATE SET "
           + ", ".join(f"{c}=COALESCE(excluded.{c}, {c})" if c == "recipe_values" else f"{c}=excluded.{c}"
                       for c in COLUMNS if c != "id"))

# a row for a run the index lacks, never over one another connection wrote meanwhile (``_unindexed``)
_INSERT_NEW = (f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join(f':{c}' for c in COLUMNS)}) "
               "ON CONFLICT(id) DO NOTHING")


def _insert_all_runs(conn: "sqlite3.Connection", base: Path) -> int:
    """Every run directory's row, in one transaction (one commit for 2,000 runs, not 2,000)."""
    runs = rundir.list_run_dirs(base)
    now = time.time()
    rows = []
    for run in runs:
        row: dict[str, Any] = {k: None for k in COLUMNS}
        row.update(row_from_run_dir(run))
        row["updated_at"] = now
        rows.append(_storable(row))
    with conn:
        conn.executemany(_UPSERT, rows)
    return len(runs)


def row_from_run_dir(run: rundir.RunDir, book: "SeriesBook | None" = None) -> dict:
    """Summarise a run directory from its series book (series.json plus the records after it:
    constant time for a run its runner kept; one scan of metrics.jsonl for a foreign dir).
    ``book``: one the caller already read (loading series.json twice costs as much as the rest)."""
    from moeconsole.runner.rundir import seriesfile
    from moeconsole.runner.rundir.snapshot import held_state
    loaded = held_state(run, run.load_state(), time.time())   # a late state.json: what its live runner holds
    state = loaded.state
    book = book if book is not None else seriesfile.load_book(run)
    last = book.last_metrics or {}
    last_step = last.get("step") if isinstance(last.get("step"), int) else None
    max_steps = last.get("max_steps")
    return {
        "id": run.run_id, "name": state.get("name") or run.run_id, "recipe_hash": state.get("recipe_hash"),
        **_status_and_problem(run, state, loaded.problem),
        "started_at": state.get("started_at"),
        "ended_at": state.get("ended_at"), "attempts": state.get("attempt"), "restarts": state.get("restarts"),
        "last_step": state.get("step", last_step) if state.get("step") is not None else last_step,
        "max_steps": state.get("max_steps") or max_steps, **loss_facts(book),
        "step_numbered": int(bool(state.get("step_numbered", step_numbered(last)))),
        "path": str(run.path), **dict(zip(("crashes", "last_crash_class"), crash_facts(run, state))),
        **alert_facts(run, state), **clock_facts(state), "ended_short": _short_text(state),
        "stopped_by": _stopped_text(state),
    }


def row_from_state(run: rundir.RunDir, state: dict, summary: dict) -> dict:
    """The row a live runner upserts: no file scan, it already knows the numbers (``summary``: its
    book's ``loss_facts``)."""
    return {
        "id": run.run_id, "name": state.get("name") or run.run_id, "recipe_hash": state.get("recipe_hash"),
        "status": state.get("status"), "started_at": state.get("started_at"), "ended_at": state.get("ended_at"),
        "attempts": state.get("attempt"), "restarts": state.get("restarts"), "last_step": state.get("step"),
        "max_steps": state.get("max_steps"), "last_loss": summary.get("last_loss"),
        "min_loss": summary.get("min_loss"), "path": str(run.path),
        "step_numbered": int(bool(state.get("step_numbered"))),
        **dict(zip(("crashes", "last_crash_class"), crash_facts(run, state))),
        **alert_facts(run, state), **clock_facts(state), "ended_short": _short_text(state),
        "stopped_by": _stopped_text(state),
    }


def clock_facts(state: dict) -> dict:
    """The run's start and end on the boot clock (``rundir.start_stamp``), for its age and elapsed
    time in the list (``rundir.run_age``) to be measured as the run screen measures them."""
    return {k: state.get(k) for k in ("started_uptime_s", "started_boot_id", "ended_uptime_s")}


def _last_metric(run: rundir.RunDir) -> dict | None:
    """The newest metric record, from the last few KiB of metrics.jsonl (no full scan)."""
    try:
        with open(run.metrics, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - METRICS_TAIL_BYTES))
            data = f.read()
    except OSError:
        return None
    for line in reversed(data.split(b"\n")):
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a partial first line, or a record being written
        if isinstance(rec, dict) and isinstance(rec.get("step"), int):
            return rec
    return None


def refresh_live(row: dict) -> dict:
    """A live run's row brought up to date from its state.json and newest metric record, with
    ``stale`` set when its runner is gone (every row gets the liveness keys: ``NOT_STALE`` when
    the run is not live)."""
    from moeconsole.runner.rundir.snapshot import NOT_STALE, cooldown_now, held_state, liveness_facts
    path = row.get("path")
    if not path:
        return {**row, **NOT_STALE}
    run = rundir.RunDir(Path(path))
    if row.get("status") not in rundir.LIVE:
        # Over: only an acknowledgement (or a late event) can change what it shows.
        if any(row.get(k) is None for k in ALERT_FACTS) or _alert_files_seen(run) != row.get("alerts_seen"):
            return {**row, **alert_facts(run, run.read_state()), **NOT_STALE}
        return {**row, **NOT_STALE}
    loaded = held_state(run, run.load_state(), time.time())   # a late state.json: what its live runner holds
    state = loaded.state
    if loaded.problem:  # damaged while live (or unreadable): say so, keep the rest of the row
        return {**row, **_status_and_problem(run, {}, loaded.problem), **NOT_STALE}
    if not state:
        return {**row, **NOT_STALE}
    out = dict(row)
    for col, key in (("status", "status"), ("attempts", "attempt"), ("restarts", "restarts"),
                     ("ended_at", "ended_at"), ("max_steps", "max_steps")):
        if state.get(key) is not None:
            out[col] = state[key]
    rec = _last_metric(run)
    # the step is state.json's, as the run screen and --json have it (``snapshot``): after a
    # resume from an earlier checkpoint it goes back, it is not the highest step ever listed
    steps = [s for s in (state.get("step"), rec.get("step") if rec else None, row.get("last_step"))
             if isinstance(s, int)]
    out["last_step"] = steps[0] if steps else None
    if rec is not None or state.get("step_numbered") is not None:
        out["step_numbered"] = int(bool(state.get("step_numbered", step_numbered(rec))))
    loss = as_float(rec.get("loss")) if rec else None
    # mirrors ``loss_facts`` (no series book here, only the newest record): the last loss logged,
    # nan included; the minimum is a finite one's
    if loss is not None:
        out["last_loss"] = loss
        if math.isfinite(loss):
            out["min_loss"] = loss if row.get("min_loss") is None else min(row["min_loss"], loss)
    out["crashes"], out["last_crash_class"] = crash_facts(run, state)
    out.update(alert_facts(run, state))
    out.update(liveness_facts(state, time.time()))   # the run screen's rule, so `runs ls` says what it says
    # what a cooldown waits for, as of now (shown, not indexed): the status word counts it down
    out["cooldown"] = cooldown_now(state.get("cooldown"), time.time()) if state.get("status") == rundir.COOLDOWN else None
    out["job"] = state.get("job")  # a batch engine's job (shown, not indexed): PENDING while queued
    out["storage"] = state.get("storage")   # a run directory its runner cannot write (shown, not indexed)
    return out


def unreadable_problem(run: rundir.RunDir) -> str | None:
    """Why this user may not read ``run`` (another user's run directory), None when it may."""
    if os.access(run.path, os.R_OK | os.X_OK) and os.access(run.state, os.R_OK):
        return None
    try:
        owner = run.path.stat().st_uid
    except OSError:
        return "not readable by you"
    return f"owned by {rundir.user_words(owner)}, not readable by you (uid {os.geteuid()})"   # one wording (R70)


def _status_and_problem(run: rundir.RunDir, state: dict, problem: str | None) -> dict[str, Any]:
    """A row's status and problem: the state's status; a state that cannot be used is DAMAGED
    with the reason, unless this user only may not read it (UNREADABLE, whose run it is)."""
    if state.get("status"):
        return {"status": state["status"], "problem": problem}
    if problem and (closed := unreadable_problem(run)):
        return {"status": UNREADABLE, "problem": closed}
    return {"status": DAMAGED if problem else "unknown", "problem": problem}


def rebuild(base: Path) -> int:
    """Recreate the index from the run directories; returns how many runs were indexed."""
    rundir.check_base(base)
    conn = connect(base)
    try:
        with conn:
            conn.execute("DELETE FROM runs")
        return _insert_all_runs(conn, base)
    finally:
        conn.close()


def _rows_without_index(base: Path, *, status: str | None, name_like: str | None, order: str,
                        descending: bool, since: float | None = None) -> list[dict]:
    from moeconsole.runner.rundir.snapshot import NOT_STALE
    rows = [{**row_from_run_dir(run), **NOT_STALE} for run in rundir.list_run_dirs(base)]
    rows = [refresh_live(r) if r.get("status") in rundir.LIVE else r for r in rows]
    rows = [r for r in rows if (status is None or r.get("status") == status)
            and (not name_like or name_like in (r.get("name") or "") or name_like in r["id"])]
    rows = started_since(rows, since)
    if order == "started_at":   # the one rule of which run is newer, by the start shown
        now, up = time.time(), identity.uptime()   # the clocks read once for the whole listing
        rows.sort(key=lambda r: rundir.newer_key(r, r["id"], now, up), reverse=descending)
    else:
        rows.sort(key=lambda r: (r.get(order) is not None, r.get(order) or 0, r["id"]), reverse=descending)
    names = display_names(rows)
    for row in rows:
        row["display_name"] = names.get(row["id"], row.get("name") or row["id"])
    return [without_cache_columns(r) for r in rows]


def _recipe_values(path: str | None) -> dict[str, Any]:
    from moeconsole.runner.rundir.rundiff import flatten_recipe  # numpy: only when two runs share a name
    if not path:
        return {}
    from moeconsole.runner.recipes.recipe import read_saved
    data, _ = read_saved(path)  # a missing or broken recipe only loses the display suffix
    return flatten_recipe(data) if data else {}


def _clipped_json(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return clip(text, 24)


def _value_label(key: str, value: Any) -> str:
    """A recipe value that tells runs apart, as short as it reads: a command flag as it is typed
    (``--fault=oom@40``, a bare switch ``--fp8``), a positional word by itself, any other key as
    ``key=value`` (``args.fault=oom@40``)."""
    if key.startswith("command "):
        flag = key[len("command "):]
        if not flag.startswith("-"):
            return _clipped_json(value)
        return flag if value is True else f"{flag}={_clipped_json(value)}"
    return f"{key}={_clipped_json(value)}"


def _cached_values(row: dict, writes: ListingWrites | None) -> dict[str, str]:
    """A run's flattened recipe values, each as its sorted JSON text (what tells two values apart,
    compared as strings): from the index's ``recipe_values`` while recipe.yaml is unchanged (its
    mtime), else read (a YAML parse per run: 2,000 runs sharing a name made every ``runs ls``
    take seconds) and kept in the index for the next reader."""
    path = row.get("path")
    try:
        mtime = os.stat(Path(path) / "recipe.yaml").st_mtime if path else None
    except OSError:
        mtime = None
    cached = row.get("recipe_values")
    if isinstance(cached, str) and mtime is not None:
        try:
            doc = json.loads(cached)
            if isinstance(doc, dict) and doc.get("mtime") == mtime and isinstance(doc.get("json"), dict):
                return doc["json"]
        except ValueError:
            pass
    values = value_texts(_recipe_values(path))
    if writes is not None and mtime is not None:
        # a busy or read-only index: computed again next time
        writes("UPDATE runs SET recipe_values = ? WHERE id = ?", [(json.dumps({"mtime": mtime, "json": values}), row["id"])])
    return values


def value_texts(flat: dict[str, Any]) -> dict[str, str]:
    """A flattened recipe (``rundiff.flatten_recipe``) as key -> its value's sorted JSON text:
    what tells two values apart, compared as strings."""
    return {k: json.dumps(v, sort_keys=True, default=str) for k, v in flat.items()}


def distinguishing_names(names: list[str], values: list[dict[str, str]]) -> list[str]:
    """Each run's name, and for runs that share a name, the recipe values that tell them apart
    among *these* runs (``tiny-moe-cpu --fault=oom@40``; at most DISPLAY_VALUES, by key).
    ``values``: per run, ``value_texts`` of its recipe. What `runs ls`, the browser and compare
    name runs by."""
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    out = list(names)
    for name, group in groups.items():
        if len(group) == 1:
            continue
        keys = sorted({k for i in group for k in values[i]})
        differ = [k for k in keys if k.split(".")[0] not in NOT_DISTINGUISHING
                  and len({values[i].get(k, "null") for i in group}) > 1]
        for i in group:
            mine = values[i]
            parts = [_value_label(k, json.loads(mine[k])) for k in differ if k in mine][:DISPLAY_VALUES]
            out[i] = f"{name} {' '.join(parts)}" if parts else name
    return out


def display_names(rows: list[dict], writes: ListingWrites | None = None) -> dict[str, str]:
    """id -> name, and for runs that share a name, the recipe values that tell them apart
    (``distinguishing_names``), read from each run's recipe.yaml (kept in the index through
    ``writes`` when given; read only for runs that share a name)."""
    names = [printable(row.get("name") or row["id"]) for row in rows]   # a run named before the rule
    from collections import Counter
    shared = {n for n, count in Counter(names).items() if count > 1}
    values = [_cached_values(row, writes) if name in shared else {} for row, name in zip(rows, names)]
    return {row["id"]: label for row, label in zip(rows, distinguishing_names(names, values))}


def list_runs(base: Path, *, status: str | None = None, name_like: str | None = None,
              order: str = "started_at", descending: bool = True, refresh: bool = True,
              since: float | None = None) -> list[dict]:
    """Rows of the index; rebuilt first if the index is missing but run directories exist.
    With ``refresh``, live runs are brought up to date from their run directories (and the
    index with them), get ``stale`` when their runner is gone, and every row a
    ``display_name``."""
    return listing(base, status=status, name_like=name_like, order=order, descending=descending,
                   refresh=refresh, since=since)[0]


def listing(base: Path, *, status: str | None = None, name_like: str | None = None,
            order: str = "started_at", descending: bool = True,
            refresh: bool = True, since: float | None = None) -> tuple[list[dict], tuple[str, ...]]:
    """``list_runs``' rows and the ``index_seen`` they are the index's rows for: a later
    ``index_seen`` equal to it means no one has written the index since (the run browser then
    reads the live rows alone, ``refresh_listed``).

    The look is taken before the read when another connection may have committed during it:
    a runner journals a run's status event, then its state.json, and only then writes the index
    (``supervisor.py``, ``_set_status`` then ``index_run``), so a commit landing between this
    SELECT and a look taken after it (a run just started, a failed run restarted in its own
    directory) was in the look but not in the rows, and the browser kept the rows without that
    run until F5 (review R37). The look taken after the read is used only when SQLite says no
    other connection committed from before the SELECT to after the look (``PRAGMA data_version``
    changes for another connection's commits, never for this one's, sqlite.org/pragma.html
    #pragma_data_version): this listing's own writes (a live run's row behind its files) are no
    change, or a browser with a run training would read the whole index at every refresh."""
    before = index_seen(base)
    if order not in COLUMNS:
        order = "started_at"
    rundir.check_base(base)
    import sqlite3
    try:
        if not (base / INDEX_NAME).exists() and rundir.list_run_dirs(base):
            rebuild(base)
        conn = connect(base)
    except IndexUnavailable:
        # Not ours to write (another user's runs, a read-only disk): the run directories are
        # the truth, the index only a cache.
        return _rows_without_index(base, status=status, name_like=name_like, order=order,
                                   descending=descending, since=since), before
    try:
        return _indexed_listing(base, conn, before, status=status, name_like=name_like, order=order,
                                descending=descending, refresh=refresh, since=since)
    except sqlite3.Error:
        # another's lock the reads cannot wait out (a rollback journal's EXCLUSIVE lock blocks readers
        # too): the run directories are the truth, the index only a cache
        return _rows_without_index(base, status=status, name_like=name_like, order=order,
                                   descending=descending, since=since), before
    finally:
        conn.close()


def _unindexed(base: Path, conn: "sqlite3.Connection", writes: ListingWrites) -> list[dict]:
    """Rows for the run directories the index has no row for: a run whose runner could not write its
    row yet (another's lock on the index, a full disk), listed from its directory and offered to the
    index. Round 18: `runs ls` said "no runs under ..." of a live run while the user's `sqlite3` shell
    held the index; a run that ended meanwhile stayed unlisted until `runs rebuild`. All offered in
    one transaction (``writes``; review R50: one each, a second's wait each under the lock)."""
    known = {r[0] for r in conn.execute("SELECT id FROM runs")}
    from moeconsole.runner.rundir.snapshot import NOT_STALE
    rows = [{**row_from_run_dir(run), **NOT_STALE} for run in rundir.list_run_dirs(base) if run.run_id not in known]
    writes(_INSERT_NEW, [_stored_row(row) for row in rows])   # still locked: listed from their directories all the same
    return rows


def _indexed_listing(base: Path, conn: "sqlite3.Connection", before: tuple[str, ...], *, status: str | None,
                     name_like: str | None, order: str, descending: bool, refresh: bool,
                     since: float | None) -> tuple[list[dict], tuple[str, ...]]:
    """``listing`` from an open index (``conn``), with the run directories it lacks (``_unindexed``)."""
    version = conn.execute("PRAGMA data_version").fetchone()[0]
    writes = ListingWrites(conn)
    where, args = [], []
    if status:
        where.append("status = ?")
        args.append(status)
    if name_like:
        where.append("(name LIKE ? OR id LIKE ?)")
        args += [f"%{name_like}%", f"%{name_like}%"]
    sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
    sql += f" ORDER BY {order} {'DESC' if descending else 'ASC'}, id DESC"
    rows = [_with_path(base, _loaded(dict(r))) for r in conn.execute(sql, args)]
    extra = [r for r in _unindexed(base, conn, writes) if (status is None or r.get("status") == status)
             and (not name_like or name_like in (r.get("name") or "") or name_like in r["id"])]
    rows = started_since(rows + extra, since)
    if extra and order != "started_at":   # the index's rows came sorted; the directories' join them
        rows.sort(key=lambda r: (r.get(order) is not None, r.get(order) or 0, r["id"]), reverse=descending)
    if not refresh:
        return [without_cache_columns(r) for r in rows], before
    rows = _forget_deleted(rows, writes)
    changed = []
    for i, row in enumerate(rows):
        fresh = refresh_live(row)
        if any(not _unchanged(fresh.get(k), row.get(k)) for k in COLUMNS if k not in ("updated_at", *STORED_ONLY)):
            changed.append(_stored_row(fresh))
        rows[i] = fresh
    writes(_UPSERT, changed)   # a read-only or busy index: the fresh rows are shown anyway
    if order == "started_at":
        # by the start shown (``rundir.newer_key``: the boot clock's where a wall clock was off
        # when it was stamped), as the STARTED column prints it, not the stored stamp
        now, up = time.time(), identity.uptime()   # the clocks read once for the whole listing
        rows.sort(key=lambda r: rundir.newer_key(r, r["id"], now, up), reverse=descending)
    names = display_names(rows, writes)
    for row in rows:
        row["display_name"] = names.get(row["id"], row.get("name") or row["id"])
    return [without_cache_columns(r) for r in rows], _seen_after(base, writes, version, before)


def started_since(rows: list[dict], since: float | None) -> list[dict]:
    """The rows of runs that started at or after ``since`` (seconds since the epoch, as
    ``core.when.since_cutoff`` reads ``--since 2d``), by the start the STARTED column shows
    (``rundir.start_shown``); a run without a start time (a damaged state.json) is left out.
    None: every row."""
    if since is None:
        return rows
    now, up = time.time(), identity.uptime()   # the clocks read once for the whole listing
    return [r for r in rows if (shown := rundir.start_shown(r, now, up)) is not None and shown >= since]


def _seen_after(base: Path, writes: ListingWrites, version: int, before: tuple[str, ...]) -> tuple[str, ...]:
    """The look after a listing on ``conn`` (``listing``): ``before`` unless no other connection
    committed since ``version`` was read. The write-ahead log is copied into the index first
    (``wal_checkpoint(TRUNCATE)``), so closing ``conn`` (the last connection copies the log and
    removes it, sqlite.org/wal.html) changes nothing ``index_seen`` sees; an empty log is no log
    there. A checkpoint kept from finishing (a reader in the log) keeps ``before``, and none is
    tried once a write of the listing met another's lock (``writes``: it would wait for it again)."""
    import sqlite3
    if not writes.ok:
        return before
    conn = writes.conn
    try:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        after = index_seen(base)
        alone = conn.execute("PRAGMA data_version").fetchone()[0] == version   # after the look
    except sqlite3.Error:  # a busy or read-only index: read it again next time
        return before
    return after if alone and not busy else before


def listing_seen(base: Path) -> tuple[tuple[str, str], ...]:
    """What a listing (``list_runs``) reads that the index does not say, by a directory listing
    and stat alone, no file opened: every run directory under ``base`` (a run made, removed or
    renamed) with its alert files as ``_alert_files_seen`` finds them (an acknowledgement or a late
    event of an ended run). Taken before a read: a listing whose ``listing_seen`` and
    ``index_seen`` are both unchanged need not be read again, only its live rows
    (``refresh_listed``). The run browser asks it at each refresh: reading the index again whole
    took 35-140 ms at 500 runs (bench/bench_browser.py)."""
    try:
        entries = [e for e in os.scandir(base) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return ()
    return tuple(sorted((e.name, _alert_files_at(e.path)) for e in entries))


COARSE_TICK_NS = 1_000_000_000   # a file time in whole seconds: a coarse filesystem's (``index_seen``)


def index_seen(base: Path) -> tuple[str, ...]:
    """The index and its write-ahead log as a reader finds them (inode, size and modification
    time in ns each; ``-`` for a file missing): written by a runner at its run's status changes,
    by `runs rebuild`, and by a listing that found a live run's row behind its files. ``listing``
    tells which look its rows go with (reviewed R37: a look taken after the read took in a
    runner's commit the rows had missed)."""
    out = []
    now = time.time_ns()
    for name in (INDEX_NAME, INDEX_NAME + "-wal"):
        try:
            st = os.stat(base / name)
        except OSError:
            out.append("-")
            continue
        # an empty log says nothing the index does not: as none (``_seen_after``)
        out.append("-" if name.endswith("-wal") and st.st_size == 0 else f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}")
        if st.st_mtime_ns % COARSE_TICK_NS == 0 and now - st.st_mtime_ns < 2 * COARSE_TICK_NS:
            # a filesystem that stamps whole seconds (ext3, HFS+: 1 s; FAT: 2 s), written within
            # the tick: a write later in it (an ended run's row updated in place: the same inode
            # and size) keeps the time, so this look equals no other (reviewed R37, as git's
            # "racy clean" entries are looked at again: Documentation/technical/racy-git.txt)
            out.append(f"racy:{time.monotonic_ns()}")
    return tuple(out)


def refresh_listed(rows: list[dict], order: str) -> list[dict] | None:
    """``rows`` of an earlier ``list_runs`` with each live run brought up to date from its run
    directory (``refresh_live``: its step, loss, alerts, and whether its runner is gone, which is
    a matter of the clock too); the ended rows as they were. None when a live row's status or the
    column the rows are ordered by changed: the order, a status filter or the names that tell
    runs apart may change with it, and the listing is read again whole."""
    out = []
    for row in rows:
        if row.get("status") not in rundir.LIVE:
            out.append(row)
            continue
        fresh = refresh_live(row)
        if fresh.get("status") != row.get("status") or not _unchanged(fresh.get(order), row.get(order)):
            return None
        out.append(fresh)
    return out


def _forget_deleted(rows: list[dict], writes: ListingWrites) -> list[dict]:
    """The rows whose run directory is still there; the others (a run removed with `rm -r`) are
    dropped from the index too, so `runs` and the browser never list a run that `runs show` and
    `attach` answer "no run matches" for. A live run's directory renamed back, or any run,
    returns with its runner's next write or `runs rebuild`."""
    kept: list[dict] = []
    gone: list[dict] = []
    for row in rows:
        (kept if os.path.isdir(row["path"]) else gone).append(row)
    # a read-only or busy index: the list is right all the same
    writes("DELETE FROM runs WHERE id = ?", [(r["id"],) for r in gone])
    return kept


def _unchanged(a: Any, b: Any) -> bool:
    """Equal, a NaN loss to a NaN loss too (the row has not changed)."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def without_cache_columns(row: dict) -> dict:
    """A row as callers get it: without the index's own cache columns."""
    row.pop("recipe_values", None)
    row.pop("alerts_seen", None)
    return row
