"""Review R25 of log batch 41 (the notebook's results table as HTML, log_history evaluation dicts,
``Trainer.log_metrics`` blocks): each finding's input and its variants both ways, fed as bytes and
checked on the records and evaluations a user gets."""
from __future__ import annotations

from moeconsole.runner.ingest.history import read_events
from moeconsole.runner.ingest.parser import LogParser
from tests.ingest.test_ingest_batch41_shapes import html_table
from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals


def _bar(i: int) -> str:
    return f" {i}%|          | {i * 10}/1000 [00:01<01:39,  1.00s/it]"


def _dict(i: int) -> str:
    return f"{{'loss': {3 - i / 100:.4f}, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': {i / 100:.2f}}}"


BASELINE = ["***** eval metrics *****", "  eval_loss               =     3.2101",
            "  eval_runtime            = 0:00:14.81"]


# 1. a metrics block ends at the first line that is none of its rows, at the step its header came


def test_a_baseline_eval_block_before_training_is_at_step_0_not_the_last_step():
    """``trainer.evaluate()`` + ``log_metrics("eval", m)`` before ``train()``, then the training
    printing only bars and dicts (default WARNING verbosity): the untrained model's evaluation is
    at step 0, never the run's last evaluation."""
    lines = BASELINE + sum([[_bar(i), _dict(i)] for i in range(97, 100)], [])
    recs, p = parse(*lines)
    assert steps(recs) == [(970, 2.03), (980, 2.02), (990, 2.01)]
    assert evals(p) == [(0, 3.2101)]


def test_a_metrics_block_is_given_live_at_the_first_line_after_it():
    """The log not ended yet: the bar after the block ends it (nothing waits for a text line)."""
    p = LogParser()
    data = "".join(ln + "\n" for ln in BASELINE + [_bar(1), _dict(1), _bar(2)]).encode()
    marks = [o for k, o in read_events(p, [data], final=False) if k == "mark" and o["kind"] == "eval"]
    assert [(m["step"], m["loss"]) for m in marks] == [(0, 3.2101)]


def test_a_block_between_two_stages_is_at_the_step_before_it():
    """A block after stage 1, then stage 2's dicts (and bars) then a text line: at stage 1's step."""
    head = ["{'loss': 0.9, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 1.0}",
            "{'train_runtime': 10.0, 'train_samples_per_second': 3.0, 'train_steps_per_second': 1.0, 'train_loss': 0.9, 'epoch': 1.0}"]
    block = ["***** eval metrics *****", "  epoch                   =        1.0", "  eval_loss               =     0.8123"]
    after = [f"{{'loss': {0.7 - i / 100:.4f}, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': {i / 10:.1f}}}"
             for i in range(1, 6)]
    recs, p = parse(*head, *block, *after, "Fold 2 done")
    assert steps(recs)[0] == (1, 0.9) and len(recs) == 6
    assert evals(p) == [(1, 0.8123)]
    recs, p = parse("  1%|          | 10/1000 [00:01<01:39,  1.00s/it]", head[0], *block,
                    *sum([[_bar(i * 10), after[i - 2]] for i in range(2, 6)], []), "Fold 2 done")
    assert evals(p) == [(10, 0.8123)]


def test_a_block_still_joins_all_its_rows_and_ends_at_a_text_line():
    """The other way: every row is the block's (the loss row after others), a text line ends it."""
    recs, p = parse("step 100 loss 0.5", "***** eval metrics *****", "  epoch    =        1.0",
                    "  eval_accuracy =     0.5153", "  eval_loss =     2.1941", "done")
    assert evals(p) == [(100, 2.1941)]
    assert p.marks[-1]["values"] == {"eval_accuracy": 0.5153, "eval_loss": 2.1941}


# 2. an evaluation is "printed again" only where its own text is: a row's cells, a block's rows


def _folds(rows_of) -> list[list[list[str]]]:
    return [[[str(e), *rows_of(e, f)] for e in (1, 2, 3)] for f in range(3)]


def _cells(e: int, f: int) -> list[str]:
    return [f"{0.6 - 0.1 * e - 0.01 * f:.6f}", f"{0.5 - 0.02 * e - 0.01 * f:.6f}", f"{0.8 + 0.01 * e + 0.001 * f:.6f}"]


NAMES = ["Epoch", "Training Loss", "Validation Loss", "Accuracy"]


def test_k_fold_html_tables_keep_every_folds_evaluations_as_the_text_tables_do():
    """A notebook cell looping 3 folds, each its own Epoch table: 9 records and 9 evaluations,
    as the same rows as tab-separated text tables give."""
    html = sum((html_table(NAMES, rows) for rows in _folds(_cells)), [])
    recs, p = parse(*html)
    assert len(recs) == 9 and len(evals(p)) == 9
    assert [loss for _, loss in evals(p)][3:6] == [0.47, 0.45, 0.43]
    text = sum((["\t".join(NAMES)] + ["\t".join(r) for r in rows] + [""] for rows in _folds(_cells)), [])
    recs_t, p_t = parse(*text)
    assert evals(p_t) == evals(p)


