"""Batch 66's families (tests/crash/public 1416-1435, held out).

Main read 10 of the 20 texts' classes right; the 10 it missed were three families, each added from the programs' own
words (no label changed):

1. A GPU without bfloat16 asked to run in it (1416-1419, 1421-1423, 1435, read as ``unknown``): vLLM's platform check
   (vllm/platforms/cuda.py ``check_if_supports_dtype``, v0.11.0 l.497-514: "Bfloat16 is only supported on GPUs with
   compute capability of at least 8.0. Your {gpu_name} GPU has compute capability M.m. You can use float16 instead
   ...") and transformers' TrainingArguments (training_args.py, 4.57.1 l.1737-1747: "Your setup doesn't support
   bf16/gpu." and " You need Ampere+ GPU with cuda>=11.0"). The hardware's (``environment_error``, never restarted):
   after ValueError's name (behind Xinference's actor address too), after vLLM's ERROR head, or at the line's start;
   not behind a comment's mark, in a table's cell, a hedge, after a fix, in a guide's title, explained after it.
   1419 needed IPython's traceback head ("ValueError      Traceback (most recent call last)") read as a head, not as
   an exception raised after the message; 1420 (a feature request's "Such as" over the message) an introducer of
   examples alone on its line read as an example's heading.
2. A tool's rendering of the driver's Xid line right under it (1433, read as ``cuda_fault``): gpud's "XID 144.0 (err
   status 0x00000008) NVLINK_SAW_ERROR detected on GPU ..." under "> NVRM: Xid (PCI:0000:01:00): 144, ...": a parser's
   input and output, neither decides.
3. The runtime's message quoted in a general statement (1425, read as ``cuda_fault``): "Preempted ACE jobs cordon
   nodes: ... the survivors fault with `CUDA error: Invalid access of peer GPU memory over nvlink or a hardware
   error`, and the GPUs need rebooting." names a kind of job, as the told words' general statements do.
Every accepted case below fails on main's code; the refusals pass on both."""
from __future__ import annotations

import time

import pytest

from moeconsole.runner.core.crash import classify


def _verdict(*lines: str, steps: int = 0):
    return classify(1, list(lines), steps_seen=steps)


_VLLM = ("Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB GPU has "
         "compute capability 7.0. You can use float16 instead by explicitly setting the `dtype` flag in CLI, for "
         "example: --dtype=half.")
_TF = "Your setup doesn't support bf16/gpu. You need Ampere+ GPU with cuda>=11.0"


# --- 1. bfloat16 on a GPU without it --------------------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    # vLLM's ValueError as its worker raises it, behind a rank's prefix, and the message alone (an issue title)
    [f"ValueError: {_VLLM}"],
    [f"[rank0]: ValueError: {_VLLM}"],
    ["ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0"],
    # wrapped after its first sentence, the GPU at the next line's start
    ["ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
     "Your Tesla V100-SXM2-32GB GPU has compute capability 7.0. You can use float16 instead"],
    # vLLM's logger at ERROR before it raises, a NIM container's the same head
    [f"ERROR 01-20 01:25:05 engine.py:366] {_VLLM}"],
    [f"ERROR 2025-07-21 14:34:24.934 async_trtllm_engine_factory.py:62] {_VLLM}"],
    # Xinference's actor re-raising it with its address
    [f"ValueError: [address=0.0.0.0:37495, pid=262] {_VLLM}"],
    # a GPU NVML gives no capability for
    ["ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU does "
     "not have a compute capability. You can use float16 instead"],
    # the message, then the notebook's traceback under IPython's head (cut before the message)
    [f"ValueError: {_VLLM}", "", "ValueError                                Traceback (most recent call last)",
     "<ipython-input-3-61384812488d> in <cell line: 7>()", "----> 7 model = OrpheusModel(model_name=name)"],
])
def test_vllm_refusing_bfloat16_on_the_gpu_is_the_environment(lines):
    v = _verdict(*lines)
    assert v.cls == "environment_error", (v.summary, v.evidence)
    assert v.summary.startswith("vLLM cannot run bfloat16 on this GPU") and not v.retryable
    assert "dtype=half" in v.hint


def test_the_vllm_summary_names_the_gpu_and_its_capability_also_wrapped():
    one = _verdict(f"ValueError: {_VLLM}")
    two = _verdict("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
                   "Your Quadro RTX 6000 GPU has compute capability 7.5. You can use float16 instead")
    assert one.summary.endswith("Tesla V100-SXM2-32GB (compute capability 7.0)"), one.summary
    assert two.summary.endswith("Quadro RTX 6000 (compute capability 7.5)"), two.summary


@pytest.mark.parametrize("lines", [
    [f"ValueError: {_TF}"],
    [f"`ValueError: {_TF}`"],
    ["ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0"],
    ["ValueError: Your setup doesn't support bf16/gpu."],
    # TrainingArguments' own frame above it (read as a configuration error before)
    ["Traceback (most recent call last):",
     '  File "/venv/lib/python3.12/site-packages/transformers/hf_argparser.py", line 358, in '
     "parse_args_into_dataclasses",
     "    obj = dtype(**inputs)",
     '  File "<string>", line 135, in __init__',
     '  File "/venv/lib/python3.12/site-packages/transformers/training_args.py", line 1747, in __post_init__',
     "    raise ValueError(error_message)",
     f"ValueError: {_TF}"],
])
def test_transformers_refusing_bf16_on_the_gpu_is_the_environment(lines):
    v = _verdict(*lines)
    assert v.cls == "environment_error", (v.summary, v.evidence)
    assert v.summary.startswith("transformers' TrainingArguments refused bf16") and not v.retryable
    assert "fp16" in v.hint


