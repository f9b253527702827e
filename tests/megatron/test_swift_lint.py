"""`moeconsole lint` on ms-swift recipes: flags against the targeted version, replacements,
`--fix`, the run's arithmetic, and a missing executable (warning in lint, error in run)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.recipes.lint import lint_recipe

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
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], capture_output=True, text=True,
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
    cmd = r.command
    assert cmd[:2] == ["megatron", "sft"]
    for gone in ("--use_megatron", "--megatron_use_mcore", "--train_type", "--save", "--load", "--log_interval"):
        assert gone not in cmd
    assert cmd[cmd.index("--output_dir") + 1] == "/ckpt/out" and cmd[cmd.index("--save_steps") + 1] == "100"
    assert (r.resume.args or [])[:2] == ["--adapters", "{checkpoint}"] and r.resume.arg is None


RECIPES["4.6-full-state"] = REPO / "recipes" / "qwen3.5-397b-a17b-8xh200-swift4.6-full-state.yaml"
RECORD_VALUES = {"--lora_rank": "32", "--lora_alpha": "64", "--recompute_num_layers": "3", "--global_batch_size": "8",
                 "--micro_batch_size": "1", "--lr": "2e-5", "--lr_warmup_fraction": "0.03", "--min_lr": "2e-6",
                 "--lr_decay_style": "cosine", "--num_train_epochs": "3", "--max_length": "2048", "--packing": "true",
                 "--padding_free": "true", "--expert_model_parallel_size": "8", "--optimizer_cpu_offload": "true",
                 "--optimizer_offload_fraction": "1", "--recompute_granularity": "full", "--save_steps": "100",
                 "--save_safetensors": "true", "--no_save_rng": "true", "--linear_decoupled_in_proj": "true"}


@pytest.mark.parametrize("version", ["4.6", "4.2", "4.6-full-state"])
def test_shipped_397b_recipes_carry_the_records_values_and_lint_without_errors(version):
    proc = cli("lint", "--json", str(RECIPES[version]))
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and proc.returncode == 0, doc["problems"]
    r = recipes.load(RECIPES[version])
    assert (r.swift.version or "").startswith(version[:3])
    checked = [p["message"] for p in doc["problems"] if p["rule"] in ("swift_checked_with", "swift_parser_unavailable")]
    assert any(f"ms-swift {version[:3]}" in m for m in checked), checked
    cmd = r.command
    got = {cmd[i]: cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i].startswith("--")}
    assert {k: got.get(k) for k in RECORD_VALUES} == RECORD_VALUES
    assert "--train_iters" not in got          # dead beside --num_train_epochs: ms-swift derives it
    assert r.swift.dataset_samples == 402000
    assert r.env["PYTORCH_ALLOC_CONF"] and "PYTORCH_CUDA_ALLOC_CONF" not in r.env   # the record's torch 2.9.1
    pins = r.swift.pins or {}
    assert pins["torch"] == "2.9.1" and pins["megatron-core"] == "0.16.1"
    assert pins["flash-linear-attention"] == "git:5aea42b"
    assert r.sync.dest and r.sync.keep_last >= 2                         # the record's EBS copies
    assert r.gpus.memory_capacity_gib == 141.1 and r.kill.grace_s == 90
    assert r.restart.backoff_initial_s == 90 and r.cost_per_hour
    assert "{checkpoint}" in " ".join(r.resume.args or [])
    rules = {p["rule"]: p for p in doc["problems"]}
    assert ("swift_merged_save_disk" in rules) == (version == "4.2")    # 4.2 merges (~0.8 TB/save)
    assert got["--merge_lora"] == ("true" if version == "4.2" else "false")
    if version == "4.6-full-state":
        assert got["--no_save_optim"] == "false" and (r.resume.args or [])[:2] == ["--mcore_adapter", "{checkpoint}"]
        assert "bytes per trainable parameter" in rules["swift_full_state_resume"]["message"]
        assert "swift_resume_restarts_schedule" not in rules
    else:
        warn = rules["swift_resume_restarts_schedule"]
        assert warn["level"] == "warning"
        # 3% of ~150,750 iterations (402,000 x 3 // 8 before packing) re-run at every resume.
        assert "~4,522 of ~150,750 iterations" in warn["message"], warn["message"]
        assert "--mcore_adapter {checkpoint} --finetune false" in warn["message"]    # 4.2 too (load_mcore_checkpoint)
        if version == "4.2":
            assert "a new LoRA starts on top of it" in warn["message"]


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
    probs = lint(tmp_path, base + ["--train_iters", "300", "--lr_warmup_iters", "500",
                                   "--global_batch_size", "16", "--sequence_parallel", "true",
                                   "--max_length", "8192", "--merge_lora", "false"],
                 swift={"version": "4.6.0", "validated_max_length": 2048}, gpus={"memory_capacity_gib": 141.1})
    warm = by_rule(probs, "swift_warmup_too_long")[0]
    assert warm["level"] == "error" and "500" in warm["message"] and "300" in warm["message"]
    assert "tensor_model_parallel_size 1" in by_rule(probs, "swift_sp_without_tp")[0]["message"]
    env = by_rule(probs, "swift_length_over_envelope")[0]["message"]
    assert "8192 > 2048" in env and "141.1 GiB" in env
    assert not by_rule(probs, "swift_merged_save_disk")


def test_train_iters_beside_num_train_epochs_is_dead(tmp_path):
    """MegatronArguments.init_iters replaces train_iters when num_train_epochs is set."""
    data = tmp_path / "d.jsonl"
    data.write_text("{}\n" * 1003)
    cmd = ["megatron", "sft", "--model", "M", "--dataset", str(data), "--tuner_type", "lora", "--train_iters", "300",
           "--num_train_epochs", "2", "--global_batch_size", "4", "--merge_lora", "false"]
    (w,) = by_rule(lint(tmp_path, cmd, swift={"version": "4.6.0"}), "swift_train_iters_ignored")
    assert w["level"] == "warning" and "--train_iters 300 is ignored" in w["message"]
    assert "~501 iterations (1,003 samples x 2 epoch(s) // global batch 4)" in w["message"], w["message"]
    # With the world size known, the dataset is cut to whole micro-batch x DP steps first (1,000 of 1,003).
    (w,) = by_rule(lint(tmp_path, cmd, swift={"version": "4.6.0"}, env={"NPROC_PER_NODE": "8"}),
                   "swift_train_iters_ignored")
    assert "~500 iterations" in w["message"], w["message"]
    assert not by_rule(lint(tmp_path, cmd[:-8] + cmd[-6:], swift={"version": "4.6.0"}), "swift_train_iters_ignored")


def test_save_total_limit_below_two_is_refused_like_ms_swift(tmp_path):
    cmd = ["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--merge_lora", "false"]
    (e,) = by_rule(lint(tmp_path, cmd + ["--save_total_limit", "1"], swift={"version": "4.2.0"}),
                   "swift_save_total_limit")
    assert e["level"] == "error" and "greater than or equal to 2" in e["message"]
    (e,) = by_rule(lint(tmp_path, cmd + ["--save_total_limit", "3", "--async_save", "true"],
                        swift={"version": "4.6.0"}), "swift_save_total_limit")
    assert "async_save" in e["message"]
    assert not by_rule(lint(tmp_path, cmd + ["--save_total_limit", "2"], swift={"version": "4.6.0"}),
                       "swift_save_total_limit")


@pytest.mark.parametrize("old,new", [("--learning_rate", "--lr"), ("--warmup_ratio", "--lr_warmup_fraction"),
                                     ("--warmup_steps", "--lr_warmup_iters")])
def test_transformers_names_on_the_megatron_path_name_their_replacement(tmp_path, old, new):
    cmd = ["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--merge_lora", "false", old, "0.1"]
    (e,) = by_rule(lint(tmp_path, cmd, swift={"version": "4.6.0"}), "swift_unknown_flag")
    assert e["message"].startswith(f"{old}: ms-swift 4.6.0 `megatron sft` has no such flag") and new in e["message"]
    raw = {"name": "r", "command": cmd, "checkpoints": {"dir": "/ckpt/out"}, "swift": {"version": "4.6.0"},
           "resume": {"args": ["--adapters", "{checkpoint}", "--finetune", "false"]}}
    p = write(tmp_path, **raw)
    fixed = cli("lint", "--fix", str(p))
    assert f"fixed: {old} -> {new}" in fixed.stderr, fixed.stderr
    assert recipes.load(p).command[-2:] == [new, "0.1"]


def test_a_bare_optional_bool_flag_is_an_error(tmp_path):
    """HfArgumentParser gives an Optional[bool] without default no nargs='?': argparse exits 2."""
    cmd = ["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--merge_lora", "--save_steps", "10"]
    (e,) = by_rule(lint(tmp_path, cmd, swift={"version": "4.6.0"}), "swift_bad_value")
    assert e["message"].startswith("--merge_lora needs a value") and "exits 2" in e["message"]
    # A plain bool (and an Optional[bool] with a default) takes the bare form.
    assert not by_rule(lint(tmp_path, cmd[:-3] + ["--merge_lora", "true", "--packing"], swift={"version": "4.6.0"}),
                       "swift_bad_value")


def test_merged_save_disk_cost(tmp_path):
    base = ["megatron", "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--tuner_type", "lora", "--train_iters", "1000",
            "--save_steps", "100", "--output_dir", str(tmp_path)]
    (p,) = by_rule(lint(tmp_path, base, swift={"version": "4.6.0"}), "swift_merged_save_disk")
    assert "merge_lora not given: it follows save_safetensors" in p["message"]
    assert "~794 GB each" in p["message"] and "11 saves, none removed (no save_total_limit) = ~8.7 TB" in p["message"]
    assert p["level"] == "warning" and "free here" in p["message"]
    assert not by_rule(lint(tmp_path, base + ["--merge_lora", "false"], swift={"version": "4.6.0"}),
                       "swift_merged_save_disk")


def test_merged_disk_counts_one_rotation_per_restart(tmp_path):
    """Each attempt writes into its own v<N>-<time>/: rotation never removes an earlier attempt's saves."""
    base = ["megatron", "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--tuner_type", "lora", "--train_iters", "4000",
            "--save_steps", "100", "--save_total_limit", "2", "--output_dir", str(tmp_path)]
    (p,) = by_rule(lint(tmp_path, base, swift={"version": "4.2.0"}, restart={"max_restarts": 5}),
                   "swift_merged_save_disk")
    assert "2 kept per output directory" in p["message"] and "with up to 5 restart(s)" in p["message"]
    assert "up to 13 saves on disk = ~10.3 TB" in p["message"], p["message"]
    (p,) = by_rule(lint(tmp_path, base + ["--add_version", "false"], swift={"version": "4.2.0"},
                        restart={"max_restarts": 5}), "swift_merged_save_disk")
    assert "3 on disk while the next is written = ~2.4 TB" in p["message"], p["message"]


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
    # Omitted, --merge_lora follows --save_safetensors on 4.2.0 too (megatron_args.py l.706-707): no trap.
    assert not by_rule(lint(tmp_path, cmd, swift={"version": "4.2.0"}), "swift_megatron_stub_trap")
    (w,) = by_rule(lint(tmp_path, cmd + ["--merge_lora", "false"], swift={"version": "4.2.0"}),
                   "swift_megatron_stub_trap")
    assert w["level"] == "warning" and "record" in w["message"]
    assert not by_rule(lint(tmp_path, cmd + ["--merge_lora", "false"], swift={"version": "4.6.0"}),
                       "swift_megatron_stub_trap")


