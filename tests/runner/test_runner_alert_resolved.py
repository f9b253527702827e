"""An alert ends when its fact does: a save that was still being written when the runner first
verified it (a stub then) and was completed later is verified again, ok; the bad-save alert is
resolved, saying why, and every view follows (``--json``, ``runs show``, the receipt, the
console's alert bar and ``d``). Real runner, real files written by a real training process."""
from __future__ import annotations

import asyncio
import json

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.dialogs import DetailScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import rundir
from tests.waiting import until_ui

# The training: checkpoint-4 lands with an empty adapter file (its weights not written yet); once
# the runner has called it bad, the weights are written into the same directory; the training
# waits for the runner's second verdict and exits 0.
TRAIN = """
import json, sys, time
from pathlib import Path
import torch
from safetensors.torch import save_file
from moeconsole.runner.demo.checkpoint import ADAPTER_WEIGHTS, save_checkpoint

run_dir = Path(sys.argv[1])
events = run_dir / "events.jsonl"
tensors = {"base_model.model.layers.0.mlp.lora_A.weight": torch.ones(4, 8),
           "base_model.model.layers.0.mlp.lora_B.weight": torch.ones(8, 4)}
print("step: 4  loss: 1.0", flush=True)
ck = save_checkpoint(run_dir / "output", 4, tensors=tensors, config={"peft_type": "LORA", "r": 4,
                     "target_modules": ["mlp"]}, args={}, state={"global_step": 4}, optimizer_state={}, stub=True)
print(f"Saving model checkpoint to {ck}", flush=True)

def seen(pred):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in events.read_text().splitlines():
            ev = json.loads(line)
            if pred(ev):
                return
        time.sleep(0.1)
    sys.exit(3)

seen(lambda ev: ev.get("type") == "alert" and ev.get("rule") == "checkpoint_bad")
save_file(tensors, str(ck / ADAPTER_WEIGHTS), metadata={"format": "pt"})
seen(lambda ev: ev.get("type") == "checkpoint" and ev.get("ok") is True)
print("step: 5  loss: 0.9", flush=True)
"""

WHY = "checkpoint-4 verified ok on a later check"


def test_a_bad_save_verified_ok_later_resolves_its_alert_in_every_view(harness, runs_dir):
    script = harness.tmp / "train.py"
    script.write_text(TRAIN)
    run = harness.start(harness.recipe(command=["{python}", str(script), "{run_dir}"]))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded", st
    verdicts = [(ev["path"].rsplit("/", 1)[-1], ev["verdict"]) for ev in run.events("checkpoint")]
    assert verdicts == [("checkpoint-4", "empty_stub"), ("checkpoint-4", "ok")], verdicts
    assert st["bad_saves"]["total"] == 0

    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    group = next(g for g in snap["alert_groups"] if g["key"] == "checkpoints")
    assert (group["active"], group["resolved"], group["resolved_why"]) == (False, True, WHY), group
    assert group["standing"] == f"resolved: {WHY}"
    assert snap["run"]["open_alerts"] == 0

    show = harness.cli("runs", "show", run.id, check=True).stdout
    assert "alerts by cause (1, 0 open)" in show, show
    assert f"CRIT checkpoint checkpoint-4 is empty_stub (step 4)  (resolved: {WHY})" in show, show
    ls = json.loads(harness.cli("runs", "ls", "--json", check=True).stdout)["runs"]
    row = next(r for r in ls if r["id"] == run.id)
    assert (row["bad_saves"], row["open_alerts"], row["open_critical"]) == (0, 0, 0), row

    md = harness.cli("runs", "receipt", run.id, check=True).stdout
    assert "1 cause(s), 0 open" in md and f"resolved: {WHY}" in md, md

    async def console() -> tuple[str, list[str]]:
        app = MoeConsole(runs_dir, rundir.resolve(runs_dir, run.id), gpu=False, interval=0.25)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            screen = app.screen
            status = "\n".join(screen.query_one(StatusLine).plain_lines)
            assert screen.active_alerts == []
            await pilot.press("d")
            await until_ui(pilot, lambda: isinstance(app.screen, DetailScreen))
            return status, list(app.screen.lines)
    status, detail = asyncio.run(console())
    assert "CRIT" not in status and "empty_stub" not in status, status
    assert f"state: resolved: {WHY}" in detail, detail
