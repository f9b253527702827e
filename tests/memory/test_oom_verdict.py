"""A CUDA OOM explained after it happened: torch's message parsed (every form), a verdict with
its evidence (transient, leak, fragmentation with the env name the run's torch reads, foreign
memory), and the restart policy's pause when a leak runs out at the same step twice."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import CrashVerdict, classify
from moeconsole.runner.core.memory import Trend
from moeconsole.runner.core.oom import explain_oom, merge_messages, parse_oom_message, torch_size_text
from moeconsole.runner.core.policy import AttemptRecord, RestartSettings, decide, repeated_crash

ADVICE = ("If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
          "to avoid fragmentation.  See documentation for Memory Management  "
          "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")


def oom(tried="2.00 GiB", gpu=3, total="79.19 GiB", free="1.06 GiB", others="", this="78.12 GiB",
        allocated="74.50 GiB", pools="", unalloc="2.81 GiB", allowed="") -> str:
    """torch >= 2.3's message, built as c10/cuda/CUDACachingAllocator.cpp builds it."""
    return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried}. GPU {gpu} has a total capacity "
            f"of {total} of which {free} is free. {others}Including non-PyTorch memory, this process has {this} "
            f"memory in use. {allowed}Of the allocated memory {allocated} is allocated by PyTorch, {pools}and "
            f"{unalloc} is reserved by PyTorch but unallocated. {ADVICE}")


FLAT = Trend("stable", 0.0, 132.91, None, 300)
LEAK = Trend("growing", 12 / 1024, 140.2, 128, 384)


def test_the_message_parts():
    m = parse_oom_message(oom(others="Process 566680 has 60.00 GiB memory in use. ",
                              pools="with 1.50 GiB allocated in private pools (e.g., CUDA Graphs), ",
                              allowed="70.00 GiB allowed; "))
    assert (m.tried_gib, m.tried_text, m.gpu, m.total_gib, m.free_gib) == (2.0, "2.00 GiB", 3, 79.19, 1.06)
    assert (m.process_gib, m.allocated_gib, m.private_pools_gib) == (78.12, 74.5, 1.5)
    assert m.reserved_unallocated_gib == 2.81 and m.reserved_gib == pytest.approx(77.31)
    assert m.allowed_gib == 70.0 and m.others == ((566680, 60.0),)


def test_older_and_odd_forms():
    old = parse_oom_message("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total "
                            "capacity; 14.56 GiB already allocated; 3.44 MiB free; 14.70 GiB reserved in total by PyTorch)")
    assert (old.gpu, old.total_gib, old.allocated_gib, old.reserved_gib) == (0, 15.78, 14.56, 14.70)
    assert old.tried_gib == pytest.approx(20 / 1024) and old.free_gib == pytest.approx(3.44 / 1024)
    assert old.reserved_unallocated_gib == pytest.approx(0.14)
    huge = parse_oom_message("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.")
    assert huge.tried_text == "more than 1EB" and huge.tried_gib is None
    frac = parse_oom_message("CUDA out of memory. Allocation was preemptively rejected because it would exceed "
                             "per_process_memory_fraction limit. Requested size: 512.00 MiB")
    assert frac.tried_gib == 0.5
    assert parse_oom_message("RuntimeError: NCCL error") is None
    # the first message that names a GPU wins (every rank prints its own)
    assert merge_messages(["CUDA out of memory.", oom(gpu=5)]).gpu == 5
    assert [torch_size_text(x) for x in (2.0, 0.5, 1 / 2048)] == ["2.00 GiB", "512.00 MiB", "512.00 KiB"]


def test_a_transient_on_a_flat_envelope_names_the_declared_transient():
    msg = parse_oom_message(oom(tried="266.00 MiB", unalloc="300.00 MiB"))
    ex = explain_oom(msg, gpu=3, trend=FLAT, history=[{"step": 900, "peak_gib": 132.91}],
                     transients=(("fla_gdn_bwd", 266 / 1024),))
    assert ex.verdict == "transient" and ex.restart == "helps"
    assert "a transient spike (about the declared transient fla_gdn_bwd, 266 MiB) on a flat envelope" in ex.summary
    assert "GPU 3's per-step peak was flat at 132.91 GiB over the last 300 steps" in ex.evidence
    assert ex.evidence[0].startswith("torch on GPU 3: tried to allocate 266.00 MiB, 79.19 GiB total, 1.06 GiB free")


