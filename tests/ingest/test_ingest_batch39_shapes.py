"""Line shapes of held-out batch 39 that were misread: each written from the code that prints
it, fed as bytes, checked on the records and evaluations a user gets, with a line of another
program that only resembles it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals


def test_build_nanogpt_log_txt_lines_are_its_steps_and_validations():
    """build-nanogpt train_gpt2.py: f.write(f"{step} val {val_loss_accum.item():.4f}\\n"),
    f.write(f"{step} hella {acc_norm:.4f}\\n"), f.write(f"{step} train {loss_accum.item():.6f}\\n")."""
    recs, p = parse("0 val 10.9514", "0 hella 0.2482", "0 train 10.953907", "1 train 10.633583",
                    "250 val 5.5753", "250 hella 0.2515", "250 train 5.585694")
    assert steps(recs) == [(0, 10.953907), (1, 10.633583), (250, 5.585694)]
    assert evals(p) == [(0, 10.9514), (250, 5.5753)]


def test_a_split_table_or_a_count_of_another_program_is_no_nanogpt_log_line():
    """A pandas frame of splits ("0  train  0.80", padded columns) and a count ("3 train 1200")
    only resemble the log file's lines."""
    recs, p = parse("step 5 loss 1.0", "0  train  0.80", "1  val    0.20", "3 train 1200", "3 val 300")
    assert steps(recs) == [(5, 1.0)]
    assert evals(p) == []


TRAIN_OUTPUT_ROWS = (
    "TrainOutput(global_step=10000, training_loss=0.4377235143661499, metrics={'train_runtime': 11359.2176, ",
    "'train_samples_per_second': 14.085, 'train_steps_per_second': 0.88, 'total_flos': ",
    "3.2205571119087696e+16, 'train_loss': 0.4377235143661499, 'epoch': 9.98})")


def test_a_trainoutput_repr_wrapped_over_rows_is_the_runs_summary_not_a_step():
    """transformers trainer_utils.py: class TrainOutput(NamedTuple) global_step, training_loss
    (the run's mean loss), metrics; a notebook printed to PDF wraps its repr."""
    recs, p = parse("step 10000 loss 0.3488", *TRAIN_OUTPUT_ROWS)
    assert steps(recs) == [(10000, 0.3488)]
    assert [m["kind"] for m in p.marks] == ["train_summary"]


def test_a_trainoutput_cut_for_good_gives_no_record_and_the_next_line_is_read():
    recs, p = parse("step 10 loss 0.5", TRAIN_OUTPUT_ROWS[0], "step 11 loss 0.4")
    assert steps(recs) == [(10, 0.5), (11, 0.4)]


def test_rows_of_another_program_after_a_dict_of_names_are_read_as_before():
    """The rows a wrapped TrainOutput takes are only its metrics' "'name': value" pieces: a step
    line of another program after a name-value row is no part of it."""
    recs, p = parse("step 3 loss 1.5", "'lr': 0.1, 'loss': 2.0", "step 4 loss 1.25")
    assert steps(recs)[0] == (3, 1.5) and steps(recs)[-1] == (4, 1.25)


def test_the_trainers_notebook_training_bar_gives_the_run_its_max_steps():
    """transformers utils/notebook.py: NotebookTrainingTracker(state.max_steps, ...), updated
    with comment=f"Epoch {epoch}/{state.num_train_epochs}"."""
    recs, p = parse("[10000/10000 3:09:10, Epoch 9/10]", "", "Step Training Loss Validation Loss", "",
                    "1000 0.621000 0.492266", "", "2000 0.485300 0.400113")
    assert steps(recs) == [(1000, 0.621), (2000, 0.4853)]
    assert [r["max_steps"] for r in recs] == [10000, 10000]
    assert evals(p) == [(1000, 0.492266), (2000, 0.400113)]


def test_an_evaluation_bar_in_a_notebook_counts_batches_not_the_run():
    """on_prediction_step: NotebookProgressBar(len(eval_dataloader)), no comment: its total is
    the evaluation's batches."""
    recs, p = parse("[63/63 00:05]", "", "Step Training Loss Validation Loss", "",
                    "1000 0.621000 0.492266")
    assert steps(recs) == [(1000, 0.621)]
    assert [r["max_steps"] for r in recs] == [None]
