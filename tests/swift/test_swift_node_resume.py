"""`NNODES=2` with real ms-swift as two moeconsole runs on one machine, each its own output dir (no shared
storage), and node 0's rank SIGKILLed after a verified save. Node 1's rank fails on gloo's closed connection;
its runner restarts it. Its `checkpoint-N/` hold only `rng_state_1.pth` (transformers' Trainer saves every
process's RNG state, the weights on the world's process zero: trainer.py l.3470-3477, 5.19.0), so it has no
save to resume from while node 0 resumes from its own. Before, node 1's attempt 2 started from step 0 beside
node 0's resumed step (tests/runner/test_runner_node_resume.py measured the same with the demo); now its
runner refuses to start it, in one line naming the step and the share it holds."""
from __future__ import annotations

import os
import signal

import psutil

from tests.swift.swift_helpers import Run, cli, end_by_pid, processes_of, require_swift
from tests.demo.demo_helpers import free_port


def _rank_of(run: Run) -> int | None:
    """The run's training process (ms-swift's sft.py under torchrun, not the agent)."""
    for pid in processes_of(run.path):
        try:
            cmd = " ".join(psutil.Process(pid).cmdline())
        except psutil.Error:
            continue
        if "sft.py" in cmd and "torch.distributed.run" not in cmd and "swift/cli/main" not in cmd:
            return pid
    return None


def test_node_1_restarted_without_node_0s_save_refuses_with_one_line(swift_runs, tiny):
    require_swift()
    from tests.swift.swift_helpers import start_node
    port = free_port()

    def node(rank: int) -> Run:
        return start_node(swift_runs, tiny, rank, port)
    nodes = [node(0)]
    node0 = nodes[0]
    try:
        nodes.append(node(1))
        node1 = nodes[1]
        node0.wait_while_moving(lambda s: any((c.get("step") or 0) >= 4 for c in node0.ok_checkpoints())
                                and (s.get("step") or 0) >= 6, "node 0: a verified save of step 4, step 6")
        rank0 = _rank_of(node0)
        assert rank0 is not None
        os.kill(rank0, signal.SIGKILL)
        st1 = node1.wait_while_moving(lambda s: s.get("status") in ("failed", "paused", "killed"),
                                      "node 1's end after the crash")
        reason = st1.get("pause_reason") or ""
        print("node 1:", reason)
        assert st1["status"] == "failed" and reason.startswith("node 1 cannot resume with node 0: this node wrote its share of the world's save of step "), st1
        assert "rng_state" not in reason and "/checkpoint-" in reason and "it has no save" in reason, reason
        started = [e for e in node1.events("attempt_start") if e.get("attempt") == 2]
        assert started and started[0].get("error") == reason, started
    finally:
        for n in nodes:
            cli(swift_runs, "kill", n.id)
        end_by_pid(processes_of(swift_runs))
