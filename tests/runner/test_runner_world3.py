"""The supervised run in a hostile world, round 3: what the training inherits from the console,
and who else shares the machine. Each through the real CLI, the real detached runner and a real
training process; asserted on what the user sees."""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest
import yaml

from tests.runner.conftest import NO_SAVES, REPO, Run, base_recipe, ticker
from tests.waiting import sigkill, until


def _run_with_env(harness, recipe: dict, env: dict[str, str]) -> Run:
    """``run --detach`` from a shell whose environment is ``env`` exactly (the CLI imports this
    tree from its working directory, as ``python -m`` does, not through PYTHONPATH)."""
    path = harness.tmp / f"recipe-env-{len(list(harness.tmp.glob('recipe-env-*')))}.yaml"
    path.write_text(yaml.safe_dump(recipe))
    proc = _cli_with_env(harness, env, "run", str(path), "--detach")
    assert proc.stdout.strip(), proc.stderr
    return Run(harness.runs_dir / proc.stdout.strip().splitlines()[0])


def _cli_with_env(harness, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(harness.runs_dir)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)


def _env_lines(run: Run) -> dict[str, str]:
    """The environment the training printed (``env``), from its log."""
    out = {}
    for line in (run.path / "train.log").read_text(errors="replace").splitlines():
        k, eq, v = line.partition("=")
        if eq and k.isidentifier():
            out[k] = v
    return out


