"""Rules that used to be written twice, and disagreed when run, now have one owner each.
Each test runs every former caller on the same input and checks they give one answer."""
from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

from moeconsole.runner.checkpoints import suspect
from moeconsole.runner.core.columns import records_to_columns
from moeconsole.runner.core.monitors import Monitors, Thresholds
from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.ops.prometheus import MetricsView, metric_families
from moeconsole.runner.ops.tally import EventTally


def live_flags_save(values: list[float], save_step: int, t: Thresholds | None = None) -> bool:
    """The live runner's answer: records stream in, a save lands after the record of save_step."""
    records = [{"step": i + 1, "grad_norm": g} for i, g in enumerate(values)]
    steps, vals, present = records_to_columns(records)
    out = Monitors(t).observe_arrays(steps, vals, present, checkpoints=[(save_step, save_step, "ckpt")])
    return any(a["rule"] == "checkpoint_in_excursion" for _, a in out)


def verify_flags_save(values: list[float], save_step: int, t: Thresholds | None = None) -> bool:
    """``verify``'s answer for the same save, from the run's (step, grad_norm) points."""
    points = [(i + 1, g) for i, g in enumerate(values)]
    return suspect.excursion_at(points, save_step, t) is not None


def test_a_spike_after_five_steady_steps_is_one_answer_for_live_and_verify():
    """Grad norm 1.0 for 5 steps, then 50.0 with a save at step 6: before, verify called the save
    suspect (50x) while the live monitor (10-value warm-up) said nothing."""
    values = [1.0] * 5 + [50.0]
    assert live_flags_save(values, 6) and verify_flags_save(values, 6)
    reason = suspect.excursion_at([(i + 1, g) for i, g in enumerate(values)], 6)
    assert "50x" in reason and "step 6" in reason


def test_within_the_warm_up_neither_flags():
    values = [1.0, 1.0, 40.0]
    assert not live_flags_save(values, 3) and not verify_flags_save(values, 3)


