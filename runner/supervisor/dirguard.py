"""The run directory deleted under a live run, made again.

A cleanup job or an ``rm -rf`` of the wrong run deletes the run directory while its training and
runner go on. The runner used to go on blind: its state, events and control socket were gone, so
``kill RUN`` answered "no run matches" and nothing could stop or watch the training any more. The
guard notices the directory is gone and makes it again (``rundir.remake``) with what the runner
kept of it at start (the recipe, the secrets) and a new runner lock (one runner per run still
holds: the old lock went with the old directory). The runner then writes its state afresh, the
journal writes the records that waited in memory, and the control server binds its socket again.
The training's output goes on being read from the file it writes (the tailer is pinned to it),
and the runner's own log (its stderr) goes to the new ``runner.log``.

A directory *renamed* away is not deleted (the guard holds it open: its link count says so) and
is never made again under the old name: two directories would then claim the run. The runner
says so in its log and goes on as before (writing to the old paths fails; the rename is undone
by renaming it back).
"""
from __future__ import annotations

import os
from pathlib import Path
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
        self.renamed_said = False
        self.stderr_log = _stderr_is(run.runner_log)  # the runner's stderr is the run's runner.log
        try:  # held open: a deleted directory has no links left, a renamed one still has
            self.dir_fd: int | None = os.open(run.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            self.dir_fd = None

    def check(self) -> bool:
        """True when the directory was gone and is made again now."""
        try:
            os.lstat(self.run.path)
            return False
        except FileNotFoundError:
            pass
        except OSError:
            return False
        if self.dir_fd is None:
            return False
        if os.fstat(self.dir_fd).st_nlink > 0:
            if not self.renamed_said:
                self.diag(f"run directory {self.run.path} was renamed under the live run: not made again; "
                          f"rename it back to go on writing the run's files")
                self.renamed_said = True
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
        self.renamed_said = False
        try:
            new = os.open(self.run.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            new = None
        os.close(self.dir_fd)
        self.dir_fd = new
        self._stderr_to_new_log()
        self.diag(f"run directory {self.run.path} was deleted under the live run: made again")
        return True

    def _stderr_to_new_log(self) -> None:
        """The runner's stderr was the deleted runner.log: the new one from now on."""
        if not self.stderr_log:
            return
        try:
            fd = jsonio.open_append(self.run.runner_log)
        except OSError:
            return
        os.dup2(fd, 2)
        os.close(fd)

    def close(self) -> None:
        for fd in (self.lock_fd, self.dir_fd):
            if fd is not None:
                os.close(fd)
        self.lock_fd = self.dir_fd = None


def _stderr_is(path: Path) -> bool:
    try:
        a, b = os.fstat(2), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)
