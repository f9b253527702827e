"""Review R58: a real local refusal under `ulimit -v` is named the limit's whatever the interpreter prints
of the program (Python 3.8's relative frame, a zipapp's `app.pyz/__main__.py`); a UTF-8 command word under
an ASCII locale is refused in one line; the tree forgets the programs of processes that ended. Real CLI,
real detached runner, real processes."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
import zipapp
from pathlib import Path

import pytest

from tests.runner.test_runner_world12 import ASCII_LOCALE, ONE_ATTEMPT
from tests.runner.test_runner_world15 import started_under
from tests.waiting import until

# pyenv's 3.8 (Ubuntu 20.04's system Python; torch supported it up to 2.4) prints the script as typed
PY38 = next((p for p in (os.path.expanduser("~/.pyenv/versions/3.8.18/bin/python3.8"), "/usr/bin/python3.8")
             if os.access(p, os.X_OK)), None)

TRAIN = textwrap.dedent("""
    import time
    for i in range(1, 4):
        print('{"step": %d, "loss": 0.5}' % i, flush=True)
        time.sleep(1)   # the runner walks its tree every 0.5 s: it reads this process's program
    big = bytearray(8 << 30)
""")


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))


def _refused_here(harness, command, workdir: Path) -> dict:
    recipe = harness.recipe(command=command, workdir=str(workdir), **ONE_ATTEMPT)
    run = started_under(harness, recipe, _limited)
    st = run.wait_status("failed", "succeeded", "killed", "unsaved", "paused", timeout=180)
    assert "MemoryError" in (run.path / "train.log").read_text()
    return st["last_crash"]


@pytest.mark.skipif(PY38 is None, reason="no Python 3.8 here")
def test_python_3_8s_local_refusal_under_the_limit_is_the_limits(harness, tmp_path):
    """`run -- python3.8 train8.py` under `ulimit -Sv 4G`, `bytearray(8 GiB)` after 3 steps: 3.8 prints
    `File "train8.py"`, relative. Before: `unknown`, restarted, "no process of the attempt here ran the
    program that raised it (train8.py): its work ran elsewhere". Now the limit's, as before round 20."""
    (tmp_path / "train8.py").write_text(TRAIN)
    crash = _refused_here(harness, [PY38, "train8.py"], tmp_path)
    assert crash["class"] == "environment_error" and "4.0 GB" in crash["summary"], crash
    assert "elsewhere" not in crash["summary"], crash


def test_a_zipapps_local_refusal_under_the_limit_is_the_limits(harness, tmp_path):
    """`run -- python app.pyz` (zipapp; shiv and PEX likewise): its frames are `.../app.pyz/__main__.py`.
    Before: `unknown`/restart "...ran the program that raised it (.../app.pyz/__main__.py)"."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "__main__.py").write_text(TRAIN)
    zipapp.create_archive(src, tmp_path / "app.pyz")
    crash = _refused_here(harness, ["{python}", "app.pyz"], tmp_path)
    assert crash["class"] == "environment_error" and "4.0 GB" in crash["summary"], crash


def test_a_utf8_command_word_under_an_ascii_locale_is_refused_naming_the_setting(tmp_path):
    """`LC_ALL=C PYTHONUTF8=0 run -- python t.py café`: the word reached the runner decoded, and exec could
    not encode it (the runner died in `subprocess._fork_exec`, the run left in cooldown, runner gone).
    Now one line naming the setting to change, exit 2, no run made."""
    from tests.runner.conftest import REPO
    runs = tmp_path / "runs"
    (tmp_path / "t.py").write_text("print('{\"step\": 1, \"loss\": 0.5}')\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO), **ASCII_LOCALE}
    out = subprocess.run([sys.executable.encode(), b"-m", b"moeconsole.console.cli", b"run", b"--detach",
                          b"--runs-dir", str(runs).encode(), b"--", sys.executable.encode(),
                          str(tmp_path / "t.py").encode(), "café".encode()],
                         capture_output=True, env=env, cwd=tmp_path, timeout=120)
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "PYTHONUTF8=1" in err and "command's word 2" in err and "not UTF-8" not in err, err
    assert not runs.exists() or not [p for p in runs.iterdir() if p.is_dir()], list(runs.iterdir())


def test_the_tree_forgets_the_programs_of_processes_that_ended(tmp_path):
    """A long attempt forking short Python helpers: what each walk read of a process is kept only while it
    lives (before: an entry per process ID it ever had, up to pid_max), and the programs stay known."""
    from moeconsole.runner.process import proctree
    helper = tmp_path / "helper.py"
    helper.write_text("import time; time.sleep(0.3)\n")
    leader = subprocess.Popen([sys.executable, "-c", "import subprocess, sys\n"
                               "while True: subprocess.run([sys.executable, sys.argv[1]])", str(helper)])
    try:
        tree = proctree.ProcessTree("prune")
        tree.set_leader(leader.pid)
        seen: set[int] = set()

        def walk() -> bool:
            tree.refresh()
            seen.update(tree.procs)
            assert set(tree._programs_read) <= set(tree.procs), (sorted(tree._programs_read), sorted(tree.procs))
            return len(seen) >= 6
        until(walk, 120, what="five helpers seen by the walks")
        assert str(helper) in (tree.programs_run() or {}), tree.programs_run()
    finally:
        leader.kill()
        leader.wait()
