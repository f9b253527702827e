"""Each supported log format, one or two lines at a time, to the record a user gets."""
from __future__ import annotations

import math

import pytest

from moeconsole.runner.ingest import LogParser
from tests.ingest import ingest_samples as S
from tests.ingest.ingest_samples import parsed


def parse(*lines: str | bytes) -> tuple[list[dict], list[dict], LogParser]:
    p = LogParser()
    data = b"".join((ln if isinstance(ln, bytes) else ln.encode()) + b"\n" for ln in lines)
    recs, marks = parsed(p, data)
    return recs, marks, p


def test_swift_hf_dict_transformers5_string_values():
    recs, _, p = parse(S.swift_hf_dict(10, 200, 1.23456, 0.87654, lr=2e-5, mem=35.12, speed=6.2))
    (r,) = recs
    assert r["src"] == "swift_dict"
    assert (r["step"], r["max_steps"]) == (10, 200)
    assert r["loss"] == pytest.approx(1.235)          # .4g string, read as a number
    assert r["grad_norm"] == pytest.approx(0.8765)
    assert r["lr"] == pytest.approx(2e-5)
    assert r["mem_gib"] == pytest.approx(35.12)
    assert r["step_time_s"] == pytest.approx(6.2)     # train_speed(s/it) is seconds per step
    assert r["extra"]["token_acc"] == pytest.approx(0.7123)
    assert r["extra"]["elapsed_time"] == "1m 2s"
    assert p.stats.formats == {"swift_dict": 1}


def test_swift_hf_dict_old_style_converts_iter_per_s_to_step_time():
    recs, _, _ = parse(S.swift_hf_dict(10, 200, 1.23456789, 0.5, speed=4.0, old=True))
    (r,) = recs
    assert r["loss"] == 1.23456789 and r["grad_norm"] == 0.5
    assert r["step_time_s"] == pytest.approx(4.0)      # 'train_speed(iter/s)': 0.25
    assert r["extra"]["percentage"] == "5.00%"


def test_swift_dict_without_memory_on_cpu():
    (r,), _, _ = parse(S.swift_hf_dict(3, 30, 2.0, 1.0, mem=None))
    assert r["mem_gib"] is None and r["step"] == 3


def test_swift_megatron_4x_dict_has_iteration_i_of_n():
    (r,), _, _ = parse(S.swift_megatron_dict(10, 200, 1.23456789, 0.87654321, mem=35.12, speed=6.2))
    assert r["src"] == "swift_megatron"
    assert (r["step"], r["max_steps"], r["loss"], r["mem_gib"], r["step_time_s"]) == (10, 200, 1.23456789, 35.12, 6.2)


@pytest.mark.parametrize("new_ts", [True, False])
def test_megatron_iteration_line_all_fields(new_ts):
    (r,), _, _ = parse(S.megatron_line(120, 5000, 2.345678, 0.877, lr=2.9999e-5, ms=1834.6, new_ts=new_ts))
    assert r["src"] == "megatron"
    assert (r["step"], r["max_steps"]) == (120, 5000)
    assert r["loss"] == pytest.approx(2.345678)
    assert r["grad_norm"] == pytest.approx(0.877)
    assert r["lr"] == pytest.approx(2.9999e-5)
    assert r["step_time_s"] == pytest.approx(1.8346)   # ms -> s
    assert r["extra"]["consumed samples"] == 7680
    assert r["extra"]["throughput per GPU (TFLOP/s/GPU)"] == pytest.approx(412.3)
    assert r["extra"]["timestamp"].startswith("2026-01-02 03:04:05")


def test_megatron_nan_and_inf_in_e_notation():
    line = S.megatron_line(7, 100, math.nan, math.inf)
    assert "NAN" in line and "grad norm: inf" in line
    (r,), _, _ = parse(line)
    assert math.isnan(r["loss"]) and r["grad_norm"] == math.inf


def test_megatron_line_without_grad_norm():
    (r,), _, _ = parse(S.megatron_line(5, 10, 3.0, None))
    assert r["grad_norm"] is None and r["loss"] == 3.0


def test_megatron_swift3_patched_line():
    (r,), _, _ = parse(S.megatron_swift3_line(10, 200, 1.234568, 0.877, mem=35.12))
    assert r["src"] == "megatron_swift3"
    assert r["mem_gib"] == 35.12 and r["step"] == 10
    assert r["extra"]["remaining time"] == "19m 38s"


def test_megatron_memory_reports_become_one_record_per_rank_at_their_step():
    recs, _, p = parse(S.megatron_line(120, 5000, 2.0, 0.8),
                       S.memory_report(0, 120, 61440.0),
                       S.memory_report(4, 120, 62464.0),
                       S.megatron_line(121, 5000, 2.0, 0.8))
    assert [(r["step"], r["src"], r["extra"].get("rank")) for r in recs] == [
        (120, "megatron", None), (120, "megatron_mem", 0), (120, "megatron_mem", 4), (121, "megatron", None)]
    mem = recs[2]
    assert mem["mem_gib"] == pytest.approx(62464.0 / 1024)     # MiB -> GiB: that rank's max reserved
    assert mem["extra"]["mem_max_reserved_gib"] == pytest.approx(62464.0 / 1024)
    assert mem["extra"]["mem_reserved_gib"] == pytest.approx((62464.0 - 1024) / 1024)
    assert mem["extra"]["mem_allocated_gib"] == 20.0 and mem["extra"]["mem_max_allocated_gib"] == 56.0
    assert mem["loss"] is None and mem["grad_norm"] is None


def test_memory_report_is_a_record_as_soon_as_its_line_ends():
    p = LogParser()
    (r,), _ = parsed(p, (S.memory_report(0, 10, 2048.0) + "\n").encode(), final=False)
    assert r["src"] == "megatron_mem" and r["mem_gib"] == 2.0 and r["extra"]["rank"] == 0


def test_memory_report_around_a_save_is_understood_but_not_a_record():
    recs, _, p = parse(S.memory_report(0, 0, 2048.0, name="(before save_checkpoint for iteration 100)"))
    assert recs == [] and p.stats.unparsed_lines == 0 and p.stats.ignored_lines == 1


def test_hf_trainer_dicts_have_no_step_and_are_numbered():
    recs, _, _ = parse(S.hf_dict(1.2346, 0.8765432), S.hf_dict(1.1, 0.7, strings=True))
    assert [r["step"] for r in recs] == [1, 2]
    assert all(r["extra"]["step_inferred"] == 1 for r in recs)
    assert recs[1]["loss"] == pytest.approx(1.1) and recs[0]["src"] == "hf_dict"


def test_step_colon_style_with_memory_units():
    (r,), _, _ = parse(S.kv_line(7, 2.5, 1.5, 12.5, 12345))
    assert (r["src"], r["step"], r["loss"], r["grad_norm"], r["mem_gib"], r["tokens_per_s"]) == \
        ("kv", 7, 2.5, 1.5, 12.5, 12345.0)


def test_kv_memory_in_mib_is_converted():
    (r,), _, _ = parse("step=11 loss=1.5 lr=3e-4 mem=2048MiB")
    assert r["mem_gib"] == 2.0 and r["lr"] == 3e-4


