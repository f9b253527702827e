"""The ``moeconsole`` command line: parses arguments, dispatches to ``moeconsole.console.commands.*``.

Heavy imports (Textual, torch, safetensors) happen inside the command modules, so a quick
``moeconsole kill RUN`` or ``moeconsole --json --once`` never pays for the UI.
Exit codes: 0 success, 1 the checked thing is bad, 2 usage or input error (one line on stderr).
"""
from __future__ import annotations

# First, before the imports below: the process's first CPU sample (a one-shot's host line needs
# 0.1 s between two samples; that interval then runs during start-up instead of in a sleep).
from moeconsole.runner.telemetry import cpustat
cpustat.prime()

import argparse  # noqa: E402
import importlib  # noqa: E402
import sys  # noqa: E402
from typing import Any, Callable, Iterable, NoReturn  # noqa: E402

from moeconsole.runner.core.errors import AmbiguousRun, InputError  # noqa: E402
from moeconsole.runner.core import bounds  # noqa: E402
from moeconsole.console.commands import RUN_COMMAND_HINT  # noqa: E402

COMMANDS = (
    "run", "demo", "attach", "kill", "restart", "verify", "runs", "parse",
    "gpus", "lint", "doctor", "agent", "supervise", "service", "systemd", "prometheus",
)


RUNS_ACTIONS = ("ls", "show", "diff", "rebuild", "receipt")

# Other tools' words for a command here, offered before any typo's near miss (``nearest_by_edits``;
# reviewed R37: `start` had been told `restart`, `list` `lint`, and `runs list` nothing): the verb
# that begins a job elsewhere (`docker start`, `sbatch`'s submit, a trainer's `train`) is `run`,
# the listing (`docker ps`, `kubectl ... list`) is `runs ls`. Only commands that end no process.
OTHER_TOOLS_WORDS = {"start": "run", "launch": "run", "submit": "run", "train": "run",
                     "list": "runs ls", "ps": "runs ls"}
OTHER_TOOLS_RUNS_WORDS = {"list": "ls", "ps": "ls"}   # the same for a `runs` action

# What a RUN argument may be (``rundir.resolve``): every help that names one says it in these words.
# "unique id prefix" was wrong: the ID column of `runs ls` and the browser is the id's end ("b624").
RUN_WORDS = "id or a unique part of it as `runs ls` shows, name or directory"

# One line per command for `moeconsole --help` and `moeconsole help` (the sub-parsers use them too).
COMMAND_HELP = {
    "run": "start a supervised run of a recipe (or of `-- COMMAND ...`), then attach the UI",
    "demo": "run the built-in tiny MoE recipe (CPU, no GPU needed), then attach",
    "attach": f"open the UI on a run ({RUN_WORDS}) or on any training log or output dir; none: the newest live run",
    "kill": "clean kill of a run: SIGTERM, grace period, SIGKILL; no restart",
    "restart": "clean kill, cool down, restart from the latest verified checkpoint",
    "verify": "verify checkpoints (a path or a run's latest) from their headers",
    "runs": "the run index: ls, show RUN, diff A B, receipt RUN, rebuild",
    "parse": "turn any training log into metric records",
    "gpus": "per-GPU telemetry and zombie/blocker processes",
    "lint": "check a recipe before anything is launched",
    "doctor": "the training environment: versions and known-bad combinations",
    "agent": "per-node GPU telemetry agent for a multi-node run",
    "supervise": "(re)start the runner of a run; it adopts live training",
    "service": "the runner of a recipe's run in the foreground (what the systemd unit runs)",
    "systemd": "print a systemd unit that keeps a recipe's runner alive across reboots",
    "prometheus": "print the alert rules, or serve a run's metrics (rules | serve RUN)",
    "help": "this list",
}


def commands_text() -> str:
    width = max(len(c) for c in COMMAND_HELP)
    return "commands:\n" + "\n".join(f"  {c:<{width}}  {h}" for c, h in COMMAND_HELP.items())


