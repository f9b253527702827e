"""Per-format readers for one visible line segment. Each returns None when the text is not
its format; none of them raises on odd input (the parser also guards every call).

Formats (``src`` names in records):
- ``swift_dict``: ms-swift HF-trainer dict (``global_step/max_steps``, ``train_speed(...)``,
  ``memory(GiB)``; float values or, with transformers 5.x, string values).
- ``swift_megatron``: ms-swift 4.x Megatron dict (``'iteration': '10/200'``).
- ``hf_dict``: a Hugging Face Trainer dict (no step in it: numbered by the parser).
- ``jsonl``: one JSON object per line (ms-swift ``logging.jsonl``, generic metric files,
  moeconsole's own metrics.jsonl).
- ``megatron`` / ``megatron_swift3``: Megatron-LM ``training_log`` iteration line (the second
  is ms-swift 3.x's patched line with ``memory(GiB)`` and elapsed/remaining time).
- ``megatron_mem``: ``[Rank N] (after N iterations) memory (MB) | ...`` report lines.
- ``nanogpt_pipe``: ``step 00050/30000 (0.17%) | loss: ... | dt: ...ms | tok/sec: ...``.
- ``kv``: ``key=value`` / ``key: value`` lines with a step (``step: 5  loss: 1.2  memory: 3GiB``).
- ``pl_bar``: a PyTorch Lightning / NeMo progress bar whose postfix carries the metrics
  (``Epoch 0:  12%|...| 188/1563 [02:05<15:15, 1.50it/s, v_num=0, loss=7.75, global_step=188.0]``).
- ``tqdm_postfix``: any other tqdm bar with metrics in its postfix, ``name=value`` (tqdm's
  ``set_postfix``) or ``name: value``; the step is the bar's count unless the postfix names one.
- ``mmengine``: mmengine / xtuner / mmdet logger lines
  (``Epoch(train)  [1][200/735]  lr: 2.0000e-04  eta: ...  time: 3.4  memory: 10762  loss: 2.75``).
"""
from __future__ import annotations

import json
import re
from typing import Any

from runner.ingest.pydict import parse_pydict
from runner.ingest.records import (MEM_ALLOCATED, MEM_DEVICE_USED, MEM_MAX_ALLOCATED, MEM_MAX_RESERVED, MEM_RESERVED,
                                   parse_number)
from runner.rundir.rundir import ATTEMPT_MARKER_RE

SWIFT_HF_KEYS = frozenset(("global_step/max_steps", "train_speed(s/it)", "train_speed(iter/s)",
                           "memory(GiB)", "remaining_time", "elapsed_time", "percentage"))


def read_object(text: str) -> tuple[dict, str] | None:
    """(mapping, src) for a segment that is a whole printed dict or JSON object."""
    if not (text.startswith("{") and text.endswith("}")):
        return None
    if text.startswith('{"'):
        try:
            obj = json.loads(text)
        except ValueError:
            obj = parse_pydict(text)
        if isinstance(obj, dict):
            return obj, "jsonl"
        return None
    obj = parse_pydict(text)
    if obj is None:
        return None
    return obj, dict_src(obj)


def dict_src(obj: dict) -> str:
    it = obj.get("iteration")
    if isinstance(it, str) and "/" in it:
        return "swift_megatron"
    if any(k in SWIFT_HF_KEYS for k in obj):
        return "swift_dict"
    return "hf_dict"


# --------------------------------------------------------------------------- Megatron-LM

_MEGATRON_ITER_RE = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MEGATRON_TS_RE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\]\s*")


def read_megatron(text: str) -> tuple[dict, str] | None:
    """Megatron-LM's per-iteration line as a mapping ('iteration': 'i/N', 'lm loss': ...)."""
    m = _MEGATRON_ITER_RE.search(text)
    if m is None:
        return None
    head = text[:m.start()].strip()
    out: dict[str, Any] = {"iteration": f"{m.group(1)}/{m.group(2)}"}
    ts = _MEGATRON_TS_RE.match(head)
    if ts:
        out["timestamp"] = ts.group(1)
    elif head:
        return None
    for piece in text[m.end():].split("|"):
        key, sep, value = piece.rpartition(": ")
        key = key.strip()
        if not sep or not key:
            continue
        out[key] = value.strip()
    src = "megatron_swift3" if ("memory(GiB)" in out or "remaining time" in out) else "megatron"
    return out, src


