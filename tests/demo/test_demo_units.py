"""The demo's pure pieces on plain data: fault specs, log formatting, the stub file, the data."""
from __future__ import annotations

import pytest

from moeconsole.runner.demo.faultspec import ALL_RANKS, Fault, FaultPlan, attempt_from_env, parse_fault
from moeconsole.runner.demo.swiftlog import as_display, format_time, progress_bar, train_message


@pytest.mark.parametrize("text,expected", [
    ("oom@5", Fault("oom", 5, 1, 0)),
    ("segv@12#3", Fault("segv", 12, 3, 0)),
    ("nccl@4:rank=1", Fault("nccl", 4, 1, 1)),
    ("hang@2#2:rank=all", Fault("hang", 2, 2, ALL_RANKS)),
    ("port", Fault("port", 0, 1, 0)),
    ("gpu_busy@7", Fault("gpu_busy", 0, 1, 0)),  # start-up faults ignore the step
    ("port@0#2", Fault("port", 0, 2, 0)),
])
def test_parse_fault(text, expected):
    assert parse_fault(text) == expected


@pytest.mark.parametrize("text,reason", [
    ("boom@3", "unknown kind 'boom'"),
    ("oom", "oom needs a step"),
    ("oom@0", "steps start at 1"),
    ("oom@3#0", "attempts start at 1"),
    ("oom@x", "expected KIND@STEP"),
    ("oom@3:rank=", "expected KIND@STEP"),
    ("", "expected KIND@STEP"),
])
def test_parse_fault_rejects_with_reason(text, reason):
    with pytest.raises(ValueError, match="invalid --fault") as info:
        parse_fault(text)
    assert reason in str(info.value)
    assert "\n" not in str(info.value)


def test_fault_plan_selects_attempt_and_rank():
    faults = [parse_fault("oom@3"), parse_fault("segv@4#2"), parse_fault("nan@5:rank=1"),
              parse_fault("hang@6:rank=all")]
    first_rank0 = FaultPlan(faults, attempt=1, rank=0)
    assert first_rank0.fires("oom", 3) and not first_rank0.fires("oom", 4)
    assert not first_rank0.fires("segv", 4) and not first_rank0.fires("nan", 5)
    assert first_rank0.fires("hang", 6)
    second_rank0 = FaultPlan(faults, attempt=2, rank=0)
    assert second_rank0.fires("segv", 4) and not second_rank0.fires("oom", 3)
    first_rank1 = FaultPlan(faults, attempt=1, rank=1)
    assert first_rank1.fires("nan", 5) and first_rank1.fires("hang", 6) and not first_rank1.fires("oom", 3)
    assert not FaultPlan([], 1, 0)


@pytest.mark.parametrize("env,expected", [({}, 1), ({"MOECONSOLE_ATTEMPT": "3"}, 3)])
def test_attempt_from_env(env, expected):
    assert attempt_from_env(env) == expected


@pytest.mark.parametrize("raw", ["0", "-1", "two", ""])
def test_attempt_from_env_rejects(raw):
    with pytest.raises(ValueError, match="MOECONSOLE_ATTEMPT"):
        attempt_from_env({"MOECONSOLE_ATTEMPT": raw})


@pytest.mark.parametrize("seconds,text", [
    (0, "0s"), (5.4, "5s"), (59.6, "1m 0s"), (62, "1m 2s"), (3725, "1h 2m 5s"),
    (86401, "1d 0h 0m 1s"), (1178, "19m 38s"),
])
def test_format_time_like_ms_swift(seconds, text):
    assert format_time(seconds) == text


def test_display_values_are_4g_strings():
    shown = as_display({"loss": 2.3456789, "grad_norm": float("nan"), "learning_rate": 3e-05,
                        "epoch": 0.05, "global_step/max_steps": "10/200", "memory(GiB)": 0.12})
    assert shown == {"loss": "2.346", "grad_norm": "nan", "learning_rate": "3e-05", "epoch": "0.05",
                     "global_step/max_steps": "10/200", "memory(GiB)": "0.12"}


