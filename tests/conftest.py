"""Shared test helpers: a fresh runs directory per test and a reaper that ends, by PID, every
process a test's runs left behind (runner, training tree, anything carrying the run marker)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.waiting import reached

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def _signals_as_a_terminal_gives_them() -> None:
    """The suite started from a shell without job control (`make test &` in a script, a subshell)
    or under `nohup` inherits SIGINT / SIGHUP ignored, and so would every process it starts: the
    tests of Ctrl-C and of a hang-up would then see our commands keep them ignored, as they must
    for a user's `nohup`. The tests stand for a user at a terminal: the defaults, in every test
    process (each xdist worker imports this file) and so in every process a test starts."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


_signals_as_a_terminal_gives_them()


def _moeconsole_on_path() -> None:
    """The tests stand for a user whose shell finds this `moeconsole` by name (the README's
    `. .venv/bin/activate`): the lines that name a next command then add no note on how to reach
    it (``console/own_command.path_note``; its own tests set PATH themselves). Only the command is
    put on PATH, through a directory holding a link to it: the venv's `python` stays off PATH, so
    a recipe's `python train.py` finds what it found before."""
    import atexit
    import shutil
    import tempfile
    script = Path(sys.executable).parent / "moeconsole"
    found = shutil.which("moeconsole")
    if not script.is_file() or (found is not None and os.path.samefile(found, script)):
        return
    linked = Path(tempfile.mkdtemp(prefix="moeconsole-test-path-"))
    (linked / "moeconsole").symlink_to(script)
    os.environ["PATH"] = f"{linked}{os.pathsep}{os.environ.get('PATH', '')}"
    atexit.register(shutil.rmtree, linked, True)


_moeconsole_on_path()


