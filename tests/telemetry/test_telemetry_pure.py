"""Pure pieces on plain data: labelling rules, redaction, rendering, release and CPU maths."""
from __future__ import annotations

import pytest

from moeconsole.console.commands.gpus import render_gpus, render_port
from moeconsole.console.gpurows import gpu_row
from moeconsole.runner.telemetry.gpu import GpuInfo, GpuProcess, GpuSnapshot
from moeconsole.runner.telemetry.host import cpu_busy_pct
from moeconsole.runner.telemetry.kill import gpu_released, release_targets
from moeconsole.runner.telemetry.preflight import gpu_problems
from moeconsole.runner.telemetry.procs import ProcFacts, process_labels
from moeconsole.runner.rundir.secrets import redact_argv, redact_cmdline


@pytest.mark.parametrize("facts, labels", [
    (ProcFacts(on_gpu=True), ("foreign_gpu",)),
    (ProcFacts(on_gpu=True, in_run_tree=True, run_context=True), ("run_tree",)),
    (ProcFacts(in_run_tree=True, run_context=True), ()),
    (ProcFacts(on_gpu=True, belongs_to_run=True, run_context=True), ("foreign_gpu", "orphan")),
    (ProcFacts(belongs_to_run=True, run_context=True), ("orphan",)),
    (ProcFacts(marker_run_over=True), ("orphan",)),
    (ProcFacts(marker_run_live=True, on_gpu=True), ("run_tree",)),
    # another live run's GPU process is a stranger to this run's pre-flight
    (ProcFacts(marker_run_live=True, on_gpu=True, run_context=True), ("foreign_gpu",)),
    (ProcFacts(zombie=True, parent_relevant=True), ("defunct",)),
    (ProcFacts(zombie=True), ()),
    (ProcFacts(zombie=True, belongs_to_run=True, run_context=True), ("defunct",)),
    (ProcFacts(holds_port=True), ("port_holder",)),
    (ProcFacts(holds_port=True, in_run_tree=True, run_context=True), ("run_tree", "port_holder")),
    (ProcFacts(), ()),
])
def test_classify(facts, labels):
    assert process_labels(facts) == labels


@pytest.mark.parametrize("argv, shown", [
    (["python", "train.py", "--hub_token", "hf_abcdefghijklmnopqrstuvwxyz", "--lr", "1e-4"],
     ["python", "train.py", "--hub_token", "***", "--lr", "1e-4"]),
    (["serve", "--api-key=sk-live-0123456789abcdefghijkl"], ["serve", "--api-key=***"]),
    (["env", "HF_TOKEN=secretvalue", "WANDB_API_KEY=abc", "OMP_NUM_THREADS=1", "python"],
     ["env", "HF_TOKEN=***", "WANDB_API_KEY=***", "OMP_NUM_THREADS=1", "python"]),
    (["git", "clone", "https://user:p4ss@example.com/repo.git"], ["git", "clone", "https://user:***@example.com/repo.git"]),
    (["x", "--config", "ghp_0123456789abcdefghijABCDEFGHIJ"], ["x", "--config", "***"]),
    (["swift", "sft", "--max_new_tokens", "512", "--pad_token", "<eos>", "--tokenizer", "t"],
     ["swift", "sft", "--max_new_tokens", "512", "--pad_token", "<eos>", "--tokenizer", "t"]),
    (["app", "--password", "--verbose"], ["app", "--password", "--verbose"]),
])
def test_redact_argv(argv, shown):
    assert redact_argv(argv) == shown


def test_redact_cmdline_quotes_spaces():
    assert redact_cmdline(["python", "-c", "print(1) ", "--token", "t"]) == "python -c 'print(1) ' --token ***"


def _snap(*gpus: GpuInfo) -> GpuSnapshot:
    return GpuSnapshot(available=True, backend="nvml", reason=None, driver="1", taken_at=0.0, gpus=gpus)


def test_gpu_released_needs_pid_gone_and_memory_under_tolerance():
    busy = _snap(GpuInfo(0, mem_used_mib=500, processes=(GpuProcess(42, 400),)), GpuInfo(1, mem_used_mib=9000))
    assert not gpu_released(busy, {42}, [0], 1024)           # still listed
    assert not gpu_released(busy, {7}, None, 1024)           # GPU 1 above tolerance
    assert gpu_released(busy, {7}, [0], 1024)                # only GPU 0 matters, 500 <= 1024
    na = _snap(GpuInfo(0, mem_used_mib=None, processes=None))
    assert gpu_released(na, {42}, [0], 1024)                 # nothing known to wait on
    no_gpu = GpuSnapshot(False, "none", "no driver", None, 0.0)
    assert gpu_released(no_gpu, {42}, [0], 1024)


