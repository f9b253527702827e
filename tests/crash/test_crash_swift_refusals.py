"""What ms-swift itself raises for a bad configuration before any step, as it prints it (the traceback
of the real call path, from the 4.6.0 wheel's source; file:line of each frame), through the classifier.

Listed from ms-swift 4.6.0 and its main branch (3602360a): ``raise``/``assert`` under swift/arguments/,
swift/megatron/, swift/trainers/, swift/rlhf_trainers/, swift/pipelines/train/ (402 sites in 4.6.0, 383 in main). Each family
below is one call path; the argument checks (``__post_init__``, through HfArgumentParser) and the
trainers' constructors (the pipeline's ``run`` before ``train``) were already read as ``config_error``;
the checks Megatron's trainer makes in ``train`` before its first step, and its resume checks, were not.
"""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

SP = "/usr/local/lib/python3.11/site-packages"


def _tb(frames: list[tuple[str, int, str]], line: str) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, no, func in frames:
        where = path if path.startswith("/") else f"{SP}/{path}"
        out += [f'  File "{where}", line {no}, in {func}', "    ..."]
    return out + [line]


# swift/cli/_megatron/sft.py l.7 -> megatron/pipelines/train/sft.py l.93 megatron_sft_main -> pipelines/base.py
# l.52 main -> megatron/pipelines/train/sft.py l.68 run (trainer.train) -> megatron/trainers/base.py l.793 train
MEGATRON_TRAIN = [("swift/cli/_megatron/sft.py", 7, "<module>"),
                  ("swift/megatron/pipelines/train/sft.py", 93, "megatron_sft_main"),
                  ("swift/pipelines/base.py", 52, "main"),
                  ("swift/megatron/pipelines/train/sft.py", 68, "run"),
                  ("swift/megatron/trainers/base.py", 793, "train")]
# train l.793 -> setup_training l.723 -> _prepare_data_iterator l.637 -> _prepare_dataloader
MEGATRON_DATALOADER = MEGATRON_TRAIN + [("swift/megatron/trainers/base.py", 723, "setup_training"),
                                        ("swift/megatron/trainers/base.py", 637, "_prepare_data_iterator")]
# the same through megatron rlhf (swift/cli/_megatron/rlhf.py l.24, megatron/pipelines/train/rlhf.py l.73)
MEGATRON_RLHF_DATALOADER = [("swift/cli/_megatron/rlhf.py", 24, "<module>"),
                            ("swift/megatron/pipelines/train/rlhf.py", 73, "megatron_rlhf_main"),
                            *MEGATRON_DATALOADER[2:]]
# parse: pipelines/base.py l.18 __init__ -> l.35 _parse_args -> utils/utils.py l.186 parse_args ->
# transformers hf_argparser.py parse_args_into_dataclasses -> the dataclass __init__ -> __post_init__
MEGATRON_ARGS = [("swift/cli/_megatron/sft.py", 7, "<module>"),
                 ("swift/megatron/pipelines/train/sft.py", 93, "megatron_sft_main"),
                 ("swift/megatron/pipelines/train/sft.py", 40, "__init__"),
                 ("swift/pipelines/base.py", 18, "__init__"),
                 ("swift/pipelines/base.py", 35, "_parse_args"),
                 ("swift/utils/utils.py", 186, "parse_args"),
                 ("transformers/hf_argparser.py", 358, "parse_args_into_dataclasses"),
                 ("<string>", 412, "__init__"),
                 ("swift/megatron/arguments/sft_args.py", 44, "__post_init__"),
                 ("swift/megatron/arguments/megatron_args.py", 954, "__post_init__")]


