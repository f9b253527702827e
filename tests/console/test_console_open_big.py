"""Opening a big past log (the run browser's `o`, `moeconsole attach PATH`): the newest steps and
a chart at once, the history read in the background with a progress bar, and in the end the same
records `parse --json` gives."""
from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from moeconsole.console import foreign
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.chart import ChartView
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import seriesfile
from tests.ingest import ingest_samples as S
from tests.waiting import until, until_ui

REPO = Path(__file__).resolve().parents[2]
STEPS = 30_000


def big_log(path: Path, steps: int = STEPS) -> Path:
    """An ms-swift log (transformers 5.x dicts behind tqdm redraws) with an eval every 5,000 steps."""
    with open(path, "w") as f:
        f.write("[INFO:swift] Start time of running main: 2026-01-02 03:04:05\n")
        for i in range(1, steps + 1):
            f.write(S.tqdm_write(S.swift_hf_dict(i, steps, 2.0 - i / (2 * steps), 0.9, strings=True), i, steps) + "\n")
            if i % 5000 == 0:
                f.write(str({"eval_loss": f"{1.6 - i / (10 * steps):.4g}", "eval_runtime": "2.0", "epoch": "0.5",
                             "global_step/max_steps": f"{i}/{steps}"}) + "\n")
    return path


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    return big_log(tmp_path_factory.mktemp("big") / "train.log")


def part_read(run) -> int:
    """How far the started process has read its part (its progress file), 0 before it starts."""
    for work in run.path.glob(".history-*"):
        try:
            return int.from_bytes((work / "progress").read_bytes(), "little")
        except OSError:
            pass
    return 0


