"""Review R32 of crash batch 51's rules (docs/crash-classes.md, the `cuda_fault` and `cuda_oom` rows), mended.

1. "when you"/"whenever you" is a guide's condition only with no run of the reporter's in its sentence (the first person,
   our/we, a step or rank by number), no runtime's own text in it (an exception's name, an error's words and a colon, an
   exit code) and not in the past tense (a reply to what a maintainer asked): reports in the second person decide again.
2. A log joined with escaped newlines ends its sentences at each joined line for every rule, not only the fault rule's:
   a library warning's hedge on an earlier joined line refuses no later runtime line.
3. torch's DataLoader worker line quoted in Chinese or Japanese advice, a cause's explainer or a general statement is
   no signal of the run's.
4. A Windows path's separator before a name that starts with "n" (C:\\Windows\\System32\\nvcuda.dll) is no escaped
   newline: the hedge, fix or log tag before the path still holds.
5. The lead of a line (a setting's key, an option's help, an explainer's label) is read once a line, not again for
   each of many fault words.
6. "you'll" and "when you" are written once, read by both the hedge words and the sentence-wide hedges.
"""
from __future__ import annotations

import json
import re

import pytest

from moeconsole.runner.core.crash import classify


def _cls(lines):
    return classify(1, lines if isinstance(lines, list) else [lines], steps_seen=100).cls


# --- 1: "when you" of a reporter ------------------------------------------------------------------------------


@pytest.mark.parametrize("line, cls", [
    ("When you run train.py with --batch_size 8 on a 3090 you get CUDA out of memory at step 12.", "cuda_oom"),
    ("Hi, when you use deepspeed stage 2 with offload, training crashes with CUDA out of memory on rank 3.",
     "cuda_oom"),
    ("When you run the repro script on our A100 node the job crashes with an illegal memory access at step 10.",
     "cuda_fault"),
    ("When you run this on our cluster, the job died with Segmentation fault at step 3.", "segfault"),
    ("When you run on 8 GPUs, we hit an NCCL timeout after 30 minutes.", "nccl_error"),
    ("When you run it on 2 nodes, rank 0 hits Xid 79 on GPU 3 and the job dies.", "cuda_fault"),
    ("When you asked me to rerun with CUDA_LAUNCH_BLOCKING=1, the job crashed with an illegal memory access at "
     "step 10.", "cuda_fault"),
    ("When you suggested lowering the batch size I tried 4, but still got CUDA out of memory on GPU 0.", "cuda_oom"),
    ("When you run on an RTX 5090 you get RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)",
     "environment_error"),
    ('When you run the repro you get "CUDA error: out of memory"', "cuda_oom"),
    ("When you run the script the worker exited with code -9", "killed_oom"),
    # variants: whenever, a rank after the words, a reply in the past tense
    ("Whenever you launch it with zero3 on our nodes it crashes with CUDA out of memory.", "cuda_oom"),
    ("When you said to try bf16, my run died with an illegal memory access anyway.", "cuda_fault"),
])
def test_when_you_in_a_reporters_sentence_still_decides(line, cls):
    assert _cls(line) == cls, line


@pytest.mark.parametrize("line", [
    "Yet when you attempt Flux LoRA training with default configurations, CUDA out of memory errors crash your "
    "process within minutes.",
    "When you hit an illegal memory access, rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel.",
    "Whenever you see a segmentation fault in the data loader, lower num_workers.",
    "When you train on 8 GPUs an NCCL timeout can be a slow rank; raise the timeout.",
    "When you run out of memory on the GPU, lower the batch size.",
    # a guide's run of its own words, a report in another sentence
    "We trained for a week. When you hit an illegal memory access, rerun with CUDA_LAUNCH_BLOCKING=1.",
])
def test_when_you_of_a_guide_is_still_a_mention(line):
    assert _cls(line) == "unknown", line


def test_when_i_still_decides():
    assert _cls("When I run train.py I get CUDA out of memory at step 3.") == "cuda_oom"


# --- 2: a joined log's lines end the sentences of every rule --------------------------------------------------


_WARNING = "UserWarning: Note that when you use gradient checkpointing with use_reentrant=True, inputs need requires_grad."


