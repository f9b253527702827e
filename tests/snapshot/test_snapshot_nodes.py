"""Per-node telemetry in the snapshot: what `moeconsole agent` writes on each node, as the UI and
--json see it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.rundir.snapshot import NODE_STALE_S, RunWatcher
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path) -> rundir.RunDir:
    run = rundir.create(tmp_path / "runs", "nodes")
    run.write_state({"status": "running", "name": "nodes", "attempt": 1})
    return run


def test_nodes_from_agent_files_with_staleness(tmp_path):
    run = _run(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    gpu = {"available": True, "backend": "nvml", "gpus": [{"index": 0, "mem_used_mib": 1000.0}]}
    jsonio.atomic_write_json(run.telemetry / "node-a.json", {"v": 1, "t": now, "host": {"hostname": "node-a"},
                                                            "gpu": gpu})
    jsonio.atomic_write_json(run.telemetry / "node-b.json", {"v": 1, "t": now - NODE_STALE_S - 5,
                                                            "host": {"hostname": "node-b"}, "gpu": gpu})
    (run.telemetry / "node-c.json").write_text("{half a file")
    snap = RunWatcher(run).poll(with_gpu=False)
    nodes = {n["host"]: n for n in snap.nodes}
    assert set(nodes) == {"node-a", "node-b"}
    assert nodes["node-a"]["stale"] is False and nodes["node-b"]["stale"] is True
    assert nodes["node-a"]["gpu"]["gpus"][0]["mem_used_mib"] == 1000.0
    assert [n["host"] for n in snap.to_dict()["nodes"]] == ["node-b", "node-a"]  # worst (STALE) first


def test_real_agent_process_feeds_the_snapshot(tmp_path):
    run = _run(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    agent = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "agent", str(run.path), "--interval", "0.2"],
                             env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        nodes = until(lambda: RunWatcher(run).poll(with_gpu=False).nodes, timeout=30, what="the agent's node")
        assert nodes and nodes[0]["host"] == rundir.hostname() and nodes[0]["stale"] is False
        assert nodes[0]["gpu"]["available"] is False  # no NVIDIA driver here: a state, not an error
        run.write_state({"status": "succeeded", "name": "nodes", "attempt": 1})
        assert agent.wait(timeout=10) == 0  # the agent ends with the run
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
