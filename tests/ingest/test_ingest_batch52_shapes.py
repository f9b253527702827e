"""Line shapes of held-out batch 52 that were misread: each written from the code that prints it,
fed as bytes, checked on the records a user gets, with lines of other programs that only resemble
it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps


# ------------------------------------------------- LLaMA-Factory's LogCallback copy of the Trainer's dict
# 0.5.x src/llmtuner/extras/callbacks.py LogCallback.on_log: logger.info("{{'loss': {:.4f},
# 'learning_rate': {:2.4e}, 'epoch': {:.2f}}}".format(...)) behind "%(asctime)s - %(levelname)s -
# %(name)s - %(message)s"; since 0.9.1 src/llamafactory/train/callbacks.py: the same three and then
# 'reward' / 'accuracy' / 'throughput' ({:.2f}) when set, behind "[%(levelname)s|%(asctime)s]
# %(name)s:%(lineno)s >> " (0.8.0-0.9.0: tests/ingest/test_ingest_review_r69.py). The Trainer's own
# callback prints the whole dict right after.

OLD = "03/12/2024 11:24:{:02d} - INFO - llmtuner.extras.callbacks - {}"
NEW = "[INFO|2025-03-01 10:00:{:02d}] llamafactory.train.callbacks:411 >> {}"


def test_the_web_ui_copy_of_each_logged_dict_is_no_record_of_its_own():
    """Each logging step printed twice (the copy rounded, then the Trainer's dict): one record a
    step, with the Trainer's whole values (its nan grad norm, its lr to every digit)."""
    recs, p = parse(OLD.format(33, "{'loss': 0.0000, 'learning_rate': 4.9999e-02, 'epoch': 0.01}"),
                    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 0.04999871292419044, 'epoch': 0.01}",
                    OLD.format(42, "{'loss': 0.0000, 'learning_rate': 4.9995e-02, 'epoch': 0.02}"),
                    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 0.04999485182928687, 'epoch': 0.02}")
    assert steps(recs) == [(1, 0.0), (2, 0.0)]
    assert recs[0]["lr"] == 0.04999871292419044
    assert recs[0]["grad_norm"] != recs[0]["grad_norm"]   # nan, from the Trainer's dict


def test_the_copy_with_its_extra_keys_in_the_later_format_is_no_record():
    recs, p = parse(NEW.format(1, "{'loss': 1.2345, 'learning_rate': 4.9999e-05, 'epoch': 0.10, "
                                  "'throughput': 1234.57}"),
                    "{'loss': 1.2345, 'grad_norm': 0.8123, 'learning_rate': 4.99991e-05, 'epoch': 0.1}",
                    NEW.format(9, "{'loss': 1.1000, 'learning_rate': 4.9990e-05, 'epoch': 0.20, "
                                  "'reward': 0.52, 'accuracy': 0.75}"),
                    "{'loss': 1.1, 'grad_norm': 0.7, 'learning_rate': 4.999e-05, 'epoch': 0.2}")
    assert steps(recs) == [(1, 1.2345), (2, 1.1)]
    assert [r["grad_norm"] for r in recs] == [0.8123, 0.7]


def test_the_copy_of_an_evaluation_gives_no_zero_loss_step():
    """An evaluation's on_log has no 'loss': the copy prints `logs["loss"] or 0`, a 0.0000 that
    no step had; the evaluation is the Trainer's eval dict."""
    recs, p = parse("{'loss': 0.9, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.5}",
                    OLD.format(50, "{'loss': 0.0000, 'learning_rate': 0.0000e+00, 'epoch': 0.50}"),
                    "{'eval_loss': 0.8, 'eval_runtime': 2.1, 'epoch': 0.5}")
    assert steps(recs) == [(1, 0.9)]
    assert eval_losses(p) == [(1, 0.8)]


def test_a_copy_alone_on_a_line_is_the_steps_record():
    """No Trainer dict beside it (the web UI's log holds the copies alone): the copy is the record
    (review R69)."""
    recs, p = parse(OLD.format(33, "{'loss': 0.7000, 'learning_rate': 1.0000e-05, 'epoch': 0.01}"))
    assert steps(recs) == [(1, 0.7)]


