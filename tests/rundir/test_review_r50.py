"""Review R50, finding 2: under the user's `sqlite3` shell holding a transaction on the runs index,
`runs ls` waited ``store.INDEX_BUSY_S`` (1 s) for every row it offered the index: each run directory
the index lacked, each live row refreshed, each recipe's values kept for runs sharing a name (9 runs
the index lacked: 9.2 s). A listing now waits for another's lock once at most, and lists every run.

The bound asserted is generous (10 s for 24 runs, where each row's own wait made it at least 24 s
before): the machine is shared, and the old cost grows with the runs, the new one does not."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from moeconsole.runner.rundir import store

HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")          # the user's `sqlite3 index.sqlite` shell, a transaction left open
print("held", flush=True)
time.sleep(600)
"""
N = 24


def make_run(base, i: int, status: str, name: str) -> None:
    d = base / f"20261201-1200{i:02d}-demo-{i:04x}"
    d.mkdir(mode=0o700)
    make_state(base, i, status, name)
    (d / "recipe.yaml").write_text(f"name: {name}\ncommand: [python, train.py, --lr, '{i}']\n")


def make_state(base, i: int, status: str, name: str) -> None:
    d = base / f"20261201-1200{i:02d}-demo-{i:04x}"
    (d / "state.json").write_text(json.dumps({"name": name, "status": status, "started_at": time.time() - 100 + i,
                                              "attempt": 1, "ended_at": time.time() - 50}))


@pytest.mark.parametrize("how", ["unindexed", "ended", "shared name"])
def test_a_listing_under_the_users_open_transaction_waits_once_not_once_per_run(tmp_path, how):
    """``unindexed``: runs made since the index was last written; ``ended``: indexed RUNNING, ended
    since (their runners' rows not written: the lock), so each live row read changed; ``shared
    name``: runs of one name, their recipe values not yet kept in the index."""
    base = tmp_path / "runs"
    base.mkdir(mode=0o700)
    make_run(base, 0, "succeeded", "demo")
    assert len(store.listing(base)[0]) == 1   # the index made, holding run 0
    shared_name = how == "shared name"
    for i in range(1, N):
        make_run(base, i, "running" if how == "ended" else "failed", "demo" if shared_name else f"demo{i}")
    if how != "unindexed":   # every row in the index
        store.rebuild(base)
    if how == "ended":
        for i in range(1, N):
            make_state(base, i, "failed", f"demo{i}")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(base / store.INDEX_NAME)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        rows, _ = store.listing(base)
        took = time.monotonic() - t0
        assert len(rows) == N, [r["id"] for r in rows]
        assert took < 10, f"runs ls under the user's transaction took {took:.1f} s for {N} runs"
        if shared_name:   # the values that tell runs of one name apart are shown all the same
            assert len({r["display_name"] for r in rows}) == N, [r["display_name"] for r in rows]
    finally:
        holder.kill()
        holder.wait()
    # the lock gone, the next listing writes what the last could not
    assert len(store.listing(base)[0]) == N
    conn = store.connect(base)
    try:
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == N
    finally:
        conn.close()
