"""The GPU panel of a multi-node run: every node's GPUs from the files `moeconsole agent` writes
into the run directory, with the stale node marked in words, at 160x48 (heading and rows per
node) and at 80x24 (one summary line per node), and the same nodes as `moeconsole --json`.

The GPU data is the real agent's output: `moeconsole agent` runs once per scenario under the
fake NVML library (8 GPUs, 4 GPUs, no driver); the tests copy its file under other host names,
the way agents on other nodes would write them on shared storage."""
from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from textual.geometry import Region

from tests.waiting import until, until_ui
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.gpu_panel import GpuPanel
from moeconsole.console.widgets.panes import LogTail
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import jsonio, rundir

REPO = Path(__file__).resolve().parents[2]
STALE_AGE_S = 150  # "2 minutes" for the 29 s a test may take
LOCAL = rundir.hostname()


# ---- real agent output ----------------------------------------------------------------------

def _run_agent(libdir: Path, scenario: Path, base: Path) -> subprocess.Popen:
    from tests.fakes.nvml import fake_env
    run = rundir.create(base, scenario.stem)
    run.write_state({"v": 1, "status": "running", "name": scenario.stem, "attempt": 1})
    env = fake_env(libdir, scenario)
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "agent", str(run.path), "--interval", "0.2"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    proc.telemetry_file = run.telemetry / f"{LOCAL}.json"  # type: ignore[attr-defined]
    return proc


@pytest.fixture(scope="module")
def agent_docs(tmp_path_factory) -> dict[str, dict]:
    """What `moeconsole agent` wrote on this host for each scenario: its whole file."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake NVML library")
    from tests.fakes.nvml import DRIVER_NOT_LOADED, FakeGpu, build_fake_nvml, write_scenario
    tmp = tmp_path_factory.mktemp("agents")
    libdir = build_fake_nvml(tmp / "lib")
    scenarios = {
        "eight": write_scenario(tmp / "eight.txt", [
            FakeGpu(util_pct=20 + 9 * i, mem_base_used_mib=50_000 + 10_000 * i, temp_c=45 + 5 * i,
                    power_w=300 + 40 * i) for i in range(8)]),
        "four": write_scenario(tmp / "four.txt", [
            FakeGpu(name="NVIDIA A100-SXM4-80GB", mem_total_mib=81_920, util_pct=3 + i, mem_base_used_mib=1_500 + 100 * i,
                    temp_c=33 + i, power_w=60, power_limit_w=400) for i in range(4)]),
        "nodriver": write_scenario(tmp / "nodriver.txt", 0, init_error=DRIVER_NOT_LOADED),
    }
    agents = {name: _run_agent(libdir, path, tmp / "runs") for name, path in scenarios.items()}
    docs: dict[str, dict] = {}
    try:
        def every_agent_wrote() -> bool:
            for name, proc in agents.items():
                doc = jsonio.read_json(proc.telemetry_file) if name not in docs else None
                if isinstance(doc, dict):
                    docs[name] = doc
                    proc.send_signal(signal.SIGTERM)  # one file each is all the tests need
            return len(docs) == len(agents)
        until(every_agent_wrote, timeout=60, what="every agent's first telemetry file")
        for name, proc in agents.items():
            assert proc.wait(timeout=20) == 0, f"agent {name}: {proc.stderr.read()}"
    finally:
        for proc in agents.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert set(docs) == set(agents), "an agent wrote no telemetry file within 60 s"
    assert docs["eight"]["gpu"]["available"] and len(docs["eight"]["gpu"]["gpus"]) == 8
    assert docs["four"]["gpu"]["available"] and len(docs["four"]["gpu"]["gpus"]) == 4
    assert docs["nodriver"]["gpu"]["available"] is False
    return docs


def node_file(run: rundir.RunDir, doc: dict, host: str, t: float) -> Path:
    """An agent's file as the agent on ``host`` would have written it at time ``t``."""
    doc = copy.deepcopy(doc)
    doc["host"]["hostname"] = host
    doc["t"] = t
    run.telemetry.mkdir(exist_ok=True)
    path = run.telemetry / f"{host}.json"
    jsonio.atomic_write_json(path, doc)
    return path


