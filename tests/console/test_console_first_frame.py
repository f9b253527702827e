"""Speed a user feels, as behaviour: the first frame of a run needs only the run's files (the GPU
driver and the process scan follow on the next poll, without waiting for the timer), and a
one-shot ``--json --once`` loads no UI or training library."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading

from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.gpu_panel import GpuPanel
from moeconsole.console.widgets.status import StatusLine
from tests.console.test_console_app import GPU, app_for, live_run
from tests.waiting import until_ui


def test_the_first_frame_shows_the_run_before_the_gpu_reading_answers(base, make_run):
    """A GPU driver that takes its time (here: until the test lets it answer) does not hold the
    run's status line, charts and events back; the blocker pane says it is scanning, never
    "none", until the scan has answered; then the GPUs and the scan's verdict appear."""
    run = live_run(base, make_run)
    answer = threading.Event()
    asked = threading.Event()

    def slow_telemetry(state):
        asked.set()
        answer.wait(60)
        return GPU, []

    async def go() -> None:
        app = app_for(base, run, telemetry=slow_telemetry, interval=30.0)
        async with app.run_test(size=(120, 36)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and
                           "step 60/100" in "".join(app.screen.query_one(StatusLine).plain_lines),
                           what="the first frame while the GPU reading has not answered")
            screen = app.screen
            assert not answer.is_set() and screen.snapshot is None   # no whole snapshot yet
            title = screen.query_one("#blockers-title")
            assert str(title.render()) == "zombies / blockers: scanning"
            assert not any("400/700W" in line for line in screen.query_one(GpuPanel).plain_lines)
            # the full poll comes at once, not after the 30 s timer
            await until_ui(pilot, asked.is_set, what="the GPU reading to be asked for right after the first frame")
            answer.set()
            await until_ui(pilot, lambda: str(title.render()) == "zombies / blockers: none",
                           what="the scan's verdict")
            assert screen.snapshot is not None and screen.snapshot.gpu == GPU
            await until_ui(pilot, lambda: any("400/700W" in line for line in screen.query_one(GpuPanel).plain_lines),
                           what="the GPU rows")
    try:
        asyncio.run(go())
    finally:
        answer.set()