def test_nemo2_line_memory_in_bytes_is_its_peak_in_gib_whatever_the_order():
    """NeMo 2's ProgressPrinter prints torch.cuda's max_memory_reserved / max_memory_allocated
    in bytes (batch 8: NVIDIA-NeMo/Speech#14850): the record's memory is the reserved peak in
    GiB, both values kept as printed."""
    head = "Training epoch 0, iteration 8/29 | lr: 5.389e-06 | global_batch_size: 512 | global_step: 8"
    tail = "reduced_train_loss: 10.22 | train_step_timing in s: 27.01 | consumed_samples: 4608"
    reserved, allocated = "max_memory_reserved: 57466159104", "max_memory_allocated: 53930270720"
    for mem in (f"{reserved} | {allocated}", f"{allocated} | {reserved}"):
        (r,), _, _ = parse(f"{head} | {mem} | {tail}")
        assert (r["src"], r["step"], r["loss"], r["step_time_s"]) == ("nemo", 8, 10.22, 27.01)
        assert r["mem_gib"] == pytest.approx(57466159104 / 2 ** 30)
        assert r["extra"]["max_memory_allocated"] == 53930270720.0
    # a memory the line names as its own (NeMo Automodel's "mem 24.90 GiB") stays the memory
    (r,), _, _ = parse("step 10 | loss 1.25 | max_memory_allocated: 53930270720 | mem 24.90 GiB | lr 2e-05")
    assert r["mem_gib"] == 24.9 and r["extra"]["max_memory_allocated"] == 53930270720.0


def test_nanogpt_pipe_style():
    (r,), _, _ = parse(S.nanogpt_line(50, 30000, 3.456789, 350.12, 1497753, 0.345))
    assert r["src"] == "nanogpt_pipe"
    assert (r["step"], r["max_steps"]) == (50, 30000)
    assert r["loss"] == pytest.approx(3.456789)
    assert r["step_time_s"] == pytest.approx(0.35012)
    assert r["tokens_per_s"] == 1497753.0        # thousands separators
    assert r["grad_norm"] == pytest.approx(0.345)


def test_nanogpt_original_iter_line():
    (r,), _, _ = parse("iter 10: loss 1.2345, time 45.21ms, mfu 12.34%")
    assert (r["step"], r["loss"], r["step_time_s"]) == (10, 1.2345, pytest.approx(0.04521))


def test_jsonl_metric_lines_keep_nan():
    (r,), _, _ = parse(S.jsonl({"loss": 1.2, "grad_norm": float("nan"), "learning_rate": 1e-5, "epoch": 0.1,
                                "global_step/max_steps": "10/20"}))
    assert r["src"] == "jsonl" and r["step"] == 10 and math.isnan(r["grad_norm"])


def test_moeconsole_metrics_jsonl_reads_back():
    rec = {"v": 1, "t": 1.0, "attempt": 1, "step": 4, "max_steps": 9, "loss": "nan", "grad_norm": 0.5,
           "lr": None, "mem_gib": None, "tokens_per_s": None, "step_time_s": 1.5, "epoch": None,
           "extra": {}, "src": "kv"}
    (r,), _, _ = parse(S.jsonl(rec))
    assert r["step"] == 4 and math.isnan(r["loss"]) and r["step_time_s"] == 1.5


@pytest.mark.parametrize("spelling", ["nan", "NaN", "-nan", "NAN", "inf", "-inf", "Infinity", "+inf"])
def test_non_finite_spellings_are_kept(spelling):
    (r,), _, _ = parse(f"step: 3  loss: {spelling}  grad_norm: 1.0")
    assert not math.isfinite(r["loss"])
    assert (r["loss"] < 0) == spelling.startswith("-inf")


def test_python_repr_nan_and_tensor_values():
    (r,), _, _ = parse("{'loss': nan, 'grad_norm': tensor(0.5, device='cuda:0'), 'global_step/max_steps': '13/200'}")
    assert math.isnan(r["loss"]) and r["grad_norm"] == 0.5


def test_eval_and_train_summary_dicts_are_marks_not_records():
    recs, marks, _ = parse(
        "{'eval_loss': 1.1, 'eval_runtime': 2.0, 'epoch': 0.5, 'global_step/max_steps': '100/200'}",
        "{'train_runtime': 100.1, 'train_samples_per_second': 3.2, 'train_loss': 1.5, 'epoch': 1.0}")
    assert recs == []
    assert [m["kind"] for m in marks] == ["eval", "train_summary"]
    assert marks[0]["step"] == 100 and marks[0]["values"]["eval_loss"] == 1.1


def test_checkpoint_and_attempt_marks():
    _, marks, _ = parse(
        "[INFO:swift] Saving model checkpoint to /out/v0-20260101-000000/checkpoint-100",
        "  [2026-01-02 03:04:05.678901] successfully saved checkpoint from iteration     300 to /ckpt "
        "[ t 1/8, gtp_remat 1/1, p 1/1 ]",
        "Successfully saved Megatron model weights in `/out/v1/checkpoint-400`.",
        "[INFO:swift] last_model_checkpoint: /out/v0/checkpoint-400",
        "[INFO:swift] last_model_checkpoint: None",
        "=== moeconsole: attempt 2 start 2026-01-01T00:00:00")
    kinds = [(m["kind"], m.get("step"), m.get("path")) for m in marks]
    assert kinds[:3] == [("checkpoint_saved", 100, "/out/v0-20260101-000000/checkpoint-100"),
                         ("checkpoint_saved", 300, "/ckpt/iter_0000300"),   # the save, not its root (R50)
                         ("checkpoint_saved", 400, "/out/v1/checkpoint-400")]
    assert kinds[3] == ("last_model_checkpoint", None, "/out/v0/checkpoint-400")
    assert kinds[4] == ("last_model_checkpoint", None, None)
    assert marks[5] == {"kind": "attempt_marker", "attempt": 2, "line": 6, "records_before": 0}


def test_swift_logging_jsonl_final_record_names_the_last_checkpoint():
    _, marks, _ = parse(S.jsonl({"last_model_checkpoint": "/o/v0/checkpoint-30", "best_model_checkpoint": None,
                                 "best_metric": None, "global_step": 30, "log_history": [{"loss": 1.0}]}))
    assert marks[0]["kind"] == "last_model_checkpoint" and marks[0]["path"] == "/o/v0/checkpoint-30"


def _two_word_names():
    """Every name of the synonym table (records.FIELD_KEYS) that a log prints as two words
    ("learning_rate" as "Learning rate"), with its field."""
    from moeconsole.runner.ingest.records import FIELD_KEYS
    out = []
    for field, keys in FIELD_KEYS.items():
        for key, conv in keys:
            words = key.replace("_", " ").split()
            if len(words) == 2 and all(w.isalpha() for w in words) and conv.__name__ == "_ident" \
                    and field not in ("loss", "mem_gib"):
                out.append((" ".join(words).capitalize(), field))
    return out


@pytest.mark.parametrize("name, field", _two_word_names())
def test_a_two_word_name_the_synonym_table_knows_is_its_field(name, field):
    """``key: value`` lines print two-word names (Cosmos-RL's "Learning rate: 2.00000e-06,
    Iteration time: 80.240s"): the synonym table decides the field, for every field it knows
    (not a list of some of them)."""
    recs, _, _ = parse(f"Step: 5/100, Loss: 2.5, {name}: 1.5, Other: 3")
    (r,) = recs
    assert (r["step"], r["loss"], r[field]) == (5, 2.5, 1.5), name
    assert name not in r["extra"] and name.split()[-1] not in r["extra"]


