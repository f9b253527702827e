"""torchrun under the runner: workers in sessions of their own, one worker's crash classified
from torchrun's ChildFailedError block, the whole tree restarted from a verified checkpoint."""
from __future__ import annotations

import os
import socket

from runner.process.proctree import marked_processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(port: int, *faults: str) -> list[str]:
    cmd = ["{python}", "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
           "-m", "runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps", "10",
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
