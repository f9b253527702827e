"""What the attached console holds in memory, as behaviour: a real ``moeconsole attach RUN`` in a
terminal (tmux) paints its run and has not loaded OpenSSL (asyncio's TLS support, which the
console never uses, is about 4 MiB of the process); the hold on ``ssl`` ends with the import, so
a later ``import ssl`` in the same process still works."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.console.conftest import write_run
from tests.console.test_console_tmux import Tmux
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]


def _mapped_files(pid: int) -> set[str]:
    with open(f"/proc/{pid}/maps") as f:
        return {Path(parts[5]).name for parts in (line.split() for line in f) if len(parts) > 5}


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_an_attached_console_paints_its_run_without_loading_openssl_or_libcrypto():
    base = Path(tempfile.mkdtemp(prefix="mclean-"))
    tmux = Tmux(f"moeconsole-lean-{os.getpid()}")
    try:
        run = write_run(base, "20260101-000000-lean-0001", status="running", runner_pid=os.getpid())
        cmd = (f"cd {shlex.quote(str(REPO))} && exec env PYTHONPATH={shlex.quote(str(REPO))} "
               f"{shlex.quote(sys.executable)} -m moeconsole.console.cli attach {run.run_id} "
               f"--runs-dir {shlex.quote(str(base))}")
        tmux("-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", "140", "-y", "40", cmd)
        pid = int(tmux("display-message", "-p", "-t", "demo", "#{pane_pid}").strip())
        tmux.wait_for("step 60/100")
        mapped = _mapped_files(pid)
        assert any(name.startswith("libpython") or name.startswith("python") for name in mapped), mapped
        # neither ssl nor hashlib's OpenSSL backend (libcrypto: ~4 MiB of RSS for a console that
        # makes no digest; issue 37's RSS row)
        assert not {name for name in mapped if name.startswith(("_ssl.", "libssl.", "_hashlib.", "libcrypto."))}, \
            sorted(mapped)
        tmux("send-keys", "-t", "demo", "q")
        until(lambda: not Path(f"/proc/{pid}").exists(), 30, what="the console to exit on q")
    finally:
        tmux("kill-server")
        shutil.rmtree(base, ignore_errors=True)


def _printed(code: str) -> list[str]:
    """The words a fresh interpreter running ``code`` (this tree first on its path) prints."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_the_ui_import_leaves_ssl_importable_afterwards():
    code = ("import sys\n"
            "from moeconsole.console.lean import import_ui\n"
            "app = import_ui('moeconsole.console.app')\n"
            "import asyncio\n"
            "print(hasattr(app, 'MoeConsole'), 'ssl' in sys.modules, asyncio.run(asyncio.sleep(0, 'ran')))\n"
            "import ssl\n"
            "print(ssl.create_default_context().protocol is not None)\n")
    assert _printed(code) == ["True", "False", "ran", "True"]


def test_the_file_watcher_starts_with_the_poll_not_with_the_screen(tmp_path):
    """Making a run screen's watch starts no watcher (nothing on the way to the first paint); the
    poller starts it, after the first frame, and it then wakes on a change. On Linux the watch is
    the kernel's inotify descriptor: no watchdog import and no thread, ever."""
    code = ("import sys, threading, select\n"
            "from pathlib import Path\n"
            "from moeconsole.console.runwatch import RunWatch\n"
            f"d = Path({str(tmp_path)!r})\n"
            "n = threading.active_count()\n"
            "w = RunWatch(d, 60.0)\n"
            "print('watchdog' in sys.modules, threading.active_count() - n)\n"
            "w.start()\n"
            "(d / 'train.log').write_text('step 1\\n')\n"
            "print('watchdog' in sys.modules, threading.active_count() - n, w.wait_next(lambda: False))\n"
            "w.close()\n")
    assert _printed(code) == ["False", "0", "False", "0", "True"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc arenas")
@pytest.mark.parametrize("one_arena", [True, False])
def test_the_consoles_threads_share_one_malloc_arena(one_arena):
    """Four threads alive at once, each allocating through malloc (Python objects over 512
    bytes), as Textual's input and output threads and the poll worker do: with
    ``one_malloc_arena`` (what ``attach`` calls before its threads start) glibc's
    ``malloc_stats`` counts one arena, without it one per thread."""
    code = ("import ctypes, sys, threading\n"
            "from moeconsole.console.lean import one_malloc_arena\n"
            f"print(one_malloc_arena() if {one_arena} else 'off')\n"
            "held = []\n"
            "barrier = threading.Barrier(5)\n"
            "def work():\n"
            "    held.append([bytearray(4096) for _ in range(64)])\n"
            "    barrier.wait()\n"
            "    barrier.wait()\n"
            "threads = [threading.Thread(target=work) for _ in range(4)]\n"
            "for t in threads: t.start()\n"
            "barrier.wait()\n"
            "sys.stderr.flush()\n"
            "ctypes.CDLL(None).malloc_stats()\n"
            "barrier.wait()\n"
            "for t in threads: t.join()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MALLOC_ARENA_MAX", None)
    proc = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    arenas = sum(1 for line in proc.stderr.splitlines() if line.startswith("Arena "))
    if one_arena:
        assert proc.stdout.split() == ["True"]
        assert arenas == 1, proc.stderr
    else:
        assert arenas > 1, proc.stderr


def test_the_footer_shows_its_keys_without_the_unicode_name_tables(base, make_run, monkeypatch):
    """The run screen's footer writes each one-letter key as itself without asking Python's
    Unicode database for a character of that name (Textual's ``format_key`` does, and each
    missed lookup reads pages of the name tables: 0.2 MiB of resident memory measured).
    The keys read as before."""
    import asyncio

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from tests.console.test_console_app import _screen_text
    from tests.waiting import until_ui

    looked_up = _unicode_lookups(monkeypatch)
    run = make_run(base, status="running", steps=40)

    async def go() -> str:
        app = MoeConsole(base, run, gpu=False, interval=3600)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot
                           and "q Detach" in _screen_text(app), what="the footer")
            return _screen_text(app)
    text = asyncio.run(go())
    assert "b Runs" in text and "l Log" in text and "? Help" in text and "c Charts" in text
    assert [name for name in looked_up if len(name) == 1] == [], looked_up


