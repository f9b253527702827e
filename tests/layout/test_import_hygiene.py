"""The headless side never loads a UI library, and nothing but the demo trainer loads torch.

import-linter proves it for the import statements it can see; this proves it at run time (lazy
imports, plugins, a dependency that pulls textual or rich in): every runner module, and the
console's headless commands, are imported in a fresh interpreter and its ``sys.modules`` checked
after each one."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
        mod = ".".join(path.relative_to(REPO).with_suffix("").parts)
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
    assert first_offender(modules_under("runner", skip=("runner.demo",)), ["textual", "rich"]) == {}


def test_only_the_demo_trainer_loads_torch():
    assert first_offender(modules_under("runner", skip=("runner.demo",)), ["torch"]) == {}


def test_the_headless_console_commands_load_no_ui():
    """``--json``, ``kill``, ``runs``, ``parse``, ``verify``, ``lint``: scripts call these in loops."""
    headless = [f"console.commands.{m}" for m in
                ("json", "kill", "restart", "runs", "parse", "verify", "lint", "gpus", "supervise", "doctor")]
    assert first_offender(["console.cli", *headless], ["textual", "torch"]) == {}


def test_the_probe_sees_a_module_that_does_load_textual():
    """The check itself can fail: the UI app does load textual."""
    assert first_offender(["console.app"], ["textual"]) == {"console.app": ["textual"]}
