"""The repeated-crash rule (policy.repeated_crash): a crash that is deterministic but comes AFTER
progress (Megatron-core's CheckpointingException at every save, an assert at one data sample, a save
to a full disk) makes each attempt resume from the same checkpoint, train to the same step and crash
the same way. The no-progress rule never trips (last_step > resumed_step), the crash window does not
when attempts take hours: only the restart cap ended it. The second identical crash now pauses."""
from __future__ import annotations

import msgspec
import pytest

from moeconsole.runner.core import state as state_model
from moeconsole.runner.core.crash import CrashVerdict, classify, error_identity
from moeconsole.runner.core.policy import (REPEAT_PROVES_NOTHING, RESUME_UNKNOWN, AttemptRecord, RestartSettings,
                                           decide, repeated_crash)
from moeconsole.runner.supervisor.recovery import attempt_record

HOUR = 3600.0
CK40 = "/data/run/output/checkpoint-40"
CK60 = "/data/run/output/checkpoint-60"
# No crash window, so only the new rule (or the restart cap) can stop a loop of hour-long attempts.
SETTINGS = RestartSettings(max_restarts=10, max_crashes_per_window=60)


def megatron_save_tail(pid: int, addr: str, when: str) -> list[str]:
    """What a Megatron-core torch_dist save that cannot be written prints, as torchrun relays it
    (megatron/core/dist_checkpointing/exchange_utils.py raises it; torchrun's elastic api.py line
    names the failed local rank and its PID): the PID, time and addresses differ per attempt."""
    return [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/opt/Megatron-LM/megatron/core/dist_checkpointing/strategies/torch.py", line 512, in '
        "_get_save_and_finalize_callbacks",
        "[rank0]: megatron.core.dist_checkpointing.core.CheckpointingException: Flattened ranges dont cover the "
        "whole shard ShardedTensor(key='decoder.layers.0.mlp.experts.weight1', dtype=torch.bfloat16, "
        f"local_shape=(128, 4096), data at {addr}) of size 524288. Ranges: [(0, 262144)]",
        f"E1129 {when} {pid} torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) "
        f"local_rank: 0 (pid: {pid}) of binary: /usr/bin/python",
    ]


def verdict_of(tail: list[str], rc: int = 1) -> CrashVerdict:
    return classify(rc, tail, steps_seen=10)


def rec(n: int, last: int | None, v: CrashVerdict | None, *, resumed: str | None, next_: str | None,
        ran_s: float = 2 * HOUR, gpus: int | None = 8, signature: str | None = "auto",
        memory: str | None = None) -> AttemptRecord:
    """Attempt ``n``, hour-long, ended ``ran_s`` after it started, one after the other."""
    start = 10_000.0 + n * 3 * HOUR
    return AttemptRecord(attempt=n, started_at=start, ended_at=start + ran_s, resumed_step=None, last_step=last,
                         crash_class=v.cls if v else None, memory_verdict=memory, ran_s=ran_s,
                         signature=(error_identity(v) if v else None) if signature == "auto" else signature,
                         resumed_from=resumed, resume_next=next_, gpus=gpus)


def now_of(history: list[AttemptRecord]) -> float:
    return history[-1].ended_at


V1 = verdict_of(megatron_save_tail(41234, "0x7f3a2c000000", "12:00:01.123000"))
V2 = verdict_of(megatron_save_tail(58812, "0x7f99b4010000", "15:42:17.904000"))


def test_the_identity_masks_pids_addresses_and_times_but_keeps_the_exception_and_its_message():
    assert V1.cls == V2.cls == "unknown" and V1.summary != V2.summary   # the raw texts differ
    ident = error_identity(V1)
    assert ident == error_identity(V2)
    assert ident.startswith("unknown: megatron.core.dist_checkpointing.core.CheckpointingException: Flattened "
                            "ranges dont cover the whole shard")
    assert "41234" not in ident and "0x7f3a" not in ident and "12:00" not in ident
    other = verdict_of(["megatron.core.dist_checkpointing.core.CheckpointingException: Invalid access pattern: "
                        "[(0, 1), (2, 3)]"])
    assert error_identity(other) != ident
    # the same message under another exception type is another error
    assert error_identity(verdict_of(["ValueError: loss is nan at sample 12"])) != \
        error_identity(verdict_of(["AssertionError: loss is nan at sample 12"]))
    # a crash with no exception line: its first evidence line (or summary), masked the same way
    assert error_identity(classify(-11, [], steps_seen=3)) == error_identity(classify(-11, [], steps_seen=9))