def test_the_key_table_answers_as_textual_does():
    """Every key of ``lean.KEY_CHARACTERS`` has the character Textual's own function gives it."""
    from textual.keys import key_to_character

    from moeconsole.console.lean import KEY_CHARACTERS
    assert {key: key_to_character(key) for key in KEY_CHARACTERS} == KEY_CHARACTERS


def test_the_binding_chain_reads_no_unicode_names_on_the_run_screen_or_the_gpu_view(base, make_run, monkeypatch):
    """The key footer reads the screen's bindings on every change of the keys that apply, and
    each key press does: Textual then asks for the character of every key of the chain, by
    ``unicodedata.lookup`` for a named key ("question_mark", "escape", "enter"), and the name
    tables it reads stay resident (0.7 MiB). With each focusable widget focused in turn, on the
    run screen and in the GPU view (``g``), no name is looked up; the keys still work (``?``
    opens the help). Pilot's own simulated presses look names up: they are not checked."""
    import asyncio

    import textual.keys

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.dialogs import HelpScreen
    from moeconsole.console.screens.run import RunScreen
    from tests.waiting import until_ui

    textual.keys.key_to_character.cache_clear()   # Textual keeps each answer: ask afresh
    looked_up = _unicode_lookups(monkeypatch)
    run = make_run(base, status="running", steps=40)

    async def go() -> None:
        app = MoeConsole(base, run, gpu=False, interval=3600)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot, what="the run")
            run_screen = app.screen
            for widget in run_screen.focus_chain:
                widget.focus()
                await pilot.pause()
                assert run_screen.active_bindings
            assert looked_up == [], looked_up
            await pilot.press("g")   # (Pilot's simulated press names its key: not what is measured)
            await until_ui(pilot, lambda: type(app.screen).__name__ == "GpuScreen", what="the GPU view")
            looked_up.clear()
            for widget in app.screen.focus_chain:
                widget.focus()
                await pilot.pause()
                assert app.screen.active_bindings
            assert looked_up == [], looked_up
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
    asyncio.run(go())


def _unicode_lookups(monkeypatch) -> list[str]:
    """The names ``unicodedata.lookup`` is asked for from now on (it still answers)."""
    import unicodedata
    looked_up: list[str] = []
    real_lookup = unicodedata.lookup

    def lookup(name: str) -> str:
        looked_up.append(name)
        return real_lookup(name)
    monkeypatch.setattr(unicodedata, "lookup", lookup)
    return looked_up


