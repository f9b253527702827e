"""The waiter: a tiny parent between the runner and the training command.

    python -m moeconsole.runner.process.waiter EXIT_RECORD -- COMMAND [ARGS...]

Only a parent can learn how a process ended. The runner may be killed and replaced while an
attempt runs; the replacement cannot wait() on a process it did not start. So the runner starts
this waiter, the waiter starts the command and waits for it, writes the exit status into the run
directory (``exits/attempt-N.json``, atomically, 0600), and then ends the same way the command
did, so a runner that is still its parent sees the very same return code.

It blocks SIGTERM/SIGINT/SIGHUP (the runner signals the command itself; the waiter must live to
write the record); SIGKILL still ends it. Blocked, not ignored: the command is forked from it, and
until it execs it is a copy of the waiter; a signal sent to it then (a kill in the first moments of
an attempt) stays pending and ends it as it unblocks, where an ignored one was lost and the command
trained on. What is pending on the waiter itself is discarded once the record is written. It
imports nothing beyond the standard library's core.

It is the child subreaper of the command's tree: what the command orphans (a training a launcher
started in the background with a double fork and ``setsid``) comes back to the waiter, which
reaps it the moment it ends and so knows when it ended against the command's own end. The record
keeps the last bad ends of those orphans (``orphan_ends``: PID, return code, and ``mono``, when,
on the system's monotonic clock, as the command's ``ended_mono``), and the PIDs of the command's
tree that still live when the waiter ends (``outliving``: they go back to the runner, the next
subreaper, which then knows them as the attempt's). Which of those ends is the attempt's end is
the runner's decision (``lifecycle.attempt_returncode``).
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import stat
import sys
import time

TYPE_CHECKING = False  # typing is not imported at run time: the waiter starts with every attempt
if TYPE_CHECKING:
    from collections.abc import Callable

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Python ignores these in itself; an ignored signal stays ignored across exec, so the command gets
# them back at their defaults, as subprocess's ``restore_signals`` does for a command run by hand
# (``FORWARDED`` too: a runner started under ``nohup`` has SIGHUP ignored).
RESTORED = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name))
EXEC_FAILED = 127
PR_SET_CHILD_SUBREAPER = 36
BAD_ENDS_KEPT = 32  # the last orphans of the command's tree that ended badly, in the record
MAX_OUTLIVING = 4096
SETTLE_WALKS = 32  # walks of the tree at the command's end before its listing is taken as it stands


def restore_dispositions(*also: signal.Signals) -> None:
    """Before exec: ``RESTORED`` (and ``also``) back at their defaults."""
    for s in also + RESTORED:
        signal.signal(s, signal.SIG_DFL)


def set_child_subreaper() -> bool:
    """Orphans of this process's descendants come back to it, not to PID 1 (Linux only; False
    elsewhere). The one owner: the runner's ``proctree`` uses this too."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def returncode_from_status(status: int) -> int:
    """Popen's convention from a raw wait status: exit code, or -N when killed by signal N."""
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return status


DIR_MODE = 0o700  # a directory of the run: the owner only


def make_private_dir(path: str | os.PathLike[str], *, exist_ok: bool = False) -> None:
    """One directory, mode 0700 exactly: never from the umask (``umask 000`` would make it
    0777, ``umask 777`` 0000). Created, then opened without following a symlink and fchmod'ed,
    so a name swapped for a link in between is ELOOP, never chmod'ed elsewhere. With
    ``exist_ok``, an existing one must be a real directory (a symlink is ``NotADirectoryError``).
    The one owner, here because the waiter runs by path with ``-S -E`` and imports no package:
    the run directory's code takes it from here (``rundir.make_private_dir``)."""
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        if not exist_ok:
            raise
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, "not a directory (a symlink or a file)", str(path)) from None
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, DIR_MODE)
    finally:
        os.close(fd)


