"""Round 13 of the real ms-swift 4.6 audit: what ms-swift's parser takes and lint refused.

- A config file (``swift sft train.yaml``) is read by ms-swift's entry point with PyYAML's ``safe_load``
  (swift/cli/main.py l.45-47, YAML 1.1) and each value spliced in as ``str(value)`` (l.60-71): ``check_model: off``
  reaches the trainer as ``--check_model False``. moeconsole read the file as YAML 1.2 (its recipes' reading), kept
  the text ``off`` and lint said ``swift_bad_value: --check_model expects true/false, got 'off'`` (an error: ``run``
  refused) for a file ms-swift runs.
- An integer flag is converted by the field's own type (``int``), so ``--lora_rank 1_6`` is 16; lint's pattern of
  digits refused it.

Each test asks the installed ms-swift itself (its ``parse_yaml_args``, its ``SftArguments`` parser)."""
from __future__ import annotations

import json
import subprocess

from tests.megatron.test_swift_config_file import YAML_11_FILE
from tests.swift.swift_helpers import REPO, SWIFT_PYTHON, TIMEOUT, require_swift


def _in_swift(code: str) -> str:
    proc = subprocess.run([str(SWIFT_PYTHON), "-c", code], capture_output=True, text=True, timeout=TIMEOUT,
                          cwd=REPO, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_the_config_file_splices_in_what_ms_swifts_own_entry_point_splices_in(tmp_path):
    require_swift()
    from moeconsole.runner.recipes.swift import flags as swift_flags
    path = tmp_path / "train.yaml"
    path.write_text(YAML_11_FILE)
    theirs = json.loads(_in_swift(
        "import json, sys; from swift.cli.main import parse_yaml_args\n"
        f"argv = [{str(path)!r}]; parse_yaml_args(argv); print(json.dumps(argv))"))
    ours = swift_flags.config_file(["swift", "sft", str(path)], 2, str(tmp_path))
    assert ours is not None and ours.error is None
    assert list(ours.flags) == theirs
    assert theirs[theirs.index("--check_model") + 1] == "False"


def test_an_integer_ms_swifts_parser_takes_is_not_refused(tmp_path):
    require_swift()
    from moeconsole.runner.recipes.swift import flags as swift_flags
    values = {"lora_rank": "1_6", "max_length": " 512", "lora_alpha": "+8"}
    argv = [a for k, v in values.items() for a in (f"--{k}", v)]
    parsed = json.loads(_in_swift(
        "import json; from transformers import HfArgumentParser; from swift.arguments import SftArguments\n"
        f"a, rest = HfArgumentParser([SftArguments]).parse_known_args({argv!r})\n"
        f"print(json.dumps([getattr(a, k) for k in {list(values)!r}] + [rest]))"))
    assert parsed[:-1] == [16, 512, 8.0] and parsed[-1] == []
    table, _ = swift_flags.pick("4.6.0")
    fields = table.fields("swift sft")
    assert [swift_flags.type_problem(fields[k], [v]) for k, v in values.items()] == [None, None, None]


def test_the_routed_subcommands_are_the_installed_entry_points_own(tmp_path):
    """``flags.ROUTES`` is ms-swift's ``ROUTE_MAPPING`` of both entry points; a word outside it is the ``KeyError``
    the real ``swift`` stops with (measured: ``swift stf`` exits 1, ``KeyError: 'stf'``)."""
    require_swift()
    from moeconsole.runner.recipes.swift import flags as swift_flags
    theirs = json.loads(_in_swift(
        "import json; from swift.cli.main import ROUTE_MAPPING as s; from swift.cli._megatron.main import ROUTE_MAPPING as m\n"
        "print(json.dumps({'swift': sorted(s), 'megatron': sorted(m)}))"))
    assert {k: sorted(v) for k, v in swift_flags.ROUTES.items()} == theirs
    proc = subprocess.run([str(SWIFT_PYTHON.parent / "swift"), "stf", "--model", "M"], capture_output=True, text=True,
                          timeout=TIMEOUT, cwd=tmp_path)
    assert proc.returncode != 0 and "KeyError: 'stf'" in proc.stderr
    assert swift_flags.unknown_subcommand("swift stf") == "stf"
