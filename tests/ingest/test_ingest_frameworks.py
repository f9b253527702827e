"""Every framework's training log (tests/ingest/frameworks.py, built from each framework's own
format strings) read to the right training steps and evaluations, and the same by every path:
the line parser, ``parse`` (the bulk reader on the whole file) and the runner's live reader on
random slices."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.files import iter_batches, records_from_path
from moeconsole.runner.ingest.live import LiveReader
from tests.ingest import frameworks as F
from tests.ingest.ingest_samples import parsed
from tests.ingest.test_ingest_live import random_cuts

REPO = Path(__file__).resolve().parents[2]
LOGS = {log.name: log for log in (make() for make in F.ALL)}


def by_line_parser(data: bytes) -> tuple[list[dict], list[dict]]:
    p = LogParser()
    events = [ev for line in data.split(b"\n")[:-1] for ev in p.process_line(line)] + p.end_of_input()
    return [o for k, o in events if k == "record"], [o for k, o in events if k == "mark"]


def by_parse(path: Path) -> tuple[list[dict], list[dict]]:
    records, _ = records_from_path(path)
    marks = [m for batch, _ in iter_batches(path) for _, m in batch.marks]
    return records, marks


def by_live(data: bytes, seed: int, mean: float) -> tuple[list[dict], list[dict]]:
    reader = LiveReader()
    events = []
    cuts = random_cuts(len(data), seed, mean)
    for a, b in zip(cuts, cuts[1:]):
        events += reader.feed(data[a:b])
    events += reader.finish()
    return [dict(o) for k, o in events if k == "record"], [o for k, o in events if k == "mark"]


def evals_of(marks: list[dict]) -> list[tuple]:
    return [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"]


@pytest.mark.parametrize("name", sorted(LOGS))
def test_each_framework_gives_its_steps_and_evaluations(name):
    log = LOGS[name]
    recs, marks = by_line_parser(log.text())
    train = [r for r in recs if r["src"] not in ("megatron_mem", "deepspeed_mem")]
    assert [(r["step"], r["loss"]) for r in train] == log.steps
    assert {r["src"] for r in train} == {log.src}
    assert evals_of(marks) == log.evals


@pytest.mark.parametrize("name", sorted(LOGS))
@pytest.mark.parametrize("seed,mean", [(1, 7), (2, 300), (3, 1 << 16)])
def test_live_reader_and_parse_give_the_same_records_for_every_format(tmp_path, name, seed, mean):
    log = LOGS[name]
    path = tmp_path / "train.log"
    data = log.text() * 3     # a format repeated: the bulk reader may learn a template on the way
    path.write_bytes(data)
    want = by_line_parser(data)
    assert by_parse(path) == want
    got_recs, got_marks = by_live(data, seed, mean)
    assert (got_recs, got_marks) == want


def test_fairseq_details():
    recs, marks = by_line_parser(LOGS["fairseq_simple"].text())
    r = recs[0]
    assert (r["grad_norm"], r["lr"]) == (0.89, 0.0005)
    assert r["epoch"] == pytest.approx(100 / 600) and r["extra"]["wps"] == 12345
    summary = [m for m in marks if m["kind"] == "train_summary"]
    assert summary and summary[0]["step"] == 600 and summary[0]["values"]["loss"] == 7.5
    ev = next(m for m in marks if m["kind"] == "eval")
    assert ev["split"] == "valid" and ev["values"]["best_loss"] == 6.9
    _, marks = by_line_parser(LOGS["fairseq_json"].text())
    kinds = [(m["kind"], m.get("step")) for m in marks]
    assert kinds == [("eval", 600), ("train_summary", None)]


def test_memory_with_units_is_read_in_gib():
    recs, _ = by_line_parser(LOGS["detectron2"].text())
    assert recs[0]["mem_gib"] == pytest.approx(3782 / 1024) and recs[0]["step_time_s"] == 0.4567
    recs, _ = by_line_parser(LOGS["automodel"].text())
    assert recs[0]["mem_gib"] == pytest.approx(24.9) and recs[0]["tokens_per_s"] == pytest.approx(12345.67)
    recs, _ = by_line_parser(LOGS["nemo2"].text())
    assert recs[0]["step_time_s"] == 7.5 and "s" not in recs[0]["extra"]
    assert recs[0]["lr"] == pytest.approx(1.499e-06)
    recs, _ = by_line_parser(LOGS["mmcv1"].text())
    assert recs[0]["mem_gib"] == pytest.approx(3782 / 1024) and recs[0]["extra"]["eta"] == "37 days, 2:03:17"
    assert recs[0]["step_time_s"] == 0.456 and recs[0]["grad_norm"] == 2.1
    recs, _ = by_line_parser(LOGS["torchtune"].text())
    assert recs[-1]["mem_gib"] == 14.1 and recs[-1]["grad_norm"] == 0.9


def test_lightning_step_loss_is_the_loss_and_the_running_mean_is_kept():
    recs, _ = by_line_parser(LOGS["nemo_bar"].text())
    last = recs[-1]
    assert last["loss"] == 7.56 and last["extra"]["loss_smoothed"] == 7.75
    assert last["extra"]["consumed_samples"] == 188 * 64


def test_megatron_memory_reports_and_deepspeed_memory_lines_per_rank():
    recs, _ = by_line_parser(LOGS["deepspeed"].text())
    mem = [(r["step"], r["extra"].get("rank"), r["mem_gib"]) for r in recs if r["src"] == "deepspeed_mem"]
    assert mem == LOGS["deepspeed"].extra["memory"]
    first = next(r for r in recs if r["src"] == "deepspeed_mem")
    assert first["extra"]["mem_report"] == "DeepSpeed Engine: After configure distributed model"
    assert first["extra"]["mem_reserved_gib"] == 0.55 and first["extra"]["mem_max_allocated_gib"] == 0.52


def test_eval_only_lines_never_make_a_training_step():
    """nanoGPT's evaluation line once became an extra training record at its step."""
    p = LogParser()
    recs, (m,) = parsed(p, b"step 250: train loss 2.1000, val loss 2.3000\n")
    assert recs == [] and (m["kind"], m["step"], m["split"], m["loss"]) == ("eval", 250, "val", 2.3)
    assert m["values"] == {"train_loss": 2.1, "val_loss": 2.3}


