"""Nodes worst first (moeconsole.runner.core.nodehealth), the ranks' step times the runner keeps
(moeconsole.runner.rundir.ranktimes) and what a node's summary line says (moeconsole.console.widgets.gpu_panel)."""
from __future__ import annotations

import json
import os
import time

from moeconsole.console.widgets.gpu_panel import NodeGroup, node_groups, node_summary, ranks_words
from moeconsole.runner.core import nodehealth
from moeconsole.runner.rundir import ranktimes, rundir
from moeconsole.runner.ingest.parser import LogParser
from tests.ingest.ingest_samples import parsed
from moeconsole.runner.rundir.snapshot import RunWatcher


def _node(host: str, *, used: float = 100_000, util: float = 90, ranks=(), stale: bool = False) -> dict:
    gpus = [{"index": i, "mem_used_mib": used if i == 3 else 100_000, "mem_total_mib": 143_771,
             "util_pct": util} for i in range(8)]
    return {"host": host, "stale": stale, "age_s": 1.0, "gpu": {"available": True, "gpus": gpus},
            "ranks": [{"rank": r} for r in ranks]}


def test_worst_first_memory_then_utilisation_then_stragglers_then_by_name():
    nodes = [_node(f"n{i:03d}", ranks=range(8 * i, 8 * i + 8)) for i in range(6)]
    nodes[4] = _node("n004", used=143_000, ranks=range(32, 40))          # 0.75 GiB free on GPU 3
    nodes[2] = _node("n002", util=20, ranks=range(16, 24))               # idling
    nodes[5] = _node("n005", ranks=range(40, 48))
    times = {r: {"step_time_s": 5.0} for r in range(48)}
    times[44] = {"step_time_s": 6.5}                                      # one slow rank on n005
    nodes.append(_node("n006", stale=True))
    judged = nodehealth.assess_nodes(nodes, times)
    assert [n["host"] for n in judged] == ["n006", "n004", "n002", "n005", "n000", "n001", "n003"]
    by = {n["host"]: n["health"] for n in judged}
    assert by["n004"]["problems"] == ["mem"] and by["n004"]["why"] == ["0.8G free"]
    assert by["n002"]["problems"] == ["util"] and by["n002"]["why"][0].startswith("util 20% vs")
    assert by["n005"]["problems"] == ["slow"] and by["n005"]["why"] == ["step 6.50s (1.30x)"]
    assert by["n000"]["problems"] == [] and by["n000"]["step_time_s"] == 5.0


def test_two_nodes_have_no_median_to_be_stragglers_against():
    judged = nodehealth.assess_nodes([_node("a", ranks=[0]), _node("b", ranks=[1])],
                              {0: {"step_time_s": 1.0}, 1: {"step_time_s": 9.0}})
    assert [n["health"]["problems"] for n in judged] == [[], []]


def test_rank_prefixed_lines_give_each_rank_its_step_time(tmp_path):
    lines = [f"[rank{r}]: iteration      {s}/     100 | elapsed time per iteration (ms): {1000 + 100 * r:.1f} |"
             for s in (1, 2) for r in range(3)]
    recs, _ = parsed(LogParser(), ("\n".join(lines) + "\n").encode())
    book = ranktimes.RankTimes()
    book.feed(recs + [b'{"v":1,"step":3}'], now=10.0)
    assert book.changed and {r: (e["step"], e["step_time_s"]) for r, e in book.ranks.items()} == \
        {0: (2, 1.0), 1: (2, 1.1), 2: (2, 1.2)}
    run = rundir.RunDir(tmp_path)
    ranktimes.save_rank_times(run, book)
    assert not book.changed and ranktimes.load_rank_times(run)[2]["step_time_s"] == 1.2
    (tmp_path / "ranks.json").write_text("{broken")
    assert ranktimes.load_rank_times(run) == {}


