"""The live reader never lets one slice end the runner: a failure no rule foresaw while reading
a slice (injected here at the one place a batch is built, ``BatchBuilder.build``: the records-to-
columns step where an out-of-range step used to raise ``OverflowError``) is reported, the slice is
read again line by line, and only a line that still fails is skipped and counted."""
from __future__ import annotations

import pytest

import moeconsole.runner.ingest.batch as batch_mod
from moeconsole.runner.ingest.live import LiveReader


def _lines(steps) -> bytes:
    return b"".join(b'{"loss": 1.0, "step": %d}\n' % s for s in steps)


def test_a_slice_that_fails_to_read_is_read_again_line_by_line(monkeypatch):
    reported: list[str] = []
    reader = LiveReader(diagnostics=reported.append)
    real = batch_mod.BatchBuilder.build
    calls = {"n": 0}

    def fails_once(self):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OverflowError("Python int too large to convert to C long")
        return real(self)
    monkeypatch.setattr(batch_mod.BatchBuilder, "build", fails_once)
    events = reader.feed(_lines(range(1, 6)) + b'{"loss": 1.0, "st')
    assert [rec["step"] for kind, rec in events if kind == "record"] == [1, 2, 3, 4, 5]
    assert len(reported) == 1 and "OverflowError" in reported[0]
    # the unfinished line waited as before: its rest completes it
    events = reader.feed(b'ep": 6}\n' + _lines([7]))
    assert [rec["step"] for kind, rec in events if kind == "record"] == [6, 7]


def test_a_line_that_still_fails_is_skipped_and_counted(monkeypatch):
    reported: list[str] = []
    reader = LiveReader(diagnostics=reported.append)
    real = batch_mod.BatchBuilder.build

    def fails_on_step_3(self):
        steps = [r.get("step") for r in self._dicts] + [int(x) for c in self._claims for x in c.steps]
        if 3 in steps:
            raise ValueError("a value no rule foresaw")
        return real(self)
    monkeypatch.setattr(batch_mod.BatchBuilder, "build", fails_on_step_3)
    events = reader.feed(_lines(range(1, 6)))
    assert [rec["step"] for kind, rec in events if kind == "record"] == [1, 2, 4, 5]
    assert reader.failed_lines == 1
    assert any("skipped" in line for line in reported)


if __name__ == "__main__":
    pytest.main([__file__])
