"""Review R53 (s4) finding 3: the best save's verdict is looked up among the runner's checkpoint events, which
name each save by its resolved path (supervisor's ``Path(dir).resolve()``), while the Trainer names it by the
output dir as given (ms-swift's ``to_abspath`` keeps symlinks) or as it was on another machine. Before: "not
verified (deleted before, or not yet)" for a save the runner verified ok."""
from __future__ import annotations

import json
import os

from moeconsole.console.format import best_words
from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.snapshot import RunWatcher


def _run_with_best(tmp_path, named_out: str):
    real = tmp_path / "real" / "out"
    for step in (8, 12):
        (real / f"checkpoint-{step}").mkdir(parents=True)
    (real / "checkpoint-12" / "trainer_state.json").write_text(json.dumps({
        "global_step": 12, "best_metric": 6.8, "best_global_step": 8,
        "best_model_checkpoint": f"{named_out}/checkpoint-8",
        "log_history": [{"step": 8, "eval_loss": 6.8}, {"step": 12, "eval_loss": 7.1}]}))
    (real / "checkpoint-12" / "args.json").write_text(json.dumps({"metric_for_best_model": "loss"}))
    root = real.resolve()
    run = rundir.create(tmp_path / "runs", "best")
    run.write_state({"status": "succeeded", "name": "best", "attempt": 1, "stale_after_s": 30.0,
                     "checkpoint_root": str(root), "resume_point": {"path": str(root / "checkpoint-12"), "step": 12}})
    for step in (8, 12):
        run.event("checkpoint", path=str(root / f"checkpoint-{step}"), step=step, verdict="ok", ok=True)
    return run


def test_the_best_save_verified_ok_is_found_through_a_symlinked_output_dir(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")     # --output_dir /home/u/out with /home a symlink
    run = _run_with_best(tmp_path, str(tmp_path / "link" / "out"))
    best = RunWatcher(run).poll(with_gpu=False).run["best_checkpoint"]
    assert best["ok"] is True and best["verdict"] == "ok", best
    assert best_words(best) == "checkpoint-8 (step 8, eval_loss 6.8, lower is better): verified ok"


def test_the_best_save_of_a_run_dir_moved_from_another_machine_is_found_by_its_own_directory(tmp_path):
    run = _run_with_best(tmp_path, "/home/someone-else/out")
    best = RunWatcher(run).poll(with_gpu=False).run["best_checkpoint"]
    assert best["ok"] is True and best["path"] == str((tmp_path / "real" / "out" / "checkpoint-8").resolve()), best


def test_a_best_save_never_verified_is_still_said_so(tmp_path):
    run = _run_with_best(tmp_path, str(tmp_path / "real" / "out"))
    (tmp_path / "real" / "out" / "checkpoint-12" / "trainer_state.json").write_text(json.dumps({
        "global_step": 12, "best_metric": 6.8, "best_global_step": 4,
        "best_model_checkpoint": str(tmp_path / "real" / "out" / "checkpoint-4"), "log_history": []}))
    best = RunWatcher(run).poll(with_gpu=False).run["best_checkpoint"]
    assert best["ok"] is None and best_words(best).endswith("not verified (deleted before, or not yet)")
