"""What part of a raw log line carries the message.

A line is the bytes between two newlines. Within it, a carriage return sends the terminal's
cursor back to column 0: tqdm redraws its bar that way and clears it with spaces before
printing a message. So moeconsole reads a line the way a terminal shows it: the text after
the last carriage return that is not blank (ANSI colour codes removed). Earlier segments were
overwritten on screen and are not parsed. A torchrun ``[rankN]:`` prefix and a progress bar
that a message got glued to are stripped from the front. Two wrappers change the bytes of a line
before that: a syslog daemon's escapes of control characters (``#015`` for the carriage return)
are read as the characters, and a line holding several processes' ``mpirun --tag-output`` chunks
is cut into one line per chunk.
"""
from __future__ import annotations

import json
import re

from moeconsole.runner.core.logline import (ANSI_BYTES_RE, MPI_TAG_BYTES_RE, MPI_TAG_RE, RANK_PREFIX_RE,
                                            SRUN_LABEL_RE, prefix_rank)

# The right part of a tqdm bar cut at the terminal's width (see BAR_RE) before anything of its
# postfix shows: anywhere in "{elapsed}<{remaining}, {rate}" or right after the rate and the ","
# of the postfix's ", " (its " " stripped with the line's end). Nothing here asks that the rate's
# unit shows: "[01:52<14:28," and "[01:52<14:28,  1" are such cuts as well. ``cut_unit``: what
# shows of the rate's unit ("it/s", "s/it", "i", "" ...; formats.bare_bar_count asks it of the
# Hugging Face Trainer's "it" bar). The "," before the rate is tried only once and the blanks after
# it only by the rate's ``\s*`` (two ``\s*`` touching around an optional group backtrack in the
# square of a run of blanks: review R59, 11 s on one line of 30k blanks).
BAR_CUT_RIGHT = (r"\d[\d:]*(?:<[\d:?]*)?(?:,(?:\s*[\d.?]+\s?"
                 r"(?P<cut_unit>[A-Za-z]{0,12}(?:/[A-Za-z]{1,12},|/[A-Za-z]{0,12})?))?)?\s*$")

# tqdm: "{desc}: {pct:3.0f}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]",
# without the bar where the width is unknown ("{desc}: {pct:3.0f}% {n}/{total} [...]", ncols=0:
# formats._BAR_POSTFIX_RE), and, without a total, "{desc}: {n}{unit} [{elapsed}, {rate}{postfix}]";
# ultralytics' own bar since 8.3 (ultralytics/utils/tqdm.py ``TQDM._display``): "{desc}: {pct:.0f}%
# {bar} {n}/{total} {rate} {elapsed}{remaining}", the bar 12 of "━", "╸", "─". A description may
# hold a bracketed counter ("[1/3]"), or be a bracketed word (AuxiliaryASR's trainer.py:
# tqdm(self.train_dataloader, desc="[train]"), desc="[eval]"). A bar wider than the terminal is
# trimmed to its width (tqdm std.py format_meter: ``return disp_trim(res, ncols) if ncols else
# res``) once the part without the bar is wider than the terminal (the bar itself shrinks first,
# to ``max(1, ncols - disp_len(nobar))`` cells): its postfix, after the rate and ", ", ends at the
# line's end without the "]" (a postfix cut into its values is read, formats.read_bar_postfix).
# Cut at or before the first character of the postfix ("[{elapsed}<{remaining}, {rate}{postfix}]",
# r_bar, std.py:589; postfix = ", " + postfix, std.py:569) it is a bar with no value: BAR_CUT_RIGHT.
BAR_RE = re.compile(
    r"\s*(?:(?:(?:[^|%\[\]\r\n]|\[\d+/\d+\]){0,120}?|\[[A-Za-z][\w ]{0,30}\]):\s*)?(?:"
    r"\d{1,3}%(?:\|[^|\r\n]{0,300}\|\s*|\s+)[\d.]+[kMG]?/[\d.?]+[kMG]?\s*\["
    r"(?:[^\]\r\n]{0,200}\]|[\d:]+(?:<[\d:?]+)?,\s*[\d.?]+\s?[A-Za-z]{0,12}(?:/s|s/[A-Za-z]{1,12}), [^\]\r\n]{0,200}$"
    r"|" + BAR_CUT_RIGHT + ")"
    r"|[\d.]+[kMG]?[A-Za-z/]{0,12}\s\[\d[\d:]*(?:<[\d:?]+)?,\s*[^\]\r\n]{0,200}\]"
    r"|\d{1,3}%\s[━╸─]{1,60}\s[\d.]+[KMG]?/[\d.?]+[KMG]?B?(?:\s[\d.]+[KMG]?[A-Za-z]{0,12}/s)?"
    r"(?:\s[\d:.]+s?(?:<[\d:.]+s?)?)?(?=\s|$)"
    r")")
