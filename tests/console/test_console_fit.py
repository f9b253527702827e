"""The run browser and the compare table fit 80, 120 and 160 columns: the columns are chosen by
one priority rule (status, name, step, loss, alerts, age first; ``moeconsole.console.runcolumns``,
which `runs ls` uses too), every column shown is whole (no number cut), the names keep the
recipe values that tell the runs apart, and every run's row in compare has its legend glyph."""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.console import format as fmt
from moeconsole.console.app import MoeConsole
from moeconsole.console.chart import SERIES_GLYPHS
from moeconsole.console.runcolumns import Column, cut_name, fit_columns
from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.compare import CompareScreen
from tests.waiting import until_ui

SIZES = ((80, 24), (120, 36), (160, 48))
RATES = ("3.5e-4", "2.5e-4", "1.5e-4")


def _runs(base, make_run):
    cmd = ["swift", "sft", "--model", "Qwen/Qwen3-30B-A3B", "--torch_dtype", "bfloat16"]
    for i, lr in enumerate(RATES):
        make_run(base, f"2024010{i + 1}-000000-qwen3-moe-lora-{'abc'[i]}{i}x9", name="qwen3-moe-lora",
                 status="running" if i == 0 else "succeeded", steps=1200 + i, max_steps=2000, restart_at=None,
                 loss_scale=1.0 + i * 0.137, recipe={"name": "qwen3-moe-lora", "command": cmd + [f"--learning_rate={lr}"]})


def _lines(app) -> list[str]:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


def _browser_at_80(base, rows: int) -> list[str]:
    """The run browser's screen at 80x24 once it lists ``rows`` runs."""
    async def go() -> list[str]:
        app = MoeConsole(base, None, gpu=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == rows)
            await pilot.pause()
            return _lines(app)
    return asyncio.run(go())


def _value(lr: str) -> str:
    return f"--learning_rate={lr}"


def _names(words: list[str]) -> list[str]:
    """Words of a name cell: the shared name may be cut to … before the values."""
    return [w.removeprefix("…") for w in words]


def test_browser_and_compare_fit_80_120_160_with_the_priority_columns_whole(base, make_run):
    _runs(base, make_run)

    async def go(size) -> None:
        app = MoeConsole(base, None, gpu=False)
        async with app.run_test(size=size) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 3
                                     and app.screen)
            await pilot.pause()
            lines = _lines(app)
            assert all(len(line) <= size[0] for line in lines)
            head = next(line for line in lines if line.split()[:1] == ["STATUS"])
            # the ID (what `attach` takes) at every width; the age where the names keep their values
            assert head.split()[:5] == ["STATUS", "NAME", "STEP", "LOSS", "ALERTS"] and "ID" in head.split(), (size, head)
            for row in browser.rows:
                line = next(line for line in lines if fmt.run_cell("last_step", row) in line.split())
                words = line.split()
                for key in ("status", "last_step", "last_loss"):
                    assert fmt.run_cell(key, row) in words, (size, key, line)
                assert fmt.run_cell("open_alerts", row) in line, (size, line)
                lr = next(r for r in RATES if r in row["display_name"])
                assert _value(lr) in _names(words), (size, "the value that tells the runs apart, whole", line)
            table = browser.query_one("#runs")
            for i in range(3):
                table.move_cursor(row=i)
                await pilot.press("space")
            await pilot.press("x")
            screen = await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.result
                                    and app.screen)
            await pilot.pause()
            lines = _lines(app)
            assert all(len(line) <= size[0] for line in lines)
            at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["run", "status"])
            head, table_lines = lines[at], lines[at + 1:]
            assert [w for w in ("run", "status", "step", "alerts", "loss") if w in head.split()] == \
                ["run", "status", "step", "alerts", "loss"], (size, head)
            for i, run in enumerate(screen.result["runs"]):
                glyph = SERIES_GLYPHS[i]
                lr = next(r for r in RATES if r in run["label"])
                row = next((line for line in table_lines if _value(lr) in _names(line.split())
                            and line.split()[0] == glyph),
                           None)
                assert row is not None, (size, glyph, "its glyph beside its row, its values whole", lines)
                words = row.split()
                assert f"{run['step']:,}/2,000" in words and fmt.num(run["last"]) in words, (size, row)
                assert run["status"] in words, (size, row)
                legend = [line for line in lines[:6] if f"{glyph} " in line]
                assert legend and any(_value(lr) in line.split() for line in legend), \
                    (size, "each run's glyph and its values on one legend line", lines[:6])
    for size in SIZES:
        asyncio.run(go(size))


