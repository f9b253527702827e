"""Every recipe value the runner cannot use is refused before anything starts: through the real
CLI, one line on stderr naming the place (or the --set that gave it), exit 2, no run created."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]
BASE = {"name": "t", "command": ["{python}", "-m", "moeconsole.runner.demo.train", "--max_steps", "3"]}


def _cli(runs_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    extra = ["--runs-dir", str(runs_dir)] if args[0] in ("run", "demo", "--json") else []
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, *extra], capture_output=True, text=True,
                          timeout=120, env=env, cwd=REPO)


def _recipe(tmp_path: Path, **over) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({**BASE, **over}))
    return path


def _refused(proc: subprocess.CompletedProcess, runs_dir: Path, *needles: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert not runs_dir.exists() or not [p for p in runs_dir.iterdir() if p.is_dir()]


@pytest.mark.parametrize("over, needles", [
    ({"kill": {"grace_s": float("nan")}}, ["kill.grace_s", "finite"]),
    ({"kill": {"grace_s": -1}}, ["kill.grace_s", ">= 0"]),
    ({"heartbeat": {"timeout_s": -5}}, ["heartbeat.timeout_s", "> 0"]),
    ({"heartbeat": {"timeout_s": float("inf")}}, ["heartbeat.timeout_s", "finite"]),
    ({"cooldown": {"poll_s": 0}}, ["cooldown.poll_s", "> 0"]),
    ({"cooldown": {"floor_s": 30, "ceiling_s": 10}}, ["cooldown.ceiling_s", ">= cooldown.floor_s"]),
    ({"preflight": {"port": -1}}, ["preflight.port", "1..65535"]),
    ({"preflight": {"port": 70000}}, ["preflight.port"]),
    ({"command": ["python", "-c", "print(1)\0"]}, ["command[2]", "NUL"]),
    ({"env": {"A=B": "x"}}, ["env.A=B", "'='"]),
    ({"env": {"X": "a\0b"}}, ["env.X", "NUL"]),
    ({"gpus": {"devices": [0, 0]}}, ["gpus.devices", "distinct"]),
    ({"cost_per_hour": float("nan")}, ["cost_per_hour", "finite"]),
    ({"name": "../evil"}, ["name"]),
    ({"resume": {"arg": "resume_from"}}, ["resume.arg", "flag"]),
    ({"cooldwn": {"floor_s": 1}}, ["cooldwn", "did you mean cooldown"]),
    ({"kill": {"grace": 3}}, ["kill.grace", "did you mean grace_s"]),
    ({"command": ["{python}", "-m", "moeconsole.runner.demo.train", "--fault", "oom40"]}, ["args.fault", "oom40"]),
])
def test_unusable_values_refused_by_run_and_lint(tmp_path, over, needles):
    runs = tmp_path / "runs"
    path = _recipe(tmp_path, **over)
    _refused(_cli(runs, "run", str(path), "--detach"), runs, str(path), *needles)
    _refused(_cli(runs, "lint", str(path)), runs, *needles)


@pytest.mark.parametrize("sets, needles", [
    (["args.fault=oom40"], ["--set args.fault=oom40", "expected KIND@STEP"]),
    (["args.fault=boom@3"], ["--set args.fault=boom@3", "unknown kind"]),
    (["kill.grace_s=.nan"], ["--set kill.grace_s=.nan", "finite"]),
    (["kill.grace_s=soon"], ["--set kill.grace_s=soon", "expected a number"]),
    (["kill.grace=3"], ["--set kill.grace=3", "did you mean kill.grace_s"]),
    (["cooldwn.floor_s=1"], ["unknown key 'cooldwn'", "did you mean cooldown"]),
    (["restart.max_restart=3"], ["did you mean restart.max_restarts"]),
    (["kill.grace_s=3", "kill.grace_s=5"], ["--set kill.grace_s: given twice", "'3' and '5'"]),
    (["preflight.port=0"], ["--set preflight.port=0", "1..65535"]),
    (["kill=3"], ["kill is a section"]),
])
def test_set_is_checked_against_the_schema(tmp_path, sets, needles):
    runs = tmp_path / "runs"
    path = _recipe(tmp_path)
    args = [a for s in sets for a in ("--set", s)]
    _refused(_cli(runs, "run", str(path), "--detach", *args), runs, *needles)


def test_a_flag_of_the_command_set_without_args_names_args(tmp_path):
    """`demo --set max_steps=100` (the flag the demo's command has, without `args.`) listed every
    recipe key: the line names the key meant."""
    runs = tmp_path / "runs"
    _refused(_cli(runs, "demo", "--detach", "--set", "max_steps=100"), runs,
             "--set max_steps=100: unknown key 'max_steps' (did you mean args.max_steps? "
             "args.NAME=VALUE sets the command's --NAME)")


def test_demo_with_a_bad_fault_starts_nothing(tmp_path):
    runs = tmp_path / "runs"
    _refused(_cli(runs, "demo", "--detach", "--set", "args.fault=oom40"), runs, "--set args.fault=oom40")


def test_recipe_yaml_keeps_no_argv_secret_and_the_training_still_gets_it(tmp_path):
    token = "hf_ArgvSecretValue0123456789abcdef"
    env_secret = "s3cr3t-env-value-42"
    out = tmp_path / "seen.json"
    code = ("import json, os, sys; print('token is', sys.argv[-1], 'env', os.environ['WANDB_API_KEY'], flush=True);"
            f"json.dump(sys.argv[1:], open({str(out)!r}, 'w'))")
    path = _recipe(tmp_path, command=["{python}", "-c", code, "--hub_token", token],
                   env={"WANDB_API_KEY": env_secret}, restart={"max_restarts": 0},
                   cooldown={"floor_s": 0, "ceiling_s": 5, "poll_s": 0.05},
                   lint={"ignore": ["secret_in_argv"]})   # a user who insists: still never written
    runs = tmp_path / "runs"
    proc = _cli(runs, "run", str(path), "--detach")
    assert proc.returncode == 0, proc.stderr
    run_dir = runs / proc.stdout.strip().splitlines()[0]
    until(lambda: json.loads((run_dir / "state.json").read_text()).get("status") in ("succeeded", "failed"),
          timeout=120, what="the run's end")
    assert json.loads(out.read_text()) == ["--hub_token", token]          # the training got the real value
    for name in ("recipe.yaml", "state.json", "events.jsonl"):
        text = (run_dir / name).read_text()
        assert token not in text and env_secret not in text, name
    assert "<redacted>" in (run_dir / "recipe.yaml").read_text()
    snap = _cli(runs, "--json", run_dir.name, "--once", "--no-gpu")
    assert snap.returncode == 0 and token not in snap.stdout and env_secret not in snap.stdout
    assert any("token is ***" in line for line in json.loads(snap.stdout)["log_tail"])


@pytest.mark.parametrize("command, plain, resume, said", [
    (["python", "pretrain_gpt.py", "--finetune", "--load", "/pre", "--save", "{run_dir}/save"],
     ["python", "pretrain_gpt.py", "--load", "/pre", "--save", "{run_dir}/save"],
     {"args": ["--load", "{checkpoint}/..", "--ckpt-step", "{step}"]}, "--finetune"),
    (["swift", "sft", "--model", "m", "--resume_only_model", "true", "--ignore_data_skip", "true"],
     ["swift", "sft", "--model", "m", "--resume_only_model", "true"],
     {"arg": "--resume_from_checkpoint"}, "--resume_only_model with --ignore_data_skip"),
])
def test_lint_says_when_a_resumed_attempt_counts_from_step_1_again(tmp_path, command, plain, resume, said):
    """What a resumed attempt runs (recipe.attempt_argv) asked of the one rule
    (step_count.restarts_step_count): the user learns before the run that its resumed attempts'
    steps are their own; a resume that goes on from the checkpoint's step says nothing."""
    path = _recipe(tmp_path, command=command, resume=resume, checkpoints={"dir": "{run_dir}/save"})
    proc = _cli(tmp_path, "lint", str(path), "--json")
    rules = {p["rule"]: p for p in json.loads(proc.stdout)["problems"]}
    assert rules["resume_counts_from_step_1"]["level"] == "info" and said in rules["resume_counts_from_step_1"]["message"]
    path = _recipe(tmp_path, command=plain, resume=resume, checkpoints={"dir": "{run_dir}/save"})
    proc = _cli(tmp_path, "lint", str(path), "--json")
    assert "resume_counts_from_step_1" not in {p["rule"] for p in json.loads(proc.stdout)["problems"]}


def test_a_resume_mode_set_in_an_ms_swift_config_file_is_seen(tmp_path):
    """`swift sft train.yaml` with resume_only_model and ignore_data_skip in the file: ms-swift
    splices the file's keys in as flags (swift/cli/main.py ``parse_yaml_args``), so its resumed
    attempts count from step 1 again just as with the flags typed; the rule reads the argv the
    trainer parses (``swift_flags.trainer_argv``), for lint and for the runner's resume step."""
    from moeconsole.runner.recipes.step_count import count_start
    from moeconsole.runner.recipes.swift.flags import trainer_argv

    (tmp_path / "train.yaml").write_text("model: m\nresume_only_model: true\nignore_data_skip: true\n")
    command = ["swift", "sft", "{recipe_dir}/train.yaml"]
    path = _recipe(tmp_path, command=command, resume={"arg": "--resume_from_checkpoint"},
                   checkpoints={"dir": "{run_dir}/save"})
    proc = _cli(tmp_path, "lint", str(path), "--json")
    rules = {p["rule"]: p for p in json.loads(proc.stdout)["problems"]}
    assert "--resume_only_model with --ignore_data_skip" in rules["resume_counts_from_step_1"]["message"]
    argv = ["swift", "sft", str(tmp_path / "train.yaml"), "--resume_from_checkpoint", "/o/checkpoint-16"]
    assert count_start(trainer_argv(argv, str(tmp_path)), "/o/checkpoint-16") == 0
    (tmp_path / "train.yaml").write_text("model: m\nresume_only_model: true\n")
    assert count_start(trainer_argv(argv, str(tmp_path)), "/o/checkpoint-16") == 16


def test_a_set_value_held_as_escapes_is_refused_with_the_locale_to_change():
    """Under an ASCII locale (LC_ALL=C, PYTHONUTF8=0) a UTF-8 `--set` value reaches Python as lone
    surrogates: it had been accepted and written into recipe.yaml as escapes (`"caf\\uDCC3\\uDCA9"`,
    an output_dir the training could not even be given). One line names the setting to change."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.recipes.recipe import apply_overrides
    with pytest.raises(InputError, match="PYTHONUTF8=1"):
        apply_overrides({"name": "x", "command": ["true"]}, ["name=caf\udcc3\udca9"])
    with pytest.raises(InputError, match="not UTF-8|PYTHONUTF8"):
        apply_overrides({"name": "x", "command": ["true"]}, ["name=caf\udce9"])
    assert apply_overrides({"name": "x", "command": ["true"]}, ["name=café"])["name"] == "café"