def test_train_message_key_order_and_times():
    logs = train_message({"loss": 2.0, "grad_norm": 1.0, "learning_rate": 0.003, "token_acc": 0.4,
                          "epoch": 0.05}, step=10, max_steps=200, elapsed=62.0, steps_this_run=10,
                         memory_gib=0.123)
    assert list(logs) == ["loss", "grad_norm", "learning_rate", "token_acc", "epoch", "global_step/max_steps",
                          "elapsed_time", "remaining_time", "memory(GiB)", "train_speed(s/it)"]
    assert logs["global_step/max_steps"] == "10/200"
    assert logs["elapsed_time"] == "1m 2s"
    assert logs["remaining_time"] == "19m 38s"  # 6.2 s/it * 190 steps
    assert logs["memory(GiB)"] == 0.12 and logs["train_speed(s/it)"] == 6.2


def test_train_speed_counts_only_this_process_steps():
    # A resumed run at step 110 that has done 10 steps in 5 s: 0.5 s/it, 90 steps left.
    logs = train_message({"loss": 1.0}, step=110, max_steps=200, elapsed=5.0, steps_this_run=10, memory_gib=0)
    assert logs["train_speed(s/it)"] == 0.5 and logs["remaining_time"] == "45s"


def test_progress_bar_like_tqdm():
    assert progress_bar(0, 200, 0.0, 0) == "Train:   0%|          | 0/200 [00:00<?, ?it/s]"
    assert progress_bar(100, 200, 50.0, 100) == "Train:  50%|█████     | 100/200 [00:50<00:50, 2.00it/s]"
    slow = progress_bar(10, 20, 20.0, 10)
    assert slow.startswith("Train:  50%|█████     | 10/20 [00:20<00:20, ") and slow.endswith("2.00s/it]")
    assert "\n" not in slow and "\r" not in slow


def test_empty_stub_is_a_valid_safetensors_file_without_tensors(tmp_path):
    from safetensors import safe_open

    from moeconsole.runner.demo.checkpoint import STUB_SIZE, write_empty_stub

    path = tmp_path / "adapter_model.safetensors"
    write_empty_stub(path)
    assert path.stat().st_size == STUB_SIZE == 39 * 1024
    with safe_open(str(path), "pt") as f:
        assert list(f.keys()) == []


def test_batches_are_a_function_of_seed_and_step():
    from moeconsole.runner.demo.data import batch_for_step, load_corpus, shard

    corpus = load_corpus()
    assert 30_000 <= corpus.numel() <= 60_000
    x1, y1 = batch_for_step(corpus, 42, 7, 4, 16)
    x2, y2 = batch_for_step(corpus, 42, 7, 4, 16)
    x3, _ = batch_for_step(corpus, 42, 8, 4, 16)
    assert x1.equal(x2) and y1.equal(y2) and not x1.equal(x3)
    assert x1[:, 1:].equal(y1[:, :-1]), "labels are the inputs shifted by one byte"
    assert shard(x1, 0, 2).equal(x1[:2]) and shard(x1, 1, 2).equal(x1[2:])


def test_argument_checks_agree_with_the_model():
    from moeconsole.runner.demo.model import ModelConfig
    from moeconsole.runner.demo.train import NUM_HEADS

    assert ModelConfig().num_heads == NUM_HEADS


def test_argument_checking_does_not_import_torch():
    """Bad flags must fail in milliseconds: the CLI module stays free of torch until training."""
    import subprocess

    from tests.demo.demo_helpers import PYTHON, REPO

    code = "import sys, moeconsole.runner.demo.train; sys.exit('torch' in sys.modules)"
    assert subprocess.run([PYTHON, "-c", code], cwd=REPO, timeout=60).returncode == 0
