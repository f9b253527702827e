"""The supervised run on a user's own machine, round 11: what the user's shell brings that a clean
test box does not. Each through the real CLI, the real detached runner and a real training."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import yaml

from tests.runner.conftest import NO_SAVES, REPO, Run, base_recipe


def _other_pythons_packages(root: Path) -> Path:
    """A directory of packages built for another Python, as `module load python/3.10` (or a conda
    env's activate script) puts on PYTHONPATH: a real copy of msgspec, whose compiled core carries
    another interpreter's tag, so this Python cannot load it ("No module named 'msgspec._core'")."""
    shadow = root / "py310-site-packages"
    own = Path(msgspec.__file__).parent
    shutil.copytree(own, shadow / "msgspec", ignore=shutil.ignore_patterns("__pycache__"))
    tag = f"cpython-{sys.version_info.major}{sys.version_info.minor}"
    for lib in (shadow / "msgspec").glob(f"*.{tag}-*.so"):
        lib.rename(lib.with_name(lib.name.replace(tag, "cpython-310")))
    return shadow


def test_a_pythonpath_of_another_pythons_packages_neither_breaks_moeconsole_nor_leaves_the_training(
        harness, tmp_path):
    """A shell whose PYTHONPATH holds another Python's site-packages (an HPC `module load`, a conda
    activate): every command of moeconsole's ended in a traceback ("ModuleNotFoundError: No module
    named 'msgspec._core'"), imported from there ahead of its own install. moeconsole's own
    processes import their install's packages first; the training still gets the PYTHONPATH
    exactly as the shell had it."""
    shadow = _other_pythons_packages(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(shadow)])}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    recipe = tmp_path / "pp.yaml"
    said = "import os; print('PYTHONPATH=' + os.environ.get('PYTHONPATH', '')); print(\"{'loss': '1.0', 'global_step/max_steps': '1/1'}\")"
    recipe.write_text(yaml.safe_dump(base_recipe(command=["{python}", "-c", said], restart={"max_restarts": 0}, **NO_SAVES)))

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(harness.runs_dir)],
                              capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)

    started = cli("run", str(recipe), "--detach")
    assert started.returncode == 0 and "Traceback" not in started.stderr, started.stderr
    run = Run(harness.runs_dir / started.stdout.strip().splitlines()[0])
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded" and st["step"] == 1, st
    assert f"PYTHONPATH={REPO}{os.pathsep}{shadow}" in (run.path / "train.log").read_text()
    for args in (("runs", "ls"), ("runs", "show", run.id), ("--json", "--once", run.id)):
        done = cli(*args)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
    assert json.loads(cli("--json", "--once", run.id).stdout)["run"]["status"] == "succeeded"
