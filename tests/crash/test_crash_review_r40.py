"""Review R40 of crash batch 52 (docs/crash-classes.md, batch 52's "reviewed (R40)" note): each finding's input and
its variants both ways.

1. sbatch's refusal in a training log is the recipe's own sbatch's (a launcher, a job script that submits itself
   again), never the runner's (the Slurm engine records that one): it ends the attempt only as its last word, below
   every program's failure and Slurm's own end of the job, and never after a logged step or a later success.
2. Chinese advice after a runtime's bare words refuses them only after a condition; a request for help, a question,
   "可以看到" and a program's own advice after its error line are reports'. A report's setting verb or doubt is no hedge.
3. The Korean limits: 나요 (it happens), a frequency, 경우가 있습니다, 때가 있어요, 때까지 and a request for help are a
   report's words; a runtime's raised line decides whatever the prose around it.
4. sbatch's own retried errors (src/sbatch/sbatch.c, main's loop) and a queued-job limit wait and start again.
5. sbatch's line quoted in a code span decides nothing; the patterns stay linear on long runs.
"""
from __future__ import annotations

import stat
import time

import pytest

from moeconsole.runner.core.crash import classify

_SB = "sbatch: error: Batch job submission failed: "
_TORCH_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
              "79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.9 GiB memory in use.")
_STEPS = ["{'loss': 1.23, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1}"] * 3
_TIME_LIMIT = "slurmstepd: error: *** JOB 1234 ON node1 CANCELLED AT 2025-01-01T10:00:00 DUE TO TIME LIMIT ***"
_QOS = "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


# --- 1. a refusal in the log is the last word or nothing ----------------------------------------------------------

@pytest.mark.parametrize("lines", [
    [_SB + _QOS, *_STEPS, "Traceback (most recent call last):", '  File "train.py", line 10, in <module>', _TORCH_OOM],
    ["+ sbatch --dependency=afterany:1234 job.sh", _SB + "Invalid partition name specified", _TORCH_OOM],
    [_TORCH_OOM, _SB + "Invalid partition name specified"],
])
@pytest.mark.parametrize("steps", [0, 100])
def test_a_resubmit_refused_does_not_hide_the_runs_oom(lines, steps):
    v = classify(1, lines, steps_seen=steps)
    assert (v.cls, v.recovery) == ("cuda_oom", "restart")


@pytest.mark.parametrize("steps", [0, 100])
def test_a_time_limit_before_a_refused_resubmit_is_the_time_limit(steps):
    v = classify(1, [*_STEPS, _TIME_LIMIT, _SB + "Invalid partition name specified"], steps_seen=steps)
    assert (v.cls, v.recovery) == ("time_limit", "restart")


def test_a_refused_resubmit_after_logged_steps_fails_nothing():
    v = classify(1, [*_STEPS, _SB + _QOS], steps_seen=100)
    assert v.cls != "submit_refused" and v.recovery == "restart"


def test_a_refusal_sbatch_retried_into_a_job_decides_nothing():
    assert _cls(_SB + "Invalid partition name specified", "Submitted batch job 12345", steps=0) == "unknown"
    # the success before the refusal is another submission's: the last one was refused
    assert _cls("Submitted batch job 12345", _SB + "Invalid partition name specified", steps=0) == "submit_refused"


def test_a_launchers_refusal_names_the_recipes_sbatch_not_the_slurm_section():
    v = classify(1, ["+ sbatch run.sbatch", _SB + "Invalid partition name specified"], steps_seen=0)
    assert (v.cls, v.recovery, v.retryable) == ("submit_refused", "fail", False)
    assert "Invalid partition name specified" in v.summary
    assert "slurm section" not in (v.hint or "").split(";")[0] and "own sbatch" in (v.hint or "")


def test_an_exception_after_the_refusal_is_the_end():
    v = classify(1, [_SB + "Invalid partition name specified", "Traceback (most recent call last):",
                     '  File "train.py", line 3, in <module>', "ValueError: bad config"], steps_seen=0)
    assert v.cls != "submit_refused"


