"""Line shapes of held-out batch 53 that were misread: each written from the code that prints it,
fed as bytes, checked on the records a user gets, with lines of other programs that only resemble
it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps

SWIFT = ("{{'loss': {}, 'acc': 0.42, 'grad_norm': 5.7, 'learning_rate': 7.8e-07, 'memory(GiB)': 38.62, "
         "'train_speed(iter/s)': 0.74, 'epoch': 0.2, 'global_step': {}}}")


# ------------------------------------------------- prints a paste flattened onto one line
# A quoted reply lost its line breaks: ms-swift 2.x's dicts (swift/trainers/callback.py, printed
# with tqdm.write like the Trainer's ProgressCallback.on_log) and the bar after them on one line,
# joined by blanks (ms-swift issue 1122).

def test_dicts_and_the_bar_flattened_onto_one_quoted_line_are_each_read():
    line = ("> " + SWIFT.format(3.79492188, 79) + " " + SWIFT.format(4.12109375, 80)
            + " Train: 4%|██████▌ | 80/2010 [01:46<41:02, 1.28s/it]Traceback (most recent call last):"
            ' File "/data/swift/swift/cli/sft.py", line 5, in sft_main()')
    recs, p = parse(line)
    assert steps(recs) == [(79, 3.79492188), (80, 4.12109375)]


def test_a_bar_then_a_dict_flattened_onto_one_line_is_cut_after_the_bars_bracket():
    from moeconsole.runner.ingest.lines import split_flattened_prints
    assert split_flattened_prints(b" 10%|# | 5/52 [03:07<29:13, 37.31s/it] {'loss': 0.8, 'epoch': 0.1}") == [
        b"10%|# | 5/52 [03:07<29:13, 37.31s/it]", b"{'loss': 0.8, 'epoch': 0.1}"]


def test_a_dict_glued_to_a_bar_without_a_blank_and_braces_in_a_bars_postfix_stay_one_line():
    """A bar's redraw left open before a dict (no blank: ``strip_bar``'s case), a bar whose
    postfix prints a dict, a dict that is a bar's description: no flattened paste."""
    from moeconsole.runner.ingest.lines import split_flattened_prints
    for line in (b"Train:  4%|# | 42/1000 [00:42<41:47, 42.51s/it]{'loss': 0.37, 'global_step': 42}",
                 b"10%|# | 5/52 [03:07<29:13, 37.31s/it, stats={'loss': 0.8}]",
                 b"{'loss': 0.5}%| 3/10 [00:01<00:02, 3.0it/s]"):
        assert split_flattened_prints(line) == [line]
    recs, p = parse("Train:  4%|▍         | 42/1000 [00:42<41:47, 42.51s/it]{'loss': '0.3713', "
                    "'grad_norm': '1.25', 'learning_rate': '1e-05', 'epoch': '0.04', "
                    "'global_step/max_steps': '42/1000'}")
    assert steps(recs) == [(42, 0.3713)]


# ------------------------------------------------- what a poster puts before or inside a dict

def test_a_dict_after_a_nested_quote_or_an_ellipsis_wrapped_at_the_terminals_width_is_the_dict():
    """ms-swift 3.x's dict wrapped at 242 columns, "..." before it (the lines left out; ms-swift
    issue 3399), or quoted in a reply to a quote: its two rows are the dict."""
    d = ("{{'loss': {}, 'token_acc': 0.98, 'grad_norm': 0.17, 'learning_rate': 5.415e-05, 'memory(GiB)': 75.22, "
         "'train_speed(iter/s)': 0.051415, 'epoch': 0.05, 'global_step/max_steps': '{}/22156', 'percentage': "
         "'2.71%', 'elapsed_time': '3h 14m 25s', 'remaining_time': '4d 20h 25m 7s'}}")
    rows = []
    for lead, loss, at in (("...", 0.1, 600), ("…", 0.2, 601), ("> > ", 0.3, 602)):
        line = lead + d.format(loss, at)
        rows += [line[:160], line[160:] + " " * 30]
    recs, p = parse(*rows)
    assert steps(recs) == [(600, 0.1), (601, 0.2), (602, 0.3)]
    assert {r["max_steps"] for r in recs} == {22156}


