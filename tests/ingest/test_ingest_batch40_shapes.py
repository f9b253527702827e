"""Line shapes of held-out batch 40 that were misread: each written from the code that prints
it, fed as bytes, checked on the records and evaluations a user gets, with a line of another
program that only resembles it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals


def test_darknet_batch_lines_of_both_forks_are_records_at_their_count():
    """pjreddie's examples/detector.c: "%ld: %f, %f avg, %f rate, %lf seconds, %d images";
    AlexeyAB's src/detector.c: "\\n %d: %f, %f avg loss, %f rate, %lf seconds, %d images, %f hours
    left". The first number is the batch's loss, "rate" the lr, the seconds the step time."""
    recs, p = parse("Region 82 Avg IOU: 0.360847, Class: 0.508328, Obj: 0.499743, No Obj: 0.496484, count: 40",
                    "7: 812.335999, 905.112000 avg, 0.000100 rate, 3.417520 seconds, 448 images",
                    "",
                    " 8: 640.271973, 878.627991 avg loss, 0.000200 rate, 3.380101 seconds, 512 images, 9.512 hours left",
                    "v3 (mse loss, Normalizer: (iou: 0.75, cls: 1.00) Region 94 Avg (IOU: 0.27), count: 2, "
                    "class_loss = 1149.53, iou_loss = 1.92, total_loss = 1151.46")
    assert steps(recs) == [(7, 812.335999), (8, 640.271973)]
    assert [r["lr"] for r in recs] == [0.0001, 0.0002]
    assert [r["step_time_s"] for r in recs] == [3.41752, 3.380101]
    assert recs[0]["extra"]["avg_loss"] == 905.112


def test_darknet_lines_behind_srun_labels_keep_their_count_and_a_label_before_other_lines_is_a_label():
    """The darknet line's own "N:" is no srun task label; a real label before another program's
    line is removed as before."""
    recs, p = parse("12: 4.543089, 7.319715 avg, 0.001000 rate, 0.027213 seconds, 768 images",
                    "1: step 5 loss 2.5")
    assert steps(recs) == [(12, 4.543089), (5, 2.5)]


def test_a_line_of_counts_that_only_resembles_darknet_is_no_darknet_record():
    """Without the "avg" and "rate" words in darknet's order, the "N:" is srun's label as before."""
    recs, p = parse("3: 4.5, 7.3 mean, 0.001 rate, 0.02 seconds, 768 images", "3: step 9 loss 1.0")
    assert steps(recs) == [(9, 1.0)]


VITS_LIST = ("[2.743607521057129, 1.878671407699585, 2.666090965270996, 22.306901931762695, "
             "1.6467288732528687, 1.5791008472442627, {step}, 0.0001989775583408775]")


def test_vits_train_epoch_then_its_list_is_a_record_at_the_global_step():
    """vits train.py: logger.info('Train Epoch: {} [{:.0f}%]'.format(...)) then
    logger.info([x.item() for x in losses] + [global_step, lr]), losses = [loss_disc, loss_gen,
    loss_fm, loss_mel, loss_dur, loss_kl]; no total loss is printed."""
    recs, p = parse("INFO:ljs_base:Train Epoch: 12 [40%]", "INFO:ljs_base:" + VITS_LIST.format(step=600),
                    "INFO:ljs_base:====> Epoch: 12")
    assert steps(recs) == [(600, None)]
    assert recs[0]["lr"] == 0.0001989775583408775 and recs[0]["epoch"] == 12
    assert recs[0]["extra"]["loss_mel"] == 22.306901931762695


def test_rvc_step_and_lr_list_after_its_train_epoch_line():
    """RVC's train.py: logger.info([global_step, lr]) after the "Train Epoch" line; its losses on
    the next line ("loss_disc=..., loss_gen=...") carry no step of their own."""
    recs, p = parse("INFO:mi-test:Train Epoch: 3 [67%]", "INFO:mi-test:[1200, 9.99e-05]",
                    "INFO:mi-test:loss_disc=3.959, loss_gen=3.062, loss_fm=7.881,loss_mel=17.356, loss_kl=1.535")
    assert steps(recs) == [(1200, None)] and recs[0]["lr"] == 9.99e-05


def test_vits_own_tab_logger_list_without_its_header_line():
    """utils.get_logger's "%(asctime)s\\t%(name)s\\t%(levelname)s\\t%(message)s": VITS' eight-item
    list alone (a paste that starts after the header) is its record."""
    recs, p = parse("2023-12-07 18:38:24,804\tModel\tINFO\t" + VITS_LIST.format(step=2400),
                    "2023-12-07 18:39:10,448\tModel\tINFO\t====> Epoch: 42")
    assert steps(recs) == [(2400, None)]


