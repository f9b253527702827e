"""An ms-swift command that names a config file (``swift sft train.yaml``, ``megatron sft cfg.json``):
lint checks the arguments in it as ms-swift's entry point splices them in.

The entry point (swift/cli/main.py ``parse_yaml_args``, ms-swift 4.2.0 to 4.6.0, l.38-72 in 4.6.0)
reads a first argument ending in .json/.yaml/.yml: every key becomes ``--key`` and its value (a
list its items, a dict its JSON, else ``str``), in the file's place, so flags after it win; its
``ENV`` sets the variables not already set, and ``NPROC_PER_NODE`` there makes ``cli_main`` start
torchrun (l.30-35, l.74-98). Before, lint saw one positional argument and checked nothing.
"""
from __future__ import annotations

import json

import yaml

from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.recipes.lint import check_gpus, lint_recipe
from moeconsole.runner.recipes.memory_estimate import gpus_of_command


def write_recipe(tmp_path, command, **extra):
    p = tmp_path / "r.yaml"
    raw = {"name": "t", "command": command, "checkpoints": {"dir": "/ckpt/out"}, **extra}
    p.write_text(yaml.safe_dump(raw, sort_keys=False))
    return recipes.load(p)


def by_rule(problems, rule):
    return [p for p in problems if p["rule"] == rule]


def test_a_removed_flag_inside_the_config_file_is_the_error_ms_swift_stops_with(tmp_path):
    (tmp_path / "train.yaml").write_text(
        "model: Qwen/Qwen3-30B-A3B\ndataset: [/data/a.jsonl, /data/b.jsonl]\ntrain_type: lora\n"
        "lora_rank: 8\nmax_steps: 30\n")
    probs = lint_recipe(write_recipe(tmp_path, ["swift", "sft", "{recipe_dir}/train.yaml", "--lora_alpha", "32"],
                                     swift={"version": "4.6.0"}))
    (e,) = by_rule(probs, "swift_unknown_flag")
    assert e["level"] == "error" and e["message"].startswith("--train_type") and "--tuner_type" in e["message"]
    (info,) = by_rule(probs, "swift_config_file")
    assert f"{tmp_path}/train.yaml: 5 argument(s) checked" in info["message"]


def test_values_in_the_config_file_count_and_a_flag_after_it_wins(tmp_path):
    # megatron_args.py (4.6.0) refuses --save_total_limit below 2 at start-up; lint mirrors it
    (tmp_path / "cfg.json").write_text(json.dumps({"model": "M", "tuner_type": "lora", "merge_lora": False,
                                                   "save_total_limit": 1}))
    base = ["megatron", "sft", "{recipe_dir}/cfg.json"]
    (e,) = by_rule(lint_recipe(write_recipe(tmp_path, base, swift={"version": "4.6.0"})), "swift_save_total_limit")
    assert e["level"] == "error" and "greater than or equal to 2" in e["message"]
    later = write_recipe(tmp_path, [*base, "--save_total_limit", "3"], swift={"version": "4.6.0"})
    assert not by_rule(lint_recipe(later), "swift_save_total_limit")


def test_the_config_files_env_starts_torchrun_unless_the_environment_sets_it(tmp_path):
    (tmp_path / "train.yaml").write_text("model: M\nENV:\n  NPROC_PER_NODE: 4\n  MASTER_PORT: 29501\n")
    cmd = ["swift", "sft", "{recipe_dir}/train.yaml"]
    r = write_recipe(tmp_path, cmd, gpus={"devices": [0, 1]})
    assert gpus_of_command(r) == 4
    (w,) = by_rule(check_gpus(r), "gpu_count_mismatch")
    assert w["message"].startswith("4 processes per node but gpus.devices lists 2")
    # parse_yaml_args: a variable already in the environment wins over the file's ENV
    r2 = write_recipe(tmp_path, cmd, gpus={"devices": [0, 1]}, env={"NPROC_PER_NODE": "2"})
    assert gpus_of_command(r2) == 2 and not by_rule(check_gpus(r2), "gpu_count_mismatch")


