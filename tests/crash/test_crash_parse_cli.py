"""``moeconsole parse LOG --crash``: the runner's classifier (and its text normalisation) on a log's
last lines or a pasted crash text, as a user runs it: a real subprocess, its output and exit code."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PUBLIC = Path(__file__).resolve().parent / "public"


def parse_cli(*args: str, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", *args], cwd=REPO, input=stdin,
                          capture_output=True, timeout=timeout)


def test_crash_at_the_end_of_a_log_with_a_wrapped_phrase(tmp_path):
    log = tmp_path / "train.log"
    steps = [f"{{'loss': {2 - i / 100:.3f}, 'grad_norm': 0.9, 'learning_rate': 1e-05, 'epoch': 0.{i}}}" for i in range(50)]
    log.write_text("\n".join(steps + ["[rank3]: RuntimeError: CUDA error: an illegal memory access was",
                                      "encountered"]) + "\n")
    res = parse_cli(str(log), "--crash")
    assert res.returncode == 0, res.stderr
    out = res.stdout.decode()
    assert "crash class: cuda_fault (retryable, recovery restart_launch_blocking)" in out
    assert "an illegal memory access was encountered" in out


def test_a_pasted_crash_text_on_stdin_as_json():
    text = (PUBLIC / "055-jax-788-xla-oom-wrapped.txt").read_bytes()
    res = parse_cli("-", "--crash", "--json", stdin=text)
    assert res.returncode == 0, res.stderr
    verdict = json.loads(res.stdout)
    assert verdict["cls"] == "cuda_oom" and verdict["retryable"] is True


def test_a_one_line_paste_on_stdin_names_the_missing_module():
    one = (b'Traceback (most recent call last):   File "/opt/venv/lib/python3.11/site-packages/trl/cli.py", line 3, '
           b"in <module>     import deepspeed ModuleNotFoundError: No module named 'deepspeed'")
    res = parse_cli("-", "--crash", stdin=one)
    out = res.stdout.decode()
    assert res.returncode == 0 and "crash class: missing_dependency" in out and "'deepspeed'" in out


def test_bad_input_is_classified_without_a_traceback(tmp_path):
    log = tmp_path / "junk.log"
    log.write_bytes(b"x" * (10 * 1024 * 1024) + b"\n" + bytes(range(256)) * 100 + b"\n\xff\xfe\xc3\x28\x00\n"
                    + b"Segmentation fault (core dumped)\n")
    res = parse_cli(str(log), "--crash")
    assert res.returncode == 0, res.stderr
    assert b"Traceback" not in res.stderr
    assert "crash class: segfault" in res.stdout.decode()


def test_a_missing_file_is_one_line_and_exit_2(tmp_path):
    res = parse_cli(str(tmp_path / "nope.log"), "--crash")
    assert res.returncode == 2 and res.stdout == b""
    assert len(res.stderr.decode().strip().splitlines()) == 1 and b"nope.log" in res.stderr
    assert b"Traceback" not in res.stderr


def test_secrets_in_the_crash_text_are_masked(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.0\nRuntimeError: cannot reach the hub with HF_TOKEN=hf_SuperSecretValue1234567890\n")
    res = parse_cli(str(log), "--crash")
    assert res.returncode == 0, res.stderr
    assert b"hf_SuperSecretValue1234567890" not in res.stdout and b"HF_TOKEN" in res.stdout
