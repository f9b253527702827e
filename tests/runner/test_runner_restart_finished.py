"""``restart`` of a finished run: refused without --force (saying what it would do), done with it."""
from __future__ import annotations

from moeconsole.runner.rundir import rundir


def test_restart_of_a_succeeded_run_needs_force_and_says_what_it_will_do(harness):
    run = harness.start(harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "8", "--save_steps", "4"]))
    st = run.wait_status("succeeded", "unsaved", "failed", timeout=90)
    assert st["status"] == "succeeded"
    ended = st["ended_at"]
    # its resume point, checkpoint-8, holds the total (8 of 8): no restart resumes from it, --force or not
    # (transformers trains one step past it; round 11, tests/swift/test_swift_round11.py)
    for force in ((), ("--force",)):
        out = harness.cli("restart", run.id, *force)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        assert lines[0].startswith(f"moeconsole: {run.id}: nothing left to train: checkpoint-8 holds step 8 of 8"), \
            lines[0]
        assert lines[0].endswith(f"moeconsole restart {rundir.command_ref(harness.runs_dir, run.id)[1]} --from "
                                 "checkpoint-N"), lines[0]
    # an earlier save: refused without --force, saying what it would do
    out = harness.cli("restart", run.id, "--from", "checkpoint-4")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "already succeeded" in lines[0] and "--force" in lines[0]
    # the command to type, whole (it said "add --force to do that"); the run as a shell types it,
    # `--runs-dir` included (the whole id alone looked in ~/.local/share: newcomer round 11)
    typed = rundir.command_ref(harness.runs_dir, run.id)[1]
    assert "--runs-dir" in typed
    assert lines[0].endswith(f"`moeconsole restart --force {typed} --from checkpoint-4` does that"), lines[0]
    assert "start attempt 2 resumed from checkpoint-4 (step 4" in lines[0]
    assert "elapsed time and cost keep counting" in lines[0]
    # nothing happened: no new runner, no attempt, the end stays where it was
    st = run.state()
    assert (st["status"], st["attempt"], st["ended_at"]) == ("succeeded", 1, ended)
    assert len(run.events("attempt_start")) == 1

    # `supervise` of it: nothing to adopt, said so, with the command that runs it again
    sup = harness.cli("supervise", run.id)
    assert sup.returncode == 0 and "runner pid" not in sup.stdout, sup.stdout
    assert (f"{run.id}: the run is already succeeded, nothing to supervise; `moeconsole restart --force {typed}` "
            "runs it again") in sup.stdout, sup.stdout
    import psutil
    started = run.state()["runner"]["pid"]
    run.wait(lambda s: not psutil.pid_exists(started) or psutil.Process(started).status() == psutil.STATUS_ZOMBIE,
             timeout=30, what="the runner of the finished run to end")

    out = harness.cli("restart", run.id, "--force", "--from", "checkpoint-4")
    assert "restarting will start attempt 2 resumed from checkpoint-4" in out.stderr, out.stderr
    run.wait(lambda s: s.get("attempt") == 2, timeout=60, what="attempt 2")
    assert run.events("attempt_start")[-1]["resumed_from"].endswith("checkpoint-4")
    run.wait_status("succeeded", "unsaved", "failed", timeout=60)


def test_kill_and_restart_of_a_failed_run_still_works_without_force(harness):
    run = harness.start(harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "400", "--save_steps", "4",
                                                "--step_delay", "0.05"]))
    run.wait(lambda s: (s.get("last_checkpoint") or {}).get("ok"), what="a verified checkpoint")
    harness.cli("kill", run.id, check=True)
    out = harness.cli("restart", run.id, check=True)
    assert "is killed: restarting will start attempt 2 resumed from checkpoint-" in out.stderr
    assert "attempt 2 running" in out.stdout
    # the next step after the restart: how to watch it (and stop it)
    # (by the run's short id, with the runs directory this test gives: rundir.command_ref)
    _, ref = rundir.command_ref(harness.runs_dir, run.id)
    # (with the directory the two commands are too long for one line: each whole on its own)
    assert f"`moeconsole attach {ref}` watches it," in out.stderr.splitlines()[-2], out.stderr
    assert out.stderr.splitlines()[-1] == f"`moeconsole kill {ref}` stops it", out.stderr
    harness.cli("kill", run.id, check=True)


def test_an_nccl_crash_says_the_wait_it_really_gets(harness):
    """nccl_error waits three cooldown floors (NCCL IPC cleanup): the crash's reason names that
    wait (6 s here), not the 0.1 s backoff, and the next attempt starts no sooner."""
    run = harness.start(harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "12", "--save_steps", "4",
                                                "--fault", "nccl@6"],
                                       cooldown={"floor_s": 2.0, "ceiling_s": 20.0}))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded", st.get("pause_reason")
    crash = run.events("crash")[0]
    assert crash["class"] == "nccl_error" and crash["decision"] == "restart"
    assert "after at least 6 s (cooldown floor 6 s for nccl_error)" in crash["reason"], crash["reason"]
    cooldown = [e for e in run.events("cooldown") if e["attempt"] == 1][0]
    assert cooldown["until"] - cooldown["t"] >= 5.9
    second = run.events("attempt_start")[1]
    assert second["t"] - crash["t"] >= 5.9
