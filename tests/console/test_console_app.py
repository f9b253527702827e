"""The Textual app driven with Pilot on run directories written file by file, with a real
control socket served by a thread that records every request (the real runner and demo
trainer are in test_console_live.py)."""
from __future__ import annotations

import asyncio
import os

import pytest

from tests.waiting import until_ui
from moeconsole.console import keys
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.compare import CompareScreen
from moeconsole.console.screens.dialogs import ConfirmScreen, HelpScreen
from moeconsole.console.screens.logview import LogScreen, LogView
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.chart import ChartView
from moeconsole.console.widgets.gpu_panel import GpuPanel
from moeconsole.console.widgets.panes import EventPane, LogTail
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import jsonio

GPU = {"available": True, "backend": "nvml", "reason": None, "driver": "550", "taken_at": 0.0, "gpus": [
    {"index": i, "name": "NVIDIA H200", "util_pct": 50 + i, "mem_used_mib": 120_000 + 1000 * i,
     "mem_total_mib": 143_771, "temp_c": 60, "power_w": 400, "power_limit_w": 700, "processes": []}
    for i in range(8)]}
ZOMBIE = {"pid": 424242, "start_time": 1_699_999_000.0, "user": "bob", "cmdline": ["python", "serve.py"],
          "age_s": 7200, "gpu_mem_mib": 12_000, "labels": ["foreign_gpu"], "blocker": True}


def judged(proc: dict) -> dict:
    """A process as the telemetry layer reports it: its labels judged by the one rule."""
    from moeconsole.runner.telemetry.procs import standing
    s = standing(proc["labels"])
    return {**proc, "blocker": s.blocker, "shown": s.shown, "killable": s.killable, "not_killable_why": s.why or None}


def telemetry(blockers=()):
    return lambda state: (GPU, list(blockers))


def app_for(base, run, **kw) -> MoeConsole:
    kw.setdefault("interval", 0.2)
    kw.setdefault("control_timeout", 3.0)
    return MoeConsole(base, run, **kw)


async def attached(pilot) -> RunScreen:
    await until_ui(pilot, lambda: isinstance(pilot.app.screen, RunScreen) and pilot.app.screen.snapshot is not None)
    return pilot.app.screen


async def said_after_each(pilot, presses: str) -> list:
    """The notification each key of ``presses`` gives, the one starting with ``"<key>: "``, in order."""
    app = pilot.app
    said = []
    for key in presses:
        await pilot.press(key)
        said.append(await until_ui(pilot, lambda: next((str(n.message) for n in app._notifications
                                                         if str(n.message).startswith(f"{key}: ")), None),
                                   what=f"what {key} says"))
    return said


def footer_keys(screen) -> dict[str, bool]:
    """key -> enabled, for the bindings the footer shows."""
    return {k: b.enabled for k, b in screen.active_bindings.items() if b.binding.show}


def live_run(base, make_run, **kw):
    kw.setdefault("pids", [{"pid": 31337, "start_time": 1.0, "role": "leader"}, {"pid": 31338, "start_time": 2.0}])
    return make_run(base, runner_pid=os.getpid(), **kw)


@pytest.mark.parametrize("answer", ["y", "n"])
def test_k_asks_naming_pids_and_grace_then_sends_kill_only_on_yes(base, make_run, fake_runner, answer):
    run = live_run(base, make_run)
    runner = fake_runner(run)

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(100, 30)) as pilot:
            await attached(pilot)
            await pilot.press("k")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            body = " ".join(app.screen.confirmation.lines)
            assert "31337 (leader)" in body and "31338" in body and "7s" in body  # recipe kill.grace_s: 7
            await pilot.press(answer)
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
            if answer == "y":
                await until_ui(pilot, lambda: runner.requests)
                assert runner.requests == [{"cmd": "kill", "grace_s": 7.0, "by": "console"}]
            else:
                # "no" is answered in the same callback that would have sent the request
                await until_ui(pilot, lambda: any("cancelled: nothing was sent" in str(n.message)
                                                  for n in app._notifications))
                assert runner.requests == []
    asyncio.run(go())


