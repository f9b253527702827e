"""Review R44, finding 2: a crash at the last step (here the final save running out of room) is
resolved once a later attempt redoes it and the run succeeds, though no step past it is ever
logged. Before, ``runs ls`` read ``SUCCEEDED ... 1 (1 CRIT) disk_full`` for a run that had recovered.
Real runner, the real demo trainer with ENOSPC injected once in the checkpoint-12 save (docs/demo.md);
the segfault during step 12 is the control (a crash before the last logged step, passed as before)."""
from __future__ import annotations

import json
import sys

import pytest

from tests.runner.conftest import base_recipe


@pytest.mark.parametrize("fault, cls", [("enospc@12", "disk_full"), ("segv@12", "segfault")])
def test_a_crash_at_the_last_step_is_resolved_when_a_later_attempt_redoes_it_and_succeeds(harness, fault, cls):
    command = [*base_recipe()["command"], "--fault", fault]   # max_steps 12, save_steps 4
    run = harness.start(harness.recipe(command=command))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded" and st["attempt"] == 2, st
    crash = run.events("crash")[0]
    assert (crash["class"], crash["attempt"]) == (cls, 1), crash
    passed = run.events("past_crash")
    assert [(p["attempt"], p["crashed_attempt"], p["crash_class"]) for p in passed] == [(2, 1, cls)], passed

    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    group = next(g for g in snap["alert_groups"] if g["key"] == f"crash:{cls}")
    assert (group["active"], group["resolved"]) == (False, True), group
    assert f"past step {crash['step']}, where attempt 1 crashed" in group["standing"], group
    row = next(r for r in json.loads(harness.cli("runs", "ls", "--json", check=True).stdout)["runs"]
               if r["id"] == run.id)
    assert row["open_critical"] == 0, row


# A trainer that logs its last step, then dies at teardown (a segfault at exit, the way an NCCL
# watchdog or a CUDA context teardown ends a finished run) on its first attempt only; the second
# attempt trains the same steps and exits 0. No save anywhere: only the success passes the crash.
TEARDOWN = """
import os, signal, sys
mark = os.path.join(sys.argv[1], "attempt1_done")
first = not os.path.exists(mark)
for i in range(1, 5):
    print({'loss': str(2.0 - i / 10), 'grad_norm': '0.5', 'learning_rate': '1e-05',
           'global_step/max_steps': f'{i}/4'}, flush=True)
if first:
    open(mark, "w").close()
    os.kill(os.getpid(), signal.SIGSEGV)
"""


def test_a_crash_at_teardown_after_the_last_step_is_resolved_by_the_run_succeeding(harness, tmp_path):
    script = tmp_path / "teardown.py"
    script.write_text(TEARDOWN)
    run = harness.start(harness.recipe(command=[sys.executable, str(script), str(tmp_path)], checkpoints=None,
                                       resume=None))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=240)
    assert (st["status"], st["attempt"]) == ("succeeded", 2), st
    crash = run.events("crash")[0]
    assert crash["step"] == 4, crash
    passed = run.events("past_crash")
    assert [(p["attempt"], p["crashed_attempt"], p["how"]) for p in passed] == [(2, 1, "succeeded")], passed
    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    group = next(g for g in snap["alert_groups"] if g["key"] == f"crash:{crash['class']}")
    assert group["standing"] == "resolved: attempt 2 finished the run, past step 4, where attempt 1 crashed", group