def test_json_once_imports_no_ui_and_no_training_library(base, make_run):
    """``moeconsole --json RUN --once`` (what a script runs every few seconds) prints its snapshot
    without importing Textual, Rich, numpy, torch or YAML: a real process, its modules listed."""
    run = make_run(base)
    code = ("import io, sys, contextlib\n"
            "from moeconsole.console.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            f"    rc = main(['--json', {run.run_id!r}, '--once', '--no-gpu', '--runs-dir', {str(base)!r}])\n"
            "print(rc, out.getvalue().count(chr(10)))\n"
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    status, modules = proc.stdout.splitlines()[-2:]
    assert status == "0 1"   # exit 0, one snapshot line
    loaded = set(modules.split())
    assert loaded.isdisjoint({"textual", "rich", "numpy", "torch", "yaml", "safetensors"}), \
        loaded & {"textual", "rich", "numpy", "torch", "yaml", "safetensors"}
    assert "moeconsole" in loaded


def test_the_command_line_samples_the_cpu_before_its_own_imports(base, make_run):
    """The host line's first CPU figure needs two samples 0.1 s apart: ``moeconsole`` takes the
    first one before argparse, msgspec or NVML are imported, so that interval is spent on
    start-up rather than in a sleep (a real process; the order of ``sys.modules`` is the order of
    the imports)."""
    run = make_run(base)
    code = ("import io, sys, contextlib\n"
            "from moeconsole.console.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['--json', {run.run_id!r}, '--once', '--runs-dir', {str(base)!r}])\n"
            "from moeconsole.runner.telemetry import cpustat\n"
            "print(rc, cpustat.first is not None)\n"
            "print(' '.join(sys.modules))\n")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    status, modules = proc.stdout.splitlines()[-2:]
    assert status == "0 True"
    order = modules.split()
    first = order.index("moeconsole.runner.telemetry.cpustat")
    for later in ("typing", "argparse", "msgspec", "moeconsole.runner.core.bounds"):
        assert later in order and order.index(later) > first, later
    assert "psutil" not in order[:first]   # (the snapshot reads /proc itself: psutil is not loaded at all)


def test_opening_a_log_reads_its_newest_steps_without_numpy(tmp_path):
    """``attach PATH``: the newest steps of a log are read (and shown) before numpy is imported;
    numpy comes with the history, read after the first frame. A real process, its modules listed."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"{{'loss': {2 - i / 100:.4g}, 'grad_norm': 0.5, 'learning_rate': 1e-05, "
                           f"'global_step/max_steps': '{i}/100'}}\n" for i in range(1, 101)))
    code = ("import sys\n"
            "from pathlib import Path\n"
            "from moeconsole.console.foreign import start_import\n"
            f"run, job = start_import(Path({str(log)!r}), Path({str(tmp_path)!r}))\n"
            "print(job.tail_book.last_metrics['step'], 'numpy' in sys.modules)\n"
            "job.start(); job.wait(60)\n"
            "print(job.records, 'numpy' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["100", "False", "100", "True"]


def test_the_key_footer_comes_right_after_the_first_frame(base, make_run, monkeypatch):
    """The first frame is the run's data without the key footer (its keys' widgets and their
    style updates were a quarter of that frame's layout); the footer follows at once and shows
    the keys that apply to the run, kill among them for a live run."""
    from moeconsole.console.widgets.keybar import KeyBar
    run = live_run(base, make_run)
    at_first_frame: list[int] = []
    drawn = RunScreen._first_frame_drawn

    def first_frame_drawn(self):   # what the first frame held, when Textual says it is drawn
        if self.first_frame_at is None:
            at_first_frame.append(len(self.query(KeyBar)))
        drawn(self)
    monkeypatch.setattr(RunScreen, "_first_frame_drawn", first_frame_drawn)

    async def go() -> None:
        app = app_for(base, run, telemetry=lambda state: (GPU, []), interval=30.0)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at
                                    and app.screen, what="the first frame")
            assert at_first_frame == [0], "the footer was laid out in the first frame"
            def shown() -> dict[str, str]:   # the footer's keys as drawn: key -> its label
                return {key: label for bar in screen.query(KeyBar) if bar.region.area for key, label, _on in bar.keys}
            keys = await until_ui(pilot, lambda: "k" in shown() and shown(), what="the footer's keys")
            assert keys["k"] == "Kill" and keys["q"] == "Detach"
            assert "step 60/100" in "".join(screen.query_one(StatusLine).plain_lines)
    asyncio.run(go())


def test_a_logs_first_frame_loads_no_host_sampler(tmp_path):
    """``attach LOG`` (and a past run): the host line is sampled with the GPUs, which a log never
    has, so its sampler (``moeconsole.runner.telemetry.host``: its import and first CPU reading)
    is not made before the first frame, nor after. A real process, the app run headless to its
    first frame, its modules listed."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"{{'loss': {2 - i / 100:.4g}, 'grad_norm': 0.5, 'learning_rate': 1e-05, "
                           f"'global_step/max_steps': '{i}/100'}}\n" for i in range(1, 101)))
    code = ("import asyncio, sys\n"
            "from pathlib import Path\n"
            "from moeconsole.console.app import MoeConsole\n"
            "from moeconsole.console.screens.run import RunScreen\n"
            "from moeconsole.console.widgets.status import StatusLine\n"
            "from tests.waiting import until_ui\n"
            "async def go():\n"
            f"    app = MoeConsole(Path({str(tmp_path / 'runs')!r}), None, interval=0.2, open_path=Path({str(log)!r}))\n"
            "    async with app.run_test(size=(140, 40)) as pilot:\n"
            "        screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and "
            "app.screen.first_frame_at and app.screen.snapshot and app.screen)\n"
            "        print(screen.query_one(StatusLine).plain_lines[0])\n"
            "        print('moeconsole.runner.telemetry.host' in sys.modules)\n"
            "asyncio.run(go())\n")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    status, loaded = proc.stdout.splitlines()[-2:]
    assert "step 100/100" in status and "IMPORTED" in status.upper()
    assert loaded == "False"


def test_the_run_screen_is_never_drawn_empty_first(base, make_run, monkeypatch):
    """The first frame's poll starts as the screen is composed and is taken at its mount, so the
    first time Textual draws the status line it already shows the run (before, the screen was laid
    out and painted with an empty status line, then again when the poll's message came: a frame
    the user never needed, about a tenth of the first paint's CPU). Also a past run (no GPUs).
    The mount's wait for that poll is made generous here: on a busy machine the poll may take
    longer than the quarter second the screen waits (then the screen is drawn without the run,
    by design: the next test), and what is checked is that a finished poll is drawn first."""
    import moeconsole.console.screens.run as run_screen
    monkeypatch.setattr(run_screen, "FIRST_POLL_WAIT_S", 60.0)
    drawn_first: list[str] = []
    render_lines = StatusLine.render_lines

    def first_draw(self, crop):   # what the status line holds the first time it is drawn
        if not drawn_first:
            drawn_first.append("".join(self.plain_lines))
        return render_lines(self, crop)
    monkeypatch.setattr(StatusLine, "render_lines", first_draw)
    for run in (live_run(base, make_run), make_run(base, "20240101-000000-past-0002", status="completed")):
        drawn_first.clear()

        async def go() -> None:
            app = app_for(base, run, telemetry=lambda state: (GPU, []), interval=30.0)
            async with app.run_test(size=(120, 36)) as pilot:
                await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at,
                               what="the first frame")
                assert "/100" in "".join(app.screen.query_one(StatusLine).plain_lines)
        asyncio.run(go())
        assert drawn_first and "step " in drawn_first[0] and "/100" in drawn_first[0], drawn_first


