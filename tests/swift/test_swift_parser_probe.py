"""lint asks the real ms-swift's own parser (in .venv-swift) how it reads a command line, and
the shipped 4.6.0 flag table agrees with the installed ms-swift."""
from __future__ import annotations

import json
import os
import subprocess

import yaml

from moeconsole.runner.recipes.swift import flags
from moeconsole.runner.recipes.swift.probe import probe
from tests.swift.swift_helpers import SWIFT_PYTHON, TIMEOUT, cli, require_swift


def test_lint_uses_ms_swifts_own_parser(tmp_path):
    require_swift()
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({
        "name": "p", "swift": {"version": "4.6.0", "python": str(SWIFT_PYTHON)},
        "command": [str(SWIFT_PYTHON.parent / "swift"), "sft", "--model", "m", "--train_type", "lora",
                    "--logging_step", "1", "--lora_rank", "eight", "--dataset", "d.jsonl"]}))
    proc = cli(None, "lint", str(recipe), "--json")
    doc = json.loads(proc.stdout)
    by = {p["rule"]: p["message"] for p in doc["problems"]}
    assert proc.returncode == 1
    assert "ms-swift 4.6.0's own `swift sft` parser" in by["swift_checked_with"]
    assert "--train_type" in by["swift_unknown_flag"] and "--tuner_type" in by["swift_unknown_flag"]
    assert "--logging_step is silently taken as --logging_steps" in by["swift_abbreviated_flag"]
    assert "invalid int value: 'eight'" in by["swift_bad_value"]


def test_ambiguous_prefix_from_the_real_parser():
    require_swift()
    res = probe(str(SWIFT_PYTHON), "swift sft", ["--save", "x", "--tuner_type", "lora"])
    assert res.version == "4.6.0" and not res.import_error
    save = [f for f in res.flags if f["token"] == "--save"][0]
    assert save["status"] == "ambiguous" and "--save_steps" in save["message"]
    assert [f["status"] for f in res.flags if f["token"] == "--tuner_type"] == ["exact"]


def test_megatron_arguments_need_megatron_core_and_lint_falls_back_to_the_table():
    require_swift()
    res = probe(str(SWIFT_PYTHON), "megatron sft", ["--tuner_type", "lora"])
    assert res.import_error and "megatron" in res.import_error


def test_shipped_46_table_matches_the_installed_ms_swift():
    """Every `swift sft` field in the table is an exact option of the real parser (the table's
    transformers part is absent by design; the ms-swift part must be complete and right)."""
    require_swift()
    table, _ = flags.pick("4.6.0")
    names = list(table.fields("swift sft"))
    res = probe(str(SWIFT_PYTHON), "swift sft", [f"--{n}" for n in names])
    assert res.version == table.version
    statuses = {f["token"][2:]: f["status"] for f in res.flags}
    assert {n for n, s in statuses.items() if s != "exact"} == set()


def test_a_recipe_for_another_ms_swift_than_the_installed_one_is_a_warning(tmp_path):
    require_swift()
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({
        "name": "p", "swift": {"version": "4.2.0", "python": str(SWIFT_PYTHON)},
        "command": [str(SWIFT_PYTHON.parent / "swift"), "sft", "--model", "m", "--tuner_type", "lora"]}))
    doc = json.loads(cli(None, "lint", str(recipe), "--json").stdout)
    (w,) = [p for p in doc["problems"] if p["rule"] == "swift_version_mismatch"]
    assert w["level"] == "warning" and "targets ms-swift 4.2.0" in w["message"] and "ms-swift 4.6.0" in w["message"]
    # doctor says the same of the environment, and checks the recipe's pins there.
    raw = yaml.safe_load(recipe.read_text())
    raw["swift"]["pins"] = {"torch": "2.9.1", "transformers": ">=5.0"}
    recipe.write_text(yaml.safe_dump(raw))
    doc = json.loads(cli(None, "doctor", str(recipe), "--json").stdout)
    by = {(p["rule"], p["message"].split(" ")[0]): p for p in doc["problems"]}
    assert ("swift_version_mismatch", "the") in by
    assert by[("pin_mismatch", "torch")]["message"].startswith("torch is pinned to 2.9.1 (swift.pins) but 2.13")
    assert ("pin_mismatch", "transformers") not in by


