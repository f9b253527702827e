"""Review R35's findings 1-2 on the rendezvous status, through the real runner and a real shebang script.

A stand-in agent named ``torchrun`` (a ``#!PYTHON`` script, as pip writes torch's console script) started as a
plain ``torchrun --nnodes 2 --node_rank 1 ...`` command: the kernel runs it as ``PYTHON .../torchrun ARGS``,
which is what the runner reads back. It waits with no child (torchrun's rendezvous), then starts one worker
that logs no step (a node other than the first), then, its worker done, waits again with no child (torchrun's
exit barrier, elastic/agent/server/api.py l.930-938, 976-999, up to 300 s). Before: no status at all in the
rendezvous (the script form was no torchrun), and, with the form read, ``waiting for the other nodes`` again in
the exit barrier, with the runner's process walk every 2 s for the whole run."""
from __future__ import annotations

import os
import sys
import time

from tests.runner.conftest import NO_SAVES
from tests.waiting import until

AGENT = r'''#!{python}
import os, subprocess, sys, time
here = {here!r}
def wait(name):
    while not os.path.exists(os.path.join(here, name)):
        time.sleep(0.05)
wait("met")
worker = subprocess.Popen([sys.executable, "-c",
                           "import os, time\nwhile not os.path.exists(%r): time.sleep(0.05)" % os.path.join(here, "done")])
open(os.path.join(here, "worker"), "w").write(str(worker.pid))
worker.wait()
open(os.path.join(here, "barrier"), "w").write(repr(time.time()))
wait("end")
'''


def test_a_plain_torchrun_waits_shows_it_and_its_exit_barrier_is_no_rendezvous(harness, tmp_path):
    agent = tmp_path / "bin" / "torchrun"
    agent.parent.mkdir()
    agent.write_text(AGENT.format(python=sys.executable, here=str(tmp_path)))
    agent.chmod(0o755)
    (tmp_path / "train.py").write_text("")
    run = harness.start(harness.recipe(
        command=[str(agent), "--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "1",
                 "--master_addr", "127.0.0.1", "--master_port", "29871", str(tmp_path / "train.py")], **NO_SAVES))
    try:
        st = run.wait(lambda s: s.get("rendezvous"), 120, "the agent's rendezvous shown")
        assert st["rendezvous"] == {"endpoint": "127.0.0.1:29871", "nodes": "2", "node_rank": "1"}, st
        shown = harness.cli("--json", str(run.path), "--once", "--no-gpu")
        assert "waiting for the other nodes at 127.0.0.1:29871, node 1 of 2" in shown.stdout, shown.stdout[:2000]

        (tmp_path / "met").touch()
        until(lambda: (tmp_path / "worker").exists(), 60, what="the worker started")
        run.wait(lambda s: s.get("status") == "running" and s.get("rendezvous") is None, 120, "the rendezvous over")

        (tmp_path / "done").touch()
        until(lambda: (tmp_path / "barrier").exists() and (tmp_path / "barrier").read_text(), 60,
              what="the agent in its exit barrier")
        barrier = float((tmp_path / "barrier").read_text())
        # the runner wrote its state well after the agent lost its child: it has looked (every 2 s) since
        st = run.wait(lambda s: s.get("rendezvous") or (s.get("updated_at") or 0) > barrier + 8, 180,
                      "the runner's state written 8 s after the exit barrier began")
        assert st["status"] == "running" and not st.get("rendezvous"), st
    finally:
        (tmp_path / "met").touch()
        (tmp_path / "done").touch()
        (tmp_path / "end").touch()
    st = run.wait(lambda s: s.get("status") not in ("starting", "running", "stopping"), 120, "the run's end")
    assert not st.get("rendezvous"), st
