"""Review R28 of s2 (other processes' RNG-only folders are no save): only a set of RNG states one other node can
hold is excused (node n of k processes holds rng_state_{n*k}..{n*k+k-1}); node 0's without process 0's is a stub
still; and another node's DeepSpeed / FSDP shards beside its RNG states are its share too, no bad save."""
from __future__ import annotations

import pytest

from tests.swift.swift_helpers import cli


@pytest.mark.parametrize("files, verdict", [
    ({f"rng_state_{k}.pth": b"PK" for k in range(1, 8)}, "EMPTY_STUB"),     # one node of 8, process 0 wrote nothing
    ({"rng_state_1.pth": b"PK", "rng_state_3.pth": b"PK"}, "EMPTY_STUB"),    # no node holds 1 and 3 alone
    ({f"rng_state_{k}.pth": b"PK" for k in range(8, 16)}, None),             # node 1 of 2, 8 each
    ({f"rng_state_{k}.pth": b"PK" for k in range(9, 16)}, None),             # the same, rng_state_8 not yet there
    # DeepSpeed ZeRO, node 1 of 2 (2 each): its optimizer shards, no mp_rank_00_model_states.pt
    ({"rng_state_2.pth": b"PK", "rng_state_3.pth": b"PK",
      "global_step4/bf16_zero_pp_rank_2_mp_rank_00_optim_states.pt": b"PK",
      "global_step4/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt": b"PK"}, None),
    # FSDP SHARDED_STATE_DICT (torch.distributed.checkpoint), node 1 of 2, 8 each: no .metadata here
    ({"rng_state_8.pth": b"PK", "pytorch_model_fsdp_0/__8_0.distcp": b"PK", "optimizer_0/__8_0.distcp": b"PK"}, None),
    # process 0's own DeepSpeed files are not another node's share
    ({"rng_state_1.pth": b"PK", "global_step4/mp_rank_00_model_states.pt": b"PK"}, "EMPTY_STUB"),
    ({"rng_state_8.pth": b"PK", "pytorch_model_fsdp_0/.metadata": b"PK",
      "pytorch_model_fsdp_0/__8_0.distcp": b"PK"}, "EMPTY_STUB"),
    ({"rng_state_8.pth": b"PK", "pytorch_model_fsdp_0/__0_0.distcp": b"PK"}, "EMPTY_STUB"),
])
def test_only_another_nodes_share_is_no_save(tmp_path, files, verdict):
    ckpt = tmp_path / "output" / "v0-20261201-012625" / "checkpoint-4"
    for name, data in files.items():
        (ckpt / name).parent.mkdir(parents=True, exist_ok=True)
        (ckpt / name).write_bytes(data)
    out = cli(None, "verify", str(tmp_path / "output"))
    if verdict is None:
        assert "no checkpoints found" in out.stdout + out.stderr, out.stdout
    else:
        assert verdict in out.stdout, out.stdout
