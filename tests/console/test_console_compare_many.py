"""Several runs side by side, live: any number marked in the browser, one metric overlaid by step
or by wall time, each run's status, step, ETA and alerts, the recipe keys that differ between
them; q leaves. And `runs ls` at the width of the terminal it prints to (a real pty)."""
from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.compare import CompareScreen
from moeconsole.console.widgets.chart import ChartView
from moeconsole.runner.rundir import jsonio
from moeconsole.runner.rundir.rundiff import recipe_differences
from tests.waiting import until_ui

REPO = Path(__file__).resolve().parents[2]


def _three(base, make_run):
    common = ["swift", "sft", "--torch_dtype", "bfloat16"]
    runs = [
        make_run(base, "20240101-000000-moe-aaaa", name="moe", status="succeeded", steps=80, restart_at=None,
                 recipe={"name": "moe", "command": common}),
        make_run(base, "20240102-000000-moe-bbbb", name="moe", status="succeeded", steps=80, restart_at=None,
                 loss_scale=1.08, recipe={"name": "moe", "command": common + ["--fp8_recipe", "blockwise"]}),
        make_run(base, "20240103-000000-moe-cccc", name="moe", status="running", steps=40, restart_at=None,
                 runner_pid=os.getpid(), loss_scale=1.15, max_steps=100,
                 recipe={"name": "moe", "command": common + ["--fp4", "nvfp4"]}),
    ]
    for run in runs:   # an extra metric each log carries, and the time of each step
        recs = jsonio.read_jsonl(run.metrics)
        run.metrics.write_text("")
        for r in recs:
            r["extra"] = {"token_acc": 0.4 + r["step"] / 400}
            jsonio.append_jsonl(run.metrics, r)
    return runs


def test_n_runs_marked_in_the_browser_compare_live_and_q_leaves(base, make_run):
    bf16, fp8, nvfp4 = _three(base, make_run)

    async def go():
        app = MoeConsole(base, None, gpu=False)
        async with app.run_test(size=(160, 48)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 3
                                     and app.screen)
            table = browser.query_one("#runs")
            ids = [r["id"] for r in browser.rows]
            for run in (bf16, fp8, nvfp4):
                table.move_cursor(row=ids.index(run.run_id))
                await pilot.press("space")
            assert browser.marked == [bf16.run_id, fp8.run_id, nvfp4.run_id], "three runs marked"
            await pilot.press("x")
            screen = await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.result
                                    and app.screen)
            screen.interval = 0.2
            d = screen.result
            # labelled as the browser shows them: the name and the values that tell the runs apart
            assert [r["label"] for r in d["runs"]] == ["moe", "moe --fp8_recipe=blockwise", "moe --fp4=nvfp4"]
            assert [r["status"] for r in d["runs"]] == ["SUCCEEDED", "SUCCEEDED", "RUNNING"]
            assert d["runs"][2]["step"] == 40 and d["runs"][2]["eta_s"] is not None
            assert all(r["open_alerts"] == 1 for r in d["runs"]), "each fixture run has a bad save open"
            keys = {x["key"]: x["values"] for x in d["recipe_diff"]}
            assert keys["command --fp8_recipe"] == [None, "blockwise", None]
            assert keys["command --fp4"] == [None, None, "nvfp4"]
            chart = screen.query_one(ChartView).text_rows()
            body = "\n".join(chart)
            assert "•" in body and "×" in body and "+" in body, "one glyph per run"
            # live: the running run writes 30 more steps and finishes; the comparison follows
            for step in range(41, 71):
                jsonio.append_jsonl(nvfp4.metrics, {"v": 1, "t": 1.7e9 + step, "attempt": 1, "step": step,
                                                    "loss": 0.25, "extra": {"token_acc": 0.9}})
            state = nvfp4.read_state()
            state["step"] = 70
            jsonio.atomic_write_json(nvfp4.state, state)
            await until_ui(pilot, lambda: screen.result["runs"][2]["step"] == 70 and screen.result["runs"][2]["last"] == 0.25)
            # c: any metric of the logs (m had been the key: the run screen's bell)
            await pilot.press("c")
            picker = await until_ui(pilot, lambda: type(app.screen).__name__ == "MetricPicker" and app.screen)
            await pilot.press("slash", *"acc", "enter", "enter")
            await until_ui(pilot, lambda: app.screen is screen and screen.result["metric"] == "token_acc")
            assert [round(r["last"], 6) for r in screen.result["runs"]] == [0.6, 0.6, 0.9]
            assert picker.multi is False
            # t: by wall time since each run started
            await pilot.press("t")
            await until_ui(pilot, lambda: screen.result["by_time"])
            title = screen.query_one(ChartView).text_rows()[0]
            assert title.rstrip().endswith("s") and "–" in title, title   # a time range: 0s–...
            await pilot.press("e", "y", "plus")
            await until_ui(pilot, lambda: "zoom" in screen.query_one(ChartView).text_rows()[0])
            await pilot.press("0", "t")
            await until_ui(pilot, lambda: not screen.result["by_time"])
            await pilot.press("q")
            await until_ui(pilot, lambda: app.screen is browser)
    asyncio.run(go())