def test_r_restarts_and_on_a_paused_run_resumes(base, make_run, fake_runner):
    run = live_run(base, make_run)
    runner = fake_runner(run)

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            await pilot.press("r")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            assert "cool down" in " ".join(app.screen.confirmation.lines)
            await pilot.press("y")
            await until_ui(pilot, lambda: len(runner.requests) == 1)
            assert runner.requests[0]["cmd"] == "restart"
            state = jsonio.read_json(run.state)
            jsonio.atomic_write_json(run.state, {**state, "status": "paused", "pause_reason": "NaN loss at step 50"})
            await until_ui(pilot, lambda: screen.snapshot is not None and screen.snapshot.run["status"] == "paused")
            assert "PAUSED" in screen.query_one(StatusLine).plain_lines[0]
            await pilot.press("r")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            assert app.screen.confirmation.title.startswith("Resume")
            await pilot.press("y")
            await until_ui(pilot, lambda: len(runner.requests) == 2)
            assert runner.requests[1]["cmd"] == "resume"
    asyncio.run(go())


def test_v_asks_the_runner_to_verify_and_shows_its_answer(base, make_run, fake_runner):
    run = live_run(base, make_run)
    runner = fake_runner(run, answer={"ok": True, "message": "ok: checkpoint-60 (16 tensors)"})

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(100, 30)) as pilot:
            await attached(pilot)
            await pilot.press("v")
            await until_ui(pilot, lambda: runner.requests)
            assert runner.requests == [{"cmd": "verify"}]
            await until_ui(pilot, lambda: any("checkpoint-60" in str(n.message) for n in app._notifications))
    asyncio.run(go())


def test_z_ends_the_selected_zombie_by_pid_and_start_time(base, make_run, fake_runner):
    run = live_run(base, make_run)
    runner = fake_runner(run)
    other = {**ZOMBIE, "pid": 515151, "start_time": 5.0, "user": "carol", "labels": ["orphan"]}
    mine = {**ZOMBIE, "pid": 31337, "labels": ["run_tree", "port_holder"]}  # the run itself: never a zombie

    async def go():
        app = app_for(base, run, telemetry=telemetry([judged(p) for p in (ZOMBIE, mine, other)]))
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            await until_ui(pilot, lambda: screen.blocker_table is not None and screen.blocker_table.row_count == 2)
            table = screen.query_one("#blockers")
            table.focus()
            await pilot.press("down")
            await pilot.press("z")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            assert "515151" in app.screen.confirmation.title and "carol" in " ".join(app.screen.confirmation.lines)
            await pilot.press("y")
            await until_ui(pilot, lambda: runner.requests)
            assert runner.requests == [{"cmd": "kill_pid", "pid": 515151, "start_time": 5.0, "grace_s": 7.0,
                                        "by": "console"}]
    asyncio.run(go())


def test_readonly_disables_every_process_key(base, make_run, fake_runner):
    run = live_run(base, make_run)
    runner = fake_runner(run)

    async def go():
        app = app_for(base, run, readonly=True, telemetry=telemetry([judged(ZOMBIE)]))
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            shown = footer_keys(screen)
            assert shown["k"] is False and shown["r"] is False and shown["z"] is False
            assert shown["v"] and shown["b"] and shown["l"] and shown["q"]
            assert "READ-ONLY" in screen.query_one(StatusLine).plain_lines[0]
            for key in ("k", "r", "z"):
                seen = {n.identity for n in app._notifications}
                await pilot.press(key)
                # each refused key says so (a new toast), and no confirmation opens
                await until_ui(pilot, lambda: any("read-only" in str(n.message) and n.identity not in seen
                                                  for n in app._notifications), what=f"{key} refused")
                assert isinstance(app.screen, RunScreen)
            assert runner.requests == []
    asyncio.run(go())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the run to another user")