@pytest.mark.parametrize("name, is_loss", [
    ("noise_step_loss", True), ("avr_loss", True), ("Mask Loss", True), ("train/total_loss", True),
    ("closs", False), ("loss_scale", False), ("val_loss", False), ("eval/loss", False)])
def test_the_loops_own_loss_name_is_a_name_whose_last_word_is_loss(name, is_loss):
    """Names met in the corpus' bar postfixes and metric lines: only a last word "loss" names a
    loss (records.own_loss_name), an evaluation's never."""
    from moeconsole.runner.ingest.records import own_loss_name
    assert own_loss_name(name) is is_loss


def test_a_bar_postfix_with_one_loss_of_its_own_name_and_none_with_two():
    """A postfix's one loss under the loop's own name is the step's loss; a GAN's two (d_loss,
    g_loss) are parts, none is; a glued word ending in "loss" (closs: 'c' + 'loss') is not a
    loss name."""
    bar = "Steps:   1%|▏         | {n}/6000 [00:55<4:54:46,  2.96s/it, lr=0.0001, {post}]"
    recs, _, _ = parse(bar.format(n=16, post="noise_step_loss=0.25"), bar.format(n=17, post="noise_step_loss=0.24"))
    assert [(r["step"], r["loss"]) for r in recs] == [(16, 0.25), (17, 0.24)]
    recs, _, _ = parse(bar.format(n=16, post="d_loss=0.7, g_loss=1.9"), bar.format(n=17, post="d_loss=0.6, g_loss=2.0"))
    assert [r["loss"] for r in recs] == [None, None] and recs[0]["extra"]["g_loss"] == 1.9
    recs, _, _ = parse(bar.format(n=16, post="closs=0.7"), bar.format(n=17, post="closs=0.6"))
    assert [r["loss"] for r in recs] == [None, None] and recs[1]["extra"]["closs"] == 0.6


# ---------------------------------------------------------------- batch 18's families

def _mindyolo_step(epoch: int, epochs: int, step: int, per_epoch: int, losses: dict, lr: float,
                   imgsize: bool = True) -> str:
    """MindYOLO's Trainer.train_step log line (mindyolo/utils/trainer_factory.py): f"Epoch
    {cur_epoch}/{epochs}, Step {cur_step}/{steps_per_epoch}, imgsize {imgs.shape[2:]}", then
    f", {name}: {value:.4f}" per loss item and f", cur_lr: {cur_lr}" (the data-sink loop's has no
    imgsize)."""
    line = f"2025-04-15 13:57:18,262 [INFO] Epoch {epoch}/{epochs}, Step {step}/{per_epoch}"
    if imgsize:
        line += ", imgsize (640, 640)"
    line += "".join(f", {k}: {v:.4f}" for k, v in losses.items())
    return line + f", cur_lr: {lr}"


def _mindyolo_time(epoch: int, epochs: int, step: int, per_epoch: int, ms: float) -> str:
    """Trainer.train's line after it: f"Epoch ..., Step ..., step time: {ms:.2f} ms"."""
    return f"2025-04-15 13:57:18,275 [INFO] Epoch {epoch}/{epochs}, Step {step}/{per_epoch}, step time: {ms:.2f} ms"


def test_mindyolo_step_line_and_its_step_time_line_are_one_record_at_the_global_step():
    recs, _, _ = parse(
        "2024-12-25 09:58:34,125 [WARNING] overflow, still update, loss scale adjust to 1024.0",
        _mindyolo_step(2, 3, 25, 50, {"loss": 11.6707, "lbox": 3.6262, "lcls": 5.5689}, 0.0992),
        _mindyolo_time(2, 3, 25, 50, 5736.71),
        _mindyolo_step(2, 3, 50, 50, {"loss": 8.8465, "lbox": 2.938, "lcls": 3.895}, 0.0985),
        _mindyolo_time(2, 3, 50, 50, 654.4),
        "2024-12-25 09:59:49,451 [INFO] Saving model to ./runs/weights/yolov8n-2_50.ckpt",
        "2024-12-25 09:59:49,452 [INFO] Epoch 2/3, epoch time: 1.12 min.",
    )
    assert [(r["step"], r["loss"]) for r in recs] == [(75, 11.6707), (100, 8.8465)]
    assert [r["step_time_s"] for r in recs] == [pytest.approx(5.73671), pytest.approx(0.6544)]
    assert {r["max_steps"] for r in recs} == {150} and recs[0]["lr"] == pytest.approx(0.0992)
    assert recs[0]["extra"]["lbox"] == pytest.approx(3.6262) and recs[0]["src"] == "mindyolo"


def test_mindyolo_data_sink_lines_one_per_epoch_and_accumulation_lines():
    recs, _, _ = parse(
        _mindyolo_step(1, 2, 7, 7, {"loss": 0.1717, "lbox": 0.0676}, 0.0054, imgsize=False),
        "2025-04-15 13:57:19,451 [INFO] Saving model to ./runs/weights/yolov5s-1_7.ckpt",
        "2025-04-15 13:57:21,982 [INFO] Epoch 2/2, Step 3/7, accumulate: 2, optimizer an accumulate step success.",
        _mindyolo_step(2, 2, 7, 7, {"loss": 0.1922, "lbox": 0.0708}, 0.0053, imgsize=False),
    )
    assert [(r["step"], r["loss"], r["max_steps"], r["step_time_s"]) for r in recs] == [
        (7, 0.1717, 14, None), (14, 0.1922, 14, None)]


def _espnet_line(epoch: int, start: int, end: int, loss: float) -> str:
    """ESPnet2's SubReporter.log_message: f"{epoch}epoch:train:{start + 1}-{end}batch: " ..."""
    return (f"[host] 2020-11-11 16:30:04,578 (trainer:486) INFO: {epoch}epoch:train:{start}-{end}batch: "
            f"iter_time=0.001, loss={loss:.3f}, lr_0=0.100, train_time=0.013")


def _espnet_results(epoch: int, loss: float, total: int, valid: float) -> str:
    """Reporter.log_message: f"{epoch}epoch results: " then "[key] key2=value, ..." per key; the
    train part's total_count is the batches since the first epoch (Reporter.start_epoch)."""
    return (f"[host] 2020-11-11 16:30:18,406 (trainer:243) INFO: {epoch}epoch results: [train] "
            f"loss={loss:.3f}, time=1 minute and 42.6 seconds, total_count={total}, [valid] "
            f"loss={valid:.3f}, time=3 seconds, total_count=240")


def test_espnet_epoch_results_total_count_is_where_the_epoch_ends_and_the_next_one_starts():
    recs, marks, _ = parse(
        _espnet_line(1, 201, 300, 2.386), _espnet_results(1, 2.853, 307, 2.387),
        _espnet_line(2, 1, 100, 2.313))
    assert [(r["step"], r["loss"]) for r in recs] == [(300, 2.386), (407, 2.313)]
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(307, 2.387)]
    # a log that starts in epoch 5: the count since the first epoch takes over at its end
    recs, marks, _ = parse(
        _espnet_line(5, 1, 100, 1.733), _espnet_line(5, 101, 200, 1.739),
        _espnet_results(5, 1.735, 1035, 1.7), _espnet_line(6, 1, 100, 1.712))
    assert [r["step"] for r in recs] == [100, 200, 1135]
    assert [m["step"] for m in marks if m["kind"] == "eval"] == [1035]


