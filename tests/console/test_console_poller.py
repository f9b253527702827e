"""The run screen's poll loop without a UI (``moeconsole.console.runwatch.Poller``): it reads a real
run directory, polls again when the directory changes, turns a bad read into an error instead of
dying, reads the hang limit once the run has been quiet (not for the first frame), waits for the
first frame to be painted before its full poll, and imports nothing of Textual. On the
screen, a burst of snapshots is coalesced: the newest is shown, the stale ones are dropped, not
queued behind a slow UI."""
from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import threading

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.runner.rundir import jsonio
from tests.waiting import until, until_ui


def _poller(run, *, clock=None, interval=3600.0):
    from moeconsole.console.runwatch import Poller, RunWatch
    from moeconsole.console.source import RunSource
    source = RunSource(run, gpu=False, host=None)
    return Poller(source, RunWatch(run.path, interval), quiet_shown_s=15.0,
                  **({"clock": clock} if clock else {}))


def test_the_poller_reads_the_run_and_polls_again_when_its_directory_changes(base, make_run):
    run = make_run(base, status="running", steps=40)
    poller = _poller(run, clock=lambda: 1e12)   # long after the last line: the run is quiet
    got: list = []
    stop = threading.Event()
    thread = threading.Thread(target=poller.run, args=(got.append, stop.is_set), daemon=True)
    thread.start()
    try:
        until(lambda: got, timeout=60, what="the first poll")
        first = got[0]
        assert first.error is None and first.snapshot.run["step"] == 40
        assert first.last_output_t is not None and first.files_only
        # the first frame is the run's files alone: the recipe (its model's imports: 0.2 s of
        # CPU) is not read for it; the poll after it, at once, brings the hang limit
        assert first.heartbeat_s is None, "the recipe was read before the first frame"
        second = until(lambda: got[1] if len(got) > 1 else None, timeout=60, what="the poll after the first")
        assert second.heartbeat_s == 1800.0, "quiet: the recipe's hang limit (the default) is read"
        rec = jsonio.read_jsonl(run.metrics)[-1]
        jsonio.append_jsonl(run.metrics, {**rec, "step": 41, "loss": 0.25})
        # the timer is an hour: only the change in the run directory can bring this poll
        newer = until(lambda: next((p for p in got if p.snapshot is not None
                                    and (p.snapshot.last_metrics or {}).get("step") == 41), None),
                      timeout=60, what="a poll after metrics.jsonl grew")
        assert newer.snapshot.series["loss"].last() == 0.25
    finally:
        stop.set()
        poller.watch.poke()
        thread.join(timeout=60)
    assert not thread.is_alive()


def test_the_full_poll_waits_until_the_first_frame_is_painted(base, make_run):
    """The first frame's poll reads the run's files alone; the full poll (NVML, the process scan,
    the directory watch's start, the recipe) comes once the screen says the frame is painted."""
    run = make_run(base, status="running", steps=40)
    poller = _poller(run, clock=lambda: 1e12)
    got: list = []
    stop, painted, asked = threading.Event(), threading.Event(), threading.Event()

    def wait_painted(timeout: float) -> bool:
        asked.set()
        return painted.wait(timeout)
    thread = threading.Thread(target=poller.run, args=(got.append, stop.is_set, wait_painted), daemon=True)
    thread.start()
    try:
        until(asked.is_set, timeout=60, what="the poller asking whether the first frame is painted")
        assert len(got) == 1 and got[0].files_only and got[0].snapshot.run["step"] == 40
        assert not poller.watch._watch_started, "the directory watch started before the first frame was painted"
        painted.set()
        second = until(lambda: got[1] if len(got) > 1 else None, timeout=60, what="the full poll")
        assert not second.files_only and second.heartbeat_s == 1800.0
    finally:
        stop.set()
        painted.set()
        poller.watch.poke()
        thread.join(timeout=60)
    assert not thread.is_alive()


