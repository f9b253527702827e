"""Round 22: the squares the pattern walk's old floor let through, mended with every verdict kept.

Each mended pattern's old source is measured by the walk's own measure (``square_costs``: 2k->32k, a line 16, a
square 256) and found a square (but the OOM one, see SQUARES), the pattern the runner holds now found a line; the
old and new patterns agree on texts generated from their own words (names, spans, exit codes, CUDA codes, verdicts), so the secret masking and
the crash labels are the same as before."""
from __future__ import annotations

import random
import re

import pytest

from moeconsole.runner.core import crash
from moeconsole.runner.rundir import secrets
from tests.test_patterns_linear_in_any_script import OLD_ASSIGNMENT, anchored_use, square_costs

# The sources before round 22 (secrets.py and crash.py at the lead's main, commit 1637caf0).
_AUX = (r"(?:am|are|is|was|were|have|has|had|been|keep|keeps|kept|still|also|always|just|now|then|again|often"
        r"|sometimes|do|does|did|even|only|\w+ly)")
OLD = {
    "secrets._ASSIGNMENT": (secrets, OLD_ASSIGNMENT),
    "crash._TR_FAILED_RETOLD": (crash, r"\btorch\.distributed\.elastic\.multiprocessing\.api\b.*?"
                                       r"\bfailed \(exitcode: (-?\d+)\)"),
    "crash._PHYSX_CUDA_CODE": (crash, r"(?:\bPhysX\b|\(\d+\) : (?:internal error|abort) : )"
                                      r".*?(?:failed!|!!|\bwith error(?: code)?|CUDA error, code|Error code"
                                      r"|CUDA module data, returned) (\d+)\b"),
    "crash._OOM_TOLD_SUBJECT_BEFORE": (crash, r"(?i)(?:\b(?:i(?!\.\w)|we)(?:['’](?:m|re|ve|d))?|\b(?:my|our)"
                                              r"(?:\s+[\w.-]+){1,4})(?:\s+" + _AUX + r")*\s+$"),
}
# The words the generated texts are made of: each pattern's own pieces, whole and cut, and what sits around them.
WORDS = {
    "secrets._ASSIGNMENT": ["api_key", "HF_TOKEN", "password", "--password", "1password", "éapi_key", "x-api-key",
                            "token", "a.b", "=", ":", " ", "  ", "'", '"', "-", ".", "_", "0", "训练", "\n", ",", ";",
                            "abcd1234", "<redacted>"],
    "crash._TR_FAILED_RETOLD": ["torch.distributed.elastic.multiprocessing.api", "xtorch.distributed.elastic."
                                "multiprocessing.api", "failed (exitcode: -9)", "failed (exitcode: 1)",
                                "failed (exitcode: ", " ", "\n", "a", ":"],
    "crash._PHYSX_CUDA_CODE": ["PhysX", "xPhysX", "(700) : abort : ", "(3) : internal error : ", "failed! 700", "!! 2",
                               "with error 700", "with error code 4", "CUDA error, code 700", "Error code 9",
                               "CUDA module data, returned 1", " ", "\n", "a", "7", "(", ")"],
    "crash._OOM_TOLD_SUBJECT_BEFORE": ["I", "we", "We've", "i'm", "my", "our", "run", "8-GPU", "job", "am", "keep",
                                       "still", "really", "amazingly", "am-x", " ", "  ", "\t", "\n", "i.e.", "kept",
                                       "only", "x"],
}


def _verdicts(name: str, pattern: re.Pattern, text: str) -> object:
    """What the runner reads from ``text`` with ``pattern`` as its callers call it."""
    if name == "secrets._ASSIGNMENT":   # mask_assignments: each name, its separator, where the value starts
        return [(m.start("name"), m.group("name", "nq", "sep", "q"), m.end()) for m in pattern.finditer(text)]
    if name == "crash._OOM_TOLD_SUBJECT_BEFORE":   # _oom_told_own: a window ending at the verb
        return [pattern.search(text, lo, hi) is not None for lo in range(0, len(text) + 1, 2)
                for hi in range(lo, len(text) + 1, 2)]
    m = pattern.search(text)     # the exit code, the CUDA code
    return None if m is None else m.group(1)


# _OOM_TOLD_SUBJECT_BEFORE's old source grew faster than a line only up to a few thousand characters (1k->16k 49 on
# a line of its words between spaces, 16k->64k 3.5: a line's): no square, mended all the same (atomic, linear
# throughout) and read only on a window of 120 characters before the verb (_oom_told_own).
SQUARES = sorted(set(OLD) - {"crash._OOM_TOLD_SUBJECT_BEFORE"})


@pytest.mark.parametrize("name", SQUARES)
def test_the_old_source_cost_the_square_and_the_mended_pattern_a_line(name):
    module, source = OLD[name]
    attr = name.split(".")[1]
    assert square_costs(re.compile(source), use=anchored_use(attr)), name
    assert not square_costs(getattr(module, attr), use=anchored_use(attr)), name


@pytest.mark.parametrize("name", sorted(OLD))
def test_the_mended_pattern_reads_what_the_old_one_read(name):
    module, source = OLD[name]
    old, new = re.compile(source), getattr(module, name.split(".")[1])
    rnd, words, read = random.Random(22), WORDS[name], 0
    for _ in range(1500 if name == "crash._OOM_TOLD_SUBJECT_BEFORE" else 6000):
        text = "".join(rnd.choice(words) for _ in range(rnd.randint(1, 12)))
        found = _verdicts(name, old, text)
        assert _verdicts(name, new, text) == found, text
        read += bool(found) and found != [False] * len(found) if isinstance(found, list) else found is not None
    assert read > 50   # the texts do hold what the pattern reads


def test_a_secret_after_a_long_run_of_name_characters_is_still_masked():
    """The masking a user sees: the name read from the run's first letter, the value masked, as before."""
    assert secrets.mask_assignments("--password=hunter22 1password: hunter22") == \
        f"--password={secrets.MASK} 1password: {secrets.MASK}"
    run = "x" + "0123456789" * 200
    assert secrets.mask_assignments(f"{run} HF_TOKEN=hf_abcdef123 {run}") == \
        f"{run} HF_TOKEN={secrets.MASK} {run}"


def test_the_agent_line_and_the_physx_line_read_the_same_codes():
    agent = "torch.distributed.elastic.multiprocessing.api"
    line = f"[W] {agent}: worker group failed (exitcode: -9) for binary located at train.py"
    assert crash._TR_FAILED_RETOLD.search(f"{agent} {agent} x {line}").group(1) == "-9"
    assert crash.physx_cuda_fault("PhysX error: PhysX Internal CUDA error. Simulation can not continue! "
                                  "Error code 700!") == 700
    assert crash.physx_cuda_fault("PhysX error: PhysX x (12) : abort : GPU kernel failed! 400") is None
