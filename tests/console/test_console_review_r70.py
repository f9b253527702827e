"""R70: the console's signal handlers on unmount leave SIGTERM/SIGHUP at SIG_DFL, not what was
there before (pytest's SIGTERM handler that runs teardowns; a nohup's SIG_IGN)."""
from __future__ import annotations

import asyncio
import signal

from moeconsole.console.app import MoeConsole


def test_unmount_gives_back_the_handlers_that_were_there(tmp_path):
    base = tmp_path / "runs"
    base.mkdir(mode=0o700)

    def mine(signum, frame):
        pass

    before_term = signal.signal(signal.SIGTERM, mine)
    before_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)     # as under nohup
    try:
        async def go():
            app = MoeConsole(base, None)
            async with app.run_test(size=(100, 30)) as pilot:
                await pilot.pause()
                during = signal.getsignal(signal.SIGHUP)
            return during

        during_hup = asyncio.run(go())
        after = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP))
        print("SIGHUP while mounted:", during_hup, " after unmount:", after)
        assert during_hup == signal.SIG_IGN, during_hup   # nohup's SIGHUP stays ignored while it runs
        assert after == (mine, signal.SIG_IGN), after
    finally:
        signal.signal(signal.SIGTERM, before_term)
        signal.signal(signal.SIGHUP, before_hup)
