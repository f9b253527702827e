"""Every ms-swift release between 4.2.0 and 4.6.0 has its own flag table, read by
scripts/gen_swift_flags.py from the PyPI wheel (``pip download --no-deps ms-swift==X``); before, a
recipe naming 4.3, 4.4 or 4.5 got "flags not checked".

Flags only appear in this range (none of 4.2.0's is gone by 4.6.0); each family below has one
added by a patch release and one added by a later minor, with the line of the wheel's own argument
dataclass that adds it:

- 4.2.2 ``fp4_format`` (swift/megatron/arguments/megatron_args.py l.538; not in 4.2.0/4.2.1);
- 4.3.0 ``gym_env`` (swift/rlhf_trainers/args_mixin.py l.402: ``swift rlhf``; megatron_args.py l.190);
- 4.3.2 ``muon_coefficient_type`` (megatron_args.py l.500; not in 4.3.0/4.3.1);
- 4.4.0 ``teacher_kl_coef`` (args_mixin.py l.435: ``swift rlhf``);
- 4.4.2 ``cp_comm_type`` (megatron_args.py l.600; not in 4.4.0/4.4.1);
- 4.5.0 ``use_megatron_fsdp`` (megatron_args.py l.589), ``rlsd_lambda`` (args_mixin.py l.447);
- 4.5.3 ``muon_lr`` (megatron_args.py l.563; not in 4.5.0-4.5.2);
- 4.6.0 ``engram_tokenizer_map`` (megatron_args.py l.696), ``decision_state_as_text``
  (swift/arguments/base_args/data_args.py l.117).

With ``MOECONSOLE_SWIFT_WHEELS`` naming a directory of those wheels, the shipped tables are also
compared with what the generator reads from each wheel now.
"""
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
from moeconsole.runner.recipes.swift import flags

REPO = Path(__file__).resolve().parents[2]
RELEASES = ["4.2.0", "4.2.1", "4.2.2", "4.2.3", "4.3.0", "4.3.1", "4.3.2", "4.4.0", "4.4.1", "4.4.2",
            "4.5.0", "4.5.1", "4.5.2", "4.5.3", "4.6.0"]
MEGATRON = ["megatron", "sft", "--model", "M", "--tuner_type", "lora"]
RLHF = ["swift", "rlhf", "--model", "M", "--dataset", "d.jsonl", "--tuner_type", "lora", "--rlhf_type", "grpo"]


def _lint(tmp_path, command, version):
    p = tmp_path / "r.yaml"
    p.write_text(yaml.safe_dump({"name": "t", "command": command, "swift": {"version": version}}))
    return lint_recipe(recipes.load(p))


def _rules(problems, rule):
    return [p["message"] for p in problems if p["rule"] == rule]


def _unknown(tmp_path, command, version):
    return [m.split(":", 1)[0] for m in _rules(_lint(tmp_path, command, version), "swift_unknown_flag")]


def test_every_release_between_the_oldest_table_and_460_has_its_own():
    shipped = [v for v, _ in flags.shipped_tables()]
    assert set(RELEASES) <= set(shipped), sorted(set(RELEASES) - set(shipped))
    for v in RELEASES:
        t, how = flags.pick(v)
        assert t is not None and t.version == v and how == f"checked against the ms-swift {v} flag table"
        assert t.source == f"ms_swift-{v}-py3-none-any.whl"
        assert set(t.commands) == {"megatron sft", "megatron pt", "megatron rlhf", "megatron export", "swift sft",
                                   "swift pt", "swift rlhf", "swift export"}


@pytest.mark.parametrize("version,refused,accepted", [
    # family 4.2: a patch release adds fp4_format; 4.5.0 adds use_megatron_fsdp
    ("4.2.1", ["--fp4_format", "--use_megatron_fsdp"], []),
    ("4.2.3", ["--use_megatron_fsdp"], ["--fp4_format"]),
    # family 4.3: 4.3.2 adds muon_coefficient_type; cp_comm_type comes with 4.4.2
    ("4.3.1", ["--muon_coefficient_type", "--cp_comm_type"], []),
    ("4.3.2", ["--cp_comm_type"], ["--muon_coefficient_type"]),
    # family 4.4: 4.4.2 adds cp_comm_type; bridge_backend comes with 4.5.0
    ("4.4.1", ["--cp_comm_type", "--bridge_backend"], []),
    ("4.4.2", ["--bridge_backend"], ["--cp_comm_type"]),
    # family 4.5: 4.5.3 adds muon_lr; engram_tokenizer_map comes with 4.6.0
    ("4.5.2", ["--muon_lr", "--engram_tokenizer_map"], ["--bridge_backend", "--use_megatron_fsdp"]),
    ("4.5.3", ["--engram_tokenizer_map"], ["--muon_lr", "--bridge_backend"]),
    ("4.6.0", [], ["--muon_lr", "--engram_tokenizer_map", "--cp_comm_type", "--fp4_format"]),
])
def test_megatron_flags_added_between_releases_are_refused_before_them(tmp_path, version, refused, accepted):
    values = {"--fp4_format": "e2m1", "--bridge_backend": "mcore-bridge", "--muon_lr": "0.02",
              "--use_megatron_fsdp": "true", "--muon_coefficient_type": "quintic", "--cp_comm_type": "p2p",
              "--engram_tokenizer_map": "m.json"}
    argv = MEGATRON + [x for f in refused + accepted for x in (f, values[f])]
    probs = _lint(tmp_path, argv, version)
    assert f"checked against the ms-swift {version} flag table" in " ".join(_rules(probs, "swift_checked_with"))
    assert not _rules(probs, "swift_no_flag_table")
    assert sorted(m.split(":", 1)[0] for m in _rules(probs, "swift_unknown_flag")) == sorted(refused)
    for m in _rules(probs, "swift_unknown_flag"):
        assert f"ms-swift {version} `megatron sft` has no such flag (ValueError: remaining_argv)" in m
    assert not _rules(probs, "swift_bad_value")


