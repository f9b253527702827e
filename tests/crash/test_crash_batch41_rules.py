"""Batch 41's rules (docs/crash-classes.md, "Public crash texts"), each on a variant the batch's texts did not show:
NVRTC refusing the GPU's architecture (environment_error), and a hedge looked for only in the sentence of a
timeout or a segfault a report tells in words (a paragraph pasted on one line holds several sentences).
Each rule also gets the lines its words must not decide on: advice, a changelog, help text, a setting."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, nccl_timeout_told, segfault_told

# --- NVRTC: "nvrtc: error: invalid value for --gpu-architecture (-arch)" ---------------------------------------

# ATen's jiterator through torchrun on a GPU newer than the install's NVRTC (aten/src/ATen/native/cuda/
# jit_utils.cpp throws NVRTC's log), then torch elastic's block: a variant the batch's Isaac Lab texts did not show
JITERATOR_LOG = [
    "[rank1]:   File \"/opt/venv/lib/python3.12/site-packages/torch/nn/init.py\", line 159, in _no_grad_trunc_normal_",
    "[rank1]:     tensor.erfinv_()",
    "[rank1]: RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)",
    "[rank1]: ",
    "[rank1]: nvrtc compilation failed: ",
    "[rank1]: #define NAN __int_as_float(0x7fffffff)",
    "E0412 09:12:44.120000 501 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) "
    "local_rank: 1 (pid: 540) of binary: /opt/venv/bin/python",
]


def test_nvrtc_refusing_the_architecture_is_an_environment_error_that_is_not_restarted():
    v = classify(1, JITERATOR_LOG, steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable and v.recovery == "fail", (v.cls, v.summary)
    assert "NVRTC" in v.summary and "--gpu-architecture" in v.summary
    assert "nvidia-cuda-nvrtc" in v.hint


@pytest.mark.parametrize("line", [
    # CuPy raises NVRTC's log the same way
    "cupy.cuda.compiler.CompileException: nvrtc: error: invalid value for --gpu-architecture (-arch)",
    # retold in a sentence, "error: " dropped, after the run's own verb
    "The hf backend dies in the vision tower with `nvrtc: invalid value for --gpu-architecture` on the B300.",
])
def test_every_form_of_the_nvrtc_refusal_decides(line):
    v = classify(1, [line], steps_seen=0)
    assert v.cls == "environment_error", (line, v.cls, v.summary)


@pytest.mark.parametrize("line", [
    # advice in a README or a FAQ
    "If you see `nvrtc: error: invalid value for --gpu-architecture (-arch)`, install the cu130 wheel.",
    # a changelog
    "- Fixed nvrtc: error: invalid value for --gpu-architecture on GB10 by pinning nvidia-cuda-nvrtc 13.0",
    # nvcc's and NVRTC's help text for the option itself
    "--gpu-architecture <arch> (-arch)   Specify the name of the class of NVIDIA 'virtual' GPU architecture",
    # a setting at start-up
    "[INFO] jit options: --gpu-architecture=compute_90 -default-device",
])
def test_advice_changelogs_help_text_and_settings_naming_the_option_are_no_environment_error(line):
    v = classify(1, [line], steps_seen=0)
    # (a changelog line shaped "- Fixed nvrtc: error: ..." is read by the argparse usage rule, `prog: error: ...`,
    # on a first attempt; that rule is older than this one and not this test's subject)
    assert v.cls != "environment_error", (line, v.cls, v.summary)


def test_the_nvrtc_refusal_does_not_outrank_a_later_failure():
    v = classify(1, ["W0412 nvrtc: error: invalid value for --gpu-architecture (-arch); falling back to eager",
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 79.11 GiB of which 1.02 GiB is free."], steps_seen=40)
    assert v.cls == "cuda_oom", (v.cls, v.summary)


# --- a hedge only in the sentence of the words a report tells --------------------------------------------------

@pytest.mark.parametrize(("line", "told"), [
    # an earlier sentence's infinitive "to" and setting verb say nothing of the later one
    ("We set the micro batch to 8 to fit the 80 GB cards. After two hours the job died with an NCCL timeout "
     "in the gradient all-reduce.", True),
    # an earlier sentence's possibility
    ("The data loader may be slow on NFS! Rank 3 then hit an NCCL watchdog timeout.", True),
    # a hedge in the same sentence still counts
    ("Lowering the micro batch may avoid an NCCL timeout during the all-reduce.", False),
    # "e.g." ends no sentence: the hedge before it still counts
    ("This may cause, e.g. an NCCL timeout in the all-reduce.", False),
    # a setting's value after the words, at start-up
    ("[INFO] Loaded config. NCCL timeout = 1800 s", False),
])
def test_an_nccl_timeout_told_is_read_in_its_own_sentence(line, told):
    assert nccl_timeout_told(line) is told, line
    v = classify(1, [line], steps_seen=30)
    assert (v.cls == "nccl_error") is told, (line, v.cls, v.summary)


@pytest.mark.parametrize(("line", "told"), [
    ("The eval loop might need more RAM. The trainer then crashed with a segmentation fault at step 1200.", True),
    ("We could not reproduce it on one GPU. On eight GPUs it segfaulted at step 80.", True),
    ("Calling CUDA in a forked worker can lead to a segfault.", False),
    ("v0.9.2: Fixed SIGSEGV in the varlen backward. Faster packing.", False),
])
def test_a_segfault_told_is_read_in_its_own_sentence(line, told):
    assert segfault_told(line) is told, line
    v = classify(1, [line], steps_seen=30)
    assert (v.cls == "segfault") is told, (line, v.cls, v.summary)