def run_processes(runs_dir: Path) -> dict[int, float]:
    """Every live process of ours whose environment or command line ties it to ``runs_dir``."""
    me = os.getuid()
    needle = str(runs_dir)
    found: dict[int, float] = {}
    for p in psutil.process_iter(["uids", "cmdline"]):
        try:
            if p.pid == os.getpid() or p.info["uids"] is None or p.info["uids"].real != me:
                continue
            cmd = " ".join(p.info["cmdline"] or [])
            env_dir = p.environ().get("MOECONSOLE_RUN_DIR", "")
            if needle in cmd or env_dir.startswith(needle):
                found[p.pid] = p.create_time()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def end_processes(procs: dict[int, float]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, created in procs.items():
            try:
                p = psutil.Process(pid)
                if abs(p.create_time() - created) < 0.05:
                    p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        # each signal its time to act, then the next one
        reached(lambda: not any(psutil.pid_exists(p) and _alive(p) for p in procs), timeout=3)


@contextmanager
def tmpfs(path: Path, options: str, *, end_runs: bool = False) -> Iterator[Path]:
    """``path`` on a real tmpfs mounted with ``options`` (size, nr_inodes: a small or full disk);
    needs root to mount, the test is skipped otherwise. ``end_runs``: end the runs' processes that
    live on it before it is unmounted."""
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        if end_runs:
            end_processes(run_processes(path))
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextmanager
def journal_on_tmpfs(tmp_path: Path, name: str, size: str = "2m") -> Iterator[tuple[Path, Any, Any]]:
    """A new run's journal (``rundir.RunDir``, ``journal.Journal``) on a real tmpfs of ``size`` (the runs
    directory), for filling to the last byte; skipped where a tmpfs cannot be mounted."""
    from moeconsole.runner.rundir import rundir
    from moeconsole.runner.rundir.journal import Journal
    base = tmp_path / "runs"
    base.mkdir()
    with tmpfs(base, f"size={size},mode=0700"):
        run = rundir.create(base, name)
        yield base, run, Journal(run, lambda msg: None)


def fill_up(path: Path) -> None:
    """Write ``path`` until its filesystem refuses even one more byte (a disk really full)."""
    chunk = b"\0" * 65536
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError:
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(fd)


def take_every_inode(where: Path) -> int:
    """Empty files in ``where`` until its filesystem has no inode left (bytes to spare): a
    cache or a cleaner's work directory full of small files. How many were made."""
    made = 0
    while True:
        try:
            os.close(os.open(where / f"f{made}", os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError:
            return made
        made += 1


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def runs_dir(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    yield d
    leftovers = run_processes(d)
    end_processes(leftovers)


def _terminated(signum, _frame):
    raise KeyboardInterrupt(f"pytest got signal {signum}")


# --- Parallel runs (`make test` runs pytest-xdist workers) -------------------------------------
# Most tests wait on real processes (a trainer's steps, a cooldown, a kill's grace), so workers
# overlap those waits. Tests that share one outside thing run on one worker, one after another:
# the local Slurm cluster (its nodes and queue are one), and the ms-swift runs (each loads torch
# and a model; more than two at once would only fight for memory and the two cores). The ms-swift
# files run in two serial chains: many of their tests mostly wait (a Gloo timeout, a kill's
# grace, a save settling), so two chains overlap (tests/swift alone: 23.8 min as one chain,
# 14.2 min as two of 851 and 800 s, every test passing). SWIFT_SECOND_CHAIN names the files of the second, about half of the time
# (`make test` prints the seconds per file); a new file joins the first. Every other test is a
# unit of its own. (The scheduler groups by path itself: xdist's `xdist_group` marks are lost
# under pytest 9, whose node ids no longer follow the suffix xdist adds.)
SERIAL_GROUPS = {"tests/slurm/": "slurm", "tests/swift/": "swift"}
SWIFT_SECOND_CHAIN = frozenset({
    "test_swift_resume_modes.py", "test_swift_multiproc.py", "test_swift_round7.py", "test_swift_startup_lint.py",
    "test_swift_recipe_run.py", "test_swift_parser_probe.py", "test_swift_cpu_cost.py",
    "test_swift_callback_stops.py"})


def serial_group(nodeid: str) -> str | None:
    """The group whose tests must run one after another on one worker, or None (the ms-swift
    files: ``swift``, or ``swift-2`` for the files of SWIFT_SECOND_CHAIN)."""
    group = next((group for prefix, group in SERIAL_GROUPS.items() if nodeid.startswith(prefix)), None)
    second = group == "swift" and nodeid.split("::", 1)[0].rsplit("/", 1)[-1] in SWIFT_SECOND_CHAIN
    return "swift-2" if second else group


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class SerialGroups(LoadScopeScheduling):
        """xdist's scope scheduler with a scope per serial group and one per other test; the
        biggest scopes (the serial groups) go out first, so they never start last."""

        def _split_scope(self, nodeid: str) -> str:
            return serial_group(nodeid) or nodeid

    return SerialGroups(config, log)


def pytest_configure(config):
    """A SIGTERM to the test process (a CI timeout, a user's kill) runs every fixture teardown
    and ``finally`` block like Ctrl-C does, so the processes tests started are ended by PID
    instead of outliving the run."""
    signal.signal(signal.SIGTERM, _terminated)


# --- CI: an environment that is installed must run its tests, never skip them -----------------
# `.ci/run` exports MOECONSOLE_CI_REQUIRE with the environments whose packages it installed and
# started (tmux, faketime, slurm, slurm-multinode, swift). A skip that belongs to one of them is a failure
# there: a cluster that did not start must not leave CI green with its tests skipped.
REQUIRED_ENVS = {e for e in os.environ.get("MOECONSOLE_CI_REQUIRE", "").split(",") if e}


def skip_is_required(nodeid: str, reason: str, required: set[str] = REQUIRED_ENVS) -> str | None:
    """The required environment a skip belongs to, or None when the skip may stand."""
    words = reason.lower()
    if "slurm_local_preempt_mode" in words:
        return None   # a cluster started in another preemption mode than CI's (scripts/slurm-local.sh)
    if "slurm" in required and nodeid.startswith("tests/slurm/"):
        multinode = "3-node" in words or "multi-node" in words or "namespace" in words
        if not multinode or "slurm-multinode" in required:
            return "slurm-multinode" if multinode else "slurm"
    if "swift" in required and nodeid.startswith("tests/swift/") and "ms-swift environment" in words:
        return "swift"
    if "tmux" in required and "tmux" in words:
        return "tmux"
    if "faketime" in required and "faketime" in words:
        return "faketime"
    if "users" in required and words.startswith("needs root, runuser and a python3 another user may run"):
        return "users"   # CI as root: the second-user tests run (tests/rundir/test_other_users_runs.OTHER_NEEDS)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRED_ENVS and report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        env = skip_is_required(report.nodeid, reason)
        if env is not None:
            report.outcome = "failed"
            report.longrepr = f"CI requires the {env} environment (installed here), but the test skipped: {reason}"


@contextmanager
def ext4_that_errs(path: Path, size_mib: int = 128) -> Iterator[Path]:
    """``path`` on a real ext4 (an image on a loop device) mounted ``errors=remount-ro``; yields the
    file that, written, makes the kernel take the filesystem read-only as it does on an I/O or
    metadata error (``/sys/fs/ext4/DEV/trigger_fs_error``: fs/ext4/sysfs.c, ``ext4_handle_error``):
    every write after it is EROFS, and it cannot be remounted read-write while mounted. Needs root and
    loop devices, the test is skipped otherwise. The runs' processes on it are ended before it is
    unmounted."""
    image = path.parent / f"{path.name}.ext4"
    with open(image, "wb") as f:
        f.truncate(size_mib << 20)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True)
    if made.returncode != 0:
        image.unlink()
        pytest.skip(f"cannot make an ext4 image here: {made.stderr.decode().strip()}")
    loop = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True)
    if loop.returncode != 0:
        image.unlink()
        pytest.skip(f"no loop device here: {loop.stderr.decode().strip()}")
    device = loop.stdout.decode().strip()
    try:
        path.mkdir(exist_ok=True)
        mounted = subprocess.run(["mount", "-t", "ext4", "-o", "errors=remount-ro", device, str(path)],
                                 capture_output=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount an ext4 here: {mounted.stderr.decode().strip()}")
        try:
            trigger = Path("/sys/fs/ext4") / Path(device).name / "trigger_fs_error"
            if not trigger.exists():
                pytest.skip(f"this kernel has no {trigger}")
            yield trigger
        finally:
            end_processes(run_processes(path))
            subprocess.run(["umount", "-l", str(path)], capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", device], capture_output=True)
        image.unlink(missing_ok=True)


# --- Where the suite's time goes: seconds per folder (and serial group) at the end of each run -----
# CI prints only its slowest tests; this says which folders carry the 4 workers' time, the serial
# groups' own (they run on one worker, one test after another) apart.
_SPENT: dict[str, list[float]] = {}


def time_key(nodeid: str) -> str:
    """The folder a test's time is counted under: its serial group's, else its first folder under tests/."""
    group = serial_group(nodeid)
    if group is not None:
        return f"{group} (serial)"
    parts = nodeid.split("::", 1)[0].split("/")
    return parts[1] if len(parts) > 2 else parts[-1]


_SPENT_FILES: dict[str, list[float]] = {}


def pytest_runtest_logreport(report):
    for table, key in ((_SPENT, time_key(report.nodeid)), (_SPENT_FILES, report.nodeid.split("::", 1)[0])):
        spent = table.setdefault(key, [0.0, 0])
        spent[0] += report.duration
        spent[1] += report.when == "call"


def pytest_terminal_summary(terminalreporter):
    if not _SPENT or hasattr(terminalreporter.config, "workerinput"):
        return
    total = sum(s for s, _n in _SPENT.values()) or 1.0
    for what, table, rows in (("folder", _SPENT, 25), ("file", _SPENT_FILES, 20)):
        terminalreporter.write_sep("=", f"time spent by {what} (setup + call + teardown, summed over workers)")
        for key, (spent, count) in sorted(table.items(), key=lambda kv: -kv[1][0])[:rows]:
            terminalreporter.write_line(f"{spent:9.1f} s  {100 * spent / total:5.1f}%  {int(count):6d} tests  {key}")
