"""Resume: 20 steps straight and 10 + resume 10 give the same losses and the same adapter bytes;
a checkpoint that cannot be resumed from is refused in one line with exit status 2."""
from __future__ import annotations

import json

import pytest


def _step_records(out) -> list[dict]:
    records = [json.loads(ln) for ln in (out / "logging.jsonl").read_text().splitlines()]
    return [r for r in records if "global_step/max_steps" in r]


@pytest.fixture(scope="module")
def runs(module_demo):
    straight = module_demo.run("--max_steps", "20", "--save_steps", "10")
    # The first half also writes an empty stub at step 5, for the refusal test below.
    first = module_demo.run("--max_steps", "10", "--save_steps", "5", "--fault", "stub@5")
    resumed = module_demo.run("--max_steps", "20", "--save_steps", "10", "--resume_from_checkpoint",
                              str(first.output_dir / "checkpoint-10"), output_dir=first.output_dir)
    return straight, first, resumed


def test_resumed_run_continues_after_the_checkpoint_step(runs):
    _, first, resumed = runs
    assert first.returncode == 0 and resumed.returncode == 0, resumed.log[-2000:]
    assert f"[INFO:swift] Resuming from checkpoint {first.output_dir / 'checkpoint-10'} at step 10" in resumed.log
    assert resumed.step_numbers() == list(range(11, 21))


def test_resume_gives_identical_losses_and_weights(runs):
    straight, first, resumed = runs
    assert [d["loss"] for d in straight.steps] == [d["loss"] for d in first.steps + resumed.steps]
    a = _step_records(straight.output_dir)
    b = _step_records(first.output_dir)  # both halves appended to the same logging.jsonl
    assert [r["global_step/max_steps"] for r in b] == [f"{i}/10" for i in range(1, 11)] + \
        [f"{i}/20" for i in range(11, 21)]
    for key in ("loss", "grad_norm", "token_acc", "epoch"):
        assert [r[key] for r in a] == [r[key] for r in b], key
    weights = "checkpoint-20/adapter_model.safetensors"
    assert (straight.output_dir / weights).read_bytes() == (first.output_dir / weights).read_bytes()
    state = json.loads((first.output_dir / "checkpoint-20" / "trainer_state.json").read_text())
    assert [h["step"] for h in state["log_history"]] == list(range(1, 21)), "history carried over"


def _one_error_line(log: str) -> str:
    errors = [ln for ln in log.splitlines() if "error" in ln.lower()]
    assert len(errors) == 1 and "Traceback" not in log, log
    return errors[0]


def test_resume_from_empty_stub_is_refused(runs, module_demo):
    _, first, _ = runs
    stub = first.output_dir / "checkpoint-5"
    assert (stub / "adapter_model.safetensors").stat().st_size == 39 * 1024
    refused = module_demo.run("--max_steps", "20", "--resume_from_checkpoint", str(stub))
    assert refused.returncode == 2
    assert "holds no tensors" in _one_error_line(refused.log)
    assert not refused.steps


def test_resume_from_missing_checkpoint_is_refused(module_demo, tmp_path):
    refused = module_demo.run("--max_steps", "5", "--resume_from_checkpoint", str(tmp_path / "checkpoint-99"))
    assert refused.returncode == 2
    assert "checkpoint directory not found" in _one_error_line(refused.log)


def test_resume_with_a_different_lora_rank_is_refused(runs, module_demo):
    _, first, _ = runs
    refused = module_demo.run("--max_steps", "20", "--lora_rank", "4",
                              "--resume_from_checkpoint", str(first.output_dir / "checkpoint-10"))
    assert refused.returncode == 2
    assert "does not fit this model" in _one_error_line(refused.log)
