"""The modes users run with the real ms-swift 4.6 (a few steps each, on CPU), run by the real CLI
and runner: what moeconsole shows and writes against what ms-swift printed and saved."""
from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from tests.swift.swift_helpers import RECIPE, Run, cli, require_swift, running, start


def swift_logged(run: Run) -> list[dict]:
    """ms-swift's own logging.jsonl records of the run (every v<N>-<time>/ dir, in order)."""
    out = []
    for logfile in sorted((run.path / "output").glob("v*-*/logging.jsonl")):
        out += [json.loads(line) for line in logfile.read_text().splitlines()]
    return out


def evals_of(run: Run) -> list[dict]:
    try:
        return [json.loads(line) for line in (run.path / "evals.jsonl").read_text().splitlines()]
    except OSError:
        return []


@pytest.fixture(scope="module")
def evaluated(swift_runs, tiny) -> Run:
    """`--eval_steps 4 --split_dataset_ratio 0.1`: ms-swift evaluates at steps 4 and 8."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=8", "args.save_steps=4", "args.eval_steps=4",
                "args.split_dataset_ratio=0.1")
    run.wait(lambda s: s.get("status") == "succeeded", "status succeeded")
    return run


def test_evaluations_are_the_ones_ms_swift_logged_and_nothing_else(evaluated):
    """The `eval_steps=4.0,` line of ms-swift's argument dump and its `run sh:` command line were
    evaluations without a step (evals.jsonl, the run screen's eval pane) before the real ones."""
    logged = [(int(r["global_step/max_steps"].split("/")[0]), r["eval_loss"])
              for r in swift_logged(evaluated) if "eval_loss" in r]
    assert [s for s, _ in logged] == [4, 8]
    evals = evals_of(evaluated)
    assert [(e["step"], e["split"], e["src"]) for e in evals] == [(4, "eval", "swift_dict"), (8, "eval", "swift_dict")]
    for e, (_, loss) in zip(evals, logged):
        assert e["loss"] == pytest.approx(loss, rel=1e-3)
        assert e["values"]["eval_token_acc"] >= 0
    # the evaluation dicts are no training steps
    assert [m["step"] for m in evaluated.metrics()] == list(range(1, 9))
    # what `moeconsole --json RUN --once` shows
    snap = cli(None, "--json", str(evaluated.path), "--once", "--no-gpu")
    assert snap.returncode == 0, snap.stderr
    shown = json.loads(snap.stdout.splitlines()[0])["eval"]
    assert shown["count"] == 2 and [s for s, _ in shown["loss"]] == [4, 8]


def test_the_best_save_by_evaluation_is_shown_with_its_verdict(swift_runs, tiny):
    """`--load_best_model_at_end true --metric_for_best_model loss`: transformers keeps the best evaluation's
    value and step and names `checkpoint-<best step>` in each save's trainer_state.json (trainer.py
    l.3336-3353, l.3399-3420). Before, moeconsole showed no best save anywhere (only the resume point); now
    `--json` (`run.best_checkpoint`) and `runs show` name it, its `eval_loss` and the runner's verdict on it."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=8", "args.save_steps=4", "args.eval_steps=4",
                "args.split_dataset_ratio=0.05", "args.load_best_model_at_end=true", "args.metric_for_best_model=loss")
    state = run.wait_while_moving(lambda s: s.get("status") == "succeeded", "status succeeded")
    evals = {int(r["global_step/max_steps"].split("/")[0]): r["eval_loss"]
             for r in swift_logged(run) if "eval_loss" in r}
    assert sorted(evals) == [4, 8], evals
    (newest,) = [Path(e["path"]) for e in run.ok_checkpoints() if e["step"] == 8]
    named = json.loads((newest / "trainer_state.json").read_text())
    best_step = min(evals, key=evals.get)
    assert named["best_global_step"] == best_step and named["best_model_checkpoint"].endswith(f"checkpoint-{best_step}")
    snap = cli(None, "--json", str(run.path), "--once", "--no-gpu")
    assert snap.returncode == 0, snap.stderr
    best = json.loads(snap.stdout.splitlines()[0])["run"]["best_checkpoint"]
    assert (best["path"], best["step"], best["metric"]) == (named["best_model_checkpoint"], best_step, "eval_loss"), best
    assert best["value"] == pytest.approx(evals[best_step], rel=1e-3) and (best["verdict"], best["ok"]) == ("ok", True)
    shown = cli(swift_runs, "runs", "show", run.id)
    (line,) = [ln for ln in shown.stdout.splitlines() if ln.strip().startswith("best ")]
    assert f"checkpoint-{best_step} (step {best_step}, eval_loss " in line and line.endswith(": verified ok"), line
    assert state["status"] == "succeeded"


@pytest.mark.parametrize("override, said", [
    # swift/template/register.py l.50: one 3.5 KB line naming every template it knows
    ("args.template=qwen9_nope", "template_type: 'qwen9_nope' not in ["),
    # swift/dataset/loader.py l.92
    ("args.dataset=/nonexistent/z7/data.jsonl", "The local path does not exist, dataset_id: `/nonexistent/z7/data.jsonl`"),
])
def test_ms_swifts_start_up_refusals_fail_at_once_as_config_errors(swift_runs, tiny, override, said):
    """ms-swift refuses before training starts: one attempt, `config_error`, failed (no restart),
    and the line the user sees is ms-swift's own. The unknown template was `unknown` ("exited
    with code 1") and restarted three times: the runner's log tail kept only the end of that line."""
    require_swift()
    run = start(swift_runs, tiny, override)
    state = run.wait(lambda s: s.get("status") == "failed", "status failed")
    assert state["restarts"] == 0 and state["attempt"] == 1
    (crash,) = run.events("crash")
    assert (crash["class"], crash["decision"]) == ("config_error", "fail")
    assert said in crash["summary"] and said in state["pause_reason"]
    assert run.metrics() == []


def test_a_save_cut_short_by_sigterm_is_never_the_resume_point(swift_runs, tiny):
    """SIGTERM to the whole tree (what a scheduler's preemption sends) while ms-swift writes a
    save (the first one not begun once checkpoint-4 is verified: the tiny trainer can be saves
    ahead of the runner): what is left is verified not ok (measured: an empty dir, `README.md` +
    `adapter_model.safetensors`, or the weights without `trainer_state.json`), and the automatic
    restart resumes from the save before it, the newest whole one."""
    import os
    import signal
    import time

    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4")
    state = run.wait(lambda s: any(e["step"] == 4 for e in run.ok_checkpoints()) and s.get("pids"),
                     "checkpoint-4 verified")
    leader = next(p for p in state["pids"] if p.get("role") == "leader")
    assert running(leader["pid"], leader["start_time"]) and "swift" in " ".join(psutil.Process(leader["pid"]).cmdline())
    pgid = os.getpgid(leader["pid"])      # the training's group: the `swift` wrapper and its trainer
    # The save to cut: the first one not begun yet (a fast trainer may be saves ahead of the runner).
    out = run.path / "output"
    begun = [int(p.name.split("-")[1]) for p in out.glob("v0-*/checkpoint-*") if p.name.split("-")[1].isdigit()]
    step = max(begun, default=4) + 4
    deadline = time.monotonic() + 240
    target = None
    while time.monotonic() < deadline and target is None:
        # the moment checkpoint-<step>/ holds its first weights file (the save has begun)
        target = next((p for p in out.glob(f"v0-*/checkpoint-{step}")
                       if any(f.name.endswith(".safetensors") for f in p.iterdir())), None)
        if target is None:
            time.sleep(0.0005)
    assert target is not None, f"checkpoint-{step} was never started"
    os.killpg(pgid, signal.SIGTERM)
    state = run.wait(lambda s: s.get("attempt") == 2, "the automatic restart")
    left = {f.name for f in target.iterdir()} - {"moeconsole.json"}
    (saved,) = [e for e in run.events("checkpoint") if e["step"] == step and e["attempt"] == 1]
    (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
    resume = start2["argv"][start2["argv"].index("--resume_from_checkpoint") + 1]
    try:
        if "trainer_state.json" in left:    # the signal came after the last file: a whole save
            assert saved["ok"] and resume == str(target), (left, saved)
        else:
            assert not saved["ok"] and saved["verdict"] in ("incomplete", "missing_config", "empty_stub"), \
                (left, saved)
            assert resume.endswith(f"/checkpoint-{step - 4}"), (left, resume)
    finally:
        cli(swift_runs, "kill", run.id)


def test_an_output_dir_moved_away_from_checkpoints_dir_is_refused_and_followed_when_both_move(
        swift_runs, tiny, tmp_path_factory):
    """`--set args.output_dir=DIR` alone: ms-swift saved `DIR/checkpoint-4` and the run ended `unsaved`
    ("no checkpoint was saved under <run>/output", the recipe's checkpoints.dir): nothing verified,
    no resume point for a restart. Now `run` refuses it before anything starts; with checkpoints.dir
    moved too (and `--add_version false`: the saves straight in DIR) the saves are found and verified."""
    require_swift()
    elsewhere = tmp_path_factory.mktemp("swift-out")
    def runs() -> set:   # the run directories (the index's -wal/-shm come and go with its last reader)
        return {p for p in swift_runs.iterdir() if p.is_dir()}
    before = runs()
    proc = cli(swift_runs, "run", str(RECIPE), "--detach", "--set", f"args.model={tiny / 'model'}",
               "--set", f"args.dataset={tiny / 'data.jsonl'}", "--set", f"args.output_dir={elsewhere}")
    assert proc.returncode != 0 and "swift_output_elsewhere" in proc.stderr, (proc.returncode, proc.stderr)
    assert f"--set checkpoints.dir={elsewhere}" in proc.stderr and "Traceback" not in proc.stderr
    assert runs() == before and list(elsewhere.iterdir()) == []   # nothing launched

    run = start(swift_runs, tiny, f"args.output_dir={elsewhere}", f"checkpoints.dir={elsewhere}",
                "args.add_version=false", "args.max_steps=4", "args.save_steps=4")
    state = run.wait(lambda s: s.get("status") == "succeeded", "status succeeded")
    (ok,) = run.ok_checkpoints()
    assert ok["path"] == str(elsewhere / "checkpoint-4") and ok["tensors"] > 0, ok
    assert state["resume_point"]["path"] == str(elsewhere / "checkpoint-4"), state.get("resume_point")


def test_a_dependency_an_option_needs_fails_at_once_as_missing_dependency(swift_runs, tiny):
    """`--predict_with_generate true` makes ms-swift's metric `nlg`, and it asks for jieba at start-up
    (swift/arguments/sft_args.py l.427, transformers' require_version: `importlib.metadata.
    PackageNotFoundError: No package metadata was found for The 'jieba' distribution was not found ...`).
    That was `unknown`, restarted 3 times to the same end; now `missing_dependency`, failed after one
    attempt, with the pip install that fixes it."""
    import subprocess

    from tests.swift.swift_helpers import SWIFT_PYTHON
    require_swift()
    if subprocess.run([str(SWIFT_PYTHON), "-c", "import jieba"], capture_output=True).returncode == 0:
        pytest.skip("jieba is installed in .venv-swift: ms-swift does not refuse")
    run = start(swift_runs, tiny, "args.predict_with_generate=true", "args.eval_steps=2",
                "args.split_dataset_ratio=0.03", "args.max_steps=4")
    state = run.wait(lambda s: s.get("status") == "failed", "status failed")
    assert state["restarts"] == 0 and state["attempt"] == 1
    (crash,) = run.events("crash")
    assert (crash["class"], crash["decision"]) == ("missing_dependency", "fail"), crash
    assert "Python package 'jieba' is not installed" in crash["summary"], crash["summary"]
    assert run.metrics() == []