_WS = b" \t\x0b\x0c"

# Two tqdm redraws with no carriage return between them: the end of one bar's right part
# ("... [{elapsed}<{remaining}, {rate}{postfix}]", tqdm ``format_meter``'s r_bar) right before
# the start of the next ("{desc}: {pct:3.0f}%|", or its ``ncols=0`` form without the bar), or
# before the blanks ``tqdm.clear`` writes over a bar before a message (``tqdm.write``).
_GLUED_REDRAW_RE = re.compile(
    rb"\[\d[\d:]*(?:<[\d:?]+)?,[^\]\r\n]{0,300}?(?:/s|s/)[^\]\r\n]{0,300}\](?=[ \t]*"
    rb"(?:[^|%\[\]\r\n]{1,120}?:[ \t]*)?\d{1,3}%(?:\||[ \t]+[\d.]+[kMG]?/)|[ \t]{8,}\S)")


def unglue_redraws(line: bytes) -> bytes:
    """The line with a carriage return put back between two progress-bar redraws glued
    together. tqdm writes every redraw behind ``\\r`` (``tqdm.std.tqdm.status_printer``:
    ``fp_write('\\r' + s + ...)``) and clears it behind ``\\r`` with blanks before a message
    (``tqdm.write``: ``clear``); a log whose carriage returns were dropped (a copy from a
    viewer, a paste, a file stored without them) shows the redraws one after the other on one
    line: each was a step's bar all the same, read as if the ``\\r`` were there."""
    if b"]" not in line or b"%" not in line or not (b"/s" in line or b"s/" in line):
        return line
    return _GLUED_REDRAW_RE.sub(lambda m: m.group(0) + b"\r", line)


# A syslog daemon escapes each control character of a message as "#" and its three octal
# digits (rsyslog, runtime/parser.c SanitizeMsg: cCCEscapeChar '#', then '0' + ((c & 0300) >> 6),
# '0' + ((c & 0070) >> 3), '0' + (c & 0007); on by default): a log kept that way (SageMaker's
# CloudWatch stream: "#0151/4 [===...] - loss: 521.6073#010#010...#0154/4 [===] - loss: 522.4297")
# shows a bar's carriage returns as "#015", its backspaces as "#010" and colours as "#033[".
_SYSLOG_ESCAPED_RE = re.compile(rb"#(0[0-3][0-7]|177)")
_SYSLOG_TERMINAL = (b"#015", b"#010", b"#033")


def unescape_syslog(line: bytes) -> bytes:
    """The line with a syslog daemon's control-character escapes read as the characters. Only
    a line holding an escaped carriage return, backspace or escape (what a terminal program
    writes inside a line) is read so; an issue number such as "#0123" in other text stays."""
    if b"#0" not in line or not any(t in line for t in _SYSLOG_TERMINAL):
        return line
    return _SYSLOG_ESCAPED_RE.sub(lambda m: bytes((int(m.group(1), 8),)), line)


# A log pasted into a GitHub markdown table (a log viewer's rows copied as "date | line" under a
# "-- | --" rule) has each pipe of its text escaped: GitHub Flavored Markdown's tables extension
# ("include a pipe in a cell's content by escaping it", spec example 200). A tqdm bar's
# "{pct:3.0f}%|{bar}|" then reads "7%\\|##3 \\|": the escapes are the pipes.
_MD_ESCAPED_BAR = b"%\\|"


def unescape_markdown_pipes(line: bytes) -> bytes:
    """The line with a markdown table's escaped pipes read as pipes. Only a line holding a
    progress bar's escaped pipe (``%\\|``) is read so; a backslash before a pipe elsewhere stays."""
    if _MD_ESCAPED_BAR not in line:
        return line
    return line.replace(b"\\|", b"|")


