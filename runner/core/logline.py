"""What wraps the message of a log line: terminal escapes and the launchers' prefixes.

One definition each, for every reader of log lines (the metric parser in ``moeconsole.runner.ingest`` reads
bytes, the crash classifier in ``moeconsole.runner.core.crash`` reads text):

- ANSI escapes: CSI sequences (colours, cursor moves), OSC strings, and two-byte escapes.
- torchrun's rank prefixes: ``[rank3]:`` (torch logging), ``[default3]:`` (``--tee``'s role
  prefix; another ``--role`` gives ``[trainer3]:``, a prefix template ``[trainer3|3]:``), and a bare
  ``[3]:text`` (a prefix template). A bare ``[0]:`` with nothing after it is
  not a prefix: it is the failure index inside torchrun's ChildFailedError block.
- Slurm ``srun --label``: ``[host:3]: `` (newer Slurm, with the node name) or ``3: ``.
- Open MPI's ``mpirun --tag-output`` (what ``horovodrun`` runs): ``[1,3]<stdout>:``.
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
# Open MPI's mpirun --tag-output tags every line a process writes with "[jobid,rank]<stdout>:"
# (<stderr>, <stddiag>), after ctime's "Mon May 18 11:47:13 2020" with --timestamp-output
# (orte/mca/iof/base/iof_base_output.c, orte_iof_base_write_output: snprintf(starttag, ...,
# "[%s,%s]<%s>:", jobid, vpid, suffix), and the tag again after each newline of the chunk; Open
# MPI 5's prte_iof_base_write_output alike). A chunk that does not end in a newline leaves the
# line open, so the next process's tagged chunk is written on the same line after it.
MPI_TAG = r"(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})?\[\d{1,10},(\d{1,10})\]<(?:stdout|stderr|stddiag)>:"
MPI_TAG_RE = re.compile(MPI_TAG)
MPI_TAG_BYTES_RE = re.compile(MPI_TAG.encode())
SRUN_LABEL_RE = re.compile(r"^(?:\[[A-Za-z0-9][\w.-]{0,254}:(\d{1,6})\]|(\d{1,6})):\s")


def prefix_rank(m: re.Match) -> int:
    """The rank a ``RANK_PREFIX_RE``, ``SRUN_LABEL_RE`` or ``MPI_TAG_RE`` match names."""
    return int(m.group(1) or m.group(2))