def _shell_env(**over: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_") and k != "PYTHONPATH"}
    for k, v in over.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def test_the_training_gets_the_users_pythonpath_not_moeconsoles(harness):
    """A user's command (here `env`, any interpreter but ours) is given the PYTHONPATH of the shell
    that started the run, or none when it had none. The runner used to hand on its own, with
    moeconsole's package root in front: a wheel's is its venv's site-packages, so the user's Python
    imported moeconsole's numpy/yaml/torch before its own."""
    env_bin = shutil.which("env")
    assert env_bin
    recipe = base_recipe(command=[env_bin], **NO_SAVES)
    user = _run_with_env(harness, recipe, _shell_env(PYTHONPATH="/opt/user-lib", LATIN_VAR="caf\udce9"))
    bare = _run_with_env(harness, recipe, _shell_env())
    for run in (user, bare):
        st = run.wait_status("succeeded", "failed", "unsaved", timeout=120)
        assert st["status"] == "succeeded", st
    seen = _env_lines(user)
    assert seen.get("PYTHONPATH") == "/opt/user-lib", seen.get("PYTHONPATH")
    assert "PYTHONPATH" not in _env_lines(bare), _env_lines(bare).get("PYTHONPATH")
    assert not [k for k in seen if k.startswith("MOECONSOLE_PYTHONPATH")]
    assert seen.get("MOECONSOLE_RUN_ID") == user.id   # the run's own markers still reach it
    # a variable environ.json cannot hold (not UTF-8) still reaches it, from the runner's own
    assert b"\nLATIN_VAR=caf\xe9\n" in (user.path / "train.log").read_bytes()


def test_a_command_run_by_moeconsoles_own_python_can_import_moeconsole(harness):
    """``{python}`` is our interpreter: the shipped demo recipes run ``moeconsole.runner.demo.train``
    with it, so it keeps our package root in front, the user's PYTHONPATH after it."""
    probe = ["{python}", "-P", "-c", "import os, moeconsole; print('PP=' + os.environ['PYTHONPATH']); "
             "print('AT=' + str(moeconsole.import_root()))"]
    run = _run_with_env(harness, base_recipe(command=probe, **NO_SAVES), _shell_env(PYTHONPATH="/opt/user-lib"))
    st = run.wait_status("succeeded", "failed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", (run.path / "train.log").read_text()[-2000:]
    lines = dict(line.split("=", 1) for line in (run.path / "train.log").read_text().splitlines()
                 if line.startswith(("PP=", "AT=")))
    assert lines["AT"] == str(REPO)
    assert lines["PP"] == os.pathsep.join([str(REPO), "/opt/user-lib"])


def test_the_newest_run_is_the_one_started_last_whatever_tz_its_console_had(harness):
    """Two live runs, the first started from a shell at UTC+14, the second a moment later from one
    at UTC-12: the first's id reads a day later. `--json` without RUN (as bare `moeconsole` and
    `attach`) picked the run by id, the older one, while `runs ls` listed the other first; both say
    the run started last."""
    recipe = base_recipe(command=ticker(600, 0.2), **NO_SAVES)
    first = _run_with_env(harness, recipe, _shell_env(TZ="EAST-14", PYTHONPATH=str(REPO)))
    first.wait_status("running", timeout=120)
    second = _run_with_env(harness, recipe, _shell_env(TZ="WEST+12", PYTHONPATH=str(REPO)))
    second.wait_status("running", timeout=120)
    assert first.id > second.id   # the ids' local times: the first looks a day newer
    try:
        snap = json.loads(harness.cli("--json", "--once", "--no-gpu", check=True).stdout.splitlines()[-1])
        assert snap["run"]["id"] == second.id, (snap["run"]["id"], first.id, second.id)
        listed = json.loads(harness.cli("runs", "ls", "--json", check=True).stdout)
        assert [r["id"] for r in listed["runs"]][:2] == [second.id, first.id]
    finally:
        for run in (first, second):
            harness.cli("kill", run.id)


# Says, once per attempt, what of its environment a training depends on, then trains on.
SAYS_ITS_ENV = ["{python}", "-c", (
    "import os, time\n"
    "print('SEEN attempt=%s shard=%s token_chars=%d' % (os.environ['MOECONSOLE_ATTEMPT'], "
    "os.environ.get('TRAIN_SHARD'), len(os.environ.get('HF_TOKEN', ''))), flush=True)\n"
    "print('SLURM job=%s gpus=%s' % (os.environ.get('SLURM_JOB_ID'), os.environ.get('CUDA_VISIBLE_DEVICES')), flush=True)\n"
    "for i in range(1, 601):\n"
    "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/600'}\" % i, flush=True)\n"
    "    time.sleep(0.2)\n")]


def _seen(run: Run) -> list[str]:
    return [line for line in (run.path / "train.log").read_text().splitlines() if line.startswith("SEEN ")]


def test_a_runner_started_from_another_shell_launches_the_run_with_the_environment_it_was_started_with(harness):
    """The runner and its training die (a reboot, the OOM killer); the user starts a runner again
    from a new SSH session (`supervise`; `kill`/`restart` of a run without a runner do the same)
    whose shell lacks the token the recipe takes (`HF_TOKEN: ${MY_TOKEN}`) and has another value
    of a variable the training reads. The next attempt ran with that shell's environment: a token
    gone, a different shard. It gets the environment the run was started with (environ.json),
    except what says where the runner runs: the Slurm allocation the new shell is in, its GPUs."""
    recipe = base_recipe(command=SAYS_ITS_ENV, env={"OMP_NUM_THREADS": "1", "HF_TOKEN": "${MY_TOKEN}"}, **NO_SAVES)
    run = _run_with_env(harness, recipe, _shell_env(PYTHONPATH=str(REPO), TRAIN_SHARD="a", MY_TOKEN="hf_" + "x" * 30,
                                                    SLURM_JOB_ID="100", CUDA_VISIBLE_DEVICES="0,1"))
    st = run.wait(lambda s: (s.get("step") or 0) >= 2, timeout=120, what="step 2")
    runner = st["runner"]["pid"]
    leader = next(p for p in st["pids"] if p["role"] == "leader")["pid"]
    sigkill(runner, 60, what="the runner gone")
    sigkill(leader, 60, what="the training gone")
    try:
        out = _cli_with_env(harness, _shell_env(PYTHONPATH=str(REPO), TRAIN_SHARD="b", SLURM_JOB_ID="200",
                                                CUDA_VISIBLE_DEVICES="2,3"), "supervise", run.id)
        assert out.returncode == 0, out.stderr
        until(lambda: len(_seen(run)) >= 2, 120, what="attempt 2 saying its environment")
        assert _seen(run) == ["SEEN attempt=1 shard=a token_chars=33", "SEEN attempt=2 shard=a token_chars=33"]
        assert "hf_xxx" not in (run.path / "train.log").read_text()
        # where the runner runs is the new runner's: the allocation it was started in, its GPUs
        slurm = [line for line in (run.path / "train.log").read_text().splitlines() if line.startswith("SLURM ")]
        assert slurm == ["SLURM job=100 gpus=0,1", "SLURM job=200 gpus=2,3"], slurm
    finally:
        harness.cli("kill", run.id)
    assert stat.S_IMODE(os.stat(run.path / "environ.json").st_mode) == 0o600


def test_an_environ_json_others_could_write_is_never_launched_from(harness):
    """environ.json is what the run's command gets (an LD_PRELOAD there runs anything): one that
    is not a private file of the user is refused as a planted recipe.yaml is, one line, exit 2."""
    run = harness.start(harness.recipe(command=ticker(3, 0.01), **NO_SAVES))
    run.wait_status("succeeded", "failed", "unsaved", timeout=120)
    os.chmod(run.path / "environ.json", 0o666)
    out = harness.cli("supervise", run.id)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out
    assert "environ.json is not a private file of yours" in out.stderr, out.stderr


# A trainer that saves real safetensors adapters (checkpoint-N/) every 4 steps, resumes from
# --resume_from_checkpoint, and in attempt 1 dies by SIGKILL half-way through writing the save at
# step 8: the header is whole, the tensor data stops in the middle (a node lost mid-save).
HALF_SAVE = r'''
import json, os, signal, struct, sys, time
args = sys.argv[1:]
out = args[args.index("--output_dir") + 1]
start = 0
if "--resume_from_checkpoint" in args:
    start = int(args[args.index("--resume_from_checkpoint") + 1].rstrip("/").rsplit("-", 1)[1])
print("RESUMED", start, flush=True)
attempt = int(os.environ["MOECONSOLE_ATTEMPT"])
def save(step, half=False):
    d = os.path.join(out, f"checkpoint-{step}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump({"peft_type": "LORA", "r": 8, "lora_alpha": 16}, f)
    n = 4096
    header = json.dumps({"base_model.model.layer.lora_A.weight": {"dtype": "F32", "shape": [8, n // 8], "data_offsets": [0, 4 * n]},
                         "base_model.model.layer.lora_B.weight": {"dtype": "F32", "shape": [n // 8, 8], "data_offsets": [4 * n, 8 * n]}}).encode()
    data = struct.pack(f"<{2 * n}f", *([0.5] * (2 * n)))
    with open(os.path.join(d, "adapter_model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + (data[: len(data) // 2] if half else data))
        f.flush()
        if half:
            os.kill(os.getpid(), signal.SIGKILL)
for step in range(start + 1, 13):
    print("{'loss': '1.0', 'global_step/max_steps': '%d/12'}" % step, flush=True)
    time.sleep(0.1)
    if step % 4 == 0:
        save(step, half=(attempt == 1 and step == 8))
        time.sleep(0.6)
'''


def test_a_checkpoint_half_written_when_the_training_died_is_never_resumed_from(harness, tmp_path):
    """SIGKILL in the middle of a save: checkpoint-8's safetensors has a whole header and half its
    data. The runner finds it truncated and the next attempt resumes from checkpoint-4, the last
    whole one (that held). That attempt saves checkpoint-8 again, whole, and ends 1.6 s later: the
    end-of-attempt sweep looked only at saves newer than the newest verified one, so the new
    checkpoint-8 was never verified and the run kept calling it truncated (a bad save counted, its
    critical alert standing). A save verified before whose files changed is verified again."""
    script = tmp_path / "half_save.py"
    script.write_text(HALF_SAVE)
    run = harness.start(harness.recipe(command=["{python}", str(script), "--output_dir", "{run_dir}/output"],
                                       checkpoints={"dir": "{run_dir}/output", "settle_s": 0.2}))
    st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=180)
    starts = run.events("attempt_start")
    assert [e.get("resumed_from") for e in starts][:2] == [None, str(run.path / "output" / "checkpoint-4")], starts
    assert st["status"] == "succeeded", st
    first = [e for e in run.events("checkpoint") if e.get("attempt") == 1]
    assert [(e["step"], e["verdict"]) for e in first] == [(4, "ok"), (8, "truncated")], first
    # attempt 2 saved its own whole checkpoint-8 over the half one
    assert [(e["step"], e["verdict"]) for e in run.events("checkpoint") if e.get("attempt") == 2] == [(8, "ok"), (12, "ok")]
    assert st["bad_saves"]["total"] == 0, st["bad_saves"]


def test_root_never_signals_another_users_run_whose_runner_died():
    """User nobody's run, its runner SIGKILLed, the training on. Root's `kill RUN` could not start
    a runner for it (the run is not root's), then "ended its processes directly": it wrote a kill
    into nobody's events, every signal was refused as another user's, and it said "still alive
    after SIGKILL" of a process it never signalled. It says whose run it is and signals nothing;
    nobody's own kill ends it."""
    from tests.rundir.test_other_users_runs import OTHER_PYTHON, OTHER_SKIP
    if OTHER_PYTHON is None:
        pytest.skip(OTHER_SKIP)
    import pwd
    nobody = pwd.getpwnam("nobody").pw_uid
    tmp_path = Path(tempfile.mkdtemp(prefix="mcworld3-"))   # not under pytest's 0700 directory
    base = tmp_path / "theirs"
    base.mkdir()
    os.chown(base, nobody, -1)
    os.chmod(base, 0o755)
    os.chmod(tmp_path, 0o755)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(base_recipe(command=ticker(600, 0.2), **NO_SAVES)))
    os.chmod(recipe, 0o644)

    def as_nobody(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*OTHER_PYTHON, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(base)],
                              capture_output=True, text=True, timeout=120, cwd="/")
    started = as_nobody("run", str(recipe), "--detach")
    assert started.returncode == 0, started.stderr
    run = Run(base / started.stdout.strip().splitlines()[0])
    st = run.wait(lambda s: (s.get("step") or 0) >= 2, timeout=120, what="step 2")
    training = [(p["pid"], p["start_time"]) for p in st["pids"]]
    def roots_kill() -> None:
        out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "kill", run.id, "--runs-dir", str(base)],
                             capture_output=True, text=True, timeout=120, cwd=REPO,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
        assert out.returncode == 2, out
        assert out.stderr.count("\n") == 1 and "the run of user nobody (uid 65534), not yours" in out.stderr, out.stderr
        assert "SIGKILL" not in out.stdout + out.stderr, out
        assert not run.events("kill"), run.events("kill")
        assert all(psutil.pid_exists(pid) for pid, _ in training)
    try:
        roots_kill()   # their runner lives: root does not ask it either (as `restart` refuses their run)
        assert run.state()["status"] == "running"
        # a hand-made client as root: their runner answers `status` and refuses the command (SO_PEERCRED)
        from moeconsole.runner.supervisor import control
        assert control.send(run.path / "control.sock", control.StatusRequest()).ok
        refused = control.send(run.path / "control.sock", control.KillRequest(by="cli"))
        assert not refused.ok and f"commands come only from its own user (asked by uid {os.getuid()})" in refused.text
        assert not run.events("kill") and run.state()["status"] == "running"
        runner = st["runner"]["pid"]
        sigkill(runner, 60, what="the runner gone")
        roots_kill()
        theirs = as_nobody("kill", run.id)
        assert theirs.returncode == 0, theirs.stderr
        assert run.state()["status"] == "killed"
    finally:
        for pid, _ in training:
            try:
                if psutil.pid_exists(pid) and psutil.Process(pid).uids().real == nobody:
                    os.kill(pid, signal.SIGKILL)
            except (psutil.Error, OSError):
                pass
        shutil.rmtree(tmp_path, ignore_errors=True)


