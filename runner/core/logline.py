"""What wraps the message of a log line: terminal escapes and the launchers' prefixes.

One definition each, for every reader of log lines (the metric parser in ``moeconsole.runner.ingest`` reads
bytes, the crash classifier in ``moeconsole.runner.core.crash`` reads text):

- ANSI escapes: CSI sequences (colours, cursor moves), OSC strings, and two-byte escapes.
- torchrun's rank prefixes: ``[rank3]:`` (torch logging), ``[default3]:`` (``--tee``'s role
  prefix; another ``--role`` gives ``[trainer3]:``, a prefix template ``[trainer3|3]:``), and a bare
  ``[3]:text`` (a prefix template). A bare ``[0]:`` with nothing after it is
  not a prefix: it is the failure index inside torchrun's ChildFailedError block.
- Slurm ``srun --label``: ``[host:3]: `` (newer Slurm, with the node name) or ``3: ``.
"""
from __future__ import annotations

import re

_ANSI = r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])"
ANSI_TEXT_RE = re.compile(_ANSI)
ANSI_BYTES_RE = re.compile(_ANSI.encode())

# torchrun (torch.distributed.elastic LocalElasticAgent) prefixes each line with
# "[${role_name}${local_rank}]:" (role "default" unless --role names another, e.g. "[trainer0]:"), or
# with TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, e.g. "[${role_name}${rank}|${local_rank}]:" ("[trainer0|0]:");
# the first number is the rank kept.
RANK_PREFIX_RE = re.compile(r"^\[(?:rank|default|[A-Za-z][A-Za-z_]{0,30})(\d{1,6})(?:\|\d{1,6})?\]:[ ]?"
                            r"|^\[(\d{1,6})\]:[ ]?(?=\S)")
SRUN_LABEL_RE = re.compile(r"^(?:\[[A-Za-z0-9][\w.-]{0,254}:(\d{1,6})\]|(\d{1,6})):\s")


def prefix_rank(m: re.Match) -> int:
    """The rank a ``RANK_PREFIX_RE`` or ``SRUN_LABEL_RE`` match names."""
    return int(m.group(1) or m.group(2))