def test_one_priority_rule_whole_columns_and_names_cut_before_their_values():
    cols = [Column("id", 30), Column("name", 40, "name"), Column("age", 8, "age"), Column("status", 9, "status"),
            Column("loss", 6, "loss"), Column("step", 11, "step"), Column("alerts", 10, "alerts"), Column("x", 12)]
    keys, name_w = fit_columns(cols, 80)
    assert keys[:6] == ["status", "name", "step", "loss", "alerts", "age"] and "x" not in keys and "id" not in keys
    assert 9 + name_w + 11 + 6 + 10 + 8 + 2 * 5 <= 80
    keys, name_w = fit_columns(cols, 200)
    assert keys == ["status", "name", "step", "loss", "alerts", "age", "id", "x"] and name_w == 40
    assert cut_name("qwen3-moe-lora --learning_rate=3.5e-4", 23) == "…--learning_rate=3.5e-4"
    assert cut_name("qwen3-moe-lora --learning_rate=3.5e-4", 30) == "qwen3-… --learning_rate=3.5e-4"
    assert cut_name("m --lr=2e-4 --fp8 --seed=1234567", 18) == "…--lr=2e-4 --fp8…"


def test_browser_and_compare_fit_in_a_real_terminal_at_80_120_160(base, make_run):
    """The same in tmux: `moeconsole` attaches to the live run, `b` opens the browser, keys mark
    the runs and compare them; capture-pane reads what a user sees."""
    import os
    import shlex
    import sys

    from tests.console.test_console_tmux import REPO, Tmux
    from tests.waiting import until
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    _runs(base, make_run)
    for width, height in SIZES:
        tmux = Tmux(f"moeconsole-fit-{width}-{os.getpid()}")
        cmd = (f"cd {shlex.quote(str(REPO))} && env TEXTUAL_COLOR_SYSTEM=256 PYTHONPATH={shlex.quote(str(REPO))} "
               f"{shlex.quote(sys.executable)} -m moeconsole.console.cli --no-gpu --runs-dir {shlex.quote(str(base))}")
        try:
            tmux("-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", str(width), "-y", str(height), cmd)
            tmux.wait_for("qwen3-moe-lora", timeout=60)   # the live run's screen: b opens the browser
            tmux("send-keys", "-t", "demo", "b")
            screen = tmux.wait_for("STATUS", timeout=60)
            lines = screen.splitlines()
            head = next(line for line in lines if line.split()[:1] == ["STATUS"])
            assert head.split()[:5] == ["STATUS", "NAME", "STEP", "LOSS", "ALERTS"] and "ID" in head.split(), \
                (width, screen)
            for lr in RATES:
                row = next(line for line in lines if _value(lr) in _names(line.split()))
                assert "/2,000" in row and len(row) <= width, (width, row)
            tmux("send-keys", "-t", "demo", "Space", "Down", "Space", "Down", "Space", "x")
            screen = tmux.wait_for("◆ shared", timeout=60)
            until(lambda: all(any(line.split()[:1] == [g] and "/2,000" in line for line in tmux.screen().splitlines())
                              for g in SERIES_GLYPHS[:3]), timeout=30, what=f"the compare rows at {width} columns")
            lines = tmux.screen().splitlines()
            for g in SERIES_GLYPHS[:3]:
                row = next(line for line in lines if line.split()[:1] == [g] and "/2,000" in line)
                assert any(_value(lr) in _names(row.split()) for lr in RATES), (width, row)
        finally:
            pane = tmux("display-message", "-p", "-t", "demo", "#{pid}").strip()
            tmux("kill-server")
            if pane.isdigit():
                until(lambda: not os.path.exists(f"/proc/{pane}"), timeout=20, what="the console to exit")


