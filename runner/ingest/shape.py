"""The shape learner: reads metric lines no named reader claims (``moeconsole.runner.ingest.formats``).

A training log repeats one line shape per family: fixed words around changing numbers. The
learner reads a line the way a person does:

1. **Prefix.** A constant-shaped prefix the environment adds (timestamps in their common forms,
   a log level with its logger name, ``file.py:123``, ``host:rank``, ``[Rank 0]``, a log
   viewer's ``date time | `` column) is stripped (``strip_prefix``; the parser also retries its
   named readers on the stripped text, so a Megatron memory report behind a timestamp is read).
2. **Tokens.** Each number (also ``nan``/``inf``, scientific notation, ``1,234``, a fraction
   ``N/M`` or ``N of M``, a unit glued or after one space) is a value; durations (``0:09:53``)
   and the text between numbers are the line's fixed part. The shape is the fixed part with
   each number replaced by ``#`` (``shape_key``).
3. **Names.** A number is named by the words before it, up to the nearest separator
   (`` - ``, ``|``, tab, two spaces, ``,``, ``;``, brackets): ``name = value``, ``name: value``,
   ``name value``, ``key:value - key:value``, ``train/CrossEntropyLoss 2.3``. A number in
   parentheses right after another is that one's running average (``Loss 6.9 (7.1)`` gives
   ``Loss_avg``); a number followed by a per-step unit (``(0.5 sec/step)``, ``2ms/step``) is the
   step time. Names map to record fields through ``records.field_of`` (the one synonym table);
   every other named number is kept under its printed name.
4. **Step.** The counter is a number named like a step (``step``, ``global step``, ``iter``,
   ``iteration``, ``update``, ``it``, ``Batch``; ``N of M`` and ``N/M`` forms), else an unnamed
   fraction (``[ 100/ 1000]``). With an epoch beside it (named, a first bracket ``[ 1/ 3]``, or
   an ``Epoch 2/10`` header line before), a counter that goes back while the epoch goes forward
   restarted: the global step is the steps of the earlier epochs (the counter's total, else
   the highest value seen) plus the counter, so it never goes backwards. An ``Epoch E/M`` header
   counts from 1: counter lines of epoch E (named on them or not) start after ``(E - 1) x``
   their total, and ``max_steps`` is ``M x`` the total.
5. **No invented step.** A header line that carries only a step, followed by indented metric
   lines, is one record (``Block``). A line with metrics and no counter is an epoch summary:
   when the log's records so far came from it (a log of epoch lines only), its epoch is the
   counter; else it is a ``train_summary`` mark at the last step, or, with nothing before it,
   left out and counted.
6. **Evaluations.** A line whose first word is an evaluation word (``Test``, ``Eval``,
   ``Validation``, ``valid``, ...) or whose loss names a split (``valid loss``) is an evaluation
   (an ``eval`` mark at the step it names, else the last training step), never a step.

Pure: ``learn_line`` takes the text and the learner's small state, returns what the line is.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from moeconsole.runner.core.readctx import digest as shape_digest, through_last_value
from moeconsole.runner.ingest.formats import PRINTED_VALUE, ROUNDED_COUNT_UNITS, TOKEN_RATE_UNIT_RE, TOKEN_RATE_UNITS, VERL_LINE_MAX, mask_optimizer_echo, own_leading_counter, verl_step_line
from moeconsole.runner.ingest.records import VALUE_FIELDS, EvalLine, eval_key, field_of, own_loss_name, parse_grouped_number, unit_value

SRC = "learned"

# ----------------------------------------------------------------------------- prefixes

_SEP = r"[\s|:,\-]*"
# Spark's log4j layout (see its place in ``_PREFIX_RES``); a runner before batch 50 kept the
# logger's class ("Trainer: ") in the line's shape (``legacy_head``)
_SPARK_PREFIX = r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) [A-Za-z_$][\w$.]*: "
_PREFIX_RES = tuple(re.compile(p) for p in (
    # Sample Factory's log format (sample_factory/utils/utils.py: ColoredFormatter("%(log_color)s
    # [%(asctime)s][%(process)05d] %(message)s")): the process id glued to the stamp's bracket is
    # no step ("[2022-03-02 23:05:46,460][18482] Avg episode reward: ..."); a bracketed number
    # standing alone ("[1000] train_loss=...", flax's clu writer) stays the line's own. "%05d" pads
    # the id to five digits at least (a pid is at most 7, Linux's pid_max 4194304): a shorter
    # number glued to the stamp ("[2024-01-01 10:00:01][100] loss: ...") is no process id and stays
    # the line's step (reviewed in R33)
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?\]\[\d{5,7}\]\s*",
    # Spark's log4j layout (conf/log4j.properties.template: "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n";
    # log4j2.properties.template since 3.3: "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex"): the
    # logger's class after the level ("22/06/01 10:06:44 ERROR RabitTracker$TrackerProcessLogger: "
    # before XGBoost4J-Spark's tracker relaying its Python logging lines) is no name of a value
    _SPARK_PREFIX,
    # 2024-01-02 03:04:05,678 / 2024-01-02T03:04:05.678Z / [2024/01/02 03:04:05] / 2024-01-02 03:04
    # (a logging datefmt with "%f", which time.strftime leaves as is: "2020-10-26 13:24:36.%f")
    r"^\[?\d{4}[-/.]\d\d[-/.]\d\d(?:[ T_]\d\d:\d\d(?::\d\d)?(?:[.,](?:\d+|%f))?)?(?:Z|[+-]\d\d:?\d\d)?\]?" + _SEP,
    # the same stamp with its year's first digits lost where a paste's selection began
    # ("025-06-18 00:36:02 [INFO] [Epoch 2/300] ..."): only with its time of day after it
    r"^\d{1,3}[-/.]\d\d[-/.]\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?" + _SEP,
    # a bracketed logger tag before the time: torchtitan's "[titan] 2026-01-09 19:01:15,282 - root -
    # INFO - " (torchtitan/tools/logging.py: logging.Formatter("[titan] %(asctime)s - %(name)s -
    # %(levelname)s - %(message)s"))
    r"^\[[A-Za-z][\w.-]{0,24}\]\s+(?=\[?\d{4}[-/.]\d\d[-/.]\d\d)",
    # 01/02 03:04:05 (detectron2, mmengine's short form), 01-02 03:04:05
    r"^\[?\d\d[-/]\d\d[ -]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?" + _SEP,
    # 10/17/2025 16:31:56, 10/04/19 14:41:25, [13/12/22 11:13:56]
    r"^\[?\d\d?[-/.]\d\d?[-/.]\d\d(?:\d\d)?[ T]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?\]?" + _SEP,
    # an elapsed-time column: "0:11:11 - "
    r"^\d{1,3}:\d\d:\d\d(?:[.,]\d+)?\s*[-|]\s*",
    # 03:04:05 / [03:04:05.123]
    r"^\[?\d\d:\d\d:\d\d(?:[.,]\d+)?\]?" + _SEP,
    # glog / absl: I0102 03:04:05.678901 12345 file.py:123]
    r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w./-]+:\d+\]\s*",
    # glog's shape with a whole date and the logger's name: DINOv2 (dinov2/logging/__init__.py:
    # "%(levelname).1s%(asctime)s %(process)s %(name)s %(filename)s:%(lineno)s] ", datefmt
    # "%Y%m%d %H:%M:%S": "I20250119 10:05:11 90 dinov2 helpers.py:102] "), DINOv3 and their forks
    r"^[IWEF]\d{8} \d\d:\d\d:\d\d \d+ [\w.-]+ [\w./-]+:\d+\]\s*",
    # nanotron's logger (src/nanotron/logging/base.py ``set_logger_verbosity_format``: "%(asctime)s
    # [%(levelname)s%(category)s{ranks_display}]: %(message)s", its ranks "EP=", "CP=", "DP=", "PP=",
    # "TP=" with the rank in each group (since 2025 only the groups larger than one; before, always
    # "DP=|PP=|TP="), then $SLURMD_NODENAME when set): "[INFO|DP=0|PP=0|TP=0]: " or "[INFO|DP=0|PP=1|
    # TP=0|lrdn0007]: ". The ranks are no step: a memory line of its ("Memory usage: 64.15MiB. Peak
    # allocated 309.29MiB ...") read DP=0 as step 0 (batch 47). Before the level's own rule below,
    # which would take "[INFO|DP" alone
    r"^\[(?:INFO|WARNING|DEBUG|ERROR|CRITICAL)(?:\|[A-Za-z][\w.-]*)?(?:\|(?:EP|CP|DP|PP|TP)=\d+)+(?:\|[\w.-]+)?\]:\s*",
    # a level with its logger name: [INFO], INFO:root:, [INFO|trainer.py:2134], INFO - name -
    # (one name: Python logging's BASIC_FORMAT "%(levelname)s:%(name)s:%(message)s", so in
    # "INFO:root:epoch: 1 - current lr: 0.0001" the message's "epoch:" is the message's)
    r"^\[?\s*(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL|NOTICE)(?:[|:][\w./-]*(?::\d+)?)?\]?"
    r"(?:\s*[-|]\s*[\w.]+\s*[-|])?" + _SEP,
    # OLMo's rich console handler (olmo/util.py ``RichHandler``: the time "[%Y-%m-%d %X]", the level
    # padded to 8, then ``get_location_text``'s f"[{record.name}:{record.lineno}, rank={local_rank}]",
    # "[root, rank=N]" for the root logger): "[2024-04-18 14:24:11] INFO     [olmo.train:729, rank=0]
    # [step=1/739328]": the location column's line and rank are no step (every block of an OLMo 0.2
    # run printed so was lost, batch 47). A logger's name is a module's (dotted, or __main__): a
    # bracket of another name ("[epoch:3, rank=0] loss: 0.5") stays the line's
    r"^\[(?:[A-Za-z_]\w*(?:\.\w+)+:\d+|__main__:\d+|root), rank=\d+\]\s*",
    # ezpz's logger (saforem2/ezpz, the launcher ALCF's torchtitan forks run under: "[2026-02-28
    # 14:29:22,114507][I][ft/trainer:364:__init__] "): after its time column, the level's first
    # letter and a "[module:line:function]" column
    r"^\[[DIWEC]\]\[[\w./-]+:\d+(?::[\w<>.]+)?\]\s*",
    # Julia's ConsoleLogger (stdlib Logging, ConsoleLogger.jl handle_message with default_metafmt):
    # a one-line message behind "[ " and the level's name with a colon ("[ Info: "), a message of
    # several lines behind "┌ Info: " (XGBoost.jl, Flux's loops print their rounds so)
    r"^[\[┌] (?:Info|Warning|Error|Debug): ",
    # the stream a wrapper read the line from, after its time column ("[08:03:35] [STDERR] ", a
    # trainer GUI's console: musubi-tuner's bars in its issue 477)
    r"^\[(?:STDOUT|STDERR|stdout|stderr)\]\s*",
    # MONAI Label's logging format (its apps' main.py logging.basicConfig): "[%(asctime)s]
    # [%(process)s] [%(threadName)s] [%(levelname)s] (%(name)s:%(lineno)d) - %(message)s": the process
    # and thread columns (Python's thread names: MainThread, Thread-N with its target since 3.10,
    # an executor's workers, Dummy-N), then the level (above) and the logger's name and line in
    # parentheses; a bracketed number before another bracket ("[1] [train] loss=...") stays
    r"^\[\d+\] \[(?:MainThread|Thread-\d+(?: \([\w.<>]+\))?|ThreadPoolExecutor-\d+_\d+|Dummy-\d+)\]\s+",
    r"^\([\w.]+:\d+\) - ",
    # the module and line in parentheses, then the level: "%(asctime)s (%(module)s:%(lineno)d)
    # %(levelname)s: %(message)s", the format TensorFlowTTS's examples configure (examples/
    # fastspeech2/train_fastspeech2.py logging.basicConfig :265-277, TensorSpeech/TensorFlowTTS
    # @1368771; its trainer logs one value a line, tensorflow_tts/trainers/base_trainer.py :658
    # and :989 f"(Step: {self.steps}) train_{metric_name} = {...:.4f}."), as ParallelWaveGAN's
    # and ESPnet's scripts do: "(base_trainer:831) INFO: (Step: 95400) ..." is no value named
    # base_trainer
    r"^\([\w.]+:\d+\) (?:DEBUG|INFO|WARNING|ERROR|CRITICAL): ",
    # a log pasted inside a markdown quote (GitHub issues: "> 0:\tlearn: ..."): the quote's "> "
    r"^>(?: |$)",
    # a log line kept in a Python or shell comment, its stamp after the "#" (a run description
    # noting each run's last Sample Factory report: "# [2020-04-29 22:12:31,036][16355] Avg
    # episode reward: ..."): the comment's "#" before a bracketed date
    r"^#\s?(?=\[\d{4}[-/.]\d\d[-/.]\d\d)",
    # a log line pasted as a markdown code span (GitHub issues: "`step:1495/1770 val_loss:3.2778
    # ...", its closing backtick on the next line): the span's opening backtick, a lone one before
    # the text (CommonMark 0.31, 6.1 "Code spans": a code span begins with a backtick string; three
    # or more open a fenced block, which stays)
    r"^`(?=[^`\s])",
    # [file.py:123:func] / file.py:123 / file.py:123[pid] (a format with "%(lineno)d[%(process)d]")
    r"^\[?[\w./-]+\.py:\d+(?::\w+)?(?:\[\d+\])?\]?" + _SEP,
    # DeepSpeed's log_dist "[Rank 0] ", "rank0: ", "[rank 3]"
    r"^\[?[Rr]ank\s?\d+\]?:?\s+",
    # host:rank  (node01:3: ), a host:rank or module:line column (intern-studio-1:0  olmo.train:908  ),
    # a column that ends at a tab (OLMo's log format, olmo/util.py ``setup_logging``:
    # "%(asctime)s\t%(hostname)s:%(local_rank)s\t%(name)s:%(lineno)s\t%(levelname)s\t%(message)s")
    r"^[A-Za-z][\w.-]*:\d{1,5}:\s+",
    r"^[A-Za-z][\w.-]*:\d{1,6}(?:\s{2,}|\t)",
    # glog's file column after its timestamp: "I tensorflow/core/x.cc:1115] "
    r"^[IWEF]\s?[\w./-]+\.\w+:\d+\]\s*",
    # loguru's "{name}:{function}:{line} - " column, after its time and padded level columns
    # (loguru/_defaults.py LOGURU_FORMAT: "<green>{time:YYYY-MM-DD HH:mm:ss.SSS}</green> |
    # <level>{level: <8}</level> | <cyan>{name}</cyan>:<cyan>{function}</cyan>:<cyan>{line}</cyan>
    # - <level>{message}</level>"; many formats keep the column and end it with " | ")
    r"^[A-Za-z_][\w.]*:(?:[A-Za-z_]\w*|<module>):\d+\s+[-|]\s+",
    # a pictograph a script puts before its message ("✅ Step 1: loss=10.2313", "🚀 Epoch 3"):
    # Miscellaneous Symbols, Dingbats and the emoji blocks, then a blank (box drawing and block
    # elements, which tables and bars are drawn with, are not among them)
    "^[\u2600-\u27bf\U0001f300-\U0001faff][\u2600-\u27bf\U0001f300-\U0001faff\ufe0f\u200d]*\\s+",
    # Ray's worker prefix: "(TaskRunner pid=16292) ", "(pid=123, ip=10.0.0.1) "
    r"^\((?:\w+ )?pid=\d+(?:, ip=[\d.]+)?\)\s*",
    # a logging format's process and thread columns, Python logging's "%(process)d" and
    # "%(thread)d" behind "p:"/"P:" and "t:"/"T:" ("... %(levelname)s:%(name)s p:%(process)d
    # t:%(thread)d: %(message)s" in an ms-swift GRPO run with vLLM's workers, batch 45; the
    # widespread "P:%(process)d T:%(thread)d", "(P:%(process)d T:%(thread)d)::"): the thread's id
    # is threading.get_ident(), a pointer as large as 2**64, the process's at most 7 digits
    # (Linux's pid_max 4194304); neither is a step
    r"^\(?[Pp]:\d{1,7} [Tt]:\d{1,20}\)?:{0,2}\s+",
    r"^\d{1,5}:\s+",
    # a logger name before a level-less separator: "__main__ - ", "root | "
    r"^[A-Za-z_][\w.]*\s+[-|]\s+(?=\S)",
))
_MEM_REPORT_HEAD_RE = re.compile(r"^\[Rank \d+\] \(")


def strip_prefix(text: str, rules: tuple[re.Pattern[str], ...] | None = None) -> str:
    """The text with the constant-shaped prefix the environment added removed (at most 8 parts).
    ``rules``: the prefixes known (all of ``_PREFIX_RES`` but its last, a logger name)."""
    rules = _PREFIX_RES[:-1] if rules is None else rules
    for _ in range(8):
        if text.startswith("[Rank ") and _MEM_REPORT_HEAD_RE.match(text):
            return text   # Megatron's memory report: its "[Rank N] (...)" is the line's content
        if own_leading_counter(text):
            return text   # CatBoost's round, darknet's batch: its "100:" is the program's count, not a process label
        for rx in rules:
            m = rx.match(text)
            if m and m.end() > 0:
                text = text[m.end():]
                break
        else:
            # a logger name only right after a stripped part (the loop's first pass keeps it)
            return text
    return text


def strip_prefix_full(text: str, rules: tuple[re.Pattern[str], ...] | None = None) -> str:
    """``strip_prefix`` and then a logger name left in front (``__main__ - ``, ``root | ``)."""
    out = strip_prefix(text, rules)
    if out != text:
        m = _PREFIX_RES[-1].match(out)
        if m:
            out = strip_prefix(out[m.end():], rules)
    return out


_SPARK_PREFIX_RE = re.compile(_SPARK_PREFIX)
_RULES_BEFORE_SPARK = tuple(rx for rx in _PREFIX_RES[:-1] if rx.pattern != _SPARK_PREFIX)


def legacy_head(text: str, stripped: str) -> str | None:
    """What a runner before batch 50 (reading contexts up to version 5) kept in front of
    ``stripped`` (``strip_prefix_full(text)``) in a line's shape: the logger's class of Spark's
    log4j prefix ("Trainer: " of "22/06/01 10:05:00 INFO Trainer: Epoch 1, loss: 2.1"; that
    runner stripped the date and the level only). None when the line has no such prefix or the
    head holds a number (a shape's "#": the line's counters would not line up). A context saved
    by that runner names the line's shape, and its counter's, with the head (reviewed in R56: a
    run's epochs 6-10 were lost, or its steps 11-20 read as 1-10, across the upgrade)."""
    if not text[:1].isdigit() or not _SPARK_PREFIX_RE.match(text):
        return None
    old = strip_prefix_full(text, _RULES_BEFORE_SPARK)
    if old == stripped or not old.endswith(stripped) or any(c.isdigit() for c in old[:len(old) - len(stripped)]):
        return None
    return old[:len(old) - len(stripped)]


# ----------------------------------------------------------------------------- tokens

_UNITS = (r"GiB|GB|MiB|MB|KiB|KB|bytes|ms/batch|ms/step|ms/it(?:er)?|us/step|us/it|µs/step|sec/step|s/step|"
          r"s/it(?:er)?|it/s|steps/s|samples/s(?:ec)?|" + TOKEN_RATE_UNIT_RE + r"|ms|sec|s|%|[KMGTB]")
# A NaN spelling followed by one space and a lower-case name with its colon is a word of that
# name (Megatron's "number of nan iterations: 0"), not a value; one right after "=" or ":" is the
# value of the name before it whatever follows (Learning-to-See-in-the-Dark's train_Sony.py:
# "%d %d Loss=%.3f Time=%.3f", "Loss=nan Time=0.040"; before batch 42 the capital "Time=" matched
# the lower-case test, the pattern being case-blind, and the loss was lost).
# a calendar date is never a number of its own (2026-11-28, 2026/11/28, 28/11/2026, 28.11.2026)
_DATE = r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?!\d)|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}(?!\d)"
_TOKEN_RE = re.compile(
    r"(?P<dur>(?<![\w.])\d+:\d\d(?::\d\d)?(?:\.\d+)?(?![\w.:]))"
    r"|(?<![\w@.\-/^])(?!" + _DATE + r")(?P<num>[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d*)?(?:[eE][-+]?\d+)?"
    r"|[-+]?\.\d+(?:[eE][-+]?\d+)?|(?<=[=:])[-+]?(?:nan|inf(?:inity)?)(?![A-Za-z])"
    r"|[-+]?(?:nan|inf(?:inity)?)(?![A-Za-z])(?! (?-i:[a-z]+)[:=]))"
    r"(?:\s*(?:/|\bof\b)\s*(?P<tot>\d+)(?![\w.]))?"
    r"(?:\s?(?P<unit>" + _UNITS + r")(?![\w/])|(?P<rate>[A-Za-zµ]{1,8}/[A-Za-z]{1,8})(?![\w/])|(?![\w/]))",
    re.IGNORECASE)