@pytest.fixture
def fresh_agent():
    """Keeps a node's file fresh (rewritten every 0.3 s, as its agent would) while a test runs,
    so a busy machine cannot turn it stale."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(run: rundir.RunDir, doc: dict, host: str) -> None:
        node_file(run, doc, host, time.time())

        def loop() -> None:
            while not stop.wait(0.3):
                node_file(run, doc, host, time.time())
        threads.append(threading.Thread(target=loop, daemon=True))
        threads[-1].start()
    try:
        yield start
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)


def two_node_run(base, make_run, agent_docs, fresh_agent) -> rundir.RunDir:
    """A live run with the agent files of two other nodes: gpu-node-a (8 GPUs, fresh) and
    gpu-node-b (4 GPUs, its agent silent for 2.5 minutes)."""
    run = make_run(base, runner_pid=os.getpid())
    fresh_agent(run, agent_docs["eight"], "gpu-node-a")
    node_file(run, agent_docs["four"], "gpu-node-b", time.time() - STALE_AGE_S)
    return run


# ---- driving the app ------------------------------------------------------------------------

def visible_lines(widget) -> list[str]:
    """The panel's text as it is on screen (cropped to its region), padding stripped."""
    width, height = widget.size
    return [strip.text.strip() for strip in widget.render_lines(Region(0, 0, width, height))]


def panel_view(base, run, size, local_gpu: dict | None, *, gpu: bool = True) -> dict:
    """Attach to ``run`` at ``size`` (local GPU telemetry = ``local_gpu``) and return what the
    run screen shows."""
    async def go() -> dict:
        app = MoeConsole(base, run, interval=0.2, gpu=gpu, telemetry=lambda state: (local_gpu, []))
        async with app.run_test(size=size) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            panel = app.screen.query_one(GpuPanel)  # drawn from the same poll as the snapshot
            polls = app.screen.polls
            await until_ui(pilot, lambda: app.screen.polls > polls, what="a poll later: the view is settled")
            return {"lines": visible_lines(panel), "plain": list(panel.plain_lines), "height": panel.size.height,
                    "summarised": panel.summarised, "history": panel.history_count(), "status": app.screen.query_one(StatusLine).plain_lines,
                    "log": app.screen.query_one(LogTail).plain_lines,
                    "nodes": list(app.screen.snapshot.nodes)}
    return asyncio.run(go())


def heading(lines: list[str], host: str) -> int:
    """Index of the one line that starts with ``host`` (a node's heading or summary)."""
    found = [i for i, line in enumerate(lines) if line.startswith(host)]
    assert len(found) == 1, f"{host} heads {len(found)} lines: {lines}"
    return found[0]


def rows_under(lines: list[str], host: str) -> str:
    """The GPU rows between ``host``'s heading and the next heading (rows start with an index)."""
    start = heading(lines, host) + 1
    rows = []
    for line in lines[start:]:
        if not re.match(r"\d+ \[", line):
            break
        rows.append(line)
    return "\n".join(rows)


def mem_text(g: dict) -> str:
    return f"{g['mem_used_mib'] / 1024:.1f}/{g['mem_total_mib'] / 1024:.1f}G"


def gib_total(mib: float) -> str:
    return f"{mib / 1024:.0f}" if mib >= 100 * 1024 else f"{mib / 1024:.1f}"


def summary_words(gpus: list[dict]) -> list[str]:
    """What a node's summary line must say, computed from the agent's GPU dicts."""
    used = sum(g["mem_used_mib"] for g in gpus)
    total = sum(g["mem_total_mib"] for g in gpus)
    return [f"{len(gpus)} GPUs", f"{gib_total(used)}/{gib_total(total)}G",
            f"max util {int(max(g['util_pct'] for g in gpus))}%", f"hottest {int(max(g['temp_c'] for g in gpus))}C"]


# ---- tests ----------------------------------------------------------------------------------

