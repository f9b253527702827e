"""The supervised run in a hostile world, round 18. Each drives the real CLI, the real detached
runner and the real demo trainer (or a real process), and asserts on what the user sees:
state.json, events.jsonl, `runs show`, `--json --once`."""
from __future__ import annotations

import json
import shutil

from tests.runner.conftest import base_recipe
from tests.waiting import until


def test_an_earlier_attempts_save_verified_while_a_later_one_runs_resolves_no_crash(harness):
    """Attempt 1 left `checkpoint-8` unfinished (its weights an empty stub: a writer cut off, an
    async save) and segfaulted at step 9; attempt 2 resumed from `checkpoint-4` and is held at step
    6. The late bytes of checkpoint-8 land (an async writer that outlived attempt 1, a network
    filesystem's attributes caught up): it verifies ok while attempt 2 runs. Before: "past_crash"
    attempt 2, how "saved", the segfault resolved, by a save attempt 2 never wrote, at a step it
    never reached. Now: the crash stays open until attempt 2 itself logs past step 8."""
    command = [*base_recipe()["command"], "--fault", "stub@8", "--fault", "segv@9", "--fault", "hang@6#2"]
    run = harness.start(harness.recipe(command=command, heartbeat={"timeout_s": 900}))
    try:
        def attempt_2_at(step: int) -> bool:
            return any(m.get("attempt") == 2 and m.get("step") == step for m in run.metrics())
        until(lambda: attempt_2_at(5), 240, what="attempt 2 at step 5, held before step 6")
        out = run.path / "output"
        assert run.events("crash")[0]["class"] == "segfault"
        bad = [e for e in run.events("checkpoint") if e["path"].endswith("checkpoint-8")]
        assert bad and bad[-1]["ok"] is False, bad
        weights = "adapter_model.safetensors"
        shutil.copyfile(out / "checkpoint-4" / weights, out / "checkpoint-8" / f".{weights}.part")
        (out / "checkpoint-8" / f".{weights}.part").replace(out / "checkpoint-8" / weights)
        until(lambda: any(e["path"].endswith("checkpoint-8") and e["ok"] for e in run.events("checkpoint")),
              180, what="checkpoint-8 verified ok")
        assert not attempt_2_at(6) and run.state().get("attempt") == 2, run.metrics()[-1]
        assert run.events("past_crash") == [], run.events("past_crash")
        snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
        group = next(g for g in snap["alert_groups"] if g["key"] == "crash:segfault")
        assert group["active"] is True and not group["resolved"], group
    finally:
        harness.cli("kill", run.id)
    run.wait_status("killed", "failed", timeout=120)


def test_a_refusal_with_no_size_from_work_run_elsewhere_is_not_named_the_runners_limit(harness, tmp_path):
    """`run` from a shell with `ulimit -v` 16 GiB; the command is a client (`docker run`, `ssh host
    cmd`) whose work runs under that place's own 2 GiB limit, and the work's `bytearray(3 GiB)` is
    refused there: a bare `MemoryError`, no size in it. Before: `environment_error`, "an allocation
    failed at the address-space limit (ulimit -v or -d) of 16.0 GB, not for want of RAM", the run
    FAILED with the advice to raise a limit that never bound. The runner's walks saw its own
    processes (the client, the waiter) hold a few hundred MB of its 16 GiB: nothing proves its limit
    refused anything. Now the verdict says what is known (no size, no process here near the limit,
    the work may run elsewhere) and the attempt is restarted as an unknown crash."""
    import resource
    import subprocess
    import sys
    import textwrap

    from tests.runner.test_runner_world12 import ONE_ATTEMPT
    from tests.runner.test_runner_world13 import _cli
    from tests.runner.test_runner_world15 import started_under
    from tests.runner.test_runner_world16 import RELAY_CLIENT, RELAY_DAEMON
    sock = tmp_path / "relay.sock"
    work = textwrap.dedent("""
        import time
        for i in range(1, 4):
            print('{"step": %d, "loss": 0.5}' % i, flush=True)
            time.sleep(1)   # the work's own pace: the runner walks its tree (and names the client) every 0.5 s
        big = bytearray(3 << 30)
    """)
    daemon = subprocess.Popen([sys.executable, "-c", RELAY_DAEMON, str(sock), str(2 << 30), work])
    try:
        until(sock.exists, 60, what="the relay daemon's socket")
        # the client as the runner's walks see it: a process named `ssh` (review R50: only a client whose
        # work runs elsewhere, ``proctree.elsewhere_client``, makes a sizeless refusal not the limit's)
        recipe = harness.recipe(command=[str(named_client(tmp_path, "ssh", RELAY_CLIENT)), str(sock)], **ONE_ATTEMPT)

        def limited() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (16 << 30, resource.RLIM_INFINITY))
        run = started_under(harness, recipe, limited)
        st = run.wait_status("failed", "succeeded", "killed", "unsaved", "paused", timeout=180)
        crash = st["last_crash"]
        assert "MemoryError" in (run.path / "train.log").read_text()
        assert crash["class"] != "environment_error" and run.events("crash")[0]["recovery"] == "restart", crash
        assert "not for want of RAM" not in crash["summary"] and "no size" in crash["summary"], crash
        assert "in a container or on another machine" in crash["summary"] and "`ssh`" in crash["summary"], crash
        assert "16.0 GB" in (st.get("pause_reason") or ""), st   # the fail reason names the limit (review R50)
        shown = _cli("runs", "show", run.id, runs_dir=harness.runs_dir).stdout.decode()
        assert "not for want of RAM" not in shown and "docker run" in shown, shown
    finally:
        daemon.kill()
        daemon.wait()


