"""The supervised run in a hostile world, round 29. Each test drives the real CLI, the real
detached runner and real processes and files, and asserts on what the user sees: what `kill`,
`restart`, `runs show` and `--json` say and do, and the run's own records."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path as Path_

from moeconsole.runner.process import proctree
from moeconsole.runner.rundir import jsonio, rundir
from tests.runner.test_runner_world28 import _elsewhere_run, _json_run
from tests.waiting import until


def _events(run: rundir.RunDir) -> list[dict]:
    return [json.loads(l) for l in run.events.read_text().splitlines() if l.strip()]


def test_kill_machine_gone_records_a_run_whose_runners_machine_is_gone_killed_and_signals_nothing(harness):
    """Round 28 left it: a live run whose runner ran on gpu-07, now gone for good (state.json silent an
    hour), read from the login node over the shared filesystem. `kill` and `supervise` refused, and only a
    `restart` here took the run over: nothing let the user end it without starting an attempt, and every
    view went on calling it live. `kill RUN --machine-gone` records it killed (the events a kill without a
    runner writes, no PID), signals nothing (a process here whose PID and start time state.json names, as
    gpu-07's numbers may be this machine's, lives on), and a later `restart` resumes it here."""
    run = _elsewhere_run(harness.runs_dir, "20261204-080000-demo-0e29", written_ago=3600.0)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        created = until(lambda: proctree.start_time(stranger.pid), timeout=10, what="the stranger's start time")
        state = run.read_state()
        state["pids"] = [{"pid": stranger.pid, "start_time": created, "role": "leader"}]
        jsonio.atomic_write_json(run.state, state)
        typed = rundir.command_ref(run.path.parent, run.run_id)[1]
        plain = harness.cli("kill", run.run_id)   # the refusal names the way to end it
        assert plain.returncode == 2 and f"`moeconsole kill {typed} --machine-gone` records it killed" in plain.stderr, \
            plain.stderr
        out = harness.cli("kill", run.run_id, "--machine-gone")
        assert out.returncode == 0 and "Traceback" not in out.stderr, (out.stdout, out.stderr)
        assert out.stdout.startswith(f"{run.run_id}: killed (its runner's machine gpu-07 given up for gone"), out.stdout
        assert "nothing was signalled there" in out.stdout, out.stdout
        assert stranger.poll() is None, "a process of this machine was signalled"
        after = run.read_state()
        assert after["status"] == "killed" and after["pids"] == [] and after["ended_at"], after
        kinds = [e["type"] for e in _events(run)][-3:]
        assert kinds == ["kill", "kill_done", "status"], kinds
        assert _events(run)[-3]["pids"] == [] and _events(run)[-3]["machine_gone"] == "gpu-07"
        doc = _json_run(harness, run.run_id)
        assert doc["status_word"] == "KILLED" and not doc["stale"], doc
        shown = harness.cli("runs", "show", run.run_id).stdout
        assert "RUNNING?" not in shown and "killed" in shown.lower(), shown
        again = harness.cli("kill", run.run_id, "--machine-gone")
        assert again.returncode == 0 and again.stdout.strip() == f"{run.run_id}: already killed; nothing to kill", \
            again.stdout
        assert not run.runner_log.exists()   # no runner was started here for any of it
    finally:
        stranger.kill()
        stranger.wait()
    resumed = harness.cli("restart", run.run_id)
    assert resumed.returncode == 0, resumed.stderr
    try:
        until(lambda: (s := run.read_state()).get("attempt") == 3 and s.get("status") == "running"
              and (s.get("runner") or {}).get("host") == rundir.hostname() and s, timeout=120,
              what="attempt 3 running under a runner on this machine")
    finally:
        killed = harness.cli("kill", run.run_id)
    assert killed.returncode == 0 and run.read_state().get("status") == "killed", (killed.stdout, killed.stderr)


def test_kill_machine_gone_is_refused_where_that_machine_still_lives_or_the_runner_is_here(harness):
    """Refusals, each in one line, exit 2, nothing written: state.json written 2 s ago (its machine is not
    gone); the run's lock held (another runner, here or there over a filesystem that shares locks); a run
    whose runner ran on this machine (a plain `kill` ends it, signals and all)."""
    live = _elsewhere_run(harness.runs_dir, "20261204-080000-demo-1e29", written_ago=2.0)
    before = live.state.read_text()
    out = harness.cli("kill", live.run_id, "--machine-gone")
    assert out.returncode == 2 and "its runner runs on gpu-07" in out.stderr, out.stderr
    assert "its runner still writes state.json, so its machine is not gone" in out.stderr, out.stderr
    assert live.state.read_text() == before
    silent = _elsewhere_run(harness.runs_dir, "20261204-080000-demo-2e29", written_ago=3600.0)
    before = silent.state.read_text()
    fd = os.open(silent.lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        out = harness.cli("kill", silent.run_id, "--machine-gone")
    finally:
        os.close(fd)
    assert out.returncode == 2 and "a runner holds the run's lock" in out.stderr, out.stderr
    assert silent.state.read_text() == before
    from tests.console.conftest import write_run
    here = write_run(harness.runs_dir, "20261204-080000-demo-3e29", runner_pid=os.getpid(), log_lines=5)
    state = here.read_state()
    state.update(updated_at=time.time() - 3600, stale_after_s=30.0)
    jsonio.atomic_write_json(here.state, state)
    before = here.state.read_text()
    out = harness.cli("kill", here.run_id, "--machine-gone")
    assert out.returncode == 2 and "--machine-gone is for a run whose runner ran on another machine" in out.stderr, \
        out.stderr
    assert here.state.read_text() == before


def _partitioned_run(harness):
    """A live run under a real runner here, its training a sleeper that logged one step; then its runner
    is stopped (SIGSTOP: the node cut off from the shared filesystem, or suspended, past stale_after_s).
    Returns the run, the runner's PID and the training's PIDs."""
    from tests.runner.conftest import NO_SAVES
    run = harness.start(harness.recipe(
        command=["{python}", "-c", "import time; print('{\"step\": 1, \"loss\": 1.0}', flush=True); time.sleep(300)"],
        restart={"max_restarts": 0}, **NO_SAVES))
    st = until(lambda: (s := run.state()).get("status") == "running" and s.get("pids") and s.get("step") == 1 and s,
               timeout=90, what="the training running, step 1 read")
    return run, st["runner"]["pid"], [p["pid"] for p in st["pids"]]


def _assert_stood_down(there: rundir.RunDir, runner_pid: int, pids: list[int], written: bytes) -> None:
    """After the runner's SIGCONT: it exits, its training here ends, state.json stays as the other machine wrote it, and
    one `stood_down` event names that machine."""
    until(lambda: not rundir.pid_alive(runner_pid), timeout=120, what="the runner exiting")
    until(lambda: not any(proctree.start_time(p) for p in pids), timeout=120, what="its training ended here")
    assert there.state.read_bytes() == written, there.read_state()
    assert [e["taken_over_by"] for e in _events(there) if e["type"] == "stood_down"] == ["login-1"]


def _other_machine(**fields) -> dict:
    import uuid
    return {"host": "login-1", "boot_id": str(uuid.uuid4()), "pidns": 4026531999, **fields}


def test_a_runner_back_after_its_run_was_killed_from_another_machine_stands_down(harness):
    """The node's runner cut off (here: stopped) while the user, on the login node, gave its machine up
    for gone (`kill --machine-gone`: state.json `killed`, the runner record that machine's). The node came
    back: its runner's next write put `running` back over the user's kill, and the training trained on
    (seen: `running` 6 s later, both PIDs alive). The runner now reads that the run was taken over, ends its
    training here, writes nothing more but one `stood_down` event, and exits."""
    run, runner_pid, pids = _partitioned_run(harness)
    os.kill(runner_pid, signal.SIGSTOP)
    try:
        there = rundir.RunDir(run.path)
        state = there.read_state()
        there.write_state({**state, "status": "killed", "pids": [], "groups": [], "ended_at": time.time(),
                           "runner": _other_machine(pid=None),
                           "pause_reason": "killed by user without a runner: its runner's machine vm given up"})
        written = there.state.read_bytes()
    finally:
        os.kill(runner_pid, signal.SIGCONT)
    until(lambda: not rundir.pid_alive(runner_pid), timeout=30, what="the runner exiting")
    until(lambda: not any(proctree.start_time(p) for p in pids), timeout=30, what="the training ended here")
    assert there.state.read_bytes() == written, there.read_state()
    stood = [e for e in _events(there) if e["type"] == "stood_down"]
    assert len(stood) == 1 and stood[0]["taken_over_by"] == "login-1" and set(pids) <= set(stood[0]["pids"]), stood
    doc = _json_run(harness, run.id)
    assert doc["status_word"] == "KILLED", doc
    assert "taken over there" in run.path.joinpath("runner.log").read_text()


def test_a_runner_back_after_a_restart_took_its_run_over_elsewhere_ends_its_second_training(harness):
    """As above, but the login node typed `restart` (round 28's takeover): attempt 2 runs there under a
    runner there. The node's runner, back, wrote its attempt 1 over attempt 2's state: two trainings of one
    run, state.json flipping between two runners. It now ends its own and leaves state.json to the other.
    Refusal: a state.json put back by hand from an older copy (written before this runner started), and
    the runner's own writes, leave it supervising."""
    run, runner_pid, pids = _partitioned_run(harness)
    there = rundir.RunDir(run.path)
    old = there.read_state()
    os.kill(runner_pid, signal.SIGSTOP)
    try:   # a restored copy first: older than this runner
        there.write_state({**old, "runner": _other_machine(pid=4242, start_time=old["runner"]["start_time"] - 600)})
        jsonio.atomic_write_json(there.state, {**there.read_state(), "updated_at": old["runner"]["start_time"] - 60})
    finally:
        os.kill(runner_pid, signal.SIGCONT)
    mine = until(lambda: (s := there.read_state()).get("runner", {}).get("pid") == runner_pid and s, timeout=30,
                 what="the runner writing its state again")
    assert mine["status"] == "running" and all(proctree.start_time(p) for p in pids), mine
    os.kill(runner_pid, signal.SIGSTOP)
    try:
        state = there.read_state()
        there.write_state({**state, "attempt": 2, "pids": [], "groups": [],
                           "runner": _other_machine(pid=4242, start_time=time.time())})
        written = there.state.read_bytes()
    finally:
        os.kill(runner_pid, signal.SIGCONT)
    _assert_stood_down(there, runner_pid, pids, written)


# A training that saves as transformers 4.36-4.38 do (4.37.2 trainer.py l.2368-2417): each save written whole
# into ``tmp-checkpoint-N`` (the weights, the optimizer, the RNG state, trainer_state.json last), which is then
# renamed to ``checkpoint-N``; the save at step 6 is cut by a crash before its rename.
STAGED_SAVES = """
import json, os, sys, time
from pathlib import Path
import torch
from safetensors.torch import save_file
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
for step in range(1, 7):
    print(json.dumps({"step": step, "loss": 1.0 / step, "max_steps": 6}), flush=True)
    if step in (2, 4, 6):
        tmp = out / f"tmp-checkpoint-{step}"
        tmp.mkdir()
        save_file({"base_model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(8, 16),
                   "base_model.model.layers.0.self_attn.q_proj.lora_B.weight": torch.zeros(16, 8)},
                  str(tmp / "adapter_model.safetensors"))
        (tmp / "adapter_config.json").write_text(json.dumps(
            {"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj"]}))
        torch.save({"state": {}}, tmp / "optimizer.pt")
        (tmp / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": 6, "log_history": []}))
        if step == 6:
            sys.exit(0)
        time.sleep(3)   # what a large save's optimizer states take, and more than the watcher's settle
        os.rename(tmp, out / f"checkpoint-{step}")
"""


def test_a_save_staged_in_tmp_checkpoint_and_renamed_is_one_save(harness, tmp_path):
    """transformers 4.36-4.38 write each save into `tmp-checkpoint-N` and rename it to `checkpoint-N` once
    whole. The runner took the staging directory for a save: each save verified twice, the staging one then
    listed by `runs show` as `DEL ... deleted since it was verified (the trainer's --save_total_limit?)`
    (two bad ones in a row would pause the run at its first bad save), and the staging directory the last
    save left was the resume point (`resume    from tmp-checkpoint-6 (step 6)`), a directory transformers
    itself never resumes from. Only `checkpoint-N` is a save. Refusal: `verify` of the staging directory
    by name still verifies it."""
    script = tmp_path / "staged.py"
    script.write_text(STAGED_SAVES)
    run = harness.start(harness.recipe(command=["{python}", str(script), "{run_dir}/output"],
                                       restart={"max_restarts": 0}, resume={"arg": None}))
    st = until(lambda: (s := run.state()).get("status") not in ("created", "starting", "running", "cooldown")
               and s, timeout=120, what="the run's end")
    saves = [Path_(e["path"]).name for e in run.events("checkpoint")]
    assert saves == ["checkpoint-2", "checkpoint-4"] and all(e["ok"] for e in run.events("checkpoint")), \
        run.events("checkpoint")
    assert st["status"] == "succeeded", (st["status"], st.get("pause_reason"))
    shown = harness.cli("runs", "show", run.id).stdout
    assert "tmp-checkpoint" not in shown and "deleted since it was verified" not in shown, shown
    assert "resume    from checkpoint-4" in shown, shown
    staged = run.path / "output" / "tmp-checkpoint-6"
    out = harness.cli("verify", str(staged))
    assert out.returncode == 0 and "tmp-checkpoint-6" in out.stdout, (out.stdout, out.stderr)


def test_kill_machine_gone_of_a_slurm_run_names_the_job_it_leaves_running(harness):
    """A Slurm run's attempt is a job on the cluster's nodes, which outlives the login node its runner ran on:
    `kill --machine-gone` records the run killed and says the job was not cancelled from here, with the
    command that ends it there. A local run's words name no job (the first test)."""
    run = _elsewhere_run(harness.runs_dir, "20261204-080000-demo-4e29", written_ago=3600.0)
    state = run.read_state()
    state.update(engine="slurm", job={"engine": "slurm", "attempt": 2, "job_id": "4242", "job_name": "moe-4e29-2",
                                      "state": "RUNNING", "nodes": ["gpu-11"]})
    jsonio.atomic_write_json(run.state, state)
    out = harness.cli("kill", run.run_id, "--machine-gone")
    assert out.returncode == 0, out.stderr
    assert "its slurm job 4242 was not cancelled from here (`scancel 4242` on its cluster ends it)" in out.stdout, \
        out.stdout
    assert run.read_state()["status"] == "killed"
