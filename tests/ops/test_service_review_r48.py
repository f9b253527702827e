"""Review R48 D1: `moeconsole service` finds this node's run of a recipe, never another node's, and still finds a
run created before round 19 (whose state.json holds the hash with the node rank in it) after an upgrade."""
from __future__ import annotations

import json
from pathlib import Path

from moeconsole.console.commands import service
from moeconsole.runner.ops.service import choose
from moeconsole.runner.process import launch
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.rundir import rundir


def _recipe(tmp: Path, rank: str, *, nnodes: str = "2", env_rank: str | None = None):
    cmd = ["torchrun", "--nnodes", nnodes, "--node_rank", rank, "--nproc_per_node", "8", "--master_addr", "n0",
           "train.py", "--output_dir", "/lustre/out"]
    env = {"OMP_NUM_THREADS": "1", **({"NODE_RANK": env_rank} if env_rank is not None else {})}
    p = tmp / f"r{rank}-{nnodes}-{env_rank}.yaml"
    p.write_text("name: sft70b\ncommand: " + json.dumps(cmd) + "\nenv: " + json.dumps(env) + "\n")
    return recipes.load(str(p), [])


def _running(run: rundir.RunDir, **extra) -> None:
    st = run.read_state()
    run.write_state({**st, "status": "running", **extra})


def _pick(base: Path, recipe):
    return choose(service._candidates(base, recipe.name), recipe.name, recipes.node_recipe_hash(recipe))


def test_node_one_never_takes_node_zeros_run(tmp_path, runs_dir):
    node0, node1 = _recipe(tmp_path, "0"), _recipe(tmp_path, "1")
    assert recipes.recipe_hash(node0) == recipes.recipe_hash(node1)   # one world's saves stamped alike
    run0 = launch.create_run(runs_dir, node0)
    _running(run0)
    assert _pick(runs_dir, node1).action == "new"                      # was: supervise run0 (--node_rank 0)
    assert (_pick(runs_dir, node0).action, _pick(runs_dir, node0).run_id) == ("supervise", run0.run_id)
    run1 = launch.create_run(runs_dir, node1)
    _running(run1)
    assert _pick(runs_dir, node1).run_id == run1.run_id
    assert _pick(runs_dir, node0).run_id == run0.run_id


def test_a_run_created_before_round_19_is_still_found_and_keeps_its_stamp(tmp_path, runs_dir):
    for recipe in (_recipe(tmp_path, "0", nnodes="1"), _recipe(tmp_path, "0", nnodes="1", env_rank="0")):
        old = launch.create_run(runs_dir, recipe)
        before_19 = recipes.node_recipe_hash(recipe)              # the hash runs were stamped with then
        assert before_19 != recipes.recipe_hash(recipe)
        _running(old, recipe_hash=before_19)
        choice = _pick(runs_dir, recipe)
        assert (choice.action, choice.run_id) == ("supervise", old.run_id)   # was: new, a second run beside it
        # taken up, it checks its saves against the stamp they carry (was: the world hash, every save drift)
        assert recipes.run_stamp(recipe, before_19) == before_19
        assert recipes.run_stamp(recipe, recipes.recipe_hash(recipe)) == recipes.recipe_hash(recipe)
        assert recipes.run_stamp(recipe, "0123456789abcdef") == recipes.recipe_hash(recipe)
        old.write_state({**old.read_state(), "status": "succeeded"})


def test_another_nodes_run_of_a_plain_command_is_told_apart_too(tmp_path, runs_dir):
    p = tmp_path / "plain.yaml"
    p.write_text('name: shard\ncommand: ["python", "train.py"]\nenv: {NODE_RANK: "0"}\n')
    zero = recipes.load(str(p), [])
    p.write_text('name: shard\ncommand: ["python", "train.py"]\nenv: {NODE_RANK: "3"}\n')
    three = recipes.load(str(p), [])
    _running(launch.create_run(runs_dir, zero))
    assert _pick(runs_dir, three).action == "new"
