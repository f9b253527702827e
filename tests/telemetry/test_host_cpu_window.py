"""The host line's CPU figure in the one-shot commands (``moeconsole --json RUN --once``,
``moeconsole gpus --json``) says where it came from and over what window: with no runner on
this host it is this process's own two readings of ``/proc/stat``, at least
``host.first_window_s`` apart; with a live runner it starts from the runner's newest reading
(``host.CpuMark`` in the runs directory) and ends at the command's own reading.

Real CLI processes, a real runner supervising a real sleeping trainer, the real ``/proc/stat``."""
from __future__ import annotations

import json
import os
import re
import sys
import time

import msgspec
import pytest

from moeconsole.runner.telemetry import host
from tests.console.conftest import write_run
from tests.runner.conftest import Harness
from tests.waiting import until


def _cpu(host_doc: dict) -> dict:
    return {k: host_doc.get(k) for k in ("cpu_pct", "cpu_window_s", "cpu_source")}


def _once(harness: Harness, run_id: str) -> dict:
    proc = harness.cli("--json", run_id, "--once", check=True)
    return _cpu(json.loads(proc.stdout.splitlines()[-1])["host"])


def _gpus(harness: Harness) -> dict:
    proc = harness.cli("gpus", "--json", "--port", "0", check=True)
    return _cpu(json.loads(proc.stdout)["host"])


def _own_window(cpu: dict) -> None:
    assert cpu["cpu_source"] == "process", cpu
    assert cpu["cpu_window_s"] >= host.first_window_s() - 0.002, cpu  # rounded to the ms
    assert 0.0 <= cpu["cpu_pct"] <= 100.0, cpu


def test_without_a_runner_a_one_shot_spans_its_own_window(tmp_path, runs_dir, monkeypatch):
    """No runner on this host: the figure is this process's, over at least the minimum window
    (0.1 s on 2 cores); a reading a dead runner left behind (older than the limit) is not used."""
    monkeypatch.delenv(host.MARK_MAX_AGE_ENV, raising=False)
    harness = Harness(tmp_path, runs_dir)
    run_id = "20260101-000000-cpu-0001"
    write_run(runs_dir, run_id, status="running")
    _own_window(_once(harness, run_id))
    _own_window(_gpus(harness))
    # the table says it too, on the host line
    line = next(l for l in harness.cli("gpus", "--port", "0", check=True).stdout.splitlines() if l.startswith("Host "))
    assert re.search(r"CPU \d+% of \d+ cores \(last \d+\.\d s\)", line), line
    # a dead runner's last reading, taken for real, then older than the limit the commands get
    host.write_cpu_mark(runs_dir, host._busy_total_now(), time.monotonic())
    assert host.cpu_mark_path(runs_dir).is_file()
    monkeypatch.setenv(host.MARK_MAX_AGE_ENV, "0.001")
    until(lambda: host.read_cpu_mark(runs_dir, time.monotonic(), float("inf")) is None, what="the reading to go stale")
    _own_window(_once(harness, run_id))
    _own_window(_gpus(harness))


def test_a_shared_reading_is_used_only_from_this_host_and_boot(runs_dir, monkeypatch):
    """``read_mark`` refuses a reading of another boot (its clock is not ours), another host
    (a runs directory on a shared file system), one that is not a reading, and one whose
    counters are ahead of now; it takes this boot's own."""
    monkeypatch.setenv(host.MARK_MAX_AGE_ENV, "600")
    reading, at = host._busy_total_now(), time.monotonic()
    host.write_cpu_mark(runs_dir, reading, at)
    mark = host.read_cpu_mark(runs_dir, time.monotonic() + 0.01, reading[1] + 1)
    assert mark is not None and mark.pid == os.getpid() and (mark.busy_s, mark.total_s) == reading
    assert oct(host.cpu_mark_path(runs_dir).stat().st_mode & 0o777) == "0o600"
    assert host.read_cpu_mark(runs_dir, time.monotonic(), reading[1] - 1) is None, "counters ahead of now"
    path = host.cpu_mark_path(runs_dir)
    for change in ({"boot_id": "00000000-0000-0000-0000-000000000000"}, {"host": "another-node"}):
        path.write_bytes(msgspec.json.encode(msgspec.structs.replace(mark, **change)))
        assert host.read_cpu_mark(runs_dir, time.monotonic(), reading[1] + 1) is None, change
    path.write_text('{"v": 1, "busy_s": "x"}')
    assert host.read_cpu_mark(runs_dir, time.monotonic(), reading[1] + 1) is None
    # a runs directory reached through a link (a data disk) is written into; its file never through one
    linked = runs_dir.parent / "linked-runs"
    linked.symlink_to(runs_dir, target_is_directory=True)
    host.write_cpu_mark(linked, reading, at)
    assert host.read_cpu_mark(linked, time.monotonic() + 0.01, reading[1] + 1) is not None
    target = runs_dir.parent / "elsewhere.json"
    target.write_text("untouched")
    path.unlink()
    path.symlink_to(target)
    host.write_cpu_mark(runs_dir, reading, at)
    assert target.read_text() == "untouched" and not path.is_symlink()


