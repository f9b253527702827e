"""`moeconsole lint` on ms-swift recipes: flags against the targeted version, replacements,
`--fix`, the run's arithmetic, and a missing executable (warning in lint, error in run)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from runner.recipes import recipe as recipes
from runner.recipes.lint import lint_recipe

REPO = Path(__file__).resolve().parents[2]
RECIPES = {"4.6": REPO / "recipes" / "qwen3.5-397b-a17b-8xh200-swift4.6.yaml",
           "4.2": REPO / "recipes" / "qwen3.5-397b-a17b-8xh200-swift4.2.yaml"}

# The shape of the record's command line (ms-swift 3.x-era names on `swift sft`).
RECORD = ["swift", "sft", "--use_megatron", "true", "--megatron_use_mcore", "true",
          "--model", "Qwen/Qwen3.5-397B-A17B", "--dataset", "/data/sft.jsonl",
          "--train_type", "lora", "--lora_target_modules", "all-linear", "--lora_rank", "8", "--lora_alpha", "32",
          "--expert_model_parallel_size", "8", "--train_iters", "4473", "--log_interval", "1",
          "--save", "/ckpt/out", "--save_interval", "100", "--load", "/ckpt/out", "--num_workers", "4",
          "--save_safetensors", "true", "--no_save_optim", "true", "--merge_lora", "false"]


def cli(*args, cwd=REPO):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "console.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def write(tmp_path, fname="r.yaml", **raw):
    p = tmp_path / fname
    p.write_text(yaml.safe_dump(raw, sort_keys=False))
    return p


def lint(tmp_path, command, **extra):
    raw = {"name": "t", "command": command, "checkpoints": {"dir": "/ckpt/out"},
           "resume": {"args": ["--adapters", "{checkpoint}", "--finetune", "false"]}, **extra}
    return lint_recipe(recipes.load(write(tmp_path, **raw)))


def by_rule(problems, rule):
    return [p for p in problems if p["rule"] == rule]


@pytest.mark.parametrize("version", ["4.2.0", "4.6.0"])
def test_record_command_names_each_missing_flag_and_its_replacement(tmp_path, version):
    probs = lint(tmp_path, RECORD, swift={"version": version}, resume={"arg": "--load"})
    msgs = {p["message"].split(":")[0].split(" ")[0]: p for p in probs if p["rule"].startswith("swift_")}
    expect = {"--train_type": "--tuner_type", "--lora_target_modules": "--target_modules",
              "--log_interval": "--logging_steps", "--save_interval": "--save_steps",
              "--num_workers": "--dataloader_num_workers", "--save": "--output_dir",
              "--megatron_use_mcore": "drop it", "--load": "resume.args"}
    for flag, fix in expect.items():
        assert flag in msgs, f"{flag} not reported: {probs}"
        assert msgs[flag]["level"] == "error" and fix in msgs[flag]["message"], msgs[flag]
        assert f"ms-swift {version}" in msgs[flag]["message"]
    assert "ambiguous" in msgs["--save"]["message"] and "argparse exits 2" in msgs["--save"]["message"]
    use = msgs["--use_megatron"]
    if version == "4.6.0":   # a unique prefix of --use_megatron_fsdp on 4.6's megatron sft: taken silently
        assert use["rule"] == "swift_abbreviated_flag" and "--use_megatron_fsdp" in use["message"]
    else:
        assert use["rule"] == "swift_unknown_flag"
    assert by_rule(probs, "swift_megatron_entry_point")
    assert f"checked against the ms-swift {version} flag table as `megatron sft`" in \
        by_rule(probs, "swift_checked_with")[0]["message"]


def test_lint_fix_writes_a_recipe_that_lints_clean(tmp_path):
    raw = {"name": "record", "command": RECORD, "checkpoints": {"dir": "/ckpt/out"}, "resume": {"arg": "--load"},
           "swift": {"version": "4.6.0"}}
    p = tmp_path / "record.yaml"
    p.write_text("# my comment\n" + yaml.safe_dump(raw, sort_keys=False))
    before = cli("lint", str(p))
    assert before.returncode == 1 and "error(s)" in before.stdout
    fixed = cli("lint", "--fix", str(p))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "0 error(s)" in fixed.stdout and "fixed: --train_type -> --tuner_type" in fixed.stderr
    assert (tmp_path / "record.yaml.bak").read_text().startswith("# my comment")
    text = p.read_text()
    assert text.startswith("# my comment\n# Corrected by `moeconsole lint --fix`")
    r = recipes.load(p)
    cmd = r["command"]
    assert cmd[:2] == ["megatron", "sft"]
    for gone in ("--use_megatron", "--megatron_use_mcore", "--train_type", "--save", "--load", "--log_interval"):
        assert gone not in cmd
    assert cmd[cmd.index("--output_dir") + 1] == "/ckpt/out" and cmd[cmd.index("--save_steps") + 1] == "100"
    assert r["resume"]["args"][:2] == ["--adapters", "{checkpoint}"] and r["resume"]["arg"] is None


@pytest.mark.parametrize("version", ["4.6", "4.2"])
def test_shipped_397b_recipes_lint_without_errors_and_name_their_version(version):
    proc = cli("lint", "--json", str(RECIPES[version]))
    import json
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and proc.returncode == 0, doc["problems"]
    r = recipes.load(RECIPES[version])
    assert r["swift"]["version"].startswith(version)
    checked = [p["message"] for p in doc["problems"] if p["rule"] in ("swift_checked_with", "swift_parser_unavailable")]
    assert any(f"ms-swift {version}" in m for m in checked), checked
    cmd = r["command"]
    got = {cmd[i]: cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i].startswith("--")}
    assert got["--expert_model_parallel_size"] == "8" and got["--max_length"] == "2048"
    assert got["--packing"] == "true" and got["--optimizer_cpu_offload"] == "true"
    assert got["--recompute_granularity"] == "full" and got["--train_iters"] == "4473"
    assert r["gpus"]["memory_capacity_gib"] == 141.1 and r["kill"]["grace_s"] == 90
    assert r["restart"]["backoff_initial_s"] == 90 and r["cost_per_hour"]
    assert "{checkpoint}" in " ".join(r["resume"]["args"])
    merged = [p for p in doc["problems"] if p["rule"] == "swift_merged_save_disk"]
    assert bool(merged) == (version == "4.2")      # 4.2 merges (~0.8 TB/save); 4.6 saves the adapter


def test_missing_executable_is_a_warning_in_lint_and_an_error_in_run(tmp_path):
    p = write(tmp_path, fname="m.yaml", **{"name": "m", "command": ["/nonexistent/megatron", "sft", "--tuner_type", "lora"]})
    out = cli("lint", str(p))
    assert out.returncode == 0 and "warning executable_missing" in out.stdout
    runs = tmp_path / "runs"
    run = cli("run", str(p), "--detach", "--runs-dir", str(runs))
    assert run.returncode == 1 and "lint error: executable_missing" in run.stderr and "nothing launched" in run.stderr
    assert not runs.exists() or not any(runs.iterdir())


def test_arithmetic_rules_give_numbers(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n" * 1000)
    base = ["megatron", "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--dataset", str(data), "--tuner_type", "lora"]
    probs = lint(tmp_path, base + ["--train_iters", "300", "--lr_warmup_iters", "500", "--num_train_epochs", "2",
                                   "--global_batch_size", "16", "--sequence_parallel", "true",
                                   "--max_length", "8192", "--merge_lora", "false"],
                 swift={"version": "4.6.0", "validated_max_length": 2048}, gpus={"memory_capacity_gib": 141.1})
    warm = by_rule(probs, "swift_warmup_too_long")[0]
    assert warm["level"] == "error" and "500" in warm["message"] and "300" in warm["message"]
    steps = by_rule(probs, "swift_steps_unreachable")[0]
    assert "2 epoch(s) of 1,000 samples at global batch 16 give at most 126 iterations" in steps["message"]
    assert "tensor_model_parallel_size 1" in by_rule(probs, "swift_sp_without_tp")[0]["message"]
    env = by_rule(probs, "swift_length_over_envelope")[0]["message"]
    assert "8192 > 2048" in env and "141.1 GiB" in env
    assert not by_rule(probs, "swift_merged_save_disk")


def test_merged_save_disk_cost(tmp_path):
    base = ["megatron", "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--tuner_type", "lora", "--train_iters", "1000",
            "--save_steps", "100", "--output_dir", str(tmp_path)]
    (p,) = by_rule(lint(tmp_path, base, swift={"version": "4.6.0"}), "swift_merged_save_disk")
    assert "merge_lora not given: it follows save_safetensors" in p["message"]
    assert "~794 GB each" in p["message"] and "10 kept (no save_total_limit) = ~7.9 TB" in p["message"]
    assert p["level"] == "warning" and "free here" in p["message"]
    assert not by_rule(lint(tmp_path, base + ["--merge_lora", "false"], swift={"version": "4.6.0"}),
                       "swift_merged_save_disk")


def test_all_linear_misses_fused_experts_only_on_the_hf_path(tmp_path):
    hf = ["swift", "sft", "--model", "Qwen/Qwen3-30B-A3B", "--tuner_type", "lora", "--target_modules", "all-linear"]
    (p,) = by_rule(lint(tmp_path, hf, swift={"version": "4.6.0"}), "swift_all_linear_misses_experts")
    assert "--target_parameters mlp.experts.gate_up_proj mlp.experts.down_proj" in p["message"]
    assert not by_rule(lint(tmp_path, hf + ["--target_parameters", "mlp.experts.gate_up_proj"],
                            swift={"version": "4.6.0"}), "swift_all_linear_misses_experts")
    mg = ["megatron", "sft", "--model", "Qwen/Qwen3-30B-A3B", "--tuner_type", "lora", "--target_modules", "all-linear"]
    assert not by_rule(lint(tmp_path, mg, swift={"version": "4.6.0"}), "swift_all_linear_misses_experts")


def test_stub_trap_follows_the_targeted_version(tmp_path):
    cmd = ["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--no_save_optim", "true"]
    assert by_rule(lint(tmp_path, cmd, swift={"version": "4.2.0"}), "swift_megatron_stub_trap")
    assert not by_rule(lint(tmp_path, cmd, swift={"version": "4.6.0"}), "swift_megatron_stub_trap")