@pytest.mark.parametrize("workers,early", [(1, False), (2, False), (2, True)])
def test_newest_steps_first_then_the_whole_history_as_parse_gives_it(log, tmp_path, workers, early):
    """In one process, and in two (the first part read by a started process while this one
    reads the rest: the import runs in a thread, as in the UI), that process started before the
    history's read (as the UI does before its first frame) or by it: the same files, progress shown."""
    run, job = foreign.start_import(log, tmp_path)
    assert job is not None
    job.workers, job.split_min_bytes = workers, 0
    if early:
        job.start_part()
        until(lambda: part_read(run) > 0, timeout=120, what="the started process reading before the history starts")
        assert job.started_at is None and job.offset == 0
    state = run.read_state()
    assert state["status"] == "imported" and state["step"] == STEPS and state["max_steps"] == STEPS
    assert state["import"]["done"] is False and state["import"]["progress"] == 0.0
    newest = job.current_book()
    assert newest.last_metrics["step"] == STEPS and 0 < newest.series["loss"].n < STEPS
    job.start()
    progress = []
    until(lambda: (progress.append(job.status()["progress"]), job.done or job.error)[1], timeout=120,
          what="the history read", interval=0.005)
    job.wait(120)
    assert job.done and job.error is None and job.records == STEPS and job.processes == workers
    assert any(0 < p < 1 for p in progress) and progress == sorted(progress), "progress shown, never backwards"
    state = run.read_state()
    assert state["import"]["done"] is True and state["import"]["progress"] == 1.0
    full = job.current_book()
    assert full.metric_count == STEPS and full.eval_count == STEPS // 5000
    assert [p[0] for p in zip(*full.eval_series.points())] == [5000.0 * k for k in range(1, 7)]
    # metrics.jsonl holds exactly what `parse --json` prints, each record with the offset of its
    # line in the log as its last field (``log_at``: the run directory's tie to its train.log)
    parsed = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", str(log), "--json"], cwd=REPO,
                            capture_output=True, timeout=300)
    assert parsed.returncode == 0
    stamped = run.metrics.read_bytes().splitlines(keepends=True)
    unstamped = [re.sub(rb',"log_at":\d+\}\n$', b"}\n", line) for line in stamped]
    assert all(a != b for a, b in zip(stamped, unstamped)), "every record names its line"
    assert b"".join(unstamped) == parsed.stdout
    data = log.read_bytes()
    for line in stamped[:: max(1, len(stamped) // 50)]:   # the offset is that record's line
        at = json.loads(line)["log_at"]
        assert (at == 0 or data[at - 1:at] == b"\n") and json.loads(line)["step"] is not None
    # the chart book is saved for the next opening, covering the whole file
    again = seriesfile.load_book(run)
    assert again.metric_count == STEPS and again.offset == run.metrics.stat().st_size
    assert again.eval_count == 6


def test_a_started_process_is_ended_when_the_history_never_starts(log, tmp_path):
    """The screen closed before its first frame: the process started for the history ends, its
    work directory goes."""
    run, job = foreign.start_import(log, tmp_path)
    assert job is not None
    job.workers, job.split_min_bytes = 2, 0
    job.start_part()
    until(lambda: part_read(run) > 0, timeout=120, what="the started process reading")
    proc = job._early.child.proc
    job.cancel()
    assert proc.poll() is not None, "the started process is ended"
    assert not list(run.path.glob(".history-*"))


def test_the_screen_starts_the_second_reading_process_before_the_history(log, tmp_path, monkeypatch):
    """`attach LOG` / `o`: the started process reads its part while the screen opens, before the
    history's thread starts (held here); then the whole run is the one process's."""
    from moeconsole.runner.ingest import spawned
    gate = threading.Event()
    released: list[bool] = []
    read = foreign.Import._read_history

    def held(self):
        gate.wait(60)
        released.append(gate.is_set())
        read(self)
    monkeypatch.setattr(foreign.Import, "_read_history", held)
    monkeypatch.setattr(spawned, "SPLIT_MIN_BYTES", 1 << 20)   # this log is smaller than a real big one
    monkeypatch.setattr(spawned, "second_core_free", lambda sample_s=0.1: True)   # a busy test machine

    async def go():
        app = MoeConsole(tmp_path / "runs", None, interval=0.2, gpu=False, open_path=log)
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                                    and app.screen)
            job = screen.source.importing
            await until_ui(pilot, lambda: part_read(job.run) > 0, timeout=120, what="the started process reading")
            assert not released, "the started process read before the history's thread started"
            assert job.offset == 0 and not job.done
            gate.set()
            await until_ui(pilot, lambda: screen.snapshot is not None and (screen.snapshot.run.get("import") or {}).get("done"), timeout=120,
                           what="the history read")
            assert job.processes == 2 and job.error is None
            assert screen.snapshot.series["loss"].n == STEPS and screen.snapshot.eval_count == 6
    asyncio.run(go())


def test_run_screen_shows_the_newest_steps_and_a_progress_bar_then_the_whole_run(log, tmp_path, monkeypatch):
    gate = threading.Event()
    read = foreign.Import._read_history

    def held(self):  # the history waits until the test has seen the screen before it
        gate.wait(60)
        read(self)
    monkeypatch.setattr(foreign.Import, "_read_history", held)

    async def go():
        app = MoeConsole(tmp_path / "runs", None, interval=0.2, gpu=False, open_path=log)
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                                    and app.screen.query_one("#chart-loss", ChartView).text_rows() and app.screen)
            status = await until_ui(pilot, lambda: "reading history" in "".join(
                (lines := screen.query_one(StatusLine).plain_lines)[:1]) and lines, what="the import's progress")
            assert f"step {STEPS:,}/{STEPS:,}" in status[0] and "reading history" in status[0]
            assert screen.query_one("#chart-loss", ChartView).text_rows()[0].startswith("loss")
            assert screen.snapshot.series["loss"].last_x == STEPS
            gate.set()
            await until_ui(pilot, lambda: screen.snapshot is not None and (screen.snapshot.run.get("import") or {}).get("done"), timeout=120,
                           what="the history read")
            status = await until_ui(pilot, lambda: "reading history" not in "".join(
                (lines := screen.query_one(StatusLine).plain_lines)[:1]) and lines, what="the status line after it")
            assert "reading history" not in status[0]
            assert screen.snapshot.series["loss"].n == STEPS and screen.snapshot.eval_count == 6
            assert screen.query_one("#chart-eval", ChartView).display
    asyncio.run(go())


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_attach_a_log_path_in_a_terminal(log):
    from tests.console.test_console_tmux import Tmux
    tmux = Tmux(f"moeconsole-open-{os.getpid()}")
    base = Path(tempfile.mkdtemp(prefix="mcopen-"))
    try:
        cmd = (f"cd {shlex.quote(str(REPO))} && env PYTHONPATH={shlex.quote(str(REPO))} "
               f"{shlex.quote(sys.executable)} -m moeconsole.console.cli attach {shlex.quote(str(log))} "
               f"--runs-dir {shlex.quote(str(base))}")
        tmux("-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", "120", "-y", "36", cmd)
        tmux("run-shell", "-b", f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 1; done; "
                                f"tmux -L {shlex.quote(tmux.name)} kill-server")
        screen = tmux.wait_for("IMPORTED", timeout=60)
        assert f"{STEPS:,}" in screen
        tmux.wait_for("eval loss", timeout=120)   # the history is in: its evaluations are charted
        tmux("send-keys", "-t", "demo", "q")
        until(lambda: "demo" not in tmux("list-sessions"), timeout=20, what="the console to leave tmux")
    finally:
        tmux("kill-server")
        shutil.rmtree(base, ignore_errors=True)


