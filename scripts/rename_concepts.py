"""Re-runnable: one name per concept (issue 33 item 5).

Each entry of ``RENAMES`` is one meaning of a name that meant two or three things; the other
meanings keep the name. A rename rewrites, in every Python file of the project (runner/,
console/, recipes/, tests/, bench/, scripts/):

- in the module that defines it, and in every module that imports it by that name (``from m
  import Old``, also through a module that re-exports it, such as ``ingest.parser`` for
  ``ingest.events.Event``): the code's name tokens ``Old`` (never an attribute ``x.Old`` of
  something else, never text in a string or comment);
- ``from m import Old as X``: the imported name only;
- ``m.Old`` where ``m`` names that module (``control.Kill``, ``lc.Kill``): the attribute;
- in strings, comments and docs/*.md: the qualified mentions (``control.Kill``,
  ``moeconsole.runner.supervisor.control.Kill``), never a bare word.

``MOVES`` renames modules (``git mv``) and their dotted and slash paths everywhere.

Tokens, not regular expressions over code, so a word in a message stays as it is. Running it
again changes nothing; run it after merging other branches to rename what they added. It prints
each old -> new with the files it changed; ``--check`` changes nothing and exits 1 when
something is left to rename.
"""
from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY_DIRS = ("runner", "console", "recipes", "tests", "bench", "scripts")
TEXT_FILES = ("README.md",)
TEXT_DIRS = ("docs",)


@dataclass(frozen=True)
class Rename:
    module: str   # the defining module, dotted
    old: str
    new: str
    why: str      # what this meaning is, and what keeps the old name