def split_tagged(line: bytes) -> list[bytes]:
    """The line cut before each ``mpirun --tag-output`` tag after its first: one line per
    process's chunk (a chunk without its newline leaves the line open for the next one,
    ``core.logline.MPI_TAG_RE``)."""
    if b">:" not in line or b"<std" not in line:
        return [line]
    cuts = [m.start() for m in MPI_TAG_BYTES_RE.finditer(line)][1:]
    if not cuts:
        return [line]
    return [line[a:b] for a, b in zip([0, *cuts], [*cuts, len(line)])]


# Two processes printing to one stdout: Python's print() writes its text and then its ``end``
# ("\n") as two writes (CPython builtin_print: PyFile_WriteObject for each argument, then
# PyFile_WriteString(end)), so two processes that print at once can leave "text1text2\n\n": the
# second line glued to the first one's last number and an empty line after them (SimKD's and
# the CRD family's 'Epoch: [{0}][{1}/{2}]\t' 'GPU {3}\t' ... lines from four processes). The
# line's own opening (its text up to the first digit: "Epoch: [") standing again right after a
# digit, with no blank between, starts the second process's line.
_GLUED_HEAD_RE = re.compile(rb"^([A-Za-z][^\d\r\n]{4,39}?)\d")


def split_glued_prints(line: bytes) -> list[bytes]:
    """The line cut where its own opening stands again right after a digit: one line per
    process's print (``[line]`` when there is none)."""
    m = _GLUED_HEAD_RE.match(line)
    if m is None or sum(c.isalpha() for c in m.group(1).decode("latin-1")) < 3:
        return [line]
    head = m.group(1)
    cuts, at = [], line.find(head, len(head))
    while at != -1:
        if line[at - 1:at].isdigit():
            cuts.append(at)
        at = line.find(head, at + 1)
    if not cuts:
        return [line]
    return [line[a:b] for a, b in zip([0, *cuts], [*cuts, len(line)])]


# Keras' progress bar ends each update with no newline (keras/src/utils/progbar.py
# ``Progbar.update``: ``io_utils.print_msg(message, line_break=False)``, "\n" only at the bar's last
# update; each metric f" - {k}:" then f" {avg:.4f}", or f" {avg:.4e}" when abs(avg) <= 1e-3, "nan"
# for a NaN), so whatever prints during an epoch lands right after the last metric of the
# update before it: TerminateOnNaN's f"Batch {batch}: Invalid loss, terminating training"
# (keras/src/callbacks/terminate_on_nan.py, tf.keras' 'Batch %d: Invalid loss, terminating
# training'), another loop's f"Epoch {epoch + 1}/{epochs}". A metric value of a Keras bar line
# with a capitalized word right after it ends the bar's text; the word starts the other print.
# An epoch header glued there is not the bar's: ProgbarLogger prints its "Epoch E/M" in
# on_epoch_begin, after the epoch before ended its bar with the final update's newline, so the
# bar's own header always starts a line; the glued one (another process's, a nested fit's) would
# restart the epochs in the middle of one, and is left out. What is glued starts with a capital
# (TerminateOnNaN's "Batch", TF's "WARNING:tensorflow:") or is a TF C++ log line's date
# ("2021-07-15 12:34:56.789012: I tensorflow/..."): a metric value of the bar itself is followed
# only by " - ", padding, "\b"/"\r" or the line's end. Keras 3 draws its bar in colour, always
# (``bar = f"\x1b[1m{bar}\x1b[0m "``, then green and white runs of "━"), so a log keeps the
# codes between the count and the bar; Keras 1-2 print "] - " right after "[====>...]".
_EPOCH_HEADER_BYTES_RE = re.compile(rb"Epoch \d{1,9}/\d{1,9}[ \t\r]*")
_ANSI_OPTIONAL = rb"(?:" + ANSI_BYTES_RE.pattern + rb")?"   # the one escape pattern (logline)
_KERAS_BAR_BYTES_RE = re.compile(rb"\d/\d+" + _ANSI_OPTIONAL + rb" " + _ANSI_OPTIONAL
                                 + rb"(?:\[[=>.]{1,200}\]|(?:\xe2\x94\x81){1,200})")
_KERAS_GLUED_VALUE_RE = re.compile(
    rb" - [A-Za-z_][\w/.]{0,80}: (?:[-+]?\d+\.\d{4}(?:e[-+]\d{2,3})?|[-+]?nan|[-+]?inf)"
    rb"(?=[A-Z]|\d{4}-\d\d-\d\d \d\d:)")
