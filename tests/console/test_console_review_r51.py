"""Review R51 of newcomer round 5: `lint`'s list of every problem of a recipe that does not load.

A rule across keys broken only by a default standing in for a refused value is not the user's
(``schema.SettingsError.across``, ``recipe.every_problem``); the list goes on past values given
by ``--set`` and past such rules, and says when it is cut; `lint --fix` says its own reason for
writing nothing. Real processes on copies of the demo recipe."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.console.test_console_compare_many import REPO, _ls_in_a_terminal

DEMO = (REPO / "recipes" / "tiny-moe-cpu.yaml").read_text()


def _recipe(tmp_path, *edits: tuple[str, str], name: str = "r.yaml"):
    text = DEMO
    for good, bad in edits:
        assert good in text, good
        text = text.replace(good, bad)
    path = tmp_path / name
    path.write_text(text)
    return path


def _lint(path, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "moeconsole", "lint", str(path), *args], capture_output=True,
                         text=True, timeout=120, cwd=REPO)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    return out


@pytest.mark.parametrize("edits, refused, unsaid", [
    # the user's floor 2s refused: the default floor 10 is no reason to call ceiling 8 wrong
    ((("floor_s: 2", "floor_s: 2s"), ("ceiling_s: 15", "ceiling_s: 8")), "cooldown.floor_s: expected a number",
     "ceiling_s: must be >="),
    # the user's backoff_max_s 30min refused: the default 600 is no reason to call 900 wrong
    ((("backoff_initial_s: 2", "backoff_initial_s: 900"), ("backoff_max_s: 20", "backoff_max_s: 30min")),
     "restart.backoff_max_s: expected a number", "must not exceed"),
])
def test_a_rule_across_keys_broken_only_by_a_default_that_stood_in_is_not_listed(tmp_path, edits, refused, unsaid):
    out = _lint(_recipe(tmp_path, *edits, ("grace_s: 5", "grace_s: five")))
    assert refused in out.stderr and "kill.grace_s: expected a number" in out.stderr, out.stderr
    assert unsaid not in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith("2 problems; nothing else is checked until it loads"), out.stderr


def test_a_rule_across_two_values_the_user_wrote_is_still_listed_beside_a_refused_one(tmp_path):
    """The other way: floor 30 over ceiling 15, both written, next to a refused key of the same section."""
    out = _lint(_recipe(tmp_path, ("floor_s: 2", "floor_s: 30"), ("poll_s: 0.25", "poll_s: 250ms")))
    assert "cooldown.poll_s: expected a number" in out.stderr, out.stderr
    assert "cooldown.ceiling_s: must be >= cooldown.floor_s (15 < 30)" in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith("2 problems; nothing else is checked until it loads"), out.stderr


def test_three_seconds_with_a_unit_are_listed_all_three(tmp_path):
    """The commonest newcomer mistake: the default backoff_initial_s 30 over the file's
    backoff_max_s 20 had ended the list after one line, with no count."""
    out = _lint(_recipe(tmp_path, ("backoff_initial_s: 2", "backoff_initial_s: 2s"), ("grace_s: 5", "grace_s: 5s"),
                        ("poll_s: 0.25", "poll_s: 250ms")))
    for place in ("restart.backoff_initial_s", "kill.grace_s", "cooldown.poll_s"):
        assert f"{place}: expected a number" in out.stderr, (place, out.stderr)
    assert out.stderr.rstrip().endswith("3 problems; nothing else is checked until it loads"), out.stderr


def test_values_given_by_set_are_each_listed_with_the_files_own(tmp_path):
    """--set items are applied again on every pass: one refused had stood in every pass."""
    path = _recipe(tmp_path)
    out = _lint(path, "--set", "kill.grace_s=5s", "--set", "cooldown.poll_s=250ms")
    assert "--set kill.grace_s=5s: expected a number" in out.stderr, out.stderr
    assert "--set cooldown.poll_s=250ms: expected a number" in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith("2 problems; nothing else is checked until it loads"), out.stderr
    three = _recipe(tmp_path, ("max_restarts: 10", "max_restart: 10"), ("grace_s: 5", "grace_s: five"),
                    ("floor_s: 2", "floor_s: 20"), name="three.yaml")
    out = _lint(three, "--set", "restart.max_restarts=ten", "--set", "kill.bogus=1")
    for line in ("restart.max_restart: unknown key", "--set restart.max_restarts=ten: expected a whole number",
                 "--set kill.bogus=1: unknown key", "cooldown.ceiling_s: must be >=", "kill.grace_s: expected a number"):
        assert line in out.stderr, (line, out.stderr)
    assert out.stderr.rstrip().endswith("5 problems; nothing else is checked until it loads"), out.stderr


def test_a_list_that_is_cut_says_so_and_its_count_is_not_the_total(tmp_path):
    many = _recipe(tmp_path, ("cost_per_hour: 0.05", "cost_per_hour: 0.05\n" + "".join(
        f"extra_key_{i}: 1\n" for i in range(25))))
    out = _lint(many)
    assert out.stderr.count("unknown key") == 20, out.stderr
    assert "20 problems; nothing else" not in out.stderr and "the list is cut" in out.stderr, out.stderr
    # a refused command (required: it cannot be dropped) had ended the list as if it were whole:
    # a stand-in takes its place and the rest is still checked
    stuck = tmp_path / "stuck.yaml"
    stuck.write_text("command: [a, {b: 1}]\nmemory:\n  transients:\n    fla: lots\n")
    out = _lint(stuck)
    assert "command[1]: expected a string" in out.stderr and "memory.transients.fla" in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith("2 problems; nothing else is checked until it loads"), out.stderr


def test_lint_fix_says_its_own_reason_for_writing_nothing(tmp_path):
    """A missing file is said as such, never 'writes only a recipe that loads'; a fix that
    cannot be applied in place (recipe_edit.EditError, in-process) says so, not the typo list."""
    out = _lint(tmp_path / "none.yaml", "--fix")
    assert "no such recipe file" in out.stderr and "writes only a recipe that loads" not in out.stderr, out.stderr
    typo = _recipe(tmp_path, ("max_restarts: 10", "max_restart: 10"), name="typo.yaml")
    code = ("import sys; from moeconsole.runner.recipes import recipe_edit\n"
            "def boom(*a, **k): raise recipe_edit.EditError('a flow mapping it cannot edit')\n"
            "recipe_edit.patch = boom\n"
            "from moeconsole.console.cli import main\n"
            f"sys.exit(main(['lint', '--fix', {str(typo)!r}]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "cannot apply the fixes in place (a flow mapping it cannot edit)" in out.stderr, out.stderr
    assert "writes only a recipe that loads" not in out.stderr, out.stderr
    # the other way: a recipe that does not load still says so and lists its problems
    bad = _recipe(tmp_path, ("max_restarts: 10", "max_restart: 10"), ("grace_s: 5", "grace_s: five"), name="bad.yaml")
    out = _lint(bad, "--fix")
    assert "nothing written: --fix writes only a recipe that loads" in out.stderr and "kill.grace_s" in out.stderr


# ---- the restart command of a run that is over: one owner (finding 3), plain text (finding 6) ----

def _screen_of_an_ended_run(base, make_run, status: str, press: str = "r", recipe: dict | None = None):
    """(the banner's text, what ``press`` notifies, the notification's markup flag, the screen's text)."""
    import asyncio

    from tests.console.test_console_app import app_for, attached, telemetry
    from tests.waiting import until_ui
    kw = {"recipe": recipe} if recipe is not None else {}
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status=status, restart_at=None, **kw)

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(200, 30)) as pilot:
            await attached(pilot)
            banner = app.screen.query_one("#runner-gone")
            shown = str(banner.render()) if banner.display else ""
            await pilot.press(press)
            note = await until_ui(pilot, lambda: next((n for n in app._notifications
                                                       if str(n.message).startswith(f"{press}: ")), None), what="r's words")
            for _ in range(3):
                await pilot.pause()
            screen = "\n".join(s.text for s in app.screen._compositor.render_strips())
            return shown, str(note.message), note.markup, screen
    return asyncio.run(go())