def test_the_second_identical_crash_at_the_same_step_from_the_same_checkpoint_pauses_with_what_to_do():
    first = [rec(1, 50, V1, resumed=CK40, next_=CK40)]
    assert decide(V1, first, SETTINGS, now_of(first)).action == "restart"   # once may be bad luck
    hist = [*first, rec(2, 50, V2, resumed=CK40, next_=CK40, ran_s=1.5 * HOUR)]
    d = decide(V2, hist, SETTINGS, now_of(hist))
    assert d.action == "pause" and d.alert == "critical"
    assert d.reason.startswith("paused: the same crash twice at step 50 (attempt 2; attempt 1 at step 50), and the "
                               "next attempt would resume from checkpoint-40 again: unknown: ")
    assert "CheckpointingException: Flattened ranges dont cover the whole shard" in d.reason
    assert "The two attempts cost 28.00 GPU-hours (8 GPUs, 3.50 h)" in d.reason
    assert "What to do: fix what the error says" in d.reason and "moeconsole restart RUN" in d.reason


def test_without_the_rule_the_run_would_have_spent_its_restart_cap():
    """Ten identical two-hour crashes: before, every one restarted until the cap (160 GPU-hours)."""
    hist: list[AttemptRecord] = []
    actions = []
    for n in range(1, 11):
        v = verdict_of(megatron_save_tail(1000 + n, hex(0x7f0000000000 + n), f"{n:02d}:00:00.000000"))
        hist.append(rec(n, 50, v, resumed=CK40, next_=CK40))
        actions.append(decide(v, hist, SETTINGS, now_of(hist)).action)
    assert actions[:2] == ["restart", "pause"]


@pytest.mark.parametrize("why, before, now", [
    ("the checkpoint advanced: the next attempt starts further on",
     dict(last=50, resumed=CK40, next_=CK40), dict(last=50, resumed=CK40, next_=CK60)),
    ("a later step after the checkpoint advanced",
     dict(last=50, resumed=CK40, next_=CK40), dict(last=70, resumed=CK60, next_=CK60)),
    ("a later step, beyond the tolerance (5 steps)",
     dict(last=50, resumed=CK40, next_=CK40), dict(last=56, resumed=CK40, next_=CK40)),
    ("an earlier step",
     dict(last=56, resumed=CK40, next_=CK40), dict(last=50, resumed=CK40, next_=CK40)),
    ("the runner could not read the checkpoints when the attempt ended",
     dict(last=50, resumed=CK40, next_=CK40), dict(last=50, resumed=CK40, next_=RESUME_UNKNOWN)),
    ("the attempt before logged no step",
     dict(last=None, resumed=CK40, next_=CK40), dict(last=50, resumed=CK40, next_=CK40)),
])
def test_no_pause_when_the_next_attempt_would_not_replay_this_one(why, before, now):
    hist = [rec(1, before["last"], V1, resumed=before["resumed"], next_=before["next_"]),
            rec(2, now["last"], V2, resumed=now["resumed"], next_=now["next_"])]
    assert repeated_crash(V2, hist) is None, why
    assert decide(V2, hist, SETTINGS, now_of(hist)).action == "restart", why


@pytest.mark.parametrize("a, b, same", [(50, 55, True), (50, 56, False), (1000, 1050, True), (1000, 1052, True), (1000, 1053, False),
                                        (0, 5, True)])
def test_about_the_same_step_is_five_steps_or_five_percent(a, b, same):
    hist = [rec(1, a, V1, resumed=CK40, next_=CK40), rec(2, b, V2, resumed=CK40, next_=CK40)]
    assert (repeated_crash(V2, hist) is not None) is same