def test_attach_refuses_a_path_that_is_no_log(tmp_path):
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    res = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "attach", str(empty), "--runs-dir",
                          str(tmp_path / "runs")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_the_history_read_starts_once_the_newest_steps_are_on_screen(tmp_path):
    """``attach PATH``: the first frame (the newest steps) is laid out and painted before the
    history read starts, so the two never share the interpreter during the first paint; the
    history then comes in whole."""
    small = big_log(tmp_path / "small.log", 3000)

    async def go():
        app = MoeConsole(tmp_path / "runs", None, interval=0.2, gpu=False, open_path=small)
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at
                                    and app.screen)
            importing = screen.source.importing
            await until_ui(pilot, lambda: screen.snapshot is not None and (screen.snapshot.run.get("import") or {}).get("done"), timeout=120,
                           what="the history read")
            assert importing.started_at is not None and importing.started_at >= screen.first_frame_at
            assert screen.snapshot.series["loss"].n == 3000
    asyncio.run(go())


def test_opening_a_live_runs_log_records_no_verdict_for_a_save_its_trainer_deletes_meanwhile(tmp_path):
    """`moeconsole open DIR` of a running ms-swift output: a checkpoint --save_total_limit deletes
    while it is verified (tests/checkpoints/conftest.py delete_when_read) gets no verdict, the
    others theirs."""
    from tests.checkpoints.conftest import delete_when_read, write_demo_checkpoint

    out = tmp_path / "output"
    (out / "logging.jsonl").parent.mkdir(parents=True)
    (out / "logging.jsonl").write_text("".join(json.dumps(
        {"loss": 1.0, "grad_norm": 0.5, "learning_rate": 1e-4, "global_step/max_steps": f"{s}/4"}) + "\n"
        for s in (1, 2, 3, 4)))
    write_demo_checkpoint(out / "checkpoint-4", 4)
    doomed = write_demo_checkpoint(out / "checkpoint-2", 2)
    thread, done = delete_when_read(doomed)
    run = foreign.open_path(out, tmp_path / "scratch")
    thread.join(timeout=60)
    assert done == ["deleted"], done
    checks = [e for e in map(json.loads, run.events.read_text().splitlines()) if e.get("type") == "checkpoint"]
    assert [(Path(c["path"]).name, c["verdict"]) for c in checks] == [("checkpoint-4", "ok")], checks


def test_attach_path_paints_the_log_first_and_escape_or_b_brings_the_run_browser(tmp_path, make_run):
    """``attach PATH``: the first frame is the log's screen alone (the run browser is not composed
    beneath it before that frame: about a fifth of its CPU); escape, or `b`, still brings the run
    browser listing the runs directory, and a run opened from it returns there."""
    from moeconsole.console.screens.browser import BrowserScreen
    small = big_log(tmp_path / "small.log", 300)
    base = tmp_path / "runs"
    base.mkdir()
    make_run(base, status="succeeded", steps=12)

    async def go(key: str):
        app = MoeConsole(base, None, interval=0.2, gpu=False, open_path=small)
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at
                                    and app.screen)
            assert not any(isinstance(s, BrowserScreen) for s in app.screen_stack), \
                "the run browser was composed before the log's first frame"
            assert "step 300/300" in screen.query_one(StatusLine).plain_lines[0]
            await pilot.press(key)
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows
                                     and app.screen, what="the run browser")
            assert len(browser.rows) == 1
            assert not any(isinstance(s, RunScreen) for s in app.screen_stack)
            await pilot.press("enter")   # the run it lists; escape returns to the browser
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen), what="the run from the browser")
            await pilot.press("escape")
            await until_ui(pilot, lambda: app.screen is browser, what="back to the browser")
    for key in ("escape", "b"):
        asyncio.run(go(key))


def first_frame_watch(monkeypatch) -> dict:
    """What the run screen's first frame held, when Textual says it is drawn: its status line and
    the loss chart's points (the snapshot that frame painted)."""
    seen: dict = {}
    apply, drawn = RunScreen.apply, RunScreen._first_frame_drawn

    def applied(self, snap, *args, **kwargs):
        seen["snap"] = snap
        return apply(self, snap, *args, **kwargs)

    def first_frame_drawn(self):
        if self.first_frame_at is None and "status" not in seen:
            seen["status"] = self.query_one(StatusLine).plain_lines[0]
            seen["loss"] = seen["snap"].series["loss"]
            seen["chart"] = self.query_one("#chart-loss", ChartView).text_rows()
        drawn(self)
    monkeypatch.setattr(RunScreen, "apply", applied)
    monkeypatch.setattr(RunScreen, "_first_frame_drawn", first_frame_drawn)
    return seen


