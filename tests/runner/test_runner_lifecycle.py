"""A supervised run from start to end, driven only through the real CLI."""
from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time

import psutil

from moeconsole.runner.process.proctree import marked_processes
from tests.waiting import until


def _tree_gone(run) -> bool:
    return not marked_processes(run.id)


def test_run_succeeds_and_records_every_step(harness):
    run = harness.start(harness.recipe())
    st = run.wait_status("succeeded", timeout=90)
    assert st["attempt"] == 1 and st["step"] == 12
    steps = [m["step"] for m in run.metrics()]
    assert steps == list(range(1, 13))
    rec = run.metrics()[-1]
    assert rec["v"] == 1 and rec["attempt"] == 1 and rec["src"] and rec["loss"] is not None
    from moeconsole.runner.rundir import jsonio
    for line in (run.path / "metrics.jsonl").read_text().splitlines():
        assert line == jsonio.dumps(json.loads(line)), "every record in the one canonical encoding"
    # Every checkpoint the trainer saved was verified, at the latest before the run is shown as over.
    verdicts = {os.path.basename(e["path"]): e["verdict"] for e in run.events("checkpoint")}
    assert verdicts == {"checkpoint-4": "ok", "checkpoint-8": "ok", "checkpoint-12": "ok"}
    assert _tree_gone(run)
    ls = harness.cli("runs", "ls", "--json", check=True)
    assert run.id in ls.stdout


def test_runner_is_detached_and_socket_is_private(harness):
    run = harness.start(harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "400", "--step_delay", "0.05"]))
    st = run.wait_status("running")
    runner = psutil.Process(st["runner"]["pid"])
    assert runner.pid != os.getpid()
    assert os.getsid(runner.pid) == runner.pid, "runner must lead a session of its own"
    leader = next(p for p in st["pids"] if p["role"] == "leader")
    assert os.getpgid(leader["pid"]) == leader["pid"], "training runs in a process group of its own"
    assert (run.path / "control.sock").stat().st_mode & 0o777 == 0o600
    env = psutil.Process(leader["pid"]).environ()
    assert env["MOECONSOLE_RUN_ID"] == run.id and env["MOECONSOLE_RUN_DIR"] == str(run.path)
    kill = harness.cli("kill", run.id, check=True)
    assert "killed" in kill.stdout
    assert _tree_gone(run)


def test_json_once_prints_one_snapshot(harness):
    run = harness.start(harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "400", "--step_delay", "0.05"]))
    run.wait(lambda s: (s.get("step") or 0) >= 3, what="3 steps")
    out = harness.cli("--json", run.id, "--once", "--no-gpu", check=True)
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1
    snap = json.loads(lines[0])
    assert snap["v"] == 1
    assert snap["run"]["id"] == run.id and snap["run"]["status"] == "running"
    assert snap["run"]["step"] >= 3 and snap["last_metrics"]["step"] >= 3
    assert any(e["type"] == "attempt_start" for e in snap["events"])
    assert [p["role"] for p in snap["run"]["pids"]].count("leader") == 1
    # Streaming: one snapshot per interval, steps moving, until the run ends.
    import subprocess
    stream = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "--json", run.id, "--interval", "0.2",
                               "--no-gpu", "--runs-dir", str(harness.runs_dir)], stdout=subprocess.PIPE, text=True)
    try:
        snaps = [json.loads(stream.stdout.readline()) for _ in range(4)]
        assert snaps[-1]["t"] > snaps[0]["t"] and snaps[-1]["run"]["step"] >= snaps[0]["run"]["step"]
        harness.cli("kill", run.id, check=True)
        rest = [json.loads(l) for l in stream.stdout]  # ends by itself once the run is over
        assert stream.wait(timeout=10) == 0
        assert rest[-1]["run"]["status"] == "killed"
    finally:
        if stream.poll() is None:
            stream.kill()
            stream.wait()


def test_clean_kill_of_a_tree_that_ignores_sigterm_escalates_after_grace(harness, tmp_path):
    script = tmp_path / "stubborn.py"
    script.write_text(textwrap.dedent("""
        import os, signal, subprocess, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kids = [subprocess.Popen([sys.executable, "-c",
                 "import signal, time\\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\\nwhile True: time.sleep(1)"])
                for _ in range(2)]
        print("step: 1  loss: 1.0", flush=True)
        while True:
            time.sleep(1)
    """))
    run = harness.start(harness.recipe(command=["{python}", str(script)], kill={"grace_s": 1.5},
                                       checkpoints={"dir": None}, resume={"arg": None}))
    run.wait(lambda s: len(s.get("pids") or []) >= 3, what="3 tracked processes")
    pids = [p["pid"] for p in run.state()["pids"]]
    t0 = time.time()
    out = harness.cli("kill", run.id, check=True)
    took = time.time() - t0
    assert "killed" in out.stdout
    assert took >= 1.5
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)
    done = run.events("kill_done")[-1]
    assert done["escalated"] is True and done["survivors"] == []
    assert run.state()["status"] == "killed"
    assert not (run.path / "crashes" / "attempt-2.json").exists(), "a user kill is not restarted"