def test_dicts_of_other_loggers_are_still_records():
    """Only LLaMA-Factory's callbacks logger with the copy's exact format: another module's
    logged dict, the same logger with the Trainer's own key set, or a name that only ends like
    it are read as before."""
    recs, p = parse("03/12/2024 11:24:33 - INFO - myproj.extras.callbacks - "
                    "{'loss': 0.5000, 'learning_rate': 1.0000e-05, 'epoch': 0.01}",
                    "03/12/2024 11:24:34 - INFO - llmtuner.extras.callbacks - "
                    "{'loss': 0.4, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.02}",
                    "[INFO|2025-03-01 10:00:01] xllamafactory.train.callbacks:411 >> "
                    "{'loss': 0.3000, 'learning_rate': 1.0000e-05, 'epoch': 0.03}",
                    "[INFO|2025-03-01 10:00:02] llamafactory.train.callbacks:411 >> "
                    "{'loss': 0.2, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.04}")
    assert steps(recs) == [(1, 0.5), (2, 0.4), (3, 0.3), (4, 0.2)]


def test_a_cjk_run_before_the_logger_name_reads_in_its_length():
    """The rule starts at its literal logger name after a space or the line's start: a long run
    of CJK text (\\w to the regex) glued to the name is no such line, and neither stalls."""
    from moeconsole.runner.ingest import formats
    line = "训练" * 20000 + " llmtuner.extras.callbacks - {'loss': 0.1000, 'learning_rate': 1.0000e-05, 'epoch': 0.01}"
    assert formats.llamafactory_copy(line) is not None
    assert formats.llamafactory_copy("训练" * 20000 + "llmtuner.extras.callbacks - {'loss': 0.1000, "
                                     "'learning_rate': 1.0000e-05, 'epoch': 0.01}") is None


# --------------------------------------------------------------------- a bar over the run's epochs
# scvi-tools' ProgressBar: one tqdm over trainer.max_epochs, its description "Epoch {e}/{max_epochs}"
# and update(1) at each epoch's end, Lightning's progress-bar metrics as its postfix.

def epoch_bar(e: int, of: int, loss: str) -> str:
    pct = int(100 * e / of)
    return (f"Epoch {e}/{of}: {pct}%|█████     | {e}/{of} [00:10<00:10, 1.06s/it, v_num=1, "
            f"train_loss_step={loss}, train_loss_epoch={loss}]")


def test_a_bar_counting_epochs_is_read_at_its_count():
    """Its count is the epoch, the run's step: not an offset grown by the bar's total each epoch."""
    recs, p = parse(epoch_bar(1, 3, "900"), epoch_bar(2, 3, "850"), epoch_bar(3, 3, "827"))
    assert steps(recs) == [(1, 900.0), (2, 850.0), (3, 827.0)]


def test_a_second_models_epoch_bar_counts_from_its_own_first_epoch():
    """scvi-tools trains SOLO after scVI, each with its own bar: 301 of the second is 301."""
    recs, p = parse(epoch_bar(400, 400, "827"), "Trainer.fit stopped: max_epochs=400 reached.",
                    epoch_bar(301, 400, "0.198"))
    assert steps(recs) == [(400, 827.0), (301, 0.198)]


def test_a_bar_per_epoch_over_batches_still_counts_on_across_epochs():
    """A per-epoch bar over 4 batches described "Epoch e/4": its count is a batch, a count equal
    to the epoch by chance (2 of epoch 2) is the epoch's batch, the epochs before counted."""
    def batch_bar(e: int, b: int) -> str:
        return (f"Epoch {e}/4: {25 * b}%|██        | {b}/4 [00:01<00:01, 2.00it/s, v_num=0, "
                f"train_loss_step=0.{e}{b}]")
    recs, p = parse(batch_bar(1, 3), batch_bar(1, 4), batch_bar(2, 2), batch_bar(2, 3))
    assert [r["step"] for r in recs] == [3, 4, 6, 7]
