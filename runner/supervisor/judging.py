"""Judging an ended attempt off the runner's loop (round 23).

Reading a crash tail is the one costly part of judging (``judge.tail_verdicts``: ``classify`` reads each of up to
2,000 lines with every pattern of the classifier; a tail built to cost it took 8 s of CPU, 26 s of wall time on a
busy 2-core machine, while ``status``, ``kill`` and the heartbeat waited). The loop starts a ``Judging`` with the
attempt's facts gathered (``EndedAttempt``, frozen) and goes on serving; each turn it asks ``result()``, which
never blocks. The worker reads nothing but the facts and calls nothing of the loop; the loop records the
verdict (``judge.judge`` with the tail already read) when it is ready.

A thread, not a child process: CPython's ``re`` holds the GIL for one search, each a few milliseconds at most on
the live tail's lines (3,000 bytes, every pattern linear since round 21), and the interpreter hands the GIL back
to the loop between them (``sys.getswitchinterval``, 5 ms): measured, a ``status`` answered within a fraction of
a second while a 2,000-line tail was read (docs/reliability.md, round 23). A child would need the facts pickled
and a fork of a runner holding sockets and threads.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any, Callable

from moeconsole.runner.supervisor.judge import EndedAttempt, TailVerdicts, tail_verdicts


class Judging:
    """One ended attempt being judged: its facts, what the lifecycle asked, and the worker reading its tail."""

    def __init__(self, unmasked: EndedAttempt, mask: Callable[[str], str], kill_reason: str | None,
                 now_restart: bool) -> None:
        """``unmasked``: the attempt's facts with its log tail as read (secrets not masked yet: masking 2,000
        long lines is itself a second of CPU, ``Redactor.redact``); ``mask``: the run's redactor, pure. The worker
        masks the tail, then reads it; only the masked facts ever leave it (``result``)."""
        self.attempt = unmasked.attempt
        self._unmasked: EndedAttempt | None = unmasked
        self._mask = mask
        self.ended: EndedAttempt | None = None   # the facts with the tail masked, once the worker has them
        self.kill_reason = kill_reason
        self.now_restart = now_restart
        self.since = time.time()   # wall clock: shown ("judging since")
        self._read: TailVerdicts | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._work, name=f"judge-attempt-{self.attempt}", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            raw, self._unmasked = self._unmasked, None
            assert raw is not None
            self.ended = ended = replace(raw, tail=[self._mask(line) for line in raw.tail])
            self._read = tail_verdicts(ended)
        except BaseException as exc:   # handed to the loop, raised there as judging in the loop raised it
            self._error = exc
        finally:
            self._done.set()

    def result(self) -> tuple[EndedAttempt, TailVerdicts] | None:
        """The facts (tail masked) and the tail's verdicts once read (None while the worker reads); the
        worker's exception is raised here."""
        if not self._done.is_set():
            return None
        if self._error is not None:
            raise self._error
        assert self.ended is not None and self._read is not None
        return self.ended, self._read

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def record(self) -> dict[str, Any]:
        """state.json's ``judging``: which attempt, since when."""
        return {"attempt": self.attempt, "since": self.since}
