"""Batch 42's rule, with variants the public texts did not show (docs/crash-classes.md, batch 42).

torch prints the raising process's own entry of NVML's process list as "Including non-PyTorch
memory, this process has X" only when NVML's PID equals its ``getpid()``
(``c10/cuda/CUDACachingAllocator.cpp``, ``reportProcessMemoryInfo``); in a container NVML reports
the host's PID, and the trainer's own entry reads ``Process <host pid> has X memory in use``. A
pasted OOM whose one listed process holds at least what PyTorch reserved names the trainer
itself, not a process holding the GPU: a restart as for any OOM, not a wait for the GPU to clear.
"""
from __future__ import annotations

from moeconsole.runner.core.crash import classify
from moeconsole.runner.core.oom import parse_oom_message


def _oom(processes: str, allocated: str = "37.12 GiB", unallocated: str = "402.00 MiB") -> str:
    return ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total "
            f"capacity of 39.39 GiB of which 96.00 MiB is free. {processes}Of the allocated memory "
            f"{allocated} is allocated by PyTorch, and {unallocated} is reserved by PyTorch but unallocated. "
            "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF="
            "expandable_segments:True to avoid fragmentation.")


CONTAINER_OWN = _oom("Process 3318872 has 38.05 GiB memory in use. ")


def test_the_one_listed_process_holding_pytorchs_reservation_is_the_trainer_itself():
    v = classify(1, ["[rank3]: Traceback (most recent call last):", f"[rank3]: {CONTAINER_OWN}"], steps_seen=0)
    assert v.cls == "cuda_oom" and v.recovery == "restart"
    assert "other processes" not in v.summary and "3318872" not in v.summary
    assert parse_oom_message(CONTAINER_OWN).self_pid == 3318872


def test_torch_2_1s_wording_and_private_pools_are_read_the_same_way():
    text = ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
            "capacty of 23.65 GiB of which 3.06 MiB is free. Process 41 has 23.63 GiB memory in use. Of the "
            "allocated memory 22.80 GiB is allocated by PyTorch, with 512.00 MiB allocated in private pools "
            "(e.g., CUDA Graphs), and 301.47 MiB is reserved by PyTorch but unallocated.")
    assert classify(1, [text], steps_seen=0).cls == "cuda_oom"


def test_beside_the_trainers_own_entry_a_smaller_process_is_still_foreign():
    text = _oom("Process 3318872 has 38.05 GiB memory in use. Process 5120 has 1.20 GiB memory in use. ")
    v = classify(1, [text], steps_seen=0)
    assert v.cls == "gpu_busy_at_init" and "5120" in v.summary and "3318872" not in v.summary


def test_two_processes_each_holding_the_reservation_cannot_be_told_apart():
    text = _oom("Process 3318872 has 38.05 GiB memory in use. Process 5120 has 38.10 GiB memory in use. ")
    v = classify(1, [text], steps_seen=0)
    assert v.cls == "gpu_busy_at_init" and "3318872" in v.summary and "5120" in v.summary
    assert parse_oom_message(text).self_pid is None


def test_when_torch_recognised_itself_a_listed_process_stays_foreign():
    # bare metal: torch printed its own entry as "this process", so "Process N" is another process
    text = _oom("Process 777 has 38.05 GiB memory in use. Including non-PyTorch memory, this process has "
                "38.00 GiB memory in use. ")
    v = classify(1, [text], steps_seen=0)
    assert v.cls == "gpu_busy_at_init" and "777" in v.summary


def test_a_listed_process_smaller_than_the_reservation_is_not_taken_for_the_trainer():
    text = _oom("Process 777 has 12.00 GiB memory in use. ")
    assert classify(1, [text], steps_seen=0).cls == "gpu_busy_at_init"


def test_a_message_cut_before_pytorchs_numbers_proves_nothing():
    # without "Of the allocated memory ..." the reservation is unknown: the named PID stays foreign
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total "
            "capacity of 39.39 GiB of which 96.00 MiB is free. Process 3318872 has 38.05 GiB memory in use.")
    assert classify(1, [text], steps_seen=0).cls == "gpu_busy_at_init"


def test_the_runners_own_pids_outrank_the_messages_numbers():
    # the runner knows its PIDs in every namespace: a live PID outside them is foreign
    v = classify(1, [CONTAINER_OWN], steps_seen=0, own_pids={31, 32}, live_pids={1, 3318872})
    assert v.cls == "gpu_busy_at_init" and "3318872" in v.summary


def test_a_process_list_in_a_monitors_startup_or_help_line_decides_nothing():
    lines = ["gpu-guard: watching GPU 3 (Process 3318872 has 38.05 GiB memory in use)",
             "  --report  print e.g. 'Process 41 has 23.63 GiB memory in use' for each holder",
             "Training finished."]
    v = classify(1, lines, steps_seen=40)
    assert v.cls not in ("cuda_oom", "gpu_busy_at_init")