@pytest.mark.parametrize("version,refused", [
    ("4.2.3", ["--gym_env", "--teacher_kl_coef", "--rlsd_lambda", "--decision_state_as_text"]),
    ("4.3.0", ["--teacher_kl_coef", "--rlsd_lambda", "--decision_state_as_text"]),
    ("4.4.2", ["--rlsd_lambda", "--decision_state_as_text"]),
    ("4.5.0", ["--decision_state_as_text"]),
    ("4.6.0", []),
])
def test_swift_rlhf_flags_added_between_releases_are_unknown_to_the_parser_before_them(version, refused):
    """``swift rlhf`` also parses transformers' TrainingArguments, outside the table (``unresolved_bases``), so
    lint does not call an unknown flag an error there; the table's parser view still does not know it."""
    t, _ = flags.pick(version)
    argv = ["--gym_env", "e", "--teacher_kl_coef", "0.5", "--rlsd_lambda", "0.5", "--decision_state_as_text", "0.1"]
    unknown = [r.token for r in flags.resolve_flags(argv, t.fields("swift rlhf")) if r.status == "unknown"]
    assert sorted(unknown) == sorted(refused)


def test_a_value_is_checked_against_the_release_s_own_type(tmp_path):
    """fp4_format is ``Literal['e2m1']`` (4.2.2 megatron_args.py l.538): its choice list comes from that wheel."""
    bad = _rules(_lint(tmp_path, MEGATRON + ["--fp4_format", "nvfp4"], "4.2.2"), "swift_bad_value")
    assert bad == ["--fp4_format must be one of e2m1, got 'nvfp4'"]


@pytest.mark.parametrize("version", [v for v in RELEASES if v not in ("4.2.0", "4.6.0")])
def test_shipped_table_is_what_the_generator_reads_from_the_wheel(tmp_path, version):
    wheels = os.environ.get("MOECONSOLE_SWIFT_WHEELS")
    whl = Path(wheels or "/nonexistent") / f"ms_swift-{version}-py3-none-any.whl"
    if not whl.is_file():
        pytest.skip(f"MOECONSOLE_SWIFT_WHEELS has no {whl.name} (pip download --no-deps ms-swift=={version})")
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_swift_flags.py"), str(whl), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    shipped = dict(flags.shipped_tables())[version]
    assert flags.read_table_file(out) == flags.read_table_file(shipped)


@pytest.mark.parametrize("version,table", [
    ("4.5", "4.5.3"), ("4.5.x", "4.5.3"), ("4.4", "4.4.2"), ("4.3.x", "4.3.2"), ("4.2.x", "4.2.3"),
    ("4.5.1", "4.5.1"), ("4.6", "4.6.0"), ("4.6.2", "4.6.0"),
])
def test_a_line_is_checked_against_its_newest_release(version, table):
    t, how = flags.pick(version)
    assert t is not None and t.version == table, how


def test_a_line_warns_of_a_flag_its_older_releases_lack(tmp_path):
    """``swift.version: 4.5`` with 4.5.3's ``--muon_lr``: no error (4.5.3 has it), but 4.5.0-4.5.2 do not."""
    probs = _lint(tmp_path, MEGATRON + ["--muon_lr", "0.02", "--use_megatron_fsdp", "true"], "4.5")
    (how,) = _rules(probs, "swift_checked_with")
    assert how.startswith("checked against the ms-swift 4.5.3 flag table, the newest of the 4.5 line (4.5.0-4.5.3)")
    assert not _rules(probs, "swift_unknown_flag")
    (warn,) = _rules(probs, "swift_flag_not_in_line")
    assert warn.startswith("--muon_lr: ms-swift 4.5.0, 4.5.1, 4.5.2 `megatron sft` has no such flag")
    # a release named exactly gets no such warning: it is checked against its own table
    assert not _rules(_lint(tmp_path, MEGATRON + ["--muon_lr", "0.02"], "4.5.3"), "swift_flag_not_in_line")
    assert _unknown(tmp_path, MEGATRON + ["--muon_lr", "0.02"], "4.5.2") == ["--muon_lr"]


def test_muon_lr_without_muon_is_refused_at_start_up_from_4_5_3(tmp_path):
    """4.5.3 added --muon_lr with its check (MegatronArguments._check_muon, megatron_args.py l.1002-1003,
    called at l.911 after _init_distributed); 4.5.2 has neither: the parser stops it first."""
    (e,) = _rules(_lint(tmp_path, MEGATRON + ["--muon_lr", "0.02"], "4.5.3"), "swift_muon_lr_without_muon")
    assert e.startswith("ValueError: `muon_lr`/`muon_min_lr` require `--optimizer muon` or `--optimizer dist_muon`.")
    assert "megatron_args.py l.1002-1003 (4.5.3)" in e
    assert not _rules(_lint(tmp_path, MEGATRON + ["--muon_lr", "0.02", "--optimizer", "muon"], "4.5.3"),
                      "swift_muon_lr_without_muon")
    old = _lint(tmp_path, MEGATRON + ["--muon_lr", "0.02"], "4.5.2")
    assert not _rules(old, "swift_muon_lr_without_muon") and _unknown(tmp_path, MEGATRON + ["--muon_lr", "0.02"],
                                                                      "4.5.2") == ["--muon_lr"]
