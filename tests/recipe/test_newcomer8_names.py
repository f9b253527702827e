"""Newcomer round 8: a run name in another script under a C locale. `--set name=实验` was refused
with "must be letters, digits and . _ + -" (实 and 验 are letters: the line said the name was fine
and refused it); the recipe's name is ASCII (it names run directories and recipes), while
`--name` takes any run name (its id gets an ASCII slug and a hash). The refusal says both; the
run it points to starts and is found again by that name. Real `moeconsole` processes."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONPATH": str(REPO), "MOECONSOLE_RUNS_DIR": str(tmp_path)}
    return subprocess.run([sys.executable, "-P", "-m", "moeconsole.console.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=str(tmp_path), env=env, encoding="utf-8")


def test_a_recipe_name_in_another_script_is_refused_with_the_option_that_takes_it(tmp_path):
    done = _cli(tmp_path, "run", "--set", "name=实验", "--", sys.executable, "-c", "print('step 1 loss 1.0')")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done
    assert "must be ASCII letters, digits and . _ + -" in done.stderr, done.stderr
    assert "`--name NAME` on `run` or `demo` names a run in any script" in done.stderr, done.stderr
    started = _cli(tmp_path, "run", "--detach", "--name", "实验", "--", sys.executable, "-c", "print('step 1 loss 1.0')")
    assert started.returncode == 0, started
    shown = _cli(tmp_path, "runs", "show", "实验")
    assert shown.returncode == 0 and shown.stdout.startswith("实验  "), shown


def test_a_recipe_file_whose_stem_is_no_name_starts_its_run(tmp_path):
    """Review R70: a recipe file with no `name:` took its stem unchecked (`实验.yaml`, `my run.yaml`):
    the runner refused the run's recipe.yaml, a FAILED launch_failed run per try, `--name` no help.
    The stem's ASCII slug names the recipe now; the run starts and ends, with and without --name."""
    import json
    import yaml
    for stem, extra, ref in (("实验", (), None), ("my run", ("--name", "ok"), "ok")):
        recipe = tmp_path / f"{stem}.yaml"
        recipe.write_text(yaml.safe_dump({"command": [sys.executable, "-c", "print('step 1 loss 1.0')"]}))
        started = _cli(tmp_path, "run", str(recipe), "--detach", *extra)
        assert started.returncode in (0, 1) and "did not start" not in started.stderr, started   # 1: already over
        assert "Traceback" not in started.stderr, started
    from tests.waiting import until
    listed: list = []

    def ended() -> bool:
        listed[:] = json.loads(_cli(tmp_path, "runs", "ls", "--json").stdout)["runs"]
        return len(listed) == 2 and all(r["status"] not in ("running", "starting", "pre-flight", "cooldown") for r in listed)
    until(ended, 120, "both runs ended")
    assert all(r["status"] == "succeeded" for r in listed), listed
