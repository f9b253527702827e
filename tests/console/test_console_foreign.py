"""Opening output not made by moeconsole: an ms-swift output directory (logging.jsonl in its
newest v*/ run, checkpoint dirs with real safetensors files) is ingested and shown like a run;
`runs diff` compares it with a moeconsole run."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from moeconsole.console.screens.dialogs import PromptScreen
from tests.waiting import until_ui
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.keybar import KeyBar
from moeconsole.console.widgets.chart import ChartView
from moeconsole.console.widgets.panes import EventPane
from moeconsole.console.widgets.status import StatusLine

REPO = Path(__file__).resolve().parents[2]


def swift_output(root: Path, steps: int = 30) -> Path:
    run = root / "v0-20260101-000000"
    run.mkdir(parents=True)
    with open(run / "logging.jsonl", "w") as f:
        for i in range(1, steps + 1):
            f.write(json.dumps({"loss": round(2.0 - i * 0.03, 4), "grad_norm": 0.5, "learning_rate": 1e-4,
                                "epoch": i / steps, "global_step/max_steps": f"{i}/{steps}",
                                "train_speed(s/it)": 0.2}) + "\n")
    (run / "args.json").write_text(json.dumps({"torch_dtype": "bfloat16", "fp8_recipe": "blockwise",
                                               "learning_rate": 1e-4}))
    good = run / "checkpoint-20"
    good.mkdir()
    save_file({"base_model.model.layers.0.self_attn.q_proj.lora_A.weight": np.ones((8, 64), np.float32),
               "base_model.model.layers.0.self_attn.q_proj.lora_B.weight": np.ones((64, 8), np.float32)},
              str(good / "adapter_model.safetensors"))
    (good / "adapter_config.json").write_text(json.dumps({"r": 8, "lora_alpha": 16, "peft_type": "LORA"}))
    stub = run / "checkpoint-30"
    stub.mkdir()
    save_file({}, str(stub / "adapter_model.safetensors"))  # the 36-hour failure: no tensors at all
    (stub / "adapter_config.json").write_text(json.dumps({"r": 8, "lora_alpha": 16, "peft_type": "LORA"}))
    return root


def test_open_a_swift_output_dir_from_the_browser(base, tmp_path):
    out = swift_output(tmp_path / "swift-out")

    async def go():
        app = MoeConsole(base, None, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen))
            await pilot.press("o")
            await until_ui(pilot, lambda: isinstance(app.screen, PromptScreen), what="the path prompt")
            await pilot.press(*str(out))
            await pilot.press("enter")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            screen = app.screen
            await until_ui(pilot, lambda: len(screen.snapshot.checkpoints) == 2)
            status = await until_ui(pilot, lambda: (s := screen.query_one(StatusLine).plain_lines) and "IMPORTED" in s[0]
                                    and s, what="the imported run's status line")
            assert "IMPORTED" in status[0] and "step 30/30" in status[0]
            # what it is, not a runner's counters it never had ("attempt — · restarts 0/—")
            assert status[1].strip().startswith("imported: a log not made by moeconsole (read only"), status
            assert "attempt" not in status[1] and "0/—" not in status[1], status
            assert screen.query_one("#chart-loss", ChartView).text_rows()[0].startswith("loss 1.1")
            events = " ".join(screen.query_one(EventPane).plain_lines)
            assert "OK  step 20" in events and "BAD step 30" in events
            shown = {k for k, b in screen.active_bindings.items() if b.binding.show}
            assert not {"k", "r", "z", "v"} & shown  # nothing to steer
            # nothing is attached to: q quits (keys.ENDED), in the footer as drawn
            await until_ui(pilot, lambda: ("q", "Quit", True) in screen.query_one(KeyBar).keys, what="q Quit")
            scratch = app.scratch_dir()
        assert not scratch.exists(), "the ingested copy is removed when the app ends"
        return scratch
    asyncio.run(go())
    assert (out / "v0-20260101-000000" / "logging.jsonl").is_file()  # the original is only read


def test_runs_diff_against_a_foreign_dir(base, make_run, tmp_path):
    out = swift_output(tmp_path / "swift-out")
    make_run(base, "20240101-000000-bf16-aaaa", name="moe-bf16", status="succeeded", steps=40, restart_at=None)
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "diff", "bf16", str(out), "--json",
                           "--runs-dir", str(base)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    assert d["b"]["steps"] == 30 and d["b"]["final_loss"] == 1.1 and d["b"]["status"] == "foreign"
    keys = {x["key"] for x in d["recipe_diff"]}
    assert "fp8_recipe" in keys  # from the swift run's args.json