class _WrappedEpilog(argparse.RawDescriptionHelpFormatter):
    """The description and the command list keep their lines (``commands_text``), but a line
    wider than the terminal wraps at a word onto lines indented to its text's column: at 80
    columns `moeconsole --help` ran "attach"'s line to 129 characters, which tmux broke
    mid-word ("trai" / "ning log") at the left edge. argparse's own ``_fill_text`` of this
    formatter returns the text unwrapped (CPython Lib/argparse.py, RawDescriptionHelpFormatter)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import re
        import textwrap
        out: list[str] = []
        for line in text.splitlines():
            if len(indent + line) <= width:
                out.append(indent + line)
                continue
            # the hanging indent: where the line's text begins after its name column ("  run   start ...")
            m = re.match(r"(\s*\S+\s{2,})", line)
            hang = indent + " " * (len(m.group(1)) if m else len(line) - len(line.lstrip()))
            out.extend(textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=hang,
                                     break_long_words=False, break_on_hyphens=False))
        return "\n".join(out)


def nearest_by_edits(word: str, known: Iterable[str] = COMMAND_HELP,
                     other_words: dict[str, str] | None = None) -> str | None:
    """The command (or, given ``known``, the option) a near-miss word was probably meant to be
    (`runz` -> `runs`, `--jsn` -> `--json`): another tool's word for it first (``other_words``:
    `start` -> `run`), else the nearest by the one rule (``schema.near_misses``); a command only
    for a typo or a shortening of it (``schema.typo_misses``: `status` is neither of `restart`)."""
    if other_words and word.lower() in other_words:
        return other_words[word.lower()]
    from moeconsole.runner.core.schema import near_misses, typo_misses
    near = (near_misses if word.startswith("-") else typo_misses)(word, known, 1)
    return near[0] if near else None


def unknown_options_text(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """The words of a usage error for options a command does not have: each unknown option with
    its near miss (`--jsn`: did you mean --json?), then where the command's options are listed."""
    known = [o for o in parser._option_string_actions if o.startswith("--")]
    words = []
    for arg in extra:
        option = arg.split("=", 1)[0]
        near = nearest_by_edits(option, known) if option.startswith("--") and known else None
        words.append(f"{arg} (did you mean {near}?)" if near else arg)
    return f"unrecognized arguments: {' '.join(words)}"


def _help_pointer(prog: str) -> str:
    """Where a usage error's next step is: the command's own --help."""
    return f"`{prog} --help` lists its options"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        """One line: what is wrong (an unknown option with its near miss) and the next step."""
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            message = unknown_options_text(self, message[len(prefix):].split())
            if self.prog == "moeconsole run":   # `run python train.py`: the command was meant
                message += f" ({RUN_COMMAND_HINT})"
        # A value refused by its type already says what it wants (`--port: must be a TCP port ...`).
        says_all = message.startswith("argument ") and "expected" not in message
        tail = "" if says_all else f"; {_help_pointer(self.prog)}"
        sys.stderr.write(f"{self.prog}: error: {message}{tail}\n")
        raise SystemExit(2)

    _building = False

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        self._building = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._building = False

    def add_subparsers(self, **kwargs: Any) -> Any:
        self._building = True
        try:
            return super().add_subparsers(**kwargs)
        finally:
            self._building = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        """While the parser is built, argparse makes a formatter only to check an option's metavar
        (``add_argument``) and to put ``moeconsole`` before a command's name (``add_subparsers``,
        before any positional): neither needs the terminal's width (``shutil.get_terminal_size``,
        whose import brings bz2 and lzma: start-up time of every command). Help and usage get it."""
        if self._building:
            make: Any = self.formatter_class   # every HelpFormatter takes a width (typeshed's protocol omits it)
            return make(prog=self.prog, width=80)
        return super()._get_formatter()


def bounded(rng: bounds.Range) -> Callable[[str], Any]:
    """An argparse type for a number in ``rng`` (moeconsole.runner.core.bounds: `--grace nan`, `--interval inf`,
    `--interval 0` and `--port 99999` are refused with one line)."""
    def parse(text: str) -> Any:
        try:
            return bounds.parse(text, rng, "value")
        except bounds.OutOfRange as exc:
            raise argparse.ArgumentTypeError(str(exc).partition(": ")[2]) from None
    parse.__name__ = rng.unit  # argparse names the type in some messages
    return parse


seconds = bounded(bounds.SECONDS)
grace_seconds = bounded(bounds.GRACE)
interval = bounded(bounds.INTERVAL)
port = bounded(bounds.PORT)
port_or_any = bounded(bounds.PORT_OR_ANY)
pid = bounded(bounds.PID)