def test_a_quote_before_other_text_is_read_as_before():
    """Only a dict after the marks: "> loss: 0.5" stays the quoted line it was."""
    recs, p = parse("> step 3 loss: 0.5", ">> {not a dict}")
    assert steps(recs) == [(3, 0.5)]


def test_a_value_in_markdown_bold_is_the_value():
    recs, p = parse("{'loss': **4.7581**, 'grad_norm': 3.06, 'learning_rate': 9.9e-05, 'epoch': 0.1}")
    assert steps(recs) == [(1, 4.7581)]
    assert recs[0]["grad_norm"] == 3.06


def test_bold_inside_a_string_value_stays_the_string():
    from moeconsole.runner.ingest.pydict import parse_pydict
    assert parse_pydict("{'note': '**4.7**', 'loss': 0.5}") == {"note": "**4.7**", "loss": 0.5}
    assert parse_pydict("{'loss': **x**}") is None


def test_a_dict_whose_rest_a_poster_left_out_gives_the_values_before():
    recs, p = parse("{'loss': 0.75, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1, ...}")
    assert steps(recs) == [(1, 0.75)]
    assert recs[0]["grad_norm"] == 0.5


# ------------------------------------------------- the Trainer's bar drawn anew: a second training
# transformers trainer_callback.py ProgressCallback.on_train_begin makes the training bar at each
# train(), first drawn at "0/N [00:00<?, ?it/s]"; two runs pasted one after the other (unsloth
# issue 344: with and without unsloth).

def bar(n: int, of: int) -> str:
    return f" {100 * n // of:2d}%|▏         | {n}/{of} [00:38<32:45, 38.54s/it]" if n else \
        f"0%|          | 0/{of} [00:00<?, ?it/s]"


def test_a_dict_under_a_training_bar_drawn_anew_takes_the_new_bars_count():
    recs, p = parse(*[bar(n, 52) for n in range(6)],
                    "{'loss': 4.7581, 'grad_norm': 3.06, 'learning_rate': 9.9e-05, 'epoch': 0.1}",
                    "```", "without:", "```",
                    *[bar(n, 52) for n in range(6)],
                    "{'loss': 0.8759, 'grad_norm': 0.33, 'learning_rate': 9.9e-05, 'epoch': 0.1}")
    assert steps(recs) == [(5, 4.7581), (5, 0.8759)]
    assert [r["max_steps"] for r in recs] == [52, 52]


def test_a_runner_restarted_after_the_new_bar_reads_the_second_training_as_the_whole_read():
    """The next dict's count waits on the bar drawn anew: a runner killed after it starts again
    at that bar's line (``resume_offset``), so the dict is still the new bar's step 5, not 6."""
    from moeconsole.runner.ingest.live import LiveReader
    first = [bar(n, 52) for n in range(6)] + ["{'loss': 4.7581, 'learning_rate': 9.9e-05, 'epoch': 0.1}", "```"]
    data = "\n".join(first + [bar(n, 52) for n in range(3)]).encode() + b"\n"
    rest = "\n".join([bar(n, 52) for n in range(3, 6)] + ["{'loss': 0.8759, 'learning_rate': 9.9e-05, 'epoch': 0.1}"])
    reader = LiveReader(diagnostics=lambda msg: None)
    got = [r for b in reader.feed_batches(data, 0) for r in b.records]
    at, ctx = reader.resume_offset(len(data)), reader.context()
    assert at == len("\n".join(first).encode()) + 1   # the line "0/52" drawn anew
    again = LiveReader(diagnostics=lambda msg: None)
    again.restore_context(ctx)
    whole = data + rest.encode() + b"\n"
    got += [r for b in again.feed_batches(whole[at:], at) for r in b.records]
    assert [(r["step"], r["loss"]) for r in got] == [(5, 4.7581), (5, 0.8759)]


