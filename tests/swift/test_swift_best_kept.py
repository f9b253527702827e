"""``--save_total_limit 1`` with a best save older than the last, for real (ms-swift 4.6 on CPU).

transformers keeps the best save its state names as well as the newest while it trains (``rotate_checkpoints``,
trainer_utils.py l.342-386), and at the end, with ``save_total_limit == 1``, deletes every save but the best, the
newest too (trainer.py ``_finalize_training`` l.2006-2011). With a learning rate of 0 the eval loss never improves
on step 2's, so ``checkpoint-2`` is the best, ``checkpoint-4`` goes when 6 is saved and ``checkpoint-6`` at the end;
ms-swift's last lines still say ``last_model_checkpoint: .../checkpoint-6``. A plugin's ``on_save`` waits for the
runner's verdict (its sidecar), as the minutes between saves of a real training give it. Measured before: both
read ``ckpt OUT ... not found where it was verified, and no newer save of the run is there (a disk not mounted? a
directory moved?)`` in ``runs show`` and ``gone: "unreachable"`` in ``--json``; they were deleted by the trainer
(runner/checkpoints/order.py ``saves_gone``, its ``best``)."""
from __future__ import annotations

import json
from pathlib import Path

from tests.swift.swift_helpers import cli, require_swift, start

PLUGIN = """import os, time
from transformers import TrainerCallback
from swift.callbacks import callbacks_map


class WaitForVerdict(TrainerCallback):
    def __init__(self, args=None, trainer=None):
        pass

    def on_save(self, args, state, control, **kwargs):
        sidecar = os.path.join(args.output_dir, f"checkpoint-{state.global_step}", "moeconsole.json")
        deadline = time.monotonic() + 300
        while not os.path.exists(sidecar) and time.monotonic() < deadline:
            time.sleep(0.1)


callbacks_map['wait_for_verdict'] = WaitForVerdict
"""


def test_saves_the_trainer_deleted_at_its_end_keeping_the_best_read_deleted(swift_runs, tiny, tmp_path: Path):
    require_swift()
    plugin = tmp_path / "wait_plugin.py"
    plugin.write_text(PLUGIN)
    run = start(swift_runs, tiny, "args.max_steps=6", "args.save_steps=2", "args.eval_steps=2",
                "args.split_dataset_ratio=0.1", "args.learning_rate=0", "args.save_total_limit=1",
                "args.metric_for_best_model=loss", "args.load_best_model_at_end=true",
                f"args.external_plugins={plugin}", "args.callbacks=wait_for_verdict")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed"), "the end")
    assert state["status"] == "succeeded", state
    assert "last_model_checkpoint: " in run.log() and "checkpoint-6" in run.log()
    assert sorted(p.name for p in run.path.glob("output/v0-*/checkpoint-*")) == ["checkpoint-2"]   # what is left
    assert [e["step"] for e in run.ok_checkpoints()] == [2, 4, 6]
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)
    gone = {c["step"]: (c.get("gone"), c.get("deleted")) for c in shown["checkpoints"]}
    assert gone == {6: ("deleted", True), 4: ("deleted", True), 2: (None, None)}, gone
    assert shown["run"]["best_checkpoint"]["step"] == 2
    lines = [ln for ln in cli(swift_runs, "runs", "show", run.id).stdout.splitlines() if "ckpt " in ln]
    assert [ln.split()[:4] for ln in lines] == [["ckpt", "DEL", "step", "6"], ["ckpt", "DEL", "step", "4"],
                                                ["ckpt", "OK", "step", "2"]], lines
    assert not any("disk not mounted" in ln for ln in lines), lines