# pieces of the text before a number, the last of which names it
_NAME_SPLIT_RE = re.compile(r"\s+-\s+|[|,;\t{}()\[\]]|\s{2,}|\.\s|>")
_STOP = frozenset(("at", "of", "on", "in", "is", "=", "and", "the", "a"))
_STEP_NAMES = frozenset(("step", "steps", "global step", "global_step", "globalstep", "iter", "iters",
                         "iteration", "iterations", "it", "update", "updates", "num_updates",
                         "train/global_step", "trainer/global_step", "batch", "batches", "step #",
                         "optimizer step", "opt step", "training step", "train step", "step_idx",
                         "step idx", "batch id", "batch_id", "batch_idx", "iter id",
                         "global iter",   # MiniLLM (LMOps): "| inner iter: {}/{} | ppo epoch: ... | global iter: {:6d}/{:6d}|"
                         # CPM-2's finetune_cpm2.py: 'epoch {:3d}/{:3d} |'.format(e, args.epochs) +
                         # ' global iteration {:8d}/{:8d} |'.format(global_step, args.train_iters) + ...
                         "global iteration",
                         # wav2letter/flashlight (src/runtime/Logger.cpp getLogString: insertItem("epoch",
                         # ...); insertItem("nupdates", format("%12d", nupdates)); ... "loss", then a
                         # "<set>-loss" per validation set): the updates taken, the epoch beside it
                         "nupdates",
                         # Chinese-CLIP (cn_clip/training/train.py train @31863c7 l.275-285): f"Global Steps:
                         # {step + 1}/{args.max_steps} | " + f"Train Epoch: {epoch + 1} [{num_samples}/
                         # {samples_per_epoch} ({percent_complete:.0f}%)] | " + f"Loss: ..." : the run's
                         # step and its length; the bracket counts the epoch's samples
                         "global steps"))