def test_a_leak_says_when_a_restart_fails_again():
    msg = parse_oom_message(oom(unalloc="300.00 MiB"))
    hist = [{"step": 10, "peak_gib": 120.0}, {"step": 800, "peak_gib": 140.2}]
    ex = explain_oom(msg, gpu=3, trend=LEAK, history=hist, oom_step=800, attempt_start_step=100)
    assert ex.verdict == "leak" and ex.restart == "fails_again" and ex.steps_to_oom == 700
    assert "a restart runs out again about 700 steps after it starts (this attempt ran 700 steps from step 100)" \
        in ex.advice
    assert "GPU 3's per-step peak grew 12.0 MiB/step (robust trend over 384 steps, lag 128) up to 140.20 GiB" \
        in ex.evidence
    assert "recorded peak 120.00 GiB at step 10 -> 140.20 GiB at step 800" in ex.evidence


@pytest.mark.parametrize("torch_version, name", [("2.9.1+cu128", "PYTORCH_ALLOC_CONF"),
                                                 ("2.5.1", "PYTORCH_CUDA_ALLOC_CONF")])
def test_fragmentation_asks_for_expandable_segments_under_the_name_torch_reads(torch_version, name):
    msg = parse_oom_message(oom())      # 2.81 GiB reserved but unallocated >= the 2.00 GiB it tried
    ex = explain_oom(msg, gpu=3, trend=FLAT, history=[], torch_version=torch_version)
    assert ex.verdict == "fragmentation" and ex.restart == "with_allocator_setting"
    assert ex.env == {name: "expandable_segments:True"}
    assert ex.advice == (f"the next attempt runs with {name}=expandable_segments:True (torch {torch_version}), set by "
                         "the runner: the allocator can then use the memory it holds in pieces")
    assert ("2.81 GiB was reserved by PyTorch but unallocated, at least the 2.00 GiB it tried to allocate: the memory "
            "was there, in pieces") in ex.evidence
    # already set under that name: the advice says to lower the peak instead
    ex = explain_oom(msg, gpu=3, trend=FLAT, history=[], torch_version=torch_version,
                     env={name: "expandable_segments:True"})
    assert ex.env == {} and "already has expandable_segments:True" in ex.advice