def test_the_snapshot_joins_agents_ranks_and_step_times_into_stragglers(tmp_path):
    run = rundir.RunDir(tmp_path / "r")
    run.path.mkdir()
    run.telemetry.mkdir()
    now = time.time()
    for i in range(4):
        doc = {"v": 1, "t": now, "host": {"hostname": f"node{i}"}, "gpu": _node("x")["gpu"],
               "ranks": [{"pid": 100 + i, "rank": i}], "processes": 2}
        (run.telemetry / f"node{i}.json").write_text(json.dumps(doc))
    (tmp_path / "r" / "ranks.json").write_text(json.dumps(
        {"v": 1, "t": now, "ranks": {str(i): {"step": 9, "step_time_s": 2.0 if i != 1 else 3.0, "t": now}
                                     for i in range(4)}}))
    nodes = RunWatcher(run).poll(with_gpu=False).to_dict()["nodes"]
    assert nodes[0]["host"] == "node1" and nodes[0]["health"]["problems"] == ["slow"]
    assert nodes[0]["processes"] == 2 and [r["rank"] for r in nodes[0]["ranks"]] == [1]
    group = node_groups(tuple(nodes), None, "elsewhere")[0]
    line = "".join(t for t, _ in node_summary(group, 160))
    assert line.startswith("node1  step 3.00s (1.50x)  agent 0s ago  rank 1  8 GPUs"), line


def test_ranks_in_words():
    assert ranks_words(()) == "no ranks"
    assert ranks_words((3,)) == "rank 3"
    assert ranks_words((0, 1, 2, 3, 8)) == "ranks 0-3,8"
    assert ranks_words((0, 1, 2, 3), short=True) == "r0-3"
    assert ranks_words(tuple(range(0, 64, 2))).endswith("(32)")
    assert NodeGroup("h", None).ranks == ()


def test_a_nodes_summary_line_shows_the_ranks_its_file_lists_now():
    """The ranks' numbers are kept per host while the file lists the same ranks (each second's
    file), and follow the list, not the file's time: two runs whose agents share host names and
    a file time (two consoles' runs on one cluster) each show their own ranks."""
    def line(node: dict) -> str:
        return "".join(t for t, _ in node_summary(node_groups([node], None, "here")[0], 160))
    a = {**_node("gpu-node-000", ranks=range(0, 8)), "t": 1000.0}
    b = {**_node("gpu-node-000", ranks=range(64, 72)), "t": 1000.0}
    assert "ranks 0-7" in line(a)
    assert "ranks 64-71" in line(b)
    assert "ranks 0-7" in line({**a, "t": 1001.0}) and "ranks 8-15" in line(_node("gpu-node-000", ranks=range(8, 16)))


def test_node_files_are_read_again_only_when_they_changed_and_at_most_64_a_second(tmp_path, monkeypatch):
    from moeconsole.runner.rundir import jsonio
    from moeconsole.runner.rundir.snapshot import NodeReader
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    for i in range(128):
        (run.telemetry / f"n{i:03d}.json").write_text(json.dumps({"v": 1, "t": now, "host": {"hostname": f"n{i:03d}"},
                                                                   "gpu": _node("x")["gpu"]}))
    reads = []
    real = jsonio.read_own_json
    monkeypatch.setattr(jsonio, "read_own_json",
                        lambda p, *a, **k: (reads.append(os.path.basename(p)), real(p, *a, **k))[1])
    from moeconsole.runner.rundir import snapshot
    looked_at = []
    real_stat = snapshot._stat_key
    monkeypatch.setattr(snapshot, "_stat_key", lambda p, **k: (looked_at.append(os.path.basename(p)), real_stat(p, **k))[1])
    reader = NodeReader(run)
    assert len(reader.read(now)) == 128 and len(reads) == 128
    reads.clear()
    looked_at.clear()
    half = reader.read(now + 0.5)
    assert len(half) == 128 and reads == [], "nothing changed: nothing read"
    assert [n for n in looked_at if n.startswith("n")] == [], "read 0.5 s ago: waits its turn, no stat"
    assert {n["age_s"] for n in half} == {0.5}, "the ages still move on"
    (run.telemetry / "n005.json").write_text(json.dumps({"v": 1, "t": now + 1, "host": {"hostname": "n005"},
                                                         "gpu": _node("x", used=143_000)["gpu"]}))
    reader.read(now + 1.0)
    assert reads == [], "128 nodes: a changed file waits 2 s for its turn"
    first = reader.read(now + 2.1)
    assert reads == ["n005.json"] and first[0]["host"] == "n005" and first[0]["health"]["problems"] == ["mem"]
    # a console's poll woken by a log write between two timer polls: the nodes as last read,
    # nothing read, nothing copied (the GPU panel then skips them: per change, not per poll)
    reads.clear()
    assert reader.again(now + 2.3) is first and reads == []


