"""The per-GPU memory envelope on plain readings: every source, capacity from NVML else the
recipe, the parts of the headroom, the tightest GPU first, the recipe's memory section."""
from __future__ import annotations

import json

import pytest

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.memory import (DEFAULT_MIN_HEADROOM_GIB, MemorySettings, MemoryWatch, Reading, alloc_conf_advice,
                                alloc_conf_env, gpu_of_rank, parse_size_gib, physical_gpu, readings_from_nvml,
                                visible_devices)
from moeconsole.runner.supervisor.memory_feed import reading_from_record
from moeconsole.runner.ingest.parser import LogParser
from tests.ingest.ingest_samples import parsed

MIB = 1 / 1024


def feed(watch: MemoryWatch, readings: list[Reading]) -> MemoryWatch:
    for r in readings:
        watch.observe(r)
    return watch


def test_parts_of_the_headroom_add_up_to_the_capacity():
    """Megatron's report gives allocated and reserved: fragmentation = reserved - allocated; the
    steady peak is the device peak without it; effective = capacity - steady - fragmentation -
    declared transients."""
    s = MemorySettings(capacity_gib=141.1, transients=(("fla_gdn_bwd", 266 * MIB),), warmup_steps=0)
    w = feed(MemoryWatch(s), [Reading("megatron_mem", step=i, rank=0, allocated_gib=130.0, reserved_gib=132.5,
                                      max_allocated_gib=130.4, max_reserved_gib=132.9) for i in range(1, 40)])
    (e,) = w.envelopes()
    assert e.gpu == 0 and e.capacity_source == "recipe"
    assert e.device_peak_gib == pytest.approx(132.9)
    assert e.fragmentation_gib == pytest.approx(2.5)
    assert e.steady_peak_gib == pytest.approx(130.4)
    assert e.headroom_gib == pytest.approx(141.1 - 132.9)
    assert e.effective_headroom_gib == pytest.approx(141.1 - 130.4 - 2.5 - 266 / 1024)
    assert e.steady_peak_gib + e.fragmentation_gib + e.transients_gib + e.effective_headroom_gib == pytest.approx(141.1)
    assert e.ok is True and e.min_headroom_gib == DEFAULT_MIN_HEADROOM_GIB


def test_steady_peak_ignores_a_rare_spike_but_max_keeps_it():
    w = MemoryWatch(MemorySettings(capacity_gib=80.0, warmup_steps=0))
    feed(w, [Reading("nvml", step=i, gpu=0, used_gib=60.0 + (3.0 if i == 30 else 0.0), total_gib=79.65)
             for i in range(1, 61)])
    (e,) = w.envelopes()
    assert e.device_peak_gib == pytest.approx(60.0)
    assert (e.max_gib, e.max_step) == (pytest.approx(63.0), 30)
    assert (e.capacity_gib, e.capacity_source) == (pytest.approx(79.65), "nvml")   # NVML beats the recipe


def test_capacity_from_nvml_else_the_recipe_else_unknown():
    log = [Reading("log", step=i, peak_gib=50.0) for i in range(1, 5)]
    (e,) = feed(MemoryWatch(MemorySettings()), log).envelopes()
    assert e.capacity_gib is None and e.headroom_gib is None and e.ok is None
    (e,) = feed(MemoryWatch(MemorySettings(capacity_gib=80.0)), log).envelopes()
    assert (e.capacity_gib, e.capacity_source) == (80.0, "recipe")
    # the run-wide number of a log takes the smallest NVML total of the run's GPUs
    w = feed(MemoryWatch(MemorySettings(capacity_gib=80.0)),
             log + [Reading("nvml", gpu=0, used_gib=10.0, total_gib=79.0), Reading("nvml", gpu=1, total_gib=78.5)])
    run_wide = next(e for e in w.envelopes() if e.gpu is None)
    assert (run_wide.capacity_gib, run_wide.capacity_source) == (78.5, "nvml")


def test_tightest_gpu_first():
    s = MemorySettings(capacity_gib=100.0, warmup_steps=0)
    w = MemoryWatch(s)
    for i in range(1, 10):
        for gpu, used in ((0, 80.0), (1, 97.0), (2, 90.0), (3, 99.9)):
            w.observe(Reading("nvml", step=i, gpu=gpu, used_gib=used))
    envs = w.envelopes()
    assert [e.gpu for e in envs] == [3, 1, 2, 0]
    assert [e.ok for e in envs] == [False, True, True, True]
    assert w.to_dict()["tightest"] == 3 and w.to_dict()["gpus"][0]["label"] == "GPU 3"


