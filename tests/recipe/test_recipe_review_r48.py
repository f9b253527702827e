"""Review R48 D4: the node rank leaves a recipe's identity only where a launcher reads it."""
from __future__ import annotations

import json

from moeconsole.runner.recipes import recipe as recipes


def _hash(tmp_path, command, env) -> str:
    p = tmp_path / "r.yaml"
    p.write_text("name: x\ncommand: " + json.dumps(command) + "\nenv: " + json.dumps(env) + "\n")
    return recipes.recipe_hash(recipes.load(str(p), []))


def test_node_rank_of_a_plain_script_is_its_own_setting(tmp_path):
    plain = ["python", "train.py", "--output_dir", "/o"]
    assert _hash(tmp_path, plain, {"NODE_RANK": "0"}) != _hash(tmp_path, plain, {"NODE_RANK": "3"})   # was: equal


def test_node_rank_a_launcher_reads_is_still_left_out(tmp_path):
    tr = ["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "train.py"]
    assert _hash(tmp_path, tr, {"NODE_RANK": "0"}) == _hash(tmp_path, tr, {"NODE_RANK": "1"})
    assert _hash(tmp_path, tr, {"PET_NODE_RANK": "0"}) == _hash(tmp_path, tr, {"PET_NODE_RANK": "1"})
    swift = ["swift", "sft", "--model", "m"]
    assert (_hash(tmp_path, swift, {"NNODES": "2", "NODE_RANK": "0"})
            == _hash(tmp_path, swift, {"NNODES": "2", "NODE_RANK": "1"}))
    assert _hash(tmp_path, swift, {"NODE_RANK": "0"}) != _hash(tmp_path, swift, {"NODE_RANK": "1"})  # no launch counts
