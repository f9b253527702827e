"""A run as Prometheus metrics: the numbers a team watches over a day-long run.

``metric_families(view)`` is pure: it turns one :class:`MetricsView` (built from a snapshot and the
event tally) into metric families, so the names, labels and values are tested on plain data.
:mod:`moeconsole.runner.ops.exporter` serves them over HTTP (loopback by default) or writes them for
node_exporter's textfile collector.

Naming follows Prometheus conventions: ``moeconsole_`` prefix, base units (seconds, bytes),
``_total`` for counters. Every series carries ``run_id`` so one Prometheus can watch many runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.ops.tally import EventTally
from moeconsole.runner.core.state import Status

STATUSES = tuple(s.value for s in Status)
MIB = 1024 * 1024
GIB = 1024 * MIB


@dataclass
class MetricsView:
    """Everything the metrics are made of, taken at one moment."""

    now: float
    run: Mapping[str, Any]                    # Snapshot.run
    last_metrics: Mapping[str, Any] | None    # newest metrics.jsonl record
    tally: EventTally
    gpu: Mapping[str, Any] | None = None      # GpuSnapshot.to_dict(), None when not collected
    state_updated_at: float | None = None     # state.json's updated_at (runner liveness)
    extra: dict[str, float] = field(default_factory=dict)


def _gauge(name: str, doc: str, labels: dict[str, str], value: float | None) -> Iterator[Metric]:
    """One single-sample gauge family, or nothing when the value is unknown."""
    if value is None:
        return
    fam = GaugeMetricFamily(name, doc, labels=list(labels))
    fam.add_metric(list(labels.values()), value)
    yield fam


def metric_families(view: MetricsView) -> Iterator[Metric]:
    """The metric families of one run. Absent values produce no sample (never a fake zero)."""
    run, tally = view.run, view.tally
    rid = str(run.get("id") or "")
    base = {"run_id": rid}
    status = str(run.get("status") or "").lower()

    info = GaugeMetricFamily("moeconsole_run_info", "Run identity (value is always 1).",
                             labels=["run_id", "name", "recipe_hash"])
    info.add_metric([rid, str(run.get("name") or ""), str(run.get("recipe_hash") or "")], 1)
    yield info

    st = GaugeMetricFamily("moeconsole_run_status", "1 for the run's current status, 0 for the others.",
                           labels=["run_id", "status"])
    for s in STATUSES:
        st.add_metric([rid, s], 1.0 if s == status else 0.0)
    yield st

    stale = bool(run.get("stale"))
    yield from _gauge("moeconsole_run_stale", "1 when the run says it is live but its runner is gone.",
                 base, 1.0 if stale else 0.0)
    if view.state_updated_at is not None:
        yield from _gauge("moeconsole_state_age_seconds", "Seconds since the runner last wrote state.json.",
                     base, max(0.0, view.now - view.state_updated_at))
    for fams in (
        _gauge("moeconsole_attempt", "Current attempt number (1-based).", base, as_float(run.get("attempt"))),
        _gauge("moeconsole_run_elapsed_seconds", "Seconds since the run started.", base, as_float(run.get("elapsed_s"))),
        _gauge("moeconsole_step", "Last training step completed.", base, as_float(run.get("step"))),
        _gauge("moeconsole_max_steps", "Steps the run will take in all.", base, as_float(run.get("max_steps"))),
        _gauge("moeconsole_step_time_seconds", "Recent median time per step.", base, as_float(run.get("step_time_s"))),
        _gauge("moeconsole_eta_seconds", "Estimated seconds to the last step.", base, as_float(run.get("eta_s"))),
        _gauge("moeconsole_cost_dollars", "Cost so far at the recipe's hourly price.", base,
               as_float(run.get("cost_so_far"))),
        _gauge("moeconsole_ingest_lag_bytes", "Bytes of train.log the runner has not ingested yet.", base,
               as_float((run.get("ingest") or {}).get("lag_bytes"))),
        _gauge("moeconsole_checkpoint_sync_lag_seconds",
               "Seconds the newest good checkpoint has waited for its persistent copy (0: in sync).", base,
               as_float((run.get("sync") or {}).get("lag_s"))),
        _gauge("moeconsole_checkpoint_sync_failures", "Failed sync tries in a row.", base,
               as_float((run.get("sync") or {}).get("failures"))),
        _gauge("moeconsole_checkpoint_synced_step", "Step of the newest checkpoint copied and verified.", base,
               as_float((run.get("sync") or {}).get("last_synced_step"))),
    ):
        yield from fams

    restarts = CounterMetricFamily("moeconsole_restarts", "Automatic restarts of the run.", labels=["run_id"])
    restarts.add_metric([rid], float(as_float(run.get("restarts")) or 0.0))
    yield restarts

    crashes = CounterMetricFamily("moeconsole_crashes", "Crashes of the run by crash class.",
                                  labels=["run_id", "class"])
    for cls, n in sorted(tally.crashes.items()):
        crashes.add_metric([rid, cls], float(n))
    yield crashes

    lm = view.last_metrics or {}
    loss = as_float(lm.get("loss"))
    grad = as_float(lm.get("grad_norm"))
    mem_gib = as_float(lm.get("mem_gib"))
    for fams in (
        _gauge("moeconsole_loss", "Loss of the newest step (NaN is reported as NaN).", base, loss),
        _gauge("moeconsole_grad_norm", "Gradient norm of the newest step.", base, grad),
        _gauge("moeconsole_learning_rate", "Learning rate of the newest step.", base, as_float(lm.get("lr"))),
        _gauge("moeconsole_tokens_per_second", "Training throughput of the newest step.", base,
               as_float(lm.get("tokens_per_s"))),
        _gauge("moeconsole_train_memory_bytes", "GPU memory the trainer reports for the newest step.", base,
               None if mem_gib is None else mem_gib * GIB),
    ):
        yield from fams
    nonfinite = any(v is not None and not math.isfinite(v) for v in (loss, grad))
    yield from _gauge("moeconsole_nonfinite", "1 when the newest loss or grad norm is NaN or infinite.",
                 base, 1.0 if nonfinite else 0.0)

    cap = as_float(run.get("mem_capacity_gib"))
    if cap is not None:
        yield from _gauge("moeconsole_gpu_memory_capacity_bytes", "Usable GPU memory per device (recipe).",
                     base, cap * GIB)
    gpus = (view.gpu or {}).get("gpus") or []
    if gpus:
        used = GaugeMetricFamily("moeconsole_gpu_memory_used_bytes", "GPU memory in use per device.",
                                 labels=["run_id", "gpu", "uuid"])
        total = GaugeMetricFamily("moeconsole_gpu_memory_total_bytes", "GPU memory per device.",
                                  labels=["run_id", "gpu", "uuid"])
        for g in gpus:
            lab = [rid, str(g.get("index")), str(g.get("uuid") or "")]
            if as_float(g.get("mem_used_mib")) is not None:
                used.add_metric(lab, float(g["mem_used_mib"]) * MIB)
            if as_float(g.get("mem_total_mib")) is not None:
                total.add_metric(lab, float(g["mem_total_mib"]) * MIB)
        yield used
        yield total

    yield from memory_families(rid, run.get("memory"))

    ck = CounterMetricFamily("moeconsole_checkpoints", "Checkpoint verifications by verdict.",
                             labels=["run_id", "verdict"])
    for verdict, n in sorted(tally.checkpoints.items()):
        ck.add_metric([rid, verdict], float(n))
    yield ck
    if tally.verified_step is not None:
        yield from _gauge("moeconsole_checkpoint_verified_step", "Step of the newest checkpoint that verified ok.",
                     base, float(tally.verified_step))
        if tally.verified_at is not None:
            yield from _gauge("moeconsole_checkpoint_verified_age_seconds",
                         "Seconds since the newest good checkpoint was verified.",
                         base, max(0.0, view.now - tally.verified_at))

    active = GaugeMetricFamily("moeconsole_alerts_active", "Alerts raised during the current attempt.",
                               labels=["run_id", "rule", "level"])
    for (rule, level), n in sorted(tally.alerts_active.items()):
        active.add_metric([rid, rule, level], float(n))
    yield active
    total_alerts = CounterMetricFamily("moeconsole_alerts", "Alerts raised during the run.",
                                       labels=["run_id", "rule", "level"])
    for (rule, level), n in sorted(tally.alerts_total.items()):
        total_alerts.add_metric([rid, rule, level], float(n))
    yield total_alerts

    for name, value in sorted(view.extra.items()):
        yield from _gauge(name, name.replace("_", " "), base, value)


# per-GPU memory envelope (state.json "memory", moeconsole.runner.core.memory): (metric, doc, key, scale)
_MEMORY_GAUGES = (
    ("moeconsole_memory_capacity_bytes", "GPU memory capacity (NVML, else the recipe).", "capacity_gib", GIB),
    ("moeconsole_memory_device_peak_bytes", "Median per-step peak memory of the GPU.", "device_peak_gib", GIB),
    ("moeconsole_memory_steady_peak_bytes", "Per-step peak without the allocator's reserved-but-free cache.",
     "steady_peak_gib", GIB),
    ("moeconsole_memory_fragmentation_bytes", "Reserved but unallocated by torch's caching allocator.",
     "fragmentation_gib", GIB),
    ("moeconsole_memory_headroom_bytes", "Capacity minus the per-step peak.", "headroom_gib", GIB),
    ("moeconsole_memory_effective_headroom_bytes",
     "Capacity minus steady peak, fragmentation and declared transients.", "effective_headroom_gib", GIB),
)


def memory_families(rid: str, memory: Any) -> Iterator[Metric]:
    """The memory envelope per GPU (label ``gpu``: an index, or ``all`` for a trainer's max over
    ranks), its trend and forecast, and the recipe's minimum and declared transients."""
    if not isinstance(memory, Mapping):
        return
    gpus = [g for g in memory.get("gpus") or () if isinstance(g, Mapping)]
    for name, doc, key, scale in _MEMORY_GAUGES:
        fam = GaugeMetricFamily(name, doc, labels=["run_id", "gpu"])
        for g in gpus:
            v = as_float(g.get(key))
            if v is not None:
                fam.add_metric([rid, _gpu_label(g)], v * scale)
        yield fam
    growth = GaugeMetricFamily("moeconsole_memory_growth_bytes_per_step",
                               "Robust trend of the per-step peak (0 when stable).", labels=["run_id", "gpu"])
    oom = GaugeMetricFamily("moeconsole_memory_oom_in_steps", "Steps until the growing peak reaches capacity "
                            "minus the declared transients.", labels=["run_id", "gpu"])
    oom_s = GaugeMetricFamily("moeconsole_memory_oom_in_seconds", "The same forecast in seconds.",
                              labels=["run_id", "gpu"])
    for g in gpus:
        tr, fc = g.get("trend") or {}, g.get("forecast") or {}
        if as_float(tr.get("gib_per_step")) is not None:
            growth.add_metric([rid, _gpu_label(g)], float(tr["gib_per_step"]) * GIB)
        if as_float(fc.get("oom_in_steps")) is not None:
            oom.add_metric([rid, _gpu_label(g)], float(fc["oom_in_steps"]))
        if as_float(fc.get("oom_in_s")) is not None:
            oom_s.add_metric([rid, _gpu_label(g)], float(fc["oom_in_s"]))
    yield growth
    yield oom
    yield oom_s
    for name, doc, key in (("moeconsole_memory_min_headroom_bytes", "The recipe's memory.min_headroom.",
                            "min_headroom_gib"),
                           ("moeconsole_memory_transients_bytes", "The recipe's declared transients, summed.",
                            "transients_gib")):
        v = as_float(memory.get(key))
        if v is not None:
            yield from _gauge(name, doc, {"run_id": rid}, v * GIB)


def _gpu_label(g: Mapping[str, Any]) -> str:
    return "all" if g.get("gpu") is None else str(g.get("gpu"))

