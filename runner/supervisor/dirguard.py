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
is never made again under the old name: two directories would then claim the run. Where it went
is read from the descriptor the guard holds (``/proc/self/fd/N``, checked to be that very
directory): the runner's records and state follow it there (``Journal.moved_to``), so the run
is neither lost nor left `running` in a directory nobody writes, and the runner says so once in a
critical alert written there, where the user now looks. The training's own paths (its output
directory, its exit record) still name the old path: renamed back, everything is where it was.
Where it went cannot be read (no ``/proc``), the records wait in memory until it is renamed back.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from moeconsole.runner.rundir import jsonio, rundir, runfiles
from moeconsole.runner.rundir.secrets import SECRETS_FILE

CHECK_S = 1.0        # how often the runner looks whether its directory is still there
KEPT_MAX = 4 << 20   # the most of a kept file read at start


class DirGuard:
    def __init__(self, run: rundir.RunDir, diag: Callable[[str], None] = lambda msg: None) -> None:
        self.run = run
        self.diag = diag
        self.kept: dict[str, bytes] = {}
        for name in (run.recipe.name, SECRETS_FILE, runfiles.LAUNCH_ENV_FILE):
            try:
                self.kept[name] = jsonio.read_small(run.path / name, KEPT_MAX)
            except OSError:
                pass
        self.lock_fd: int | None = None  # the lock taken in the directory made again
        self.remade = 0
        self.renamed_said = False
        self.moved_to: Path | None = None  # where the directory was renamed to (None: at its name)
        self.stderr_log = _stderr_is(run.runner_log)  # the runner's stderr is the run's runner.log
        try:  # held open: a deleted directory has no links left, a renamed one still has
            self.dir_fd: int | None = os.open(run.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            self.dir_fd = None

    def check(self, *, remake: bool = True) -> str | None:
        """What became of the run directory since the last look: "remade" (it was deleted and is
        made again now; only with ``remake``), "moved" (renamed away: ``moved_to`` says where), "back" (renamed back to
        its name), or None (nothing new)."""
        try:
            here = os.lstat(self.run.path)
        except FileNotFoundError:
            here = None
        except OSError:
            return None
        if here is not None:
            if self.moved_to is not None and self.dir_fd is not None and os.path.samestat(here, os.fstat(self.dir_fd)):
                self.diag(f"run directory {self.run.path} is back under its name (it was {self.moved_to})")
                self.moved_to, self.renamed_said = None, False
                return "back"
            if self.moved_to is None:
                self._restore_kept()
            return None
        if self.dir_fd is None:
            return None
        if os.fstat(self.dir_fd).st_nlink > 0:
            where = self._where_now()
            if where is not None and where != self.moved_to:
                self.moved_to = where
                self.diag(f"run directory {self.run.path} was renamed under the live run to {where}: not made "
                          f"again; the runner's records follow it there; rename it back to {self.run.path} "
                          f"(the training's own paths name it)")
                return "moved"
            if where is None and not self.renamed_said:
                self.diag(f"run directory {self.run.path} was renamed under the live run: not made again; "
                          f"rename it back to go on writing the run's files")
                self.renamed_said = True
            return None
        if not remake:
            return None
        try:
            rundir.remake(self.run, self.kept)
            lock = rundir.lock_runner(self.run, wait_s=0.0)
        except (OSError, rundir.RunLocked) as exc:
            self.diag(f"run directory {self.run.path} is gone and cannot be made again: {exc}")
            return None
        if self.lock_fd is not None:
            os.close(self.lock_fd)
        self.lock_fd = lock
        self.remade += 1
        self.renamed_said, self.moved_to = False, None
        try:
            new = os.open(self.run.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            new = None
        os.close(self.dir_fd)
        self.dir_fd = new
        self._stderr_to_new_log()
        self.diag(f"run directory {self.run.path} was deleted under the live run: made again")
        return "remade"

    def _restore_kept(self) -> None:
        """A file kept at start (the recipe, the secrets, the launch environment) deleted from the
        directory that is still here: written again from what was kept. Those files are written
        once, at the run's creation, so a cleaner of old files (systemd-tmpfiles' age rule on a
        runs directory under /tmp, a cron `find -mtime +10 -delete`) takes them first while the
        run trains; without the recipe no runner can take the run over (`supervise` refused in one
        line while the views named it as the next command). The same cleaner removes the
        subdirectories made empty at creation (``rundir.SUBDIRS``: ``crashes/``, ``exits/``) as old
        empty directories: made again, 0700, or the attempt's exit record and crash report had
        nowhere to go (reviewed R27: the run ended FAILED with no crash on disk and its runner
        waiting on records it could never write)."""
        for sub in rundir.SUBDIRS:
            try:
                rundir.make_private_dir(self.run.path / sub)
            except FileExistsError:
                continue
            except OSError as exc:
                self.diag(f"{sub}/ was deleted under the live run and cannot be made again: {exc}")
                continue
            self.diag(f"{sub}/ was deleted under the live run (a cleaner of old empty directories?): made again")
        # state.json's spare (``RunDir.state_spare``), written only when no inode is free: the
        # cleaner's age rule takes it like the files above; made again empty while inodes are free
        try:
            if rundir.make_state_spare(self.run):
                self.diag(f"{self.run.state_spare.name} (state.json's spare) was missing: made again")
        except OSError:
            pass   # no inode for it now: state.json is rewritten in place if it comes to that
        for name, data in self.kept.items():
            path = self.run.path / name
            try:
                os.lstat(path)
                continue
            except FileNotFoundError:
                pass
            except OSError:
                continue
            try:
                jsonio.atomic_write_bytes(path, data)
            except OSError as exc:
                self.diag(f"{name} was deleted under the live run and cannot be written again: {exc}")
                continue
            self.diag(f"{name} was deleted under the live run (a cleaner of old files?): written again "
                      f"from what the runner kept at its start")

    def _where_now(self) -> Path | None:
        """Where the directory the guard holds open is now (None: not to be read, or deleted)."""
        if self.dir_fd is None:
            return None
        try:
            where = Path(os.readlink(f"/proc/self/fd/{self.dir_fd}"))
            return where if where.is_absolute() and os.path.samestat(os.lstat(where), os.fstat(self.dir_fd)) else None
        except OSError:
            return None

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
    return os.path.samestat(a, b)
