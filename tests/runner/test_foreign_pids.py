"""Which processes on a GPU are someone else's: the crash judge calls an OOM "foreign memory"
only for those. Real processes, told apart by the run's environment marker."""
from __future__ import annotations

import os
import subprocess
import sys

from moeconsole.runner.process.proctree import foreign_pids


def _sleeper(env_extra: dict[str, str]) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_RUN")}
    env.update(env_extra)
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env)


def test_only_unmarked_untracked_live_processes_are_foreign():
    marked = _sleeper({"MOECONSOLE_RUN_ID": "20261125-000000-gpu-0001"})      # a Slurm task of this run
    other_run = _sleeper({"MOECONSOLE_RUN_ID": "20261125-000000-other-0002"})
    stranger = _sleeper({})
    tracked = _sleeper({})                                                   # our own child, no marker
    gone = _sleeper({})
    gone.kill()
    gone.wait()
    try:
        listed = [marked.pid, other_run.pid, stranger.pid, tracked.pid, gone.pid]
        found = foreign_pids(listed, {tracked.pid}, "20261125-000000-gpu-0001")
        assert sorted(found) == sorted([other_run.pid, stranger.pid])
    finally:
        for p in (marked, other_run, stranger, tracked):
            p.kill()
            p.wait()
