"""Line shapes met in real training logs that once were misread: each written here from the
trainer's format, fed as bytes, checked on the record a user gets."""
from __future__ import annotations

import pytest

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.history import read_events
from moeconsole.runner.ingest.lines import terminal_bytes, unescape_markdown_pipes

MEGATRON = (" [2026-01-02 03:04:05] iteration       10/     200 | consumed samples:          160 | "
            "elapsed time per iteration (ms): 6200.3 | learning rate: 2.000000E-05 | global batch size:"
            "    16 | lm loss: 1.234568E+00 | loss scale: 1.0 | grad norm: 0.877 | "
            "number of skipped iterations:   0 | number of nan iterations:   0 |")
MEM = ("[Rank {r}] (after 10 iterations) memory (MB) | allocated: 20480.00 | max allocated: 57344.00 | "
       "reserved: 61440.00 | max reserved: {mx:.2f}")


def parse(*lines: str | bytes, sizes: int | None = None) -> tuple[list[dict], LogParser]:
    p = LogParser()
    data = b"".join((ln if isinstance(ln, bytes) else ln.encode()) + b"\n" for ln in lines)
    step = sizes or len(data) or 1
    events = read_events(p, [data[i:i + step] for i in range(0, len(data), step)])
    p.marks = [o for k, o in events if k == "mark"]  # type: ignore[attr-defined]
    return [o for k, o in events if k == "record"], p


def step_losses(recs) -> list[tuple]:
    """(step, loss) of each training record, as the batch tests compare them."""
    return [(r["step"], r["loss"]) for r in recs]


def eval_losses(p) -> list[tuple]:
    """(step, loss) of each evaluation mark of a parse."""
    return [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"]


def test_dict_glued_to_a_progress_bar_without_carriage_return():
    bar = "Train:   4%|▍         | 42/1000 [00:42<41:47, 42.51s/it]"
    recs, p = parse(bar + "{'loss': '0.3713', 'grad_norm': '1.25', 'learning_rate': '1e-05', "
                    "'epoch': '0.04', 'global_step/max_steps': '42/1000', 'memory(GiB)': '35.12', "
                    "'train_speed(s/it)': '42.51'}")
    (r,) = recs
    assert (r["step"], r["max_steps"], r["loss"], r["mem_gib"]) == (42, 1000, 0.3713, 35.12)
    assert r["src"] == "swift_dict" and p.stats.unparsed_lines == 0


def test_bar_redraws_stored_without_carriage_returns_are_each_a_step():
    """tqdm writes "\\r" before each redraw; a file whose carriage returns were dropped shows
    the redraws glued on one line (a custom loop's set_postfix then update): each count is read."""
    seg = "Epoch 1/5:   0%|          | {n}/1197 [00:0{n}<16:55,  1.18it/s, loss={loss}, lr=0]"
    line = "".join(seg.format(n=n, loss=loss) for n, loss in ((0, 5.14), (1, 5.14), (1, 4.16), (2, 4.16),
                                                               (2, 3.81), (3, 3.81)))
    recs, _ = parse(line)
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 5.14), (2, 4.16), (3, 3.81)]


def test_a_bracketed_list_before_blanks_is_no_bar_redraw():
    """Only a bar's own right part (its elapsed time and rate in brackets) ends a redraw: a list
    in brackets followed by blanks leaves the line whole."""
    recs, _ = parse("step 7  loss: 2.5  lrs: [1, 2]          elapsed 3.1s/it 50% done")
    assert [(r["step"], r["loss"]) for r in recs] == [(7, 2.5)]


@pytest.mark.parametrize("prefix", ["[gpu-node-07.cluster:3]: ", "3: ", "12: [rank3]: "])
def test_srun_label_before_megatron_iteration_and_memory_report(prefix):
    recs, p = parse(prefix + MEGATRON, prefix + MEM.format(r=3, mx=61440.0),
                    prefix + MEM.format(r=5, mx=65536.0), prefix + "[after training is done] datetime: x")
    it, mem, mem5 = recs
    assert it["src"] == "megatron"
    assert (it["step"], it["max_steps"], it["grad_norm"], it["lr"]) == (10, 200, 0.877, 2e-05)
    assert it["step_time_s"] == pytest.approx(6.2003)
    assert it["extra"]["rank"] == 3
    # the host name is dropped, never a metric
    assert not any("gpu" in k or "node" in k for k in it["extra"])
    assert (mem["src"], mem["step"], mem["mem_gib"], mem["extra"]["rank"]) == ("megatron_mem", 10, 60.0, 3)
    assert (mem5["src"], mem5["step"], mem5["mem_gib"], mem5["extra"]["rank"]) == ("megatron_mem", 10, 64.0, 5)
    assert p.stats.formats == {"megatron": 1, "megatron_mem": 2}


def test_megatron_step_time_in_seconds():
    recs, _ = parse(MEGATRON.replace("elapsed time per iteration (ms): 6200.3",
                                     "elapsed time per iteration (s): 35.8"))
    assert recs[0]["step_time_s"] == 35.8


def hf(loss: float, epoch: float) -> str:
    return f"{{'loss': {loss}, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': {epoch}}}"


def test_a_dict_cut_by_a_stray_newline_does_not_shift_later_steps():
    cut = hf(0.8, 0.02)
    recs, p = parse(hf(0.9, 0.01), cut[:30], cut[30:], hf(0.7, 0.03), sizes=7)
    assert [r["step"] for r in recs] == [1, 2, 3]
    assert [r["loss"] for r in recs] == [0.9, 0.8, 0.7]
    assert p.stats.unparsed_lines == 0


def test_a_cut_dict_that_never_closes_is_reported_and_the_next_line_still_read():
    recs, p = parse(hf(0.9, 0.01)[:30], "[INFO:swift] Saving model checkpoint to /o/checkpoint-1",
                    hf(0.7, 0.03))
    assert [r["step"] for r in recs] == [1]
    assert p.marks[0]["kind"] == "checkpoint_saved"
    assert p.stats.suspect_lines == 1


def test_two_runs_in_one_file_do_not_continue_one_step_count():
    first = [hf(1.0 - i / 10, i / 10) for i in range(1, 4)]
    # a new run announced by the trainer's banner
    recs, _ = parse(*first, "***** Running training *****", hf(2.0, 0.1), hf(1.9, 0.2))
    assert [r["step"] for r in recs] == [1, 2, 3, 1, 2]
    # no banner: the epoch going back gives it away
    recs, _ = parse(*first, hf(2.0, 0.1), hf(1.9, 0.2))
    assert [r["step"] for r in recs] == [1, 2, 3, 1, 2]


def test_lightning_and_nemo_bar_postfix_every_redraw_with_a_new_step():
    bar = ("Epoch 0:  12%|█▏        | {n}/1563 [02:05<15:15,  1.50it/s, v_num=0, loss={loss}, "
           "reduced_train_loss={loss}, global_step={n}.0, consumed_samples={s}.0]")
    line = "\r".join(bar.format(n=n, loss=l, s=n * 64) for n, l in ((187, 7.8), (187, 7.8), (188, 7.75)))
    recs, p = parse(line)
    assert [(r["step"], r["loss"], r["src"]) for r in recs] == [(187, 7.8, "pl_bar"), (188, 7.75, "pl_bar")]
    assert recs[-1]["extra"]["consumed_samples"] == 188 * 64


def test_lightning_bar_without_global_step_takes_its_counter():
    # Lightning 2's bar (v_num, no running loss): epoch 1's 50th batch of 50 is the run's step 100
    # (review R52); Lightning 1.x's (a running ``loss=``) is counted from the first epoch shown
    recs, _ = parse("Epoch 1: 100%|██████████| 50/50 [00:10<00:00,  4.90it/s, v_num=3, train_loss=0.25]")
    (r,) = recs
    assert r["loss"] == 0.25 and r["epoch"] == 1.0 and r["step"] == 100 and "step_inferred" not in r["extra"]
    recs, _ = parse("Epoch 1: 100%|██████████| 50/50 [00:10<00:00,  4.90it/s, loss=0.3, v_num=3, train_loss=0.25]")
    (r,) = recs
    assert r["loss"] == 0.25 and r["step"] == 50


def test_tqdm_name_value_postfix_takes_the_bar_count_as_step():
    recs, p = parse("Training:  40%|████      | 40/100 [00:10<00:15,  3.90it/s, loss: 2.345, lr: 1.0e-04]",
                    "Training:  41%|████      | 41/100 [00:10<00:15,  3.90it/s, loss=2.3, lr=1.0e-04]",
                    "Training:  42%|████      | 42/100 [00:10<00:15,  3.90it/s]")
    assert [(r["step"], r["max_steps"], r["loss"]) for r in recs] == [(40, 100, 2.345), (41, 100, 2.3)]
    assert recs[0]["lr"] == 1e-4 and p.stats.formats == {"tqdm_postfix": 2}
    assert p.stats.ignored_lines == 1      # a bar with no metrics is not a record


def test_mmengine_and_xtuner_lines():
    recs, p = parse(
        "11/23 10:05:42 - mmengine - INFO - Epoch(train)  [2][200/735]  lr: 2.0000e-04  eta: 0:41:12  "
        "time: 3.4567  data_time: 0.0123  memory: 10762  loss: 2.75  grad_norm: 3.06",
        "11/23 10:06:42 - mmengine - INFO - Iter(train) [  300/10000]  lr: 1.0000e-04  time: 0.5  "
        "memory: 2048  loss: 1.5",
        "11/23 10:07:42 - mmengine - INFO - Epoch(val)  [2][10/20]  eta: 0:00:02  time: 0.1")
    a, b = recs
    assert (a["step"], a["loss"], a["grad_norm"], a["lr"]) == (735 + 200, 2.75, 3.06, 2e-4)
    assert a["mem_gib"] == pytest.approx(10762 / 1024) and a["step_time_s"] == 3.4567
    assert a["epoch"] == pytest.approx(1 + 200 / 735) and a["extra"]["eta"] == "0:41:12"
    assert (b["step"], b["max_steps"], b["mem_gib"]) == (300, 10000, 2.0)
    assert p.stats.formats == {"mmengine": 2}


