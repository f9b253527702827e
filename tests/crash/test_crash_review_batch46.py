"""The review of batch 46's rules: real failures they had thrown away as mentions or examples."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


@pytest.mark.parametrize("lines, cls", [
    # torch's own NCCL error with its detail is one that happened, on a logger's line or after a hedge word
    (["WARNING:__main__:allreduce failed: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
      "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3"], "nccl_error"),
    (["[2024-05-01 10:00:00,123] [WARNING] [engine.py:100] NCCL error in: "
      "../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, internal error, NCCL version 2.18.1"], "nccl_error"),
    (["Step 1200 failed, will retry: NCCL error: unhandled system error"], "nccl_error"),
    (["If I use 16 GPUs I get NCCL error: unhandled system error"], "nccl_error"),
    # ... a quoted name in advice is still a mention
    (["If you see `NCCL error: unhandled system error`, set NCCL_IB_DISABLE=1"], "unknown"),
    # a program's own failure ends an example under a stray heading
    (["Sample output:", "the cat sat on the mat", "Traceback (most recent call last):",
      '  File "train.py", line 3, in <module>',
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."], "cuda_oom"),
    (["### Input:", "hello", "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) "
      "local_rank: 0 (pid: 123) of binary: /usr/bin/python"], "killed_oom"),
    (["Example output:", "[12345.6] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."], "unknown"),
    # what follows a Chinese "but" is told, not the setting before it
    (["已经增加了超时时间，但是第100步还是出现 NCCL timeout，训练挂了"], "nccl_error"),
    (["可以增加超时时间来避免 NCCL timeout"], "unknown"),
])
def test_real_failures_are_not_taken_for_mentions_or_examples(lines, cls):
    assert classify(1, lines, steps_seen=100).cls == cls, lines
