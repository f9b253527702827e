"""``run --detach`` tells a script the truth about the start: a run that already failed exits 1
with the reason, even when it failed a moment after its first attempt was launched."""
from __future__ import annotations

import sys

from moeconsole.console.format import run_words


def test_a_run_that_fails_just_after_launch_exits_1_with_the_reason(harness):
    # A command that runs a moment, then fails; no restarts left: the run is FAILED within the window.
    recipe = harness.recipe(command=[sys.executable, "-c", "import sys, time; time.sleep(0.5); "
                                     "print('fatal: bad dataset path', flush=True); sys.exit(3)"],
                            restart={"max_restarts": 0})
    proc = harness.cli("run", str(recipe), "--detach")
    assert proc.returncode == 1, proc.stderr
    run_id = proc.stdout.strip()
    assert run_id and f"run {run_id} ended FAILED" in proc.stderr, proc.stderr
    assert "started under a detached runner" not in proc.stderr
    # the next step, on a line of its own: the restart, for the run's short id (newcomer round 5)
    from moeconsole.runner.rundir.rundir import command_ref
    ref = command_ref(harness.runs_dir, run_id)[1]
    assert f"once the crash is fixed, `moeconsole restart {ref}` will start attempt 2 from step 0" in proc.stderr, \
        proc.stderr


def test_a_killed_run_ends_on_the_command_that_starts_it_again(tmp_path):
    """`make demo`, k, y, q: the terminal had said "ended KILLED: killed" and nothing more."""
    from moeconsole.console.commands.run import ended_line
    line = ended_line("20261201-112239-tiny-moe-cpu-743b", {"status": "killed", "attempt": 1}, tmp_path)
    assert line.splitlines()[0] == "run 20261201-112239-tiny-moe-cpu-743b ended KILLED", line
    assert line.splitlines()[1].startswith(f"`moeconsole restart 20261201-112239-tiny-moe-cpu-743b --runs-dir {tmp_path}`"), line


def test_a_bad_demo_fault_step_is_a_failed_start(harness):
    # docs/demo.md: a stub fault on a step that saves nothing is refused by the trainer (exit 2,
    # config_error), which the runner does not restart.
    recipe = harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                                     "--max_steps", "12", "--save_steps", "4", "--fault", "stub@3"])
    proc = harness.cli("run", str(recipe), "--detach")
    assert proc.returncode == 1, proc.stderr
    assert "ended FAILED" in proc.stderr and "config_error" in proc.stderr
    assert "no checkpoint is saved at step 3" in proc.stderr, proc.stderr


def test_a_run_that_crashes_and_recovers_says_so_and_exits_0(harness, tmp_path):
    # The first attempt fails at once; the second (a marker file exists) trains: the run goes on.
    marker = tmp_path / "second"
    recipe = harness.recipe(command=[sys.executable, "-c",
                                     "import os, sys, time\n"
                                     f"m = {str(marker)!r}\n"
                                     "if not os.path.exists(m):\n"
                                     "    open(m, 'w').close(); time.sleep(0.3); sys.exit(3)\n"
                                     "time.sleep(60)\n"])
    proc = harness.cli("run", str(recipe), "--detach")
    run_id = proc.stdout.strip()
    try:
        assert proc.returncode == 0, proc.stderr
        from moeconsole.runner.rundir import rundir
        short = rundir.short_ref(harness.runs_dir, run_id)
        assert f"{run_words(short, run_id)} started, but attempt 1 already crashed" in proc.stderr, proc.stderr
        assert "the runner recovers it" in proc.stderr
    finally:
        harness.cli("kill", run_id)


def test_a_detached_start_names_the_commands_that_watch_and_stop_it(harness):
    """`demo --detach` said where the run's directory is, but not how to see it: the line names
    `attach` and `kill` for the run. It held the whole id three times (and the directory), one line
    of 250 columns that wrapped mid-id at 80: now the run's short id, named as such, once, and each
    line fits 80 columns; the whole id is on stdout (a script's)."""
    harness.cli("run", str(harness.recipe(command=[sys.executable, "-c", "pass"])), "--detach")  # an older run
    recipe = harness.recipe(command=[sys.executable, "-c", "import time; print('step 1', flush=True); time.sleep(60)"])
    proc = harness.cli("run", str(recipe), "--detach")
    run_id = proc.stdout.strip()
    try:
        assert proc.returncode == 0 and run_id, proc.stderr
        from moeconsole.runner.rundir import rundir
        short = rundir.short_ref(harness.runs_dir, run_id)
        where = f" --runs-dir {harness.runs_dir}"   # not the default runs directory: the commands name it
        assert proc.stderr.splitlines() == [
            f"{run_words(short, run_id)} started under a detached runner:",
            # with the directory the two commands are too long for one line: each on its own, whole
            f"`moeconsole attach {short}{where}` watches it,", f"`moeconsole kill {short}{where}` stops it"], proc.stderr
        assert all(len(line.replace(where, "")) <= 80 for line in proc.stderr.splitlines())
        attached = harness.cli("--json", short, "--once")   # the short id finds the run
        assert attached.returncode == 0 and run_id in attached.stdout, attached.stderr
    finally:
        harness.cli("kill", run_id)
