"""Soak: one run through 50 injected crashes of mixed classes with tiny cooldowns."""
from __future__ import annotations

import collections
import json
import subprocess
import sys

import psutil

from moeconsole.runner.process.proctree import marked_processes

KINDS = ["oom", "segv", "sigkill", "nccl", "cuda_fault"]
CRASHES = 50


def test_fifty_crashes_lose_no_step_leave_nothing_and_keep_runner_flat(harness):
    # Attempt k crashes at step k+1; a checkpoint every step, so every attempt makes progress.
    faults = [f"{KINDS[(k - 1) % len(KINDS)]}@{k + 1}#{k}" for k in range(1, CRASHES + 1)]
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
           "--max_steps", str(CRASHES + 4), "--save_steps", "1"]
    for f in faults:
        cmd += ["--fault", f]
    run = harness.start(harness.recipe(command=cmd, restart={"max_restarts": CRASHES + 1,
                                                             "max_crashes_per_window": CRASHES + 1}))
    runner = psutil.Process(run.wait_status("running")["runner"]["pid"])
    rss = {}
    st = run.wait(lambda s: s.get("attempt", 0) >= 10, timeout=240, what="attempt 10")
    rss["early"] = runner.memory_info().rss
    run.wait(lambda s: s.get("attempt", 0) >= CRASHES - 5, timeout=480, what=f"attempt {CRASHES - 5}")
    rss["late"] = runner.memory_info().rss
    st = run.wait_status("succeeded", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded", st.get("pause_reason")
    assert st["attempt"] == CRASHES + 1
    classes = collections.Counter(run.crash(a)["class"] for a in range(1, CRASHES + 1))
    assert classes == {"cuda_oom": 10, "segfault": 10, "killed_oom": 10, "nccl_error": 10, "cuda_fault": 10}
    metrics = run.metrics()
    by_attempt = collections.defaultdict(list)
    for m in metrics:
        by_attempt[m["attempt"]].append(m["step"])
    for attempt, steps in by_attempt.items():
        assert steps == sorted(set(steps)), f"attempt {attempt} has duplicated or reordered steps"
    # None lost: every step line the trainer wrote is a record (an independent parse of the log).
    parsed = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", str(run.path / "train.log"), "--json"],
                            capture_output=True, text=True, check=True)
    logged = [json.loads(l)["step"] for l in parsed.stdout.splitlines()]
    assert len(logged) == len(metrics) and logged == [m["step"] for m in metrics]
    assert not marked_processes(run.id)
    assert rss["late"] - rss["early"] < 15 * 1024 * 1024, rss