# The help of the arguments several commands share (`moeconsole COMMAND --help`).
RUN_USAGE = "moeconsole run [options] RECIPE\n       moeconsole run [options] -- COMMAND [ARG ...]"
RUN_HELP = f"the run: {RUN_WORDS}"
RECIPE_HELP = "a recipe file (YAML; the shipped ones are in recipes/, docs/recipes.md)"
READONLY_HELP = "watch only: every key that changes a process is off (a shared screen)"
DETACH_HELP = "start the run and return (the UI is not opened; `moeconsole attach RUN` opens it)"
JSON_HELP = "machine-readable JSON on standard output"


def demo_set_help() -> str:
    """``demo --set``: the fault kinds come from the demo trainer's own list (faultspec.KINDS)."""
    from moeconsole.runner.demo.faultspec import KINDS
    return (f"change the demo recipe: args.fault=oom@40 injects a crash at step 40 (kinds: {', '.join(KINDS)}; "
            "docs/demo.md), args.max_steps=100")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs-dir", help="base directory of runs (default $MOECONSOLE_RUNS_DIR or XDG data dir)")


def build_parser(only: str | None = None) -> _Parser:
    """The parser of every command, or with ``only`` of that one command (what ``main`` builds:
    the other fifteen sub-parsers would only cost start-up time)."""
    def want(name: str) -> bool:
        return only is None or only == name

    top = _Parser(prog="moeconsole", description="Supervise, watch and steer training runs.",
                  formatter_class=_WrappedEpilog, epilog=commands_text())
    sub = top.add_subparsers(dest="command", parser_class=_Parser)

    if want("run"):
        p = sub.add_parser("run", help=COMMAND_HELP["run"], usage=RUN_USAGE)
        p.add_argument("recipe", nargs="?", metavar="RECIPE", help=RECIPE_HELP + "; or, instead, `-- COMMAND ...`: any command, "
                                                 "run as it is from this directory (`moeconsole run -- python my_train.py`)")
        p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="change a recipe value before it is checked: kill.grace_s=30, env.NAME=V, args.max_steps=100 (a flag of the command; repeatable; docs/recipes.md)")
        p.add_argument("--detach", action="store_true", help=DETACH_HELP)
        p.add_argument("--name", help="run name (default: the recipe's name)")
        p.add_argument("--allow-drift", action="store_true", help="resume even if the recipe hash changed")
        p.add_argument("--readonly", action="store_true", help=READONLY_HELP)
        p.add_argument("--no-bell", action="store_true", help="no terminal bell for critical alerts (also MOECONSOLE_BELL=0)")
        _common(p)

    if want("demo"):
        p = sub.add_parser("demo", help=COMMAND_HELP["demo"])
        p.add_argument("--detach", action="store_true", help=DETACH_HELP)
        p.add_argument("--name", help="run name (default: tiny-moe-cpu)")
        p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help=demo_set_help())
        p.add_argument("--readonly", action="store_true", help=READONLY_HELP)
        p.add_argument("--no-bell", action="store_true", help="no terminal bell for critical alerts (also MOECONSOLE_BELL=0)")
        _common(p)

    if want("attach"):
        p = sub.add_parser("attach", help=COMMAND_HELP["attach"])
        p.add_argument("run", nargs="?", metavar="RUN|PATH",
                       help=f"a run ({RUN_WORDS}) or any training log or "
                            "output dir; none: the newest live run, else the run browser")
        p.add_argument("--log-format", metavar="SPEC",
                       help="with a log PATH: its line format, a regex with a (?P<step>...) group or 'kv SEP [STEPKEY]'")
        p.add_argument("--readonly", action="store_true", help=READONLY_HELP)
        p.add_argument("--no-bell", action="store_true", help="no terminal bell for critical alerts (also MOECONSOLE_BELL=0)")
        _common(p)

    if want("kill"):
        p = sub.add_parser("kill", help=COMMAND_HELP["kill"])
        p.add_argument("run", metavar="RUN", help=RUN_HELP)
        p.add_argument("--grace", type=grace_seconds, help="override the recipe's kill grace (seconds)")
        p.add_argument("--timeout", type=seconds, default=None, help="seconds to wait for the kill to finish")
        p.add_argument("--machine-gone", action="store_true",
                       help="the run's runner ran on another machine, now gone for good: record the run killed "
                            "without signalling anything (refused while its state.json is still written)")
        _common(p)

    if want("restart"):
        p = sub.add_parser("restart", help=COMMAND_HELP["restart"])
        p.add_argument("run", metavar="RUN", help=RUN_HELP)
        p.add_argument("--now", action="store_true", help="skip the cooldown floor")
        p.add_argument("--force", action="store_true", help="restart a run that already finished (succeeded or unsaved)")
        p.add_argument("--from", dest="resume_from", metavar="CHECKPOINT",
                       help="resume the next attempt from this save of the run (its directory name, e.g. "
                            "checkpoint-40, or its step), not the newest; it must verify ok")
        _common(p)

    if want("verify"):
        p = sub.add_parser("verify", help=COMMAND_HELP["verify"])
        p.add_argument("target", metavar="PATH|RUN", nargs="?", default=None,
                       help="a checkpoint, a directory of checkpoints, or a run (its checkpoints, newest first); "
                            "none: the newest live run, else the newest run")
        p.add_argument("--full", action="store_true", help="hash content and scan for NaN/inf")
        p.add_argument("--compare", metavar="OTHER", help="compare the tensors with this other checkpoint")
        p.add_argument("--json", action="store_true", help=JSON_HELP)
        p.add_argument("--wait", type=seconds, nargs="?", const=600.0, default=None, metavar="SECONDS",
                       help="wait (up to SECONDS, default 600) for saves still being written to settle, then verify")
        p.add_argument("--settle", type=seconds, default=2.0, metavar="SECONDS",
                       help="with --wait: how long a save's files must stay unchanged (default 2)")
        p.add_argument("--prune-superseded", action="store_true",
                       help="list earlier attempts' v<N>-<time>/ dirs a later verified save went beyond (never the resume point)")
        p.add_argument("--yes", action="store_true", help="with --prune-superseded: remove them")
        _common(p)

    if want("runs"):
        p = sub.add_parser("runs", help=COMMAND_HELP["runs"])
        # One positional list: argparse cannot give two positionals their values when options
        # stand between them (`runs show --json RUN`).
        p.add_argument("words", nargs="*", metavar="ls|show RUN|diff A B|rebuild|receipt RUN",
                       help="ls: every run (the default); show RUN: one run; diff A B: two runs side by side; "
                            "rebuild: the index from the run directories; receipt RUN: a run's summary for a report")
        p.add_argument("--json", action="store_true", help=JSON_HELP)
        p.add_argument("--md", action="store_true", help="receipt: markdown with a loss plot (the default)")
        p.add_argument("--full", action="store_true", help="receipt: hash every checkpoint's content")
        p.add_argument("--out", metavar="DIR", help="receipt: write receipt.json, receipt.md and loss.png here")
        p.add_argument("--since", metavar="WHEN",
                       help="ls: only runs started since WHEN: an age (2d, 12h, 30m, 1w) or a date "
                            "(2026-11-20, 2026-11-20T14:30, today, yesterday)")
        _common(p)

    if want("parse"):
        p = sub.add_parser("parse", help=COMMAND_HELP["parse"])
        p.add_argument("logfile", metavar="LOGFILE", help="a training log, or a directory holding one ('-': standard input)")
        p.add_argument("--json", action="store_true", help="one JSON record per line instead of the summary")
        p.add_argument("--eval", action="store_true", help="with --json: the evaluation results instead of the steps")
        p.add_argument("--no-monitors", action="store_true", help="skip the divergence monitors (summary mode)")
        p.add_argument("--crash", action="store_true",
                       help="classify the crash at the end of the log (or a pasted crash text; LOGFILE '-' reads stdin)")
        p.add_argument("--log-format", metavar="SPEC",
                       help="declare the line format: a regex with a (?P<step>...) group (and loss, ...), or 'kv SEP [STEPKEY]'")
        p.add_argument("--explain", action="store_true",
                       help="each line shape: which reader took it, what it gave, and the lines skipped with the reason")

    if want("gpus"):
        p = sub.add_parser("gpus", help=COMMAND_HELP["gpus"])
        p.add_argument("--json", action="store_true", help=JSON_HELP)
        p.add_argument("--port", type=port_or_any, default=29500, help="rendezvous port to check for holders (0: none)")
        p.add_argument("--kill", type=pid, action="append", metavar="PID", help="kill this listed process (repeatable)")
        p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        p.add_argument("--grace", type=grace_seconds, default=10.0, help="seconds between SIGTERM and SIGKILL")
        p.add_argument("--allow-other-users", action="store_true", help="as root: allow killing other users' processes")
        _common(p)

    if want("lint"):
        p = sub.add_parser("lint", help=COMMAND_HELP["lint"])
        p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
        p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="change a recipe value before it is checked: kill.grace_s=30, env.NAME=V, args.max_steps=100 (a flag of the command; repeatable; docs/recipes.md)")
        p.add_argument("--fix", action="store_true", help="write the corrected recipe (the original kept as .bak)")
        p.add_argument("--model-config", metavar="PATH",
                       help="the model's config.json (or its directory) for the static memory estimate")
        p.add_argument("--json", action="store_true", help=JSON_HELP)

    if want("doctor"):
        p = sub.add_parser("doctor", help=COMMAND_HELP["doctor"])
        p.add_argument("recipe", nargs="?", metavar="RECIPE", help="inspect the Python this recipe trains with (swift.python)")
        p.add_argument("--python", help="inspect this Python (or venv) instead of moeconsole's own")
        p.add_argument("--json", action="store_true", help=JSON_HELP)

    if want("agent"):
        p = sub.add_parser("agent", help=COMMAND_HELP["agent"])
        p.add_argument("run", metavar="RUN", help=RUN_HELP)
        p.add_argument("--interval", type=interval, default=bounds.REFRESH_S, help="seconds between snapshots (default 1)")
        _common(p)

    if want("supervise"):
        p = sub.add_parser("supervise", help=COMMAND_HELP["supervise"])
        p.add_argument("run_dir", metavar="RUN", help=RUN_HELP)
        _common(p)

    if want("service"):
        p = sub.add_parser("service", help=COMMAND_HELP["service"])
        p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
        p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="change a recipe value before it is checked: kill.grace_s=30, env.NAME=V, args.max_steps=100 (a flag of the command; repeatable; docs/recipes.md)")
        _common(p)

    if want("systemd"):
        p = sub.add_parser("systemd", help=COMMAND_HELP["systemd"])
        p.add_argument("recipe", metavar="RECIPE", help=RECIPE_HELP)
        p.add_argument("--user", action="store_true", help="a user unit (systemctl --user)")
        p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="change a recipe value before it is checked: kill.grace_s=30, env.NAME=V, args.max_steps=100 (a flag of the command; repeatable; docs/recipes.md)")
        _common(p)

    if want("prometheus"):
        p = sub.add_parser("prometheus", help=COMMAND_HELP["prometheus"])
        p.add_argument("action", choices=("rules", "serve"),
                       help="rules: print the Prometheus alert rules; serve RUN: export the run's metrics")
        p.add_argument("run", nargs="?", metavar="RUN", help="with serve: " + RUN_HELP)
        p.add_argument("--port", type=port_or_any, help="serve /metrics on this port (0: any free one)")
        p.add_argument("--addr", default="127.0.0.1", help="bind address (default loopback)")
        p.add_argument("--textfile", help="write metrics here for node_exporter's textfile collector")
        p.add_argument("--interval", type=interval, default=15.0, help="seconds between metric updates (default 15)")
        _common(p)
    return top


