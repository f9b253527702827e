"""The full-log view's ranks mode (R): per-rank logs of a run merged by the time their lines
carry, each line with its rank; real torchrun writes the per-rank files (--log-dir, --redirects).
Without such files, train.log's own rank prefixes become the rank column. The search counts its
matches and n/N move between them."""
from __future__ import annotations

import asyncio
import calendar
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.logview import LogScreen, LogView
from moeconsole.console.logfile import LogFile
from tests.waiting import until_ui


def line_time(text: str, year: int | None = None):
    from moeconsole.runner.ingest.linetime import line_time as lt
    return lt(text, year)

REPO = Path(__file__).resolve().parents[2]

WORKER = r'''
import logging, os, sys, time
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
rank = int(os.environ["RANK"])
time.sleep(0.4 * rank)                 # rank 1 starts later: its lines interleave with rank 0's
for i in range(4):
    logging.info("rank %d step %d", rank, i)
    time.sleep(0.3)                     # spaced, so the two ranks' lines interleave by time
print(f"rank {rank} done", flush=True)  # stdout, no timestamp
'''


def test_line_times_of_the_usual_loggers():
    local = time.mktime((2025, 1, 2, 3, 4, 5, 0, 0, -1))
    assert line_time("2025-01-02 03:04:05,250 INFO x") == local + 0.25          # logging's default
    assert line_time("[2025-01-02 03:04:05] iteration 10/100 |") == local        # Megatron
    assert line_time("[rank3]: 2025-01-02T03:04:05.5Z step") == calendar.timegm((2025, 1, 2, 3, 4, 5)) + 0.5
    assert line_time("2025-01-02T03:04:05+01:00 x") == calendar.timegm((2025, 1, 2, 2, 4, 5))
    assert line_time("2025/01/02 03:04:05 - swift") == local
    assert line_time("W0102 03:04:05.123000 41200 torch/x.py:12] Sending", year=2025) == local + 0.123
    assert line_time("{'loss': 1.0, 'epoch': 0.1}") is None
    assert line_time("step 2025-13-45 99:99:99") is None


def _torchrun(tmp: Path, log_dir: Path) -> None:
    script = tmp / "worker.py"
    script.write_text(WORKER)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--log-dir",
                           str(log_dir), "--redirects", "3", str(script)], cwd=tmp, capture_output=True, text=True,
                          timeout=180, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]


def test_torchruns_per_rank_files_merge_by_the_time_their_lines_carry(tmp_path):
    from moeconsole.console.ranklog import MergedLog, log_dirs, rank_files
    _torchrun(tmp_path, tmp_path / "logs")
    from moeconsole.runner.recipes.model import Launch
    from moeconsole.runner.recipes.recipe import validate
    recipe = validate({"command": ["torchrun", "--log-dir", "logs", "train.py"]}, launch=Launch(cwd=str(tmp_path)))
    dirs = log_dirs(recipe, tmp_path / "run")
    assert dirs == [tmp_path / "logs"]
    files = rank_files(dirs)
    assert [f.label for f in files] == ["r0", "r0!", "r1", "r1!"], "local rank, ! for stderr"
    merged = MergedLog(files)
    assert merged.refresh()
    timed = [(label, text) for label, text in zip(merged.labels(0, len(merged)), merged.lines(0, len(merged)))
             if "INFO" in text]
    assert len(timed) == 8
    times = [line_time(text) for _, text in timed]
    assert times == sorted(times), "merged by the time each line carries"
    assert [label for label, _ in timed][:2] == ["r0!", "r0!"] and "r1!" in [label for label, _ in timed][2:5], \
        "rank 1's lines interleave with rank 0's"
    assert merged.search("rank 1 step 3", 0) is not None
    assert merged.search("RANK 0 STEP 0", 5, backwards=True) == next(
        i for i, t in enumerate(merged.lines(0, len(merged))) if "rank 0 step 0" in t)
    assert not merged.refresh(), "nothing new"


def _run_dir(base: Path, make_run, command: list[str]):
    run = make_run(base, status="succeeded")
    recipe = yaml.safe_load(run.recipe.read_text())
    recipe["command"] = command
    run.recipe.write_text(yaml.safe_dump(recipe))
    return run


