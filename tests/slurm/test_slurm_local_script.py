"""``scripts/slurm-local.sh`` lives beside the machine's own services: its MariaDB is its own (data,
socket and port under ``$SLURM_LOCAL_DIR``), and a MariaDB the machine already runs, with a
``slurm`` user of another password as on any host with Slurm accounting, is never connected to,
changed or stopped, neither by ``start`` nor by ``stop``.

The neighbour sits where Debian's MariaDB does (``/run/mysqld/mysqld.sock``): CI starts one there
before the cluster (.ci/run, which says so in MOECONSOLE_CI_NEIGHBOUR_DB); where none runs, this
test starts one on a data directory of its own and ends it; a MariaDB of the machine's own is never
touched (the test skips). The cluster is stopped and started again around it (as it was: same node count)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.runner.conftest import REPO
from tests.slurm.test_slurm_cluster import _cluster_up
from tests.waiting import reached, until

SCRIPT = REPO / "scripts" / "slurm-local.sh"
DEFAULT_SOCK = Path("/run/mysqld/mysqld.sock")
LOCAL_DIR = Path(os.environ.get("SLURM_LOCAL_DIR", "/tmp/moeconsole-slurm"))
PASSWORD = "the-neighbours-own"

pytestmark = pytest.mark.skipif(_cluster_up() is not None or os.geteuid() != 0 or not shutil.which("mariadbd"),
                                reason=f"needs root, MariaDB and the local Slurm cluster: {_cluster_up()}")


def _sql(sql: str, *, user: str = "root", password: str | None = None) -> subprocess.CompletedProcess:
    argv = ["mariadb", "--no-defaults", f"--socket={DEFAULT_SOCK}", "-u", user, "-N", "-e", sql]
    if password is not None:
        argv.insert(3, f"--password={password}")
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


@pytest.fixture
def neighbour(tmp_path):
    """The machine's own MariaDB on the default socket: CI's, else one of this test's."""
    started = None
    answers = _sql("SELECT 1").returncode == 0
    if answers and not os.environ.get("MOECONSOLE_CI_NEIGHBOUR_DB"):
        pytest.skip("the machine's own MariaDB answers on the default socket: it is never touched by tests "
                    "(CI starts a neighbour of its own and says so in MOECONSOLE_CI_NEIGHBOUR_DB)")
    if not answers:
        if DEFAULT_SOCK.exists():
            pytest.skip(f"{DEFAULT_SOCK} exists but does not answer root")
        # the server runs as mysql: its directory must be reachable by it (pytest's tmp_path is
        # under a 0700 directory of root's)
        own = Path(tempfile.mkdtemp(prefix="moeconsole-neighbour-"))
        own.chmod(0o755)
        data = own / "data"
        data.mkdir()
        shutil.chown(data, "mysql", "mysql")
        DEFAULT_SOCK.parent.mkdir(exist_ok=True)
        shutil.chown(DEFAULT_SOCK.parent, "mysql", "mysql")
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=mysql"],
                       check=True, capture_output=True, timeout=120)
        started = subprocess.Popen(["mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={DEFAULT_SOCK}",
                                    "--skip-networking", "--user=mysql", f"--pid-file={data}/n.pid"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        until(lambda: _sql("SELECT 1").returncode == 0, timeout=60, what="the neighbour MariaDB")
    assert _sql(f"CREATE OR REPLACE USER 'slurm'@'localhost' IDENTIFIED BY '{PASSWORD}'").returncode == 0
    pid = int(_sql("SELECT @@pid_file").stdout.strip() and Path(_sql("SELECT @@pid_file").stdout.strip())
              .read_text().strip() or 0)
    yield pid
    if started is not None:
        started.terminate()
        try:
            started.wait(60)
        except subprocess.TimeoutExpired:
            started.kill()
            started.wait(10)
        shutil.rmtree(own, ignore_errors=True)


def _nodes_made() -> int:
    try:
        return int((LOCAL_DIR / "run" / "nodes").read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def test_the_cluster_starts_and_stops_beside_a_neighbour_mariadb_and_leaves_it_untouched(neighbour):
    nodes = _nodes_made()
    start = ["start", "--nodes", str(nodes)] if nodes else ["start"]
    stopped = subprocess.run([str(SCRIPT), "stop"], capture_output=True, text=True, timeout=180)
    assert stopped.returncode == 0, stopped.stderr
    assert reached(lambda: os.path.exists(f"/proc/{neighbour}"), timeout=5), "stop ended the neighbour MariaDB"
    # Another service holds the port the script would try first: the script takes the next free one.
    # SO_REUSEADDR as any server sets it: the cluster's own database just stopped on this port and
    # its closed connections sit in TIME_WAIT for a minute, which a plain bind refuses.
    holder = socket.socket()
    up = None
    try:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("127.0.0.1", 3417))
        holder.listen(1)
        up = subprocess.run([str(SCRIPT), *start], capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stderr
        port = int((LOCAL_DIR / "run" / "db.port").read_text())
        assert port != 3417, "the script's MariaDB was given a port another service holds"
        assert holder.fileno() != -1 and holder.getsockname() == ("127.0.0.1", 3417)
    finally:
        holder.close()
        if up is None or up.returncode != 0:  # the tests after this one need the cluster back as it was
            subprocess.run([str(SCRIPT), "stop"], capture_output=True, timeout=180)
            subprocess.run([str(SCRIPT), *start], capture_output=True, timeout=300)
    # The neighbour: same process, its slurm user with its own password, untouched.
    assert os.path.exists(f"/proc/{neighbour}")
    assert _sql("SELECT 1", user="slurm", password=PASSWORD).returncode == 0, "the neighbour's slurm user changed"
    assert "slurm_acct_db" not in _sql("SHOW DATABASES").stdout, "the cluster wrote into the neighbour"
    # The cluster's accounting works, on the script's own server.
    dbd = (Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")).parent / "slurmdbd.conf").read_text()
    assert f"StoragePort={port}" in dbd
    assert (LOCAL_DIR / "run" / "mysqld.sock").exists()
    assert subprocess.run(["sacctmgr", "-n", "list", "cluster"], capture_output=True, timeout=60).returncode == 0