@pytest.mark.parametrize("later, cls", [
    ("RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)", "environment_error"),
    ("Worker exited with code -9", "killed_oom"),
    ("[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
])
@pytest.mark.parametrize("earlier", [_WARNING, "Note: this may be slow on old drivers"])
def test_a_hedge_on_an_earlier_joined_line_refuses_no_later_runtime_line(earlier, later, cls):
    line = json.dumps({"textPayload": f"{earlier}\n{later}"})
    assert _cls(line) == cls, line


@pytest.mark.parametrize("joined", [
    "step 3 done\nIf you run on an RTX 5090 you may get RuntimeError: nvrtc: error: invalid value for "
    "--gpu-architecture (-arch)",
    "step 3 done\nTo avoid the worker exited with code -9, lower num_workers",
])
def test_a_hedge_on_the_same_joined_line_still_refuses(joined):
    assert _cls(json.dumps({"textPayload": joined})) == "unknown"


# --- 3: the DataLoader line quoted in Chinese or Japanese advice ----------------------------------------------


_DL = "DataLoader worker (pid 1234) is killed by signal: "


@pytest.mark.parametrize("line", [
    f"如果遇到 {_DL}Bus error，可以增大 /dev/shm 的大小。",
    f"为了避免 {_DL}Bus error，请设置 --shm-size=8g",
    f"docker 默认 shm 只有 64M，容易出现 {_DL}Bus error。",
    f"出现 {_DL}Bus error 的原因通常是共享内存不足。",
    f"「{_DL}Bus error」というエラーが出る場合は、共有メモリを増やしてください。",
    f"如果遇到 {_DL}Killed，可以减少 num_workers。",
    f"如果遇到 {_DL}Segmentation fault，可以设置 num_workers=0。",
])
def test_the_dataloader_line_in_cjk_advice_is_no_signal(line):
    assert _cls(line) == "unknown", line


@pytest.mark.parametrize("line, cls", [
    (f'终端打印：{_DL}Bus error或者直接"静默卡死"，只有 CTRL+C 能打断。', "bus_error"),
    (f"训练时报错 {_DL}Bus error 或者直接卡死", "bus_error"),
    (f"训练时报错 {_DL}Killed，只能重启", "killed_oom"),
    (f"训练时报错 {_DL}Segmentation fault，只能重启", "segfault"),
    (f"RuntimeError: {_DL}Bus error。", "bus_error"),
])
def test_the_dataloader_line_a_cjk_report_quotes_still_decides(line, cls):
    assert _cls(line) == cls, line


# --- 4: a Windows path's separator is no escaped newline ------------------------------------------------------


@pytest.mark.parametrize("line", [
    r"If C:\Windows\System32\nvcuda.dll crashes with an illegal memory access, reinstall the driver.",
    r"Fixed a crash in C:\src\new_kernels\varlen.cu where an illegal memory access was encountered",
    r"To avoid C:\ComfyUI\nodes.py hitting a device-side assert triggered error, check your labels",
    r"[W] C:\ComfyUI\nodes.py: an illegal memory access may be reported on old drivers",
    r"If C:\nodes crashes with an illegal memory access, reinstall the driver.",
    r"Fixed in Lib\site-packages\nvidia\cudnn: an illegal memory access in the conv kernel",
])
def test_a_windows_path_keeps_the_hedge_before_it(line):
    assert _cls(line) == "unknown", line


@pytest.mark.parametrize("line", [
    json.dumps({"message": 'Traceback (most recent call last):\n  File "C:\\ComfyUI_windows_portable\\ComfyUI\\'
                           'nodes.py", line 1525, in sample\nRuntimeError: CUDA error: an illegal memory access was '
                           'encountered\n'}),
    r"Fixed seed 42\n[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
    r"Fixed seed 42\r\n[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
])
def test_a_joined_log_is_still_read_line_by_line(line):
    assert _cls(line) == "cuda_fault", line


# --- 5: a line's lead is read once a line ---------------------------------------------------------------------


@pytest.mark.parametrize("lead", ["-", "*", " ", "a"])
def test_a_lines_lead_is_read_once_not_for_each_fault_word(monkeypatch, lead):
    from moeconsole.runner.core import crash

    calls: list[str] = []

    class _Seen:
        def __init__(self, name, pattern):
            self.name, self.pattern = name, pattern

        def match(self, *a, **k):
            calls.append(self.name)
            return self.pattern.match(*a, **k)

        def fullmatch(self, *a, **k):
            calls.append(self.name)
            return self.pattern.fullmatch(*a, **k)

        def __getattr__(self, name):
            return getattr(self.pattern, name)

    for name in ("_SETTING_BEFORE", "_OPTION_HELP_LEAD", "_LABELLED_ITEM"):
        monkeypatch.setattr(crash, name, _Seen(name, getattr(crash, name)))
    line = lead * 8000 + " " + "Fixed: illegal memory access; " * 279
    assert crash._fault_stated(line) is None
    assert len(calls) <= 6, len(calls)


# --- 6: one owner of the second person's hedges ---------------------------------------------------------------


def test_the_second_persons_hedges_are_written_once():
    from moeconsole.runner.core import crash

    source = open(crash.__file__, encoding="utf-8").read()
    assert len(re.findall(re.escape(r'when(?:ever)?\s+you'), source)) == 1
    assert len(re.findall(re.escape(r"you['’]ll"), source)) == 1
