"""The review of the OOM-kill count (R21, docs/crash-classes.md's killed_oom row): a SIGKILL's summary says the
kernel's OOM killer did not send it only when this machine's count can speak for the killed process and the
verdict rests on the bare signal. A kill on another host, a wrapper's status, or a log that itself tells an OOM
kill keeps the hedge ("most likely the host OOM killer") with its dmesg advice; a denial names the user-space
OOM daemons the kernel's count leaves out."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

DENIED = "not by the kernel's OOM killer"
HEDGE = "most likely the host OOM killer"


def torchrun_end(host: str, pid: int = 10833) -> list[str]:
    """torchrun's end after rank 1 was SIGKILLed (ms-swift 4.6, torch 2.13: tests/swift/test_swift_multiproc.py)."""
    return f"""\
E1130 22:18:01.975000 10808 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 1 \
(pid: {pid}) of binary: /usr/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_22:18:01
  host      : {host}
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: {pid})  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID {pid}
============================================================""".splitlines()


# --- 1. a kill on another machine is not denied with this machine's count ---------------------------------------

@pytest.mark.parametrize(("rc", "lines"), [
    # torchrun's root cause on another node (a multi-node job's rank)
    (1, torchrun_end("gpu-node-2")),
    # DeepSpeed's multinode runner: pdsh -S returns the remote launch.py's sys.exit(-9 & 0xff) = 247
    (247, ["worker-2: [2024-05-01 10:00:00,000] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', "
           "'train.py', '--local_rank=3'] exits with return code = -9",
           "pdsh@head: worker-2: ssh exited with exit code 247"]),
    # Open MPI's report of a rank on another node
    (137, ["mpirun noticed that process rank 3 with PID 0 on node worker-2 exited on signal 9 (Killed)."]),
    # ssh host ... / kubectl exec: the remote shell's 128+9
    (137, []),
])
def test_a_kill_not_proven_on_this_machine_keeps_the_hedge(rc, lines):
    v = classify(rc, lines, steps_seen=5, attempt=1, oom_kills=0, local_host="head")
    assert (v.cls, v.recovery) == ("killed_oom", "restart")
    assert HEDGE in v.summary and DENIED not in v.summary, v.summary


@pytest.mark.parametrize(("lines", "own_pids", "local_host"), [
    (torchrun_end("localhost"), None, None),                     # torchrun's getfqdn() on a loopback-named host
    (torchrun_end("node7.cluster.example"), None, "node7"),      # getfqdn's name of this machine
    (torchrun_end("node7", pid=4242), {4242, 4243}, "node7"),
])
def test_a_rank_killed_here_is_denied(lines, own_pids, local_host):
    v = classify(1, lines, steps_seen=5, attempt=1, oom_kills=0, own_pids=own_pids, local_host=local_host)
    assert DENIED in v.summary and "another process sent it" in v.summary, v.summary
    assert "earlyoom" in (v.hint or "") and "systemd-oomd" in (v.hint or "")


def test_the_runners_own_child_killed_is_denied_and_a_count_unknown_or_nonzero_is_not():
    assert DENIED in classify(-9, [], steps_seen=5, attempt=1, oom_kills=0).summary
    assert HEDGE in classify(-9, [], steps_seen=5, attempt=1, oom_kills=None).summary
    assert HEDGE in classify(-9, [], steps_seen=5, attempt=1, oom_kills=2).summary


def test_a_pid_of_ours_on_another_named_host_is_still_not_denied():
    """PIDs repeat across machines: the host named decides first."""
    v = classify(1, torchrun_end("gpu-node-2", pid=4242), steps_seen=5, attempt=1, oom_kills=0, own_pids={4242},
                 local_host="head")
    assert HEDGE in v.summary, v.summary


# --- 2. OOM evidence in the log outranks the count -----------------------------------------------------------------

@pytest.mark.parametrize(("rc", "lines"), [
    (137, ["Out of memory: Killed process 4242 (python) total-vm:123456kB, anon-rss:120000kB"]),
    (-9, ["Memory cgroup out of memory: Killed process 4242 (python) total-vm:123456kB"]),
    (137, ["    State:          Terminated", "      Reason:       OOMKilled", "      Exit Code:    137"]),
    (-9, ["RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed."]),
])
def test_oom_text_in_the_log_is_never_denied(rc, lines):
    v = classify(rc, lines, steps_seen=5, attempt=1, oom_kills=0, local_host="head")
    assert v.cls == "killed_oom"
    assert DENIED not in v.summary, v.summary
    assert "dmesg" in (v.hint or "") or "memory" in v.summary.lower(), (v.summary, v.hint)
