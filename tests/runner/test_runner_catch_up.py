"""The runner under a log flood (issue 32.9): state and records advance together, and the lag shows.

A real training command prints a burst of metric lines far faster than any reader parses them.
Every sample of ``state.json`` (and every ``status`` answer over the control socket) names a step
whose record is already in ``metrics.jsonl``: the runner writes the records, then the state that
names them. While a backlog is unread, ``state.json``'s ``ingest`` says how far behind the runner
is (bytes, estimated lines, ``catching_up``), and ``moeconsole --json`` and the run screen's status
line show it; once the backlog is read, it is gone. The backlog is made to last by the runner's
test pace (``MOECONSOLE_INGEST_PACE_S``: a wait between sub-slices while behind), never by timing.
"""
from __future__ import annotations

import asyncio
import json
import os
import textwrap

from moeconsole.runner.supervisor import control
from tests.runner.conftest import phased_steps
from tests.waiting import until, until_ui

BURST = textwrap.dedent("""
    import os, sys, time
    n, pad, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    print('{"step": 0, "loss": 3.0}', flush=True)
    while not os.path.exists(go):         # the test has seen the runner watching
        time.sleep(0.05)
    w = sys.stdout.write
    tail = " " * pad
    for i in range(1, n + 1):
        w('{"step": %d, "loss": %r, "lr": %r}%s\\n' % (i, 2.0 / (1 + i * 1e-4), 1e-4, tail))
    sys.stdout.flush()
""")


def _newest_written(metrics: bytes) -> int | None:
    """The step of the last complete record of metrics.jsonl (a line still being written ends
    without its newline and is not a record yet)."""
    end = metrics.rfind(b"\n")
    if end < 0:
        return None
    start = metrics.rfind(b"\n", 0, end) + 1
    return json.loads(metrics[start:end])["step"]


def test_every_state_names_a_step_already_in_metrics_jsonl(harness, tmp_path):
    script = tmp_path / "burst.py"
    script.write_text(BURST)
    lines = 200_000
    run = harness.start(harness.recipe(command=["{python}", str(script), str(lines), "0", str(tmp_path / "go")],
                                       checkpoints={"dir": None}, resume={"arg": None}, restart={"max_restarts": 0}))
    run.wait(lambda s: s.get("step") == 0, what="the first step")
    (tmp_path / "go").write_text("")
    samples = answers = 0
    ahead: list[tuple[str, int, int | None]] = []

    def check(where: str, step: object) -> None:
        # read after the state: every record the state names was written before it
        if isinstance(step, int):
            written = _newest_written((run.path / "metrics.jsonl").read_bytes())
            if written is None or written < step:
                ahead.append((where, step, written))

    def sample() -> bool:
        nonlocal samples, answers
        st = run.state()
        if st:
            samples += 1
            check("state.json", st.get("step"))
        try:
            answer = control.send(run.path / "control.sock", {"cmd": "status"}, timeout=5)
        except control.ControlError:
            answer = {}
        if answer.get("ok"):
            answers += 1
            check("status", (answer.get("state") or {}).get("step"))
        return st.get("status") == "succeeded"

    until(sample, timeout=300, what="the burst read to its end", interval=0.01)
    assert not ahead, f"the state named steps not yet written (where, step, newest written): {ahead[:5]}"
    assert samples > 3 and answers > 3, (samples, answers)
    steps = [m["step"] for m in run.metrics()]
    assert steps == list(range(0, lines + 1))
    final = run.state()
    assert final["step"] == lines and final["ingest"]["lag_bytes"] == 0 and not final["ingest"]["catching_up"]


