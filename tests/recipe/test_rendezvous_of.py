"""Where a torchrun agent of several nodes waits for the others (recipes/cmdline.py ``rendezvous_of``) and
what every view says while it does (core/state.py ``rendezvous_words``). No torch needed: the command
lines are ms-swift's (swift/cli/main.py l.74-83, as its `run sh:` line printed them) and torchrun's own."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.state import rendezvous_words
from moeconsole.runner.recipes.cmdline import Rendezvous, rendezvous_of

PY = "/v/bin/python"
SFT = "/v/lib/python3.11/site-packages/swift/cli/sft.py"


@pytest.mark.parametrize("argv, want", [
    # ms-swift's NNODES=2 (measured): static rendezvous at MASTER_ADDR:MASTER_PORT
    ([PY, "-m", "torch.distributed.run", "--nproc_per_node", "1", "--master_port", "29733", "--nnodes", "2",
      "--node_rank", "1", "--master_addr", "127.0.0.1", SFT, "--model", "m"], Rendezvous("127.0.0.1:29733", "2", "1")),
    # torchrun's defaults: 127.0.0.1:29500
    (["torchrun", "--nnodes=4", "train.py"], Rendezvous("127.0.0.1:29500", "4", None)),
    # c10d with an endpoint, elastic node counts
    (["torchrun", "--nnodes", "1:4", "--rdzv-backend", "c10d", "--rdzv-endpoint", "head:29400", "train.py"],
     Rendezvous("head:29400", "1:4", None)),
    # one node, or no torchrun: no rendezvous to wait in
    ([PY, "-m", "torch.distributed.run", "--nproc_per_node", "2", SFT], None),
    (["torchrun", "--nnodes", "1", "train.py", "--nnodes", "2"], None),    # the script's flag is not torchrun's
    ([PY, SFT, "--nnodes", "2"], None),
])
def test_rendezvous_of(argv, want):
    assert rendezvous_of(argv) == want


def test_the_words():
    assert rendezvous_words({"endpoint": "127.0.0.1:29733", "nodes": "2", "node_rank": "1"}) == \
        "waiting for the other nodes at 127.0.0.1:29733, node 1 of 2"
    assert rendezvous_words({"endpoint": "head:29400", "nodes": "1:4", "node_rank": None}) == \
        "waiting for the other nodes at head:29400, 1:4 nodes"
    assert rendezvous_words(None) is None and rendezvous_words({"nodes": "2"}) is None