def test_compare_names_runs_by_the_values_that_differ_between_them(base, make_run):
    """Four runs of one name in the index differ in --alpha, --beta, --gamma (the index's names
    show those); the two compared differ only in --zeta: compare names them by --zeta."""
    cmd = ["swift", "sft"]
    flags = [("1", "1", "1", "1e-4"), ("1", "1", "1", "2e-4"), ("2", "2", "2", "1e-4"), ("3", "3", "3", "1e-4")]
    for i, (a, b, g, z) in enumerate(flags):
        make_run(base, f"2024010{i + 1}-000000-moe-{'abcd'[i] * 4}", name="moe", status="succeeded", steps=40,
                 restart_at=None, recipe={"name": "moe", "command": cmd + [f"--alpha={a}", f"--beta={b}",
                                                                          f"--gamma={g}", f"--zeta={z}"]})

    async def go() -> list[str]:
        app = MoeConsole(base, None, gpu=False)
        async with app.run_test(size=(160, 48)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 4
                                     and app.screen)
            ids = [r["id"] for r in browser.rows]
            table = browser.query_one("#runs")
            for run_id in ("20240101-000000-moe-aaaa", "20240102-000000-moe-bbbb"):
                table.move_cursor(row=ids.index(run_id))
                await pilot.press("space")
            await pilot.press("x")
            screen = await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.result
                                    and app.screen)
            await pilot.pause()
            assert any("--zeta=2e-4" in line for line in _lines(app)), "the name on screen"
            return [r["label"] for r in screen.result["runs"]]
    assert asyncio.run(go()) == ["moe --zeta=1e-4", "moe --zeta=2e-4"]


def test_a_failed_runs_last_crash_is_shown_at_80_columns(base, make_run):
    """A list that holds a failed run keeps its last crash (CRASH) at 80 columns (after the ID, before the age; the name
    is cut for it, down to ``NAME_MIN``) in the browser and in `runs ls` (one rule: ``runcolumns``)."""
    _runs(base, make_run)
    make_run(base, "20240104-000000-qwen3-moe-lora-d3x9", name="qwen3-moe-lora", status="failed", steps=900,
             max_steps=2000, restart_at=None, crash={"class": "cuda_oom"},
             recipe={"name": "qwen3-moe-lora", "command": ["swift", "sft", "--model", "Qwen/Qwen3-30B-A3B", "--torch_dtype",
                                                           "bfloat16", "--learning_rate=9.5e-4"]})

    lines = _browser_at_80(base, 4)
    head = next(line for line in lines if line.split()[:1] == ["STATUS"])
    assert "CRASH" in head.split() and "ID" in head.split(), lines
    failed = next(line for line in lines if "FAILED" in line)
    assert "cuda_oom" in failed.split() and "900/2,000" in failed.split(), failed
    assert all(len(line) <= 80 for line in lines)

    # `runs ls` in an 80-column terminal (a real pty: not a pipe, so it fits the width)
    master, slave = os.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "ls", "--runs-dir", str(base)],
                              cwd=Path(__file__).resolve().parents[2], stdout=slave, stderr=subprocess.PIPE,
                              env={**os.environ, "COLUMNS": "80", "LINES": "24"}, timeout=60)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:   # the pty's other end closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    assert done.returncode == 0, done.stderr
    text = out.decode().replace("\r", "").splitlines()
    assert "CRASH" in text[0].split(), text
    failed = next(line for line in text if "FAILED" in line)
    assert "cuda_oom" in failed.split() and all(len(line) <= 80 for line in text), text


def test_two_runs_of_one_name_and_recipe_are_told_apart_at_80_columns(base, make_run):
    """Two `moeconsole demo` runs (same name, same recipe), one failed: at 80 columns the two rows
    read alike (name, step, loss, age) but for the short id `attach` takes, which the ID column
    keeps (the name is cut for it; without the column the id went after the name: ``told_apart``);
    --json's display_name stays the name."""
    import json
    long_name = "qwen3-moe-lora-sft-a-long-name"
    for run_id, status in (("20240101-000000-qwen3-moe-lora-a3f2", "failed"),
                           ("20240102-000000-qwen3-moe-lora-9b1c", "running")):
        make_run(base, run_id, name=long_name, status=status, steps=1200, max_steps=2000, restart_at=None,
                 crash={"class": "nccl_error", "summary": "NCCL watchdog timeout"} if status == "failed" else None)

    lines = _browser_at_80(base, 2)
    rows = [line for line in lines if "1,200/2,000" in line]
    assert len(rows) == 2 and "ID" in next(line for line in lines if line.split()[:1] == ["STATUS"]).split(), lines
    assert any("a3f2" in line.split() for line in rows) and any("9b1c" in line.split() for line in rows), rows
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "ls", "--json", "--runs-dir", str(base)],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert {r["display_name"] for r in json.loads(out.stdout)["runs"]} == {long_name}, out.stdout
