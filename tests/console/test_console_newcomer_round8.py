"""Newcomer round 8: the console ended by a signal while its terminal lives on (`kill PID` from
another pane, a session manager's SIGTERM, a SIGHUP sent to it). Python's default ended the process
on the spot: the pane stayed in the alternate screen with mouse reporting on and the cursor hidden
(every mouse move typed escape codes into the shell), and nothing said the run goes on or how to
come back. Now it leaves as `q` does: the terminal restored, the line naming `moeconsole attach`,
exit 128+signal; the run trains on. A real console in a real tmux pane, a real signal."""
from __future__ import annotations

import signal

import psutil
import pytest

from moeconsole.console.format import run_words
from moeconsole.runner.rundir import rundir
from tests.console.test_console_tmux import demo_session
from tests.waiting import until


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_console_ended_by_a_signal_gives_the_terminal_back_and_says_how_to_come_back(sig):
    with demo_session(f"sig8-{sig.name}-", "--set args.max_steps=100000 --set args.step_delay=0.1",
                      after="; echo console-exit=$?", shell=True) as (tmux, base):
        tmux.wait_for("q Detach", timeout=120)
        run = rundir.newest_live(base)
        assert run is not None
        shell = psutil.Process(int(tmux("display-message", "-p", "-t", "demo", "#{pane_pid}").strip()))
        console = next(p for p in shell.children() if "moeconsole.console.cli" in " ".join(p.cmdline()))
        assert tmux("display-message", "-p", "-t", "demo", "#{alternate_on}").strip() == "1"
        console.send_signal(sig)
        screen = tmux.wait_for(f"console-exit={128 + sig}", timeout=60)
        flags = tmux("display-message", "-p", "-t", "demo", "#{alternate_on} #{mouse_any_flag} #{cursor_flag}").split()
        assert flags == ["0", "0", "1"], (flags, screen)   # main screen, no mouse reporting, cursor shown
        short = rundir.short_ref(base, run.run_id)
        joined = "".join(screen.split())
        assert "".join(f"{run_words(short, run.run_id)} goes on under its runner:".split()) in joined, screen
        assert f"`moeconsole attach {short}` watches it" in screen, screen
        runner = run.read_state()["runner"]["pid"]
        step = run.read_state().get("step") or 0
        assert run.read_state()["status"] == "running" and psutil.pid_exists(runner)
        until(lambda: (run.read_state().get("step") or 0) > step, timeout=120, what="a step after the signal")


def test_a_signal_right_after_the_start_still_gives_the_terminal_back():
    """Newcomer round 10: `kill PID` the moment the console started. Textual puts the terminal in
    application mode before the app's first mount, where the console's handlers go in: a SIGTERM
    in between took Python's default and left the pane in the alternate screen with the mouse
    reporting. Sent as soon as the pane shows the alternate screen (before the first frame is
    drawn, as far as a poll of tmux can be that quick); whenever it lands, the pane comes back."""
    with demo_session("sig10-", "--set args.max_steps=100000 --set args.step_delay=0.1",
                      after="; echo console-exit=$?", shell=True) as (tmux, base):
        shell = psutil.Process(int(tmux("display-message", "-p", "-t", "demo", "#{pane_pid}").strip()))

        def console_in_alternate_screen() -> psutil.Process | None:
            if tmux("display-message", "-p", "-t", "demo", "#{alternate_on}").strip() != "1":
                return None
            return next((p for p in shell.children() if "moeconsole.console.cli" in " ".join(p.cmdline())), None)

        console = until(console_in_alternate_screen, timeout=120, interval=0.002, what="the alternate screen")
        drawn = "q Detach" in tmux("capture-pane", "-p", "-t", "demo")
        console.send_signal(signal.SIGTERM)
        screen = tmux.wait_for(f"console-exit={128 + signal.SIGTERM}", timeout=60)
        flags = tmux("display-message", "-p", "-t", "demo", "#{alternate_on} #{mouse_any_flag} #{cursor_flag}").split()
        assert flags == ["0", "0", "1"], (flags, drawn, screen)   # main screen, no mouse reporting, cursor shown
        run = rundir.newest_live(base)
        assert run is not None and run.read_state()["status"] == "running", screen   # the run trains on
        assert f"`moeconsole attach {rundir.short_ref(base, run.run_id)}` watches it" in screen, screen
