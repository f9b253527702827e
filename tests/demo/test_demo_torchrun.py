"""The demo under real torchrun with 2 processes: data parallel over gloo, one printer and saver
(rank 0), the same losses as one process, and rank-scoped faults seen through torchrun."""
from __future__ import annotations

import math
import re

from tests.demo.demo_helpers import dict_lines


def test_two_process_run_matches_one_process(demo):
    pair = demo.run("--max_steps", "6", "--save_steps", "3", nproc=2)
    assert pair.returncode == 0, pair.log[-3000:]
    single = demo.run("--max_steps", "6", "--save_steps", "3")
    assert single.returncode == 0
    assert pair.step_numbers() == [1, 2, 3, 4, 5, 6], "only rank 0 prints step lines"
    assert pair.log.count("[INFO:swift] output_dir:") == 1
    assert pair.log.count("[INFO:swift] Saving model checkpoint to") == 2
    for a, b in zip(pair.steps, single.steps):
        for key in ("loss", "grad_norm", "token_acc"):
            assert math.isclose(float(a[key]), float(b[key]), rel_tol=2e-3), (key, a, b)
    from safetensors.torch import load_file

    weights = "checkpoint-6/adapter_model.safetensors"
    saved_by_pair = load_file(str(pair.output_dir / weights))
    saved_by_single = load_file(str(single.output_dir / weights))
    assert saved_by_pair.keys() == saved_by_single.keys()
    for name, tensor in saved_by_pair.items():
        assert (tensor - saved_by_single[name]).abs().max() < 1e-3, name
    summary = dict_lines(pair.log)[-1]
    assert "train_runtime" in summary


def test_fault_on_rank_1_is_reported_by_torchrun(demo):
    run = demo.run("--max_steps", "6", "--fault", "segv@3:rank=1", nproc=2)
    assert run.returncode == 1, "torchrun itself exits 1 whatever its workers died of"
    assert "ChildFailedError" in run.log
    assert re.search(r"rank\s*: 1 \(local_rank: 1\)\n\s*exitcode\s*: -11 \(pid: \d+\)", run.log), run.log[-3000:]
    assert run.step_numbers() == [1, 2]