def test_orphans_of_a_killed_launcher_are_found_and_ended(harness, tmp_path):
    # A launcher that puts each worker in a session of its own (as torchrun does), then is SIGKILLed.
    script = tmp_path / "launcher.py"
    script.write_text(textwrap.dedent("""
        import os, subprocess, sys, time
        for _ in range(2):
            subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.2)"],
                             start_new_session=True)
        print("step: 1  loss: 1.0", flush=True)
        while True:
            time.sleep(1)
    """))
    run = harness.start(harness.recipe(command=["{python}", str(script)], checkpoints={"dir": None},
                                       resume={"arg": None}, restart={"max_restarts": 0}))
    st = run.wait(lambda s: len(s.get("pids") or []) >= 3, what="launcher and 2 workers tracked")
    leader = next(p for p in st["pids"] if p["role"] == "leader")["pid"]
    workers = [p["pid"] for p in st["pids"] if p["role"] == "child"]
    assert all(os.getsid(w) == w for w in workers), "workers lead their own sessions"
    os.kill(leader, signal.SIGKILL)
    st = run.wait_status("failed", "paused", timeout=30)
    assert not any(psutil.pid_exists(w) and psutil.Process(w).status() != psutil.STATUS_ZOMBIE for w in workers)
    kill = run.events("kill")[-1]
    assert kill["reason"] == "cleanup" and set(workers) <= set(kill["pids"])
    assert run.crash(1)["class"] == "killed_oom"
    assert _tree_gone(run)


def test_runner_sigkill_then_adoption_keeps_training_and_records(harness):
    run = harness.start(harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "60", "--save_steps", "20",
                                                "--step_delay", "0.05"]))
    st = run.wait(lambda s: (s.get("step") or 0) >= 5, what="5 steps")
    runner_pid = st["runner"]["pid"]
    leader = next(p for p in st["pids"] if p["role"] == "leader")["pid"]
    os.kill(runner_pid, signal.SIGKILL)
    until(lambda: not _running(runner_pid), what="the runner to be gone")
    assert _running(leader), "killing the runner must not take training down"
    out = harness.cli("supervise", run.id, check=True)
    assert "running" in out.stdout
    st = run.wait_status("succeeded", timeout=90)
    assert st["runner"]["pid"] != runner_pid
    assert any(e["type"] == "adopt" for e in run.events())
    steps = [m["step"] for m in run.metrics()]
    assert steps == list(range(1, 61)), "no step lost or written twice across the adoption"
    # The chart book the second runner took over (series.json of the first plus the records
    # after it) covers the whole metrics file, each step once.
    book = json.loads((run.path / "series.json").read_text())
    assert book["metric_count"] == 60 and book["last_metrics"]["step"] == 60
    assert book["metrics_offset"] == (run.path / "metrics.jsonl").stat().st_size


def test_restart_resumes_from_latest_verified_checkpoint(harness):
    run = harness.start(harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "400", "--save_steps", "5",
                                                "--step_delay", "0.05"]))
    run.wait(lambda s: (s.get("last_checkpoint") or {}).get("ok"), what="a verified checkpoint")
    out = harness.cli("restart", run.id, "--now", check=True)
    assert "attempt 2 running" in out.stdout
    st = run.state()
    assert st["resumed_from"] and os.path.basename(st["resumed_from"]).startswith("checkpoint-")
    resumed_step = int(st["resumed_from"].rsplit("-", 1)[1])
    run.wait(lambda s: any(m["attempt"] == 2 for m in run.metrics()), what="attempt 2 steps")
    first2 = next(m for m in run.metrics() if m["attempt"] == 2)
    assert first2["step"] == resumed_step + 1
    assert not (run.path / "crashes" / "attempt-1.json").exists(), "a requested restart is not a crash"
    harness.cli("kill", run.id, check=True)
    assert _tree_gone(run)