def test_what_was_already_a_config_error_stays_one():
    # megatron_args.py l.1004 (_init_distributed, from __post_init__ l.954)
    tb = _tb(MEGATRON_ARGS + [("swift/megatron/arguments/megatron_args.py", 1004, "_init_distributed")],
             "ValueError: global batch size (16) is not divisible by micro batch size (3) times data parallel size (2).")
    v = classify(1, tb, steps_seen=0, attempt=1)
    assert v.cls == "config_error" and "global batch size (16)" in v.summary, v
    # megatron/pipelines/train/rlhf.py l.34 prepare_trainer -> grpo_trainer.py l.60 __init__ -> l.196 _prepare_rewards
    tb = _tb([("swift/cli/_megatron/rlhf.py", 24, "<module>"), ("swift/megatron/pipelines/train/rlhf.py", 73,
              "megatron_rlhf_main"), ("swift/pipelines/base.py", 52, "main"),
              ("swift/megatron/pipelines/train/sft.py", 66, "run"), ("swift/megatron/pipelines/train/rlhf.py", 34,
              "prepare_trainer"), ("swift/megatron/trainers/grpo_trainer.py", 60, "__init__"),
              ("swift/megatron/trainers/grpo_trainer.py", 196, "_prepare_rewards")],
             "AssertionError: reward_funcs is not set (or pass --use_gym_env true / a teacher for OPD-RL)")
    assert classify(1, tb, steps_seen=0, attempt=1).cls == "config_error"
    # swift rlhf: cli/rlhf.py l.7 -> pipelines/train/rlhf.py l.259 rlhf_main -> the arguments' __post_init__
    # (arguments/rlhf_args.py l.284 -> sft_args.py l.234 -> trainers/trainer_factory.py l.74 builds GRPOConfig) ->
    # rlhf_trainers/arguments.py l.123 -> rlhf_trainers/args_mixin.py l.229 _init_generation_batch_params
    tb = _tb([("swift/cli/rlhf.py", 7, "<module>"), ("swift/pipelines/train/rlhf.py", 259, "rlhf_main"),
              ("swift/pipelines/base.py", 18, "__init__"), ("swift/pipelines/base.py", 35, "_parse_args"),
              ("swift/utils/utils.py", 186, "parse_args"),
              ("transformers/hf_argparser.py", 358, "parse_args_into_dataclasses"), ("<string>", 530, "__init__"),
              ("swift/arguments/rlhf_args.py", 284, "__post_init__"), ("swift/arguments/sft_args.py", 234,
              "__post_init__"), ("swift/trainers/trainer_factory.py", 74, "get_training_args"),
              ("<string>", 190, "__init__"), ("swift/rlhf_trainers/arguments.py", 123, "__post_init__"),
              ("swift/rlhf_trainers/args_mixin.py", 229, "_init_generation_batch_params")],
             "ValueError: generation_batch_size (12) must be evenly divisible by num_generations (8). "
             "Valid values: [2, 3, 4, 6, 12].")
    assert classify(1, tb, steps_seen=0, attempt=1).cls == "config_error"
    # pipelines/base.py l.40: an unknown flag (--train_type of ms-swift 3.x; 4.x calls it --tuner_type)
    tb = _tb(MEGATRON_ARGS[:5], "ValueError: remaining_argv: ['--train_type', 'lora']")
    assert classify(1, tb, steps_seen=0, attempt=1).cls == "config_error"


@pytest.mark.parametrize("line,text", [
    # --group_by_length true --train_dataloader_shuffle false
    (93, "ValueError: shuffle must be True when group_by_length is True"),
    # a dataset with no usable row (ms-swift deletes the rows its template cannot read, with a warning)
    (105, "AssertionError: no sample to consume: 0"),
])
def test_a_check_megatron_s_trainer_makes_before_its_first_step_is_a_config_error(line, text):
    """batch_sampler.py l.93/l.105 (MegatronPretrainingRandomSampler.__init__, built by _prepare_dataloader
    l.1061). Raised inside ``train`` (so not the start-up rule's pipeline) but in ``setup_training``, before
    ``run_train_step``: every start fails so."""
    tb = _tb(MEGATRON_DATALOADER + [("swift/megatron/trainers/base.py", 1061, "_prepare_dataloader"),
                                    ("swift/megatron/trainers/batch_sampler.py", line, "__init__")], text)
    v = classify(1, tb, steps_seen=0, attempt=1)
    assert v.cls == "config_error" and v.recovery == "fail" and not v.retryable, v
    assert text in v.summary
    # the same exception once steps ran, or from inside a step, is not the start-up's
    assert classify(1, tb, steps_seen=3, attempt=1).cls != "config_error"
    in_step = _tb(MEGATRON_TRAIN + [("swift/megatron/trainers/base.py", 797, "run_train_step"),
                                    ("swift/megatron/trainers/base.py", 1001, "train_step"),
                                    ("swift/megatron/trainers/base.py", 637, "_prepare_data_iterator"),
                                    ("swift/megatron/trainers/batch_sampler.py", 93, "__init__")],
                  "ValueError: shuffle must be True when group_by_length is True")
    assert classify(1, in_step, steps_seen=0, attempt=1).cls != "config_error"


GRPO_RESUME = "RuntimeError: consumed_train_samples (1000) must be divisible by num_generations (8)"


