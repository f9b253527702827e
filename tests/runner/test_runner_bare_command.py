"""`moeconsole run -- COMMAND ...`: a command of one's own, supervised without writing a recipe
(README "Using it", docs/recipes.md "A command without a recipe")."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from moeconsole.runner.recipes.recipe import name_of_command
from tests.runner.conftest import REPO, Run


def cli(runs_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    where = [] if args[0] in ("lint", "parse", "doctor") else ["--runs-dir", str(runs_dir)]
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args[:1], *where, *args[1:]],
                          capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


TRAIN = """\
import pathlib, sys
pathlib.Path("wrote-here").write_text("x")
for step in range(1, 6):
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""


def test_a_bare_command_runs_supervised_in_this_directory(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "my_train.py").write_text(TRAIN)
    runs = tmp_path / "runs"
    proc = cli(runs, work, "run", "--detach", "--set", "restart.max_restarts=0", "--", sys.executable, "my_train.py")
    run_id = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else ""
    assert proc.returncode == 0, proc.stderr
    assert "-my_train-" in run_id, run_id               # named after its script
    run = Run(runs / run_id)
    state = run.wait_status("succeeded", timeout=90)
    assert state["status"] == "succeeded"
    assert (work / "wrote-here").exists()               # it ran where `run` was typed
    steps = [m["step"] for m in run.metrics()]
    assert steps[-1] == 5, steps                        # its own loss lines became metrics
    shown = cli(runs, work, "runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["status"] == "succeeded"
    text = cli(runs, work, "runs", "show", run_id).stdout   # what was run: no recipe file says it
    assert f"  command   {sys.executable} my_train.py\n" in text, text


def test_a_crashing_bare_command_is_classified_and_ends_failed(tmp_path):
    (tmp_path / "my_train.py").write_text(TRAIN)
    runs = tmp_path / "runs"
    proc = cli(runs, tmp_path, "run", "--detach", "--set", "restart.max_restarts=0", "--",
               sys.executable, "my_train.py", "3")
    run_id = proc.stdout.strip().splitlines()[0]
    # no checkpoints.dir: the warning names what to type for saves to be verified and resumed from
    assert "lint warning: no_checkpoint_dir:" in proc.stderr and "--set checkpoints.dir=DIR" in proc.stderr, \
        proc.stderr
    run = Run(runs / run_id)
    assert run.wait_status("failed", timeout=90)["status"] == "failed"
    assert "exited with code 3" in run.crash(1)["summary"], run.crash(1)
    # the run screen's second line after the crash: no checkpoint is watched, not "none good yet"
    # (its own script may have saved a dozen), and how to have them watched
    from moeconsole.console import format as fmt
    snap = cli(runs, tmp_path, "--json", run_id, "--once")
    d = json.loads(snap.stdout)
    assert d["run"]["checkpoint_root"] is None and d["run"]["last_good_checkpoint"] is None
    line = fmt.plain(fmt.status_lines(d["run"], show_last_good=True)[1])
    assert "checkpoints not watched: run with --set checkpoints.dir=DIR" in line, line
    assert "no good checkpoint yet" not in line, line


def test_a_command_given_without_the_dashes_is_answered_with_where_it_goes(tmp_path):
    (tmp_path / "my_train.py").write_text(TRAIN)
    runs = tmp_path / "runs"
    for words in (["python", "my_train.py"], ["my_train.py"], ["python", "-u", "my_train.py"]):
        proc = cli(runs, tmp_path, "run", *words)
        assert proc.returncode == 2, (words, proc.stderr)
        assert "a command to run goes after --: `moeconsole run -- python my_train.py`" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not runs.exists() or not any(runs.iterdir())  # nothing was created


def test_run_with_neither_or_both_is_one_line(tmp_path):
    runs = tmp_path / "runs"
    for words, said in ((["run"], "which recipe?"), (["run", "--"], "no command after --"),
                        (["run", "r.yaml", "--", "python", "x.py"], "not both")):
        proc = cli(runs, tmp_path, *words)
        assert proc.returncode == 2 and said in proc.stderr, (words, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1


def test_the_run_name_is_the_training_script():
    assert name_of_command(["python", "my_train.py", "--lr", "1e-4"]) == "my_train"
    assert name_of_command(["torchrun", "--nproc_per_node", "2", "scripts/train_moe.py"]) == "train_moe"
    assert name_of_command(["python", "-m", "torch.distributed.run", "--nproc_per_node=2", "t.py"]) == "t"
    assert name_of_command(["python", "-m", "pkg.sft"]) == "sft"
    assert name_of_command(["bash", "launch.sh"]) == "launch"
    assert name_of_command(["/usr/bin/swift", "sft"]) == "swift"
    assert name_of_command(["./my weird$name"]) == "my-weird-name"


def test_a_training_script_that_is_not_there_is_refused_before_launch(tmp_path):
    """`run -- python nosuch_train.py` started the run, and every attempt ended in Python's
    "can't open file" (exit 2), restarted as an unknown crash; lint names the script and where it
    looked (`script_missing`), a warning in `lint` and an error in `run`: nothing launched."""
    runs = tmp_path / "runs"
    proc = cli(runs, tmp_path, "run", "--detach", "--", sys.executable, "nosuch_train.py")
    assert proc.returncode == 1, proc.stderr
    assert f"lint error: script_missing: the training script 'nosuch_train.py' is not a file in {tmp_path}" \
        in proc.stderr, proc.stderr
    assert not runs.exists() or not any(runs.iterdir())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "train.py").write_text("print('step 1 loss 1.0')\n")
    recipe = tmp_path / "sub" / "r.yaml"
    recipe.write_text('command: [python3, train.py]\nworkdir: "{recipe_dir}"\n')
    linted = cli(runs, tmp_path, "lint", str(recipe), "--json")   # the script is where workdir says
    assert "script_missing" not in linted.stdout, linted.stdout
    recipe.write_text("command: [python3, train.py]\n")             # ... or not, from tmp_path
    linted = cli(runs, tmp_path, "lint", str(recipe))
    assert "warning script_missing" in linted.stdout and linted.returncode == 0, linted.stdout


def test_lint_names_what_to_type_for_saves_to_be_watched_and_resumed_from(tmp_path):
    """The two checkpoint warnings say which key to set, in a recipe and with `--set` on `run`
    (they said what was missing, not how to give it)."""
    (tmp_path / "my_train.py").write_text(TRAIN)
    for body, rule, words in (
            ("command: [python, my_train.py]\n", "no_checkpoint_dir",
             ("`checkpoints: {dir: DIR}` in a recipe", "`--set checkpoints.dir=DIR` on `run`")),
            ("command: [python, my_train.py]\ncheckpoints: {dir: out}\n", "no_resume_arg",
             ("`resume: {arg: FLAG}` in a recipe", "`--set resume.arg=FLAG` on `run`"))):
        (tmp_path / "r.yaml").write_text(body)
        out = cli(tmp_path / "runs", tmp_path, "lint", "r.yaml", "--json")
        found = [p for p in json.loads(out.stdout)["problems"] if p["rule"] == rule]
        assert found and all(w in found[0]["message"] for w in words), (rule, found)