def resume_lint(tmp_path, template, extra=(), version="4.6.0", **kw):
    cmd = ["megatron", "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--tuner_type", "lora", "--merge_lora", "false",
           "--num_train_epochs", "3", "--global_batch_size", "8", "--lr_warmup_fraction", "0.03", *extra]
    return lint(tmp_path, cmd, swift={"version": version, "dataset_samples": 402000}, resume={"args": template}, **kw)


def test_a_resume_that_restarts_the_schedule_says_so_with_the_warmup(tmp_path):
    probs = resume_lint(tmp_path, ["--adapters", "{checkpoint}", "--finetune", "false", "--no_load_optim", "true"])
    (w,) = by_rule(probs, "swift_resume_restarts_schedule")
    assert w["level"] == "warning" and "never load" in w["message"]
    assert "re-runs the warmup of 0.03 x lr_decay_iters (~4,522 of ~150,750 iterations" in w["message"], w["message"]
    assert "--no_load_optim/--no_load_rng change nothing here" in w["message"]
    assert "--mcore_adapter {checkpoint} --finetune false" in w["message"]
    probs = resume_lint(tmp_path, ["--adapters", "{checkpoint}", "--finetune", "false"], ["--lr_warmup_iters", "50"])
    assert "the 50-iteration warmup" not in by_rule(probs, "swift_resume_restarts_schedule")[0]["message"]  # fraction wins
    probs = lint(tmp_path, ["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--merge_lora", "false",
                            "--train_iters", "500", "--lr_warmup_iters", "50"], swift={"version": "4.6.0"})
    assert "re-runs the 50-iteration warmup" in by_rule(probs, "swift_resume_restarts_schedule")[0]["message"]


