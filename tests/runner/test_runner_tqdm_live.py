"""A training loop under a tqdm bar, supervised: its steps show while the bar runs (tqdm writes
no newline until the bar closes; the run showed step — for the whole loop), and the run's last
step is recorded when the attempt ends (a finished 40-step run showed 39/40)."""
from __future__ import annotations

import sys

from tests.runner.test_runner_bare_command import cli
from tests.runner.conftest import Run
from tests.waiting import until

TQDM = """\
import os, sys, time
N = 20
def draw(step):
    loss = 2.0 / (1 + step * 0.1)
    sys.stderr.write(f"\\rtrain: {100*step//N:3d}%|{'#'*(step*10//N):10s}| {step}/{N} "
                     f"[00:{step:02d}<00:10, 2.00it/s, loss={loss:.3f}]")
    sys.stderr.flush()
print("starting", flush=True)
for step in range(1, 11):
    draw(step)
while not os.path.exists("go"):     # the bar stays open, no newline written, until the test says go
    time.sleep(0.05)
for step in range(11, N + 1):
    draw(step)
sys.stderr.write("\\n")
"""


def test_a_tqdm_loops_steps_show_while_its_bar_runs_and_its_last_step_at_the_end(tmp_path):
    (tmp_path / "loop.py").write_text(TQDM)
    runs = tmp_path / "runs"
    proc = cli(runs, tmp_path, "run", "--detach", "--set", "restart.max_restarts=0", "--", sys.executable, "loop.py")
    assert proc.returncode == 0, proc.stderr
    run = Run(runs / proc.stdout.strip().splitlines()[0])
    try:
        # steps 1..8 are records while the bar is open: redraw 10 is the one on screen (read with
        # its line), 9 the count whose record waits for the next count (its values may change)
        run.wait(lambda s: (s.get("step") or 0) >= 8, timeout=90, what="step 8 while the bar is open")
        log = (run.path / "train.log").read_bytes()
        assert not log[log.index(b"train:"):].count(b"\n"), "the bar wrote no newline yet"
    finally:
        (tmp_path / "go").write_text("")
    state = run.wait_status("succeeded", "unsaved", timeout=90)
    assert state["step"] == 20, state
    until(lambda: run.metrics() and run.metrics()[-1]["step"] == 20, timeout=30, what="step 20 in metrics.jsonl")
