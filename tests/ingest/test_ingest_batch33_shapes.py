"""Line shapes of held-out batch 33 (vision, robotics and notebook logs outside the LLM trainers)
that were misread: each written from the code that prints it, fed as bytes, checked on the
records and evaluations a user gets, with a line that only resembles it read as before."""
from __future__ import annotations

from moeconsole.runner.ingest.lines import unquote_notebook_line
from tests.ingest.test_ingest_real_shapes import parse, eval_losses as evals

YOLO_HEAD = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"


def test_ultralytics_rows_of_a_bar_drawn_without_its_bar_are_records():
    """tqdm with no width (a notebook's ``!yolo train``) prints "640: 100% 63/63 [00:16<...]"."""
    recs, _ = parse(YOLO_HEAD,
                    "      9/500       2.7G     0.8025          2      1.173         16        640: 100% 63/63 "
                    "[00:16<00:00,  3.86it/s]",
                    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
                    "100% 5/5 [00:01<00:00,  4.36it/s]",
                    "                   all        141        141      0.723      0.785      0.817      0.734",
                    YOLO_HEAD,
                    "     10/500       2.7G     0.8118      1.913      1.192          7        640: 100% 63/63 "
                    "[00:17<00:00,  3.63it/s]")
    assert [(r["step"], r["loss"], r["mem_gib"]) for r in recs] == [(567, None, 2.7), (630, None, 2.7)]
    assert recs[0]["extra"]["cls_loss"] == 2.0


def test_a_row_shaped_line_without_the_header_gives_no_ultralytics_record():
    recs, _ = parse("      9/500       2.7G     0.8025          2      1.173         16        640: 100% 63/63 "
                    "[00:16<00:00,  3.86it/s]")
    assert all(r["src"] != "ultralytics" for r in recs)


def test_a_notebooks_stored_output_lines_are_read_as_printed():
    """An .ipynb keeps a stream output as JSON string items, one a line, each ending in "\\n"."""
    recs, _ = parse('          "text": [',
                    '            "' + YOLO_HEAD + '\\n"',
                    '          ]', '        },', '        {',
                    '          "output_type": "stream",', '          "name": "stderr",', '          "text": [',
                    '            "      1/100      11.2G      1.503      2.265      1.666        228       1280: '
                    '100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 8/8 [00:10<00:00,  1.36s/it]\\n",',
                    '            "\\u001b[34m\\u001b[1mval: \\u001b[0mScanning ... 100%|\u2588\u2588| 4/4 [00:04<00:00]\\n"',
                    '          ]')
    assert [(r["step"], r["mem_gib"]) for r in recs] == [(8, 11.2)]


def test_a_json_key_line_or_an_item_without_its_newline_is_left_as_it_is():
    key = b'  "text": "step 5 loss 1.2\\n",'
    assert unquote_notebook_line(key) == key
    last = b'   "Scanning 128/128 [00:00<?, ?it/s]"'
    assert unquote_notebook_line(last) == last
    assert unquote_notebook_line(b'   "loss: 1.5 \\"x\\"\\n",') == b'loss: 1.5 "x"'


def test_a_model_card_table_copied_with_only_its_closing_pipes():
    recs, p = parse("Training Loss | Epoch | Step | Validation Loss | Wer |",
                    "---|---|---|---|---|",
                    "5.127 | 0.04 | 10 | 6.5305 | 89.7704 |",
                    "4.9407 | 0.08 | 20 | 5.6702 | 88.1002 |",
                    "Framework versions")
    assert [(r["step"], r["loss"], r["epoch"]) for r in recs] == [(10, 5.127, 0.04), (20, 4.9407, 0.08)]
    assert evals(p) == [(10, 6.5305), (20, 5.6702)]


def test_a_row_with_a_cell_missing_under_that_header_is_not_read():
    recs, p = parse("Training Loss | Epoch | Step | Validation Loss | Wer |",
                    "---|---|---|---|---|",
                    "5.127 | 0.04 | 10 | 6.5305 |")
    assert recs == [] and evals(p) == []


def test_ultralytics_results_csv_rows_are_the_epochs():
    """results.csv: "epoch,time,train/box_loss,..." (8.3) and 8.0's cells padded to 23 characters."""
    for head, row1, row2 in (
            ("epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/mAP50(B),val/box_loss,lr/pg0",
             "1,500.495,1.54286,4.35192,1.10972,0.13632,1.51625,5.95935e-05",
             "2,968.839,1.32363,2.61398,1.03833,0.68116,0.96559,0.000115325"),
            ("                  epoch,         train/box_loss,         train/cls_loss,           val/box_loss",
             "                      1,                 1.4679,                 1.4426,                 0.9412",
             "                      2,                 1.3088,                 1.0825,                0.92106")):
        recs, _ = parse(head, row1, row2)
        assert [(r["step"], r["loss"]) for r in recs] == [(1, None), (2, None)]
        assert recs[0]["extra"]["train/box_loss"] in (1.54286, 1.4679)
        assert "time" not in recs[0]["extra"]