def build_top_parser() -> _Parser:
    """The command-less form: ``moeconsole [--json [RUN] [--once] [--interval S]]``."""
    top = _Parser(prog="moeconsole", usage="moeconsole [COMMAND] ...\n       moeconsole --json [RUN] [--once]",
                  description="With no command: attach to the newest live run, or open the run browser.\n"
                              "`moeconsole COMMAND --help` describes a command's options.",
                  formatter_class=_WrappedEpilog, epilog=commands_text())
    top.add_argument("run", nargs="?", metavar="RUN", help=f"with --json: the run ({RUN_WORDS}), "
                                                          "or a training log or output dir not made by moeconsole")
    top.add_argument("--json", action="store_true", help="headless NDJSON snapshots")
    top.add_argument("--once", action="store_true", help="with --json: one snapshot, then exit")
    top.add_argument("--interval", type=interval, default=bounds.REFRESH_S, help="with --json: seconds between snapshots")
    top.add_argument("--readonly", action="store_true", help=READONLY_HELP)
    top.add_argument("--no-gpu", action="store_true", help="skip GPU telemetry in snapshots")
    _common(top)
    return top


def _command_first(argv: list[str]) -> list[str]:
    """``moeconsole --runs-dir DIR demo``: options before the command, as `git -C DIR log` takes
    them. The command-less parser read ``demo`` as a RUN and said "unknown command 'demo': did you
    mean `moeconsole demo`?", the very word typed. The command goes first, the options after it,
    for its own parser to take or refuse. Which options take a value is the command-less parser's
    own table (``build_top_parser``); ``--`` ends the options (`run -- COMMAND`)."""
    if not argv or not argv[0].startswith("-") or argv[0] in ("-h", "--help"):
        return argv
    valued = {s for action in build_top_parser()._actions if action.nargs != 0 for s in action.option_strings}
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i += 2 if argv[i] in valued else 1
    if i < len(argv) and argv[i] in COMMANDS:
        return [argv[i], *argv[:i], *argv[i + 1:]]
    return argv