TEMP_TAG_HEX = 8   # the random part of a temp name: 4 bytes in hex (``jsonio.temp_name``)


def spare_name(name: str) -> str:
    """The spare file kept beside ``name``: shaped as a temp name (``jsonio.is_temp_name``), so every
    reader that skips those skips it: ``.state.json.00000000``. The one owner (``jsonio`` takes it from
    here): ``state.json``'s spare (``jsonio.exchange_write``) and the exit record's, which the waiter
    finds by this name beside its record (``record_spare``)."""
    return f".{name}.{'0' * TEMP_TAG_HEX}"


def record_spare(exit_path: str) -> str:
    """The exit record's spare (``spare_name``), which the runner makes at the attempt's start
    (``LocalEngine.start``). Found by its name, not passed: the argv stays ``EXIT_RECORD -- COMMAND``,
    the form every waiter takes, so a runner of one version starts the waiter on disk of another
    (review R36: a runner in memory that passed ``EXIT_RECORD SPARE -- COMMAND`` to an older
    waiter on disk, after a ``git checkout`` of an older version, lost the attempt to its usage text)."""
    where, name = os.path.split(exit_path)
    return os.path.join(where, spare_name(name))


RECORD_TRIES = 3  # writes of the exit record, each after making ``exits/`` again if it was gone


def run_dir_seen(exit_path: str) -> os.stat_result | None:
    """The run directory the record's ``exits/`` is in, as the waiter saw it at its start."""
    try:
        return os.stat(os.path.dirname(os.path.dirname(exit_path)))
    except OSError:
        return None


def _write_record(path: str, record: dict, spare: str | None = None,
                  run_dir: os.stat_result | None = None) -> None:
    """The exit record, atomically. ``exits/`` is an empty directory until an attempt ends, and a
    cleaner of old empty directories (systemd-tmpfiles' age rule on a runs directory under /tmp, a
    cron ``find -empty -delete``) takes it; the runner makes it again once a second
    (``DirGuard._restore_kept``), but not within the second the training died in, and not at all
    while no runner lives (round 15: the record lost, a new runner judged the attempt "ended with
    an unknown exit status" where it had exited 3). So it is made again here (only the leaf: a run
    directory gone is not made by the waiter), but only in the run directory the waiter saw at its
    start (``run_dir``): one renamed away leaves a stranger at its old path (the training's output
    directory made again there), never to be made a run again. ``spare``: an empty
    file the runner made beside it at the attempt's start, written and renamed over the record
    when no new file can be made (``_open_temp``)."""
    for _ in range(RECORD_TRIES - 1):
        try:
            _write_record_once(path, record, spare)
            return
        except FileNotFoundError:
            here = run_dir_seen(path)
            if run_dir is None or here is None or not os.path.samestat(here, run_dir):
                raise   # the run directory gone or renamed: said, as before
            make_private_dir(os.path.dirname(path), exist_ok=True)
    _write_record_once(path, record, spare)


