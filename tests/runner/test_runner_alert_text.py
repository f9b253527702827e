"""Alert text is never cut inside a word: the data (``--json``'s headline, ``runs show``, the
receipt) carries it whole; the console at 80x24 fits it by dropping low-value words, keeping the
numbers, the count and the steps; the cooldown-ceiling alert says what it waited on and that it
launched anyway. Real runner, real trainer double (tests/fakes/memtrain.py), real port holder."""
from __future__ import annotations

import asyncio
import json
import re

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import rundir
from tests.memory.test_memory_runner import recipe as mem_recipe
from tests.runner.conftest import port_holder
from tests.waiting import until_ui

SUMMARY = "CUDA out of memory in backward (chunk_gated_delta_rule_bwd), tried to allocate 60.00 MiB on GPU 0"


def test_alert_text_is_whole_in_data_and_fitted_by_words_on_screen(harness, runs_dir):
    env = {"FAKE_MEM_STEPS": "800", "FAKE_MEM_BASE_GIB": "60", "FAKE_MEM_CACHE_GIB": "1",
           "FAKE_MEM_LEAK_MIB": "60", "FAKE_MEM_CAPACITY_GIB": "80"}
    run = harness.start(harness.recipe(**mem_recipe(env, restart={"max_restarts": 0})))
    run.wait_status("failed", timeout=180)
    whole = f"crash cuda_oom: {SUMMARY}"

    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    group = next(g for g in snap["alert_groups"] if g["key"] == "crash:cuda_oom")
    assert group["headline"].startswith(whole) and "…" not in group["headline"], group["headline"]
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert any(l.strip().startswith(f"CRIT {whole}") for l in shown.splitlines()), shown
    assert "…" not in shown.split("alerts by cause", 1)[1].split("checkpoints (", 1)[0]
    harness.cli("runs", "receipt", run.id, "--out", str(harness.tmp / "rc"), check=True)
    receipt = (harness.tmp / "rc" / "receipt.json").read_text()
    assert whole in receipt and "chunk_gated_del…" not in receipt

    async def status(size: tuple[int, int]) -> str:
        app = MoeConsole(runs_dir, rundir.resolve(runs_dir, run.id), gpu=False, interval=0.25)
        async with app.run_test(size=size) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and "CRIT crash" in app.screen.query_one(StatusLine).plain_lines[1])
            return app.screen.query_one(StatusLine).plain_lines[1]

    words = set(re.split(r"[ ,;:()]+", whole))
    for size in ((80, 24), (120, 36)):
        line = asyncio.run(status(size))
        alert = line.split(" · ")[0]
        assert len(alert) <= size[0] and alert.startswith("CRIT crash cuda_oom: CUDA out"), line
        assert alert.endswith("(step 324)"), alert          # the count and the steps always stay
        for w in re.split(r"[ ,;:()]+", alert.replace("…", "")):   # no word is cut: each is one of the text's
            assert w in words or w in ("CRIT", "", "step", "324"), (w, alert)
        if size[0] >= 120:
            assert "tried to allocate 60.00 MiB on GPU 0" in alert, alert


def test_the_cooldown_ceiling_alert_says_what_it_waited_on_and_that_it_launched(harness, tmp_path):
    holder, port = port_holder(tmp_path)
    script = tmp_path / "one_step.py"
    script.write_text("print('step: 1  loss: 1.0', flush=True)\n")
    try:
        run = harness.start(harness.recipe(command=["{python}", str(script), "--master_port", str(port)],
                                           env={"MASTER_PORT": str(port)}, checkpoints={"dir": None},
                                           resume={"arg": None}, cooldown={"floor_s": 0, "ceiling_s": 1.0}))
        run.wait_status("succeeded", "failed", timeout=60)
        snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
        group = next(g for g in snap["alert_groups"] if g["key"] == "cooldown_ceiling")
        assert group["headline"].startswith(f"launched anyway at the cooldown ceiling, still waiting on port {port} busy"), group
        ev = next(a for a in run.events("alert") if a["rule"] == "cooldown_ceiling")
        assert "launched anyway" in ev["message"] and f"port {port} busy" in ev["message"], ev
    finally:
        holder.kill()
        holder.wait()