def test_fragmentation_with_the_torch_version_unknown_sets_both_names():
    """Which name torch reads is unknown: both get the setting (the doctor accepts them while they agree)."""
    ex = explain_oom(parse_oom_message(oom()), gpu=3, trend=FLAT, history=[], torch_version=None)
    assert ex.env == {"PYTORCH_ALLOC_CONF": "expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert "PYTORCH_ALLOC_CONF=expandable_segments:True and PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in ex.advice


def test_fragmentation_needs_the_cache_to_hold_the_failed_allocation():
    msg = parse_oom_message(oom(tried="4.00 GiB"))          # 2.81 < 4.00: not the cache's fault
    assert explain_oom(msg, gpu=3, trend=FLAT, history=[]).verdict == "transient"


def test_foreign_memory_from_the_message_or_from_nvml():
    msg = parse_oom_message(oom(others="Process 566680 has 60.00 GiB memory in use. "))
    ex = explain_oom(msg, gpu=3, trend=LEAK, history=[], foreign_pids={566680: 60.0})
    assert ex.verdict == "foreign" and ex.restart == "after_gpu_clear"
    assert "not this run's processes on GPU 3: PID 566680 held 60.00 GiB" in ex.evidence
    nvml = [{"step": 5, "peak_gib": 70.0, "foreign_gib": 8.0}]
    assert explain_oom(parse_oom_message(oom(unalloc="100.00 MiB")), gpu=3, trend=FLAT,
                       history=nvml).verdict == "foreign"
    # a PID not proven foreign (ours, or gone) is no evidence
    assert explain_oom(msg, gpu=3, trend=FLAT, history=[], foreign_pids={}).verdict == "fragmentation"


def test_no_history_is_unknown():
    ex = explain_oom(parse_oom_message(oom(unalloc="10.00 MiB")), gpu=0, trend=None, history=[])
    assert ex.verdict == "unknown" and "not enough memory history" in ex.summary


def test_the_crash_hint_names_the_allocator_setting_for_any_torch():
    v = classify(1, [oom()], steps_seen=40)
    assert v.cls == "cuda_oom"
    assert "PYTORCH_ALLOC_CONF=expandable_segments:True (torch >= 2.9; PYTORCH_CUDA_ALLOC_CONF before)" in v.hint


# --- the restart policy --------------------------------------------------------------------

def _rec(n, last, verdict, cls="cuda_oom"):
    return AttemptRecord(attempt=n, started_at=1000.0 * n, ended_at=1000.0 * n + 500, resumed_step=None,
                         last_step=last, crash_class=cls, memory_verdict=verdict)


OOM = CrashVerdict(cls="cuda_oom", evidence=(), retryable=True, recovery="restart", summary="CUDA out of memory")


def test_a_leak_that_runs_out_at_the_same_step_twice_pauses():
    s = RestartSettings(max_crashes_per_window=60)
    first = decide(OOM, [_rec(1, 700, "leak")], s, 2000.0)
    assert first.action == "restart"                    # once may be bad luck
    hist = [_rec(1, 700, "leak"), _rec(2, 702, "leak")]
    d = decide(OOM, hist, s, 3000.0)
    assert d.action == "pause" and d.alert == "critical"
    assert d.reason == ("paused: a memory leak ran out of CUDA memory at step 702 (attempt 2) and at step 700 "
                        "(attempt 1): restarting would loop; the two attempts cost 0.28 h of the run's GPUs")


@pytest.mark.parametrize("hist", [
    [_rec(1, 700, "leak"), _rec(2, 900, "leak")],            # it got further: progress
    [_rec(1, 700, "transient"), _rec(2, 700, "leak")],       # the first was a spike
    [_rec(1, 700, "leak"), _rec(2, 700, "transient")],
    [_rec(1, 700, "leak", cls="segfault"), _rec(2, 700, "leak")],
])
def test_no_pause_unless_both_are_leaks_at_the_same_step(hist):
    assert repeated_crash(OOM, hist) is None
    assert decide(OOM, hist, RestartSettings(max_crashes_per_window=60), 3000.0).action == "restart"


@pytest.mark.parametrize("torch_version, name", [("2.9.1+cu128", "PYTORCH_ALLOC_CONF"),
                                                 ("2.5.1", "PYTORCH_CUDA_ALLOC_CONF")])
def test_fragmentation_keeps_the_recipes_own_allocator_options(torch_version, name):
    """The recipe set max_split_size_mb: the next attempt's value adds expandable segments to it
    (it had replaced the recipe's value and dropped the option)."""
    ex = explain_oom(parse_oom_message(oom()), gpu=3, trend=FLAT, history=[], torch_version=torch_version,
                     env={name: "max_split_size_mb:128"})
    assert ex.env == {name: "max_split_size_mb:128,expandable_segments:True"}
    assert f"the next attempt runs with {name}=max_split_size_mb:128,expandable_segments:True (torch" in ex.advice


@pytest.mark.parametrize("name", ["PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"])
def test_fragmentation_with_the_torch_version_unknown_sees_a_setting_under_either_name(name):
    """An attempt that already ran with expandable segments under either name: lower the peak (torch's
    version unknown had read no current value and advised the setting again); a value of the recipe's
    under one name goes to both, with expandable segments added."""
    msg = parse_oom_message(oom())
    ex = explain_oom(msg, gpu=3, trend=FLAT, history=[], torch_version=None, env={name: "expandable_segments:True"})
    assert ex.env == {} and ex.advice.startswith(f"{name} already has expandable_segments:True: lower the peak")
    ex = explain_oom(msg, gpu=3, trend=FLAT, history=[], torch_version=None, env={name: "max_split_size_mb:64"})
    assert ex.env == {n: "max_split_size_mb:64,expandable_segments:True"
                      for n in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")}