# a counter's name ending in _iter/_step (Acc_iter, cur_iter, global_iter), not a total (max_iter)
_ITER_NAME_RE = re.compile(r"^(?!max|num|total|n_)[a-z]+_(?:iter|step)$")
# A MetricLogger's header before its bracketed count names the loop, not the count: DINOv2's
# train loop (dinov2/train/train.py: header = "Training"; metric_logger.log_every(data_loader, 10,
# header, max_iter, start_iter), its log_every printing header, then "[{0:>7}/{1}]" of the
# iteration and max_iter): "Training  [     40/5000000]  eta: ..." counts like an unnamed n/N.
# Only with the "eta:" log_every prints after the count (its delimiter "  " between the header,
# the count and f"eta: {eta_string}"): "Training [2/20] loss: 0.6131 acc: 0.6100" is a loop's
# epoch summary, its count no step.
_LOOP_HEADER_NAMES = frozenset(("training",))
_LOOP_HEADER_RE = re.compile(r"(?:^|\s)(?:" + "|".join(_LOOP_HEADER_NAMES) + r")\s*\[\s*\d+\s*/\s*\d+\s*\]\s+eta:",
                             re.IGNORECASE)
_BATCH_NAMES = frozenset(("batch", "batches", "batch id", "batch_id", "batch_idx"))
# a batch or step count named as the run's, beside an epoch's batch counter
_GLOBAL_BATCH_RE = re.compile(r"^global[ _]?(?:batch|step|iter(?:ation)?)(?:[ _]?(?:idx|id))?$")

# A micro-batch counter beside the step ("it=70 micro=10/10 loss=2.479"): the line reports one
# micro-batch of a gradient-accumulation step (a debug print per forward/backward), not the
# optimizer step, whose own line (mlx-lm's "Iter 70: Train loss ...") gives its record.
_MICRO_NAMES = frozenset(("micro", "micro_step", "microstep", "micro step", "micro_batch", "microbatch",
                          "micro batch", "micro_idx"))
_EPOCH_NAMES = frozenset(("epoch", "epochs", "ep", "train epoch", "training epoch", "epoch id", "epoch_id",
                          "epoch_idx"))
# "validate" leads torchtitan's evaluation line (torchtitan/components/metrics.py
# ``MetricsProcessor.log_validation``: logger.info(f"{color.yellow}validate step: {step:2}  "
# f"{color.green}loss: {loss:7.4f}  ..."), logged at the training step it evaluates
_EVAL_WORDS = frozenset(("test", "testing", "eval", "evaluation", "evaluating", "valid", "validation",
                         "validating", "validate", "val", "dev"))
_SHAPE_WORD_RE = re.compile(r"[a-z]+")
# a batch counter spelled with its "mini" (CDCN's train_CDCN.py prints to stdout every 50 batches
# 'epoch:%d, mini-batch:%3d, lr=%f, Absolute_Depth_loss= %.4f, Contrastive_Depth_loss= %.4f', the
# epoch's running averages so far), its "-" or "_" read as a space
_MINI_BATCH_NAMES = frozenset(("mini batch", "minibatch", "mini batch id", "mini batch idx"))


def _names_a_count(name: str) -> bool:
    """Whether a value's name is a step's, a batch's or a micro-batch's counter (``mini-batch``,
    ``batch_idx``, ``cur_iter``): a line carrying one reports a point inside its epoch."""
    low = _norm(name)
    spaced = re.sub(r"[-_]+", " ", low)
    return any(n in _STEP_NAMES or n in _MICRO_NAMES or n in _MINI_BATCH_NAMES for n in (low, spaced)) \
        or _ITER_NAME_RE.match(low) is not None


def loss_in_parts(names: list[str], shape: str) -> bool:
    """Whether a line's values hold its loss only in parts, as an epoch's summary: two names or
    more are losses under the loop's own names (``records.own_loss_name``: two parts, none is
    the loss); no word of the line (``shape``, its numbers as "#") is an evaluation's ("mean val
    loss", "Best Val loss" are an evaluation's values, "Epoch 5 (validation) recon_loss: ..." its
    summary); no name is a batch's or step's counter (a report inside the epoch: CDCN's
    mini-batch lines, ``_MINI_BATCH_NAMES``). Reviewed in R56."""
    parts = [k for k in names if own_loss_name(k)]
    return len(parts) >= 2 and not any(w in _EVAL_WORDS for w in _SHAPE_WORD_RE.findall(shape.lower())) \
        and not any(_names_a_count(k) for k in names)


# a line that is only a step (and an epoch): "Step 300:", "==> Epoch 1, step 300", "Iteration 10/100"
# (each word read whole, atomic, and no "_" between words: a run of letters and "_" split into up to
# four words every way it could, a long one took seconds)
_HEADER_RE = re.compile(r"^[^A-Za-z_#]*(?:(?>[A-Za-z_]+)[^A-Za-z_#]*){0,4}#(?>[^A-Za-z]*)(?:[A-Za-z_ ]{0,12}[^A-Za-z#]*#[^A-Za-z]*)?$")
_LEAD_RE = re.compile(r"[^\d]{0,40}")   # the fixed text before the first number
_FIRST_WORD_RE = re.compile(r"[*|\s\[=#>-]*([A-Za-z]+)")
_PER_STEP_UNITS = frozenset(("ms/batch", "ms/step", "ms/it", "ms/iter", "sec/step", "s/step", "s/it",
                             "s/iter", "it/s", "steps/s", "us/step", "us/it", "µs/step"))
_AVG_GAP_RE = re.compile(r"^\s*\(\s*$")
# names of training metrics no record field has (kept as extras; they make a line a metric line);
# "f1" and "top5" only as words of the name (not inside a hex run such as an address's "f155");
# "acc" is accuracy, not gradient accumulation: a run's settings name that "GradAcc", "grad_acc",
# "grad_accum", "Gradient Accumulation steps" (transformers' Trainer logs f"  Gradient Accumulation
# steps = {args.gradient_accumulation_steps}", Unsloth's banner "Gradient Accumulation steps = 4");
# an RL episode's return as its reward is (CleanRL's scripts and the loops copied from them:
# print(f"global_step={global_step}, episodic_return={info['episode']['r']}"); acme's "Episode
# Return"), a word of the name
_METRIC_WORD_RE = re.compile(r"loss|(?<!grad)(?<!grad_)(?<!grad )acc(?!um)|reward|score|ppl|perplexity|norm|kl|entropy|"
                             r"bleu|err|mse|mae|(?<![0-9a-z])f1(?![0-9a-z])|auc|precision|recall|(?<![0-9a-z])top\d|@\d|"
                             r"(?<![0-9a-z])return(?![0-9a-z])", re.IGNORECASE)
# a name that is only hex digits and separators names nothing (an IPv6 address's groups, a hash)
_HEX_NAME_RE = re.compile(r"[0-9a-f:.\-]+", re.IGNORECASE)
# A C++ program's own warning, error or fatal log line (glog's and torch c10's format: severity
# W/E/F, month and day, time, maybe a thread id, file:line): a diagnostic, never a metric line
# (Caffe's metric lines are glog's I lines and stay readable).
_CPP_DIAG_RE = re.compile(r"^\[?[WEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+(?:\d+\s+)?[\w.\-/]+\.\w+:\d+\]")
# Megatron-Core's rerun state machine (megatron/core/rerun_state_machine.py, validate_result): a
# result its check rejects is logged as logger.error(f"Unexpected result {result} on rank {rank} at
# iteration #{self.current_iteration} invocation #{validation_call.sequence} (message='{message}')")
# (2025 releases spell it "invokation"; older ones f"Unexpected result {result} at {filename} line
# {lineno}, invokation #{sequence} at iteration #{iteration} (message='{message}')"), its reruns'
# verdicts by log_failure: f"Rank {rank}, node {node}, device {device}, iteration #{iteration}:
# {message}!"; with reruns disabled (RerunMode.DISABLED) a rejected result is raised or warned as
# f"Rank {rank}, node {node}, device {device}, iteration {iteration}: Unexpected result {result}
# (message='{message}')" (no "#"). The iteration they name is the one being checked, not a step's
# record. Every form names an "iteration" and has "Unexpected result" or ", device " (``_is_rerun``:
# a Megatron iteration line has neither, so the pattern runs only on the messages).
_MEGATRON_RERUN_RE = re.compile(
    r"\bUnexpected result \S{1,60} (?:on rank \d+ at iteration #\d+ invo[ck]ation #\d+"
    r"|at \S{1,400} line \d+, invo[ck]ation #\d+ at iteration #\d+) \(message="
    r"|(?<!\w)Rank \d+, node \S{1,200}, device \d+, iteration #?\d+: ")


# The last line of a Python traceback (traceback.format_exception_only: f"{stype}: {value}", the
# exception's qualified name, its module before it unless builtins or __main__): the error's
# message, whatever numbers it quotes ("ValueError: Annotation scatter-key (0,1): (2, 8, 32768,
# 128): final chunk_idx = 11, must be in [1, 2]" read as a record at step 1, batch 43), never a
# step's metrics. The name is any class named ...Error or ...Exception, the builtin ``Exception``
# itself and a module's or a script's ``Error`` included (shutil.Error, ``class Error(Exception)``
# in __main__ prints "Error: ..."; review R34). A message that starts with a value as a line prints
# it is a metric named like an exception, left to the readers: a number ("RMSError: 0.12"), and,
# followed by a separator, the end or the next "name:" field, a NaN/inf spelling or a tensor's repr
# (``formats.PRINTED_VALUE``: torchmetrics' MetricCollection keys default to the class names,
# "MeanAbsoluteError: nan, step: 5, loss: nan", "MeanSquaredError: tensor(0.41), ...") or the "n/a"
# a loop prints for a value it does not have yet ("val_loss valid: n/a", torchtitan's "mfu: N/A")
# (review R34). A message that only begins with such a word stays one ("RuntimeError: NaN or Inf
# found in input tensor.").
_EXCEPTION_LINE_RE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*)?(?:Error|Exception): (?![-+.\d])"
    r"(?!(?:" + PRINTED_VALUE + r"|(?i:n/a))(?:\s*(?:[,;|]|$)|\s+[A-Za-z_][\w./-]*\s?[:=]))\S")