def test_every_node_with_its_rows_at_160x48(base, make_run, agent_docs, fresh_agent):
    run = two_node_run(base, make_run, agent_docs, fresh_agent)
    view = panel_view(base, run, (160, 48), agent_docs["nodriver"]["gpu"])
    lines = view["lines"]
    assert not view["summarised"]
    assert view["history"] == 8, "gpu-node-a's rows draw their sparklines from a history (the stale node's: none)"
    assert lines == [line.strip() for line in view["plain"]], "part of the panel is cut off"

    # this node (no agent file): its live snapshot, with the driver's reason
    local = lines[heading(lines, f"{LOCAL} (this node)")]
    assert "GPUs not available:" in local and agent_docs["nodriver"]["gpu"]["reason"] in local
    # gpu-node-a: fresh, eight rows in the nvidia-smi grammar, every GPU's memory and utilisation
    a = lines[heading(lines, "gpu-node-a")]
    assert "STALE" not in a and "8 GPUs" in a
    rows_a = rows_under(lines, "gpu-node-a")
    for g in agent_docs["eight"]["gpu"]["gpus"]:
        assert mem_text(g) in rows_a and f"{int(g['util_pct'])}%" in rows_a and f"{int(g['temp_c'])}C" in rows_a
    assert len(re.findall(r"(?:^|  )\s?\d \[", rows_a, re.M)) == 8
    # gpu-node-b: STALE with its age in words, its last rows still shown
    b = lines[heading(lines, "gpu-node-b")]
    assert "STALE: last update 2 minutes ago" in b
    rows_b = rows_under(lines, "gpu-node-b")
    for g in agent_docs["four"]["gpu"]["gpus"]:
        assert mem_text(g) in rows_b
    # order: this node first, then the agents' nodes as the snapshot lists them: worst first,
    # so the STALE node before the healthy one
    assert heading(lines, LOCAL) < heading(lines, "gpu-node-b") < heading(lines, "gpu-node-a")


def test_80x24_shows_one_summary_line_per_node(base, make_run, agent_docs, fresh_agent):
    run = two_node_run(base, make_run, agent_docs, fresh_agent)
    view = panel_view(base, run, (80, 24), agent_docs["nodriver"]["gpu"])
    lines = [line for line in view["lines"] if line]
    assert view["summarised"] and view["height"] <= 4
    assert len(lines) == 3 and len(view["plain"]) == 3  # every node on screen, nothing cut
    a = lines[heading(lines, "gpu-node-a")]
    for words in summary_words(agent_docs["eight"]["gpu"]["gpus"]):
        assert words in a, (words, a)
    assert "STALE" not in a
    b = lines[heading(lines, "gpu-node-b")]
    assert re.match(r"gpu-node-b\s+STALE\b.* 2 minutes ago", b)  # the flag right after the host
    assert "GPUs not available" in lines[heading(lines, f"{LOCAL} (this node)")]
    # the compact layout keeps its other panes
    assert view["status"][0].startswith("demo") and view["log"]


def test_the_local_host_is_shown_once_from_its_live_snapshot(base, make_run, agent_docs, fresh_agent):
    run = make_run(base, runner_pid=os.getpid())
    live = copy.deepcopy(agent_docs["eight"]["gpu"])
    for g in live["gpus"]:
        g["mem_used_mib"] = 20_000 + 777 * g["index"]  # differs from this host's (stale) agent file
    node_file(run, agent_docs["eight"], LOCAL, time.time() - STALE_AGE_S)
    fresh_agent(run, agent_docs["four"], "gpu-node-a")
    lines = panel_view(base, run, (160, 48), live)["lines"]
    here = lines[heading(lines, LOCAL)]
    assert "(this node)" in here and "STALE" not in here
    rows = rows_under(lines, LOCAL)
    for live_g, file_g in zip(live["gpus"], agent_docs["eight"]["gpu"]["gpus"]):
        assert mem_text(live_g) in rows and mem_text(file_g) not in rows
    assert "gpu-node-a" in lines[heading(lines, "gpu-node-a")]


def test_only_this_hosts_agent_file_leaves_the_panel_unchanged(base, make_run, agent_docs, fresh_agent):
    """A one-node run with an agent: the same rows as with no agent at all, no heading."""
    live = agent_docs["eight"]["gpu"]
    plain = make_run(base, "20240101-000000-plain-0001", runner_pid=os.getpid())
    with_agent = make_run(base, "20240101-000000-agent-0002", runner_pid=os.getpid())
    fresh_agent(with_agent, agent_docs["four"], LOCAL)
    assert panel_view(base, with_agent, (80, 24), live)["plain"] == panel_view(base, plain, (80, 24), live)["plain"]


def test_a_node_without_gpus_says_why(base, make_run, agent_docs, fresh_agent):
    run = make_run(base, "20240101-000000-done-0001", status="succeeded")  # a past run: no local telemetry
    fresh_agent(run, agent_docs["nodriver"], "gpu-node-c")
    fresh_agent(run, agent_docs["eight"], "gpu-node-d")
    lines = panel_view(base, run, (100, 30), None)["lines"]
    c = lines[heading(lines, "gpu-node-c")]
    assert f"GPUs not available: {agent_docs['nodriver']['gpu']['reason']}" in c
    assert not any(LOCAL in line for line in lines)  # nothing polled locally, no agent here