def test_a_logs_first_frame_reads_its_last_64_kib_and_the_older_points_follow(tmp_path, monkeypatch):
    """``attach LOG``: the first frame needs only the log's last 64 KiB, a few ms of parsing
    (the last 512 KiB took about a tenth of a second before it): the status line shows the newest
    step and max steps, the loss chart its newest points; the rest of the history (a log under
    2 MiB: read whole at once, no wider window between) fills the chart in after."""
    from moeconsole.runner.ingest.history import FIRST_TAIL_BYTES
    small = big_log(tmp_path / "small.log", 3000)   # 1.1 MB, about 370 bytes a step
    seen = first_frame_watch(monkeypatch)
    windows: list[int] = []
    read = foreign.Import._read_history

    def history(self):   # the window the history read started from
        windows.append(self.window)
        read(self)
    monkeypatch.setattr(foreign.Import, "_read_history", history)

    async def go():
        app = MoeConsole(tmp_path / "runs", None, interval=0.2, gpu=False, open_path=small)
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at
                                    and app.screen, what="the first frame")
            assert "step 3,000/3,000" in seen["status"]
            assert seen["loss"].last_x == 3000 and seen["chart"][0].startswith("loss")
            assert 40 <= seen["loss"].n <= FIRST_TAIL_BYTES // 300, seen["loss"].n   # the last 64 KiB's steps
            await until_ui(pilot, lambda: screen.snapshot is not None and screen.snapshot.series["loss"].n == 3000,
                           timeout=120, what="the whole history on the chart")
            assert screen.snapshot.series["loss"].last_x == 3000
            assert "step 3,000/3,000" in screen.query_one(StatusLine).plain_lines[0]
            assert windows == [FIRST_TAIL_BYTES]
    asyncio.run(go())


def test_a_big_logs_first_frame_then_its_last_512_kib_then_its_history(log, tmp_path, monkeypatch):
    """A big log (11 MB): the first frame from its last 64 KiB, then (the history still being
    read) its last 512 KiB's steps on the chart, the newest step unchanged, then the whole run."""
    from moeconsole.runner.ingest.history import FIRST_TAIL_BYTES, TAIL_BYTES
    seen = first_frame_watch(monkeypatch)
    gate = threading.Event()
    read = foreign.Import._read_history

    def held(self):  # the history waits until the test has seen the wider window
        gate.wait(60)
        read(self)
    monkeypatch.setattr(foreign.Import, "_read_history", held)

    async def go():
        app = MoeConsole(tmp_path / "runs", None, interval=0.2, gpu=False, open_path=log)
        async with app.run_test(size=(140, 40)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at
                                    and app.screen, what="the first frame")
            first = seen["loss"].n
            assert f"step {STEPS:,}/{STEPS:,}" in seen["status"] and seen["loss"].last_x == STEPS
            assert 40 <= first <= FIRST_TAIL_BYTES // 300, first
            wide = await until_ui(pilot, lambda: screen.snapshot is not None and
                                  screen.snapshot.series["loss"].n > first and screen.snapshot, timeout=60,
                                  what="the last 512 KiB's steps")
            assert FIRST_TAIL_BYTES // 300 < wide.series["loss"].n <= TAIL_BYTES // 300 < STEPS
            assert wide.series["loss"].last_x == STEPS and not gate.is_set()
            assert f"step {STEPS:,}/{STEPS:,}" in screen.query_one(StatusLine).plain_lines[0]
            gate.set()
            await until_ui(pilot, lambda: screen.snapshot is not None and screen.snapshot.series["loss"].n == STEPS, timeout=120,
                           what="the whole history on the chart")
    try:
        asyncio.run(go())
    finally:
        gate.set()


def test_a_log_ending_in_64_kib_without_a_step_still_opens_on_its_newest_step(tmp_path):
    """The first window holds no step (the log ends in a long stretch of other lines, a config
    dump or a traceback): the last 512 KiB are read at once, so the screen never opens without
    the newest step."""
    path = big_log(tmp_path / "tail.log", 300)
    with open(path, "a") as f:
        for i in range(1000):
            f.write(f"[INFO:swift] model.layers.{i}.mlp.experts: {'x' * 80}\n")   # about 110 KiB
    run, job = foreign.start_import(path, tmp_path / "scratch")
    assert job is not None and job.current_book().last_metrics["step"] == 300
    assert run.read_state()["step"] == 300 and run.read_state()["max_steps"] == 300