def is_exception_line(body: str) -> bool:
    """Whether a line is a Python exception's ``Name: message`` line (``_EXCEPTION_LINE_RE``)."""
    return ("Error: " in body or "Exception: " in body) and _EXCEPTION_LINE_RE.match(body) is not None


def _is_rerun(body: str) -> bool:
    """Whether a line is Megatron-Core's rerun state machine's message (``_MEGATRON_RERUN_RE``)."""
    return ("iteration" in body and ("Unexpected result" in body or ", device " in body)
            and _MEGATRON_RERUN_RE.search(body) is not None)

# Settings, never metrics: one field of a dataclass's multi-line repr (ms-swift 4.6 logs its
# arguments as ``[INFO:swift] args: SftArguments(`` then ``eval_steps=4.0,`` one per line,
# swift/pipelines/base.py l.20), and a command line (ms-swift's ``run sh: `python
# .../swift/cli/sft.py --eval_steps 4 ...` ``, swift/cli/main.py l.99): ``eval_steps=4.0,`` named
# an evaluation and the command line one more.
_SETTING_FIELD_RE = re.compile(r"^\s*[A-Za-z_]\w*=[^=\s]*,\s*$")
_CLI_FLAG_RE = re.compile(r"(?:^|\s)--[A-Za-z][\w-]*")
# One line of a command pasted over several lines with the shell's backslash continuation, a flag
# (and its value) a line: ``    --val-batches 1 \`` (mlx-lm's READMEs and issues write
# ``mlx_lm.lora \`` then ``--iters 10 \``, ``--steps-per-eval 500 \`` ...; ``--val-batches``
# named an evaluation at ``--iters``' 10). Its last line has no backslash: a line of flags alone.
_CLI_PIECE_RE = re.compile(r"^\s*(?:--[A-Za-z][\w.-]*(?:[ =](?!--)\S+)?\s+)*--[A-Za-z][\w.-]*"
                           r"(?:[ =](?!--)\S+)?\s*\\?\s*$")


# A row of Lightning's model summary (lightning/pytorch/utilities/model_summary/model_summary.py
# _format_summary_table, printed by the ModelSummary callback before training: the header
# "  | Name | Type | Params | Mode", then per layer its index, attribute name, class name and
# parameter count, "0 | loss_fn | BCEWithLogitsLoss | 0      | train", "1 | model | ResNet |
# 11.2 M"): a layer, not a step (its index and parameter count are no step and value).
_MODEL_SUMMARY_ROW_RE = re.compile(r"^\s*\d+\s*\|\s*[A-Za-z_][\w.]*\s*\|\s*[A-Z]\w*\s*\|\s*\d+(?:\.\d+)?\s?[KMGT]?\s*"
                                   r"(?:\|\s*(?:train|eval)\s*)?(?:\|.*)?$")


def is_model_summary_row(body: str) -> bool:
    """A layer row of Lightning's model summary table (``_MODEL_SUMMARY_ROW_RE``)."""
    return "|" in body and _MODEL_SUMMARY_ROW_RE.match(body) is not None


def is_setting_line(body: str) -> bool:
    """A line that prints settings (an argument dump's field, a command line or a piece of one),
    not results."""
    return (bool(_SETTING_FIELD_RE.match(body)) or len(_CLI_FLAG_RE.findall(body)) >= 2
            or bool(_CLI_PIECE_RE.match(body)))


# Lines that print each value before its name, pieces joined by ", ": tinygrad's training
# examples (examples/mlperf/model_train.py, hlb_cifar10.py, beautiful_mnist.py print
# f"{i:5} {t*1000:7.2f} ms run, {loss:5.2f} loss, {lr:.12f} LR, {mem/1e9:.2f} GB used,
# {gflops:9.2f} GFLOPS"). Every piece after the first is "NUMBER [UNIT] NAME"; the first may
# start with the unnamed step. "N s run" / "N ms run" is the step's run time, "N GB used" its memory.
_VALUE_FIRST_PIECE_RE = re.compile(
    r"^\s*(?P<lead>\d+\s+)?(?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
    r"(?:\s?(?P<unit>ms|s|GB|MB|GiB|MiB|%))?\s+(?P<name>[A-Za-z][A-Za-z_/]*(?: [A-Za-z][A-Za-z_/]*){0,2})\s*$")
_TIME_UNITS = frozenset(("ms", "s"))
_MEM_UNITS = frozenset(("GB", "MB", "GiB", "MiB"))


# names and values grouped with slashes: "Loss span/answer/total=0.7729/0.1773/0.9502"
# (GluonNLP's run_squad.py: 'Loss span/answer/total={:.4f}/{:.4f}/{:.4f}'); at least one
# value has a decimal point (an integer pair "3900/8164" is a counter and its total). A value
# reads one way only (``_GROUPED_VALUE``: its digits, then a fraction): "\d*\.?\d+" split a run
# of digits at every place, over eight values, and a list followed by a letter tried each split.
_GROUPED_VALUE = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
_GROUPED_RE = re.compile(
    r"(?P<names>[A-Za-z][\w ]{0,40}?(?:/[A-Za-z]\w{0,40}){1,7})\s?[=:]\s?"
    r"(?P<vals>" + _GROUPED_VALUE + r"(?:/" + _GROUPED_VALUE + r"){1,7})(?![\w/])")


def split_grouped(text: str) -> str:
    """``text`` with each slash-grouped name and value list written as one ``name=value`` per
    value (``Loss span/answer/total=a/b/c`` -> ``Loss span=a, Loss answer=b, Loss total=c``:
    the words before the first name are every name's), else ``text`` itself."""
    if "/" not in text or ("=" not in text and ":" not in text):
        return text

    def one(m: re.Match) -> str:
        names, vals = m.group("names").split("/"), m.group("vals").split("/")
        if len(names) != len(vals) or not any("." in v for v in vals):
            return m.group(0)
        head = names[0].split()
        lead = " ".join(head[:-1])
        names = [head[-1] if head else names[0]] + names[1:]
        return ", ".join(f"{lead + ' ' if lead else ''}{n}={v}" for n, v in zip(names, vals))

    return _GROUPED_RE.sub(one, text)


def name_first(text: str) -> str:
    """``text`` with each value's name put before it when every piece prints the value first
    (``1 93.44 s run, 11.8750 loss, 1e-12 LR`` -> ``1 run time 93.44 s, loss 11.8750, LR 1e-12``),
    else ``text`` itself."""
    if ", " not in text:
        return text
    pieces = text.split(", ")
    if len(pieces) < 3:
        return text
    out = []
    for i, piece in enumerate(pieces):
        m = _VALUE_FIRST_PIECE_RE.match(piece)
        if m is None or (m.group("lead") and i) or _norm(m.group("name")) in _STOP:
            return text
        name, unit = m.group("name"), m.group("unit") or ""
        if name == "run" and unit in _TIME_UNITS:
            name = "run time"
        elif name == "used" and unit in _MEM_UNITS:
            name = "mem used"   # GlobalCounters.mem_used
        out.append(f"{m.group('lead') or ''}{name} {m.group('num')}{' ' + unit if unit else ''}")
    return ", ".join(out)


def _names_a_metric(name: str) -> bool:
    return not _HEX_NAME_RE.fullmatch(name) and bool(_METRIC_WORD_RE.search(name))


# timm's train.py (train_one_epoch) logs f'Train: {epoch} [{update_idx:>4d}/{updates_per_epoch} '
# f'({100. * (update_idx + 1) / updates_per_epoch:>3.0f}%)]  Loss: {loss_now:#.3g} ({loss_avg:#.3g})
# ...  LR: {lr:.3e}  Data: ...' (before 0.9: 'Train: {} [{:>4d}/{} ({:>3.0f}%)]  Loss: ...'.format(
# epoch, batch_idx, len(loader), ...)): the whole number its "Train:" names, right before the
# batch counter in brackets, is the epoch (from 0), not a metric.
_EPOCH_BEFORE_COUNTER = frozenset(("train",))
# timm's own line (not pytracking's "[train: 751, 20 / 20]", whose epoch lines count otherwise)
_TIMM_TRAIN_RE = re.compile(r"Train: \d+ \[ *\d+/\d+ \( *\d+%\)\]")


def _epoch_before_counter(toks: list["Token"], counter: "Token") -> "Token | None":
    """The token right before an unnamed ``[n/N]`` counter that is timm's epoch (``Train: 3``),
    else None."""
    for i, t in enumerate(toks):
        if t is counter:
            before = toks[i - 1] if i else None
            if (before is not None and _norm(before.name) in _EPOCH_BEFORE_COUNTER and before.tot is None
                    and before.unit is None and before.avg_of is None and _is_int_text(before.raw)):
                return before
            return None
    return None


@dataclass
class Token:
    name: str              # as printed (may be '')
    raw: str
    tot: int | None
    unit: str | None
    avg_of: str | None = None   # a running average printed in parentheses after a number


def tokenize(text: str) -> tuple[str, list[Token]]:
    """(shape key, tokens) of a line after its prefix."""
    shape: list[str] = []
    toks: list[Token] = []
    pos = 0
    last_name = ""
    for m in _TOKEN_RE.finditer(text):
        if text[m.start() - 1:m.start()] == "(" and _SCALE_IN_NAME_RE.match(text, m.start()) \
                and text[m.start() - 2:m.start() - 1].isalnum():
            continue   # the scale a name ends with ("actor/lr(1e-4):0.010"): part of the next value's name
        gap = text[pos:m.start()]
        shape.append(gap)
        if m.group("dur"):
            shape.append("@")
            pos = m.end()
            continue
        shape.append("#")
        raw, tot, unit = m.group("num"), m.group("tot"), m.group("unit") or m.group("rate")
        name = _name_of(gap)
        avg_of = None
        if not name and toks and _AVG_GAP_RE.match(gap) and last_name and not (
                unit and unit.lower() in _PER_STEP_UNITS):
            # "(0.885 sec/step)" after a loss is the step's time, not the loss's running mean
            # (TensorFlow slim's learning.py: 'global step %d: loss = %.4f (%.3f sec/step)')
            avg_of = last_name
        toks.append(Token(name, raw, int(tot) if tot else None, unit, avg_of))
        if name:
            last_name = name
        pos = m.end()
    shape.append(text[pos:])
    key = re.sub(r"\d+", "#", re.sub(r"\s+", " ", "".join(shape)).strip())
    return key, toks