def test_judging_again_works_out_only_the_changed_nodes_figures(tmp_path, monkeypatch):
    """A 128-node console judges its nodes again whenever a file or ranks.json changed; the
    figures of a node whose file did not change are not worked out again, and the verdicts
    still follow every change (here a straggler that ranks.json alone reveals)."""
    from moeconsole.runner.rundir.snapshot import NodeReader
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    for i in range(128):
        (run.telemetry / f"n{i:03d}.json").write_text(json.dumps(
            {"v": 1, "t": now, "host": {"hostname": f"n{i:03d}"}, "gpu": _node("x")["gpu"],
             "ranks": [{"rank": 8 * i + k} for k in range(8)]}))

    def ranks(slow_node: int) -> None:
        (tmp_path / "ranks.json").write_text(json.dumps({"v": 1, "t": now, "ranks": {
            str(r): {"step": 9, "step_time_s": 3.0 if r // 8 == slow_node else 2.0, "t": now} for r in range(1024)}}))
    ranks(7)
    worked = []
    real = nodehealth.gpu_figures
    monkeypatch.setattr(nodehealth, "gpu_figures", lambda gpu: (worked.append(1), real(gpu))[1])
    reader = NodeReader(run)
    first = reader.read(now)
    assert len(worked) == 128 and first[0]["host"] == "n007" and first[0]["health"]["problems"] == ["slow"]
    worked.clear()
    ranks(42)
    os.utime(tmp_path / "ranks.json", ns=(time.time_ns(), time.time_ns() + 10_000_000))  # a new stat key
    again = reader.read(now + 0.5)
    assert again[0]["host"] == "n042" and again[0]["health"]["why"] == ["step 3.00s (1.50x)"]
    assert worked == [], "only ranks.json changed: no node's GPU figures worked out again"
    (run.telemetry / "n100.json").write_text(json.dumps(
        {"v": 1, "t": now + 2, "host": {"hostname": "n100"}, "gpu": _node("x", used=143_000)["gpu"],
         "ranks": [{"rank": 800 + k} for k in range(8)]}))
    later = reader.read(now + 2.6)
    assert len(worked) == 1 and later[0]["host"] == "n100" and later[0]["health"]["problems"] == ["mem"]


def test_a_nodes_step_time_is_worked_out_again_only_when_its_ranks_or_ranks_json_change(tmp_path, monkeypatch):
    """Agents rewrite their files every second with the same ranks: a new file's GPU figures
    are read, but its step time (its ranks' entries in ranks.json) is kept; ranks that moved to
    another node, or a new ranks.json, still change the verdict at the next read."""
    from moeconsole.runner.rundir.snapshot import NodeReader
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()

    def agent(i: int, t: float, ranks: range) -> None:
        (run.telemetry / f"n{i:03d}.json").write_text(json.dumps(
            {"v": 1, "t": t, "host": {"hostname": f"n{i:03d}"}, "gpu": _node("x")["gpu"],
             "ranks": [{"rank": r} for r in ranks]}))
    for i in range(24):
        agent(i, now, range(8 * i, 8 * i + 8))
    (tmp_path / "ranks.json").write_text(json.dumps({"v": 1, "t": now, "ranks": {
        str(r): {"step": 9, "step_time_s": 3.0 if r == 200 else 2.0, "t": now} for r in range(208)}}))
    worked = []
    real = nodehealth.slowest
    monkeypatch.setattr(nodehealth, "slowest", lambda *a: (worked.append(1), real(*a))[1])
    reader = NodeReader(run)
    reader.whole = False
    first = reader.read(now)
    assert len(worked) == 24 and [n["health"]["problems"] for n in first] == [[]] * 24
    worked.clear()
    for i in range(24):  # every agent writes again: new figures, the same ranks
        agent(i, now + 1, range(8 * i, 8 * i + 8))
    again = reader.read(now + 1)
    assert {n["t"] for n in again} == {now + 1}, "the new files were read"
    assert worked == [], "the same ranks: no step time worked out again"
    agent(4, now + 2, range(200, 208))  # rank 200 (slow) now runs on n004
    moved = reader.read(now + 2)
    assert worked == [1] and moved[0]["host"] == "n004" and moved[0]["health"]["problems"] == ["slow"]


def test_a_glanced_file_written_again_keeps_its_ranks_and_host_until_they_change(tmp_path):
    """Agents rewrite their files every second with new GPU figures and the same ranks and host
    name: a console's run screen (glances, past 16 nodes) reads the new figures and keeps the
    ranks and host parts it already holds (the very same objects: no containers made for them,
    64 files a second at 128 nodes); a node whose ranks or host name changed shows them at the
    next read."""
    from moeconsole.runner.rundir.snapshot import NodeReader
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()

    def agent(i: int, t: float, ranks, util: float = 90, host: str | None = None) -> None:
        (run.telemetry / f"n{i:03d}.json").write_text(json.dumps(
            {"v": 1, "t": t, "host": {"hostname": host or f"n{i:03d}", "load1": 2.0},
             "gpu": _node("x", util=util)["gpu"], "ranks": [{"rank": r, "pid": 100 + r} for r in ranks]}))
    for i in range(24):
        agent(i, now, range(8 * i, 8 * i + 8))
    reader = NodeReader(run)
    reader.whole = False
    first = {n["host"]: n for n in reader.read(now)}
    for i in range(24):  # every agent writes again: new figures, the same ranks and host
        agent(i, now + 1, range(8 * i, 8 * i + 8), util=80)
    agent(5, now + 1, [*range(40, 47), 200], util=80)                       # n005: a rank moved there
    agent(6, now + 1, [48, 49, 50, 51, 52, 53, 54, True], util=80)          # n006: a rank of another type
    agent(7, now + 1, range(56, 64), util=80, host="gpu-7")                 # n007's file: another host name
    again = {n["host"]: n for n in reader.read(now + 1)}
    assert all(n["t"] == now + 1 and n["gpu"]["gpus"][0]["util_pct"] == 80 for n in again.values()), "new figures read"
    kept = [h for h in first if h in again and again[h]["ranks"] is first[h]["ranks"]
            and again[h]["host_stats"] is first[h]["host_stats"]]
    assert kept == [f"n{i:03d}" for i in range(24) if i not in (5, 6, 7)]
    assert [r["rank"] for r in again["n005"]["ranks"]] == [*range(40, 47), 200]
    assert again["n006"]["ranks"][-1]["rank"] is True
    assert "gpu-7" in again and "n007" not in again and again["gpu-7"]["host_stats"] == {"hostname": "gpu-7"}
    words = {g.host: "".join(t for t, _ in node_summary(g, 160)) for g in node_groups(list(again.values()), None, "here")}
    assert "ranks 40-46,200" in words["n005"] and "ranks 56-63" in words["gpu-7"]


def test_a_console_reads_only_each_agent_files_glance_and_judges_alike(tmp_path):
    """Past 16 nodes a console's run screen decodes only what the judgement and the summary
    line use: the same verdicts, order and summary lines as from the whole documents; the
    rest of a file (each GPU's name and processes, the host's figures) is left out until the
    GPU view asks for whole files again; a file another version wrote with other types is
    still read (whole)."""
    from moeconsole.runner.rundir.snapshot import NodeReader
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    for i in range(24):
        gpu = _node("x", used=143_000 if i == 5 else 100_000, util=10 if i == 9 else 90)["gpu"]
        for g in gpu["gpus"]:
            g.update(name="NVIDIA H200", temp_c=60 + i % 7, power_w=500.0, processes=[{"pid": 100 + i, "used_mib": 9}])
        (run.telemetry / f"n{i:03d}.json").write_text(json.dumps(
            {"v": 1, "t": now - (30 if i == 3 else 0), "host": {"hostname": f"n{i:03d}", "load1": 3.5},
             "gpu": gpu, "ranks": [{"rank": 8 * i + k, "pid": 100 + k} for k in range(8)], "processes": 8}))
    foreign = json.loads((run.telemetry / "n011.json").read_text())
    foreign["gpu"]["gpus"].append("not a GPU")  # another version's file: a list item of another type
    (run.telemetry / "n011.json").write_text(json.dumps(foreign))
    (tmp_path / "ranks.json").write_text(json.dumps({"v": 1, "t": now, "ranks": {
        str(r): {"step": 9, "step_time_s": 3.0 if r // 8 == 7 else 2.0, "t": now} for r in range(192)}}))

    whole = NodeReader(run).read(now)
    glancing = NodeReader(run)
    glancing.whole = False
    glanced = glancing.read(now)

    assert [n["host"] for n in glanced] == [n["host"] for n in whole]
    assert [n["host"] for n in glanced][:4] == ["n003", "n005", "n009", "n007"]  # stale, mem, util, slow
    assert [n["health"] for n in glanced] == [n["health"] for n in whole]
    assert [(n["age_s"], n["stale"], n["t"], n["processes"]) for n in glanced] == \
        [(n["age_s"], n["stale"], n["t"], n["processes"]) for n in whole]
    lines = ["".join(t for t, _ in node_summary(g, 160)) for g in node_groups(glanced, None, "here")]
    assert lines == ["".join(t for t, _ in node_summary(g, 160)) for g in node_groups(whole, None, "here")]
    assert "hottest" in lines[0] and "mem " in lines[0]
    by = {n["host"]: n for n in glanced}
    assert by["n000"].get("glance") is True and "name" not in by["n000"]["gpu"]["gpus"][0]
    assert "load1" not in by["n000"]["host_stats"]
    assert "name" in by["n011"]["gpu"]["gpus"][0], "a file of other types: read whole"
    assert all(n.get("glance") is None and n["gpu"]["gpus"][0]["name"] == "NVIDIA H200" for n in whole)

    glancing.whole = True  # the GPU view opens: every file read whole at its next read, none waits its turn
    again = glancing.read(now + 0.2)
    assert all(n.get("glance") is None and n["gpu"]["gpus"][0]["processes"] for n in again)
    assert [n["health"] for n in again] == [n["health"] for n in whole]


def test_few_nodes_are_read_whole_even_for_the_run_screen(tmp_path):
    """16 nodes or fewer: the run screen shows each node's rows, so every file is read whole."""
    from moeconsole.runner.rundir.snapshot import NodeReader
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    for i in range(16):
        gpu = _node("x")["gpu"]
        gpu["gpus"][0]["name"] = "NVIDIA H200"
        (run.telemetry / f"n{i:03d}.json").write_text(json.dumps({"v": 1, "t": now, "host": {"hostname": f"n{i:03d}"},
                                                                  "gpu": gpu}))
    reader = NodeReader(run)
    reader.whole = False
    assert all(n["gpu"]["gpus"][0]["name"] == "NVIDIA H200" and "glance" not in n for n in reader.read(now))


def test_a_fifo_among_the_agent_files_is_left_out_never_waited_on(tmp_path):
    """A FIFO named like an agent file (planted, or a tool gone wrong) must not block a
    console's poll thread in ``open`` (it waits for a writer forever): the other nodes are
    read and judged, at 16 nodes (whole files) and past them (glances)."""
    import threading
    from moeconsole.runner.rundir.snapshot import NodeReader
    for count in (8, 24):
        run = rundir.RunDir(tmp_path / str(count))
        run.telemetry.mkdir(parents=True)
        now = time.time()
        for i in range(count):
            (run.telemetry / f"n{i:03d}.json").write_text(json.dumps(
                {"v": 1, "t": now, "host": {"hostname": f"n{i:03d}"}, "gpu": _node("x")["gpu"]}))
        fifo = run.telemetry / "n999.json"
        os.mkfifo(fifo)
        reader = NodeReader(run)
        reader.whole = False
        got: list = []
        thread = threading.Thread(target=lambda: got.append(reader.read(now)), daemon=True)
        thread.start()
        thread.join(timeout=30)
        blocked = thread.is_alive()
        if blocked:  # in open(): a writer lets it go, so that nothing is left running
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(timeout=30)
        assert not blocked, f"{count} nodes: the poll waited on the FIFO"
        assert got and len(got[0]) == count
        assert "n999" not in {n["host"] for n in got[0]}


def test_a_small_file_is_read_whole_whatever_size_its_stat_said(tmp_path):
    from moeconsole.runner.rundir import jsonio
    path = tmp_path / "n000.json"
    doc = {"v": 1, "gpus": [{"index": i, "name": "x" * 100} for i in range(300)]}
    path.write_text(json.dumps(doc))
    size = path.stat().st_size
    for hint in (0, 10, size - 1, size, size + 1, 1 << 16):
        assert jsonio.read_small(path, hint) == path.read_bytes()
        assert jsonio.read_own_json(path, size=hint) == doc
    assert jsonio.read_own_json(tmp_path / "missing.json", default="none") == "none"


def test_past_the_panels_lines_only_the_nodes_shown_are_built_and_the_lines_are_the_same(monkeypatch):
    """128 nodes in 16 lines: the GPU panel builds the 15 nodes it shows (worst first, stale and
    GPU-less ones first) and counts the rest; the lines are those of every node's group, with the
    live local snapshot in or beside the agents' files, stale nodes hidden or shown."""
    import random
    from moeconsole.console.widgets import gpu_panel
    rng = random.Random(7)
    local_gpu = {"available": True, "gpus": _node("x")["gpu"]["gpus"][:2]}
    for case in range(40):
        nodes = nodehealth.assess_nodes([_node(f"n{i:03d}", used=143_000 if rng.random() < 0.05 else 100_000,
                                               util=10 if rng.random() < 0.05 else 90, ranks=range(8 * i, 8 * i + 8),
                                               stale=rng.random() < 0.1) for i in range(rng.choice((15, 16, 17, 40, 128)))])
        if case % 3 == 0:
            nodes[rng.randrange(len(nodes))]["gpu"] = None  # another version's file: no GPU data
        for local_host, local in (("here", None), ("here", local_gpu), ("n003", local_gpu), ("n003", {"available": False})):
            for budget in (1, 5, 16):
                want = gpu_panel.summary_lines(gpu_panel.node_groups(nodes, local, local_host), 160, budget)
                assert gpu_panel.node_summary_lines(nodes, local, local_host, 160, budget) == want, (case, local_host, budget)
    built = []
    real = gpu_panel.node_rank_numbers
    monkeypatch.setattr(gpu_panel, "node_rank_numbers", lambda node: (built.append(node["host"]), real(node))[1])
    nodes = nodehealth.assess_nodes([_node(f"n{i:03d}", ranks=range(8 * i, 8 * i + 8), stale=i == 77) for i in range(128)])
    lines = gpu_panel.node_summary_lines(nodes, local_gpu, "here", 160, 16)
    assert len(built) <= 15 and "n077" in built, "only the nodes shown are built: the stale one first"
    assert "".join(t for t, _ in lines[-1]).startswith("+114 more nodes")


def test_a_new_ranks_json_with_the_same_node_step_times_is_not_judged_again(tmp_path, monkeypatch):
    """The runner of a 1,024-rank run rewrites ranks.json at every flush: only each rank's step
    time is decoded, and the nodes are judged again only when a node's step time changed (a
    rank printing the same time again, or a rank of no node, changes no verdict); a node
    turning slow still shows at the next read."""
    from moeconsole.runner.rundir.snapshot import NodeReader
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    for i in range(24):
        (run.telemetry / f"n{i:03d}.json").write_text(json.dumps(
            {"v": 1, "t": now, "host": {"hostname": f"n{i:03d}"}, "gpu": _node("x")["gpu"],
             "ranks": [{"rank": 8 * i + k} for k in range(8)]}))

    def ranks(t: float, times: dict[int, float]) -> None:
        (tmp_path / "ranks.json").write_text(json.dumps({"v": 1, "t": t, "ranks": {
            str(r): {"step": int(t), "step_time_s": times.get(r, 2.0), "t": t} for r in range(200)}}))
        os.utime(tmp_path / "ranks.json", ns=(time.time_ns(), int(t * 1e9)))  # a new stat key each time
    judged = []
    real = nodehealth.assess_nodes
    monkeypatch.setattr(nodehealth, "assess_nodes", lambda *a, **k: (judged.append(1), real(*a, **k))[1])
    whole_reads = []
    real_load = ranktimes.load_rank_times
    monkeypatch.setattr(ranktimes, "load_rank_times", lambda r: (whole_reads.append(1), real_load(r))[1])
    reader = NodeReader(run)
    ranks(now, {})
    first = reader.read(now)
    assert judged == [1] and [n["health"]["problems"] for n in first] == [[]] * 24
    ranks(now + 1, {199: 9.0})  # new entries (step, t) and a rank no agent lists
    again = reader.read(now + 0.5)
    assert judged == [1], "no node's step time changed: not judged again"
    assert [n["age_s"] for n in again] == [0.5] * 24, "the ages still move on"
    ranks(now + 2, {199: 9.0, 45: 3.0})  # rank 45 (on n005) slows down
    slow = reader.read(now + 0.8)
    assert judged == [1, 1] and slow[0]["host"] == "n005" and slow[0]["health"]["why"] == ["step 3.00s (1.50x)"]
    assert whole_reads == [], "only the step times are decoded"
    (tmp_path / "ranks.json").write_text(json.dumps({"v": 1, "t": now, "ranks": {"45": 3.0, "8": {"step_time_s": 4.0}}}))
    os.utime(tmp_path / "ranks.json", ns=(time.time_ns(), int((now + 3) * 1e9)))
    other = reader.read(now + 0.9)  # another version's entries: read whole, its dict entries kept
    assert whole_reads == [1] and {n["host"]: n["health"]["step_time_s"] for n in other}["n001"] == 4.0
    assert {n["host"]: n["health"]["step_time_s"] for n in other}["n005"] is None


def test_a_nodes_gpu_figures_read_every_value_as_finite_float_does():
    """The figures take an agent's plain numbers as they are and read anything else as
    ``finite_float`` does: a bool, a string, NaN, infinity or an int too large for a float is
    no value; a number in a string ("nan" excepted) is one."""
    gpus = [{"mem_used_mib": 100, "mem_total_mib": 1000, "util_pct": 50},                 # ints
            {"mem_used_mib": 950.0, "mem_total_mib": 1000.0, "util_pct": 90.0},
            {"mem_used_mib": True, "mem_total_mib": 1000, "util_pct": False},             # bools: none
            {"mem_used_mib": "900", "mem_total_mib": "1000", "util_pct": "70"},           # strings: read
            {"mem_used_mib": float("nan"), "mem_total_mib": 1000, "util_pct": float("inf")},
            {"mem_used_mib": 10 ** 400, "mem_total_mib": 10 ** 400, "util_pct": -10 ** 400},
            {"mem_used_mib": 5, "mem_total_mib": 0, "util_pct": None},                    # no total
            {"mem_used_mib": "nan", "mem_total_mib": 1000, "util_pct": "inf"},
            "not a GPU"]
    f = nodehealth.gpu_figures({"available": True, "gpus": gpus})
    assert f == {"gpus": 8, "min_free_mib": 50.0, "max_mem_frac": 0.95, "mean_util_pct": 70.0, "min_util_pct": 50.0}
    assert all(type(v) is float for k, v in f.items() if k != "gpus")
    assert nodehealth.gpu_figures(None) == {"gpus": 0, "min_free_mib": None, "max_mem_frac": None,
                                            "mean_util_pct": None, "min_util_pct": None}


def test_a_node_whose_file_goes_is_dropped_and_the_rest_judged_again_at_the_next_read(tmp_path):
    """The verdicts are kept while no file was read again, none went and none came (not each
    file's stat key compared each second): a removed agent file (the node left the job) drops
    the node at the next read, even with no other file read then, and the rest are judged
    without it; a file that comes back is read at once."""
    from moeconsole.runner.rundir.snapshot import NodeReader
    run = rundir.RunDir(tmp_path)
    run.telemetry.mkdir()
    now = time.time()
    for i in range(24):
        gpu = _node("x", used=143_000 if i == 5 else 100_000)["gpu"]
        (run.telemetry / f"n{i:03d}.json").write_text(json.dumps(
            {"v": 1, "t": now, "host": {"hostname": f"n{i:03d}"}, "gpu": gpu,
             "ranks": [{"rank": 8 * i + k} for k in range(8)]}))
    (tmp_path / "ranks.json").write_text(json.dumps({"v": 1, "t": now, "ranks": {  # n010 the straggler
        str(r): {"step": 9, "step_time_s": 3.0 if r // 8 == 10 else 2.0, "t": now} for r in range(192)}}))
    for whole in (False, True):
        reader = NodeReader(run)
        reader.whole = whole
        first = reader.read(now)
        assert [(n["host"], n["health"]["problems"]) for n in first[:2]] == [("n005", ["mem"]), ("n010", ["slow"])]
        same = reader.read(now + 0.1)
        assert [(n["host"], n["health"]) for n in same] == [(n["host"], n["health"]) for n in first]
        kept = (run.telemetry / "n005.json").read_bytes()
        (run.telemetry / "n005.json").unlink()
        gone = reader.read(now + 0.2)
        assert len(gone) == 23 and "n005" not in {n["host"] for n in gone}
        assert [(n["host"], n["health"]["problems"]) for n in gone[:2]] == [("n010", ["slow"]), ("n000", [])], \
            "each node judged with its own ranks' step time"
        (run.telemetry / "n005.json").write_bytes(kept)
        back = reader.read(now + 0.3)
        assert len(back) == 24 and \
            [(n["host"], n["health"]["problems"]) for n in back[:3]] == [("n005", ["mem"]), ("n010", ["slow"]), ("n000", [])]
