"""transformers' "Trainer without DDP" line (docs/monitors.md, `not_distributed`) as `moeconsole parse` reads it:
the warning comes from the line of a second process in an attempt (two copies, or copies from two ranks). One copy
is a process group of one (RANK 0, WORLD_SIZE 1: transformers prints the same line), where nothing is lost."""
from __future__ import annotations

import pytest

from tests.ingest.test_ingest_cli import parse_cli

LINE = ("torch.distributed process group is initialized, but parallel_mode != ParallelMode.DISTRIBUTED. "
        "In order to use Torch DDP, launch your script with `python -m torch.distributed.launch")
STEP = ("{'loss': '6.943', 'grad_norm': '0.3128', 'learning_rate': '0.004268', 'epoch': '0.07407', "
        "'global_step/max_steps': '%d/4', 'elapsed_time': '0s', 'remaining_time': '1s'}")


@pytest.mark.parametrize(("head", "warned"), [
    ([f"[transformers] {LINE}"], False),                                   # a world-size-1 group's one copy
    ([f"[transformers] {LINE}", f"[transformers] {LINE}"], True),          # two ranks' copies (ms-swift 4.6, 2 ranks)
    ([f"[rank0]: {LINE}", f"[rank0]: {LINE}"], False),                     # the same rank's line twice
    ([f"[rank0]: {LINE}", f"[rank1]: {LINE}"], True),                      # two ranks
])
def test_the_no_ddp_warning_needs_a_second_process(tmp_path, head, warned):
    log = tmp_path / "train.log"
    log.write_text("\n".join(head + [STEP % s for s in (1, 2, 3)]) + "\n")
    out = parse_cli(str(log))
    assert out.returncode == 0, out.stderr
    assert ("not_distributed" in out.stdout) == warned, out.stdout
    if warned:
        assert "--use_cpu true" in out.stdout and "torchrun" in out.stdout, out.stdout


def test_a_new_attempt_counts_afresh(tmp_path):
    """One copy in each of two attempts (the runner's marker between them) is a one-process group twice: no
    warning; two copies after the marker are two ranks of the second attempt."""
    from moeconsole.runner.rundir.rundir import ATTEMPT_MARKER
    first = [ATTEMPT_MARKER.format(attempt=1), f"[transformers] {LINE}", STEP % 1]
    second = [ATTEMPT_MARKER.format(attempt=2), f"[transformers] {LINE}", STEP % 2]
    log = tmp_path / "train.log"
    log.write_text("\n".join(first + second) + "\n")
    out = parse_cli(str(log))
    assert out.returncode == 0 and "not_distributed" not in out.stdout, out.stdout
    log.write_text("\n".join(first + second[:2] + second[1:]) + "\n")
    out = parse_cli(str(log))
    assert out.returncode == 0 and "1 warning not_distributed" in out.stdout, out.stdout
