"""Review R28 of s2 (torchrun's own SIGKILL of a worker decides nothing): the excuse is tied to the agent that logged
the kill (its srun ``--label`` task), holds only while the kernel counted no OOM kill, and an agent's kill that is the
only failure entry decides nothing either."""
from __future__ import annotations

from moeconsole.runner.core.crash import classify
from tests.swift.test_swift_rank_failures import GLOO_TIMEOUT_TAIL

W = "W1201 01:27:44.425000 15283 torch/distributed/elastic/multiprocessing/api.py:1047] "
E = "E1201 01:27:44.507000 15283 torch/distributed/elastic/multiprocessing/api.py:1002] "


def entry(idx: int, rank: int, code: int, pid: int, host: str = "localhost") -> str:
    tb = f"Signal {-code} (SIGKILL) received by PID {pid}" if code == -9 else \
        "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    return (f"[{idx}]:\n  time      : 2026-12-01_01:27:44\n  host      : {host}\n"
            f"  rank      : {rank} (local_rank: {rank % 8})\n  exitcode  : {code} (pid: {pid})\n"
            f"  error_file: <N/A>\n  traceback : {tb}\n")


def block(root: str, others: list[str]) -> str:
    return ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 60 + "\ng.py FAILED\n"
            + "-" * 60 + "\nFailures:\n" + ("".join(others) or "  <NO_OTHER_FAILURES>\n") + "-" * 60
            + "\nRoot Cause (first observed failure):\n" + root + "=" * 60 + "\n")


def labelled(text: str, task: int) -> str:
    return "".join(f"{task}: {line}\n" for line in text.strip("\n").splitlines())


def verdict(text: str, **kw):
    return classify(1, text.strip("\n").splitlines(), steps_seen=3, attempt=1, **kw)


def test_kernel_oom_count_keeps_the_forced_kill_weight():
    """R28 #1: the OOM killer's victim can outlive torchrun's 30 s and be the one it 'forcefully' ends."""
    for kills in (1, 2):
        v = verdict(GLOO_TIMEOUT_TAIL, oom_kills=kills, local_host="localhost")
        assert v.cls == "killed_oom", (kills, v)
    for kills in (None, 0):
        v = verdict(GLOO_TIMEOUT_TAIL, oom_kills=kills, local_host="localhost")
        assert v.cls != "killed_oom" and "Timed out waiting" in v.summary, (kills, v)


def test_forced_kill_excuses_only_the_agent_that_logged_it():
    """R28 #2: srun --label; node A (task 0) force-kills its PID 57, node B's (task 1) rank 8, PID 57 too in its own
    container, is SIGKILLed by the OOM killer: node B's -9 is not excused."""
    node_a = ("[rank0]: RuntimeError: NCCL communicator was aborted on rank 0.\n"
              + W + "Unable to shutdown process 57 via 15, forcefully exiting via 9\n"
              + E + "failed (exitcode: 1) local_rank: 0 (pid: 58) of binary: /usr/bin/python\n"
              + block(entry(0, 0, 1, 58, "node-a"), [entry(1, 1, -9, 57, "node-a")]))
    node_b = (E + "failed (exitcode: -9) local_rank: 0 (pid: 57) of binary: /usr/bin/python\n"
              + block(entry(0, 8, -9, 57, "node-b"), []))
    v = verdict(labelled(node_a, 0) + labelled(node_b, 1))
    assert v.cls == "killed_oom", v
    # both ways: node A alone, labelled, its own forced kill decides nothing
    v = verdict(labelled(node_a, 0))
    assert v.cls != "killed_oom", v
    # the measured single-node tail under srun --label: still excused
    v = verdict(labelled(GLOO_TIMEOUT_TAIL, 0))
    assert v.cls != "killed_oom" and "Timed out waiting" in v.summary, v


def test_forced_kill_as_the_only_failure_entry_decides_nothing():
    """R28 #5: no root-cause block, no 'failed (exitcode' line, only the entry of the worker torchrun killed."""
    head = ("[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting "
            "20000ms for recv operation to complete\n")
    forced = W + "Unable to shutdown process 15352 via 15, forcefully exiting via 9\n"
    tail = "Failures:\n" + entry(1, 1, -9, 15352)
    v = verdict(head + forced + tail)
    assert v.cls != "killed_oom" and "Timed out waiting" in v.summary, v
    # both ways: without torchrun's forced-kill line, that entry's SIGKILL is the crash
    assert verdict(head + tail).cls == "killed_oom"
    # and another PID's forced kill excuses nothing
    assert verdict(head + forced.replace("15352", "15353") + tail).cls == "killed_oom"


def test_python_310_enum_spelling_of_the_forced_kill():
    """R28 #6 (sound, kept): before Python 3.11 the signals print as Signals.SIGTERM / Signals.SIGKILL."""
    tail = GLOO_TIMEOUT_TAIL.replace("via 15, forcefully exiting via 9",
                                     "via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL")
    assert verdict(tail).cls != "killed_oom"
