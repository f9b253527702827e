"""Review R45 of the several-nodes round: the findings that a runner on loopback shows."""
from __future__ import annotations

import os
import socket

from tests.waiting import until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_new_node_1_run_is_not_refused_over_an_earlier_runs_leftover_share(harness, tmp_path):
    """D2: node 1's reused output dir holds only ``checkpoint-500/rng_state_1.pth`` from last week's run
    (transformers never rotates saves on a node of rank > 0). Before: attempt 1 was refused ("the world saved
    step 500 ... copy node 0's checkpoint-500"), the run failed before anything ran. Now attempt 1 starts."""
    out = tmp_path / "node1-scratch" / "out"
    old = out / "checkpoint-500"
    old.mkdir(parents=True)
    (old / "rng_state_1.pth").write_bytes(b"x" * 100)
    week_ago = (old / "rng_state_1.pth").stat().st_mtime - 7 * 86400
    os.utime(old / "rng_state_1.pth", (week_ago, week_ago))
    os.utime(old, (week_ago, week_ago))
    port = _free_port()
    cmd = ["{python}", "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", "1",
           "--master_addr", "127.0.0.1", "--master_port", str(port), "--nproc_per_node", "1",
           "-m", "moeconsole.runner.demo.train", "--output_dir", str(out), "--max_steps", "8", "--save_steps", "2"]
    run = harness.start(harness.recipe(command=cmd, checkpoints={"dir": str(out)}, preflight={"port": port},
                                       heartbeat={"timeout_s": 300}, env={"OMP_NUM_THREADS": "1"}))
    try:
        until(lambda: run.events("attempt_start"), timeout=120, what="attempt 1's start")
        first = run.events("attempt_start")[0]
        assert first.get("attempt") == 1 and not first.get("error"), first
        st = run.state()
        assert st.get("status") not in ("failed", "paused"), (st.get("status"), st.get("pause_reason"))
    finally:
        harness.cli("kill", run.id)
