"""The crash mix of the `megatron sft` double (FAKE_FAULTS) and the pure parts of the campaign's
day replay (scripts/campaign_day.py: the seeded schedule, the resume points, the step-range and
flatness checks). The replay itself runs in the campaign only (`scripts/campaign.py --part day`)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import campaign_day as day  # noqa: E402

FAKE = REPO / "tests" / "fakes" / "megatron"


def fake(tmp_path: Path, faults: str, attempt: str | None = None) -> subprocess.CompletedProcess:
    data = tmp_path / "d.jsonl"
    data.write_text('{"messages": []}\n' * 16)
    env = {**os.environ, "FAKE_STEP_S": "0", "OMP_NUM_THREADS": "1", "FAKE_FAULTS": faults}
    env.pop("MOECONSOLE_ATTEMPT", None)
    if attempt:
        env["MOECONSOLE_ATTEMPT"] = attempt
    return subprocess.run([sys.executable, str(FAKE), "sft", "--model", "M", "--dataset", str(data), "--tuner_type",
                           "lora", "--output_dir", str(tmp_path / "o"), "--train_iters", "6", "--save_steps", "2",
                           "--logging_steps", "1", "--merge_lora", "false", "--save_safetensors", "true",
                           "--no_save_optim", "true"], capture_output=True, text=True, timeout=120, env=env)


def iterations(tmp_path: Path) -> list[int]:
    (log,) = sorted((tmp_path / "o").glob("v*-*/logging.jsonl"))[-1:]
    return [int(r["iteration"].split("/")[0]) for r in map(json.loads, log.read_text().splitlines()) if "iteration" in r]


def test_oom_is_a_traceback_from_flas_backward_and_exit_1(tmp_path):
    out = fake(tmp_path, "oom@3")
    assert out.returncode == 1
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 266.00 MiB." in out.stderr
    assert "in chunk_gated_delta_rule_bwd" in out.stderr and "Traceback (most recent call last)" in out.stderr
    assert iterations(tmp_path) == [1, 2]            # iteration 3 never completed


def test_nccl_watchdog_text_then_sigabrt(tmp_path):
    out = fake(tmp_path, "nccl@3")
    # the trainer child died of SIGABRT; ms-swift's cli_main exits with its status (sys.exit(-6))
    assert out.returncode == (-signal.SIGABRT) & 0xFF
    assert "Watchdog caught collective operation timeout: WorkNCCL(" in out.stderr
    assert "terminate called after throwing an instance of 'c10::DistBackendError'" in out.stderr
    assert iterations(tmp_path) == [1, 2]


def test_stub_save_says_saved_and_holds_no_tensors(tmp_path):
    out = fake(tmp_path, "stub@4")
    assert out.returncode == 0, out.stderr[-2000:]
    (ck,) = (tmp_path / "o").glob("v0-*/checkpoint-4")
    assert (ck / "adapter_model.safetensors").stat().st_size == 39 * 1024
    assert f"Successfully saved `safetensors` model weights in `{ck}`." in out.stderr
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    verdicts = {}
    for step in (2, 4):
        v = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "verify", str(ck.parent / f"checkpoint-{step}"),
                            "--json"], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
        verdicts[step] = v.stdout
    assert "empty_stub" in verdicts[4] and "empty_stub" not in verdicts[2]


def test_a_fault_fires_only_in_its_attempt(tmp_path):
    assert fake(tmp_path, "oom@3#2").returncode == 0                 # attempt 1 (no MOECONSOLE_ATTEMPT)
    assert fake(tmp_path, "oom@3#2", attempt="2").returncode == 1


def test_a_bad_schedule_is_one_line_and_exit_2(tmp_path):
    for bad in ("segv@3", "oom"):
        out = fake(tmp_path, bad)
        assert out.returncode == 2 and "Traceback" not in out.stderr
        assert out.stderr.strip().splitlines()[-1].startswith("fake megatron: invalid")


@pytest.mark.parametrize("seed", range(40))
def test_the_schedule_is_the_record_mix_bound_to_attempts(seed):
    faults = day.schedule(seed)
    assert day.schedule(seed) == faults                              # the seed reproduces it
    assert sorted(f.kind for f in faults) == sorted([*day.CRASH_KINDS, day.STUB])
    assert [f.step for f in faults] == sorted(f.step for f in faults) and faults[-1].step < day.RECORD_STEPS
    assert [f.attempt for f in faults if f.kind != day.STUB] == [1, 2, 3, 4]
    (stub,) = [f for f in faults if f.kind == day.STUB]
    after = faults[faults.index(stub) + 1]                           # the crash right after the stub
    assert after.kind != day.STUB and stub.step < after.step < stub.step + day.SAVE_STEPS
    assert after.attempt == stub.attempt
    resumes = day.expected_resumes(faults)
    assert resumes[after.attempt + 1] == stub.step - day.SAVE_STEPS  # never the stub
    assert sorted(resumes) == [1, 2, 3, 4, 5]
    # the outside kill lands when it is seen: a few steps late, past a save, resumes from that save
    (kill,) = [f for f in faults if f.kind == "sigkill"]
    landed = kill.step // 100 * 100 + 105
    late = day.expected_resumes(faults, landed={kill.attempt: landed})
    want = landed // 100 * 100
    assert late[kill.attempt + 1] == (want - 100 if want == stub.step else want)


def test_trained_twice_finds_repeats_gaps_and_a_short_end():
    resumed = {1: 0, 2: 100}
    good = {1: list(range(1, 150)), 2: list(range(101, 301))}
    assert day.trained_twice(good, resumed, 300) == []
    assert day.redone(good, resumed) == 49
    before = {1: list(range(1, 150)), 2: list(range(90, 301))}       # re-trained steps 90-100
    assert "attempt 2" in day.trained_twice(before, resumed, 300)[0]
    twice = {1: list(range(1, 150)), 2: [*range(101, 201), 150, *range(201, 301)]}
    assert "repeated [150]" in day.trained_twice(twice, resumed, 300)[0]
    gap = {1: list(range(1, 150)), 2: [*range(101, 200), *range(201, 301)]}
    assert day.trained_twice(gap, resumed, 300)
    assert day.trained_twice({1: list(range(1, 150)), 2: list(range(101, 250))}, resumed, 300)


def test_flat_allows_noise_and_finds_growth():
    noise = [day.Sample(i, 50_000 + (i % 7) * 300, 10 + i % 3, 2) for i in range(400)]
    assert day.flat(noise).ok, day.flat(noise).detail
    leak = [day.Sample(i, 50_000 + i * 40, 10, 2) for i in range(400)]     # 40 KiB per sample
    assert not day.flat(leak).ok and "rss_kib" in day.flat(leak).detail
    fds = [day.Sample(i, 50_000, 10 + i // 50, 2) for i in range(400)]
    assert not day.flat(fds).ok and "fds" in day.flat(fds).detail
    assert not day.flat(noise[:5]).ok
    # a warm-up of 4 MiB in the first tenth, flat after: flat
    warm = [day.Sample(i, 50_000 + min(i, 40) * 100 + (i % 5) * 200, 10, 2) for i in range(400)]
    assert day.flat(warm).ok, day.flat(warm).detail
    # 1 KiB per step after the first quarter (the day's 4,740 steps over 400 samples: 12 a sample):
    # within the first-quarter margin, caught after the warm-up
    slow = [day.Sample(i, 50_000 + max(0, i - 100) * 12, 10, 2) for i in range(400)]
    assert not day.flat(slow).ok and "after the warm-up" in day.flat(slow).detail