def test_parse_summary_names_each_detected_format(tmp_path):
    """The `parse` command's summary says which format each family of lines was read as."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    log = tmp_path / "mixed.log"
    log.write_text("\n".join([
        "3: " + MEGATRON,
        "3: " + MEM.format(r=3, mx=61440.0),
        "Epoch 0:  12%|#    | 188/1563 [02:05<15:15,  1.50it/s, v_num=0, loss=7.75, global_step=188.0]",
        "11/23 10:05:42 - mmengine - INFO - Iter(train) [300/10000]  lr: 1.0000e-04  time: 0.5  loss: 1.5",
    ]) + "\n")
    res = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", str(log)], cwd=repo,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    formats = next(ln for ln in res.stdout.splitlines() if ln.strip().startswith("formats"))
    for name in ("megatron (1)", "megatron_mem (1)", "pl_bar (1)", "mmengine (1)"):
        assert name in formats


# MosaicML Composer's ConsoleLogger (composer/loggers/console_logger.py, log_to_console):
# f"{progress}:" then f"\n\t {prefix}{name}: {value}" per metric, prefix "Train "; progress is
# f"[{unit}={n}/{total}]" for a duration in batches or tokens, f"[epoch={e}][batch={b}/{B}]"
# for one in epochs. The summed loss is "loss/train/total" (composer trainer.py).
COMPOSER_BLOCK = ("{progress}:", "\t Train time/batch: {n}", "\t Train loss/train/total: {loss}",
                  "\t Train metrics/train/LanguageCrossEntropy: {loss}",
                  "\t Train memory/reserved_mem: 14.6740")


@pytest.mark.parametrize("progress", ["[batch={n}/100]", "[epoch=1][batch={n}/100]", "[epoch=1][batch={n}]"])
def test_composer_console_blocks_give_the_total_loss(progress):
    lines = [ln.format(progress=progress.format(n=n), n=n, loss=loss)
             for n, loss in ((1, 10.9736), (2, 10.9724), (3, 10.6459)) for ln in COMPOSER_BLOCK]
    recs, _ = parse(*lines)
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 10.9736), (2, 10.9724), (3, 10.6459)]
    assert all(r["step_time_s"] is None for r in recs)   # Composer's time/batch is a batch count


def test_char_rnn_time_per_batch_is_the_step_time():
    """char-rnn-tensorflow train.py: "{}/{} (epoch {}), train_loss = {:.3f}, time/batch = {:.3f}"
    with the seconds the batch took."""
    recs, _ = parse(*(f"{n}/446 (epoch 0), train_loss = {2 + n / 1000:.3f}, time/batch = 0.{n}"
                      for n in (268, 269, 270)))
    assert [(r["step"], r["loss"], r["step_time_s"]) for r in recs] == [
        (268, 2.268, 0.268), (269, 2.269, 0.269), (270, 2.27, 0.27)]


def test_deit_log_txt_lines_are_steps_at_their_epoch():
    """DeiT / MAE main.py append json.dumps({**{f'train_{k}': v}, **{f'test_{k}': v}, 'epoch': epoch,
    'n_parameters': n}) to log.txt once per epoch: the integer epoch is the step, the test_*
    values an evaluation there; a float epoch (a Hugging Face dict) is never a step."""
    import json
    lines = [json.dumps({"train_lr": 5e-4, "train_loss": (3.5, 3.4, 3.3)[e], "test_loss": (1.1, 1.0, 0.9)[e], "test_acc1": 74.1,
                         "epoch": e, "n_parameters": 11590840}) for e in (0, 1, 2)]
    recs, p = parse(*lines)
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(0, 3.5, 5e-4), (1, 3.4, 5e-4), (2, 3.3, 5e-4)]
    assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(0, 1.1), (1, 1.0), (2, 0.9)]
    recs, _ = parse('{"loss": 2.5, "learning_rate": 1e-05, "epoch": 3.0}', '{"loss": 2.4, "learning_rate": 1e-05, "epoch": 4.0}')
    assert [r["step"] for r in recs] == [1, 2]


def mmcv_json(mode: str, it: int, **values: float) -> str:
    """mmcv 1.x TextLoggerHook._dump_log: json.dumps of OrderedDict(mode=, epoch=, iter=), then
    lr, memory (_get_max_memory: MB) and the log buffer (time: IterTimerHook's s/iter)."""
    import json
    return json.dumps({"mode": mode, "epoch": 1, "iter": it, "lr": 1e-05, **values})


def test_mmcv_json_log_time_is_the_step_time_and_memory_mib_also_in_bulk(tmp_path):
    from moeconsole.runner.ingest import marks_from_path, records_from_path
    lines = [mmcv_json("train", 50 * n, memory=10240, data_time=0.01, loss_cls=1.0, loss=1.0 + 1 / n,
                       time=0.5 + n / 1000) for n in range(1, 301)]
    lines.append(mmcv_json("val", 15000, bbox_mAP=0.3, bbox_mAP_50=0.5))
    for got in (parse(*lines)[0], records_from_path(tmp_path.joinpath("x.log.json").write_text(
            "\n".join(lines) + "\n") and tmp_path / "x.log.json")[0]):
        assert len(got) == 300 and [r["step"] for r in got] == [50 * n for n in range(1, 301)]
        assert (got[1]["loss"], got[1]["step_time_s"], got[1]["mem_gib"]) == (1.5, 0.502, 10.0)
        assert "time" not in got[1]["extra"] and "mode" not in got[1]["extra"]
    (ev,) = [m for m in marks_from_path(tmp_path / "x.log.json") if m["kind"] == "eval"]
    assert ev["step"] == 15000 and ev["split"] == "val" and ev["values"]["val_bbox_mAP"] == 0.3


def test_caikit_named_metric_json_lines_are_steps():
    """caikit-nlp peft_prompt_tuning.py save(): json.dump({"name": "loss", "data": loss_log})
    with loss_log = {"epoch", "step", "value", "timestamp"}."""
    recs, p = parse(*(f'{{"name": "loss", "data": {{"epoch": 0.01, "step": {s}, "value": {v}, '
                      f'"timestamp": "2023-09-26T19:25:18.737364"}}}}' for s, v in ((1, 3.9274), (2, 4.4904))))
    assert [(r["step"], r["loss"], r["epoch"]) for r in recs] == [(1, 3.9274, 0.01), (2, 4.4904, 0.01)]
    assert p.stats.unparsed_lines == 0


# ClearerVoice-Studio train/speech_enhancement/solver.py and train/speech_separation/solver.py:
# 'Train Epoch: {}/{} Step: {}/{} | {:2.3f}s/batch | lr {:1.4e} |' + the network's losses.
CLEARERVOICE = "Train Epoch: {e}/100 Step: {i}/965 | 2.057s/batch | lr 5.0000e-04 |{losses}"


@pytest.mark.parametrize("losses,loss,extra", [
    ("| Mask_Loss {v:2.4f}", "v", {}),
    ("| Total_Loss {v:2.4f}| CMask_Loss 0.5000| SiSNR_Loss -12.3400", "v", {"CMask_Loss": 0.5, "SiSNR_Loss": -12.34}),
    ("| Gen_Loss {v:2.4f}| Disc_Loss 0.2500", "v", {"Disc_Loss": 0.25}),
    (" Total_Loss {v:2.4f}", "v", {}),
])
def test_clearervoice_solver_lines_every_network(losses, loss, extra):
    lines = [CLEARERVOICE.format(e=e, i=i, losses=losses.format(v=1 + i / 1000)) for e in (0, 1) for i in (10, 960)]
    recs, p = parse(*lines)
    assert [(r["step"], r["loss"]) for r in recs] == [(10, 1.01), (960, 1.96), (975, 1.01), (1925, 1.96)]
    assert (recs[0]["step_time_s"], recs[0]["lr"], recs[2]["epoch"]) == (2.057, 5e-4, 1.0)
    assert {k: v for k, v in recs[0]["extra"].items() if k != "step_inferred"} == extra
    assert p.stats.unparsed_lines == 0


def test_step_dicts_with_speed_metrics_are_steps_and_the_end_summary_stays_a_summary():
    """transformers with include_num_input_tokens_seen adds speed_metrics("train", ...) to every
    step's logs (train_runtime, train_tokens_per_second); the end-of-training dict has
    train_runtime and train_loss but no loss / learning_rate / grad_norm."""
    step = ("{'loss': '%s', 'grad_norm': '2.578', 'learning_rate': '0.000156', 'epoch': '0.00748', "
            "'num_input_tokens_seen': 286019, 'train_runtime': '110.7', 'train_tokens_per_second': '2583'}")
    recs, p = parse(step % "14.88", step % "14.64",
                    "{'train_runtime': 120.5, 'train_samples_per_second': 3.9, 'train_steps_per_second': 0.25, "
                    "'train_loss': 14.7, 'epoch': 0.0083}")
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 14.88), (2, 14.64)]
    assert [m["kind"] for m in p.marks] == ["train_summary"]


def test_lightning_bar_drawn_without_its_bar_gives_the_step_loss():
    """tqdm's format_meter with ncols=0 (width unknown, as in Colab) returns l_bar[:-1] + r_bar[1:]:
    "Epoch 0:  97% 1651/1702 [13:00<00:24,  2.11it/s, loss=0.158, v_num=0, train_loss=0.149]"."""
    recs, p = parse(*(f"Epoch 0:  97% {n}/1702 [13:00<00:24,  2.11it/s, loss=0.{n - 1500}, v_num=0, train_loss=0.149]"
                      for n in (1651, 1652, 1653)))
    assert [(r["step"], r["loss"], r["extra"]["loss_smoothed"]) for r in recs] == [
        (1651, 0.149, 0.151), (1652, 0.149, 0.152), (1653, 0.149, 0.153)]
    assert all(r["src"] == "pl_bar" for r in recs)


@pytest.mark.parametrize("line,loss,lr,step_time,mem", [
    # tinygrad examples/mlperf/model_train.py (llama)
    ("{i:5} 4.32 s run, {loss:.4f} loss, 0.000000000002 LR, 1454.57 GB used, 401488.40 GFLOPS", 11.875, 2e-12, 4.32, 1454.57),
    # tinygrad hlb_cifar10.py / beautiful_mnist-style: several ms pieces, the run time first
    ("{i:3d}  123.45 ms run,   20.10 ms python,  103.35 ms CUDA, {loss:5.2f} loss, 0.000400 LR, 2.10 GB used,  1234.56 GFLOPS",
     11.88, 0.0004, 0.12345, 2.1),
])
def test_values_printed_before_their_names_are_named_by_the_words_after(line, loss, lr, step_time, mem):
    recs, _ = parse(*(line.format(i=i, loss=11.875) for i in (1, 2, 3)))
    assert [r["step"] for r in recs] == [1, 2, 3]
    assert (recs[0]["loss"], recs[0]["lr"], recs[0]["step_time_s"], recs[0]["mem_gib"]) == (loss, lr, step_time, mem)
    # names printed first, pieces joined by ", " as well: read as before
    recs, _ = parse("step 1, loss 2.5, lr 0.001, grad_norm 1.5", "step 2, loss 2.4, lr 0.001, grad_norm 1.4")
    assert [(r["step"], r["loss"], r["lr"], r["grad_norm"]) for r in recs] == [(1, 2.5, 0.001, 1.5), (2, 2.4, 0.001, 1.4)]


@pytest.mark.parametrize("labels", [("0: ", "1: "), ("[node-a:0]: ", "[node-b:8]: "), ("10.96.202.43: ", "10.96.202.17: ")])
def test_every_process_printing_step_less_dicts_counts_each_logging_event_once(labels):
    """Each rank (a launcher's rank label) or node (pdsh's "host: " label) prints its own
    Hugging Face dicts: the steps count logging events, read from the first process seen."""
    first, other = labels
    lines = []
    for n, (loss, ev) in enumerate(((10.59, None), (6.99, 7.69), (6.86, None)), 1):
        lines += [f"{first}{{'loss': {loss}, 'learning_rate': 0.0006, 'epoch': {n / 2}}}",
                  f"{other}{{'loss': {loss + 0.01}, 'learning_rate': 0.0006, 'epoch': {n / 2}}}"]
        if ev is not None:
            lines += [f"{other}{{'eval_loss': {ev + 0.01}, 'epoch': {n / 2}}}", f"{first}{{'eval_loss': {ev}, 'epoch': {n / 2}}}"]
    recs, p = parse(*lines)
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 10.59), (2, 6.99), (3, 6.86)]
    assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(2, 7.69)]
    assert p.stats.ignored_lines == 4


def test_nemo_bar_without_rate_and_lightning_checkpoint_message():
    """NeMo's progress bar has no rate ("{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]");
    a NaN loss reads nan.0 in it; Lightning's ModelCheckpoint names the step and the path it saves."""
    bar = ("Epoch 0: :   3%|▎         | {n}/301500 [1:42:42<55:37:46, v_num=0-56, reduced_train_loss={loss}, "
           "global_step={gs}, consumed_samples=6.3e+5, train_step_timing in s=0.615, val_loss=7.040]")
    recs, p = parse(bar.format(n=8999, loss="2.310", gs="9e+3"), bar.format(n=9000, loss="nan.0", gs="9e+3"),
                    "Epoch 0, global step 9000: 'val_loss' reached 7.04238 (best 7.04238), saving model to "
                    "'/data/ckpt/megatron_gpt--val_loss=7.04-step=9000.ckpt' as top 3")
    # global_step=9e+3 is tqdm's format_num of 8999.0 and of 9000.0 (3 significant digits): the bar counts
    assert [(r["step"], str(r["loss"])) for r in recs] == [(8999, "2.31"), (9000, "nan")]
    assert recs[1]["step_time_s"] == 0.615
    assert [(m["kind"], m["step"]) for m in p.marks] == [("eval", 8999), ("checkpoint_saved", 9000)]
    assert p.marks[1]["path"] == "/data/ckpt/megatron_gpt--val_loss=7.04-step=9000.ckpt"


def test_liger_efficiency_callback_keys_give_memory_and_token_rate():
    """Liger-Kernel's EfficiencyCallback adds step_peak_memory_*_MB and step_tokens_per_second."""
    line = ("{'loss': %s, 'grad_norm': 9.36, 'learning_rate': 9.9e-06, 'epoch': %s, 'num_input_tokens_seen': 65536, "
            "'step_peak_memory_allocated_MB': 26279.24, 'total_peak_memory_allocated_MB': 26279.24, "
            "'step_peak_memory_reserved_MB': 47172.0, 'total_peak_memory_reserved_MB': 47172.0, "
            "'step_tokens_per_second': 18801.85, 'avg_tokens_per_second': 18801.85}")
    recs, _ = parse(*(line % (75.0 - n, n / 2) for n in range(1, 40)))
    assert len(recs) == 39 and {(r["mem_gib"], r["tokens_per_s"]) for r in recs} == {(47172.0 / 1024, 18801.85)}


def test_a_step_line_ending_with_an_unnamed_duration_in_ms_gives_the_step_time():
    """modded-llama2: f"{step} | loss {loss:.4f} | lr {lr:e} | {dt * 1000:.2f}ms"."""
    recs, _ = parse(*(f"{s} | loss {9 - s / 10:.4f} | lr 3.000000e-04 | 1359{s}.70ms" for s in (0, 10, 20)))
    assert [(r["step"], round(r["step_time_s"], 6)) for r in recs] == [(0, 13.5907), (10, 135.9107), (20, 135.9207)]


