"""``moeconsole restart RUN --from CHECKPOINT``: the next attempt resumes from the save the user names
(a save of this run that verifies ok), through the live runner's control socket or a new runner's
argv; the divergence hint names that command with the save from before the spike; a restart of a
run that resumes from nothing says it starts from step 0."""
from __future__ import annotations

import os

from tests.runner.conftest import NO_SAVES


def _demo(*faults: str, max_steps: int = 400, save_steps: int = 4, delay: float = 0.05) -> list[str]:
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
           "--max_steps", str(max_steps), "--save_steps", str(save_steps), "--step_delay", str(delay)]
    for f in faults:
        cmd += ["--fault", f]
    return cmd


def test_a_paused_divergence_names_the_command_and_restart_from_resumes_from_the_named_save(harness):
    # saves at 4 (ok), 8 (a stub), 12 (ok); a NaN at 14 pauses the run (first attempt only)
    run = harness.start(harness.recipe(command=_demo("nan@14#1", "stub@8#1")))
    st = run.wait_status("paused", "failed", "succeeded", timeout=120)
    assert st["status"] == "paused", st
    hint = run.crash(1)["hint"]
    assert f"`moeconsole restart {run.id} --from checkpoint-12` resumes from checkpoint-12 (step 12" in hint, hint
    assert "before step 14, where the divergence began" in hint, hint
    # one last loss everywhere: the NaN it logged last (the index had kept the finite loss before it)
    shown = harness.cli("runs", "show", run.id, check=True)
    assert "  loss      last nan   min " in shown.stdout, shown.stdout
    listed = harness.cli("runs", "ls", check=True)
    (line,) = [ln for ln in listed.stdout.splitlines() if run.id in ln]
    header = listed.stdout.splitlines()[0]
    assert line[header.index("LAST LOSS"):].split()[0] == "nan", listed.stdout
    assert harness.cli("runs", "ls", "--json").returncode == 0

    # a save that is not there, a stub: one line each, exit 2, nothing sent
    for which, said in (("checkpoint-99", "no save of this run is named so (its saves, newest first: checkpoint-12, "
                                          "checkpoint-8, checkpoint-4)"),
                        ("checkpoint-8", "checkpoint-8 is "), ("8", "only a save that verifies ok is resumed from")):
        out = harness.cli("restart", run.id, "--from", which)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert "Traceback" not in out.stderr and said in out.stderr, out.stderr
    assert run.state()["attempt"] == 1 and not run.events("resume_choice")

    # the paused run's live runner takes the choice through its control socket
    out = harness.cli("restart", run.id, "--from", "4", check=True)
    assert "restarting will start attempt 2 resumed from checkpoint-4 (step 4, chosen with --from)" in out.stderr, \
        out.stderr
    assert "attempt 2 running, resumed from " in out.stdout and out.stdout.strip().endswith("checkpoint-4"), out.stdout
    (choice,) = run.events("resume_choice")
    assert choice["path"].endswith("checkpoint-4") and choice["step"] == 4 and choice["requested_by"] == "cli"
    assert run.events("attempt_start")[-1]["resumed_from"].endswith("checkpoint-4")
    assert run.state().get("resume_choice") is None, "the choice is used once"
    run.wait(lambda s: any(m["attempt"] == 2 for m in run.metrics()), what="attempt 2 steps")
    assert next(m for m in run.metrics() if m["attempt"] == 2)["step"] == 5

    # a run whose runner is gone: the new runner gets the choice and checks it again
    harness.cli("kill", run.id, check=True)
    out = harness.cli("restart", run.id, "--from", "checkpoint-12", check=True)
    assert "is killed: restarting will start attempt 3 resumed from checkpoint-12 (step 12, chosen with --from)" \
        in out.stderr, out.stderr
    assert run.events("attempt_start")[-1]["resumed_from"].endswith("checkpoint-12")
    assert [os.path.basename(c["path"]) for c in run.events("resume_choice")] == ["checkpoint-4", "checkpoint-12"]
    harness.cli("kill", run.id, check=True)


def test_restart_of_a_run_that_resumes_from_nothing_says_it_starts_from_step_0(harness):
    run = harness.start(harness.recipe(command=_demo(save_steps=1000), **NO_SAVES))
    run.wait(lambda s: (s.get("step") or 0) >= 2, what="a few steps")
    harness.cli("kill", run.id, check=True)
    out = harness.cli("restart", run.id, check=True)
    assert "restarting will start attempt 2 from step 0 (the recipe has no resume setting)" in out.stderr, out.stderr
    assert f"{run.id}: attempt 2 running, from step 0 (the recipe has no resume setting)" in out.stdout, out.stdout
    # --from cannot be carried to a command that takes no resume setting
    refused = harness.cli("restart", run.id, "--from", "4")
    assert refused.returncode == 2 and "the recipe has no resume setting" in refused.stderr, refused.stderr
    # and what to do instead (newcomer round 6: the line had ended there)
    assert "a new run can: `moeconsole run --set resume.arg=FLAG --set checkpoints.dir=DIR -- COMMAND FLAG SAVE`" \
        in refused.stderr, refused.stderr
    harness.cli("kill", run.id, check=True)


