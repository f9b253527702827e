"""The flag-table generator (ast over a package's source) and argparse's view of a command line."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from moeconsole.runner.recipes.swift import flags

REPO = Path(__file__).resolve().parents[2]
GEN = REPO / "scripts" / "gen_swift_flags.py"

SOURCES = {
    "swift/version.py": "__version__ = '9.1.0'\n",
    "swift/__init__.py": "",
    "swift/arguments/__init__.py": "from .base import BaseArguments\n",
    "swift/arguments/base.py": (
        "from dataclasses import dataclass, field\nfrom typing import List, Literal, Optional\n"
        "@dataclass\nclass DataMixin:\n    dataset: List[str] = field(default_factory=list)\n"
        "    packing: bool = False\n"
        "@dataclass\nclass BaseArguments(DataMixin):\n    tuner_type: Literal['lora', 'full'] = 'lora'\n"
        "    save_safetensors: bool = True\n    seed: int = 42\n"),
    "swift/megatron/__init__.py": "raise ImportError('megatron-core missing: never imported by the generator')\n",
    "swift/megatron/arguments/__init__.py": "",
    "swift/megatron/arguments/sft_args.py": (
        "from dataclasses import dataclass\nfrom typing import Optional\n"
        "from swift.arguments import BaseArguments\nfrom .megatron_args import MegatronArguments\n"
        "@dataclass\nclass MegatronSftArguments(MegatronArguments, BaseArguments):\n"
        "    save_steps: int = 500\n    save_total_limit: Optional[int] = None\n"),
    "swift/megatron/arguments/megatron_args.py": (
        "from dataclasses import dataclass\n"
        "@dataclass\nclass MegatronArguments:\n    use_megatron_fsdp: bool = False\n    seed: int = 1\n"),
}


def _wheel(tmp_path: Path) -> Path:
    whl = tmp_path / "ms_swift-9.1.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for name, text in SOURCES.items():
            z.writestr(name, text)
    return whl


def test_generator_reads_dataclasses_across_modules_without_importing(tmp_path):
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, str(GEN), str(_wheel(tmp_path)), "--out", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    table = json.loads(out.read_text())
    assert table["ms_swift_version"] == "9.1.0"
    sft = table["commands"]["megatron sft"]
    assert sft["unresolved_bases"] == []
    # Dataclass order: fields of the last base first (reverse MRO); a redefinition keeps the first place.
    assert list(sft["fields"]) == ["dataset", "packing", "tuner_type", "save_safetensors", "seed",
                                   "use_megatron_fsdp", "save_steps", "save_total_limit"]
    assert sft["fields"]["seed"]["default"] == 1          # MegatronArguments comes first in the MRO
    assert sft["fields"]["tuner_type"]["choices"] == ["lora", "full"]
    assert sft["fields"]["dataset"]["default"] == {"factory": "list"}


def test_shipped_tables_cover_both_supported_versions():
    versions = [v for v, _ in flags.shipped_tables()]
    assert "4.2.0" in versions and "4.6.0" in versions
    t46, how = flags.pick("4.6")
    assert t46.version == "4.6.0" and "4.6.0" in how
    assert "use_megatron_fsdp" in t46.fields("megatron sft")
    t42, _ = flags.pick("4.2.x")
    assert t42.version == "4.2.3" and "use_megatron_fsdp" not in t42.fields("megatron sft")
    for t in (t42, t46):
        f = t.fields("megatron sft")
        assert {"tuner_type", "target_modules", "output_dir", "save_steps", "logging_steps", "adapters", "finetune",
                "no_load_optim", "no_load_rng", "merge_lora", "dataloader_num_workers"} <= set(f)
        assert not {"train_type", "lora_target_modules", "use_megatron", "save", "load", "log_interval"} & set(f)
    none, why = flags.pick("3.12")
    assert none is None and "no flag table for ms-swift 3.12" in why


@pytest.mark.parametrize("token,status,dest", [
    ("--tuner_type", "exact", "tuner_type"),
    ("--tuner-type", "exact", "tuner_type"),
    ("--no_save_safetensors", "exact", "save_safetensors"),     # bool defaulting to true
    ("--use_megatron", "abbreviated", "use_megatron_fsdp"),
    ("--save", "ambiguous", None),
    ("--load", "ambiguous", None),
    ("--train_type", "unknown", None),
    ("--lora_target_modules", "unknown", None),
])
def test_resolution_on_46_megatron_sft(token, status, dest):
    t, _ = flags.pick("4.6.0")
    (r,) = flags.resolve_flags([token, "x"], t.fields("megatron sft"))
    assert (r.status, r.dest) == (status, dest)
    if status == "ambiguous":
        assert len(r.candidates) > 1


def test_value_types():
    t, _ = flags.pick("4.6.0")
    f = t.fields("megatron sft")
    assert flags.type_problem(f["save_steps"], ["ten"]) == "expects an integer, got 'ten'"
    assert flags.type_problem(f["merge_lora"], ["maybe"]) == "expects true/false, got 'maybe'"
    assert flags.type_problem(f["recompute_granularity"], ["most"]).startswith("must be one of")
    assert flags.type_problem(f["target_modules"], ["a", "b"]) is None
    assert flags.type_problem(f["lr"], ["1e-4"]) is None


@pytest.mark.parametrize("version", ["4.2.0", "4.6.0"])
def test_the_merge_export_moeconsole_suggests_is_checked_against_megatron_export_s_own_arguments(tmp_path, version):
    """``megatron export`` parses MegatronExportArguments (swift/megatron/arguments/export_args.py, 4.2.0 and
    4.6.0: MegatronBaseArguments plus to_hf, to_mcore, exist_ok, merge_lora, ...). Its table was missing: a
    recipe running the export moeconsole suggests (runner/recipes/swift/export.py) had its flags unchecked,
    and ``--adapters CKPT`` read as a string made the one-adapter check (megatron_args.py
    ``_load_adapter_config``) count its characters: a false error."""
    import yaml

    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.recipes.lint import lint_recipe
    from moeconsole.runner.recipes.swift.export import merge_export

    sft = recipes.load(REPO / "recipes" / "qwen3.5-397b-a17b-8xh200-swift4.6.yaml")
    export = merge_export(sft, "/ckpt/v0-20260101-000000/checkpoint-100")
    assert export is not None and export["command"][1] == "export"
    r = tmp_path / "export.yaml"
    r.write_text(yaml.safe_dump({"name": "export", "swift": {"version": version}, "env": export["env"],
                                 "command": [*export["command"], "--bogus_flag", "1"]}))
    probs = lint_recipe(recipes.load(r))
    swift = {p["rule"]: p for p in probs if p["rule"].startswith("swift_")}
    assert f"ms-swift {version} flag table" in swift["swift_checked_with"]["message"]
    assert "swift_one_adapter" not in swift and "swift_no_flag_table" not in swift
    errors = [p for p in probs if p["level"] == "error"]
    assert [p["message"].split(":")[0] for p in errors] == ["--bogus_flag"], errors


@pytest.mark.parametrize("value", ["1_000", " 512", "+8", "0_8", "-1"])
def test_an_integer_is_what_the_fields_own_type_converts(value):
    """argparse converts a value with the field's type (HfArgumentParser ``kwargs["type"] = field.type``,
    transformers hf_argparser.py l.221/l.228; argparse ``_get_value``: ``type_func(arg_string)``), so ms-swift's
    parser takes every text Python's ``int()`` takes: measured, ``--lora_rank 1_6 --max_length ' 512'`` parsed as
    16 and 512 by ms-swift 4.6.0's own SftArguments parser. A pattern of digits refused them (``swift_bad_value``)."""
    t, _ = flags.pick("4.6.0")
    spec = t.fields("swift sft")["lora_rank"]
    assert spec["type"].replace(" ", "") == "int"
    int(value)  # the conversion ms-swift's parser makes succeeds
    assert flags.type_problem(spec, [value]) is None