_KERAS_BAR_MARKS = (b"] - ", "\u2501".encode())   # Keras 1-2's "[==>..] - ", Keras 3's "━"


def split_progbar_print(line: bytes) -> list[bytes]:
    """A Keras progress-bar line cut after each metric value another print got glued to: the
    bar's text and each such print's (``[line]`` when there is none)."""
    if not any(mark in line for mark in _KERAS_BAR_MARKS) or _KERAS_BAR_BYTES_RE.search(line) is None:
        return [line]
    parts: list[bytes] = []
    while (m := _KERAS_GLUED_VALUE_RE.search(line)) is not None:
        parts.append(line[:m.end()])
        line = line[m.end():]
        if _EPOCH_HEADER_BYTES_RE.fullmatch(line):
            return parts
        if _KERAS_BAR_BYTES_RE.search(line) is None:   # the rest is the other print alone
            break
    return [*parts, line]


# A status line a program rewrites in place: ``print("\r" + line, end="")`` never writes a
# newline, so the file keeps every state of it as carriage-return segments of one line
# (karpathy/autoresearch train.py: print(f"\rstep {step:05d} ({pct_done:.1f}%) | loss:
# {debiased_smooth_loss:.6f} | lrm: {lrm:.2f} | dt: {dt * 1000:.0f}ms | ... | remaining:
# {remaining:.0f}s    ", end="", flush=True), once a step). Each segment that opens as the first
# one does (its text up to the first digit: "step ") with a larger number than the one before is
# a step's own line; a progress bar's redraws (``%|``, ``it/s]``) are read as a bar's.
_BAR_REDRAW_MARKS = (b"%|", b"it/s]", b"s/it]")


def step_redraws(line: bytes, after: tuple[bytes, int] | None = None) -> tuple[list[bytes], tuple[bytes, int]] | None:
    """The carriage-return segments of a line rewritten in place once a step, one line each,
    when every one opens with the first one's opening and a larger number than the one before,
    with that opening and the last number; None when they are no such segments. ``after``: the
    opening and number of the segment read before these (an earlier part of the same line, read
    before its newline came: ``LogParser.read_redraws``); without it two segments are needed."""
    if (b"\r" not in line and after is None) or any(mark in line for mark in _BAR_REDRAW_MARKS):
        return None
    segs = [seg for seg in line.split(b"\r") if seg.strip()]
    if not segs or (after is None and len(segs) < 2):
        return None
    if after is None:
        m = _GLUED_HEAD_RE.match(segs[0])
        if m is None or sum(c.isalpha() for c in m.group(1).decode("latin-1")) < 3:
            return None
        head, last = m.group(1), -1
    else:
        head, last = after
    for seg in segs:
        n = _LEADING_NUMBER_RE.match(seg, len(head)) if seg.startswith(head) else None
        if n is None or int(n.group(0)) <= last:
            return None
        last = int(n.group(0))
    return segs, (head, last)


# Printed lines a page or a reply flattened onto one, joined by a blank: a quoted reply on GitHub
# (CommonMark's lazy continuation joins a quote's lines when the quoted text lost its breaks), a
# blog that set a log as prose. A training loop never prints a progress bar right after a dict
# on one line, nor a dict right after a bar's closing bracket with a blank between (the
# Trainer's dict comes with tqdm.write, which ends it with "\n" and redraws the bar on the next
# line, transformers trainer_callback.py ProgressCallback.on_log; ms-swift's dict the same way,
# its ProgressCallbackNew.on_log calling it: swift/trainers/callback.py @987aa5fd :36-60 in 2.x,
# swift/trainers/patcher.py @3602360a :51-58 in 4.x). So the line is cut: after a printed
# dict's closing brace that a bar follows (tqdm's l_bar "{desc}: {percentage:3.0f}%|",
# tqdm/std.py format_meter: a description of at most 40 characters, then the percentage and the
# bar's "|"), and after a bar's right part (its "{n}/{total} [{elapsed}<{remaining},
# {rate}{postfix}]") that a dict follows. A dict glued to a bar with no blank (a bar's redraw
# left open: ``strip_bar``) stays.
_FLATTENED_DICT_BAR_RE = re.compile(rb"\}[ \t]++(?=(?:[^\s{}|%]{1,40}:[ \t]*+)?\d{1,3}%\|)")
_FLATTENED_BAR_DICT_RE = re.compile(rb"(?<!\d)\d++/\d++ \[[\d:]++<[\d:?]++[^\]\r\n]{0,400}\][ \t]++(?=\{[ \t]*['\"])")