def test_hugging_face_dicts_under_the_trainers_bar_take_its_count_as_the_step():
    """transformers ProgressCallback: on_step_end updates the description-less training bar to
    global_step, on_log writes the step-less dict under it; on a terminal the line holds the
    bar's redraws, a blank redraw and the dict (h2oGPT's log); in a file the bar may stand on
    the line before. A message between the bar and the dict leaves the dict numbered."""
    bar = "  4%|▎         | {n}/36234 [11:37<5:10:26,  1.87it/s]"
    cr = "".join("\r" + bar.format(n=n) + "\r" + bar.format(n=n + 1) + "\r" + " " * 54 +
                 "\r{'loss': %s, 'learning_rate': 0.00029, 'epoch': 0.22}\n" % loss
                 for n, loss in ((1317, 1.5545), (1318, 1.3465)))
    eval_bar = "100%|██████████| 4/4 [00:01<00:00,  3.1it/s]\n"
    tail = (bar.format(n=1330) + "\n" + eval_bar + "{'loss': 1.2, 'learning_rate': 0.00029, 'epoch': 0.23}\n"
            + bar.format(n=1340) + "[INFO] saving\n{'loss': 1.1, 'learning_rate': 0.00029, 'epoch': 0.23}\n")
    recs, _ = parse((cr + tail).encode().rstrip(b"\n"))
    assert [(r["step"], r["loss"]) for r in recs] == [(1318, 1.5545), (1319, 1.3465), (1330, 1.2), (1331, 1.1)]


def test_a_rich_console_record_wrapped_onto_indented_lines_is_one_record():
    """rich's RichHandler (ColossalAI's logger): time column (blank when repeated), level padded
    to 8, message wrapped at the console width onto lines indented to the message column."""
    head = "[01/15/23 18:11:55] INFO     colossalai - colossalai - INFO: train.py:230 main"
    rec = ("                    INFO     colossalai - colossalai - INFO: Training, Epoch: 0, Step: {s}, Global_Step: {s}, "
           "Loss: distogram=4.159 fape=1.682")
    wrap = "                             lddt=3.912 violation=404.925 loss={loss} drmsd_ca=26.113"
    recs, p = parse(head, rec.format(s=1), wrap.format(loss=162.822), head, rec.format(s=2), wrap.format(loss=160.364),
                    head, rec.format(s=3))
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 162.822), (2, 160.364), (3, None)]
    assert recs[0]["extra"]["violation"] == 404.925 and not [m for m in p.marks if m["kind"] == "train_summary"]
    # the record lines are the metric lines, the wrapped ones joined them, the others say nothing
    assert (p.stats.metric_lines, p.stats.ignored_lines, p.stats.unparsed_lines) == (3, 2, 3)


def test_minillm_global_iter_and_total_loss():
    """MiniLLM (microsoft/LMOps): "train | data_epochs {}/{} | inner iter: {}/{} | ppo epoch: {}/{} |
    global iter: {:6d}/{:6d}| tot_loss: {:.4f} | rl_loss: ... | lr: {:.4e} | ..." on one line."""
    line = ("train | data_epochs  0/10 | inner iter:   {i}/  8 | ppo epoch:  2/ 4 | global iter:     {g}/  5000| "
            "tot_loss: {loss} | rl_loss: -0.0407 | pt_loss: 2.3948 | pg_loss: -0.0428 | reward: 0.0000 | "
            "lr: 2.5000e-07 | scale: 128.00 | time: 1.874 | step time: 0.000")
    recs, _ = parse(line.format(i=7, g=13, loss=2.3541), line.format(i=1, g=14, loss=3.1123))
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(13, 2.3541, 2.5e-07), (14, 3.1123, 2.5e-07)]


def test_a_dataset_bar_before_training_does_not_give_the_first_dicts_step():
    """datasets' map bars count batches or examples ("ba/s", "examples/s") and end at 100%: only a
    running bar counting "it" (the Trainer's) gives a dict its step."""
    recs, _ = parse("100%|██████████| 5000/5000 [00:01<00:00, 3012.11it/s]",
                    " 20%|██        | 1000/5000 [00:01<00:04, 900.5ba/s]",
                    "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.01}",
                    "  1%|          | 10/873 [00:50<1:10:00,  5.01s/it]",
                    "{'loss': 2.4, 'learning_rate': 1e-05, 'epoch': 0.02}")
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 2.5), (10, 2.4)]


def test_the_trainer_bar_drawn_again_after_a_dict_gives_the_dict_its_step():
    """The Trainer writes its step-less dict with tqdm.write, which draws the bar again at the
    same count right after: a paste that starts at the dict (TRL SFT, the bar's redraw glued to
    the checkpoint message) and a captured file (every redraw kept, the first one after the
    dict is its step, a callback's own lines between the bar before and the dict) give the
    bar's count and total, however the bytes are cut."""
    paste = ("{'loss': 5.9309, 'grad_norm': 15.3125, 'learning_rate': 5.5e-05, 'epoch': 0.03}",
             "  1%|█▉         | 100/7252 [24:16<29:02:42, 14.62s/it][INFO|trainer.py:3910] 2025-02-16 "
             "18:41:31,587 >> Saving model checkpoint to out/checkpoint-100",
             "{'loss': 5.1, 'grad_norm': 9.5, 'learning_rate': 5.4e-05, 'epoch': 0.06}",
             "  3%|█▉         | 200/7252 [48:16<29:02:42, 14.62s/it][INFO|trainer.py:3910] 2025-02-16 "
             "19:05:31,587 >> Saving model checkpoint to out/checkpoint-200")
    capture = (b"\r  0%|          | 9/500 [00:09<08:00,  1.01s/it]\r  0%|          | 10/500 [00:10<08:00,  1.01s/it]",
               b"Logging metrics:", b"   rewards/mean: 0.6500",
               b"\r" + b" " * 40 + b"\r{'loss': 0.0751, 'grad_norm': 47.75, 'learning_rate': 1e-05, 'epoch': 0.02}",
               b"\r  2%|          | 10/500 [00:10<08:00,  1.01s/it]\r  2%|          | 11/500 [00:11<08:00,  1.01s/it]")
    for lines, want in ((paste, [(100, 7252, 5.9309), (200, 7252, 5.1)]), (capture, [(10, 500, 0.0751)])):
        for sizes in (None, 1, 7):
            recs, _ = parse(*lines, sizes=sizes)
            assert [(r["step"], r["max_steps"], r["loss"]) for r in recs] == want


def test_the_trainer_bar_alone_after_a_dict_gives_its_total_as_max_steps():
    """A terminal paste (axolotl): the bar, a message, the dict, the bar drawn again alone on its
    line at a count the terminal showed last, a log line, an evaluation dict. The lone bar's count
    is no proof of the dict's step (the dict is numbered), but its total is the Trainer's
    state.max_steps (ProgressCallback: tqdm(total=state.max_steps)) and the record carries it."""
    lines = ("  0%|          | 0/1440 [00:00<?, ?it/s]", "You're using a Qwen2TokenizerFast tokenizer.",
             "{'loss': 0.7294, 'grad_norm': 0.406, 'learning_rate': 2e-05, 'epoch': 0.0}",
             "  0%|          | 1/1440 [00:03<1:30:46,  3.79s/it]",
             "[2024-11-13 05:27:02,554] [INFO] [axolotl.utils.samplers.multipack.calc_min_len:197] gather_len_batches: [312]",
             "{'eval_loss': 0.7598, 'eval_runtime': 13.9149, 'epoch': 0.0}")
    for sizes in (None, 1, 7):
        recs, p = parse(*lines, sizes=sizes)
        assert [(r["step"], r["max_steps"], r["loss"]) for r in recs] == [(1, 1440, 0.7294)]
        assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(1, 0.7598)]


def test_a_log_without_the_trainers_bar_gives_each_dict_at_once():
    """Only a log that drew the Trainer's bar (or a paste at its first record) holds a dict for
    the line after it: live, a run logging to a file without the bar never shows its last step
    one logging interval late."""
    from moeconsole.runner.ingest.live import LiveReader
    reader = LiveReader()
    lines = [b"{'loss': %.1f, 'learning_rate': 1e-05, 'epoch': 0.0%d}\n" % (2.0 - s / 10, s) for s in range(1, 4)]
    got = [[(o["step"], o["loss"]) for k, o in reader.feed(line) if k == "record"] for line in lines]
    assert got == [[], [(1, 1.9), (2, 1.8)], [(3, 1.7)]]


def test_a_held_dict_before_template_rows_keeps_its_place(tmp_path):
    """A step-less dict held for its next line, then rows the template reads (ms-swift dicts):
    ``parse``'s pipe gives exactly what the line parser gives, in file order."""
    from moeconsole.runner.ingest import records_from_path
    swift = ("{'loss': '%.4f', 'grad_norm': '0.5', 'learning_rate': '1e-05', 'epoch': '0.1', "
             "'global_step/max_steps': '%d/500', 'memory(GiB)': '35.12', 'train_speed(s/it)': '6.2'}")
    lines = [swift % (1 + s / 100, s) for s in range(1, 60)]
    lines += ["  2%|          | 59/500 [00:59<08:00,  1.01s/it]",
              "{'loss': 9.5, 'learning_rate': 1e-05, 'epoch': 0.12}"]
    lines += [swift % (1 + s / 100, s) for s in range(60, 200)]
    lines += ["{'loss': 8.5, 'learning_rate': 1e-05, 'epoch': 0.6}",
              " 60%|██████    | 300/500 [05:00<03:20,  1.01s/it][INFO] Saving model checkpoint to out/checkpoint-300"]
    lines += [swift % (1 + s / 100, s) for s in range(301, 320)]
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    piped, _ = records_from_path(path)
    one_by_one, _ = parse(*lines)
    key = lambda r: (r["step"], r["loss"], r["src"])  # noqa: E731
    assert [key(r) for r in piped] == [key(r) for r in one_by_one]
    assert (60, 9.5, "hf_dict") in [key(r) for r in piped] and (300, 8.5, "hf_dict") in [key(r) for r in piped]


def _titan(step: int, loss: float, grad: float, gib: float, tps: float, tflops: float, mfu: str) -> str:
    """torchtitan/components/metrics.py MetricsProcessor.log, behind its logger's format
    ("[titan] %(asctime)s - %(name)s - %(levelname)s - %(message)s")."""
    return (f"[titan] 2026-07-16 11:20:41,921 - root - INFO - step: {step:2}  loss: {loss:8.5f}  "
            f"grad_norm: {grad:7.4f}  memory: {gib:5.2f}GiB({gib / 178.35 * 100:.2f}%)  tps: {round(tps):,}  "
            f"tflops: {tflops:,.2f}  mfu: {mfu}")


@pytest.mark.parametrize("width", [60, 72, 100])
@pytest.mark.parametrize("sizes", [None, 1, 7])
def test_torchtitan_lines_wrapped_at_spaces_are_read_whole(width, sizes):
    """A commit message or a narrow terminal wraps torchtitan's step lines at a space ("... step:
    1  loss:" / "7.98820  grad_norm: ... tps: 1,578" / "tflops: 0.86  mfu: N/A"): each is one record
    with every field, and a message wrapped between them stays a message."""
    import textwrap
    lines = [_titan(1, 7.9882, 3.7762, 3.87, 1578, 0.86, "N/A"),
             "[titan] 2026-07-16 11:20:41,921 - root - INFO - Synchronizing and adjusting timeout for all ProcessGroups to 0:01:40",
             _titan(2, 6.08364, 4.2124, 4.24, 96705, 52.5, "12.50%")]
    wrapped = [row for ln in lines for row in textwrap.wrap(ln, width, break_long_words=False, break_on_hyphens=False)]
    assert len(wrapped) > len(lines)
    recs, _ = parse(*wrapped, sizes=sizes)
    assert [(r["step"], r["loss"], r["grad_norm"], r["mem_gib"], r["tokens_per_s"]) for r in recs] == [
        (1, 7.9882, 3.7762, 3.87, 1578), (2, 6.08364, 4.2124, 4.24, 96705)]


def test_openrlhf_episode_bar_without_a_postfix_and_vllm_bars_give_no_step():
    """OpenRLHF's PPO trainer (openrlhf/trainer/ppo_trainer.py fit): pbar = tqdm(range(len(
    prompts_dataloader)), desc=f"Episode [{episode + 1}/{args.num_episodes}]") and, between its
    redraws, vLLM's "Processed prompts" bars behind Ray's actor labels: bars with no metric in
    them are progress, never a training record."""
    rows = ["(LLMRayActor pid=676132)", "Processed prompts: 100%|██████████| 16/16 [00:12<00:00,  1.25it/s]",
            "(ActorModelRayActor pid=675352)", "Episode [1/2]:  50%|█████     | 1/2 [03:32<03:32, 212.50s/it]",
            "(ActorModelRayActor pid=675352)", "Episode [1/2]: 100%|██████████| 2/2 [07:05<00:00, 212.60s/it]",
            "Episode [1/2]: 100%|██████████| 2/2 [07:05<00:00, 212.60s/it]"]
    recs, p = parse(*rows)
    assert recs == []
    assert p.stats.ignored_lines == 4   # the four bars: understood, carrying nothing


