"""The run directory deleted under a live run, made again.

A cleanup job or an ``rm -rf`` of the wrong run deletes the run directory while its training and
runner go on. The runner used to go on blind: its state, events and control socket were gone, so
``kill RUN`` answered "no run matches" and nothing could stop or watch the training any more. The
guard notices the directory is gone and makes it again (``rundir.remake``) with what the runner
kept of it at start (the recipe, the secrets) and a new runner lock (one runner per run still
holds: the old lock went with the old directory). The runner then writes its state afresh, the
journal writes the records that waited in memory, and the control server binds its socket again.
The training's output goes on being read from the file it writes (the tailer is pinned to it).
"""
from __future__ import annotations

import os
from typing import Callable

from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.rundir.secrets import SECRETS_FILE

CHECK_S = 1.0        # how often the runner looks whether its directory is still there
KEPT_MAX = 4 << 20   # the most of a kept file read at start


class DirGuard:
    def __init__(self, run: rundir.RunDir, diag: Callable[[str], None] = lambda msg: None) -> None:
        self.run = run
        self.diag = diag
        self.kept: dict[str, bytes] = {}
        for name in (run.recipe.name, SECRETS_FILE):
            try:
                self.kept[name] = jsonio.read_small(run.path / name, KEPT_MAX)
            except OSError:
                pass
        self.lock_fd: int | None = None  # the lock taken in the directory made again
        self.remade = 0

    def check(self) -> bool:
        """True when the directory was gone and is made again now."""
        try:
            os.lstat(self.run.path)
            return False
        except FileNotFoundError:
            pass
        except OSError:
            return False
        try:
            rundir.remake(self.run, self.kept)
            lock = rundir.lock_runner(self.run, wait_s=0.0)
        except (OSError, rundir.RunLocked) as exc:
            self.diag(f"run directory {self.run.path} is gone and cannot be made again: {exc}")
            return False
        if self.lock_fd is not None:
            os.close(self.lock_fd)
        self.lock_fd = lock
        self.remade += 1
        self.diag(f"run directory {self.run.path} was deleted under the live run: made again")
        return True

    def close(self) -> None:
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None