# --- 2. Chinese prose around the bare words ------------------------------------------------------------------------

@pytest.mark.parametrize("line, cls", [
    ("训练时出现CUDA out of memory，应该怎么办", "cuda_oom"),
    ("我在训练的时候报 CUDA out of memory 错误，可以帮忙看一下吗", "cuda_oom"),
    ("训练的时候显示 CUDA out of memory，可以看到显存占满了", "cuda_oom"),
    ("训练到一半出现 CUDA out of memory，我已经把 batch size 调到1了，还是不行，请大家帮忙看看", "cuda_oom"),
    ("ms-swift 训练 Qwen3-30B-A3B 出现 CUDA out of memory，应该如何排查", "cuda_oom"),
    ("运行 sft 脚本后出现 illegal memory access，可以帮忙看看吗", "cuda_fault"),
    ("[ERROR] 训练中断：CUDA out of memory，请减小 per_device_train_batch_size 后重新运行", "cuda_oom"),
    ("CUDA out of memory. Tried to allocate 2.00 GiB，应该怎么解决", "cuda_oom"),
    ("batch size 设置为 1 还是出现 CUDA out of memory", "cuda_oom"),
    ("不知道为什么训练时出现 CUDA out of memory", "cuda_oom"),
    # the same request after torch's DataLoader line and after an OOM told in Chinese words (one advice list)
    ("训练时出现 DataLoader worker (pid 4040) is killed by signal: Bus error，可以帮忙看看吗", "bus_error"),
    ("训练时出现 DataLoader worker (pid 4040) is killed by signal: Bus error，应该怎么办", "bus_error"),
    ("训练时出现显存不足，可以帮忙看看吗", "cuda_oom"),
])
def test_a_chinese_report_of_the_bare_words_decides(line, cls):
    assert _cls(line) == cls


@pytest.mark.parametrize("line", [
    "如果出现 CUDA out of memory，可以尝试减小batch size",
    "出现CUDA out of memory的情况下，建议减小batch size",
    "出现 CUDA out of memory 时，可以开启 gradient checkpointing",
    "一旦出现 illegal memory access，建议设置 CUDA_LAUNCH_BLOCKING=1",
    "训练时可能出现 CUDA out of memory",
    "如果遇到 DataLoader worker (pid 1) is killed by signal: Bus error，可以增大 /dev/shm",
    "显存不足时，可以尝试减小batch size",
])
def test_chinese_conditions_and_advice_still_decide_nothing(line):
    assert _cls(line) == "unknown"


# --- 3. Korean prose -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, cls", [
    ("학습 도중 CUDA out of memory가 나요", "cuda_oom"),
    ("학습 돌리면 CUDA out of memory 에러가 나요", "cuda_oom"),
    ("학습 중 illegal memory access가 나요", "cuda_fault"),
    ("학습 중에 자주 CUDA out of memory가 발생합니다", "cuda_oom"),
    ("요즘 종종 CUDA out of memory가 발생합니다", "cuda_oom"),
    ("CUDA out of memory가 발생하는 경우가 많습니다", "cuda_oom"),
    ("step 300에서 CUDA out of memory가 날 때가 있어요", "cuda_oom"),
    ("CUDA out of memory 에러가 발생할 때까지 메모리가 계속 증가합니다", "cuda_oom"),
    ("CUDA out of memory 에러 좀 봐주세요", "cuda_oom"),
    ("CUDA out of memory 오류 해결 좀 도와주세요", "cuda_oom"),
    ("CUDA out of memory 원인을 모르겠습니다", "cuda_oom"),
    ("학습 중에 자주 RuntimeError: DataLoader worker (pid 4040) is killed by signal: Bus error.", "bus_error"),
    ("학습 중에 종종 DataLoader worker (pid 1) is killed by signal: Killed.", "killed_oom"),
    ("RuntimeError: DataLoader worker (pid 4040) is killed by signal: Bus error가 나요", "bus_error"),
])
def test_a_korean_report_decides(line, cls):
    assert _cls(line) == cls


