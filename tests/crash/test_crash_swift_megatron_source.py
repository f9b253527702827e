"""ms-swift 4.6's Megatron trainer's own deaths, from its source (docs/megatron.md, "Audit against the
source"): an update the optimizer skips ends it with a TypeError, and no restart can help.

megatron-core 0.16.1 optimizer/optimizer.py l.597-598 returns (False, None, None) for a skipped update;
ms-swift 4.6.0 swift/megatron/trainers/base.py l.1015 passes the None grad norm to
reduce_max_stat_across_model_parallel_group, swift/megatron/utils/parallel_utils.py l.14
``torch.tensor([stat], dtype=torch.float32, ...)``: TypeError: must be real number, not NoneType."""
from __future__ import annotations

from moeconsole.runner.core.crash import classify

SITE = "/opt/swift/lib/python3.11/site-packages"
FRAMES = [
    ("swift/cli/_megatron/sft.py", 7, "<module>", "megatron_sft_main()"),
    ("swift/megatron/pipelines/train/sft.py", 93, "megatron_sft_main", "return MegatronSft(args).main()"),
    ("swift/pipelines/base.py", 52, "main", "result = self.run()"),
    ("swift/megatron/pipelines/train/sft.py", 68, "run", "trainer.train(train_dataset, val_dataset)"),
    ("swift/megatron/trainers/base.py", 795, "train", "self.run_train_step(train_data_iterator, val_data_iterator)"),
    ("swift/megatron/trainers/base.py", 737, "run_train_step",
     "metrics, grad_norm, update_successful = self.train_step(train_data_iterator)"),
    ("swift/megatron/trainers/base.py", 1015, "train_step",
     "grad_norm = reduce_max_stat_across_model_parallel_group(grad_norm)"),
    ("swift/megatron/utils/parallel_utils.py", 14, "reduce_max_stat_across_model_parallel_group",
     "stat = torch.tensor([stat], dtype=torch.float32, device=torch.cuda.current_device())"),
]
LAST = "TypeError: must be real number, not NoneType"


def traceback(frames=FRAMES, last=LAST, prefix="[rank0]: ") -> list[str]:
    out = [f"{prefix}Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'{prefix}  File "{SITE}/{path}", line {line}, in {func}', f"{prefix}    {code}"]
    return out + [prefix + last]


def test_a_skipped_update_fails_the_run_on_every_attempt_with_the_fp16_hint():
    for attempt, steps in ((1, 0), (2, 0), (3, 40)):
        v = classify(1, traceback(), steps_seen=steps, attempt=attempt)
        assert (v.cls, v.recovery, v.retryable) == ("config_error", "fail", False), v
        assert v.summary.startswith("ms-swift's Megatron trainer cannot skip an update")
        assert "--bf16 true" in v.hint and LAST in "\n".join(v.evidence)


def test_without_the_rank_prefix_too():
    assert classify(1, traceback(prefix=""), steps_seen=0, attempt=1).cls == "config_error"


def test_refusal_the_same_typeerror_from_another_program_is_not_this_death():
    other = [(p.replace("swift/megatron/utils/parallel_utils.py", "mylib/stats.py"), ln, f, c) for p, ln, f, c in FRAMES]
    assert classify(1, traceback(other), steps_seen=5, attempt=1).cls == "unknown"
    no_step = [fr for fr in FRAMES if fr[2] != "train_step"]
    assert classify(1, traceback(no_step), steps_seen=5, attempt=1).cls == "unknown"


def test_refusal_another_typeerror_in_ms_swifts_helper_is_not_this_death():
    v = classify(1, traceback(last="TypeError: unsupported operand type(s) for +: 'int' and 'str'"), steps_seen=5,
                 attempt=1)
    assert v.cls == "unknown"


def test_refusal_a_later_oom_decides_over_it():
    text = traceback() + ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                          "total capacity of 139.81 GiB of which 1.06 GiB is free."]
    assert classify(1, text, steps_seen=5, attempt=1).cls == "cuda_oom"
