"""A flag the runner or ``--set`` changes keeps its place: launcher flags stay before the
training script, a replaced flag keeps its position and spelling (pure functions, plain data)."""
from __future__ import annotations

import pytest

from moeconsole.runner.recipes.cmdline import argv_layout, misplaced, set_flag, with_port
from moeconsole.runner.recipes.recipe import attempt_argv, validate

TORCHRUN = ["{python}", "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517",
            "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps", "200"]


def test_the_script_starts_after_torchruns_options():
    lay = argv_layout(TORCHRUN)
    assert (lay.launcher, TORCHRUN[lay.script_at], TORCHRUN[lay.insert_at]) == ("torchrun", "moeconsole.runner.demo.train", "-m")
    assert argv_layout(["torchrun", "--standalone", "--nproc-per-node=2", "train.py", "--lr", "1"]).script_at == 3
    assert argv_layout(["python3.11", "-u", "-X", "dev", "-m", "torch.distributed.launch", "--nnodes", "1",
                   "t.py"]).script_at == 8
    assert argv_layout(["swift", "sft", "--model", "m"]) .launcher == ""


def test_a_changed_flag_keeps_its_position_and_spelling():
    assert set_flag(TORCHRUN, "--master_port", "36997")[5:7] == ["--master_port", "36997"]
    assert set_flag(TORCHRUN, "--nproc_per_node", "1")[3:5] == ["--nproc_per_node", "1"]
    assert set_flag(TORCHRUN, "--max_steps", "5")[-2:] == ["--max_steps", "5"]
    assert len(set_flag(TORCHRUN, "--max_steps", "5")) == len(TORCHRUN)
    spelled = ["torchrun", "--master-port=1", "t.py", "--lr", "1e-4", "--epochs", "3"]
    assert set_flag(spelled, "--master_port", "2") == ["torchrun", "--master-port=2", "t.py", "--lr", "1e-4",
                                                       "--epochs", "3"]
    assert set_flag(["t", "--lr", "1", "--x", "--lr=2"], "--lr", "3") == ["t", "--lr", "3", "--x"]
    assert set_flag(["t", "--lr", "1", "--x"], "--lr", None) == ["t", "--x"]


def test_a_missing_flag_goes_to_its_own_part():
    # torchrun's own flag: before the script (and before -m, which belongs to the script's name)
    assert set_flag(TORCHRUN, "--nnodes", "1")[7:11] == ["--nnodes", "1", "-m", "moeconsole.runner.demo.train"]
    # anything else is the script's: at the end
    assert set_flag(TORCHRUN, "--fault", "oom@3")[-2:] == ["--fault", "oom@3"]
    assert set_flag(["python", "t.py"], "--nproc_per_node", "2") == ["python", "t.py", "--nproc_per_node", "2"]


def test_a_moved_port_is_written_where_torchrun_reads_it():
    assert with_port(TORCHRUN, 40000)[5:7] == ["--master_port", "40000"]
    # torchrun reads PET_MASTER_PORT, not MASTER_PORT: without the flag it is added before the script
    assert with_port(["torchrun", "--nproc_per_node", "2", "t.py"], 7) == \
        ["torchrun", "--nproc_per_node", "2", "--master_port", "7", "t.py"]
    # --standalone and --rdzv_endpoint choose their own port; a plain script keeps its own flag only
    assert with_port(["torchrun", "--standalone", "t.py"], 7) == ["torchrun", "--standalone", "t.py"]
    assert with_port(["python", "t.py"], 7) == ["python", "t.py"]
    assert with_port(["python", "t.py", "--master_port", "5"], 7) == ["python", "t.py", "--master_port", "7"]


def test_launch_only_flags_after_the_script_are_named():
    assert misplaced(TORCHRUN) == []
    assert misplaced(["torchrun", "t.py", "--log_dir", "x"]) == []  # a script may have its own --log_dir
    bad = misplaced(TORCHRUN + ["--master_port", "1"])
    assert len(bad) == 1 and "--master_port" in bad[0] and "-m moeconsole.runner.demo.train" in bad[0]


@pytest.mark.parametrize("port", [None, 36997])
def test_the_runners_command_keeps_launcher_flags_before_the_script(port):
    recipe = validate({"command": TORCHRUN, "resume": {"arg": "--resume_from_checkpoint", "args": None}})
    argv = attempt_argv(recipe, {"run_dir": "/r"}, resume_from="/r/output/checkpoint-4", port=port)
    assert misplaced(argv) == []
    assert argv[-2:] == ["--resume_from_checkpoint", "/r/output/checkpoint-4"]
    assert argv[5:7] == ["--master_port", str(port or 29517)]


def test_one_rule_for_how_many_processes_a_command_starts(tmp_path):
    """Three rules read the process count (lint's per-node check, the memory estimate's GPUs,
    ms-swift's world size for its start-up checks and derived iterations) and disagreed on the same
    recipe: ``NPROC_PER_NODE=8`` beside ``torchrun --nproc-per-node=4`` made the estimate split the
    model over 8 GPUs (torchrun never reads NPROC_PER_NODE: it starts 4) while lint read the dashed
    ``=`` spelling not at all; ``megatron sft`` with only ``NNODES=2`` (ms-swift then runs torchrun
    with its default 1 per node) had no world size. Now one owner (``cmdline.launch_counts`` /
    ``world_size``) answers all three."""
    import yaml
    from moeconsole.runner.recipes import lint, memory_estimate
    from moeconsole.runner.recipes.cmdline import launch_counts, world_size
    from moeconsole.runner.recipes.recipe import load

    def recipe(command, env, devices=None):
        path = tmp_path / f"r{len(list(tmp_path.iterdir()))}.yaml"
        path.write_text(yaml.safe_dump({"name": "w", "command": command, "env": env,
                                        **({"gpus": {"devices": devices}} if devices else {})}))
        return load(path)

    torchrun = recipe(["torchrun", "--nproc-per-node=4", "--nnodes", "3", "train.py", "--nnodes", "9"],
                      {"NPROC_PER_NODE": "8"}, devices=list(range(8)))
    assert launch_counts(torchrun.env, torchrun.command) == ("4", "3")   # the script's own --nnodes 9 is not torchrun's
    assert memory_estimate.gpus_of_command(torchrun) == 12 == \
        world_size(torchrun.env, torchrun.command)
    mismatch = [p["message"] for p in lint.check_gpus(torchrun) if p["rule"] == "gpu_count_mismatch"]
    assert mismatch == ["4 processes per node but gpus.devices lists 8 GPUs"]

    swift = recipe(["megatron", "sft", "--model", "m"], {"NNODES": "2"})
    assert world_size(swift.env, swift.command) == 2
    assert memory_estimate.gpus_of_command(swift) == 2
    alone = recipe(["megatron", "sft", "--model", "m"], {}, devices=[0, 1])
    assert world_size(alone.env, alone.command) is None                   # no torchrun: ms-swift runs one process
    assert memory_estimate.gpus_of_command(alone) == 2                # the estimate falls back to the devices
    assert world_size({"NPROC_PER_NODE": "8"}, ["python", "train.py"]) is None
    assert world_size({}, ["torchrun", "--nproc_per_node", "gpu", "t.py"]) is None
    assert world_size({"PET_NPROC_PER_NODE": "2"}, ["torchrun", "t.py"]) == 2
