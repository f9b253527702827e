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


# ---- finding 3: the waiter's argv across versions ------------------------------------------------------------
PRE_ROUND_15 = "805051a7"   # main before round 15 (h15): its waiter takes only EXIT_RECORD -- COMMAND


def test_the_runner_starts_a_waiter_of_an_older_version_on_disk(tmp_path):
    """A runner in memory with an older waiter.py on disk (a `git checkout` of an older version in the editable
    install while a run lives): the argv `EXIT_RECORD SPARE -- COMMAND` met the old waiter's usage text, exit 2,
    the attempt lost. The argv is the form every waiter takes; the spare is found by its name."""
    from moeconsole.runner.process.engines.local import waiter_argv
    from moeconsole.runner.process.waiter import record_spare
    record = tmp_path / "exits" / "attempt-1.json"
    record.parent.mkdir()
    argv = waiter_argv(record, ["/bin/sh", "-c", "exit 3"])
    assert argv[argv.index(str(record)) + 1] == "--", argv
    assert Path(record_spare(str(record))).name == ".attempt-1.json.00000000"
    old = subprocess.run(["git", "-C", str(REPO), "show", f"{PRE_ROUND_15}:runner/process/waiter.py"],
                         capture_output=True)
    if old.returncode != 0:
        pytest.skip("the older waiter is not in this checkout's history")
    older = tmp_path / "waiter.py"
    older.write_bytes(old.stdout)
    ran = subprocess.run([str(older) if a.endswith("/waiter.py") else a for a in argv], capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 3 and "usage" not in ran.stderr, ran
    assert json.loads(record.read_text())["returncode"] == 3


def test_the_waiter_writes_its_record_into_the_spare_it_finds_by_name_and_takes_the_round_15_argv(tmp_path):
    """Both forms the waiter takes: `EXIT_RECORD -- COMMAND` (the spare found beside the record and removed when
    not needed) and round 15's `EXIT_RECORD SPARE -- COMMAND` (a runner of that version living on)."""
    from moeconsole.runner.process.engines.local import waiter_argv
    from moeconsole.runner.process.waiter import record_spare
    for n, named in ((1, False), (2, True)):
        record = tmp_path / f"attempt-{n}.json"
        spare = Path(record_spare(str(record)))
        spare.write_bytes(b"")
        argv = waiter_argv(record, ["/bin/sh", "-c", "exit 4"])
        if named:
            at = argv.index(str(record)) + 1
            argv[at:at] = [str(spare)]
        ran = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert ran.returncode == 4 and json.loads(record.read_text())["returncode"] == 4, ran
        assert not spare.exists()


# ---- finding 1, end to end: a real OOM under a generous address-space limit ------------------------------------
CUDA_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.15 GiB of which 1.20 GiB is free.")


@pytest.mark.parametrize("last,cls", [
    (f"print('Traceback (most recent call last):', flush=True); print({CUDA_OOM!r}, flush=True); sys.exit(1)",
     "cuda_oom"),
    ("os.kill(os.getpid(), signal.SIGKILL)", "killed_oom")])
def test_a_real_oom_after_a_logged_enomem_under_a_generous_address_limit_is_restarted(harness, last, cls):
    """`run` from a shell with `ulimit -v` of 1 TiB (on a host with far less RAM); the training logs a refused
    fork's ENOMEM, trains on, then dies of a CUDA OOM or SIGKILL. Round 15 called it `environment_error` "an
    allocation failed at the virtual memory limit", FAILED after one attempt; the OOM's class restarts it."""
    import resource

    body = "\n".join([
        "import os, signal, sys",
        "for i in range(1, 4):",
        "    print('{\"step\": %d, \"loss\": 0.5}' % i, flush=True)",
        "print('OSError: [Errno 12] Cannot allocate memory', flush=True)",
        "print('{\"step\": 4, \"loss\": 0.5}', flush=True)",
        last])
    recipe = harness.recipe(command=["{python}", "-c", body], restart={"max_restarts": 1})

    def generous() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 40, resource.RLIM_INFINITY))
    from tests.runner.test_runner_world15 import started_under
    run = started_under(harness, recipe, generous)
    st = run.wait_status("failed", "succeeded", "killed", "unsaved", "paused", timeout=240)
    crashes = run.events("crash")
    assert [c["class"] for c in crashes] == [cls, cls], crashes
    assert crashes[0]["decision"] == "restart" and st["attempt"] == 2, (st, crashes)
    assert "address-space limit" not in st["last_crash"]["summary"], st["last_crash"]
