"""The pure parts of the multi-node path, without a cluster: the node step's rendezvous
environment, the agent's view of its node's ranks, sinfo's node states, and how a NODE_FAIL
and a rank's death on another node are named."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

from moeconsole.runner.core.crash import classify, classify_job_state
from moeconsole.runner.process.slurm import nodestep
from moeconsole.runner.process.slurm.settings import SlurmSettings
from moeconsole.runner.process.slurm.text import BatchSpec, batch_script, nodes_out_of_service, parse_sinfo_nodes
from moeconsole.runner.telemetry.ranks import node_view


def test_rendezvous_env_points_torchrun_at_the_first_node_and_keeps_the_recipes_values():
    environ = {"SLURM_JOB_NODELIST": "gpu[07-08]", "SLURM_NNODES": "2", "SLURM_NODEID": "1",
               "SLURM_JOB_ID": "42", "PET_RDZV_ID": "mine"}
    assert nodestep.first_node(environ) == "gpu07"
    env = nodestep.rendezvous_env(environ, "gpu07", 29500)
    assert env["PET_RDZV_ENDPOINT"] == "gpu07:29500" and env["MASTER_ADDR"] == "gpu07"
    assert env["PET_NNODES"] == "2" and env["PET_RDZV_BACKEND"] == "c10d" and env["PET_RDZV_ID"] == "mine"
    assert env["TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"] == "[rank${rank}]:"


def test_the_first_node_waits_for_a_held_port_then_takes_it(capsys):
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    threading.Timer(0.6, holder.close).start()
    started = time.monotonic()
    assert nodestep.wait_for_port(port, 30, "node1") == port
    assert time.monotonic() - started >= 0.5
    out = capsys.readouterr().out
    assert f"moeconsole: node1: rendezvous port {port} is in use (held by pid" in out
    assert f"rendezvous port {port} is free after" in out


def test_a_port_held_past_the_wait_is_replaced_by_a_free_one(capsys):
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        other = nodestep.wait_for_port(port, 0.3, "node1")
    assert other != port
    assert f"still in use after 0s; using port {other} instead" in capsys.readouterr().out


def test_the_other_nodes_start_from_the_published_endpoint(tmp_path):
    cmd = [sys.executable, "-m", "moeconsole.runner.process.slurm.nodestep", "--run-dir", str(tmp_path), "--attempt", "3",
           "--port", "29999", "--wait-s", "30", "--", sys.executable, "-c",
           "import os; print(os.environ['PET_RDZV_ENDPOINT'], os.environ['MASTER_PORT'])"]
    env = {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_NODEID": "1", "SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n2",
           "PATH": "/usr/bin:/bin"}
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "attempt-3.rdzv.json").write_text('{"v": 1, "job_id": "6", "host": "n1", "port": 1}')
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
    # It reads the record for a while and says it still waits: an older job's endpoint is not ours
    # (taking it, the command would have printed n1:1 first).
    assert "n2: waiting for n1 to open the rendezvous" in proc.stdout.readline()
    (tmp_path / "jobs" / "attempt-3.rdzv.json").write_text('{"v": 1, "job_id": "7", "host": "n1", "port": 31000}')
    out, _ = proc.communicate(timeout=30)
    assert out.split() == ["n1:31000", "31000"]


def test_the_batch_script_never_lets_slurm_requeue_and_wraps_multi_node_steps():
    text = batch_script(BatchSpec(job_name="j", argv=["python", "train.py"], output="/r/train.log", workdir="/r"))
    assert "#SBATCH --no-requeue" in text
    s = SlurmSettings.from_recipe({"nodes": 2, "rendezvous_port": 29500, "rendezvous_wait_s": 5})
    assert s.rendezvous_port == 29500 and s.rendezvous_wait_s == 5.0
    for bad in ({"rendezvous_port": 80}, {"rendezvous_port": "x"}, {"rendezvous_wait_s": -1},
                {"sbatch": ["--requeue"]}):
        try:
            SlurmSettings.from_recipe(bad)
        except ValueError as exc:
            assert str(exc).startswith("slurm.")
        else:
            raise AssertionError(bad)


def test_an_agent_reports_only_its_own_nodes_ranks():
    procs = [(10, "python", {"MOECONSOLE_RUN_ID": "r", "RANK": "1", "LOCAL_RANK": "0", "SLURMD_NODENAME": "n2"}),
             (11, "python", {"MOECONSOLE_RUN_ID": "r", "RANK": "0", "LOCAL_RANK": "0", "SLURMD_NODENAME": "n1"}),
             (12, "torchrun", {"MOECONSOLE_RUN_ID": "r", "SLURMD_NODENAME": "n2"}),
             (13, "python", {"MOECONSOLE_RUN_ID": "other", "RANK": "5", "SLURMD_NODENAME": "n2"}),
             (14, "moeconsole", {"MOECONSOLE_RUN_ID": "r", "SLURMD_NODENAME": "n2"})]
    view = node_view(procs, "r", "n2", skip=[14])
    assert view["processes"] == 2 and [(r["pid"], r["rank"], r["local_rank"]) for r in view["ranks"]] == [(10, 1, 0)]
    assert [r["rank"] for r in node_view(procs, "r", None)["ranks"]] == [0, 1]


def test_sinfo_names_the_nodes_out_of_service():
    out = "node1|mixed|none\nnode2|down*|Not responding\nnode3|drained|maintenance\nnode4|idle*|none\n"
    assert nodes_out_of_service(parse_sinfo_nodes(out)) == (
        "node2: down* (Not responding)", "node3: drained (maintenance)", "node4: idle*")


def test_node_fail_names_the_lost_node_from_slurm_or_from_sruns_line():
    v = classify_job_state("NODE_FAIL", [], ("node2: down* (Not responding)",))
    assert v is not None and v.cls == "node_fail" and v.summary.startswith("node2 failed: ")
    assert "Slurm node node2: down* (Not responding)" in v.evidence
    v = classify_job_state("NODE_FAIL", ["srun: error: Node failure on node5", "x"])
    assert v is not None and v.summary.startswith("node5 failed: ")
    v = classify_job_state("NODE_FAIL", [])
    assert v is not None and v.summary.startswith("a node of the job failed")


def test_a_rank_killed_on_another_node_is_named_with_its_node():
    # torchrun's report on the node where the worker died (text as torch 2.13 prints it here)
    tail = ["Root Cause (first observed failure):", "[0]:", "  time      : 2026-11-26_03:37:37",
            "  host      : node2", "  rank      : 1 (local_rank: 0)", "  exitcode  : -9 (pid: 22711)  (SIGKILL)",
            "  error_file: <N/A>", "  traceback : Signal 9 (SIGKILL) received by PID 22711",
            "======================================================",
            "srun: error: node2: task 1: Exited with exit code 1"]
    v = classify(1, tail, steps_seen=80)
    assert v.cls == "killed_oom" and "(rank 1 on node2, pid 22711)" in v.summary


def test_a_port_holder_whose_name_holds_a_newline_and_esc_is_named_on_one_printable_line(capsys):
    """The process holding the rendezvous port names itself (``/proc/self/comm``, prctl): a newline
    or ESC in that name was written raw into train.log (a line split in two, the terminal driven)."""
    holder = subprocess.Popen([sys.executable, "-c",
                               "import socket, sys, time\n"
                               "open('/proc/self/comm', 'w').write('ev\\nil\\x1b[2J')\n"
                               "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
                               "print(s.getsockname()[1], flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(holder.stdout.readline())
        nodestep.wait_for_port(port, 0.3, "node1")
        out = capsys.readouterr().out
        said = next(line for line in out.splitlines() if f"rendezvous port {port} is in use" in line)
        assert f"(held by pid {holder.pid} (ev\\nil\\x1b[2J))" in said, out
        assert "\x1b" not in out
    finally:
        holder.kill()
        holder.wait(60)