def test_a_csv_counting_epochs_without_ultralytics_names_is_not_read_as_its_table():
    """Keras' CSVLogger header ``epoch,loss,val_loss`` names no step and no ``train/`` column."""
    recs, _ = parse("epoch,loss,val_loss", "0,0.52,0.61", "1,0.41,0.55")
    assert all(r["src"] != "csv" for r in recs)


def test_timm_train_lines_count_on_across_epochs_and_validate_gives_its_last_average():
    recs, p = parse(
        "Train: 0 [   0/73 (  1%)]  Loss: 6.86 (6.86)  Time: 9.575s,   13.37/s  (9.575s,   13.37/s)  "
        "LR: 1.000e-05  Data: 0.844 (0.844)",
        "Train: 0 [  50/73 ( 70%)]  Loss: 6.77 (6.83)  Time: 0.320s,  400.32/s  (0.470s,  272.39/s)  "
        "LR: 1.000e-05  Data: 0.217 (0.047)",
        "Test: [   0/30]  Time: 6.593 (6.593)  Loss:   6.723 ( 6.723)  Acc@1:   0.000 (  0.000)  "
        "Acc@5:   0.000 (  0.000)",
        "Test: [  30/30]  Time: 3.856 (0.732)  Loss:   6.615 ( 6.691)  Acc@1:   0.000 (  0.076)  "
        "Acc@5:   1.176 (  3.287)",
        "Train: 1 [   0/73 (  1%)]  Loss: 6.69 (6.69)  Time: 0.796s,  160.74/s  (0.796s,  160.74/s)  "
        "LR: 1.001e-02  Data: 0.685 (0.685)")
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(0, 6.86, 1e-05), (50, 6.77, 1e-05),
                                                             (73, 6.69, 0.01001)]
    assert evals(p) == [(50, 6.691)]


def test_a_train_percentage_is_no_epoch_and_a_test_batch_before_the_last_no_evaluation():
    recs, p = parse("Epoch 8/200 - Loss: 2.4652, Train: 17.55%, Test: 0.00%, α: 0.3837",
                    "Epoch 9/200 - Loss: 2.4023, Train: 21.39%, Test: 0.00%, α: 0.3974",
                    "Test: [  10/30]  Time: 0.022 (0.126)  Loss:   1.462 ( 1.867)")
    assert [(r["step"], r["loss"]) for r in recs] == [(8, 2.4652), (9, 2.4023)]
    assert evals(p) == []


LEROBOT = "INFO 2025-05-28 12:13:{s:02d} ts/train.py:232 step:{step} smpl:{smpl} ep:{ep} epch:{epch} loss:{loss} " \
          "grdn:{g} lr:1.0e-05 updt_s:0.042 data_s:0.000"


def test_lerobot_grdn_is_the_gradient_norm():
    recs, _ = parse(LEROBOT.format(s=5, step=800, smpl="6K", ep=13, epch="0.65", loss="2.331", g="68.764"))
    assert [(r["step"], r["loss"], r["grad_norm"], r["lr"]) for r in recs] == [(800, 2.331, 68.764, 1e-05)]


def test_a_step_printed_rounded_to_thousands_is_no_step():
    """format_big_number prints 1000, 1200 and 1400 as "1K": no record at step 1 (a restart)."""
    recs, _ = parse(LEROBOT.format(s=5, step=800, smpl="6K", ep=13, epch="0.65", loss="2.331", g="68.764"),
                    LEROBOT.format(s=14, step="1K", smpl="8K", ep=16, epch="0.81", loss="2.075", g="64.323"),
                    LEROBOT.format(s=22, step="1K", smpl="10K", ep=20, epch="0.98", loss="1.903", g="61.364"))
    assert [r["step"] for r in recs] == [800]


def test_an_evaluations_own_loss_is_no_training_value():
    from moeconsole.runner.ingest.records import has_train_metric
    assert has_train_metric({"step": 1, "train/box_loss": 1.54})
    assert not has_train_metric({"step": 1, "val/box_loss": 1.51, "metrics/mAP50(B)": 0.13})
