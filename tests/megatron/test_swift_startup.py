"""ms-swift's `megatron sft` start-up checks (MegatronArguments.__post_init__ / _init_distributed,
swift/megatron/arguments/megatron_args.py of 4.2.0 and 4.6.0; megatron-core 0.16.1's
initialize_model_parallel): `moeconsole lint` reports each as an error citing the source lines, and
the fake `megatron sft` refuses the same command at start-up with ms-swift's own message."""
from __future__ import annotations

import socket

import pytest

from tests.megatron.test_fake_megatron_e2e import run_fake
from tests.megatron.test_swift_lint import by_rule, lint

BASE = ["megatron", "sft", "--model", "M", "--dataset", "/data/d.jsonl", "--tuner_type", "lora",
        "--merge_lora", "false", "--train_iters", "4"]
EIGHT = {"NPROC_PER_NODE": "8"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

# (extra flags, env, rule, ms-swift's message, 4.6.0 lines, 4.2.0 lines)
CASES = [
    (["--global_batch_size", "12", "--micro_batch_size", "1"], EIGHT, "swift_global_batch_not_divisible",
     "global batch size (12) is not divisible by micro batch size (1) times data parallel size (8).",
     "l.1003-1005", "l.739-741"),
    (["--recompute_granularity", "selective", "--recompute_method", "uniform"], {},
     "swift_recompute_method_with_selective",
     "recompute method is not yet supported for selective recomputing granularity", "l.849-850", "l.643-644"),
    # recompute_granularity defaults to 'selective': a method alone is refused too.
    (["--recompute_method", "block"], {}, "swift_recompute_method_with_selective",
     "recompute method is not yet supported for selective recomputing granularity", "l.849-850", "l.643-644"),
    (["--group_by_length", "true", "--padding_free", "true"], {}, "swift_group_by_length_padding_free",
     "group_by_length is not compatible with padding_free.", "l.852-853", "l.646-647"),
    (["--decoder_first_pipeline_num_layers", "2"], {}, "swift_pipeline_layers_without_pp",
     "pipeline_model_parallel_size must be greater than 1 if you want to set decoder_first_pipeline_num_layers or "
     "decoder_last_pipeline_num_layers.", "l.885-888", "l.676-679"),
    (["--tp_comm_overlap", "true", "--tensor_model_parallel_size", "2", "--global_batch_size", "4"], EIGHT,
     "swift_tp_comm_overlap_without_sp",
     "Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled",
     "l.949-951", "l.728-730"),
    (["--global_batch_size", "4", "--micro_batch_size", "1"], EIGHT, "swift_global_batch_not_divisible",
     "global batch size (4) is not divisible by micro batch size (1) times data parallel size (8).",
     "l.1003-1005", "l.739-741"),
]


@pytest.mark.parametrize("version", ["4.2.0", "4.6.0"])
@pytest.mark.parametrize("extra,env,rule,message,l46,l42", CASES, ids=[c[2] + str(i) for i, c in enumerate(CASES)])
def test_lint_reports_ms_swifts_start_up_refusal_with_its_source_lines(tmp_path, version, extra, env, rule,
                                                                        message, l46, l42):
    probs = lint(tmp_path, BASE + extra, swift={"version": version}, env=env)
    (e,) = by_rule(probs, rule)
    assert e["level"] == "error" and message in e["message"], e["message"]
    lines = l46 if version == "4.6.0" else l42
    assert f"swift/megatron/arguments/megatron_args.py {lines} ({version})" in e["message"], e["message"]


def test_world_size_not_divisible_by_the_model_parallel_size_is_megatron_cores_refusal(tmp_path):
    probs = lint(tmp_path, BASE + ["--tensor_model_parallel_size", "3"], swift={"version": "4.6.0"}, env=EIGHT)
    (e,) = by_rule(probs, "swift_world_not_divisible")
    assert "RuntimeError: world_size (8) is not divisible by 3" in e["message"]
    assert "megatron/core/parallel_state.py l.740-741" in e["message"]


def test_the_records_batch_on_eight_gpus_lints_clean(tmp_path):
    probs = lint(tmp_path, BASE + ["--global_batch_size", "8", "--micro_batch_size", "1", "--recompute_granularity",
                                   "full", "--recompute_method", "uniform", "--recompute_num_layers", "3"],
                 swift={"version": "4.6.0"}, env=EIGHT)
    assert not [p for p in probs if p["level"] == "error"], probs


@pytest.mark.parametrize("extra,env,rule,message,l46,l42", CASES, ids=[c[2] + str(i) for i, c in enumerate(CASES)])
def test_the_fake_megatron_refuses_the_same_commands_at_start_up(tmp_path, extra, env, rule, message, l46, l42):
    if env:     # the wrapper runs torchrun with a rank process each: they refuse before meeting
        env = {**env, "MASTER_PORT": str(free_port())}
    proc = run_fake(tmp_path, "--train_iters", "2", "--merge_lora", "false", *extra, env=env)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"\nValueError: {message}\n" in proc.stderr
    assert not list((tmp_path / "o").glob("v*/checkpoint-*"))       # refused before anything trained


# main's 4.6.0.dev0 (commit 3602360a) raises the same texts at other lines of megatron_args.py
MAIN_LINES = {"swift_global_batch_not_divisible": "l.951-953", "swift_recompute_method_with_selective": "l.800-801",
              "swift_group_by_length_padding_free": "l.803-804", "swift_pipeline_layers_without_pp": "l.833-836",
              "swift_tp_comm_overlap_without_sp": "l.897-899"}


@pytest.mark.parametrize("extra,env,rule,message,l46,l42", CASES, ids=[c[2] + str(i) for i, c in enumerate(CASES)])
def test_lint_cites_mains_own_lines_for_a_main_build(tmp_path, extra, env, rule, message, l46, l42):
    (e,) = by_rule(lint(tmp_path, BASE + extra, swift={"version": "4.6.0.dev0"}, env=env), rule)
    assert message in e["message"]
    assert f"swift/megatron/arguments/megatron_args.py {MAIN_LINES[rule]} (4.6.0.dev0, main)" in e["message"], \
        e["message"]


MUON = "`muon_lr`/`muon_min_lr` require `--optimizer muon` or `--optimizer dist_muon`."


@pytest.mark.parametrize("flag", ["--muon_lr", "--muon_min_lr"])
def test_muon_lr_without_muon_is_refused_by_4_6_0_only(tmp_path, flag):
    """4.6.0 MegatronArguments._check_muon (megatron_args.py l.1020-1047), called after _init_distributed."""
    (e,) = by_rule(lint(tmp_path, BASE + [flag, "0.02"], swift={"version": "4.6.0"}), "swift_muon_lr_without_muon")
    assert e["level"] == "error" and e["message"].startswith(f"ValueError: {MUON}")
    assert "megatron_args.py l.1046-1047 (4.6.0)" in e["message"]
    for opt in ("muon", "dist_muon"):
        assert not by_rule(lint(tmp_path, BASE + [flag, "0.02", "--optimizer", opt], swift={"version": "4.6.0"}),
                           "swift_muon_lr_without_muon")
    # main's 4.6.0.dev0 has no such flag: it stops earlier, at the parser
    dev = lint(tmp_path, BASE + [flag, "0.02"], swift={"version": "4.6.0.dev0"})
    assert not by_rule(dev, "swift_muon_lr_without_muon")
    (u,) = by_rule(dev, "swift_unknown_flag")
    assert u["message"].startswith(f"{flag}: ms-swift 4.6.0.dev0 `megatron sft` has no such flag")


def test_the_fake_megatron_refuses_muon_lr_without_muon(tmp_path):
    proc = run_fake(tmp_path, "--train_iters", "2", "--merge_lora", "false", "--muon_lr", "0.02")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"\nValueError: {MUON}\n" in proc.stderr
    assert not list((tmp_path / "o").glob("v*/checkpoint-*"))


# MegatronTunerMixin.__post_init__, the first check MegatronArguments.__post_init__ runs (every 4.x)
FREEZE = "`freeze_parameters_ratio` is not supported when `pipeline_model_parallel_size` > 1"


@pytest.mark.parametrize("version, lines", [("4.2.0", "l.361-362 (4.2.0)"), ("4.6.0", "l.493-494 (4.6.0)")])
def test_a_partial_freeze_under_pipeline_parallelism_is_refused(tmp_path, version, lines):
    probs = lint(tmp_path, BASE + ["--freeze_parameters_ratio", "0.5", "--pipeline_model_parallel_size", "2",
                                   "--global_batch_size", "8"], swift={"version": version}, env=EIGHT)
    (e,) = by_rule(probs, "swift_freeze_ratio_with_pp")
    assert e["level"] == "error" and FREEZE in e["message"] and lines in e["message"], e["message"]
    for extra in (["--freeze_parameters_ratio", "0.5"], ["--freeze_parameters_ratio", "1", "--pipeline_model_parallel_size", "2"]):
        assert not by_rule(lint(tmp_path, BASE + extra, swift={"version": version}), "swift_freeze_ratio_with_pp")


FSDP_CONNECTIONS = "Megatron-FSDP requires `CUDA_DEVICE_MAX_CONNECTIONS > 1`, for example you can set " \
                   "`CUDA_DEVICE_MAX_CONNECTIONS=32`"


def test_megatron_fsdp_without_more_device_connections_is_refused(tmp_path, monkeypatch):
    """`megatron sft` sets CUDA_DEVICE_MAX_CONNECTIONS=1 where it is unset (swift/cli/_megatron/sft.py),
    and Megatron-FSDP then refuses it: a plain --use_megatron_fsdp true never starts."""
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    (e,) = by_rule(lint(tmp_path, BASE + ["--use_megatron_fsdp", "true"], swift={"version": "4.6.0"}),
                   "swift_megatron_fsdp_max_connections")
    assert FSDP_CONNECTIONS in e["message"] and "_check_megatron_fsdp l.969-971 (4.6.0)" in e["message"], e["message"]
    # set by the recipe, or in the shell `run` is typed in: it starts
    assert not by_rule(lint(tmp_path, BASE + ["--use_megatron_fsdp", "true"], swift={"version": "4.6.0"},
                            env={"CUDA_DEVICE_MAX_CONNECTIONS": "32"}), "swift_megatron_fsdp_max_connections")
    monkeypatch.setenv("CUDA_DEVICE_MAX_CONNECTIONS", "8")
    assert not by_rule(lint(tmp_path, BASE + ["--use_megatron_fsdp", "true"], swift={"version": "4.6.0"}),
                       "swift_megatron_fsdp_max_connections")
    # the recipe's own 1 wins over the shell's
    (e,) = by_rule(lint(tmp_path, BASE + ["--use_megatron_fsdp", "true"], swift={"version": "4.5.3"},
                        env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"}), "swift_megatron_fsdp_max_connections")
    assert "_check_megatron_fsdp l.925-927 (4.5.3)" in e["message"], e["message"]


def test_megatron_fsdp_with_another_optimizer_than_adam_or_sgd_is_refused(tmp_path):
    (e,) = by_rule(lint(tmp_path, BASE + ["--use_megatron_fsdp", "true", "--optimizer", "muon"],
                        swift={"version": "4.6.0"}, env={"CUDA_DEVICE_MAX_CONNECTIONS": "32"}),
                   "swift_megatron_fsdp_optimizer")
    assert 'Megatron-FSDP does not support the "muon" optimizer yet.' in e["message"], e["message"]
    assert not by_rule(lint(tmp_path, BASE + ["--use_megatron_fsdp", "true", "--optimizer", "sgd"],
                            swift={"version": "4.6.0"}, env={"CUDA_DEVICE_MAX_CONNECTIONS": "32"}),
                       "swift_megatron_fsdp_optimizer")


def test_the_fake_megatron_refuses_megatron_fsdp_as_ms_swift_does(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    proc = run_fake(tmp_path, "--train_iters", "2", "--merge_lora", "false", "--use_megatron_fsdp", "true")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"\nValueError: {FSDP_CONNECTIONS}\n" in proc.stderr
    (tmp_path / "b").mkdir()
    ok = run_fake(tmp_path / "b", "--train_iters", "2", "--merge_lora", "false", "--use_megatron_fsdp", "true",
                  env={"CUDA_DEVICE_MAX_CONNECTIONS": "32"})
    assert f"ValueError: {FSDP_CONNECTIONS}" not in ok.stderr, ok.stderr[-2000:]


# `megatron rlhf --rlhf_type grpo`: RLHFMegatronArgumentsMixin.__post_init__ runs first (_init_grpo)
GRPO = ["megatron", "rlhf", "--rlhf_type", "grpo", "--model", "M", "--dataset", "/data/d.jsonl",
        "--tuner_type", "lora", "--merge_lora", "false"]


@pytest.mark.parametrize("extra, rule, message, lines", [
    (["--num_iterations", "2"], "swift_grpo_unsupported", "num_iterations > 1 is not supported for Megatron GRPO right now",
     {"4.2.0": "l.307-308 (4.2.0)", "4.5.3": "l.400-401 (4.4.0, 4.5.3)", "4.6.0": "l.400-401 (4.6.0)"}),
    (["--async_generate", "true"], "swift_grpo_unsupported", "async_generate is not supported for Megatron GRPO right now",
     {"4.2.0": "l.299-300 (4.2.0)", "4.5.3": "l.396-397 (4.4.0, 4.5.3)", "4.6.0": "l.396-397 (4.6.0)"}),
    (["--truncation_strategy", "right"], "swift_grpo_truncation",
     "GRPO requires `truncation_strategy 'left' or 'delete'`, Current value: `truncation_strategy='right'`.",
     {"4.2.0": "l.316-318 (4.2.0)", "4.5.3": "l.416-418 (4.4.0, 4.5.3)", "4.6.0": "l.416-418 (4.6.0)"}),
    (["--use_vllm", "false"], "swift_grpo_needs_vllm", "AssertionError: use_vllm must be True for Megatron GRPO",
     {"4.2.0": "l.332 (4.2.0)", "4.5.3": "l.439-440 (4.4.0, 4.5.3)", "4.6.0": "l.459-460 (4.6.0)"}),
])
@pytest.mark.parametrize("version", ["4.2.0", "4.5.3", "4.6.0"])
def test_megatron_grpo_refusals_at_start_up(tmp_path, version, extra, rule, message, lines):
    (e,) = by_rule(lint(tmp_path, GRPO + extra, swift={"version": version}), rule)
    assert e["level"] == "error" and message in e["message"], e["message"]
    assert f"megatron_args.py {lines[version]}" in e["message"] and "`megatron rlhf` refuses" in e["message"], e["message"]


def test_megatron_grpo_as_ms_swift_defaults_it_lints_clean_of_these(tmp_path):
    probs = lint(tmp_path, GRPO + ["--truncation_strategy", "delete"], swift={"version": "4.6.0"})
    assert not [p for p in probs if p["rule"].startswith("swift_grpo_")], probs
    # under Ray (4.4+) vLLM is not asked for; the same flags on sft or dpo are not GRPO's to refuse
    assert not by_rule(lint(tmp_path, GRPO + ["--use_vllm", "false", "--use_ray", "true"], swift={"version": "4.6.0"}),
                       "swift_grpo_needs_vllm")
    dpo = [a if a != "grpo" else "dpo" for a in GRPO]
    assert not by_rule(lint(tmp_path, dpo + ["--num_iterations", "2"], swift={"version": "4.6.0"}), "swift_grpo_unsupported")


def test_megatron_grpo_4_2_refused_an_unshuffled_dataset_too(tmp_path):
    (e,) = by_rule(lint(tmp_path, GRPO + ["--dataset_shuffle", "false"], swift={"version": "4.2.0"}), "swift_grpo_unsupported")
    assert "dataset_shuffle false is not supported for Megatron GRPO" in e["message"]
    assert not by_rule(lint(tmp_path, GRPO + ["--dataset_shuffle", "false"], swift={"version": "4.6.0"}),
                       "swift_grpo_unsupported")
