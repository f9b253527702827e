"""The headless side never loads a UI library, and nothing but the demo trainer loads torch.

import-linter proves it for the import statements it can see; this proves it at run time (lazy
imports, plugins, a dependency that pulls textual or rich in): every runner module, and the
console's headless commands, are imported in a fresh interpreter and its ``sys.modules`` checked
after each one. Then the commands scripts run in loops are run for real (``moeconsole --json``,
``runs ls``, ``kill``, ...), through the CLI's ``main``, and the modules they loaded on the way
(lazily, inside the command) are checked too."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = r"""
import importlib, json, sys
banned = json.loads(sys.argv[1])
found = {}
for mod in json.loads(sys.argv[2]):
    importlib.import_module(mod)
    hit = sorted(b for b in banned if b in sys.modules)
    if hit:
        found[mod] = hit
        break
print(json.dumps(found))
"""


def modules_under(package: str, skip: tuple[str, ...] = ()) -> list[str]:
    out = []
    for path in sorted((REPO / package).rglob("*.py")):
        mod = ".".join(("moeconsole", *path.relative_to(REPO).with_suffix("").parts))
        if mod.endswith(".__main__") or any(mod == s or mod.startswith(s + ".") for s in skip):
            continue
        out.append(mod.removesuffix(".__init__"))
    return out


def first_offender(modules: list[str], banned: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(banned), json.dumps(modules)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_no_runner_module_loads_textual_or_rich():
    """Every runner module, the demo trainer's too (it may load torch, never a UI)."""
    assert first_offender(modules_under("runner"), ["textual", "rich"]) == {}


def test_only_the_demo_trainer_loads_torch():
    assert first_offender(modules_under("runner", skip=("moeconsole.runner.demo",)), ["torch"]) == {}


def test_the_run_screen_and_the_gpu_view_load_only_what_they_draw():
    """What ``attach`` loads for the run screen and the GPU view (``g``): no torch, no YAML or
    SQLite reader, no numpy, no syntax highlighter, the OOM rules with the memory module
    (~1.6 MiB) only once a crash report is there to explain, and neither Textual's Footer (a
    widget per key, 1.4 MiB: the key footer is ``widgets/keybar.py``) nor its DataTable (the
    blocker table is imported at the first zombie), nor the control protocol and the confirmations
    (imported at the key that sends a request), nor psutil (the scan and the host line read /proc)."""
    modules = ["moeconsole.console.commands.attach", "moeconsole.console.app", "moeconsole.console.screens.run",
               "moeconsole.console.screens.gpu_view"]
    banned = ["torch", "yaml", "sqlite3", "numpy", "rich.syntax", "pygments", "moeconsole.runner.core.oom",
              "moeconsole.runner.core.memory", "textual.widgets._footer", "textual.widgets._data_table",
              "moeconsole.runner.supervisor.control", "moeconsole.console.confirmations", "psutil"]
    assert first_offender(modules, banned) == {}


# Every command but the two that open the UI (``attach``; ``run`` attaches after the start).
HEADLESS_COMMANDS = ("json", "kill", "restart", "runs", "parse", "verify", "lint", "gpus", "supervise", "doctor",
                     "agent", "prometheus", "receipt", "service", "systemd", "demo")


def test_the_headless_console_commands_load_no_ui():
    """``--json``, ``kill``, ``runs``, ``parse``, ``verify``, ``lint``: scripts call these in loops."""
    commands = sorted(p.stem for p in (REPO / "console" / "commands").glob("*.py") if p.stem != "__init__")
    assert set(commands) == set(HEADLESS_COMMANDS) | {"attach", "run"}, "a new command: is it headless?"
    headless = [f"moeconsole.console.commands.{m}" for m in HEADLESS_COMMANDS]
    assert first_offender(["moeconsole.console.cli", *headless], ["textual", "rich", "torch"]) == {}


CLI_PROBE = r"""
import contextlib, io, json, sys
from moeconsole.console.cli import main
banned, argv = json.loads(sys.argv[1]), json.loads(sys.argv[2])
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(argv)
print(json.dumps({"code": code, "out": out.getvalue(), "loaded": sorted(b for b in banned if b in sys.modules)}))
"""


def run_cli_probe(argv: list[str], banned: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", CLI_PROBE, json.dumps(banned), json.dumps(argv)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture
def two_runs(tmp_path):
    from tests.console.conftest import write_run
    write_run(tmp_path, "20240101-000000-demo-0001", status="failed")
    write_run(tmp_path, "20240101-000001-demo-0002", status="killed")
    return tmp_path


@pytest.mark.parametrize("argv, says", [
    (["--json", "20240101-000000-demo-0001"], '"status":"failed"'),
    (["runs", "ls"], "20240101-000001-demo-0002"),
    (["runs", "ls", "--json"], '"runs":'),
    (["runs", "show", "20240101-000000-demo-0001"], "60/100"),
    (["kill", "20240101-000001-demo-0002"], "already killed; nothing to kill"),
    (["gpus", "--json"], '"gpu":'),
])
def test_the_headless_commands_run_without_loading_a_ui(two_runs, argv, says):
    """The command runs to its answer (not only its import) and never loads textual or rich."""
    got = run_cli_probe([*argv, "--runs-dir", str(two_runs)], ["textual", "rich", "torch"])
    assert got["code"] == 0 and says in got["out"], got
    assert got["loaded"] == [], f"{' '.join(argv)} loaded {got['loaded']}"


def test_lint_and_parse_run_without_loading_a_ui(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"{{'loss': 1.0, 'grad_norm': 0.5, 'global_step/max_steps': '{i}/3'}}\n"
                           for i in range(1, 4)))
    for argv in (["lint", str(REPO / "recipes" / "tiny-moe-cpu.yaml")], ["parse", str(log)]):
        got = run_cli_probe(argv, ["textual", "rich", "torch"])
        assert got["code"] == 0 and got["out"], got
        assert got["loaded"] == [], f"{' '.join(argv)} loaded {got['loaded']}"


def test_the_cli_probe_sees_what_a_command_loads(two_runs):
    """The run-time check can fail: ``--json`` does load the snapshot module."""
    got = run_cli_probe(["--json", "20240101-000000-demo-0001", "--runs-dir", str(two_runs)],
                        ["moeconsole.runner.rundir.snapshot"])
    assert got["loaded"] == ["moeconsole.runner.rundir.snapshot"]


def test_the_probe_sees_a_module_that_does_load_textual():
    """The check itself can fail: the UI app does load textual."""
    assert first_offender(["moeconsole.console.app"], ["textual"]) == {"moeconsole.console.app": ["textual"]}
