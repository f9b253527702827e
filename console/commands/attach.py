"""``moeconsole attach [RUN|PATH] [--readonly] [--log-format SPEC]`` (and ``moeconsole`` with no
command): the UI on a run; with no RUN the newest live run, else the run browser. Closing it
leaves the run alone. ``--log-format`` declares the line format of a log PATH nothing reads."""
from __future__ import annotations

import sys
from pathlib import Path

from moeconsole.runner.rundir import rundir
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.rundir.paths import runs_base


def run(args) -> int:
    base = runs_base(getattr(args, "runs_dir", None))
    ref = getattr(args, "run", None)
    spec = getattr(args, "log_format", None)
    line_format = None
    if spec is not None:
        from moeconsole.runner.ingest.userformat import parse_line_format
        line_format = parse_line_format(spec)   # a bad spec: one line, exit 2
    foreign = foreign_path(ref)
    if line_format is not None and foreign is None:
        raise InputError("--log-format applies to a log path (attach PATH), not to a moeconsole run")
    target = None if foreign else (resolve_run(base, ref) if ref is not None else rundir.newest_live(base))
    note = others_live_note(base, target) if ref is None and not foreign else None
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        where = f" (the run {target.run_id} goes on)" if target else ""
        raise InputError(f"the console needs a terminal{where}; use `moeconsole --json [RUN]` in scripts")
    from moeconsole.console.lean import import_ui, one_malloc_arena, settle_after_first_frame
    one_malloc_arena()   # before Textual's threads start (console/lean.py)
    if foreign is not None and line_format is None:
        from moeconsole.console.foreign import prestart_history
        prestart_history(foreign)   # a big log's second reading process starts while the UI imports
    settle_after_first_frame(arm=True)   # this process's start frozen once it has drawn (console/lean.py)
    run_app = import_ui("moeconsole.console.app").run_app   # without OpenSSL (console/lean.py)
    return run_app(base, target, readonly=bool(getattr(args, "readonly", False)),
                   gpu=not getattr(args, "no_gpu", False),
                   bell=False if getattr(args, "no_bell", False) else None, open_path=foreign,
                   line_format=line_format, note=note)


def others_live_note(base: Path, target: rundir.RunDir | None) -> str | None:
    """What bare ``moeconsole`` says on opening the newest of several live runs: that the others
    are there and how to reach them (it had opened one of three ablations without a word of the
    other two: newcomer round 4). None with one live run or none."""
    live = rundir.live_runs(base)
    if target is None or len(live) < 2:
        return None
    from moeconsole.console import keys
    browser = keys.key_for(keys.RUN_KEYS, "browser")
    return (f"{len(live)} live runs: this is the newest; {browser} lists them all, "
            f"`moeconsole attach RUN` opens another")


def resolve_run(base: Path, ref: str) -> rundir.RunDir:
    """The run ``ref`` names (``rundir.resolve``); for a directory that holds no run and no log,
    what to type instead (``no_log_here``) as the one line of the error."""
    try:
        return rundir.resolve(base, ref)
    except InputError:
        why = no_log_here(ref)
        if why:
            raise InputError(why) from None
        raise


def no_log_here(ref: str | None) -> str | None:
    """Why a directory named to attach (no run, nor a run's by that name) cannot be opened, and
    what to type instead: the log file itself, or ``verify`` of the checkpoints it holds (the
    output directory of one's own script). None when ``ref`` is no such directory."""
    if not ref:
        return None
    p = Path(ref).expanduser()
    try:
        if not p.is_dir() or rundir.is_run_dir(p) or rundir.enclosing_run(p) is not None:
            return None
    except PermissionError:
        if rundir.bare_ref(ref):
            return None
        raise
    from moeconsole.runner.ingest.files import resolve_log
    try:
        resolve_log(p)
    except InputError as exc:
        from moeconsole.runner.checkpoints.discover import find_checkpoints
        from moeconsole.runner.core.shellwords import quote
        saves = f", or its checkpoints with `moeconsole verify {quote(ref)}`" if find_checkpoints(p) else ""
        return f"{exc}; open the log file itself with `moeconsole attach {quote(ref.rstrip('/'))}/LOGFILE`{saves}"
    return None


def foreign_path(ref: str | None) -> Path | None:
    """``attach PATH`` with a log or directory not made by moeconsole: opened like the run
    browser's `o` (newest steps at once, the history read in the background)."""
    if not ref:
        return None
    p = Path(ref).expanduser()
    try:
        if not p.exists() or (p.is_dir() and rundir.is_run_dir(p)) or rundir.enclosing_run(p) is not None:
            return None   # a run, or a path inside one (its output dir, its train.log): the run itself
    except PermissionError:
        if rundir.bare_ref(ref):
            return None   # an id or name typed in a cwd this user may not enter: a run's
        raise
    if p.is_file():
        return p
    from moeconsole.runner.ingest.files import resolve_log   # a directory: only one that holds a log
    try:
        resolve_log(p)
    except InputError:
        return None
    return p
