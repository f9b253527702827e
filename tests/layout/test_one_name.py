"""One name per concept (issue 33 item 5): ``scripts/rename_concepts.py`` lists each name that
meant two or three things and the name each meaning has now. Code that brings an old name back
(the control socket's kill request named Kill again, a log event imported as Event) fails here;
the fix is to run the script."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "rename_concepts.py"


def _script():
    spec = importlib.util.spec_from_file_location("rename_concepts", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rename_concepts"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_nothing_is_left_to_rename():
    res = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_rename_touches_code_names_only():
    """The concept's name in code (imported bare, through a module alias, with ``as``) is
    renamed; a word in a string, a keyword argument and another thing's attribute are not."""
    rc = _script()
    src = ('from moeconsole.runner.supervisor import control as ctl\n'
           'from moeconsole.runner.supervisor.control import Kill\n'
           'x = Kill(by="Kill")  # Kill the run\n'
           'y = ctl.Kill()\n'
           'z = other.Kill\n'
           'f(Kill=1)\n'
           'def g(k: Kill = None) -> ctl.Kill: ...\n')
    r = next(r for r in rc.RENAMES if r.module.endswith("control") and r.old == "Kill")
    imps = rc.imports_of(rc.ast.parse(src), "tests.example")
    found = rc.scan(imps, "tests.example", rc.carriers_of(r, {}), r.old)
    out = rc.rename_tokens(src, r.old, r.new, found)
    assert out.splitlines() == [
        'from moeconsole.runner.supervisor import control as ctl',
        'from moeconsole.runner.supervisor.control import KillRequest',
        'x = KillRequest(by="Kill")  # Kill the run',
        'y = ctl.KillRequest()',
        'z = other.Kill',
        'f(Kill=1)',
        'def g(k: KillRequest = None) -> ctl.KillRequest: ...']