RENAMES = (
    Rename("moeconsole.runner.supervisor.control", "Status", "StatusRequest",
           "the control socket's status request; Status is the run's status (core.state)"),
    Rename("moeconsole.runner.supervisor.control", "Kill", "KillRequest",
           "the control socket's kill request"),
    Rename("moeconsole.runner.core.lifecycle", "Kill", "KillInProgress",
           "the lifecycle's record of a kill under way (reason, SIGKILL deadline)"),
    Rename("moeconsole.runner.recipes.model", "Kill", "KillSettings",
           "the recipe's kill section (grace_s), like RestartSettings"),
    Rename("moeconsole.runner.supervisor.launcher", "Launched", "LaunchedAttempt",
           "what the launcher started (attempt, resume point, port); Launched is the lifecycle's event"),
    Rename("moeconsole.runner.core.lifecycle", "Event", "LifecycleEvent",
           "the union of the lifecycle's inputs"),
    Rename("moeconsole.runner.ingest.events", "Event", "LogEvent",
           "a record or mark read from a log"),
    Rename("moeconsole.runner.supervisor.judge", "Event", "JournalEvent",
           "a journal event to write (type, fields)"),
    Rename("moeconsole.runner.ingest.live", "LogTail", "TailLines",
           "the runner's last lines of train.log in memory; LogTail is the console's widget"),
    Rename("moeconsole.runner.core.nodehealth", "judge", "assess_nodes",
           "the nodes' health marks; judge is the ended attempt's verdict (supervisor.judge)"),
    Rename("moeconsole.runner.core.state", "RunState", "StateDict",
           "state.json as a reader's plain dict; RunState is the runner's live state (supervisor.runstate)"),
    Rename("moeconsole.runner.telemetry.nvmllib", "_check", "_check_return",
           "an NVML call's return code raised as NVMLError; check is a bounds check (core.bounds)"),
    Rename("moeconsole.runner.telemetry.nvmllib", "load", "load_library",
           "loading libnvidia-ml once per process; load is the recipe loader (recipes.recipe)"),
    Rename("moeconsole.console.gpurows", "_name", "_gpu_name", "a GPU's model name for its line"),
    Rename("moeconsole.runner.core.series", "_num", "_json_float",
           "a stored series value read back (its JSON string forms of nan/inf); num is the console's number text"),
    Rename("moeconsole.runner.ops.exporter", "_parse", "_parse_args",
           "the exporter's command line; parse is a bounded number's reader (core.bounds)"),
    Rename("moeconsole.console.chartprefs", "path_of", "prefs_path", "the chart preferences file of a runs directory"),
    Rename("moeconsole.console.chartprefs", "_read", "_read_recipes",
           "each recipe's saved chart choice; read is the run-directory model reader (rundir.runfiles)"),
    Rename("moeconsole.runner.ingest.live", "_plain", "_row_like",
           "a parser record a template row could stand for; plain is a status line's text (console.format)"),
    Rename("moeconsole.runner.supervisor.memory_feed", "_rank", "_extra_rank",
           "the rank a record's extra names; rank orders run-list columns (console.runcolumns)"),
    Rename("moeconsole.runner.checkpoints.verify", "_read_json", "_read_json_object",
           "a checkpoint's companion JSON object with its problem in one line (follows symlinks, as saves may hold them)"),
    Rename("moeconsole.runner.telemetry.host", "read_mark", "read_cpu_mark",
           "the runner's newest /proc/stat reading; read_mark reads a log's mark line (ingest.formats)"),
    Rename("moeconsole.runner.telemetry.host", "write_mark", "write_cpu_mark", "the runner's newest /proc/stat reading, written"),
    Rename("moeconsole.runner.telemetry.host", "mark_path", "cpu_mark_path", "where that reading is kept"),
    Rename("moeconsole.runner.checkpoints.dcp_metadata", "_load", "_unpickle_restricted",
           "a DCP .metadata unpickled through the allow-list; load is the recipe loader (recipes.recipe)"),
    Rename("moeconsole.runner.checkpoints.dcp_metadata", "_parse", "_build_index",
           "the DcpIndex built from the unpickled stand-ins; parse is a bounded number's reader (core.bounds)"),
    Rename("moeconsole.runner.telemetry.nvml", "_load_library", "_use_library_file",
           "the backend's given library file (a directory: its libnvidia-ml), load errors as NvmlUnavailable; "
           "load_library loads the library once per process (telemetry.nvmllib)"),
    Rename("moeconsole.console.widgets.gpu_panel", "_problem", "_group_is_problem",
           "a node group listed first; problem builds a lint finding (recipes.lint)"),
    Rename("moeconsole.runner.checkpoints.megatron", "_read_index", "_read_dcp_index",
           "a Megatron save's DCP .metadata read into a DcpIndex; read_index reads a safetensors index (checkpoints.sharded)"),
    Rename("moeconsole.runner.rundir.rundiff", "read_recipe", "flat_recipe",
           "a run's (or a swift output's) recipe flattened to dotted keys for runs diff; read_recipe is the "
           "console's recipe model or None (console.source)"),
    Rename("moeconsole.runner.telemetry.kill", "_refusal", "_identity_refusal",
           "why a PID's identity forbids signalling it (reused, another user's); refusal is a control answer (supervisor.control)"),
    Rename("moeconsole.console.commands.gpus", "render", "render_report",
           "the whole `moeconsole gpus` text (GPUs, host, port, processes)"),
    Rename("moeconsole.runner.ingest.summary", "render", "render_summary", "the text `moeconsole parse` prints"),
    Rename("moeconsole.runner.recipes.memory_estimate", "render", "render_estimate",
           "the static memory table `moeconsole lint` prints"),
    Rename("moeconsole.runner.recipes.swift.flags", "resolve", "resolve_flags",
           "each --flag as argparse resolves it; resolve finds a run directory (rundir.rundir)"),
    Rename("moeconsole.console.runcolumns", "run_cell", "listed_cell",
           "a cell of a listed run (its age from now, its id as the list shortens it), else format.run_cell"),
    Rename("moeconsole.console.chart", "_sample", "_reduce_to_width",
           "the series reduced to the plot's pixel width; sample reads the CPU times (telemetry.cpustat)"),
    Rename("moeconsole.runner.telemetry.cpustat", "_read_text", "_read_cgroup_file",
           "a cgroup file's first 4 KiB as ASCII, None when unreadable; read_text reads a recipe (rundir.yamlio)"),
    Rename("moeconsole.runner.recipes.recipe_edit", "_scalar", "_scalar_token",
           "a value written as a YAML flow token in the node's quoting; scalar parses a --set value (rundir.yamlio)"),
    Rename("moeconsole.console.chartprefs", "save", "save_prefs", "a recipe's chart choice, beside load_prefs"),
    Rename("moeconsole.runner.rundir.gpuhistory", "save", "save_history", "gpu-history.json, beside load_history"),
    Rename("moeconsole.runner.rundir.ranktimes", "save", "save_rank_times", "ranks.json, beside load_rank_times"),
    Rename("moeconsole.runner.rundir.seriesfile", "save", "save_book", "series.json (the chart book), beside load_book"),
    Rename("moeconsole.runner.recipes.swift.lint", "saves_on_disk", "recipe_saves_on_disk",
           "a recipe's saves on disk at once and why in words; sizes.saves_on_disk is the arithmetic"),
    Rename("moeconsole.runner.core.crash", "_scan", "_scan_tail", "one pass over a crash's log tail"),
    Rename("moeconsole.runner.telemetry.procs", "_scan", "_scan_process_table",
           "every process with its cheap facts and run markers"),
    Rename("moeconsole.runner.telemetry.ranks", "_scan", "_processes_with_run_env",
           "this user's processes whose environment names a run (pid, comm, env)"),
    Rename("moeconsole.runner.rundir.store", "_short", "_clipped_json",
           "a recipe value as JSON text cut to 24 characters for the runs index"),
    Rename("moeconsole.runner.supervisor.launcher", "_short", "_clipped_text",
           "a recipe value as text ((none) for None) cut for the drift line; format.short is an axis magnitude"),
    Rename("moeconsole.console.commands.runs", "_show", "_show_run", "`runs show`: one run printed or as JSON"),
    Rename("moeconsole.console.cli", "suggest", "nearest_by_edits",
           "the known word fewest edits away from a mistyped command or option, or None"),
    Rename("moeconsole.runner.core.schema", "suggest", "did_you_mean",
           "the 'did you mean X?' (difflib) or 'known: ...' phrase of a recipe key error"),
    Rename("moeconsole.console.commands.runs", "table", "aligned_table",
           "left-aligned text columns two spaces apart"),
    Rename("moeconsole.console.commands.receipt", "_table", "_markdown_table", "a receipt's Markdown table"),
    Rename("moeconsole.runner.checkpoints.dtypes", "_table", "_fp8_values",
           "the 256 values an 8-bit float type's bytes decode to"),
    Rename("moeconsole.runner.process.launch", "_tail_lines", "_runner_log_tail",
           "the runner log's last non-empty lines, never through a symlink"),
    Rename("moeconsole.runner.rundir.snapshot", "_tail_lines", "_tail_with_offsets",
           "a log's last complete lines, masked, with the byte offset each starts at"),
    Rename("moeconsole.console.widgets.panes", "_text", "_styled_text",
           "a pane's (line, style) pairs as one rich Text; text (core.schema) is a pattern-checked string"),
    Rename("moeconsole.runner.telemetry.nvmllib", "_text", "_string_query", "an NVML call that fills a string buffer"),
    Rename("moeconsole.console.chart", "_title", "_title_line", "a chart's title: left words, right words flush right"),
    Rename("moeconsole.runner.rundir.alertgroups", "_title", "_group_title", "an alert group's one-line title"),
    Rename("moeconsole.runner.ingest.summary", "_trend_words", "_trend_clause",
           "`parse`'s memory clause over the last steps; trend_words (console.memory) is the state's trend and OOM forecast"),
    Rename("moeconsole.runner.demo.train", "validate", "refuse_bad_settings",
           "the demo trainer's own argument checks; validate is the recipe's (recipes.recipe)"),
    Rename("moeconsole.console.screens.gpu_view", "who", "process_words", "a GPU process in words: rank, role or other"),
    Rename("moeconsole.runner.core.crash", "_who", "_failed_rank_words", "the rank, host and pid a crash's failure names"),
    Rename("moeconsole.console.screens.run", "_show", "_set_display", "a widget shown or hidden, untouched when already so"),
    Rename("moeconsole.runner.rundir.store", "_shown", "without_cache_columns",
           "an index row without its cache columns (runs ls, runs show); errors.shown quotes a value for a message"),
    Rename("moeconsole.runner.checkpoints.dcp_metadata", "_shown", "_quoted_name",
           "a name from .metadata quoted for a message (errors.shown), a non-string by its type"),
    Rename("moeconsole.console.commands.receipt", "sparkline", "curve_sparkline",
           "a curve scaled to its own min and max; gpu_panel.percent_sparkline draws 0-100%"),
    Rename("moeconsole.console.widgets.gpu_panel", "sparkline", "percent_sparkline",
           "a GPU's utilisation history on the 0-100% scale, newest last"),
    Rename("moeconsole.runner.process.waiter", "_start", "_fork_exec",
           "the command forked and exec'd in its own session; run.start starts a run from a recipe"),
    Rename("moeconsole.runner.process.slurm.text", "_state_word", "_job_state_word",
           "Slurm's job state word (CANCELLED by 0 -> CANCELLED); format.state_word is a run's status word"),
    Rename("moeconsole.console.screens.compare", "_step", "_step_cell",
           "a run's step/max_steps cell in compare; lifecycle.step is the lifecycle's transition"),
    Rename("moeconsole.runner.process.pyexec", "command_env", "recipe_command_env",
           "the environment a recipe's command runs with (the caller's less MOECONSOLE_*, the recipe's env over it); "
           "slurm.text.slurm_tool_env is a Slurm command's, swift.lint.swift_launch_env what torchrun counts"),
    Rename("moeconsole.runner.process.slurm.text", "command_env", "slurm_tool_env",
           "the environment of squeue/sacct/scancel/scontrol/sinfo: the user's filter and format variables dropped"),
    Rename("moeconsole.runner.recipes.swift.lint", "command_env", "swift_launch_env",
           "the recipe's env plus an ms-swift config file's ENV, as torchrun's counts read it"),
    Rename("moeconsole.runner.ingest.template", "json_number", "quoted_number_json",
           "the JSON bytes of the number a quoted value's text is, when a template's form holds it"),
    Rename("moeconsole.runner.checkpoints.discover", "_json_number", "_number_as_written",
           "a trainer_state.json value kept as written when it is a number, else None"),
    Rename("moeconsole.console.commands.run", "settled", "settled_after_launch",
           "a started local attempt's state once it logged a step, ended or ran its window"),
    Rename("moeconsole.runner.core.programs", "settled", "can_tell_program",
           "whether the walks' record can tell that no process here ran a traceback's program"),
    Rename("moeconsole.runner.demo.swift_tiny", "missing_modules", "build_modules_missing_here",
           "the tiny model build's modules this interpreter cannot import; swift.probe.modules_missing_in asks another Python"),
    Rename("moeconsole.runner.recipes.swift.probe", "missing_modules", "modules_missing_in",
           "the modules a given Python cannot import, asked in a child of its own (find_spec)"),
    Rename("moeconsole.runner.core.cpu_torch", "torch_pin", "installed_torch_pin",
           "the demo extra's torch pin from the installed package's metadata; scripts/install_torch.py reads pyproject's"),
    Rename("moeconsole.runner.supervisor.judge", "read_tail", "tail_verdicts",
           "the verdicts the judge takes from an ended attempt's tail; ingest.history.read_tail parses a log file's last bytes"),
    Rename("moeconsole.runner.supervisor.judge", "TailRead", "TailVerdicts",
           "what tail_verdicts returns: the job's end, an unread crash, the log's verdict"),
    Rename("moeconsole.runner.supervisor.judge", "_classify", "_classify_ended",
           "crash.classify called with an ended attempt's own facts"),
    Rename("moeconsole.runner.ingest.formats", "llamafactory_restated", "llamafactory_copy",
           "LLaMA-Factory's LogCallback copy of a step's log (its loss, lr, epoch as printed), None if not one"),
)