_UNIT_PAREN_RE = re.compile(r"\s*\(([A-Za-z/%]{1,10})\)$")
# veRL's "actor/lr(1e-4):0.010": a value printed times 1e4, its name saying so (records.field_of)
_SCALE_IN_NAME_RE = re.compile(r"1e-?\d+\)\s*[:=]")
_SCALE_PAREN_RE = re.compile(r"\((1e-?\d+)\)$")
# nnU-Net v1 (nnunet/training/network_training/network_trainer.py, run_training):
# self.print_to_log_file("val loss (train=False): %.4f" % self.all_val_losses[-1]), and with
# also_val_in_tr_mode "val loss (train=True): %.4f": the network's mode during that validation.
# train=False is the ordinary evaluation (its loss); train=True is the same validation set run
# again with the network in training mode (run_training: ``if self.also_val_in_tr_mode:
# self.validate(True)`` right after ``self.validate(False)``): a value of that evaluation, never an
# evaluation of its own (``is_train_mode_value``; reviewed in R26).
_TRAIN_MODE_PAREN_RE = re.compile(r"\s*\(train=(False|True)\)$")
TRAIN_MODE_SUFFIX = " (train=True)"


def is_train_mode_value(name: str) -> bool:
    """Whether a value's name is nnU-Net v1's ``... (train=True)``: the epoch's evaluation run
    again in training mode, a value of the evaluation above it, not a new evaluation."""
    return name.endswith(TRAIN_MODE_SUFFIX)


_SPLIT_LABEL_RE = re.compile(r"\b(train|training|val|valid|validation|test|eval)(?: [A-Z])?: (?=\w+\s*=\s*$)")


_ELLIPSIS_END_RE = re.compile(r"(?:\.{2,}|\u2026)$")


# A negated contraction is a sentence's, never a metric's name: the early-stopping notices of
# the boosting libraries print their patience as a number after one (LightGBM callback.py
# early_stopping: "Train until valid scores didn't improve in {} rounds." before 3.0,
# f"Training until validation scores don't improve for {stopping_rounds} rounds" since;
# XGBoost's old callback.py: "Will train until {} hasn't improved in {} rounds.").
_CONTRACTION_RE = re.compile(r"[A-Za-z]n['\u2019]t\b")


def _name_of(gap: str) -> str:
    # "split: name=value" (SAM-Adapter's train.py, from LIIF's: ', '.join of 'epoch {}/{}',
    # 'train G: loss={:.4f}', 'val: {}={:.4f}'.format(metric, value)): the label names the split
    # (and the network it trained, G), the name after it the metric: "train loss", "val sm"
    gap = _SPLIT_LABEL_RE.sub(r"\1 ", gap) if gap.rstrip()[-1:] == "=" else gap
    gap = gap.rstrip(" \t[(:=-|,;")
    scale = _SCALE_PAREN_RE.search(gap)   # "actor/lr(1e-4):": the scale is part of the name
    if scale:
        base = _name_of(gap[:scale.start()])
        return f"{base}({scale.group(1)})" if base else ""
    mode = _TRAIN_MODE_PAREN_RE.search(gap)   # "val loss (train=False):"
    if mode:
        base = _name_of(gap[:mode.start()])
        return (base if mode.group(1) == "False" else base + TRAIN_MODE_SUFFIX) if base else ""
    unit = _UNIT_PAREN_RE.search(gap)   # "Memory (MB)=": the unit is part of the name
    if unit:
        base = _name_of(gap[:unit.start()])
        return f"{base} ({unit.group(1)})" if base else ""
    pieces = _NAME_SPLIT_RE.split(gap)
    last = pieces[-1] if pieces else ""
    name = last.strip().rstrip(":=").strip()
    words = [w for w in name.split() if w.lower() not in _STOP]
    # an ellipsis after the name is not part of it: diffusers' Flax examples
    # (examples/text_to_image/train_text_to_image_flax.py and the other *_flax.py trainers)
    # print f"Epoch... ({epoch + 1}/{args.num_train_epochs} | Loss: {train_metric['loss']})"
    name = _ELLIPSIS_END_RE.sub("", " ".join(words[-4:])).strip(" :=*#'\"-|")
    if not name or not any(c.isalpha() for c in name) or _CONTRACTION_RE.search(name):
        return ""
    return name


def _norm(name: str) -> str:
    return re.sub(r"\s+", " ", name.strip().lower())


def is_counter_name(name: str) -> bool:
    """Whether a value's name is a step's or an epoch's counter (``step``, ``iter``, ``Epoch``,
    ...): a line naming one counts on its own, it is not part of the block above it."""
    low = _norm(name)
    return low in _STEP_NAMES or low in _EPOCH_NAMES


def _global_counter(name: str) -> bool:
    """A counter named as the run's (``global iter``, ``global_step``): not an epoch's."""
    return _norm(name).startswith(("global", "train/global", "trainer/global"))


# a word before an epoch number that says the epoch is over, not starting
_EPOCH_END_WORDS = frozenset(("finished", "finish", "completed", "ended", "end", "done"))


# how a step named by an evaluation word was read (``Learned.how``, ``EvalLine.extra``)
EVAL_STEP_HOW = "an evaluation's step"


def _eval_step_name(low: str) -> bool:
    """A step named by an evaluation word (torchtitan's ``validate step: {step:2}``, the training
    step the evaluation is logged at); one with a total (``Validate Step: 3 / 10``) counts the
    evaluation's own batches and is not this."""
    words = low.split()
    return len(words) == 2 and words[0] in _EVAL_WORDS and words[1] == "step"


def first_word(text: str) -> str:
    m = _FIRST_WORD_RE.match(text)
    return m.group(1).lower() if m else ""


# ----------------------------------------------------------------------------- state

@dataclass
class ShapeState:
    """What the learner remembers of one line shape: its counter across epoch restarts and
    the last values (a line printed twice is read once)."""
    offset: int = 0
    last_counter: int | None = None
    last_epoch: float | None = None
    top: int = 0
    last: tuple | None = None
    closed_epoch: float | None = None   # the header epoch whose final progbar line was read (Keras)


@dataclass
class LearnerState:
    shapes: dict[str, ShapeState] = field(default_factory=dict)
    header_epoch: float | None = None     # an "Epoch 2/10" line before the counter lines
    header_epochs: int | None = None      # that line's total (10): its epochs count from 1
    last_counter: str = ""                # how the last learned record's step was found
    epoch_shape: str | None = None        # the shape whose epochs are the steps (epoch-only logs)
    # a reading context restored (``core.readctx``): the counters of shapes by the digest of their
    # key (a shape is log text, never saved), taken up when a line of that shape comes again
    restored: dict[str, ShapeState] = field(default_factory=dict)
    epoch_digests: list[str] = field(default_factory=list)   # ... and of ``epoch_shape`` (``readctx.prefix_digests``)


def shape_state(state: LearnerState, key: str, shapes: list[str] | None = None,
                head: str | None = None) -> ShapeState | None:
    """The counter of the line shape ``key``, None when it has none yet: one restored under its
    digest is taken up. ``shapes``: the tensor shapes ``mask_shapes`` took out of the line; a
    context saved before they were masked (batch 47) holds the digest of the key with their
    dimensions as numbers (``unmasked_key``), taken up too, so a runner restarted across that
    upgrade keeps its epoch offset (review R47: it read steps 40-100 again for 90-150). ``head``:
    the ``legacy_head`` a context saved before batch 50 names the key with (review R56)."""
    st = state.shapes.get(key)
    if st is None and state.restored:
        st = state.restored.pop(shape_digest(key), None)
        legacy = unmasked_key(key, shapes) if st is None and shapes else None
        if legacy is not None:
            st = state.restored.pop(shape_digest(legacy), None)
        if st is None and head is not None:
            st = state.restored.pop(shape_digest(head + key), None)
        if st is not None:
            state.shapes[key] = st
    return st


@dataclass
class Header:
    """A line that carries only a step (and maybe an epoch): the start of a block of metric lines."""
    step: int
    max_steps: int | None
    epoch: float | None


@dataclass
class Learned:
    """A training record's mapping (``records.record_from_mapping`` keys) from a learned line."""
    mapping: dict
    shape: str
    counter: str                    # how the step was found (for ``parse --explain``)
    epoch_end: bool = False         # the last line of an epoch under its ``Epoch E/M`` header


@dataclass
class Summary:
    """Metrics with no step counter: an epoch summary (a mark at the last step, or, in a log of
    epoch lines only, a record at its epoch)."""
    values: dict
    epoch: float | None
    shape: str
    epochs: int | None = None       # the epochs' total printed beside it ("Epoch:[844/1500]")
    # ``shape`` as a runner before batch 47 made it (its printed tensor shapes' dimensions as
    # numbers, ``unmasked_key``): the shape a reading context saved by that runner names
    unmasked: str | None = None
    # ``shape`` as a runner before batch 50 made it (``legacy_head`` in front), for the same
    legacy: str | None = None


@dataclass
class Skip:
    reason: str
    shape: str


MAX_SHAPES = 256
MAX_LEARNED_LINE = 4096   # a longer line is no metrics line of a shape to learn (a veRL step line aside)


# A file path or URL (a word that starts with "/", "./", "../", "~/", a drive or a scheme, also
# in quotes or after "="): the numbers inside name a file, never a metric. NeMo's checkpoint
# callback names its files after the monitored values ("Scheduled async checkpoint save for
# /mnt/.../model_name=0--val_loss=0.00-step=18-consumed_samples=9728.0-last.ckpt",
# ModelCheckpoint's filename template): no evaluation at step 18.
_PATH_RE = re.compile(r"""(?<![^\s'"(\[=])(?:[A-Za-z]:\\|~?\.{0,2}/(?=[^\s/])|[A-Za-z][\w+.-]*://)[^\s'"]*""")


def mask_paths(text: str) -> str:
    """``text`` with each file path or URL replaced by ``<path>``."""
    return _PATH_RE.sub("<path>", text) if "/" in text or "\\" in text else text


# A change reported in parentheses, "(old --> new)": the numbers are a value's last two readings,
# not a reading of their own. The EarlyStopping most PyTorch loops copy (early-stopping-pytorch's
# pytorchtools.py ``save_checkpoint``: f'Validation loss decreased ({self.val_loss_min:.6f} -->
# {val_loss:.6f}).  Saving model ...') prints it after the epoch's evaluation: no evaluation there.
_CHANGE_NUM = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan)"
_CHANGE_RE = re.compile(r"\(\s*" + _CHANGE_NUM + r"\s*-{1,2}>\s*" + _CHANGE_NUM + r"\s*\)")


def mask_changes(text: str) -> str:
    """``text`` with each "(old --> new)" change replaced by ``<change>``."""
    return _CHANGE_RE.sub("<change>", text) if "->" in text else text


