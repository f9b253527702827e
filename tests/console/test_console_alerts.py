"""The real app on real run directories: the alert bar and its acknowledgements across
attaches, toasts for alerts that arrive while attached, the detail view of an event, the
runner-gone banner whose key starts a real runner, and the quiet-time indicator."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.waiting import reached, until_ui
from moeconsole.runner.rundir.alertgroups import ACKS_NAME
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.dialogs import DetailScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.panes import AlertBar, EventPane
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import jsonio
from tests.conftest import end_processes, run_processes


def app_for(base, run, **kw) -> MoeConsole:
    kw.setdefault("interval", 0.1)
    return MoeConsole(base, run, gpu=False, **kw)


async def attached(pilot) -> RunScreen:
    await until_ui(pilot, lambda: isinstance(pilot.app.screen, RunScreen) and pilot.app.screen.snapshot is not None)
    return pilot.app.screen


def bar_of(screen) -> list[str]:
    bar = screen.query_one(AlertBar)
    return list(bar.plain_lines) if bar.display else []


def test_alert_bar_ack_survives_reattach_and_new_alerts_toast(base, make_run):
    run = make_run(base, runner_pid=os.getpid(), crash={"class": "cuda_oom"})

    async def first():
        app = app_for(base, run)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await attached(pilot)
            await until_ui(pilot, lambda: bool(bar_of(screen)))
            bar = bar_of(screen)
            assert bar[0].startswith("2 active alerts (2 CRIT) · a: acknowledge · d: details")
            # the first critical cause is in the status line; the bar counts it and lists the other
            status = screen.query_one(StatusLine).plain_lines
            assert status[1].startswith("CRIT checkpoint checkpoint-40 is empty_stub (step 40) (+1 more)")
            assert len(bar) == 2 and "crash cuda_oom: CUDA out of memory" in bar[1]
            assert not app._notifications, "history is not toasted on attach"
            await pilot.press("a")
            await until_ui(pilot, lambda: not bar_of(screen))
            # an alert written while attached: a toast and the bar again
            run.event("alert", level="warning", rule="grad_norm_spike", step=61, message="grad norm 40x median")
            await until_ui(pilot, lambda: bool(bar_of(screen)))
            assert bar_of(screen)[0].startswith("1 active alert (1 WARN)")
            await until_ui(pilot, lambda: any("grad norm 40x median" in n.message for n in app._notifications))
            # a crash of a known class: the group opens again with its count, one toast titled crash
            run.event("crash", attempt=2, **{"class": "cuda_oom"}, summary="CUDA out of memory",
                      recovery="restart")
            await until_ui(pilot, lambda: any(n.title == "crash" and "crash cuda_oom: CUDA out of memory "
                                           "(crash:cuda_oom x2)" in n.message
                                           for n in app._notifications))
            await until_ui(pilot, lambda: bar_of(screen)[0].startswith("2 active alerts (1 CRIT, 1 WARN)"))
            assert sum(n.title in ("crash", "WARN alert") for n in app._notifications) == 1, \
                "one alert toast at a time"
            await pilot.press("d")
            await until_ui(pilot, lambda: isinstance(app.screen, DetailScreen))
            body = "\n".join(app.screen.lines)
            assert "cause: crash:cuda_oom" in body and "seen: 2 times" in body and "attempts: 1, 2" in body
            await pilot.press("escape")
    asyncio.run(first())
    acked = jsonio.read_json(run.path / ACKS_NAME)
    assert acked["v"] == 2 and set(acked["groups"]) == {"checkpoints", "crash:cuda_oom"}

    async def again():
        app = app_for(base, run)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await attached(pilot)
            bar = await until_ui(pilot, lambda: len(bar_of(screen)) == 2 and bar_of(screen), what="2 alert rows")
            status = screen.query_one(StatusLine).plain_lines
            assert status[1].startswith("CRIT crash cuda_oom: CUDA out of memory (x2"), status
            assert len(bar) == 2 and bar[0].startswith("2 active alerts (1 CRIT, 1 WARN)") \
                and "grad norm 40x median" in bar[1], "the acknowledged stub stays quiet; what came after the ack does not"
    asyncio.run(again())


def test_enter_opens_the_crash_report_of_an_event(base, make_run):
    run = make_run(base, status="failed", crash={"class": "cuda_oom"})

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await attached(pilot)
            pane = screen.query_one(EventPane)
            await until_ui(pilot, lambda: any("CRASH" in line for line in pane.plain_lines))
            pane.focus()
            pane.highlighted = next(i for i, e in enumerate(pane.entries) if e.kind == "crash")
            await pilot.press("enter")
            await until_ui(pilot, lambda: isinstance(app.screen, DetailScreen))
            body = "\n".join(app.screen.lines)
            assert "torch.OutOfMemoryError: CUDA out of memory." in body and "class: cuda_oom" in body
            assert "hint: lower the micro-batch size, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in body
            await pilot.press("escape")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
            # an alert: its evidence (the checkpoint verdict's alert)
            pane.highlighted = next(i for i, e in enumerate(pane.entries) if e.kind == "checkpoint"
                                    and e.event.get("ok") is False)
            await pilot.press("enter")
            await until_ui(pilot, lambda: isinstance(app.screen, DetailScreen))
            body = "\n".join(app.screen.lines)
            assert "verdict: empty_stub (NOT ok)" in body and "reason: empty header (39 KB)" in body
    asyncio.run(go())


def test_quiet_time_shows_with_the_recipe_hang_limit(base, make_run):
    run = make_run(base, runner_pid=os.getpid(), recipe={"name": "demo", "command": ["python"],
                                                          "heartbeat": {"timeout_s": 600}})
    last = max(rec["t"] for rec in jsonio.read_jsonl(run.metrics))
    os.utime(run.log, (last, last))

    async def go():
        app = app_for(base, run, clock=lambda: last + 125)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await attached(pilot)
            status = screen.query_one(StatusLine)
            # the first frame shows the quiet time; the recipe's limit comes with the poll after it
            await until_ui(pilot, lambda: "hang limit" in status.plain_lines[0])
            assert "quiet 2m05s (hang limit 10m00s)" in status.plain_lines[0]
            assert "ETA" not in status.plain_lines[0]  # hung for 250 steps: no guess
    asyncio.run(go())


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_runner_gone_banner_names_the_command_and_s_starts_a_runner(base, make_run):
    from moeconsole.runner.rundir.rundir import command_ref   # as r names it (reviewed R51)
    recipe = {"name": "demo", "command": ["{python}", "-c", "import time; time.sleep(60)"],
              "kill": {"grace_s": 1.0}, "cooldown": {"floor_s": 0.0, "ceiling_s": 5.0}}
    run = make_run(base, runner_pid=_dead_pid(), recipe=recipe, log_lines=0)
    state = run.read_state()
    state["runner"]["pid"] = _dead_pid()
    jsonio.atomic_write_json(run.state, state)

    async def go():
        app = app_for(base, run, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await attached(pilot)
            banner = screen.query_one("#runner-gone")
            await until_ui(pilot, lambda: banner.display)
            text = str(banner.render())
            typed = command_ref(base, run.run_id)[1]
            assert "RUNNER GONE" in text and f"moeconsole supervise {typed}" in text and "press u" in text
            shown = {k for k, b in screen.active_bindings.items() if b.binding.show}
            assert "u" in shown
            await pilot.press("u")
            await until_ui(pilot, lambda: any("started a new runner" in n.message for n in app._notifications))
            await until_ui(pilot, lambda: not banner.display, timeout=60)
            assert screen.snapshot.run["runner_alive"]
    try:
        asyncio.run(go())
    finally:
        procs: dict[int, float] = {}

        def found() -> bool:
            procs.update(run_processes(base))
            return bool(procs)
        reached(found, timeout=5, interval=0.1)  # the runner the console started, once it shows
        end_processes(procs)
        # The runner is a child of this process (the console started it): reap it, whether it
        # was ended above or exited by itself after the app had closed.
        runner = (run.read_state().get("runner") or {}).get("pid")
        mine = set(procs) | ({runner} if runner else set())
        def reaped(pid: int) -> bool:
            try:
                return bool(os.waitpid(pid, os.WNOHANG)[0])
            except ChildProcessError:
                return True
        for pid in mine:
            reached(lambda: reaped(pid), timeout=10)
        assert not [c for c in psutil.Process().children() if c.pid in mine]


def test_readonly_console_does_not_start_a_runner(base, make_run):
    run = make_run(base, runner_pid=_dead_pid())

    async def go():
        app = app_for(base, run, readonly=True)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await attached(pilot)
            await until_ui(pilot, lambda: screen.query_one("#runner-gone").display)
            assert "press u" not in str(screen.query_one("#runner-gone").render())
            await pilot.press("u")
            await until_ui(pilot, lambda: any("read-only" in n.message for n in app._notifications))
    asyncio.run(go())
    assert not run_processes(base)


class BellCounter(MoeConsole):
    """The real app, counting the terminal bells it rings (the bell itself is a write to the
    terminal that a test cannot hear)."""

    CSS_PATH = str(Path(sys.modules[MoeConsole.__module__].__file__).parent / "console.tcss")
    rings = 0

    def bell(self) -> None:
        self.rings += 1
        super().bell()


def test_bell_rings_once_for_new_critical_news_not_for_history_warnings_or_when_muted(base, make_run):
    run = make_run(base, runner_pid=os.getpid(), crash={"class": "cuda_oom"})

    async def go():
        app = BellCounter(base, run, gpu=False, interval=0.1, bell=True)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await attached(pilot)
            await until_ui(pilot, lambda: bool(bar_of(screen)))
            assert app.rings == 0, "alerts already there on attach do not ring"
            run.event("alert", level="warning", rule="grad_norm_spike", step=61, message="grad norm 40x median")
            await until_ui(pilot, lambda: any("grad norm 40x median" in n.message for n in app._notifications))
            assert app.rings == 0, "a warning only toasts"
            run.event("alert", level="critical", rule="non_finite", step=62, message="loss is nan")
            run.event("crash", attempt=2, **{"class": "nccl_timeout"}, summary="watchdog timeout",
                      recovery="restart")
            await until_ui(pilot, lambda: any("nccl_timeout" in n.message for n in app._notifications))
            await until_ui(pilot, lambda: app.rings >= 1)
            polls = screen.polls
            await until_ui(pilot, lambda: screen.polls >= polls + 3)
            assert app.rings in (1, 2), "once per poll that brought critical news, never again for it"
            rung = app.rings
            await pilot.press("m")
            await until_ui(pilot, lambda: any(n.message == "bell off" for n in app._notifications))
            run.event("alert", level="critical", rule="non_finite", step=63, message="loss is inf")
            await until_ui(pilot, lambda: any("loss is inf" in n.message for n in app._notifications))
            assert app.rings == rung, "muted with m"
    asyncio.run(go())


def test_bell_setting_from_the_environment():
    from moeconsole.console.app import bell_enabled
    assert bell_enabled({}) and bell_enabled({"MOECONSOLE_BELL": "1"})
    assert not bell_enabled({"MOECONSOLE_BELL": "0"}) and not bell_enabled({"MOECONSOLE_BELL": "off"})


def test_a_new_log_line_reaches_the_screen_without_waiting_for_the_poll(base, make_run):
    """The screen polls every 60 s here; a line the training writes still shows at once,
    because the run directory's changes wake the poller (and a steady stream of lines is read
    in coalesced polls, not one poll per line)."""
    from moeconsole.console.widgets.panes import LogTail
    run = make_run(base, runner_pid=os.getpid())

    async def go():
        app = app_for(base, run, interval=60.0)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await attached(pilot)
            polls = screen.polls
            with open(run.log, "a") as f:
                f.write("[INFO:swift] a line written while attached\n")
            tail = screen.query_one(LogTail)
            await until_ui(pilot, lambda: any("a line written while attached" in line for line in tail.plain_lines))
            assert screen.polls >= polls + 1
            before = screen.polls
            for i in range(200):
                with open(run.log, "a") as f:
                    f.write(f"[INFO:swift] burst {i}\n")
            await until_ui(pilot, lambda: any("burst 199" in line for line in tail.plain_lines))
            assert screen.polls - before < 100, "coalesced, not a poll per line"
    asyncio.run(go())


def test_a_file_change_polls_the_run_but_not_the_gpu_driver(base, make_run):
    """Between two timer polls, a change in the run directory reads the run files only: the GPU
    reading of the last full poll is shown again (the driver is asked on the timer)."""
    from moeconsole.console.widgets.panes import LogTail
    run = make_run(base, runner_pid=os.getpid())
    calls = []

    def telemetry(state):
        calls.append(time.monotonic())
        return {"available": False, "backend": "none", "reason": "test driver", "gpus": []}, []

    async def go():
        app = MoeConsole(base, run, gpu=True, interval=60.0, telemetry=telemetry)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await attached(pilot)
            assert len(calls) == 1
            tail = screen.query_one(LogTail)
            for i in range(3):
                polls = screen.polls
                with open(run.log, "a") as f:
                    f.write(f"[INFO:swift] change {i}\n")
                await until_ui(pilot, lambda: screen.polls > polls and any(f"change {i}" in l for l in tail.plain_lines))
            assert len(calls) == 1, "file changes do not ask the driver"
            assert screen.snapshot.gpu["reason"] == "test driver", "the last reading is still shown"
            screen.poll_now()
            await until_ui(pilot, lambda: len(calls) == 2)
    asyncio.run(go())