def _open_temp(path: str, spare: str | None) -> tuple[int, str]:
    """The file the record is written into before it is renamed over ``path``: a new temp file,
    or, when the filesystem has no inode for one (ENOSPC with bytes to spare: a cache or a
    cleaner's work directory full of small files), the spare the runner made while inodes were
    free. Without it the record was lost there, and a runner that was not the waiter's parent
    (the first killed, `supervise` later) judged the attempt "ended with an unknown exit status"
    (round 15). Never through a symlink; the spare is never made here."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), tmp
    except OSError as exc:
        if exc.errno != errno.ENOSPC or spare is None:
            raise
        try:
            return os.open(spare, os.O_WRONLY | os.O_NOFOLLOW), spare
        except OSError:
            raise exc from None


def _write_record_once(path: str, record: dict, spare: str | None = None) -> None:
    fd, tmp = _open_temp(path, spare)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, (json.dumps(record) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


NPROC_NEAR = 16   # tasks short of ``ulimit -u`` still called "at" it: some end between the refused fork and the count


def process_limit_said(exc: OSError) -> str | None:
    """Why a fork(2) (a ``Popen``) was refused, when a limit on processes can be shown to be the one; None
    otherwise. fork(2) fails with EAGAIN at two limits (kernel/fork.c ``copy_process``):

    - the user's process limit (``ulimit -u``, RLIMIT_NPROC): every process and thread of the user's real
      UID, on a shared login node the user's other sessions too; never binding for root nor a holder of
      CAP_SYS_RESOURCE or CAP_SYS_ADMIN (``p->real_cred->user != INIT_USER && !capable(...)``). Named only
      when it applies and the user's tasks this namespace shows are at it (``_user_tasks``): the limit is
      finite by default (tens of thousands), so EAGAIN alone named it for root with one process (R36);
    - a control group's task limit (``pids.max``: a container's ``--pids-limit``, a pod's pids limit,
      systemd's ``TasksMax=``; ``cgroup_pids`` ``pids_can_fork``), named when a group of ours is at it.

    The one owner of that line: the waiter forking the training, the runner starting the waiter
    (``launcher``), ``run`` starting the runner."""
    if exc.errno != errno.EAGAIN:
        return None
    group = _pids_group_at_limit()
    if group is not None:
        return (f"this control group's tasks reached its task limit (pids.max {group}: a container's "
                f"--pids-limit, a pod's pids limit, systemd's TasksMax=); end some, or raise it")
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    except (ImportError, ValueError, OSError):
        return None
    if soft == getattr(resource, "RLIM_INFINITY", -1) or not _nproc_binds():
        return None
    tasks = _user_tasks(os.getuid())
    if tasks is None or tasks + NPROC_NEAR < soft:
        return None
    return (f"this user's processes and threads reached the process limit (ulimit -u) of {soft}; "
            f"end some, or raise it (ulimit -u, limits.conf nproc, systemd's TasksMax=)")


_CAP_SYS_ADMIN, _CAP_SYS_RESOURCE = 21, 24   # linux/capability.h


def _nproc_binds() -> bool:
    """RLIMIT_NPROC holds this process back: not root (the kernel's INIT_USER), no CAP_SYS_RESOURCE or
    CAP_SYS_ADMIN in its effective set (kernel/fork.c ``copy_process``)."""
    if os.getuid() == 0:
        return False
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"CapEff:"):
                    eff = int(line.split()[1], 16)
                    return not eff & (1 << _CAP_SYS_ADMIN | 1 << _CAP_SYS_RESOURCE)
    except (OSError, ValueError, IndexError):
        pass
    return True


def _user_tasks(uid: int) -> int | None:
    """The tasks (threads) of the processes whose real UID is ``uid``, as this PID namespace shows them: what
    RLIMIT_NPROC counts (None: /proc not readable)."""
    try:
        names = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return None
    count = 0
    for name in names:
        real = threads = None
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Uid:"):
                        real = int(line.split()[1])
                    elif line.startswith(b"Threads:"):
                        threads = int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue    # ended meanwhile
        if real == uid:
            count += threads or 1
    return count


def _pids_group_at_limit() -> int | None:
    """The ``pids.max`` of a control group of this process (its own or an ancestor: the limit is
    hierarchical) whose ``pids.current`` is at it; None when none is, or it cannot be read. cgroup v2
    (``0::/path`` in /proc/self/cgroup) and v1's pids controller (``N:pids:/path``)."""
    roots: list[tuple[str, str]] = []
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) != 3:
                    continue
                if parts[0] == "0" and parts[1] == "":
                    roots.append(("/sys/fs/cgroup", parts[2]))
                elif "pids" in parts[1].split(","):
                    roots.append((f"/sys/fs/cgroup/{parts[1]}", parts[2]))
    except OSError:
        return None
    for root, path in roots:
        parts = [p for p in path.split("/") if p and p != ".."]
        for depth in range(len(parts), -1, -1):
            where = os.path.join(root, *parts[:depth])
            try:
                with open(os.path.join(where, "pids.max")) as f:
                    most = f.read().strip()
                with open(os.path.join(where, "pids.current")) as f:
                    current = int(f.read().strip())
            except (OSError, ValueError):
                continue
            if most.isdigit() and current >= int(most):
                return int(most)
    return None