def test_the_42_route_starts_a_new_lora_on_the_merged_weights(tmp_path):
    probs = resume_lint(tmp_path, ["--model", "{checkpoint}-merged", "--finetune", "false"], version="4.2.0")
    (w,) = by_rule(probs, "swift_resume_restarts_schedule")
    assert "the merged model becomes the new base and a new LoRA starts on top of it" in w["message"]
    assert "On 4.2.0 the full-state resume keeps both" in w["message"]      # 4.2.0 has load_mcore_checkpoint too


def test_adapters_pointing_at_a_merged_model_is_an_error(tmp_path):
    probs = resume_lint(tmp_path, ["--adapters", "{checkpoint}-merged", "--finetune", "false"], version="4.2.0")
    (e,) = by_rule(probs, "swift_resume_merged_as_adapter")
    assert e["level"] == "error" and "full merged model" in e["message"]


def test_full_state_resume_needs_the_optimizer_saved_and_says_what_it_costs(tmp_path, monkeypatch):
    tpl = ["--mcore_adapter", "{checkpoint}", "--finetune", "false"]
    (e,) = by_rule(resume_lint(tmp_path, tpl, ["--no_save_optim", "true"]), "swift_resume_needs_mcore_state")
    assert e["level"] == "error" and "--no_save_optim false" in e["message"]
    probs = resume_lint(tmp_path, tpl, ["--no_save_optim", "false", "--lora_rank", "32", "--save_total_limit", "5"])
    (i,) = by_rule(probs, "swift_full_state_resume")
    assert "~14 bytes per trainable parameter" in i["message"] and "unknown here" in i["message"]
    assert not by_rule(probs, "swift_resume_restarts_schedule")
    # With the model's config.json on this machine (a Hugging Face cache), a number.
    snap = tmp_path / "hf" / "hub" / "models--Qwen--Qwen3.5-397B-A17B" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps({"text_config": {
        "hidden_size": 4096, "num_hidden_layers": 60, "num_experts": 512, "moe_intermediate_size": 1024,
        "shared_expert_intermediate_size": 1024, "num_attention_heads": 32, "num_key_value_heads": 2,
        "head_dim": 256, "vocab_size": 248320}}))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    probs = resume_lint(tmp_path, tpl, ["--no_save_optim", "false", "--lora_rank", "32", "--save_total_limit", "5"])
    (i,) = by_rule(probs, "swift_full_state_resume")
    # counted as Megatron builds the LoRA: one pair on the fused linear_qkv and linear_fc1
    assert "rank 32 on Qwen/Qwen3.5-397B-A17B trains ~11.14B parameters" in i["message"], i["message"]
    assert "~156 GB of optimizer state per save x 6 on disk while one is written = ~936 GB" in i["message"]


