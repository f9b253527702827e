"""The cost of a run started without ``--use_cpu`` on a machine without a GPU, for real (ms-swift 4.6.0 on CPU):
ms-swift's default device map found no accelerator and says so, ``[INFO:swift] model_kwargs: {'device_map': 'cpu',
...}`` (swift/model/register.py l.282; swift/model/utils.py l.229-244), and the pause after the same crash twice
counts hours on CPU, not GPUs. Before: "h of the run's GPUs" (one process), "GPU-hours (2 GPUs, ...)" with
``NPROC_PER_NODE=2``."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.swift.swift_helpers import cli, require_swift, start

RAISES = """\
from transformers import Trainer
_step = Trainer.training_step
def training_step(self, model, inputs, *args, **kwargs):
    if self.state.global_step >= 3:
        raise ValueError("the same bad sample at step 4")
    return _step(self, model, inputs, *args, **kwargs)
Trainer.training_step = training_step
"""


def test_a_run_without_use_cpu_on_a_gpu_less_machine_costs_hours_on_cpu(swift_runs, tiny, tmp_path):
    require_swift()
    if Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi"):
        pytest.skip("this machine has a GPU: ms-swift would train on it")
    plugin = tmp_path / "raises.py"
    plugin.write_text(RAISES)
    run = start(swift_runs, tiny, "args.max_steps=12", "args.save_steps=2", f"args.external_plugins={plugin}")
    try:
        st = run.wait_while_moving(lambda s: s.get("status") == "paused", "status paused")
        log = run.log()
        assert "[INFO:swift] model_kwargs: {'device_map': 'cpu'" in log and "use_cpu=False" in log
        assert "h on CPU (no GPUs)" in st["pause_reason"], st["pause_reason"]
        assert "GPU" not in st["pause_reason"].replace("(no GPUs)", ""), st["pause_reason"]
    finally:
        cli(swift_runs, "kill", run.id)