def named_client(where, name: str, source: str):
    """``source`` as an executable script ``where/name`` run by this interpreter: its process is named
    ``name`` (the kernel names a script's process by the script: ``/proc/PID/comm``), as a real
    `ssh` or `docker` client is."""
    import os
    import sys

    path = where / name
    path.write_text(f"#!{sys.executable}\n{source}")
    os.chmod(path, 0o755)
    return path


NODE1_SHARE = """
import os, sys, time
out, attempt = sys.argv[1], int(os.environ["MOECONSOLE_ATTEMPT"])
for i in range(1, 5):
    print('{"step": %d, "loss": 0.5}' % i, flush=True)
if attempt == 1:
    # this node's share of the world's save of step 4, as transformers writes it on a process other than 0
    share = os.path.join(out, "checkpoint-4")
    os.makedirs(share)
    with open(os.path.join(share, "rng_state_1.pth"), "wb") as f:
        f.write(b"x" * 100)
    # the wall clock stepped back an hour between the run's start and this save (NTP after a suspend, an
    # admin's date -s): the kernel stamped the share an hour before the run began
    stepped = time.time() - 3600
    os.utime(os.path.join(share, "rng_state_1.pth"), (stepped, stepped))
    os.utime(share, (stepped, stepped))
    sys.exit(3)
"""


def test_node_1s_share_written_after_a_clock_stepped_back_still_counts(harness, tmp_path):
    """A node of rank 1 (``NODE_RANK=1``) writes its share of the world's save of step 4 and crashes;
    the wall clock had been stepped back an hour between the run's start and the save. Before: the
    share's mtime, an hour before `started_at`, read as an earlier run's leftover (review R45's rule,
    on the wall clock), so attempt 2 started from scratch beside a world at step 4 (here: the run
    SUCCEEDED, no word said). Now the shares on disk when the run began are its own record (no clock),
    and attempt 2 is refused naming the save of step 4."""
    script = tmp_path / "node1.py"
    script.write_text(NODE1_SHARE)
    out = tmp_path / "node1-scratch"
    out.mkdir()
    run = harness.start(harness.recipe(command=["{python}", str(script), str(out)], checkpoints={"dir": str(out)},
                                       env={"OMP_NUM_THREADS": "1", "NODE_RANK": "1"}))
    st = run.wait_status("failed", "succeeded", "paused", "unsaved", timeout=180)
    assert st["status"] == "failed", (st["status"], st.get("pause_reason"), run.events("attempt_start"))
    assert "step 4" in (st.get("pause_reason") or "") and "checkpoint-4" in st["pause_reason"], st["pause_reason"]
    started2 = [e for e in run.events("attempt_start") if e.get("attempt") == 2]
    assert started2 and started2[0].get("error"), started2


