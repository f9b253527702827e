"""The CPU limit of this process's cgroup (``cpustat.quota_cores``), read from a cgroup tree laid
out as the kernel shows it (Documentation/admin-guide/cgroup-v2.rst "cpu.max";
Documentation/scheduler/sched-bwc.rst for v1's cpu.cfs_quota_us / cpu.cfs_period_us), and the
history read's choice of a second process (``spawned.second_core_free``) under such a limit."""
from __future__ import annotations

import os

import pytest

from moeconsole.runner.telemetry import cpustat


def tree(tmp_path, own: str, files: dict[str, str]):
    """A cgroup mount under tmp_path/cgroup and the /proc/self/cgroup text ``own``."""
    root = tmp_path / "cgroup"
    root.mkdir()
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (tmp_path / "self_cgroup").write_text(own)
    return str(root), str(tmp_path / "self_cgroup")


def test_a_v2_cpu_max_is_the_cores_the_process_may_use_and_the_smallest_over_its_parents(tmp_path):
    root, own = tree(tmp_path, "0::/user.slice/app.service\n", {
        "cgroup.controllers": "cpuset cpu io memory pids\n",
        "user.slice/cpu.max": "max 100000\n",
        "user.slice/app.service/cpu.max": "150000 100000\n"})
    assert cpustat.quota_cores(root, own) == 1.5
    (tmp_path / "cgroup" / "user.slice" / "cpu.max").write_text("100000 100000\n")
    assert cpustat.quota_cores(root, own) == 1.0
    for rel in ("user.slice/cpu.max", "user.slice/app.service/cpu.max"):
        (tmp_path / "cgroup" / rel).write_text("max 100000\n")
    assert cpustat.quota_cores(root, own) is None


def test_a_v1_cfs_quota_is_read_and_minus_one_is_no_limit(tmp_path):
    root, own = tree(tmp_path, "12:pids:/\n4:cpu,cpuacct:/\n3:memory:/\n", {
        "cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"})
    assert cpustat.quota_cores(root, own) is None
    (tmp_path / "cgroup" / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("100000\n")
    assert cpustat.quota_cores(root, own) == 1.0


def test_a_container_without_its_own_cgroup_namespace_reads_the_mount_root(tmp_path):
    """Docker on v1 without a cgroup namespace: /proc/self/cgroup names /docker/ID, but the mount
    shows that cgroup at its root."""
    root, own = tree(tmp_path, "4:cpu,cpuacct:/docker/0123abcd\n", {
        "cpu,cpuacct/cpu.cfs_quota_us": "200000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"})
    assert cpustat.quota_cores(root, own) == 2.0


def test_no_cgroup_file_no_limit(tmp_path):
    assert cpustat.quota_cores(str(tmp_path / "none"), str(tmp_path / "nothing")) is None
    root, own = tree(tmp_path, "0::/\n", {"cgroup.controllers": "memory\n"})
    assert cpustat.quota_cores(root, own) is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs a process allowed on 2 cores")
def test_a_container_limited_to_one_cpu_reads_its_history_in_one_process(tmp_path, monkeypatch):
    """On a host of 2 cores or more, a cgroup limit of one CPU: two reading processes would only
    take turns, so ``second_core_free`` says no at once (without sampling the cores)."""
    from moeconsole.runner.ingest.spawned import second_core_free
    root, own = tree(tmp_path, "0::/\n", {"cgroup.controllers": "cpu\n", "cpu.max": "100000 100000\n"})
    monkeypatch.setattr(cpustat, "CGROUP_ROOT", root)
    monkeypatch.setattr(cpustat, "PROC_SELF_CGROUP", own)
    sampled: list[int] = []
    real = cpustat.sample
    monkeypatch.setattr(cpustat, "sample", lambda: sampled.append(1) or real())
    assert second_core_free() is False
    assert sampled == []


@pytest.mark.parametrize("own, files, frozen", [
    # v2: "frozen 1" in cgroup.events once every process is frozen; a freeze under way is not yet
    ("0::/system.slice/train.service\n", {"system.slice/train.service/cgroup.events": "populated 1\nfrozen 1\n"},
     "/system.slice/train.service"),
    ("0::/system.slice/train.service\n", {"system.slice/train.service/cgroup.events": "populated 1\nfrozen 0\n"}, None),
    # v1: the freezer hierarchy's freezer.state, FREEZING while under way (its tasks already held)
    ("6:freezer:/docker/abc\n0::/\n", {"freezer/docker/abc/freezer.state": "FROZEN\n"}, "/docker/abc"),
    ("6:freezer:/docker/abc\n0::/\n", {"freezer/docker/abc/freezer.state": "FREEZING\n"}, "/docker/abc"),
    ("6:freezer:/docker/abc\n0::/\n", {"freezer/docker/abc/freezer.state": "THAWED\n"}, None),
    ("6:freezer:/docker/abc\n", {}, None),   # no freezer mounted here
])
def test_a_frozen_cgroup_is_named_from_the_freezer_the_kernel_shows(tmp_path, own, files, frozen):
    root, own_file = tree(tmp_path, own, files)
    assert cpustat.frozen_cgroup(os.getpid(), root, own_file) == frozen
