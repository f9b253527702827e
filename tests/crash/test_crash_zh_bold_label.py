"""Batch 74 left it: a Chinese NCCL-timeout label in bold alone on its line (``**NCCL 超时问题**``, a page's heading
of a kind of failure) still read ``nccl_error``: the line's whole bold was stripped before the rules looked, and
the words alone read as an issue's bare title. The markup is kept for such a line (``crash._zh_bold_label``), so
the label rule (``crash._zh_label_only``) sees what makes it a label. Refusals: a bare title, a bold report, a
label that heads a report of the run, and a quote still read as a timeout told."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


@pytest.mark.parametrize("line", ["**NCCL 超时问题**", "**NCCL 超时错误**", "__NCCL超时__", "** NCCL 通信超时 **",
                                  "**NCCL 超时**:", "4. **NCCL 超时错误**:"])
def test_a_bold_label_alone_on_its_line_names_a_kind_of_failure_no_runs(line):
    assert classify(1, [line], steps_seen=5).cls == "unknown"


@pytest.mark.parametrize("line", ["NCCL超时", "**训练出现NCCL超时，任务失败**", "**NCCL 超时**：训练在第 300 步卡住",
                                  "> NCCL超时", "训练到第 300 步时 NCCL 超时"])
def test_refusal_a_report_in_bold_or_bare_still_tells_a_timeout(line):
    assert classify(1, [line], steps_seen=5).cls == "nccl_error"


def test_the_same_label_in_a_long_line_costs_no_more_than_its_length():
    # a line of many bold openings and the words: the check is two anchored matches, linear in the line
    line = "**" * 20000 + "NCCL 超时问题**"
    assert classify(1, [line], steps_seen=5).cls in ("unknown", "nccl_error")