def fork_refused(command: str, exc: OSError) -> str:
    """The line for a fork of ``command`` the kernel refused (``process_limit_said`` when it is the
    process limit)."""
    said = process_limit_said(exc)
    return f"cannot start {command!r}: no process could be made ({exc.strerror or exc})" + (f": {said}" if said else "")


def _fork_exec(argv: list[str]) -> tuple[int | None, str | None, bool]:
    """Fork and exec the command; an exec failure comes back through a close-on-exec pipe. A fork
    the kernel refuses is said the same way (pid None): under a reached ``ulimit -u`` the waiter
    died of a BlockingIOError traceback in train.log, with no exit record, and the run was judged
    "unknown: exited with code 1" and restarted into the same wall (round 15). The third value: the kernel
    refused the fork itself (EAGAIN at a task limit, ENOMEM), what passes as other processes end: the record's
    ``fork_refused``, which the judge restarts with its backoff, never fails as a command that cannot start
    (review R36: a pids cgroup of a container at its limit FAILED the run, where the waiter's traceback had
    restarted it)."""
    try:
        rfd, wfd = os.pipe()  # both close-on-exec (PEP 446)
    except OSError as exc:
        return None, f"cannot start {argv[0]!r}: {exc.strerror or exc}", False
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(rfd)
        os.close(wfd)
        return None, fork_refused(argv[0], exc), True
    if pid == 0:
        os.close(rfd)
        try:
            os.setsid()  # the command leads a session and process group of its own, as without us
            restore_dispositions(*FORWARDED)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # one sent since the fork ends it here
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(wfd, f"cannot start {argv[0]!r}: {exc.strerror or exc}".encode())
        finally:
            os._exit(EXEC_FAILED)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as r:
        error = r.read().decode(errors="replace") or None
    return pid, error, False


def _note_end(ends: list[dict], pid: int, status: int) -> None:
    """An orphan of the command's tree reaped: kept when it ended badly (the last few only)."""
    rc = returncode_from_status(status)
    if rc != 0:
        ends.append({"pid": pid, "returncode": rc, "mono": time.monotonic()})
        del ends[:-BAD_ENDS_KEPT]


def _wait_command(pid: int, ends: list[dict]) -> int:
    """The command's raw wait status (-1: it could not be waited for). Orphans of its tree that
    end meanwhile are reaped as they end (their bad ends noted in ``ends``). The command is asked
    first at every wake, so one that ended together with it is never taken for an earlier end."""
    try:
        while True:
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)  # a child ended (not reaped yet)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return status
            while True:
                other, status = os.waitpid(-1, os.WNOHANG)
                if other == pid:
                    return status
                if other == 0:
                    break
                _note_end(ends, other, status)
    except ChildProcessError:
        return -1


def reap_children() -> dict[int, int]:
    """Collect every exited child (a subreaper's orphans too): {pid: raw wait status}. The waiter's
    reaping; the runner's (``proctree.reap_children_in_groups``) also reads each one's session and
    process group before the reap."""
    out: dict[int, int] = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        out[pid] = status
    return out


def _reap_ended(ends: list[dict]) -> int:
    """Reap the orphans of the command's tree found ended once the command had ended (how many)."""
    reaped = reap_children()
    for other, status in reaped.items():
        _note_end(ends, other, status)
    return len(reaped)


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22, proc(5)): with
    its PID, what names one process (a PID is given again once its process is reaped). None when
    it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    """The children of ``pid`` (every thread's: ``/proc/PID/task/TID/children``); none once it is gone."""
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as f:
                kids.extend(int(x) for x in f.read().split())
    except (OSError, ValueError):
        pass
    return kids