# A torchrun-like launcher: the leader starts a rank in a session of its own that asks for
# SIGTERM when its parent dies (prctl(PR_SET_PDEATHSIG), as launchers' workers do), and waits on it.
SESSION_RANK = ["{python}", "-c", (
    "import ctypes, os, signal, sys, time\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.setsid()\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)\n"
    "    for i in range(1, 1201):\n"
    "        print(\"{'loss': '1.0', 'global_step/max_steps': '%d/1200'}\" % i, flush=True)\n"
    "        time.sleep(0.1)\n"
    "    os._exit(0)\n"
    "_, status = os.waitpid(pid, 0)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n")]


def test_a_rank_in_its_own_session_with_a_parent_death_signal_outlives_the_runner_and_is_adopted(harness):
    """SIGKILL of the runner: the rank (own session, PR_SET_PDEATHSIG on its launcher) trains on,
    since neither its launcher nor the waiter is the runner's to take down; a new runner adopts the
    same attempt and its kill ends the whole tree, the rank in its other session included, and
    leaves a process of the same user that is not the run's alone."""
    run = harness.start(harness.recipe(command=SESSION_RANK, **NO_SAVES))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, timeout=120, what="step 3")
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    try:
        runner = st["runner"]["pid"]
        sigkill(runner, 60, what="the runner gone")
        step = st["step"]
        until(lambda: _last_step_logged(run) >= step + 10, 60, what="the rank training on without a runner")
        out = harness.cli("supervise", run.id)
        assert out.returncode == 0, out.stderr
        adopted = run.wait(lambda s: s.get("runner", {}).get("pid") not in (None, runner)
                           and (s.get("step") or 0) > step + 10, timeout=120, what="a new runner following the rank")
        assert adopted["attempt"] == 1 and adopted["status"] == "running", adopted
        assert not run.events("crash")
        tree = [p["pid"] for p in adopted["pids"]]
        harness.cli("kill", run.id, check=True)
        run.wait_status("killed", timeout=60)
        until(lambda: not [p for p in tree if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE],
              60, what="every process of the tree gone")
        assert bystander.poll() is None, "a process that is not the run's was ended"
    finally:
        bystander.kill()
        bystander.wait()


def _last_step_logged(run: Run) -> int:
    steps = [int(line.split("'global_step/max_steps': '")[1].split("/")[0])
             for line in (run.path / "train.log").read_text().splitlines() if line.startswith("{'loss'")]
    return max(steps, default=0)
