"""Review R65 of ms-swift round 6: `run`'s pre-flight of the training environment.

- Finding 1: `run` asked ms-swift's whole probe (20-40 s of import, nothing printed) for every `swift rlhf`
  launch, DPO/KTO/RM/CPO/ORPO/PPO included, whose trainers need nothing beyond ms-swift's requirements.
  Now it asks only the modules the command's trainer imports beyond them (``probe.TRAINER_NEEDS``, the one
  table lint reads too), by ``find_spec``, and only for the modes that need them; and says so first.
- Finding 6: `megatron rlhf` (every --rlhf_type: MegatronRLHFTrainer's module imports
  swift.rlhf_trainers.utils, which imports msgspec) was asked by neither lint nor run.
- Finding 2: a SIGTERM to `moeconsole run` during the pre-flight left the probe running; it is now
  started in a process group of its own and killed by its leader's PID whenever `run` ends first.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.swift.swift_helpers import REPO, SWIFT_PYTHON, cli, require_swift
from tests.swift.test_swift_grpo_round5 import rlhf_recipe
from tests.waiting import until

# A training Python that notes each start (its first arguments) before it becomes .venv-swift's own,
# or, with a pid file, holds still (a probe that takes long).
WRAPPER = '''#!{python}
import json, os, sys, time
with open({log!r}, "a") as f:
    f.write(json.dumps([a[:80] for a in sys.argv[1:3]]) + "\\n")
if {hold!r}:
    with open({hold!r}, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
os.execv({python!r}, [{python!r}, *sys.argv[1:]])
'''


def noting_python(where: Path, hold: Path | None = None) -> tuple[Path, Path]:
    log = where / "starts.jsonl"
    exe = where / "python-noting"
    exe.write_text(WRAPPER.format(python=str(SWIFT_PYTHON), log=str(log), hold=str(hold) if hold else ""))
    exe.chmod(0o755)
    return exe, log


def starts(log: Path) -> list[list[str]]:
    return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def has_msgspec() -> bool:
    return subprocess.run([str(SWIFT_PYTHON), "-c", "import msgspec"], capture_output=True, timeout=120).returncode == 0


def megatron_recipe(where: Path, rlhf_type: str) -> Path:
    path = where / f"megatron-{rlhf_type}.yaml"
    path.write_text(json.dumps({
        "name": "megatron-rlhf", "command": [str(REPO / ".venv-swift" / "bin" / "megatron"), "rlhf",
                                            "--model", str(where), "--rlhf_type", rlhf_type,
                                            "--output_dir", "{run_dir}/output"],
        "swift": {"version": "4.6.0", "python": str(SWIFT_PYTHON)}}))
    return path


@pytest.mark.parametrize("rlhf_type", ["dpo", "kto", None])
def test_a_swift_rlhf_run_whose_trainer_needs_nothing_more_starts_no_probe(tmp_path, rlhf_type):
    require_swift()
    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.recipes.lint import lint_recipe
    exe, log = noting_python(tmp_path)
    sets = [f"swift.python={exe}"] + ([f"args.rlhf_type={rlhf_type}"] if rlhf_type else [])
    problems = lint_recipe(recipes.load(rlhf_recipe(tmp_path), sets), preflight=True)
    assert starts(log) == [], "the pre-flight started the training Python"
    assert not [p for p in problems if p["rule"] == "swift_missing_module"]


def test_a_swift_sft_run_starts_no_probe(tmp_path):
    require_swift()
    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.recipes.lint import lint_recipe
    exe, log = noting_python(tmp_path)
    lint_recipe(recipes.load(REPO / "recipes" / "swift-tiny-cpu.yaml", [f"swift.python={exe}"]), preflight=True)
    assert starts(log) == []


def test_a_grpo_run_asks_only_for_the_module_and_names_it(tmp_path):
    require_swift()
    if has_msgspec():
        pytest.skip(".venv-swift has msgspec: nothing is missing")
    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.recipes.lint import lint_recipe
    exe, log = noting_python(tmp_path)
    recipe = recipes.load(rlhf_recipe(tmp_path), [f"swift.python={exe}", "args.rlhf_type=grpo"])
    said = [p for p in lint_recipe(recipe, preflight=True) if p["rule"] == "swift_missing_module"]
    assert len(said) == 1 and said[0]["level"] == "error", said
    assert "'msgspec'" in said[0]["message"] and "GRPOTrainer" in said[0]["message"]
    assert "pip install msgspec" in said[0]["message"]
    (asked,) = starts(log)            # one start: the module check (find_spec), not ms-swift's probe
    from moeconsole.runner.recipes.swift.probe import MISSING, PROBE
    assert asked == ["-c", MISSING[:80]] and asked[1] != PROBE[:80], asked


@pytest.mark.parametrize("rlhf_type", ["dpo", "grpo"])
def test_lint_and_run_of_a_megatron_rlhf_recipe_name_the_missing_msgspec(tmp_path, rlhf_type):
    require_swift()
    if has_msgspec():
        pytest.skip(".venv-swift has msgspec: nothing is missing")
    recipe = megatron_recipe(tmp_path, rlhf_type)
    out = cli(None, "lint", str(recipe))
    said = [ln for ln in out.stdout.splitlines() if "swift_missing_module" in ln]
    assert len(said) == 1, out.stdout + out.stderr
    assert "'msgspec'" in said[0] and f"--rlhf_type {rlhf_type}" in said[0] and "pip install msgspec" in said[0]
    runs = tmp_path / "runs"
    proc = cli(runs, "run", str(recipe), "--detach")
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "lint error: swift_missing_module" in proc.stderr and "'msgspec'" in proc.stderr
    assert "nothing launched" in proc.stderr
    assert "checking that" in proc.stderr and "has msgspec" in proc.stderr


def _alive(pid: int, created: float) -> bool:
    try:
        p = psutil.Process(pid)
        return p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_doctor_ended_during_its_probe_leaves_no_probe_running(tmp_path):
    require_swift()   # the probe is the swift environment's python: without it none starts (it waited 180 s)
    hold = tmp_path / "probe.pid"
    exe, _ = noting_python(tmp_path, hold=hold)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    doctor = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "doctor", "--python", str(exe)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, env=env,
                              start_new_session=True)
    probe: tuple[int, float] | None = None
    try:
        until(lambda: hold.exists() and hold.read_text(), timeout=180, what="doctor's probe started")
        pid = int(hold.read_text())
        probe = (pid, psutil.Process(pid).create_time())
        os.kill(doctor.pid, signal.SIGTERM)
        doctor.wait(timeout=120)
        until(lambda: not _alive(*probe), timeout=120, what="the probe ended with `doctor`")
    finally:
        if probe and _alive(*probe):
            os.kill(probe[0], signal.SIGKILL)
        if doctor.poll() is None:
            os.kill(doctor.pid, signal.SIGKILL)
            doctor.wait(timeout=120)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_run_ended_during_its_pre_flight_leaves_no_probe_running(tmp_path, sig):
    require_swift()
    hold = tmp_path / "probe.pid"
    exe, _ = noting_python(tmp_path, hold=hold)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    err = tmp_path / "run.err"
    with open(err, "w") as stderr:
        run = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "run", str(rlhf_recipe(tmp_path)),
                                "--detach", "--set", f"swift.python={exe}", "--set", "args.rlhf_type=grpo",
                                "--runs-dir", str(tmp_path / "runs")],
                               stdout=subprocess.DEVNULL, stderr=stderr, cwd=REPO, env=env, start_new_session=True)
    probe: tuple[int, float] | None = None
    try:
        until(lambda: hold.exists() and hold.read_text(), timeout=180, what="the pre-flight's probe started")
        pid = int(hold.read_text())
        probe = (pid, psutil.Process(pid).create_time())
        said = err.read_text()   # while it waits
        os.kill(run.pid, sig)
        run.wait(timeout=120)
        until(lambda: not _alive(*probe), timeout=120, what="the probe ended with `run`")
    finally:
        if probe and _alive(*probe):
            os.kill(probe[0], signal.SIGKILL)
        if run.poll() is None:
            os.kill(run.pid, signal.SIGKILL)
            run.wait(timeout=120)
    assert "checking that" in said and "has msgspec" in said, said
    assert run.returncode == -sig, (run.returncode, err.read_text())
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


# ---- Finding 3: the eval chart says the unsaved best as `runs show` does ------------------------------
def _save(where: Path, args: dict, best_step: int, best_value: float, evals: dict[int, float]) -> Path:
    """A transformers save naming checkpoint-4 best while a better evaluation (``best_step``) fell between
    saves (trainer.py l.3329-3351: best_model_checkpoint is a save it made; best_metric/best_global_step the
    best evaluation's)."""
    out = where / "v0-1"
    named, newest = out / "checkpoint-4", out / "checkpoint-8"
    for d in (named, newest):
        d.mkdir(parents=True, exist_ok=True)
    (newest / "args.json").write_text(json.dumps(args))
    (newest / "trainer_state.json").write_text(json.dumps({
        "global_step": 8, "best_metric": best_value, "best_global_step": best_step,
        "best_model_checkpoint": str(named),
        "log_history": [{"step": s, "eval_loss": v} for s, v in evals.items()]}))
    return newest


def test_the_eval_chart_never_calls_best_a_save_the_plot_beats_without_saying_the_best_was_not_saved(tmp_path):
    from moeconsole.console import format as fmt
    from moeconsole.console.widgets.charts import eval_heading
    from moeconsole.runner.checkpoints.discover import best_save_named
    from moeconsole.runner.core.series import Series
    evals = {2: 1.0, 4: 0.9, 6: 0.5, 8: 0.95}
    kept = best_save_named(_save(tmp_path, {"metric_for_best_model": "loss", "greater_is_better": False}, 6, 0.5, evals))
    assert kept is not None and kept["unsaved"] == {"step": 6, "value": 0.5}
    ev = Series()
    for step, loss in evals.items():
        ev.append(step, loss)
    wide = eval_heading(ev, "eval", 4, kept)[0]
    shown = fmt.best_words({**kept, "ok": True})
    assert shown == ("checkpoint-4 (step 4, eval_loss 0.9, lower is better): verified ok; "
                     "the best evaluation (step 6, eval_loss 0.5) was not saved")
    assert wide == ("eval loss 0.95; kept checkpoint-4 (step 4, eval_loss 0.9, lower is better); "
                    "the best evaluation (step 6, eval_loss 0.5) was not saved (4 evals)"), wide
    assert " best eval_loss 0.9" not in wide


# ---- Finding 8: an args.json without greater_is_better is compared as transformers compares ----------
@pytest.mark.parametrize("metric, higher", [("loss_ema", True), ("eval_loss_smoothed", True), ("val_loss_avg", True),
                                            ("loss", False), ("token_acc", True)])
def test_a_best_save_without_greater_is_better_is_said_in_the_direction_transformers_used(tmp_path, metric, higher):
    """transformers' TrainingArguments: ``greater_is_better = not metric_for_best_model.endswith("loss")``
    (training_args.py l.1559-1560); ms-swift writes the bool into args.json always (sft_args.py l.433-434)."""
    from moeconsole.console import format as fmt
    from moeconsole.runner.checkpoints.discover import best_save_named
    kept = best_save_named(_save(tmp_path, {"metric_for_best_model": metric}, 4, 0.9, {4: 0.9}))
    assert kept is not None and kept["greater_is_better"] is higher
    assert ("higher is better" if higher else "lower is better") in (fmt.best_words(kept) or "")


# ---- Findings 4, 5, 7: parse's record watches -------------------------------------------------------
def parse(path: Path) -> str:
    proc = cli(None, "parse", str(path))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _without_markers(tmp_path: Path, restart: bool) -> Path:
    from tests.swift.test_swift_round6 import _two_attempts
    marked = _two_attempts(tmp_path / f"marked-{restart}.log", restart=restart)
    plain = tmp_path / f"appended-{restart}.log"   # `swift sft ... >> train.log`, then a resume >> train.log
    plain.write_text("".join(ln + "\n" for ln in marked.read_text().splitlines() if "moeconsole: attempt" not in ln))
    return plain


def test_parse_of_an_appended_log_without_markers_warns_of_the_restarted_schedule(tmp_path):
    out = parse(_without_markers(tmp_path, restart=True))
    assert "1 restart" in out
    assert "alerts       1 warning lr_schedule_restarted" in out, out
    assert "the resume logged in the same file restarted the learning-rate schedule" in out, out
    assert "alerts       none" in parse(_without_markers(tmp_path, restart=False))


def test_the_runners_watch_finds_a_resume_within_one_attempt_as_parse_does(tmp_path):
    """The live runner gives its watches its own attempt number: a command that resumes into the same
    attempt's log (the step going back) is found by the same code (core.record_watches)."""
    import ast
    from moeconsole.runner.core.record_watches import RecordWatches
    recs = [ast.literal_eval(ln) for ln in _without_markers(tmp_path, restart=True).read_text().splitlines()]
    dicts = [{"step": int(r["global_step/max_steps"].split("/")[0]), "lr": r["learning_rate"]} for r in recs]
    watches = RecordWatches()
    said = watches.observe(dicts[:25], 1) + watches.observe(dicts[25:], 1)
    assert [a["rule"] for a in said] == ["lr_schedule_restarted"] and said[0]["step"] == 31, said


class _KeyWatch:
    """A watch added to the list that declares a key of its own: it speaks on the first record it is given
    (so it shows whether parse read the records' dicts at all)."""
    NEEDS_KEYS = ("r65_probe_key",)
    NEEDS_ATTEMPTS = False

    def observe(self, records, attempt=None):
        return [{"level": "warning", "rule": "r65_key_seen", "step": r.get("step"), "message": "seen"}
                for r in records][:1]


def test_parse_reads_the_records_for_a_watch_by_what_the_watch_itself_declares(tmp_path, monkeypatch):
    from moeconsole.runner.core import record_watches
    from moeconsole.runner.ingest.summary import summarize_path
    real_init = record_watches.RecordWatches.__init__

    def with_key_watch(self, thresholds=None):
        real_init(self, thresholds)
        self.watches = (*self.watches, _KeyWatch())
    monkeypatch.setattr(record_watches.RecordWatches, "__init__", with_key_watch)
    keyed, plain = tmp_path / "keyed.log", tmp_path / "plain.log"
    keyed.write_text("".join(str({"loss": 1.0 / s, "r65_probe_key": 0.5, "global_step/max_steps": f"{s}/9"}) + "\n"
                             for s in range(1, 10)))
    plain.write_text("".join(str({"loss": 1.0 / s, "global_step/max_steps": f"{s}/9"}) + "\n" for s in range(1, 10)))
    summary, _ = summarize_path(keyed, workers=1)
    assert "r65_key_seen" in str(summary.to_dict()), summary.to_dict()
    summary, _ = summarize_path(plain, workers=1)   # nothing a watch reads: the columns alone, no record read
    assert summary.to_dict()["records"] == 9 and "r65_key_seen" not in str(summary.to_dict())
