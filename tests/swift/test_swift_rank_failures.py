"""Several processes that fail, for real on CPU (torch 2.13 of .venv-swift, gloo): what torchrun printed
against what moeconsole shows (state.json, events, the crash verdict).

- gloo's own timeout while a rank is stopped: the rank blocked in a collective raises gloo's
  ``Timed out waiting Nms for recv operation to complete`` after the process group's timeout, exits 1,
  and torchrun, unable to end the stopped rank with SIGTERM, SIGKILLs it 30 s later (api.py ``_close``,
  l.1023-1047: "Unable to shutdown process N via 15, forcefully exiting via 9"). That SIGKILL is
  torchrun's own: the crash is the timed-out rank's exception, never "killed by SIGKILL ... most likely
  the host OOM killer" (what it was before).
- A rank that raises a Python exception mid-training (ms-swift, an ``--external_plugins`` file that
  raises on rank 1 at step 3): the crash is that rank's exception, with its rank and PID, not rank 0's
  echo (gloo's ``Connection closed by peer``); the same crash at the same step twice pauses the run.

ms-swift on CPU never applies ``--ddp_timeout``: transformers sets the process group's timeout for every
backend but the CPU one (training_args.py l.1844-1847 set only ``backend`` with ``use_cpu``; l.1856 and
l.1859 set ``timeout``), so accelerate's group gets torch's default (30 min for gloo). The timeout is
therefore measured on a torchrun script of 10 lines that sets it itself."""
from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.demo.demo_helpers import free_port
from tests.swift.swift_helpers import SWIFT_PYTHON, Run, cli, end_by_pid, processes_of, require_swift, running
from tests.waiting import until

GLOO_SCRIPT = """\
import datetime, json, os, signal, time, torch, torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=int(os.environ["GLOO_TIMEOUT_S"])))
x = torch.ones(4)
for step in range(1, 100000):
    if dist.get_rank() == 1 and step == 4:
        os.kill(os.getpid(), signal.SIGSTOP)   # as a debugger or `kill -STOP` would
    dist.all_reduce(x)
    if dist.get_rank() == 0:
        print(json.dumps({"step": step, "loss": round(1.0 / step, 4)}), flush=True)
    time.sleep(0.2)
"""

# What torchrun printed at the end of that run (torch 2.13.0, measured here; the traceback's frames
# cut): rank 0's gloo timeout, torchrun's SIGTERM to the stopped rank 1, its SIGKILL 30 s later, and
# ChildFailedError naming rank 0's exit 1 as the root cause and rank 1's SIGKILL as the other failure.
GLOO_TIMEOUT_TAIL = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/tmp/s2exp/gloo/g.py", line 7, in <module>
[rank0]:     dist.all_reduce(x)
[rank0]:   File "/work/main/.venv-swift/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252, in all_reduce
[rank0]:     work.wait()
[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 20000ms for recv operation to complete
W1201 01:27:14.424000 15283 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 15352 closing signal SIGTERM
W1201 01:27:44.425000 15283 torch/distributed/elastic/multiprocessing/api.py:1047] Unable to shutdown process 15352 via 15, forcefully exiting via 9
E1201 01:27:44.507000 15283 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 15351) of binary: /work/main/.venv-swift/bin/python
Traceback (most recent call last):
  File "/work/main/.venv-swift/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
g.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-01_01:27:44
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 15352)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 15352
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-01_01:27:14
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 15351) 
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


@pytest.mark.parametrize("python_enums", [False, True])
def test_torchruns_own_sigkill_of_a_stopped_rank_is_not_the_crash(python_enums):
    """No ms-swift needed. Before: `killed_oom`, "killed by SIGKILL (rank 0 on localhost, pid 15351) ...
    most likely the host OOM killer" (the SIGKILL of rank 1's entry, torchrun's own, pinned on rank 0).
    Python before 3.11 prints the signals as `Signals.SIGTERM` / `Signals.SIGKILL`."""
    from moeconsole.runner.core.crash import classify
    tail = GLOO_TIMEOUT_TAIL
    if python_enums:
        tail = tail.replace("via 15, forcefully exiting via 9", "via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL")
    v = classify(1, tail.splitlines(), steps_seen=3, attempt=1, oom_kills=0)
    assert (v.cls, v.recovery) == ("unknown", "restart"), v
    assert v.summary.startswith("exited with code 1 (rank 0 on localhost, pid 15351): RuntimeError: "), v.summary
    assert "Timed out waiting 20000ms for recv operation to complete" in v.summary
    assert not any("SIGKILL" in line for line in v.evidence), v.evidence