@pytest.mark.parametrize("line", [
    "왜 CUDA out of memory가 발생하나요?",
    "CUDA out of memory가 발생하나요",
    "CUDA out of memory 에러가 나는 경우 batch size를 줄이세요",
    "CUDA out of memory 에러가 날 때 batch size를 줄이세요",
    "보통 CUDA out of memory는 배치 크기 때문에 생깁니다",
    "CUDA out of memory 원인과 해결 방법",
    "DataLoader worker (pid XXX) is killed by signal: Bus error가 발생하면 /dev/shm 크기를 늘리세요",
])
def test_korean_conditions_questions_and_advice_still_decide_nothing(line):
    assert _cls(line) == "unknown"


# --- 4. sbatch's own retried errors and a queued-job limit wait ---------------------------------------------------

@pytest.mark.parametrize("lines", [
    ["sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying",
     _SB + "Resource temporarily unavailable"],
    [_SB + "Resource temporarily unavailable"],
    [_SB + "Unable to create job record, try again"],
    [_SB + "Requested nodes are busy"],
    ["sbatch: error: QOSMaxSubmitJobPerUserLimit", _SB + _QOS],
    ["sbatch: error: AssocMaxSubmitJobLimit", _SB + _QOS],
])
def test_sbatchs_retried_errors_and_a_submit_limit_wait_for_slurm(lines):
    v = classify(1, lines, steps_seen=0)
    assert (v.cls, v.recovery, v.retryable) == ("slurm_unavailable", "wait_slurm", True)
    assert lines[0].rsplit(": ", 1)[-1][:30] in v.summary


def test_a_policy_refusal_without_a_submit_limit_named_still_fails():
    assert _cls(_SB + _QOS, steps=0) == "submit_refused"
    assert _cls("sbatch: error: AssocGrpCPURunMinutesLimit", _SB + _QOS, steps=0) == "submit_refused"


def _fake_sbatch(tmp_path, err: str):
    exe = tmp_path / "sbatch"
    exe.write_text("#!/bin/sh\ncat >&2 <<'EOF'\n" + err + "\nEOF\nexit 1\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


@pytest.mark.parametrize("err, transient", [
    ("sbatch: error: QOSMaxSubmitJobPerUserLimit\n" + _SB + _QOS, True),
    ("sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n"
     + _SB + "Resource temporarily unavailable", True),
    (_SB + "Requested nodes are busy", True),
    (_SB + "Invalid partition name specified", False),
    (_SB + _QOS, False),
])
def test_the_runners_own_submit_waits_on_the_same_words(tmp_path, err, transient):
    from moeconsole.runner.process.slurm import client
    fake = _fake_sbatch(tmp_path, err)
    sub = client.Submission(str(tmp_path / "job.sh"),
                            spawn=lambda argv, **kw: client.AsyncCommand([fake, *argv[1:]], **kw))
    deadline = time.monotonic() + 60
    with pytest.raises(client.SubmitError) as exc:
        while sub.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    assert exc.value.transient is transient and err.splitlines()[-1] in str(exc.value)


# --- 5. a quoted line, and linear patterns ------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "`" + _SB + "Invalid partition name specified` means the partition in your script does not exist; fix it with -p",
    "> `" + _SB + "Invalid account or account/partition combination specified` is what you see when the account is wrong",
])
def test_sbatchs_line_quoted_in_a_code_span_decides_nothing(line):
    assert _cls(line, steps=0) == "unknown"


def test_sbatch_and_symptom_patterns_stay_linear():
    from moeconsole.runner.core import crash, sbatch_words
    for n in (4_000, 64_000):
        t0 = time.process_time()
        sbatch_words.SBATCH_REFUSAL.match(_SB + "x" + " " * n + "y`")
        sbatch_words.SBATCH_LINE.match(" " * n + "x")
        crash._ZH_SYMPTOM_ENTRY.match("*" * n + " CUDA out of memory")
        spent = time.process_time() - t0
    # quadratic at 64 000 characters took seconds (16 000 took 0.9 s for the sbatch pattern alone); linear is ~ms
    assert spent < 5.0, spent   # a hang guard on CPU time, not a timing: linear is milliseconds