# A tensor's shape as PyTorch prints it (torch/csrc/Size.cpp ``THPSize_repr``: "torch.Size([" then
# the dimensions joined by ", " then "])") or TensorFlow does (tensorflow/python/framework/
# tensor_shape.py ``TensorShape.__repr__``: f"TensorShape({list(self._dims)})" in TF2, an unknown
# dimension None: "TensorShape([None, 1024])", Keras' batch dimension; under v1 behaviour
# f"TensorShape({self.dims})", each a ``Dimension.__repr__`` "Dimension(%s)": "TensorShape(
# [Dimension(16), Dimension(None)])"): its numbers are dimensions, never a value or a step. A veRL
# worker's debug print "entropy shape: torch.Size([16, 1024])" among Ray's lines was a record at
# step 1024 (batch 47; None and Dimension reviewed in R47). Each dimension is one of those words
# with ", " between them (no optional separator: linear on any line)
_DIM = r"(?:\d+|None|Dimension\((?:\d+|None)\))"
_SHAPE_RE = re.compile(r"\b(?:torch\.Size|TensorShape)\(\[(?:\s*" + _DIM + r"(?:,\s*" + _DIM + r")*,?)?\s*\]\)")


def mask_shapes(text: str) -> str:
    """``text`` with each printed tensor shape replaced by ``<shape>``."""
    return _SHAPE_RE.sub("<shape>", text) if "Size([" in text or "Shape([" in text else text


def printed_shapes(text: str) -> list[str]:
    """The printed tensor shapes ``mask_shapes`` replaces in ``text``, in order."""
    return _SHAPE_RE.findall(text) if "Size([" in text or "Shape([" in text else []


def unmasked_key(key: str, shapes: list[str]) -> str | None:
    """A counter's ``key`` as a runner before batch 47 made it: each ``<shape>`` the line's printed
    shape with its dimensions as any numbers are (``tokenize``: "torch.Size([#, #])"). None when
    the key has no shape of ``shapes``."""
    parts = key.split("<shape>")
    if len(parts) == 1 or len(parts) - 1 > len(shapes):
        return None
    return parts[0] + "".join(tokenize(shp)[0] + rest for shp, rest in zip(shapes, parts[1:]))


# MXNet's Speedometer (python/mxnet/callback.py ``Speedometer.__call__``): 'Epoch[%d] Batch [%d-%d]\t
# Speed: %.2f samples/sec' + '\t%s=%f' per metric with (param.epoch, count - self.frequent, count),
# or 'Batch [0-%d]' when the metric is not reset: the range's end is the batch counter
# (``param.nbatch``), its start the counter of the report before.
_BATCH_RANGE_RE = re.compile(r"\b(Batch) \[(\d+)-(\d+)\]")


def batch_range_end(text: str) -> str:
    """``text`` with a ``Batch [a-b]`` range written as its end, ``Batch [b]``."""
    return _BATCH_RANGE_RE.sub(r"\1 [\3]", text) if "Batch [" in text else text


# The rest of a Python dict's repr wrapped inside a value: a line that opens with a number and
# then the repr's item separator and a quoted key (", 'perf/x': "). CPython's dict repr
# (Objects/dictobject.c ``dict_repr``) joins the items with ", " and writes each key's repr then
# ": ", so no line of its own starts so; a terminal or a paste that wraps a long one at its width
# cuts a value's digits. slime's perf report (slime/utils/train_metric_utils.py, later
# slime/observability/: ``logger.info(f"perf {rollout_id}: {log_dict}")``) wrapped at 200 columns
# gave "894346237182617, 'perf/cp_seq_kl_prep_time': 0.0009" (a time's last digits), once a record
# at step 894346237182617. Such a line is the dict's, not a record: its leading number is no counter.
_DICT_VALUE_TAIL_RE = re.compile(r"""[-+]?[\d.]+(?:[eE][-+]?\d+)?, (?:'[^'\n]{1,200}'|"[^"\n]{1,200}"): """)


def is_dict_value_tail(text: str) -> bool:
    """Whether ``text`` (its prefix stripped) is the rest of a dict repr wrapped inside a value."""
    return _DICT_VALUE_TAIL_RE.match(text) is not None


def learn_line(text: str, state: LearnerState, head: str | None = None) -> Learned | EvalLine | Header | Summary | Skip | None:
    """What a line no named reader claimed is: a record, an evaluation, a block header, an
    epoch summary, a duplicate to skip; None when it carries no named number. ``head``: the
    ``legacy_head`` of the line ``text`` is the body of (its prefix stripped by the caller)."""
    if len(text) > MAX_LEARNED_LINE and not (len(text) <= VERL_LINE_MAX and verl_step_line(text)):
        return None
    if not any(c.isdigit() for c in text) and "nan" not in text.lower():
        return None
    stripped = strip_prefix_full(text)
    if is_dict_value_tail(stripped):
        return None
    # only a restored context names shapes as an older runner made them
    if head is None and (state.restored or state.epoch_digests):
        head = legacy_head(text, stripped)
    body = mask_optimizer_echo(mask_changes(mask_paths(stripped)))
    shapes = printed_shapes(body)
    body = mask_shapes(body) if shapes else body
    if _CPP_DIAG_RE.match(body) or _is_rerun(body) or is_exception_line(body):
        return None
    if is_setting_line(body) or is_model_summary_row(body):
        return None
    body = batch_range_end(split_grouped(name_first(body)))
    if "|" in body:
        body = name_unit_columns(body)
    shape, toks = tokenize(body)
    if not toks:
        return None
    named: list[tuple[str, Token]] = []
    counter: Token | None = None
    counter_how = ""
    epoch_tok: Token | None = None
    epoch_before: Token | None = None   # timm's epoch right before its [n/N] counter
    fractions: list[Token] = []
    loop_header = "eta:" in body and _LOOP_HEADER_RE.search(body) is not None
    for t in toks:
        low = _norm(t.name)
        if not t.name or t.tot is not None and t.avg_of is None and low in _LOOP_HEADER_NAMES and loop_header:
            if t.tot is not None and t.avg_of is None:
                fractions.append(t)
            continue
        if low in _EPOCH_NAMES or low.endswith(" epoch") and low.split()[-2:-1] != ["per"]:
            if epoch_tok is None:
                epoch_tok = t
                continue
        if counter is None and t.tot is None and "step" in low and _is_int_text(t.raw) and _eval_step_name(low):
            # torchtitan's "validate step:  1": the step it evaluates; another loop's "eval step: 1"
            # counts the evaluation's batches (the parser keeps such a step only where it is not
            # before the training step already read)
            counter, counter_how = t, EVAL_STEP_HOW
            continue
        if (low in _STEP_NAMES or _ITER_NAME_RE.match(low)) and counter is None and _is_int_text(t.raw):
            if t.unit in ROUNDED_COUNT_UNITS:
                return Skip("a step count printed rounded (1K): not the step", shape)
            counter, counter_how = t, low
            continue
        if (counter is not None and counter_how in _BATCH_NAMES and _GLOBAL_BATCH_RE.match(low)
                and _is_int_text(t.raw)):
            # the run's batch count after the epoch's (ZipVoice / icefall-style trainers:
            # f"Epoch {cur_epoch}, batch {batch_idx}, global_batch_idx: {params.batch_idx_train}, ..."):
            # the global one is the step, the epoch's an extra
            named.append((counter.name, counter))
            counter, counter_how = t, low
            continue
        named.append((t.name, t))
    if counter is not None and any(_norm(t.name) in _MICRO_NAMES and t.tot is not None for _, t in named):
        return Skip("a micro-batch of an accumulation step (not an optimizer step)", shape)
    # unnamed fractions: "[ 1/ 3][ 100/ 1000]" is epoch then counter; one alone is the counter
    if counter is None and fractions:
        if len(fractions) >= 2 and epoch_tok is None:
            epoch_tok, counter = fractions[0], fractions[1]
        else:
            counter = fractions[0]
            before = _epoch_before_counter(toks, counter) if epoch_tok is None else None
            if before is not None:
                epoch_tok = epoch_before = before
                named = [(n, t) for n, t in named if t is not before]
        counter_how = "[n/N]"
    if counter is None and epoch_tok is None:
        # an unnamed integer column (XLM's "- 1135 -"): the counter while it never goes back; the
        # same count again is the same step's next value where the line names one value
        # (rl-blox's logger prints f"{key} {value} {step}" for each metric of an update)
        first = next((t for t in toks if not t.name and t.tot is None and t.avg_of is None and not t.unit
                      and _is_int_text(t.raw)), None)
        if first is not None:
            prev = shape_state(state, _counter_key(shape, toks, first), shapes, head)
            count = int(first.raw.replace(",", ""))
            if prev is None or prev.last_counter is None or count > prev.last_counter or (
                    count == prev.last_counter and len(named) == 1):
                counter, counter_how = first, "unnamed increasing integer"
    word = first_word(body)
    lead = _LEAD_RE.match(body)
    if word not in _EVAL_WORDS and lead:
        word = next((w for w in re.findall(r"[A-Za-z]+", lead.group(0).lower()) if w in _EVAL_WORDS), word)
    if word not in _EVAL_WORDS and "%|" in body:
        # a tqdm bar whose description names an evaluation ("Epoch 1/50 [Validating]: 100%|...")
        word = next((w for w in re.findall(r"[A-Za-z]+", body.split("%|", 1)[0].lower()) if w in _EVAL_WORDS), word)
    values: dict[str, Any] = {}
    for name, t in named:
        _put(values, name, t)
    for t in toks:   # unnamed numbers with a per-step unit: "(0.5 sec/step)", "2ms/step"
        if not t.name and t.avg_of is None and t.unit and (
                t.unit.lower() in _PER_STEP_UNITS or t.unit == "ms" and t is toks[-1] and counter is not None):
            # a step's line that ends with an unnamed duration in ms prints the step's time
            # (modded-llama2: f"{step} | loss {loss:.4f} | lr {lr:e} | {dt * 1000:.2f}ms")
            values.setdefault("step_time_s", unit_value("step_time_s", parse_grouped_number(t.raw), t.unit))
        elif t.avg_of is not None:
            num = parse_grouped_number(t.raw)
            if num is not None:
                values.setdefault(t.avg_of + "_avg", num)
    values = {k: v for k, v in values.items() if v is not None}
    epoch = None
    if epoch_tok is not None:
        epoch = parse_grouped_number(epoch_tok.raw)
    elif state.header_epoch is not None and word not in _EVAL_WORDS:
        epoch = state.header_epoch
    is_eval = word in _EVAL_WORDS or (
        any(eval_key(k) is not None for k in values) and not any(k in values for k in ("loss", "grad_norm", "lr")))
    if not values:
        if counter is not None and not is_eval and _HEADER_RE.match(shape):
            return Header(int(parse_grouped_number(counter.raw) or 0), counter.tot, epoch)
        if epoch_tok is not None and counter is None and not is_eval and len(toks) == 1:
            if word in _EPOCH_END_WORDS:
                # "Finished epoch: 3" ends epoch 3 (HQ-SAM's train.py prints it after the epoch's
                # loop, then "Averaged stats: ..."): the lines after it are not epoch 3's
                state.header_epoch = state.header_epochs = None
                return Skip("the end of an epoch", shape)
            state.header_epoch = epoch   # "Epoch 2/10": the counter lines after it belong to epoch 2
            state.header_epochs = epoch_tok.tot
            return Skip("epoch header", shape)
        return None
    if not is_eval and not any(k in values for k in VALUE_FIELDS) and not any(_names_a_metric(k) for k in values):
        return None   # numbers no training metric is named by (sizes, counts, settings)
    if counter is not None and not named and set(values) <= {"step_time_s"} and _KERAS_VALUELESS_BAR_RE.match(body):
        return Skip("a Keras progress bar with no value: a download (get_file) or a predict(), not a step", shape)
    if is_eval:
        if epoch is not None or counter_how in _BATCH_NAMES:
            counter_how = "[n/N]"   # a batch counter is not the global step: the last step is
        got_eval = _eval_line(word, named, toks, counter, counter_how, shape)
        if isinstance(got_eval, EvalLine) and epoch is not None and epoch_tok is not None and epoch == int(epoch):
            got_eval.extra["epoch"] = int(epoch)   # the epoch it evaluates (its step in a log of epoch lines)
        return got_eval
    if counter is None:
        return Summary(dict(values), epoch, shape, epoch_tok.tot if epoch_tok is not None else None,
                       unmasked_key(shape, shapes) if shapes else None,
                       head + shape if head is not None else None)
    key = _counter_key(shape, toks, counter)
    if len(state.shapes) >= MAX_SHAPES and key not in state.shapes:
        return Skip("too many line shapes", shape)
    st = shape_state(state, key, shapes, head) or ShapeState()
    state.shapes.pop(key, None)
    state.shapes[key] = st   # the most recently used last: a reading context keeps the last ones
    n = int(parse_grouped_number(counter.raw) or 0)
    if epoch_tok is None and epoch is not None:
        got_header = header_epoch_line(st, n, epoch, counter.tot, body, named)
        if got_header is not None:
            return got_header
    epochs = state.header_epochs if epoch is not None and epoch == state.header_epoch else None
    if epoch_tok is not None and epochs and counter.tot and epoch is not None and epoch >= 1 \
            and st.last_epoch is None and st.last_counter is None:
        # "===== EPOCH 4/10 =====" then "[Epoch 4] Batch 10/126 | loss=...": the header counts its
        # epochs from 1 (E/M), and the paste starts in epoch 4: 3 x 126 steps came before
        st.offset = max(st.offset, int(epoch - 1) * counter.tot)
    if epoch_before is not None and counter.tot and epoch is not None and epoch >= 1 \
            and st.last_epoch is None and st.last_counter is None and _TIMM_TRAIN_RE.match(body):
        # a log that starts in timm's epoch 5 (a resumed run's new log): timm counts its updates
        # from epoch 0 (train.py train_one_epoch: num_updates = epoch * updates_per_epoch, one
        # more each optimizer update; the line prints update_idx of updates_per_epoch, both in
        # updates where gradients accumulate): the epochs before it are epoch x N steps, as the
        # whole log counts them
        st.offset = max(st.offset, int(epoch) * counter.tot)
    step = epoch_counter_step(st, n, epoch, counter.tot)
    if st.offset:
        counter_how += " + epochs"
    fingerprint = (step, tuple(sorted((k, repr(v)) for k, v in values.items())))
    if fingerprint == st.last:
        return Skip("the same line again (printed twice)", shape)
    st.last = fingerprint
    mapping: dict[str, Any] = {"step": step}
    epoch_total = epoch_tok.tot if epoch_tok is not None else None
    if counter.tot is not None and not st.offset and (epoch is None or _global_counter(counter.name)):
        # a counter named global counts across the epochs beside it: its total is the run's
        # (LMOps' "ppo epoch: 2/ 4 | global iter: 13/ 5000", self.total_steps)
        mapping["max_steps"] = counter.tot
    elif counter.tot is not None and (epochs or epoch_total):
        # M epochs of the counter's total, M from a header line or the epoch's own "e/M" on the
        # line (minimind's f"Epoch:[{epoch}/{args.epochs}]({step}/{iter_per_epoch}) loss:...")
        mapping["max_steps"] = int(epochs or epoch_total or 0) * counter.tot
    if epoch is not None:
        mapping["epoch"] = epoch
    mapping.update(values)
    restarts = " + the epochs before (the counter restarts)" if "+ epochs" in counter_how else ""
    state.last_counter = (f"the number named {counter.name!r}{restarts}" if counter.name and counter_how != "[n/N]"
                          else counter_how.replace("[n/N]", "an unnamed n/N counter").replace(" + epochs", "") + restarts)
    # Keras' epoch: the Progbar's final line (its count at the target) carries the epoch's logs,
    # the validation run at the epoch's end among them (keras/engine/training.py ``fit``:
    # epoch_logs.update(val_logs) with val_logs = self.evaluate(...) each epoch, then
    # callbacks.on_epoch_end(epoch, epoch_logs)): its val_ values are that epoch's evaluation
    epoch_end = epoch_tok is None and epoch is not None and counter.tot is not None and n == counter.tot
    return Learned(mapping, shape, counter_how, epoch_end)