def test_a_sigkill_torchrun_did_not_send_still_decides():
    """Without torchrun's "forcefully exiting" line the same SIGKILL entry is somebody else's kill, as before."""
    from moeconsole.runner.core.crash import classify
    tail = "\n".join(line for line in GLOO_TIMEOUT_TAIL.splitlines() if "forcefully exiting" not in line)
    assert classify(1, tail.splitlines(), steps_seen=3, attempt=1).cls == "killed_oom"


def _recipe(tmp: Path, script: Path, port: int) -> Path:
    recipe = tmp / "gloo-timeout.yaml"
    recipe.write_text(textwrap.dedent(f"""\
        name: gloo-timeout
        command: ["{SWIFT_PYTHON}", "-m", "torch.distributed.run", "--nproc_per_node", "2",
                  "--master_port", "{port}", "{script}"]
        env:
          OMP_NUM_THREADS: "1"
          GLOO_TIMEOUT_S: "40"
        restart:
          max_restarts: 1
          backoff_initial_s: 1
        kill:
          grace_s: 5
        heartbeat:
          timeout_s: 10
          startup_s: 240
        """))
    return recipe


def test_gloos_timeout_while_a_rank_is_stopped(tmp_path):
    """Real torchrun, 2 ranks on gloo with a 40 s timeout; rank 1 stops itself (SIGSTOP) at its 4th
    all-reduce. First the `stopped` warning (heartbeat 10 s) naming rank 1's PID, no crash; then gloo's
    timeout ends rank 0 and torchrun SIGKILLs the stopped rank: the crash is rank 0's timeout, `unknown`,
    restarted (before: `killed_oom`, "most likely the host OOM killer"). `moeconsole kill` ends the
    second attempt; nothing is left running."""
    require_swift()
    script = tmp_path / "g.py"
    script.write_text(GLOO_SCRIPT)
    runs = tmp_path / "runs"
    proc = cli(runs, "run", str(_recipe(tmp_path, script, free_port())), "--detach")
    assert proc.returncode == 0, proc.stderr
    run = Run(runs / proc.stdout.strip().splitlines()[0])
    try:
        run.wait(lambda s: [a for a in run.events("alert") if a.get("rule") == "stopped"], "the stopped warning")
        (stopped,) = [a for a in run.events("alert") if a.get("rule") == "stopped"]
        assert run.events("crash") == [] and run.state()["attempt"] == 1
        run.wait(lambda s: run.events("crash"), "the crash after gloo's timeout")
        (crash,) = run.events("crash")
        assert (crash["class"], crash["decision"]) == ("unknown", "restart"), crash
        assert crash["summary"].startswith("exited with code 1 (rank 0 on localhost, pid "), crash["summary"]
        assert "Timed out waiting 40000ms for recv operation to complete" in crash["summary"], crash["summary"]
        log = (run.path / "train.log").read_text(errors="replace")
        pid = stopped["values"]["pids"][0]
        assert f"Unable to shutdown process {pid} via 15, forcefully exiting via 9" in log   # torchrun's own SIGKILL
        report = json.loads((run.path / "crashes" / "attempt-1.json").read_text())
        assert report["class"] == "unknown"
        run.wait(lambda s: s.get("attempt") == 2, "the restart")
        tree = {p["pid"]: p["start_time"] for p in run.state()["pids"]}
        assert cli(runs, "kill", run.id).returncode == 0
        run.wait(lambda s: s.get("status") == "killed", "status killed")
        until(lambda: not any(running(p, c) for p, c in tree.items()), 60, what="every process of the tree gone")
    finally:
        cli(runs, "kill", run.id)


RANK1_RAISES = """\
import os
from transformers import Trainer
_step = Trainer.training_step
def training_step(self, model, inputs, *args, **kwargs):
    if os.environ.get("RANK") == "1" and self.state.global_step >= 3:
        raise ValueError("bad sample on rank 1: 'content' is None in messages[1]")
    return _step(self, model, inputs, *args, **kwargs)
Trainer.training_step = training_step
"""


