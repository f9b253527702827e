"""What the run screen keeps between reads of a 128-node run's agent files (each node's figures
worked out once per change of its file, its rank numbers once per change of its ranks) never
shows a node older than its file: a changed file changes the node's verdict and its summary line
at its next turn, a silent agent's node ages each read and turns stale on time, and a glanced
file's figures are those of the whole document whatever types its agent wrote."""
from __future__ import annotations

import json
import time

from moeconsole.console.widgets.gpu_panel import node_summary_lines
from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.snapshot import NODE_STALE_S, NodeReader


def _gpus(used: float = 100_000, util: float = 90) -> list[dict]:
    return [{"index": i, "name": "NVIDIA H200", "mem_used_mib": used if i == 3 else 100_000,
             "mem_total_mib": 143_771, "util_pct": util, "temp_c": 60} for i in range(8)]


def _agent(run: rundir.RunDir, i: int, t: float, gpus: list, ranks=None) -> None:
    (run.telemetry / f"n{i:03d}.json").write_text(json.dumps(
        {"v": 1, "t": t, "host": {"hostname": f"n{i:03d}"}, "gpu": {"available": True, "gpus": gpus},
         "ranks": [{"rank": r} for r in (ranks if ranks is not None else range(8 * i, 8 * i + 8))]}))


def _ranks_json(run: rundir.RunDir, now: float, slow: int | None = None) -> None:
    (run.path / "ranks.json").write_text(json.dumps({"v": 1, "t": now, "ranks": {
        str(r): {"step": 9, "step_time_s": 3.0 if r // 8 == slow else 2.0, "t": now} for r in range(1024)}}))


def _lines(nodes) -> list[str]:
    return ["".join(t for t, _ in line) for line in node_summary_lines(nodes, None, "here", 160, 16)]


def _row(lines: list[str], host: str) -> str:
    return next(line for line in lines if line.startswith(host + " "))


def test_a_changed_agent_file_changes_its_nodes_verdict_and_row_at_its_next_turn(tmp_path):
    """128 nodes as the run screen reads them (glances, each file at most every 2 s): node 5's
    agent writes a GPU nearly out of memory, then a lower utilisation, then moves a rank onto
    it that ranks.json says is slow; each shows in its row at the next read of its file, and the
    GPU figures of the nodes whose files did not change are the ones worked out before."""
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    for i in range(128):
        _agent(run, i, now, _gpus())
    _ranks_json(run, now)
    reader = NodeReader(run)
    reader.whole = False
    first = reader.read(now)
    assert all(n.get("glance") and n["health"]["problems"] == [] for n in first)
    before = _row(_lines(first), "n005")
    assert "mem 781/1123G" in before and "max util 90%" in before

    _agent(run, 5, now + 2, _gpus(used=143_000))
    full = reader.read(now + 2.5)
    assert full[0]["host"] == "n005" and full[0]["health"]["problems"] == ["mem"]
    row = _row(_lines(full), "n005")
    assert row != before and "0.8G free" in row and "mem 823/1123G" in row

    _agent(run, 5, now + 4, _gpus(util=20))
    idle = reader.read(now + 5)
    assert idle[0]["host"] == "n005" and idle[0]["health"]["problems"] == ["util"]
    row = _row(_lines(idle), "n005")
    assert "util 20% vs 90%" in row and "max util 20%" in row and "G free" not in row

    _agent(run, 5, now + 6, _gpus(), ranks=[*range(40, 47), 999])  # rank 999 (node 124's) now runs here
    _ranks_json(run, now + 6, slow=124)
    moved = reader.read(now + 7.5)
    slow = {n["host"]: n["health"]["problems"] for n in moved if n["health"]["problems"]}
    assert slow == {"n005": ["slow"], "n124": ["slow"]}
    assert "ranks 40-46,999" in _row(_lines(moved), "n005")


def test_a_silent_agents_node_ages_each_read_and_turns_stale_on_time(tmp_path):
    """An agent that stops writing: its file is not read again (nothing changed), yet its node's
    age moves on at every read, its row says how long ago its agent wrote, and past
    NODE_STALE_S it is stale and listed first, while the other agents keep writing."""
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    for i in range(128):
        _agent(run, i, now, _gpus())
    reader = NodeReader(run)
    reader.whole = False
    reader.read(now)
    seen = []
    step = 0.0
    while step < NODE_STALE_S + 3:
        step += 1.0
        for i in range(128):
            if i != 7:   # node 7's agent went silent
                _agent(run, i, now + step - 0.25, _gpus(util=80 + step % 9))
        nodes = reader.read(now + step)
        by = {n["host"]: n for n in nodes}
        seen.append((step, by["n007"]["age_s"], by["n007"]["stale"], _row(_lines(nodes), "n007")))
    for step, age, stale, row in seen:
        assert age == step
        if step <= NODE_STALE_S:
            assert not stale and f"agent {int(step)}s ago" in row and "STALE" not in row
        else:
            assert stale and "STALE" in row and "agent" not in row
    assert [s for s, _, stale, _ in seen if stale][0] == NODE_STALE_S + 1
    last = reader.read(now + step)
    assert last[0]["host"] == "n007" and last[0]["health"]["problems"] == ["stale"]
    assert all(not n["stale"] for n in last[1:]), "the agents that write are never stale"


def test_a_glanced_files_figures_are_the_whole_documents_whatever_its_agent_wrote(tmp_path):
    """The figures worked out from a glanced file's GPUs follow the rule the whole document's
    follow (``nodehealth.gpu_figures``): ints, floats, numbers in strings, bools, nulls and
    values too large for a float alike, so the verdicts and the rows are the same either way."""
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    odd = [
        [{"index": 0, "mem_used_mib": 100, "mem_total_mib": 1000, "util_pct": 50}],
        [{"index": 0, "mem_used_mib": 990.5, "mem_total_mib": 1000.0, "util_pct": 90.0}],
        [{"index": 0, "mem_used_mib": True, "mem_total_mib": 1000, "util_pct": False}],
        [{"index": 0, "mem_used_mib": "990", "mem_total_mib": "1000", "util_pct": "70"}],
        [{"index": 0, "mem_used_mib": 10 ** 400, "mem_total_mib": 10 ** 400, "util_pct": -10 ** 400}],
        [{"index": 0, "mem_used_mib": 5, "mem_total_mib": 0, "util_pct": None}],
        [{"index": 0, "mem_used_mib": "nan", "mem_total_mib": 1000, "util_pct": "inf"}],
        [{"index": 0}],
        [],
    ]
    for i in range(24):
        _agent(run, i, now, odd[i] if i < len(odd) else _gpus(util=90 if i % 2 else 10))
    whole = NodeReader(run).read(now)
    glancing = NodeReader(run)
    glancing.whole = False
    glanced = glancing.read(now)
    assert any(n.get("glance") for n in glanced)
    assert [(n["host"], n["health"]) for n in glanced] == [(n["host"], n["health"]) for n in whole]
    assert _lines(glanced) == _lines(whole)
