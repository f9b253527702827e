"""Newcomer round 14: the 8xH200 Megatron MoE LoRA recipe run on a machine without a GPU, driven by
the `megatron sft` double (Textual Pilot)."""
from __future__ import annotations

import asyncio

from moeconsole.console.widgets.charts import ChartView
from moeconsole.runner.rundir import jsonio
from tests.console.test_console_app import app_for, attached


def _zero_memory(run) -> None:
    """The log's memory field as ms-swift prints it without CUDA: `'memory(GiB)': 0.0` on every step."""
    recs = [{**r, "mem_gib": 0.0} for r in jsonio.read_jsonl(run.metrics)]
    run.metrics.write_text("")
    for r in recs:
        jsonio.append_jsonl(run.metrics, r)


def test_memory_panel_of_a_log_that_measured_no_gpu_memory_claims_no_headroom(base, make_run):
    """The recipe's `gpus.memory_capacity_gib: 141.1` and a log of zeros: the panel said
    `mem 0/141G, 141G free at peak` on a machine with no GPU. The refusal: a log that measured memory
    keeps its headroom."""
    zero = make_run(base, "20261204-142436-my-qwen-moe-67d8", name="my-qwen-moe", mem_capacity_gib=141.1)
    _zero_memory(zero)
    measured = make_run(base, "20261204-090000-demo-1a2b", name="demo", mem_capacity_gib=141.1)

    async def heading(run) -> str:
        app = app_for(base, run)
        async with app.run_test(size=(132, 40)) as pilot:
            screen = await attached(pilot)
            await pilot.pause()
            return screen.query_one("#chart-mem", ChartView).text_rows()[0]

    row = asyncio.run(heading(zero))
    assert "free at peak" not in row and "headroom" not in row, row
    assert "no GPU memory measured" in row, row
    assert "at peak" in asyncio.run(heading(measured))
