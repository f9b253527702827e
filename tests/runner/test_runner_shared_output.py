"""Two torchrun nodes under two runners over ONE output dir (shared storage: NFS or Lustre, where every node's
``output_dir`` is the same path). transformers' Trainer (and the demo) has the world's process 0 write each save
and every other process only its ``rng_state_{process_index}.pth`` into the same ``checkpoint-N/`` (trainer.py
``_save_rng_state`` l.3470-3477, 5.19.0). Measured before (round 19): each node's runner stamped the shared saves
with its own recipe hash (it covered the node rank), so after node 0's rank segfaulted at step 5 node 0 resumed
from ``checkpoint-4`` while node 1 took node 0's stamp for another recipe's and started from step 0 beside it,
rewriting its shares of ``checkpoint-2``/``-4`` and restarting again and again."""
from __future__ import annotations

from tests.runner.test_runner_node_resume import _free_port

MAX_STEPS = 8


def _node(port: int, rank: int, out: str) -> list[str]:
    return ["{python}", "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", str(rank),
            "--master_addr", "127.0.0.1", "--master_port", str(port), "--nproc_per_node", "1",
            "-m", "moeconsole.runner.demo.train", "--output_dir", out,
            "--max_steps", str(MAX_STEPS), "--save_steps", "2", "--fault", "segv@5"]


def test_two_nodes_over_one_output_dir_resume_from_one_save_and_both_succeed(harness, tmp_path):
    port = _free_port()
    out = tmp_path / "shared" / "out"

    def start_node(command: list[str], port: int):
        return harness.start(harness.recipe(
            command=command, env={"OMP_NUM_THREADS": "1", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "3"},
            preflight={"port": port}, heartbeat={"timeout_s": 300}, cooldown={"floor_s": 0, "ceiling_s": 1.0},
            checkpoints={"dir": str(out)}))

    harness.start_node = start_node
    with harness.torchrun_world(lambda r: _node(port, r, str(out)), port) as nodes:
        for run in nodes:
            st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=400)
            assert st["status"] == "succeeded", (run.id, st.get("status"), st.get("pause_reason"))
        for run in nodes:
            resumed = [e.get("resumed_from") for e in run.events("attempt_start") if e.get("attempt", 0) > 1]
            assert resumed and all(r and r.endswith("checkpoint-4") for r in resumed), (run.id, resumed)
            assert not run.events("drift"), run.events("drift")
        # every save holds both nodes' parts, and none was rewritten by a node training from step 0
        for step in (2, 4, 6, 8):
            assert {"adapter_model.safetensors", "rng_state_1.pth"} <= {p.name for p in (out / f"checkpoint-{step}").iterdir()}
        assert max(m["step"] for m in nodes[0].metrics()) == MAX_STEPS
        steps1 = [m["step"] for m in nodes[1].metrics() if m.get("attempt") == 2 and "step" in m]
        assert not steps1 or min(steps1) > 4, steps1
