"""Newcomer round 8: two users on one node, both with `metrics: {port: 9464}`. The second user's
exporter could not listen; it said so only in exporter.log (every 5 s, as the runner started it
again), while their Prometheus scraped the FIRST user's run on that port, and no view of the run
said a word. Now the run gets one warning alert naming the port and what to type (`metrics.port=0`),
once per reason however often the exporter is tried again. A real runner, a real exporter, a real
process holding the port."""
from __future__ import annotations

import json

from tests.ops.ops_helpers import end, wait_for
from tests.runner.conftest import Harness, port_holder, ticker


def test_a_metrics_port_another_process_holds_is_one_alert_with_the_way_out(tmp_path, runs_dir):
    holder, port = port_holder(tmp_path)
    try:
        h = Harness(tmp_path, runs_dir)
        run = h.start(h.recipe(command=ticker(100000, 0.2), metrics={"port": port, "interval_s": 0.2}))
        log = run.path / "exporter.log"
        wait_for(lambda: log.exists() and log.read_text().count("cannot listen") >= 3, 120,
                 "the exporter tried three times")
        wait_for(lambda: run.events("alert"), 60, "the alert")
        said = [e for e in run.events("alert") if e.get("rule") == "metrics_not_served"]
        assert len(said) == 1, run.events("alert")
        assert f"127.0.0.1:{port}: Address already in use" in said[0]["message"], said
        assert "`--set metrics.port=0`" in said[0]["message"], said
        snap = h.cli("--json", "--once", run.path.name)
        assert snap.returncode == 0, snap.stderr
        alerts = json.loads(snap.stdout)["alerts"]
        assert any("metrics not served" in json.dumps(a) for a in alerts), alerts
        # review R70: the port comes free, the next try serves it: the alert resolves (it had stayed
        # active for good, telling the user to change a port that works)
        end(holder)
        wait_for(lambda: [e for e in run.events("alert") if e.get("rule") == "metrics_not_served" and e.get("resolved")],
                 120, "the alert resolved")
        served = json.loads((run.path / "exporter.json").read_text())
        assert served["port"] == port, served
        snap = h.cli("--json", "--once", run.path.name)
        shown = json.loads(snap.stdout)
        assert any(a.get("rule") == "metrics_not_served" and a.get("resolved") for a in shown["alerts"]), shown["alerts"]
        assert shown["run"]["open_alerts"] == 0, shown["run"]   # no longer an active alert
        assert h.cli("kill", run.path.name).returncode == 0
    finally:
        end(holder)