def test_parse_cli_summary_and_json_eval(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(LOGS["nanogpt"].text())
    res = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", str(log)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if ln.strip().startswith("evaluations"))
    assert "2 (val)" in line and "min 3.8 (step 5)" in line
    steps = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", str(log), "--json"], cwd=REPO,
                           capture_output=True, text=True, timeout=120)
    assert [json.loads(x)["step"] for x in steps.stdout.splitlines()] == list(range(6))
    evals = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", str(log), "--json", "--eval"],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    got = [json.loads(x) for x in evals.stdout.splitlines()]
    assert [(e["v"], e["step"], e["split"], e["loss"]) for e in got] == [(1, 0, "val", 4.3), (1, 5, "val", 3.8)]


def test_named_readers_fill_the_fields_their_format_strings_print():
    """mlx-lm's It/sec is the inverse of the step time and its Peak mem GB the memory; Caffe's lr
    line and net outputs join the iteration's record; litgpt's optimizer step is kept beside the
    iteration; unsloth's printed index is one behind the step."""
    mlx, _ = by_line_parser(LOGS["mlx_lm"].text())
    assert (mlx[0]["step_time_s"], mlx[0]["mem_gib"], mlx[0]["tokens_per_s"], mlx[0]["lr"]) == (0.5, 5.094, 300.5, 1e-05)
    caffe, _ = by_line_parser(LOGS["caffe"].text())
    assert [r["lr"] for r in caffe] == [0.001, 0.001, 0.001]
    assert caffe[0]["extra"] == {"lambda": 16.3613, "softmax_loss": 9.4}
    assert abs(caffe[0]["step_time_s"] - 1 / 1.04181) < 1e-12 and caffe[2]["step_time_s"] is None
    lit, _ = by_line_parser(LOGS["litgpt"].text())
    assert [r["extra"]["optimizer_step"] for r in lit] == [0.0, 1.0, 1.0, 2.0] and lit[0]["step_time_s"] == 0.1205


def test_deepspeed_report_gives_lr_only_where_no_trainer_prints_steps():
    recs, _ = by_line_parser(LOGS["deepspeed_alone"].text())
    train = [r for r in recs if r["src"] == "deepspeed"]
    assert [(r["lr"], r["extra"]["skipped"]) for r in train] == [(2e-05, 0), (2e-05, 1), (2e-05, 1)]
    recs, _ = by_line_parser(LOGS["deepspeed"].text())
    assert not [r for r in recs if r["src"] == "deepspeed"]


def test_maxtext_step_seconds_and_device_tokens():
    recs, _ = by_line_parser(LOGS["maxtext"].text())
    want = LOGS["maxtext"].extra
    assert all((r["step_time_s"], r["tokens_per_s"]) == (want["step_time_s"], want["tokens_per_s"]) for r in recs)


def test_espnet_batch_counter_goes_on_across_epochs_and_train_time_is_the_step_time():
    """ESPnet2's `{epoch}epoch:train:{start}-{end}batch:` restarts its counter each epoch: epoch 2's
    batch 100 is step 400 after a 300-batch epoch 1; `train_time` is seconds per step, the
    optimizer's `optim0_lr0` the lr, the data loader's `iter_time` stays an extra; the epoch
    results line is the [valid] evaluation, never a training record."""
    recs, marks = by_line_parser(LOGS["espnet2"].text())
    assert [r["step"] for r in recs] == [100, 200, 300, 400, 500, 600]
    assert {r["step_time_s"] for r in recs} == {1.816} and recs[0]["lr"] == 0.000346
    assert recs[0]["extra"]["iter_time"] == 2.878e-04 and recs[3]["epoch"] == 2
    assert evals_of(marks) == [(300, 40.0), (600, 35.0)]


