"""The shipped ms-swift recipe, run to success by the real CLI, runner and ms-swift 4.6: what the
runner made of ms-swift's real log and real checkpoints."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from safetensors import safe_open

from moeconsole.runner.checkpoints.discover import find_checkpoints
from moeconsole.runner.checkpoints.watch import latest_good
from tests.swift.swift_helpers import Run, require_swift, start

MAX_STEPS = 30      # the recipe's --max_steps
SAVE_STEPS = 10     # the recipe's --save_steps


@pytest.fixture(scope="module")
def done(swift_runs, tiny) -> Run:
    require_swift()
    run = start(swift_runs, tiny)
    run.wait(lambda s: s.get("status") == "succeeded", "status succeeded")
    return run


def swift_step_logs(run: Run) -> dict[int, dict]:
    """ms-swift's own per-step records (logging.jsonl in the v<N>-<time>/ dir), by step."""
    (logfile,) = (run.path / "output").glob("v*-*/logging.jsonl")
    out = {}
    for line in logfile.read_text().splitlines():
        rec = json.loads(line)
        if "loss" in rec and "global_step/max_steps" in rec:
            out[int(rec["global_step/max_steps"].split("/")[0])] = rec
    return out


def test_the_run_succeeds_in_one_attempt(done):
    state = done.state()
    assert state["status"] == "succeeded"
    assert state["attempt"] == 1 and state["restarts"] == 0
    assert (state["step"], state["max_steps"]) == (MAX_STEPS, MAX_STEPS)
    (end,) = done.events("attempt_end")
    assert end["returncode"] == 0


def test_every_logging_step_is_a_metric_record_with_loss_grad_norm_and_lr(done):
    metrics = done.metrics()
    assert [m["step"] for m in metrics] == list(range(1, MAX_STEPS + 1))
    for m in metrics:
        assert m["src"] == "swift_dict" and m["attempt"] == 1 and m["max_steps"] == MAX_STEPS
        for key in ("loss", "grad_norm", "lr", "step_time_s", "epoch"):
            assert isinstance(m[key], float) and math.isfinite(m[key]), (key, m)
        assert m["mem_gib"] is None     # ms-swift prints memory(GiB) only with an accelerator


def test_metric_values_are_the_ones_ms_swift_logged(done):
    """The runner parsed stdout (4 significant digits); ms-swift's logging.jsonl has the full values."""
    logged = swift_step_logs(done)
    assert sorted(logged) == list(range(1, MAX_STEPS + 1))
    for m in done.metrics():
        ref = logged[m["step"]]
        assert m["loss"] == pytest.approx(ref["loss"], rel=1e-3)
        assert m["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-3)
        assert m["lr"] == pytest.approx(ref["learning_rate"], rel=1e-3, abs=1e-12)


def test_every_saved_checkpoint_is_verified_ok_with_its_lora_tensors(done):
    events = done.events("checkpoint")
    assert sorted(e["step"] for e in events) == list(range(SAVE_STEPS, MAX_STEPS + 1, SAVE_STEPS))
    recipe_hash = done.state()["recipe_hash"]
    for e in events:
        path = Path(e["path"])
        assert (e["verdict"], e["ok"], e["suspect"]) == ("ok", True, False), e
        assert path.name == f"checkpoint-{e['step']}" and path.parent.name.startswith("v0-")
        with safe_open(str(path / "adapter_model.safetensors"), "np") as f:
            names = list(f.keys())
        assert e["tensors"] == len(names) > 0
        assert all(".lora_A." in n or ".lora_B." in n for n in names)
        assert any(".mlp.experts." in n for n in names), "the fused expert weights are LoRA targets too"
        assert json.loads((path / "moeconsole.json").read_text())["recipe_hash"] == recipe_hash
    assert done.state()["last_checkpoint"]["path"] == max(events, key=lambda e: e["step"])["path"]


def test_discovery_finds_the_checkpoints_inside_the_versioned_dir(done):
    output = done.path / "output"
    found = find_checkpoints(output)
    assert [(c.step, c.layout) for c in found] == [(30, "hf_adapter"), (20, "hf_adapter"), (10, "hf_adapter")]
    assert all(c.path.parent.parent == output and c.path.parent.name.startswith("v0-") for c in found)
    assert (output / found[0].path.parent.name / "last-checkpoint").is_symlink()   # listed once, by its real name
    best = latest_good(output, expected_recipe_hash=done.state()["recipe_hash"])
    assert best is not None and best.path == found[0].path


def test_the_log_holds_the_wrapper_line_and_the_end_marks(done):
    log = (done.path / "train.log").read_text(errors="replace")
    assert "run sh: `" in log and "swift/cli/sft.py" in log
    assert f"last_model_checkpoint: {done.state()['last_checkpoint']['path']}" in log


