"""Line shapes of held-out batch 54 that were misread: each written from the code that prints it,
fed as bytes, checked on the records a user gets, with lines of other programs that only resemble
it read as before."""
from __future__ import annotations

from moeconsole.runner.ingest.records import step_numbered
from tests.ingest import resume_cuts
from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


# ------------------------------------------------- MindOCR: the step within its epoch
# mindocr/utils/callbacks.py on_train_step_end: f"epoch: [{cur_epoch}/{epochs}] step:
# [{cur_step_in_epoch}/{batch_num}], loss: ..., lr: ..., per step time: ... ms, fps per card: ..."
# (2023's form without the fps); the run's step is (epoch - 1) x batch_num + the printed one.

def _mindocr(epoch: int, epochs: int, s: int, per: int, loss: float, fps: bool = True) -> str:
    tail = ", fps per card: 4.47 img/s" if fps else ""
    return (f"[2024-03-04 12:02:42] mindocr.utils.callbacks INFO - epoch: [{epoch}/{epochs}] "
            f"step: [{s}/{per}], loss: {loss:.6f}, lr: 0.000793, per step time: 223.489 ms{tail}")


def test_mindocr_lines_are_the_runs_steps_across_epochs_with_the_runs_length():
    recs, p = parse(_mindocr(1, 5, 50, 100, 2.5), _mindocr(1, 5, 100, 100, 2.4),
                    _mindocr(2, 5, 50, 100, 2.3), _mindocr(3, 5, 100, 100, 2.2, fps=False))
    assert steps(recs) == [(50, 2.5), (100, 2.4), (150, 2.3), (300, 2.2)]
    assert {r["max_steps"] for r in recs} == {500}
    assert recs[0]["lr"] == 0.000793 and abs(recs[0]["step_time_s"] - 0.223489) < 1e-9


def test_lines_that_only_resemble_mindocrs_read_as_before():
    """An epoch 0 (no MindSpore epoch: counted from 1) and a bracketed step with no epoch before
    it keep the printed step."""
    recs, _ = parse("epoch: [0/10] step: [5/50], loss: 0.300000, lr: 0.001000")
    assert steps(recs) == [(5, 0.3)]
    recs, _ = parse("step: [7/50], loss: 0.250000, lr: 0.001000")
    assert steps(recs) == [(7, 0.25)]


# ------------------------------------------------- CosFace_pytorch: the iteration after the counter
# main.py train(): 'Train Epoch: {} [{}/{} ({:.0f}%)]{}, Loss: {:.6f}, Elapsed time: {:.4f}s({} iters)'
# .format(epoch, batch_idx * len(data), len(dataset), pct, iteration, ...) + INFO, INFO ' Margin:
# ..., Scale: ...', ' lambda: ...' or ''.

def test_cosface_lines_are_read_at_the_iteration_glued_after_the_sample_counter():
    recs, _ = parse(
        "2018-05-23 17:11:58 Train Epoch: 1 [460800/490606 (94%)]900, Loss: 11.434706, "
        "Elapsed time: 113.3382s(100 iters) Margin: 0.3500, Scale: 30.00",
        "2018-05-23 17:19:58 Train Epoch: 2 [51200/490606 (10%)]1058, Loss: 10.109621, "
        "Elapsed time: 116.0335s(100 iters) lambda: 5.1234",
        "Train Epoch: 2 [102400/490606 (21%)]1158, Loss: 9.5, Elapsed time: 50.0000s(50 iters)")
    assert steps(recs) == [(900, 11.434706), (1058, 10.109621), (1158, 9.5)]
    assert abs(recs[0]["step_time_s"] - 1.133382) < 1e-9 and recs[2]["step_time_s"] == 1.0
    assert recs[1]["epoch"] == 2


def test_the_mnist_examples_counter_and_open_clips_read_as_before():
    """PyTorch's mnist example prints the same bracket with the loss after a tab (its step the
    sample counter, as before); a number after the bracket with no ``Elapsed time`` is no CosFace
    line."""
    recs, _ = parse("Train Epoch: 1 [4672/60000 (31%)]\tLoss: 0.126806",
                    "Train Epoch: 1 [4736/60000 (31%)]\tLoss: 0.105196")
    assert steps(recs) == [(4672, 0.126806), (4736, 0.105196)]
    before, _ = parse("Train Epoch: 1 [512/1000 (51%)]7, Loss: 0.5")
    assert all(r["step"] != 7 for r in before)


# ------------------------------------------------- the Trainer's logging cadence the log printed
# transformers trainer_callback.py DefaultFlowCallback.on_step_end: should_log at global_step 1
# with logging_first_step, and whenever global_step % logging_steps == 0; its dicts name no step.

def _dict(loss: float, epoch: float) -> str:
    return f"{{'loss': {loss}, 'learning_rate': 4.99e-05, 'epoch': {epoch}}}"


def test_step_less_dicts_take_the_steps_of_the_logging_steps_a_command_or_config_printed():
    for said in ("    --logging_steps 5 \\", "--logging_steps=5 --save_steps 100", "logging_steps: 5",
                 "  logging_steps=5,", "--logging-steps 5", '  "logging_steps": 5,'):
        recs, _ = parse(said, _dict(1.5, 0.01), _dict(1.4, 0.01), _dict(1.3, 0.02))
        assert steps(recs) == [(5, 1.5), (10, 1.4), (15, 1.3)], said
        assert not any(step_numbered(r) for r in recs)   # the Trainer's steps, not a count of entries