def _spacy_table(pipes: list[str], scores: list[str], rows: list[tuple]) -> list[str]:
    """spaCy's console_logger_v3 (spacy/training/loggers.py): wasabi rows two spaces apart of
    "E", "#", f"Loss {pipe}" per pipe, the score columns and "Score", upper-cased, widths
    [3, 6] + [8] per loss + [6] per score + [6], right-aligned, dashes under the header."""
    cols = ["E", "#"] + [f"LOSS {p.upper()}" for p in pipes] + scores + ["SCORE"]
    widths = [3, 6] + [8] * len(pipes) + [6] * len(scores) + [6]
    widths = [max(len(c), w) for c, w in zip(cols, widths)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)), "  ".join("-" * w for w in widths)]
    for row in rows:
        cells = [str(row[0]), str(row[1])] + [f"{v:.2f}" for v in row[2:]]
        lines.append("  ".join(c.rjust(w) for c, w in zip(cells, widths)))
    return lines


def test_spacy_train_table_rows_are_records_and_dev_evaluations():
    recs, marks, _ = parse(*_spacy_table(["tok2vec", "ner"], ["ENTS_F", "ENTS_P"], [
        (0, 0, 0.0, 40.0, 9.57, 6.09, 0.1), (0, 200, 35.7, 2163.45, 83.16, 83.79, 0.83)]))
    # two pipes trained: each one's loss, no one of them the run's
    assert [(r["step"], r["loss"]) for r in recs] == [(0, None), (200, None)]
    assert recs[1]["extra"] == {"loss_tok2vec": 35.7, "loss_ner": 2163.45}
    evals = [m for m in marks if m["kind"] == "eval"]
    assert [(m["step"], m["values"]["ents_f"], m["values"]["score"]) for m in evals] == [
        (0, 9.57, 0.1), (200, 83.16, 0.83)]
    recs, _, _ = parse(*_spacy_table(["textcat"], ["CATS_SCORE"], [(1, 400, 12.5, 71.0, 0.71)]))
    assert [(r["step"], r["loss"], r["epoch"]) for r in recs] == [(400, 12.5, 1)]   # the one pipe's loss


def test_a_finished_epoch_line_is_not_the_header_of_the_lines_after_it():
    """HQ-SAM's train.py: print("Finished epoch:      ", epoch) after the epoch's MetricLogger
    lines, then print("epoch:   ", epoch, "  learning rate:  ", lr) before the next epoch's."""
    recs, _, _ = parse(
        "Finished epoch:       3",
        "Averaged stats: training_loss: 0.3417 (0.4075)  loss_dice: 0.2744 (0.3187)",
        "epoch:    4   learning rate:   0.001",
        "  [  0/224]  eta: 0:14:13  training_loss: 0.4991 (0.4991)  loss_dice: 0.4048 (0.4048)  time: 3.8119  data: 0.6596  max mem: 18812",
        "  [223/224]  eta: 0:00:02  training_loss: 0.3842 (0.4097)  loss_dice: 0.3091 (0.3169)  time: 2.9631  data: 0.0032  max mem: 18812")
    assert [(r["step"], r["loss"]) for r in recs] == [(0, 0.4991), (223, 0.3842)]


def _kerasrl_line(step: int, nb_steps: int, episode: int, episode_steps: int, loss: float) -> str:
    """keras-rl's TrainEpisodeLogger.on_episode_end (rl/callbacks.py): '{step: {w}d}/{nb_steps}:
    episode: {episode}, duration: {duration:.3f}s, episode steps: {episode_steps}, steps per
    second: {sps:.0f}, episode reward: ..., loss: ..., mean_absolute_error: ..., mean_q: ...'."""
    return (f"{step:5d}/{nb_steps}: episode: {episode}, duration: 1.759s, episode steps: {episode_steps}, "
            f"steps per second: 192, episode reward: 337.000, mean reward: 1.000 [1.000, 1.000], "
            f"loss: {loss:.6f}, mean_absolute_error: 25.618706, mean_q: 51.514038")


def test_keras_rl_episode_steps_are_the_episodes_length_not_the_step():
    recs, _, _ = parse(_kerasrl_line(39497, 50000, 570, 337, 5.17346), _kerasrl_line(39943, 50000, 571, 446, 5.497804))
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(39497, 5.17346, 50000), (39943, 5.497804, 50000)]
    assert recs[0]["extra"]["episode steps"] == 337


def _zipvoice_line(epoch: int, batch_idx: int, global_idx: int, loss: float, lr: float) -> str:
    """ZipVoice's train_zipvoice.py: f"Epoch {params.cur_epoch}, batch {batch_idx}, global_batch_idx:
    {params.batch_idx_train}, batch size: {batch_size}, loss[{loss_info}], tot_loss[{tot_loss}],
    cur_lr: {cur_lr:.2e}, " + f"grad_scale: ..." (fp16)."""
    return (f"2025-10-27 17:32:39,748 INFO [train_zipvoice.py:731] Epoch {epoch}, batch {batch_idx}, "
            f"global_batch_idx: {global_idx}, batch size: 25, loss[loss={loss}, over 17994.00 frames. ], "
            f"tot_loss[loss=0.06891, over 778288.75 frames. ], cur_lr: {lr:.2e}, grad_scale: 65536.0")


def test_a_global_batch_count_beside_the_epochs_batch_counter_is_the_step():
    recs, _, _ = parse(_zipvoice_line(1, 99, 100, 0.07778, 1e-4), _zipvoice_line(2, 0, 150, 0.07169, 9.5e-5))
    assert [(r["step"], r["loss"]) for r in recs] == [(100, 0.07778), (150, 0.07169)]
    assert [r["lr"] for r in recs] == [pytest.approx(1e-4), pytest.approx(9.5e-5)]


def _open_clip_train(epoch: int, n: int, per_epoch: int, loss: float, lr: float) -> str:
    """OpenCLIP's train_one_epoch (src/training/train.py) log line, a second loss beside the total."""
    return (f"2025-09-24,08:03:57 | INFO | Train Epoch: {epoch} [{n:>5}/{per_epoch} ({100 * n / per_epoch:.0f}%)] "
            f"Data (t): 1.951 Batch (t): 2.954, 791.183/s, 791.183/s/gpu LR: {lr:5f} Logit Scale: 100.000 "
            f"Contrastive_loss: 2.3538 (2.3159) Loss: {loss:#.5g} ({loss:#.5g})")