def test_resume_without_finetune_false_restarts_at_zero(tmp_path):
    """One cause, one finding: the error with its fix; the recipe check's info on resumed attempts
    counting from step 1 (resume_counts_from_step_1) does not say the same cause again."""
    probs = resume_lint(tmp_path, ["--adapters", "{checkpoint}"])
    (w,) = by_rule(probs, "swift_resume_from_zero")
    assert "iteration 0" in w["message"]
    assert [p["rule"] for p in probs if "--finetune false" in p["message"]] == ["swift_resume_from_zero"]


def test_a_resume_from_iteration_zero_is_said_once_and_never_dropped_unsaid(tmp_path):
    """The recipe check's info (resume_counts_from_step_1) gives way to swift_resume_from_zero,
    which names the same cause with its fix, only when that error is among the findings. Before,
    the info was dropped by its message text: a finding the user silenced (lint.ignore) left the
    recipe with nothing saying its resumed attempts count from iteration 1 again."""
    probs = resume_lint(tmp_path, ["--adapters", "{checkpoint}"], lint={"ignore": ["swift_resume_from_zero"]})
    assert not by_rule(probs, "swift_resume_from_zero")
    (i,) = by_rule(probs, "resume_counts_from_step_1")
    assert i["level"] == "info" and "without --finetune false" in i["message"], i["message"]
    probs = resume_lint(tmp_path, ["--adapters", "{checkpoint}"])
    assert by_rule(probs, "swift_resume_from_zero") and not by_rule(probs, "resume_counts_from_step_1")