def test_a_bar_per_epoch_drawn_anew_while_the_epoch_goes_on_numbers_on():
    """A loop's tqdm(loader) drawn anew each epoch, the dict's epoch past the last one: the
    steps count on (one training), as before."""
    recs, p = parse(*[bar(n, 4) for n in range(3)],
                    "{'loss': 0.9, 'learning_rate': 1e-05, 'epoch': 1.0}",
                    *[bar(n, 4) for n in range(3)],
                    "{'loss': 0.8, 'learning_rate': 1e-05, 'epoch': 2.0}")
    assert steps(recs) == [(2, 0.9), (3, 0.8)]


# ------------------------------------------------- insightface's arcface_torch, OpenNMT-py's xent

def test_arcface_torchs_learningrate_is_the_lr():
    recs, p = parse("Training: 2022-05-05 03:04:06,521-Speed 731.07 samples/sec   Loss 43.3935   "
                    "LearningRate 0.1000   Epoch: 0   Global Step: 20   Fp16 Grad Scale: 16384   Required: 2244 hours",
                    "Training: 2022-05-05 03:04:10,028-Speed 730.09 samples/sec   Loss 44.7358   "
                    "LearningRate 0.0990   Epoch: 0   Global Step: 30   Fp16 Grad Scale: 16384   Required: 1625 hours")
    assert steps(recs) == [(20, 43.3935), (30, 44.7358)]
    assert [r["lr"] for r in recs] == [0.1, 0.099]


ONMT = "[2018-09-20 15:18:{:02d},264 INFO] {}"


def test_opennmt_steps_loss_is_its_xent_and_its_validation_one_evaluation():
    """onmt/utils/statistics.py Statistics.output: xent is the step's loss; report_manager.py
    _report_step: perplexity then accuracy, one evaluation at the step just reported (its loss not
    printed), quoted again under the log without the prefix: the same evaluation."""
    recs, p = parse(ONMT.format(39, "Step 380000/1000000; acc:  42.02; ppl: 55.22; xent: 4.01; lr: 0.00000; "
                                    "2214/2168 tok/s;    950 sec"),
                    ONMT.format(47, "Validation perplexity: 56.168"),
                    ONMT.format(47, "Validation accuracy: 35.9623"),
                    "", "Validation perplexity: 56.168", "Validation accuracy: 35.9623")
    assert [(r["step"], r["loss"], r["max_steps"], r["lr"]) for r in recs] == [(380000, 4.01, 1000000, 0.0)]
    marks = [m for m in p.marks if m["kind"] == "eval"]
    assert [(m["step"], m["loss"]) for m in marks] == [(380000, None)]
    assert marks[0]["values"] == {"valid ppl": 56.168}


def test_opennmts_accuracy_line_alone_behind_its_logger_is_no_evaluation():
    """A reader that starts at it (its perplexity line read by a runner before): no evaluation of
    its own."""
    recs, p = parse(ONMT.format(47, "Validation accuracy: 35.9623"))
    assert [m for m in p.marks if m["kind"] == "eval"] == []


def test_an_accuracy_line_of_another_program_reads_as_before():
    recs, p = parse("step 10 loss 0.5", "Validation accuracy: 35.9623")
    assert steps(recs) == [(10, 0.5)]
    assert [m["values"] for m in p.marks if m["kind"] == "eval"] == [{"Validation accuracy": 35.9623}]


# ------------------------------------------------- Marian NMT (src/training/scheduler.h)

def test_marian_update_lines_in_each_version():
    recs, p = parse(
        "[2019-08-17 13:16:58] Ep. 2 : Up. 497000 : Sen. 32,243,206 : Cost 2.77209687 : Time 337.44s : "
        "28806.18 words/s : L.r. 5.3827e-05",
        "[2025-01-10 10:00:00] Ep. 2 : Up. 498000 : Sen. 32,665,956 : Cost 2.77120614 : Time 336.25s : "
        "28599.47 words/s : gNorm 0.4321 : L.r. 5.3773e-05",
        "[2017-06-01 10:00:00] Ep. 1 : Up. 500 : Sen. 64,000 : Cost 95.31 : Time 30.12s : 11234.5 words/s",
        "[2020-03-01 10:00:00] Ep. 3 : Up. 600 : Sen. 70,000 : Cost 3.2 * 1,234,567 @ 2,345 after 9,876,543 : "
        "Time 31.00s : 12000.00 words/s : L.r. 3.0000e-04")
    assert steps(recs) == [(497000, 2.77209687), (498000, 2.77120614), (500, 95.31), (600, 3.2)]
    assert [r["lr"] for r in recs] == [5.3827e-05, 5.3773e-05, None, 3e-04]
    assert recs[1]["grad_norm"] == 0.4321


