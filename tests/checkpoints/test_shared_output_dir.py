"""One output dir shared by several nodes' runners (round 19): the world's identity and the save every node's
part is in."""
from __future__ import annotations

from moeconsole.runner.checkpoints.watch import latest_good
from moeconsole.runner.recipes import cmdline
from tests.checkpoints.conftest import write_demo_checkpoint


def _node(rank: int) -> list[str]:
    return ["{python}", "-m", "torch.distributed.run", "--nnodes", "2", f"--node-rank={rank}", "--nproc_per_node", "8",
            "--master_addr", "n0", "--master_port", "29500", "train.py", "--output_dir", "/lustre/out"]


def test_every_node_of_one_world_has_one_recipe_identity_and_nothing_else_is_masked():
    from moeconsole.runner.recipes import model
    from moeconsole.runner.recipes.recipe import recipe_hash

    def h(command, env=None):
        return recipe_hash(model.RunRecipe(name="r", command=command, env=env or {}))

    assert h(_node(0)) == h(_node(1))                                  # torchrun's --node_rank, either spelling
    swift = ["swift", "sft", "--output_dir", "/lustre/out"]
    assert h(swift, {"NNODES": "2", "NODE_RANK": "0"}) == h(swift, {"NNODES": "2", "NODE_RANK": "1"})
    assert h(_node(0)) != h(_node(0)[:-1] + ["/lustre/other"])         # anything else still tells recipes apart
    assert h(swift, {"NNODES": "2", "NODE_RANK": "1"}) != h(swift, {"NNODES": "4", "NODE_RANK": "1"})
    env, argv = cmdline.world_command({"NODE_RANK": "1"}, _node(1))
    assert env["NODE_RANK"] == argv[5].split("=", 1)[1] == cmdline.NODE_RANK_WORD
    assert cmdline.world_command({}, swift) == ({}, swift)
    placeholder = _node(0)[:5] + ["--node_rank", "{node_rank}"] + _node(0)[6:]
    assert cmdline.world_command({"NODE_RANK": "${SLURM_NODEID}"}, placeholder) == \
        ({"NODE_RANK": "${SLURM_NODEID}"}, placeholder)                 # alike on every node already: unchanged


def _world_save(d, step: int, shares, world: int = 2, local: int = 1):
    """A save as ms-swift over transformers writes it in a world of ``world`` processes, ``local`` per node: args.json
    with ``global_world_size``/``local_world_size`` (swift/arguments/base_args/base_args.py ``save_args``), and
    each process's ``rng_state_{i}.pth`` (trainer.py ``_save_rng_state`` l.3470-3477, 5.19.0)."""
    import json
    import torch
    write_demo_checkpoint(d, step)
    (d / "args.json").write_text(json.dumps({"tuner_type": "lora", "global_world_size": world,
                                             "local_world_size": local}))
    for i in shares:
        torch.save({"cpu": torch.zeros(1)}, d / f"rng_state_{i}.pth")
    return d


def test_a_save_whose_node_share_is_cut_short_is_passed_over_and_an_absent_one_only_warns(tmp_path):
    """Node 0's process 0 wrote checkpoint-6 while node 1's ``rng_state_1.pth`` there was cut short (transformers
    writes it with no barrier, trainer.py l.3470; ``torch.load`` of a file with no zip end raises on every
    resume): both nodes resume from checkpoint-4, the newest save whose every share loads (its world, 2
    processes one a node, said by its args.json; the dir shown shared by another save of that world holding
    node 1's share). An ABSENT share is no reason (review R53: transformers resumes, that process's RNG
    starting fresh, trainer.py l.3809-3817): checkpoint-6 is the resume point, as it is once the share is whole."""
    import torch
    out = tmp_path / "out"
    for step in (2, 4):
        _world_save(out / f"checkpoint-{step}", step, (0, 1))
    _world_save(out / "checkpoint-6", 6, (0,))
    (out / "checkpoint-6" / "rng_state_1.pth").write_bytes(b"PK\x03\x04" + b"\0" * 64)    # cut: no zip end
    good = latest_good(out, trainer=True)
    assert good is not None and good.step == 4, good
    (out / "checkpoint-6" / "rng_state_1.pth").unlink()
    good = latest_good(out, trainer=True)
    assert good is not None and good.step == 6, good
    torch.save({"cpu": torch.zeros(1)}, out / "checkpoint-6" / "rng_state_1.pth")
    good = latest_good(out, trainer=True)
    assert good is not None and good.step == 6, good


def test_a_node_with_a_disk_of_its_own_resumes_as_before(tmp_path):
    """Node 0's own disk holds no other node's share: its newest save is its resume point, as before."""
    out = tmp_path / "out"
    for step in (2, 4, 6):
        write_demo_checkpoint(out / f"checkpoint-{step}", step)
    good = latest_good(out, trainer=True)
    assert good is not None and good.step == 6
    assert latest_good(out, trainer=True, before_step=6).step == 4


def test_only_process_0s_own_file_written_since_the_run_started_proves_a_shared_dir(tmp_path):
    """``logging.jsonl`` is written by the world's process 0 alone (ms-swift's ``on_log`` under
    ``is_world_process_zero``): in an ms-swift ``v<N>-<time>/`` folder since the run started it proves node 0
    writes into node 1's dir; an earlier run's, a checkpoint's own files or nothing prove nothing."""
    import os
    from moeconsole.runner.checkpoints.discover import world_zero_writes_here
    out = tmp_path / "out"
    (out / "v0-20261201-110000" / "checkpoint-2").mkdir(parents=True)
    (out / "v0-20261201-110000" / "checkpoint-2" / "rng_state_1.pth").write_bytes(b"x")
    log = out / "v0-20261201-110000" / "logging.jsonl"
    assert not world_zero_writes_here(out, since=0)
    log.write_text("{}\n")
    started = log.stat().st_mtime + 10
    assert not world_zero_writes_here(out, since=started)        # an earlier run's
    os.utime(log, (started + 5, started + 5))
    assert world_zero_writes_here(out, since=started)