def test_release_targets_per_gpu_the_process_was_on():
    before = _snap(GpuInfo(0, mem_used_mib=30000, mem_total_mib=80000, processes=(GpuProcess(42, 20000),)),
                   GpuInfo(1, mem_used_mib=5000, mem_total_mib=80000, processes=(GpuProcess(7, 5000),)))
    targets = release_targets(before, 42)
    assert targets == {0: pytest.approx(10000 + 800)}  # its 20000 MiB back, 1% slack
    after_kill = _snap(GpuInfo(0, mem_used_mib=10100, processes=()), GpuInfo(1, mem_used_mib=5000))
    assert gpu_released(after_kill, {42}, [0], targets)
    still = _snap(GpuInfo(0, mem_used_mib=29000, processes=()))
    assert not gpu_released(still, {42}, [0], targets)   # gone from the list, memory not yet back


def test_gpu_problems_cover_missing_devices_and_memory():
    snap = _snap(GpuInfo(0, mem_used_mib=2048.0), GpuInfo(1, mem_used_mib=None))
    assert gpu_problems(snap, [0, 1, 2], 1024) == [
        "GPU 0: 2048 MiB used, above the 1024 MiB tolerance",
        "GPU 2 is not present (this node has 2)",
    ]
    assert gpu_problems(snap, None, 1024) == []


def test_snapshot_round_trips_through_json_dict():
    snap = _snap(GpuInfo(3, name="H200", util_pct=None, mem_used_mib=1.5, processes=(GpuProcess(9, None),),
                         na={"util_pct": "not supported"}))
    assert GpuSnapshot.from_dict(snap.to_dict()) == snap
    assert snap.pid_usage() == {9: {3: None}}


def test_rows_show_na_for_missing_values():
    row = gpu_row(GpuInfo(0, name="NVIDIA H100 80GB HBM3 very long", mem_total_mib=81559).to_dict())
    assert row.split() == ["0", "NVIDIA", "H100", "80GB", "HBM3", "—", "—", "/", "81559", "—",
                           "—", "/", "—", "—", "/", "—"]
    assert render_gpus(GpuSnapshot(False, "none", "NVIDIA driver not loaded", None, 0.0)) == [
        "No NVIDIA GPU: NVIDIA driver not loaded"]
    assert render_port(29500, False, [], 3) == "Port 29500: not bindable (3 in TIME_WAIT)"


def test_cpu_busy_pct():
    assert cpu_busy_pct((10.0, 100.0), (15.0, 120.0)) == pytest.approx(25.0)
    assert cpu_busy_pct((10.0, 100.0), (10.0, 100.0)) is None


def _fresh_host(monkeypatch):
    """moeconsole.runner.telemetry.host with no sample taken yet, a clock the test moves, and sleeps recorded."""
    from moeconsole.runner.telemetry import cpustat, host
    monkeypatch.setattr(cpustat, "first", None)
    monkeypatch.setattr(host, "_last_cpu", None)
    monkeypatch.setattr(host, "_figured", False)
    clock = {"t": 1000.0}
    slept: list[float] = []
    monkeypatch.setattr(host.time, "monotonic", lambda: clock["t"])
    monkeypatch.setattr(host.time, "sleep", lambda s: (slept.append(s), clock.__setitem__("t", clock["t"] + s)))
    # /proc/stat as the clock moves: 2 cores, one of them busy
    monkeypatch.setattr(cpustat, "sample", lambda: (clock["t"], 2 * clock["t"]))
    return host, clock, slept


def test_a_one_shot_cpu_figure_spans_its_work_not_a_sleep(monkeypatch):
    """`--json --once` and `gpus` prime the CPU sample before their other work: when that work
    took the first figure's window (``first_window_s``: 0.1 s on 2 cores), the first figure
    needs no sleep of its own."""
    host, clock, slept = _fresh_host(monkeypatch)
    w = host.first_window_s()
    host.prime_cpu()
    clock["t"] += 1.5 * w       # NVML, the process scan, the run directory
    fig = host.cpu_figure()
    assert slept == []
    assert fig is not None and fig.source == "process" and fig.window_s == pytest.approx(1.5 * w)
    assert fig.pct == pytest.approx(50.0)
    # Without the priming, the first figure still covers the window (a real figure, not 0%).
    host, clock, slept = _fresh_host(monkeypatch)
    host._cpu_pct()
    assert slept == [pytest.approx(w)]
    # Primed but the work was quick: only the rest of the window is waited; later figures never wait.
    host, clock, slept = _fresh_host(monkeypatch)
    host.prime_cpu()
    clock["t"] += 0.4 * w
    host._cpu_pct()
    clock["t"] += 0.1 * w
    host._cpu_pct()
    assert slept == [pytest.approx(0.6 * w)]