def test_nvml_readings_only_for_the_runs_gpus_and_foreign_memory_is_counted():
    snap = {"available": True, "gpus": [
        {"index": 0, "mem_used_mib": 2048.0, "mem_total_mib": 143771.0,
         "processes": [{"pid": 10, "used_mib": 1024.0}, {"pid": 77, "used_mib": 512.0}]},
        {"index": 1, "mem_used_mib": 100.0, "mem_total_mib": 143771.0, "processes": None},
        {"index": 5, "mem_used_mib": 9999.0, "mem_total_mib": 143771.0, "processes": []}]}
    rs = readings_from_nvml(snap, step=7, t=1.0, own_pids={10}, devices=(0, 1))
    assert [r.gpu for r in rs] == [0, 1]
    assert rs[0].used_gib == 2.0 and rs[0].total_gib == pytest.approx(140.401, abs=1e-3)
    assert rs[0].foreign_gib == pytest.approx(0.5) and rs[1].foreign_gib is None
    assert readings_from_nvml({"available": False}, step=1, t=0) == []


def test_ranks_map_to_gpus_through_cuda_visible_devices():
    vis = visible_devices("4,5,6,7")
    assert vis == (4, 5, 6, 7) and visible_devices("GPU-abc,GPU-def") is None and visible_devices("") is None
    assert [gpu_of_rank(r, vis) for r in (0, 3, 4, 7)] == [4, 7, 4, 7]     # rank 4 is node 2's first GPU
    assert physical_gpu(1, vis) == 5 and physical_gpu(2, None) == 2
    s = MemorySettings.from_recipe({}, env={"CUDA_VISIBLE_DEVICES": "4,5"})
    w = feed(MemoryWatch(s), [Reading("megatron_mem", step=1, rank=1, max_reserved_gib=10.0)])
    assert [e.gpu for e in w.envelopes()] == [5]


def test_records_become_readings_megatron_per_rank_and_swift_run_wide():
    """Megatron's report names its rank (per GPU); ms-swift's memory(GiB) is the max over the
    model-parallel group (the run-wide entry). Field names are records.MEMORY_FIELDS."""
    mega = {"step": 120, "src": "megatron_mem", "mem_gib": 60.0,
            "extra": {"mem_allocated_gib": 20.0, "mem_max_allocated_gib": 56.0, "mem_reserved_gib": 60.0,
                      "mem_max_reserved_gib": 60.0, "rank": 3}}
    r = reading_from_record(mega, t=5.0)
    assert (r.rank, r.allocated_gib, r.reserved_gib, r.cache_gib()) == (3, 20.0, 60.0, 40.0)
    swift = {"step": 10, "src": "swift_megatron", "mem_gib": 35.12, "extra": {}}
    r = reading_from_record(swift)
    assert (r.rank, r.gpu, r.peak_gib) == (None, None, 35.12)
    assert reading_from_record({"step": 1, "src": "swift_dict", "mem_gib": 0.0, "extra": {}}) is None  # no CUDA
    assert reading_from_record({"step": None, "mem_gib": 3.0}) is None


def test_a_column_of_log_peaks_is_the_same_as_one_reading_each():
    """The runner's fast path for template rows (thousands per log slice)."""
    steps = list(range(1, 3000)) + list(range(50, 400))          # a restart in the middle
    peaks = [60.0 + (s % 13) * 0.01 + (0.002 * s if s > 1000 else 0) for s in steps]
    peaks[7] = float("nan")
    peaks[9] = 0.0
    one, many = MemoryWatch(MemorySettings(capacity_gib=80.0)), MemoryWatch(MemorySettings(capacity_gib=80.0))
    for st, p in zip(steps, peaks):
        r = Reading("log", step=st, t=5.0, peak_gib=p) if p == p and p > 0 else None
        if r is not None:
            one.observe(r)
    many.observe_log_peaks(steps[:1234], peaks[:1234], 5.0)
    many.observe_log_peaks(steps[1234:], peaks[1234:], 5.0)
    assert one.to_dict() == many.to_dict()
    assert one.history(None) == many.history(None)


