"""A run whose saves do not hold its result is never called a success: through the real runner,
the real demo trainer and its real stub checkpoints."""
from __future__ import annotations

import os
import re


def _demo(max_steps: int, save_steps: int, *faults: str, delay: float = 0.0) -> list[str]:
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps", str(max_steps),
           "--save_steps", str(save_steps), "--step_delay", str(delay)]
    for f in faults:
        cmd += ["--fault", f]
    return cmd


def test_a_run_whose_newest_save_is_a_stub_ends_unsaved_not_succeeded(harness):
    run = harness.start(harness.recipe(command=_demo(8, 4, "stub@8")))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=90)
    assert st["status"] == "unsaved", st
    assert st["exit_code"] == 0, "the training itself exited 0"
    assert "checkpoint-8 is empty_stub" in st["pause_reason"]
    assert "last good checkpoint: checkpoint-4 (step 4)" in st["pause_reason"]
    assert not run.events("success"), "a lost run is never recorded as a success"
    unsaved = run.events("unsaved")
    assert len(unsaved) == 1 and os.path.basename(unsaved[0]["last_good"]["path"]) == "checkpoint-4"
    assert st["bad_saves"] == {"total": 1, "in_a_row": [str(run.path / "output" / "checkpoint-8")]}
    assert [e["status"] for e in run.events("status")][-1] == "unsaved"
    # the CLI says so too, and the index the run browser reads
    ls = harness.cli("runs", "ls", check=True)
    line = next(l for l in ls.stdout.splitlines() if run.id in l)
    assert "unsaved" in line.lower()


def test_every_save_a_stub_is_unsaved_and_says_no_checkpoint_verified(harness):
    run = harness.start(harness.recipe(command=_demo(4, 4, "stub@4"), checkpoints={"pause_after_bad_saves": 0}))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=90)
    assert st["status"] == "unsaved"
    assert "no checkpoint verified ok" in st["pause_reason"]


def test_no_checkpoint_at_all_under_the_checkpoint_dir_is_unsaved(harness, tmp_path):
    script = tmp_path / "no_save.py"
    script.write_text("print('step: 1  loss: 1.0', flush=True)\n")
    run = harness.start(harness.recipe(command=["{python}", str(script)]))
    st = run.wait_status("succeeded", "unsaved", "failed", timeout=60)
    assert st["status"] == "unsaved" and "no checkpoint was saved under" in st["pause_reason"]
    # without a checkpoint directory nothing is judged: the same script succeeds
    run = harness.start(harness.recipe(command=["{python}", str(script)], checkpoints={"dir": None},
                                       resume={"arg": None}))
    assert run.wait_status("succeeded", "unsaved", "failed", timeout=60)["status"] == "succeeded"


def test_a_good_final_save_after_a_bad_one_succeeds(harness):
    run = harness.start(harness.recipe(command=_demo(8, 4, "stub@4")))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=90)
    assert st["status"] == "succeeded", st
    assert st["bad_saves"]["total"] == 1 and st["bad_saves"]["in_a_row"] == []


def test_two_bad_saves_in_a_row_pause_the_run_naming_the_last_good_checkpoint(harness):
    # Every save from step 8 on is a stub, so the pause does not hang on how fast a busy machine
    # verifies (a good save verified after the streak would end it: that is the keeper's test).
    stubs = [f"stub@{s}" for s in range(8, 61, 4)]
    run = harness.start(harness.recipe(command=_demo(60, 4, *stubs, delay=0.25)))
    st = run.wait_status("paused", "succeeded", "unsaved", "failed", timeout=120)
    assert st["status"] == "paused", st
    assert re.search(r"\d+ bad saves in a row \(checkpoint-\d+, checkpoint-\d+\)", st["pause_reason"]), st
    assert "last good checkpoint: checkpoint-4 (step 4)" in st["pause_reason"]
    assert st["step"] < 60, "the training was stopped, not left to write more stubs"
    assert not (run.path / "crashes" / "attempt-1.json").exists(), "a policy pause is not a crash"
    assert [a for a in run.events("alert") if a["rule"] == "bad_saves"]
    # resuming restarts from the last good checkpoint, never from a stub
    out = harness.cli("restart", run.id, "--now")
    assert out.returncode == 0, out.stderr
    run.wait(lambda s: s.get("attempt") == 2 and s.get("status") == "running", timeout=60, what="attempt 2")
    assert os.path.basename(run.events("attempt_start")[-1]["resumed_from"]) == "checkpoint-4"
    harness.cli("kill", run.id, check=True)


def test_pause_after_bad_saves_is_a_recipe_setting(harness):
    run = harness.start(harness.recipe(command=_demo(16, 4, "stub@8", "stub@12"),
                                       checkpoints={"pause_after_bad_saves": 0}))
    st = run.wait_status("paused", "succeeded", "unsaved", "failed", timeout=120)
    assert st["status"] == "succeeded" and st["bad_saves"]["total"] == 2
    bad = harness.cli("run", str(harness.recipe(checkpoints={"pause_after_bad_saves": -1})), "--detach")
    assert bad.returncode == 2 and "checkpoints.pause_after_bad_saves" in bad.stderr
