"""Two torchrun nodes under two runners over ONE output dir (shared storage: NFS or Lustre, where every node's
``output_dir`` is the same path). transformers' Trainer (and the demo) has the world's process 0 write each save
and every other process only its ``rng_state_{process_index}.pth`` into the same ``checkpoint-N/`` (trainer.py
``_save_rng_state`` l.3470-3477, 5.19.0). Measured before (round 19): each node's runner stamped the shared saves
with its own recipe hash (it covered the node rank), so after node 0's rank segfaulted at step 5 node 0 resumed
from ``checkpoint-4`` while node 1 took node 0's stamp for another recipe's and started from step 0 beside it,
rewriting its shares of ``checkpoint-2``/``-4`` and restarting again and again."""
from __future__ import annotations

from tests.runner.test_runner_node_resume import MAX_STEPS, _free_port, _node, lone_node_1   # one two-node world


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


def test_node_1_over_a_dir_node_0_writes_is_not_refused_for_a_save_node_0_did_not_finish(harness, tmp_path):
    """Node 0 died while saving step 6: transformers wrote node 1's ``rng_state_1.pth`` into ``checkpoint-6/`` with
    no barrier before process 0's weights (trainer.py l.3335-3361, 3470), so on the shared dir that save holds node
    1's share alone. Before: node 1's runner took it for its own disk's trace of a save node 0 holds and refused
    ("node 1 cannot resume with node 0 ... copy node 0's checkpoint-6"), though node 0 resumes from checkpoint-4
    in the same dir. Now the dir proves node 0 writes there (its process 0's ``logging.jsonl``, written since the
    run started: ``discover.world_zero_writes_here``) and node 1 resumes from checkpoint-4, the save both parts are
    in. (The files' times are set after the run's start, as they are when the world wrote them during the run.)"""
    import os
    import time

    from tests.checkpoints.conftest import write_demo_checkpoint

    out = tmp_path / "shared" / "out"
    four = write_demo_checkpoint(out / "checkpoint-4", 4)
    (four / "rng_state_1.pth").write_bytes(b"x" * 100)
    six = out / "checkpoint-6"
    six.mkdir()
    (six / "rng_state_1.pth").write_bytes(b"x" * 100)
    (out / "logging.jsonl").write_text('{"loss": 1.0, "global_step/max_steps": "4/8"}\n')
    later = time.time() + 3600           # written during the run (after its start), as the world wrote them
    for p in [*four.iterdir(), four, six / "rng_state_1.pth", six, out / "logging.jsonl"]:
        os.utime(p, (later, later))
    with lone_node_1(harness, out) as (run, first, st):
        assert not first.get("error"), first
        assert (first.get("resumed_from") or "").endswith("checkpoint-4"), first
        assert st.get("status") not in ("failed", "paused"), (st.get("status"), st.get("pause_reason"))