def test_open_clip_steps_count_the_epochs_samples_and_its_evaluation_result_is_the_evaluation():
    recs, marks, _ = parse(
        _open_clip_train(22, 18032, 18783, 9.0191, 3e-6),
        "2025-09-24,08:04:36 | INFO | Eval Epoch: 23 [784 / 4634]\tClip Loss: 8.266052\t",
        "2025-09-24,08:04:40 | INFO | Eval Epoch: 23 image_to_text_mean_rank: 1026.8839\timage_to_text_R@1: 0.0056"
        "\tclip_val_loss: 8.2619\tepoch: 23.0000\tnum_samples: 4634.0000",
        "2025-09-24,08:04:40 | INFO | Start epoch 23",
        _open_clip_train(23, 784, 18783, 9.0466, 3e-6))
    assert [(r["step"], r["loss"]) for r in recs] == [(22 * 18783 + 18032, 9.0191), (23 * 18783 + 784, 9.0466)]
    assert recs[0]["step_time_s"] == pytest.approx(2.954) and recs[0]["lr"] == pytest.approx(3e-6)
    evals = [m for m in marks if m["kind"] == "eval"]
    assert [(m["step"], m["loss"]) for m in evals] == [(22 * 18783 + 18032, 8.2619)]


def test_a_boosting_round_is_a_step_its_training_set_loss_the_loss_the_other_sets_an_evaluation():
    """XGBoost, LightGBM and CatBoost print one line per boosting round (formats.read_gbdt): the
    round is the step, the training set's first loss metric the loss (a score such as auc is kept
    by its printed name, never a loss), the other sets an evaluation at that round, every round's
    even when its values equal the round before's."""
    recs, marks, _ = parse("[1]\teval-auc:0.54791\ttrain-auc:0.54620",
                           "[2]\teval-auc:0.54791\ttrain-auc:0.54620",
                           "[10]\ttraining's binary_logloss: 0.2\tvalid_1's binary_logloss: 0.3",
                           "25:\tlearn: 0.5\ttest: 0.6\tbest: 0.6 (25)\ttotal: 1s\tremaining: 2s")
    assert [(r["step"], r["loss"], r["src"]) for r in recs] == [
        (1, None, "xgboost"), (2, None, "xgboost"), (10, 0.2, "lightgbm"), (25, 0.5, "catboost")]
    assert recs[0]["extra"]["train-auc"] == pytest.approx(0.5462) and "rank" not in recs[3]["extra"]
    evals = [(m["step"], m["split"], m["loss"]) for m in marks if m["kind"] == "eval"]
    assert evals == [(1, "eval", None), (2, "eval", None), (10, "valid_1", 0.3), (25, "test", 0.6)]


def test_lightgbm_command_line_lines_of_one_round_are_one_record_and_one_evaluation():
    """LightGBM's command line prints a line per set and metric, then the round's time
    (src/boosting/gbdt.cpp OutputMetric and Train): one record and one evaluation per round, also
    for a round whose time line never came (the log ends)."""
    lines = []
    for it, (tr, va) in enumerate([("0.19997", "0.200636"), ("0.199873", "0.200547")], start=18):
        lines += [f"[LightGBM] [Info] Iteration:{it}, training auc : 0.65",
                  f"[LightGBM] [Info] Iteration:{it}, training binary_logloss : {tr}",
                  f"[LightGBM] [Info] Iteration:{it}, valid_1 binary_logloss : {va}"]
        if it == 18:
            lines.append("[LightGBM] [Info] 81.515303 seconds elapsed, finished iteration 18")
    recs, marks, _ = parse(*lines)
    assert [(r["step"], r["loss"]) for r in recs] == [(18, 0.19997), (19, 0.199873)]
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(18, 0.200636), (19, 0.200547)]


def test_a_bar_behind_a_time_column_and_a_stream_label_is_read_as_the_bar():
    """A GUI's "[08:03:59] [STDERR] " before musubi-tuner's bar: the bar's count is the step
    (update then set_postfix: the count's last redraw is its record), not "steps:  39" read as
    a key and its value."""
    recs, _, _ = parse("[08:03:59] [STDERR] steps:  39%|███▊      | 37/96 [13:19<21:14, 21.61s/it, avr_loss=0.0796]",
                       "[08:03:59] [STDERR] steps:  39%|███▊      | 37/96 [13:19<21:14, 21.61s/it, avr_loss=0.0853]",
                       "[08:04:19] [STDERR] steps:  40%|███▉      | 38/96 [13:34<20:43, 21.45s/it, avr_loss=0.0853]")
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(37, 0.0853, 96), (38, 0.0853, 96)]


def test_a_split_label_before_name_equals_value_names_the_split():
    """SAM-Adapter's (LIIF's) "epoch 170/200, train G: loss=1.0265, val: sm=0.6728": the loss is
    the training loss of that epoch, the val values an evaluation there."""
    recs, marks, _ = parse("epoch 170/200, train G: loss=1.0265, val: sm=0.6728, val: mae=0.1883, 1.7m 4.8h/5.7h",
                           "epoch 171/200, train G: loss=1.0286, val: sm=0.6728, val: mae=0.1883, 1.7m 4.8h/5.7h")
    assert [(r["step"], r["loss"]) for r in recs] == [(170, 1.0265), (171, 1.0286)]
    assert [(m["step"], m["values"]) for m in marks if m["kind"] == "eval"] == [
        (170, {"val sm": 0.6728, "val mae": 0.1883}), (171, {"val sm": 0.6728, "val mae": 0.1883})]


def test_an_epoch_banner_and_its_value_lines_are_one_record_and_one_evaluation():
    """AuxiliaryASR's "--- epoch N ---" then a "%-15s: %.4f" line per value, between its
    "[train]" and "[eval]" bars (no metric in their postfix, no record of their own)."""
    recs, marks, _ = parse("[train]: 100%|██████████| 5/5 [00:01<00:00,  3.50it/s]",
                           "[eval]: 100%|██████████| 3/3 [00:01<00:00,  2.74it/s]",
                           "--- epoch 147 ---", "train/loss     : 6.1718", "train/ctc      : 2.4324",
                           "train/learning_rate: 0.0001", "eval/ctc       : 5.2637", "eval/loss      : 10.2448",
                           "[train]: 100%|██████████| 5/5 [00:01<00:00,  3.76it/s]")
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(147, 6.1718, 0.0001)]
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(147, 10.2448)]


def test_the_epochs_total_on_the_line_times_the_batches_is_max_steps():
    """minimind's f"Epoch:[{epoch}/{epochs}]({step}/{iter_per_epoch}) loss:..." lines: the run is
    epochs x batches steps."""
    recs, _, _ = parse("Epoch:[0/19](0/24681) loss:8.863 lr:0.00020000 epoch_Time:372.0min:",
                       "Epoch:[0/19](100/24681) loss:5.251 lr:0.00020000 epoch_Time:98.0min:")
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(0, 8.863, 19 * 24681), (100, 5.251, 19 * 24681)]


def test_a_stable_baselines_table_the_log_ends_inside_is_read():
    """The log (a paste) ends inside a table, before its closing dashes: its rows are read."""
    recs, _, _ = parse("-" * 42, "| time/                   |              |", "|    iterations           | 2            |",
                       "|    total_timesteps      | 288          |", "| train/                  |              |",
                       "|    approx_kl            | 0.0031222207 |")
    assert [(r["step"], r["loss"]) for r in recs] == [(288, None)]


def test_torchaudio_wav2letter_validation_lines_are_evaluations_of_their_epoch():
    """torchaudio's wav2letter example prints its validation as JSON (MetricLogger("validation")):
    an evaluation at its epoch in a log of evaluations only, "average loss" its loss, the
    validation's own "iteration" count no step."""
    _, marks, _ = parse('{"name": "validation", "epoch": 12, "cumulative loss": 57.68, "iteration": 21.0, "average loss": 2.7466}',
                        '{"name": "validation", "epoch": 13, "cumulative loss": 54.06, "iteration": 21.0, "average loss": 2.5744}')
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(12, 2.7466), (13, 2.5744)]


