"""The fifth newcomer round (README only, tmux at 80x24 over SSH, a machine nobody set up): what
each screen and command said that misled them, as they met it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, env=env)


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("argv", [("--help",), ("help",), ("run", "--help")])
def test_help_fits_the_terminal_and_wraps_at_words(argv, columns):
    """`moeconsole --help` at 80 columns printed the command list unwrapped ("attach" 129
    characters, `run --help`'s usage 86): tmux broke them mid-word ("trai" / "ning log") at the
    left edge. Every line fits; a long command line goes on under its own text."""
    out = cli(*argv, columns=columns)
    assert out.returncode == 0, out.stderr
    too_wide = [line for line in out.stdout.splitlines() if len(line) > columns]
    assert not too_wide, "\n".join(too_wide)
    if argv != ("run", "--help"):
        text = out.stdout
        at = text.index("\n  attach ")
        block = text[at + 1:text.index("\n  kill ", at)].splitlines()
        assert len(block) >= 2 and all(line.startswith(" " * 14) for line in block[1:]), block
        assert "training log" in " ".join(line.strip() for line in block), block


def test_help_says_what_the_marks_on_the_charts_are(base, make_run):
    """At 80x24 every chart's x axis carried `C`s, and `R` with a dashed line after a restart;
    `?` listed every key but no word on the marks (only docs/console.md had it). The help now has
    a "Chart marks" section after the run screen's keys, one row a mark."""
    import asyncio

    from tests.console.test_console_app import _screen_text, app_for, attached
    from tests.waiting import until_ui
    from moeconsole.console.screens.dialogs import HelpScreen
    run = make_run(base, status="succeeded")

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            for _ in range(40):
                if "Chart marks" in _screen_text(app):
                    break
                await pilot.press("pagedown")
                await pilot.pause()
            await until_ui(pilot, lambda: "Chart marks" in _screen_text(app), what="the chart marks in the help")
            def help_words() -> str:   # the dialog's text without its borders, wrapped rows joined
                return " ".join(_screen_text(app).replace("│", " ").split())
            text = await until_ui(pilot, lambda: "C On the x axis: a checkpoint" in (t := help_words()) and t,
                                  what="the checkpoint mark's row")
            assert "Chart marks" in text, text
    asyncio.run(go())


def test_a_restart_the_user_asked_for_is_not_counted_as_one_and_the_word_says_so(tmp_path):
    """After `r` twice the status line read "attempt 3 · restarts 0/10" and `runs show`
    "attempts 3   restarts 0/10": the count is of the runner's own restarts after a crash (the
    cap restart.max_restarts), which the user's are not. Both name it "auto-restarts"."""
    from tests.console.conftest import write_run
    from moeconsole.console import format as fmt
    run = write_run(tmp_path, "20240101-000000-demo-0001", status="running", attempt=3, restarts=0,
                    max_restarts=10)
    out = subprocess.run([sys.executable, "-m", "moeconsole", "runs", "show", run.path.name, "--runs-dir",
                          str(tmp_path)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.split()[:1] == ["attempts"])
    assert row.split() == ["attempts", "3", "auto-restarts", "0/10"], row
    line2 = fmt.plain(fmt.status_lines({"id": "r", "name": "demo", "status": "running", "status_word": "RUNNING",
                                        "attempt": 3, "restarts": 0, "max_restarts": 10})[1])
    assert "attempt 3 · auto-restarts 0/10" in line2, line2


def test_an_imported_log_without_grad_norm_says_not_in_this_log_not_no_data_yet(base, tmp_path):
    """`o` on a finished Trainer log with no grad_norm and no memory: at 80x24 those two charts
    said "no data yet", as if more would come. A run that is over says "not in this log"; a
    live run still says "no data yet" (tests/console/test_console_chart.py)."""
    import asyncio
    import shutil

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.console.screens.dialogs import PromptScreen
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.chart import ChartView
    from tests.waiting import until_ui
    log = tmp_path / "old_train.log"
    shutil.copy(REPO / "tests/ingest/corpus/alpaca_hf_dicts_cut_first_line.log", log)

    async def go():
        app = MoeConsole(base, None, interval=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen))
            await pilot.press("o")
            await until_ui(pilot, lambda: isinstance(app.screen, PromptScreen), what="the path prompt")
            await pilot.press(*str(log))
            await pilot.press("enter")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and app.screen.snapshot.series["loss"].n > 0, what="the imported log's steps")
            grad = app.screen.query_one("#chart-grad", ChartView)
            rows = await until_ui(pilot, lambda: (r := " ".join(grad.text_rows())) and "not in this log" in r and r,
                                  what="the empty grad norm chart's words")
            assert "no data yet" not in rows, rows
    asyncio.run(go())