class _Cycle:
    """An object in a reference cycle: only Python's cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.mark.parametrize("armed", [True, False])
def test_the_attached_console_frees_and_freezes_its_start_once_it_has_drawn(base, make_run, armed):
    """``attach`` arms ``lean.settle_after_first_frame``: once the run screen's first frame is
    drawn, the garbage of the start is collected and what is alive then is frozen, so the
    collections after it look only at what the refresh makes; and the collector keeps Python's
    pace, a full pass at most every hundredth young collection (the drawn lines are no cycles:
    ``test_a_drawn_line_goes_when_the_next_refresh_replaces_it_not_at_a_collection``), where it
    had one every fourth, a tenth of the run screen's CPU. The refresh goes on after it. Not
    armed (a test process, an embedding program), nothing is frozen. The collector is off while
    the app starts, so only the console's own pass can free the cycle made before it; then
    thirty "refreshes" of a thousand new containers each, each kept for five refreshes (as a
    drawn line outlives the young collections), drive the young collections."""
    import asyncio
    import gc
    import weakref

    from moeconsole.console import lean
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from tests.waiting import until_ui

    run = make_run(base, status="running", steps=40)
    assert gc.get_freeze_count() == 0
    threshold = gc.get_threshold()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        cycle = _Cycle()
        gone = weakref.ref(cycle)
        del cycle
        if armed:
            lean.settle_after_first_frame(arm=True)

        async def go() -> tuple[int, bool, int, int]:
            app = MoeConsole(base, run, gpu=False, interval=0.05)
            async with app.run_test(size=(160, 48)) as pilot:
                await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at,
                               what="the first frame")
                screen = app.screen
                await until_ui(pilot, lambda: not armed or gc.get_freeze_count() > 0, what="the start frozen")
                frozen, freed = gc.get_freeze_count(), gone() is None
                before = [g["collections"] for g in gc.get_stats()]
                gc.enable()
                shown: list[list[list[int]]] = []
                for _ in range(30):
                    shown = [*shown[-4:], [[i] for i in range(1000)]]   # on screen for five refreshes
                    polls = screen.polls
                    await until_ui(pilot, lambda: screen.polls > polls, what="the next refresh")
                gc.disable()
                young, middle, full = (g["collections"] - b for g, b in zip(gc.get_stats(), before))
                return frozen, freed, young + middle + full, full
        frozen, freed, collections, full = asyncio.run(go())
        if armed:
            assert frozen > 10_000 and freed
            assert collections >= 20, collections   # 30,000 containers: a young collection per 700 more
            assert full <= collections // 20, (full, collections)   # every fourth, before: 10 and more
        else:
            assert frozen == 0 and not freed
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()
        lean.settle_after_first_frame(arm=False)
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


NO_PSUTIL_PROBE = r"""
import asyncio, json, os, subprocess, sys, tempfile
from pathlib import Path
from tests.console.conftest import write_run
from tests.waiting import until_ui
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen

base = Path(tempfile.mkdtemp(prefix="mcnops-"))
run = write_run(base, "20260101-000000-nops-0001", status="running", runner_pid=os.getpid())
# a leftover of this run: its id in the environment, outside the tracked tree
leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "leftover-of-the-run"],
                            env={**os.environ, "MOECONSOLE_RUN_ID": run.run_id})
seen = {}

async def go():
    app = MoeConsole(base, run, gpu=True, interval=0.2)
    async with app.run_test(size=(160, 48)) as pilot:
        def listed():
            s = app.screen
            snap = getattr(s, "snapshot", None)
            if not isinstance(s, RunScreen) or snap is None or snap.host is None:
                return False
            return any(b.get("pid") == leftover.pid for b in snap.blockers if isinstance(b, dict))
        await until_ui(pilot, listed, timeout=120, what="the leftover listed and the host line")
        snap = app.screen.snapshot
        seen["cmdline"] = next(b.get("cmdline") for b in snap.blockers if b.get("pid") == leftover.pid)
        seen["host"] = snap.host.get("ram_total_gib") is not None
        seen["run screen"] = "psutil" in sys.modules
        polls = app.screen.polls
        await pilot.press("g")
        await until_ui(pilot, lambda: type(app.screen).__name__ == "GpuScreen", what="the GPU view")
        run_screen = app.screen_stack[-2]
        await until_ui(pilot, lambda: run_screen.polls >= polls + 3, timeout=120, what="three polls under it")
        seen["gpu view"] = "psutil" in sys.modules
try:
    asyncio.run(go())
finally:
    leftover.kill()
    leftover.wait()
print(json.dumps(seen))
"""


def test_the_run_screen_and_the_gpu_view_list_processes_and_the_host_without_psutil():
    """The attached console lists a leftover of its run (its user and command line) and shows
    the host line (CPU, RAM), on the run screen and under the GPU view, and never imports psutil
    (1.7 MiB of code): on Linux the scan, the facts of a listed process and the host figures are
    read from /proc (tests/telemetry/test_procs_without_psutil.py checks them against psutil's)."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("Linux's /proc")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", NO_PSUTIL_PROBE], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert "leftover-of-the-run" in seen["cmdline"] and seen["host"], seen
    assert (seen["run screen"], seen["gpu view"]) == (False, False), seen


