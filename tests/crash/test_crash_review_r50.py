"""Review R50, finding 1: a real `ulimit -v` refusal that names no size (``np.memmap`` / ``mmap.mmap``'s
``OSError: [Errno 12] Cannot allocate memory``, ``bytearray``'s or ``pickle.load``'s bare ``MemoryError``)
from a plain local training that held a sliver of its limit was read ``unknown`` by round 18,
restarted 2-3 times, then FAILED "no step progress" with the limit left out of the reason. It is the
limit's (``environment_error``, FAILED at once, the reason naming it) unless the attempt's tree ran a
client whose work runs elsewhere (``proctree.elsewhere_client``: `docker`, `ssh`, `srun`); then it is
``unknown`` and, when the no-progress count ends it, the fail reason names the limit. Pure."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify
from moeconsole.runner.core.policy import AttemptRecord, RestartSettings, decide
from moeconsole.runner.process.proctree import elsewhere_client

GIB = 1 << 30
NOW = 1_700_000_000.0
TB = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>']
SIZELESS = ["OSError: [Errno 12] Cannot allocate memory", "MemoryError"]


def rec(attempt: int, cls: str, last: int | None = None, resumed: int | None = None) -> AttemptRecord:
    return AttemptRecord(attempt=attempt, started_at=NOW + 10 * attempt, ended_at=NOW + 10 * attempt + 5,
                         resumed_step=resumed, last_step=last, crash_class=cls)


@pytest.mark.parametrize("last", SIZELESS)
@pytest.mark.parametrize("seen", [int(0.7 * GIB), 3 * GIB])
def test_a_sizeless_refusal_of_a_plain_local_training_is_the_limits_and_fails_naming_it(last, seen):
    v = classify(1, ["loading the shard", *TB, last], address_limit=8 * GIB, address_space_seen=seen)
    assert (v.cls, v.recovery, v.retryable) == ("environment_error", "fail", False), v.summary
    assert "address-space limit (ulimit -v or -d) of 8.0 GB" in v.summary, v.summary
    d = decide(v, [rec(1, v.cls)], RestartSettings(), NOW + 100)
    assert d.action == "fail" and "ulimit -v or -d" in d.reason and "8.0 GB" in d.reason, d.reason


@pytest.mark.parametrize("client", ["docker", "ssh", "srun", "kubectl", "podman"])
def test_a_sizeless_refusal_with_a_client_of_work_elsewhere_is_unknown_and_its_fail_names_the_limit(client):
    last = "MemoryError"
    v = classify(1, [*TB, last], address_limit=8 * GIB, address_space_seen=int(0.7 * GIB), elsewhere_client=client)
    assert (v.cls, v.recovery) == ("unknown", "restart"), v.summary
    assert f"`{client}`" in v.summary and "8.0 GB" in v.summary, v.summary
    # at startup (no step logged), the default settings: restart, restart, then the no-progress fail
    history: list[AttemptRecord] = []
    actions = []
    for n in (1, 2, 3):
        history.append(rec(n, v.cls))
        actions.append(decide(v, list(history), RestartSettings(), NOW + 100 * n))
    assert [a.action for a in actions] == ["restart", "restart", "fail"], [a.reason for a in actions]
    assert "no step progress" in actions[-1].reason and "ulimit -v or -d" in actions[-1].reason, actions[-1].reason
    assert f"`{client}`" in actions[-1].reason, actions[-1].reason


def test_a_client_near_the_limit_is_still_the_limits():
    v = classify(1, [*TB, "MemoryError"], address_limit=8 * GIB, address_space_seen=5 * GIB, elsewhere_client="ssh")
    assert v.cls == "environment_error", v.summary


@pytest.mark.parametrize("name,got", [(b"docker", "docker"), ("ssh", "ssh"), (b"srun", "srun"),
                                      (b"python3", None), ("torchrun", None), (b"apptainer", None),
                                      (b"sshd", None), (None, None)])
def test_the_clients_whose_work_runs_elsewhere_by_process_name(name, got):
    assert elsewhere_client(name) == got