def test_another_users_run_opens_read_only(base, make_run, fake_runner):
    """Root reads every run; another user's run opened on root's console offered kill, restart and
    the zombie kill, which went to that user's runner. Its screen is read-only, and says so."""
    import pwd
    run = live_run(base, make_run)
    runner = fake_runner(run)
    os.chown(run.path, pwd.getpwnam("nobody").pw_uid, -1)

    async def go():
        app = app_for(base, run, telemetry=telemetry([judged(ZOMBIE)]))
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            shown = footer_keys(screen)
            assert shown["k"] is False and shown["r"] is False and shown["z"] is False
            assert "READ-ONLY" in screen.query_one(StatusLine).plain_lines[0]
            await pilot.press("k")
            assert isinstance(app.screen, RunScreen)
            assert runner.requests == []
    asyncio.run(go())


def test_q_detaches_without_touching_the_run(base, make_run, fake_runner):
    run = live_run(base, make_run)
    runner = fake_runner(run)
    before = run.state.read_bytes()

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(100, 30)) as pilot:
            await attached(pilot)
            await pilot.press("q")
            await until_ui(pilot, lambda: app._exit_renderables is not None or not app.is_running)
        return app

    asyncio.run(go())
    assert runner.requests == []
    assert run.state.read_bytes() == before

    async def again():  # attach again: the same run, still there
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            assert screen.snapshot.run["id"] == run.run_id
    asyncio.run(again())


def test_screen_shows_the_snapshot(base, make_run):
    run = live_run(base, make_run, nan_at=50, crash={"class": "cuda_oom"})

    async def go():
        app = app_for(base, run, telemetry=telemetry([judged(ZOMBIE)]))
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await attached(pilot)
            snap = screen.snapshot
            status = screen.query_one(StatusLine).plain_lines
            assert "RUNNING" in status[0] and "step 60/100" in status[0] and "restarts 1/5" in status[1]
            loss = screen.query_one("#chart-loss", ChartView).text_rows()
            assert loss[0].startswith(f"loss {snap.series['loss'].last():.4g}")
            assert "C" in loss[-1] and "✗" in loss[-1] and "!" in loss[-1]
            mem = screen.query_one("#chart-mem", ChartView).text_rows()
            assert "headroom" in mem[0] and any("╌" in r for r in mem)
            gpus = screen.query_one(GpuPanel).plain_lines
            g7 = GPU["gpus"][7]
            assert len(gpus) == 4  # eight GPUs in two columns
            assert f"{g7['mem_used_mib'] / 1024:.1f}/{g7['mem_total_mib'] / 1024:.1f}G" in " ".join(gpus)
            events = screen.query_one(EventPane).plain_lines
            assert any("BAD" in e and "checkpoint-40" in e for e in events)
            assert any("cuda_oom" in e for e in events)
            # metric lines as aligned columns: step, loss, grad norm, lr
            tail = screen.query_one(LogTail).plain_lines
            assert tail[0].split() == ["step", "loss", "grad", "norm", "lr"]
            assert tail[-1].split() == ["60/100", "0.7707", "—", "—"]
            assert len({len(line) for line in tail}) == 1  # right-aligned under the header
            await until_ui(pilot, lambda: screen.blocker_table is not None and screen.blocker_table.row_count)
            assert "bob" in str(screen.query_one("#blockers").get_row_at(0))
    asyncio.run(go())