def _first_positional(argv: list[str]) -> str | None:
    for a in argv:
        if not a.startswith("-"):
            return a
    return None


def main(argv: list[str] | None = None) -> int:
    if sys.stdout is None:   # started with standard output closed (`moeconsole runs ls >&-`)
        if sys.stderr is not None:
            sys.stderr.write("moeconsole: standard output is closed; give it somewhere to go "
                             "(`>/dev/null` discards it)\n")
        return 2
    own_process = argv is None   # the process's own command line, not a caller in the same process
    if own_process:
        _encodable_output()
    argv = _command_first(list(sys.argv[1:] if argv is None else argv))
    first = _first_positional(argv)
    if first == "help" and argv and argv[0] == "help":
        build_top_parser().print_help()
        return 0
    try:
        if first in COMMANDS and (argv and argv[0] == first):
            command_argv = None
            if first == "run" and "--" in argv:   # `run [options] -- COMMAND ...`: the rest is the command
                cut = argv.index("--")
                argv, command_argv = argv[:cut], argv[cut + 1:]
            parser = build_parser(only=first)
            args, extra = parser.parse_known_args(argv)
            name = args.command
            if extra and (name != "runs" or any(e.startswith("-") for e in extra)):
                command = parser._subparsers._group_actions[0].choices[name]   # type: ignore[union-attr,index]
                command.error(f"unrecognized arguments: {' '.join(extra)}")
            if name == "run":
                args.command_argv = command_argv
                if command_argv is not None and args.recipe is not None:
                    raise InputError(f"run: give a recipe ({args.recipe}) or a command after --, not both")
                if command_argv is None and args.recipe is None:
                    raise InputError(f"run: which recipe? `moeconsole run RECIPE` (shipped ones are in recipes/), "
                                     f"or {RUN_COMMAND_HINT}")
            if name == "runs":
                args.words += extra
                args.action, args.ids = (args.words[0], args.words[1:]) if args.words else ("ls", [])
                if args.action not in RUNS_ACTIONS:
                    # a typo's near miss, as for a command (`runs lss` had only the list)
                    near = nearest_by_edits(args.action, RUNS_ACTIONS, OTHER_TOOLS_RUNS_WORDS)
                    meant = f"did you mean `moeconsole runs {near}`? " if near else ""
                    raise InputError(f"runs: unknown action {args.action!r} ({meant}choose from {', '.join(RUNS_ACTIONS)})")
        else:
            args = build_top_parser().parse_args(argv)
            if args.run is not None and not args.json:
                raise InputError(_unknown_command(args.run))
            name = "json" if args.json else "attach"
        _check_runs(args)
        if own_process and name in UI_COMMANDS and not getattr(args, "detach", False):
            from moeconsole.console import glyphs
            glyphs.ask_tmux_early()   # the answer is ready when the terminal driver is made
        module = importlib.import_module(f"moeconsole.console.commands.{name}")
        code = int(module.run(args) or 0)
        if own_process and name in QUICK_EXIT:
            quick_exit(code)
        return code
    except AmbiguousRun as exc:
        # the command typed again with one id in place of the name: the next thing to type
        from moeconsole.runner.core import shellwords
        again = list(argv)
        if exc.ref in again:
            again[again.index(exc.ref)] = exc.pick
        sys.stderr.write(f"moeconsole: {exc}; name one: `{shellwords.join(['moeconsole', *again])}`\n")
        return 2
    except InputError as exc:
        sys.stderr.write(f"moeconsole: {exc}\n")
        return 2
    except (PermissionError, IsADirectoryError, NotADirectoryError, FileNotFoundError) as exc:
        # A file the user named or may not read: one line, as for any other input problem.
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        from moeconsole.runner.rundir import rundir
        if isinstance(exc, PermissionError) and isinstance(exc.filename, str) and \
                (refusal := rundir.closed_refusal(exc.filename, exc.filename)):   # another user's directory: whose
            sys.stderr.write(f"moeconsole: {refusal}\n")
            return 2
        sys.stderr.write(f"moeconsole: {where}{exc.strerror or exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `moeconsole --json | head`: the reader left; nothing to report.
        try:
            sys.stdout = open("/dev/null", "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0


def _encodable_output() -> None:
    """Standard output and error whose encoding cannot carry every character we print (a latin-1
    locale on an old cluster, ``PYTHONIOENCODING=ascii``): a character it lacks is written as its
    ASCII stand-in (``glyphs.to_ascii``: ``—`` as ``-``, ``…`` as ``~``) instead of ending the
    command in a UnicodeEncodeError traceback (`runs ls` did, on its first ``—``). A terminal
    that cannot show UTF-8 though Python writes it (``LANG=C`` in tmux: Python's PEP 538 makes
    it UTF-8, tmux shows that client ``_`` for each such character: `runs ls`'s ``—``, `doctor`'s)
    gets the stand-ins too, by the console's own decision (``glyphs.ascii_only``)."""
    import codecs
    import contextlib
    streams = [s for s in (sys.stdout, sys.stderr)
               if s is not None and codecs.lookup(getattr(s, "encoding", None) or "utf-8").name != "utf-8"]
    ttys = [s for s in (sys.stdout, sys.stderr) if s is not None and s not in streams and _isatty(s)]
    if ttys:
        from moeconsole.console import glyphs
        if glyphs.ascii_only():
            for stream in ttys:
                with contextlib.suppress(AttributeError, ValueError):
                    stream.reconfigure(encoding="ascii")   # type: ignore[union-attr]
                    streams.append(stream)
    if not streams:
        return
    from moeconsole.console.glyphs import to_ascii
    from moeconsole.runner.core import shellwords
    # a path in a printed command is then written as a word the shell reads back as that path
    # (``shellwords.quote``), not as stand-ins that name another directory
    shellwords.ASCII_OUTPUT[0] = True

    def stand_in(exc: UnicodeError) -> tuple[str, int]:
        if not isinstance(exc, UnicodeEncodeError):
            raise exc
        return to_ascii(exc.object[exc.start:exc.end]), exc.end
    codecs.register_error("moeconsole-ascii", stand_in)
    for stream in streams:
        try:
            stream.reconfigure(errors="moeconsole-ascii")   # type: ignore[union-attr]
        except (AttributeError, ValueError):   # not a TextIOWrapper (a caller's own stream)
            pass


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


# The one-shot commands (a script may run them every second) whose process ends as soon as their
# output is out: they hold no file open for writing, start no thread and register nothing at
# exit, so the interpreter's teardown (freeing ~150 modules: about 10 ms of CPU) is skipped.
QUICK_EXIT = frozenset({"json", "gpus"})
# The commands that open the Textual console in this process (run and demo unless --detach).
UI_COMMANDS = frozenset({"attach", "run", "demo"})


def quick_exit(code: int) -> NoReturn:
    """End the process now with ``code``, once what it printed is out (``os._exit``: no
    interpreter teardown). A reader that left (``| head``) is no error, as in ``main``."""
    import os
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (BrokenPipeError, ValueError):
            pass
    os._exit(code)


def _check_runs(args: argparse.Namespace) -> None:
    """Every RUN (or PATH|RUN) argument before any command looks at it: an empty one is a usage
    error everywhere (``kill ""`` must never mean "the newest live run"), an overlong one too."""
    from moeconsole.runner.rundir.rundir import check_ref
    for attr in ("run", "run_dir", "target", "compare"):
        value = getattr(args, attr, None)
        if value is not None:
            check_ref(value)
    for value in getattr(args, "ids", None) or []:
        check_ref(value)


def _unknown_command(word: str) -> str:
    """One line for a word that is not a command (a run is opened with `attach RUN`)."""
    from moeconsole.runner.core.shellwords import quote
    near = nearest_by_edits(word, COMMAND_HELP, OTHER_TOOLS_WORDS)
    hint = f"did you mean `moeconsole {near}`? " if near else ""
    return (f"unknown command {word!r}: {hint}commands: {', '.join(COMMANDS)}; "
            f"`moeconsole runs` lists the runs, `moeconsole attach {quote(word)}` opens one; `moeconsole --help` says more")


if __name__ == "__main__":
    raise SystemExit(main())