def test_the_banner_and_r_of_a_failed_run_name_one_command(base, make_run):
    """A FAILED run under --runs-dir: the banner had said `moeconsole restart <whole id>` (no
    --runs-dir: the copied command looks elsewhere), r `moeconsole restart 743b --runs-dir ...`."""
    banner, said, _, _ = _screen_of_an_ended_run(base, make_run, "failed")
    command = f"moeconsole restart 743b --runs-dir {base}"
    assert banner.endswith(command), banner
    assert f"`{command}`" in said, said
    # the other way: a finished run's --force, decided once (snapshot.restart_command)
    from moeconsole.runner.rundir.snapshot import next_command, restart_command
    assert restart_command("743b", "unsaved") == "moeconsole restart --force 743b"
    assert next_command({"id": "x", "status": "unsaved"}, "743b") == restart_command("743b", "unsaved")
    assert next_command({"id": "x", "status": "failed"}) == "moeconsole restart x"


def test_r_says_where_the_restart_resumes_as_restart_plans_it(base, make_run):
    """A run with no resume setting (`run -- COMMAND`): r had promised "from the newest verified
    checkpoint", and `restart` then started from step 0."""
    _, said, _, _ = _screen_of_an_ended_run(base, make_run, "killed",
                                            recipe={"name": "tiny-moe-cpu", "command": ["python3", "train.py"]})
    assert "newest verified checkpoint" not in said and "from step 0 (the recipe has no resume setting)" in said, said


