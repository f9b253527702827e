"""ms-swift's main branch (``4.6.0.dev0``, github.com/modelscope/ms-swift 3602360a, 2026-08-22) beside
the 4.6.0 release (the wheel, 2026-10-14): two sets of flags under one number. Read from each one's
own source by scripts/gen_swift_flags.py (runner/recipes/swift/flags/ms-swift-4.6.0*.json.gz):

- main lacks ``--muon_lr``/``--muon_min_lr``, ``--dataloader_multiprocessing_context``,
  ``--strict_fsdp_dtensor_load``, ``--engram_tokenizer_map`` and the ``decision_*`` flags (4.6.0
  swift/megatron/arguments/megatron_args.py l.540, l.583-584, l.615, l.696; swift/trainers/arguments.py l.154);
- main types ``--lora_alpha`` ``int`` (swift/arguments/tuner_args.py l.134 and
  swift/megatron/arguments/megatron_args.py l.466 there; ``float`` in 4.6.0, l.134 and l.486);
- main's Megatron ``--scale_rewards`` is a plain ``Literal`` defaulting to ``group`` (4.6.0: Optional,
  None, derived from ``--advantage_estimator``).

``swift rlhf`` (RLHFArguments) and ``swift pt`` (PretrainArguments) have tables of their own in every
version now; their flags were not checked before.
"""
from __future__ import annotations

import json

import pytest
import yaml

from moeconsole.runner.recipes import doctor
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.recipes.lint import lint_recipe
from moeconsole.runner.recipes.swift import flags
from tests.swift.swift_helpers import SWIFT_PYTHON, TIMEOUT, cli, require_swift

MEGATRON = ["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--merge_lora", "false",
            "--optimizer", "muon"]


def _lint(tmp_path, command, version):
    p = tmp_path / "r.yaml"
    p.write_text(yaml.safe_dump({"name": "t", "command": command, "checkpoints": {"dir": "/ckpt/out"},
                                 "swift": {"version": version},
                                 "resume": {"args": ["--adapters", "{checkpoint}", "--finetune", "false"]}}))
    return lint_recipe(recipes.load(p))


def _rules(problems, rule):
    return [p["message"] for p in problems if p["rule"] == rule]


def test_a_main_branch_build_is_checked_against_main_and_the_release_against_the_release(tmp_path):
    cmd = MEGATRON + ["--muon_lr", "0.02", "--lora_alpha", "16.5"]
    dev = _lint(tmp_path, cmd, "4.6.0.dev0")
    assert any("checked against the ms-swift 4.6.0.dev0 flag table" in m for m in _rules(dev, "swift_checked_with"))
    (unknown,) = _rules(dev, "swift_unknown_flag")
    assert unknown.startswith("--muon_lr: ms-swift 4.6.0.dev0 `megatron sft` has no such flag")
    (bad,) = _rules(dev, "swift_bad_value")
    assert bad == "--lora_alpha expects an integer, got '16.5'"
    for release in ("4.6.0", "4.6", "4.6.x"):
        rel = _lint(tmp_path, cmd, release)
        assert any("checked against the ms-swift 4.6.0 flag table" in m for m in _rules(rel, "swift_checked_with"))
        assert not _rules(rel, "swift_unknown_flag") and not _rules(rel, "swift_bad_value"), release


@pytest.mark.parametrize("version,table", [
    ("4.6.0.dev0", "4.6.0.dev0"), ("4.6.0.dev3", "4.6.0.dev0"), ("4.6.0rc1", "4.6.0.dev0"),
    ("4.6.0", "4.6.0"), ("4.6", "4.6.0"), ("4.6.x", "4.6.0"), ("4.6.2", "4.6.0"), (None, "4.6.0"),
    ("4.2.x", "4.2.3"),
])
def test_a_pre_release_sorts_before_its_release(version, table):
    t, how = flags.pick(version)
    assert t is not None and t.version == table, how


def test_the_main_table_names_the_commit_it_was_read_from():
    t, _ = flags.pick("4.6.0.dev0")
    assert t.source.startswith("git main 3602360a562313afbf2ef6065fdf61f271a2c5b9")
    rel, _ = flags.pick("4.6.0")
    only_release = set(rel.fields("megatron sft")) - set(t.fields("megatron sft"))
    assert {"muon_lr", "muon_min_lr", "dataloader_multiprocessing_context", "strict_fsdp_dtensor_load"} <= only_release
    assert not set(t.fields("megatron sft")) - set(rel.fields("megatron sft"))