@pytest.mark.parametrize("steps", [3000, 10000])
def test_a_log_of_step_less_dicts_opens_on_the_step_its_last_512_kib_give(tmp_path, steps):
    """Hugging Face dicts carry no step: the parser numbers them from the first one it reads,
    so a 64 KiB window would open a 3,000-step log at "step 870". Such a log is read from its
    last 512 KiB at once, as before the first window was made smaller: the whole of a log that
    small (its true newest step), else the records of the lines that start in those 512 KiB."""
    from moeconsole.runner.ingest.history import TAIL_BYTES
    path = tmp_path / "hf.log"
    path.write_text("".join(str({"loss": round(2 - i / steps, 4), "grad_norm": 0.5, "learning_rate": 1e-05,
                                 "epoch": round(i / steps, 4)}) + "\n" for i in range(steps)))
    data = path.read_bytes()
    cut = max(0, len(data) - TAIL_BYTES)
    expected = steps if cut == 0 else data[data.index(b"\n", cut) + 1:].count(b"\n")
    assert (cut == 0) == (steps == 3000)
    run, job = foreign.start_import(path, tmp_path / "scratch")
    assert job is not None and job.current_book().last_metrics["step"] == expected
    assert run.read_state()["step"] == expected


def test_attach_starts_the_second_reading_process_with_its_own_process(log, tmp_path, monkeypatch):
    """`attach LOG` starts the history's second reading process as its process starts, before the
    UI's modules are imported and before the log's scratch run directory exists
    (``prestart_history``): that process reads its part meanwhile, into files of its own; the
    log's import takes it over and the run's files are exactly the ones a single process writes."""
    from moeconsole.runner.ingest import spawned
    one_run, one = foreign.start_import(log, tmp_path / "one")
    assert one is not None
    one.workers = 1
    one.start()
    one.wait(120)
    assert one.done and one.processes == 1
    monkeypatch.setattr(spawned, "second_core_free", lambda sample_s=0.1: True)   # a busy test machine says no
    assert log.stat().st_size >= spawned.SPLIT_MIN_BYTES, "a log big enough for two processes"
    foreign.prestart_history(log)
    thread, box, _ = foreign._PRESTARTED[os.path.realpath(log)]
    thread.join(60)
    early = box[0]
    assert early is not None
    until(lambda: (early.work / "plan").exists() and int.from_bytes((early.work / "progress").read_bytes(),
                                                                     "little") > 0,
          timeout=120, what="the process started with attach reading its part before the run directory exists")
    run, job = foreign.start_import(log, tmp_path / "two")
    assert job is not None
    job.start_part()
    job.start()
    job.wait(120)
    assert job.done and job.error is None and job.processes == 2 and job.records == STEPS
    assert job.current_book().metric_count == STEPS
    assert run.metrics.read_bytes() == one_run.metrics.read_bytes()
    assert run.evals.read_bytes() == one_run.evals.read_bytes()
    assert run.series.read_bytes() == one_run.series.read_bytes()
    assert not early.work.exists(), "its work directory is gone"
    assert foreign.take_prestarted(log, log.stat().st_size) is None, "taken once"


def _prestarted(log, monkeypatch):
    """The process `attach LOG` starts for the history (a second core taken as free), once started."""
    from moeconsole.runner.ingest import spawned
    monkeypatch.setattr(spawned, "second_core_free", lambda sample_s=0.1: True)
    foreign.prestart_history(log)
    thread, box, _ = foreign._PRESTARTED[os.path.realpath(log)]
    thread.join(60)
    assert box[0] is not None
    return box[0]


def test_a_process_started_with_attach_and_never_taken_ends_at_exit(log, tmp_path, monkeypatch):
    """`attach LOG` closed before its log is opened: the process started for the history is
    ended and its work directory removed when the console's process exits."""
    early = _prestarted(log, monkeypatch)
    proc = early.child.proc
    foreign.end_prestarted()
    assert proc.poll() is not None and not early.work.exists()


def test_a_process_started_with_attach_is_ended_when_the_log_is_read_in_one(log, tmp_path, monkeypatch):
    """The log's import reads in one process (one worker asked for): the process started with
    `attach LOG` is ended as the import decides, not left reading till the console exits."""
    early = _prestarted(log, monkeypatch)
    proc = early.child.proc
    run, job = foreign.start_import(log, tmp_path)
    assert job is not None
    job.workers = 1
    job.start_part()
    assert proc.poll() is not None and not early.work.exists()
    job.start()
    job.wait(120)
    assert job.done and job.processes == 1 and job.records == STEPS
