"""Crash texts met in real jobs that were once misclassified, written from the programs'
own formats; and the policy for the classes they need (gpu_unavailable, config_error)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from moeconsole.runner.core.crash import CrashVerdict, classify
from moeconsole.runner.process.proctree import live_pid_set, own_pid_set
from moeconsole.runner.core.policy import AttemptRecord, RestartSettings, decide

OOM_OWN = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
           "capacity of 79.19 GiB of which 120.00 MiB is free. Process 566680 has 79.00 GiB memory in "
           "use. Of the allocated memory 76.50 GiB is allocated by PyTorch, and 1.81 GiB is reserved "
           "by PyTorch but unallocated.")


def test_called_process_error_with_sigsegv_is_segfault():
    tail = ["Traceback (most recent call last):",
            '  File "/opt/launch.py", line 40, in <module>',
            "subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', "
            "'--local_rank=0']' died with <Signals.SIGSEGV: 11>."]
    v = classify(1, tail, steps_seen=120)
    assert v.cls == "segfault" and v.retryable
    assert any("SIGSEGV" in e for e in v.evidence)


@pytest.mark.parametrize("line, cls", [
    ("[node-3:12345] *** Caught signal 7 (Bus error: nonexistent physical address)", "bus_error"),
    ("[2026-01-02 03:04:05,678] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
     "'train.py'] exits with return code = -9", "killed_oom"),
    ("Killed: 9", "killed_oom"),
    ("Caught signal 11 (Segmentation fault: address not mapped to object at address 0x0)", "segfault"),
])
def test_signal_texts_count_even_when_the_exit_status_is_1(line, cls):
    v = classify(1, ["step 10 loss 1.0", line], steps_seen=10)
    assert v.cls == cls
    assert line.strip().split("] ")[-1][:20] in " ".join(v.evidence)


def test_srun_labelled_exception_reaches_the_unknown_summary():
    tail = ["0: Traceback (most recent call last):",
            '0:   File "train.py", line 3, in <module>',
            "0: KeyError: 'input_ids'",
            "srun: error: node-1: task 0: Exited with exit code 1"]
    v = classify(1, tail, steps_seen=5)
    assert v.cls == "unknown" and "KeyError: 'input_ids'" in v.summary


def test_bare_exception_line_in_unknown_summary():
    v = classify(1, ["Traceback (most recent call last):", "Exception: dataset shard 7 is empty"], steps_seen=3)
    assert "Exception: dataset shard 7 is empty" in v.summary


# --- own PID across PID namespaces --------------------------------------------------------

def test_oom_naming_our_own_pid_is_not_gpu_busy():
    v = classify(1, [OOM_OWN], steps_seen=0, own_pids={566680, 31}, live_pids={1, 2, 3})
    assert v.cls == "cuda_oom"


def test_oom_naming_a_pid_we_cannot_see_cannot_be_proven_foreign():
    v = classify(1, [OOM_OWN], steps_seen=0, own_pids={31, 32}, live_pids={1, 31, 900})
    assert v.cls == "cuda_oom"


def test_oom_naming_a_live_pid_outside_the_tree_is_gpu_busy():
    v = classify(1, [OOM_OWN], steps_seen=0, own_pids={31, 32}, live_pids={1, 566680})
    assert v.cls == "gpu_busy_at_init" and "566680" in v.summary


def test_own_pid_set_reads_nspid_of_a_real_process(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pids = own_pid_set([child.pid])
        assert child.pid in pids
        with open(f"/proc/{child.pid}/status") as f:
            nspid = next((ln.split()[1:] for ln in f if ln.startswith("NSpid:")), [])
        assert {int(x) for x in nspid} <= pids
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    # a process that is gone is skipped, its PID kept; it is not alive any more
    assert own_pid_set([child.pid]) == {child.pid}
    assert os.getpid() in live_pid_set() and child.pid not in live_pid_set()
    # a fake /proc: a process seen from the host with its container PID
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "status").write_text("Name:\tpython\nNSpid:\t4242\t17\nPPid:\t1\n")
    assert own_pid_set([4242], proc=str(tmp_path)) == {4242, 17}


# --- gpu_unavailable ----------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    "torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    "RuntimeError: Found no NVIDIA driver on your system. no CUDA-capable device is detected",
    "RuntimeError: CUDA error: no CUDA-capable device is detected",
])
def test_gpu_unavailable_is_its_own_class(line):
    v = classify(1, ["Traceback (most recent call last):", line], steps_seen=0)
    assert v.cls == "gpu_unavailable" and v.recovery == "wait_gpu"
    assert "no usable GPU" in v.summary


def hist(classes: list[str]) -> list[AttemptRecord]:
    return [AttemptRecord(attempt=i + 1, started_at=1000.0 + i * 100, ended_at=1010.0 + i * 100,
                          resumed_step=None, last_step=None, crash_class=c) for i, c in enumerate(classes)]


def test_policy_waits_for_the_gpu_then_fails_with_the_reason():
    settings = RestartSettings(gpu_wait_s=60.0, gpu_wait_max_s=180.0)
    v = classify(1, ["RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"])
    actions = [decide(v, hist(["gpu_unavailable"] * n), settings, 2000.0) for n in range(1, 5)]
    assert [d.action for d in actions] == ["restart", "restart", "restart", "fail"]
    assert all(d.delay_s == 60.0 for d in actions[:3])
    assert "busy or unavailable" in actions[-1].reason and "gpu_wait_max_s" in actions[-1].reason
    # waits are not restarts: a real crash after them still has its restarts and progress budget
    seg = classify(-11, [], steps_seen=0)
    d = decide(seg, hist(["gpu_unavailable"] * 3 + ["segfault"]),
               RestartSettings(max_restarts=1, no_progress_attempts=2), 2000.0)
    assert d.action == "restart"


def test_gpu_wait_settings_are_validated():
    from moeconsole.runner.core.errors import InputError
    with pytest.raises(InputError, match="restart.gpu_wait_s: must be a finite number of seconds >= 0"):
        RestartSettings.from_recipe({"gpu_wait_s": -1})
    assert RestartSettings.from_recipe({"gpu_wait_max_s": 30}).gpu_wait_max_s == 30.0


# --- config_error -------------------------------------------------------------------------

ARGPARSE = ["usage: train.py [-h] [--lr LR] [--epochs EPOCHS]",
            "train.py: error: unrecognized arguments: --learning-rate 3e-4"]
SWIFT = ["Traceback (most recent call last):",
         '  File "/opt/swift/cli/sft.py", line 5, in <module>',
         "ValueError: remaining_argv: ['--lora_rnak', '8']"]


@pytest.mark.parametrize("tail, code, own", [
    (ARGPARSE, 2, "train.py: error: unrecognized arguments: --learning-rate 3e-4"),
    (SWIFT, 1, "ValueError: remaining_argv: ['--lora_rnak', '8']"),
    (["ValueError: Some specified arguments are not used by the HfArgumentParser: ['--foo']"], 1,
     "not used by the HfArgumentParser"),
])
def test_usage_error_on_first_attempt_is_config_error_and_not_retried(tail, code, own):
    v = classify(code, tail, steps_seen=0, attempt=1)
    assert v.cls == "config_error" and not v.retryable
    assert own in v.summary
    d = decide(v, hist(["config_error"]), RestartSettings(), 2000.0)
    assert d.action == "fail" and own in d.reason


def test_usage_error_torchrun_child_exit_2():
    tail = ARGPARSE + ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
                       "Root Cause (first observed failure):", "[0]:",
                       "  rank      : 0 (local_rank: 0)", "  exitcode  : 2 (pid: 4100)",
                       "  error_file: <N/A>", "======"]
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "config_error" and "(exit 2)" in v.summary


def test_usage_text_after_steps_or_on_a_later_attempt_is_not_config_error():
    assert classify(2, ARGPARSE, steps_seen=10).cls != "config_error"
    assert classify(2, ARGPARSE, steps_seen=0, attempt=3).cls != "config_error"


# --- ms-swift's argument checks (config_error) ----------------------------------------------

SP = "/venv/lib/python3.11/site-packages"
# Captured from ms-swift 4.6.0: `swift sft --model /tmp/k3/nomodel --packing true --lazy_tokenize true
# --dataset x.jsonl --output_dir out` (the trainer child's stderr; `^^^` marker lines omitted).
SWIFT_ARGS_TB = [
    "[INFO:swift] rank: -1, local_rank: -1, world_size: 1, local_world_size: 1",
    "Traceback (most recent call last):",
    f'  File "{SP}/swift/cli/sft.py", line 20, in <module>', "    sft_main()",
    f'  File "{SP}/swift/pipelines/train/sft.py", line 345, in sft_main', "    return SwiftSft(args).main()",
    f'  File "{SP}/swift/pipelines/base.py", line 35, in _parse_args',
    "    args, remaining_argv = parse_args(self.args_class, args)",
    f'  File "{SP}/swift/utils/utils.py", line 186, in parse_args',
    "    args, remaining_args = parser.parse_args_into_dataclasses(argv, return_remaining_strings=True)",
    f'  File "{SP}/transformers/hf_argparser.py", line 345, in parse_args_into_dataclasses',
    "    obj = dtype(**inputs)",
    '  File "<string>", line 336, in __init__',
    f'  File "{SP}/swift/arguments/sft_args.py", line 208, in __post_init__', "    BaseArguments.__post_init__(self)",
    f'  File "{SP}/swift/arguments/base_args/model_args.py", line 195, in _init_model_info',
    "    self.model_info, self.model_meta = get_model_info_meta(**model_kwargs)",
    f'  File "{SP}/swift/utils/hub_utils.py", line 98, in safe_snapshot_download',
    "    raise ValueError(f\"path: '{model_id_or_path}' not found\")",
    "ValueError: path: '/tmp/k3/nomodel' not found",
]


def swift_raise(path: str, func: str, line: str) -> list[str]:
    """The traceback of an exception raised in ms-swift's argument dataclass ``path`` (its
    ``__post_init__`` runs inside HfArgumentParser.parse_args_into_dataclasses)."""
    return ["Traceback (most recent call last):",
            f'  File "{SP}/transformers/hf_argparser.py", line 345, in parse_args_into_dataclasses',
            "    obj = dtype(**inputs)", '  File "<string>", line 336, in __init__',
            f'  File "{SP}/{path}", line 1, in {func}', "    raise ...", line]


@pytest.mark.parametrize("path, func, line", [
    # 4.6.0 swift/arguments/base_args/base_args.py:166
    ("swift/arguments/base_args/base_args.py", "_init_lazy_tokenize", "ValueError: Packing and lazy_tokenize are incompatible."),
    # 4.6.0 swift/arguments/rlhf_args.py:354
    ("swift/arguments/rlhf_args.py", "_check_grpo",
     "ValueError: GRPO requires `truncation_strategy 'left' or 'delete'`, Current value: `truncation_strategy='right'`."),
    # 4.6.0 swift/megatron/arguments/megatron_args.py:914
    ("swift/megatron/arguments/megatron_args.py", "__post_init__",
     "ValueError: save_total_limit must be greater than or equal to 2."),
    # 4.6.0 swift/arguments/export_args.py:121
    ("swift/arguments/export_args.py", "__post_init__", "FileExistsError: args.output_dir: `out-merged` already exists."),
    # 4.6.0 swift/arguments/base_args/base_args.py:219 (an assert)
    ("swift/arguments/base_args/base_args.py", "__post_init__",
     "AssertionError: `/m` is not an adapter, please try using `--model` to pass it."),
    # 3.x swift/llm/argument/train_args.py
    ("swift/llm/argument/train_args.py", "__post_init__", "ValueError: Please set --model <model_id_or_path>, model: None"),
])
def test_an_ms_swift_argument_check_is_config_error_and_not_retried(path, func, line):
    v = classify(1, swift_raise(path, func, line), steps_seen=0, attempt=1)
    assert v.cls == "config_error" and not v.retryable and v.recovery == "fail", v
    assert line in v.summary and v.hint and "fix the recipe" in v.hint
    d = decide(v, hist(["config_error"]), RestartSettings(), 2000.0)
    assert d.action == "fail" and line in d.reason


def test_ms_swift_46_real_argument_traceback_is_config_error():
    v = classify(1, SWIFT_ARGS_TB, steps_seen=0, attempt=1)
    assert v.cls == "config_error", v
    assert v.summary == "configuration error (exit 1): ValueError: path: '/tmp/k3/nomodel' not found"


def test_an_argument_exception_is_config_error_only_when_it_ended_a_first_start():
    tb = swift_raise("swift/arguments/base_args/base_args.py", "__post_init__",
                     "ValueError: Packing and lazy_tokenize are incompatible.")
    assert classify(1, tb, steps_seen=5, attempt=1).cls != "config_error"
    assert classify(1, tb, steps_seen=0, attempt=2).cls != "config_error"
    later = tb + ["Traceback (most recent call last):", f'  File "{SP}/swift/trainers/mixin.py", line 9, in train',
                  "RuntimeError: something else"]
    assert classify(1, later, steps_seen=0, attempt=1).cls != "config_error"
    # the same ValueError raised outside the argument checks (a data error while training starts)
    data = ["Traceback (most recent call last):", f'  File "{SP}/swift/dataset/loader.py", line 9, in load',
            "ValueError: Packing and lazy_tokenize are incompatible."]
    assert classify(1, data, steps_seen=0, attempt=1).cls == "unknown"


def test_a_cause_with_a_class_of_its_own_wins_over_the_argument_frames():
    """Exceptions raised while the arguments are built that have their own class keep it: a
    missing package (missing_dependency), a repo the Hub will not give (hub_access), a CUDA OOM."""
    dep = swift_raise("swift/megatron/arguments/megatron_args.py", "__post_init__",
                      "ModuleNotFoundError: No module named 'megatron.bridge'")
    assert classify(1, dep, steps_seen=0, attempt=1).cls == "missing_dependency"
    hub = swift_raise("swift/arguments/base_args/model_args.py", "_init_model_info",
                      "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url: "
                      "https://huggingface.co/api/models/Qwen/Nope.")
    assert classify(1, hub, steps_seen=0, attempt=1).cls == "hub_access"
    oom = swift_raise("swift/arguments/sft_args.py", "__post_init__", OOM_OWN)
    assert classify(1, oom, steps_seen=0, attempt=1).cls != "config_error"


def test_a_rendezvous_timeout_while_the_arguments_are_built_is_not_config_error():
    """transformers' TrainingArguments.__post_init__ sets up the devices and joins the process group
    (accelerate PartialState -> torch.distributed.init_process_group): a node that comes late times
    the store out there, inside parse_args_into_dataclasses. A restart can get past it: not a
    refusal of the recipe."""
    tb = ["Traceback (most recent call last):",
          f'  File "{SP}/transformers/hf_argparser.py", line 345, in parse_args_into_dataclasses',
          "    obj = dtype(**inputs)", '  File "<string>", line 336, in __init__',
          f'  File "{SP}/swift/arguments/sft_args.py", line 228, in __post_init__', "    self._init_device()",
          f'  File "{SP}/torch/distributed/distributed_c10d.py", line 1710, in init_process_group',
          "    store, rank, world_size = next(rendezvous_iterator)",
          "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/2 clients joined."]
    assert classify(1, tb, steps_seen=0, attempt=1).cls != "config_error"


def swift_setup_raise(frames: list[tuple[str, str]], line: str) -> list[str]:
    """A traceback from ms-swift's entry point through ``frames`` (path under site-packages,
    function) to ``line``."""
    out = ["Traceback (most recent call last):", f'  File "{SP}/swift/cli/sft.py", line 20, in <module>']
    for path, func in frames:
        out += [f'  File "{SP}/{path}", line 1, in {func}', "    ..."]
    return out + [line]


SFT_MAIN = [("swift/pipelines/train/sft.py", "sft_main"), ("swift/pipelines/base.py", "main"),
            ("swift/pipelines/train/sft.py", "run")]


@pytest.mark.parametrize("frames, line", [
    # 4.6.0 swift/pipelines/train/sft.py:78 (_prepare_template, before trainer.train)
    (SFT_MAIN + [("swift/pipelines/train/sft.py", "_prepare_template")],
     "ValueError: Template `qwen3_nothinking` does not support padding free or packing."),
    # 4.6.0 swift/pipelines/train/tuner.py:350 (prepare_adapter)
    (SFT_MAIN + [("swift/pipelines/train/tuner.py", "prepare_model"), ("swift/pipelines/train/tuner.py", "prepare_adapter")],
     "ValueError: Unknown tuner_type: lora2"),
    # 4.6.0 swift/pipelines/train/sft.py:105 (an assert while the dataset is prepared)
    (SFT_MAIN + [("swift/pipelines/train/sft.py", "_prepare_dataset")],
     "AssertionError: Cached dataset does not support streaming."),
])
def test_an_ms_swift_start_up_refusal_before_training_is_config_error(frames, line):
    v = classify(1, swift_setup_raise(frames, line), steps_seen=0, attempt=1)
    assert v.cls == "config_error" and v.recovery == "fail" and line in v.summary, v
    assert v.hint and "before training started" in v.hint and "data" in v.hint


EXPORT_MAIN = [("swift/pipelines/export/export.py", "export_main"), ("swift/pipelines/base.py", "main"),
               ("swift/pipelines/export/export.py", "run")]
MEGATRON_EXPORT_MAIN = [("swift/megatron/pipelines/export/export.py", "megatron_export_main"),
                        ("swift/pipelines/base.py", "main"), ("swift/megatron/pipelines/export/export.py", "run")]


@pytest.mark.parametrize("frames, line", [
    # 4.6.0 swift/megatron/pipelines/export/export.py:45 (convert_mcore2hf, `megatron export --to_hf`)
    (MEGATRON_EXPORT_MAIN + [("swift/megatron/pipelines/export/export.py", "convert_mcore2hf")],
     "ValueError: Please specify `--mcore_model` or `--model`."),
    # 4.6.0 swift/megatron/pipelines/export/export.py:51 (more than one adapter to merge)
    (MEGATRON_EXPORT_MAIN + [("swift/megatron/pipelines/export/export.py", "convert_mcore2hf")],
     "AssertionError: Currently only support one adapter"),
    # 4.6.0 swift/pipelines/export/quant.py:39 (`swift export --quant_method awq` without --quant_bits)
    (EXPORT_MAIN + [("swift/pipelines/export/quant.py", "quantize")],
     "ValueError: Please set the quant_bits. args.quant_bits: None"),
    # 3.12 swift/llm/export/ and swift/megatron/export/: the same pipeline before the 4.0 move
    ([("swift/llm/export/export.py", "export_main"), ("swift/llm/base.py", "main"),
      ("swift/llm/export/quant.py", "quantize")], "ValueError: args.quant_method: hqq"),
])
def test_an_ms_swift_export_refusal_is_config_error_with_an_export_hint(frames, line):
    """`swift export` / `megatron export` (merge a LoRA, convert to Hugging Face, quantize) refuse a
    recipe from their pipeline, not from the argument classes: every restart refuses it again."""
    v = classify(1, swift_setup_raise(frames, line), steps_seen=0, attempt=1)
    assert v.cls == "config_error" and v.recovery == "fail" and line in v.summary, v
    assert v.hint and "export" in v.hint and "before training started" not in v.hint


def test_the_same_exception_from_inside_training_is_not_a_start_up_refusal():
    """Past ``trainer.train`` (a ``train`` frame) the exception is the training's, not the recipe's."""
    frames = SFT_MAIN + [("swift/pipelines/train/sft.py", "train"), ("transformers/trainer.py", "train"),
                         ("transformers/trainer.py", "_inner_training_loop")]
    v = classify(1, swift_setup_raise(frames, "ValueError: Expected input batch_size (4) to match target (8)."),
                 steps_seen=0, attempt=1)
    assert v.cls == "unknown", v
    # and a RuntimeError in the set-up is not one of ms-swift's refusals
    v = classify(1, swift_setup_raise(SFT_MAIN + [("swift/pipelines/train/sft.py", "_prepare_dataset")],
                                      "RuntimeError: One of the subprocesses has abruptly died during map operation."),
                 steps_seen=0, attempt=1)
    assert v.cls == "unknown", v


# --- hub_rate_limited -----------------------------------------------------------------------
# The Hub's 429 in the words of each client that asks it (huggingface_hub's utils/_http.py, httpx, aiohttp under
# datasets' streaming, hf-mirror.com): a rate limit over 5-minute windows. As `unknown` it was restarted after
# 30 s and 60 s and failed by the no-progress rule inside the window that refused it.
@pytest.mark.parametrize("lines, repo, retry", [
    # huggingface_hub >= 1.2, from the RateLimit headers (request id before the first newline)
    (["huggingface_hub.errors.HfHubHTTPError: (Request ID: Root=1-6751c0a2-3f1e)",
      "",
      "429 Too Many Requests: you have reached your 'resolvers' rate limit.",
      "Retry after 55 seconds (0/5000 requests remaining in current 300s window).",
      "Url: https://huggingface.co/Qwen/Qwen3-30B-A3B/resolve/main/model-00007-of-00016.safetensors."],
     "Qwen/Qwen3-30B-A3B", "55"),
    # huggingface_hub 1.0-1.1 raised httpx's own message
    (["httpx.HTTPStatusError: Client error '429 Too Many Requests' for url "
      "'https://huggingface.co/api/models/Qwen/Qwen3-8B/revision/main'",
      "For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/429"],
     "Qwen/Qwen3-8B", None),
    # datasets streaming through fsspec/aiohttp, from a mirror
    (["aiohttp.client_exceptions.ClientResponseError: 429, message='Too Many Requests', "
      "url='https://hf-mirror.com/datasets/HuggingFaceFW/fineweb/resolve/main/data/CC-MAIN-2024-10/000_00001.parquet'"],
     None, None),
])
def test_the_hubs_rate_limit_is_its_own_class(lines, repo, retry):
    v = classify(1, ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>', *lines],
                 steps_seen=0)
    assert v.cls == "hub_rate_limited" and v.retryable and v.recovery == "wait_hub", (v.summary, v.evidence)
    assert "rate-limiting" in v.summary and "HF_TOKEN" in v.hint and "HF_HUB_OFFLINE=1" in v.hint
    assert (repo in v.summary) if repo else True
    assert (f"retry after {retry} s" in v.summary) if retry else "retry after" not in v.summary


def test_a_429_before_transformers_cannot_connect_is_the_rate_limit_not_an_offline_hub():
    v = classify(1, ["requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: "
                     "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json",
                     "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it "
                     "in the cached files and it looks like meta-llama/Llama-3.1-8B is not the path to a directory "
                     "containing a file named config.json."], steps_seen=0)
    assert v.cls == "hub_rate_limited" and "meta-llama/Llama-3.1-8B" in v.summary, v


@pytest.mark.parametrize("lines", [
    # another service's 429 (a reward API, W&B) is no word about the Hub
    ["openai.RateLimitError: Error code: 429 - {'error': {'message': 'Too Many Requests'}}"],
    ["requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: https://api.wandb.ai/graphql"],
    # a 429 the Hub client logged and survived, then the run's own end
    ["WARNING huggingface_hub.utils._http: HTTP Error 429 thrown while requesting HEAD "
     "https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json (429 Too Many Requests)", "step 40 loss 1.1",
     "KeyError: 'labels'"],
])
def test_a_429_that_is_not_the_hubs_end_is_not_the_class(lines):
    assert classify(1, lines, steps_seen=0).cls == "unknown"


def test_policy_waits_a_hub_window_without_using_restarts_then_fails_with_the_reason():
    v = classify(1, ["huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
                     "https://huggingface.co/api/datasets/HuggingFaceFW/fineweb"], steps_seen=0)
    actions = [decide(v, hist(["hub_rate_limited"] * n), RestartSettings(), 2000.0) for n in range(1, 8)]
    # 300 s (one of the Hub's windows) each time, up to hub_wait_max_s 1800: six waits, then fail
    assert [d.action for d in actions] == ["restart"] * 6 + ["fail"]
    assert all(d.delay_s == 300.0 and d.alert == "warning" for d in actions[:6])
    assert "hub_wait_max_s" in actions[-1].reason and "rate-limiting" in actions[-1].reason
    # the same crash as `unknown` (no step in 3 attempts) failed at the third
    unknown = CrashVerdict(cls="unknown", evidence=(), retryable=True, recovery="restart", summary="exit 1")
    assert decide(unknown, hist(["unknown"] * 3), RestartSettings(), 2000.0).action == "fail"
    # waits are not restarts: a real crash after them still has its restart and progress budget
    d = decide(classify(-11, [], steps_seen=0), hist(["hub_rate_limited"] * 3 + ["segfault"]),
               RestartSettings(max_restarts=1, no_progress_attempts=2), 2000.0)
    assert d.action == "restart"


def test_hub_wait_settings_are_validated():
    from moeconsole.runner.core.errors import InputError
    with pytest.raises(InputError, match="restart.hub_wait_s: must be a finite number of seconds >= 0"):
        RestartSettings.from_recipe({"hub_wait_s": -5})
    assert RestartSettings.from_recipe({"hub_wait_max_s": 600}).hub_wait_max_s == 600.0
