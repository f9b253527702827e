"""Review R36 (hostile world round 15), finding 2: a fork the kernel refused (EAGAIN) was blamed on `ulimit -u`
whenever RLIMIT_NPROC was finite (it is by default, tens of thousands, even for root, whom it never holds), and the
run FAILED as a command that cannot start, where a task limit passes as processes end."""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from moeconsole.runner.process.attempt import ExitStatus
from moeconsole.runner.process.engines.local import LocalEngine
from moeconsole.runner.process.waiter import process_limit_said
from tests.conftest import REPO
from tests.runner.test_judge import ended, run_judge
from tests.runner.test_seam_units import made  # noqa: F401  (the fixture: a real run directory)

PIDS_V1 = Path("/sys/fs/cgroup/pids")


def test_root_is_never_told_of_ulimit_u_it_is_not_held_by():
    """RLIMIT_NPROC never binds root (kernel/fork.c copy_process: INIT_USER is exempt): an EAGAIN is another
    limit's, and with no pids group at its limit nothing is named (main named `ulimit -u` of the default limit)."""
    if os.getuid() != 0:
        pytest.skip("root only")
    assert process_limit_said(OSError(errno.EAGAIN, "Resource temporarily unavailable")) is None
    assert process_limit_said(OSError(errno.ENOMEM, "Cannot allocate memory")) is None


def test_a_waiter_in_a_pids_group_at_its_limit_names_that_limit_and_the_run_is_restarted(made):
    """The waiter run as root in a pids control group with pids.max 1 (a container's --pids-limit, a pod's pids
    limit, systemd's TasksMax=): its fork of the training is refused. The record names the group's limit, never
    `ulimit -u`, and says the fork was refused; the local engine reads it so and the judge restarts the run."""
    if os.getuid() != 0 or not (PIDS_V1 / "cgroup.procs").exists():
        pytest.skip("needs root and the cgroup v1 pids controller to make a group")
    group = PIDS_V1 / f"moeconsole-r36-{uuid.uuid4().hex[:8]}"
    where = Path(tempfile.mkdtemp(prefix="moeconsole-pids-", dir="/tmp"))
    try:
        group.mkdir()
        (group / "pids.max").write_text("1")
        run, _ = made()
        record = run.exit_record(1)
        # the shell joins the group and execs the waiter (same PID): it is then the group's one task
        script = f'echo $$ > {group}/cgroup.procs && exec "$@"'
        out = subprocess.run(["sh", "-c", script, "sh", sys.executable, "-S", "-E",
                              str(Path(REPO) / "runner" / "process" / "waiter.py"), str(record), "--", "/bin/true"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 127 and "Traceback" not in out.stderr, out
        rec = json.loads(record.read_text())
        assert rec["fork_refused"] is True and rec["pid"] is None, rec
        assert "ulimit -u" not in rec["error"], rec
        assert "task limit (pids.max 1" in rec["error"], rec
        status = LocalEngine(run).exit_status(1)
        assert status is not None and status.fork_refused and status.returncode == 127, status
        out = run_judge(ended(returncode=127, tail=[f"moeconsole: {rec['error']}"], exit_status=status))
        assert out.judged.action == "restart" and "pids.max 1" in out.verdict.summary, out.judged
    finally:
        shutil.rmtree(where, ignore_errors=True)
        if group.exists():
            group.rmdir()


@pytest.mark.parametrize("error", [
    "cannot start 'python': no process could be made (Resource temporarily unavailable)",
    "cannot start 'python': no process could be made (Resource temporarily unavailable): this control group's "
    "tasks reached its task limit (pids.max 1: ...); end some, or raise it"])
def test_a_refused_fork_is_restarted_with_backoff_not_failed(error):
    out = run_judge(ended(returncode=127, tail=[f"moeconsole: {error}"],
                          exit_status=ExitStatus(127, error=error, fork_refused=True)))
    assert out.judged.action == "restart", out.judged
    assert out.verdict is not None and out.verdict.cls == "unknown" and out.verdict.retryable
    assert "refused to make the training's process" in out.verdict.summary and error[:60] in out.verdict.summary


def test_a_command_that_cannot_exec_still_fails():
    out = run_judge(ended(returncode=127, exit_status=ExitStatus(127, error="cannot start 'trian.py': No such file")))
    assert out.judged.action == "fail"


def test_a_user_kill_of_an_attempt_whose_fork_was_refused_is_the_users():
    out = run_judge(ended(returncode=127, kill_reason="user",
                          exit_status=ExitStatus(127, error="cannot start 'x': no process could be made",
                                                 fork_refused=True)))
    assert out.verdict is not None and out.verdict.cls == "user_kill"