def test_a_backlog_shows_as_catching_up_in_json_and_on_the_run_screen(harness, tmp_path, monkeypatch):
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.status import StatusLine
    from moeconsole.runner.rundir import rundir

    script = tmp_path / "burst.py"
    script.write_text(BURST)
    # 4,000 records of ~1 KiB: 4 MiB, read a 256 KiB sub-slice per 0.3 s: at least 4 s behind
    monkeypatch.setenv("MOECONSOLE_INGEST_PACE_S", "0.3")
    run = harness.start(harness.recipe(command=["{python}", str(script), "4000", "1000", str(tmp_path / "go")],
                                       checkpoints={"dir": None}, resume={"arg": None}, restart={"max_restarts": 0}))
    run.wait(lambda s: s.get("step") == 0, what="the first step")
    (tmp_path / "go").write_text("")
    st = run.wait(lambda s: (s.get("ingest") or {}).get("catching_up"), timeout=120, what="catching_up in state.json")
    ingest = st["ingest"]
    assert ingest["lag_bytes"] > 256 * 1024 and ingest["size"] - ingest["offset"] >= ingest["lag_bytes"]
    # ~1,040 bytes a line: the estimate is within a few lines of the truth
    assert abs(ingest["lines_behind"] - ingest["lag_bytes"] / 1040) < 0.05 * ingest["lines_behind"] + 2, ingest
    assert isinstance(st.get("step"), int) and st["step"] < 4000

    snap = json.loads(harness.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    shown = snap["run"]["ingest"]
    assert shown["catching_up"] is True and shown["lines_behind"] > 0, shown

    async def screen() -> tuple[str, str]:
        app = MoeConsole(harness.runs_dir, rundir.RunDir(run.path), interval=0.2)
        async with app.run_test(size=(160, 30)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            status = app.screen.query_one(StatusLine)
            behind = await until_ui(pilot, lambda: next((ln for ln in status.plain_lines if "catching up" in ln), None),
                                    what="catching up on the status line")
            caught = await until_ui(pilot, lambda: app.screen.snapshot.run.get("status") == "succeeded"
                                    and not any("catching up" in ln for ln in status.plain_lines)
                                    and status.plain_lines[0], timeout=180, what="the backlog read")
            return behind, caught

    behind, caught = asyncio.run(screen())
    assert "lines behind" in behind, behind
    assert "step 4,000" in caught, caught
    final = run.state()
    assert final["ingest"]["lag_bytes"] == 0 and final["ingest"]["catching_up"] is False
    assert final["log_offset"] == os.path.getsize(run.path / "train.log")
    assert [m["step"] for m in run.metrics()] == list(range(0, 4001))


def test_records_that_cannot_be_written_hold_the_state_back(harness, tmp_path):
    """metrics.jsonl cannot be written (here: a directory stands in its place): the records wait
    in memory, and state.json and ``status`` go on naming the last step on disk, not the step
    the log reached, and its ``log_offset`` the end of the last line whose records are written.
    Once the file can be written, the records go out and the state follows."""
    script = tmp_path / "phases.py"
    script.write_text(phased_steps(0, 6, 100))
    go, end = tmp_path / "go", tmp_path / "end"
    run = harness.start(harness.recipe(command=["{python}", str(script), str(go), str(end)],
                                       checkpoints={"dir": None}, resume={"arg": None}, restart={"max_restarts": 0}))
    run.wait(lambda s: s.get("step") == 5, what="step 5")
    metrics, aside = run.path / "metrics.jsonl", tmp_path / "metrics.aside"
    os.rename(metrics, aside)   # the trainer prints nothing meanwhile: no record is written in between
    os.mkdir(metrics)
    size = lambda: os.path.getsize(run.path / "train.log")  # noqa: E731
    before = size()
    go.write_text("")
    st = run.wait(lambda s: bool(s.get("storage")) and (s.get("ingest") or {}).get("offset") == size()
                  and b'"step": 100' in (run.path / "train.log").read_bytes(), what="the whole log read, writes failing")
    # where a restarted runner would read on: before the records that wait, never past them
    assert st["log_offset"] == before, (st["log_offset"], before)
    answer = control.send(run.path / "control.sock", {"cmd": "status"}, timeout=30)
    written = _newest_written(aside.read_bytes())
    assert written == 5
    assert st["step"] == 5 and answer["state"]["step"] == 5, (st["step"], answer["state"]["step"])
    assert st["storage"]["pending_records"] >= 95
    os.rmdir(metrics)
    os.rename(aside, metrics)
    st = run.wait(lambda s: s.get("step") == 100 and not s.get("storage"), what="the records written, the state after")
    assert [m["step"] for m in run.metrics()] == list(range(0, 101))
    end.write_text("")
    run.wait_status("succeeded")
