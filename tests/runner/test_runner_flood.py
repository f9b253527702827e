"""A user's kill is not held up by a backlog of log lines (issue 32.6).

The training writes a burst of long lines far faster than the runner parses them, then waits.
``moeconsole kill`` is answered between slices, the attempt is ended and judged at once, and the
run reaches ``killed`` while the backlog is still being read; the runner reads the rest before it
exits, so no record is lost.
"""
from __future__ import annotations

import json
import os
import textwrap

from tests.waiting import until

LINES = 1600             # 64 KiB each: 100 MiB of log, seconds of parsing on any machine
METRIC_EVERY = 100       # one metric record among each 100 long lines

TRAIN = textwrap.dedent(f"""
    import json, sys, time
    out = sys.stdout
    print(json.dumps({{"step": 0, "loss": 2.0}}), flush=True)
    time.sleep(float(sys.argv[1]))   # the runner is watching before the burst
    pad = "y" * 65536
    for i in range({LINES}):
        if i % {METRIC_EVERY} == 0:
            out.write(json.dumps({{"step": i // {METRIC_EVERY} + 1, "loss": 1.0}}) + "\\n")
        out.write(pad + "\\n")
    out.flush()
    print("burst written", flush=True)
    while True:
        time.sleep(1)
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_kill_lands_while_a_backlog_is_read_and_no_record_is_lost(harness, tmp_path):
    script = tmp_path / "flood.py"
    script.write_text(TRAIN)
    run = harness.start(harness.recipe(command=["{python}", str(script), "1"], checkpoints={"dir": None},
                                       resume={"arg": None}, restart={"max_restarts": 0}, kill={"grace_s": 2}))
    st = run.wait(lambda s: ((s.get("ingest") or {}).get("lag_bytes") or 0) > 20 * 2**20,
                  what="a backlog of more than 20 MiB")
    runner_pid = st["runner"]["pid"]
    out = harness.cli("kill", run.id)
    assert out.returncode == 0 and "killed" in out.stdout, (out.stdout, out.stderr)
    # the first state that says killed was written with log still unread: the kill did not wait for it
    killed = run.wait(lambda s: s.get("status") == "killed", what="status killed")
    assert killed["ingest"]["lag_bytes"] > 0, killed["ingest"]
    assert run.crash(1)["class"] == "user_kill"
    # ... and the runner reads the rest before it exits: every record is there, once
    until(lambda: not _alive(runner_pid), timeout=300, what="the runner to exit after reading the backlog")
    steps = [m["step"] for m in run.metrics()]
    assert steps == list(range(0, LINES // METRIC_EVERY + 1)), steps[-5:]
    final = run.state()
    assert final["status"] == "killed" and final["ingest"]["lag_bytes"] == 0
    assert final["log_offset"] == (run.path / "train.log").stat().st_size
