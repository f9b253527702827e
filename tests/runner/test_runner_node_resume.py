"""Two torchrun nodes, each under its own runner with its own output dir (no shared storage), after a
crash. transformers' Trainer (and the demo) has the world's process 0 write a save, and every other node
only its own share, ``checkpoint-N/rng_state_{process_index}.pth`` (transformers 5.19.0 trainer.py
``_save_rng_state`` l.3470-3477). Node 0's runner resumes from its save of step N; node 1's found no save
of its own and started from step 0 beside it: a world whose nodes train different steps (measured: node 0
logged steps 5-8, its max_steps, while node 1 trained steps 1-4, no error said). Node 1's runner
now refuses that start in one line naming the save it lacks, and once the save is there both nodes resume
from the same step and train to the end."""
from __future__ import annotations

import contextlib
import json
import shutil
import socket

from tests.waiting import until


MAX_STEPS = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node(port: int, rank: int, out: str = "{run_dir}/output", fault: str | None = "segv@5") -> list[str]:
    """Node ``rank`` of a two-node torchrun world of the demo trainer on loopback (one process a node), its
    saves under ``out`` (each run's own dir by default), rank 0 segfaulting at step 5 unless ``fault`` is None."""
    return ["{python}", "-m", "torch.distributed.run", "--nnodes", "2", "--node_rank", str(rank),
            "--master_addr", "127.0.0.1", "--master_port", str(port), "--nproc_per_node", "1",
            "-m", "moeconsole.runner.demo.train", "--output_dir", out,
            "--max_steps", str(MAX_STEPS), "--save_steps", "2", *(["--fault", fault] if fault else [])]


@contextlib.contextmanager
def lone_node_1(harness, out):
    """Node 1 of the two-node world (``_node``, no fault) started alone by its runner over the output dir ``out``,
    once its first attempt started: (the run, that ``attempt_start`` event, the state then); killed at the end
    (its torchrun waits for a node 0 that never comes)."""
    port = _free_port()
    run = harness.start(harness.recipe(command=_node(port, 1, str(out), fault=None), checkpoints={"dir": str(out)},
                                       preflight={"port": port}, heartbeat={"timeout_s": 300},
                                       env={"OMP_NUM_THREADS": "1"}))
    try:
        until(lambda: run.events("attempt_start"), timeout=120, what="attempt 1's start")
        yield run, run.events("attempt_start")[0], run.state()
    finally:
        harness.cli("kill", run.id)


def test_node_1_without_node_0s_save_refuses_then_both_resume_from_the_same_step(harness):
    port = _free_port()

    with harness.torchrun_world(lambda r: _node(port, r), port) as nodes:
        node0, node1 = nodes
        # node 0 crashes at step 5 (its rank 0 segfaults), node 1's rank loses its peer: both attempts end
        node1.wait(lambda s: (s.get("attempt") or 0) >= 2 or s.get("status") in ("failed", "paused", "succeeded"),
                   timeout=300, what="node 1's second attempt, or its end")
        st1 = node1.wait_status("failed", "paused", "succeeded", "unsaved", timeout=300)
        share = node1.path / "output" / "checkpoint-4"
        assert (share / "rng_state_1.pth").is_file(), sorted(p.name for p in (node1.path / "output").iterdir())
        assert st1["status"] == "failed", (st1.get("status"), st1.get("pause_reason"), node1.events("attempt_start"))
        reason = st1.get("pause_reason") or ""
        print("node 1:", reason)
        assert "step 4" in reason and str(share) in reason, reason
        # the refusal is its one line: no command ran for attempt 2 on node 1
        started2 = [e for e in node1.events("attempt_start") if e.get("attempt") == 2]
        assert started2 and started2[0].get("error"), started2
        assert not any(m.get("attempt") == 2 for m in node1.metrics())
        # node 0's save of step 4 put where node 1 reads its saves: node 1 resumes from it, beside node 0
        for f in (node0.path / "output" / "checkpoint-4").iterdir():
            if f.is_file() and f.name != "moeconsole.json":
                shutil.copy2(f, share / f.name)
        out = harness.cli("restart", node1.id)
        assert out.returncode == 0, (out.stdout, out.stderr)
        for run in nodes:
            st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=300)
            assert st["status"] == "succeeded", (run.id, st.get("status"), st.get("pause_reason"))
        for run in nodes:
            resumed = [e.get("resumed_from") for e in run.events("attempt_start") if e.get("resumed_from")]
            assert resumed and resumed[-1].endswith("checkpoint-4"), (run.id, resumed)
        assert max(m["step"] for m in node0.metrics()) == MAX_STEPS
        assert json.loads((node0.path / "state.json").read_text())["status"] == "succeeded"
