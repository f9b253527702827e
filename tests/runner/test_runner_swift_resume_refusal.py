"""ms-swift 4.6.0 refusing the checkpoint the runner resumed from (Megatron GRPO,
swift/megatron/trainers/base.py l.1055-1058): the run fails on that attempt instead of restarting
into the same refusal. The real CLI and runner; the trainer is a script that prints what ms-swift
prints (the first attempt dies of something a restart may fix, the resume is refused)."""
from __future__ import annotations

import json

SCRIPT = r'''
import os, sys
SP = "/usr/local/lib/python3.11/site-packages/swift"
if os.environ["MOECONSOLE_ATTEMPT"] == "1":
    print("RuntimeError: the first attempt died of something a restart may fix", flush=True)
    sys.exit(1)
frames = [("cli/_megatron/rlhf.py", 24, "<module>"), ("megatron/pipelines/train/rlhf.py", 73, "megatron_rlhf_main"),
          ("pipelines/base.py", 52, "main"), ("megatron/pipelines/train/sft.py", 68, "run"),
          ("megatron/trainers/base.py", 793, "train"), ("megatron/trainers/base.py", 723, "setup_training"),
          ("megatron/trainers/base.py", 637, "_prepare_data_iterator"),
          ("megatron/trainers/base.py", 1057, "_prepare_dataloader")]
lines = ["Traceback (most recent call last):"]
for path, no, func in frames:
    lines += [f'  File "{SP}/{path}", line {no}, in {func}', "    ..."]
lines.append("RuntimeError: consumed_train_samples (1000) must be divisible by num_generations (8)")
print("\n".join(f"[rank0]: {x}" for x in lines), file=sys.stderr, flush=True)
sys.exit(1)
'''


def test_a_resume_ms_swift_refuses_fails_the_run_instead_of_restarting(harness, tmp_path):
    trainer = tmp_path / "trainer.py"
    trainer.write_text(SCRIPT)
    recipe = harness.recipe(command=["{python}", str(trainer)], restart={"max_restarts": 5})
    run = harness.start(recipe)
    st = run.wait_status("failed", "paused", timeout=120)
    assert st["status"] == "failed", st
    assert run.crash(1)["class"] == "unknown"
    second = run.crash(2)
    assert second["class"] == "config_error" and second["recovery"] == "fail", json.dumps(second)[:800]
    assert second["summary"].startswith("resume refused: RuntimeError: consumed_train_samples (1000)")
    assert "--num_generations" in second["hint"]
    assert not (run.path / "crashes" / "attempt-3.json").exists(), "restarted into the same refusal"