def test_a_drawn_line_goes_when_the_next_refresh_replaces_it_not_at_a_collection(base, make_run):
    """Every line a widget draws and the compositor cuts is freed when the next refresh replaces
    it: none waits for Python's cyclic collector (Textual's ``Strip.divide`` kept a line that one
    widget fills in the line's own cache, a reference cycle: about 500 lines with their caches
    and segments, 8,500 objects, every 10 s of the 8-GPU run screen; ``lean.lines_without_cycles``).
    The collector is off while steps arrive and the run screen redraws its charts, log tail and
    header at each; what it then finds unreachable holds no line of Textual's."""
    import asyncio
    import gc

    from textual.strip import Strip

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.runner.rundir import jsonio
    from tests.waiting import until_ui

    run = make_run(base, status="running", steps=40)
    was_enabled, flags = gc.isenabled(), gc.get_debug()

    async def go() -> tuple[list[str], int]:
        app = MoeConsole(base, run, gpu=False, interval=0.05)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at,
                           what="the first frame")
            screen = app.screen
            gc.collect()
            gc.disable()
            drawn = 0
            for step in range(41, 61):   # twenty steps, each drawn
                with open(run.log, "a") as f:
                    f.write(f"step {step}/100 loss {1.0 / step:.4f}\n")
                jsonio.append_jsonl(run.metrics, {"v": 1, "t": 1.7e9 + step, "attempt": 2, "step": step,
                                                  "max_steps": 100, "loss": 1.0 / step, "grad_norm": 1.0,
                                                  "lr": 1e-4, "mem_gib": 61.0, "extra": {}})
                polls = screen.polls
                await until_ui(pilot, lambda: screen.polls > polls + 1, what=f"step {step} read")
                await pilot.pause()
                drawn += f" {step}/100 " in _screen_text(app)   # the step table's newest row
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            found = [type(o).__qualname__ for o in gc.garbage if isinstance(o, Strip)]
            gc.garbage.clear()
            return found, drawn
    try:
        found, drawn = asyncio.run(go())
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()
    assert drawn == 20
    assert found == [], f"{len(found)} drawn lines in reference cycles"


async def _next_step_drawn(pilot, app, run) -> None:
    """The run logs step 41 (its log line and metric record); wait until the screen shows it."""
    from moeconsole.runner.rundir import jsonio
    from tests.waiting import until_ui
    with open(run.log, "a") as f:
        f.write("step 41/100 loss 0.0244\n")
    jsonio.append_jsonl(run.metrics, {"v": 1, "t": 1.7e9, "attempt": 2, "step": 41, "max_steps": 100,
                                      "loss": 0.0244, "grad_norm": 1.0, "lr": 1e-4, "mem_gib": 61.0,
                                      "extra": {}})
    await until_ui(pilot, lambda: " 41/100 " in _screen_text(app), what="step 41 drawn")


def _screen_text(app) -> str:
    """The screen as the compositor draws it (every line cut as for the terminal)."""
    from rich.console import Console
    console = Console(width=app.size.width, height=app.size.height, file=open(os.devnull, "w"), record=True,
                      force_terminal=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


def test_a_long_attached_console_empties_the_drawing_caches_and_draws_on(base, make_run):
    """Rich's and Textual's caches of what was drawn (``lean.drawing_caches``: the cell width of
    every text, every piece the compositor cut, every region moved or intersected) took an entry
    for each new text of each refresh up to their bounds (4,096 to 16,384), memory a console
    attached for days held: at 300 s the run screen was 3 MiB over its start and still climbing.
    The console empties them on its cadence (``lean.TRIM_CACHES_EVERY_S``; 0.2 s here): 3,000
    texts' widths (a few minutes of the run screen's) are dropped, and the screen draws on."""
    import asyncio

    from rich.cells import cached_cell_len

    from moeconsole.console import lean
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from tests.waiting import until_ui

    run = make_run(base, status="running", steps=40)
    assert cached_cell_len in lean.drawing_caches()

    async def go() -> tuple[int, bool]:
        app = MoeConsole(base, run, gpu=False, interval=0.05, trim_caches_s=0.2)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at,
                           what="the first frame")
            for i in range(3000):
                cached_cell_len(f"step {i} of a long run: loss {i / 7:.5f}")
            filled = cached_cell_len.cache_info().currsize
            await until_ui(pilot, lambda: cached_cell_len.cache_info().currsize < 1000, timeout=20,
                           what="the drawing caches emptied")
            await _next_step_drawn(pilot, app, run)
            return filled, True
    filled, drawn = asyncio.run(go())
    assert filled >= 3000 and drawn