def test_another_error_or_another_class_at_the_same_step_is_no_repeat():
    assertion = verdict_of(["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                            "AssertionError: loss is nan at sample 12345"])
    hist = [rec(1, 50, V1, resumed=CK40, next_=CK40), rec(2, 50, assertion, resumed=CK40, next_=CK40)]
    assert decide(assertion, hist, SETTINGS, now_of(hist)).action == "restart"
    segv = classify(-11, [], steps_seen=10)
    hist = [rec(1, 50, V1, resumed=CK40, next_=CK40), rec(2, 50, segv, resumed=CK40, next_=CK40)]
    assert decide(segv, hist, SETTINGS, now_of(hist)).action == "restart"


def test_a_record_of_an_older_runner_without_a_signature_never_matches():
    hist = [rec(1, 50, V1, resumed=CK40, next_=CK40, signature=None), rec(2, 50, V2, resumed=CK40, next_=CK40)]
    assert decide(V2, hist, SETTINGS, now_of(hist)).action == "restart"
    # and state.json's history as an older runner wrote it still reads, through the model
    old = {"attempt": 1, "started_at": 1.0, "ended_at": 2.0, "resumed_step": 40, "last_step": 50,
           "crash_class": "unknown"}
    st = state_model.from_dict({"status": "cooldown", "history": [old]})
    assert st.history[0].signature is None
    assert attempt_record(msgspec.to_builtins(st.history[0])).signature is None


def test_the_new_fields_round_trip_through_state_json():
    r = rec(2, 50, V2, resumed=CK40, next_=CK40)
    st = state_model.from_dict({"status": "paused", "history": [r.__dict__]})
    back = attempt_record(msgspec.to_builtins(st.history[0]))
    assert back == r


def test_a_run_without_checkpoints_restarting_from_scratch_twice_pauses():
    hist = [rec(1, 50, V1, resumed=None, next_=None), rec(2, 50, V2, resumed=None, next_=None, gpus=None)]
    d = decide(V2, hist, SETTINGS, now_of(hist))
    assert d.action == "pause"
    assert "resume from the start (no checkpoint to resume from) again" in d.reason
    assert "The two attempts cost 32.00 GPU-hours (8 GPUs, 4.00 h)" in d.reason  # the count the first one knew


def test_without_a_known_gpu_count_the_cost_is_in_hours():
    hist = [rec(1, 50, V1, resumed=CK40, next_=CK40, gpus=None), rec(2, 50, V2, resumed=CK40, next_=CK40, gpus=None)]
    assert "The two attempts cost 4.00 h of the run's GPUs" in decide(V2, hist, SETTINGS, now_of(hist)).reason


def test_a_full_disk_at_the_same_save_pauses_with_the_class_hint():
    disk = [verdict_of(["Traceback (most recent call last):",
                        f"OSError: [Errno 28] No space left on device: '{CK60}/model-0000{n}.safetensors'"])
            for n in (1, 2)]
    assert disk[0].cls == "disk_full" and disk[0].hint
    hist = [rec(1, 60, disk[0], resumed=CK40, next_=CK40), rec(2, 60, disk[1], resumed=CK40, next_=CK40)]
    d = decide(disk[1], hist, SETTINGS, now_of(hist))
    assert d.action == "pause" and f"What to do: {disk[1].hint}" in d.reason


def test_a_cuda_oom_at_the_same_sample_pauses_whatever_its_memory_verdict():
    oom = [verdict_of([f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {m} GiB. GPU 0 has a total "
                       f"capacity of 139.72 GiB of which {f} MiB is free. Process {p} has 139.70 GiB memory in use."])
           for m, f, p in (("2.50", "17.56", 4321), ("2.50", "19.06", 8765))]
    assert oom[0].cls == "cuda_oom" and error_identity(oom[0]) == error_identity(oom[1])
    hist = [rec(1, 300, oom[0], resumed=CK40, next_=CK40, memory="transient"),
            rec(2, 301, oom[1], resumed=CK40, next_=CK40, memory="transient")]
    assert decide(oom[1], hist, SETTINGS, now_of(hist)).action == "pause"


@pytest.mark.parametrize("tail, rc, flags", [
    (["[rank1]:[E1129 12:00:00.000000 123 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=4242, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
      "milliseconds before timing out."], 1, {}),
    ([], -9, {}),                                   # SIGKILL: the host OOM killer
    (["step 50"], None, {"hang": True}),
])
def test_classes_whose_repetition_proves_nothing_keep_their_rules(tail, rc, flags):
    v = classify(rc, tail, steps_seen=10, **flags)
    assert v.cls in REPEAT_PROVES_NOTHING and v.retryable
    hist = [rec(1, 50, v, resumed=CK40, next_=CK40), rec(2, 50, v, resumed=CK40, next_=CK40)]
    assert repeated_crash(v, hist) is None
    assert decide(v, hist, SETTINGS, now_of(hist)).action == "restart"


def test_the_restart_cap_still_comes_first():
    hist = [rec(1, 50, V1, resumed=CK40, next_=CK40), rec(2, 50, V2, resumed=CK40, next_=CK40)]
    assert decide(V2, hist, RestartSettings(max_restarts=1), now_of(hist)).action == "fail"