@pytest.mark.parametrize("version", ["4.2.0", "4.6.0"])
def test_the_older_resume_arg_form_gets_the_same_resume_check(tmp_path, version):
    """`resume: {arg: --adapters}` resumes with `--adapters <ckpt>` alone: ms-swift restarts at
    iteration 0 (finetune defaults to true), every restart from iteration 1 again."""
    cmd = ["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--merge_lora", "false"]
    (e,) = by_rule(lint(tmp_path, cmd, swift={"version": version}, resume={"arg": "--adapters"}),
                   "swift_resume_from_zero")
    assert e["level"] == "error" and e["message"].startswith("resume.arg --adapters without --finetune false")
    assert "trainers/base.py _load_checkpoint" in e["message"]
    # the same rule as resume.args without --finetune false
    (e,) = by_rule(resume_lint(tmp_path, ["--adapters", "{checkpoint}"], version=version), "swift_resume_from_zero")
    assert e["level"] == "error" and e["message"].startswith("resume.args without --finetune false")


def test_lint_fix_on_the_records_literal_recipe_adds_finetune_false(tmp_path):
    """The record's command with the resume flag it names (`--adapters`): --fix rewrites the flags and
    turns `resume.arg` into `resume.args` with `--finetune false`, and the result lints clean."""
    raw = {"name": "record", "command": RECORD, "checkpoints": {"dir": "/ckpt/out"}, "resume": {"arg": "--adapters"},
           "swift": {"version": "4.6.0"}}
    p = write(tmp_path, "record.yaml", **raw)
    before = cli("lint", "--json", str(p))
    assert "swift_resume_from_zero" in {x["rule"] for x in json.loads(before.stdout)["problems"]}
    fixed = cli("lint", "--fix", str(p))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "--finetune false" in fixed.stderr and "0 error(s)" in fixed.stdout
    r = recipes.load(p)
    assert r.resume.args == ["--adapters", "{checkpoint}", "--finetune", "false"] and not r.resume.arg


def test_the_42_recipe_is_offered_the_full_state_resume():
    """4.2.0's load_mcore_checkpoint restores the optimizer and the scheduler through --mcore_adapter
    exactly as 4.6.0's does (utils/megatron_lm_utils.py l.362-458)."""
    proc = cli("lint", "--json", str(RECIPES["4.2"]))
    (w,) = by_rule(json.loads(proc.stdout)["problems"], "swift_resume_restarts_schedule")
    assert "On 4.2.0 the full-state resume keeps both (load_mcore_checkpoint, 4.2.0 utils/megatron_lm_utils.py " \
           "l.362-458)" in w["message"], w["message"]
    assert "--mcore_adapter {checkpoint} --finetune false" in w["message"]


@pytest.mark.parametrize("version", ["4.6", "4.2", "4.6-full-state"])
def test_the_397b_recipes_keep_the_records_moe_kernels(version):
    """`--moe_permute_fusion` is not in the record and no measured reason holds for it: the recipes keep
    ms-swift's default (false), and docs/megatron.md's record-vs-recipe table says why."""
    cmd = recipes.load(RECIPES[version]).command
    assert "--moe_permute_fusion" not in cmd
    table = (REPO / "docs" / "megatron.md").read_text()
    assert "| MoE kernels |" in table and "no `--moe_permute_fusion`" in table