def test_a_long_attached_console_holds_the_records_of_the_tails_lines_only(base, make_run):
    """The log tail shows each metric line from the runner's record of it; the attached console
    kept the newest 512 records (the watcher's ``LineRecords``) and the display of the last 512
    lines with the record of each (the tail's ``MetricColumns``): at a step a second, about 1 MB
    more after ten minutes. Now it holds those of the lines a tail shows (``LOG_TAIL_LINES``):
    after 200 steps, each drawn, at most that many records are alive in the process, and the
    tail still shows the newest step from its record, in columns."""
    import asyncio
    import gc

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.runner.rundir import jsonio, seriesfile
    from moeconsole.runner.rundir.snapshot import LOG_TAIL_LINES
    from tests.waiting import until_ui

    run = make_run(base, status="running", steps=40)

    def stamped_records() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is dict and seriesfile.LOG_AT in o and "loss" in o)

    async def go() -> tuple[int, list[str]]:
        app = MoeConsole(base, run, gpu=False, interval=0.05)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at,
                           what="the first frame")
            screen = app.screen
            for first in range(41, 241, 10):   # 200 steps, ten to a poll
                with open(run.log, "a") as f, open(run.metrics, "a") as mf:
                    for step in range(first, first + 10):
                        at = f.tell()
                        f.write(f"step {step}/1000 loss {1.0 / step:.4f}\n")
                        mf.write(jsonio.dumps({"v": 1, "t": 1.7e9 + step, "attempt": 2, "step": step,
                                               "max_steps": 1000, "loss": 1.0 / step, "grad_norm": 1.0,
                                               "lr": 1e-4, "mem_gib": 61.0, "extra": {},
                                               seriesfile.LOG_AT: at}) + "\n")
                polls = screen.polls
                await until_ui(pilot, lambda: screen.polls > polls + 1, what=f"steps to {first + 9} read")
                await pilot.pause()
            from moeconsole.console.widgets.panes import LogTail
            return stamped_records(), screen.query_one(LogTail).plain_lines
    held, shown = asyncio.run(go())
    assert held <= LOG_TAIL_LINES + 2, f"{held} metric records alive"   # + the newest (last_metrics)
    assert shown[0].split() == ["step", "loss", "grad", "norm", "lr"]   # columns: shown from records
    assert shown[-1].split()[:2] == ["240/1,000", "0.004167"]


def _heap_resident_kib() -> int:
    """Resident KiB of this process's glibc heap (the ``[heap]`` mapping of /proc/self/smaps)."""
    kib, in_heap = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            parts = line.split()
            if parts and "-" in parts[0] and not parts[0].endswith(":"):
                in_heap = parts[-1] == "[heap]"
            elif in_heap and parts[0] == "Rss:":
                kib += int(parts[1])
    return kib


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap, read from /proc")
def test_a_long_attached_console_gives_freed_heap_back_on_its_cadence(base, make_run):
    """What a refresh frees in the middle of glibc's heap stayed resident (free() gives back only
    the heap's top): 0.5 MiB of the 8-GPU run screen. On its trim cadence
    (``lean.TRIM_CACHES_EVERY_S``; 0.2 s here) the console hands the free pages back
    (``lean.release_free_heap``, glibc's ``malloc_trim``). Here 40 MB of blocks are freed below
    a block still held, so only that can give them back: the heap's resident pages fall by most
    of it while the console runs, and the screen draws on."""
    import asyncio

    from moeconsole.console import lean
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from tests.waiting import until_ui

    if not lean.release_free_heap():
        pytest.skip("the C library is not glibc (no malloc_trim)")
    run = make_run(base, status="running", steps=40)

    async def go() -> tuple[int, int]:
        app = MoeConsole(base, run, gpu=False, interval=0.05, trim_caches_s=0.2)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at,
                           what="the first frame")
            blocks = [bytes(4096) for _ in range(10_000)]   # 40 MB from the heap (under mmap's threshold)
            held = bytes(4096)   # a block above them: free() alone cannot shrink the heap past it
            full = _heap_resident_kib()
            del blocks
            await until_ui(pilot, lambda: _heap_resident_kib() < full - 30_000, timeout=20,
                           what="the freed heap given back")
            await _next_step_drawn(pilot, app, run)
            return full, len(held)
    full, _ = asyncio.run(go())
    assert full > 40_000