def test_a_list_of_numbers_that_is_no_vits_step_list_gives_no_record():
    """A list without the "Train Epoch: N [P%]" line before it, or not VITS' own eight items behind
    its logger, or after a header but on a later line, is not a step."""
    recs, p = parse("INFO:x:[1200, 9.99e-05]", "2023-12-07 18:38:24,804\tModel\tINFO\t[3, 0.5]",
                    "INFO:x:Train Epoch: 3 [67%]", "INFO:x:something else", "INFO:x:[1400, 9.98e-05]",
                    "Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.300000")
    assert not {1200, 1400, 3} & {r["step"] for r in recs}
    assert all(r["src"] != "vits" for r in recs)


def test_coqui_evaluation_steps_are_no_training_records():
    """Coqui's console_logger.py print_eval_step: f"   --> STEP: {step}" (no total, no global
    step) and its rows: the evaluation's batches; a training step report after it is read."""
    recs, p = parse(" > EVALUATION ", "", "   --> STEP: 0", "     | > loss_disc: 2.43  (2.43)",
                    "     | > loss_0: 2.43  (2.43)", "", "   --> STEP: 1", "     | > loss_disc: 2.41  (2.42)", "",
                    "   --> STEP: 3/406 -- GLOBAL_STEP: 1003", "     | > loss_0: 2.1  (2.2)",
                    "     | > current_lr: 0.0002 ", "")
    assert [r["step"] for r in recs] == [1003]
    assert recs[0]["lr"] == 0.0002


def test_paddle_printed_dict_items_among_a_lines_pairs():
    """PaddleDetection static tools/train.py: 'iter: {}, lr: {:.6f}, {}, eta: ...' with
    TrainingStats.log(): ', '.join(str(dict({x: y})).strip('{}') ...), values as text or numbers."""
    recs, p = parse("2020-09-25 18:40:34,280-INFO: iter: 2, lr: 0.000035, 'loss': '2898.865234', "
                    "'loss_xy': '6.47', eta: 5:10:47, batch_cost: 15.56577 sec, ips: 0.51395 images/sec",
                    "2019-12-01 10:00:00,000-INFO: iter: 20, lr: 0.000040, 'loss': 43.708, 'loss_cls': 1.2, "
                    "time: 0.52, eta: 1:00:00")
    assert steps(recs) == [(2, 2898.865234), (20, 43.708)]
    assert recs[0]["step_time_s"] == 15.56577 and recs[0]["extra"]["loss_xy"] == 6.47


def test_a_quoted_word_value_is_no_number():
    recs, p = parse("iter: 5, lr: 0.1, 'loss': 'nan-ish', 'mode': 'train'")
    assert all(r["loss"] is None for r in recs)


def test_pickscore_bar_postfix_stl_is_the_steps_loss():
    """PickScore's base_accelerator.py update_step: progress_bar.set_postfix(stl=loss,
    gstl=loss, mem=..., st=..., ep=..., gst=..., lr=...)."""
    recs, p = parse("Steps:   0%|          | 2/4000 [00:27<13:28:05, 12.13s/it, ep=0, gst=2, gstl=2.29, "
                    "lr=3.35e-7, mem=25.4, st=2, stl=2.29]")
    assert steps(recs) == [(2, 2.29)] and recs[0]["max_steps"] == 4000


def test_test_tube_metrics_csv_with_a_global_step_column_and_created_at():
    """test_tube/log.py: metrics_dict['created_at'] = str(datetime.utcnow()) in each row;
    latent-diffusion logs "global_step" as a metric (a float in the CSV)."""
    recs, p = parse("train/loss_simple_step,train/loss_vlb_step,train/loss_step,global_step,epoch,created_at",
                    "0.2514,0.0017,0.2514,49.0,0,2025-11-07 06:02:10.484610",
                    "0.0960,0.0004,0.0960,99.0,0,2025-11-07 06:09:01.771131")
    assert steps(recs) == [(49, 0.2514), (99, 0.096)]


def test_a_csv_with_a_fractional_global_step_or_a_text_cell_elsewhere_is_not_read_as_rows():
    recs, p = parse("loss,global_step,note", "0.5,49.5,x", "0.4,50,ok")
    assert steps(recs) == []