@pytest.mark.parametrize("lines", [
    # a hedge, a fix, a guide's title, an explanation after it
    [f"If you get ValueError: {_VLLM} set dtype=half in the rollout config."],
    [f"- Fixed ValueError: {_TF} on T4 by defaulting to fp16"],
    ["How to fix ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0"],
    ["Bfloat16 is only supported on GPUs with compute capability of at least 8.0 means the GPU is older than Ampere"],
    # a script's comment over the setting that avoids it, a troubleshooting table's cell
    [f"#ValueError: {_VLLM}", 'llm = LLM(model=name, dtype="half")'],
    ["| `Bfloat16 is only supported on GPUs with compute capability >= 8.0` | you are on a T4/V100; set "
     '`DTYPE = "half"` |'],
    # the words inside a person's sentence, no exception's name before them
    ["vLLM says Bfloat16 is only supported on GPUs with compute capability of at least 8.0 on Turing cards."],
    # a feature request's example under "Such as"
    ["We should add compute capability labels to GPUs.", "", "Such as", "```Shell", _VLLM, "```"],
    # vLLM's own fallback for a dtype left to "auto" (a warning, the engine goes on in float16)
    ["WARNING 03-02 10:11:12 config.py:1466] Your Tesla T4 device (with compute capability 7.5) doesn't support "
     "torch.bfloat16. Falling back to torch.float16 for compatibility."],
    # a later exception of the program's own after it
    [f"ValueError: {_VLLM}", "Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
     "KeyError: 'labels'"],
])
def test_bf16_refusal_only_named_decides_nothing(lines):
    assert _verdict(*lines).cls != "environment_error"


def test_a_long_line_of_the_bf16_words_is_read_in_linear_time():
    line = "ValueError: " + "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your " * 3000
    t = time.perf_counter()
    _verdict(line, "Your " * 20000 + "GPU has compute capability 7.0")
    assert time.perf_counter() - t < 2.0


# --- an introducer of examples alone on its line -------------------------------------------------------------------


@pytest.mark.parametrize("intro", ["Such as", "For instance,", "e.g."])
def test_an_introducer_alone_on_its_line_heads_an_example(intro):
    v = _verdict("Other programs refuse old GPUs too.", intro,
                 "FlashAttention only supports Ampere GPUs or newer.")
    assert v.cls == "unknown", (v.summary, v.evidence)


def test_a_reports_such_as_inside_its_sentence_is_no_heading():
    v = _verdict("We hit errors such as", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                 "GPU 0 has a total capacity of 79.10 GiB of which 1.25 GiB is free.")
    assert v.cls == "cuda_oom"


# --- 2. a tool's rendering of the driver's Xid line under it -------------------------------------------------------

_X144 = ("> NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 "
         "0x00000000 0x00000000 0x00000000)")
_X149 = ("> NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 "
         "0x00000000 0x00000000 0x00000000)")


@pytest.mark.parametrize("lines", [
    [_X144, "- XID 144.0 (err status 0x00000008) NVLINK_SAW_ERROR detected on GPU PCI:0000:01:00", "- Warning"],
    [_X144, "- XID 144.0 (err status 0x00000008) NVLINK_SAW_ERROR detected on GPU PCI:0000:01:00", "- Warning", "",
     _X149, "- XID 149.38 (err status 0x00000000) NVLINK_NETIR_ERROR detected on GPU PCI:0000:00:00", "- Fatal"],
    ["NVRM: Xid (PCI:0000:ae:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
     "XID 79(GPU has fallen off the bus) detected on GPU PCI:0000:ae:00"],
])
def test_a_driver_line_with_its_rendering_under_it_is_a_parsers_example(lines):
    v = _verdict(*lines)
    assert v.cls == "unknown", (v.summary, v.evidence)


@pytest.mark.parametrize("lines", [
    [_X149],
    # a monitor's event alone (no driver's line above it), another Xid rendered under the driver's line
    ["XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00"],
    [_X149, "- XID 144.0 (err status 0x00000008) NVLINK_SAW_ERROR detected on GPU PCI:0000:01:00"],
])
def test_the_driver_line_or_the_rendering_alone_still_decides(lines):
    assert _verdict(*lines).cls == "cuda_fault"


# --- 3. the runtime's message quoted in a general statement ---------------------------------------------------------

_CONTAINED = "CUDA error: Invalid access of peer GPU memory over nvlink or a hardware error"


def test_the_runtime_message_quoted_of_a_kind_of_job_decides_nothing():
    v = _verdict("Preempted jobs cordon nodes: a rank SIGKILLed with its NCCL communicators still open drops its "
                 f"NVLink peers, the survivors fault with `{_CONTAINED}`, and the GPUs need rebooting.")
    assert v.cls == "unknown", (v.summary, v.evidence)


@pytest.mark.parametrize("line", [
    f"My job fails with `{_CONTAINED}` after the preemption.",
    f"Jobs on rank 3 fail with `{_CONTAINED}`.",
    f"`{_CONTAINED}` on all workers after the preemption",
    f"Preempted jobs fault with {_CONTAINED}",
    f"RuntimeError: {_CONTAINED}",
])
def test_the_runtime_message_of_a_run_still_decides(line):
    assert _verdict(line).cls == "cuda_fault"
