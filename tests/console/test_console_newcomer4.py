"""The fourth newcomer round (a user in tmux on a machine they did not set up): what each command
said that misled them, as they type it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.console.conftest import write_run

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120)


def test_kill_by_a_name_whose_runs_all_ended_says_so_in_one_line(tmp_path):
    """`kill NAME` of two runs of that name, both over: it asked the user to pick one of them (to
    kill a run that had ended); it says that every one has ended, which, and exits 0 as the kill of
    one ended run does."""
    write_run(tmp_path, "20240101-000000-sft-0001", name="sft", status="failed")
    write_run(tmp_path, "20240102-000000-sft-0002", name="sft", status="succeeded")
    out = cli("kill", "sft", "--runs-dir", str(tmp_path))
    assert out.returncode == 0, out
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1 and "already ended" in lines[0] and out.stderr == "", out
    assert "20240101-000000-sft-0001 (failed)" in lines[0] and "20240102-000000-sft-0002 (succeeded)" in lines[0]
    assert "name one" not in out.stdout and "Traceback" not in out.stdout


def test_kill_of_ended_runs_answers_alike_by_id_by_name_one_run_or_two(tmp_path):
    """One ended run named `sft` exited 0 on stdout; two exited 1 on stderr: `moeconsole kill sft &&
    ...` changed outcome once a second run of the name had ended. One rule: nothing to kill, exit 0."""
    one, two = tmp_path / "one", tmp_path / "two"
    write_run(one, "20240101-000000-sft-0001", name="sft", status="failed")
    write_run(two, "20240101-000000-sft-0001", name="sft", status="failed")
    write_run(two, "20240102-000000-sft-0002", name="sft", status="killed")
    answers = [cli("kill", ref, "--runs-dir", str(where)) for where, ref in
               ((one, "sft"), (two, "sft"), (one, "20240101-000000-sft-0001"), (two, "20240102-000000-sft-0002"))]
    for out in answers:
        assert out.returncode == 0 and out.stderr == "", out
        assert "nothing to kill" in out.stdout and len(out.stdout.strip().splitlines()) == 1, out


def test_kill_by_a_name_with_one_live_run_among_them_still_asks_which(tmp_path):
    write_run(tmp_path, "20240101-000000-sft-0001", name="sft", status="failed")
    write_run(tmp_path, "20240102-000000-sft-0002", name="sft", status="running")
    out = cli("kill", "sft", "--runs-dir", str(tmp_path))
    # by its short id (``rundir.short_refs``: `0002` alone is in a time stamp, so the name's end with it)
    assert out.returncode == 2 and "name one: `moeconsole kill sft-0002 " in out.stderr, out.stderr


def test_runs_ls_lines_up_wide_character_names_by_terminal_cells(tmp_path):
    """A run named in Chinese took two cells a character but was padded by characters: every
    column after NAME slid right on its row (piped, every column; at 60 columns, the name cut)."""
    import time

    from rich.cells import cell_len

    from moeconsole.console.commands.runs import ls_table
    from moeconsole.runner.rundir import store
    write_run(tmp_path, "20240101-000000-a-0001", name="训练中文模型运行", status="failed")
    write_run(tmp_path, "20240102-000000-b-0002", name="demo", status="succeeded")
    write_run(tmp_path, "20240103-000000-c-0003", name="混合专家模型的低秩适配训练第二轮", status="failed")
    rows = store.list_runs(tmp_path)
    for width in (None, 60, 80):
        lines = ls_table(rows, width, time.time()).splitlines()
        head = cell_len(lines[0][:lines[0].index("STEP")])
        for line in lines[1:]:
            assert cell_len(line[:line.index("60/100")]) == head, (width, "\n".join(lines))
            assert width is None or cell_len(line) <= width, (width, line)


def test_verify_without_a_run_verifies_the_newest_and_says_which(tmp_path):
    """After a first run a newcomer typed `moeconsole verify` and got argparse's "the following
    arguments are required: PATH|RUN". It verifies the newest run, as `attach` and `--json` pick
    it, and names that run on stderr (stdout is the same as `verify RUN`)."""
    write_run(tmp_path, "20240101-000000-sft-0001", name="sft", status="failed")
    newest = write_run(tmp_path, "20240102-000000-sft-0002", name="sft", status="succeeded")
    ckpt = newest.path / "output" / "checkpoint-40"
    ckpt.mkdir(parents=True)
    bare = cli("verify", "--runs-dir", str(tmp_path))
    named = cli("verify", newest.run_id, "--runs-dir", str(tmp_path))
    assert "required" not in bare.stderr and "Traceback" not in bare.stderr, bare.stderr
    assert f"verifying the newest run, {newest.run_id}" in bare.stderr, bare.stderr
    assert (bare.returncode, bare.stdout) == (named.returncode, named.stdout), (bare, named)


def test_attach_a_past_log_of_step_less_dicts_says_log_entry(tmp_path):
    """`moeconsole attach old_train.log` (a Hugging Face Trainer's dicts, no step in them): the
    imported run's status line said "step 200" as if the trainer had; it says "log entry 200",
    as a supervised run of the same log does."""
    import asyncio

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from tests.waiting import until_ui
    log = tmp_path / "old_train.log"
    log.write_text("".join(str({"loss": round(3 - i * 0.01, 4), "grad_norm": 1.0, "learning_rate": 5e-05,
                                "epoch": round(i / 200, 3)}) + "\n" for i in range(1, 201)))

    async def go() -> str:
        app = MoeConsole(tmp_path / "runs", None, interval=0.2, gpu=False, open_path=log)
        async with app.run_test(size=(120, 30)) as pilot:
            def first_line() -> str:
                if not isinstance(app.screen, RunScreen):
                    return ""
                strips = app.screen._compositor.render_strips()
                return strips[0].text if strips else ""
            await until_ui(pilot, lambda: "200" in first_line() and "IMPORTED" in first_line(),
                           what="the imported log's newest entry")
            return first_line()
    line = asyncio.run(go())
    assert "log entry 200" in line and "step 200" not in line, line