def test_pytorch_distributed_tutorial_epoch_lines_give_each_ranks_epoch_loss():
    """PyTorch's distributed tutorial (dist_tuto run(), the Kubeflow pytorch-dist-mnist example):
    print('Rank ', dist.get_rank(), ', epoch ', epoch, ': ', epoch_loss / num_batches) names no
    loss; it is the epoch's mean, a record at the epoch with the printing rank kept."""
    rows = [" ".join(map(str, ("Rank ", r, ", epoch ", e, ": ", 1.5 / (e + 1) + r / 100))) for e in (0, 1) for r in (0, 1)]
    recs, _ = parse("Downloading http://yann.lecun.com/exdb/mnist/train-images-idx3-ubyte.gz", "Done!", *rows)
    assert [(r["step"], r["loss"], r["extra"]["rank"]) for r in recs] == [
        (0, 1.5, 0), (0, 1.51, 1), (1, 0.75, 0), (1, 0.76, 1)]


def test_notebook_results_table_pasted_as_github_markdown_every_logged_step():
    """The notebook's live results table (transformers NotebookProgressCallback, unsloth's adds a
    column per logged metric, named as logged) pasted into a GitHub issue: " | " between the cells,
    "-- | --" under the header. Each row is a logged step; without a validation column no row is a
    carried-over loss, so equal losses in a row (a GRPO loss of 0) are each their own step."""
    header = "Step | Training Loss | reward | kl | rewards / match_format_exactly"
    rows = [f"{s} | {loss:.6f} | {-17.25 + s:.6f} | {s / 1e4:.6f} | 0.000000" for s, loss in
            ((1, 0.0), (2, -0.0), (3, 0.0), (4, 0.0001))]
    recs, p = parse(header, "-- | -- | -- | -- | --", *rows)
    assert [(r["step"], r["loss"], r["src"]) for r in recs] == [
        (1, 0.0, "hf_table"), (2, -0.0, "hf_table"), (3, 0.0, "hf_table"), (4, 0.0001, "hf_table")]
    assert p.stats.unparsed_lines == 0


def test_the_same_step_less_dict_on_the_next_line_is_one_logging_event():
    """Every node's rank 0 printing the Trainer's dicts with no label before them (FastChat's FSDP
    script on four nodes): the same dict on the very next line is another process's copy of one
    logging event, and the next step's dict is numbered after it; the same values further apart
    are a new step."""
    d1 = "{'loss': 2.3814, 'learning_rate': 0.0, 'epoch': 0.97}"
    d2 = "{'loss': 2.3701, 'learning_rate': 0.0, 'epoch': 0.98}"
    recs, _ = parse(d1, d1, d1, d1, d2, d2, "a message", d2)
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 2.3814), (2, 2.3701), (3, 2.3701)]


@pytest.mark.parametrize("labels", [("[Rank 0] ", "[Rank 1] "), ("(pid=65987) ", "(pid=65986) "),
                                    ("(RayTrainWorker pid=8, ip=10.0.0.2) ", "(RayTrainWorker pid=9, ip=10.0.0.3) ")])
def test_every_process_printing_its_own_step_lines_gives_the_first_ones_curve(labels):
    """Each rank of a loop that logs on every rank prints its own loss for the same steps
    (``print(f"[Rank {rank}] Step {step} loss={loss}")``, two Ray workers): the run's curve is the
    first process's, one record per step, whatever line the second process prints first."""
    first, second = labels
    recs, p = parse(f"{first}Step 0 loss=-3.37", f"{second}Step 0 loss=-2.67",
                    f"{second}Step 1 loss=-1.59", f"{first}Step 1 loss=0.0884",
                    f"{first}Step 2 loss=-2.74", f"{second}Step 2 loss=-0.47")
    assert [(r["step"], r["loss"]) for r in recs] == [(0, -3.37), (1, 0.0884), (2, -2.74)]
    assert p.stats.ignored_lines == 3


def test_a_launchers_rank_labels_still_give_every_ranks_records_with_their_rank():
    """torchrun's ``[defaultN]:`` / ``[rankN]:`` labels: each rank's records (the runner's
    ranks.json times each rank from them; its series keeps the first of each step)."""
    recs, _ = parse("[default0]:Step 0 loss=-3.37", "[default1]:Step 0 loss=-2.67",
                    "[default1]:Step 1 loss=-1.59", "[default0]:Step 1 loss=0.0884")
    assert [(r["step"], r["loss"], r["extra"]["rank"]) for r in recs] == [
        (0, -3.37, 0), (0, -2.67, 1), (1, -1.59, 1), (1, 0.0884, 0)]


@pytest.mark.parametrize("line, loss, grad_norm", [
    # pytracking (ltr/trainers/ltr_trainer.py: f"[{loader.name}: {epoch}, {i} / {n}] FPS: ..., " then
    # f"{name}: {val.avg:.5f}  ,  " for its stats "Loss/total", "Loss/bbox", ...)
    ("[train: 120, 20 / 125] FPS: 19.3 (29.0)  ,  Loss/total: 0.50075  ,  Loss/bbox: 0.03715  ,  "
     "grad_norm: 46.59342", 0.50075, 46.59342),
    ("[step 300] 2:31<6:50 train/loss/total=1163 train/grad_norms/summary/total=42.8 "
     "train/perf/step_time_s=0.342", 1163.0, 42.8),
    # GluonNLP run_squad.py: 'Loss span/answer/total={:.4f}/{:.4f}/{:.4f}'
    ("2020-07-11 00:37:18,464 - root - INFO - Epoch: 1, Batch: 3900/8164, Loss span/answer/total="
     "0.7729/0.1773/0.9502, LR=0.00001868, grad_norm=21.5925. Time cost=90.67", 0.9502, 21.5925),
])
def test_a_total_of_a_losss_parts_named_loss_first_is_the_loss(line, loss, grad_norm):
    (r,) = parse(line)[0]
    assert (r["loss"], r["grad_norm"]) == (loss, grad_norm)


def test_the_notebook_bar_printed_as_text_is_progress_not_a_step():
    """transformers' NotebookProgressBar outside a notebook prints its label as text (unsloth's
    issues paste it under the banner): a count, the times, the rate and the epoch, no metric."""
    recs, p = parse("==((====))==  Unsloth - 2x faster free finetuning | Num GPUs = 1",
                    "[ 22/290 02:50 < 38:04, 0.12 it/s, Epoch 0.36/5]", "[290/290 40:11, Epoch 5/5]")
    assert recs == [] and p.stats.ignored_lines >= 2


def test_mlx_reports_take_the_runs_iterations_as_max_steps():
    """mlx-lm's trainer prints f"Starting training..., iters: {args.iters}" before its reports."""
    recs, _ = parse("Starting training..., iters: 3000", "Iter 1: Val loss 2.480, Val took 0.732s",
                    "Iter 10: Train loss 2.363, Learning Rate 1.000e-05, It/sec 1.022, Tokens/sec 88.083")
    (r,) = recs
    assert (r["step"], r["loss"], r["max_steps"], r["lr"]) == (10, 2.363, 3000, 1e-05)


@pytest.mark.parametrize("method", ["ORPO", "DPO", "Online DPO", "PPO"])
def test_mlx_lm_lora_reports_take_the_iterations_its_trainer_names_its_method_before(method):
    """mlx-lm-lora's trainers print f"Starting {method} training..., iters: {args.iters}"
    (mlx_lm_lora/trainer/orpo_trainer.py, online_dpo_trainer.py, ...) before their reports."""
    recs, _ = parse(f"Starting {method} training..., iters: 500",
                    "Iter 1: Val loss 0.055, Val chosen reward -0.240, Val took 0.645s",
                    "Iter 10: Train loss 0.061, Chosen reward -0.206, Learning Rate 1.000e-05, It/sec 0.103")
    (r,) = recs
    assert (r["step"], r["loss"], r["max_steps"]) == (10, 0.061, 500)


def test_a_dict_glued_to_the_trainers_bar_takes_its_total_as_the_runs_steps():
    """The Hugging Face Trainer's dict glued to its bar (no newline between, LLaMA-Factory's log):
    the bar's count is the dict's step and its total the run's steps, as on their own lines."""
    recs, _ = parse("  0%|▏                                     | 1/249 [00:26<1:47:45, 26.07s/it]"
                    "{'loss': 60.5735, 'grad_norm': nan, 'learning_rate': 8.000000000000001e-06, 'epoch': 0.12}",
                    "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1.6000000000000003e-05, 'epoch': 0.24}")
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 60.5735), (2, 0.0)]
    assert recs[0]["max_steps"] == 249


def _llamafactory_step(n: int, lr: float, handler: str = "llamafactory.train.callbacks:157") -> list[str]:
    """LLaMA-Factory under LlamaBoard: the Trainer's bar at the logging step, its LogCallback's
    rounded restatement glued to it (callbacks.py ``LogCallback.on_log``, webui_mode), then the
    Trainer's own dict (its ProgressCallback runs after the user's callbacks)."""
    bar = f"  1%|█▍                                                        | {n}/6249 [08:38<11:33:05,  6.74s/it]"
    return [bar + f"[INFO|2024-12-08 01:10:34] {handler} >> {{'loss': 0.5000, 'learning_rate': {lr:2.4e}, 'epoch': 0.04}}",
            f"{{'loss': 0.5, 'grad_norm': 1.25, 'learning_rate': {lr!r}, 'epoch': 0.04}}"]


def test_llamafactorys_console_restatement_is_not_a_step_and_the_bar_before_it_counts():
    """LLaMA-Factory's LogCallback restates each log on stdout before the Trainer prints its dict:
    one record per step (the Trainer's, at the bar's count, with its lr unrounded), not two."""
    recs, p = parse(*_llamafactory_step(75, 4.998223113110496e-05), *_llamafactory_step(80, 4.9979783305842495e-05))
    assert [(r["step"], r["lr"], r["max_steps"]) for r in recs] == [
        (75, 4.998223113110496e-05, 6249), (80, 4.9979783305842495e-05, 6249)]


def test_llamaboards_running_log_restatements_are_its_records():
    """LlamaBoard's running_log.txt (its LoggerHandler: ``callbacks.py:N >>``) holds LogCallback's
    lines and no Trainer dict: each line is a record."""
    lines = [f"[INFO|2024-12-08 01:1{i}:34] callbacks.py:307 >> {{'loss': 0.{i}000, 'learning_rate': 4.9982e-05, "
             f"'epoch': 0.0{i}}}" for i in (3, 4)]
    recs, _ = parse(*lines)
    assert [r["loss"] for r in recs] == [0.3, 0.4]


def test_nnunet_v2_epoch_blocks_give_each_epochs_loss_and_learning_rate():
    """nnU-Net v2 (nnUNetTrainer.on_epoch_start / on_epoch_end): "Epoch N", "Current learning
    rate: X", then "train_loss", "val_loss" (an evaluation), "Pseudo dice", "Epoch time"."""
    t = "2024-04-26 09:4{}:10.910043: "
    lines = []
    for e, (lr, tl, vl) in enumerate(((0.01, 0.7088, 0.4628), (0.00999, 0.4043, 0.3847))):
        lines += [t.format(e) + f"Epoch {e}", t.format(e) + f"Current learning rate: {lr}",
                  "using pin_memory on device 0", t.format(e) + f"train_loss {tl}", t.format(e) + f"val_loss {vl}",
                  t.format(e) + "Pseudo dice [0.0, 0.0002]", t.format(e) + "Epoch time: 148.59 s"]
    recs, p = parse(*lines)
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(0, 0.7088, 0.01), (1, 0.4043, 0.00999)]
    assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(0, 0.4628), (1, 0.3847)]


def test_a_time_or_memory_word_at_the_end_of_a_name_with_colons_is_not_the_step_time():
    """RETURNN (torch/engine.py ``_print_process``) prints its batch's sizes as
    ``max_size:time 291200`` beside the step's own ``0.855 sec/step``: the step took 0.855 s."""
    (r,), _ = parse("ep 55 train, step 1347, ce 0.324, ctc_4 1.006, grad_norm:p2 3.388, num_seqs 27, "
                    "max_size:time 291200, max_size:aug_spatial 128, mem_usage:cuda:0 67.8GB, 0.855 sec/step, "
                    "elapsed 0:16:59, exp. remaining 0:03:45, complete 81.92%")
    assert (r["step"], r["step_time_s"]) == (1347, 0.855)


def test_the_line_after_test_error_is_the_evaluation_of_the_first_workers_run():
    """PyTorch's quickstart (``print(f"Test Error: \\n Accuracy: ...%, Avg loss: {test_loss:>8f} \\n")``)
    run by two Ray workers: each block's second line is an evaluation, the first worker's read."""
    recs, p = parse("(pid=65987) loss: 2.072397  [    0/60000]", "(pid=65986) loss: 2.128398  [ 6400/60000]",
                    "(pid=65987) loss: 2.118240  [ 6400/60000]", "(pid=65986) Test Error: ",
                    "(pid=65986)  Accuracy: 27.2%, Avg loss: 2.008141 ", "(pid=65987) Test Error: ",
                    "(pid=65987)  Accuracy: 27.6%, Avg loss: 2.004651 ")
    assert [(r["step"], r["loss"]) for r in recs] == [(0, 2.072397), (6400, 2.11824)]
    assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(6400, 2.004651)]
    assert not [m for m in p.marks if m["kind"] == "train_summary"]