@pytest.mark.parametrize("value", ["ten", "1.5", "1e3", "8_", ""])
def test_a_text_int_refuses_is_still_refused(value):
    t, _ = flags.pick("4.6.0")
    spec = t.fields("swift sft")["lora_rank"]
    with pytest.raises(ValueError):
        int(value)
    assert flags.type_problem(spec, [value]) == f"expects an integer, got {value!r}"


def test_a_misspelt_subcommand_is_the_key_error_ms_swifts_entry_point_stops_with(tmp_path):
    """``swift stf``: swift/cli/main.py ``cli_main`` looks the word up in ``ROUTE_MAPPING`` (4.6.0 l.89-91) and stops
    with ``KeyError: 'stf'`` (measured with the real 4.6.0). lint said only ``swift_no_flag_table`` (info), 0 errors."""
    import yaml as _yaml
    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.recipes.lint import lint_recipe

    def lint(cmd):
        p = tmp_path / "r.yaml"
        p.write_text(_yaml.safe_dump({"name": "t", "command": cmd, "checkpoints": {"dir": "/ckpt/out"}}))
        return [x for x in lint_recipe(recipes.load(p)) if x["rule"] == "swift_unknown_command"]

    (e,) = lint(["swift", "stf", "--model", "M", "--dataset", "d.jsonl"])
    assert e["level"] == "error" and "KeyError: 'stf'" in e["message"]
    (e,) = lint(["megatron", "export_", "--model", "M"])
    assert "KeyError: 'export-'" in e["message"]
    for ok in (["swift", "merge_lora", "--adapters", "a"], ["swift", "sft", "--model", "M", "--dataset", "d.jsonl"],
               ["megatron", "sft", "--model", "M", "--dataset", "d.jsonl"], ["swift", "infer", "--model", "M"]):
        assert not lint(ok), ok
