"""run -> save -> verify -> crash -> resume with the right flags, under the real runner, against
the ms-swift `megatron sft` double (tests/fakes/megatron): its parser, log lines and save layout
are ms-swift 4.6.0's (and 4.2.0's with FAKE_SWIFT_VERSION)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runner.conftest import Harness

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fakes" / "megatron"
T46 = ["--adapters", "{checkpoint}", "--finetune", "false", "--no_load_optim", "true", "--no_load_rng", "true"]
T42 = ["--model", "{checkpoint}-merged", "--finetune", "false", "--no_load_optim", "true", "--no_load_rng", "true"]


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def fake_recipe(version: str, merge: str, template: list[str]) -> dict:
    return dict(
        command=["{python}", str(FAKE), "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--dataset", "/data/sft.jsonl",
                 "--tuner_type", "lora", "--lora_rank", "8", "--train_iters", "12", "--save_steps", "4",
                 "--logging_steps", "1", "--lr", "1e-4", "--output_dir", "{run_dir}/output",
                 "--save_safetensors", "true", "--no_save_optim", "true", "--merge_lora", merge],
        env={"OMP_NUM_THREADS": "1", "FAKE_CRASH_AT": "6", "FAKE_STEP_S": "0.05", "FAKE_SWIFT_VERSION": version,
             "FAKE_MEMORY_GIB": "132.91"},
        resume={"arg": None, "args": template}, swift={"version": version},
        checkpoints={"dir": "{run_dir}/output", "settle_s": 1.0})


@pytest.mark.parametrize("version,merge,template,resumed_flag", [
    ("4.6.0", "false", T46, "--adapters"),
    ("4.2.0", "true", T42, "--model"),
])
def test_crash_and_resume_from_the_verified_checkpoint(harness, version, merge, template, resumed_flag):
    run = harness.start(harness.recipe(**fake_recipe(version, merge, template)))
    st = run.wait_status("succeeded", "failed", "paused", timeout=180)
    assert st["status"] == "succeeded", (st, (run.path / "runner.log").read_text()[-3000:])
    assert st["attempt"] == 2 and st["restarts"] == 1
    assert "fake megatron: injected crash after iteration 6" in json.dumps(run.crash(1))

    checks = run.events("checkpoint")
    assert checks and all(c["ok"] and c["verdict"] == "ok" for c in checks), checks
    steps = sorted({c["step"] for c in checks})
    assert steps == [4, 8, 12]

    starts = run.events("attempt_start")
    resumed = starts[1]["resumed_from"]
    assert Path(resumed).name == "checkpoint-4" and "-merged" not in Path(resumed).name
    argv = starts[1]["argv"]
    # The template's flags once each, with the checkpoint filled in; the original --model replaced.
    for flag in ("--finetune", "--no_load_optim", "--no_load_rng", resumed_flag):
        assert argv.count(flag) == 1, argv
    want = resumed if resumed_flag == "--adapters" else resumed + "-merged"
    assert argv[argv.index(resumed_flag) + 1] == want
    assert argv[argv.index("--finetune") + 1] == "false"

    # The resumed attempt continued from iteration 5, as ms-swift does with --finetune false.
    a2 = [m["step"] for m in run.metrics() if m["attempt"] == 2]
    assert a2 and a2[0] == 5 and a2[-1] == 12, a2
    assert all(m.get("max_steps") == 12 for m in run.metrics())


def test_without_finetune_false_ms_swift_restarts_at_iteration_zero(tmp_path):
    """What the template prevents: --adapters alone loads the weights but not the iteration."""
    out = tmp_path / "o"
    env = {**os.environ, "FAKE_STEP_S": "0", "OMP_NUM_THREADS": "1"}
    base = [sys.executable, str(FAKE), "sft", "--model", "M", "--tuner_type", "lora", "--train_iters", "4",
            "--save_steps", "2", "--logging_steps", "1", "--output_dir", str(out), "--merge_lora", "false",
            "--no_save_optim", "true"]
    first = subprocess.run(base, capture_output=True, text=True, timeout=120, env=env)
    assert first.returncode == 0, first.stderr
    ck = sorted(out.glob("v0-*/checkpoint-2"))[0]
    again = subprocess.run(base + ["--adapters", str(ck)], capture_output=True, text=True, timeout=120, env=env)
    assert "'iteration': '1/4'" in again.stdout           # started over
    resumed = subprocess.run(base + ["--adapters", str(ck), "--finetune", "false"], capture_output=True, text=True,
                             timeout=120, env=env)
    assert "'iteration': '1/4'" not in resumed.stdout and "'iteration': '3/4'" in resumed.stdout
    assert f"[INFO:swift] checkpoint_dir: {ck}" in resumed.stderr


def test_the_fake_parses_like_ms_swift(tmp_path):
    env = {**os.environ, "FAKE_STEP_S": "0"}
    amb = subprocess.run([sys.executable, str(FAKE), "sft", "--save", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, env=env)
    assert amb.returncode == 2 and "ambiguous option: --save could match" in amb.stderr
    unk = subprocess.run([sys.executable, str(FAKE), "sft", "--train_type", "lora"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert unk.returncode == 1 and "ValueError: remaining_argv: ['--train_type', 'lora']" in unk.stderr
