"""Review R22's mends of what the console shows: a status line's label piece keeps its number or
goes whole (``format.fit_pieces``), and ``fit_words`` keeps what fits of a list of numbers."""
from __future__ import annotations

import os
import re

import pytest

from moeconsole.console import format as fmt
from moeconsole.runner.core.units import fit_words

RUNS = {
    "paused": {"name": "qwen3-30b-a3b-lora", "status": "paused", "attempt": 3, "restarts": 2, "max_restarts": 10,
               "step": 120, "max_steps": 1000, "pause_reason": "paused: the same crash twice at step 120",
               "elapsed_s": 3600},
    "failed": {"name": "qwen3-30b-a3b-lora", "status": "failed", "attempt": 3, "restarts": 2, "max_restarts": 10,
               "step": 120, "max_steps": 1000, "last_crash": {"class": "cuda_oom"}, "elapsed_s": 3600},
    "failed at the cap": {"name": "qwen3-30b-a3b-lora", "status": "failed", "attempt": 11, "restarts": 10,
                          "max_restarts": 10, "step": 120, "max_steps": 1000, "last_crash": {"class": "nccl_error"},
                          "elapsed_s": 3600},
    "running": {"name": "qwen3-30b-a3b-lora", "status": "running", "attempt": 3, "restarts": 2, "max_restarts": 10,
                "step": 120, "max_steps": 1000, "elapsed_s": 3600, "cost_per_hour": 12.0},
}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_the_restarts_label_never_shows_without_its_count(kind):
    """At a tmux split's 48-59 columns "auto-restarts 10/10" read "auto-restarts…" on a run failed at the cap."""
    run = RUNS[kind]
    want = f"{fmt.RESTARTS_WORD} {run['restarts']}/{run['max_restarts']}"
    shown_whole = 0
    for width in range(20, 141):
        line2 = "".join(t for t, _ in fmt.status_lines(run, width=width)[1])
        assert len(line2) <= width, (width, line2)
        if fmt.RESTARTS_WORD in line2:
            assert want in line2, (kind, width, line2)
            shown_whole += 1
    assert shown_whole > 40, kind   # it is shown where there is room


def test_a_label_and_its_number_go_together_in_any_piece():
    pieces = [("attempt 3", ""), (" · slurm job 4242 RUNNING on node-1", ""), (" · elapsed 1h00m", "")]
    for width in range(10, 70):
        text = "".join(t for t, _ in fmt.fit_pieces(pieces, width))
        assert not re.search(r"slurm job…|slurm…|elapsed…", text), (width, text)


@pytest.mark.parametrize("text, lists", [
    ("3 processes survived the kill: survivors PID 4121, 4122, 4123 still hold the GPU", ["4121", "4122", "4123"]),
    ("CUDA error: an illegal memory access on GPUs 0, 1, 2, 3 after step 5", ["0", "1", "2", "3"]),
    ("cuda_fault on GPUs 0, 3 (Xid 79): reset the GPU", ["0", "3"]),
])
def test_fit_words_keeps_what_fits_of_a_list_of_numbers(text, lists):
    """The number-after-comma rule dropped every list member after the first ("survivors PID 4121…"
    at 31-36 columns, "GPUs 0…" at 30-39)."""
    for width in range(12, len(text) + 2):
        out = fit_words(text, width)
        assert len(out) <= width, (width, out)
        members = re.findall(r"(?<![\w.])\d+(?=,|…|$| )", out.split(lists[0], 1)[1]) if lists[0] in out else []
        kept = [lists[0], *members][:len(lists)] if lists[0] in out else []
        # whatever of the list is cut, it is cut for room: one more member would not have fitted
        if kept and len(kept) < len(lists):
            more = out.rstrip("…").rstrip(",") + ", " + lists[len(kept)] + "…"
            assert len(more) > width, (width, out)


def test_a_number_that_opens_a_cut_clause_still_goes():
    assert fit_words("$0.05/h, $0.00 so far, $0.00 projected", 19) == "$0.05/h, $0.00 so…"
    assert fit_words("$0.05/h, $0.00 so far, $0.00 projected", 16) == "$0.05/h…"


def test_a_live_runs_chart_of_a_metric_not_logged_yet_says_no_data_yet_until_the_run_ends(base, make_run):
    """Review R22 #3: a chart chosen with `c` for a metric the live run has not logged yet was headed
    "load balancing loss: not in this log" over a body saying "no data yet"; when the run ended while
    watched, the chart was not redrawn (same key) and the body kept "no data yet" on a finished run."""
    import asyncio

    from moeconsole.console import chartprefs
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.chart import ChartView
    from moeconsole.runner.rundir import jsonio
    from tests.waiting import until_ui
    run = make_run(base, status="running", runner_pid=os.getpid())
    chartprefs.save_prefs(base, "demo", chartprefs.ChartPrefs(charts=["loss", "load_balancing_loss"]))

    def lb_rows(screen) -> str:
        for chart in screen.query(ChartView):
            rows = chart.text_rows() if chart.display else []
            if rows and rows[0].lower().startswith(("load", "lb", "load_balancing")):
                return " ".join(rows)
        return ""

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            screen = app.screen
            live = await until_ui(pilot, lambda: lb_rows(screen), what="the load-balancing chart")
            state = jsonio.read_json(run.state)
            jsonio.atomic_write_json(run.state, {**state, "status": "failed", "ended_at": state["started_at"] + 100})
            over = await until_ui(pilot, lambda: (r := lb_rows(screen)) and "so far" not in r and r,
                                  what="the chart redrawn once the run ended")
            return live, over
    live, over = asyncio.run(go())
    # a live run that has logged steps: its steps so far carry none (newcomer round 12; "no data yet" before a step)
    assert "not in its steps so far" in live and "not in this log" not in live, live
    assert over.count("not in this log") >= 2, over   # heading and body


def test_the_help_legend_names_every_mark_a_chart_draws():
    """Review R22 minor: "Chart marks" left out the zoom arrows, the memory cap line and the fallback
    marker. Every glyph a chart draws beside its data, its axis and its labels is in the legend."""
    from moeconsole.console.chart import MARK_MEANINGS, ChartOptions, Marker, render_chart, rows_text
    from tests.console.chart_helpers import series
    s = series(range(1000), [40.0 + (i % 7) for i in range(1000)])
    rows = rows_text(render_chart([s], 70, 12, cap=80.0, cap_label="80G", title="mem",
                                  markers=(Marker(300.0, "ckpt"), Marker(350.0, "other")),
                                  options=ChartOptions(xrange=(200.0, 400.0))))
    legend = "".join(mark for mark, _ in MARK_MEANINGS)
    drawn = {ch for row in rows[1:] for ch in row
             if not (0x2800 <= ord(ch) <= 0x28FF) and not ch.isalnum() and ch not in " │└─┤.–-"}
    assert drawn and drawn <= set(legend), (drawn - set(legend), rows)