def test_maxtext_evaluations_are_marks_at_the_training_step_they_name():
    # MaxText's metric_logger.py: the training line f"completed step: {step}", ..., f"loss: {loss:.3f}",
    # f"lm_loss: ..", f"perplexity: .." (joined by ", "); the evaluation's result in its three
    # generations (train.py to 2025-06 f"average loss after {step=}: {eval_step_count=}, {eval_loss=},
    # total_weights=..", MetricLogger to 2026-05 f"eval metrics after step: {step}, loss=.., total_weights=..,
    # step_time_seconds=..", since then "Completed eval after train step {step}", f"loss=..", ...) and
    # _log_running_eval_metrics's "Completed eval step: {step}", f"seconds: ..", f"running loss=..", ...
    recs, marks, p = parse(
        "completed step: 4, seconds: 1.012, TFLOP/s/device: 31.497, Tokens/s/device: 2024.564, "
        "total_weights: 8192, loss: 7.950, lm_loss: 7.950, perplexity: 2835.600",
        "Completed eval step: 0, seconds: 0.120, running loss=7.900, running perplexity=2697.282, "
        "running total_weights=8192",
        "Completed eval step: 1, seconds: 0.110, running loss=7.850, running perplexity=2565.734, "
        "running total_weights=16384",
        "Completed eval after train step 4, loss=7.850, perplexity=2565.734, total_weights=16384, "
        "avg_z_loss=0.000, avg_mtp_loss=0.310, avg_mtp_acceptance_rate=61.25%",
        "completed step: 9, seconds: 1.000, TFLOP/s/device: 31.497, Tokens/s/device: 2024.564, "
        "total_weights: 8192, loss: 7.500",
        "Completed eval step 0",
        "I0317 10:00:13.224641 125344476638336 metric_logger.py:181] eval metrics after step: 9, "
        "loss=9.420, total_weights=75264.0, step_time_seconds=0.120",
        "average loss after step=14: eval_step_count=10, eval_loss=9.100, total_weights=75264.0",
    )
    assert [(r["step"], r["loss"]) for r in recs] == [(4, 7.95), (9, 7.5)]
    evals = [m for m in marks if m["kind"] == "eval"]
    assert [(m["step"], m["loss"]) for m in evals] == [(4, 7.85), (9, 9.42), (14, 9.1)]
    assert evals[0]["values"]["avg_mtp_acceptance_rate"] == pytest.approx(61.25)
    assert not any(m.get("step_inferred") for m in evals)
    assert p.stats.ignored_lines >= 3   # the eval steps' running averages and "Completed eval step 0"


def test_tinygrad_llmc_unnamed_tok_s_piece_is_the_tokens_per_second():
    # tinygrad examples/llm.c/train_gpt2.py: f"iteration {i}, loss: {loss.item():.6f}, time:
    # {(t1-t0)*1000:.3f}ms, {int(B*T/(t1-t0))} tok/s" (later with f", {global_mem/1e9:.2f} GB")
    recs, _, _ = parse("iteration 3, loss: 9.306068, time: 61.812ms, 132532 tok/s",
                       "iteration 4, loss: 9.158802, time: 61.195ms, 133867 tok/s, 21.37 GB")
    assert [(r["step"], r["loss"]) for r in recs] == [(3, 9.306068), (4, 9.158802)]
    assert [r["tokens_per_s"] for r in recs] == [132532, 133867]
    assert recs[0]["step_time_s"] == pytest.approx(0.061812)


def test_verl_ppo_step_line_record_is_the_actors_and_lr_1e4_is_scaled():
    # veRL 2024 (fsdp_workers.py: metrics['critic/lr(1e-4)'] = lr * 1e4, metrics['actor/lr(1e-4)'] =
    # lr * 1e4; the critic's update logged before the actor's) printed by its console logger as
    # "step:N - key:value - ...": the step's grad norm and lr are the policy's (ray_trainer.py reads
    # the step's gradient norm as metrics.get("actor/grad_norm")), the lr in units of 1e-4
    recs, _, _ = parse(
        "step:0 - timing/gen:21.470 - critic/vf_loss:14.947 - critic/grad_norm:1023.278 - "
        "critic/lr(1e-4):0.100 - timing/update_actor:20.314 - actor/entropy_loss:0.433 - "
        "actor/pg_loss:-0.005 - actor/grad_norm:1.992 - actor/lr(1e-4):0.010 - critic/score/mean:0.004",
        "step:1 - timing/gen:23.020 - critic/vf_loss:18.472 - critic/grad_norm:942.924 - "
        "critic/lr(1e-4):0.100 - timing/update_actor:20.100 - actor/entropy_loss:0.440 - "
        "actor/pg_loss:0.000 - actor/grad_norm:2.060 - actor/lr(1e-4):0.010 - critic/score/mean:0.004")
    assert [r["step"] for r in recs] == [0, 1]
    assert [r["grad_norm"] for r in recs] == [1.992, 2.06]
    assert [r["lr"] for r in recs] == [pytest.approx(1e-6), pytest.approx(1e-6)]
    assert recs[0]["extra"]["critic/grad_norm"] == 1023.278


def test_hf_notebook_table_no_log_cells_of_rows_lacking_a_column():
    # transformers utils/notebook.py NotebookTrainingTracker.write_line: a new row is
    # [values[c] if c in values else "No Log" for c in columns] ("No log", lower case, is on_evaluate's)
    recs, _, _ = parse("Step | Training Loss | reward | reward_std | kl | entropy",
                       "-- | -- | -- | -- | -- | --",
                       "1 | -0.283600 | 13.437500 | 21.810942 | nan | 0",
                       "2 | -0.149100 | 6.931818 | 14.526671 | nan | No Log",
                       "3 | -0.110500 | 6.250000 | 17.677670 | nan | No Log")
    assert [(r["step"], r["loss"]) for r in recs] == [(1, -0.2836), (2, -0.1491), (3, -0.1105)]
    recs, _, _ = parse("Step\tTraining Loss\tValidation Loss\tAccuracy",
                       "10\t1.234500\tNo log\tNo Log",
                       "20\t1.100000\t1.050000\t0.510000")
    assert [(r["step"], r["loss"]) for r in recs] == [(10, 1.2345), (20, 1.1)]