def test_recipe_differences_for_any_number_of_runs_agree_with_runs_diff():
    from moeconsole.runner.rundir.rundiff import recipe_differences_n
    a = {"command --lr": "1e-4", "env.X": "1"}
    b = {"command --lr": "2e-4", "env.X": "1", "command --fp8": True}
    c = {"command --lr": "1e-4", "env.X": "2"}
    n = recipe_differences_n([a, b, c])
    assert [(x["key"], x["values"]) for x in n] == [("command --fp8", [None, True, None]),
                                                    ("command --lr", ["1e-4", "2e-4", "1e-4"]),
                                                    ("env.X", ["1", "1", "2"])]
    assert recipe_differences(a, b) == [{"key": "command --fp8", "a": None, "b": True, "only": "b"},
                                        {"key": "command --lr", "a": "1e-4", "b": "2e-4", "only": None}]


def _ls_in_a_terminal(base: Path, cols: int, *args: str) -> list[str]:
    """`moeconsole runs ARGS` on a pseudo-terminal ``cols`` wide, as a user's shell runs it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "runs", *args, "--runs-dir", str(base)], cwd=REPO,
                            stdin=slave, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=120)
    os.close(master)
    assert proc.returncode == 0, proc.stderr.read()
    return out.decode().replace("\r\n", "\n").rstrip("\n").split("\n")


def test_runs_ls_fits_the_terminal_with_the_important_columns_first(base, make_run):
    for i, fault in enumerate(("nan@30", "oom@40")):
        make_run(base, f"2024010{i + 1}-000000-tiny-moe-cpu-{'ab12' if i else 'cd34'}", name="tiny-moe-cpu",
                 status="failed" if i else "succeeded", crash={"class": "cuda_oom"} if i else None,
                 recipe={"name": "tiny-moe-cpu", "command": ["{python}", "-m", "moeconsole.runner.demo.train",
                                                             f"--fault={fault}", "--max_steps=80"]})
    narrow = _ls_in_a_terminal(base, 80)
    assert all(len(line) <= 80 for line in narrow), narrow
    # a failed run listed: the id `attach` takes and its last crash (CRASH on a terminal, LAST CRASH in
    # a pipe) rank before the age (runcolumns.PRIORITY)
    assert narrow[0].split()[:7] == ["STATUS", "NAME", "STEP", "LOSS", "ALERTS", "ID", "CRASH"], narrow
    failed = next(line for line in narrow if line.startswith("FAILED"))
    assert "ab12" in failed.split(), "the short id attach takes, at 80 columns"
    assert "cuda_oom" in failed.split(), "a failed run's why at 80 columns"
    assert "--fault=oom@40" in failed and "command" not in failed, "the value that tells the runs apart, as typed"
    assert "0.7707" in failed.split(), "the loss, whole"
    assert "2 (2 CRIT)" in failed
    wide = _ls_in_a_terminal(base, 200)
    assert "CRASH" in wide[0].split() and "cuda_oom" in next(line for line in wide if line.startswith("FAILED"))
    assert " ab12 " in next(line for line in wide if line.startswith("FAILED")), "the short id attach takes"
    piped = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "--runs-dir", str(base)], cwd=REPO,
                           capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert "STARTED" in piped[0] and "LAST CRASH" in piped[0] and any("20240102-000000-tiny-moe-cpu-ab12" in line for line in piped), \
        "piped: every column and the full id"
    show = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "show", "ab12", "--runs-dir", str(base)],
                          cwd=REPO, capture_output=True, text=True, timeout=60).stdout
    assert "saves     bad 1   crashes 1   last crash cuda_oom" in show and "alerts    open 2 (2 CRIT)" in show
