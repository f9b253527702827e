"""A waiting run's receipt says what it waits on, in the status line's words (their one owner,
``moeconsole.runner.rundir.snapshot.status_word`` / ``waiting_words``), never a bare "cooldown":
a real runner held before its launch by a real busy port."""
from __future__ import annotations

import json

from moeconsole.console import format as fmt
from tests.runner.conftest import port_holder


def test_the_receipt_of_a_run_waiting_on_a_port_says_so_like_the_status_line(harness, tmp_path):
    holder, port = port_holder(tmp_path)
    script = tmp_path / "one_step.py"
    script.write_text("print('step: 1  loss: 1.0', flush=True)\n")
    run = None
    try:
        run = harness.start(harness.recipe(command=["{python}", str(script), "--master_port", str(port)],
                                           env={"MASTER_PORT": str(port)}, checkpoints={"dir": None},
                                           resume={"arg": None}, cooldown={"floor_s": 0, "ceiling_s": 600}))
        run.wait(lambda s: s.get("status") == "cooldown" and (s.get("cooldown") or {}).get("waiting_on"), 60,
                 "the wait on the port")
        snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
        word = snap["run"]["status_word"]
        line2 = "".join(text for text, _ in fmt.status_lines(snap["run"])[1])
        waiting = f"waiting on: port {port} busy, PID {holder.pid} ("   # then its owner and age, which moves
        # the wait opens the second line (newcomer round 14: after the cost, 80 columns had dropped it)
        assert word == "PRE-FLIGHT" and line2.startswith(waiting), (word, line2)

        md = harness.cli("runs", "receipt", run.id, check=True).stdout
        assert f"status **{word}**, {waiting}" in md, md.splitlines()[:4]
        doc = json.loads(harness.cli("runs", "receipt", run.id, "--json", check=True).stdout)
        assert (doc["run"]["status"], doc["run"]["status_word"]) == ("cooldown", word)
        assert doc["run"]["waiting"].startswith(waiting), doc["run"]
        shown = harness.cli("runs", "show", run.id, check=True).stdout
        assert shown.splitlines()[0].endswith(f"  {word}") and f"  {waiting}" in shown.splitlines()[1], shown
    finally:
        if run is not None:
            harness.cli("kill", run.id)
            run.wait_status("killed", "failed", "succeeded", timeout=60)
        holder.kill()
        holder.wait()