def test_verify_says_a_note_every_checkpoint_shares_once(tmp_path):
    """`moeconsole verify` after the demo printed "note: LoRA coverage not checked: the base
    model's config.json is not on this machine ..." under each of its 16 checkpoints (two
    terminal lines each at 80 columns): a note every checkpoint has is said once, after the list,
    with how many it is about; a note of one checkpoint stays under it."""
    import json

    import numpy as np
    from safetensors.numpy import save_file
    out = tmp_path / "output"
    for step in (10, 20, 30):
        ck = out / f"checkpoint-{step}"
        ck.mkdir(parents=True)
        save_file({"base_model.model.layers.0.self_attn.q_proj.lora_A.weight": np.ones((8, 64), np.float32),
                   "base_model.model.layers.0.self_attn.q_proj.lora_B.weight": np.ones((64, 8), np.float32)},
                  str(ck / "adapter_model.safetensors"))
        (ck / "adapter_config.json").write_text(json.dumps({
            "r": 8, "lora_alpha": 16, "peft_type": "LORA", "base_model_name_or_path": str(tmp_path / "no-such-model")}))
    got = subprocess.run([sys.executable, "-m", "moeconsole", "verify", str(out)], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert got.returncode == 0, got.stderr
    notes = [line for line in got.stdout.splitlines() if "LoRA coverage not checked" in line]
    assert len(notes) == 1 and notes[0].startswith("note (all 3 checkpoints): LoRA coverage not checked"), got.stdout
    assert got.stdout.splitlines()[-1].startswith("3 checkpoints: 3 ok"), got.stdout


def test_the_help_names_a_run_the_way_runs_ls_shows_it(tmp_path):
    """`runs ls` shows a run's ID as the end of its id ("0001"), and `runs show 0001` finds it,
    but `moeconsole --help` said a run is an "id, unique id prefix or path": the newcomer
    typed the full id. Every help that takes a RUN says it in the same words."""
    from tests.console.conftest import write_run
    write_run(tmp_path, "20240101-000000-demo-abcd", status="succeeded")
    import time

    from moeconsole.console.commands.runs import ls_table
    from moeconsole.runner.rundir import store
    table = ls_table(store.list_runs(tmp_path), 80, time.time()).splitlines()   # as a terminal of 80 shows it
    short = table[1][table[0].index(" ID ") + 1:].split()[0]
    assert short == "abcd", table
    show = subprocess.run([sys.executable, "-m", "moeconsole", "runs", "show", short, "--runs-dir", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert show.returncode == 0 and "20240101-000000-demo-abcd" in show.stdout, show
    for argv in (("--help",), ("attach", "--help"), ("kill", "--help")):
        text = " ".join(cli(*argv, columns=200).stdout.split())
        assert "prefix" not in text and "a unique part of it as `runs ls` shows" in text, (argv, text)


def test_a_cut_cost_never_ends_on_a_bare_amount():
    """The demo's status line at 80 columns ended "$0.05/h, $0.00 so far, $0.00…": an amount with
    its word ("projected") cut off. A number that opened a clause goes with the clause's words;
    a number after its own label ("step 39", "elapsed 39s") stays."""
    import re

    from moeconsole.console import format as fmt
    from moeconsole.runner.core.units import fit_words
    run = {"id": "r", "name": "tiny-moe-cpu", "status": "running", "status_word": "RUNNING", "attempt": 1,
           "restarts": 0, "max_restarts": 10, "step": 153, "max_steps": 400, "step_time_s": 0.237, "eta_s": 59.0,
           "elapsed_s": 39.0, "cost_per_hour": 0.05, "cost_so_far": 0.0005, "cost_projected": 0.002}
    for width in range(60, 100):
        line = fmt.plain(fmt.status_lines(run, width=width)[1])
        assert not re.search(r", \$[\d.,]+…", line), (width, line)
    assert fit_words("$0.05/h, $0.00 so far, $0.00 projected", 30) == "$0.05/h, $0.00 so far…"
    assert fit_words("crash cuda_oom at step 39, tried to allocate 266 MiB", 24) == "crash cuda_oom step 39…"


def test_make_test_says_why_it_is_quiet_before_the_first_result():
    """`make test` showed "ready: 4/4 workers" and then nothing for two minutes on a loaded
    2-core machine while each worker collected the suite: the newcomer thought it hung. The
    target says so before pytest starts."""
    import shutil
    if shutil.which("make") is None:
        pytest.skip("no make here")
    out = subprocess.run(["make", "-n", "-o", ".venv/.installed", "test"], capture_output=True, text=True,
                         cwd=REPO, timeout=60)
    lines = out.stdout.splitlines()
    said = next(i for i, line in enumerate(lines) if "nothing prints until" in line)
    ran = next(i for i, line in enumerate(lines) if "pytest" in line and "echo" not in line)
    assert said < ran, out.stdout


def test_the_confirmation_says_cancel_in_its_footer_as_in_its_own_line(base, make_run, fake_runner):
    """`k` at 80x24: the dialog said "n / Esc = cancel", its footer "n No". Both come from the
    one key table now, and say "cancel"."""
    import asyncio

    from tests.console.test_console_app import _screen_text, app_for, attached, live_run, telemetry
    from tests.waiting import until_ui
    from moeconsole.console.screens.dialogs import ConfirmScreen
    run = live_run(base, make_run)
    fake_runner(run)

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("k")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the kill confirmation")
            text = await until_ui(pilot, lambda: "Yes, do it" in (t := _screen_text(app)) and t, what="its footer")
            assert "n Cancel" in text and "n No" not in text, text
            assert "n / Esc / Ctrl-C = cancel" in text, text   # Ctrl-C too (newcomer round 11)
            await pilot.press("n")
            await until_ui(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="the dialog closed")
    asyncio.run(go())


def test_a_recipe_named_without_its_path_points_at_the_shipped_one():
    """From the checkout's root a newcomer typed `moeconsole run tiny-moe-cpu` (the demo's recipe
    by the name the screens show): "no such recipe file" and nothing more. A bare name that is a
    shipped recipe's (with or without .yaml, or one typo away) is named in the one line."""
    out = cli("lint", "tiny-moe-cpu")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out
    assert "(did you mean recipes/tiny-moe-cpu.yaml?)" in out.stderr, out.stderr
    run = cli("run", "tiny-moe-cpu", "--runs-dir", str(REPO / "no-such-runs-dir-is-made"))
    assert run.returncode == 2 and "(did you mean recipes/tiny-moe-cpu.yaml?)" in run.stderr, run.stderr
    assert not (REPO / "no-such-runs-dir-is-made").exists()
    far = cli("lint", "nosuch.yaml")
    assert far.returncode == 2 and "did you mean" not in far.stderr, far.stderr