def test_torchforge_metrics_step_block_is_one_record_at_its_step():
    # torchforge src/forge/observability/metrics.py ConsoleBackend: one logger.info of
    # f"=== [{prefix}] - METRICS STEP {global_step} ===\n{metrics_str}\n" + "=" * 30, metrics_str the
    # "\n".join of f"  {metric.key}: {metric.value}" sorted by key (a paste may elide rows with "  ...")
    recs, _, p = parse("WandbBackend: Logged 70 metrics at step 2",
                       "=== [global_reduce] - METRICS STEP 2 ===",
                       "  buffer/add/count_episodes_added: 16.0",
                       "  ...",
                       "  grpo_loss/kl_divergence_max: 6551.78759765625",
                       "  grpo_loss/policy_gradient_loss: 7.560361581226971e-08",
                       "  grpo_loss/total_loss: 1.3114268995195744e-06",
                       "  main/continuous_rollouts/count_rollout_iterations: 2.0",
                       "==============================",
                       "",
                       "=== [global_reduce] - METRICS STEP 3 ===",
                       "  buffer/add/count_episodes_added: 24.0",
                       "==============================")
    assert [(r["step"], r["loss"]) for r in recs] == [(2, 1.3114268995195744e-06), (3, None)]
    assert recs[0]["extra"]["grpo_loss/kl_divergence_max"] == 6551.78759765625
    assert recs[1]["extra"]["buffer/add/count_episodes_added"] == 24.0
    assert p.stats.formats == {"forge": 2}


def test_torchforges_first_console_backend_a_line_apiece_behind_the_logs_prefix_is_read():
    # torchforge f9681c4e..76371d18 (Sept-Oct 2025) ConsoleBackend.log: logger.info(f"=== [{self.prefix}] -
    # METRICS STEP {step} ==="), logger.info(f"  {key}: {value}") for each, logger.info("=" * 30 + "\n"), through
    # logging.getLogger(__name__): each line behind the log's own prefix
    pre = "INFO:forge.observability.metrics:"
    recs, _, p = parse(f"{pre}=== [global_reduce] - METRICS STEP 2 ===",
                       f"{pre}  buffer/add/count_episodes_added: 16.0",
                       f"{pre}  grpo_loss/total_loss: 1.3114268995195744e-06",
                       f"{pre}==============================", "",
                       f"{pre}=== [global_reduce] - METRICS STEP 3 ===",
                       f"{pre}  grpo_loss/total_loss: 1.2e-06",
                       f"{pre}==============================", "")
    assert [(r["step"], r["loss"]) for r in recs] == [(2, 1.3114268995195744e-06), (3, 1.2e-06)]
    assert recs[0]["extra"]["buffer/add/count_episodes_added"] == 16.0
    assert p.stats.formats == {"forge": 2} and p.stats.unparsed_lines == 0


def test_torchforges_per_rank_blocks_are_each_their_ranks_record():
    # logging_mode per_rank_reduce / per_rank_no_reduce: each actor rank's ConsoleBackend prints its own block,
    # named by utils.py get_proc_name_with_rank ("TrainActor_1abc2def_r1"): the record is that rank's, as a
    # launcher's rank label makes a line's (the run's series keeps the first rank's record of a step)
    rows = []
    for step in (3, 4):
        for rank, loss in ((1, 2.5), (0, 1.5)):
            rows += [f"=== [TrainActor_1abc2def_r{rank}] - METRICS STEP {step} ===",
                     f"  grpo_loss/total_loss: {loss + step}", "=" * 30, ""]
    recs, _, _ = parse(*rows)
    assert [(r["step"], r["loss"], r["extra"].get("rank")) for r in recs] == [
        (3, 5.5, 1), (3, 4.5, 0), (4, 6.5, 1), (4, 5.5, 0)]
    recs, _, _ = parse("=== [global_reduce] - METRICS STEP 3 ===", "  grpo_loss/total_loss: 4.5", "=" * 30)
    assert "rank" not in recs[0]["extra"]


def test_verl_step_line_reward_model_grad_norm_is_not_the_steps():
    # veRL's PRIME recipe (recipe/prime/prime_dp_rm.py update_rm) steps its implicit reward model's
    # own optimizer and logs {"reward_model/grad_norm": ...} before the actor's values on the line
    recs, _, _ = parse(
        "step:3 - timing/gen:305.090 - reward_model/prm_loss:0.720 - reward_model/grad_norm:5.092 - "
        "timing/update_actor:84.257 - actor/pg_loss:-0.650 - actor/grad_norm:0.158 - "
        "actor/lr(1e-4):0.005 - critic/score/mean:2.576")
    (r,) = recs
    assert (r["step"], r["grad_norm"]) == (3, 0.158)
    assert r["lr"] == pytest.approx(5e-7)
    assert r["extra"]["reward_model/grad_norm"] == 5.092


def test_prime_rl_throughput_in_tokens_per_second_is_the_records():
    # prime-rl trainer/sft/train.py: logger.success(f"Step {step} | Time: {step_time:.2f}s | Loss: ...
    # | Grad. Norm: ... | LR: ... | Throughput: {throughput:.0f} tokens/s | MFU: {mfu:.1f}% | ...")
    recs, _, _ = parse(
        "02:40:53 SUCCESS Step 1 | Time: 0.60s | Loss: 12.3125 | Grad. Norm: 28.4812 | LR: 1.00e-06 | "
        "Throughput: 3324 tokens/s | MFU: 1.0% | Peak Mem.: 5.2/23.7 GiB (22.1%) | Max Vio: 0.9891")
    (r,) = recs
    assert (r["step"], r["loss"], r["tokens_per_s"]) == (1, 12.3125, 3324)
    # the same unit after a name no field has, on a line the key-value reader reads
    recs, _, _ = parse("iter 7, loss 2.5, throughput 1500.5 tokens/s", "iter 8, loss 2.4, throughput 1510.0 tokens/s")
    assert [(r["step"], r["tokens_per_s"]) for r in recs] == [(7, 1500.5), (8, 1510.0)]
    # ... and on a line the shape learner reads
    recs, _, _ = parse("Train step 5: loss 2.1 (gen 1500 tokens/s)", "Train step 6: loss 2.0 (gen 1510 tokens/s)")
    assert [(r["step"], r["tokens_per_s"], r["src"]) for r in recs] == [(5, 1500, "learned"), (6, 1510, "learned")]


@pytest.mark.parametrize("line", ["step 1 | loss 2.0 | throughput: 1500 tokens/sec",
                                  "iteration 1, loss: 2.0, time: 12.0ms, 1500 tokens/sec",
                                  "step    1/50 | loss 2.000000 | norm 1.0 | lr 1.00e-04 | 12.00 ms | 1500 tokens/sec "
                                  "| MFU 1.00%",
                                  "Train step 1: loss 2.0 (gen 1500 tokens/sec)"])
def test_every_reader_knows_the_same_token_rate_units(line):
    # formats.TOKEN_RATE_UNITS: the pipe, key-value and unnamed-column readers and the shape learner alike
    (r,) = parse(line)[0]
    assert (r["step"], r["loss"], r["tokens_per_s"]) == (1, 2.0, 1500)


def test_cpm2_global_iteration_is_the_step_beside_the_epoch():
    # CPM-2 finetune_cpm2.py: 'epoch {:3d}/{:3d} |'.format(e, args.epochs) + ' global iteration
    # {:8d}/{:8d} |'.format(global_step, args.train_iters) + ' learning rate {:.3} |' + ' lm loss {:.6} |'
    recs, marks, _ = parse(
        "epoch   6/ 10 | global iteration     2250/    3402 | learning rate 3e-06 | lm loss 0.709318 | loss scale 1024.0 |",
        "iteration 2250 |  eval_loss: 0.7021887373356592 | eval acc(mrr): 0.25595238095238093",
        "epoch   6/ 10 | global iteration     2260/    3402 | learning rate 3e-06 | lm loss 0.710019 | loss scale 1024.0 |")
    assert [(r["step"], r["loss"]) for r in recs] == [(2250, 0.709318), (2260, 0.710019)]
    assert recs[0]["max_steps"] == 3402 and recs[0]["lr"] == 3e-06
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(2250, 0.7021887373356592)]


