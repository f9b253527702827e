"""What ``moeconsole kill`` says when the run has not ended by its ``--timeout``: the status as the
console names it and the time it waited, on the monotonic clock (it had printed "still None after
120s": the raw value of a state.json that named no status at that moment, and the timeout allowed
rather than the time waited). A real runner, a real training that ignores SIGTERM (the kill waits
out its grace), a state.json the runner cannot replace for a while (a directory in its place)."""
from __future__ import annotations

import re
import shutil

import pytest

from tests.runner.conftest import NO_SAVES, Harness

STUBBORN = ["{python}", "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                              "print(\"{'loss': '1.0', 'global_step/max_steps': '1/100'}\", flush=True)\n"
                              "time.sleep(600)\n"]


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def _waited(out: str, run_id: str) -> tuple[str, float, str]:
    """The word, the seconds and the rest of ``RUN: still WORD after N.Ns...``."""
    m = re.fullmatch(rf"{re.escape(run_id)}: still (.+?) after (\d+\.\d)s(.*)", out.strip())
    assert m, out
    return m.group(1), float(m.group(2)), m.group(3)


def test_kill_past_its_timeout_names_the_status_and_the_time_it_waited(harness):
    run = harness.start(harness.recipe(command=STUBBORN, kill={"grace_s": 20}, **NO_SAVES))
    run.wait(lambda s: s.get("status") == "running" and s.get("step") == 1, what="the first step")

    first = harness.cli("kill", run.id, "--timeout", "1.05")
    assert first.returncode == 1, first.stdout + first.stderr
    word, took, rest = _waited(first.stdout, run.id)
    assert word == "STOPPING" and took >= 1.0 and rest == "", first.stdout
    assert "None" not in first.stdout + first.stderr

    # state.json cannot be read (nor replaced) for a while: the word is the last status seen
    state = run.path / "state.json"
    state.unlink()
    state.mkdir()
    try:
        second = harness.cli("kill", run.id, "--timeout", "1.05")
    finally:
        shutil.rmtree(state)
    assert second.returncode == 1, second.stdout + second.stderr
    word, took, rest = _waited(second.stdout, run.id)
    # the status as ``restart`` says it too (``snapshot.status_said``): the word, then why the file says none
    # (the runner's answer says too that it cannot write state.json once it tried: "STOPPING (run directory not
    # writable: Is a directory (...)) (state.json: ...)", as it happens on a loaded machine)
    assert word.startswith("STOPPING (") and "(state.json: " in word and took >= 1.0 \
        and rest == "", second.stdout
    assert "None" not in second.stdout + second.stderr, second.stderr
    run.wait_status("killed", timeout=120)