def test_a_rank_that_raises_is_the_crash_with_its_rank_and_the_same_crash_twice_pauses(swift_runs, tiny, tmp_path):
    """ms-swift with 2 ranks (`--use_cpu true`); a plugin raises on rank 1 only, in its 4th step. Measured:
    rank 1's `[rank1]: ValueError: ...` traceback, in one run of two rank 0's echo `RuntimeError: [...gloo...] Connection closed
    by peer ... typically caused by a remote worker crashing`, torchrun's ChildFailedError with rank 1's
    `exitcode : 1` as root cause and `error_file: <N/A>` (ms-swift's sft.py has no `@record`). moeconsole:
    `unknown` naming rank 1, its PID and its ValueError (not rank 0's echo); the restart resumes from
    checkpoint-2, fails the same way at step 3, and the policy pauses the run."""
    require_swift()
    plugin = tmp_path / "rank1_raises.py"
    plugin.write_text(RANK1_RAISES)
    from tests.swift.test_swift_multiproc import two_ranks
    run = two_ranks(swift_runs, tiny, "args.max_steps=12", "args.save_steps=2", f"args.external_plugins={plugin}")
    try:
        run.wait(lambda s: s.get("status") == "paused", "status paused")
        crashes = run.events("crash")
        assert [c["decision"] for c in crashes] == ["restart", "pause"], crashes
        log = (run.path / "train.log").read_text(errors="replace")
        assert "error_file: <N/A>" in log    # (rank 0's gloo echo is there only when it fails before torchrun ends it)
        for c in crashes:
            assert c["class"] == "unknown" and c["step"] == 3, c
            assert "(rank 1 on localhost, pid " in c["summary"], c["summary"]
            assert c["summary"].endswith("ValueError: bad sample on rank 1: 'content' is None in messages[1]")
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        assert start2["resumed_from"].endswith("checkpoint-2")
    finally:
        cli(swift_runs, "kill", run.id)


def _shown_word(run: Run) -> str:
    """The status word ``--json --once`` shows (``runs show`` prints the same, ``snapshot.status_word``)."""
    out = cli(None, "--json", str(run.path), "--once", "--no-gpu").stdout.splitlines()
    return json.loads(out[0])["run"]["status_word"] if out else ""


def _end_nodes(runs_dir: Path, nodes: list[Run]) -> None:
    """``moeconsole kill`` of each node's run, then whatever of its processes is left ended by PID: a test
    that failed half-way (or a kill that timed out on a loaded machine) leaves nothing running."""
    for node in nodes:
        try:
            cli(runs_dir, "kill", node.id)
        except subprocess.TimeoutExpired:
            pass
        end_by_pid(processes_of(node.path))


