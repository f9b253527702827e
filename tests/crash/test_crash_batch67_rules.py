"""Batch 67's families (tests/crash/public 1436-1455, held out).

Main read 15 of the 20 texts' classes right; the 5 it missed were five families, each added from the programs' own
words or NVIDIA's catalog (no label changed):

1. Xids the driver logs where no process met a fault (1443, read as ``cuda_fault``): NVIDIA's Xid catalog
   (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) gives 63 (INFOROM_DRAM_RETIREMENT_EVENT, a row
   remap recorded), 92 (EXCESSIVE_SBE_INTERRUPTS, "High single-bit ECC error rate": corrected errors), 93 (InfoROM
   wear limit), 106/107 (SMBPBI test messages) and 121 (C2C corrected errors, "no operational impact") the immediate
   action IGNORE and triggers that touch no application: the driver's line or a person's "we hit Xid 92" decides
   nothing, and the next Xid on the line or below does.
2. An Xid catalogue's row keyed by the bare number (1445, read as ``cuda_fault``): "| 79 | GPU has fallen off the bus
   | ... |", the driver's own string for Xid 79 (nverror.h) in the next cell, names what the Xid stands for.
3. A term's definition (1446, read as ``cuda_fault``): "GPU fallen off bus is the failure condition reported as Xid
   79, where ...": the bus-loss words and the Xid in a sentence whose copula defines a kind of condition, with no
   first person and no narration in it.
4. slurmstepd's time-limit line retyped whole (1450, read as ``unknown``): "slurmstepd: error: JOB CANCELLED DUE TO
   TIME LIMIT", req.c's words in req.c's order with the job's id, host, time or asterisks dropped, at the line's start
   and filling it.
5. An example sought at a sentence's end (1449, read as ``time_limit``): "We need to check the scheduler log files for
   timeout messages, e.g.:" over slurmstepd's line: a need, a duty or a plan before the introducer, no narration of a
   run in the sentence.
Every accepted case below fails on main's code; the refusals pass on both."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


_TIME_LIMIT_LINE = "slurmstepd: error: *** JOB 4191701 ON c5-1 CANCELLED AT 2021-08-17T15:09:00 DUE TO TIME LIMIT ***"


# --- 1. Xids that report no fault ------------------------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    # the row remapper's record behind dmesg -T's clock, C2C's corrected errors, the InfoROM wear limit
    ["[Mon Aug  5 03:54:13 2024] NVRM: Xid (PCI:0000:00:07): 63, pid='<unknown>', name=<unknown>, Row Remapper: New "
     "row (0x0000000000c81c80) marked for remapping, reset gpu to activate."],
    ["kernel: NVRM: Xid (PCI:0000:dc:00): 121, pid='<unknown>', name=<unknown>, C2C Link corrected error"],
    ["NVRM: Xid (PCI:0000:3b:00): 93, pid='<unknown>', name=<unknown>, InfoROM erase limit exceeded"],
    # a person telling Xid 92 happened on a node
    ["We hit Xid 92 on node-3 last night."],
])
def test_an_xid_that_reports_no_fault_decides_nothing(lines):
    v = _verdict(*lines)
    assert v.cls == "unknown", (v.cls, v.summary)


@pytest.mark.parametrize("lines, xid", [
    # the fault's own Xid after the remap's record names the fault, not the record
    (["NVRM: Xid (PCI:0000:65:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row marked for remapping",
      "NVRM: Xid (PCI:0000:65:00): 94, pid=1234, name=python3, Contained: ECC error"], "Xid 94"),
    # a told no-fault Xid gives way to the next Xid on the line
    (["We hit Xid 92 on node-3 last night, then Xid 48 on GPU 2."], "Xid 48"),
])
def test_the_fault_after_a_no_fault_xid_is_the_one_named(lines, xid):
    v = _verdict(*lines)
    assert v.cls == "cuda_fault" and xid in v.summary, (v.cls, v.summary)


@pytest.mark.parametrize("lines, xid", [
    # refusals: the faults' Xids read as before, 43 too (its application "must terminate")
    (["NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, name=pt_main_thread, Ch 00000008"], "Xid 43"),
    (["NVRM: Xid (PCI:0000:65:00): 48, pid='N/A', Double Bit ECC"], "Xid 48"),
    (["NVRM: Xid (PCI:0000:65:00): 92, pid='N/A', High single-bit ECC error rate",
      "NVRM: Xid (PCI:0000:65:00): 48, pid=123, name=python, Ch 00000010"], "Xid 48"),
    (["We saw Xid 79 on node-3 at 02:10 and the job died."], "Xid 79"),
])
def test_a_fault_xid_still_decides(lines, xid):
    v = _verdict(*lines)
    assert v.cls == "cuda_fault" and xid in v.summary, (v.cls, v.summary)


# --- 2. a catalogue's row keyed by the bare number ------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ["| XID | Meaning | What it really means |", "|---|---|---|",
     "| 79 | GPU has fallen off the bus | Power, PCIe, riser, or thermal kill |"],
    ["| 79 | **GPU has fallen off the bus** | reboot the node |"],
    ["| 79 | The GPU has fallen off the bus. | cold reset |"],
])
def test_a_catalogue_row_of_xid_79_by_its_number_is_no_fault(lines):
    v = _verdict(*lines)
    assert v.cls == "unknown", (v.cls, v.summary)


@pytest.mark.parametrize("lines", [
    # refusals: an incident's row (a number, a node or words of its own), read as before
    ["| 3 | GPU 2 fell off the bus at step 900 |"],
    ["| node-3 | 79 | GPU has fallen off the bus |"],
    ["| 79 | GPU has fallen off the bus at step 4000 on node-3 |"],
    ["| Xid 79 on node-3 | GPU has fallen off the bus | 2026-01-02 |"],
])
def test_an_incident_row_still_decides(lines):
    v = _verdict(*lines)
    assert v.cls == "cuda_fault", (v.cls, v.summary)


# --- 3. a term's definition ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "GPU fallen off the bus is a condition where the GPU stops answering on PCIe.",
    "A GPU that has fallen off the bus is the state reported as Xid 79.",
    "GPU fallen off bus refers to the failure condition in which the GPU drops off PCIe.",
])
def test_the_bus_loss_defined_as_a_term_is_no_fault(line):
    v = _verdict(line)
    assert v.cls == "unknown", (v.cls, v.summary)


@pytest.mark.parametrize("line", [
    # refusals: a report whose sentence names the run (a first person, a narration), read as before
    "One GPU fell off the bus at step 900, which is the worst event we had.",
    "GPU 3 fell off the bus at step 900 and the node is in a bad state.",
    "Xid 79 happened on node-3, which is a serious condition.",
    "Our GPU 3 fell off the bus at step 900.",
])
def test_a_reported_bus_loss_still_decides(line):
    v = _verdict(line)
    assert v.cls == "cuda_fault", (v.cls, v.summary)


# --- 4. slurmstepd's line retyped ------------------------------------------------------------------------------------


@pytest.mark.parametrize("line, cls", [
    ("slurmstepd: error: *** JOB CANCELLED DUE TO TIME LIMIT ***", "time_limit"),
    ("slurmstepd: error: *** STEP 1234.0 CANCELLED DUE TO TIME LIMIT ***", "time_limit"),
    ("> slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT", "time_limit"),
    ("slurmstepd-node07: error: JOB 1449736 CANCELLED DUE TO PREEMPTION", "preempted"),
])
def test_slurmstepds_line_retyped_whole_gives_its_state(line, cls):
    v = _verdict(line)
    assert v.cls == cls, (v.cls, v.summary)


@pytest.mark.parametrize("line", [
    # refusals: the words inside a person's sentence, explained after them, or with no reason
    "If you see slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT, raise --time.",
    "slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT means the job ran past --time",
    "slurmstepd: error: JOB CANCELLED",
    "The recipes were cancelled by the Slurm TIME LIMIT mid-training.",
    # a setting's value, a fix, a quote opening the line
    'TIMEOUT_PATTERN="slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT"',
    "Fixed: slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT no longer ends the sweep",
    '"slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT" is what the log says when --time runs out',
])
def test_slurmstepds_words_in_a_sentence_decide_nothing(line):
    v = _verdict(line)
    assert v.cls == "unknown", (v.cls, v.summary)


# --- 5. an example sought at a sentence's end ------------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ["The parser should match lines such as:", _TIME_LIMIT_LINE],
    ["We need to check the scheduler log files for timeout messages, e.g.:", "", f"`{_TIME_LIMIT_LINE}`"],
    ["The health check must flag kernel lines, for example:",
     "NVRM: Xid (PCI:0000:5a:00): 79, pid=1101234, name=python3, GPU has fallen off the bus."],
])
def test_lines_sought_as_examples_are_no_run(lines):
    v = _verdict(*lines)
    assert v.cls == "unknown", (v.cls, v.summary)


@pytest.mark.parametrize("lines, cls", [
    # refusals: a sentence that narrates the run heads its own lines; a raised exception ends an example
    (["Our job keeps failing with errors such as:", _TIME_LIMIT_LINE], "time_limit"),
    (["We need to fix this, it crashed again with errors such as:", _TIME_LIMIT_LINE], "time_limit"),
    (["I got this:", _TIME_LIMIT_LINE], "time_limit"),
    (["The monitor should alert on messages such as:",
      "RuntimeError: CUDA error: an illegal memory access was encountered"], "cuda_fault"),
])
def test_a_runs_own_lines_still_decide(lines, cls):
    v = _verdict(*lines)
    assert v.cls == cls, (v.cls, v.summary)