def test_stable_baselines_table_is_one_record_at_its_total_timesteps():
    """A stable-baselines3 table (dashes, `| key | value |` rows, dashes) is one record at its
    time/total_timesteps: train/loss the loss, train/learning_rate the lr, the other rows kept
    under section/key; eval/ rows are an evaluation at that step."""
    recs, marks = by_line_parser(LOGS["sb3"].text())
    assert [r["step"] for r in recs] == [2048, 4096, 6144]
    assert recs[1]["lr"] == 0.001 and recs[1]["extra"]["rollout/ep_rew_mean"] == -1180.0
    assert recs[1]["extra"]["train/value_loss"] == 0.777 and "time/total_timesteps" not in recs[1]["extra"]
    assert [(m["step"], m["values"]["eval/mean_reward"]) for m in marks if m["kind"] == "eval"] == [(6144, -213.0)]


def test_llm_c_and_llama2_c_unnamed_time_and_throughput_columns(tmp_path):
    """llm.c's `(took N ms)` and its `| 24.18 ms | 338855 tok/s |` columns, llama2.c's
    `| 8060.78ms |`: a column that is only a number and a time unit is the step time, one with
    tok/s the tokens per second (they were dropped), read the same by `parse` and the line parser."""
    log = F.llm_c()
    recs, _ = by_line_parser(log.text())
    assert [(r["step"], r["loss"]) for r in recs] == log.steps
    assert [r["step_time_s"] for r in recs] == log.extra["step_time_s"]
    assert [r["tokens_per_s"] for r in recs[2:5]] == [338855.0] * 3 and recs[2]["grad_norm"] == 1.25
    path = tmp_path / "train.log"
    path.write_bytes(log.text() * 3)
    assert by_parse(path)[0] == by_line_parser(log.text() * 3)[0]


def test_a_bar_per_epoch_without_description_counts_on_and_the_epoch_line_is_an_evaluation():
    """SpeechBrain (core.py fit: tqdm(train_set, ...) with t.set_postfix(train_loss=...), then
    utils/train_logger.py FileTrainLogger.log_stats: "epoch: 1, lr: ... - train loss: ... - valid
    loss: ..., valid CER: ..."): a finished bar, other lines, then a bar of the same length is the
    next epoch (its count goes on), and the epoch line's valid part is an evaluation at the last
    step. The finished bar drawn again on the next line (tqdm's close) is not a new epoch."""
    bar = "100%|##########| 190/190 [03:08<00:00,  1.01it/s, train_loss={}]"
    val = "100%|##########| 137/137 [01:43<00:00,  1.33it/s]"
    lines = ["speechbrain.utils.epoch_loop - Going into epoch 1", bar.format(0.945), bar.format(0.945), val,
             "speechbrain.utils.train_logger - epoch: 1, lr: 1.00e+00 - train loss: 9.45e-01 - valid loss: 1.23, valid CER: 35.42",
             "speechbrain.utils.epoch_loop - Going into epoch 2", bar.format(0.726), val,
             "speechbrain.utils.train_logger - epoch: 2, lr: 1.00e+00 - train loss: 7.26e-01 - valid loss: 1.27, valid CER: 30.1"]
    recs, marks = by_line_parser(("\n".join(lines) + "\n").encode())
    assert [(r["step"], r["loss"]) for r in recs] == [(190, 0.945), (380, 0.726)]
    assert evals_of(marks) == [(190, 1.23), (380, 1.27)]


def test_ultralytics_bar_rows_count_batches_across_epochs_without_a_loss():
    """An ultralytics row under its `Epoch GPU_mem box_loss ...` header is a bar: its count goes
    on across the epochs its description names (YOLOv8 1-based, YOLOv5 0-based), GPU_mem is the
    memory and the loss components stay extras (no loss is "the" loss but YOLOv5's total)."""
    recs, _ = by_line_parser(LOGS["ultralytics"].text())
    assert [r["step"] for r in recs] == list(range(1, 9)) and {r["mem_gib"] for r in recs} == {6.73}
    assert recs[4]["extra"]["box_loss"] == 1.29 and recs[4]["loss"] is None and recs[4]["epoch"] == 1.25
    old = ("%10s" * 8) % ("Epoch", "gpu_mem", "box", "obj", "cls", "total", "labels", "img_size")
    row = ("%10s" * 2 + "%10.4g" * 6) % ("0/299", "5.2G", 0.11, 0.1612, 0.03867, 0.3099, 28, 1280)
    recs, _ = by_line_parser(f"{old}\n{row}:   1%|5   | 1/78 [00:04<05:27,  4.26s/it]\n".encode())
    assert [(r["step"], r["loss"], r["mem_gib"]) for r in recs] == [(1, 0.3099, 5.2)]