def test_a_bad_read_is_an_error_result_and_the_poller_goes_on(base, make_run):
    run = make_run(base, status="running", steps=10)
    poller = _poller(run)

    def broken(telemetry: bool = True, files_only: bool = False):
        raise OSError("disk gone")
    poller.source.poll = broken   # what a vanished mount does to the read
    try:
        polled = poller.poll(True)
    finally:
        poller.watch.close()
    assert polled.snapshot is None and polled.error == "OSError: disk gone"


def test_the_poll_module_imports_no_textual():
    code = ("import sys; import moeconsole.console.runwatch; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_burst_of_snapshots_shows_the_newest_and_drops_the_stale_ones(base, make_run):
    from moeconsole.console.runwatch import Polled
    run = make_run(base, status="succeeded", steps=30)

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=3600)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot
                                    and app.screen)
            await pilot.pause()
            polls = screen.polls
            snap = screen.snapshot
            # five polls arrive while the UI is busy (posted before it gets a turn)
            for i in range(5):
                screen.post_message(RunScreen.SnapshotReady(Polled(dataclasses.replace(snap, taken_at=1000.0 + i))))
            await until_ui(pilot, lambda: screen.snapshot is not None and screen.snapshot.taken_at == 1004.0, what="the newest snapshot shown")
            await pilot.pause()
            return screen.polls - polls
    applied = asyncio.run(go())
    assert applied == 1, f"{applied} snapshots applied: the stale ones were queued, not dropped"


def test_a_step_written_to_the_run_directory_reaches_the_screen_without_a_tick(base, make_run):
    """The poll timer is an hour: only the run directory's watch (the kernel's inotify descriptor,
    no thread of its own) can bring the new step onto the run screen's log pane."""
    import os
    import re

    from rich.console import Console
    run = make_run(base, status="running", steps=40)

    def shown(app) -> str:
        console = Console(width=app.size.width, height=app.size.height, file=open(os.devnull, "w"), record=True,
                          force_terminal=True)
        console.print(app.screen._compositor.render_update(full=True))
        return console.export_text()

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=3600)
        async with app.run_test(size=(140, 40)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot
                           and re.search(r"40/100\s+1\.027", shown(app)), what="the last step already written")
            assert "41/100" not in shown(app)
            rec = jsonio.read_jsonl(run.metrics)[-1]
            with open(run.log, "a") as f:   # as the runner does: the line, then its record
                f.write("step 41/100 loss 0.2500\n")
            jsonio.append_jsonl(run.metrics, {**rec, "step": 41, "loss": 0.25})
            await until_ui(pilot, lambda: re.search(r"41/100\s+0\.25\b", shown(app)), timeout=60,
                           what="step 41 on the screen")
    asyncio.run(go())


def test_a_stalled_screen_holds_the_newest_poll_not_one_per_poll(base, make_run):
    """A terminal that stops reading the console's output (Ctrl-S, a stalled SSH connection)
    stalls the screen while the poll thread goes on polling: the polls do not pile up for the
    screen, each with its snapshot (one a second for as long as it stalls: about 17 KB each in
    bench_ui's setup, gigabytes over a weekend); at most the newest snapshot and the newest
    failed read wait, and the newest is shown once the screen gets its turn."""
    import gc

    from moeconsole.console.runwatch import Polled
    run = make_run(base, status="running", steps=30)

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=0.05)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot
                                    and app.screen.first_frame_at is not None and app.screen)
            polled: list[int] = []
            poll = screen._poller.poll

            def counted(*args, **kwargs):
                out = poll(*args, **kwargs)
                polled.append(1)
                return out
            screen._poller.poll = counted
            # from here the screen gets no turn (this coroutine runs on its event loop): stalled,
            # while the poll thread polls on every 50 ms
            until(lambda: len(polled) >= 25, timeout=120, what="25 polls while the screen is stalled")
            held = sum(type(o) is Polled for o in gc.get_objects())   # type(): isinstance asks every object its __class__ (torch warns)
            shown = screen.polls
            await until_ui(pilot, lambda: screen.polls > shown, what="the newest poll shown once the screen runs")
            return held
    held = asyncio.run(go())
    # the newest snapshot and failed read waiting, and the poll the poll thread is handing over
    assert held <= 3, f"{held} polls held for a stalled screen"
