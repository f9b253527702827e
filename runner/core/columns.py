"""A batch of metric records as columns: the shape every consumer of a log's records reads.

The log readers (``moeconsole.runner.ingest``) produce records and, for the lines their fast path matches,
the same numbers as numpy columns without building a dict per line; the monitors, the chart book
and ``state.json`` read the columns. Both sides import the column schema from here, so ingest
never reaches into the monitors and the monitors never into ingest: data flows one way,
log -> records -> columns -> monitors, charts, state.
"""
from __future__ import annotations

import math

import numpy as np

from moeconsole.runner.core.numbers import as_float

# The fields kept as columns (float64 values plus a presence mask each).
COLUMN_FIELDS = ("loss", "grad_norm", "tokens_per_s", "step_time_s", "mem_gib")

Columns = tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]  # (steps, values, present)


def records_to_columns(records: list[dict]) -> Columns:
    """Metric records -> (steps, values, present). A value that is absent, a bool or not a
    number is not present (``as_float``)."""
    n = len(records)
    steps = np.fromiter((int(r.get("step") or 0) for r in records), dtype=np.int64, count=n)
    values: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    for f in COLUMN_FIELDS:
        vals = [as_float(r.get(f)) for r in records]
        present[f] = np.fromiter((v is not None for v in vals), dtype=bool, count=n)
        values[f] = np.fromiter((math.nan if v is None else v for v in vals), dtype=np.float64, count=n)
    return steps, values, present