def test_widgets_redraw_only_when_data_changes(base, make_run):
    run = live_run(base, make_run)

    async def go():
        app = app_for(base, run, telemetry=telemetry(), interval=0.05)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            chart = screen.query_one("#chart-loss", ChartView)
            await until_ui(pilot, lambda: screen.polls >= 3)
            # polls are not paced by the UI (a newer snapshot replaces a waiting one): the
            # first layouts (the alert bar, the blockers appearing) may land after the third
            settled = screen.polls
            await until_ui(pilot, lambda: screen.polls >= settled + 3)
            await pilot.pause()
            draws = chart.draws
            polls = screen.polls
            await until_ui(pilot, lambda: screen.polls >= polls + 5)
            assert chart.draws == draws, "an idle run must not redraw its charts"
            jsonio.append_jsonl(run.metrics, {"v": 1, "t": 0, "attempt": 2, "step": 61, "loss": 0.5,
                                              "grad_norm": 1.0, "mem_gib": 61.0})
            await until_ui(pilot, lambda: screen.snapshot is not None and screen.snapshot.run["metric_count"] == 61)
            await until_ui(pilot, lambda: chart.draws > draws)
    asyncio.run(go())


def test_past_run_hides_process_keys(base, make_run):
    run = make_run(base, status="failed", crash={"class": "cuda_oom"})

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            shown = await until_ui(pilot, lambda: (keys_now := footer_keys(screen)) and "b" in keys_now
                                   and not {"k", "r", "z", "v"} & set(keys_now) and keys_now)
            assert not {"k", "r", "z", "v"} & set(shown)
            assert {"b", "l", "q"} <= set(shown)
            assert "FAILED" in screen.query_one(StatusLine).plain_lines[0]
            assert "last crash: cuda_oom" in screen.query_one(StatusLine).plain_lines[1]
            assert "not polled" in screen.query_one(GpuPanel).plain_lines[0]
    asyncio.run(go())


def test_help_is_generated_from_the_key_tables(base, make_run):
    run = make_run(base, status="succeeded")

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(120, 60)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            visible = await until_ui(pilot, lambda: "Clean kill" in (text := _screen_text(app)) and text,
                                     what="the help table drawn")
            assert "Run screen" in visible and "Clean kill" in visible  # the current screen's keys first
            from rich.console import Console
            from moeconsole.console.screens.dialogs import help_table
            console = Console(width=400, file=open(os.devnull, "w"), record=True)
            console.print(help_table("Run screen"))
            exported = console.export_text()
            whole = " ".join(exported.split())
            for _, table in keys.SCREENS:
                for key, what, _note in keys.help_rows(table):
                    assert f"{key} {what}" in whole, key
            q_rows = [line for line in exported.splitlines() if line.split()[:1] == ["q"]]
            with_q = [name for name, table in keys.SCREENS if any(k.shown_key == "q" for k in table)]
            assert len(q_rows) == len(with_q), q_rows   # one q row a screen, not two on the run screen
            await pilot.press("escape")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
    asyncio.run(go())


def _screen_text(app) -> str:
    from rich.console import Console
    console = Console(width=app.size.width, height=app.size.height, file=open(os.devnull, "w"), record=True,
                      force_terminal=True)
    console.print(app.screen._compositor.render_update(full=True))
    text = console.export_text()
    return " ".join(text.split())


def test_l_opens_the_full_log_with_search(base, make_run):
    run = make_run(base, status="succeeded", steps=300, log_lines=300)
    with open(run.log, "a") as f:
        f.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 266.00 MiB\n")
        f.write("".join(f"tail line {i}\n" for i in range(200)))

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(100, 30)) as pilot:
            await attached(pilot)
            await pilot.press("l")
            await until_ui(pilot, lambda: isinstance(app.screen, LogScreen))
            view = app.screen.query_one(LogView)
            await until_ui(pilot, lambda: view.virtual_size.height == 502)
            # Follows the end (the scroll lands after a refresh: wait for it, a loaded machine is slow).
            await until_ui(pilot, lambda: view.visible_text()[-1:] == ["tail line 199"])
            await pilot.press("slash")
            await pilot.press(*"out of memory")
            await pilot.press("enter")
            await until_ui(pilot, lambda: view.current == 301)
            await until_ui(pilot, lambda: any("Tried to allocate" in line for line in view.visible_text()))
            await pilot.press("N")
            # the search runs in a worker that hands its answer to the screen before it ends
            await until_ui(pilot, lambda: not [w for w in app.workers if w.group == "log-search"],
                           what="the search for the previous match")
            assert view.current == 301  # the only match: wraps onto itself
            await pilot.press("escape")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
    asyncio.run(go())