def test_logging_first_step_logs_step_one_then_the_cadence():
    recs, _ = parse("logging_first_step: true", "logging_steps: 10",
                    _dict(2.0, 0.0), _dict(1.8, 0.01), _dict(1.6, 0.02))
    assert steps(recs) == [(1, 2.0), (10, 1.8), (20, 1.6)]


def test_a_new_run_in_the_same_file_starts_at_the_cadence_again():
    recs, _ = parse("--logging_steps 10", _dict(1.5, 0.5), _dict(1.4, 0.9), _dict(2.0, 0.1), _dict(1.9, 0.2))
    assert steps(recs) == [(10, 1.5), (20, 1.4), (10, 2.0), (20, 1.9)]


def test_no_cadence_from_a_ratio_an_epoch_strategy_or_another_name():
    """A ``logging_steps`` below 1 is a ratio of the run's steps, an "epoch" or "no" strategy logs
    no dict on a step cadence, and a name that only ends in logging_steps is another setting:
    the dicts are numbered one by one, as before."""
    for said in (("logging_steps: 0.01",), ("--logging_steps 10", "--logging_strategy epoch"),
                 ("my_logging_steps: 3",), ("logging_steps 10",)):
        recs, _ = parse(*said, _dict(1.5, 0.1), _dict(1.4, 0.2))
        assert steps(recs) == [(1, 1.5), (2, 1.4)], said
        assert all(step_numbered(r) for r in recs)


def test_a_dict_naming_its_step_or_under_the_trainers_bar_keeps_that_step():
    recs, _ = parse("--logging_steps 10",
                    "{'loss': 1.2, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1, "
                    "'global_step/max_steps': '7/100'}")
    assert steps(recs) == [(7, 1.2)]
    recs, _ = parse("--logging_steps 10", " 12%|█▏        | 12/100 [00:12<01:28,  1.00s/it]",
                    _dict(1.1, 0.12), " 12%|█▏        | 12/100 [00:12<01:28,  1.00s/it]")
    assert steps(recs) == [(12, 1.1)]


def test_a_reader_restarted_after_the_command_keeps_the_cadence():
    """The cadence is part of the reading context (``core.readctx`` v7): a runner restarted after
    the command line and a first dict reads the next dicts at the same steps."""
    data = b"".join(s.encode() + b"\n" for s in ("--logging_steps 10", _dict(1.5, 0.1), _dict(1.4, 0.2),
                                                 _dict(1.3, 0.3)))
    whole = resume_cuts.given(resume_cuts.read(data)[1])
    assert sorted(step for _, step, _ in whole) == [10, 20, 30]
    cut = data.index(b"{'loss': 1.4") + 3
    first, before = resume_cuts.read(data[:cut], over=False)
    resume = first.resume_offset(cut)
    assert first.context().logging_every == 10
    _, after = resume_cuts.read(data, resume, context=first.context())
    assert resume_cuts.given(before) | resume_cuts.given(after) == whole


# ------------------------------------------------- TET-GAN: a header and its loss parts (batch 53's pending)
# src/oneshotfinetune.py / src/train.py: print('Iter[%d/%d], Epoch [%d/%d]' %(i+1, outer_iter, epoch+1,
# epochs)) then print('Lrec: %.3f, Ldadv: %.3f, Ldesty: %.3f, Lsadv: %.3f, Lsty: %.3f' ...), train.py's
# progressive levels with 'LevelN, ' before the header, the unsupervised loop with ', Lsrec: %.3f' after.

def test_tetgan_steps_are_their_headers_with_the_loss_parts_under_them():
    recs, _ = parse("Iter[1/3], Epoch [1/2]", "Lrec: 0.209, Ldadv: 0.997, Ldesty: -10.377, Lsadv: 8.586, Lsty: 1068.036",
                    "Iter[1/3], Epoch [2/2]", "Lrec: 0.213, Ldadv: 0.881, Ldesty: -15.418, Lsadv: 4.431, Lsty: 1069.656",
                    "Iter[2/3], Epoch [1/2]",
                    "Lrec: 0.222, Ldadv: 0.815, Ldesty: -17.240, Lsadv: 4.615, Lsty: 1062.376, Lsrec: 0.101")
    assert steps(recs) == [(1, None), (2, None), (3, None)]
    assert {r["max_steps"] for r in recs} == {6}
    recs, _ = parse("Level2, Iter[5/30], Epoch [1/1]", "Lrec: 0.3, Ldadv: 0.9, Ldesty: -1.0, Lsadv: 2.0, Lsty: 9.0")
    assert steps(recs) == [(5, None)] and recs[0]["max_steps"] == 30


def test_lines_that_only_resemble_tetgans_read_as_before():
    """A header with no parts line under it gives no record, nor does a parts line alone; a header
    counted past its total, or words after it, is no TET-GAN header."""
    for lines in (("Iter[1/20], Epoch [1/1]", "--- save ---"),
                  ("Lrec: 0.209, Ldadv: 0.997, Ldesty: -10.377, Lsadv: 8.586, Lsty: 1068.036",),
                  ("Iter[21/20], Epoch [1/1]", "Lrec: 0.2, Ldadv: 0.9"),
                  ("Iter[1/20], Epoch [1/1] done", "Lrec: 0.2, Ldadv: 0.9")):
        recs, _ = parse(*lines)
        assert recs == [], lines
