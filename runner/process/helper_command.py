"""A helper command of ours (a probe of the training environment: ``doctor``, ``lint`` and ``run``'s pre-flight)
run to its end and never left running, whatever ends us meanwhile."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from typing import Any


class _EndedBySignal(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _signals_end_the_child() -> Iterator[None]:
    """SIGTERM and SIGHUP raised as ``_EndedBySignal`` for the block (a Python handler of our own: by
    default they end the interpreter with no ``finally``), so the child is ended first. Outside the main
    thread, or a signal ignored on entry (``nohup``): as is."""
    old: dict[int, Any] = {}

    def raise_it(signum: int, _frame: object) -> None:
        raise _EndedBySignal(signum)
    try:
        for sig in (int(signal.SIGTERM), int(signal.SIGHUP)):
            if signal.getsignal(sig) is not signal.SIG_IGN:
                old[sig] = signal.signal(sig, raise_it)
    except ValueError:   # not the main thread
        pass
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def run_child(argv: list[str], *, timeout: float, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(returncode, stdout, stderr) of a helper command (a probe of the training environment), never left
    running: started in a process group of its own, which is killed by its leader's PID when the command
    is not done (a timeout, Ctrl-C, SIGTERM or SIGHUP to us: the signal is then delivered again, to end us
    as it would have). Raises OSError (cannot start) and subprocess.TimeoutExpired."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    ended: int | None = None
    try:
        with _signals_end_the_child():
            try:
                out, err = proc.communicate(timeout=timeout)
            except _EndedBySignal as exc:
                ended = exc.signum
    finally:
        if proc.poll() is None:      # alive: its group is still ours (the leader's PID names it)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if ended is not None:
        signal.raise_signal(ended)   # what the signal would have done (the default: end this process)
        raise KeyboardInterrupt(signal.Signals(ended).name)
    return proc.returncode, out, err