def test_the_adapter_recipes_get_the_whole_runs_disk_estimate(tmp_path, monkeypatch):
    """The 4.6 adapter recipe had no estimate: ~22 GB of adapter per save (rank 32, 11.16B LoRA
    parameters in bf16), 5 kept per output directory x 21 v<N>-<time>/ directories (20 restarts) + 1;
    the full-state recipe adds ~156 GB of Megatron state per save: ~18.9 TB worst case."""
    got = {}
    for version in ("4.6", "4.6-full-state"):
        doc = json.loads(cli("lint", "--json", str(RECIPES[version])).stdout)
        (p,) = by_rule(doc["problems"], "swift_save_disk")
        got[version] = p["message"]
    assert "~22 GB adapter (11.16B LoRA parameters x 2 B) per save" in got["4.6"], got["4.6"]
    assert "up to 106 saves on disk = ~2.4 TB" in got["4.6"]
    assert "+ ~156 GB Megatron state for the full-state resume per save" in got["4.6-full-state"]
    assert "= ~18.9 TB" in got["4.6-full-state"]
    # against the free space of the output file system
    cmd = ["megatron", "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--tuner_type", "lora", "--merge_lora", "false",
           "--lora_rank", "32", "--train_iters", "1000", "--save_steps", "100", "--output_dir", str(tmp_path)]
    (p,) = by_rule(lint(tmp_path, cmd, swift={"version": "4.6.0"},
                        memory={"model_config": str(REPO / "recipes" / "models" / "qwen3.5-397b-a17b.config.json")}),
                   "swift_save_disk")
    assert "11 saves, none removed (no save_total_limit) = ~246 GB" in p["message"], p["message"]
    assert f"{tmp_path}" in p["message"] and "free here" in p["message"]


def test_a_resume_of_model_only_saves_on_the_hf_path_says_the_schedule_restarts(tmp_path):
    """transformers 5.19.0 trainer.py l.3864-3884 loads the optimizer and the scheduler only when
    optimizer.pt and scheduler.pt exist; `--save_only_model true` writes neither, so a
    `--resume_from_checkpoint` resume continues global_step with a fresh Adam and LR schedule."""
    hf = ["swift", "sft", "--model", "M", "--tuner_type", "lora", "--dataset", "d.jsonl", "--output_dir", "/ckpt/out"]
    resume = {"args": ["--resume_from_checkpoint", "{checkpoint}"]}
    (w,) = by_rule(lint(tmp_path, hf + ["--save_only_model", "true"], swift={"version": "4.6.0"}, resume=resume),
                   "swift_resume_restarts_schedule")
    assert w["level"] == "warning" and "--save_only_model true" in w["message"]
    assert "restarts Adam's moments and the LR schedule" in w["message"]
    for cmd in (hf, hf + ["--save_only_model", "false"]):
        assert not by_rule(lint(tmp_path, cmd, swift={"version": "4.6.0"}, resume=resume),
                           "swift_resume_restarts_schedule")


def test_a_megatron_command_without_a_flag_table_is_linted_without_a_traceback(tmp_path):
    """ms-swift 3.12 has no table: its values are untyped text, so the start-up checks (a release's,
    mirrored from MegatronArguments.__post_init__) cannot be applied; lint said nothing of that and
    stopped with ``TypeError: unsupported operand type(s) for %: 'int' and 'str'``."""
    r = write(tmp_path, name="old", env={"NPROC_PER_NODE": "8"}, swift={"version": "3.12"},
              command=["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--tensor_model_parallel_size", "2",
                       "--micro_batch_size", "1", "--global_batch_size", "8"])
    proc = cli("lint", str(r), "--json")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    rules = {p["rule"]: p["message"] for p in json.loads(proc.stdout)["problems"]}
    assert "no flag table for ms-swift 3.12" in rules["swift_no_flag_table"]


def test_a_swift_python_that_is_not_there_is_said_not_silently_replaced_by_the_table(tmp_path):
    """Newcomer round 14: `swift.python: /opt/swift/bin/pythn` (a typo) linted with only `checked against
    the ms-swift 4.6.0 flag table`, as if the recipe's training Python had been asked."""
    typo = str(tmp_path / "swift" / "bin" / "pythn")
    probs = lint(tmp_path, RECORD, swift={"version": "4.6.0", "python": typo})
    (absent,) = by_rule(probs, "swift_python_absent")
    assert absent["level"] == "info" and f"swift.python names {typo}, which is not on this machine" in absent["message"]
    assert "checked against the ms-swift 4.6.0 flag table" in by_rule(probs, "swift_checked_with")[0]["message"]
    # refusal: a recipe naming no training Python reads as before
    assert not by_rule(lint(tmp_path, RECORD, swift={"version": "4.6.0"}), "swift_python_absent")