def split_flattened_prints(line: bytes) -> list[bytes]:
    """The line cut where a flattened paste joined a dict and a progress bar (either order):
    one piece each (``[line]`` when there is no such join)."""
    if b"%|" not in line or b"{" not in line:
        return [line]
    cuts = sorted({m.start() + 1 for m in _FLATTENED_DICT_BAR_RE.finditer(line)}
                  | {m.end() for m in _FLATTENED_BAR_DICT_RE.finditer(line)})
    if not cuts:
        return [line]
    pieces = [line[a:b].strip(b" \t") for a, b in zip([0, *cuts], [*cuts, len(line)])]
    return [p for p in pieces if p]


# torchtune's recipes describe their bar by the step they reached (torchtune 0.6.1
# recipes/lora_finetune_distributed.py l.833-839: ``pbar.update(1)``, then
# ``pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss: {loss_to_log}")``; the
# single-device recipe l.724 the same). A paste that kept each redraw's description and dropped
# its bar sets them side by side, blanks between ("1|1|Loss: 2.629014253616333    1|2|Loss:
# 3.023068428039551"): a line of nothing but such descriptions is one piece each.
_TORCHTUNE_DESC = rb"\d{1,6}\|\d{1,12}\|Loss: [-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)"
_TORCHTUNE_DESC_RE = re.compile(_TORCHTUNE_DESC)
_TORCHTUNE_DESCS_RE = re.compile(rb"[ \t]*+" + _TORCHTUNE_DESC + rb"(?:[ \t]{2,}" + _TORCHTUNE_DESC + rb")++[ \t]*+")


def split_torchtune_descriptions(line: bytes) -> list[bytes]:
    """The line cut into torchtune bar descriptions when it is two or more of them alone,
    blanks between (``[line]`` otherwise)."""
    if b"|Loss: " not in line or _TORCHTUNE_DESCS_RE.fullmatch(line.rstrip(b"\r\n")) is None:
        return [line]
    return _TORCHTUNE_DESC_RE.findall(line)


def split_step_redraws(line: bytes) -> list[bytes]:
    """``step_redraws``'s segments of a complete line, or ``[line]``."""
    got = step_redraws(line)
    return [line] if got is None else got[0]


_LEADING_NUMBER_RE = re.compile(rb"\d+")


# A terminal control sequence pasted as a viewer shows it: the escape character as the text
# "ESC" or in caret notation "^[" (less, cat -v), then the sequence's "[" and its parameters and
# final byte. chainer's PrintReport writes '\033[J' before each row and its ProgressBar
# '\033[{:d}A' after its lines (chainer/training/extensions/print_report.py, progress_bar.py):
# a paste shows "ESC[J0           100 ..." and "ESC[4AESC[J0           200 ...".
_SHOWN_ESCAPE_RE = re.compile(rb"(?:ESC|\^\[)(\[[0-9;]*[A-HJKSTfm])")


def unescape_shown_escapes(line: bytes) -> bytes:
    """The line with each control sequence shown as text (``ESC[J``, ``^[[4A``) read as the
    sequence, so it is removed as any other terminal code."""
    if b"ESC[" not in line and b"^[[" not in line:
        return line
    return _SHOWN_ESCAPE_RE.sub(lambda m: b"\x1b" + m.group(1), line)


# A notebook file (.ipynb) keeps a cell's printed output as JSON: a stream output's ``text`` is a
# list of strings, one a line, each ending in "\\n" but the last (nbformat/v4/rwbase.py
# ``split_lines``: ``output.text = output.text.splitlines(True)``; v4 schema "multiline_string"),
# written one item a line (nbformat/v4/nbjson.py ``JSONWriter.writes``: ``indent=1``,
# ``separators=(",", ": ")``; Colab writes them alike), so a committed notebook holds the log as
# lines such as ``    "      1/100      11.2G ...: 100%|###| 8/8 [00:10<00:00,  1.36s/it]\\n",``.
_NOTEBOOK_ITEM_RE = re.compile(rb'[ \t]*"(.*)\\n",?[ \t]*')
_NOTEBOOK_ITEM_ENDS = (b'\\n"', b'\\n",')