def test_browser_lists_sorts_filters_opens_and_compares(base, make_run):
    make_run(base, "20240101-000000-bf16-aaaa", name="moe-bf16", status="succeeded", steps=80)
    make_run(base, "20240102-000000-fp8-bbbb", name="moe-fp8", status="failed", steps=60,
             recipe={"name": "moe", "command": ["x", "--fp8_recipe", "blockwise"]})
    make_run(base, "20240103-000000-nvfp4-cccc", name="moe-nvfp4", status="killed", steps=40)

    async def go():
        app = app_for(base, None)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 3)
            browser = app.screen

            def names():
                return [r["name"] for r in browser.rows]
            assert names() == ["moe-nvfp4", "moe-fp8", "moe-bf16"]  # same start time: by id, newest first
            # bad saves and the causes nobody acknowledged, per run (each fixture run has a stub at 40)
            table = browser.query_one("#runs")
            labels = [str(c.label) for c in table.columns.values()]
            bad, open_ = labels.index("BAD"), labels.index("ALERTS")
            fp8 = table.get_row_at(names().index("moe-fp8"))
            assert str(fp8[bad]) == "1" and str(fp8[open_]) == "1 (1 CRIT)"  # the stub at step 40
            await pilot.press("s")  # next column: ended, newest first
            await until_ui(pilot, lambda: names() == ["moe-bf16", "moe-fp8", "moe-nvfp4"])
            await pilot.press("S")
            await until_ui(pilot, lambda: names() == ["moe-nvfp4", "moe-fp8", "moe-bf16"])
            await pilot.press("slash")
            await pilot.press(*"status:failed")
            await pilot.press("enter")
            await until_ui(pilot, lambda: [r["name"] for r in browser.rows] == ["moe-fp8"])
            await pilot.press("slash")
            for _ in range(20):
                await pilot.press("backspace")
            await pilot.press("enter")
            await until_ui(pilot, lambda: len(browser.rows) == 3)
            order = names()
            table = browser.query_one("#runs")
            table.move_cursor(row=order.index("moe-bf16"))
            await pilot.press("space")
            table.move_cursor(row=order.index("moe-fp8"))
            await pilot.press("x")
            await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.result is not None)
            d = app.screen.result
            assert [r["label"] for r in d["runs"]] == ["moe-bf16", "moe-fp8"]   # marked first, then the selected
            assert any(x["key"] == "command --fp8_recipe" for x in d["recipe_diff"])
            chart = app.screen.query_one(ChartView).text_rows()
            assert any("•" in r for r in chart) and any("×" in r for r in chart)
            await pilot.press("q")   # q leaves the comparison (Esc too)
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen))
            table.move_cursor(row=order.index("moe-nvfp4"))
            await pilot.press("enter")
            screen = await attached(pilot)
            assert screen.snapshot.run["name"] == "moe-nvfp4"
            assert "KILLED" in screen.query_one(StatusLine).plain_lines[0]
            await pilot.press("b")  # back to the same browser, not a new one
            await until_ui(pilot, lambda: app.screen is browser)
    asyncio.run(go())


def test_b_from_a_run_opens_the_browser_and_escape_returns(base, make_run):
    run = make_run(base, status="succeeded")

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(100, 30)) as pilot:
            await attached(pilot)
            await pilot.press("b")
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows)
            await pilot.press("escape")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
    asyncio.run(go())


def test_runner_gone_is_reported_not_hidden(base, make_run, fake_runner):
    run = make_run(base, runner_pid=os.getpid())
    state = jsonio.read_json(run.state)
    state["runner"]["host"] = "elsewhere"  # a runner we cannot see: no socket here either

    async def go():
        jsonio.atomic_write_json(run.state, state)
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(100, 30)) as pilot:
            await attached(pilot)
            await pilot.press("v")
            await until_ui(pilot, lambda: any("no runner is listening" in str(n.message) for n in app._notifications))
    asyncio.run(go())