def test_more_nodes_than_lines_lists_stale_ones_first_and_counts_the_rest(base, make_run, agent_docs, fresh_agent):
    run = make_run(base, runner_pid=os.getpid())
    for i in range(4):
        fresh_agent(run, agent_docs["eight"], f"gpu-node-{i}")
    for i in (4, 5):
        node_file(run, agent_docs["four"], f"gpu-node-{i}", time.time() - STALE_AGE_S)
    view = panel_view(base, run, (80, 24), agent_docs["eight"]["gpu"])
    lines = [line for line in view["lines"] if line]
    assert len(lines) == 4 and view["height"] == 4
    assert [line.split()[0] for line in lines[:3]] == ["gpu-node-4", "gpu-node-5", LOCAL]
    assert all(re.match(r"gpu-node-\d\s+STALE\b.* 2 minutes ago", line) for line in lines[:2])
    assert "STALE" not in lines[2]
    assert lines[-1].startswith("+4 more nodes")  # gpu-node-0..3, fresh: no STALE count
    assert "STALE" not in lines[-1]
    assert "moeconsole --json" in lines[-1]


def test_json_lists_the_same_nodes_as_the_panel(base, make_run, agent_docs, fresh_agent):
    run = two_node_run(base, make_run, agent_docs, fresh_agent)
    fresh_agent(run, agent_docs["nodriver"], "gpu-node-c")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "--json", "--once", "--no-gpu", run.run_id,
                           "--runs-dir", str(base)], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    nodes = json.loads(done.stdout)["nodes"]
    assert [n["host"] for n in nodes] == ["gpu-node-b", "gpu-node-a", "gpu-node-c"]  # the STALE one first

    for size in ((160, 48), (80, 24)):
        lines = [line for line in panel_view(base, run, size, None, gpu=False)["lines"] if line]
        shown = [line.split()[0] for line in lines if not re.match(r"\d+ \[", line)]
        assert shown == [n["host"] for n in nodes], size  # the same nodes, in the same order
        for n in nodes:
            line = lines[heading(lines, n["host"])]
            assert ("STALE" in line) == n["stale"], (size, line)
            if not n["gpu"]["available"]:
                assert n["gpu"]["reason"] in line
            elif size == (80, 24):
                for words in summary_words(n["gpu"]["gpus"]):
                    assert words in line, (words, line)
            else:
                rows = rows_under(lines, n["host"])
                assert all(mem_text(g) in rows for g in n["gpu"]["gpus"])