def test_a_relative_config_path_is_read_where_the_command_runs(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.yml").write_text("model: M\ntuner_type: lora\nlora_rnak: 8\n")
    r = write_recipe(tmp_path, ["megatron", "sft", "train.yml"], workdir=str(work), swift={"version": "4.6.0"})
    (e,) = by_rule(lint_recipe(r), "swift_unknown_flag")
    assert e["message"].startswith("--lora_rnak")


def test_a_config_file_that_cannot_be_read_says_its_flags_went_unchecked(tmp_path):
    r = write_recipe(tmp_path, ["swift", "sft", "{recipe_dir}/missing.yaml", "--lora_rank", "8"],
                     swift={"version": "4.6.0"})
    (w,) = by_rule(lint_recipe(r), "swift_config_unread")
    assert w["level"] == "warning" and "missing.yaml" in w["message"] and "not checked" in w["message"]
    (tmp_path / "list.yaml").write_text("- model\n- M\n")
    r = write_recipe(tmp_path, ["swift", "sft", "{recipe_dir}/list.yaml"], swift={"version": "4.6.0"})
    (w,) = by_rule(lint_recipe(r), "swift_config_unread")
    assert "not a mapping" in w["message"]


def test_the_trainer_script_run_directly_reads_no_config_file(tmp_path):
    # only cli_main (the `swift`/`megatron` programs) calls parse_yaml_args; swift/cli/sft.py parses sys.argv
    (tmp_path / "train.yaml").write_text("train_type: lora\n")
    r = write_recipe(tmp_path, ["python", "/venv/lib/swift/cli/sft.py", "{recipe_dir}/train.yaml"],
                     swift={"version": "4.6.0"})
    probs = lint_recipe(r)
    assert not by_rule(probs, "swift_config_file") and not by_rule(probs, "swift_unknown_flag")


def test_the_memory_estimate_reads_the_model_and_layout_from_the_config_file(tmp_path):
    from moeconsole.runner.recipes.lint import static_memory

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "model_type": "qwen3_moe", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 4, "head_dim": 32, "intermediate_size": 512, "moe_intermediate_size": 128,
        "num_experts": 8, "num_experts_per_tok": 2, "vocab_size": 4096}))
    (tmp_path / "train.yaml").write_text(f"model: {model}\ntuner_type: lora\nexpert_model_parallel_size: 2\n"
                                         "ENV:\n  NPROC_PER_NODE: 2\n")
    est = static_memory(write_recipe(tmp_path, ["megatron", "sft", "{recipe_dir}/train.yaml"]))
    assert est is not None
    direct = static_memory(write_recipe(tmp_path, ["megatron", "sft", "--model", str(model), "--tuner_type", "lora",
                                                   "--expert_model_parallel_size", "2"], env={"NPROC_PER_NODE": "2"}))
    assert est.to_dict() == direct.to_dict()


def test_the_merge_export_launches_like_the_training_its_config_file_describes(tmp_path):
    from moeconsole.runner.recipes.swift.export import merge_export

    (tmp_path / "train.yaml").write_text("model: Qwen/Qwen3.5-397B-A17B\ntuner_type: lora\nmerge_lora: false\n"
                                         "expert_model_parallel_size: 8\nENV:\n  NPROC_PER_NODE: 8\n")
    export = merge_export(write_recipe(tmp_path, ["megatron", "sft", "{recipe_dir}/train.yaml"]), "/ck/checkpoint-100")
    assert export is not None and export["env"] == {"NPROC_PER_NODE": "8"}
    assert export["shell"] == ("NPROC_PER_NODE=8 megatron export --adapters /ck/checkpoint-100 --to_hf true "
                               "--merge_lora true --expert_model_parallel_size 8")


# YAML 1.1 spellings PyYAML's safe_load resolves (on/off/yes/no, 1_000, 010, 1:30) beside YAML 1.2 ones
YAML_11_FILE = ("model: M\ndataset: /data/a.jsonl\ntuner_type: lora\ncheck_model: off\nadd_version: on\n"
                "lora_rank: 1_6\nlora_alpha: 010\nsave_steps: 1:30\nlearning_rate: 5e-3\nstreaming: yes\n"
                "lora_dropout: .05\nmax_steps: 100\nmax_steps: 40\n")


def _parse_yaml_args_of(text: str) -> list[str]:
    """What ms-swift's entry point splices in for a config file (swift/cli/main.py ``parse_yaml_args``,
    4.6.0 l.45-47 ``yaml.safe_load``, l.60-71 ``--key`` then ``str(value)``), by its own steps."""
    out = []
    for k, v in yaml.safe_load(text).items():
        out.append(f"--{k}")
        out += [str(i) for i in v] if isinstance(v, list) else [json.dumps(v) if isinstance(v, dict) else str(v)]
    return out


