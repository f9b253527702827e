"""The command line as a user types it: words and options in any order, one-line errors."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=60)


def test_runs_words_may_follow_options(tmp_path):
    out = cli("runs", "--runs-dir", str(tmp_path), "rebuild")
    assert out.returncode == 0 and "indexed 0 runs" in out.stdout
    out = cli("runs", "show", "--runs-dir", str(tmp_path), "nosuch")
    assert out.returncode == 2 and out.stderr.strip() == (f"moeconsole: no run matches 'nosuch' under {tmp_path}; there are "
                                                          "none: start one with `moeconsole run RECIPE`, or try the "
                                                          "built-in `moeconsole demo`")


def test_usage_errors_are_one_line_exit_2(tmp_path):
    for args in (("kill", "a", "b"), ("runs", "bogus"), ("kill",), ("verify", "--settle")):
        out = cli(*args)
        assert out.returncode == 2, args
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, (args, out.stderr)


def test_unknown_run_for_kill_and_json(tmp_path):
    for args in (("kill", "nope"), ("--json", "nope", "--once")):
        out = cli(*args, "--runs-dir", str(tmp_path))
        assert out.returncode == 2 and out.stderr.startswith("moeconsole: no run"), out.stderr


def test_a_run_not_found_names_the_next_step(tmp_path):
    """`verify nothere` / `kill nope` said only "no run matches": with runs under the base the line
    says where they are listed."""
    (tmp_path / "20260101-000000-x-abcd").mkdir()
    (tmp_path / "20260101-000000-x-abcd" / "state.json").write_text('{"v": 1, "status": "succeeded", "name": "x"}')
    for args in (("kill", "nope"), ("verify", "nope")):
        out = cli(*args, "--runs-dir", str(tmp_path))
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert f"no run matches 'nope' under {tmp_path}; `moeconsole runs` lists them" in out.stderr, out.stderr
    # typed as a path (`attach /data/run1/train.log` with a typo): the path is what is missing
    out = cli("kill", str(tmp_path / "no" / "train.log"), "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and out.stderr.strip() == (f"moeconsole: {tmp_path}/no/train.log: no such file or "
                                                          f"directory (nor a run of that name under {tmp_path})")


def test_help_lists_every_command_with_one_line():
    from moeconsole.console.cli import COMMANDS
    for args in (("--help",), ("help",)):
        out = cli(*args)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        for command in COMMANDS:
            # an entry starts at the command's own column (a wrapped entry goes on under its text)
            row = [line for line in lines if line.startswith("  ") and line.split()[:1] == [command]
                   and not line.startswith("   ")]
            assert len(row) == 1 and len(row[0].split()) > 3, (command, out.stdout)


def test_unknown_word_gives_usage_and_suggests_the_near_command(tmp_path):
    out = cli("runz", "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "did you mean `moeconsole runs`?" in out.stderr and "no run matches" not in out.stderr
    out = cli("frobnicate", "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and "unknown command 'frobnicate'" in out.stderr and "did you mean" not in out.stderr


def test_a_command_parses_the_same_with_only_its_own_parser_built():
    """``main`` builds the sub-parser of the command typed, not all sixteen (start-up time of a
    one-shot `gpus --json`): every command line parses to the same arguments and gives the same
    help and the same usage error as with the whole tree."""
    import contextlib
    import io

    import pytest

    from moeconsole.console.cli import COMMANDS, build_parser
    lines = {"run": ["run", "r.yaml", "--set", "a=1", "--detach"], "demo": ["demo", "--detach"],
             "attach": ["attach", "x", "--readonly"], "kill": ["kill", "x", "--grace", "3"],
             "restart": ["restart", "x", "--now"], "verify": ["verify", "p", "--wait"],
             "runs": ["runs", "show", "x", "--json"], "parse": ["parse", "l.log", "--json"],
             "gpus": ["gpus", "--json", "--port", "0"], "lint": ["lint", "r.yaml", "--json"],
             "doctor": ["doctor", "--json"], "agent": ["agent", "x", "--interval", "2"],
             "supervise": ["supervise", "x"], "service": ["service", "r.yaml"],
             "systemd": ["systemd", "r.yaml", "--user"], "prometheus": ["prometheus", "rules"]}
    assert set(lines) == set(COMMANDS)
    for name, argv in lines.items():
        one = build_parser(only=name)
        assert list(one._subparsers._group_actions[0].choices) == [name]  # type: ignore[union-attr]
        assert one.parse_known_args(argv) == build_parser().parse_known_args(argv), name
        outs = []
        for parser in (one, build_parser()):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), pytest.raises(SystemExit):
                parser.parse_args(argv + ["--no-such-option"])
            outs.append(err.getvalue())
        assert outs[0] == outs[1] and "--no-such-option" in outs[0], name


def test_a_mistyped_option_names_the_near_one_and_where_the_options_are(tmp_path):
    """A newcomer's `runs --jsn` said only "unrecognized arguments: --jsn": one line that names the
    option meant and the next step, for a command's option and for the command-less form."""
    out = cli("runs", "--jsn", "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "--jsn (did you mean --json?)" in out.stderr and "`moeconsole runs --help`" in out.stderr, out.stderr
    out = cli("demo", "--detatch")
    assert out.returncode == 2 and "did you mean --detach?" in out.stderr and "`moeconsole demo --help`" in out.stderr
    out = cli("--jsn")
    assert out.returncode == 2 and "did you mean --json?" in out.stderr and "`moeconsole --help`" in out.stderr
    out = cli("kill")
    assert out.returncode == 2 and "required: RUN" in out.stderr and "`moeconsole kill --help`" in out.stderr
    out = cli("runs", "--zzzzzz", "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and "did you mean" not in out.stderr and "--zzzzzz" in out.stderr


def test_every_argument_of_every_command_says_what_it_is():
    """`moeconsole COMMAND --help` is what a newcomer reads: no option or positional without a line
    (`demo --set`, `--detach`, `--readonly`, `--json`, `kill RUN` had none), and `demo --help` names
    the crashes the demo can inject, from the trainer's own list."""
    import argparse

    from moeconsole.console.cli import build_parser, build_top_parser
    from moeconsole.runner.demo.faultspec import KINDS
    top = build_parser()
    parsers = {"moeconsole": build_top_parser(),
               **top._subparsers._group_actions[0].choices}  # type: ignore[union-attr]
    bare = [(name, action.dest) for name, parser in parsers.items() for action in parser._actions
            if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()]
    assert bare == []
    out = cli("demo", "--help")
    assert out.returncode == 0 and all(kind in out.stdout for kind in KINDS), out.stdout


def test_one_near_miss_rule_for_commands_options_and_recipe_keys(tmp_path):
    """The CLI (fewest edits) and the recipe (difflib) had two rules and gave the same word
    different answers: `superv` was no command's near miss (3 edits) while a recipe key that far
    off got one. One rule now (``schema.near_misses``) for both."""
    from moeconsole.console.cli import COMMANDS
    from moeconsole.runner.core.schema import did_you_mean, near_misses
    out = cli("superv", "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and "did you mean `moeconsole supervise`?" in out.stderr, out.stderr
    assert near_misses("superv", COMMANDS, 1) == ["supervise"] and "supervise" in did_you_mean("superv", COMMANDS)
    assert near_misses("runz", COMMANDS)[0] == "runs" and near_misses("rnu", COMMANDS)[0] == "run"
    assert near_misses("init", ["init_done", "gpus"]) == ["init_done"]
    assert near_misses("frobnicate", COMMANDS) == [] and near_misses("--zzzzzz", ["--json", "--detach"]) == []


def test_a_run_name_that_matches_several_runs_names_the_command_with_one_id(tmp_path):
    """`moeconsole kill my_own_train` after the script ran twice (one run ended, one paused) listed
    both ids and left the user to build the command: the line now says which is which and gives
    the command typed again with the id of the live run (else the newest), options kept."""
    runs = {"20260101-000000-my_own_train-aaaa": ("paused", 100.0),
            "20260102-000000-my_own_train-bbbb": ("succeeded", 200.0)}
    for run_id, (status, started) in runs.items():
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "state.json").write_text(
            f'{{"v": 1, "status": "{status}", "name": "my_own_train", "started_at": {started}}}')
    out = cli("kill", "--runs-dir", str(tmp_path), "my_own_train")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    # each by its short id (the whole ids had wrapped the line mid-id at 80 columns)
    assert "'my_own_train' matches 2 runs: bbbb (succeeded), aaaa (paused)" in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith(
        f"name one: `moeconsole kill --runs-dir {tmp_path} aaaa`"), out.stderr
    # none live: the newest; a command whose RUN follows other words keeps them where they were
    (tmp_path / "20260101-000000-my_own_train-aaaa" / "state.json").write_text(
        '{"v": 1, "status": "killed", "name": "my_own_train", "started_at": 100.0}')
    out = cli("runs", "show", "my_own_train", "--json", "--runs-dir", str(tmp_path))
    assert out.returncode == 2 and out.stderr.rstrip().endswith(
        f"name one: `moeconsole runs show bbbb --json --runs-dir {tmp_path}`"), out.stderr


def test_attach_of_a_directory_without_a_log_says_what_is_there_and_what_to_type(tmp_path):
    """`moeconsole attach out` on the output directory of one's own script (checkpoints, no log it
    knows) answered "not a run directory ...; a training log or output directory opens with
    `moeconsole attach out`": the command just typed. It says what it looked for, and names the
    commands that do read it: attach of the log file itself, verify of its checkpoints."""
    import torch
    from safetensors.torch import save_file
    out = tmp_path / "out"
    (out / "ckpt_25").mkdir(parents=True)
    save_file({"w": torch.zeros(2)}, str(out / "ckpt_25" / "model.safetensors"))
    res = cli("attach", str(out), "--runs-dir", str(tmp_path / "runs"))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert f"opens with `moeconsole attach {out}`" not in res.stderr, res.stderr
    assert f"{out}: no log found" in res.stderr, res.stderr
    assert f"`moeconsole attach {out}/LOGFILE`" in res.stderr and f"`moeconsole verify {out}`" in res.stderr, \
        res.stderr
    # nothing there at all: no verify offered
    (tmp_path / "empty").mkdir()
    res = cli("attach", str(tmp_path / "empty"), "--runs-dir", str(tmp_path / "runs"))
    assert res.returncode == 2 and "no log found" in res.stderr and "verify" not in res.stderr, res.stderr
