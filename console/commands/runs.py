"""``moeconsole runs [ls|show RUN|diff A B|rebuild] [--json]``: past runs without the UI."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from moeconsole.console import format as fmt
from moeconsole.console import runcolumns
from moeconsole.runner.rundir import jsonio, rundir, store
from moeconsole.console.format import cell_width, clip_cells, pad_cells
from moeconsole.runner.core import shellwords
from moeconsole.runner.core.errors import InputError, printable
from moeconsole.runner.core.when import since_cutoff
from moeconsole.runner.rundir.paths import runs_base

def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def aligned_table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned columns, two spaces apart (what ``runs ls`` and ``runs diff`` print)."""
    widths = [cell_width(h) for h in headers]
    for row in rows:
        widths = [max(w, cell_width(c)) for w, c in zip(widths, row)]
    lines = ["  ".join(pad_cells(h, w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(pad_cells(c, w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def output_width() -> int | None:
    """The columns `runs ls` may use: a terminal's width (``$COLUMNS`` first, as
    ``shutil.get_terminal_size`` reads it), else none: output to a file or a pipe gets every
    column, as ``ps`` does."""
    import shutil
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((80, 24)).columns


def ls_table(rows: list[dict], width: int | None, now: float, every: list[str] | None = None) -> str:
    """The run index as a table that fits ``width`` (None: every column, the whole ids), the
    columns chosen by ``moeconsole.console.runcolumns`` (the browser's rule too): status, name,
    step, loss, alerts, age first, the name cut with … down to NAME_MIN first, then whatever
    else fits whole. ``every``: the id of every run under the directory when ``rows`` are
    filtered (``runcolumns.short_ids``: a short id names one run among all of them)."""
    cols, grid = runcolumns.run_table(rows, width, now, full_ids=width is None, every=every)
    lines = ["  ".join(pad_cells(h, w) for _, h, w in cols).rstrip()]
    for i in range(len(rows)):
        lines.append("  ".join(pad_cells(runcolumns.cut_name(grid[k][i], w) if k == "display_name"
                                         else clip_cells(grid[k][i], w), w) for k, _, w in cols).rstrip())
    return "\n".join(lines)


def cmd_ls(base, as_json: bool, since: str | None = None) -> int:
    cutoff = None if since is None else since_cutoff(since, time.time())
    rows = store.list_runs(base, since=cutoff)
    if as_json:
        _out(jsonio.dumps({"v": jsonio.SCHEMA_VERSION, "runs": rows}))
        return 0
    if not rows and cutoff is not None and store.list_runs(base, refresh=False):
        _out(f"no runs under {base} started since {time.strftime('%Y-%m-%d %H:%M', time.localtime(cutoff))} "
             f"(--since {since}); without --since: every run")
        return 0
    if not rows:
        _out(f"no runs under {base}: {rundir.NO_RUNS_NEXT}")
        return 0
    # --since hides runs, not the runs a short id must tell apart: `attach a3f2` looks among all
    # (the browser's filter does the same: review R51, `--since 2d` had shown `a3f2` for two runs)
    every = [r.run_id for r in rundir.list_run_dirs(base)] if cutoff is not None else None
    _out(ls_table(rows, output_width(), time.time(), every))
    return 0


def run_summary(run: rundir.RunDir) -> dict:
    """What ``runs show`` prints: the index row, plus crashes (with their hints), checkpoints and
    the alert groups (with their acknowledgement) from the run dir."""
    from moeconsole.runner.rundir.snapshot import RunWatcher
    watcher = RunWatcher(run)
    snap = watcher.poll(with_gpu=False, saves_gone=True)
    return {"v": jsonio.SCHEMA_VERSION, **store.without_cache_columns(store.row_from_run_dir(run, watcher.book)), "run": snap.run,
            "crashes": list(snap.crashes), "checkpoints": list(snap.checkpoints),
            "alerts": list(snap.alerts[-20:]), "alert_groups": [g.to_dict() for g in snap.alert_groups],
            "engine": snap.run.get("engine"), "jobs": run.job_records()}


def _command_words(run: rundir.RunDir) -> str:
    """The run's command as a shell would show it, secrets masked (``receipt.recipe_section``),
    clipped to a line; "" when recipe.yaml has none."""
    import shlex
    from moeconsole.runner.core.units import clip
    from moeconsole.runner.rundir.receipt import recipe_section
    command = recipe_section(run, {}).get("command")
    if not isinstance(command, list) or not command:
        return ""
    return clip(shlex.join(str(a) for a in command), 400)


def cmd_show(base, ref: str, as_json: bool) -> int:
    from moeconsole.console.commands.attach import foreign_path, resolve_run
    foreign = foreign_path(ref)     # the one rule for "not a moeconsole run", as attach and --json ask
    if foreign is not None:
        return _show_foreign(foreign, as_json)
    return _show_run(resolve_run(base, ref), as_json)   # a directory with no log: what attach says of it


def _show_foreign(path: Path, as_json: bool) -> int:
    """``runs show`` of a log or directory not made by moeconsole (what the browser's ``o``
    opens): read into a scratch run directory, shown, then removed."""
    import shutil
    import tempfile
    from moeconsole.console.foreign import open_path
    scratch = Path(tempfile.mkdtemp(prefix="moeconsole-show-"))
    try:
        return _show_run(open_path(path, scratch), as_json, imported_from=path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _show_run(run: rundir.RunDir, as_json: bool, imported_from: Path | None = None) -> int:
    summary = run_summary(run)
    if imported_from is not None:
        summary["imported_from"] = str(imported_from.resolve())
        summary["path"] = summary["imported_from"]
    if as_json:
        _out(jsonio.dumps(summary))
        return 0
    r = summary["run"]
    from moeconsole.runner.core.policy import is_crash_class
    crashes = [c for c in summary["crashes"] if is_crash_class(c.get("class"))]
    stops = [c for c in summary["crashes"] if not is_crash_class(c.get("class"))]
    lines = [
        f"{printable(str(summary['name']))}  {r.get('status_word') or fmt.NA}",
        f"  id        {summary['id']}",
        # a path may hold a newline, ESC, or letters an ASCII output lacks: the word that names it
        f"  dir       {shellwords.path_shown(str(summary['path']))}",
        f"  started   {fmt.date(rundir.start_shown(summary, time.time()))}   ended {fmt.date(summary['ended_at'])}   "
        f"elapsed {fmt.duration(r.get('elapsed_s'))}",
        f"  attempts  {fmt.NA if summary['attempts'] is None else summary['attempts']}   "
        f"{fmt.RESTARTS_WORD} {summary['restarts'] or 0}/{fmt.NA if r.get('max_restarts') is None else r['max_restarts']}",
        f"  steps     {fmt.run_cell('last_step', summary)}",
        f"  loss      last {fmt.num(summary['last_loss'])}   min {fmt.num(summary['min_loss'])}",
        f"  saves     bad {fmt.run_cell('bad_saves', summary)}   crashes {len(crashes)}"
        f"   last crash {summary.get('last_crash_class') or fmt.NA}",
        f"  alerts    open {fmt.run_cell('open_alerts', summary)}",
        *([f"  resume    {fmt.resume_words(r.get('last_good_checkpoint'))}"] if r.get("checkpoint_root") else []),
        *([f"  best      {fmt.best_words(r.get('best_checkpoint'))}"] if fmt.best_words(r.get("best_checkpoint")) else []),
        f"  recipe    hash {summary['recipe_hash'] or fmt.NA}",
    ]
    from moeconsole.runner.rundir.snapshot import REFUSED_NEXT, command_refused, next_command
    # what the run needs next, the run screen's banner's command, by the run as a shell types it
    # (``rundir.command_ref``: --runs-dir where a bare command would not look; the whole id alone
    # had found nothing for a run under --runs-dir DIR)
    typed = rundir.command_ref(run.path.parent, run.run_id)[1] if imported_from is None else None
    if next_command(r, typed):
        lines.insert(1, f"  next      {next_command(r, typed)}")
    elif command_refused(r):
        lines.insert(1, f"  next      the fix (its crash's hint), then {REFUSED_NEXT}")
    command = _command_words(run)
    if command:   # what was run (a `run -- COMMAND` run has no recipe file to look it up in)
        lines.append(f"  command   {command}")
    if r.get("damaged"):
        lines.insert(1, f"  damaged   {r['damaged']}")
    from moeconsole.runner.rundir.snapshot import waiting_words
    if waiting_words(r):  # what a cooldown waits on, the status line's words
        lines.insert(1, f"  {waiting_words(r)}")
    if summary["jobs"]:
        lines.append(f"{summary['engine'] or 'batch'} jobs ({len(summary['jobs'])})")
        lines += [f"  attempt {j.get('attempt')}  job {j['job_id']}  {j.get('state') or fmt.NA}"
                  + (f" ({j['reason']})" if j.get("reason") else "")
                  + (f"  exit {j['exit_code']}:{j.get('signal') or 0}" if j.get("exit_code") is not None else "")
                  + (f"  on {','.join(j['nodes'])}" if j.get("nodes") else "") for j in summary["jobs"]]
    if summary.get("imported_from"):
        lines.insert(1, f"  imported  {fmt.IMPORTED_WORDS}")
    lines.append(f"crashes ({len(crashes)})")
    for c in crashes:
        lines.append(f"  {fmt.crash_line(c)}")
        if c.get("hint"):
            lines.append(f"    hint: {c['hint']}")
    if not crashes:
        lines.append("  none")
    lines += [f"  (attempt {c.get('attempt')} was ended by the user: {fmt.exit_words(c)}; not a crash)" for c in stops]
    groups = summary["alert_groups"]
    if groups:
        open_n = sum(1 for g in groups if g["active"])
        lines.append(f"alerts by cause ({len(groups)}, {open_n} open)")
        lines += [f"  {fmt.LEVEL_WORD.get(g['level'], g['level'].upper())} {g['headline']}"
                  f"{'' if g['active'] else '  (' + str(g.get('standing') or 'acknowledged') + ')'}" for g in groups]
    lines.append(f"checkpoints ({len(summary['checkpoints'])})")
    lines += [f"  {fmt.checkpoint_line(c)[0]}  {c.get('path') or ''}" for c in summary["checkpoints"]] or ["  none"]
    if summary["alerts"]:
        lines.append(f"alerts (last {len(summary['alerts'])})")
        lines += [f"  {fmt.event_line(a)[0]}" for a in summary["alerts"]]
    _out("\n".join(lines))
    return 0


def cmd_diff(base, a: str, b: str, as_json: bool) -> int:
    from moeconsole.runner.rundir import rundiff
    comparison = rundiff.compare(a, b, base)
    d = comparison.to_dict()
    if as_json:
        _out(jsonio.dumps(d))
        return 0
    lines = [f"A  {d['a']['label']}  ({d['a']['path']})", f"B  {d['b']['label']}  ({d['b']['path']})", ""]
    lines.append(aligned_table(["", "A", "B", "B - A"], fmt.diff_rows(d)))
    lines.append("")
    diffs = d["recipe_diff"]
    if diffs:
        lines.append(f"recipe differences ({len(diffs)})")
        lines.append(aligned_table(["key", "A", "B"], [[x["key"], rundiff.format_value(x["a"]), rundiff.format_value(x["b"])]
                                               for x in diffs]))
    else:
        lines.append("recipe differences: none")
    _out("\n".join(lines))
    return 0


def run(args) -> int:
    base = runs_base(getattr(args, "runs_dir", None))
    action = args.action or "ls"
    ids = list(args.ids or [])
    need = {"ls": 0, "rebuild": 0, "show": 1, "diff": 2, "receipt": 1}[action]
    if len(ids) != need:
        usage = {"ls": "runs ls", "rebuild": "runs rebuild", "show": "runs show RUN", "diff": "runs diff A B",
                 "receipt": "runs receipt RUN [--json|--md] [--full] [--out DIR]"}
        raise InputError(f"usage: moeconsole {usage[action]}")
    since = getattr(args, "since", None)
    if since is not None and action != "ls":
        raise InputError(f"runs {action}: --since narrows `moeconsole runs ls` only")
    if action == "ls":
        return cmd_ls(base, args.json, since)
    if action == "rebuild":
        n = store.rebuild(base)
        _out(jsonio.dumps({"v": jsonio.SCHEMA_VERSION, "indexed": n}) if args.json else f"indexed {n} runs under {base}")
        return 0
    if action == "show":
        return cmd_show(base, ids[0], args.json)
    if action == "receipt":
        from moeconsole.console.commands.receipt import run_receipt
        return run_receipt(base, ids[0], as_json=args.json, full=getattr(args, "full", False),
                           out=getattr(args, "out", None))
    return cmd_diff(base, ids[0], ids[1], args.json)
