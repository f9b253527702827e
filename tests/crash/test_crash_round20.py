"""Round 20: a sizeless refusal under an address-space limit is decided by whose traceback it is."""
from __future__ import annotations

from moeconsole.runner.core.crash import classify
from moeconsole.runner.core.programs import UNKNOWN

TAIL = ['{"step": 3, "loss": 0.5}', "Traceback (most recent call last):",
        '  File "/srv/cluster/train.py", line 6, in <module>', "    big = bytearray(3 << 30)", "MemoryError"]
LIMIT = 16 << 30


def _cls(programs, client=None):
    return classify(1, TAIL, steps_seen=3, address_limit=LIMIT, address_space_seen=200 << 20,
                    programs_run=programs, elsewhere_client=client)


def test_a_traceback_of_a_program_run_here_under_the_limit_is_the_limits():
    v = _cls({"/srv/cluster/train.py": True})
    assert v.cls == "environment_error" and "16.0 GB" in v.summary


def test_a_traceback_of_no_program_run_here_is_unproven_naming_it():
    v = _cls({"/home/u/bin/ray": True, "-m:moeconsole.runner.process.waiter": True})
    assert v.cls == "unknown" and v.recovery == "restart" and "/srv/cluster/train.py" in v.summary, v.summary


def test_a_traceback_of_a_program_that_ran_free_of_the_limit_does_not_name_it():
    v = _cls({"/srv/cluster/train.py": False})
    assert v.cls != "environment_error" and "address-space limit" not in v.summary, v.summary


def test_an_interpreter_here_whose_program_is_unknown_keeps_the_limits_verdict():
    assert _cls({"/home/u/bin/ray": True, UNKNOWN: True}).cls == "environment_error"
    # not watched (an adopted attempt): as before round 20
    assert _cls(None).cls == "environment_error" and _cls(None, client="ssh").cls == "unknown"