def test_the_oom_remedy_the_hint_names_is_what_the_next_attempt_gets_even_when_the_user_restarts(harness):
    """The demo's CUDA OOM leaves 5.13 GiB reserved but unallocated: the memory verdict is
    fragmentation and its advice names the allocator setting. It had been advice only (nothing set
    it); the runner now gives it to the next attempt, here the user's restart after the restart cap
    failed the run: state.json keeps it, restart's plan says it, the attempt_start event records it."""
    run = harness.start(harness.recipe(command=_demo("oom@6#1", max_steps=12, delay=0.0),
                                       restart={"max_restarts": 0}))
    st = run.wait_status("failed", "succeeded", timeout=120)
    assert st["status"] == "failed", st
    report = run.crash(1)
    assert report["class"] == "cuda_oom" and report["memory"]["verdict"] == "fragmentation", report["memory"]
    env = st["next_env"]
    (name,) = [k for k in env if k in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")] or [None]
    assert name is not None and env == {name: "expandable_segments:True"}, env
    assert report["hint"].startswith(f"the next attempt runs with {name}=expandable_segments:True (torch "), report
    out = harness.cli("restart", run.id, check=True)
    assert f"restarting will start attempt 2 resumed from checkpoint-4 (step 4, the newest checkpoint verified ok), " \
           f"with {name}=expandable_segments:True (the last crash's remedy)" in out.stderr, out.stderr
    assert run.events("attempt_start")[-1]["env_overrides"] == {name: "expandable_segments:True"}
    st = run.wait_status("succeeded", "failed", "unsaved", timeout=120)
    assert st["status"] == "succeeded" and not st.get("next_env"), st


def test_a_plain_restart_by_a_new_runner_drops_a_choice_left_pending(harness):
    """A ``restart --from`` choice is kept in state.json until an attempt starts (a runner that takes
    over keeps it); one left pending by a runner that died first is dropped by a plain ``restart``,
    which resumes from the newest save as its plan says (the new runner had resumed from the old
    choice while the plan said "the newest checkpoint verified ok")."""
    from moeconsole.runner.rundir import jsonio
    run = harness.start(harness.recipe(command=_demo(max_steps=400, save_steps=4, delay=0.05)))
    run.wait(lambda s: (s.get("resume_point") or {}).get("step", 0) >= 8, timeout=120, what="a save at step 8")
    harness.cli("kill", run.id, check=True)
    st = run.state()
    newest = os.path.basename(st["resume_point"]["path"])
    old = os.path.join(os.path.dirname(st["resume_point"]["path"]), "checkpoint-4")
    jsonio.atomic_write_json(run.path / "state.json", {**st, "resume_choice": {"path": old, "step": 4}})
    out = harness.cli("restart", run.id, check=True)
    assert f"restarting will start attempt 2 resumed from {newest} (step " in out.stderr, out.stderr
    assert run.events("attempt_start")[-1]["resumed_from"].endswith(newest), run.events("attempt_start")
    assert f"attempt 2 running, resumed from " in out.stdout and out.stdout.strip().endswith(newest), out.stdout
    harness.cli("kill", run.id, check=True)


def test_an_adopted_attempt_that_ran_with_the_oom_remedy_is_not_advised_it_again(harness):
    """Attempt 2 runs with the fragmentation remedy (``next_env``); its runner is SIGKILLed and a new
    one adopts the attempt, which runs out of memory the same way. The new runner knows the environment
    the attempt got (its ``attempt_start`` event's ``env_overrides``): the advice is to lower the peak,
    and the remedy is not set again (the adopted attempt's environment had been taken as none)."""
    import signal

    import psutil

    from tests.waiting import until
    run = harness.start(harness.recipe(command=_demo("oom@6#1", "oom@40#2", max_steps=60, delay=0.3),
                                       restart={"max_restarts": 0}))
    st = run.wait_status("failed", "succeeded", timeout=120)
    assert st["status"] == "failed" and st["next_env"], st
    name = next(iter(st["next_env"]))
    harness.cli("restart", run.id, check=True)
    st = run.wait(lambda s: s.get("attempt") == 2 and s.get("status") == "running" and (s.get("step") or 0) >= 5,
                  timeout=120, what="attempt 2 running")
    runner_pid = st["runner"]["pid"]
    os.kill(runner_pid, signal.SIGKILL)

    def gone() -> bool:
        try:
            return psutil.Process(runner_pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    until(gone, what="the runner to be gone")
    harness.cli("supervise", run.id, check=True)
    st = run.wait_status("failed", "succeeded", timeout=120)
    assert any(e["type"] == "adopt" and e["attempt"] == 2 for e in run.events()), run.events("adopt")
    report = run.crash(2)
    assert report["memory"]["verdict"] == "fragmentation", report["memory"]
    assert report["memory"]["advice"].startswith(f"{name} already has expandable_segments:True: lower the peak"), \
        report["memory"]
    assert not st.get("next_env"), st