def test_a_bar_drawn_at_the_step_a_text_line_just_gave_is_that_step_again():
    """mlx-vlm's trainer prints mlx's report, then its own dict, then sets its bar's postfix to
    the same step's values: one record per step (the report's)."""
    bar = "  1%|▊         | {n}/1000 [00:32<53:42,  3.25s/it, Loss={l}, LR=1.00e-04, Tokens/sec=302]"
    recs, _ = parse("Starting training..., iters: 1000",
                    "Iter 10: Train loss 3.438, Learning Rate 1.000e-04, It/sec 0.307, Tokens/sec 301.622",
                    "{'Step': 10, 'Loss': '3.4376', 'Learning Rate': '1.00e-04', 'Tokens/sec': '302'}",
                    bar.format(n=10, l=3.4376) + "Iter 20: Train loss 3.142, Learning Rate 1.000e-04, It/sec 0.283",
                    "{'Step': 20, 'Loss': '3.1416', 'Learning Rate': '1.00e-04', 'Tokens/sec': '303'}")
    assert [(r["step"], r["loss"], r["lr"], r["max_steps"]) for r in recs] == [
        (10, 3.438, 1e-04, 1000), (20, 3.142, 1e-04, 1000)]


def test_wenet_lines_of_every_rank_give_the_first_ranks_steps_in_either_argument_order():
    """WeNet's executor: 'TRAIN Batch {}/{} loss ... lr {:.8f} rank {}' with (epoch, batch_idx)
    since 2022, (batch_idx, num_total_batch) in 2021; every rank prints; 'CV Batch' lines are the
    validation's progress."""
    t = "2023-01-30 18:47:07,107 DEBUG TRAIN Batch {}/{} loss {} loss_att 10.9 loss_ctc 16.6 lr 0.00032621 rank {}"
    recs, _ = parse(t.format(4, 203700, 12.64, 0), t.format(4, 203700, 16.88, 1), t.format(4, 203800, 25.61, 0),
                    t.format(4, 203800, 18.34, 1),
                    "2023-01-30 18:49:55,773 DEBUG CV Batch 4/0 loss 28.5 loss_att 24.1 loss_ctc 38.7 history loss 27.9 rank 0")
    assert [(r["step"], r["loss"], r["epoch"], r["lr"]) for r in recs] == [
        (203700, 12.64, 4, 0.00032621), (203800, 25.61, 4, 0.00032621)]
    old = "2021-05-01 10:00:00,000 DEBUG TRAIN Batch {}/5000 loss {} loss_att 1.0 loss_ctc 2.0 lr 0.001 rank 0"
    recs, _ = parse(old.format(100, 3.5), old.format(200, 3.1), old.format(300, 2.9))
    assert [(r["step"], r["loss"]) for r in recs] == [(100, 3.5), (200, 3.1), (300, 2.9)]
    recs, _ = parse(t.format(4, 203700, 12.64, 0))   # a log of one line: read the later way
    assert [(r["step"], r["epoch"]) for r in recs] == [(203700, 4)]


def test_a_keras_bar_kept_by_a_syslog_daemon_with_its_control_characters_escaped():
    """rsyslog writes each control character as "#" and three octal digits (SageMaker's
    CloudWatch stream): the bar's carriage returns and backspaces are read as such, so the
    epoch's last redraw is the step, not "#0151/4" read as a count of 154."""
    line = ("#0151/4 [======>.......................] - ETA: 0s - loss: 521.6073" + "#010" * 63
            + "#0154/4 [==============================] - 0s 56ms/step - loss: 522.4297")
    recs, _ = parse("Epoch 1/30", line)
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(4, 522.4297, 120)]


def test_a_number_sign_before_digits_in_other_text_is_no_escape():
    recs, _ = parse("step 5, loss 1.25, see issue #0123", "step 6, loss 1.5")
    assert [(r["step"], r["loss"]) for r in recs] == [(5, 1.25), (6, 1.5)]


def test_two_processes_mpirun_tagged_chunks_on_one_line_are_two_lines():
    """mpirun --tag-output writes a process's chunk after its "[1,R]<stdout>:" tag; a chunk
    without its newline leaves the line open and the next process's tagged chunk follows it."""
    recs, _ = parse("[1,1]<stdout>:Train Epoch: 10 [10240/30000 (34%)]\tLoss: 0.121522"
                    "[1,0]<stdout>:Train Epoch: 10 [10240/30000 (34%)]\tLoss: 0.241982",
                    "[1,1]<stdout>:")
    assert [(r["step"], r["loss"], r["extra"].get("rank")) for r in recs] == [
        (10240, 0.121522, 1), (10240, 0.241982, 0)]


def test_cellposes_loss_test_is_the_evaluation_at_the_epoch():
    recs, p = parse("2022-01-05 21:36:32,809 [INFO] Epoch 190, Time 43354.3s, Loss 0.6758, Loss Test 0.3793, LR 0.2000",
                    "2022-01-05 22:14:13,626 [INFO] Epoch 200, Time 45615.1s, Loss 0.6738, Loss Test 0.3603, LR 0.2000")
    assert [(r["step"], r["loss"]) for r in recs] == [(190, 0.6758), (200, 0.6738)]
    assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(190, 0.3793), (200, 0.3603)]


def test_a_fairseq_progress_line_wrapped_after_its_commas_is_one_record():
    rows = ["| epoch 001 | training on xla:0/{d}:     41 / 4830 loss={l},",
            "nll_loss={l}, wps=945, ups=0, wpb=3986.024, bsz=128.000,",
            "num_updates=41, lr=5.22398e-06, gnorm=6.531, oom=0.000, wall=173,",
            "train_wall=21"]
    lines = [r.format(d=d, l=loss) for d, loss in ((4, 15.812), (6, 15.938)) for r in rows]
    recs, _ = parse(*lines)
    assert [(r["step"], r["loss"], r["grad_norm"]) for r in recs] == [(41, 15.812, 6.531), (41, 15.938, 6.531)]


@pytest.mark.parametrize("announce", [
    "[INFO|trainer.py:2136] 2024-07-17 00:18:20,685 >>   Total optimization steps = 1,048",
    "(TaskRunner pid=247607) Total training steps: 1048",
    "[2026-05-01 10:00:00,000] INFO sft_trainer.py:324 - Total training steps: 1048,",
    "(WorkerDict pid=249887) Total steps: 1048, num_warmup_steps: 0",
    "Number of steps/epoch 262, number of epochs 4, total number of steps 1048",
])
def test_the_run_length_a_framework_announces_is_the_max_steps_of_the_records_after_it(announce):
    """transformers' Trainer and veRL print the run's length before the first step (and then
    print records without a total): each record after it carries it."""
    recs, p = parse(announce,
                    "(TaskRunner pid=247607) step:1 - actor/pg_loss:-0.0036 - actor/grad_norm:0.2058 - actor/lr:1e-06",
                    "(TaskRunner pid=247607) step:2 - actor/pg_loss:0.0012 - actor/grad_norm:0.1931 - actor/lr:1e-06")
    assert [(r["step"], r["max_steps"], r["grad_norm"]) for r in recs] == [(1, 1048, 0.2058), (2, 1048, 0.1931)]


def test_verl_sft_lr_printed_in_thousandths_is_the_learning_rate():
    """veRL's FSDPSFTTrainer logs "train/lr(1e-3)": lr * 1e3."""
    recs, _ = parse("step:100 - train/loss:0.0592457540333271 - train/lr(1e-3):6.81934829863884e-05")
    (r,) = recs
    assert (r["step"], r["loss"]) == (100, 0.0592457540333271)
    assert r["lr"] == pytest.approx(6.81934829863884e-08)


