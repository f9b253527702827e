"""A real 60-step run of the demo trainer: loss goes down, the log has ms-swift's shape, and the
checkpoints are real safetensors LoRA adapters with their companion files."""
from __future__ import annotations

import json
import math
import re
import subprocess

import pytest

from tests.demo.demo_helpers import PYTHON, REPO, dict_lines, read_log

STEPS = 60
STEP_KEYS = ["loss", "grad_norm", "learning_rate", "token_acc", "epoch", "global_step/max_steps",
             "elapsed_time", "remaining_time", "memory(GiB)", "train_speed(s/it)"]


@pytest.fixture(scope="module")
def run60(module_demo):
    """One 60-step run with stdout and stderr kept apart (the runner merges them; here we check
    which stream carries what)."""
    workdir = module_demo.workdir
    out = workdir / "out60"
    env = module_demo.env({"MOECONSOLE_RECIPE_HASH": "sha256:feedface"})
    cmd = [PYTHON, "-m", "moeconsole.runner.demo.train", "--output_dir", str(out), "--max_steps", str(STEPS),
           "--save_steps", "20"]
    with open(workdir / "stdout.txt", "wb") as so, open(workdir / "stderr.txt", "wb") as se:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=so, stderr=se)
        module_demo.procs.append(proc)
        proc.wait(timeout=180)
    return {"rc": proc.returncode, "out": out, "cmd": cmd,
            "stdout": read_log(workdir / "stdout.txt"), "stderr": read_log(workdir / "stderr.txt")}


def test_run_succeeds_and_loss_goes_down(run60):
    assert run60["rc"] == 0, run60["stderr"][-2000:]
    steps = [d for d in dict_lines(run60["stdout"]) if "global_step/max_steps" in d]
    assert [d["global_step/max_steps"] for d in steps] == [f"{i}/{STEPS}" for i in range(1, STEPS + 1)]
    losses = [float(d["loss"]) for d in steps]
    assert all(math.isfinite(x) for x in losses)
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert first > 5.0, "an untrained byte-level model is near ln(256) = 5.55"
    assert last < first - 1.5, f"loss did not really go down: {first:.3f} -> {last:.3f}"
    accs = [float(d["token_acc"]) for d in steps]
    assert sum(accs[-5:]) / 5 > sum(accs[:5]) / 5 + 0.1


def test_step_lines_have_ms_swift_shape_on_stdout(run60):
    lines = [ln for ln in run60["stdout"].split("\n") if ln.strip()]
    step_lines = [ln for ln in lines if "global_step/max_steps" in ln]
    assert len(step_lines) == STEPS
    for ln in step_lines:
        assert ln.startswith("\r "), "the dict line first clears the progress bar"
    first = dict_lines(step_lines[0])[0]
    assert list(first) == STEP_KEYS
    assert all(isinstance(v, str) for v in first.values())
    assert first["learning_rate"] == "0.003"
    assert re.fullmatch(r"\d+(\.\d+)?", first["memory(GiB)"])
    assert re.fullmatch(r"(\d+d )?(\d+h )?(\d+m )?\d+s", first["elapsed_time"])
    # The end-of-training summary dict comes last, as with HF's Trainer.
    summary = dict_lines(run60["stdout"])[-1]
    assert set(summary) == {"train_runtime", "train_samples_per_second", "train_steps_per_second",
                            "train_loss", "epoch"}


def test_stderr_has_bar_and_info_lines(run60):
    err = run60["stderr"]
    out = run60["out"]
    lines = err.split("\n")
    assert lines[0] == f"[INFO:swift] output_dir: {out}"
    bars = re.findall(r"\rTrain: +(\d+)%\|[^|]*\| (\d+)/(\d+) \[", err)
    assert [int(b[1]) for b in bars] == list(range(1, STEPS + 1))
    assert "global_step" not in err, "dict lines go to stdout only"
    saves = re.findall(r"\[INFO:swift\] Saving model checkpoint to (.*)", err)
    assert saves == [str(out / f"checkpoint-{n}") for n in (20, 40, 60)]
    tail = [ln for ln in lines if ln.strip()][-2:]
    assert tail == [f"[INFO:swift] last_model_checkpoint: {out / 'checkpoint-60'}",
                    "[INFO:swift] best_model_checkpoint: None"]