def _descendants_by_children_files(root: int) -> list[int]:
    """Every descendant of ``root`` found by one walk (a zombie not yet reaped included)."""
    out: list[int] = []
    todo = [root]
    while todo and len(out) < MAX_OUTLIVING:
        kids = _children(todo.pop())
        out.extend(kids)
        todo.extend(kids)
    return sorted(set(out))[:MAX_OUTLIVING]


def settled_tree(reap: Callable[[], int], walk: Callable[[], list[int]]) -> list[int]:
    """What of the command's tree outlives it, once its ended orphans are reaped (``reap``: how
    many it reaped) and the tree walked (``walk``) until a walk finds what the one before found and
    nothing more ended. One walk is not enough: it reads each process's children in turn, and a
    process that ends between its parent's line and its own hands its children to this waiter
    after this waiter's line was read (a launcher's middle fork exiting just as its backgrounded
    training starts); they would be nobody's, and their end too. A process that dies between the
    last reap and the walk is listed as a zombie and reaped at the next turn. A tree that never
    stands still (a training forking workers) is taken as the last walk found it."""
    before: list[int] | None = None
    for _ in range(SETTLE_WALKS):
        ended = reap()
        now = walk()
        if not ended and now == before:
            return now
        before = now
    return before or []


def run(exit_path: str, argv: list[str], spare: str | None = None) -> int:
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    set_child_subreaper()
    started = time.time()
    run_dir = run_dir_seen(exit_path)
    pid, error, refused = _fork_exec(argv)
    if error:
        sys.stderr.write(f"moeconsole: {error}\n")
        sys.stderr.flush()
    ends: list[dict] = []
    # no process: ended as a command whose exec failed (exit 127), the error in the record
    status = _wait_command(pid, ends) if pid is not None else EXEC_FAILED << 8
    ended_at, ended_mono = time.time(), time.monotonic()
    outliving = settled_tree(lambda: _reap_ended(ends), lambda: _descendants_by_children_files(os.getpid()))
    # each with its start: the reader may come much later (a new runner), when the PID is another's
    starts = [start_ticks(p) for p in outliving]
    if status == -1:
        rc, sig = None, None
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        rc = -sig
    else:
        sig, rc = None, os.WEXITSTATUS(status)
    record = {"v": 1, "pid": pid, "returncode": rc, "signal": sig, "started_at": started,
              "ended_at": ended_at, "ended_mono": ended_mono, "error": error, "fork_refused": refused, "orphan_ends": ends,
              "outliving": outliving, "outliving_start_ticks": starts}
    try:
        _write_record(exit_path, record, spare, run_dir)
    except OSError as exc:  # a full disk: the runner, if alive, still gets the mirrored status
        sys.stderr.write(f"moeconsole waiter: cannot write {exit_path}: {exc}\n")
    if spare is not None:
        try:   # not needed (a temp file was made): its inode back; used, it is the record now
            os.unlink(spare)
        except OSError:
            pass
    for s in FORWARDED:  # what the runner sent the waiter itself is discarded: it ends as its command did
        signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    if sig is not None:
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL/SIGSTOP have no handler to reset
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the command already dumped its core
        except (ImportError, ValueError, OSError):
            pass
        os.kill(os.getpid(), sig)
    return rc if rc is not None else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spare = None
    if len(args) >= 4 and args[1] != "--" and args[2] == "--":
        spare = args.pop(1)   # a runner of round 15 named it (taken still, for one that lives on through an update)
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: python -m moeconsole.runner.process.waiter EXIT_RECORD -- COMMAND [ARGS...]\n")
        return 2
    return run(args[0], args[2:], spare if spare is not None else record_spare(args[0]))


if __name__ == "__main__":
    raise SystemExit(main())