def test_a_bar_drawn_before_its_update_gives_each_step_its_own_values():
    """VeOmni sets the postfix, then updates the count: every value of a record (not only the
    loss) is that step's, across its two epochs' bars; Lightning's order (update, then
    set_postfix) in the same parser run is still read the other way."""
    log = LOGS["veomni"]
    recs, _ = by_line_parser(log.text())
    assert [r["lr"] for r in recs] == pytest.approx(log.extra["lr"], rel=1e-2)
    assert [r["grad_norm"] for r in recs] == [round(29.0 + s / 4, 2) for s, _ in log.steps]
    recs, _ = by_line_parser(LOGS["lightning2"].text())
    assert [(r["step"], r["loss"]) for r in recs] == LOGS["lightning2"].steps


def test_a_lightning_bar_seen_first_at_count_zero_is_still_update_then_postfix():
    """A paste that starts at a Lightning epoch's bar reset to count 0 (showing the last epoch's
    values, v_num among them) is not a bar drawn postfix-first: each count keeps its last redraw
    (read postfix-first, every step would get the step before's loss). Since review R52's mend
    a Lightning 2 bar is at its true step (epoch x total + n): the reset bar's count 0 of epoch 1
    is step 3, whose loss it shows."""
    line = LOGS["lightning2"].lines[0]
    epoch1 = "\r" + line[line.index("Epoch 1:"):]
    recs, _ = by_line_parser((epoch1 + "\n").encode())
    assert [(r["step"], r["loss"]) for r in recs] == [(3, 0.7), (4, 0.6), (5, 0.5), (6, 0.4)]


def test_fastai_table_rows_are_epochs_with_their_validation_as_an_evaluation():
    """A row under fastai's `epoch  train_loss  valid_loss  <metrics>  time` header is its epoch's
    training loss (a record at the printed epoch, the epoch's time an extra) and the validation
    loss with the metrics fastai computes on the validation set (an evaluation there); `#na#` is
    no value. Before, every row of the table was lost."""
    log = LOGS["fastai"]
    recs, marks = by_line_parser(log.text())
    assert [(r["step"], r["loss"], r["epoch"]) for r in recs] == [(0, 0.9, 0.0), (1, 0.8, 1.0), (2, 0.7, 2.0)]
    assert recs[0]["extra"]["epoch_time_s"] == 12.0 and "error_rate" not in recs[0]["extra"]
    evs = [m for m in marks if m["kind"] == "eval"]
    assert [(m["step"], m["loss"], m["values"]["error_rate"]) for m in evs] == [(0, 0.7, 0.2), (1, 0.65, 0.19)]
    # fastprogress before 0.2 joined the padded names with nothing (rows still split on spaces),
    # fastai 1.x counted epochs from 1 and printed no time column
    old = "epoch   train_loss  valid_loss  accuracy\n1       3.211025    3.328014    0.396197\n" \
          "2       3.119410    3.286294    0.395946\nTotal time: 11:52\n"
    recs, marks = by_line_parser(old.encode())
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 3.211025), (2, 3.11941)]
    assert evals_of(marks) == [(1, 3.328014), (2, 3.286294)]
    # fastprogress's console bar drawn right after the header (no newline between them)
    glued = "epoch     train_loss  valid_loss  accuracy  time    ██████████| 100.00% [105070592/105067061 00:03<00:00]\n" \
            "0         0.466363    0.403699    0.818920  03:24\n"
    recs, marks = by_line_parser(glued.encode())
    assert [(r["step"], r["loss"], r["extra"]["epoch_time_s"]) for r in recs] == [(0, 0.466363, 204.0)]
    assert evals_of(marks) == [(0, 0.403699)]
    # a row of another width, or a number line with no header before it, is not a row
    recs, _ = by_line_parser(b"1         0.5    0.4    0.3    00:01\n")
    assert recs == []


def _hf_model_card_table(lines: list[dict]) -> str:
    """transformers' ``modelcard.make_markdown_table`` (with ``_maybe_round``,
    ``_regular_table_line``, ``_second_table_line``), as the model card's "Training results"
    prints the rows ``parse_log_history`` builds."""
    def rnd(v):
        if isinstance(v, float) and len(str(v).split(".")) > 1 and len(str(v).split(".")[1]) > 4:
            return f"{v:.4f}"
        return str(v)
    widths = {k: len(str(k)) for k in lines[0]}
    for line in lines:
        for k, v in line.items():
            widths[k] = max(widths[k], len(rnd(v)))

    def row(values):
        return "".join(f"| {v}" + " " * (w - len(v) + 1) for v, w in zip(values, widths.values())) + "|\n"
    table = row(list(lines[0]))
    table += "".join("|:" + "-" * w + ":" for w in widths.values()) + "|\n"
    return table + "".join(row([rnd(v) for v in line.values()]) for line in lines)


