"""A user's kill is no crash: a run that crashed, recovered, saved and was then killed by its user
says one crash (the real one) everywhere, never "last crash user_kill". Real runner, real demo
trainer (its ``oom@6`` fault is a real process failing the way a CUDA OOM fails it), real kill."""
from __future__ import annotations

import json

from moeconsole.console import format as fmt


def test_a_killed_run_counts_only_its_crashes_and_names_the_real_last_one(harness):
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps",
           "100000", "--save_steps", "4", "--step_delay", "0.05", "--fault", "oom@6"]
    run = harness.start(harness.recipe(command=cmd))
    run.wait(lambda s: s.get("attempt") == 2 and s.get("status") == "running"
             and (s.get("last_checkpoint") or {}).get("ok") and (s["last_checkpoint"].get("step") or 0) > 6,
             120, "attempt 2 past the crash with a verified save")
    kill = harness.cli("kill", run.id)
    assert kill.returncode == 0, kill.stderr
    st = run.wait_status("killed", timeout=60)
    assert (st.get("last_crash") or {}).get("class") == "cuda_oom", st.get("last_crash")
    crashes = run.events("crash")
    assert [c["class"] for c in crashes] == ["cuda_oom", "user_kill"]   # the record keeps both
    # the crash says where it happened (its alert's steps: `d`, runs show, the receipt's table)
    assert crashes[0]["step"] == 5, crashes[0]

    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert "crashes 1   last crash cuda_oom" in shown, shown
    assert "crashes (1)" in shown and "user_kill" not in shown, shown
    assert "(attempt 2 was ended by the user: " in shown, shown
    md = harness.cli("runs", "receipt", run.id, check=True).stdout
    # attempt 2 trained past step 5 before the kill: the OOM is history, resolved, saying so (review R44)
    assert "| critical | crash:cuda_oom | 1 | 5..5 | resolved: attempt 2 trained past step 5, where attempt 1 " \
           "crashed |" in md, md
    row = next(r for r in json.loads(harness.cli("runs", "ls", "--json", check=True).stdout)["runs"]
               if r["id"] == run.id)
    assert (row["crashes"], row["last_crash_class"]) == (1, "cuda_oom"), row
    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    line2 = "".join(text for text, _ in fmt.status_lines(snap["run"])[1])
    assert "last crash: cuda_oom" in line2 and "user_kill" not in line2, line2
