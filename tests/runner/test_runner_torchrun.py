"""torchrun under the runner: workers in sessions of their own, one worker's crash classified
from torchrun's ChildFailedError block, the whole tree restarted from a verified checkpoint."""
from __future__ import annotations

import json
import os
import socket

from moeconsole.runner.process.proctree import marked_processes
from tests.runner.conftest import port_holder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(port: int, *faults: str) -> list[str]:
    cmd = ["{python}", "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
           "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps", "10",
           "--save_steps", "4"]
    for f in faults:
        cmd += ["--fault", f]
    return cmd


def test_a_worker_segfault_under_torchrun_is_classified_and_the_tree_restarted(harness):
    port = _free_port()
    run = harness.start(harness.recipe(command=_torchrun(port, "segv@6:rank=1"),
                                       env={"OMP_NUM_THREADS": "1", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "3"},
                                       preflight={"port": port}, heartbeat={"timeout_s": 120}))
    st = run.wait(lambda s: len(s.get("pids") or []) >= 3, timeout=90, what="torchrun and 2 workers tracked")
    workers = [p["pid"] for p in st["pids"] if p["role"] == "child"]
    st = run.wait_status("succeeded", "failed", "paused", timeout=180)
    assert st["status"] == "succeeded", st.get("pause_reason")
    report = run.crash(1)
    assert report["class"] == "segfault"
    assert any("exitcode" in line and "-11" in line for line in report["evidence"]), report["evidence"]
    assert st["attempt"] == 2
    assert os.path.basename(run.events("attempt_start")[1]["resumed_from"]) == "checkpoint-4"
    assert [m["step"] for m in run.metrics() if m["attempt"] == 2] == list(range(5, 11))
    assert not any(os.path.exists(f"/proc/{w}") and open(f"/proc/{w}/stat").read().split()[2] != "Z"
                   for w in workers)
    assert not marked_processes(run.id)


def _launch_flags_before_script(argv: list[str]) -> list[str]:
    """The torchrun flags of an attempt's argv (everything before ``-m moeconsole.runner.demo.train``)."""
    return argv[:argv.index("moeconsole.runner.demo.train") - 1]


def test_a_rendezvous_port_busy_past_the_ceiling_moves_and_torchrun_trains(harness, tmp_path):
    """A condition that can be waited out never becomes a failure: the port stays busy past the
    cooldown ceiling, the runner moves torchrun to a free port (in torchrun's part of the
    command, where it reads it) and the training runs to its end."""
    holder, port = port_holder(tmp_path)
    try:
        cmd = _torchrun(port)
        cmd[cmd.index("--max_steps") + 1] = "4"
        run = harness.start(harness.recipe(command=cmd, env={"OMP_NUM_THREADS": "1",
                                                             "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "3"},
                                           preflight={"port": port}, heartbeat={"timeout_s": 120},
                                           cooldown={"floor_s": 0, "ceiling_s": 1.0}))
        st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=180)
        assert st["status"] == "succeeded", (st.get("pause_reason"), run.events("crash"))
        assert not run.events("crash")
        new = run.events("port_change")[0]["new"]
        assert new != port
        argv = run.events("attempt_start")[0]["argv"]
        flags = _launch_flags_before_script(argv)
        assert flags[flags.index("--master_port") + 1] == str(new)
        assert argv.count("--master_port") == 1
        assert max(m["step"] for m in run.metrics()) == 4
        assert holder.poll() is None, "waiting never kills the holder"
    finally:
        holder.kill()
        holder.wait()


def test_set_args_on_a_torchrun_recipe_changes_torchrun_and_lint_sees_that_command(harness):
    """``--set args.nproc_per_node=1`` changes torchrun's flag where it stands; ``lint`` shows
    and checks the very command the runner runs."""
    port = _free_port()
    recipe = harness.recipe(command=_torchrun(port), env={"OMP_NUM_THREADS": "1",
                                                         "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "3"},
                            preflight={"port": port}, heartbeat={"timeout_s": 120})
    sets = ["--set", "args.nproc_per_node=1", "--set", "args.max_steps=4"]
    run = harness.start(recipe, *sets)
    st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=180)
    assert st["status"] == "succeeded", (st.get("pause_reason"), run.events("crash"))
    argv = run.events("attempt_start")[0]["argv"]
    lint = harness.cli("lint", str(recipe), *sets, "--json")
    assert lint.returncode == 0, lint.stdout
    linted = json.loads(lint.stdout)["commands"]["first"]
    assert [a.replace(str(run.path), "{run_dir}") for a in argv] == linted
    flags = _launch_flags_before_script(argv)
    assert flags[flags.index("--nproc_per_node") + 1] == "1" and argv.count("--nproc_per_node") == 1
    assert len([p for p in st.get("pids") or [] if p.get("role") == "child"]) <= 1


def test_lint_refuses_a_torchrun_flag_after_the_script(harness, tmp_path):
    recipe = harness.recipe(command=["{python}", "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m",
                                     "moeconsole.runner.demo.train", "--master_port", "29517"])
    out = harness.cli("lint", str(recipe))
    assert out.returncode == 1, out.stdout
    assert "error   launcher_flag_after_script: --master_port is a torchrun flag" in out.stdout


def test_node_1_of_two_on_one_machine_joins_the_rendezvous_node_0_holds(harness):
    """Two torchrun "nodes" on one machine (`--nnodes 2`, node ranks 0 and 1, one master port), as
    a user tries a two-node recipe before the cluster: node 0's torchrun binds the master port for
    its rendezvous store, and node 1's runner saw that port busy, waited in its pre-flight, then at
    the cooldown ceiling moved node 1 to a port nobody listens on. Node 1 never joined, and node 0
    failed 15 minutes later ("Timed out after 901 seconds waiting for clients. 1/2 clients joined").
    A node that joins another's rendezvous does not wait for the port: both train to the end. Node 1
    saves nothing (the world's process zero, on node 0, writes the saves): it had ended UNSAVED with a
    critical alert after every good run; it succeeds."""
    port = _free_port()

    def node(rank: int) -> list[str]:
        cmd = _torchrun(port)
        at = cmd.index("--nproc_per_node")
        cmd[at + 1] = "1"
        cmd[at:at] = ["--nnodes", "2", "--node_rank", str(rank), "--master_addr", "127.0.0.1"]
        cmd[cmd.index("--max_steps") + 1] = "4"
        return cmd

    with harness.torchrun_world(node, port) as nodes:
        node0, node1 = nodes
        for run in nodes:
            st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=300)
            assert st["status"] == "succeeded", (run.id, st.get("status"), run.events("crash"))
        assert not node1.events("port_change") and not node1.events("alert"), node1.events("alert")
        assert not [e for e in node1.events("cooldown") if "port" in json.dumps(e)]
        assert max(m["step"] for m in node0.metrics()) == 4