def test_a_first_poll_slower_than_the_mounts_wait_still_brings_the_run(base, make_run, monkeypatch):
    """The screen's mount waits for the first frame's poll only briefly: a poll that takes longer
    (a slow disk; here held until the test lets it go) lets the screen draw without the run, and
    the poll thread brings the run when the poll is done: once, not lost and not twice."""
    import moeconsole.console.screens.run as run_screen
    from moeconsole.console.source import RunSource
    monkeypatch.setattr(run_screen, "FIRST_POLL_WAIT_S", 0.01)
    go_on = threading.Event()
    first_polls: list[int] = []
    poll = RunSource.poll

    def held_poll(self, *, telemetry=True, files_only=False):
        if files_only:
            first_polls.append(1)
            go_on.wait(60)
        return poll(self, telemetry=telemetry, files_only=files_only)
    monkeypatch.setattr(RunSource, "poll", held_poll)
    run = live_run(base, make_run)

    async def go() -> None:
        app = app_for(base, run, telemetry=lambda state: (GPU, []), interval=30.0)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.is_mounted
                                    and app.screen, what="the run screen mounted")
            await pilot.pause()
            assert "step" not in "".join(screen.query_one(StatusLine).plain_lines)   # drawn without the run
            go_on.set()
            await until_ui(pilot, lambda: "step 60/100" in "".join(screen.query_one(StatusLine).plain_lines),
                           what="the run, from the slow first poll")
            await until_ui(pilot, lambda: screen.snapshot is not None, what="the full poll after it")
    try:
        asyncio.run(go())
    finally:
        go_on.set()
    assert first_polls == [1]


def test_a_live_runs_first_frame_loads_no_host_sampler_and_the_host_line_follows(base, make_run):
    """``attach RUN`` on a live run with this host's GPUs: the host line is sampled with the GPUs,
    after the first frame, so its sampler (``moeconsole.runner.telemetry.host`` and psutil: their
    import was on the main thread before that frame) is not loaded by then; the host line comes
    with the poll after it. A real process, the app run headless, its modules listed at the first
    frame (the GPU reading here finds no driver and says so: the host line does not need one)."""
    run = live_run(base, make_run)
    code = ("import asyncio, sys\n"
            "from pathlib import Path\n"
            "from moeconsole.console.app import MoeConsole\n"
            "from moeconsole.console.screens.run import RunScreen\n"
            "from moeconsole.console.widgets.lines import LinesView\n"
            "from moeconsole.runner.rundir.rundir import RunDir\n"
            "from tests.waiting import until_ui\n"
            "at_first: list = []\n"
            "drawn = RunScreen._first_frame_drawn\n"
            "def first_frame_drawn(self):\n"
            "    if self.first_frame_at is None:\n"
            "        at_first.append({'host': 'moeconsole.runner.telemetry.host' in sys.modules,\n"
            "                         'psutil': 'psutil' in sys.modules})\n"
            "    drawn(self)\n"
            "RunScreen._first_frame_drawn = first_frame_drawn\n"
            "async def go():\n"
            f"    app = MoeConsole(Path({str(base)!r}), RunDir(Path({str(run.path)!r})), interval=30.0)\n"
            "    async with app.run_test(size=(140, 40)) as pilot:\n"
            "        screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and "
            "app.screen.snapshot and app.screen)\n"
            "        host = screen.query_one('#hostline', LinesView)\n"
            "        await until_ui(pilot, lambda: host.display and host.lines)\n"
            "        print(at_first)\n"
            "        print(''.join(piece for piece, _ in host.lines[0]))\n"
            "asyncio.run(go())\n")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first, hostline = proc.stdout.splitlines()[-2:]
    assert first == "[{'host': False, 'psutil': False}]", first
    assert " cpu " in hostline and " ram " in hostline, hostline