def test_verl_restating_its_validation_metrics_is_no_second_evaluation():
    """``pprint(f"Initial validation metrics: {...}")`` (over quoted pieces behind Ray's label)
    and ``Final validation metrics: {...}`` restate the evaluation the ``step:N - val...`` line
    logs: one evaluation each, no record."""
    recs, p = parse(
        "(TaskRunner pid=247607) (\"Initial validation metrics: {'val-aux/char_count/reward/mean@1': \"",
        "(TaskRunner pid=247607)  \"0.121524201853759, 'val-aux/char_count/reward/mean@2': 0.0, \"",
        "(TaskRunner pid=247607)  \"'val-core/char_count/reward/mean@3': 0.0}\")",
        "(TaskRunner pid=247607) step:0 - val-aux/char_count/reward/mean@1:0.121524201853759 - val-core/char_count/reward/mean@3:0.0",
        "step:105 - train/loss:0.06290543079376221 - train/lr(1e-3):0.0",
        "step:105 - val/loss:0.058481086045503616",
        "Final validation metrics: {'val/loss': 0.058481086045503616}")
    evals = [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"]  # type: ignore[attr-defined]
    assert evals == [(0, None), (105, 0.058481086045503616)]
    assert [r["step"] for r in recs] == [105]


def test_an_evaluation_line_printed_again_later_in_the_run_is_the_same_evaluation():
    """A batch script reprinting the last evaluations of a run after it exits (modded-nanogpt's
    track 3 batch stdout): read once; the next seed's run, its own values, is read."""
    lines = [f"step:{s}/3040 val_loss:{v} train_time:{t}s step_avg:356.01ms" for s, v, t in
             ((3000, "3.27807", "1068.039"), (3040, "3.27569", "1081.882"))]
    _, p = parse(*lines, "=== seed 2 exit_status=0 end 2026-05-18T15:23:10+00:00 ===", *lines,
                 "step:125/3040 val_loss:4.51043 train_time:46.399s step_avg:371.19ms")
    evals = [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"]  # type: ignore[attr-defined]
    assert evals == [(3000, 3.27807), (3040, 3.27569), (125, 4.51043)]


def test_modded_nanogpt_final_model_evaluations_are_at_the_step_the_run_stopped():
    """parameter-golf's train_gpt.py (2026): ``N/T val_loss: X`` evaluations without ``step:``,
    the wall-clock stop, then the final model's evaluations (``diagnostic ...``, ``final_...``)
    at the step it stopped at, each ``_exact`` restatement no second one, the data sizes none."""
    recs, p = parse(
        "val_tokens: 47851520",
        "0/20000 val_loss: 9.0076 val_bpb: 4.1159",
        "1/20000 train_loss: 9.0087 train_time: 0.0m tok/s: 11886047",
        "4500/20000 train_loss: 2.2830 train_time: 8.8m tok/s: 6671956",
        "4942/20000 val_loss: 2.3534 val_bpb: 1.0754",
        "stopping_early: wallclock_cap train_time: 592054ms step: 4942/20000",
        "diagnostic quantized val_loss:2.34961297 val_bpb:1.07361172 eval_time:72951ms",
        "final_int8_zlib_roundtrip val_loss:1.9294 val_bpb:1.1427 eval_time:168421ms",
        "final_int8_zlib_roundtrip_exact val_loss:1.92941613 val_bpb:1.14271194")
    evals = [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"]  # type: ignore[attr-defined]
    assert evals == [(0, 9.0076), (4942, 2.3534), (4942, 2.34961297), (4942, 1.9294)]
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(1, 9.0087, 20000), (4500, 2.283, 20000)]


def test_a_nemo_progress_printer_line_wrapped_into_rows_is_one_record():
    """NeMo 2's ProgressPrinter never ends its line with ``|`` (it prints ``' | {metric}: {val}'``
    per metric): a row that does was cut, and the rows of ``name: value`` pairs after it are its rest."""
    recs, p = parse("Training epoch 1, iteration 10/999 | lr: 4.498e-06 | global_batch_size: 512 | ",
                    "global_step: 29 | reduced_train_loss: 11.03 | train_step_timing in s: 46.84 | ",
                    "consumed_samples: 15360",
                    "Training epoch 1, iteration 11/999 | lr: 4.647e-06 | global_batch_size: 512 | global_step: 30 | "
                    "reduced_train_loss: 11.02 | train_step_timing in s: 46.85 | consumed_samples: 15872")
    assert [(r["step"], r["loss"], r["lr"], r["step_time_s"]) for r in recs] == [
        (29, 11.03, 4.498e-06, 46.84), (30, 11.02, 4.647e-06, 46.85)]
    assert p.stats.unparsed_lines == 0


def test_ms_swift_train_bar_total_is_the_max_steps_of_the_dicts_after_it():
    """ms-swift's ``tqdm(desc='Train', total=state.max_steps)``: its 2.x dicts name only their
    ``'global_step'``; the ones after the bar are steps of a 93-step run."""
    recs, _ = parse(
        "{'loss': 0.99205322, 'acc': 0.73348026, 'grad_norm': 1.1640625, 'learning_rate': 4.886e-05, "
        "'memory(GiB)': 19.46, 'train_speed(iter/s)': 0.224141, 'epoch': 0.54, 'global_step': 50}",
        "Train:  54%|███████████████████████████████████▍                              | 50/93 [03:42<03:19,  4.64s/it]",
        "{'loss': 0.98644152, 'acc': 0.73600368, 'grad_norm': 2.0625, 'learning_rate': 4.318e-05, "
        "'memory(GiB)': 20.5, 'train_speed(iter/s)': 0.220983, 'epoch': 0.59, 'global_step': 55}")
    assert [(r["step"], r["max_steps"]) for r in recs] == [(50, None), (55, 93)]


def test_the_trainers_announced_total_is_the_max_steps_of_its_dicts():
    """transformers' Trainer logs ``Total optimization steps = N`` before its step-less dicts."""
    recs, _ = parse("[INFO|trainer.py:2136] 2024-07-17 00:18:20,685 >>   Total optimization steps = 97",
                    "{'loss': 2.9859, 'grad_norm': 0.9704080820083618, 'learning_rate': 4.175257731958763e-05, 'epoch': 0.16}")
    assert [(r["loss"], r["max_steps"]) for r in recs] == [(2.9859, 97)]


def _rsl_rl_report(it: int, total: int, rows: list[str], footer: list[str]) -> list[str]:
    """rsl_rl's console report of one iteration (rsl_rl/utils/logger.py ``Logger.log``): a rule of
    "#", the bold centred header, a blank line, the right-aligned rows, a rule of "-", the footer."""
    head = f"\x1b[1m{f' Learning iteration {it}/{total} '.center(80)}\x1b[0m "
    return ["#" * 80, head, "", *[f"{r.split(': ')[0] + ':':>40} {r.split(': ')[1]}" for r in rows],
            "-" * 80, *[f"{r.split(': ')[0] + ':':>40} {r.split(': ')[1]}" for r in footer]]


def test_rsl_rl_iteration_reports_are_one_record_each_at_their_iteration():
    """Each ``Learning iteration N/M`` report is one record at N (the iteration every value is
    written at), its total the run's; the losses and rewards under rsl_rl's own names, none of
    them "the" loss; the footer's iteration time the step time."""
    lines = []
    for it, value_loss in ((3, 0.4399), (4, 0.4102)):
        lines += _rsl_rl_report(it, 1500, [
            "Total steps: 1769472 ", "Steps per second: 65606 ", "Collection time: 1.219s ",
            "Learning time: 0.279s ", f"Mean value loss: {value_loss}", "Mean surrogate loss: -0.0076",
            "Mean reward: -68.47", "Mean episode length: 420.57", "Mean action std: 1.23",
            "Episode_Reward/joint_power: -0.0020"],
            ["Iteration time: 1.50s", "Time elapsed: 00:00:09", "ETA: 00:37:20"])
    recs, p = parse(*lines)
    assert [(r["step"], r["max_steps"], r["loss"], r["step_time_s"]) for r in recs] == [
        (3, 1500, None, 1.5), (4, 1500, None, 1.5)]
    extra = recs[1]["extra"]
    assert extra["Loss/value"] == 0.4102 and extra["Train/mean_reward"] == -68.47
    assert extra["Episode_Reward/joint_power"] == -0.002 and "Total steps" not in extra
    assert p.stats.formats["rsl_rl"] == 2


def test_an_rsl_rl_value_printed_with_thousands_separators_is_read():
    """A row whose number has thousands separators (``1,234.5``: the number every reader of a
    line's text takes, ``formats._NUM``) is read as the number, and the iteration's other rows
    with it (``float`` of it raised: the row was lost)."""
    lines = _rsl_rl_report(7, 1500, ["Computation: 46,045 steps/s (collection: 0.975s, learning 0.092s)",
                                     "Mean reward: 1,234.50", "Mean value loss: 0.4102"],
                           ["Iteration time: 1.50s", "ETA: 00:37:20"])
    recs, _ = parse(*lines)
    assert [r["step"] for r in recs] == [7]
    extra = recs[0]["extra"]
    assert extra["Perf/total_fps"] == 46045.0 and extra["Train/mean_reward"] == 1234.5
    assert extra["Loss/value"] == 0.4102


def test_rsl_rl_1x_report_and_a_report_cut_before_its_footer():
    """rsl_rl 1.x (``OnPolicyRunner.log``): ``Computation: N steps/s (collection: ..)`` and
    ``Value function loss:`` rows; a report whose footer the log does not hold still gives its
    record when the next report begins or the log ends."""
    old = ["#" * 80, "                   Learning iteration 156025/10000000                   ", "",
           "                       Computation: 46045 steps/s (collection: 0.975s, learning 0.092s)",
           "               Value function loss: 736518.8656",
           "                    Surrogate loss: -0.0096",
           "                       Mean reward: 4006.23"]
    recs, _ = parse(*old, *old[:2], "", "               Value function loss: 12.5")
    assert [(r["step"], r["max_steps"]) for r in recs] == [(156025, 10000000), (156025, 10000000)]
    assert recs[0]["extra"]["Loss/value_function"] == 736518.8656
    assert recs[0]["extra"]["Perf/total_fps"] == 46045.0


def test_a_bar_pasted_into_a_markdown_table_behind_a_viewers_time_column():
    """A log viewer's rows copied into a GitHub table: ``date | line`` under ``-- | --``, each pipe
    of the text escaped (``\\|``), each tqdm redraw on its own row. The bars are read as bars:
    one record per count, with the loss ``set_postfix`` gave it."""
    rows = ["2021/08/16 14:12:09 |  ", "-- | --"]
    for n, (old, new) in ((5, (None, 1.11)), (10, (1.11, 1.06))):
        pct = round(100 * n / 74)
        rows.append(f"2021/08/16 14:12:1{n // 5} | Epoch 0: {pct}%\\|##3 \\| {n}/74 [00:01<00:10, 5.5it/s"
                    + ("" if old is None else f", loss={old}, v_num=3") + "]")
        rows.append(f"2021/08/16 14:12:1{n // 5} | Epoch 0: {pct}%\\|##3 \\| {n}/74 [00:01<00:10, 5.5it/s, "
                    f"loss={new}, v_num=3]")
    recs, _ = parse(*rows)
    assert [(r["step"], r["loss"]) for r in recs] == [(5, 1.11), (10, 1.06)]


def test_a_backslash_before_a_pipe_outside_a_bar_stays():
    """Only a line holding a bar's escaped pipe (``%\\|``) is read as a markdown table's row
    (``unescape_markdown_pipes``, through ``terminal_bytes``, where every raw line starts): a
    backslash before a pipe in other text stays as printed."""
    line = b"step 10 | loss 2.5 | note a\\|b"
    assert unescape_markdown_pipes(line) == line
    assert terminal_bytes(line) == line
    assert terminal_bytes(b"Epoch 0: 7%\\|##3 \\| 5/74") == b"Epoch 0: 7%|##3 | 5/74"
    recs, _ = parse("step 10 | loss 2.5 | note a\\|b", "step 20 | loss 2.25 | note a\\|b")
    assert [(r["step"], r["loss"]) for r in recs] == [(10, 2.5), (20, 2.25)]


def test_an_argument_dict_pretty_printed_over_its_lines_is_no_record():
    """``pprint(vars(args))`` puts one item a line (``{'batch_size': 32,`` / `` 'epoch': 300.0,``
    ... ``'workers': 10}``): an argument dump, not a logged dict, and no line of it an evaluation
    (``'valid_ratio': 0.1``); the epoch lines after it are read from epoch 1."""
    items = ["'atom_fea_len': 64", "'batch_size': 32", "'device': device(type='cpu')", "'epoch': 300.0",
             "'learning_rate': 0.001", "'test_ratio': 0.1", "'valid_ratio': 0.1", "'workers': 10"]
    dump = ["{" + items[0] + ","] + [" " + i + "," for i in items[1:-1]] + [" " + items[-1] + "}"]
    recs, p = parse("2025-07-07 13:50:09.941 INFO: Parsed arguments:", *dump,
                    "2025-07-07 13:55:26.649 INFO: Epoch [001/300] - Train Loss: 145.13359, Valid Loss: 70.66399, LR: [0.001]",
                    "2025-07-07 13:56:30.354 INFO: Epoch [002/300] - Train Loss: 71.42647, Valid Loss: 58.69089, LR: [0.001]")
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 145.13359), (2, 71.42647)]
    assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(1, 70.66399), (2, 58.69089)]


def test_a_dict_pretty_printed_over_its_lines_with_the_loops_own_loss_is_a_record():
    """A logged dict pretty-printed one item a line whose only loss is under the loop's own name
    (a diffusers script's ``noise_step_loss``, ``records.sole_own_loss``) is the step's record, the
    one the dict printed on one line gives, not an argument dump."""
    items = ["'epoch': 0", "'lr': 0.0001", "'noise_step_loss': 0.1834", "'step': 40"]
    dump = ["{" + items[0] + ","] + [" " + i + "," for i in items[1:-1]] + [" " + items[-1] + "}"]
    recs, _ = parse(*dump)
    assert [(r["step"], r["extra"]) for r in recs] == [(40, {"noise_step_loss": 0.1834})]
    assert recs == parse("{" + ", ".join(items) + "}")[0]


def test_a_dict_cut_by_the_terminal_still_joins_its_rest():
    recs, _ = parse("{'loss': 1.25, 'grad_norm': 0.5,", " 'learning_rate': 1e-05,", " 'epoch': 0.1}")
    assert [(r["loss"], r["lr"]) for r in recs] == [(1.25, 1e-05)]


@pytest.mark.parametrize("column", [
    "finetune.training.trainer:train:469 - ",      # loguru's default format
    "__main__:<module>:12 | ",                      # a format keeping the column, ending it with " | "
])
@pytest.mark.parametrize("mark", ["", "✅ ", "🚀 "])
def test_loguru_columns_and_a_pictograph_before_the_message(column, mark):
    recs, _ = parse(*(f"2025-09-20 22:31:{25 + s}.227 | INFO     | {column}{mark}Step {s}: loss={loss}"
                      for s, loss in ((1, 10.2313), (2, 5.2867))))
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 10.2313), (2, 5.2867)]


def test_stable_baselines_2_off_policy_table_takes_its_steps_row_as_the_step():
    """stable-baselines 2's DQN/SAC/TD3 (and OpenAI baselines' deepq) table every log_interval
    episodes: ``logger.record_tabular("steps", self.num_timesteps)`` beside the episodes and the
    mean reward, no loss."""
    def table(steps: int, episodes: int, reward: float) -> list[str]:
        rows = [("% time spent exploring", "2"), ("episodes", str(episodes)),
                ("mean 100 episode reward", str(reward)), ("steps", str(steps))]
        return ["-" * 38, *[f"| {k:<23} | {v:<8} |" for k, v in rows], "-" * 38]
    recs, _ = parse(*table(1841, 100, -59.7), *table(2452, 200, -15.3))
    assert [(r["step"], r["loss"]) for r in recs] == [(1841, None), (2452, None)]


def test_a_json_dict_pasted_one_key_a_line_with_its_loss_is_a_record():
    """The same join for a JSON dict (Detectron's training stats) holding the loss: a record."""
    recs, _ = parse('{"accuracy_cls": 0.923639,', '  "iter": 120000,', '  "loss": 0.562384,',
                    '  "loss_bbox": 0.107754,', '  "lr": 0.010000,', '  "time": 0.562685}')
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(120000, 0.562384, 0.01)]


def test_a_first_line_whose_stamp_lost_its_first_digits_is_read_like_the_rest():
    """A paste whose selection began one character late ("025-06-18 00:36:02 [INFO] ..."): the
    first epoch line is read as the others are, not as a shape of its own that turns the
    following lines into summaries of it."""
    lines = [f"{'2' if e > 2 else ''}025-06-18 00:36:0{e} [INFO] [Epoch {e}/300] Duration: 0.45s | Train Loss: {30 - e}.5"
             for e in range(2, 6)]
    recs, _ = parse(*lines)
    assert [(r["step"], r["loss"]) for r in recs] == [(2, 28.5), (3, 27.5), (4, 26.5), (5, 25.5)]


def test_python_loggings_basic_format_takes_one_logger_name_not_the_messages_first_word():
    """``logging.basicConfig``'s ``%(levelname)s:%(name)s:%(message)s``: after ``INFO:root:`` the
    message begins, so ``epoch: 1 - current lr: 0.0001`` keeps its ``epoch`` (an lr line with no
    step counter, no record after the step-500 record) and ``epoch[1]`` names the record's epoch."""
    recs, _ = parse("INFO:root:epoch[1] - iteration[500/685] loss: 0.145",
                    "INFO:root:epoch: 1 - current lr: 0.0001",
                    "INFO:root:epoch[2] - iteration[500/685] loss: 0.121")
    assert [(r["step"], r["loss"], r["epoch"]) for r in recs] == [(500, 0.145, 1), (1185, 0.121, 2)]


def test_a_duration_per_step_in_parentheses_after_the_loss_is_the_step_time():
    """TensorFlow slim's ``'global step %d: loss = %.4f (%.3f sec/step)'``: the parenthesized
    value is the step's time, not the loss's running mean (a plain ``(0.95)`` after it would be)."""
    recs, _ = parse("global step 1: loss = 79.3501 (57.126 sec/step)", "global step 2: loss = 72.8609 (1.126 sec/step)")
    assert [(r["step"], r["loss"], r["step_time_s"]) for r in recs] == [(1, 79.3501, 57.126), (2, 72.8609, 1.126)]


