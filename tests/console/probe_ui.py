"""Attach the real app (headless, default telemetry) to a run and print what its widgets show,
as one JSON object: the UI half of the --json agreement test. Usage: probe_ui.py RUNS_DIR RUN"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from moeconsole.console.app import MoeConsole  # noqa: E402
from moeconsole.console.screens.run import RunScreen  # noqa: E402
from moeconsole.console.widgets.chart import ChartView  # noqa: E402
from moeconsole.console.widgets.gpu_panel import GpuPanel  # noqa: E402
from moeconsole.console.widgets.panes import EventPane, LogTail  # noqa: E402
from moeconsole.console.widgets.status import StatusLine  # noqa: E402
from moeconsole.runner.rundir import rundir  # noqa: E402
from tests.waiting import until_ui  # noqa: E402


async def probe(base: Path, ref: str) -> dict:
    run = rundir.resolve(base, ref)
    # The clock pinned just after the log's last write: the quiet-time indicator (not part of
    # the JSON's status) stays off however long a loaded machine takes to get here.
    log_t = run.log.stat().st_mtime
    app = MoeConsole(base, run, interval=3600, clock=lambda: log_t + 1)
    async with app.run_test(size=(160, 48)) as pilot:
        # the first full poll (GPU telemetry and the blocker scan): the first frame, from the run's
        # files alone, may be all a loaded machine has drawn by the first look
        s = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and app.screen.snapshot.gpu is not None and app.screen, what="the first full poll")
        await until_ui(pilot, lambda: s.query_one(StatusLine).plain_lines, what="the first snapshot drawn")
        await until_ui(pilot, lambda: s.blocker_table is None or s.blocker_table.is_mounted, what="the blocker table")
        loss = s.query_one("#chart-loss", ChartView)
        return {
            "status": s.query_one(StatusLine).plain_lines,
            "events": s.query_one(EventPane).plain_lines,
            "events_width": s.query_one(EventPane).scrollable_content_region.width,
            "log": s.query_one(LogTail).plain_lines,
            "gpus": s.query_one(GpuPanel).plain_lines,
            # the table is mounted at the first zombie or blocker (none: never mounted)
            "blockers": [b["pid"] for b in s.blocker_table.blockers] if s.blocker_table is not None else [],
            "blocker_table_mounted": bool(s.query("#blockers")),
            "loss_rows": loss.text_rows(),
            "loss_size": [loss.content_size.width, loss.content_size.height],
            "now": log_t + 1,
            # the log tail's line parser: a run whose runner names each record's line never needs it
            "parser_loaded": "moeconsole.runner.ingest.parser" in sys.modules,
            # the blocker table's DataTable: imported with the first zombie or blocker, not before
            "datatable_loaded": "textual.widgets._data_table" in sys.modules,
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(probe(Path(sys.argv[1]), sys.argv[2]))))