def test_the_parsers_megatron_report_reaches_the_envelope():
    """The real line format (report_memory) through the log parser: allocated / reserved land
    as the envelope's parts."""
    lines = (" [2026-01-02 03:04:05.678901] iteration      120/    5000 | consumed samples:         7680 | "
             "elapsed time per iteration (ms): 1834.6 | learning rate: 2.999900E-05 | global batch size:    64 | "
             "lm loss: 2.345678E+00 | loss scale: 1.0 | grad norm: 0.877 | number of skipped iterations:   0 | "
             "number of nan iterations:   0 |\n"
             "[Rank 0] (after 120 iterations) memory (MB) | allocated: 20480.00 | max allocated: 57344.00 | "
             "reserved: 61440.00 | max reserved: 61440.00\n"
             " [2026-01-02 03:04:07.678901] iteration      121/    5000 | consumed samples:         7744 | "
             "elapsed time per iteration (ms): 1834.6 | learning rate: 2.999900E-05 | global batch size:    64 | "
             "lm loss: 2.345678E+00 | loss scale: 1.0 | grad norm: 0.877 | number of skipped iterations:   0 | "
             "number of nan iterations:   0 |\n")
    p = LogParser()
    recs, _ = parsed(p, lines.encode())
    w = MemoryWatch(MemorySettings(capacity_gib=80.0))
    for rec in recs:
        r = reading_from_record(rec)
        if r is not None:
            w.observe(r)
    (e,) = w.envelopes()
    assert e.device_peak_gib == 60.0 and e.fragmentation_gib == 40.0 and e.steady_peak_gib == 20.0
    assert "megatron_mem" in e.sources


def test_a_restart_starts_the_envelope_afresh():
    w = MemoryWatch(MemorySettings(capacity_gib=80.0, warmup_steps=0))
    feed(w, [Reading("log", step=i, peak_gib=60.0) for i in range(1, 50)])
    feed(w, [Reading("log", step=i, peak_gib=70.0) for i in range(30, 60)])   # the step went back: new attempt
    (e,) = w.envelopes()
    assert e.device_peak_gib == 70.0
    w.new_attempt()                     # the runner's launch: nothing of the old attempt is shown
    assert w.envelopes() == []
    assert len(w.history(None)) == 79   # ... but the history (for a crash report) stays


@pytest.mark.parametrize("text, gib", [("266MiB", 266 / 1024), ("0.5 GiB", 0.5), ("512 MB", 0.5), (2, 2.0),
                                       ("1.5GB", 1.5), ("1024 KiB", 1 / 1024), ("1TiB", 1024.0)])
def test_sizes(text, gib):
    assert parse_size_gib(text, "memory.x") == pytest.approx(gib)


@pytest.mark.parametrize("section, word", [
    ({"min_headroom": "lots"}, "memory.min_headroom"), ({"transients": ["266MiB"]}, "memory.transients"),
    ({"transients": {"fla": "-1MiB"}}, "memory.transients.fla"), ({"window": 0}, "memory.window"),
    ({"horizon": 5}, "memory.horizon"), ({"critical_s": float("nan")}, "memory.critical_s"),
    ({"min_headroom": True}, "memory.min_headroom")])
def test_bad_memory_sections_name_the_key(section, word):
    with pytest.raises(InputError, match=word.replace(".", r"\.")):
        MemorySettings.from_recipe(section)


def test_memory_section_from_a_recipe():
    s = MemorySettings.from_recipe({"min_headroom": "1GiB", "transients": {"fla_gdn_bwd": "266MiB", "nccl": 0.5}},
                                   capacity_gib=141.1, devices=[0, 1])
    assert s.min_headroom_gib == 1.0 and s.transients_gib == pytest.approx(266 / 1024 + 0.5)
    assert s.devices == (0, 1) and s.capacity_gib == 141.1


@pytest.mark.parametrize("version, name", [("2.9.1+cu128", "PYTORCH_ALLOC_CONF"), ("2.13.0+cpu", "PYTORCH_ALLOC_CONF"),
                                           ("2.8.0", "PYTORCH_CUDA_ALLOC_CONF"), ("1.13.1", "PYTORCH_CUDA_ALLOC_CONF"),
                                           (None, None), ("nightly", None)])