@pytest.mark.parametrize("wanted,installed,same", [
    ("4.6", "4.6.0", True), ("4.6.x", "4.6.3", True), ("4.6.0", "4.6.0", True),
    ("4.6.0.dev0", "4.6.0.dev0", True),
    ("4.6.0", "4.6.0.dev0", False), ("4.6", "4.6.0.dev0", False), ("4.6.0.dev0", "4.6.0", False),
    ("4.2.0", "4.6.0", False),
])
def test_a_main_branch_build_is_not_the_release_for_doctor(wanted, installed, same):
    found = doctor.swift_version_findings(installed, wanted)
    assert (not found) == same, found
    if not same:
        msg = found[0]["message"]
        assert f"targets ms-swift {wanted} (swift.version) but {installed} is installed" in msg
        assert ("(4.6.0.dev0 is a build before the 4.6.0 release, ms-swift's main branch" in msg) == (
            "dev" in wanted + installed), msg


def test_lint_with_the_real_parser_says_a_release_is_not_the_main_build_the_recipe_names(tmp_path):
    """The recipe was written for a main-branch build; .venv-swift has the 4.6.0 release."""
    require_swift()
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({
        "name": "p", "swift": {"version": "4.6.0.dev0", "python": str(SWIFT_PYTHON)},
        "command": [str(SWIFT_PYTHON.parent / "swift"), "sft", "--model", "m", "--tuner_type", "lora"]}))
    doc = json.loads(cli(None, "lint", str(recipe), "--json").stdout)
    (w,) = [p for p in doc["problems"] if p["rule"] == "swift_version_mismatch"]
    assert "targets ms-swift 4.6.0.dev0" in w["message"] and "has ms-swift 4.6.0:" in w["message"]
    assert w["message"].endswith("(4.6.0.dev0 is a build before the 4.6.0 release, ms-swift's main branch: "
                                 "not the release's flags)")


# ---- swift rlhf / swift pt: their own argument classes (swift/cli/rlhf.py RLHFArguments, pt.py PretrainArguments)
RLHF = ["swift", "rlhf", "--model", "M", "--dataset", "d.jsonl", "--tuner_type", "lora"]


@pytest.mark.parametrize("version", ["4.2.0", "4.6.0", "4.6.0.dev0"])
def test_swift_rlhf_is_checked_against_rlhf_arguments(tmp_path, version):
    probs = _lint(tmp_path, RLHF + ["--rlhf_type", "gpro", "--num_generation", "8", "--beta", "low"], version)
    assert any(f"checked against the ms-swift {version} flag table" in m for m in _rules(probs, "swift_checked_with"))
    bad = _rules(probs, "swift_bad_value")
    assert any(m.startswith("--rlhf_type must be one of dpo, orpo, simpo, kto, cpo, rm, ppo, grpo, gkd, got 'gpro'")
               for m in bad), bad
    assert "--beta expects a number, got 'low'" in bad
    (ambiguous,) = _rules(probs, "swift_ambiguous_flag")     # num_generations or num_generations_eval
    assert ambiguous.startswith("--num_generation: ambiguous prefix") and "--num_generations_eval" in ambiguous
    assert not _rules(_lint(tmp_path, RLHF + ["--rlhf_type", "grpo", "--num_generations", "8"], version),
                      "swift_bad_value")


def test_swift_pt_has_its_own_table(tmp_path):
    probs = _lint(tmp_path, ["swift", "pt", "--model", "M", "--use_chat_template", "maybe"], "4.6.0")
    assert "--use_chat_template expects true/false, got 'maybe'" in _rules(probs, "swift_bad_value")


def test_shipped_rlhf_table_matches_the_installed_ms_swift():
    """Every `swift rlhf` field of the 4.6.0 table is an exact option of ms-swift 4.6.0's own parser."""
    from moeconsole.runner.recipes.swift.probe import probe
    require_swift()
    table, _ = flags.pick("4.6.0")
    names = list(table.fields("swift rlhf"))
    res = probe(str(SWIFT_PYTHON), "swift rlhf", [f"--{n}" for n in names], timeout=TIMEOUT)
    assert res.version == table.version and not res.import_error and not res.failed, (res.import_error, res.failed)
    assert {f["token"] for f in res.flags if f["status"] != "exact"} == set()


def test_a_bare_kl_in_reward_is_refused_by_4_6_0_only(tmp_path):
    """4.6.0 megatron_args.py l.156 ``kl_in_reward: Optional[bool] = None``: argparse wants a value
    (transformers gives an Optional[bool] without default no nargs='?'); main's ``bool = False`` takes
    the bare flag."""
    cmd = ["megatron", "rlhf", "--model", "M", "--rlhf_type", "grpo", "--tuner_type", "lora", "--merge_lora", "false",
           "--kl_in_reward", "--scale_rewards", "gdpo"]
    (bad,) = _rules(_lint(tmp_path, cmd, "4.6.0"), "swift_bad_value")
    assert bad.startswith("--kl_in_reward needs a value (true/false)")
    assert not _rules(_lint(tmp_path, cmd, "4.6.0.dev0"), "swift_bad_value")