_MEM_REPORT_RE = re.compile(r"^\[Rank (\d+)\] \((.*?)\) memory \(MB\)(.*)$")
_MEM_FIELD_RE = re.compile(r"\|\s*([a-z ]+?):\s*([-+\w.]+)")
_AFTER_ITERS_RE = re.compile(r"^after (\d+) iterations$")


_MEGATRON_MEM_NAMES = {"allocated": MEM_ALLOCATED, "max allocated": MEM_MAX_ALLOCATED,
                       "reserved": MEM_RESERVED, "max reserved": MEM_MAX_RESERVED,
                       "total device memory used": MEM_DEVICE_USED}


def read_memory_report(text: str) -> dict | None:
    """A Megatron ``report_memory`` line (``[Rank N] (after N iterations) memory (MB) |
    allocated: ... | max allocated: ... | reserved: ... | max reserved: ...``): {'rank', 'name',
    'step' (None unless the report is '(after N iterations)'), 'values' in GiB under the
    ``MEMORY_FIELDS`` names}."""
    if not text.startswith("[Rank "):
        return None
    m = _MEM_REPORT_RE.match(text)
    if m is None:
        return None
    rank, name, rest = int(m.group(1)), m.group(2), m.group(3)
    values: dict[str, float] = {}
    for key, raw in _MEM_FIELD_RE.findall(rest):
        num = parse_number(raw)
        field = _MEGATRON_MEM_NAMES.get(key.strip())
        if num is not None and field is not None:
            values[field] = num / 1024.0
    after = _AFTER_ITERS_RE.match(name)
    return {"rank": rank, "name": name, "step": int(after.group(1)) if after else None, "values": values}


# --------------------------------------------------------------------------- text key/value

_NUM = r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)\b"
_UNIT = r"GiB|GB|MiB|MB|ms|s|%|m|it/s|s/it|tok/s"
_PIPE_HEAD_RE = re.compile(r"^step\s+(\d+)(?:\s*/\s*(\d+))?\s*(?:\(\s*[\d.]+%\s*\))?\s*\|")
_PIPE_FIELD_RE = re.compile(r"^\s*([A-Za-z_][\w/ .()-]*?)\s*:\s*(" + _NUM + r")\s*(" + _UNIT + r")?\s*$")
_KV_RE = re.compile(
    r"(?<![\w./-])(?P<key>[A-Za-z_][\w./-]*(?:\([A-Za-z/%]+\))?)(?P<sep>\s*[:=]\s*|\s+)"
    r"(?P<val>" + _NUM + r")(?:/(?P<tot>\d+))?(?P<unit>" + _UNIT + r")?(?![\w.])")
_STEP_HEAD_RE = re.compile(r"^(?:step|iter|iteration)\s+(\d+)(?:\s*/\s*(\d+))?\s*[:,|]?", re.I)

_STEP_WORDS = frozenset(("step", "global_step", "iter", "iteration", "steps"))
_SPACE_KEYS = frozenset(("loss", "lr", "time", "dt", "mfu", "step", "iter", "iteration", "epoch",
                         "gnorm", "grad_norm", "tps"))
# kv key (lower case) -> record field; memory and time keys take their unit into account
_KV_FIELDS = {
    "loss": "loss", "train_loss": "loss", "train/loss": "loss", "lm_loss": "loss",
    "grad_norm": "grad_norm", "gnorm": "grad_norm", "grad-norm": "grad_norm", "gradnorm": "grad_norm",
    "train/grad_norm": "grad_norm",
    "lr": "lr", "learning_rate": "lr", "train/lr": "lr",
    "memory": "mem_gib", "mem": "mem_gib", "mem_gib": "mem_gib", "max_mem": "mem_gib",
    "memory_gib": "mem_gib", "gpu_mem": "mem_gib", "peak_mem": "mem_gib", "mem_reserved": "mem_gib",
    "tps": "tokens_per_s", "tok/s": "tokens_per_s", "tok/sec": "tokens_per_s", "tokens/s": "tokens_per_s",
    "tokens_per_s": "tokens_per_s", "tokens_per_sec": "tokens_per_s",
    "dt": "step_time_s", "time": "step_time_s", "step_time": "step_time_s", "iter_time": "step_time_s",
    "step_time_s": "step_time_s",
    "epoch": "epoch",
}


def _num(raw: str) -> float | None:
    return parse_number(raw.replace(",", ""))


def _to_field(field: str, value: float, unit: str | None) -> float | None:
    """Apply a unit to a value bound for a record field."""
    if field == "mem_gib":
        if unit in ("MiB", "MB"):
            return value / 1024.0
        return value
    if field == "step_time_s":
        if unit == "ms":
            return value / 1000.0
        if unit == "m":
            return value * 60.0
        if unit == "it/s":
            return None if value == 0 else 1.0 / value
        return value
    return value


