"""`swift sft --packing true` (or `--padding_free true`) without a flash attention implementation,
and `swift rlhf` padding-free for a mode that has none: ms-swift 4.6 refuses both at start-up
(SftArguments._check_padding_free, swift/arguments/sft_args.py l.186-197; RLHFArguments'
override, rlhf_args.py l.709-716), after loading for a while on a cluster. `lint` said 0 errors
(its probe never builds the arguments), and `run` launched it. Now both say ms-swift's own words
before anything starts: checked here against the real ms-swift's refusal of the same command."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.swift.swift_helpers import RECIPE, REPO, SWIFT_EXE, TIMEOUT, cli, require_swift

NO_DATASET = "(no --dataset)"   # the case's command without the recipe's --dataset

CASES = {
    "sft packing": ("sft", ["--packing", "true"]),
    "rlhf rm padding_free with flash_attn": ("rlhf", ["--rlhf_type", "rm", "--padding_free", "true",
                                                      "--attn_impl", "flash_attn"]),
    "sft lazy_tokenize with packing": ("sft", ["--lazy_tokenize", "true", "--packing", "true"]),
    "sft without a dataset": ("sft", [NO_DATASET]),
    "sft fsdp2 preset with save_only_model": ("sft", ["--fsdp", "fsdp2", "--save_only_model", "true"]),
    "rlhf grpo truncation right": ("rlhf", ["--rlhf_type", "grpo", "--truncation_strategy", "right"]),
    "rlhf grpo use_vllm without vllm_mode": ("rlhf", ["--rlhf_type", "grpo", "--use_vllm", "true"]),
    "rlhf grpo one generation": ("rlhf", ["--rlhf_type", "grpo", "--num_generations", "1"]),
}


def without_dataset(argv: list[str], extra: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` less its ``--dataset VALUE`` where ``extra`` asks for it, and ``extra`` less the ask."""
    if NO_DATASET not in extra:
        return argv, extra
    i = argv.index("--dataset")
    return argv[:i] + argv[i + 2:], [e for e in extra if e != NO_DATASET]


def swift_refusal(tiny: Path, sub: str, extra: list[str], out: Path) -> str:
    """The last exception line of the real `swift SUB` with ``extra`` (it stops in its arguments)."""
    argv = [str(SWIFT_EXE), sub, "--model", str(tiny / "model"), "--dataset", str(tiny / "data.jsonl"),
            "--template", "qwen3_nothinking", "--check_model", "false", *extra, "--output_dir", str(out)]
    argv, _ = without_dataset(argv, extra)
    argv = [a for a in argv if a != NO_DATASET]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, start_new_session=True)
    try:
        text, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode != 0, text[-2000:]
    return [line for line in text.splitlines() if line.startswith(("ValueError: ", "NotImplementedError: "))][-1]


def recipe_with(tmp_path: Path, sub: str, extra: list[str]) -> Path:
    recipe = yaml.safe_load(RECIPE.read_text())
    command = [str(c).replace("{recipe_dir}", str(RECIPE.parent)) for c in recipe["command"]]
    command[1] = sub
    command, extra = without_dataset(command, extra)
    recipe["command"] = command + extra
    recipe["swift"]["python"] = str(RECIPE.parent / ".." / ".venv-swift" / "bin" / "python")
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_lint_and_run_refuse_what_ms_swift_refuses_at_start_up_in_its_words(case, tiny, tmp_path):
    require_swift()
    sub, extra = CASES[case]
    refusal = swift_refusal(tiny, sub, extra, tmp_path / "swift-out")
    recipe = recipe_with(tmp_path, sub, extra)
    linted = cli(None, "lint", str(recipe))
    assert linted.returncode == 1, linted.stdout + linted.stderr
    # every start-up refusal lint finds, in ms-swift's order: the real run stops at the first (other
    # errors may come before them: GRPO's trainer needs msgspec, not installed in this ms-swift's venv)
    error = [line for line in linted.stdout.splitlines()
             if line.startswith("error") and "refuses this at start-up" in line][0]
    assert refusal in error and f"`swift {sub}` refuses this at start-up" in error, (refusal, error)
    runs = tmp_path / "runs"
    started = cli(runs, "run", str(recipe), "--detach")
    assert started.returncode == 1 and "nothing launched" in started.stderr, started.stderr
    assert refusal in started.stderr, started.stderr
    assert not runs.exists() or not any(runs.iterdir())