def test_run_ends_a_command_with_no_resume_setting_on_what_restart_will_do(tmp_path):
    out = subprocess.run([sys.executable, "-m", "moeconsole", "run", "--detach", "--runs-dir", str(tmp_path),
                          "--set", "restart.max_restarts=0", "--", sys.executable, "-c", "import sys; sys.exit(3)"],
                         capture_output=True, text=True, timeout=180, cwd=tmp_path,
                         env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 1 and "ended FAILED" in out.stderr, out.stderr
    assert "newest verified checkpoint" not in out.stderr, out.stderr
    assert "will start attempt 2 from step 0 (the recipe has no resume setting)" in out.stderr, out.stderr


def test_r_on_a_run_under_a_runs_dir_with_brackets_shows_it_whole(base, make_run):
    """notify reads markup: `--runs-dir '.../runs [old-b]'` was shown as `'.../runs '`."""
    base = base / "runs [old-b]"   # short: the run's control socket path stays under 108 bytes
    base.mkdir()
    banner, said, markup, screen = _screen_of_an_ended_run(base, make_run, "failed")
    assert markup is False and "runs [old-b]" in said, said
    assert "runs [old-b]" in banner, banner
    assert "[old-b]" in screen, screen


# ---- runs ls --since: short ids among every run (finding 8) ----

def test_runs_ls_since_gives_short_ids_unique_among_every_run(base, make_run):
    """`--since 2d` had shown `a3f2` for the new run, which also names the old one: `attach a3f2`
    was ambiguous."""
    import json
    import time
    make_run(base, "20240101-000000-demo-lr-a3f2", name="demo-lr", status="failed", restart_at=None)
    new = make_run(base, "20261201-000000-demo-a3f2", name="demo", status="failed", restart_at=None)
    state = json.loads(new.state.read_text())
    state["started_at"] = time.time() - 3600
    new.state.write_text(json.dumps(state))
    lines = _ls_in_a_terminal(base, 100, "ls", "--since", "2d")
    assert len(lines) == 2, lines   # the header and the new run only
    short = next(t for t in lines[1].split() if t.endswith("a3f2"))   # the ID column's cell
    assert short != "a3f2" and "20261201-000000-demo-a3f2".endswith(short) and "demo-lr" not in short, lines
    found = subprocess.run([sys.executable, "-m", "moeconsole", "runs", "show", short, "--runs-dir", str(base)],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert found.returncode == 0 and "20261201-000000-demo-a3f2" in found.stdout, found.stderr
    # the other way: without --since both runs are listed, each by an id that names it alone
    every = _ls_in_a_terminal(base, 100, "ls")
    assert len(every) == 3 and short in every[1].split() + every[2].split(), every


# ---- names that differ in the middle stay apart (finding 5) ----

@pytest.mark.parametrize("cols", [60, 80])
def test_runs_ls_keeps_names_apart_that_differ_in_the_middle(base, make_run, cols):
    """`...-ablation-lr190-with-a-long-descriptive-name-seed1` and -lr195-, -lr200-: three
    identical `qwen3-moe-lora-sf…` rows at 60 and 80 columns (the whole tail from the first
    difference did not fit); and the sweep `...-name-lr190..197` beside a `-baseline-` run, nine."""
    middle = [f"qwen3-moe-lora-sft-ablation-lr{lr}-with-a-long-descriptive-name-seed1" for lr in (190, 195, 200)]
    sweep = [f"qwen3-moe-lora-sft-ablation-with-a-long-descriptive-name-lr{lr}" for lr in range(190, 198)]
    names = middle + sweep + ["qwen3-moe-lora-sft-ablation-baseline-no-lora-dropout"]
    for i, name in enumerate(names):
        make_run(base, f"20261124-09{i:02d}00-run{i:02d}-{0xa000 + i:04x}", name=name, status="failed", steps=60,
                 max_steps=100, restart_at=None, recipe={"name": name, "command": ["python3", "train.py"]})
    lines = _ls_in_a_terminal(base, cols)
    assert all(len(line) <= cols for line in lines), lines
    cells = [line.split()[1] for line in lines[1:]]
    assert len(set(cells)) == len(names), ("each run's name apart", cells)
    for lr in range(190, 198):
        assert sum(f"lr{lr}" in c for c in cells) == (2 if lr in (190, 195) else 1), (lr, cells)
    assert any("baseline" in c for c in cells) and any("lr200" in c for c in cells), cells


def test_names_that_do_not_collide_are_cut_as_before():
    """The other way: names apart once cut keep the plain cut; a short name is whole."""
    from moeconsole.console.runcolumns import cut_apart, cut_name
    names = ["alpha-" + "x" * 40, "beta-" + "y" * 40, "tiny"]
    assert cut_apart(names, 20) == [cut_name(n, 20) for n in names]


def test_one_problem_before_a_value_lint_cannot_set_aside_is_one_line(tmp_path):
    """Bad input is one line: a refused environment name cannot be set aside, so the list stops
    at it; that one problem had taken a second line saying "1 problem listed, and the list is cut"."""
    path = tmp_path / "env.yaml"
    path.write_text('name: t\ncommand: [python, -c, "print(1)"]\nenv:\n  "A\\nB": x\n')
    out = _lint(path)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert "environment name" in lines[0] and "lint looks no further until this is mended" in lines[0], out.stderr