def test_marians_cross_entropy_validation_is_the_eval_loss_its_metrics_are_not():
    recs, p = parse(
        "[2019-08-17 13:33:51] Ep. 2 : Up. 500000 : Sen. 33,539,116 : Cost 2.77276516 : Time 337.36s : "
        "28673.48 words/s : L.r. 5.3666e-05",
        "[2019-08-17 13:34:11] [valid] Ep. 2 : Up. 500000 : ce-mean-words : 1.56508 : stalled 2 times (last best: 1.56489)",
        "[2019-08-17 13:34:18] [valid] Ep. 2 : Up. 500000 : perplexity : 4.78307 : stalled 2 times (last best: 4.78214)",
        "[2019-08-17 13:37:31] [valid] Ep. 2 : Up. 500000 : translation : 32.09 : new best")
    assert steps(recs) == [(500000, 2.77276516)]
    assert eval_losses(p) == [(500000, 1.56508)]


# ------------------------------------------------- YOLOX (yolox/core/trainer.py after_iter)

YOLOX = ("2023-08-10 08:54:{:02d} | INFO     | yolox.core.trainer:253 - epoch: {}/300, iter: {}/12, mem: 2956Mb, "
         "iter_time: 0.383s, data_time: 0.001s, total_loss: {}, iou_loss: 2.3, l1_loss: 0.0, conf_loss: 1.8, cls_loss:")


def test_yolox_rows_are_the_runs_iterations_and_a_row_wrapped_after_a_name_joins():
    recs, p = parse(YOLOX.format(40, 1, 10, 5.5), "1.1, lr: 4.340e-04, size: 640, ETA: 0:46:06",
                    YOLOX.format(53, 2, 10, 4.8), "0.7, lr: 6.250e-04, size: 576, ETA: 0:34:23")
    assert steps(recs) == [(10, 5.5), (22, 4.8)]
    assert [(r["max_steps"], r["lr"]) for r in recs] == [(3600, 4.34e-04), (3600, 6.25e-04)]


def test_a_whole_yolox_row_is_not_joined_with_the_line_after():
    recs, p = parse(YOLOX.format(40, 1, 10, 5.5)[:-len(", cls_loss:")] + ", cls_loss: 1.1, lr: 4.3e-04, size: 640, "
                    "ETA: 0:46:06", "0.7, lr: 6.250e-04")
    assert steps(recs) == [(10, 5.5)]


def test_ignites_epoch_iter_line_reads_as_before():
    recs, p = parse("Epoch: 2/10, Iter: 3/50 -- loss: 0.5, lr: 0.001")
    assert [(r["step"], r["max_steps"], r["loss"]) for r in recs] == [(53, 500, 0.5)]


# ------------------------------------------------- TensorFlowTTS's logger (base_trainer.py)
# examples' logging.basicConfig(format="%(asctime)s (%(module)s:%(lineno)d) %(levelname)s:
# %(message)s"); base_trainer.py _write_to_tensorboard logs one value a line:
# logging.info(f"(Step: {self.steps}) {key} = {value:.4f}.")

def test_tensorflowtts_values_one_a_line_are_one_record_of_their_step():
    head = "2020-09-10 11:52:14,44{} (base_trainer:831) INFO: (Step: {}) {} = {}."
    recs, p = parse(head.format(7, 95400, "train_duration_loss", "0.0353"),
                    head.format(8, 95400, "train_f0_loss", "0.0659"),
                    head.format(9, 95400, "train_mel_loss_after", "0.4120"),
                    head.format(7, 95600, "train_duration_loss", "0.0351"),
                    head.format(8, 95600, "train_f0_loss", "0.0650"))
    assert [r["step"] for r in recs] == [95400, 95600]
    assert recs[0]["extra"]["train_f0_loss"] == 0.0659
