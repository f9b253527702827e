"""The Slurm engine's pure parts, no cluster needed: recipe section, crash classes from job
states, the follower's order of questions, and what the status line says about a job."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from moeconsole.console import format as fmt
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.core.crash import classify, classify_job_state
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.policy import AttemptRecord, RestartSettings, decide
from moeconsole.runner.process.slurm.client import AsyncCommand, Finished, JobFollower
from moeconsole.runner.process.slurm.settings import SlurmSettings
from moeconsole.runner.process.slurm.text import BatchSpec, batch_script
from moeconsole.runner.rundir.snapshot import status_word


def test_settings_from_the_recipe_and_their_refusals():
    s = SlurmSettings.from_recipe({"nodes": 2, "gpus_per_node": 8, "time": "1-00:00:00", "partition": "gpu",
                                   "sbatch": ["--qos=high", "--exclusive"], "poll_s": 5, "agents": True})
    assert (s.nodes, s.gpus_per_node, s.time, s.sbatch, s.poll_s, s.agents) == \
        (2, 8, "1-00:00:00", ("--qos=high", "--exclusive"), 5.0, True)
    for bad, word in (({"nodes": 0}, "slurm.nodes"), ({"time": "an hour"}, "slurm.time"),
                      ({"partition": "gpu; rm -rf /"}, "slurm.partition"), ({"sbatch": ["--output=/x"]}, "sets that one"),
                      ({"sbatch": ["--comment=$(id)"]}, "--flag=value"), ({"poll_s": 0}, "slurm.poll_s"),
                      ({"nodez": 1}, "unknown key")):
        with pytest.raises(ValueError, match=word.replace("$", r"\$")):
            SlurmSettings.from_recipe(bad)


def test_recipe_loads_the_slurm_section_and_set_checks_its_keys(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("name: s\nengine: slurm\ncommand: [python, -c, pass]\nslurm: {nodes: 2, time: '30:00'}\n")
    r = recipes.load(path, ["slurm.partition=gpu"])
    assert (r.engine, r.slurm) == ("slurm", SlurmSettings(nodes=2, time="30:00", partition="gpu"))
    with pytest.raises(InputError, match="did you mean slurm.nodes"):
        recipes.load(path, ["slurm.node=3"])
    with pytest.raises(InputError, match="Slurm time"):
        recipes.load(path, ["slurm.time=soon"])
    # The bundled Slurm recipe is valid as shipped.
    assert recipes.load("recipes/tiny-moe-slurm.yaml").engine == "slurm"


def test_lint_refuses_a_bad_slurm_value_with_one_line():
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "lint", "recipes/tiny-moe-slurm.yaml",
                          "--set", "slurm.sbatch=[--wrap=rm]"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "moeconsole sets that one itself" in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("state, cls, retryable", [
    ("TIMEOUT", "time_limit", True), ("NODE_FAIL", "node_fail", True), ("PREEMPTED", "preempted", True),
    ("OUT_OF_MEMORY", "killed_oom", True), ("CANCELLED", "job_cancelled", False)])
def test_job_states_that_prove_the_crash(state, cls, retryable):
    tail = ["step 40 loss 1.2", "slurmstepd-gpu01: error: *** JOB 77 ON gpu01 CANCELLED AT 2026-11-25T06:09:46 "
            "DUE TO TIME LIMIT ***", "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."]
    v = classify_job_state(state, tail)
    assert v is not None and (v.cls, v.retryable) == (cls, retryable)
    assert v.evidence[0] == f"Slurm job state: {state}" and "DUE TO TIME LIMIT" in v.evidence[1]
    settings = RestartSettings.from_recipe({"max_restarts": 3})
    now = time.time()
    d = decide(v, [AttemptRecord(1, now - 60, now, None, 40, cls)], settings, now)
    assert d.action == ("restart" if retryable else "fail"), d


def test_states_without_a_verdict_of_their_own():
    for state in (None, "COMPLETED", "FAILED", "RUNNING"):
        assert classify_job_state(state, []) is None


def test_srun_task_signal_lines_name_the_signal_even_with_a_plain_exit_code():
    v = classify(11, ["Train:  50%|#####| 6/12 [00:00<00:00, 11.37it/s]srun: error: localhost: task 0: "
                      "Segmentation fault", "srun: launch/slurm: _step_signal: Terminating StepId=29.0"],
                 steps_seen=6, attempt=1)
    assert v.cls == "segfault", v
    v = classify(1, ["srun: error: gpu[01-02]: tasks 0-15: Killed"], steps_seen=3, attempt=1)
    assert v.cls == "killed_oom", v
    # srun's own "error:" lines are not a trainer's usage error.
    v = classify(1, ["srun: error: Unable to create step for job 12: Invalid generic resource (gres) specification"])
    assert v.cls != "config_error", v


class _Canned:
    """A spawn that answers each Slurm command from a script of (argv[0], rc, out) answers."""

    def __init__(self, answers: list[tuple[str, int, str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, argv):
        kind, rc, out = self.answers.pop(0)
        assert argv[0] == kind, (argv, kind)
        self.asked.append(argv[0])
        cmd = AsyncCommand.__new__(AsyncCommand)
        cmd.result = Finished(tuple(argv), rc, out, "" if rc == 0 else "error", 0.01)
        return cmd


def test_follower_reads_squeue_then_the_final_word_from_sacct():
    canned = _Canned([("squeue", 0, "7|PENDING|Priority|\n"), ("squeue", 0, "7|RUNNING|None|node[1-2]\n"),
                      ("squeue", 0, "7|COMPLETED|None|node[1-2]\n"), ("sacct", 0, "7|RUNNING|0:0|node[1-2]\n"),
                      ("sacct", 0, "7|TIMEOUT|0:0|node[1-2]\n")])
    f = JobFollower("7", interval_s=0.0, spawn=canned)
    seen = []
    for _ in range(12):
        st = f.poll()
        if st is not None and (not seen or seen[-1] != (st.state, st.reason, st.source)):
            seen.append((st.state, st.reason, st.source))
        if st is not None and st.final:
            break
    assert seen == [("PENDING", "Priority", "squeue"), ("RUNNING", None, "squeue"), ("COMPLETING", None, "squeue"),
                    ("RUNNING", None, "sacct"), ("TIMEOUT", None, "sacct")]
    assert f.state is not None and f.state.nodes == ("node1", "node2") and f.state.exit_code == 0


def test_follower_falls_back_to_scontrol_without_accounting():
    canned = _Canned([("squeue", 1, ""), ("sacct", 1, ""), ("scontrol", 0,
                      "JobId=9 JobName=x JobState=FAILED Reason=NonZeroExitCode ExitCode=143:0 NodeList=localhost")])
    canned_err = "Slurm accounting storage is disabled"
    f = JobFollower("9", interval_s=0.0, spawn=canned)
    orig = canned.__call__

    def spawn(argv):
        cmd = orig(argv)
        if argv[0] == "sacct":
            cmd.result = Finished(tuple(argv), 1, "", canned_err, 0.01)
        elif argv[0] == "squeue":
            cmd.result = Finished(tuple(argv), 1, "", GONE, 0.01)
        return cmd
    f.spawn = spawn
    for _ in range(10):
        if (st := f.poll()) is not None and st.final:
            break
    assert f.state is not None and (f.state.state, f.state.exit_code, f.state.source) == ("FAILED", 143, "scontrol")
    assert canned.asked == ["squeue", "sacct", "scontrol"]


def test_status_word_and_line_for_a_queued_job():
    job = {"job_id": "41", "state": "PENDING", "reason": "Resources", "nodes": [], "ended_at": None}
    run = {"status": "running", "engine": "slurm", "job": job, "name": "r", "attempt": 1, "max_restarts": 3}
    assert status_word(run) == "PENDING (Resources)"
    run["status_word"] = status_word(run)
    line2 = "".join(t for t, _ in fmt.status_lines(run)[1])
    assert "slurm job 41 PENDING" in line2
    running = {**run, "job": {**job, "state": "RUNNING", "reason": None, "nodes": ["gpu01", "gpu02"]}}
    assert status_word(running) == "RUNNING"
    assert "slurm job 41 RUNNING on gpu01,gpu02" in "".join(t for t, _ in fmt.status_lines(running)[1])
    away = {**running, "job": {**running["job"], "slurm_error": "Unable to contact slurm controller (connect failure)"}}
    assert status_word(away) == "RUNNING", "the last state read stays the word"
    assert "slurm job 41 RUNNING on gpu01,gpu02 (Slurm not answering)" in "".join(t for t, _ in fmt.status_lines(away)[1])


def test_batch_script_background_steps_are_quoted_and_end_with_the_job(tmp_path):
    spec = BatchSpec(job_name="j", argv=["python", "train.py"], output=str(tmp_path / "train.log"),
                     workdir=str(tmp_path), background_steps=[["--overlap", "--ntasks-per-node=1",
                                                               "/opt/my env/moeconsole", "agent", "/runs/a b"]])
    text = batch_script(spec)
    lines = text.splitlines()
    bg = lines.index("srun --overlap --ntasks-per-node=1 '/opt/my env/moeconsole' agent '/runs/a b' &")
    assert lines[-1].startswith("exec srun --kill-on-bad-exit=1 python train.py") and bg < len(lines) - 1


def test_lint_rules_for_the_engine(tmp_path):
    from moeconsole.runner.recipes.lint import lint_recipe
    r = recipes.load("recipes/tiny-moe-slurm.yaml", ["resume.arg=null", "slurm.time=null"])
    rules = {p["rule"]: p["level"] for p in lint_recipe(r)}
    assert rules.get("slurm_no_resume") == "warning" and rules.get("slurm_no_time") == "info"
    local = recipes.load("recipes/tiny-moe-cpu.yaml", ["slurm.nodes=2"])
    assert "slurm_section_unused" in {p["rule"] for p in lint_recipe(local)}
    assert "slurm_section_unused" not in {p["rule"] for p in lint_recipe(recipes.load("recipes/tiny-moe-cpu.yaml"))}


def test_run_refuses_a_slurm_recipe_where_slurm_is_missing(tmp_path):
    import os
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    env = {**os.environ, "PATH": str(bin_dir), "MOECONSOLE_RUNS_DIR": str(tmp_path / "runs")}
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", "recipes/tiny-moe-slurm.yaml", "--detach"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "sbatch" in out.stderr and "not found on PATH" in out.stderr
    assert not list((tmp_path / "runs").glob("*/state.json")), "nothing started"


def test_a_command_reaped_by_the_runners_waitpid_loop_keeps_its_exit_status():
    # The runner reaps every child itself; Popen alone would then report exit 0 for a failure.
    import os
    from moeconsole.runner.process.slurm import client
    cmd = AsyncCommand(["sh", "-c", "echo refused >&2; exit 3"])
    _, status = os.waitpid(cmd.proc.pid, 0)   # what proctree.reap_children does in the runner
    client.deliver_reaped({cmd.proc.pid: status, 999_999_999: 0})
    res = cmd.wait(10)
    assert (res.returncode, res.err.strip()) == (3, "refused")


def test_runs_ls_and_the_browser_say_pending_for_a_queued_job():
    row = {"status": "running", "stale": False,
           "job": {"job_id": "7", "state": "PENDING", "reason": "Priority", "ended_at": None}}
    # the run screen's word (``snapshot.status_word``): Slurm's state and why
    assert fmt.run_cell("status", row) == "PENDING (Priority)"
    assert fmt.run_cell("status", {**row, "job": {**row["job"], "reason": None}}) == "PENDING"
    assert fmt.run_cell("status", {**row, "job": {**row["job"], "state": "RUNNING"}}) == "RUNNING"
    assert fmt.run_cell("status", {**row, "stale": True}) == "RUNNING? (runner gone)"
    assert fmt.run_cell("status", {"status": "running"}) == "RUNNING"


# What squeue -j says of an id the controller no longer knows (slurm_strerror(ESLURM_INVALID_JOB_ID)):
# the one squeue failure that means the job has left the queue.
GONE = "slurm_load_jobs error: Invalid job id specified"


def _with_errors(canned: _Canned, errors: dict[str, str]):
    """The canned spawn, where a failing command says ``errors[kind]`` on stderr (as Slurm's do)."""
    orig = canned.__call__

    def spawn(argv):
        cmd = orig(argv)
        if cmd.result.returncode != 0 and argv[0] in errors:
            cmd.result = Finished(tuple(argv), cmd.result.returncode, "", errors[argv[0]], 0.01)
        return cmd
    return spawn


def _follow(f: JobFollower, turns: int = 20):
    for _ in range(turns):
        if (st := f.poll()) is not None and st.final:
            return st
    return f.state


def test_follower_asks_the_controller_when_accounting_is_down():
    """slurmdbd cannot reach its database: sacct fails on every call. The controller still knows
    the ended job (MinJobAge): its final word is taken, never a wait for sacct forever."""
    canned = _Canned([("squeue", 0, "5|RUNNING|None|node1\n"), ("squeue", 1, ""), ("sacct", 1, ""),
                      ("scontrol", 0, "JobId=5 JobName=x JobState=CANCELLED Reason=None ExitCode=0:15 NodeList=node1")])
    f = JobFollower("5", interval_s=0.0, spawn=_with_errors(canned, {"squeue": GONE,
        "sacct": "sacct: error: Problem talking to the database: Connection refused"}))
    st = _follow(f)
    assert st is not None and (st.state, st.exit_signal, st.source) == ("CANCELLED", 15, "scontrol")
    assert canned.asked == ["squeue", "squeue", "sacct", "scontrol"]


def test_a_job_neither_listed_nor_known_has_ended_with_its_exit_code_unknown():
    """Accounting down and the job purged from the controller ("Invalid job id specified"): it
    has ended; how is unknown, and the state says so."""
    canned = _Canned([("squeue", 0, "5|RUNNING|None|node1\n"), ("squeue", 1, ""), ("sacct", 1, ""), ("scontrol", 1, "")])
    f = JobFollower("5", interval_s=0.0, spawn=_with_errors(canned, {"squeue": GONE,
        "sacct": "sacct: error: slurmdbd: Connection refused",
        "scontrol": "slurm_load_jobs error: Invalid job id specified"}))
    st = _follow(f)
    assert st is not None and st.final and st.state == "ENDED"
    assert st.reason == "exit code unknown: accounting unavailable" and st.exit_code is None
    assert st.nodes == ("node1",)


def test_a_controller_that_does_not_answer_sends_the_follower_back_to_accounting():
    canned = _Canned([("squeue", 1, ""), ("sacct", 1, ""), ("scontrol", 1, ""), ("sacct", 0, "5|FAILED|1:0|node1\n")])
    f = JobFollower("5", interval_s=0.0, spawn=_with_errors(canned, {"squeue": GONE,
        "sacct": "sacct: error: slurmdbd: Connection refused",
        "scontrol": "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"}))
    st = _follow(f)
    assert st is not None and (st.state, st.exit_code, st.source) == ("FAILED", 1, "sacct")


def test_a_controller_away_keeps_the_queued_state_and_reason_and_squeue_is_asked_again():
    """slurmctld restarting: squeue cannot reach it (or is killed at its timeout). Not "left the
    queue": the state and pending reason stay as read (sacct has no reason column), the error is
    kept for the record, and squeue is asked again until the controller answers."""
    canned = _Canned([("squeue", 0, "5|PENDING|JobHeldAdmin|\n"), ("squeue", 1, ""), ("squeue", None, ""),
                      ("squeue", 0, "5|PENDING|JobHeldAdmin|\n"), ("squeue", 0, "5|RUNNING|None|node1\n"),
                      ("squeue", 0, "5|RUNNING|None|node1\n")])
    f = JobFollower("5", interval_s=0.0, spawn=_with_errors(canned, {
        "squeue": "squeue: error: slurm_load_jobs error: Unable to contact slurm controller (connect failure)"}))
    assert f.poll() is None  # the first squeue asked
    seen = []
    for _ in range(5):  # each poll reads one answer and asks again
        st = f.poll()
        assert st is not None
        seen.append((st.state, st.reason, st.source, f.last_error))
    assert [s[:3] for s in seen] == [("PENDING", "JobHeldAdmin", "squeue")] * 4 + [("RUNNING", None, "squeue")]
    assert "Unable to contact slurm controller" in (seen[1][3] or "")
    assert seen[2][3] and seen[3][3] is None  # killed at its timeout: the same; answered: cleared
    assert canned.asked == ["squeue"] * 6 and not f.left_queue
