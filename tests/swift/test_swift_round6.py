"""ms-swift round 6: what `run` refuses up front, and the monitors of a log read after the fact.

- `moeconsole run` of a `swift rlhf` recipe whose trainer cannot be imported in the training Python
  (ms-swift 4.6.0's GRPOTrainer imports ``msgspec``, which ms-swift does not require) is refused before
  anything starts, by lint's own probe (``swift_missing_module``), nothing launched. Before: the run
  started, loaded its model and failed at start-up (``missing_dependency``).
- `moeconsole parse LOG` runs the record watches the live runner runs (``core.record_watches``): a GRPO
  log whose every group scored alike is the same ``reward_no_signal`` warning, a resumed attempt that
  restarted the LR schedule the same ``lr_schedule_restarted``. Before: "alerts none".
"""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from moeconsole.runner.rundir.rundir import attempt_marker_line
from tests.swift.swift_helpers import REPO, SWIFT_PYTHON, cli, end_by_pid, processes_of, require_swift
from tests.swift.test_swift_grpo_round5 import GRPO, prompts, rlhf_recipe

CORPUS = REPO / "tests" / "ingest" / "corpus"


def parse(path: Path, *more: str) -> str:
    proc = cli(None, "parse", str(path), *more)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ---- run's pre-flight --------------------------------------------------------------------------
def test_run_refuses_a_grpo_recipe_whose_trainer_cannot_be_imported_before_anything_starts(tiny, tmp_path):
    require_swift()
    has = subprocess.run([str(SWIFT_PYTHON), "-c", "import msgspec"], capture_output=True, timeout=120)
    if has.returncode == 0:
        pytest.skip(".venv-swift has msgspec: nothing is missing")
    runs = tmp_path / "runs"
    sets = [a for o in (f"args.model={tiny / 'model'}", f"args.dataset={prompts(tiny, tmp_path)}", *GRPO,
                        "args.reward_funcs=format") for a in ("--set", o)]
    try:
        proc = cli(runs, "run", str(rlhf_recipe(tmp_path)), "--detach", *sets)
    finally:   # a run that was launched after all (the code before) is ended by its PIDs
        if runs.exists():
            end_by_pid(processes_of(runs))
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    said = [ln for ln in proc.stderr.splitlines() if "swift_missing_module" in ln]
    assert len(said) == 1 and said[0].startswith("lint error:"), proc.stderr
    assert "'msgspec'" in said[0] and "GRPOTrainer" in said[0] and "pip install msgspec" in said[0]
    assert "nothing launched" in proc.stderr
    assert not runs.exists() or not any(runs.iterdir()), "a run directory was made"


# ---- parse runs the runner's record watches ------------------------------------------------------
def test_parse_of_a_grpo_log_whose_groups_all_scored_alike_warns_as_the_runner_does():
    log = CORPUS / "ms_swift_grpo_multi_turn_mcp_zero3_dicts_then_bar_glued_info_swift_traceback_2025.log"
    out = parse(log)
    assert "alerts       1 warning reward_no_signal" in out, out
    assert "every group's rewards were equal at steps 1-5" in out and "--num_generations" in out
    off = parse(log, "--no-monitors")
    assert "reward_no_signal" not in off and "(monitors off)" in off


def _lr(step: int, warm: int = 10, total: int = 100, peak: float = 2e-5, floor: float = 2e-6) -> float:
    if step <= warm:
        return peak * step / warm
    return floor + 0.5 * (math.cos(math.pi * (step - warm) / (total - warm)) + 1) * (peak - floor)