def test_the_same_html_table_printed_again_is_one_table_as_the_text_table_is():
    """The other way: the very same rows at the same epochs are the same evaluations."""
    rows = [["1", "0.52", "0.48", "0.80"], ["2", "0.41", "0.45", "0.82"]]
    _, p = parse(*html_table(NAMES, rows), *html_table(NAMES, rows))
    assert evals(p) == [(1, 0.48), (2, 0.45)]
    _, p_t = parse("\t".join(NAMES), *["\t".join(r) for r in rows], "", "\t".join(NAMES), *["\t".join(r) for r in rows])
    assert evals(p_t) == evals(p)


def test_an_eval_line_ending_a_block_is_an_evaluation_of_its_own():
    recs, p = parse("step 100 loss 0.5", "***** eval metrics *****", "  eval_loss      =     2.1941",
                    "test loss 3.0000")
    assert evals(p) == [(100, 2.1941), (100, 3.0)]


def test_several_eval_blocks_back_to_back_are_each_an_evaluation():
    """Several eval sets (``log_metrics`` per set), one after another at the same step."""
    lines = ["{'loss': 0.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 1.0, 'step': 100}"]
    for name, v in (("eval_a_loss", "2.1941"), ("eval_b_loss", "1.5"), ("eval_c_loss", "1.7"), ("eval_loss", "1.9")):
        lines += ["***** eval metrics *****", "  epoch                 =        1.0", f"  {name}      =     {v}"]
    _, p = parse(*lines)
    got = [(m["step"], m["values"]) for m in p.marks if m["kind"] == "eval"]
    assert got == [(100, {"eval_a_loss": 2.1941}), (100, {"eval_b_loss": 1.5}), (100, {"eval_c_loss": 1.7}),
                   (100, {"eval_loss": 1.9})]


# 3. a block restating the evaluation dict printed just before it is that evaluation


EVAL_DICT = "{'eval_loss': 2.194123, 'eval_accuracy': 0.5153, 'eval_runtime': 14.81, 'epoch': 1.0}"
TRAINED = ["{'loss': 2.6, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.99}",
           "[INFO|trainer.py:4643] 2025-12-31 13:19:33,299 >> ***** Running Evaluation *****"]


def _block(loss: str = "2.1941", acc: str = "0.5153", split: str = "eval") -> list[str]:
    return [f"***** {split} metrics *****", "  epoch                   =        1.0",
            f"  {split}_accuracy           =     {acc}", f"  {split}_loss               =     {loss}",
            f"  {split}_runtime            = 0:00:14.81", "  perplexity              =     8.9716"]


def test_the_block_after_the_printer_callbacks_eval_dict_is_that_evaluation():
    """``disable_tqdm``: ``PrinterCallback.on_log`` prints the evaluation's dict, then the script's
    ``log_metrics("eval", metrics)`` the same metrics rounded to 4 places: one evaluation."""
    _, p = parse(*TRAINED, EVAL_DICT, *_block(), "done")
    assert evals(p) == [(1, 2.194123)]


def test_a_block_that_differs_from_the_dict_before_it_is_another_evaluation():
    """The other way: another loss, another shared metric, another split, or a step between."""
    for block in (_block(loss="1.9000"), _block(acc="0.6000"), _block(loss="2.1941", split="test")):
        _, p = parse(*TRAINED, EVAL_DICT, *block, "done")
        assert len(evals(p)) == 2, block
    _, p = parse(*TRAINED, EVAL_DICT, "{'loss': 2.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 1.5}",
                 *_block(), "done")
    assert len(evals(p)) == 2


def test_mnli_mismatched_block_keeps_no_epoch_mm_metric():
    """run_glue.py's second MNLI block has every key ``+ "_mm"``: ``epoch_mm`` is no metric."""
    _, p = parse("step 100 loss 0.5", "***** eval metrics *****", "  epoch_mm        =        3.0",
                 "  eval_accuracy_mm =     0.8412", "  eval_loss_mm    =     0.4321", "done")
    (m,) = [m for m in p.marks if m["kind"] == "eval"]
    assert m["values"] == {"eval_accuracy_mm": 0.8412, "eval_loss_mm": 0.4321}


# 4. only the notebook's header row (left-aligned) opens a results table


PANDAS = ['<table border="1" class="dataframe">', '  <thead>', '    <tr style="text-align: right;">',
          '      <th>Epoch</th>', '      <th>Training Loss</th>', '      <th>Validation Loss</th>', '    </tr>',
          '  </thead>', '  <tbody>', '    <tr>', '      <td>3</td>', '      <td>0.412</td>', '      <td>0.455</td>',
          '    </tr>', '    <tr>', '      <td>3</td>', '      <td>0.398</td>', '      <td>0.431</td>', '    </tr>',
          '  </tbody>', '</table>']


def test_a_pandas_to_html_table_is_no_trainer_results_table():
    """pandas' ``DataFrame.to_html(index=False)`` (an lr sweep's comparison) writes ``text-align:
    right;``; transformers' ``text_to_html_table`` always ``left``: nothing read from it."""
    recs, p = parse(*PANDAS)
    assert recs == [] and evals(p) == []
    left = [ln.replace("right", "left") for ln in PANDAS[:9]] + [
        '    <tr>', '      <td>1</td>', '      <td>0.412</td>', '      <td>0.455</td>', '    </tr>', '  </tbody>', '</table>']
    recs, p = parse(*left)
    assert steps(recs) == [(1, 0.412)] and evals(p) == [(1, 0.455)]
