"""Review R35's findings on the recipe rules: where a torchrun agent waits (recipes/cmdline.py ``argv_layout``,
``rendezvous_of``) and whether the command gives its own device map (recipes/memory_estimate.py ``gpus_of_command``).

1. A plain ``torchrun ...`` is a console script with a ``#!.../bin/python`` shebang (torch 2.13's
   entry_points.txt l.3), so /proc shows its agent as ``PYTHON .../bin/torchrun ARGS`` (measured: the reviewer's
   ``.venv-swift/bin/torchrun --nnodes 2 ...`` read back by psutil). Before: no launcher, no rendezvous, a bare RUNNING.
3. A backend other than ``static`` takes ``--rdzv-endpoint`` as it is, empty meaning ``localhost`` and its own
   default port added to a host without one (torch 2.13 run.py l.790-793 ``get_rdzv_endpoint``; rendezvous/utils.py
   l.68-115 ``parse_rendezvous_endpoint``; c10d_rendezvous_backend.py l.32/l.135 29400; etcd 2379). Before: c10d
   without an endpoint was shown at 127.0.0.1:29500 and ``head`` without its port.
4. HfArgumentParser registers ``--device-map`` beside ``--device_map`` (transformers hf_argparser.py l.151-153) and
   argparse takes an abbreviation: the command gives its own device map in every spelling ms-swift's parser
   takes (swift.flags.resolve_flags), so ms-swift's ``model_kwargs: {'device_map': 'cpu'`` line is no proof of a
   machine without GPUs. Before: ``--device-map cpu`` and ``--device_ma cpu`` cost a 2-process run 0 GPUs."""
from __future__ import annotations

import pytest
import yaml

from moeconsole.runner.recipes.cmdline import Rendezvous, argv_layout, launch_counts, rendezvous_of, set_flag

PY = "/v/bin/python"
TR = "/v/bin/torchrun"


@pytest.mark.parametrize("argv, want", [
    # the reviewer's agent as psutil read it back
    ([PY, TR, "--nnodes", "2", "--node_rank", "0", "--nproc_per_node", "1", "--master_port", "29871", "x.py"],
     Rendezvous("127.0.0.1:29871", "2", "0")),
    # with interpreter options before the script, and a python3.11 interpreter
    ([PY, "-u", TR, "--nnodes=2", "--node-rank=1", "--master-addr", "10.0.0.1", "x.py"],
     Rendezvous("10.0.0.1:29500", "2", "1")),
    (["/usr/bin/python3.11", "-X", "dev", TR, "--nnodes", "1:4", "--rdzv-backend", "c10d", "x.py"],
     Rendezvous("localhost:29400", "1:4", None)),
    # not waiting on anyone: one node, torchrun's name as a script argument, another script
    ([PY, TR, "--nproc_per_node", "2", "x.py"], None),
    ([PY, TR, "--nnodes", "1", "x.py", "--nnodes", "2"], None),
    ([PY, "x.py", TR, "--nnodes", "2"], None),
    ([PY, "/v/bin/torchrunner", "--nnodes", "2", "x.py"], None),
])
def test_the_torchrun_script_run_by_its_interpreter(argv, want):
    assert rendezvous_of(argv) == want


def test_the_script_form_is_torchrun_for_every_command_rule():
    """The same layout is what the runner's flag edits and counts read: a recipe written that way is torchrun's too."""
    argv = [PY, TR, "--nnodes", "2", "--nproc_per_node", "4", "x.py", "--lr", "1"]
    assert argv_layout(argv).launcher == "torchrun" and argv_layout(argv).script_at == 6
    assert set_flag(argv, "--master_port", "29600") == [PY, TR, "--nnodes", "2", "--nproc_per_node", "4",
                                                         "--master_port", "29600", "x.py", "--lr", "1"]
    assert launch_counts({}, argv) == ("4", "2")


@pytest.mark.parametrize("launcher, want", [
    # c10d: no endpoint is localhost at c10d's port, not torchrun's master address
    (["--rdzv-backend", "c10d"], "localhost:29400"),
    (["--rdzv_backend=c10d", "--master_port", "29511"], "localhost:29400"),
    (["--rdzv-backend", "c10d", "--rdzv-endpoint", "head"], "head:29400"),
    (["--rdzv-backend", "c10d", "--rdzv-endpoint", "head:29555"], "head:29555"),
    (["--rdzv-backend", "c10d", "--rdzv-endpoint", "[fd00::1]"], "[fd00::1]:29400"),
    (["--rdzv-backend", "c10d", "--rdzv-endpoint", "[fd00::1]:29401"], "[fd00::1]:29401"),
    (["--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "etcd.local"], "etcd.local:2379"),
    # static: the master address and port unless an endpoint is given, as written (torch refuses one without a port)
    ([], "127.0.0.1:29500"),
    (["--master_addr", "head", "--master_port", "29511"], "head:29511"),
    (["--rdzv-endpoint", "head:29512"], "head:29512"),
])
def test_the_endpoint_each_backend_waits_at(launcher, want):
    for argv in (["torchrun", "--nnodes", "2", *launcher, "x.py"], [PY, TR, "--nnodes", "2", *launcher, "x.py"]):
        got = rendezvous_of(argv)
        assert got is not None and got.endpoint == want, (argv, got)


@pytest.mark.parametrize("given, gpus", [
    (["--device_map", "cpu"], 2),
    (["--device-map", "cpu"], 2),
    (["--device-map=cpu"], 2),
    (["--device_ma", "cpu"], 2),      # argparse's abbreviation, as ms-swift's table resolves it
    ([], 0),                          # ms-swift's own default found no GPU
    (["--device_ma_x", "cpu"], 0),    # no flag of ms-swift's: not a device map
])
def test_the_command_gives_its_own_device_map_in_any_spelling(tmp_path, given, gpus):
    from moeconsole.runner.recipes.memory_estimate import gpus_of_command
    from moeconsole.runner.recipes.recipe import load as load_recipe
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({"name": "r", "command": ["swift", "sft", "--model", "m", *given],
                                      "env": {"NPROC_PER_NODE": "2"}}))
    assert gpus_of_command(load_recipe(recipe), log_found_no_gpu=True) == gpus
    assert gpus_of_command(load_recipe(recipe)) == 2


@pytest.mark.parametrize("given, gpus", [(["--device-map", "cpu"], 2), (["--device_map=cpu"], 2), ([], 0)])
def test_a_command_without_ms_swift_names_its_flag_either_way(tmp_path, given, gpus):
    from moeconsole.runner.recipes.memory_estimate import gpus_of_command
    from moeconsole.runner.recipes.recipe import load as load_recipe
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({"name": "r", "command": ["torchrun", "--nproc_per_node", "2", "train.py", *given]}))
    assert gpus_of_command(load_recipe(recipe), log_found_no_gpu=True) == gpus
