"""Sharded HF weights: does ``model.safetensors.index.json`` agree with the shards on disk?

The index maps every tensor name to the shard file holding it. Loaders trust it, so a shard
it names that is missing, or a tensor it names that its shard lacks, breaks loading; we also
catch a ``-of-0000Y`` set with fewer than Y files on disk.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from moeconsole.runner.rundir import jsonio

SHARD_NAME = re.compile(r"^(?P<stem>.+)-(?P<i>\d{5})-of-(?P<n>\d{5})(?P<ext>\.safetensors|\.bin)$")


@dataclass
class IndexReport:
    weight_map: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_index(path: Path) -> IndexReport:
    """Parse an index file; a broken one is reported, not raised."""
    report = IndexReport()
    try:
        obj = jsonio.loads(path.read_text())
    except (OSError, ValueError) as exc:
        report.problems.append(("corrupt_header", f"{path.name} is not readable JSON: {exc}"))
        return report
    wm = obj.get("weight_map") if isinstance(obj, dict) else None
    if not isinstance(wm, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in wm.items()):
        report.problems.append(("corrupt_header", f"{path.name} has no weight_map of tensor name -> file"))
        return report
    if not wm:
        report.problems.append(("empty_stub", f"{path.name} maps no tensors"))
    report.weight_map = wm
    return report


def check_index(index_name: str, weight_map: dict[str, str], shard_names: dict[str, set[str] | None],
                files_on_disk: set[str]) -> list[tuple[str, str]]:
    """Compare an index with the shards. ``shard_names`` maps shard file -> its tensor names
    (None if the shard could not be read; its own verdict reports why)."""
    problems: list[tuple[str, str]] = []
    named_files = sorted(set(weight_map.values()))
    missing = [f for f in named_files if f not in files_on_disk]
    if missing:
        problems.append(("missing_shard", f"{index_name} names {len(missing)} shard(s) not on disk: "
                                          f"{', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}"))
    absent: list[str] = []
    for tensor, shard in weight_map.items():
        names = shard_names.get(shard)
        if names is not None and tensor not in names:
            absent.append(f"{tensor} (in {shard})")
    if absent:
        problems.append(("index_mismatch", f"{index_name} names {len(absent)} tensor(s) no shard has: "
                                           f"{', '.join(absent[:3])}{' ...' if len(absent) > 3 else ''}"))
    if not missing:
        problems += check_series(named_files or sorted(files_on_disk), files_on_disk)
    return problems


def check_series(names: list[str], files_on_disk: set[str]) -> list[tuple[str, str]]:
    """A ``stem-0000X-of-0000Y`` series must have all Y members."""
    series: set[tuple[str, int, str]] = set()
    for name in names:
        m = SHARD_NAME.match(name)
        if m:
            series.add((m.group("stem"), int(m.group("n")), m.group("ext")))
    problems = []
    for stem, total, ext in sorted(series):
        lacking = [i for i in range(1, total + 1) if f"{stem}-{i:05d}-of-{total:05d}{ext}" not in files_on_disk]
        if lacking:
            problems.append(("missing_shard", f"{stem}-*-of-{total:05d}{ext}: shard(s) "
                                              f"{', '.join(str(i) for i in lacking[:5])} of {total} missing"))
    return problems
