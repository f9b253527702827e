"""CI cannot skip silently: a skip of an environment CI installed is turned into a failure."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO, skip_is_required


def test_which_skips_are_required():
    req = {"slurm", "tmux", "swift"}
    assert skip_is_required("tests/slurm/test_slurm_engine.py::t", "the local Slurm cluster is not up", req) == "slurm"
    # only the one-node cluster started: the 3-node tests may skip (and are listed at the end)
    assert skip_is_required("tests/slurm/test_slurm_multinode.py::t", "needs a 3-node cluster: ...", req) is None
    assert skip_is_required("tests/slurm/test_slurm_multinode.py::t", "needs a 3-node cluster: ...",
                            req | {"slurm-multinode"}) == "slurm-multinode"
    assert skip_is_required("tests/console/test_console_tmux.py::t", "tmux is not installed", req) == "tmux"
    assert skip_is_required("tests/swift/test_x.py::t", "ms-swift environment .venv-swift not found", req) == "swift"
    assert skip_is_required("tests/ops/test_sync.py::t", "cannot mount a small tmpfs here", req) is None
    assert skip_is_required("tests/slurm/test_slurm_engine.py::t", "the local Slurm cluster is not up", set()) is None
    # CI as root requires the second-user tests (review R70: a checkout under /root skipped them green)
    from tests.rundir.test_other_users_runs import OTHER_NEEDS
    why = f"{OTHER_NEEDS}: nobody cannot import moeconsole from /root/src (...; a checkout under a 0700 home?)"
    assert skip_is_required("tests/rundir/test_newcomer8_users.py::t", why, req | {"users"}) == "users"
    assert skip_is_required("tests/rundir/test_newcomer8_users.py::t", why, req) is None
    # a test of a cluster started in another preemption mode may skip on CI's (REQUEUE) cluster
    assert skip_is_required("tests/slurm/test_slurm_round2.py::t", "the local cluster preempts by REQUEUE: start it "
                            "with SLURM_LOCAL_PREEMPT_MODE=SUSPEND,GANG scripts/slurm-local.sh start", req) is None


def test_a_required_environment_that_skips_fails_the_run(tmp_path):
    test = tmp_path / "tests" / "slurm" / "test_probe.py"
    test.parent.mkdir(parents=True)
    test.write_text("import pytest\n\ndef test_cluster():\n    pytest.skip('the local Slurm cluster is not up')\n")
    (tmp_path / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text()
                                          .replace("from tests.waiting import reached", "reached = None"))
    env = {**os.environ, "MOECONSOLE_CI_REQUIRE": "slurm"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "tests/slurm"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "CI requires the slurm environment" in proc.stdout, proc.stdout
    env["MOECONSOLE_CI_REQUIRE"] = ""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "tests/slurm"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "SKIPPED" in proc.stdout and "Slurm cluster is not up" in proc.stdout, proc.stdout


def test_the_slurm_tests_use_only_the_local_test_cluster_and_a_site_controller_is_a_skip_ci_fails(tmp_path, monkeypatch):
    """On a real site's login node `scontrol ping` answers for the site's controller: the tests must not submit,
    suspend or requeue there (the user's Slurm is theirs). Only a controller scripts/slurm-local.sh recorded
    is used; any other is a skip with its reason, which CI (the slurm environment required) fails."""
    from tests.slurm.test_slurm_cluster import _cluster_up
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for cmd in ("sbatch", "scontrol"):
        (bin_dir / cmd).write_text("#!/bin/sh\necho 'Slurmctld(primary) at site-ctl is UP'\n")
        (bin_dir / cmd).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_LOCAL_DIR", str(tmp_path / "local"))
    why = _cluster_up()
    assert why is not None and "not the local test cluster" in why
    assert skip_is_required("tests/slurm/test_slurm_admin.py::test_x", why, {"slurm"}) == "slurm"
    # the local cluster's controller, recorded by the script and alive: used
    (tmp_path / "local" / "run").mkdir(parents=True)
    (tmp_path / "local" / "run" / "slurmctld.pid").write_text(f"{os.getpid()}\n")
    assert _cluster_up() is None or "root" in _cluster_up()
