"""Newcomer round 5 (README only, a non-root user, tmux over SSH, keyboard only): where they were
stuck.

One long run name (60 characters) pushed the ID column out of `runs ls` and the run browser at
80 columns: the run still answered to its name, but the short id that `run`, `q` and every
next-step line print was nowhere in the list. The id is a priority column
(``runcolumns.PRIORITY``): the name is cut with … for it, ``--json`` keeps every name whole.
Real processes for the command line (on a pseudo-terminal 80 columns wide), Pilot for the browser."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.runner.rundir.rundir import short_refs
from tests.console.test_console_compare_many import REPO, _ls_in_a_terminal
from tests.waiting import until_ui

LONG = "qwen3-moe-lora-sft-ablation-with-a-long-descriptive-name-lr10"   # 61 characters
IDS = ("20261124-093000-sweep-lr-3-a3f2", f"20261124-094500-{LONG}-9b1c", "20261124-100000-sweep-lr-4-c0de")


def _runs(base, make_run) -> dict[str, str]:
    for run_id in IDS:
        name = run_id.split("-", 2)[2].rsplit("-", 1)[0]
        make_run(base, run_id, name=name, status="succeeded", steps=60, max_steps=100, restart_at=None,
                 recipe={"name": name, "command": ["python3", "train.py"]})
    return short_refs(list(IDS))


def test_a_long_run_name_is_cut_so_runs_ls_keeps_the_id_at_80_columns(base, make_run):
    short = _runs(base, make_run)
    lines = _ls_in_a_terminal(base, 80)
    assert all(len(line) <= 80 for line in lines), lines
    assert "ID" in lines[0].split(), ("the ID column at 80 columns", lines)
    for run_id in IDS:
        row = next((line for line in lines[1:] if short[run_id] in line.split()), None)
        assert row is not None, (run_id, short[run_id], "the id `attach` takes, on its row", lines)
    long_row = next(line for line in lines[1:] if short[IDS[1]] in line.split())
    assert LONG not in long_row and "…" in long_row and long_row.split()[1].startswith("qwen3-moe-lora"), \
        ("the long name cut with a mark", long_row)

    # the data is never cut: --json and a pipe have the whole name and the whole id
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "ls", "--json", "--runs-dir", str(base)],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert LONG in {r["display_name"] for r in json.loads(out.stdout)["runs"]}, out.stdout
    piped = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "--runs-dir", str(base)],
                           capture_output=True, text=True, timeout=120, cwd=REPO).stdout
    assert LONG in piped and IDS[1] in piped, piped


def test_the_browser_keeps_the_id_of_a_run_with_a_long_name_at_80_columns(base, make_run):
    short = _runs(base, make_run)

    async def go() -> list[str]:
        app = MoeConsole(base, None, gpu=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 3)
            await pilot.pause()
            return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]
    lines = asyncio.run(go())
    head = next(line for line in lines if line.split()[:1] == ["STATUS"])
    assert "ID" in head.split(), lines
    for run_id in IDS:
        assert any(short[run_id] in line.split() for line in lines), (run_id, short[run_id], lines)
    assert all(len(line) <= 80 for line in lines)


def _pressed_on_an_ended_run(base, make_run, status: str, presses: str) -> list[str]:
    """The notifications the run screen of a ``status`` run shows after ``presses``."""
    from tests.console.test_console_app import app_for, attached, said_after_each, telemetry
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status=status, restart_at=None)

    async def go() -> list[str]:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            return await said_after_each(pilot, presses)
    return asyncio.run(go())


def test_k_r_and_v_on_a_killed_run_say_what_does_it_instead(base, make_run, monkeypatch):
    """The demo killed (k, y), a newcomer pressed r to restart it and v to verify its checkpoints:
    neither key is in the footer of a run that is over, and the press did nothing, without a
    word. Each now says the run is over and the command that does it (`restart` resumes a killed
    run without --force; the run's short id, as `q` prints it; `--runs-dir` where the runs are not
    where a bare command looks, ``rundir.command_ref``)."""
    monkeypatch.setenv("MOECONSOLE_RUNS_DIR", str(base))   # the runs where a bare command looks
    said = _pressed_on_an_ended_run(base, make_run, "killed", "rkv")
    # where the restart resumes, as `restart` plans it (launch.resume_plan: this recipe has no
    # resume setting; review R51 had found "from the newest verified checkpoint" said regardless)
    assert said[0].startswith("r: the run is KILLED, no runner watches it: in a shell, `moeconsole restart 743b` "
                              "will start attempt "), said
    assert "from step 0 (the recipe has no resume setting)" in said[0], said
    assert "`moeconsole verify 743b`" in said[2] and said[1].startswith("k: the run is KILLED"), said


def test_r_on_a_succeeded_run_names_restart_with_force(base, make_run):
    said = _pressed_on_an_ended_run(base, make_run, "succeeded", "r")
    assert f"`moeconsole restart --force 743b --runs-dir {base}`" in said[0], said


def test_a_sweep_whose_short_ids_take_11_columns_keeps_them_at_80_columns_beside_a_crash(base, make_run):
    """Among 200 runs of a sweep about one id in seven ends in digits only and its short id takes
    the name's last parts with it (`lr-193-1590`: 11 columns, ``rundir.short_refs``); with a
    failed run listed the last crash had kept the room and the ID column was left out."""
    ids = [f"20261124-09{i:02d}00-sweep-lr-{i}-{suffix}" for i, suffix in enumerate(("1590", "a3f2", "5550", "c0de"))]
    for i, run_id in enumerate(ids):
        make_run(base, run_id, name=f"sweep-lr-{i}", status="failed" if i == 1 else "succeeded", steps=60,
                 max_steps=100, restart_at=None, crash={"class": "cuda_oom"} if i == 1 else None,
                 recipe={"name": f"sweep-lr-{i}", "command": ["python3", "train.py"]})
    short = short_refs(ids)
    assert max(len(s) for s in short.values()) == len("lr-0-1590")
    lines = _ls_in_a_terminal(base, 80)
    assert "ID" in lines[0].split() and all(len(line) <= 80 for line in lines), lines
    for run_id in ids:
        assert any(short[run_id] in line.split() for line in lines[1:]), (short[run_id], lines)


def test_names_that_differ_only_at_their_end_keep_that_end_when_cut(base, make_run):
    """A sweep's long names (`…-descriptive-name-lr195`, `…-lr190`) cut at 80 columns had been
    one text, `qwen3-moe-lora-sft-ab…`, on every row (the browser filtered to status:failed: eight
    identical rows). Names a cut would make alike keep where they differ (``runcolumns.cut_apart``)."""
    stem = "qwen3-moe-lora-sft-ablation-with-a-long-descriptive-name"
    ids = [f"20261124-09{i}000-{stem[:30]}-{suffix}" for i, suffix in enumerate(("a3f2", "b4e1", "c0de"))]
    for run_id, lr in zip(ids, ("lr195", "lr190", "lr185")):
        make_run(base, run_id, name=f"{stem}-{lr}", status="failed", steps=60, max_steps=100, restart_at=None,
                 recipe={"name": f"{stem}-{lr}", "command": ["python3", "train.py"]})
    lines = _ls_in_a_terminal(base, 80)
    assert all(len(line) <= 80 for line in lines), lines
    for lr in ("lr195", "lr190", "lr185"):
        row = next((line for line in lines[1:] if line.split()[1].endswith(f"…{lr}")), None)
        assert row is not None and row.split()[1].startswith("qwen3-moe-lora"), (lr, lines)


def test_lint_lists_every_problem_of_a_recipe_with_three_mistakes_and_fix_says_it_wrote_nothing(tmp_path):
    """A copy of the demo recipe with three mistakes (a mistyped key, a word for a number, a floor
    above its ceiling): `lint` had named only the first, one round each; `lint --fix` said only
    the next problem, and the rename it had promised was not written, without a word."""
    text = (REPO / "recipes" / "tiny-moe-cpu.yaml").read_text()
    for good, bad in (("max_restarts: 10", "max_restart: 10"), ("grace_s: 5", "grace_s: five"),
                      ("floor_s: 2", "floor_s: 20")):
        assert good in text
        text = text.replace(good, bad)
    recipe = tmp_path / "my recipe.yaml"
    recipe.write_text(text)

    def lint(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "moeconsole", "lint", *args, str(recipe)], capture_output=True,
                              text=True, timeout=120, cwd=REPO)
    out = lint()
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    for place in ("restart.max_restart: unknown key", "kill.grace_s: expected a number", "cooldown.ceiling_s: must be >="):
        assert place in out.stderr, (place, out.stderr)
    assert out.stderr.rstrip().endswith("3 problems; nothing else is checked until it loads"), out.stderr
    fixed = lint("--fix")
    assert fixed.returncode == 2 and "nothing written" in fixed.stderr.splitlines()[0], fixed.stderr
    assert "kill.grace_s" in fixed.stderr and recipe.read_text() == text and not (tmp_path / "my recipe.yaml.bak").exists()


def test_every_commands_help_names_its_arguments_as_the_readme_does():
    """The README writes `lint RECIPE`, `parse LOGFILE`; `lint --help` said `recipe`, `parse --help`
    `logfile` (and `run --help` RECIPE): one thing, two names."""
    import re
    readme = (REPO / "README.md").read_text()
    for command, word in (("run", "RECIPE"), ("lint", "RECIPE"), ("doctor", "RECIPE"), ("systemd", "RECIPE"),
                          ("service", "RECIPE"), ("parse", "LOGFILE")):
        assert re.search(rf"moeconsole {command} .*{word}", readme), (command, word)
        out = subprocess.run([sys.executable, "-m", "moeconsole", command, "--help"], capture_output=True, text=True,
                             timeout=120, cwd=REPO, env={**__import__("os").environ, "COLUMNS": "80"})
        usage = out.stdout.split("\n\n")[0].replace("[", " ").replace("]", " ").split()
        assert out.returncode == 0 and word in usage and word.lower() not in usage, (command, usage)


def test_a_long_name_cut_at_a_dash_makes_an_id_without_two_dashes(tmp_path):
    """A 61-character name cut to the id's 40 at a `-` had made `...-a-long--0200`: the short id
    shown in the ID column was `long--0200`. `kill NAME` still finds a run named so."""
    out = subprocess.run([sys.executable, "-m", "moeconsole", "run", "--detach", "--runs-dir", str(tmp_path),
                          "--set", f"name={LONG}", "--", "python3", "-c", "pass"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**__import__("os").environ,
                                                                                          "PYTHONPATH": str(REPO)})
    run_id = out.stdout.strip()
    assert run_id and "--" not in run_id, (run_id, out.stderr)
    shown = subprocess.run([sys.executable, "-m", "moeconsole", "runs", "show", LONG, "--runs-dir", str(tmp_path)],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert shown.returncode == 0 and run_id in shown.stdout, shown.stderr