# (old path, new path): the GPU view screen and the run screen's GPU panel; commands/gpus.py
# stays (commands are named by their CLI word).
MOVES = (
    ("console/screens/gpus.py", "console/screens/gpu_view.py"),
    ("console/widgets/gpus.py", "console/widgets/gpu_panel.py"),
)

SKIP_DIRS = {".git", ".venv", "__pycache__", ".mypy_cache", ".import_linter_cache", "build", "dist"}


def py_files() -> list[Path]:
    out = []
    for top in PY_DIRS:
        for p in sorted((ROOT / top).rglob("*.py")):
            if any(part in SKIP_DIRS for part in p.relative_to(ROOT).parts) or p.is_symlink():
                continue
            if p.resolve() == Path(__file__).resolve():
                continue
            out.append(p)
    return out


def text_files() -> list[Path]:
    out = [ROOT / f for f in TEXT_FILES if (ROOT / f).exists()]
    for top in TEXT_DIRS:
        out += sorted((ROOT / top).rglob("*.md"))
    for extra in ("pyproject.toml", "Makefile"):
        if (ROOT / extra).exists():
            out.append(ROOT / extra)
    return out


def module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    dotted = ".".join(parts)
    return dotted if parts[0] == "tests" or parts[0] in ("bench", "scripts") else "moeconsole." + dotted