@pytest.mark.parametrize("seed", range(40))
def test_live_and_verify_agree_on_random_series(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    values = [rng.choice([1.0, 1.2, 0.9, 30.0, 200.0, float("nan"), float("inf")]) if rng.random() < 0.2
              else rng.uniform(0.5, 2.0) for _ in range(n)]
    t = Thresholds(grad_warmup=rng.randint(0, 8))
    for save in range(1, n + 1):
        assert live_flags_save(values, save, t) == verify_flags_save(values, save, t), (values, save)


@pytest.mark.parametrize("raw,expected", [
    (True, None), (False, None), (None, None), ("nan", "nan"), ("inf", float("inf")), ("-inf", float("-inf")),
    (3, 3.0), ("2.5", 2.5), ("x", None), ({}, None), ("1" * 400, float("1" * 400)),
])
def test_as_float_has_one_policy(raw, expected):
    got = as_float(raw)
    if expected == "nan":
        assert got is not None and np.isnan(got)
    else:
        assert got == expected


def test_a_bool_is_not_a_number_for_the_monitors_nor_for_prometheus():
    """True in a metric field used to be 1.0 for the run index and None for the monitors."""
    _, values, present = records_to_columns([{"step": 1, "loss": True, "grad_norm": False}])
    assert not present["loss"][0] and not present["grad_norm"][0]
    view = MetricsView(now=0.0, run={"id": "r", "step": True, "status": "running"}, last_metrics=None,
                       tally=EventTally())
    assert not [f for f in metric_families(view) if f.name == "moeconsole_step"]


@pytest.mark.parametrize("seconds, text", [(None, "—"), (5, "5s"), (65, "1m05s"), (3725, "1h02m"),
                                           (26 * 3600, "26h00m"), (50 * 3600 + 60, "2d02h"),
                                           (float("nan"), "—")])
def test_a_duration_reads_the_same_in_gpus_and_in_the_console(seconds, text):
    """`gpus` used to print a 26-hour-old process as 1d02h while the status line said 26h00m."""
    from moeconsole.console import format as fmt
    from moeconsole.runner.core.units import duration
    from moeconsole.runner.telemetry.procs import ProcInfo
    assert duration(seconds) == fmt.duration(seconds) == text
    info = ProcInfo(pid=1, start_time=None, uid=0, user="u", cmdline="train", age_s=seconds, gpu_mem_mib=None,
                    gpus=(), labels=("orphan",))
    assert text in info.describe()


@pytest.mark.parametrize("line, rank, text", [
    ("[rank3]: step 5 loss 1.0", 3, "step 5 loss 1.0"),
    ("[default1]:step 5 loss 1.0", 1, "step 5 loss 1.0"),
    ("[2]:step 5 loss 1.0", 2, "step 5 loss 1.0"),
    ("[node2:5]: [rank5]: step 5 loss 1.0", 5, "step 5 loss 1.0"),
    ("7: step 5 loss 1.0", 7, "step 5 loss 1.0"),
    ("\x1b[31m[rank0]: step 5 loss 1.0\x1b[0m", 0, "step 5 loss 1.0"),
    ("[0]:", None, "[0]:"),
])
def test_the_crash_classifier_and_the_metric_parser_read_a_prefix_alike(line, rank, text):
    """The ANSI and rank-prefix rules were written twice (crash.py, ingest/lines.py) and differed
    on a bare "[0]:" (torchrun's failure index) and on tabs; one definition now (core/logline)."""
    from moeconsole.runner.core.crash import clean_line
    from moeconsole.runner.ingest.lines import decode_line, split_rank, visible_segment
    seg = visible_segment(line.encode())
    assert seg is not None
    assert split_rank(decode_line(seg)) == (rank, text)
    assert clean_line(line) == (text, rank)


def _plain_row(pieces) -> str:
    return "".join(text for text, _ in pieces)


@pytest.mark.parametrize("missing", ["util_pct", "temp_c", "power_w", "mem_used_mib"])
def test_a_missing_gpu_reading_is_one_mark_in_gpus_the_gpu_panel_and_the_gpu_view(missing):
    """The same GPU with one reading the driver could not give: `moeconsole gpus` printed N/A, the
    run screen's GPU panel ?, the GPU view —. Every one shows the owner's mark now."""
    from moeconsole.console.gpurows import gpu_row as cli_row
    from moeconsole.console.screens.gpu_view import node_lines
    from moeconsole.console.widgets.gpu_panel import gpu_row_pieces as panel_row
    from moeconsole.runner.core.units import NA
    from moeconsole.runner.telemetry.gpu import GpuInfo, GpuSnapshot
    readings = dict(util_pct=87.0, mem_used_mib=40960.0, mem_total_mib=81920.0, temp_c=61.0, power_w=350.0,
                    power_limit_w=700.0, sm_clock_mhz=1980.0, mem_clock_mhz=2619.0)
    readings[missing] = None
    info = GpuInfo(0, name="H100", processes=(), **readings)
    doc = GpuSnapshot(True, "nvml", None, "550.54", 0.0, gpus=(info,)).to_dict()
    shown = {"gpus": cli_row(info.to_dict()),
             "panel": _plain_row(panel_row(doc["gpus"][0], 120)),
             "view": "\n".join(_plain_row(line) for line in node_lines(doc, "this host"))}
    for where, text in shown.items():
        assert NA in text, (where, text)
        assert "N/A" not in text and "?" not in text, (where, text)


def test_host_ram_and_disk_read_alike_in_gpus_and_the_host_line():
    """`gpus` and the run screen's host line format the host's RAM from one rule."""
    from moeconsole.console.commands.gpus import render_host
    from moeconsole.console.widgets.gpu_panel import host_words
    from moeconsole.runner.core.units import NA
    host = {"hostname": "n1", "cpu_pct": None, "cpu_count": None, "ram_used_gib": 12.25, "ram_total_gib": None,
            "load1": None, "load5": None, "load15": None, "io": {"path": "/out", "free_gib": 2048.0}}
    cli, line = render_host(host), host_words(host, 200)
    assert f"CPU {NA}" in cli and f"cpu {NA}" in line
    assert f"12.2 / {NA} GiB" in cli and f"ram 12.2/{NA}G" in line
    assert "2.0T free" in line and "?" not in cli + line


@pytest.mark.parametrize("width", [2, 5, 24, 60])
def test_text_too_long_is_cut_alike_in_runs_ls_and_the_blocker_list(width):
    """One cut rule (moeconsole.runner.core.units.clip): a long command in the blocker list and a long
    value in `runs ls` end at the same character with the same mark."""
    from moeconsole.console.runcolumns import cut_name
    from moeconsole.console.format import blocker_cmd
    cmd = "/opt/envs/train/bin/python3.11-m-torch.distributed.run--nproc_per_node=8-train.py--lr=2e-5"
    from moeconsole.runner.core.units import command_text
    shown = blocker_cmd({"cmdline": cmd}, width)
    # the blocker list shows the executable's name, not its directory; then the same cut
    assert shown == cut_name(command_text(cmd), width)  # a value without a space is cut like any other column
    assert len(shown) == width and shown.endswith("…")
    assert blocker_cmd({"cmdline": "short"}, width if width > 5 else 5) == "short"


@pytest.mark.parametrize("raw, expected", [
    (1.5, 1.5), (3, 3.0), ("2.5", 2.5), ("nan", None), (float("nan"), None), (float("inf"), None),
    ("-inf", None), (True, None), (None, None), ("x", None), (10 ** 400, None),
])
def test_finite_float_reads_a_shown_value_one_way(raw, expected):
    from moeconsole.runner.core.numbers import finite_float
    assert finite_float(raw) == expected


@pytest.mark.parametrize("raw, expected", [
    (1.5, True), (3, True), (0, True), ("2.5", False), ("nan", False), (float("nan"), False),
    (float("-inf"), False), (True, False), (None, False), (10 ** 400, False),
])
def test_is_finite_number_takes_only_a_records_finite_numbers(raw, expected):
    """What a reading context may keep (``readctx.values_fit``, the parser's numbers): an int or a
    float, finite; a string or a bool is not one, and an int too large for a float is no number
    (it raised OverflowError)."""
    from moeconsole.runner.core.numbers import is_finite_number
    assert is_finite_number(raw) is expected


def test_a_nan_reading_is_no_value_for_the_gpu_history_and_the_node_rule():
    """Two readers had their own finite-number helper (gpuhistory, nodehealth) that read only
    JSON numbers: a reading stored as "nan" (the metrics schema's spelling) or "40" now reads as
    the one policy says in both."""
    from moeconsole.runner.core.nodehealth import gpu_figures
    from moeconsole.runner.rundir.gpuhistory import GpuHistory
    gpus = [{"index": 0, "util_pct": "nan", "mem_used_mib": "inf", "mem_total_mib": 81920.0},
            {"index": 1, "util_pct": "40", "mem_used_mib": 40960, "mem_total_mib": "81920"}]
    fig = gpu_figures({"gpus": gpus})
    assert fig["mean_util_pct"] == 40.0 and fig["min_util_pct"] == 40.0
    assert fig["max_mem_frac"] == 0.5
    h = GpuHistory()
    h.feed({"available": True, "gpus": gpus}, {"cpu_pct": "nan", "ram_used_gib": "12.5"}, 100.0)
    assert h.ram.last() == 12.5 and h.cpu.last() is None
    assert h.gpus["0"]["util"].last() is None and h.gpus["1"]["util"].last() == 40.0


@pytest.mark.parametrize("seconds, per_hour, cost", [
    (3600, 70.0, 70.0), (1800, "10", 5.0), (None, 70.0, None), (0, 70.0, None), (3600, None, None),
    (3600, 0, None), (float("nan"), 70.0, None), (3600, "inf", None), (7200, True, None),
])
def test_run_cost_has_one_formula(seconds, per_hour, cost):
    from moeconsole.runner.core.numbers import run_cost
    assert run_cost(seconds, per_hour) == cost


@pytest.mark.parametrize("text, width, shown", [
    ("abcdef", 6, "abcdef"), ("abcdefg", 6, "abcde…"), ("abcdefg", 2, "a…"), ("abc", 1, "a…"),
])
def test_clip_cuts_with_one_mark(text, width, shown):
    from moeconsole.runner.core.units import clip
    assert clip(text, width) == shown


def test_messages_that_quote_a_long_value_cut_it_with_the_one_mark():
    """The input-error quote (errors.shown), a crash's evidence line, a process's command in
    `describe` and a safetensors header complaint each cut text by hand ("..." after 77, 497,
    57 or 120 characters); now each is ``clip``: the width it names, ending in "…"."""
    from moeconsole.runner.core.errors import shown
    from moeconsole.runner.checkpoints.safetensors_file import HeaderProblem, load_header_json
    from moeconsole.runner.telemetry.procs import ProcInfo
    q = shown("x" * 500)
    assert len(q) == 80 and q.endswith("…") and "..." not in q
    info = ProcInfo(pid=1, start_time=None, uid=0, user="u", cmdline="python " + "y" * 200, age_s=5,
                    gpu_mem_mib=None, gpus=(), labels=())
    line = info.describe(width=60)
    assert "python " + "y" * 52 + "…" in line and "..." not in line  # 60 characters in all
    with pytest.raises(HeaderProblem) as err:
        name = "k" * 400
        load_header_json(f'{{"{name}": {{"data_offsets": [0, 1]}}, "{name}": {{"data_offsets": [1, 2]}}}}'.encode())
    assert "…" in str(err.value) and "..." not in str(err.value)


# Hand-written copies of an owner's rule: a second copy in runner/ or console/ fails here.
_COPIES = {
    "a cut marked by hand (use units.clip)": re.compile(r"\[[^\[\]]*:[^\[\]]*\]\s*\+\s*(\"|')(…|\.\.\.)"),
    "a finite check after as_float (use numbers.finite_float)":
        re.compile(r"= as_float\([^\n]*\)\n[^\n]*is None or not math\.isfinite"),
    "the hourly cost by hand (use numbers.run_cost)": re.compile(r"/ ?3600(\.0)? ?\* ?(cost|price)"),
}
# Another helper's module on the day this scan was written (the GPU rows move to one renderer).
_NOT_YET: set[str] = set()


def test_no_second_copy_of_clip_finite_float_or_run_cost():
    root = Path(__file__).resolve().parents[2]
    found = []
    for top in ("runner", "console"):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel in _NOT_YET or rel in ("runner/core/units.py", "runner/core/numbers.py"):
                continue
            text = path.read_text()
            found += [f"{rel}: {what}" for what, rx in _COPIES.items() if rx.search(text)]
    assert not found, found