def read_nanogpt_pipe(text: str) -> tuple[dict, str] | None:
    """``step 00050/30000 (0.17%) | loss: 3.2 | lrm: 1.00 | dt: 350.12ms | tok/sec: 1,497,753 |``."""
    m = _PIPE_HEAD_RE.match(text)
    if m is None:
        return None
    out: dict[str, Any] = {"step": int(m.group(1))}
    if m.group(2):
        out["max_steps"] = int(m.group(2))
    got = False
    for piece in text[m.end():].split("|"):
        f = _PIPE_FIELD_RE.match(piece)
        if f is None:
            continue
        key, raw, unit = f.group(1).strip(), f.group(2), f.group(3)
        value = _num(raw)
        if value is None:
            continue
        field = _KV_FIELDS.get(key.lower())
        if field is not None and field not in out:
            out[field] = _to_field(field, value, unit)
            got = True
        else:
            out[key] = value
    return (out, "nanogpt_pipe") if got else None


def read_kv(text: str) -> tuple[dict, str] | None:
    """Generic ``key=value`` / ``key: value`` pairs; needs a step and one known metric."""
    if not any(c in text for c in ":= "):
        return None
    out: dict[str, Any] = {}
    pos = 0
    head = _STEP_HEAD_RE.match(text)
    if head:
        out["step"] = int(head.group(1))
        if head.group(2):
            out["max_steps"] = int(head.group(2))
        pos = head.end()
    got_metric = False
    for m in _KV_RE.finditer(text, pos):
        key, sep, raw, tot, unit = m.group("key", "sep", "val", "tot", "unit")
        low = key.lower()
        if not sep.strip() and low not in _SPACE_KEYS:
            continue
        if low in _STEP_WORDS:
            if "step" not in out and raw.isdigit():
                out["step"] = int(raw)
                if tot:
                    out["max_steps"] = int(tot)
            continue
        value = _num(raw)
        if value is None:
            continue
        field = _KV_FIELDS.get(low)
        if field is not None and field not in out:
            if field == "step_time_s" and low == "time" and unit not in (None, "ms", "s"):
                out[key] = value
                continue
            out[field] = _to_field(field, value, unit)
            got_metric = True
        elif key not in out:
            out[key] = value
    if "step" not in out or not got_metric:
        return None
    return out, "kv"


# --------------------------------------------------------------------------- marks

_SAVE_HF_RE = re.compile(r"Saving model checkpoint to (\S+)")
_SAVE_MEGATRON_RE = re.compile(r"successfully saved checkpoint (?:from|at) iteration\s+(\d+) to (\S+)")
_SAVE_SWIFT_MEGATRON_RE = re.compile(r"Successfully saved Megatron model weights in `([^`]+)`")
_LAST_CKPT_RE = re.compile(r"last_model_checkpoint: (\S+)")
_CKPT_STEP_RE = re.compile(r"(?:checkpoint-|iter_)(\d+)/*$")


def step_from_path(path: str) -> int | None:
    m = _CKPT_STEP_RE.search(path.rstrip("/"))
    return int(m.group(1)) if m else None


def read_mark(text: str) -> dict | None:
    """Checkpoint saves, the final checkpoint, the runner's attempt marker."""
    if "=== moeconsole" in text:
        m = ATTEMPT_MARKER_RE.search(text)
        if m:
            return {"kind": "attempt_marker", "attempt": int(m.group(1))}
    if "heckpoint" not in text and "Megatron model weights" not in text:
        return None
    m = _SAVE_HF_RE.search(text)
    if m:
        path = m.group(1).rstrip(".")
        return {"kind": "checkpoint_saved", "path": path, "step": step_from_path(path)}
    m = _SAVE_MEGATRON_RE.search(text)
    if m:
        return {"kind": "checkpoint_saved", "path": m.group(2), "step": int(m.group(1))}
    m = _SAVE_SWIFT_MEGATRON_RE.search(text)
    if m:
        path = m.group(1)
        return {"kind": "checkpoint_saved", "path": path, "step": step_from_path(path)}
    m = _LAST_CKPT_RE.search(text)
    if m:
        path = m.group(1)
        return {"kind": "last_model_checkpoint", "path": None if path == "None" else path}
    return None


# --------------------------------------------------------------------------- progress-bar postfix