def test_two_nodes_on_one_machine_and_node_1_killed(swift_runs, tiny):
    """`NNODES=2` as a user on two nodes starts it: two moeconsole runs, `NODE_RANK` 0 and 1, one `MASTER_ADDR`
    and `MASTER_PORT`, one rank each (`swift sft` passes them to torchrun, swift/cli/main.py l.74-83).

    Node 1 first, alone: its torchrun waits in the static rendezvous and prints nothing (measured: 2 lines in
    3 minutes, ms-swift's `run sh:` and the runner's marker); it reads `RUNNING (waiting for the other nodes at
    127.0.0.1:P, node 1 of 2)` (before: a bare `RUNNING`). Node 0 started: both leave the rendezvous. Node 1 prints
    no step dict (the Trainer logs on the world's process zero) and its `checkpoint-N/` hold only
    `rng_state_1.pth`: its console shows no record, no save and no alert. Node 1's run killed: node 0's rank
    fails on gloo's closed connection; its crash names rank 0 and that error, `unknown`, restarted, and its
    second attempt reads `waiting for the other nodes at 127.0.0.1:P, node 0 of 2`. Both kills leave nothing
    running. Every wait is on what the runs print or do, with deadlines for two busy cores: the rendezvous
    (silent) up to 15 minutes, the training for as long as it keeps moving (``Run.wait_while_moving``)."""
    require_swift()
    from tests.swift.swift_helpers import start_node
    port = free_port()

    def node(rank: int) -> Run:
        return start_node(swift_runs, tiny, rank, port)
    nodes = [node(1)]
    node1 = nodes[0]
    try:
        node1.wait(lambda s: s.get("rendezvous"), "node 1 waiting in torchrun's rendezvous", timeout=600)
        assert _shown_word(node1) == f"RUNNING (waiting for the other nodes at 127.0.0.1:{port}, node 1 of 2)"
        nodes.append(node(0))
        node0 = nodes[1]
        # the two agents meet and start their workers (silent until ms-swift's first lines: 4 minutes and more
        # on two loaded cores), then node 0 trains and saves
        for n in nodes:
            n.wait(lambda s: s.get("attempt") == 1 and not s.get("rendezvous") and "local_world_size" in n.log(),
                   "the rendezvous complete and ms-swift started", timeout=900)
        node0.wait_while_moving(lambda s: node0.ok_checkpoints() and (s.get("step") or 0) >= 5,
                                "node 0: a verified save, step 5")
        log1 = node1.log()
        assert "rank: 1, local_rank: 0, world_size: 2, local_world_size: 1" in log1
        assert "--nnodes 2 --node_rank 1 --master_addr 127.0.0.1" in log1
        saved1 = node1.wait_while_moving(lambda s: sorted(node1.path.glob("output/v*-*/checkpoint-*/rng_state_1.pth")),
                                         "node 1's checkpoint dirs") and \
            sorted(node1.path.glob("output/v*-*/checkpoint-*"))
        assert saved1 and all({f.name for f in d.iterdir()} <= {"rng_state_1.pth"} for d in saved1), saved1
        assert node1.metrics() == [] and node1.events("checkpoint") == [] and node1.events("alert") == []
        assert node1.state()["status"] == "running" and not node1.state().get("rendezvous")
        tree1 = {p["pid"]: p["start_time"] for p in node1.state()["pids"]}
        assert cli(swift_runs, "kill", node1.id).returncode == 0
        node1.wait(lambda s: s.get("status") == "killed", "node 1 killed")
        until(lambda: not any(running(p, c) for p, c in tree1.items()), 120, what="node 1's tree gone")
        # the attempt's end looked at every dir again: before, each was a critical `empty_stub` bad save
        assert node1.events("checkpoint") == [] and node1.events("alert") == [], node1.events("alert")
        shown = json.loads(cli(None, "--json", str(node1.path), "--once", "--no-gpu").stdout.splitlines()[0])
        assert shown["checkpoints"] == [] and shown["alerts"] == [], shown["alerts"]
        node0.wait_while_moving(lambda s: node0.events("crash"), "node 0's crash")
        (crash,) = node0.events("crash")
        assert (crash["class"], crash["decision"]) == ("unknown", "restart"), crash
        assert crash["summary"].startswith("exited with code 1 (rank 0 on localhost, pid "), crash["summary"]
        # attempt 2's torchrun waits for node 1, which never comes back: said, not a bare RUNNING
        node0.wait(lambda s: s.get("attempt") == 2 and s.get("rendezvous"), "node 0's attempt 2 waiting for node 1",
                   timeout=600)
        assert _shown_word(node0) == f"RUNNING (waiting for the other nodes at 127.0.0.1:{port}, node 0 of 2)"
        tree0 = {p["pid"]: p["start_time"] for p in node0.state()["pids"]}
        assert cli(swift_runs, "kill", node0.id).returncode == 0
        node0.wait(lambda s: s.get("status") == "killed", "node 0 killed")
        until(lambda: not any(running(p, c) for p, c in tree0.items()), 120, what="node 0's tree gone")
        assert not node0.state().get("rendezvous") and "waiting" not in _shown_word(node0)
    finally:
        _end_nodes(swift_runs, nodes)


@pytest.mark.parametrize("files, verdict", [
    (["rng_state_1.pth"], None),                       # node 1 of 2, one rank: measured
    (["rng_state_8.pth", "rng_state_9.pth"], None),    # node 1 of 2, eight ranks each
    (["rng_state_0.pth"], "EMPTY_STUB"),               # process zero's own share without weights: cut short
    (["rng_state.pth"], "EMPTY_STUB"),                 # a world of one
])
def test_another_processes_rng_state_alone_is_no_save_of_this_node(tmp_path, files, verdict):
    """No ms-swift needed: transformers writes `rng_state_{process_index}.pth` into checkpoint-N/ on every
    process (trainer.py l.3470-3477), the weights on process zero only. `moeconsole verify` of node 1's output
    (what the measured NNODES=2 run left there) said `EMPTY_STUB` for each save; it finds no checkpoint now."""
    ckpt = tmp_path / "output" / "v0-20261201-012625" / "checkpoint-4"
    ckpt.mkdir(parents=True)
    for name in files:
        (ckpt / name).write_bytes(b"PK\x03\x04")
    out = cli(None, "verify", str(tmp_path / "output"))
    if verdict is None:
        assert "no checkpoints found" in out.stdout + out.stderr, out.stdout
    else:
        assert verdict in out.stdout, out.stdout