def test_transformers_results_tables_are_evaluations_with_the_training_loss_beside():
    """transformers' results table, the model card's (``parse_log_history``: ``Training Loss``
    is the last loss logged before the evaluation, ``No log`` before any; ``Epoch``, ``Step``,
    ``Validation Loss``, then the metrics) and the notebook's live table pasted as text
    (``NotebookProgressCallback``: ``Step`` or, evaluating per epoch, ``Epoch`` first, floats
    printed ``{:.6f}``, tabs between the cells): each row is an evaluation at its step and the
    training loss a record there. Before, every row was lost."""
    card = _hf_model_card_table([
        {"Training Loss": "No log", "Epoch": 1.0, "Step": 50, "Validation Loss": 0.712345, "Accuracy": 0.52},
        {"Training Loss": 0.654321, "Epoch": 2.0, "Step": 100, "Validation Loss": 0.601234, "Accuracy": 0.61}])
    assert card.splitlines()[1].startswith("|:-------------:|")
    recs, marks = by_line_parser(card.encode())
    assert [(r["step"], r["loss"], r["epoch"]) for r in recs] == [(100, 0.6543, 2.0)]
    evs = [m for m in marks if m["kind"] == "eval"]
    assert [(m["step"], m["loss"], m["values"]["Accuracy"]) for m in evs] == [(50, 0.7123, 0.52), (100, 0.6012, 0.61)]
    notebook = "Step\tTraining Loss\tValidation Loss\n500\t0.693100\t0.650321\n1000\t0.551200\t0.540000\n"
    recs, marks = by_line_parser(notebook.encode())
    assert [(r["step"], r["loss"]) for r in recs] == [(500, 0.6931), (1000, 0.5512)]
    assert evals_of(marks) == [(500, 0.650321), (1000, 0.54)]
    per_epoch = "Epoch\tTraining Loss\tValidation Loss\n1\tNo log\t0.693147\n2\t0.512300\t0.480000\n"
    recs, marks = by_line_parser(per_epoch.encode())
    assert [(r["step"], r["loss"]) for r in recs] == [(2, 0.5123)]
    assert evals_of(marks) == [(1, 0.693147), (2, 0.48)]
    # evaluating more often than logging: the last logged loss is carried on to the next rows
    # (``parse_log_history`` keeps ``training_loss`` until a log has a new ``loss``): one record
    carried = _hf_model_card_table([
        {"Training Loss": "No log", "Epoch": 0.5, "Step": 300, "Validation Loss": 0.75},
        {"Training Loss": 0.6931, "Epoch": 1.0, "Step": 600, "Validation Loss": 0.7},
        {"Training Loss": 0.6931, "Epoch": 1.5, "Step": 900, "Validation Loss": 0.65},
        {"Training Loss": 0.5, "Epoch": 2.0, "Step": 1200, "Validation Loss": 0.6}])
    recs, marks = by_line_parser(carried.encode())
    assert [(r["step"], r["loss"]) for r in recs] == [(600, 0.6931), (1200, 0.5)]
    assert evals_of(marks) == [(300, 0.75), (600, 0.7), (900, 0.65), (1200, 0.6)]
    # a row whose counter is no whole number (NaN, inf, beyond a float) is no row: the reader
    # says so (it raised, and only the parser's guard kept the line from ending the read)
    from moeconsole.runner.ingest import formats
    head = formats.read_hf_table_header("Step\tTraining Loss\tValidation Loss")
    assert head is not None
    for counter in ("nan", "inf", "1e400"):
        assert formats.read_hf_table_row(f"{counter}\t0.5\t0.4", *head) is None
    # a line that names the columns with numbers among them is no header: read as before
    recs, _ = by_line_parser(b"Step 10 Training Loss 0.5\nStep 20 Training Loss 0.4\n")
    assert [(r["step"], r["loss"]) for r in recs] == [(10, 0.5), (20, 0.4)]


def test_a_bar_at_count_zero_is_no_step_when_a_loop_sets_its_postfix_before_update():
    """diffusers' train_dreambooth (2022-23) set the bar's postfix before `progress_bar.update(1)`:
    tqdm draws 'Steps:   0%|          | 0/100 [00:09<?, ?it/s, loss=0.25, lr=1e-6]' (the first
    step's values before its count), then the same values at 1/100, then the second step's values
    still at 1/100. A count of 0 finished no step, and a count's first redraw holds its step (there
    was a record at step 0, and each step got the next one's loss)."""
    lines = ["Steps:   0%|          | 0/100 [00:00<?, ?it/s]",
             "Steps:   0%|          | 0/100 [00:09<?, ?it/s, loss=0.25, lr=1e-6]",
             "Steps:   1%|          | 1/100 [00:09<16:00,  9.70s/it, loss=0.25, lr=1e-6]",
             "Steps:   1%|          | 1/100 [00:09<16:00,  9.70s/it, loss=0.125, lr=1e-6]",
             "Steps:   2%|▏         | 2/100 [00:09<06:47,  4.16s/it, loss=0.125, lr=1e-6]"]
    recs, _ = by_line_parser(("\n".join(lines) + "\n").encode())
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 0.25), (2, 0.125)]


