"""Which Python program a process runs, and whether a traceback's frames are one run here (round 20)."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.programs import frames_ran_here, python_program


@pytest.mark.parametrize("argv, want", [
    (["/venv/bin/python3", "-u", "train.py", "--lr", "1"], "/work/train.py"),
    (["python", "-X", "faulthandler", "-W", "ignore", "/abs/train.py"], "/abs/train.py"),
    (["python3.11", "-c", "print(1)", "x.py"], "<string>"),
    (["python", "-m", "torch.distributed.run", "train.py"], "-m:torch.distributed.run"),
    (["python", "-mswift.cli.sft"], "-m:swift.cli.sft"),
    (["python", "-"], "<stdin>"),
    (["python"], "<stdin>"),
    (["/usr/bin/bash", "-c", "python train.py"], None),
    (["/usr/local/bin/ray", "job", "submit", "--", "python", "train.py"], None),
])
def test_the_program_an_interpreters_argv_runs_as_its_tracebacks_name_it(argv, want):
    assert python_program(argv, "/work") == want


def test_frames_are_run_here_only_by_a_program_a_process_here_ran():
    here = {"/work/train.py": True, "-m:torch.distributed.run": True, "/usr/local/bin/ray": True}
    assert frames_ran_here(["/work/train.py", "/venv/lib/torch/nn/module.py"], here) is True
    assert frames_ran_here(["/venv/lib/python3.11/site-packages/torch/distributed/run.py"], here) is True
    # relayed from a cluster's worker: a file no process here ran
    assert frames_ran_here(["/tmp/ray/session_1/working_dir/train.py"], here) is None
    # run here, by a process that lifted its own limit
    assert frames_ran_here(["/work/train.py"], {"/work/train.py": False}) is False
    assert frames_ran_here([], here) is None and frames_ran_here(["/work/train.py"], None) is None


def test_a_retitled_interpreter_under_the_limit_leaves_a_traceback_unsettled():
    from moeconsole.runner.core.programs import UNKNOWN, can_tell_program
    assert can_tell_program({"/work/train.py": True}) and not can_tell_program(None)
    assert not can_tell_program({"/usr/bin/ray": True, UNKNOWN: True}) and can_tell_program({UNKNOWN: False})