def _resolve(node: ast.ImportFrom, here: str) -> str:
    if not node.level:
        return node.module or ""
    base = here.split(".")[: -node.level] if node.level else []
    return ".".join(base + ([node.module] if node.module else []))


@dataclass
class Found:
    bare: bool                       # the file uses ``old`` as this concept by its own name
    aliased_lines: set[int]          # ``from m import old as X``: lines of those imports
    module_aliases: set[str]         # names bound to a carrier module


@dataclass(frozen=True)
class Imp:
    """One imported name: ``from src import name as asname`` (``src`` None: ``import name``)."""
    src: str | None
    name: str
    asname: str | None
    lines: tuple[int, int]


def imports_of(tree: ast.AST, here: str) -> list[Imp]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            src = _resolve(node, here)
            out += [Imp(src, a.name, a.asname, (node.lineno, node.end_lineno or node.lineno)) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [Imp(None, a.name, a.asname, (node.lineno, node.end_lineno or node.lineno)) for a in node.names]
    return out


def scan(imps: list[Imp], here: str, carriers: set[str], old: str) -> Found:
    found = Found(here in carriers, set(), set())
    for i in imps:
        if i.src is None:
            if i.name in carriers and i.asname:
                found.module_aliases.add(i.asname)
        elif i.src in carriers and i.name == old:
            if i.asname is None:
                found.bare = True
            else:
                found.aliased_lines.update(range(i.lines[0], i.lines[1] + 1))
        elif f"{i.src}.{i.name}" in carriers:
            found.module_aliases.add(i.asname or i.name)
    return found


def carriers_of(r: Rename, index: dict[Path, tuple[str, list[Imp]]]) -> set[str]:
    """The defining module and every module that imports the name from a carrier unaliased
    (a re-export: its importers mean the same thing)."""
    out = {r.module}
    while True:
        grown = set(out) | {here for here, imps in index.values()
                            if any(i.src in out and i.name == r.old and i.asname is None for i in imps)}
        if grown == out:
            return out
        out = grown


def rename_tokens(text: str, old: str, new: str, found: Found) -> str:
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    hits: list[tuple[int, int]] = []
    for i, t in enumerate(toks):
        if t.type != tokenize.NAME or t.string != old:
            continue
        prev = next((p for p in reversed(toks[:i]) if p.type not in (tokenize.NL, tokenize.COMMENT)), None)
        after_dot = prev is not None and prev.type == tokenize.OP and prev.string == "."
        if after_dot:
            owner = toks[toks.index(prev) - 1] if toks.index(prev) > 0 else None
            if owner is not None and owner.type == tokenize.NAME and owner.string in found.module_aliases:
                hits.append(t.start)
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        # ``f(Old=1)``: a keyword argument; ``def f(x: Old = d)`` is still the type
        is_kwarg = (nxt is not None and nxt.type == tokenize.OP and nxt.string == "=" and prev is not None
                    and prev.type == tokenize.OP and prev.string in "(," and _in_call(toks, i))
        if is_kwarg:
            continue
        if found.bare or t.start[0] in found.aliased_lines:
            hits.append(t.start)
    if not hits:
        return text
    lines = text.splitlines(keepends=True)
    for row, col in sorted(hits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[col + len(old):]
    return "".join(lines)


def _in_call(toks: list[tokenize.TokenInfo], i: int) -> bool:
    """Is token ``i`` inside parentheses (a keyword argument, not an assignment)?"""
    depth = 0
    for t in reversed(toks[:i]):
        if t.type == tokenize.OP and t.string in ")]}":
            depth += 1
        elif t.type == tokenize.OP and t.string in "([{":
            if depth == 0:
                return t.string == "("
            depth -= 1
        elif t.type == tokenize.NEWLINE:
            return False
    return False


def mention_rx(r: Rename, carriers: set[str], aliases: set[str]) -> re.Pattern[str]:
    names = set(carriers) | {c.rsplit(".", 1)[-1] for c in carriers} | aliases
    names |= {c.removeprefix("moeconsole.") for c in carriers}
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])((?:{alts})\.){re.escape(r.old)}(?!\w)")