def test_the_trainers_last_logged_dict_is_at_max_steps_not_one_before():
    """transformers 5.19.0's Trainer with logging_steps 2, max_steps 40 (a script of one's own under
    `moeconsole run`; the file keeps every redraw of the bar): ProgressCallback.on_step_end updates
    the bar to 40/40 before on_log writes the last dict. A finished bar was no count, so the dict
    took the bar's 39 and the run ended SUCCEEDED at "step 39/40 (97.5%)"."""
    clear = "\r" + " " * 47 + "\r"
    bar = lambda n, rate: f"{100 * n // 40:3d}%|{'█' * (n // 4):<10}| {n}/40 [01:0{n % 10}<00:0{n % 10}, {rate}]"  # noqa: E731
    recs, _ = parse(
        "\r".join(bar(n, "1.14s/it") for n in (37, 38)) + clear + "{'loss': '3.868', 'grad_norm': '0.7726', "
        "'learning_rate': '7.5e-05', 'epoch': '1.188'}",
        "\r" + bar(38, "1.14s/it") + "\r" + bar(39, "1.09it/s") + "\r" + bar(40, "1.00s/it") + clear
        + "{'loss': '3.886', 'grad_norm': '0.7277', 'learning_rate': '2.5e-05', 'epoch': '1.25'}",
        "100%|██████████| 40/40 [01:10<00:00,  1.00s/it][transformers] Saving model checkpoint to out/checkpoint-40",
        clear + "{'train_runtime': '70.37', 'train_samples_per_second': '4.547', 'train_loss': '3.902', 'epoch': '1.25'}")
    assert [(r["step"], r["max_steps"], r["loss"]) for r in recs] == [(38, 40, 3.868), (40, 40, 3.886)]
    # a finished bar never seen running (a tokenizer's, before training) is still no count
    recs, _ = parse("100%|██████████| 5000/5000 [00:01<00:00, 3012.11it/s]", "{'loss': 2.5, 'epoch': 0.01}")
    assert [r["step"] for r in recs] == [1]


def test_mxnet_speedometers_batch_range_counts_to_its_end():
    """MXNet's ``Speedometer`` (python/mxnet/callback.py) prints 'Epoch[%d] Batch [%d-%d]\\tSpeed:
    %.2f samples/sec' + '\\t%s=%f' per metric with (epoch, count - frequent, count), or 'Batch
    [0-%d]' when the metric keeps accumulating: the step is the range's end, not its start."""
    reset = ["Epoch[0] Batch [%d-%d]\tSpeed: %.2f samples/sec\t%s=%f" % (c - 20, c, 6.3, "Loss", loss)
             for c, loss in ((20, 55.3), (40, 24.3), (60, 21.2))]
    recs, _ = parse(*reset)
    assert [(r["step"], r["loss"]) for r in recs] == [(20, 55.3), (40, 24.3), (60, 21.2)]
    kept = ["Epoch[0] Batch [0-%d]\tSpeed: %.2f samples/sec\t%s=%f" % (c, 6.3, "accuracy", acc)
            for c, acc in ((50, 0.5), (100, 0.6))]
    recs, _ = parse(*kept)
    assert [r["step"] for r in recs] == [50, 100]


def test_monai_stats_handler_lines_count_the_epochs_before():
    """MONAI's ignite ``StatsHandler`` prints f"Epoch: {epoch}/{max_epochs}, Iter: {i}/{epoch_length}
    --" with i = (iteration - 1) % epoch_length + 1 and ignite's epochs from 1: the step is the
    run's iteration, (epoch - 1) x epoch_length + i; behind MONAI Label's log columns too
    ("[%(asctime)s] [%(process)s] [%(threadName)s] [%(levelname)s] (%(name)s:%(lineno)d) - ")."""
    line = "Epoch: {}/10, Iter: {}/4 -- train_loss: {:.4f} "
    recs, _ = parse(*(line.format(e, i, 1 / (4 * e + i)) for e in (2, 3) for i in (1, 4)))
    assert [(r["step"], r["max_steps"]) for r in recs] == [(5, 40), (8, 40), (9, 40), (12, 40)]
    label = "[2023-04-08 05:40:27,016] [42292] [MainThread] [INFO] (ignite.engine.engine.SupervisedTrainer:272) - "
    recs, _ = parse(label + line.format(2, 1, 2.3614), label + line.format(2, 2, 1.3128))
    assert [(r["step"], r["loss"], r["extra"]) for r in recs] == [(5, 2.3614, {}), (6, 1.3128, {})]


def test_ai_toolkit_bar_postfix_of_spaced_name_value_pairs():
    """ai-toolkit (jobs/process/BaseSDTrainProcess.py) sets its bar's postfix as one string,
    f"lr: {lr:.1e}" then f" {key}: {value:.3e}" per loss, no commas: every pair is read."""
    bar = "my_lora:  {:2d}%|{:<10}| {}/300 [00:10<01:30,  2.16s/it, lr: {:.1e} loss: {:.3e}]"
    recs, _ = parse(bar.format(10, "#", 30, 1e-4, 0.45), bar.format(20, "##", 60, 1e-4, 0.5226))
    assert [(r["step"], r["max_steps"], r["loss"], r["lr"]) for r in recs] == [(30, 300, 0.45, 1e-4), (60, 300, 0.5226, 1e-4)]


def test_ultralytics_rows_behind_the_prefix_their_header_is_behind():
    """A YOLO training pasted in a markdown quote: the header ``>       Epoch    GPU_mem ...`` was
    read behind its "> ", its rows were not (every epoch lost)."""
    head = ("%11s" * 7) % ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances", "Size")
    row = lambda e: (("%11s" * 2 + "%11.4g" * 5) % (f"{e}/20", "8.07G", 1.674, 1.257, 1.646, 23, 512)  # noqa: E731
                     + ": 100% ━━━━━━━━━━━━ 86/86 1.5it/s 56.2s")
    recs, _ = parse("> " + head, "> " + row(13), "> ", "> " + head, "> " + row(14))
    assert [(r["step"], r["mem_gib"]) for r in recs] == [(1118, 8.07), (1204, 8.07)]


def test_an_ellipsis_after_a_name_is_not_part_of_it():
    """diffusers' Flax trainers print f"Epoch... ({epoch + 1}/{num_train_epochs} | Loss: {loss})"
    once an epoch: the epoch is the step, its total the run's length."""
    recs, _ = parse(*(f"Epoch... ({e}/116 | Loss: {0.2 - e / 1000})" for e in (1, 2, 3)))
    assert [(r["step"], r["max_steps"], r["loss"]) for r in recs] == [(1, 116, 0.199), (2, 116, 0.198), (3, 116, 0.197)]


def test_vggts_loss_objective_is_the_loss_its_parts_extras():
    """VGGT's trainer steps on loss_dict["objective"], logged as ``Loss/train_loss_objective``
    beside each part (``Loss/train_loss_camera``, ...), with its running mean in parentheses."""
    line = ("Train Epoch: [0][{:7d}/1000000] | Batch Time: 5.8885 (17.3034) | Loss/train_loss_objective: {} (0.5681)"
            " | Loss/train_loss_camera: 0.0325 (0.0331) | Grad/depth: 21.6013 (23.1640)")
    recs, _ = parse(line.format(9, "0.8389"), line.format(10, "-0.0005"))
    assert [(r["step"], r["loss"], r["extra"]["Loss/train_loss_camera"]) for r in recs] == [(9, 0.8389, 0.0325), (10, -0.0005, 0.0325)]


def test_chainer_print_report_rows_are_read_by_their_columns():
    """chainer's ``PrintReport``: a header of the entries each padded to max(10, len), two blanks
    between; a row of '{:<Wg}  ' cells, ' ' * (W + 2) where the observation lacks the entry, a long
    value pushing the cells after it right. ESPnet1 prints its rows behind '\\033[J' (and its
    ProgressBar's '\\033[4A'), pasted as the text ``ESC[J`` or ``^[[J``: read all the same. The
    validation entries are the evaluation at the row's iteration."""
    names = ["epoch", "iteration", "main/loss", "main/acc", "validation/main/loss", "elapsed_time"]
    widths = [max(10, len(n)) for n in names]
    header = "  ".join(("{:%d}" % w for w in widths)).format(*names)

    def row(obs: dict) -> str:
        return "".join(("{:<%dg}  " % w).format(obs[n]) if n in obs else " " * (w + 2)
                       for n, w in zip(names, widths))

    recs, parser = parse(
        header,
        "ESC[J" + row({"epoch": 0, "iteration": 100, "main/loss": 626.687, "main/acc": 0.0005378, "elapsed_time": 113.983}),
        "     total [..................................................]  0.00%",
        "       100 iter, 0 epoch / 100 epochs",
        "^[[4A^[[J" + row({"epoch": 0, "iteration": 200, "main/loss": 674.456, "main/acc": 0.000203394,
                           "elapsed_time": 152.658}),
        "\x1b[J" + row({"epoch": 1, "iteration": 300, "main/loss": 585.188, "main/acc": 0.012,
                        "validation/main/loss": 601.5, "elapsed_time": 190.1}))
    assert [(r["step"], r["loss"], r["extra"]["main/acc"]) for r in recs] == [
        (100, 626.687, 0.0005378), (200, 674.456, 0.000203394), (300, 585.188, 0.012)]
    assert [(m["step"], m["loss"]) for m in parser.marks if m["kind"] == "eval"] == [(300, 601.5)]


def test_keras_epochs_with_the_same_validation_loss_are_each_an_evaluation():
    """Keras runs the validation at each epoch's end and prints its ``val_`` logs on the epoch's
    final bar line: a converged run's ``val_loss: 0.0265`` three epochs running is three
    evaluations, not one restated (only the first was given)."""
    bar = "100/100 [==============================] - 1s 5ms/step - loss: 0.0266 - accuracy: 0.9983 - val_loss: 0.0265 - val_accuracy: 0.9983"
    lines = [x for e in (1, 2, 3) for x in (f"Epoch {e}/3", bar)]
    recs, parser = parse(*lines)
    assert [r["step"] for r in recs] == [100, 200, 300]
    assert [(m["step"], m["loss"]) for m in parser.marks if m["kind"] == "eval"] == [(100, 0.0265), (200, 0.0265), (300, 0.0265)]


def test_dpo_and_halos_train_stats_after_a_count_are_the_step_record():
    """The DPO reference trainer (``train stats after N examples: {...}``) and HALOs (``... after
    N steps: {...}``) print the step's mean metrics behind the count: the dict is the record,
    its step 'counters/updates', its loss 'loss/train', its lr 'counters/lr' (formatted_dict's
    floats as quoted strings)."""
    recs, p = parse(
        "train stats after 64 examples: {'rewards_train/chosen': '0.25', 'loss/train': '0.69315', "
        "'grad_norm': '12.5', 'examples_per_second': '3.2', 'counters/examples': 64, 'counters/updates': 1}",
        "train stats after 2 steps: {'loss/train': '0.5', 'grad_norm': '1784', "
        "'counters/examples': 32, 'counters/updates': 2, 'counters/lr': '1e-06'}")
    assert [(r["step"], r["loss"], r["grad_norm"], r["lr"]) for r in recs] == [
        (1, 0.69315, 12.5, None), (2, 0.5, 1784.0, 1e-06)]
    assert p.stats.unparsed_lines == 0


def test_halos_train_stats_wrapped_by_the_terminal_inside_names_are_one_record_each():
    """HALOs' ``train stats after N steps: {...}`` a terminal wrapped at 88 columns (the first
    row's width counted with the prefix), cut inside names and numbers: each dict is one record."""
    rows = ("train stats after 1 steps: {'rewards_train/rewards': '0', 'rewards_train/weighted_advant",
            "age': '0', 'rewards_train/KL': '0', 'loss/train': '0', 'grad_norm': '0', 'examples_per_s",
            "econd': '1.9262', 'counters/examples': 16, 'counters/updates': 1, 'counters/lr': '1e-06'",
            "}" + " " * 87,
            "train stats after 2 steps: {'rewards_train/rewards': '0.8125', 'rewards_train/weighted_a",
            "dvantage': '0', 'rewards_train/KL': '0', 'loss/train': '0', 'grad_norm': '1784', 'exampl",
            "es_per_second': '36.225', 'counters/examples': 32, 'counters/updates': 2, 'counters/lr':",
            " '1e-06'}" + " " * 79)
    recs, p = parse(*rows)
    assert [(r["step"], r["loss"], r["grad_norm"]) for r in recs] == [(1, 0.0, 0.0), (2, 0.0, 1784.0)]
    assert recs[1]["extra"]["examples_per_second"] == 36.225


