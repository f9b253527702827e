"""transformers' EarlyStoppingCallback stop read from an earlier save and the evaluations logged after it
(runner/core/ending.py ``early_stop_replayed``, runner/checkpoints/discover.py ``early_stop_state``/``logged_evals``,
the keeper's ``stop_saves``): the stopping step's save deleted by ``--save_total_limit 1`` (trainer.py 5.19
``_finalize_training`` l.2005-2011) or never made. tests/swift/test_swift_round11.py is the real run; these files
imitate what it left (checkpoint-2's trainer_state.json and args.json, ms-swift's logging.jsonl, patcher.py
l.18-26). Refusals: an evaluation that improved resets the counter, one without the metric is skipped (the callback
only warns), a replayed stop at another step than the training's last is no proof of this end."""
from __future__ import annotations

import json
from pathlib import Path

from moeconsole.runner.checkpoints.discover import early_stop_state, logged_evals
from moeconsole.runner.core.ending import EarlyStopState, early_stop_replayed, early_stopped, short_end

KEPT = EarlyStopState(step=2, name="checkpoint-2", patience=2, threshold=0.0, counter=0, best=6.93149376,
                      metric="eval_loss", greater=False)


def _evals(*pairs: tuple[int, float]) -> list[tuple[int, dict]]:
    return [(s, {"eval_loss": v, "eval_runtime": 1.0}) for s, v in pairs]


def test_two_evaluations_not_better_reach_patience_two_at_the_last_one():
    got = early_stop_replayed(KEPT, _evals((2, 6.93149376), (4, 6.93149376), (6, 6.93149376)))
    assert got is not None and (got.step, got.early_stopping, got.asked) == (6, (2, 2), False)
    end = short_end(6, 30, ["{'global_step/max_steps': '6/30'}"], 2, [got])
    assert end is not None and end.stopped_by == "transformers EarlyStoppingCallback"
    assert end.stop_line == ("checkpoint-2/trainer_state.json: EarlyStoppingCallback's early_stopping_patience 2 "
                             "(threshold 0, counter 0 at step 2), and the evaluations at steps 4, 6 did not improve "
                             "eval_loss on 6.931494: the counter reached 2 at step 6, where the save of that step is "
                             "not on disk")


def test_an_improvement_resets_the_counter_and_a_worse_one_only_counts():
    # step 4 better (reset, new best), 6 and 8 worse: the counter reaches 2 at step 8, not 6
    got = early_stop_replayed(KEPT, _evals((4, 6.9), (6, 6.95), (8, 6.91)))
    assert got is not None and got.step == 8
    # a better value within the threshold counts as no improvement, and becomes the Trainer's best
    kept = EarlyStopState(2, "checkpoint-2", 2, 0.05, 0, 6.93, "eval_loss", False)
    assert early_stop_replayed(kept, _evals((4, 6.9), (6, 6.89))).step == 6   # type: ignore[union-attr]
    # higher is better (eval_token_acc): a higher value resets
    acc = EarlyStopState(2, "checkpoint-2", 1, 0.0, 0, 0.5, "eval_token_acc", True)
    assert early_stop_replayed(acc, [(4, {"eval_token_acc": 0.6}), (6, {"eval_token_acc": 0.6})]).step == 6  # type: ignore[union-attr]


def test_refusals():
    assert early_stop_replayed(KEPT, _evals((4, 6.93149376))) is None        # patience 2, one evaluation
    assert early_stop_replayed(KEPT, [(4, {"eval_runtime": 1.0}), (6, {"eval_runtime": 1.0})]) is None  # no metric
    assert early_stop_replayed(KEPT, _evals((4, 6.0), (6, 5.0))) is None     # it kept improving
    # the stop replays at 6, but the training went on to 10: not what ended it
    got = early_stop_replayed(KEPT, _evals((4, 7.0), (6, 7.0)))
    assert got is not None and early_stopped([got], 10) is None
    assert short_end(10, 30, [], 2, [got]).stopped_by is None               # type: ignore[union-attr]


def _save(tmp: Path, *, stop: bool = False, args: dict | None = None) -> Path:
    vdir = tmp / "v0-20261204-102117"
    ckpt = vdir / "checkpoint-2"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({
        "global_step": 2, "best_metric": 6.93149376, "stateful_callbacks": {
            "EarlyStoppingCallback": {"args": {"early_stopping_patience": 2, "early_stopping_threshold": 0.0},
                                      "attributes": {"early_stopping_patience_counter": 0}},
            "TrainerControl": {"args": {"should_training_stop": stop, "should_save": True}, "attributes": {}}}}))
    (ckpt / "args.json").write_text(json.dumps(args if args is not None else
                                               {"metric_for_best_model": "loss", "greater_is_better": False}))
    lines = [{"loss": 6.95, "global_step/max_steps": "1/30"},
             {"eval_loss": 6.93149376, "eval_token_acc": 0.0, "global_step/max_steps": "2/30"},
             {"eval_loss": 6.93149376, "global_step/max_steps": "4/30"},
             {"eval_loss": 6.93149376, "global_step/max_steps": "6/30"},
             {"train_runtime": 20.9, "global_step/max_steps": "6/30"},
             {"last_model_checkpoint": str(vdir / "checkpoint-6"), "global_step": 6, "log_history": []}]
    (vdir / "logging.jsonl").write_text("".join(json.dumps(ln) + "\n" for ln in lines))
    return ckpt


def test_the_kept_save_and_ms_swift_logging_jsonl_as_read(tmp_path: Path):
    ckpt = _save(tmp_path)
    assert early_stop_state(ckpt) == KEPT
    assert [s for s, _ in logged_evals(ckpt)] == [2, 4, 6]          # the train and end dicts are no evaluations
    assert early_stop_replayed(KEPT, logged_evals(ckpt)).step == 6    # type: ignore[union-attr]


def test_saves_that_give_no_state(tmp_path: Path):
    assert early_stop_state(_save(tmp_path / "a", stop=True)) is None       # asked to stop: ``stop_save``'s
    assert early_stop_state(_save(tmp_path / "b", args={})) is None         # no metric named
    plain = _save(tmp_path / "c")
    (plain / "args.json").unlink()                                          # a plain transformers save
    assert early_stop_state(plain) is None


def test_no_restart_resumes_a_save_at_its_training_total():
    from moeconsole.runner.core.ending import resume_at_total_refusal
    got = resume_at_total_refusal("r1", "/o/v0-1/checkpoint-4", (4, 4), 4, 4)
    assert got is not None and got.startswith("nothing left to train: checkpoint-4 holds step 4 of 4 ")
    assert "(step 5 of 4, " in got and got.endswith("moeconsole restart r1 --from checkpoint-N")
    # refusals: an earlier save, a raised total, a trainer that counts from 1 again (--resume_only_model
    # --ignore_data_skip trains the whole total again), nothing known
    assert resume_at_total_refusal("r1", "/o/checkpoint-2", None, 4, 2) is None
    assert resume_at_total_refusal("r1", "/o/checkpoint-4", (4, 4), 8, 4) is None
    assert resume_at_total_refusal("r1", "/o/checkpoint-4", (4, 4), 4, 0) is None
    assert resume_at_total_refusal("r1", None, None, 4, None) is None
    assert resume_at_total_refusal("r1", "/o/checkpoint-4", (4, 4), None, 4) is None