def test_megatron_log_records_include_memory_reports(harness, tmp_path):
    script = tmp_path / "megatron_like.py"
    script.write_text(textwrap.dedent("""
        import time
        for i in range(1, 4):
            print(f" [2026-01-02 03:04:0{i}.000001] iteration {i:8d}/{3:8d} | consumed samples: {64*i:12d} |"
                  f" elapsed time per iteration (ms): 1834.6 | learning rate: 3.000000E-05 |"
                  f" global batch size:    64 | lm loss: {3.0 - i * 0.1:.6E} | loss scale: 1.0 |"
                  f" grad norm: 0.877 | number of skipped iterations:   0 | number of nan iterations:   0 |",
                  flush=True)
            if i == 1:
                for r in (0, 4):
                    print(f"[Rank {r}] (after 1 iterations) memory (MB) | allocated: 20480.00 | "
                          f"max allocated: 57344.00 | reserved: 61440.00 | max reserved: {61440 + r * 1024:.2f}",
                          flush=True)
            if i == 2:   # megatron/training/training.py evaluate_and_print_results
                string = " validation loss at iteration 2 | "
                string += "{} value: {:.6E} | ".format("lm loss", 2.5) + "{} PPL: {:.6E} | ".format("lm loss", 12.18)
                print("-" * (len(string) + 1)); print(string); print("-" * (len(string) + 1), flush=True)
            time.sleep(0.05)
    """))
    run = harness.start(harness.recipe(command=["{python}", str(script)], checkpoints={"dir": None},
                                       resume={"arg": None}))
    run.wait_status("succeeded", timeout=60)
    recs = run.metrics()
    steps = [(m["step"], m["src"]) for m in recs]
    assert [s for s, src in steps if src == "megatron"] == [1, 2, 3]
    mem = [m for m in recs if m["src"] == "megatron_mem"]
    assert [(m["step"], m["extra"]["rank"], round(m["mem_gib"], 2)) for m in mem] == [(1, 0, 60.0), (1, 4, 64.0)]
    assert run.state()["max_steps"] == 3 and abs(run.state()["last_loss"] - 2.7) < 1e-9
    # the validation result is an evaluation of its own, never a training step
    assert all(m["loss"] != 2.5 for m in recs)
    (ev,) = [json.loads(line) for line in (run.path / "evals.jsonl").read_text().splitlines()]
    assert (ev["step"], ev["split"], ev["loss"], ev["attempt"]) == (2, "validation", 2.5, 1)
    snap = json.loads(harness.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    assert snap["eval"]["count"] == 1 and snap["eval"]["loss"] == [[2, 2.5]]
    assert snap["eval"]["last"]["split"] == "validation"


def test_restart_of_a_finished_run_starts_a_new_runner_and_resumes(harness):
    faults = [f"oom@6#{a}" for a in (1, 2)]
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps", "10",
           "--save_steps", "4"]
    for f in faults:
        cmd += ["--fault", f]
    run = harness.start(harness.recipe(command=cmd, restart={"max_restarts": 1}))
    st = run.wait_status("failed", "succeeded", timeout=90)
    assert st["status"] == "failed" and st["attempt"] == 2
    old_runner = st["runner"]["pid"]
    out = harness.cli("restart", run.id, check=True)
    assert "attempt 3 running" in out.stdout
    st = run.wait_status("succeeded", "failed", timeout=90)
    assert st["status"] == "succeeded" and st["runner"]["pid"] != old_runner
    assert run.events("attempt_start")[-1]["resumed_from"].endswith("checkpoint-4")


def test_runner_killed_during_cooldown_is_replaced_and_the_restart_happens(harness):
    run = harness.start(harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "10", "--save_steps", "4",
                                                "--fault", "oom@6"],
                                       cooldown={"floor_s": 3.0, "ceiling_s": 10.0}))
    st = run.wait(
        lambda s: s.get("status") == "cooldown" and s.get("attempt") == 1, timeout=60, what="cooldown after crash")
    os.kill(st["runner"]["pid"], signal.SIGKILL)
    out = harness.cli("supervise", run.id, check=True)
    assert "cooldown" in out.stdout
    st = run.wait_status("succeeded", "failed", timeout=90)
    assert st["status"] == "succeeded" and st["attempt"] == 2
    assert _tree_gone(run)


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
def test_missing_python_module_fails_once_with_a_hint_instead_of_three_restarts(harness, tmp_path):
    """A training whose Python lacks a module cannot heal by itself: one attempt, a class of its
    own, a hint naming the module and the interpreter, and no restart."""
    script = tmp_path / "train_needs_module.py"
    script.write_text("print('step 0: loading', flush=True)\nimport moeconsole_absent_module_xyz\n")
    run = harness.start(harness.recipe(command=["{python}", str(script)], checkpoints={"dir": None},
                                       resume={"arg": None}))
    st = run.wait_status("failed", timeout=60)
    assert st["attempt"] == 1 and st.get("restarts", 0) == 0
    crash = run.crash(1)
    assert crash["class"] == "missing_dependency" and crash["retryable"] is False
    assert "moeconsole_absent_module_xyz" in crash["summary"]
    assert sys.executable in crash["hint"] and "pip install moeconsole_absent_module_xyz" in crash["hint"]