def move_paths(text: str) -> str:
    for src, dst in MOVES:
        s_dot, d_dot = src[:-3].replace("/", "."), dst[:-3].replace("/", ".")
        text = re.sub(rf"(?<![\w/]){re.escape(s_dot)}(?![\w])", d_dot, text)
        text = re.sub(rf"(?<![\w.]){re.escape(src)}", dst, text)
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything is left to rename")
    args = ap.parse_args()
    pending: dict[str, set[str]] = {}

    for src, dst in MOVES:
        s, d = ROOT / src, ROOT / dst
        if s.exists() and d.exists():
            print(f"both {src} and {dst} exist: merge them by hand first", file=sys.stderr)
            return 2
        if s.exists():
            pending.setdefault(f"{src} -> {dst}", set()).add(src)
            if not args.check:
                subprocess.run(["git", "-C", str(ROOT), "mv", src, dst], check=True)

    texts: dict[Path, str] = {p: p.read_text() for p in py_files()}
    originals = dict(texts)
    for p, text in texts.items():
        texts[p] = move_paths(text)
        if texts[p] != text:
            pending.setdefault("module paths " + ", ".join(f"{a} -> {b}" for a, b in MOVES), set()).add(
                str(p.relative_to(ROOT)))

    index: dict[Path, tuple[str, list[Imp]]] = {}
    parsed: dict[Path, str] = {}
    for r in RENAMES:
        for p, text in texts.items():
            if parsed.get(p) == text:
                continue
            parsed[p] = text
            try:
                index[p] = (module_of(p), imports_of(ast.parse(text), module_of(p)))
            except SyntaxError as exc:
                index.pop(p, None)
                print(f"{p.relative_to(ROOT)}: not parsed ({exc.msg}); skipped", file=sys.stderr)
        carriers = carriers_of(r, index)
        all_aliases: set[str] = set()
        key = f"{r.module}.{r.old} -> {r.new}  ({r.why})"
        for p, (here, imps) in index.items():
            found = scan(imps, here, carriers, r.old)
            all_aliases |= found.module_aliases
            text = texts[p]
            if r.old not in text:
                continue
            if found.bare or found.aliased_lines or found.module_aliases:
                text = rename_tokens(text, r.old, r.new, found)
            text = mention_rx(r, carriers, found.module_aliases).sub(rf"\g<1>{r.new}", text)
            if text != texts[p]:
                pending.setdefault(key, set()).add(str(p.relative_to(ROOT)))
                texts[p] = text
        rx = mention_rx(r, carriers, all_aliases)
        for p in text_files():
            body = texts.get(p, p.read_text())
            body2 = move_paths(rx.sub(rf"\g<1>{r.new}", body))
            if body2 != body:
                texts[p] = body2
                originals.setdefault(p, p.read_text())
                pending.setdefault(key if rx.search(body) else "module paths (docs)", set()).add(
                    str(p.relative_to(ROOT)))

    for what, files in pending.items():
        print(f"{what}\n    " + "\n    ".join(sorted(files)))
    if args.check:
        return 1 if pending else 0
    for p, text in texts.items():
        if text != originals.get(p):
            p.write_text(text)
    if not pending:
        print("nothing to rename")
    return 0


if __name__ == "__main__":
    sys.exit(main())