def test_the_run_screens_widgets_are_styled_once_before_the_first_frame(base, make_run, monkeypatch):
    """The screen has its breakpoint classes (``-wide``/``-narrow``, ``-tall``/``-short``) from its
    compose: Textual set them at the first resize, after the first style pass, and every widget of
    the screen (each chart with its twelve component classes) was styled again before the first
    frame. At 80x24 and 140x40: the first frame has the classes of its size (the compact layout
    at 80x24), and no widget was restyled for them."""
    from textual.css.stylesheet import Stylesheet
    from moeconsole.console.widgets.chart import ChartView
    restyled: list[str] = []
    update_nodes = Stylesheet.update_nodes

    def counting(self, nodes, animate=False):
        nodes = list(nodes)
        restyled.extend(n.id for n in nodes if isinstance(n, ChartView))
        return update_nodes(self, nodes, animate=animate)
    monkeypatch.setattr(Stylesheet, "update_nodes", counting)
    at_first_frame: list[tuple[set, list]] = []
    drawn = RunScreen._first_frame_drawn

    def first_frame_drawn(self):
        if self.first_frame_at is None:
            at_first_frame.append(({c for c in self.classes if c.startswith("-")}, list(restyled)))
        drawn(self)
    monkeypatch.setattr(RunScreen, "_first_frame_drawn", first_frame_drawn)
    run = live_run(base, make_run)
    for size, classes in (((80, 24), {"-narrow", "-short"}), ((140, 40), {"-wide", "-tall"})):
        restyled.clear()
        at_first_frame.clear()

        async def go() -> None:
            app = app_for(base, run, telemetry=lambda state: (GPU, []), interval=30.0)
            async with app.run_test(size=size) as pilot:
                await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at,
                               what="the first frame")
        asyncio.run(go())
        shown, charts = at_first_frame[0]
        assert shown == classes, (size, shown)
        assert charts.count("chart-loss") <= 1, (size, charts)


def test_the_console_theme_is_in_the_first_parse_of_its_css(base, make_run, monkeypatch):
    """The console's theme is the app's from its start: its CSS (console.tcss and every widget's)
    is parsed once, with the theme's colours. Setting ``App.theme`` in the constructor queued a
    second parse of every source (Textual's theme watcher, ``refresh_css``) before the first frame.
    The colours drawn are the theme's (its lighter red for errors, not Textual's dark theme's)."""
    from rich.color import Color as RichColor
    from textual.css.stylesheet import Stylesheet
    from moeconsole.console.app import console_theme
    reparsed: list[int] = []
    reparse = Stylesheet.reparse

    def counting(self):
        reparsed.append(1)
        return reparse(self)
    monkeypatch.setattr(Stylesheet, "reparse", counting)
    at_first_frame: list[int] = []
    drawn = RunScreen._first_frame_drawn

    def first_frame_drawn(self):
        if self.first_frame_at is None:
            at_first_frame.append(len(reparsed))
        drawn(self)
    monkeypatch.setattr(RunScreen, "_first_frame_drawn", first_frame_drawn)
    run = live_run(base, make_run)

    async def go() -> None:
        app = app_for(base, run, telemetry=lambda state: (GPU, []), interval=30.0)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at
                                    and app.screen, what="the first frame")
            assert app.theme == "moeconsole" and "-theme-moeconsole" in app.classes and "-dark-mode" in app.classes
            crit = screen.query_one(GpuPanel).get_component_rich_style("gpu--crit", partial=True)
            want = RichColor.parse(console_theme().error).get_truecolor()
            got = crit.color.get_truecolor() if crit.color is not None else None
            assert got is not None and all(abs(a - b) <= 2 for a, b in zip(got, want)), (got, want)
    asyncio.run(go())
    assert at_first_frame == [0], at_first_frame
