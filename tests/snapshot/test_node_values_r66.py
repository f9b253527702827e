"""Every value an agent file carries is read by one reader (``numbers.finite_float``) and the
ranks a node runs by one rule (``nodehealth.node_ranks``): an odd value another agent version
(or a broken one) wrote is no value, the read of the run goes on (``--json --once`` answers, the
other nodes are judged), and a kept reader judges a node as a fresh one does (R66's findings 2-4)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.console.conftest import write_run

from moeconsole.console.widgets.gpu_panel import node_groups, node_rank_numbers
from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.snapshot import NodeReader

REPO = Path(__file__).resolve().parents[2]
HUGE = "1" + "0" * 400   # an int too large for a float, as JSON holds it


def _agent(run: rundir.RunDir, i: int, t_text: str, ranks: list | None = None) -> None:
    run.telemetry.mkdir(exist_ok=True)
    (run.telemetry / f"n{i}.json").write_text(
        '{"v": 1, "t": %s, "host": {"hostname": "n%d"}, "gpu": {"available": true, "gpus": '
        '[{"index": 0, "mem_used_mib": 1000, "mem_total_mib": 81920, "util_pct": 50}]}, "ranks": %s}'
        % (t_text, i, json.dumps([{"rank": r} for r in (ranks or [])])))


def _ranks_json(run: rundir.RunDir, t: float, slow: int | None, mtime: float) -> None:
    (run.path / "ranks.json").write_text(json.dumps({"v": 1, "t": t, "ranks": {
        str(r): {"step": 9, "step_time_s": 3.0 if r == slow else 2.0, "t": t} for r in range(4)}}))
    os.utime(run.path / "ranks.json", (mtime, mtime))   # a new stat key whatever the filesystem's clock


def test_an_agent_time_too_large_for_a_float_makes_its_node_stale_and_the_read_goes_on(tmp_path):
    run = rundir.RunDir(tmp_path)
    now = time.time()
    _agent(run, 0, repr(now))
    _agent(run, 1, HUGE)
    for whole in (True, False):   # --json's whole documents, and the run screen's glances
        reader = NodeReader(run)
        reader.whole, reader.GLANCE_PAST = whole, 0
        nodes = {n["host"]: n for n in reader.read(now)}   # OverflowError before
        assert nodes["n1"]["stale"] and nodes["n1"]["age_s"] is None and not nodes["n0"]["stale"], whole
        groups = {g.host: g for g in node_groups(list(nodes.values()), None, "elsewhere")}
        assert groups["n1"].stale and groups["n1"].age_s is None


def test_an_agent_time_written_as_a_string_is_a_time_as_the_summary_line_reads_numbers(tmp_path):
    # (decided: ``finite_float`` reads "1.5" as 1.5 for every agent value; the time is one of them)
    run = rundir.RunDir(tmp_path)
    now = time.time()
    _agent(run, 0, json.dumps(repr(now - 2)))
    _agent(run, 1, json.dumps("nan"))
    nodes = {n["host"]: n for n in NodeReader(run).read(now)}
    assert not nodes["n0"]["stale"] and 1.5 < nodes["n0"]["age_s"] < 2.5
    assert nodes["n1"]["stale"] and nodes["n1"]["age_s"] is None


def test_json_once_answers_with_an_agent_time_too_large_for_a_float(tmp_path):
    run = write_run(tmp_path, runner_pid=os.getpid())
    _agent(run, 0, repr(time.time() + 60))
    _agent(run, 1, HUGE)
    proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "--json", str(run.path), "--once", "--no-gpu"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]   # rc=1 and a traceback before
    doc = json.loads(proc.stdout.splitlines()[-1])
    stale = {n["host"]: n["stale"] for n in doc["nodes"]}
    assert stale == {"n0": False, "n1": True}


def test_a_kept_reader_and_a_fresh_one_flag_the_same_straggler_after_a_rank_is_written_anew(tmp_path):
    run = rundir.RunDir(tmp_path)
    now = time.time()
    for i in range(4):
        _agent(run, i, repr(now), [1.0 if i == 1 else i])   # n1: another version wrote rank 1.0 (no rank)
    _ranks_json(run, now, None, now - 100)
    kept_reader = NodeReader(run)
    kept_reader.read(now)
    _agent(run, 1, repr(now + 1), [1])                        # n1 now runs rank 1, which is slow
    os.utime(run.telemetry / "n1.json", (now + 1, now + 1))
    _ranks_json(run, now + 1, 1, now - 50)
    kept = {n["host"]: n["health"]["problems"] for n in kept_reader.read(now + 1.5)}
    fresh = {n["host"]: n["health"]["problems"] for n in NodeReader(run).read(now + 1.5)}
    assert fresh["n1"] == ["slow"]
    assert kept == fresh   # the screen's reader missed the straggler before


def test_a_rank_rewritten_from_a_float_to_an_int_is_listed_on_the_nodes_row():
    assert node_rank_numbers({"host": "r66-a", "ranks": [{"rank": 1.0}]}) == ()
    assert node_rank_numbers({"host": "r66-a", "ranks": [{"rank": 1}]}) == (1,)   # () before: kept on ==


def test_a_bool_rank_is_no_rank_for_the_judgement_and_the_row_alike(tmp_path):
    # "rank": true took rank 1's step time (step_times.get(True)): judged slow while its row said no such rank
    run = rundir.RunDir(tmp_path)
    now = time.time()
    _agent(run, 0, repr(now), [True, 0])
    for i in (2, 3, 4):
        _agent(run, i, repr(now), [i])
    (run.path / "ranks.json").write_text(json.dumps({"v": 1, "t": now, "ranks": {
        str(r): {"step": 9, "step_time_s": 3.0 if r == 1 else 2.0, "t": now} for r in range(5)}}))
    nodes = {n["host"]: n for n in NodeReader(run).read(now)}
    assert nodes["n0"]["health"]["problems"] == []
    assert node_rank_numbers(nodes["n0"]) == (0,)
