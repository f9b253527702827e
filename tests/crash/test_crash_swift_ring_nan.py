"""ms-swift 4.6.0's ring attention stops on NaN: a divergence, paused, not a restart into the same NaN.

swift/sequence_parallel/zigzag_ring_attn.py (the 4.6.0 wheel; absent from main's 4.6.0.dev0),
``zigzag_ring_flash_attn_varlen_backward`` l.527-528, 541-542, 551-552 and 587-588:
``raise RuntimeError(f'NaN detected in block_out/block_lse at step {step}.')`` and the same for
``block_dout`` and ``dq/dk/dv``; ``step`` counts the ring's hops (``range(kv_comm.world_size)``).
The traceback below is what torchrun's child prints for it under ``--sequence_parallel_size 2``.
"""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify
from moeconsole.runner.core.policy import AttemptRecord, RestartSettings, decide

SITE = "/opt/conda/lib/python3.11/site-packages"


def _tail(what: str, step: int, line: int) -> list[str]:
    return [
        "[rank1]: Traceback (most recent call last):",
        f'[rank1]:   File "{SITE}/swift/cli/sft.py", line 10, in <module>',
        "[rank1]:     sft_main()",
        f'[rank1]:   File "{SITE}/transformers/trainer.py", line 2674, in _inner_training_loop',
        "[rank1]:     tr_loss_step = self.training_step(model, inputs, num_items_in_batch)",
        f'[rank1]:   File "{SITE}/torch/autograd/function.py", line 307, in apply',
        "[rank1]:     return user_fn(self, *args)",
        f'[rank1]:   File "{SITE}/swift/sequence_parallel/zigzag_ring_attn.py", line {line}, in '
        "zigzag_ring_flash_attn_varlen_backward",
        f"[rank1]:     raise RuntimeError(f'NaN detected in {what} at step {{step}}.')",
        f"[rank1]: RuntimeError: NaN detected in {what} at step {step}.",
    ]


@pytest.mark.parametrize("what,step,line", [("block_out/block_lse", 0, 528), ("block_dout", 1, 542),
                                            ("dq/dk/dv", 0, 552), ("dq/dk/dv", 1, 588)])
def test_ring_attention_nan_pauses_the_run_as_a_divergence(what, step, line):
    v = classify(1, _tail(what, step, line), steps_seen=412)
    assert (v.cls, v.retryable, v.recovery) == ("divergence", False, "pause")
    assert v.summary.startswith(f"ms-swift's ring attention (sequence parallel) found NaN in {what}")
    assert "iteration" not in v.summary            # the ring's hop is no training step
    assert any("NaN detected" in e for e in v.evidence)
    attempt = AttemptRecord(attempt=1, started_at=0.0, ended_at=600.0, resumed_step=None, last_step=412,
                            crash_class=v.cls)
    assert decide(v, [attempt], RestartSettings(), 600.0).action == "pause"
