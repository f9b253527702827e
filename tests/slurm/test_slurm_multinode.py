"""The Slurm engine across nodes, on a real multi-node cluster on this machine: each node a
slurmd in a network namespace of its own (``scripts/slurm-local.sh start --nodes 3``; .ci/run
starts it). The shipped recipe ``recipes/tiny-moe-slurm-2node.yaml`` trains the demo with
torchrun across 2 nodes (gloo, c10d rendezvous on the first node), the runner and the CLI are
the real ones, and what is left on a node is checked inside that node's namespace.

Skipped, with the reason, where no multi-node cluster answers (no Slurm, a one-node cluster,
not root: the nodes' namespaces need root to be looked into)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from moeconsole.runner.process import proctree
from moeconsole.runner.rundir import rundir
from tests.console.test_console_nodes import panel_view
from tests.runner.conftest import REPO, Harness, Run
from tests.slurm.test_slurm_cluster import _cluster_up
from tests.waiting import reached, until

SCRIPT = REPO / "scripts" / "slurm-local.sh"
RECIPE = REPO / "recipes" / "tiny-moe-slurm-2node.yaml"


def _script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


def _cluster_nodes() -> list[str]:
    if os.geteuid() != 0:
        return []
    out = _script("nodes", timeout=30)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def _why_not() -> str | None:
    why = _cluster_up()
    if why:
        return why
    if os.geteuid() != 0:
        return "the nodes' network namespaces need root"
    nodes = _cluster_nodes()
    if len(nodes) < 2:
        return (f"the running cluster has {len(nodes) or 'no'} namespaced nodes: "
                "scripts/slurm-local.sh stop; scripts/slurm-local.sh start --nodes 3")
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))

_PORTS = iter(range(29531, 29600))


def _sinfo_state(node: str) -> str:
    return subprocess.run(["sinfo", "-h", "-n", node, "-o", "%t"], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def _wait(cond, timeout: float, what: str):
    return until(cond, timeout, what=what, interval=0.1)


def _environ(pid: int) -> dict[str, str]:
    try:
        block = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.decode(errors="replace").partition("=")[::2] for item in block.split(b"\0") if b"=" in item)


def _on_node(node: str) -> list[tuple[int, str, dict[str, str]]]:
    """Every process inside the node's network namespace: (pid, command name, environment)."""
    out = []
    for line in _script("pids", node, timeout=30).stdout.split():
        pid = int(line)
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        out.append((pid, comm, _environ(pid)))
    return out


def _of_run(node: str, run_id: str) -> list[tuple[int, str, dict[str, str]]]:
    return [p for p in _on_node(node) if p[2].get("MOECONSOLE_RUN_ID") == run_id]


def _squeue(job: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True,
                          timeout=60).stdout.strip()


@pytest.fixture
def cluster(tmp_path, runs_dir):
    """The harness on the multi-node cluster; afterwards every job of these runs is cancelled and
    every node the test took out of service is back."""
    h = Harness(tmp_path, runs_dir)
    h.nodes = _cluster_nodes()  # type: ignore[attr-defined]
    h.lost = []  # type: ignore[attr-defined]
    h.drained = []  # type: ignore[attr-defined]
    try:
        yield h
    finally:
        for run in runs_dir.iterdir():
            pid = (Run(run).state().get("runner") or {}).get("pid")
            if isinstance(pid, int) and proctree.start_time(pid):
                os.kill(pid, signal.SIGTERM)  # the runner first: it must not resubmit
        ids = [json.loads(p.read_text()).get("job_id") for p in runs_dir.glob("*/jobs/attempt-*.json")]
        ids = [i for i in ids if i]
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True, timeout=60)
        for node in h.lost:  # type: ignore[attr-defined]
            _script("restore", node, timeout=180)
        for node in h.drained:  # type: ignore[attr-defined]
            subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], capture_output=True, timeout=60)
        reached(lambda: not ids or not any(_squeue(j) for j in ids), timeout=120, interval=0.2)


def _recipe(h: Harness, *, steps: int, save: int = 10, delay: float = 0.1, port: int | None = None,
            **slurm) -> Path:
    """The shipped 2-node recipe, faster: fewer steps, quick polls and backoffs."""
    r = yaml.safe_load(RECIPE.read_text())
    cmd = list(r["command"])
    for flag, value in (("--max_steps", steps), ("--save_steps", save), ("--step_delay", delay)):
        cmd[cmd.index(flag) + 1] = str(value)
    r["command"] = cmd
    r["slurm"].update(poll_s=0.2, rendezvous_port=port or next(_PORTS), **slurm)
    r["restart"].update(backoff_initial_s=0.2, backoff_max_s=1)
    r["cooldown"].update(floor_s=0, ceiling_s=5, poll_s=0.1)
    r["checkpoints"]["settle_s"] = 0.2
    h._n += 1
    path = h.tmp / f"recipe{h._n}.yaml"
    path.write_text(yaml.safe_dump(r))
    return path