def test_the_real_parser_refuses_a_bare_optional_bool_and_lint_says_so_from_the_table_too(tmp_path):
    """transformers' HfArgumentParser: Optional[bool] = None gets no nargs='?'."""
    require_swift()
    table, _ = flags.pick("4.6.0")
    assert table.fields("swift sft")["lazy_tokenize"] == {**table.fields("swift sft")["lazy_tokenize"],
                                                          "type": "Optional[bool]", "default": None}
    res = probe(str(SWIFT_PYTHON), "swift sft", ["--lazy_tokenize", "--tuner_type", "lora"])
    assert "expected one argument" in (res.error or "")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({"name": "p", "swift": {"version": "4.6.0"},
                                      "command": ["swift", "sft", "--lazy_tokenize", "--tuner_type", "lora"]}))
    doc = json.loads(cli(None, "lint", str(recipe), "--json").stdout)
    assert any(p["rule"] == "swift_bad_value" and p["message"].startswith("--lazy_tokenize needs a value")
               for p in doc["problems"]), doc["problems"]


def test_a_config_file_is_spliced_in_as_ms_swifts_own_entry_point_does(tmp_path):
    """swift/cli/main.py ``parse_yaml_args`` of the installed ms-swift, run on the same files: the
    argv and environment it hands the trainer are what lint checks (``flags.expanded_argv``)."""
    require_swift()
    (tmp_path / "train.yaml").write_text(
        "model: /m\ndataset: [/d/a.jsonl, /d/b.jsonl]\nlora_rank: 8\nlearning_rate: 1.0e-4\n"
        "gradient_checkpointing: true\nmodel_kwargs: {rope_scaling: {type: yarn}}\ntrain_type: lora\n"
        "ENV:\n  NPROC_PER_NODE: 2\n  HF_HUB_OFFLINE: 1\n")
    (tmp_path / "train.json").write_text(json.dumps({"model": "/m", "target_modules": ["q_proj", "v_proj"],
                                                     "lora_alpha": 16.5, "ENV": {"NNODES": 1}}))
    real = r'''
import json, os, sys
from swift.cli.main import parse_yaml_args
argv = sys.argv[1:]
before = dict(os.environ)
parse_yaml_args(argv)
print(json.dumps({"argv": argv, "env": {k: v for k, v in os.environ.items() if before.get(k) != v}}))
'''
    for name in ("train.yaml", "train.json"):
        argv = [str(tmp_path / name), "--lora_alpha", "32"]
        env = {k: v for k, v in os.environ.items() if k not in ("NPROC_PER_NODE", "NNODES", "HF_HUB_OFFLINE")}
        proc = subprocess.run([str(SWIFT_PYTHON), "-c", real, *argv], capture_output=True, text=True,
                              timeout=TIMEOUT, env=env)
        theirs = json.loads(proc.stdout.strip().splitlines()[-1])
        ours, cfg = flags.expanded_argv(["swift", "sft", *argv], 2, None)
        assert ours[2:] == theirs["argv"]
        assert cfg is not None and cfg.env == {k: v for k, v in theirs["env"].items() if k != "SWIFT_CONFIG_FILE"}
    (_, cfg) = flags.expanded_argv(["swift", "sft", str(tmp_path / "train.yaml")], 2, None)
    res = probe(str(SWIFT_PYTHON), "swift sft", list(cfg.flags))
    assert [f["status"] for f in res.flags if f["token"] == "--train_type"] == ["unknown"]


def test_an_unknown_tuner_type_is_refused_before_the_model_loads(tmp_path):
    """Newcomer round 12: `--tuner_type lroa` passed lint (ms-swift's parser takes any string for it) and the run
    failed only after loading the model (`ValueError: Unknown tuner_type: lroa`, swift/pipelines/train/tuner.py).
    lint names ms-swift's own choices; a tuner it knows (`lora`, `full`) passes."""
    require_swift()
    res = probe(str(SWIFT_PYTHON), "swift sft", ["--model", "m", "--tuner_type", "lroa"])
    assert res.unknown_choice and res.unknown_choice["value"] == "lroa" and "lora" in res.unknown_choice["choices"]
    for known in ("lora", "full", "adalora"):
        assert probe(str(SWIFT_PYTHON), "swift sft", ["--model", "m", "--tuner_type", known]).unknown_choice is None
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({
        "name": "p", "swift": {"version": "4.6.0", "python": str(SWIFT_PYTHON)},
        "command": [str(SWIFT_PYTHON.parent / "swift"), "sft", "--model", "m", "--tuner_type", "lroa",
                    "--dataset", "d.jsonl"]}))
    proc = cli(None, "lint", str(recipe), "--json")
    by = {p["rule"]: p["message"] for p in json.loads(proc.stdout)["problems"]}
    assert proc.returncode == 1
    assert by["swift_bad_value"].startswith("--tuner_type lroa: not one of ms-swift 4.6.0's choices (")
    assert "ValueError: Unknown tuner_type: lroa" in by["swift_bad_value"]