def test_deepspeed_pipeline_engine_step_lines_give_the_step_time():
    """DeepSpeed's pipeline engine line ('steps: 16 loss: 0.7332 iter time (s): 3.181 samples/sec:
    0.314') is its own reader: `iter time (s)` is the step time (it was lost), an additional loss
    stays an extra, a fork's `step: 40 / 100` gives max_steps; DeepSpeed's own report of the step
    gives no second record."""
    log = LOGS["deepspeed_pipe"]
    recs, _ = by_line_parser(log.text())
    assert [r["step_time_s"] for r in recs] == log.extra["step_time_s"]
    assert recs[2]["extra"]["moe_loss"] == 0.0125 and recs[3]["max_steps"] == 100
    assert recs[0]["extra"]["samples_per_sec"] == 0.314


def test_prime_rl_step_lines_behind_loguru_time_and_level():
    """prime-rl's `Step N | Time: 60.98s | Loss: ...` behind loguru's time and level
    ("00:20:21 SUCCESS") and torchrun's `[default0]:` was not read at all; now each variant its
    trainers print gives its step time, its `Grad. Norm` and the used part of `Peak Mem.: 30.1/79.2 GiB`."""
    log = LOGS["prime_rl"]
    recs, _ = by_line_parser(log.text())
    assert [r["step_time_s"] for r in recs] == log.extra["step_time_s"]
    assert [r["grad_norm"] for r in recs] == log.extra["grad_norm"]
    assert [r["mem_gib"] for r in recs] == log.extra["mem_gib"]



def _verl_line(step: int, pid: int = 4072644, numpy_scalars: bool = False) -> str:
    """veRL's console line (verl/utils/logger/aggregate_logger.py concat_dict_to_str: " - ".join of
    f"step:{step}" and f"{k}:{pprint.pformat(v)}" for each number), behind Ray's "(TaskRunner pid=N) ".
    ``numpy_scalars``: the actor/* and perf/* metrics numpy scalars (verl/utils/metric/utils.py
    reduce_metrics: np.mean of each), printed as numpy >= 2 prints them ("np.float64(0.279)")."""
    import pprint

    import numpy as np
    metrics = {"global_seqlen/min": 210047.0, "actor/pg_loss": -0.0123, "actor/grad_norm": 0.279, "actor/lr": 1e-06,
               "critic/rewards/mean": 0.5, "response_length/mean": 330.437, "prompt_length/mean": 173.63,
               "timing_s/gen": 1400.087, "timing_s/step": 1630.262 + step, "timing_per_token_ms/adv": 0.001,
               "perf/cpu_memory_used_gb": 102.49}
    if numpy_scalars:
        metrics = {k: np.float64(v) if k.startswith(("actor/", "perf/")) else v for k, v in metrics.items()}
    return f"(TaskRunner pid={pid}) " + " - ".join([f"step:{step}"] + [f"{k}:{pprint.pformat(v)}" for k, v in metrics.items()])


@pytest.mark.parametrize("cut", ["prompt_length", "prompt_length/mean:", "critic/rewards/mean:0.5 -",
                                 "response_length/mean:330."])
def test_a_verl_step_line_wrapped_by_the_terminal_is_read_whole(cut):
    """A veRL step line a terminal (or a paste) wrapped, inside a name, after its colon, after a
    field's " -" or inside a number after its point (pformat never ends a float with "."): its
    rows are one line again, so the fields after the wrap (the step time, the
    metrics) are not lost; the next step's line is read on its own."""
    lines = []
    for step in (4, 5):
        line = _verl_line(step)
        at = line.index(cut) + len(cut)
        lines += [line[:at], line[at:].lstrip(" ") if cut.endswith("-") else line[at:]]
    recs, _ = by_line_parser(("\n".join(lines) + "\n").encode())
    assert [(r["step"], r["grad_norm"], r["step_time_s"]) for r in recs] == [(4, 0.279, 1634.262), (5, 0.279, 1635.262)]
    assert all(r["extra"]["prompt_length/mean"] == 173.63 for r in recs)


def test_a_cut_line_whose_rest_never_comes_is_a_metric_line_of_its_own():
    """A veRL step line a paste cut whose rest was lost (`... - prompt_length`, then the next step's
    line): each line gives its record and counts as a metric line of its own (the cut one was
    numbered as the line after it, so the two counted as one)."""
    first, second = _verl_line(4), _verl_line(5)
    p = LogParser()
    lines = [first[:first.index("prompt_length") + len("prompt_length")], second]
    events = [ev for line in lines for ev in p.process_line(line.encode())] + p.end_of_input()
    assert [o["step"] for k, o in events if k == "record"] == [4, 5]
    assert p.stats.metric_lines == 2 and p.stats.lines == 2