def test_with_a_live_runner_a_one_shot_starts_from_its_reading(tmp_path, runs_dir, monkeypatch):
    """A runner supervising a training shares its reading of ``/proc/stat`` at each sample (every
    2 s); ``--json RUN --once`` and ``gpus --json`` start their figure there: the window runs
    from the runner's reading to the command's own, and says so."""
    monkeypatch.setenv(host.MARK_MAX_AGE_ENV, "120")   # a busy machine may hold the runner back
    harness = Harness(tmp_path, runs_dir)
    run = harness.start(harness.recipe(command=["{python}", "-c", "import time; time.sleep(300)"],
                                       checkpoints={"dir": None}, resume={"arg": None}))
    try:
        st = run.wait(lambda s: s.get("status") == "running", timeout=120, what="running")
        runner_pid = int((st.get("runner") or {}).get("pid") or 0)
        mark = until(lambda: host.read_cpu_mark(runs_dir, time.monotonic(), float("inf")), timeout=60,
                     what="the runner's shared CPU reading")
        assert mark.pid == runner_pid, (mark, st.get("runner"))
        # the command's own first reading may fall just after one of the runner's (every 2 s):
        # then its own is the older and is used; the next try starts from the runner's
        for name, ask in (("--json RUN --once", lambda: _once(harness, run.id)), ("gpus --json", lambda: _gpus(harness))):
            cpu = until(lambda: (lambda c: c if c["cpu_source"] == "runner" else None)(ask()), timeout=60,
                        what=f"{name} starting from the runner's reading")
            assert cpu["cpu_window_s"] > 0 and 0.0 <= cpu["cpu_pct"] <= 100.0, (name, cpu)
        line = until(lambda: next((l for l in harness.cli("gpus", "--port", "0", check=True).stdout.splitlines()
                                   if "from the runner's reading" in l), None), timeout=60,
                     what="the host line naming the runner's reading")
        assert re.search(r"CPU \d+% of \d+ cores \(last \d+\.\d s, from the runner's reading\)", line), line
    finally:
        harness.cli("kill", run.id)
        run.wait_status("killed", "failed", "succeeded", "unsaved", timeout=60)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_a_one_shot_ends_without_teardown_and_its_output_is_whole(tmp_path, runs_dir):
    """The one-shots end with ``os._exit`` once their output is flushed (``cli.quick_exit``): into
    a file (block-buffered) the JSON is whole, with ``gpus`` too; a reader that leaves after one
    byte (``| head -c 1``) is no error and no traceback."""
    import subprocess
    from tests.runner.conftest import REPO
    run_id = "20260101-000000-cpu-0002"
    write_run(runs_dir, run_id, status="running")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}   # a file is block-buffered
    env["PYTHONPATH"] = str(REPO)
    for args in (["--json", run_id, "--once"], ["gpus", "--json", "--port", "0"]):
        out = tmp_path / "out.json"
        with open(out, "wb") as f:
            proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(runs_dir)],
                                  stdout=f, stderr=subprocess.PIPE, env=env, cwd=REPO, timeout=120)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        doc = json.loads(out.read_text().splitlines()[-1])
        assert doc["host"]["cpu_source"] == "process" and out.read_bytes().endswith(b"}\n")
        reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(runs_dir)],
                              stdout=reader.stdin, stderr=subprocess.PIPE, env=env, cwd=REPO, timeout=120)
        reader.stdin.close()
        assert reader.stdout.read() == b"{" and reader.wait(timeout=60) == 0
        assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr


def test_building_the_command_line_asks_for_no_terminal_width(tmp_path, runs_dir):
    """argparse checks each option with a formatter sized to the terminal (``shutil``, which
    brings bz2 and lzma); ``cli`` gives that check a fixed width, so a command that needs no
    archive module loads none: ``--json RUN --once --no-gpu`` and ``kill``, real processes.
    ``--help`` still wraps at the terminal's width."""
    import subprocess
    from tests.runner.conftest import REPO
    run_id = "20260101-000000-cpu-0003"
    write_run(runs_dir, run_id, status="succeeded")
    for args in (["--json", run_id, "--once", "--no-gpu"], ["kill", run_id]):
        code = ("import io, sys, contextlib\n"
                "from moeconsole.console.cli import main\n"
                "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
                f"    rc = main({args + ['--runs-dir', str(runs_dir)]!r})\n"
                "print(rc, ' '.join(m for m in ('shutil', 'bz2', 'lzma') if m in sys.modules))\n")
        proc = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
        assert proc.returncode == 0, proc.stderr
        rc, _, loaded = proc.stdout.strip().partition(" ")
        assert loaded == "", (args, rc, loaded)
    for width in (60, 120):
        out = subprocess.run([sys.executable, "-P", "-m", "moeconsole.console.cli", "gpus", "--help"], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": str(width)},
                             cwd=REPO).stdout
        lines = out.splitlines()
        assert max(map(len, lines)) <= width and max(map(len, lines)) > width - 25, (width, out)