def test_a_line_of_settings_naming_gradient_accumulation_is_no_record():
    """``BS 16, 1 GPU, GroupSize 8, GradAcc 1`` (a run's settings above its log): "GradAcc" is
    gradient accumulation, not an accuracy, so the line names no metric and is no step."""
    recs, _ = parse("BS 16, 1 GPU, GroupSize 8, GradAcc 1", "step 1 | loss 2.5 | acc 0.4")
    assert [(r["step"], r["loss"], r["extra"].get("acc")) for r in recs] == [(1, 2.5, 0.4)]


def test_a_diffusers_scripts_step_loss_in_the_bar_is_the_loss():
    """The diffusers example scripts print logs = {"step_loss": ..., "lr": ...} in their bar's
    postfix (progress_bar.set_postfix(**logs)): the step's loss, whichever comes first."""
    recs, _ = parse("Steps:  10%|█         | 50/500 [00:30<04:30,  1.66it/s, lr=0.0001, step_loss=0.123]",
                    "Steps:  10%|█         | 51/500 [00:31<04:29,  1.66it/s, step_loss=0.101, lr=0.0001]")
    assert [(r["step"], r["loss"], r["lr"], r["max_steps"]) for r in recs] == [
        (50, 0.123, 0.0001, 500), (51, 0.101, 0.0001, 500)]


def test_finetrainers_global_avg_loss_is_the_loss_not_the_max():
    """finetrainers: logs["global_avg_loss"] (the ranks' mean) and logs["global_max_loss"]
    (their max) in the bar's postfix; the mean is the step's loss."""
    recs, _ = parse("Training steps:   0%|▎      | 8/5000 [00:37<2:26:53,  1.77s/it, grad_norm=0.034, "
                    "global_avg_loss=1.33, global_max_loss=1.52]")
    (r,) = recs
    assert (r["step"], r["loss"], r["grad_norm"], r["max_steps"]) == (8, 1.33, 0.034, 5000)


def test_simpletuner_bar_named_by_its_epoch_counts_the_run():
    """SimpleTuner's bar runs over range(max_train_steps) with the description
    f"Epoch {e}/{E}, Steps": its count is the global step and its total the run's length."""
    recs, _ = parse(
        "Epoch 11/100, Steps:  20%|█▉    | 4680/22900 [6:56:13<39:34:26,  7.82s/it, lr=1.5e-6, step_loss=0.157]",
        "Epoch 12/100, Steps:  22%|██▍   | 5040/22900 [7:37:48<27:18:55,  5.51s/it, lr=1.5e-6, step_loss=0.147]")
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(4680, 0.157, 22900), (5040, 0.147, 22900)]


def test_dinov2_metric_logger_behind_its_glog_like_prefix():
    """DINOv2's logger writes "I20250119 10:05:11 90 dinov2 helpers.py:102] " (the process id
    90 is no step) before its MetricLogger's "Training  [     40/5000000]  ..." line."""
    line = ("I20250119 10:05:{s} 90 dinov2 helpers.py:102] Training  [{i:>7}/5000000]  eta: 221 days, 20:36:05  "
            "lr: 0.0001 (0.0000)  wd: 0.0400 (0.0400)  total_loss: {l} ({l})  koleo_loss: inf (inf)  "
            "time: 1.576891  data: 0.000217  max mem: 67339")
    recs, _ = parse(line.format(s=11, i=40, l="12.5"), line.format(s=26, i=50, l="inf"))
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(40, 12.5, 5000000), (50, float("inf"), 5000000)]
    assert recs[0]["lr"] == 0.0001


def test_basicsr_message_logger_one_term_is_the_loss_several_are_parts():
    """BasicSR's MessageLogger prints its model's loss terms (the total is not logged): one term
    is the loss, a GAN's several are not; the old '<epoch:..., iter:...> psnr:' is validation."""
    recs, p = parse(
        "2022-12-29 10:43:28,986 INFO: [Retin..][epoch:  8, iter:     500, lr:(2.000e-04,)] "
        "[eta: 6:29:14, time (data): 0.141 (0.001)] l_pix: 1.0436e-01 ",
        "2022-12-29 10:44:45,100 INFO: [Retin..][epoch: 16, iter:   1,000, lr:(2.001e-04,1.000e-04,)] "
        "[eta: 6:22:59, time (data): 0.142 (0.001)] l_pix: 1.0709e-01 ",
        "19-08-09 08:23:24.709 - INFO: <epoch: 86, iter: 107,000> psnr: 1.3831e+01",
        "19-08-09 08:25:25.996 - INFO: <epoch: 86, iter: 107,200, lr:2.500e-05> l_g_pix: 1.4819e-03 "
        "l_g_gan: 7.2056e-02 l_d_real: 1.4378e-05 D_fake: -4.0036e+01 ")
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [
        (500, 0.10436, 0.0002), (1000, 0.10709, 0.0002001), (107200, None, 2.5e-05)]
    assert recs[0]["step_time_s"] == 0.141
    assert [m["step"] for m in p.marks if m["kind"] == "eval"] == [107000]


def test_wekws_train_batch_lines_without_a_rank_are_steps():
    """wekws prints WeNet's line without its rank and lr: 'TRAIN Batch {epoch}/{batch_idx}
    loss {:.8f} acc {:.8f}', its lr once an epoch before."""
    recs, _ = parse("2026-05-09 04:05:51,725 INFO Epoch 78 TRAIN info lr 1e-06",
                    "2026-05-09 04:06:09,511 DEBUG TRAIN Batch 78/0 loss 25.70108604 acc 0.00000000",
                    "2026-05-09 04:06:13,818 DEBUG TRAIN Batch 78/10 loss 28.96673203 acc 0.00000000",
                    "2026-05-09 04:10:57,296 DEBUG CV Batch 78/20 loss 0.15707099 acc 99.02343750 history loss 0.18190835")
    assert [(r["step"], r["loss"]) for r in recs] == [(0, 25.70108604), (10, 28.96673203)]
    assert recs[0]["lr"] == 1e-06


def test_speech_commands_rate_is_the_learning_rate():
    """TensorFlow's speech_commands train.py and kws_streaming: 'Step #%d: rate %f, accuracy
    %.1f%%, cross entropy %f' (learning_rate_value the rate)."""
    recs, _ = parse("INFO:absl:Step #1: rate 0.001000, accuracy 0.00%, cross entropy 2.493576",
                    "INFO:absl:Step #2: rate 0.000500, accuracy 12.50%, cross entropy 2.628293")
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(1, 2.493576, 0.001), (2, 2.628293, 0.0005)]


def test_lightning_csv_epoch_row_gives_the_epochs_mean_loss():
    """Lightning forks a value logged on_step and on_epoch into ``<name>_step`` and
    ``<name>_epoch`` (result.py ``_Metadata.forked_name``); a CSVLogger writes the epoch's value in
    a row of its own at the epoch's last step. That row's record had no loss."""
    recs, p = parse("epoch,step,train_loss_epoch,train_loss_step,val_loss",
                    "0,349,,3.9415,", "0,364,,,4.5883", "0,364,4.2595,,", "1,399,,3.7572,")
    assert [(r["step"], r["loss"]) for r in recs] == [(349, 3.9415), (364, 4.2595), (399, 3.7572)]
    assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(364, 4.5883)]


def test_flair_loss_tsv_rows_are_records_at_their_epoch_with_the_dev_loss_an_evaluation():
    """flair's loss.tsv (flair/trainers/trainer.py, since 0.12 plugins/loggers/loss_file.py):
    a tab-separated header from ``EPOCH TIMESTAMP BAD_EPOCHS LEARNING_RATE``, a row per epoch with
    its wall clock, the rate of each parameter group joined by commas, ``_`` for a value the old
    trainer did not have. Nothing was read."""
    recs, p = parse("EPOCH\tTIMESTAMP\tBAD_EPOCHS\tLEARNING_RATE\tTRAIN_LOSS\tDEV_LOSS\tDEV_F1",
                    "1\t16:51:59\t0\t0.1000\t0.2866137816264941\t0.2011\t0.8812",
                    "2\t17:16:36\t1\t0.1000,0.0500\t0.19963635197194995\t_\t0.8904")
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(1, 0.2866137816264941, 0.1),
                                                             (2, 0.19963635197194995, 0.1)]
    assert [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [(1, 0.2011), (2, None)]


def test_a_metrics_csv_column_named_like_a_field_is_that_field():
    """A CSV's columns are the names its script logged: ``grad/norm`` is the gradient norm as it
    is on a text line; the actor's and critic's losses are no single loss. It was an extra."""
    recs, _ = parse("actor/actor_loss,critic/critic_loss,grad/max,grad/norm,step",
                    "3.0724192,28.853388,394.32852,3560.2659,305000",
                    "1.9049425,13.861748,92.70291,1500.6975,310000")
    assert [(r["step"], r["loss"], r["grad_norm"]) for r in recs] == [(305000, None, 3560.2659),
                                                                     (310000, None, 1500.6975)]


def test_a_log_history_json_dump_with_an_indent_gives_a_record_for_each_object():
    """``json.dump(trainer.state.log_history, f, indent=2)``: "{" alone, an item a line, the last
    without its comma, "}," between the list's objects. Only a stray loss line was read."""
    import json
    history = [{"loss": 29.9707, "grad_norm": 0.4777, "learning_rate": 0.000999, "epoch": 0.0},
               {"loss": 22.6857, "grad_norm": 0.7528, "learning_rate": 0.000998, "epoch": 0.01},
               {"loss": 23.3032, "grad_norm": 0.2558, "learning_rate": 0.000997, "epoch": 0.01}]
    recs, _ = parse(*json.dumps(history, indent=2).splitlines())
    assert [(r["step"], r["loss"], r["grad_norm"]) for r in recs] == [(1, 29.9707, 0.4777), (2, 22.6857, 0.7528),
                                                                     (3, 23.3032, 0.2558)]
    with_steps = [dict(h, step=s) for h, s in zip(history, (10, 20, 30))]
    recs, _ = parse(*json.dumps(with_steps, indent=4).splitlines())
    assert [(r["step"], r["loss"]) for r in recs] == [(10, 29.9707), (20, 22.6857), (30, 23.3032)]


def test_a_configuration_dumped_as_indented_json_is_no_record():
    """A run's settings printed with json.dumps(config, indent=2) name a learning rate and no loss:
    an argument dump, as a pretty-printed Python dict of them is."""
    import json
    config = {"learning_rate": 2e-05, "num_train_epochs": 3, "per_device_train_batch_size": 8,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-05}}}
    for cfg in (config, {k: v for k, v in config.items() if k != "optimizer"}):
        recs, _ = parse(*json.dumps(cfg, indent=2).splitlines())
        assert recs == []


def test_a_notebooks_train_output_repr_is_the_runs_summary_not_a_step():
    """``trainer.train()``'s return value shown by a notebook, ``TrainOutput(global_step=...,
    training_loss=..., metrics={...})`` (transformers trainer_utils.py): the run's mean loss was
    read as a record at the last step."""
    recs, p = parse("{'loss': 0.0927, 'learning_rate': 0.0, 'epoch': 3.0, 'step': 90087}",
                    "TrainOutput(global_step=90087, training_loss=0.19543955512317132, metrics={'train_runtime': "
                    "4984.4679, 'train_samples_per_second': 72.292, 'train_steps_per_second': 18.074, 'total_flos': "
                    "1.221033998695203e+16, 'train_loss': 0.19543955512317132, 'epoch': 3.0})")
    assert [(r["step"], r["loss"]) for r in recs] == [(90087, 0.0927)]
    assert [m["kind"] for m in p.marks] == ["train_summary"]


def test_a_dict_wrapped_inside_a_value_gives_no_record_at_the_values_digits():
    """slime's perf report (``logger.info(f"perf {rollout_id}: {log_dict}")``, one dict repr a line)
    pasted wrapped at 200 columns: the line after a cut starts with a time's last digits, then the
    repr's ``, 'key': `` (the batch 32 corpus log). It was a record at step 894346237182617."""
    head = ("(MegatronTrainRayActor pid=38610) [2026-01-05 12:20:29] train_metric_utils.py:44 - perf 2: "
            "{'perf/sleep_time': 4.035936594009399, 'perf/log_probs_time': 0.10")
    for tail in ("894346237182617, 'perf/cp_seq_kl_prep_time': 0.0009074211120605469, 'perf/step_time': 14.18}",
                 '894346237182617, "perf/cp_seq_kl_prep_time": 0.0009074211120605469}',
                 "94e-05, 'perf/step_time': 14.18}"):
        recs, _ = parse(head, tail)
        assert recs == []


def test_a_leading_count_before_unquoted_names_is_still_the_step():
    """The negative of the rule above: a count that opens a line before names written without a
    repr's quotes (``f"{step}, loss: {loss}"``, an XLM-style ``- 1135 -`` column) is the step."""
    recs, _ = parse("12, loss: 0.5, lr: 0.001", "13, loss: 0.4, lr: 0.001")
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(12, 0.5, 0.001), (13, 0.4, 0.001)]
    recs, _ = parse("- 1135 - loss 0.5")
    assert [(r["step"], r["loss"]) for r in recs] == [(1135, 0.5)]