INDEX_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")          # the user's `sqlite3 index.sqlite` shell, a transaction left open
open(sys.argv[2], "w").close()
time.sleep(600)
"""


def test_the_users_sqlite_shell_holding_the_runs_index_loses_no_run_and_no_kill(harness, tmp_path):
    """The user opens the runs index in `sqlite3` (or a backup tool, a viewer) and leaves a transaction
    open. Before: `runs ls` waited 10 s and said "no runs under ..." of a live run (its row never
    written), and each status change stalled the runner 10 s in the index's wait, so `kill` (10 s to
    answer) said "the runner does not take the kill", SIGKILLed the runner and left the run STOPPING.
    Now the index is a cache that waits 1 s at most: the run is listed from its directory, `kill` is
    taken and the run ends KILLED; once the lock is gone the row is written."""
    import subprocess
    import sys

    from tests.runner.test_runner_world12 import NO_SAVES
    harness.cli("runs", "ls", check=True)          # the index exists, as it does once any run was listed
    index = harness.runs_dir / "index.sqlite"
    assert index.is_file()
    held = tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", INDEX_HOLDER, str(index), str(held)])
    try:
        until(held.exists, 60, what="the index held")
        run = harness.start(harness.recipe(command=["{python}", "-c", "import time\nwhile True: time.sleep(0.2)"],
                                           **NO_SAVES))
        run.wait(lambda s: s.get("status") == "running", 120, what="running")
        listed = harness.cli("runs", "ls", "--json")
        assert listed.returncode == 0, listed
        rows = {r["id"]: r for r in json.loads(listed.stdout)["runs"]}
        assert run.id in rows and rows[run.id]["status"] == "running", listed.stdout
        out = harness.cli("kill", run.id)
        assert out.returncode == 0 and "does not take the kill" not in out.stdout + out.stderr, out
        st = run.wait_status("killed", "failed", "stopping", timeout=120)
        st = run.wait_status("killed", "failed", timeout=120)
        assert st["status"] == "killed", st
        assert 9 not in [e.get("signal") for e in run.events("kill")], run.events("kill")
    finally:
        holder.kill()
        holder.wait()
    until(lambda: any(r["id"] == run.id and r["status"] == "killed"
                      for r in json.loads(harness.cli("runs", "ls", "--json", check=True).stdout)["runs"]),
          120, what="the run's row once the index is free")


def test_a_checkpoint_disk_gone_after_a_crash_refuses_a_start_from_scratch(harness, tmp_path):
    """The output dir is a link to a scratch disk; the training saved (checkpoint-4, verified) and
    segfaulted at step 6, and in the cooldown the disk went away (unmounted, an NFS export gone: here
    its directory moved aside). Before: no resume point, attempt 2 started from step 0, the trainer's
    `makedirs` made the directory again on the disk beneath and the run SUCCEEDED, the verified save
    of step 4 never named. Now attempt 2 does not start: one line says the directory is not there,
    through which link, and the save it held; with the disk back, `restart` resumes from checkpoint-4."""
    disk = tmp_path / "scratch"
    (disk / "out").mkdir(parents=True)
    out = tmp_path / "out"
    out.symlink_to(disk / "out")
    command = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", str(out), "--max_steps", "12",
               "--save_steps", "4", "--step_delay", "0.0", "--fault", "segv@6"]
    run = harness.start(harness.recipe(command=command, checkpoints={"dir": str(out)},
                                       cooldown={"floor_s": 30.0, "ceiling_s": 40.0},
                                       restart={"backoff_initial_s": 30.0, "backoff_max_s": 30.0}))
    until(lambda: run.events("crash"), 180, what="attempt 1's crash")
    away = tmp_path / "scratch.away"
    disk.rename(away)                                   # the disk unmounted in the cooldown
    st = run.wait_status("failed", "succeeded", "paused", "unsaved", timeout=180)
    assert st["status"] == "failed", (st["status"], run.events("attempt_start"))
    reason = st.get("pause_reason") or ""
    assert f"{out}, a link to {disk / 'out'}" in reason and "is not there" in reason, reason
    assert "checkpoint-4" in reason, reason
    assert not (disk / "out").exists(), "nothing trained into the place of the disk"
    away.rename(disk)                                   # mounted again
    assert harness.cli("restart", run.id, "--now").returncode == 0
    st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=240)
    assert st["status"] == "succeeded", st
    resumed = [e.get("resumed_from") for e in run.events("attempt_start") if not e.get("error")]
    assert resumed[-1] and resumed[-1].endswith("checkpoint-4"), resumed