# "{desc}: {pct}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{, postfix}]" and the
# total-less "{desc}: {n}{unit} [{elapsed}, {rate}{, postfix}]".
_BAR_POSTFIX_RE = re.compile(
    r"^(?:(?P<desc>[^|%\[\]\r\n]{0,120}?):\s*)?"
    r"(?:\d{1,3}%\|[^|\r\n]{0,300}\|\s*(?P<n>\d+)/(?P<tot>\d+|\?)"
    r"|(?P<n2>\d+)[A-Za-z/]{0,12})"
    r"\s*\[[\d:]+(?:<[\d:?]+)?,\s*[^,\]]*?(?:it/s|s/it)(?P<post>,[^\]\r\n]*)\]\s*$")
_POSTFIX_PAIR_RE = re.compile(r"^\s*([A-Za-z_][\w./ ()-]{0,80}?)\s*(?:=|:\s)\s*(\S+)\s*$")
_EPOCH_DESC_RE = re.compile(r"^Epoch\s+(\d+)\b")


def read_bar_postfix(text: str) -> tuple[dict, str] | None:
    """A tqdm bar whose postfix carries metrics, as a mapping; None for a bar without one.

    The step is the postfix's own (``global_step=188.0``, ``step``, ``iter``); else the
    bar's count, unless the bar counts batches of an epoch (``Epoch N: ...``, Lightning), in
    which case the mapping has no step and the parser numbers it."""
    if "it/s, " not in text and "s/it, " not in text:   # the rate, then ", " and the postfix
        return None
    m = _BAR_POSTFIX_RE.match(text)
    if m is None:
        return None
    out: dict[str, Any] = {}
    for piece in m.group("post")[1:].split(","):
        pair = _POSTFIX_PAIR_RE.match(piece)
        if pair is None:
            continue
        key, raw = pair.group(1).strip(), pair.group(2)
        if key.lower() in ("global_step", "step", "iter", "iteration"):
            num = parse_number(raw)
            if num is not None and num >= 0 and num == int(num):
                out["step"] = int(num)
            continue
        out[key] = raw
    if not any(parse_number(out.get(k)) is not None for k in _BAR_METRIC_KEYS):
        return None
    desc = (m.group("desc") or "").strip()
    epoch = _EPOCH_DESC_RE.match(desc)
    if epoch and "epoch" not in out:
        out["epoch"] = epoch.group(1)
    lightning = bool(epoch) or "v_num" in out
    if "step" not in out and not lightning:
        out["step"] = int(m.group("n") or m.group("n2"))
        tot = m.group("tot")
        if tot and tot.isdigit():
            out["max_steps"] = int(tot)
    return out, "pl_bar" if lightning else "tqdm_postfix"


_BAR_METRIC_KEYS = ("loss", "train_loss", "reduced_train_loss", "lm_loss", "grad_norm", "lr",
                    "learning_rate", "gnorm")


# --------------------------------------------------------------------------- mmengine / xtuner

_MMENGINE_RE = re.compile(
    r"\b(Epoch|Iter)\((train|val|test)\)\s*(?:\[\s*(\d+)\s*\])?\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_MMENGINE_PAIR_RE = re.compile(r"(?<!\S)([A-Za-z_][\w./-]*):\s+(\S+)")
_MMENGINE_KEYS = {"time": "step_time", "memory": "memory(MB)", "lr": "lr"}


def read_mmengine(text: str) -> tuple[dict, str] | None:
    """An mmengine ``LoggerHook`` training line (mmdet, mmpretrain, xtuner, ...).

    ``Epoch(train) [e][i/n]``: step = (e-1)*n + i, epoch = e-1 + i/n (fractional, like
    Hugging Face); ``Iter(train) [i/n]``: step i of n. ``time`` is seconds per iteration,
    ``memory`` is MB (max allocated). Validation/test lines are not training records."""
    m = _MMENGINE_RE.search(text)
    if m is None or m.group(2) != "train":
        return None
    kind, ep, i, n = m.group(1), m.group(3), int(m.group(4)), int(m.group(5))
    out: dict[str, Any] = {}
    if kind == "Epoch":
        if ep is None or n <= 0:
            return None
        e = int(ep)
        out["step"] = max(e - 1, 0) * n + i
        out["epoch"] = max(e - 1, 0) + i / n
        out["iters_per_epoch"] = n
    else:
        out["step"], out["max_steps"] = i, n
    for key, raw in _MMENGINE_PAIR_RE.findall(text, m.end()):
        out.setdefault(_MMENGINE_KEYS.get(key, key), raw)
    return out, "mmengine"
