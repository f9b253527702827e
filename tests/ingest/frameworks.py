"""Training logs of many frameworks, each line built with the format string the framework's own
logging code uses (the source is named above each builder), so the tests read what a real run
prints. Values are made up; every builder returns the lines and what a reader must get from
them: the training steps (step, loss) and the evaluations (step, loss)."""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field


@dataclass
class Log:
    name: str
    lines: list[str]
    steps: list[tuple[int, float | None]]            # (step, loss) of every training record, in order
    evals: list[tuple[int | None, float | None]] = field(default_factory=list)
    src: str = ""                                    # the format name the records carry
    extra: dict = field(default_factory=dict)        # what a test checks beyond steps and losses

    def text(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode()


def _ts(i: int = 0) -> str:
    return (_dt.datetime(2026, 1, 2, 3, 4, 5) + _dt.timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S")


def _g(x: float) -> str:
    return "{:g}".format(x)


# --------------------------------------------------------------------------------- fairseq

def _fairseq_stats(update: int, loss: float) -> dict:
    """fairseq_cli/train.py get_training_stats + trainer.py log_scalar order, formatted by
    progress_bar.format_stat ("{:g}" for numbers)."""
    return {"loss": _g(round(loss, 3)), "nll_loss": _g(round(loss - 0.7, 3)), "ppl": _g(round(2 ** (loss - 0.7), 2)),
            "wps": "12345", "ups": "3.21", "wpb": "3900.5", "bsz": "128", "num_updates": str(update),
            "lr": "0.0005", "gnorm": _g(round(0.79 + update / 1000, 3)), "loss_scale": "128",
            "train_wall": "21", "gb_free": "9.8", "wall": str(95 + update)}


def fairseq_simple(old: bool = False) -> Log:
    """--log-format simple (fairseq/logging/progress_bar.py SimpleProgressBar.log):
    "{}:  {:5d} / {:d} {}".format(prefix, i + 1, size, _str_commas(stats)), prefix "epoch {:03d}",
    behind the logger format "%(asctime)s | %(levelname)s | %(name)s | %(message)s" with the logger
    renamed to the tag ("train_inner"); end of epoch and validation through print():
    "{} | {}".format(prefix, _str_pipes(stats)). Before 0.9 (``old``) the same came from print()
    with the prefix "| epoch {:03d}" and no logger."""
    lines, steps, evals = [], [], []
    size = 600
    prefix = "| epoch 001" if old else "epoch 001"
    head = "" if old else f"{_ts()} | INFO | fairseq_cli.train | "
    lines.append(head + "Start iterating over samples")
    for k, upd in enumerate(range(100, 700, 100)):
        loss = 9.0 - k * 0.5
        stats = _fairseq_stats(upd, loss)
        post = ", ".join(key + "=" + v.strip() for key, v in stats.items())
        msg = "{}:  {:5d} / {:d} {}".format(prefix, upd, size, post)
        lines.append(msg if old else f"{_ts(k)} | INFO | train_inner | {msg}")
        steps.append((upd, round(loss, 3)))
    valid = {"loss": "6.9", "nll_loss": "6.2", "ppl": "73.5", "wps": "30000", "wpb": "3900", "bsz": "128",
             "num_updates": "600", "best_loss": "6.9"}
    vmsg = "{} | {}".format(prefix + " | valid on 'valid' subset",
                            " | ".join(k + " " + v.strip() for k, v in valid.items()))
    lines.append(vmsg if old else f"{_ts(9)} | INFO | valid | {vmsg}")
    evals.append((600, 6.9))
    train = _fairseq_stats(600, 7.5)
    tmsg = "{} | {}".format(prefix, " | ".join(k + " " + v.strip() for k, v in train.items()))
    lines.append(tmsg if old else f"{_ts(10)} | INFO | train | {tmsg}")
    lines.append(("| " if old else f"{_ts(11)} | INFO | fairseq.checkpoint_utils | ")
                 + "Saved checkpoint checkpoints/checkpoint1.pt (epoch 1 @ 600 updates, score 6.9)")
    return Log("fairseq_old" if old else "fairseq_simple", lines, steps, evals, src="fairseq")


def fairseq_json() -> Log:
    """--log-format json (JsonProgressBar.log / print): json.dumps of an OrderedDict with
    "epoch", "update" (epoch - 1 + (i + 1) / size, rounded to 3), then the stats as strings;
    print() prefixes every key with the tag ("valid_loss", "train_loss")."""
    lines, steps = [], []
    for k, upd in enumerate(range(100, 700, 100)):
        loss = 9.0 - k * 0.5
        d = {"epoch": 1, "update": round((upd) / 600.0, 3), **_fairseq_stats(upd, loss)}
        lines.append(f"{_ts(k)} | INFO | train_inner | " + json.dumps(d))
        steps.append((upd, round(loss, 3)))
    valid = {"epoch": 1, "valid_loss": "6.9", "valid_nll_loss": "6.2", "valid_ppl": "73.5",
             "valid_num_updates": "600", "valid_best_loss": "6.9"}
    lines.append(f"{_ts(9)} | INFO | valid | " + json.dumps(valid))
    train = {"epoch": 1, **{"train_" + k: v for k, v in _fairseq_stats(600, 7.5).items()}}
    lines.append(f"{_ts(10)} | INFO | train | " + json.dumps(train))
    return Log("fairseq_json", lines, steps, [(600, 6.9)], src="fairseq_json")


def fairseq_tqdm() -> Log:
    """--log-format tqdm on a terminal (TqdmProgressBar): tqdm(iterable, "epoch 001") with
    set_postfix(stats, refresh=False), so the stats show on the next redraw."""
    redraws, steps = [], []
    size = 600
    for k, upd in enumerate(range(100, 700, 100)):
        loss = 9.0 - k * 0.5
        post = ", ".join(f"{key}={v}" for key, v in _fairseq_stats(upd, loss).items())
        redraws.append(f"epoch 001:  {int(100 * upd / size):3d}%|{'█' * (upd // 60):10s}| {upd}/{size} "
                       f"[01:{k:02d}<00:30,  4.41it/s, {post}]")
        steps.append((upd, round(loss, 3)))
    return Log("fairseq_tqdm", ["\r" + "\r".join(redraws)], steps, [], src="fairseq")


# --------------------------------------------------------------------------------- mmcv / mmengine

def mmcv1() -> Log:
    """mmcv 1.x TextLoggerHook._log_info (mmcv/runner/hooks/logger/text.py, v1.7.2):
    f'Epoch [{epoch}][{iter}/{len(data_loader)}]\\t' + f'lr: {lr:.3e}, ' + f'eta: {eta_str}, ' +
    f'time: {time:.3f}, data_time: {data_time:.3f}, ' + f'memory: {memory}, ' + ', '.join(
    f'{name}: {val:.4f}'); validation f'Epoch({mode}) [{epoch}][{iter}]\\t' + items. The logger
    format is mmcv's '%(asctime)s - %(name)s - %(levelname)s - %(message)s'."""
    lines, steps = [], []
    n = 7517
    for k, it in enumerate((50, 100, 150)):
        loss = 1.2 - k * 0.1
        eta = str(_dt.timedelta(seconds=int(37 * 86400 + 7397 - k)))
        msg = (f"Epoch [1][{it}/{n}]\tlr: {1e-2:.3e}, eta: {eta}, time: {0.456:.3f}, data_time: {0.012:.3f}, "
               f"memory: {3782 + k}, loss_rpn_cls: {0.0123:.4f}, loss_rpn_bbox: {0.0456:.4f}, "
               f"loss: {loss:.4f}, grad_norm: {2.1:.4f}")
        lines.append(f"2021-01-01 12:00:0{k},000 - mmdet - INFO - {msg}")
        steps.append((it, round(loss, 4)))
    lines.append(f"2021-01-01 12:10:00,000 - mmdet - INFO - Epoch [2][50/{n}]\tlr: {1e-2:.3e}, eta: 1 day, "
                 f"0:00:01, time: {0.45:.3f}, data_time: {0.01:.3f}, memory: 3790, loss: {0.8:.4f}")
    steps.append((n + 50, 0.8))
    lines.append("2021-01-01 12:20:00,000 - mmdet - INFO - Epoch(val) [2][5000]\tbbox_mAP: 0.3000, "
                 "bbox_mAP_50: 0.5000, bbox_mAP_copypaste: 0.300 0.500 0.310 0.150 0.330 0.400")
    return Log("mmcv1", lines, steps, [(n + 50, None)], src="mmcv", extra={"mem_gib_first": 3782 / 1024})


def mmengine() -> Log:
    """mmengine LogProcessor.get_log_after_iter / get_log_after_epoch: "Epoch(train)  [e][i/n]  lr:
    ..  eta: ..  time: ..  data_time: ..  memory: ..  loss: .." and "Epoch(val) [e][n/n]
    metric: value"; logger format '%(asctime)s - %(name)s - %(levelname)s - %(message)s'."""
    lines, steps = [], []
    for k, it in enumerate((100, 200)):
        loss = 2.0 - k * 0.25
        lines.append(f"2023/11/23 10:0{k}:42 - mmengine - INFO - Epoch(train)  [1][{it:3d}/735]  "
                     f"lr: 2.0000e-04  eta: 0:41:12  time: 3.4567  data_time: 0.0123  memory: 10762  "
                     f"loss: {loss:.4f}  grad_norm: 3.0600")
        steps.append((it, loss))
    lines.append("2023/11/23 10:05:42 - mmengine - INFO - Epoch(val)  [1][10/20]    eta: 0:00:02  time: 0.1000  "
                 "data_time: 0.0100  memory: 1000")
    lines.append("2023/11/23 10:06:42 - mmengine - INFO - Epoch(val) [1][20/20]    accuracy/top1: 76.5000  "
                 "accuracy/top5: 93.1000  data_time: 0.0100  time: 0.1000")
    return Log("mmengine", lines, steps, [(200, None)], src="mmengine")


# --------------------------------------------------------------------------------- torchtune

def torchtune() -> Log:
    """torchtune recipes (recipes/full_finetune_distributed.py): tqdm(desc=f"{epochs_run}|{global_step}"),
    then per step pbar.update(1) and pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss:
    {loss_to_log}"); StdoutLogger.log_dict (torchtune/training/metric_logging.py):
    f"Step {step} | " then f"{name}:{data} " per item; the validation dict {"val_loss": ...}."""
    redraws, steps = ["0|0:   0%|          | 0/4 [00:00<?, ?it/s]"], []
    out_lines = []
    loss_prev = None
    for step in range(1, 5):
        loss = 1.5 - step * 0.125
        if loss_prev is not None:   # update(1) redraws with the old description first
            redraws.append(f"1|{step - 1}|Loss: {loss_prev}: {step * 25:3d}%|{'█' * step * 2:10s}| {step}/4 "
                           f"[00:{step:02d}<00:10,  1.96it/s]")
        redraws.append(f"1|{step}|Loss: {loss}: {step * 25:3d}%|{'█' * step * 2:10s}| {step}/4 "
                       f"[00:{step:02d}<00:10,  1.96it/s]")
        steps.append((step, loss))
        loss_prev = loss
    out_lines.append("\r".join(redraws))
    out_lines.append("Step 4 | loss:1.0 lr:2e-05 tokens_per_second_per_gpu:1234.5 peak_memory_active:12.1 "
                     "peak_memory_alloc:12.0 peak_memory_reserved:14.1 grad_norm:0.9 ")
    steps.append((4, 1.0))
    out_lines.append("Step 4 | val_loss:1.25 ")
    return Log("torchtune", out_lines, steps, [(4, 1.25)], src="torchtune", extra={"mem_gib_last": 14.1})


# --------------------------------------------------------------------------------- Lightning / NeMo

def _tqdm_bar(desc: str, n: int, total: int, post: str) -> str:
    pct = int(100 * n / total)
    return f"{desc}: {pct:3d}%|{'█' * (pct // 10):10s}| {n}/{total} [00:{n:02d}<00:10,  4.90it/s{post}]"


def lightning2() -> Log:
    """Lightning 2.x TQDMProgressBar (src/lightning/pytorch/callbacks/progress/tqdm_progress.py):
    on_train_epoch_start set_description(f"Epoch {trainer.current_epoch}"); on_train_batch_end
    _update_n(bar, batch_idx + 1) (a redraw with the old postfix) then set_postfix(get_metrics())
    (a redraw with the new one); the postfix is v_num plus the metrics logged with prog_bar=True,
    here train_loss (step) and, after validation, val_loss. Two epochs of 3 batches, one line."""
    redraws, steps, evals = [], [], []
    post = ""
    losses = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    for ep in range(2):
        redraws.append(_tqdm_bar(f"Epoch {ep}", 0, 3, post))
        for b in range(1, 4):
            redraws.append(_tqdm_bar(f"Epoch {ep}", b, 3, post))
            loss = losses[ep * 3 + b - 1]
            post = f", v_num=0, train_loss={loss}" + (", val_loss=1.5" if ep == 1 else "")
            redraws.append(_tqdm_bar(f"Epoch {ep}", b, 3, post))
            steps.append((ep * 3 + b, loss))
    evals.append((4, 1.5))
    return Log("lightning2", ["\r" + "\r".join(redraws)], steps, evals, src="pl_bar")


def veomni() -> Log:
    """VeOmni (tasks/train_torch.py): per epoch data_loader_tqdm = trange(train_steps,
    desc=f"Epoch {epoch + 1}/{num_train_epochs}"); per step set_postfix_str(f"loss: {total_loss:.2f},
    grad_norm: {grad_norm:.2f}, lr: {lr:.2e}") and then update(): the postfix is drawn before the
    count, so count n-1 shows step n's values, then count n shows them again (tqdm's first draw of
    a new bar has no postfix). Two epochs of 3 steps, one line each (leave=True)."""
    lines, steps = [], []
    step = 0
    for ep in (1, 2):
        desc = f"Epoch {ep}/2"
        redraws = [f"{desc}:   0%|          | 0/3 [00:00<?, ?it/s]"]
        for n in range(3):
            step += 1
            loss, grad, lr = 11.5 - step / 10, 29.0 + step / 4, 1.12e-08 * step
            post = f", loss: {loss:.2f}, grad_norm: {grad:.2f}, lr: {lr:.2e}"
            redraws.append(_tqdm_bar(desc, n, 3, post))        # set_postfix_str: the count not yet updated
            redraws.append(_tqdm_bar(desc, n + 1, 3, post))    # update()
            steps.append((step, round(loss, 2)))
        lines.append("\r" + "\r".join(redraws))
    return Log("veomni", lines, steps, [], src="pl_bar", extra={"lr": [1.12e-08 * s for s, _ in steps]})


def tqdm_loop_postfix() -> Log:
    """The plain loop `pbar = tqdm(loader)`, `for batch in pbar: ...; pbar.set_postfix(loss=...)`:
    tqdm's __iter__ counts an item when the next one is asked for, so set_postfix draws step n's
    loss under count n-1 and the next iteration (or close(), for the last) under count n."""
    redraws = ["  0%|          | 0/4 [00:00<?, ?it/s]"]
    losses = [2.5, 2.25, 2.0, 1.75]
    for n, loss in enumerate(losses):
        pct = 25 * n
        redraws.append(f"{pct:3d}%|{'█' * (pct // 10):10s}| {n}/4 [00:0{n}<00:04,  1.00it/s, loss={loss}]")
        pct = 25 * (n + 1)
        redraws.append(f"{pct:3d}%|{'█' * (pct // 10):10s}| {n + 1}/4 [00:0{n + 1}<00:03,  1.00it/s, loss={loss}]")
    return Log("tqdm_loop_postfix", ["\r" + "\r".join(redraws)], [(n + 1, x) for n, x in enumerate(losses)], [],
               src="tqdm_postfix")


def lightning_nemo_bar() -> Log:
    """NeMo 1.x on Lightning 1.x: the bar's postfix is get_metrics(): Lightning 1.x's running mean
    as loss=f"{:.3g}", v_num, then NeMo's self.log(..., prog_bar=True) values: reduced_train_loss
    (the step's loss), global_step (a float), consumed_samples. Each step is drawn twice
    (_update_n, then set_postfix): first with the previous step's postfix."""
    losses = {185: 7.7, 186: 7.8, 187: 7.62, 188: 7.56}
    means = {185: 7.9, 186: 7.88, 187: 7.8, 188: 7.75}

    def post(s: int) -> str:
        return (f", loss={means[s]:.3g}, v_num=0, reduced_train_loss={losses[s]:.3f}, global_step={s}.0, "
                f"consumed_samples={s * 64}.0")
    redraws = []
    for n in (186, 187, 188):
        redraws.append(_tqdm_bar("Epoch 0", n, 1563, post(n - 1)))
        redraws.append(_tqdm_bar("Epoch 0", n, 1563, post(n)))
    return Log("nemo_bar", ["\r".join(redraws)], [(s, losses[s]) for s in (185, 186, 187, 188)], [],
               src="pl_bar", extra={"loss_smoothed_last": 7.75})


def nemo2() -> Log:
    """NeMo 2 ProgressPrinter (nemo/lightning/pytorch/callbacks/progress_printer.py): prefix
    f"Training epoch {epoch}, iteration {n-1}/{total-1}", then f' | {metric}: {val}' (an int when
    the float is whole, else f'{val:.4}'); NeMo logs "train_step_timing in s", and val_loss once
    validation ran."""
    lines, steps, evals = [], [], []
    for it in range(5):
        loss = 11.03 - it * 0.25
        metrics = {"lr": 1.499e-06 * (it + 1), "global_batch_size": 512.0, "global_step": float(it),
                   "reduced_train_loss": loss, "train_step_timing in s": 7.5 + it / 100,
                   "consumed_samples": float(512 * (it + 1))}
        if it >= 3:
            metrics["val_loss"] = 10.5
        s = f"Training epoch 0, iteration {it}/19"
        for k, v in metrics.items():
            s += f" | {k}: {int(v)}" if isinstance(v, float) and v.is_integer() else f" | {k}: {v:.4}"
        lines.append(s)
        steps.append((it, float(f"{loss:.4}")))
    evals.append((3, 10.5))
    return Log("nemo2", lines, steps, evals, src="nemo", extra={"step_time_s_first": 7.5})


def nemo_automodel() -> Log:
    """NeMo Automodel recipes (nemo_automodel/recipes/llm/train_ft.py log_train_metrics /
    log_val_metrics) behind its ColorFormatter "%(asctime)s | %(levelname)s | %(name)s | ":
    "step {} | epoch {} | loss {:.4f} | grad_norm {:.4f} | lr {:.2e} | mem {:.2f} GiB | tps {:.2f}({:.2f}/gpu) |
    num_label_tokens {}" and '[val] name "{}" | step {} | epoch {} | loss {:.4f} | lr {:.2e} |
    num_label_tokens {}'."""
    lines, steps = [], []
    for k, step in enumerate((10, 20, 30)):
        loss = 1.2345 - k * 0.1
        lines.append(f"{_ts(k)} | INFO | root | " + "step {} | epoch {} | loss {:.4f} | grad_norm {:.4f} | lr {:.2e} | "
                     "mem {:.2f} GiB | tps {:.2f}({:.2f}/gpu) | num_label_tokens {}".format(
                         step, 0, loss, 0.8765, 2e-5, 24.9 + k, 12345.67, 1543.21, 4096))
        steps.append((step, round(loss, 4)))
    lines.append(f"{_ts(9)} | INFO | root | " + '[val] name "{}" | step {} | epoch {} | loss {:.4f} | lr {:.2e} | '
                 'num_label_tokens {}'.format("default", 30, 0, 1.5, 2e-5, 4096))
    return Log("automodel", lines, steps, [(30, 1.5)], src="pipes", extra={"mem_gib_first": 24.9})


# --------------------------------------------------------------------------------- detectron2, nanoGPT, Megatron

def detectron2() -> Log:
    """detectron2 CommonMetricPrinter.write (detectron2/utils/events.py): " {eta}iter: {iter}  {losses}
    {non_losses}  {avg_time}{last_time}{avg_data_time}{last_data_time} lr: {lr}  {memory}" with
    "{}: {:.4g}" per loss, "time: {:.4f}  ", "last_time: {:.4f}  ", "max_mem: {:.0f}M", behind
    setup_logger's "[%(asctime)s] %(name)s %(levelname)s: " (datefmt "%m/%d %H:%M:%S")."""
    lines, steps = [], []
    for k, it in enumerate((19, 39, 59)):
        total = 1.9 - k * 0.2
        losses = "  ".join("{}: {:.4g}".format(n, v) for n, v in
                           (("loss_box_reg", 0.4), ("loss_cls", 0.6), ("total_loss", total)))
        msg = str.format(" {eta}iter: {iter}  {losses}  {non_losses}  {avg_time}{last_time}"
                         "{avg_data_time}{last_data_time} lr: {lr}  {memory}",
                         eta="eta: 0:01:2{}  ".format(k), iter=it, losses=losses, non_losses="",
                         avg_time="time: {:.4f}  ".format(0.4567), last_time="last_time: {:.4f}  ".format(0.4),
                         avg_data_time="data_time: {:.4f}  ".format(0.0123),
                         last_data_time="last_data_time: {:.4f}  ".format(0.01), lr="{:.5g}".format(0.00039962),
                         memory="max_mem: {:.0f}M".format(3782.0 + k))
        lines.append(f"[06/21 12:00:{k:02d}] d2.utils.events INFO: {msg}")
        steps.append((it, float("{:.4g}".format(total))))
    return Log("detectron2", lines, steps, [], src="detectron2", extra={"mem_gib_first": 3782 / 1024})


def nanogpt() -> Log:
    """nanoGPT train.py: print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss
    {losses['val']:.4f}") at each eval_interval, print(f"saving checkpoint to {out_dir}"), and
    print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%")."""
    lines, steps, evals = [], [], []
    for it in range(0, 6):
        if it % 5 == 0:
            lines.append(f"step {it}: train loss {4.2 - it * 0.1:.4f}, val loss {4.3 - it * 0.1:.4f}")
            evals.append((it, round(4.3 - it * 0.1, 4)))
            if it:
                lines.append("saving checkpoint to out")
        lines.append(f"iter {it}: loss {4.1 - it * 0.1:.4f}, time {45.21:.2f}ms, mfu {-100.0 if it < 5 else 12.34:.2f}%")
        steps.append((it, round(4.1 - it * 0.1, 4)))
    return Log("nanogpt", lines, steps, evals, src="kv")


def megatron_validation() -> Log:
    """Megatron-LM training_log lines and evaluate_and_print_results (megatron/training/training.py):
    a dashed rule, f' validation loss at iteration {it} | ' + '{} value: {:.6E} | {} PPL: {:.6E} | ',
    and the rule again."""
    lines, steps = [], []
    for it in (10, 20):
        loss = 3.0 - it / 100
        lines.append(f" [2026-01-02 03:04:05.678901] iteration {it:8d}/{100:8d} | consumed samples: {it * 64:12d} | "
                     f"elapsed time per iteration (ms): 1834.6 | learning rate: {3e-5:.6E} | global batch size: "
                     f"{64:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 0.877 | number of skipped "
                     f"iterations: {0:3d} | number of nan iterations: {0:3d} |")
        steps.append((it, loss))
    string = " validation loss at iteration 20 | " + "{} value: {:.6E} | ".format("lm loss", 2.9) + \
        "{} PPL: {:.6E} | ".format("lm loss", 18.17)
    lines += ["-" * (len(string) + 1), string, "-" * (len(string) + 1)]
    string = " validation loss at iteration 20 on test set | " + "{} value: {:.6E} | ".format("lm loss", 2.95)
    lines += [string]
    return Log("megatron_val", lines, steps, [(20, 2.9), (20, 2.95)], src="megatron")


def swift_prefixed() -> Log:
    """ms-swift's per-step dict (transformers 5.x: values as .4g strings) as it lands in logs that
    add their own prefix: a container runtime's "<RFC3339> stdout F ", a timestamp and Python
    logging's "INFO:__main__:" form; an argument dump ("model_kwargs: {...}") stays no record."""
    def d(step: int, loss: float) -> str:
        return str({"loss": f"{loss:.4g}", "grad_norm": "0.8765", "learning_rate": "2e-05", "epoch": "0.05",
                    "global_step/max_steps": f"{step}/200", "elapsed_time": "1m 2s", "remaining_time": "19m 38s",
                    "memory(GiB)": "35.12", "train_speed(s/it)": "6.2"})
    lines = [
        "[INFO:swift] model_kwargs: {'loss': 1, 'learning_rate': 2}",
        "2026-01-02T03:04:05.123456789Z stdout F " + d(10, 1.5),
        f"{_ts(1)} " + d(20, 1.4),
        "INFO:__main__:" + d(30, 1.3),
        "(RayTrainWorker pid=4242) " + d(40, 1.2),
        "2026-01-02T03:04:09.123456789Z stdout F {'eval_loss': '1.1', 'eval_runtime': '2.0', "
        "'epoch': '0.2', 'global_step/max_steps': '40/200'}",
    ]
    return Log("swift_prefixed", lines, [(10, 1.5), (20, 1.4), (30, 1.3), (40, 1.2)], [(40, 1.1)],
               src="swift_dict")


def hf_eval() -> Log:
    """Hugging Face Trainer (transformers 4.x ProgressCallback): per-step dicts without a step, an
    eval dict {'eval_loss', 'eval_runtime', ..., 'epoch'} (at the last step), the end-of-train dict."""
    lines = [str({"loss": 2.0 - i / 10, "grad_norm": 0.5, "learning_rate": 1e-05, "epoch": i / 10})
             for i in range(1, 4)]
    lines.append(str({"eval_loss": 1.8, "eval_runtime": 2.5, "eval_samples_per_second": 40.0,
                      "eval_steps_per_second": 5.0, "epoch": 0.3}))
    lines.append(str({"train_runtime": 100.0, "train_samples_per_second": 3.2, "train_steps_per_second": 0.03,
                      "train_loss": 1.9, "epoch": 0.3}))
    return Log("hf_eval", lines, [(1, 1.9), (2, 1.8), (3, 1.7)], [(3, 1.8)], src="hf_dict")


def deepspeed() -> Log:
    """DeepSpeed: ThroughputTimer.stop (deepspeed/utils/timer.py) logs "epoch={}/micro_step={}/global_step={},
    RunningAvgSamplesPerSec={}, CurrSamplesPerSec={}, MemAllocated={}GB, MaxMemAllocated={}GB" through its
    logger "[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] "; see_memory_usage
    (deepspeed/runtime/utils.py) prints its message, then f"MA {..} GB         Max_MA {..} GB         CA
    {..} GB         Max_CA {..} GB " (Max_CA rounded to a whole GB). With HF dicts for the steps."""
    lines = ["DeepSpeed Engine: After configure distributed model",
             "MA 0.52 GB         Max_MA 0.52 GB         CA 0.55 GB         Max_CA 1 GB "]
    for step in (10, 20):
        # the engine's own report (engine.py _report_progress through log_dist): never a record
        # beside the trainer's step-less dicts, and never shifting their numbering
        lines.append(f"[2026-01-02 03:04:05,120] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, "
                     f"lr=[{1e-05}, {1e-05}], mom=[(0.9, 0.999), (0.9, 0.999)]")
        lines.append(f"[rank1]:[2026-01-02 03:04:05,123] [INFO] [timer.py:264:stop] epoch=0/micro_step={step * 4}/"
                     f"global_step={step}, RunningAvgSamplesPerSec=12.3, CurrSamplesPerSec=12.5, "
                     f"MemAllocated=4.56GB, MaxMemAllocated={9.5 + step / 100:.2f}GB")
        lines.append(str({"loss": round(2.0 - step / 100, 4), "grad_norm": 0.5, "learning_rate": 1e-05,
                          "epoch": step / 100}))
    # memory records: (step, rank, mem_gib); the HF dicts are numbered 1, 2 (they carry no step)
    return Log("deepspeed", lines, [(1, 1.9), (2, 1.8)], [], src="hf_dict",
               extra={"memory": [(0, None, 1.0), (10, 1, 9.6), (20, 1, 9.7)]})


def deepspeed_alone() -> Log:
    """DeepSpeed with a training loop that prints nothing of its own: the engine's report every
    steps_per_print (deepspeed/runtime/engine.py _report_progress) through log_dist(..., ranks=[0]):
    f"step={step}, skipped={skipped_steps}, lr={lr}, mom={mom}" behind "[Rank 0] ", and its
    ThroughputTimer line; the steps come from the report, its lr the first group's."""
    lines = []
    for step in (10, 20, 30):
        lines.append(f"[2026-01-02 03:04:05,120] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, "
                     f"skipped={1 if step > 10 else 0}, lr=[{2e-05}], mom=[[0.9, 0.999]]")
        lines.append(f"[2026-01-02 03:04:05,121] [INFO] [timer.py:189:stop] 0/{step}, SamplesPerSec=83.5, "
                     f"MemAllocated=0.26GB, MaxMemAllocated=9.02GB")
    return Log("deepspeed_alone", lines, [(10, None), (20, None), (30, None)], [], src="deepspeed",
               extra={"lr": 2e-05})


def maxtext() -> Log:
    """MaxText (MaxText/metric_logger.py log_metrics, through max_logging.log): f"completed step: {step},
    seconds: {step_time_seconds:.3f}, TFLOP/s/device: {tflops_per_sec:.3f}, Tokens/s/device:
    {tokens_per_sec:.3f}, total_weights: {total_weights}, loss: {loss:.3f}" every step."""
    lines, steps = [], []
    for step in range(3):
        loss = round(10.5 - step / 4, 3)
        lines.append(f"completed step: {step}, seconds: {2.167:.3f}, TFLOP/s/device: {36.722:.3f}, "
                     f"Tokens/s/device: {7566.125:.3f}, total_weights: 16384, loss: {loss:.3f}")
        steps.append((step, loss))
    return Log("maxtext", lines, steps, [], src="kv", extra={"step_time_s": 2.167, "tokens_per_s": 7566.125})


def mlx_lm() -> Log:
    """mlx-lm (mlx_lm/tuner/trainer.py train): f"Iter {it}: Val loss {val_loss:.3f}, Val took
    {val_time:.3f}s" at it == 1 and every steps_per_eval, f"Iter {it}: Train loss {train_loss:.3f},
    Learning Rate {learning_rate:.3e}, It/sec {it_sec:.3f}, Tokens/sec {tokens_sec:.3f}, Trained Tokens
    {trained_tokens}, Peak mem {peak_mem:.3f} GB" every steps_per_report, f"Iter {it}: Saved adapter
    weights to {a} and {b}." every steps_per_save; older mlx-examples print only Train loss, It/sec and
    Tokens/sec."""
    lines = [f"Iter 1: Val loss {2.875:.3f}, Val took {1.25:.3f}s"]
    steps = []
    for it in (10, 20):
        loss = 2.5 - it / 100
        lines.append(f"Iter {it}: Train loss {loss:.3f}, Learning Rate {1e-5:.3e}, It/sec {2.0:.3f}, "
                     f"Tokens/sec {300.5:.3f}, Trained Tokens {it * 150}, Peak mem {5.094:.3f} GB")
        steps.append((it, round(loss, 3)))
    lines.append("Iter 20: Saved adapter weights to adapters/adapters.safetensors and "
                 "adapters/0000020_adapters.safetensors.")
    lines.append(f"Iter 20: Val loss {2.125:.3f}, Val took {1.5:.3f}s")
    lines.append(f"Iter 30: Train loss {2.2:.3f}, It/sec {2.0:.3f}, Tokens/sec {300.5:.3f}")
    steps.append((30, 2.2))
    return Log("mlx_lm", lines, steps, [(1, 2.875), (20, 2.125)], src="mlx", extra={"step_time_s": 0.5})


def litgpt() -> Log:
    """litgpt finetune/lora.py: fabric.print(f"Epoch {epoch+1} | iter {iter} step {step} | loss train:
    {loss:.3f}, val: {val_loss} | iter time: {iter_time*1000:.2f} ms{' (step)' if not accumulating else ''}
    remaining time: {timedelta}") with val_loss "n/a" before the first validation."""
    lines, steps = [], []
    for it in range(1, 5):
        val = "n/a" if it < 3 else f"{1.9:.3f}"
        lines.append(f"Epoch 1 | iter {it} step {it // 2} | loss train: {2.0 - it / 10:.3f}, val: {val} | "
                     f"iter time: {120.5:.2f} ms{' (step)' if it % 2 == 0 else ''} remaining time: 0:01:0{it}")
        steps.append((it, round(2.0 - it / 10, 3)))
    return Log("litgpt", lines, steps, [(3, 1.9)], src="litgpt")


def litgpt_fork() -> Log:
    """A fork of litgpt's scripts (awslabs/keys_values finetune/longcontext_full.py): print_message(
    f"Epoch {epoch} | iter {iter:3d} | loss train: {loss:.3f}, {metric} valid: {val_loss} | iter time:
    {iter_time:.3f} s") with val_loss "n/a" before the first validation, and after each periodic
    validation f"Epoch {epoch} | iter {iter:3d}          | val_loss: {val:.3f} | val_time: {t:.3f} s"."""
    lines, steps = [], []
    for it in range(1, 5):
        val = "n/a" if it < 3 else f"{2.25:.3f}"
        lines.append(f"Epoch 0 | iter {it:3d} | loss train: {3.0 - it / 8:.3f}, val_loss valid: {val} | "
                     f"iter time: {41.5:.3f} s")
        steps.append((it, round(3.0 - it / 8, 3)))
        if it == 2:
            lines.append(f"Epoch 0 | iter {it:3d}          | val_loss: {2.25:.3f} | val_time: {78.9:.3f} s")
    return Log("litgpt_fork", lines, steps, [(2, 2.25)], src="litgpt", extra={"step_time_s": 41.5})


def tf_trainer() -> Log:
    """transformers TFTrainer (trainer_tf.py, 2020): logger.info("Epoch {} Step {} Train Loss {:.4f}")
    every logging_steps and logger.info("Epoch {} Step {} Validation Metrics {}".format(epoch, step,
    logs)) with logs = {"eval_" + k: v for the evaluation's metrics} and "learning_rate", behind
    "%(asctime)s - %(levelname)s - %(name)s -   "."""
    pre = "06/12/2020 10:12:08 - INFO - transformers.trainer_tf -   "
    logs = {"eval_eval_loss": 0.5300102, "eval_eval_acc": 0.7230392156862745, "learning_rate": 4.5e-05}
    lines = [pre + "Epoch {} Step {} Train Loss {:.4f}".format(1, 10, 0.6347228),
             pre + "Epoch {} Step {} Train Loss {:.4f}".format(1, 20, 0.604829),
             pre + "Epoch {} Step {} Validation Metrics {}".format(1, 20, logs)]
    return Log("tf_trainer", lines, [(10, 0.6347), (20, 0.6048)], [(20, 0.5300102)], src="tf_trainer")


def tf_estimator() -> Log:
    """TensorFlow Estimator (estimator.py _write_dict_to_summary): logging.info('Saving dict for global
    step %d: %s', global_step, ', '.join('%s = %s' % (k, v) for k, v in sorted(dictionary.items()))),
    beside its 'loss = %s, step = %s' hook lines, through absl's INFO:tensorflow: prefix."""
    ev = {"accuracy": 0.6158129, "global_step": 200, "loss": 1.3074992}
    lines = ["INFO:tensorflow:loss = 2.5, step = 100",
             "INFO:tensorflow:loss = 1.5, step = 200 (10.5 sec)",
             "INFO:tensorflow:Saving dict for global step %d: %s" % (
                 200, ", ".join("%s = %s" % (k, v) for k, v in sorted(ev.items())))]
    return Log("tf_estimator", lines, [(100, 2.5), (200, 1.5)], [(200, 1.3074992)], src="kv")


def unsloth() -> Log:
    """unsloth_zoo training_utils.unsloth_train: print(debug_info) (the banner), then every
    logging_steps progress_bar.write(f"{step}, {round(accumulated_loss.cpu().item(), 4)}") before
    progress_bar.update(1): the 0-based index of the step just done."""
    lines = ["==((====))==  Unsloth - 2x faster free finetuning | Num GPUs = 1",
             "   \\   /|    Num examples = 2,500 | Num Epochs = 1",
             "O^O/ \\_/ \\    Batch size per device = 2 | Gradient Accumulation steps = 8",
             "\\        /    Total batch size = 16 | Total steps = 312",
             ' "-____-"     Number of trainable parameters = 982,515,712']
    steps = []
    for step in (0, 10, 20):
        loss = round(2.5 - step / 100, 4)
        lines.append(f"{step}, {loss}")
        steps.append((step + 1, loss))
    return Log("unsloth", lines, steps, [], src="unsloth")


def caffe() -> Log:
    """Caffe (src/caffe/solver.cpp Step, sgd_solver.cpp ApplyUpdate) through glog: "Iteration " << iter_
    << " (" << per_s << " iter/s, " << lapse << "s/" << display << " iters), loss = " << smoothed_loss_,
    "    Train net output #" << j << ": " << name << " = " << value << " (* " << w << " = " << w*value
    << " loss)", then "Iteration " << iter_ << ", lr = " << rate; before the rate, "Iteration " << iter_
    << ", loss = " << smoothed_loss_."""
    lines, steps = [], []
    for it in (100, 200):
        loss = 9.5 - it / 1000
        lines += [f"I0717 23:02:53.314219 23375 solver.cpp:218] Iteration {it} (1.04181 iter/s, 95.9864s/100 iters), "
                  f"loss = {loss:g}",
                  f"I0717 23:02:53.314389 23375 solver.cpp:237]     Train net output #0: lambda = 16.3613",
                  f"I0717 23:02:53.314409 23375 solver.cpp:237]     Train net output #1: softmax_loss = {loss:g} "
                  f"(* 1 = {loss:g} loss)",
                  f"I0717 23:02:53.314421 23375 sgd_solver.cpp:105] Iteration {it}, lr = 0.001"]
        steps.append((it, loss))
    lines += ["I0717 23:04:29.698570 23375 solver.cpp:209] Iteration 300, loss = 9.2",
              "I0717 23:04:29.698894 23375 sgd_solver.cpp:105] Iteration 300, lr = 0.001"]
    steps.append((300, 9.2))
    return Log("caffe", lines, steps, [], src="caffe", extra={"lr": 0.001})


def _espnet_v(v: float) -> str:
    return f"{v:.3e}" if abs(v) > 1.0e3 else f"{v:.3f}" if abs(v) > 1.0e-3 else f"{v:.3e}"


def espnet2() -> Log:
    """ESPnet2 (espnet2/train/reporter.py SubReporter.log_message): f"{self.epoch}epoch:{self.key}:"
    f"{start + 1}-{end}batch: " then f"{key2}={v:.3f}" (.3e above 1e3 or below 1e-3) joined by ", ",
    logged by trainer.py every log_interval batches behind ESPnet's logging format
    "[{hostname}] %(asctime)s (%(module)s:%(lineno)d) %(levelname)s: %(message)s". The batch counter
    restarts each epoch (a new SubReporter per epoch): epoch 2's batch 100 follows epoch 1's 300."""
    lines, steps = [], []
    t = 0
    for epoch in (1, 2):
        for end in (100, 200, 300):
            loss = round(120.0 / (epoch * end) ** 0.5, 3)
            vals = {"iter_time": 2.878e-04, "forward_time": 0.134, "loss": loss, "loss_att": loss * 0.6,
                    "acc": 0.013, "backward_time": 0.111, "optim_step_time": 0.030, "optim0_lr0": 3.46e-06 * end,
                    "train_time": 1.816}
            msg = f"{epoch}epoch:train:{end - 99}-{end}batch: " + ", ".join(f"{k}={_espnet_v(v)}" for k, v in vals.items())
            lines.append(f"[gpu01:0/2] {_ts(t)},080 (trainer:464) INFO: {msg}")
            steps.append(((epoch - 1) * 300 + end, float(_espnet_v(loss))))
            t += 60
        # trainer.py: logging.info(f"{iepoch}epoch results: {reporter.log_message()}"), Reporter.log_message:
        # f"[{key}] " + ", ".join(f"{key2}={v:.3f}") per section, sections joined by ", "
        lines.append(f"[gpu01:0/2] {_ts(t)},080 (trainer:338) INFO: {epoch}epoch results: [train] "
                     f"iter_time=1.000e-04, loss=50.000, [valid] loss={45 - 5 * epoch:.3f}, acc=0.500")
    return Log("espnet2", lines, steps, [(300, 40.0), (600, 35.0)], src="espnet", extra={"step_time_s": 1.816})


def _sb3_table(values: dict) -> list[str]:
    """stable-baselines3 HumanOutputFormat.write (common/logger.py): floats f"{value:<8.3g}", a tag
    row per section, its keys indented by three spaces, the table between lines of dashes."""
    key2str: dict[tuple[str, str], str] = {}
    for key, value in values.items():
        value_str = f"{value:<8.3g}" if isinstance(value, float) else str(value)
        tag = key[: key.find("/") + 1]
        key2str[(tag, tag)] = ""
        key2str[(tag, "   " + key[len(tag):])] = value_str
    key_width = max(len(k) for _, k in key2str)
    val_width = max(map(len, key2str.values()))
    dashes = "-" * (key_width + val_width + 7)
    rows = [f"| {k}{' ' * (key_width - len(k))} | {v}{' ' * (val_width - len(v))} |" for (_, k), v in key2str.items()]
    return [dashes, *rows, dashes]


def sb3() -> Log:
    """stable-baselines3 PPO with an EvalCallback: on_policy_algorithm.py dump_logs records
    rollout/*, time/fps, time/iterations, time/time_elapsed, time/total_timesteps, then
    logger.dump(step=self.num_timesteps) after train() recorded train/*; the first table (before
    any train()) has no train/ section; the EvalCallback's eval/mean_reward lands in the next one."""
    lines = ["Using cuda device"]
    steps, evals = [], []
    for it in (1, 2, 3):
        vals: dict = {"rollout/ep_len_mean": 200, "rollout/ep_rew_mean": -1.2e3 + it * 10.0}
        if it == 3:
            vals["eval/mean_ep_length"] = 200
            vals["eval/mean_reward"] = -213.0
        vals.update({"time/fps": 8507, "time/iterations": it, "time/time_elapsed": it * 2,
                     "time/total_timesteps": it * 2048})
        if it == 1:
            steps.append((2048, None))   # rollout values only: a record without a loss
        if it > 1:
            vals.update({"train/approx_kl": 0.2149679, "train/clip_fraction": 0.277, "train/entropy_loss": -1.25,
                         "train/learning_rate": 0.001, "train/loss": 0.5 / it, "train/n_updates": (it - 1) * 10,
                         "train/value_loss": 0.777})
            steps.append((it * 2048, float(f"{0.5 / it:<8.3g}")))
        lines += _sb3_table(vals)
    evals.append((6144, None))
    return Log("sb3", lines, steps, evals, src="sb3_table", extra={"lr": 0.001})


def llm_c() -> Log:
    """llm.c: train_gpt2.c printf("step %d: train loss %f (took %f ms)\n", ...); train_gpt2.cu
    printf0("step %4d/%d | loss %7.6f (%+.2fz)| norm %6.4f (%+.2fz)| lr %.2e | %.2f ms | %.0f tok/s\n", ...)
    and its forks' "step %4d/%d | loss %.6f | norm %.4f | lr %.2e | %.2f ms | %.0f tok/s | MFU %.2f%%\n";
    llama2.c train.py: f"{iter_num} | loss {lossf:.4f} | lr {lr:e} | {dt*1000:.2f}ms | mfu {running_mfu*100:.2f}%".
    The unnamed time column is the step time, the unnamed tok/s column the tokens per second."""
    lines = ["step %d: train loss %f (took %f ms)" % (s, 4.5 - s / 10, 2141.0 + s) for s in (0, 1)]
    lines += ["step %4d/%d | loss %7.6f (%+.2fz)| norm %6.4f (%+.2fz)| lr %.2e | %.2f ms | %.0f tok/s"
              % (s, 74, 4.0 - s / 10, 0.5, 1.25, -0.1, 6e-4, 24.18, 338855.0) for s in (2, 3)]
    lines += ["step %4d/%d | loss %.6f | norm %.4f | lr %.2e | %.2f ms | %.0f tok/s | MFU %.2f%%"
              % (s, 74, 3.5, 1.0, 6e-4, 24.18, 338855.0, 45.2) for s in (4,)]
    lines += [f"{s} | loss {3.25:.4f} | lr {6e-4:e} | {24.18:.2f}ms | mfu {45.2:.2f}%" for s in (5,)]
    steps = [(0, 4.5), (1, 4.4), (2, 3.8), (3, 3.7), (4, 3.5), (5, 3.25)]
    return Log("llm_c", lines, steps, [], src="", extra={"step_time_s": [2.141, 2.142] + [0.02418] * 4})


def ultralytics() -> Log:
    """ultralytics YOLOv8/11 (engine/trainer.py _do_train): LOGGER.info(("\n" + "%11s" * (4 +
    len(self.loss_names))) % ("Epoch", "GPU_mem", *self.loss_names, "Instances", "Size")), then per
    batch pbar.set_description(("%11s" * 2 + "%11.4g" * (2 + loss_length)) % (f"{epoch + 1}/{self.epochs}",
    f"{self._get_memory():.3g}G", *self.tloss, batch["cls"].shape[0], batch["img"].shape[-1])) on its
    TQDM (bar_format "{l_bar}{bar:10}{r_bar}"), redrawn with carriage returns; the validator's bar
    and its "all" row after each epoch. The step counts the batches across the epochs."""
    head = ("%11s" * 7) % ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances", "Size")
    lines, steps = [], []
    nb, epochs = 4, 3
    for epoch in range(2):
        lines += ["", head]
        redraws = []
        for n in range(1, nb + 1):
            box = round(1.5 - epoch * 0.2 - n * 0.01, 4)
            desc = ("%11s" * 2 + "%11.4g" * 5) % (f"{epoch + 1}/{epochs}", f"{6.73:.3g}G", box, 0.47, 1.08, 10, 640)
            redraws.append(f"{desc}: {n * 100 // nb:3d}%|{'#' * (n * 10 // nb):10s}| {n}/{nb} [00:0{n}<00:00,  2.78it/s]")
            steps.append((epoch * nb + n, None))
        lines.append("\r".join(redraws))
        lines.append(("%22s" + "%11s" * 6) % ("Class", "Images", "Instances", "Box(P", "R", "mAP50", "mAP50-95)")
                     + ": 100%|##########| 8/8 [00:03<00:00,  2.17it/s]")
        lines.append(("%22s" + "%11i" * 2 + "%11.3g" * 4) % ("all", 722, 1444, 0.989, 0.99, 0.993, 0.681))
    return Log("ultralytics", lines, steps, [], src="ultralytics", extra={"mem_gib": 6.73})


def fastai_table() -> Log:
    """fastai's results table: Recorder's names ['epoch', 'train_loss', 'valid_loss', *metrics,
    'time'] and each epoch's values (fastai 2.x ``ProgressCallback.after_epoch`` ->
    ``Recorder.log``: the epoch, ``f'{v:.6f}'`` floats, ``#na#`` for a value not computed,
    ``format_time``), printed by fastprogress's ConsoleMasterBar.write(line, table=True):
    ``names = [name + ' ' * (8-len(name)) if len(name) < 8 else name for name in line]``,
    ``'  '.join(names)``, then ``text += t + ' ' * (2 + len(name)-len(t))`` per value; the
    training progress bars between rows are redrawn with carriage returns."""
    names = ["epoch", "train_loss", "valid_loss", "error_rate", "time"]
    padded = [n + " " * (8 - len(n)) if len(n) < 8 else n for n in names]
    lines = ["  ".join(padded)]
    steps, evals = [], []
    for epoch in range(3):
        train, valid = 0.9 - epoch / 10, (0.7 - epoch / 20 if epoch < 2 else None)
        row = [str(epoch), f"{train:.6f}", "#na#" if valid is None else f"{valid:.6f}",
               "#na#" if valid is None else f"{0.2 - epoch / 100:.6f}", f"00:{12 + epoch:02d}"]
        lines.append("".join(t + " " * (2 + len(n) - len(t)) for t, n in zip(row, padded)))
        steps.append((epoch, round(train, 6)))
        if valid is not None:
            evals.append((epoch, round(valid, 6)))
    return Log("fastai", lines, steps, evals, src="fastai", extra={"epoch": 0.0})


def deepspeed_pipe() -> Log:
    """DeepSpeed's pipeline engine (deepspeed/runtime/pipe/engine.py train_batch):
    print(f'steps: {self.global_steps} loss: {self.agg_train_loss:0.4f} iter time (s): {iter_time:0.3f}
    samples/sec: {tput:0.3f}'), newer releases with f'{loss_name}: {loss_value.item():0.4f} ' per
    additional loss before 'iter time', a fork's f'step: {self.global_steps:>5} / {self.total_steps:>5} '
    with f'eta: {eta} ' after; beside DeepSpeed's own step report (log_dist), which the step line drops."""
    lines = []
    for s in (10, 20):
        lines.append(f"[2026-01-02 03:04:05,120] [INFO] [logging.py:96:log_dist] [Rank 0] step={s}, skipped=0, lr=[1e-06], mom=[0.0]")
        lines.append(f"steps: {s} loss: {2.5 - s / 100:0.4f} iter time (s): {3.181:0.3f} samples/sec: {0.314:0.3f}")
    lines.append(f"steps: 30 loss: {2.2:0.4f} moe_loss: {0.0125:0.4f} iter time (s): {3.1:0.3f} samples/sec: {0.322:0.3f}")
    lines.append(f"step: {40:>5} / {100:>5} loss: {2.1:0.4f} iter time (s): {3.0:0.3f} samples/sec: {0.333:0.3f} eta: 0:03:00 ")
    steps = [(10, 2.4), (20, 2.3), (30, 2.2), (40, 2.1)]
    return Log("deepspeed_pipe", lines, steps, [], src="deepspeed_pipe", extra={"step_time_s": [3.181, 3.181, 3.1, 3.0]})


def prime_rl() -> Log:
    """prime-rl's trainers log each step through loguru (format "{time:HH:mm:ss} {level: >7}
    {message}"), logger.success(step_message), launched by torchrun --tee (a "[default0]:" prefix):
    the SFT trainer's f"Step {progress.step} | Time: {step_time:.2f}s | Loss: {batch_loss.item():.4f}
    | Grad. Norm: {grad_norm:.4f} | LR: {current_lr:.2e} | Throughput: {throughput:.0f} tokens/s |
    MFU: {mfu:.1f}% | Peak Mem.: {peak_memory:.1f}/{max_memory:.1f} GiB ({pct:.1f}%)", the RL
    trainer's "Step {} | Time: {:.2f}s | Loss: {:.4f} | Entropy: {:.4f} | Mismatch KL: {:.4f} |
    Grad. Norm: {:.4f} | LR: {:.2e} | Throughput: {:.0f} tokens/s | MFU: {:.1f}%", and the older
    "Step {} | Time: {:.2f}s | Loss: {:.2f} | Entropy: {:.2f} | Importance Ratio: {:.2f} |
    Throughput: {:.0f} tokens/s | MFU: {:.1f}%"."""
    head = "[default0]:{} {: >7} "
    lines = [head.format("00:19:20", "INFO") + "Starting training loop (max_steps=100)"]
    lines.append(head.format("00:20:21", "SUCCESS") + "Step {} | Time: {:.2f}s | Loss: {:.4f} | Grad. Norm: {:.4f} | "
                 "LR: {:.2e} | Throughput: {:.0f} tokens/s | MFU: {:.1f}% | Peak Mem.: {:.1f}/{:.1f} GiB ({:.1f}%)".format(
                     0, 60.98, 1.2345, 0.8765, 2e-5, 12345, 12.3, 30.1, 79.2, 38.0))
    lines.append(head.format("00:20:33", "SUCCESS") + "Step {} | Time: {:.2f}s | Loss: {:.4f} | Entropy: {:.4f} | "
                 "Mismatch KL: {:.4f} | Grad. Norm: {:.4f} | LR: {:.2e} | Throughput: {:.0f} tokens/s | MFU: {:.1f}%".format(
                     1, 12.5, 1.1, 0.5, 0.001, 0.7, 2e-5, 23456, 10.0))
    lines.append(head.format("00:20:45", "SUCCESS") + "Step {} | Time: {:.2f}s | Loss: {:.2f} | Entropy: {:.2f} | "
                 "Importance Ratio: {:.2f} | Throughput: {:.0f} tokens/s | MFU: {:.1f}%".format(2, 11.0, 0.95, 0.4, 1.0, 23456, 10.0))
    return Log("prime_rl", lines, [(0, 1.2345), (1, 1.1), (2, 0.95)], src="pipes",
               extra={"step_time_s": [60.98, 12.5, 11.0], "grad_norm": [0.8765, 0.7, None], "mem_gib": [30.1, None, None]})


def nemo_rl_dpo() -> Log:
    """NeMo-RL's DPO (nemo_rl/algorithms/dpo.py dpo_train and validate_one_dataset; SFT, RM and
    GRPO print the same block): per epoch print(f"\\n{'=' * 25} Epoch {epoch + 1}/{max_epochs} {'=' *
    25}"), per step print(f"\\n{'=' * 25} Step {current_step + 1}/{steps} {'=' * 25}") (the step within
    the epoch), "▶ Taking a training step...", every val_period steps f"▶ Starting validation at step
    {total_steps + 1} for `{name}` set..", f"\\n📊 Validation Results for `{name}` set:" and f"    •
    Validation {metric}: {value:.4f}", then "\\n📊 Training Results:", f"  • {metric}: {value:.4f}",
    "\\n⏱️  Timing:", f"  • Total step time: {total_time:.2f}s", f"  • {k}: {v:.2f}s ({pct:.1f}%)".
    Two epochs of two steps, validation every two steps (before that step's training results)."""
    eq = "=" * 25
    lines = ["▶ Setting up compute cluster...", "  ✓ Ray cluster initialized with 1 nodes"]
    steps, evals, times = [], [], []
    for ep in (1, 2):
        lines += ["", f"{eq} Epoch {ep}/2 {eq}"]
        for s in (1, 2):
            total = (ep - 1) * 2 + s
            lines += ["", f"{eq} Step {s}/2 {eq}", "▶ Taking a training step..."]
            if total % 2 == 0:
                lines += [f"▶ Starting validation at step {total} for `default` set..", "",
                          "📊 Validation Results for `default` set:",
                          f"    • Validation loss: {0.7 - total / 100:.4f}", f"    • Validation accuracy: {0.5:.4f}", "",
                          "  ⏱️  Validation Timing for `default` set:", f"    • Total validation time: {3.21:.2f}s"]
                evals.append((total, round(0.7 - total / 100, 4)))
            lines += ["", "📊 Training Results:", f"  • loss: {0.69 - total / 100:.4f}", f"  • accuracy: {0.5 + total / 10:.4f}",
                      "", "⏱️  Timing:", f"  • Total step time: {12.0 + total:.2f}s",
                      f"  • policy_training: {10.0:.2f}s ({100 * 10 / (12 + total):.1f}%)"]
            steps.append((total, round(0.69 - total / 100, 4)))
            times.append(12.0 + total)
    return Log("nemo_rl_dpo", lines, steps, evals, src="nemo_rl", extra={"step_time_s": times})


def lightning_csv() -> Log:
    """Lightning's CSVLogger (lightning/fabric/loggers/csv_logs.py _ExperimentWriter): log_metrics
    adds metrics["step"] = step, save() writes csv.DictWriter rows under the sorted names of every
    metric logged (metrics_keys.sort()), an empty cell where a row has no value. self.log(
    "train_loss", loss, on_step=True, on_epoch=True) every log_every_n_steps (50) gives
    train_loss_step at steps 49, 99, 149; the epoch's end gives train_loss_epoch and val_loss in a
    row of its own at the same step: an evaluation there, no second training step."""
    import csv
    import io
    rows = [{"epoch": 0, "step": s, "train_loss_step": loss} for s, loss in ((49, 0.69), (99, 0.68), (149, 0.67))]
    rows.append({"epoch": 0, "step": 149, "train_loss_epoch": 0.68, "val_loss": 0.45})
    rows += [{"epoch": 1, "step": s, "train_loss_step": loss} for s, loss in ((199, 0.6), (249, 0.59))]
    keys = sorted(set().union(*rows))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    steps = [(49, 0.69), (99, 0.68), (149, 0.67), (199, 0.6), (249, 0.59)]
    return Log("lightning_csv", out.getvalue().splitlines(), steps, [(149, 0.45)], src="csv")


def lightly_train() -> Log:
    """lightly-train's log_step (src/lightly_train/_commands/train_task_helpers.py): " | ".join of
    f"{split.capitalize()} Step {step + 1:>{w}}/{max_steps:>{w}}" (w = len(str(max_steps))),
    f"Epoch {epoch}" (the completed epochs), f"{split}_loss: {loss:4.4f}", f"lr: {lr:2.8f}",
    f"grad_norm: {norm:4.4f}", f"Profiling [ {' | '.join(parts)} ]" ("GPU Util {u:3.1f}%", "GPU Max
    Mem {mb:7.1f} MB", "Step Time {t:4.2f}s", "Data Time {t:4.2f}s", "{n:4.0f} img/s"), behind its
    logger's "[%(asctime)s][%(levelname)s] ". The step counts the run: max_steps is its total."""
    head = "[2026-04-01 13:02:{:02d},052][INFO] "
    lines, steps = [], []
    w = len(str(300))
    for i, step in enumerate((99, 199, 299)):
        loss = 30.0 - step / 100
        prof = " | ".join([f"GPU Util {52.3:3.1f}%", f"GPU Max Mem {9760.3:7.1f} MB", f"Step Time {0.27:4.2f}s",
                           f"Data Time {0.03:4.2f}s", f"{121:4.0f} img/s"])
        lines.append(head.format(i) + " | ".join([f"Train Step {step + 1:>{w}}/{300:>{w}}", f"Epoch {(step + 1) // 150}",
                                                 f"train_loss: {loss:4.4f}", f"lr: {5.457e-05:2.8f}",
                                                 f"grad_norm: {1.25:4.4f}", f"Profiling [ {prof} ]"]))
        steps.append((step + 1, round(loss, 4)))
    lines.append(head.format(9) + "Validating...")
    lines.append(head.format(10) + " | ".join([f"Val Step {1:>3}/{157:>3}", "Epoch 2", f"val_loss: {26.5:4.4f}",
                                               f"Profiling [ GPU Util {30.0:3.1f}% | Step Time {1.58:4.2f}s ]"]))
    return Log("lightly_train", lines, steps, [(300, 26.5)], src="lightly_train",
               extra={"max_steps": [300] * 3, "step_time_s": [0.27] * 3})


def wenet() -> Log:
    """WeNet's executor (wenet/utils/executor.py, logging.debug on every rank, behind the
    logging format "%(asctime)s %(levelname)s %(message)s"): 'TRAIN Batch {}/{} loss {:.6f} '
    .format(epoch, batch_idx, loss), 'loss_att {:.6f} ', 'loss_ctc {:.6f} ', 'lr {:.8f} rank {}';
    its cross validation 'CV Batch {}/{} loss {:.6f} ... history loss {:.6f} rank {}'. The first
    rank's lines are the run's; the batch index restarts each epoch."""
    lines, steps = [], []
    for i, (epoch, batch) in enumerate(((0, 0), (0, 100), (0, 200), (1, 0), (1, 100))):
        for rank in (0, 1):
            loss = 120.0 / (i + 1) + rank
            lines.append(f"{_ts(i)},107 DEBUG " + f"TRAIN Batch {epoch}/{batch} loss {loss:.6f} "
                         + f"loss_att {loss * 0.9:.6f} " + f"loss_ctc {loss * 1.2:.6f} " + f"lr {0.001 * (i + 1):.8f} rank {rank}")
            if rank == 0:
                steps.append(((201 if epoch else 0) + batch, round(loss, 6)))
        if (epoch, batch) == (0, 200):
            lines.append(f"{_ts(i)},773 DEBUG CV Batch 0/0 loss 28.517015 loss_att 24.142754 loss_ctc 38.723625 "
                         "history loss 27.957858 rank 0")
    return Log("wenet", lines, steps, src="wenet", extra={"lr": [0.001 * (i + 1) for i in range(5)]})


ALL = (fairseq_simple, lambda: fairseq_simple(old=True), fairseq_json, fairseq_tqdm, mmcv1, mmengine, torchtune,
       lightning2, veomni, tqdm_loop_postfix, lightning_nemo_bar, nemo2, nemo_automodel, detectron2, nanogpt, megatron_validation,
       swift_prefixed, hf_eval, deepspeed, deepspeed_alone, maxtext, mlx_lm, litgpt, litgpt_fork, tf_trainer, tf_estimator, unsloth, caffe, espnet2, sb3, ultralytics, fastai_table, deepspeed_pipe, prime_rl,
       nemo_rl_dpo, lightning_csv, lightly_train, wenet)