def test_R_in_the_log_view_shows_the_ranks_merged_and_R_again_the_plain_log(base, make_run, tmp_path):
    run = _run_dir(base, make_run, ["torchrun", "--nproc_per_node", "2", "--log-dir", "{run_dir}/ranklogs",
                                    "--redirects", "3", "train.py"])
    _torchrun(tmp_path, run.path / "ranklogs")

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until_ui(pilot, lambda: getattr(app.screen, "snapshot", None) is not None)
            await pilot.press("l")
            screen = await until_ui(pilot, lambda: isinstance(app.screen, LogScreen) and app.screen)
            view = screen.query_one(LogView)
            plain = await until_ui(pilot, lambda: view.visible_text())
            await pilot.press("R")
            await until_ui(pilot, lambda: type(view.log_file).__name__ == "MergedLog" and len(view.log_file) == 10)
            await pilot.press("home")
            await until_ui(pilot, lambda: view.scroll_offset.y == 0
                           and any("rank 0 step 0" in view.render_line(y).text for y in range(10)),
                           what="the merged view at its top")
            rows = [view.render_line(y).text for y in range(10)]
            title = str(screen.query_one("#log-title").render())
            await pilot.press("R")
            await until_ui(pilot, lambda: isinstance(view.log_file, LogFile))
            return plain, rows, title
    plain, rows, title = asyncio.run(go())
    assert "per-rank files merged" in title
    assert any(row.split()[1] == "r0!" and "rank 0 step 0" in row for row in rows), rows
    assert any(row.split()[1] == "r1!" and "rank 1 step 3" in row for row in rows), rows
    assert any(row.split()[1] == "r1" and "rank 1 done" in row for row in rows), rows
    assert not any("rank 0 step" in line for line in plain), "train.log itself holds none of it"


def test_without_per_rank_files_train_logs_rank_prefixes_become_the_rank_column(base, make_run):
    run = _run_dir(base, make_run, ["python", "train.py"])
    lines = ["=== moeconsole: attempt 1 start"] + [f"[rank{i % 3}]: step {i} loss {2 - i / 10:.2f}" for i in range(9)]
    lines += ["0: an srun --label line", "agent: worker group SUCCEEDED"]
    run.log.write_text("\n".join(lines) + "\n")
    from moeconsole.console.ranklog import PrefixedLog
    log = PrefixedLog(LogFile(run.log))
    log.refresh()
    assert log.lines(1, 3) == ["step 0 loss 2.00", "step 1 loss 1.90", "step 2 loss 1.80"]
    assert log.labels(1, 3) == ["r0", "r1", "r2"]
    assert log.labels(10, 2) == ["r0", ""]

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=(100, 30)) as pilot:
            await until_ui(pilot, lambda: getattr(app.screen, "snapshot", None) is not None)
            await pilot.press("l")
            screen = await until_ui(pilot, lambda: isinstance(app.screen, LogScreen) and app.screen)
            view = screen.query_one(LogView)
            await pilot.press("R")
            await until_ui(pilot, lambda: type(view.log_file).__name__ == "PrefixedLog")
            await pilot.press("home")
            await until_ui(pilot, lambda: view.scroll_offset.y == 0 and "step 0 loss" in view.render_line(1).text,
                           what="the log at its top")
            rows = [view.render_line(y).text for y in range(4)]
            # the search counts its matches in the whole file and n/N move between them
            await pilot.press("slash", *"loss", "enter")
            await until_ui(pilot, lambda: getattr(screen, "match_count", None) == 9)
            first = await until_ui(pilot, lambda: view.current)
            await pilot.press("n")
            await until_ui(pilot, lambda: view.current == first + 1)
            await pilot.press("N")
            await until_ui(pilot, lambda: view.current == first)
            return rows, str(screen.query_one("#log-title").render())
    rows, title = asyncio.run(go())
    assert rows[1].split()[:3] == ["2", "r0", "step"] and rows[2].split()[1] == "r1"
    assert "[rank" not in rows[1], "the prefix moved into the rank column"
    assert "search 'loss': 9 in the file (n/N)" in title