def test_rows_come_back_when_the_terminal_grows(base, make_run, agent_docs, fresh_agent):
    """Summary lines on a short terminal, every node's rows once it is tall enough (the panel
    follows the screen's breakpoints, not only its own size)."""
    run = two_node_run(base, make_run, agent_docs, fresh_agent)

    async def go() -> None:
        app = MoeConsole(base, run, interval=3600, gpu=False)  # one poll: only the resizes redraw
        async with app.run_test(size=(160, 30)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            panel = app.screen.query_one(GpuPanel)
            await until_ui(pilot, lambda: len([line for line in visible_lines(panel) if line]) == 2)
            assert not any(re.match(r"\d+ \[", line) for line in visible_lines(panel))
            await pilot.resize_terminal(160, 48)
            await until_ui(pilot, lambda: len(re.findall(r"(?:^|  )\s?\d \[", rows_under(visible_lines(panel), "gpu-node-a"),
                                                      re.M)) == 8)
            await pilot.resize_terminal(160, 30)
            await until_ui(pilot, lambda: len([line for line in visible_lines(panel) if line]) == 2)
    asyncio.run(go())


def test_summary_lines_follow_each_nodes_file_and_ages_tick(base, make_run, agent_docs, monkeypatch):
    """More nodes than lines (one summary line each, the lines kept per change of a node's
    file): a node whose file changed shows its new numbers a poll later, and an unchanged
    node's heartbeat age still advances."""
    from moeconsole.runner.rundir import snapshot
    monkeypatch.setattr(snapshot, "NODE_STALE_S", 600.0)  # a busy machine must not turn them stale
    run = make_run(base, "20240101-000000-done-0001", status="succeeded")  # no local telemetry
    now = time.time()
    for i in range(20):
        node_file(run, agent_docs["eight"], f"gpu-node-{i:03d}", now)
    changed = copy.deepcopy(agent_docs["eight"])
    for g in changed["gpu"]["gpus"]:
        g["mem_used_mib"] = 3_000 + 100 * g["index"]
    assert summary_words(changed["gpu"]["gpus"]) != summary_words(agent_docs["eight"]["gpu"]["gpus"])

    def line_of(panel: GpuPanel, host: str) -> str:
        found = [line for line in panel.plain_lines if line.startswith(host)]
        return found[0] if found else ""

    def age_of(line: str) -> int | None:
        m = re.search(r"agent (\d+)s ago", line)
        return int(m.group(1)) if m else None

    async def go() -> None:
        app = MoeConsole(base, run, interval=0.2, gpu=False)
        async with app.run_test(size=(160, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            panel = app.screen.query_one(GpuPanel)
            await until_ui(pilot, lambda: panel.summarised and age_of(line_of(panel, "gpu-node-001")) is not None,
                           what="the summary lines")
            for words in summary_words(agent_docs["eight"]["gpu"]["gpus"]):
                assert words in line_of(panel, "gpu-node-000")
            before = age_of(line_of(panel, "gpu-node-001"))
            assert before is not None
            node_file(run, changed, "gpu-node-000", time.time())
            await until_ui(pilot, lambda: all(w in line_of(panel, "gpu-node-000")
                                              for w in summary_words(changed["gpu"]["gpus"])),
                           what="the changed node's new numbers")
            await until_ui(pilot, lambda: (age_of(line_of(panel, "gpu-node-001")) or 0) > before,
                           what="the unchanged node's age advancing")
            for words in summary_words(agent_docs["eight"]["gpu"]["gpus"]):
                assert words in line_of(panel, "gpu-node-001")
    asyncio.run(go())


def test_the_gpu_view_shows_every_nodes_whole_file_past_the_summary_lines(base, make_run, agent_docs, monkeypatch):
    """The run screen of a 20-node run reads only each agent file's glance (its summary lines);
    the GPU view (``g``) shows every node's rows from its whole file (GPU names, power), and
    back on the run screen the files are glanced at again."""
    from moeconsole.runner.rundir import snapshot
    monkeypatch.setattr(snapshot, "NODE_STALE_S", 600.0)
    run = make_run(base, "20240101-000000-done-0001", status="succeeded")
    now = time.time()
    for i in range(20):
        node_file(run, agent_docs["eight"], f"gpu-node-{i:03d}", now)
    name = str(agent_docs["eight"]["gpu"]["gpus"][0]["name"])
    assert name

    async def go() -> None:
        app = MoeConsole(base, run, interval=0.2, gpu=False)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and len(app.screen.snapshot.nodes) == 20)
            run_screen = app.screen
            assert all(n.get("glance") for n in run_screen.snapshot.nodes), "the run screen glances"
            assert run_screen.query_one(GpuPanel).summarised
            await pilot.press("g")
            await until_ui(pilot, lambda: type(app.screen).__name__ == "GpuScreen")
            view = app.screen

            def every_node_whole() -> bool:
                text = view.procs_text
                return "reading its agent file" not in text and \
                    all(f"gpu-node-{i:03d}" in text for i in range(20)) and text.count(name[:10]) >= 20 * 8
            await until_ui(pilot, every_node_whole, what="every node's rows from its whole file")
            await pilot.press("q")
            await until_ui(pilot, lambda: app.screen is run_screen)
            assert run_screen.source.watcher.nodes.whole is False
            node_file(run, agent_docs["eight"], "gpu-node-000", time.time())  # a file changed: glanced again

            def glanced(host: str) -> bool:
                return any(n["host"] == host and n.get("glance") for n in run_screen.snapshot.nodes)
            await until_ui(pilot, lambda: glanced("gpu-node-000"), what="the changed file glanced at again")
    asyncio.run(go())


def test_the_panel_keeps_no_gpu_history_for_nodes_read_for_their_summary_line(base, make_run, agent_docs, monkeypatch):
    """A 20-node run screen reads each agent file for its summary line only (no rows, so no
    sparklines drawn from it): the panel holds no utilisation history for those nodes (it had
    one for each of their 160 GPUs), and drops what the GPU view's whole reads made it keep
    once the files are glanced at again; a node shown with its rows still has its sparkline
    history (``test_every_node_with_its_rows_at_160x48``'s two nodes: 8 GPUs kept)."""
    from moeconsole.runner.rundir import snapshot
    monkeypatch.setattr(snapshot, "NODE_STALE_S", 600.0)
    run = make_run(base, "20240101-000000-done-0001", status="succeeded")
    now = time.time()
    for i in range(20):
        node_file(run, agent_docs["eight"], f"gpu-node-{i:03d}", now)

    async def go() -> None:
        app = MoeConsole(base, run, interval=0.2, gpu=False)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and len(app.screen.snapshot.nodes) == 20)
            run_screen = app.screen
            panel = run_screen.query_one(GpuPanel)
            polls = run_screen.polls
            await until_ui(pilot, lambda: run_screen.polls > polls + 1 and panel.summarised, what="two polls drawn")
            assert all(n.get("glance") for n in run_screen.snapshot.nodes)
            assert panel.history_count() == 0
            await pilot.press("g")   # whole files: the panel underneath may keep their GPUs' history
            await until_ui(pilot, lambda: type(app.screen).__name__ == "GpuScreen")
            await until_ui(pilot, lambda: run_screen.snapshot is not None
                           and not any(n.get("glance") for n in run_screen.snapshot.nodes), what="whole files read")
            await pilot.press("q")
            await until_ui(pilot, lambda: app.screen is run_screen)
            for i in range(20):  # every agent writes again: glanced at again
                node_file(run, agent_docs["eight"], f"gpu-node-{i:03d}", time.time())
            await until_ui(pilot, lambda: all(n.get("glance") for n in run_screen.snapshot.nodes)
                           and len(run_screen.snapshot.nodes) == 20, what="every file glanced at again")
            polls = run_screen.polls
            await until_ui(pilot, lambda: run_screen.polls > polls, what="a poll drawn")
            assert panel.history_count() == 0
    asyncio.run(go())


def test_json_carries_each_nodes_whole_file_past_the_summary_lines(base, make_run, agent_docs):
    """A 20-node run (the run screen glances at its agent files): `moeconsole --json` still
    carries each node's whole document, the same fields the agent wrote."""
    run = make_run(base, "20240101-000000-done-0001", status="succeeded")
    now = time.time()
    for i in range(20):
        node_file(run, agent_docs["eight"], f"gpu-node-{i:03d}", now)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "--json", "--once", "--no-gpu", run.run_id,
                           "--runs-dir", str(base)], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    nodes = json.loads(done.stdout)["nodes"]
    assert sorted(n["host"] for n in nodes) == [f"gpu-node-{i:03d}" for i in range(20)]
    for n in nodes:
        assert "glance" not in n
        assert n["gpu"] == agent_docs["eight"]["gpu"]  # every GPU field the agent wrote
        assert n["host_stats"] == {**agent_docs["eight"]["host"], "hostname": n["host"]}


