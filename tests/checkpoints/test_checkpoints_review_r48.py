"""Review R48 D3: a save is judged by the world its own args.json says, never by the shares of an older save: a
world that lost a GPU (``--nproc_per_node gpu``) or a node (an elastic ``--nnodes 1:2``) saves fewer shares, and
its first save after the drop is the resume point."""
from __future__ import annotations

from moeconsole.runner.checkpoints.watch import latest_good
from tests.checkpoints.test_shared_output_dir import _world_save


def test_a_gpu_lost_eight_processes_to_seven_resumes_from_the_first_save_at_seven(tmp_path):
    out = tmp_path / "out"
    for step in (2, 4):
        _world_save(out / f"checkpoint-{step}", step, range(8), world=8, local=8)
    _world_save(out / "checkpoint-6", 6, range(7), world=7, local=7)
    assert latest_good(out, trainer=True).step == 6          # was: checkpoint-4, one save interval retrained


def test_two_processes_to_one_and_a_save_with_no_world_said(tmp_path):
    import torch
    from tests.checkpoints.conftest import write_demo_checkpoint
    out = tmp_path / "out"
    for step in (2, 4):
        _world_save(out / f"checkpoint-{step}", step, range(2), world=2, local=2)
    one = write_demo_checkpoint(out / "checkpoint-6", 6)                  # one process: rng_state.pth
    torch.save({"cpu": torch.zeros(1)}, one / "rng_state.pth")
    assert latest_good(out, trainer=True).step == 6                       # was: checkpoint-4
    bare = tmp_path / "bare"                                              # plain transformers: no args.json world
    for step, n in ((2, 8), (4, 8), (6, 7)):
        d = write_demo_checkpoint(bare / f"checkpoint-{step}", step)
        for i in range(n):
            torch.save({"cpu": torch.zeros(1)}, d / f"rng_state_{i}.pth")
    assert latest_good(bare, trainer=True).step == 6                      # was: checkpoint-4


def test_an_elastic_world_that_lost_a_node_over_a_shared_dir(tmp_path):
    """Two nodes of 2 processes over one dir lose node 1: the next save, of a world of 2 on one node, is whole;
    a save of the two-node world whose node 1 shares are cut short is still passed over (review R53: one that
    lacks them is kept, their processes' RNG starting fresh on resume)."""
    out = tmp_path / "out"
    _world_save(out / "checkpoint-2", 2, range(4), world=4, local=2)
    _world_save(out / "checkpoint-4", 4, range(2), world=4, local=2)      # node 1's part never written
    assert latest_good(out, trainer=True).step == 4
    for i in (2, 3):
        (out / "checkpoint-4" / f"rng_state_{i}.pth").write_bytes(b"PK\x03\x04" + b"\0" * 64)   # cut short
    assert latest_good(out, trainer=True).step == 2
    _world_save(out / "checkpoint-6", 6, range(2), world=2, local=2)      # the world on node 0 alone
    assert latest_good(out, trainer=True).step == 6                       # was: checkpoint-2


def test_node_0s_own_file_written_since_the_start_is_known_with_no_clock(tmp_path):
    """``world_zero_writes_here`` by the run's record of ``logging.jsonl`` when it began (as round 18's shares): a
    wall clock stepped back after the start (NTP after a suspend) left node 0's file written since, dated before
    ``started_at``, proving nothing; an earlier run's file unchanged still proves nothing."""
    import os
    from moeconsole.runner.checkpoints.discover import world_zero_on_disk, world_zero_writes_here
    out = tmp_path / "out"
    (out / "v0-20261201-110000").mkdir(parents=True)
    earlier = out / "v0-20261201-110000" / "logging.jsonl"
    earlier.write_text("{}\n")
    os.utime(earlier, (1000.0, 1000.0))
    record = world_zero_on_disk(out)
    assert record == {"v0-20261201-110000/logging.jsonl": 1000.0}
    started = 5000.0
    assert not world_zero_writes_here(out, since=started, before=record)        # an earlier run's, unchanged
    (out / "v1-20261201-120000").mkdir()
    now = out / "v1-20261201-120000" / "logging.jsonl"
    now.write_text("{}\n")
    os.utime(now, (4000.0, 4000.0))                                             # dated before the start
    assert not world_zero_writes_here(out, since=started)                       # the clock rule: missed
    assert world_zero_writes_here(out, since=started, before=record)            # the record: node 0 writes here
    with open(earlier, "a") as f:
        f.write("{}\n")
    os.utime(earlier, (1001.0, 1001.0))
    assert world_zero_writes_here(out, before={**record, **{"v1-20261201-120000/logging.jsonl": 4000.0}})