def test_verl_numpy_scalars_are_read_as_the_numbers_they_hold():
    """veRL under numpy >= 2 prints its np.mean metrics by their repr ("actor/grad_norm:np.float64(0.279)"):
    the lines give the records the same lines of plain numbers give (the grad norm and the lr were
    lost, the extras named "actor/pg_loss:np.float64"), each line counts as a metric line (each was
    held as a cut line until the next: one line short), and a line wrapped inside a name is still
    read whole."""
    steps = (4, 5, 6)
    lines = [_verl_line(s, numpy_scalars=True) for s in steps]
    assert "actor/grad_norm:np.float64(0.279)" in lines[0] and lines[0].endswith(":np.float64(102.49)")
    plain, _ = by_line_parser(("\n".join(_verl_line(s) for s in steps) + "\n").encode())
    p = LogParser()
    events = [ev for line in lines for ev in p.process_line(line.encode())] + p.end_of_input()
    recs = [o for k, o in events if k == "record"]
    assert [(r["step"], r["grad_norm"], r["lr"]) for r in recs] == [(s, 0.279, 1e-06) for s in steps]
    assert recs == plain
    assert p.stats.metric_lines == 3
    at = lines[0].index("prompt_length") + len("prompt_length")
    wrapped, _ = by_line_parser((lines[0][:at] + "\n" + lines[0][at:] + "\n").encode())
    assert wrapped == plain[:1]
    # a declared format (--log-format) is matched against the line as printed
    from moeconsole.runner.ingest.userformat import line_format_of
    p = LogParser(line_format=line_format_of(r"step:(?P<step>\d+) .*actor/pg_loss:np\.float64\((?P<loss>[^)]+)\)"))
    events = [ev for line in lines for ev in p.process_line(line.encode())] + p.end_of_input()
    assert [(o["step"], o["loss"]) for k, o in events if k == "record"] == [(s, -0.0123) for s in steps]


def _lmops_ppo_line(it: int, global_iter: int, tot_loss: float, lr: float) -> str:
    """LMOps' MiniLLM PPO trainer (minillm/trainer.py get_log): the prefix "train | data_epochs
    {:2d}/{:2d} | inner iter: {:3d}/{:3d} | ppo epoch: {:2d}/{:2d} | global iter: {:6d}/{:6d}", then
    "| {key}: {:.4f} " per stat, then "| lr: {:.4e} | scale: {:6.2f} | time: {:.3f} | step time: {:.3f}"."""
    prefix = "train | data_epochs {:2d}/{:2d} | inner iter: {:3d}/{:3d} | ppo epoch: {:2d}/{:2d} | global iter: {:6d}/{:6d}".format(
        0, 10, it, 8, 2, 4, global_iter, 5000)
    stats = {"tot_loss": tot_loss, "rl_loss": -0.0407, "pt_loss": 2.3948, "stu_lens": 97.375, "mixed_lens": 116.125}
    mid = "".join("| {}: {:.4f} ".format(k, v) for k, v in stats.items())
    suffix = "| lr: {:.4e} | scale: {:6.2f} | time: {:.3f} | step time: {:.3f}".format(lr, 128.0, 1.874, 0.0)
    return prefix + mid + suffix


def test_an_lmops_line_wrapped_by_the_terminal_is_read_whole_and_its_global_total_is_the_runs():
    """MiniLLM's `train | data_epochs ... | ppo epoch: 2/ 4 | global iter: 13/ 5000| tot_loss: ...`
    wrapped inside a name (`| stu` / `_lens: 97.3750 | ... | lr: 2.5000e-07 | ...`): the rows are one
    line again (its lr was lost), and `global iter`'s total is the run's max_steps though an epoch
    stands beside it (it was dropped)."""
    lines = []
    for it, g, loss, lr in ((7, 13, 2.3541, 2.5e-07), (8, 14, 3.1123, 3e-07)):
        line = _lmops_ppo_line(it, g, loss, lr)
        at = line.index("| stu") + len("| stu")
        lines += [line[:at], line[at:]]
    recs, _ = by_line_parser(("\n".join(lines) + "\n").encode())
    assert [(r["step"], r["loss"], r["lr"], r["max_steps"]) for r in recs] == [(13, 2.3541, 2.5e-07, 5000),
                                                                               (14, 3.1123, 3e-07, 5000)]


def _torchcv_record(epoch: int, iters: int, lr, loss: float, detailed: bool) -> str:
    """torchcv / openseg.pytorch segmentor/trainer.py: one Log.info call, two rows:
    'Train Epoch: {0}\\tTrain Iteration: {1}\\tTime {batch_time.sum:.3f}s / {2}iters, ({batch_time.avg:.3f})\\t'
    (openseg adds 'Forward Time ...\\tBackward Time ...\\tLoss Time ...\\t') 'Data load {data_time.sum:.3f}s /
    {2}iters, ({data_time.avg:3f})\\n' 'Learning rate = {3}\\tLoss = {loss.val:.8f} (ave = {loss.avg:.8f})\\n',
    behind the Log's "%(asctime)s %(levelname)-7s [%(filename)s, %(lineno)d] " prefix."""
    times = "Time {:.3f}s / {}iters, ({:.3f})\t".format(11.147, 10, 1.1147)
    if detailed:
        times += "Forward Time {:.3f}s / {}iters, ({:.3f})\tBackward Time {:.3f}s / {}iters, ({:.3f})\t".format(
            3.996, 10, 0.3996, 6.918, 10, 0.6918)
    text = ("Train Epoch: {0}\tTrain Iteration: {1}\t" + times + "Data load {2:.3f}s / {3}iters, ({4:3f})\n"
            "Learning rate = {5}\tLoss = {6:.8f} (ave = {7:.8f})\n").format(epoch, iters, 0.203, 10, 0.020318, lr, loss, loss + 0.1)
    return "2020-10-30 23:24:18,010 INFO    [trainer.py, 219] " + text


