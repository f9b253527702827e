"""The waiter: a tiny parent between the runner and the training command.

    python -m moeconsole.runner.process.waiter EXIT_RECORD -- COMMAND [ARGS...]

Only a parent can learn how a process ended. The runner may be killed and replaced while an
attempt runs; the replacement cannot wait() on a process it did not start. So the runner starts
this waiter, the waiter starts the command and waits for it, writes the exit status into the run
directory (``exits/attempt-N.json``, atomically, 0600), and then ends the same way the command
did, so a runner that is still its parent sees the very same return code.

It ignores SIGTERM/SIGINT/SIGHUP (the runner signals the command itself; the waiter must live to
write the record); SIGKILL still ends it. It imports nothing beyond the standard library's core.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
EXEC_FAILED = 127


def _write_record(path: str, record: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _fork_exec(argv: list[str]) -> tuple[int, str | None]:
    """Fork and exec the command; an exec failure comes back through a close-on-exec pipe."""
    rfd, wfd = os.pipe()  # both close-on-exec (PEP 446)
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        try:
            os.setsid()  # the command leads a session and process group of its own, as without us
            for s in FORWARDED:
                signal.signal(s, signal.SIG_DFL)
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(wfd, f"cannot start {argv[0]!r}: {exc.strerror or exc}".encode())
        finally:
            os._exit(EXEC_FAILED)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as r:
        error = r.read().decode(errors="replace") or None
    return pid, error


def run(exit_path: str, argv: list[str]) -> int:
    for s in FORWARDED:
        signal.signal(s, signal.SIG_IGN)
    started = time.time()
    pid, error = _fork_exec(argv)
    if error:
        sys.stderr.write(f"moeconsole: {error}\n")
        sys.stderr.flush()
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = -1
            break
    if status == -1:
        rc, sig = None, None
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        rc = -sig
    else:
        sig, rc = None, os.WEXITSTATUS(status)
    record = {"v": 1, "pid": pid, "returncode": rc, "signal": sig, "started_at": started,
              "ended_at": time.time(), "error": error}
    try:
        _write_record(exit_path, record)
    except OSError as exc:  # a full disk: the runner, if alive, still gets the mirrored status
        sys.stderr.write(f"moeconsole waiter: cannot write {exit_path}: {exc}\n")
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
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: python -m moeconsole.runner.process.waiter EXIT_RECORD -- COMMAND [ARGS...]\n")
        return 2
    return run(args[0], args[2:])


if __name__ == "__main__":
    raise SystemExit(main())
