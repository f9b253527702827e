"""Review R50, finding 1, for real: `run` from a shell with `ulimit -v` (RLIMIT_AS) of 2 GiB; a plain
local training holding a sliver of it asks one thing larger than the rest, and the refusal names
no size (``mmap.mmap`` and ``np.memmap``'s ``OSError: [Errno 12] Cannot allocate memory``, ``bytearray``'s
and ``pickle.load``'s bare ``MemoryError``). Round 18 read it ``unknown``: restarted 2-3 times, then
FAILED "no step progress" without naming the limit. It is the limit's: ``environment_error``, FAILED
after one attempt, its reason naming the limit. (The other way, a client whose work runs elsewhere:
``test_runner_world18``'s relay named `ssh`.)"""
from __future__ import annotations

import textwrap

import pytest

from tests.runner.test_runner_world13 import _cli
from tests.runner.test_runner_world15 import started_under

# the training's steps, then one request larger than the rest of its 2 GiB limit, each as a real one makes
# it (its files in the test's directory: argv[1])
REFUSALS = {
    "mmap": "import mmap\nbig = mmap.mmap(-1, 3 << 30)",                         # OSError: [Errno 12]
    "np.memmap": ("import numpy as np, os, sys\np = os.path.join(sys.argv[1], 'shard.bin')\n"
                  "open(p, 'wb').truncate(3 << 30)\nbig = np.memmap(p, dtype='uint8', mode='r')"),
    "bytearray": "big = bytearray(3 << 30)",                                      # MemoryError
    # a pickle whose BINBYTES8 says 3 GiB (a saved state's big tensor): the read of it is refused
    "pickle": ("import os, pickle, struct, sys\np = os.path.join(sys.argv[1], 'state.pkl')\n"
               "open(p, 'wb').write(b'\\x80\\x04\\x8e' + struct.pack('<Q', 3 << 30) + b'x' * 100)\n"
               "state = pickle.load(open(p, 'rb'))"),                              # MemoryError
}


@pytest.mark.parametrize("how", sorted(REFUSALS))
def test_a_sizeless_refusal_at_the_shells_limit_of_a_plain_local_training_fails_naming_it(harness, tmp_path, how):
    import resource

    if how == "np.memmap":
        pytest.importorskip("numpy")
    cmd = ["{python}", "-c", textwrap.dedent("""
        for i in range(1, 4):
            print('{"step": %d, "loss": 0.5}' % i, flush=True)
    """) + REFUSALS[how] + "\nprint('{\"step\": 4, \"loss\": 0.4}', flush=True)\n", str(tmp_path)]
    recipe = harness.recipe(command=cmd, restart={"max_restarts": 3})

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    run = started_under(harness, recipe, low)
    st = run.wait_status("failed", "succeeded", "killed", "unsaved", "paused", timeout=240)
    log = (run.path / "train.log").read_text()
    assert "Cannot allocate memory" in log or "MemoryError" in log, log[-2000:]
    assert st["status"] == "failed" and st["attempt"] == 1, (st, run.events("crash"))
    assert st["last_crash"]["class"] == "environment_error", st["last_crash"]
    assert "address-space limit (ulimit -v or -d) of 2.0 GB" in st["last_crash"]["summary"], st["last_crash"]
    assert "ulimit -v" in (st.get("pause_reason") or ""), st
    assert "ulimit -v" in _cli("runs", "show", run.id, runs_dir=harness.runs_dir).stdout.decode()
