"""What an attempt's environment is made of when its runner was started from another shell than
the run (``runfiles.run_env``): the run's own variables from environ.json, where the runner runs
(its Slurm allocation, its login session) from the runner's own environment."""
from __future__ import annotations

from moeconsole.runner.rundir import runfiles

STORED = {"PATH": "/home/u/venv/bin:/usr/bin", "HF_TOKEN": "hf_x", "TRAIN_SHARD": "a", "SLURM_JOB_ID": "100",
          "SLURM_NODELIST": "gpu01", "CUDA_VISIBLE_DEVICES": "0,1", "SSH_AUTH_SOCK": "/tmp/ssh-old/agent",
          "TMUX": "/tmp/tmux-0/default,1,0", "TERM": "tmux-256color"}


def test_the_runs_variables_stay_and_the_places_come_from_the_new_runner():
    own = {"PATH": "/usr/bin", "SLURM_JOB_ID": "200", "CUDA_VISIBLE_DEVICES": "2,3", "TERM": "xterm"}
    env = runfiles.run_env(STORED, own)
    assert env == {"PATH": "/home/u/venv/bin:/usr/bin", "HF_TOKEN": "hf_x", "TRAIN_SHARD": "a",
                   "SLURM_JOB_ID": "200", "CUDA_VISIBLE_DEVICES": "2,3", "TERM": "xterm"}
    # the old allocation's node list and the old session's agent and tmux are not carried over


def test_gpus_chosen_outside_an_allocation_are_the_runs():
    stored = {"CUDA_VISIBLE_DEVICES": "4,5", "PATH": "/usr/bin"}
    assert runfiles.run_env(stored, {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0"})["CUDA_VISIBLE_DEVICES"] == "4,5"
    assert runfiles.run_env(stored, {"PATH": "/bin"})["CUDA_VISIBLE_DEVICES"] == "4,5"


def test_what_the_file_cannot_hold_comes_from_the_runner():
    own = {"LATIN": "caf\udce9", "PATH": "/bin"}
    assert runfiles.storable_env(own) == {"PATH": "/bin"}
    assert runfiles.run_env({"PATH": "/usr/bin"}, own) == {"PATH": "/usr/bin", "LATIN": "caf\udce9"}
