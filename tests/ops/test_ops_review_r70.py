"""R70: the metrics_not_served alert fires on the FIRST failed try, even when the port comes free a
moment later (the very case the respawn exists for: the previous runner's exporter still holding
it), and nothing ever resolves it while the exporter serves the port after all."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from moeconsole.runner.checkpoints.sync import SyncSettings
from moeconsole.runner.ops.notify import NotifySettings
from moeconsole.runner.ops.sidecars import MetricsSettings, OpsSidecars
from tests.console.conftest import write_run


def test_a_port_held_for_a_few_seconds_is_no_lasting_alert(tmp_path):
    run = write_run(tmp_path, status="running")
    # the previous runner's exporter: holds the port and lets go 1 s later
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    holder = subprocess.Popen([sys.executable, "-c",
                               "import socket,time\n"
                               f"s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1',{port})); s.listen(1)\n"
                               "time.sleep(4.0)\n"])
    time.sleep(0.3)
    ops = OpsSidecars(MetricsSettings(port=port, interval_s=0.2), NotifySettings(), SyncSettings(), run.path, run.run_id)
    events = []
    try:
        ops.start()
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline:
            events += ops.poll(time.time())
            bound = run.path / "exporter.json"
            if bound.exists() and json.loads(bound.read_text()).get("port") == port and ops.exporter.poll() is None \
                    and time.monotonic() > deadline - 10:
                break
            time.sleep(0.25)
        print("exporter.log:", (run.path / "exporter.log").read_text())
        print("exporter.json:", (run.path / "exporter.json").read_text())
        print("events:", events)
        assert json.loads((run.path / "exporter.json").read_text())["port"] == port   # it serves the port now
        assert not [e for e in events if e.get("rule") == "metrics_not_served"], events
    finally:
        holder.wait(timeout=30)
        ops.close()


def test_an_exporter_that_dies_for_another_reason_is_not_reported_with_an_earlier_runners_line(tmp_path):
    import os
    import signal
    run = write_run(tmp_path, status="running")
    # an earlier runner of this run (before a restart with `--set metrics.port=0`) left its line
    (run.path / "exporter.log").write_text(
        "exporter: cannot listen on 127.0.0.1:9464: Address already in use; another process holds it (on a shared "
        "machine perhaps another user's): `metrics: {port: 0}` (`--set metrics.port=0`) picks a free one, named in "
        "exporter.json\n")
    ops = OpsSidecars(MetricsSettings(port=0, interval_s=0.2), NotifySettings(), SyncSettings(), run.path, run.run_id)
    events = []
    try:
        ops.start()
        until = time.monotonic() + 30
        while not ((run.path / "exporter.json").exists() and json.loads((run.path / "exporter.json").read_text())["port"]):
            assert time.monotonic() < until
            time.sleep(0.1)
        os.kill(ops.exporter.pid, signal.SIGKILL)      # the OOM killer, a user's kill of a stray process
        ops.exporter.wait(timeout=10)
        until = time.monotonic() + 10
        while time.monotonic() < until:
            events += ops.poll(time.time())
            time.sleep(0.25)
        print("events:", events)
        assert not [e for e in events if e.get("rule") == "metrics_not_served"], events
    finally:
        ops.close()
