"""An attempt that ended while its log could not be written (the runs directory's filesystem taken
read-only): an end nothing else explains is said as the training's want of its log, and a cause the
log did name before the refusal stays the verdict."""
from __future__ import annotations

from moeconsole.runner.core.crash import classify

OOM = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
       "of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 78.11 GiB memory "
       "in use. Of the allocated memory 76.50 GiB is allocated by PyTorch, and 0.90 GiB is reserved by PyTorch "
       "but unallocated."]


def test_a_silent_end_with_the_log_refused_names_the_refusal_and_the_exit():
    """Python that cannot flush its stdout at exit ends with code 120 and nothing in the log."""
    v = classify(120, ['{"step": 15, "loss": 0.5}'], steps_seen=15, log_refused="Read-only file system")
    assert v.cls == "unknown" and v.recovery == "restart", v
    assert v.summary.startswith("train.log could not be written (Read-only file system)"), v.summary
    assert "exited with code 120" in v.summary and "read-only" in (v.hint or ""), v


def test_without_the_refusal_the_same_end_is_a_bare_exit():
    v = classify(120, ['{"step": 15, "loss": 0.5}'], steps_seen=15)
    assert v.cls == "unknown" and "train.log" not in v.summary and v.summary == "exited with code 120", v


def test_a_cause_the_log_named_before_the_refusal_stays_the_verdict():
    v = classify(1, OOM, steps_seen=15, log_refused="Read-only file system")
    assert v.cls == "cuda_oom" and "train.log could not be written" not in v.summary, v