def test_logging_jsonl_has_json_numbers(run60):
    records = [json.loads(ln) for ln in (run60["out"] / "logging.jsonl").read_text().splitlines()]
    steps = [r for r in records if "global_step/max_steps" in r]
    assert len(steps) == STEPS
    assert list(steps[0]) == STEP_KEYS
    for key in ("loss", "grad_norm", "learning_rate", "token_acc", "epoch", "memory(GiB)", "train_speed(s/it)"):
        assert isinstance(steps[0][key], float), key
    assert steps[-1]["global_step/max_steps"] == f"{STEPS}/{STEPS}"
    printed = [float(d["loss"]) for d in dict_lines(run60["stdout"]) if "global_step/max_steps" in d]
    assert [float(f"{r['loss']:.4g}") for r in steps] == printed
    final = records[-1]
    assert final["last_model_checkpoint"] == str(run60["out"] / "checkpoint-60")
    assert final["global_step"] == STEPS and len(final["log_history"]) == STEPS


def test_checkpoints_are_real_safetensors_lora_adapters(run60):
    import torch
    from safetensors import safe_open

    out = run60["out"]
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint-20", "checkpoint-40", "checkpoint-60",
                                                     "logging.jsonl"], "no temp dirs left behind"
    ckpt = out / "checkpoint-60"
    assert sorted(p.name for p in ckpt.iterdir()) == sorted([
        "adapter_model.safetensors", "adapter_config.json", "args.json", "trainer_state.json",
        "optimizer.pt", "rng_state.pth"])
    config = json.loads((ckpt / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["r"] == 8 and config["lora_alpha"] == 16
    with safe_open(str(ckpt / "adapter_model.safetensors"), "pt") as f:
        names = list(f.keys())
        tensors = {n: f.get_tensor(n) for n in names}
    assert len(names) == 2 * (2 * (4 + 3 * (8 + 1)) + 1), "q/k/v/o + 3 per routed/shared expert, 2 layers, lm_head"
    modules = {n.rsplit(".lora_", 1)[0] for n in names}
    assert "base_model.model.layers.0.attn.q_proj" in modules
    assert "base_model.model.layers.1.mlp.experts.7.down_proj" in modules
    assert "base_model.model.layers.0.mlp.shared_expert.gate_proj" in modules
    for m in modules:
        a, b = tensors[f"{m}.lora_A.weight"], tensors[f"{m}.lora_B.weight"]
        assert a.shape[0] == 8 and b.shape[1] == 8 and a.dtype == torch.float32
        assert m.rsplit(".", 1)[-1] in config["target_modules"]
    assert any(t.abs().sum() > 0 for n, t in tensors.items() if n.endswith("lora_B.weight")), \
        "lora_B starts at zero: trained adapters are not"
    state = json.loads((ckpt / "trainer_state.json").read_text())
    assert state["global_step"] == STEPS and state["max_steps"] == STEPS
    assert [h["step"] for h in state["log_history"]] == list(range(1, STEPS + 1))
    args = json.loads((ckpt / "args.json").read_text())
    assert args["argv"] == run60["cmd"][3:] and args["max_steps"] == STEPS
    assert args["moeconsole_recipe_hash"] == "sha256:feedface"
    optimizer = torch.load(ckpt / "optimizer.pt", weights_only=True)
    assert len(optimizer["state"]) == len(names)
    assert float(optimizer["state"][0]["step"]) == STEPS
    assert set(torch.load(ckpt / "rng_state.pth", weights_only=False)) >= {"cpu", "python"}


def test_demo_package_ships_its_corpus():
    corpus = REPO / "runner" / "demo" / "corpus.txt"
    text = corpus.read_text()
    assert 30_000 <= len(text.encode()) <= 60_000
    assert text.count("\n\n") >= 40, "plain prose paragraphs"