_NUM_RE = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# A "|" column that is a number and its unit only, the unit naming it: llama2.c's
# f"{iter_num} | loss {lossf:.4f} | lr {lr:e} | {dt*1000:.2f}ms | mfu {running_mfu*100:.2f}%" and
# llm.c's "step %4d/%d | loss %.6f | norm %.4f | lr %.2e | %.2f ms | %.0f tok/s | MFU %.2f%%".
_UNIT_COLUMN_RE = re.compile(r"^(\s*)(" + _NUM_RE + r") ?(ms|s|sec|" + TOKEN_RATE_UNIT_RE + r")(\s*)$")
# A "|" column whose name follows its value: llm.c's "| %.1f%% bf16 MFU |".
# (Up to four words, one space between them: each word read one way, not split at each letter.)
_NAME_AFTER_RE = re.compile(r"^(\s*)(" + _NUM_RE + r"%?) ([A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*){0,3} ?)(\s*)$")


def name_unit_columns(body: str) -> str:
    """The text with each unnamed ``|`` column named: a number with a time unit is the step
    time (``| 24.18 ms |`` reads ``| time 24.18 ms |``), one with ``tok/s`` the tokens per
    second, a number followed by words is named by them (``| 45.2% bf16 MFU |``)."""
    cols = body.split("|")
    for i, col in enumerate(cols):
        m = _UNIT_COLUMN_RE.match(col)
        if m is not None:
            name = "time" if m.group(3) in ("ms", "s", "sec") else m.group(3)
            cols[i] = f"{m.group(1)}{name} {m.group(2)}{m.group(3) if name == 'time' else ''}{m.group(4)}"
            continue
        m = _NAME_AFTER_RE.match(col)
        if m is not None and i > 0:
            cols[i] = f"{m.group(1)}{m.group(3).strip()} {m.group(2)}{m.group(4)}"
    return "|".join(cols)


def epoch_counter_step(st: ShapeState, n: int, epoch: float | None, total: int | None) -> int:
    """The global step of counter value ``n``: a counter that goes back while the epoch goes
    forward restarted, so the steps of the epoch before (its total, else the highest count seen)
    come first and the step never goes backwards. Updates ``st``."""
    if epoch is not None and st.last_counter is not None and st.last_epoch is not None \
            and epoch > st.last_epoch and n <= st.last_counter:
        st.offset += total if total else st.top
        st.top = 0
    st.last_counter, st.top = n, max(st.top, n)
    if epoch is not None:
        st.last_epoch = epoch
    return st.offset + n


# Keras' progress bar: ProgbarLogger prints f"Epoch {epoch + 1}/{self.epochs}" (1-based), then a
# Progbar whose target is the epoch's steps (Keras 1: its samples); a finished bar's line has no
# "ETA" (Progbar.update with current == target prints the time taken; TF 2.x prints an
# "ETA: 0s" line at the last batch before the validation and then the final one). A bar of the
# same shape after the epoch's final line with no new "Epoch" line is model.evaluate()'s.
_ETA_RE = re.compile(r"\bETA:")
# A Keras Progbar that prints no value is no training's: fit's and evaluate's bars print the loss
# (each of ``self._values_order`` as f" - {k}: ..."), while ``get_file`` prints "Downloading data
# from {origin}" then a Progbar of the bytes (keras 2.15 keras/src/utils/data_utils.py l.319-341,
# keras 3.8 keras/src/utils/file_utils.py l.283-311: ``DLProgbar``, ``Progbar(total_size)``) and
# ``predict`` one of its batches, each ending "170498071/170498071 [====] - 19s 0us/step" (Keras 2,
# keras/src/utils/generic_utils.py ``Progbar.update`` l.237-300: the count, the bar, then the time
# and its ``_format_time`` per unit) or "313/313 ━━━━ 1s 2ms/step" (Keras 3, progbar.py l.120-173).
_KERAS_VALUELESS_BAR_RE = re.compile(
    r"^\s*\d+/\d+ (?:\[[=>.]+\] - |\u2501+ )\d+(?:\.\d+)?(?:s|ms|us|\u00b5s) \d+(?:\.\d+)?(?:s|ms|us|\u00b5s)/step\s*$")


def header_epoch_line(st: ShapeState, n: int, epoch: float, total: int | None, body: str,
                      named: list[tuple[str, Token]]) -> "EvalLine | Skip | None":
    """A counter line under an ``Epoch E/M`` header line (Keras' layout): an evaluation when the
    header's epoch already had its final line, a skip for the ``ETA`` line of a finished count
    (its final line follows), else None (a training line; its global step counts the epochs
    before the first header seen, ``(E - 1) x total``, when that is where the log starts).
    Updates ``st``."""
    if st.closed_epoch is not None and st.closed_epoch == epoch:
        vals = {name: num for name, t in named if (num := parse_grouped_number(t.raw)) is not None}
        if not vals:
            return None
        return EvalLine(vals, None, SRC, split="eval", loss=vals.get("loss"))
    finished = total is not None and n == total
    if finished and _ETA_RE.search(body):
        return Skip("a finished progress bar's ETA line (its final line follows)", "")
    if (st.last_epoch is None or epoch > st.last_epoch + 1) and total and epoch >= 1 \
            and (st.last_counter is None or n <= st.last_counter):
        # the first epoch header of this counter: the epochs before it (Keras counts from 1); or
        # a header past the next epoch, the epochs between elided by the paste ("#Epoch 3/450",
        # "#...", "#Epoch 448/450"): ProgbarLogger.on_epoch_begin prints each epoch's number
        # (f"Epoch {epoch + 1}/{self.epochs}"), the steps of the epochs left out come before
        st.offset = max(st.offset, int(epoch - 1) * total)
        st.top = 0
        st.last_counter = None
    if finished:
        st.closed_epoch = epoch
    return None


