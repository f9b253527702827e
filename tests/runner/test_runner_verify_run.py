"""``verify RUN`` judges a run as a resume would: by its newest save. An older stub is a
warning line, not a failed verification."""
from __future__ import annotations

import json

from moeconsole.runner.rundir import rundir


def _demo(harness, *fault: str):
    recipe = harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                                     "--max_steps", "8", "--save_steps", "4", "--step_delay", "0.0", *fault])
    run = harness.start(recipe)
    return run, run.wait_status(*rundir.TERMINAL, timeout=120)


def test_an_older_stub_is_a_warning_when_the_newest_save_is_ok(harness):
    run, state = _demo(harness, "--fault", "stub@4")
    assert state["status"] == "succeeded", state
    proc = harness.cli("verify", run.id)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ok ") and "checkpoint-8" in lines[0]
    assert any(l.startswith("EMPTY_STUB") and "checkpoint-4" in l for l in lines)
    assert ("warning: 1 older save bad: checkpoint-4 (empty_stub); the newest, checkpoint-8, is ok "
            "and is what a resume uses") in lines
    out = json.loads(harness.cli("verify", run.id, "--json").stdout)
    assert out["ok"] is True and out["judged"].endswith("checkpoint-8")
    assert [p.rsplit("/", 1)[1] for p in out["older_bad"]] == ["checkpoint-4"]


def test_a_bad_newest_save_fails_the_run_even_with_good_older_ones(harness):
    run, _ = _demo(harness, "--fault", "stub@8")
    proc = harness.cli("verify", run.id)
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout.splitlines()[0].startswith("EMPTY_STUB") and "checkpoint-8" in proc.stdout.splitlines()[0]
    assert "warning:" not in proc.stdout


def test_the_resume_point_moves_to_the_older_save_when_the_newest_is_deleted(harness):
    """The runner writes its resume point into state.json (the screen, --json, `runs show` and
    `restart` read it). A save deleted while the run goes on (the trainer's --save_total_limit,
    a user's rm) must not stay the resume point: the runner notices it is gone and names the
    newest good save left."""
    import shutil

    from tests.checkpoints.conftest import write_demo_checkpoint

    go = harness.tmp / "go"
    run = harness.start(harness.recipe(command=["{python}", "-c", (
        "import os, sys, time\n"
        f"while not os.path.exists({str(go)!r}):\n"
        "    time.sleep(0.05)\n")]))
    run.wait(lambda s: s.get("status") == "running", 60, "the run running")
    out = run.path / "output"
    for step in (4, 8):
        write_demo_checkpoint(out / f"checkpoint-{step}", step)
    run.wait(lambda s: str((s.get("resume_point") or {}).get("path", "")).endswith("checkpoint-8"), 120,
             "checkpoint-8 the resume point")
    shutil.rmtree(out / "checkpoint-8")
    st = run.wait(lambda s: str((s.get("resume_point") or {}).get("path", "")).endswith("checkpoint-4"), 120,
                  "the resume point moved to checkpoint-4")
    assert st["resume_point"]["step"] == 4, st
    go.write_text("")
    assert run.wait_status(*rundir.TERMINAL, timeout=120)["status"] == "succeeded"