@pytest.mark.parametrize("attempt", [1, 2, 5])
def test_grpo_resume_that_cannot_divide_its_samples_is_refused_not_restarted(attempt):
    """4.6.0 megatron/trainers/base.py l.1055-1058 (_prepare_dataloader): a GRPO/GKD resume whose checkpoint's
    consumed_train_samples is not a multiple of --num_generations. Every restart from that checkpoint with
    that --num_generations ends the same way, so the runner's own resume (attempt 2+) fails too."""
    tb = _tb(MEGATRON_RLHF_DATALOADER + [("swift/megatron/trainers/base.py", 1057, "_prepare_dataloader")],
             GRPO_RESUME)
    v = classify(1, tb, steps_seen=0, attempt=attempt)
    assert v.cls == "config_error" and v.recovery == "fail" and not v.retryable, v
    assert "consumed_train_samples (1000) must be divisible by num_generations (8)" in v.summary
    assert "--num_generations" in v.hint and "checkpoint" in v.hint


def test_grpo_resume_refusal_under_torchrun_with_rank_prefixes():
    """torchrun's per-rank prefixes and its ChildFailedError table after the traceback."""
    tb = [f"[rank0]: {x}" for x in _tb(MEGATRON_RLHF_DATALOADER + [("swift/megatron/trainers/base.py", 1057,
                                                                     "_prepare_dataloader")], GRPO_RESUME)]
    tb += ["E1129 10:00:00.000000 123 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
           "local_rank: 0 (pid: 4242) of binary: /usr/bin/python3",
           "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "]
    assert classify(1, tb, steps_seen=0, attempt=2).cls == "config_error"


def test_the_resume_text_without_its_frames_or_once_steps_ran_is_not_a_refusal():
    # quoted in a warning or a log line, not the exception that ended the attempt
    assert classify(1, ["WARNING: " + GRPO_RESUME[len("RuntimeError: "):], "Killed"], steps_seen=0,
                    attempt=2).cls != "config_error"
    tb = _tb(MEGATRON_RLHF_DATALOADER + [("swift/megatron/trainers/base.py", 1057, "_prepare_dataloader")],
             GRPO_RESUME)
    assert classify(1, tb, steps_seen=4, attempt=2).cls != "config_error"


# megatron/pipelines/train/sft.py l.66 run -> l.34 prepare_trainer -> trainers/base.py l.97 __init__ ->
# l.126 _load_checkpoint -> utils/megatron_lm_utils.py load_mcore_checkpoint
MEGATRON_LOAD = [("swift/cli/_megatron/sft.py", 7, "<module>"),
                 ("swift/megatron/pipelines/train/sft.py", 93, "megatron_sft_main"),
                 ("swift/pipelines/base.py", 52, "main"),
                 ("swift/megatron/pipelines/train/sft.py", 66, "run"),
                 ("swift/megatron/pipelines/train/sft.py", 34, "prepare_trainer"),
                 ("swift/megatron/trainers/base.py", 97, "__init__"),
                 ("swift/megatron/trainers/base.py", 126, "_load_checkpoint")]


@pytest.mark.parametrize("line,text,advice", [
    # 4.6.0 l.534 (4.2.0 l.417, main l.440): Megatron-LM's load_checkpoint words
    (534, "RuntimeError: (TP, PP) mismatch after resume ((4, 1) vs (2, 1) from checkpoint): not supported for "
          "DistributedOptimizer", "--no_load_optim true"),
    # Megatron-LM's own load_checkpoint (megatron/training/checkpointing.py), newer wording
    (534, "RuntimeError: (TP, PP) mismatch after resume ((2, 2) vs (1, 1) from checkpoint): not supported for "
          "DistributedOptimizer with sharding type dp_zero_gather_scatter. Please use `--ckpt-fully-parallel-save` "
          "flag during checkpoint saving.", "--no-load-optim"),
    # 4.6.0 l.490
    (490, "ValueError: Checkpoint `/ckpt/v0-20261129/checkpoint-200/iter_0000200` uses PyTorch DCP storage but was not "
          "saved as a Megatron-FSDP fsdp_dtensor checkpoint.", "without --use_megatron_fsdp"),
])
@pytest.mark.parametrize("attempt", [1, 3])
def test_a_checkpoint_megatron_cannot_load_under_this_command_is_refused(line, text, advice, attempt):
    tb = _tb(MEGATRON_LOAD + [("swift/megatron/utils/megatron_lm_utils.py", line, "load_mcore_checkpoint")], text)
    v = classify(1, tb, steps_seen=0, attempt=attempt)
    assert v.cls == "config_error" and v.recovery == "fail", v
    assert v.summary == f"resume refused: {text}" and advice in v.hint, v