def same_epoch_lines(epoch_shape: str | None, shape: str) -> bool:
    """A line of the shape whose epochs are the steps (an epoch-only log), or of that shape with
    fields added after it on some epochs (``Epoch 10 loss 12.3 | train 2.1s | Acc 9.3% | infer 4.4s``
    among ``Epoch 09 loss 16.0 | train 2.1s``), or with another note after its last value (an
    early-stopping loop's "Epoch: 039, Loss: 0.2282, Test MAE: 0.7743 [New Best Model Saved]" then
    "Epoch: 045, Loss: 0.1300, Test MAE: 0.8256 (Patience: 6/10)": the values are the same, the
    note after them says whether the epoch improved). Not a line with fewer values and a note
    after them ("Epoch: 003, Loss: 1.2000 - saving model" among "Epoch: 003, Loss: 1.2000, Test
    MAE: 0.9000"): that is another message of the epoch, its summary (reviewed in R42)."""
    if epoch_shape is None:
        return False
    return shape.startswith(through_last_value(epoch_shape)) or epoch_shape.startswith(shape)


# A counter padded to the width of its total inside its bracket: "[   0/1832]" after "[1800/1832]"
# (PaddleDetection's ppdet/engine/callbacks.py ``LogPrinter``: space_fmt = ':' +
# str(len(str(steps_per_epoch))) + 'd', '[{' + space_fmt + '}/{}]'; torchvision's MetricLogger
# the same): one counter whatever its width.
_PADDED_BRACKET_RE = re.compile(r"\[ +(?=#)")


def _counter_key(shape: str, toks: list[Token], counter: Token) -> str:
    """The state of a counter is the line's shape up to the counter (lines that differ only in
    their optional fields after it, or in the padding of a bracketed count, share one count)."""
    k = toks.index(counter) + 1
    cut = -1
    for _ in range(k):
        cut = shape.find("#", cut + 1)
        if cut < 0:
            break
    key = shape if cut < 0 else shape[:cut + 1]
    return _PADDED_BRACKET_RE.sub("[", key) if "[ " in key else key


# An evaluation loop's batch line: a loop that prints its last batch gives its result there,
# a batch before it is no result. timm's validate (train.py) logs f'{log_name}: [{batch_idx:>4d}/
# {last_idx}]  Time: ...  Loss: {losses_m.val:>7.3f} ({losses_m.avg:>6.3f})  Acc@1: ...' every
# log_interval batches and at ``batch_idx == last_idx`` ([30/30]), log_name = 'Test' + log_suffix
# (' (EMA)' for the EMA weights' pass: "Test (EMA): [  30/30]"); the MetricLogger of torchvision's
# references, DeiT, MAE and DINO (utils.py ``log_every``) prints header, f'[{i}/{len(iterable)}]',
# 'eta: ...', f"{name}: {meter}" every print_freq and at ``i == len(iterable) - 1`` ([97/98]). Both
# name their values with a colon ("loss: 5.8000 (5.8010)", "Loss:   6.615 ( 6.691)"). The PyTorch
# ImageNet example's ProgressMeter (examples/imagenet/main.py ``validate``: ``if i %
# args.print_freq == 0: progress.display(i + 1)``, AverageMeter ``'{name} {val} ({avg})'``) names
# them without one and never prints its last batch: each of its lines is kept as an evaluation.
# (from the start of the blanks before the suffix, taken whole: tried once a run of blanks, not from each
# blank of a long run to its end, round 22b)
_EVAL_NAME_SUFFIX_RE = re.compile(r"(?<!\s)\s*+\([^()]*\)$")


def _eval_batch_counter(word: str, named: list[tuple[str, Token]]) -> Token | None:
    """The evaluation's own ``[n/N]`` batch counter, named by the line's evaluation word with an
    optional ``(...)`` suffix (timm's "Test (EMA)"), else None."""
    if word not in _EVAL_WORDS:
        return None
    return next((t for _, t in named if t.tot and _norm(_EVAL_NAME_SUFFIX_RE.sub("", t.name)) == word), None)


# a value named as a data set's size ("val dataset size", "valid set size", "val size"): a count
# of examples, never an evaluation's metric
_SET_SIZE_RE = re.compile(r"(?:^|[\s_/])(?:data ?set |set )?size$", re.IGNORECASE)
# a value named as a duration ("Testing time", "eval_time", "val duration", "elapsed")
_DURATION_NAME_RE = re.compile(r"(?:^|[\s_])(?:time|duration|elapsed)$", re.IGNORECASE)


def _eval_line(word: str, named: list[tuple[str, Token]], toks: list[Token], counter: Token | None,
               how: str, shape: str) -> "EvalLine | Skip":
    """An evaluation: every named number under its printed name (a name equal to the line's
    evaluation word, ``Test: [ 10/196]``, is the evaluation's own batch counter, not a value;
    ``shape`` is the line's, ``tokenize``'s)."""
    batch = _eval_batch_counter(word, named)
    if batch is not None and batch.tot is not None:
        last, low_shape = batch.tot - 1, shape.lower()
        if not any(f"{_norm(n)}: #" in low_shape for n, t in named if t is not batch):
            batch = None   # a loop that never prints its last batch: each line as it is
        elif (parse_grouped_number(batch.raw) or 0) < last:
            return Skip("an evaluation in progress (a batch before its last)", "")
    vals: dict[str, float] = {}
    split = word if word in _EVAL_WORDS else None
    loss = None
    loss_name = None
    for name, t in named:
        num = parse_grouped_number(t.raw)
        if num is None or t is batch or _norm(name) == word:
            continue
        vals.setdefault(name, num)
        ek = eval_key(name)
        if split is None and ek is not None:
            split = ek[0].lower()
        if loss is None and ((ek is not None and ek[1].lower() in ("loss", "lm loss")) or
                             (split is not None and _eval_loss_name(name))):
            loss, loss_name = num, name
    if batch is not None and loss_name is not None:
        # its last batch: the running average beside the batch's loss is the evaluation's loss
        avg = next((parse_grouped_number(t.raw) for t in toks if t.avg_of == loss_name), None)
        loss = avg if avg is not None else loss
    for t in toks:
        if t.avg_of is not None and _norm(t.avg_of) != word and (batch is None or t.avg_of != batch.name):
            num = parse_grouped_number(t.raw)
            if num is not None:
                vals.setdefault(t.avg_of + "_avg", num)
    if not any(_names_a_metric(k) or eval_key(k) is not None for k in vals):
        return Skip("an evaluation's progress line (no metrics)", "")
    if loss is None and vals and all(_SET_SIZE_RE.search(k) for k in vals):
        # the evaluation set's size, not its result: a trainer's setup line before any step
        # (f"val dataset size: {len(val_dataset)}", "valid set size: 5000", "val size: 1024")
        return Skip("an evaluation set's size (no evaluation)", "")
    if loss is None and vals and all(_DURATION_NAME_RE.search(k) for k in vals):
        # how long the evaluation took, not its result: a script's print after trainer.test()
        # (f"Testing time: {time.time() - t0} seconds", beside its "Training time: ...")
        return Skip("an evaluation's duration (no result)", "")
    step = int(parse_grouped_number(counter.raw) or 0) if counter is not None and how != "[n/N]" else None
    if split in ("testing",):
        split = "test"
    elif split == "validate":
        split = "validation"
    return EvalLine(vals, step, SRC, split=split or "eval", loss=loss,
                    extra={EVAL_STEP_HOW: True} if step is not None and how == EVAL_STEP_HOW else {})


# words around "loss" in an evaluation's loss name: PyTorch's mnist example prints
# 'Test set: Average loss: {:.4f}, Accuracy: ...', flair 'TEST : loss {}', 'DEV  : loss {}'
_EVAL_LOSS_WORDS = _EVAL_WORDS | {"set", "average", "avg", "mean", "total", "subset", "data"}


def _eval_loss_name(name: str) -> bool:
    """An evaluation line's name for its loss: ``loss`` with only split words before it."""
    words = re.findall(r"[a-z]+", _norm(name))
    return bool(words) and words[-1] == "loss" and all(w in _EVAL_LOSS_WORDS for w in words[:-1])


# "11.5K", "85.8G": a human-readable count (memory keeps M/G as MiB/GiB)
_SCALE = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "B": 1e9}


def _is_int_text(raw: str) -> bool:
    return raw.replace(",", "").lstrip("+").isdigit()


def _put(values: dict, name: str, t: Token) -> None:
    """A named number into the mapping: a record field (converted by its unit) or an extra
    under its printed name."""
    num = parse_grouped_number(t.raw)
    if num is None:
        return
    got = field_of(name)
    if got is not None:
        fname, conv = got
        if t.unit == "%" and fname in ("mem_gib", "step_time_s"):
            got = None   # "Memory 10.0%": a share, not an amount; kept under its name below
    if got is not None:
        fname, conv = got
        if fname != "mem_gib" and t.unit and t.unit.upper() in _SCALE:
            num *= _SCALE[t.unit.upper()]
            t = Token(t.name, t.raw, t.tot, None, t.avg_of)
        if fname not in values:
            val = unit_value(fname, num, t.unit, name) if t.unit or fname in ("mem_gib", "step_time_s") else conv(num)
            if val is not None:
                values[fname] = val
                return
    if got is None and t.unit and t.unit.lower() in TOKEN_RATE_UNITS and "tokens_per_s" not in values:
        # a value printed in tokens per second is the tokens per second whatever its name: prime-rl's
        # f"Throughput: {throughput:.0f} tokens/s" (trainer/sft/train.py, trainer/rl/train.py step
        # message) and its orchestrator's f"Throughput: {throughput:.1f} tokens/s" (orchestrator.py)
        values["tokens_per_s"] = num
        return
    if t.unit and t.unit.upper() in _SCALE:
        num *= _SCALE[t.unit.upper()]
    key = name if name not in values else f"{name}_{len(values)}"
    values[key] = num
    if t.tot is not None:
        values[f"{key}_total"] = float(t.tot)


# ----------------------------------------------------------------------------- blocks

@dataclass
class Block:
    """A header line's step and the indented metric lines after it, gathered into one record."""
    header: Header
    values: dict = field(default_factory=dict)
    lines: int = 0
    src: str = SRC                      # "caffe": a Caffe solver's display block (formats.caffe_line)


def block_values(text: str) -> dict | None:
    """The named numbers of an indented line inside a block (no counter of its own), or None."""
    body = strip_prefix_full(text)
    _, toks = tokenize(body)
    if not toks:
        return None
    values: dict[str, Any] = {}
    for t in toks:
        if is_counter_name(t.name) or (not t.name and t.tot is not None):
            return None   # a counter of its own: not part of the block
        if not t.name:
            if t.avg_of is not None:
                num = parse_grouped_number(t.raw)
                if num is not None:
                    values.setdefault(t.avg_of + "_avg", num)
            continue
        _put(values, t.name, t)
    return values or None