def test_the_allocator_env_name_follows_the_torch_version(version, name):
    assert alloc_conf_env(version) == name
    advice = alloc_conf_advice(version)
    assert advice.startswith(f"{name or 'PYTORCH_ALLOC_CONF'}=expandable_segments:True")
    if name is None:
        assert "PYTORCH_CUDA_ALLOC_CONF before" in advice


def test_deepspeed_memory_records_are_per_rank_readings():
    """DeepSpeed's see_memory_usage (MA / Max_MA / CA / Max_CA) as issue 26's parser keeps it:
    src deepspeed_mem, values under records.MEMORY_FIELDS, the rank of the line's prefix."""
    rec = {"step": 40, "src": "deepspeed_mem", "mem_gib": None,
           "extra": {"mem_allocated_gib": 30.5, "mem_max_allocated_gib": 41.0, "mem_reserved_gib": 44.0,
                     "mem_max_reserved_gib": 46.0, "rank": 1}}
    r = reading_from_record(rec)
    assert (r.source, r.rank, r.top(), r.cache_gib()) == ("deepspeed_mem", 1, 46.0, 13.5)
    w = feed(MemoryWatch(MemorySettings(capacity_gib=80.0, warmup_steps=0)), [r])
    (e,) = w.envelopes()
    assert e.gpu == 1 and e.fragmentation_gib == 13.5 and e.steady_peak_gib == 46.0 - 13.5


def test_prometheus_families_per_gpu_from_the_envelope():
    from prometheus_client.core import Metric  # noqa: F401  (the exporter's library)
    from moeconsole.runner.ops.prometheus import memory_families
    w = MemoryWatch(MemorySettings(capacity_gib=80.0, transients=(("t", 0.25),), warmup_steps=0))
    for i in range(1, 30):
        w.observe(Reading("nvml", step=i, gpu=2, used_gib=70.0, total_gib=79.0))
        w.observe(Reading("log", step=i, peak_gib=71.0))
    fams = {f.name: f for f in memory_families("r1", w.to_dict())}
    eff = {s.labels["gpu"]: s.value for s in fams["moeconsole_memory_effective_headroom_bytes"].samples}
    assert eff == {"2": pytest.approx((79.0 - 70.0 - 0.25) * 1024 ** 3), "all": pytest.approx((79.0 - 71.0 - 0.25) * 1024 ** 3)}
    cap = {s.labels["gpu"]: s.value for s in fams["moeconsole_memory_capacity_bytes"].samples}
    assert cap == {"2": 79.0 * 1024 ** 3, "all": 79.0 * 1024 ** 3}
    assert [s.value for s in fams["moeconsole_memory_growth_bytes_per_step"].samples] == [0.0, 0.0]
    assert fams["moeconsole_memory_oom_in_steps"].samples == []          # no forecast: no sample
    assert fams["moeconsole_memory_transients_bytes"].samples[0].value == 0.25 * 1024 ** 3


def test_the_state_carries_the_tightest_gpus_newest_per_step_peaks_from_nvml():
    """A log with no memory field: NVML's samples are the only memory the run has. The state's
    tightest GPU carries its newest per-step peaks (after the warm-up, the step in progress
    last, at most ``PEAKS_SHOWN``), which the console draws as the memory chart."""
    from moeconsole.runner.core.memory import PEAKS_SHOWN, MemorySettings, MemoryWatch, readings_from_nvml
    w = MemoryWatch(MemorySettings(warmup_steps=5))
    for step in range(1, 301):
        gpus = [{"index": i, "mem_used_mib": 40 * 1024 + (step * 10 if i == 1 else 0), "mem_total_mib": 80 * 1024,
                 "processes": []} for i in range(2)]
        for r in readings_from_nvml({"available": True, "gpus": gpus}, step=step, t=float(step)):
            w.observe(r)
    gpus = w.to_dict()["gpus"]
    assert gpus[0]["gpu"] == 1 and "peaks" not in gpus[1], "the tightest GPU (the leaking one) only"
    peaks = gpus[0]["peaks"]
    assert len(peaks) == PEAKS_SHOWN and peaks[-1] == [300, round((40 * 1024 + 3000) / 1024, 3)]
    assert [s for s, _ in peaks] == list(range(300 - PEAKS_SHOWN + 1, 301))
    assert all(b[1] > a[1] for a, b in zip(peaks, peaks[1:])), "the leak rises step by step"
    json.dumps(w.to_dict())   # state.json's JSON as it is