def unquote_notebook_line(line: bytes) -> bytes:
    """The text of a line that is one printed line of a notebook's output, a JSON string item
    ending in an escaped newline (``unquote_notebook_line(b' "loss: 1.5\\\\n",') == b'loss: 1.5'``);
    any other line as it is. An item without its newline (the output's last, a bar's redraw
    continued in the next output) is left as it is."""
    if not line.rstrip().endswith(_NOTEBOOK_ITEM_ENDS) or not line.lstrip().startswith(b'"'):
        return line
    m = _NOTEBOOK_ITEM_RE.fullmatch(line.rstrip(b"\r"))
    if m is None:
        return line
    try:
        text = json.loads(b'"' + m.group(1) + b'"')
    except ValueError:
        return line
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else line


def terminal_bytes(line: bytes) -> bytes:
    """The line's bytes as the terminal received them: a syslog daemon's escapes undone
    (``unescape_syslog``), a markdown table's escaped pipes read as pipes
    (``unescape_markdown_pipes``), a control sequence shown as text read as the sequence
    (``unescape_shown_escapes``), a notebook file's quoted output line read as its text
    (``unquote_notebook_line``), then redraws glued without their carriage returns put apart
    (``unglue_redraws``). Every reader of a raw line starts here."""
    line = unescape_markdown_pipes(unescape_shown_escapes(unescape_syslog(unquote_notebook_line(line))))
    return unglue_redraws(line)


def visible_segment(line: bytes) -> bytes | None:
    """The last non-blank carriage-return segment of a line, ANSI codes removed; None if the
    whole line is blank."""
    if b"\x1b" in line:
        line = ANSI_BYTES_RE.sub(b"", line)
    if b"\r" not in line:
        return line if line.strip() else None
    for seg in reversed(line.split(b"\r")):
        if seg.strip():
            return seg
    return None


def decode_line(seg: bytes) -> str:
    """Bytes to text; invalid UTF-8 becomes U+FFFD, NULs are dropped."""
    text = seg.decode("utf-8", "replace")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text.strip()


def split_rank(text: str) -> tuple[int | None, str]:
    """(rank, rest) for a line behind a rank prefix, else (None, text).

    Prefixes: torchrun's ``[rank3]:`` / ``[default3]:``, Slurm ``srun --label``'s
    ``[host:3]: `` or ``3: `` (the task number; the host name is dropped, never read as a
    metric), and ``mpirun --tag-output``'s ``[1,3]<stdout>:``. An srun label in front of a
    torchrun prefix is removed too; the rank kept is the innermost one."""
    rank = None
    c = text[:1]
    if "]<std" in text[:48]:
        m = MPI_TAG_RE.match(text)
        if m:
            return prefix_rank(m), text[m.end():].strip()
    if c.isdigit() or c == "[":
        m = SRUN_LABEL_RE.match(text)
        if m:
            rank = prefix_rank(m)
            text = text[m.end():].strip()
    if text.startswith("["):
        m = RANK_PREFIX_RE.match(text)
        if m:
            return prefix_rank(m), text[m.end():].strip()
    return rank, text


# A bar_format without the rate ("{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]",
# NeMo's): its postfix follows the remaining time. The count starts where its run of digits starts and is taken
# possessively: a later start in the run meets the same '/' (or its absence), so a line holding a long run of digits
# (an id dump) is scanned once, not from each of its digits to the run's end (review R71: 0.48 s for 8k digits).
NO_RATE_BAR_RE = re.compile(r"(?<!\d)\d++/\d+ \[[\d:]+<[\d:?]+, ")


def may_be_bar(text: str) -> bool:
    """Whether ``text`` may hold a tqdm bar: its rate reads N.NN{unit}/s or s/{unit}, or a
    bar_format without the rate puts the postfix after the remaining time."""
    return "/s" in text or "s/" in text or NO_RATE_BAR_RE.search(text) is not None


def strip_bar(text: str) -> tuple[bool, str]:
    """(starts_with_bar, text after the bar). A segment that is only a bar leaves ''."""
    if not may_be_bar(text):
        return False, text
    m = BAR_RE.match(text)
    if not m:
        return False, text
    return True, text[m.end():].strip()