def test_a_node_that_stops_reporting_is_flagged_stale_past_the_lines_shown(base, make_run, agent_docs, monkeypatch):
    """Past the panel's lines only the shown nodes are built; a node among the counted ones
    whose agent falls silent is still found: at its limit it comes first, STALE, and the
    count line no longer holds it."""
    from moeconsole.runner.rundir import snapshot
    # node 033 last wrote 900 s ago; it turns stale when the test lowers the limit to 600 s, not
    # when a clock race says so (review R70: a 3 s margin failed on a busy machine)
    monkeypatch.setattr(snapshot, "NODE_STALE_S", 10_000.0)
    run = make_run(base, "20240101-000000-done-0001", status="succeeded")  # no local telemetry
    now = time.time()
    for i in range(40):
        node_file(run, agent_docs["eight"], f"gpu-node-{i:03d}", now - (900 if i == 33 else 0))

    async def go() -> None:
        app = MoeConsole(base, run, interval=0.2, gpu=False)
        async with app.run_test(size=(160, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            panel = app.screen.query_one(GpuPanel)
            await until_ui(pilot, lambda: panel.summarised and panel.plain_lines, what="the summary lines")
            assert not any(line.startswith("gpu-node-033") for line in panel.plain_lines), "a counted node"
            monkeypatch.setattr(snapshot, "NODE_STALE_S", 600.0)   # its agent fell silent past the limit
            await until_ui(pilot, lambda: panel.plain_lines[0].startswith("gpu-node-033")
                           and "STALE" in panel.plain_lines[0], what="the silent node flagged first")
            assert "STALE" not in panel.plain_lines[-1], "the stale node is shown, not counted"
    asyncio.run(go())
