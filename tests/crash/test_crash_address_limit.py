"""Round 15: a host allocation refused at the address-space limit the attempt ran under (`ulimit -v`,
RLIMIT_AS; `ulimit -d`, RLIMIT_DATA) is the limit's, not a host OOM: environment_error, not restarted."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

HEAD = ['{"step": 3}', "Traceback (most recent call last):", '  File "train.py", line 5, in <module>']
C10 = ("RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 3221225472 bytes. "
       "Error code 12 (Cannot allocate memory)")


@pytest.mark.parametrize("last", ["MemoryError", "MemoryError: out of memory", C10,
                                  "OSError: [Errno 12] Cannot allocate memory"])
def test_a_host_allocation_refused_under_an_address_limit_names_the_limit(last):
    v = classify(1, [*HEAD, last], address_limit=2 << 30)
    assert v.cls == "environment_error" and v.recovery == "fail" and not v.retryable
    assert "virtual memory limit (ulimit -v) of 2.0 GB" in v.summary and "ulimit -v unlimited" in (v.hint or "")


@pytest.mark.parametrize("last,cls", [(C10, "killed_oom"), ("MemoryError", "unknown")])
def test_without_a_limit_the_same_lines_read_as_before(last, cls):
    assert classify(1, [*HEAD, last]).cls == cls


@pytest.mark.parametrize("last,cls", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "cuda_oom"),   # device memory
    ("ValueError: MemoryError is not what ended this", "unknown")])
def test_other_ends_under_a_limit_are_not_the_limits(last, cls):
    assert classify(1, [*HEAD, last], address_limit=2 << 30).cls == cls
