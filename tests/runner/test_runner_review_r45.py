"""Review R45 of the several-nodes round: the findings that a runner on loopback shows."""
from __future__ import annotations

import os

from tests.runner.test_runner_node_resume import _free_port, _node, lone_node_1   # one two-node world
from tests.waiting import until


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
    with lone_node_1(harness, out) as (run, first, st):
        assert first.get("attempt") == 1 and not first.get("error"), first
        assert st.get("status") not in ("failed", "paused"), (st.get("status"), st.get("pause_reason"))


def test_node_0s_save_copied_whole_with_its_sidecar_resumes_both_nodes(harness):
    """D3: node 0's ``checkpoint-4/`` copied into node 1's as ``cp -a`` does, node 0's ``moeconsole.json`` with it.
    Before review R45: that save was skipped as another recipe's and attempt 3 was refused with "the world saved
    step 2 ... copy node 0's checkpoint-2" while a whole step-4 save sat there; R45 named the sidecar to delete.
    Since round 19 every node of one world stamps its saves alike (the node rank is not the recipe's identity,
    ``cmdline.world_command``): the copied sidecar is this world's, and node 1 resumes from it at once."""
    import shutil
    port = _free_port()

    with harness.torchrun_world(lambda r: _node(port, r), port) as nodes:
        node0, node1 = nodes
        st1 = node1.wait_status("failed", "paused", "succeeded", "unsaved", timeout=300)
        first = st1.get("pause_reason") or ""
        assert st1["status"] == "failed" and "step 4" in first, (st1.get("status"), first)
        assert "mounts" not in first and "without its moeconsole.json" in first and "--from" in first, first
        share = node1.path / "output" / "checkpoint-4"
        shutil.copytree(node0.path / "output" / "checkpoint-4", share, dirs_exist_ok=True)   # cp -a, sidecar too
        out = harness.cli("restart", node1.id)
        assert out.returncode == 0, (out.stdout, out.stderr)
        until(lambda: [e for e in node1.events("attempt_start") if e.get("attempt") == 3], timeout=300,
              what="node 1's attempt 3")
        third = [e for e in node1.events("attempt_start") if e.get("attempt") == 3][0]
        assert not third.get("error"), third
        for run in nodes:
            st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=300)
            assert st["status"] == "succeeded", (run.id, st.get("status"), st.get("pause_reason"))
        resumed = [e.get("resumed_from") for e in node1.events("attempt_start") if e.get("resumed_from")]
        assert resumed and resumed[-1].endswith("checkpoint-4"), resumed