def test_a_dict_pasted_with_typographic_quotes_is_read_as_printed():
    # Megatron-SWIFT 4.4 GKD's dict ('iteration': '1/1389'), its quotes turned into ‘ ’ by an
    # editor's smart quotes on the way into an issue
    recs, _, _ = parse("{‘loss’: 0.23914044, ‘reward’: 2.46875, ‘grad_norm’: 0.185312, ‘learning_rate’: 0.0, "
                       "‘iteration’: ‘1/1389’, ‘elapsed_time’: ‘7m 41s’, ‘remaining_time’: ‘7d 9h 51m 55s’, "
                       "‘memory(GiB)’: 25.53, ‘train_speed(s/it)’: 461.322198}",
                       "Train: 0%|| 1/1389 [07:41<177:51:48, 461.32s/it]")
    (r,) = recs
    assert (r["step"], r["max_steps"], r["loss"], r["grad_norm"]) == (1, 1389, 0.23914044, 0.185312)
    assert r["mem_gib"] == 25.53 and r["step_time_s"] == 461.322198


def test_prime_rl_orchestrator_step_line_is_the_steps_record_without_a_loss():
    # prime-rl src/prime_rl/orchestrator/orchestrator.py logger.success(step_message): f"Step
    # {progress.step} | Time: {step_time:.2f}s | Reward: ... | Throughput: {throughput:.1f} tokens/s | ..."
    recs, _, _ = parse(
        "Generating rollouts (train): 100%|██████████| 512/512 [01:13<00:00,  6.97it/s]",
        "02:33:26 SUCCESS Step 28 | Time: 73.77s | Reward: 0.3887 | Throughput: 2408.9 tokens/s | "
        "Seq. Length: 345.6 tokens/sample | Async Level: 1 | Max. Off-Policy Level: 0",
        "02:33:26    INFO Starting orchestrator step 29")
    (r,) = recs
    assert (r["step"], r["loss"], r["step_time_s"], r["tokens_per_s"]) == (28, None, 73.77, 2408.9)
    assert r["extra"]["Reward"] == 0.3887


def test_a_dict_a_terminal_wrapped_at_its_width_is_read_whole():
    # the Trainer's print of a KTO dict on a 112-column terminal: cut inside numbers and names
    rows = ("{'loss': 0.4173, 'grad_norm': 1.4672807732482507, 'learning_rate': 4.765488274413721e-06, 'rewards/chosen': 1.19",
            "4046974182129, 'logps/chosen': -18.560531616210938, 'rewards/rejected': 0.43546485900878906, 'logps/rejected': -",
            "29.158364868164064, 'rewards/margins': 0.7585821151733398, 'kl': 0.10797347873449326, 'logits/chosen': -15973750",
            "4.0, 'logits/rejected': -125256448.0, 'epoch': 0.08}",
            "{'loss': 0.4329, 'grad_norm': 3.9429698141756444, 'learning_rate': 4.7567378368918445e-06, 'rewards/chosen': 1.1",
            "291874647140503, 'logps/chosen': -30.11488151550293, 'rewards/rejected': 0.19891568024953207, 'logps/rejected': ",
            "-38.57758585611979, 'rewards/margins': 0.9302717844645182, 'kl': 0.0, 'logits/chosen': -149832224.0, 'logits/rej",
            "ected': -177144672.0, 'epoch': 0.08}")
    assert {len(r) for i, r in enumerate(rows) if i % 4 != 3} == {112}
    recs, _, _ = parse(*rows)
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 0.4173), (2, 0.4329)]
    assert recs[0]["extra"]["rewards/chosen"] == 1.194046974182129
    assert recs[0]["extra"]["logits/chosen"] == -159737504.0
    assert recs[1]["extra"]["logps/rejected"] == -38.57758585611979
    assert recs[1]["extra"]["logits/rejected"] == -177144672.0


@pytest.mark.parametrize("prefix", ["[rank0]: ", "[default0]:", "(TrainActor pid=4121) "])
@pytest.mark.parametrize("width", [112, 80])
def test_a_dict_a_terminal_wrapped_behind_its_lines_prefix_is_read_whole(prefix, width):
    # torchrun's "[rank0]: " / "[default0]:" and Ray's actor label stand before the line, so on its first row
    # only: the terminal's width is that row's with the prefix (Ray's at 112 columns ends its first row with a
    # space the paste trims: one column less)
    line = ("{'loss': 0.4173, 'grad_norm': 1.4672807732482507, 'learning_rate': 4.765488274413721e-06, "
            "'rewards/chosen': 1.194046974182129, 'logps/chosen': -18.560531616210938, 'rewards/rejected': 0.43546485900878906, "
            "'logps/rejected': -29.158364868164064, 'kl': 0.10797347873449326, 'epoch': 0.08}")
    shown = prefix + line
    rows = [shown[i:i + width] for i in range(0, len(shown), width)]
    assert len(rows) >= 3
    recs, _, p = parse(*rows, prefix + "{'loss': 0.4329, 'grad_norm': 3.94, 'learning_rate': 4.75e-06, 'epoch': 0.08}")
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 0.4173), (2, 0.4329)]
    assert recs[0]["extra"]["rewards/chosen"] == 1.194046974182129
    assert recs[0]["extra"]["logps/rejected"] == -29.158364868164064
    assert p.stats.unparsed_lines == 0


def test_a_command_pasted_a_flag_a_line_names_no_evaluation():
    # mlx-lm's `mlx_lm.lora \` then `--iters 10 \`, `--val-batches 1 \` ...: settings, not values
    recs, marks, _ = parse("% mlx_lm.lora \\", "    --model Qwen/Qwen2.5-0.5B \\", "    --train \\",
                           "    --iters 10 \\", "    --val-batches 1 \\", "    --steps-per-eval 500 \\",
                           "    --max-completion-length 128", "",
                           "Iter 1: Val loss 0.00000000, Val total_rewards_mean 0.000, Val took 2.680s")
    assert recs == []
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(1, 0.0)]


@pytest.mark.parametrize("path", ["/data/out/checkpoint-100", "/data/out/checkpoint-100/", "checkpoint-100/.",
                                  "//checkpoint-7", "a//checkpoint-3//", "./checkpoint-9", "checkpoint-1/././/",
                                  "/data/iter_0000100", "x/checkpoint-5/..", "/", ".", ""])
def test_a_saved_checkpoints_step_is_read_from_the_last_name_of_its_path(path):
    """A save line's step is the step of its path's last name, as a POSIX path names it (empty
    and "." parts are no names; ".." is one): the same whether the path ends in slashes or dots."""
    from pathlib import PurePosixPath
    from moeconsole.runner.checkpoints.discover import step_in_name
    got = LogParser().process_line(f"[INFO:swift] Saving model checkpoint to {path}".encode())
    marks = [m for kind, m in got if kind != "record" and m.get("kind") == "checkpoint_saved"]
    if not path:
        assert not marks
        return
    assert [m["step"] for m in marks] == [step_in_name(PurePosixPath(path.rstrip(".").rstrip("/")).name)]