def test_the_first_cpu_window_scales_with_the_cores():
    """Enough clock ticks over all cores for a figure in 5% steps (20 ticks), and never below
    20 ms: 0.1 s on 2 cores, 25 ms on 8, 20 ms on 128 (where 20 ms is 256 ticks)."""
    from moeconsole.runner.telemetry import host
    assert host.first_window_s(2, 100) == pytest.approx(0.1)
    assert host.first_window_s(8, 100) == pytest.approx(0.025)
    assert host.first_window_s(128, 100) == pytest.approx(0.02)
    assert host.first_window_s(1, 100) == pytest.approx(0.2)


def test_the_cpu_sample_reads_proc_stat_as_psutil_does():
    """``cpustat`` reads the ``cpu`` line itself (no psutil at start-up) with psutil's arithmetic:
    guest time is inside user time (not counted twice), iowait is idle. Text in proc(5)'s layout."""
    import os
    from moeconsole.runner.telemetry import cpustat
    tick = os.sysconf("SC_CLK_TCK")
    text = ("cpu  1000 20 300 5000 100 7 8 9 50 5\n"
            "cpu0 500 10 150 2500 50 3 4 4 25 2\n"
            "intr 123 0\n")
    fields = cpustat.parse_cpu_line(text)
    assert fields == tuple(v / tick for v in (1000, 20, 300, 5000, 100, 7, 8, 9, 50, 5))
    busy, total = cpustat.busy_total(fields)
    assert total == pytest.approx((1000 + 20 + 300 + 5000 + 100 + 7 + 8 + 9) / tick)
    assert busy == pytest.approx((1000 + 20 + 300 + 7 + 8 + 9) / tick)
    assert cpustat.parse_cpu_line("intr 1 2\n") is None
    # the live file: the same busy/total as psutil's reading of it, within the ticks between the reads
    import psutil
    now = cpustat.sample()
    assert now is not None
    ps = cpustat.busy_total(tuple(psutil.cpu_times()))
    assert ps[1] == pytest.approx(now[1], abs=5.0)


def test_a_one_shot_adopts_the_sample_taken_as_the_process_started(monkeypatch):
    """``cli`` takes the first CPU sample before its imports (``cpustat.prime``); the host line's
    first figure spans from there, so when start-up took 0.1 s it sleeps not at all."""
    host, clock, slept = _fresh_host(monkeypatch)
    from moeconsole.runner.telemetry import cpustat
    cpustat.prime()                # as cli does, first thing
    clock["t"] += host.first_window_s()   # the imports, the run directory, NVML
    host.prime_cpu()               # what the one-shot command calls later: keeps the early sample
    host._cpu_pct()
    assert slept == []
    assert host._last_cpu is not None and cpustat.first is not None


def test_a_first_cpu_figure_starts_from_a_runners_reading_when_it_can(monkeypatch, tmp_path):
    """The runner's shared reading (a real file) starts the first figure when it is at least the
    minimum window old, or older than the process's own first reading; else the process's own
    one does, and only the rest of the window is waited."""
    host, clock, slept = _fresh_host(monkeypatch)
    w = host.first_window_s()
    monkeypatch.setenv(host.MARK_MAX_AGE_ENV, "60")

    def figure(mark_age: float, own_age: float):
        nonlocal host, clock, slept
        host, clock, slept = _fresh_host(monkeypatch)
        host.write_cpu_mark(tmp_path, (clock["t"] - mark_age, 2 * (clock["t"] - mark_age)), clock["t"] - mark_age)
        clock["t"] -= own_age
        host.prime_cpu()
        clock["t"] += own_age
        return host.cpu_figure(tmp_path), slept

    fig, waited = figure(mark_age=1.5, own_age=0.2 * w)      # a reading of 1.5 s ago: no wait
    assert (fig.source, fig.window_s, waited) == ("runner", pytest.approx(1.5), [])
    fig, waited = figure(mark_age=1.5 * w, own_age=3 * w)    # newer than the own one, but old enough
    assert (fig.source, fig.window_s, waited) == ("runner", pytest.approx(1.5 * w), [])
    fig, waited = figure(mark_age=0.5 * w, own_age=0.2 * w)  # both young: the older, and the rest waited
    assert (fig.source, waited) == ("runner", [pytest.approx(0.5 * w)])
    fig, waited = figure(mark_age=0.1 * w, own_age=0.4 * w)
    assert (fig.source, waited) == ("process", [pytest.approx(0.6 * w)])
    fig, waited = figure(mark_age=120.0, own_age=0.4 * w)    # too old to use
    assert (fig.source, waited) == ("process", [pytest.approx(0.6 * w)])
    assert fig.pct == pytest.approx(50.0)
