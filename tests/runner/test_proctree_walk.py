"""The runner's walk of an attempt's tree against the kernel's races (real processes, a real /proc):
a process of the tree that forks and ends while the walk reads the table, and orphans reaped with
their session and group."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

# A subreaper (as the runner is) with a tracked middle process; the first read of the process table
# is held until the middle process has forked a child and become a zombie, so that child, now the
# subreaper's, is in no table read so far. Prints the tree's PIDs after ``refresh`` and the child's.
_STRADDLE = r"""
import json, os, sys, time
from moeconsole.runner.process import proctree
proctree.REFRESH_WALKS = int(sys.argv[1])
proctree.set_child_subreaper()
go_r, go_w = os.pipe()
pid_r, pid_w = os.pipe()
mid = os.fork()
if mid == 0:
    os.read(go_r, 1)
    child = os.fork()
    if child == 0:
        time.sleep(120)
        os._exit(0)
    os.write(pid_w, str(child).encode())
    os._exit(0)
tree = proctree.ProcessTree("straddle")
tree.set_leader(mid)
real, reads = proctree.process_table, []
def held_table():
    table = real()
    if not reads:
        os.write(go_w, b"x")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proctree.read_stat(mid)[1][0] != b"Z":
            time.sleep(0.002)
    reads.append(len(table))
    return table
proctree.process_table = held_table
tree.refresh()
child = int(os.read(pid_r, 32))
print(json.dumps({"tracked": sorted(tree.procs), "child": child, "mid": mid, "reads": len(reads)}), flush=True)
os.kill(child, 9)
proctree.reap_children_in_groups()
"""


def _straddle(walks: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _STRADDLE, str(walks)], capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_process_that_forks_and_ends_during_the_walk_leaves_its_child_tracked():
    """The walk read the table; the middle process then forked the training and ended; the walk
    dropped it as ended and the training was in no table it had read: the tree looked ended with
    its training alive (a run judged `succeeded`). A walk that drops a process walks again."""
    got = _straddle(8)
    assert got["child"] in got["tracked"] and got["mid"] not in got["tracked"], got
    assert got["reads"] == 2, got
    one = _straddle(1)  # one walk, as before: the child is lost
    assert one["child"] not in one["tracked"], one


# A subreaper whose child makes a session and forks a grandchild that ends with exit 3 after its
# parent has ended: the grandchild comes back to the subreaper an orphan whose parent is gone.
_ORPHAN = r"""
import json, os, time
from moeconsole.runner.process import proctree
proctree.set_child_subreaper()
mid = os.fork()
if mid == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(0.2)
        os._exit(3)
    os._exit(0)
deadline, got = time.monotonic() + 60, {}
while time.monotonic() < deadline and len(got) < 2:
    got.update(proctree.reap_children_in_groups())
    time.sleep(0.01)
print(json.dumps({"mid": mid, "reaped": {str(p): list(c) for p, c in got.items()}}), flush=True)
"""


def test_an_orphan_is_reaped_with_the_session_its_maker_made():
    out = subprocess.run([sys.executable, "-c", _ORPHAN], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    mid, reaped = got["mid"], got["reaped"]
    orphan = next(int(p) for p in reaped if int(p) != mid)
    status, session, group = reaped[str(orphan)]
    assert (status >> 8, session, group) == (3, mid, mid), got