def _verified(run: Run) -> set[str]:
    """The checkpoints the runner verified (``checkpoint`` events with ok)."""
    return {e["path"] for e in run.events("checkpoint") if e.get("ok")}


def _job(run: Run) -> dict:
    return run.state().get("job") or {}


def _ranks_by_node(run: Run) -> dict[str, list[int]]:
    out = {}
    for f in (run.path / "telemetry").glob("*.json"):
        doc = json.loads(f.read_text() or "{}")
        out[doc.get("host", {}).get("hostname") or f.stem] = sorted(r["rank"] for r in doc.get("ranks") or [])
    return out


def _running_on_two_nodes(run: Run, steps: int = 5) -> list[str]:
    """Wait until the job runs on 2 nodes, each agent reports one rank, and training has steps."""
    def ready():
        st = run.state()
        assert st.get("status") not in ("failed", "succeeded", "killed"), st
        nodes = _job(run).get("nodes") or []
        ranks = _ranks_by_node(run)
        if len(nodes) == 2 and (st.get("step") or 0) >= steps and all(ranks.get(n) for n in nodes):
            return nodes
        return None
    return _wait(ready, 240, "the job training on 2 nodes with an agent on each")


def test_the_job_trains_on_both_nodes_and_the_console_shows_each_with_its_ranks_and_heartbeat(cluster):
    run = cluster.start(_recipe(cluster, steps=60, delay=0.15))
    nodes = _running_on_two_nodes(run)
    ranks = _ranks_by_node(run)
    assert sorted(r for n in nodes for r in ranks[n]) == [0, 1], ranks  # one worker per node
    for node in nodes:  # each rank really runs in its node's namespace, under that node's name
        (worker,) = [p for p in _of_run(node, run.id) if p[2].get("RANK") is not None]
        assert worker[2]["SLURMD_NODENAME"] == node and int(worker[2]["RANK"]) == ranks[node][0]
    snap = json.loads(cluster.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    by_host = {n["host"]: n for n in snap["nodes"]}
    assert set(by_host) == set(nodes), snap["nodes"]
    for node in nodes:
        assert not by_host[node]["stale"] and by_host[node]["age_s"] < 10
        assert [r["rank"] for r in by_host[node]["ranks"]] == ranks[node]
    view = panel_view(cluster.runs_dir, rundir.RunDir(run.path), (120, 40), None)
    for node in nodes:
        (heading,) = [line for line in view["plain"] if line.startswith(node)]
        assert f"rank {ranks[node][0]}" in heading and "agent " in heading and "s ago" in heading, heading
        assert "STALE" not in heading
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    log = (run.path / "train.log").read_text()
    assert "[rank1]:" in log and "[rank0]:" in log, "every worker's lines carry its rank"
    assert max(m["step"] for m in run.metrics()) == 60
    kept = json.loads((run.path / "ranks.json").read_text())["ranks"]
    assert kept["0"]["step"] == 60 and kept["0"]["step_time_s"] > 0, "rank 0's own lines timed its steps"
    (rec,) = [json.loads(p.read_text()) for p in (run.path / "jobs").glob("attempt-*[0-9].json")]
    assert rec["state"] == "COMPLETED" and sorted(rec["nodes"]) == sorted(nodes)


def test_a_clean_kill_leaves_nothing_on_either_node(cluster):
    run = cluster.start(_recipe(cluster, steps=100000, delay=0.1))
    nodes = _running_on_two_nodes(run)
    for node in nodes:
        assert len(_of_run(node, run.id)) >= 3, "launcher, worker and agent run on each node"
    out = cluster.cli("kill", run.id, timeout=240)
    assert out.returncode == 0, out.stderr
    assert run.state()["status"] == "killed"
    # Slurm ended every process of the job on both nodes: looked for inside each namespace, by
    # the run's marker and by what is left at all (the node's slurmd only, once its
    # slurmstepd are done).
    for node in nodes:
        left = _wait(lambda: not _of_run(node, run.id) or None, 30, f"the run's processes gone from {node}") \
            if _of_run(node, run.id) else True
        assert left
        _wait(lambda: {c for _, c, _ in _on_node(node)} <= {"slurmd"} or None, 60,
              f"nothing but slurmd on {node}: {[(p, c) for p, c, _ in _on_node(node)]}")
    assert not proctree.marked_processes(run.id)


def test_a_rank_killed_on_the_second_node_is_named_and_the_run_resumes_from_the_verified_checkpoint(cluster):
    run = cluster.start(_recipe(cluster, steps=150, save=10, delay=0.1))
    nodes = _running_on_two_nodes(run, steps=12)
    _wait(lambda: _verified(run), 120, "a verified checkpoint")
    second = nodes[1]
    (victim,) = [p for p in _of_run(second, run.id) if p[2].get("RANK") is not None]
    rank = int(victim[2]["RANK"])
    os.kill(victim[0], signal.SIGKILL)  # a rank dies on node 2 (as the OOM killer would end it)
    st = run.wait(lambda s: s.get("attempt") == 2, timeout=180, what="attempt 2")
    crash = run.crash(1)
    assert crash["class"] == "killed_oom", crash
    assert f"rank {rank} on {second}" in crash["summary"] and f"pid {victim[0]}" in crash["summary"], crash
    resumed = run.events("attempt_start")[1]["resumed_from"]
    assert resumed in _verified(run), (resumed, _verified(run))
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    jobs = sorted((run.path / "jobs").glob("attempt-*[0-9].json"))
    assert [json.loads(p.read_text())["state"] for p in jobs] == ["FAILED", "COMPLETED"]


def test_a_lost_node_is_node_fail_and_the_run_waits_then_resubmits_to_the_nodes_left(cluster):
    if len(cluster.nodes) < 3:
        pytest.skip("needs a 3-node cluster: scripts/slurm-local.sh start --nodes 3")
    first, second, third = cluster.nodes[:3]
    # Only two nodes usable at first: the job lands on them.
    subprocess.run(["scontrol", "update", f"nodename={third}", "state=drain", "reason=moeconsole-test"],
                   check=True, capture_output=True, timeout=60)
    cluster.drained.append(third)
    run = cluster.start(_recipe(cluster, steps=400, save=10, delay=0.1))
    nodes = _running_on_two_nodes(run, steps=12)
    assert sorted(nodes) == sorted([first, second])
    _wait(lambda: _verified(run), 120, "a verified checkpoint")
    lost = nodes[1]
    cluster.lost.append(lost)
    assert _script("lose", lost).returncode == 0  # link cut, slurmd stopped, its processes gone
    run.wait(lambda s: s.get("attempt") == 2, timeout=240, what="NODE_FAIL judged and the job resubmitted")
    crash = run.crash(1)
    assert crash["class"] == "node_fail" and crash["summary"].startswith(f"{lost} failed"), crash
    rec1 = json.loads((run.path / "jobs" / "attempt-1.json").read_text())
    assert rec1["state"] == "NODE_FAIL" and rec1["failed_nodes"][0].startswith(f"{lost}: down"), rec1
    # One node left for a job that needs two: it waits, and says why, in --json and in the UI.
    st = run.wait(lambda s: (s.get("job") or {}).get("state") == "PENDING" and (s.get("job") or {}).get("reason"),
                  timeout=120, what="the new job pending with Slurm's reason")
    snap = json.loads(cluster.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    word = snap["run"]["status_word"]
    # squeue's words: "ReqNodeNotAvail, UnavailableNodes:node[2-3]" (or, on other versions, that
    # the nodes required are DOWN or DRAINED)
    assert word.startswith("PENDING (") and ("ReqNodeNotAvail" in word or "DOWN" in word), word
    assert st["status"] == "running" and snap["run"]["eta_s"] is None
    # A node comes back: the job runs on the nodes that are up, from the verified checkpoint.
    subprocess.run(["scontrol", "update", f"nodename={third}", "state=resume"], check=True, capture_output=True,
                   timeout=60)
    cluster.drained.remove(third)
    st = run.wait(lambda s: (s.get("job") or {}).get("state") == "RUNNING" and (s.get("step") or 0) > 0,
                  timeout=240, what="attempt 2 running")
    assert sorted(st["job"]["nodes"]) == sorted([first, third]) and lost not in st["job"]["nodes"]
    assert run.events("attempt_start")[1]["resumed_from"], "resubmitted from the verified checkpoint"
    assert cluster.cli("kill", run.id, timeout=240).returncode == 0


def test_a_rendezvous_port_held_on_the_first_node_is_waited_out(cluster):
    port = next(_PORTS)
    first, second = cluster.nodes[:2]
    holder = subprocess.Popen(
        [str(SCRIPT), "exec", first, "python3", "-c",
         "import socket, sys, time\n"
         f"s = socket.socket(); s.bind(('0.0.0.0', {port})); s.listen(1)\n"
         "print('holding', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        run = cluster.start(_recipe(cluster, steps=20, delay=0.05, port=port,
                                    sbatch=[f"--nodelist={first},{second}"]))
        log = run.path / "train.log"
        said = f"{first}: rendezvous port {port} is in use (held by pid"
        _wait(lambda: said in (log.read_text() if log.exists() else ""), 180, "the first node waiting for its port")
        st = run.wait(lambda s: (s.get("job") or {}).get("state") == "RUNNING", timeout=60,
                      what="the runner seeing the job running (squeue lags the job's own output)")
        assert not st.get("step") and st["status"] == "running", "waiting: no step yet, and no crash"
        with socket.socket() as probe:  # the holder really is in the first node's namespace, not here
            probe.bind(("0.0.0.0", port))
    finally:
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait(timeout=60)
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    text = log.read_text()
    assert f"{first}: rendezvous port {port} is free after" in text
    assert len(run.events("attempt_start")) == 1, "waited out, not crashed and restarted"
    pub = json.loads((run.path / "jobs" / "attempt-1.rdzv.json").read_text())
    assert pub["host"] == first and pub["port"] == port