def test_a_slurm_run_shows_its_job_and_k_names_the_job_not_pids(base, make_run, fake_runner):
    run = make_run(base, runner_pid=os.getpid())
    state = jsonio.read_json(run.state)
    state.update(engine="slurm", job={"v": 1, "engine": "slurm", "attempt": 2, "job_id": "4711", "state": "PENDING",
                                      "reason": "Resources", "nodes": [], "ended_at": None})
    jsonio.atomic_write_json(run.state, state)
    runner = fake_runner(run)

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(200, 36)) as pilot:  # wide: line 2 leads with the stub alert
            screen = await attached(pilot)
            status = str(screen.query_one(StatusLine).render())
            assert "PENDING (Resources)" in status and "slurm job 4711 PENDING" in status
            await pilot.press("k")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            body = " ".join(app.screen.confirmation.lines)
            assert "slurm job 4711 (PENDING)" in body and "scancel --signal=TERM" in body and "PIDs" not in body
            await pilot.press("y")
            await until_ui(pilot, lambda: runner.requests)
            assert runner.requests == [{"cmd": "kill", "grace_s": 7.0, "by": "console"}]
    asyncio.run(go())


def test_the_full_log_wraps_and_scrolls_sideways(base, make_run):
    """A line longer than the screen: by default it scrolls sideways (the line numbers stay),
    with w it wraps onto as many rows as it needs, the end of the log still in view."""
    run = make_run(base, status="succeeded", steps=40, log_lines=40)
    long_line = "MARK-START " + " ".join(f"word{i:03d}" for i in range(60)) + " MARK-END"
    with open(run.log, "a") as f:
        f.write(long_line + "\n" + "".join(f"tail line {i}\n" for i in range(5)))

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("l")
            await until_ui(pilot, lambda: isinstance(app.screen, LogScreen))
            view = app.screen.query_one(LogView)
            await until_ui(pilot, lambda: view.visible_text()[-1:] == ["tail line 4"])
            index = view.scroll_offset.y + next(i for i, t in enumerate(view.visible_text())
                                                if t.startswith("MARK-START"))

            def screen_row() -> str:  # the long line as drawn (the view may move it up a row)
                return view.render_line(index - view.scroll_offset.y).text
            assert "MARK-START" in screen_row() and "MARK-END" not in screen_row()
            # cut at the right edge: the last column says so (a newcomer saw `'gl` and no mark);
            # a line that fits has none
            width = view.scrollable_content_region.width
            assert screen_row().rstrip().endswith("…") and len(screen_row().rstrip()) == width, screen_row()
            tail = view.render_line(view.visible_text().index("tail line 4")).text
            assert tail.rstrip().endswith("tail line 4"), tail
            number = screen_row()[:8]
            for _ in range(30):
                await pilot.press("right")
                if "MARK-END" in screen_row():
                    break
            assert "MARK-END" in screen_row() and "MARK-START" not in screen_row()
            assert screen_row()[:8] == number, "the line number stays in place"
            assert screen_row()[8] == "…" and not screen_row().rstrip().endswith("…"), screen_row()   # cut on the left
            assert "columns " in str(app.screen.query_one("#log-title").render())
            await pilot.press("w")
            await until_ui(pilot, lambda: view.wrap and view.visible_text()[-1:] == ["tail line 4"])
            rows = view.visible_text()
            start = next(i for i, t in enumerate(rows) if t.startswith("MARK-START"))
            end = next(i for i, t in enumerate(rows) if "MARK-END" in t)
            assert end > start and "".join(rows[start:end + 1]) == long_line
            assert all(view.render_line(i).text.startswith("      ↪ ") for i in range(start + 1, end + 1))
            assert view.scroll_offset.x == 0 and "wrapped" in str(app.screen.query_one("#log-title").render())
    asyncio.run(go())
