"""ms-swift's ``swift`` exits with its trainer's status (swift/cli/main.py 4.6.0 l.100-102: ``sys.exit(result.returncode)``
of ``subprocess.run``): the trainer's -1 (SIGHUP to it alone, or its own ``exit(-1)``) is exit 255, which
``decode_exit`` leaves a plain code. With ms-swift's trainer among the attempt's programs and nothing raised, the
summary says so (runner/core/crash.py ``SWIFT_255_WORDS``); tests/swift/test_swift_round11.py is the real SIGHUP.
Refusals: another program's 255, a 255 after an exception, another code."""
from __future__ import annotations

from moeconsole.runner.core.crash import SWIFT_255_WORDS, classify

TRAINER = "/v/lib/python3.11/site-packages/swift/cli/sft.py"
TAIL = ["run sh: `/v/bin/python /v/lib/python3.11/site-packages/swift/cli/sft.py --model m --max_steps 400`",
        "Train:   1%|          | 3/400 [00:05<11:02,  1.67s/it]{'loss': '6.94', 'grad_norm': '0.38', "
        "'global_step/max_steps': '3/400'}"]


def test_ms_swift_s_255_with_nothing_printed_is_its_trainer_s_minus_one():
    v = classify(255, TAIL, programs_run={"/v/bin/swift": False, TRAINER: False}, steps_seen=3)
    assert (v.cls, v.summary, v.recovery) == ("unknown", SWIFT_255_WORDS, "restart")
    assert v.summary.startswith("exited with code 255: ms-swift's swift exits with its trainer's status")


def test_refusals():
    assert classify(255, TAIL, programs_run={"/v/train.py": False}).summary == "exited with code 255"
    assert classify(255, TAIL).summary == "exited with code 255"              # programs not watched
    raised = TAIL + ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>',
                     "ValueError: bad batch"]
    assert classify(255, raised, programs_run={TRAINER: False}).summary == "exited with code 255: ValueError: bad batch"
    assert classify(1, TAIL, programs_run={TRAINER: False}).summary == "exited with code 1"
    assert classify(241, TAIL, programs_run={TRAINER: False}).summary == "ended by SIGTERM"