def _two_attempts(path: Path, restart: bool) -> Path:
    """A runner's train.log of two attempts (its own attempt markers) of transformers' dicts; the second
    resumed at step 30 with its schedule at 0 again (``restart``) or continued."""
    lines = [attempt_marker_line(1, "2026-12-01T10:00:00Z", ["swift", "sft"])]
    lines += [str({"loss": 2 - s / 100, "grad_norm": 0.5, "learning_rate": _lr(s), "epoch": s / 100,
                   "global_step/max_steps": f"{s}/100"}) for s in range(1, 41)]
    lines.append(attempt_marker_line(2, "2026-12-01T11:00:00Z", ["swift", "sft"]))
    lines += [str({"loss": 2 - s / 100, "grad_norm": 0.5, "learning_rate": _lr(s - 30 if restart else s),
                   "epoch": s / 100, "global_step/max_steps": f"{s}/100"}) for s in range(31, 61)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_parse_of_a_resumed_log_whose_schedule_restarted_warns_as_the_runner_does(tmp_path):
    out = parse(_two_attempts(tmp_path / "restarted.log", restart=True))
    assert "alerts       1 warning lr_schedule_restarted" in out, out
    assert "attempt 2 restarted the learning-rate schedule" in out
    assert "alerts       none" in parse(_two_attempts(tmp_path / "continued.log", restart=False))


# ---- the best save is the Trainer's, by its metric and direction ---------------------------------
def test_a_best_save_kept_by_a_metric_where_higher_is_better_is_named_with_its_metric_and_direction(swift_runs, tiny):
    """`--metric_for_best_model token_acc`: ms-swift sets ``greater_is_better`` to ``'loss' not in metric``
    (swift/arguments/sft_args.py l.433-434: True), and the Trainer keeps the highest evaluation (trainer.py
    l.3413 ``np.greater``; a tie keeps the earlier one). `--json`'s `best_checkpoint` and `runs show` name that
    save with its metric and "higher is better". Before: no direction anywhere, and the eval chart's "best"
    was the lowest eval loss whatever the Trainer kept."""
    require_swift()
    from tests.swift.swift_helpers import start
    from tests.swift.test_swift_modes import swift_logged
    run = start(swift_runs, tiny, "args.max_steps=8", "args.save_steps=2", "args.eval_steps=2",
                "args.split_dataset_ratio=0.05", "args.load_best_model_at_end=true",
                "args.metric_for_best_model=token_acc")
    state = run.wait_while_moving(lambda s: s.get("status") == "succeeded", "status succeeded")
    accs = {int(r["global_step/max_steps"].split("/")[0]): r["eval_token_acc"]
            for r in swift_logged(run) if "eval_token_acc" in r}
    assert sorted(accs) == [2, 4, 6, 8], accs
    best_step = next(s for s in sorted(accs) if accs[s] == max(accs.values()))   # np.greater: the first highest
    snap = cli(None, "--json", str(run.path), "--once", "--no-gpu")
    assert snap.returncode == 0, snap.stderr
    best = json.loads(snap.stdout.splitlines()[0])["run"]["best_checkpoint"]
    assert (best["step"], best["metric"], best["greater_is_better"]) == (best_step, "eval_token_acc", True), best
    assert best["value"] == pytest.approx(accs[best_step], rel=1e-3)
    shown = cli(swift_runs, "runs", "show", run.id)
    (line,) = [ln for ln in shown.stdout.splitlines() if ln.strip().startswith("best ")]
    assert f"checkpoint-{best_step} (step {best_step}, eval_token_acc " in line and ", higher is better)" in line, line
    # the eval chart's heading: the Trainer's best (its metric, value, step, direction), never the lowest loss
    from moeconsole.console.widgets.charts import eval_heading
    from moeconsole.runner.rundir.rundir import RunDir
    from moeconsole.runner.rundir.snapshot import RunWatcher
    seen = RunWatcher(RunDir(run.path)).poll(with_gpu=False)
    (wide, _) = eval_heading(seen.eval_series, "eval", seen.eval_count, seen.run["best_checkpoint"])
    assert f"; kept checkpoint-{best_step} (step {best_step}, eval_token_acc " in wide, wide
    assert wide.endswith(", higher is better) (4 evals)"), wide
    assert state["status"] == "succeeded"


def test_the_eval_charts_best_is_the_trainers_and_without_one_the_lowest_loss_is_said_as_min(tmp_path):
    """A GRPO run keeps its best by the reward, higher better (swift/arguments/rlhf_args.py l.475-478): the
    chart names that save's reward, not the lowest eval loss (before: "best 0.4 @4", the loss's minimum)."""
    from moeconsole.console.widgets.charts import eval_heading
    from moeconsole.runner.checkpoints.discover import best_save_named
    from moeconsole.runner.core.series import Series
    ev = Series()
    for step, loss in ((2, 0.9), (4, 0.4), (6, 0.7)):
        ev.append(step, loss)
    out = tmp_path / "v0-1"
    save = out / "checkpoint-6"
    save.mkdir(parents=True)
    (save / "args.json").write_text(json.dumps({"rlhf_type": "grpo", "metric_for_best_model": "reward",
                                                "greater_is_better": True}))
    (save / "trainer_state.json").write_text(json.dumps({
        "global_step": 6, "best_metric": 0.75, "best_global_step": 6, "best_model_checkpoint": str(save),
        "log_history": [{"step": 6, "eval_reward": 0.75, "eval_loss": 0.7}]}))
    kept = best_save_named(save)
    assert kept is not None
    assert eval_heading(ev, "eval", 3, kept)[0] == \
        "eval loss 0.7; kept checkpoint-6 (step 6, eval_reward 0.75, higher is better) (3 evals)"
    assert eval_heading(ev, "eval", 3, {})[0] == "eval loss 0.7 min 0.4 @4 (3 evals)"
