"""The run screen's log tail shows a metric line's columns from the runner's record of that line
(``log_at``: the byte offset in train.log each record is stamped with), never parsing the line a
second time. A real runner reads a log in a declared line format the console is not told about:
the tail still shows its steps as columns, because the records carry them."""
from __future__ import annotations

import asyncio
import json

from moeconsole.console import format as fmt
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.source import RunSource
from moeconsole.console.widgets.panes import LogTail
from moeconsole.runner.ingest import parser
from moeconsole.runner.rundir import rundir, seriesfile
from tests.runner.conftest import Harness
from tests.waiting import until, until_ui

SPEC = r"^#(?P<step>\d+)# ce~(?P<loss>\S+)"
N = 30
TRAIN = (
    "import time\n"
    f"for i in range(1, {N + 1}):\n"
    "    print(f'#{i * 10:05d}# ce~{3.0 - i / 100:.2f} ~ rate~1e-4', flush=True)\n"
    "    if i % 10 == 0:\n"
    "        print('note: a plain line', flush=True)\n"
    "time.sleep(600)\n"
)


class NoParse:
    """The line parser, forbidden: the tail of a run with records must never call it."""
    calls = 0

    def __init__(self, *a, **kw) -> None:
        NoParse.calls += 1
        raise AssertionError("the log tail parsed a line of a run whose runner wrote its records")


def test_the_tail_shows_the_runners_records_without_parsing(tmp_path, runs_dir, monkeypatch):
    h = Harness(tmp_path, runs_dir)
    run = h.start(h.recipe(command=["{python}", "-c", TRAIN], log_format=SPEC))
    recs = until(lambda: len(m := run.metrics()) >= N and m, timeout=90, what="the runner's records")
    log = (run.path / "train.log").read_bytes()
    # every record names the line it came from
    for rec in recs:
        at = seriesfile.log_at(rec)
        assert at is not None and (at == 0 or log[at - 1:at] == b"\n"), rec
        assert log[at:].startswith(b"#%05d# ce~" % rec["step"]), (rec, log[at:at + 40])

    NoParse.calls = 0
    monkeypatch.setattr(parser, "LogParser", NoParse)   # imported by the tail at its first parse
    monkeypatch.setattr(RunSource, "line_format", lambda self: None)   # the console is not told the format

    def tail_text() -> str:
        return "\n".join(app.screen.query_one(LogTail).plain_lines)

    async def go():
        async with app.run_test(size=(140, 40)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and "step" in tail_text(), timeout=60, what="the tail's columns")
            return list(app.screen.query_one(LogTail).plain_lines)

    app = MoeConsole(runs_dir, rundir.RunDir(run.path), interval=0.2, gpu=False)
    shown = asyncio.run(go())
    assert NoParse.calls == 0
    text = "\n".join(shown)
    assert "ce~" not in text, text                    # no metric line left raw
    assert "note: a plain line" in text               # a line without a record stays as it is
    assert shown[0].split() == ["step", "loss", "grad", "norm", "lr"]
    by_step = {fmt.intc(r["step"]): r for r in recs}
    rows = [line.split() for line in shown[1:] if not line.startswith("note") and not line.startswith("===")]
    assert len(rows) >= 10
    for step, loss, grad, lr in rows:                # each row is its record's values
        rec = by_step[step]
        assert (loss, grad, lr) == (fmt.num(rec["loss"]), fmt.num(rec.get("grad_norm")), fmt.num(rec.get("lr"), 3))
    assert rows[-1][0] == fmt.intc(N * 10)
    assert json.loads((run.path / "metrics.jsonl").read_text().splitlines()[-1])["src"] == "user"