@pytest.mark.parametrize("detailed", [False, True])
def test_torchcv_two_row_record_is_one_record(detailed):
    """torchcv's record printed by one logging call with a newline inside (its step on the first
    row, its lr and loss on the second) is one record: the loss and lr were lost."""
    text = "".join(_torchcv_record(0, it, lr, loss, detailed) + "\n"
                   for it, lr, loss in ((10, [0.0099979, 0.0099979], 3.5443759), (20, 0.0099959, 3.1)))
    recs, _ = by_line_parser(text.encode())
    assert [(r["step"], r["loss"], r["lr"], r["step_time_s"]) for r in recs] == [
        (10, 3.5443759, 0.0099979, 1.115), (20, 3.1, 0.0099959, 1.115)]


def test_llm_c_val_loss_is_at_the_updates_before_it():
    """llm.c evaluates at the top of loop step s, before training it (`printf("val loss %f\\n")`):
    before any step it is at 0 (it had no step); train_gpt2.c then prints the 0-based step after
    its update ("step %d: train loss %f (took %f ms)"), so a val loss after its step 9 is at 10 (it
    was at 9); train_gpt2.cu prints step + 1 ("step %4d/%d | loss ..."), so after its step 10 it is at 10."""
    c_lines = ["val loss %f" % 6.971008] + ["step %d: train loss %f (took %f ms)" % (s, 4.5 - s / 10, 2141.0) for s in range(10)]
    c_lines.append("val loss %f" % 6.444646)
    _, marks = by_line_parser(("\n".join(c_lines) + "\n").encode())
    assert evals_of(marks) == [(0, 6.971008), (10, 6.444646)]
    cu_lines = ["val loss %f" % 4.5] + ["step %4d/%d | loss %7.6f (%+.2fz)| norm %6.4f (%+.2fz)| lr %.2e | %.2f ms | %.0f tok/s"
                                       % (s, 74, 4.0 - s / 100, 0.5, 1.25, -0.1, 6e-4, 24.18, 338855.0) for s in range(1, 11)]
    cu_lines.append("val loss %f" % 3.9)
    _, marks = by_line_parser(("\n".join(cu_lines) + "\n").encode())
    assert evals_of(marks) == [(0, 4.5), (10, 3.9)]


def test_nemo_rl_step_blocks_give_the_run_step_and_the_validation_at_its_step():
    """NeMo-RL's step block (`===== Step 2/2 =====` under `===== Epoch 2/2 =====`, `📊 Training
    Results:` with its `• loss:` and `• accuracy:`, `⏱️  Timing:` with `• Total step time:`) is a
    record at the run's step (the banner counts within its epoch) with its step time (no
    `max_steps`: two epochs may stop at a max_num_steps no line prints); its `📊 Validation Results` block is one evaluation at the step
    `▶ Starting validation at step N` names (each `• Validation ...` value was an evaluation
    without a step)."""
    log = LOGS["nemo_rl_dpo"]
    recs, marks = by_line_parser(log.text())
    assert [r["step_time_s"] for r in recs] == log.extra["step_time_s"]
    assert {r["max_steps"] for r in recs} == {None}
    assert recs[3]["extra"]["accuracy"] == 0.9
    (ev, _) = [m for m in marks if m["kind"] == "eval"]
    assert ev["values"] == {"val_loss": 0.68, "val_accuracy": 0.5}


def test_lightly_train_step_lines_give_the_runs_max_steps_and_the_profiled_step_time():
    """lightly-train's `Train Step 100/300 | Epoch 0 | train_loss: ... | Profiling [ ... ]`: the step
    counts the run, so its total is max_steps though an epoch stands beside it (the learner took
    it for an epoch's counter and gave none); the profiled `Step Time` is the step time, `GPU Max
    Mem` MB the memory; a `Val Step` line with its `val_loss` is an evaluation, never a step."""
    log = LOGS["lightly_train"]
    recs, _ = by_line_parser(log.text())
    assert [r["max_steps"] for r in recs] == log.extra["max_steps"]
    assert [r["step_time_s"] for r in recs] == log.extra["step_time_s"]
    assert recs[0]["mem_gib"] == 9760.3 / 1024 and recs[0]["grad_norm"] == 1.25