def test_a_yaml_config_file_gives_the_values_ms_swifts_pyyaml_gives(tmp_path):
    """ms-swift reads the file with PyYAML (YAML 1.1): ``check_model: off`` is ``--check_model False`` and
    ``lora_rank: 1_6`` is ``--lora_rank 16``; a key given twice keeps its last value. Read as YAML 1.2 (a
    recipe's reading) they were the texts ``off`` and ``1_6``, and lint refused a file ms-swift runs (measured:
    ``swift sft train.yaml`` with both trained and saved, args.json ``check_model: false``, ``lora_rank: 16``)."""
    from moeconsole.runner.recipes.swift import flags as swift_flags
    (tmp_path / "train.yaml").write_text(YAML_11_FILE)
    cfg = swift_flags.config_file(["swift", "sft", str(tmp_path / "train.yaml")], 2, str(tmp_path))
    assert cfg is not None and cfg.error is None
    assert list(cfg.flags) == _parse_yaml_args_of(YAML_11_FILE)
    probs = lint_recipe(write_recipe(tmp_path, ["swift", "sft", "{recipe_dir}/train.yaml"], swift={"version": "4.6.0"}))
    assert not by_rule(probs, "swift_bad_value"), probs
    assert not [p for p in probs if p["level"] == "error"], probs


def test_a_config_file_that_pyyaml_refuses_is_still_one_line(tmp_path):
    (tmp_path / "train.yaml").write_text("a: [1, 2\n")
    probs = lint_recipe(write_recipe(tmp_path, ["swift", "sft", "{recipe_dir}/train.yaml"], swift={"version": "4.6.0"}))
    (w,) = by_rule(probs, "swift_config_unread")
    assert "invalid YAML" in w["message"] and "\n" not in w["message"]


def test_in_4_2_0_and_4_2_1_the_config_files_env_starts_no_torchrun(tmp_path):
    """ms-swift 4.2.0 and 4.2.1's ``cli_main`` computes torchrun's arguments before it reads the file
    (swift/cli/main.py l.89 ``get_torchrun_args()``, l.90 ``parse_yaml_args``; 4.2.2 swapped them): an ENV
    ``NPROC_PER_NODE: 4`` there runs one process. lint counted 4 GPUs for every release."""
    (tmp_path / "train.yaml").write_text("model: M\ndataset: /d.jsonl\nENV:\n  NPROC_PER_NODE: 4\n")
    cmd = ["swift", "sft", "{recipe_dir}/train.yaml"]
    assert gpus_of_command(write_recipe(tmp_path, cmd, swift={"version": "4.2.2"})) == 4
    for version in ("4.2.0", "4.2.1"):
        r = write_recipe(tmp_path, cmd, swift={"version": version})
        assert gpus_of_command(r) in (None, 1), version
        (w,) = by_rule(lint_recipe(r), "swift_config_env_ignored_by_torchrun")
        assert w["level"] == "warning" and "NPROC_PER_NODE" in w["message"] and "one process" in w["message"]
    for version in ("4.2.2", "4.6.0", "4.2", None):
        extra = {"swift": {"version": version}} if version else {}
        assert not by_rule(lint_recipe(write_recipe(tmp_path, cmd, **extra)), "swift_config_env_ignored_by_torchrun")


def test_4_3_0_stops_with_a_name_error_when_the_env_differs_from_the_config_files(tmp_path):
    """ms-swift 4.3.0 dropped swift/cli/main.py's ``logger`` import but kept l.55's ``logger.warning`` for an ENV
    value that differs from a variable already set (4.3.1 put the import back): ``NameError`` before anything starts."""
    (tmp_path / "train.yaml").write_text("model: M\ndataset: /d.jsonl\nENV:\n  NPROC_PER_NODE: 4\n")
    cmd = ["swift", "sft", "{recipe_dir}/train.yaml"]
    r = write_recipe(tmp_path, cmd, swift={"version": "4.3.0"}, env={"NPROC_PER_NODE": "2"})
    (e,) = by_rule(lint_recipe(r), "swift_config_env_nameerror")
    assert e["level"] == "error" and "NameError: name 'logger' is not defined" in e["message"]
    assert "NPROC_PER_NODE=4" in e["message"] and "NPROC_PER_NODE=2" in e["message"]
    for version, env in (("4.3.1", {"NPROC_PER_NODE": "2"}), ("4.3.0", {"NPROC_PER_NODE": "4"}), ("4.3.0", {})):
        ok = write_recipe(tmp_path, cmd, swift={"version": version}, env=env)
        assert not by_rule(lint_recipe(ok), "swift_config_env_nameerror"), (version, env)
