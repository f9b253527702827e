"""A write that runs out of room (``disk_full``): the real runner does not restart blindly. It waits,
past the cooldown's ceiling, until the filesystem of the run's output has room again (measured with
os.statvfs on the real directory), says so with the path and the numbers, then resumes from the
newest VERIFIED checkpoint, never from the stub the failed save left.

The demo trainer's ``enospc@N`` fault is a real process failing the way a full disk fails it: the
save at step N leaves a stub and raises ``OSError(ENOSPC, os.strerror(ENOSPC), path)``, whose
traceback ends in ``OSError: [Errno 28] No space left on device: '.../adapter_model.safetensors'``.
A test cannot fill a real disk, so it asks for more free space than the filesystem has (the
test-only ``MOECONSOLE_TEST_DISK_MIN_FREE_FILE``, read at every look), then lowers it."""
from __future__ import annotations

import json
import os
import time

import pytest

from moeconsole.runner.process.proctree import marked_processes
from tests.conftest import tmpfs
from tests.waiting import until


def _demo(*faults: str) -> list[str]:
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
           "--max_steps", "12", "--save_steps", "4"]
    for f in faults:
        cmd += ["--fault", f]
    return cmd


def _free_mib(path) -> float:
    vfs = os.statvfs(path)
    return vfs.f_bavail * vfs.f_frsize / (1 << 20)


def test_disk_full_waits_for_room_then_resumes_from_the_last_verified_checkpoint(harness, tmp_path, monkeypatch):
    need = tmp_path / "need_mib"
    need.write_text(str(int(_free_mib(tmp_path) * 4 + (1 << 20))))   # far more than this filesystem has
    monkeypatch.setenv("MOECONSOLE_TEST_DISK_MIN_FREE_FILE", str(need))
    # ceiling 0.5 s: without the room wait the runner would launch again right away
    run = harness.start(harness.recipe(command=_demo("enospc@8"), cooldown={"ceiling_s": 0.5}))
    st = run.wait(lambda s: s.get("status") == "cooldown" and any(
        "room on" in w for w in (s.get("cooldown") or {}).get("waiting_on") or []), 120, "a wait for room")
    report = run.crash(1)
    assert report["class"] == "disk_full" and report["recovery"] == "wait_disk", report
    assert "No space left on device" in report["summary"]
    line = next(w for w in st["cooldown"]["waiting_on"] if "room on" in w)
    assert f"room on {run.path / 'output'}: " in line, line
    assert " free, need " in line
    alert = until(lambda: [a for a in run.events("alert") if a["rule"] == "disk_full"], 30, what="the disk_full alert")
    assert alert[0]["values"]["need_bytes"] > alert[0]["values"]["free_bytes"] > 0
    assert alert[0]["values"]["path"] and alert[0]["values"]["path"] in alert[0]["message"]
    # Well past the ceiling it still waits: no second attempt, nothing of ours running.
    ceiling_at = st["cooldown"]["ceiling_at"]
    until(lambda: time.time() > ceiling_at + 2 and run.state().get("cooldown", {}).get("waiting_on"), 30,
          what="the ceiling long passed, still waiting")
    assert not [e for e in run.events("attempt_start") if e.get("attempt") == 2]
    assert run.state()["attempt"] == 1 and not marked_processes(run.id)
    # --json (what the status line and the alert list read): COOLDOWN waiting, on the room, with the numbers
    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    assert snap["run"]["status"] == "cooldown", snap["run"]
    # the word says what it waits on, the same in --json and runs show (never "COOLDOWN 0s")
    assert snap["run"]["status_word"] == "COOLDOWN waiting for disk room", snap["run"]
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert shown.splitlines()[0].endswith("  COOLDOWN waiting for disk room"), shown
    # the receipt of the waiting run says the same words, with what it waits on (not "cooldown")
    md = harness.cli("runs", "receipt", run.id, check=True).stdout
    assert f"status **COOLDOWN waiting for disk room**, waiting on: room on {run.path / 'output'}: " in md, md[:400]
    assert any(f"room on {run.path / 'output'}: " in w and " free, need " in w
               for w in snap["run"]["cooldown"]["waiting_on"]), snap["run"]["cooldown"]
    assert [c.get("class") or c.get("cls") for c in snap["crashes"]] == ["disk_full"], snap["crashes"]
    group = next(g for g in snap["alert_groups"] if g["key"] == "disk_full")
    assert group["level"] == "warning" and group["headline"].startswith("disk full: waiting for room on "), group
    assert not group["resolved"], group
    ck8 = until(lambda: [e for e in run.events("checkpoint") if e["path"].endswith("checkpoint-8")], 30,
                what="the stub's verdict")
    assert ck8[0]["ok"] is False
    need.write_text("0")   # room again
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded", st
    starts = run.events("attempt_start")
    assert len(starts) == 2 and os.path.basename(starts[1]["resumed_from"]) == "checkpoint-4"
    assert [m["step"] for m in run.metrics() if m["attempt"] == 2] == list(range(5, 13))
    assert not [a for a in run.events("alert") if a["rule"] == "cooldown_ceiling"]
    # the wait's end resolves the alert, before the attempt it lets start
    events = run.events()
    back = next(i for i, e in enumerate(events) if e.get("rule") == "disk_full" and e.get("resolved"))
    second = next(i for i, e in enumerate(events) if e.get("type") == "attempt_start" and e.get("attempt") == 2)
    assert back < second and events[back]["message"].startswith(f"room again on {run.path / 'output'}: ")
    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    group = next(g for g in snap["alert_groups"] if g["key"] == "disk_full")
    assert group["resolved"] and group["standing"].startswith("resolved: room again on "), group
    assert not marked_processes(run.id)


def test_disk_full_with_room_restarts_at_once(harness):
    run = harness.start(harness.recipe(command=_demo("enospc@8"), cooldown={"disk_free_min_mib": 0}))
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded", st
    assert run.crash(1)["class"] == "disk_full"
    assert not [a for a in run.events("alert") if a["rule"] == "disk_full"]
    assert os.path.basename(run.events("attempt_start")[1]["resumed_from"]) == "checkpoint-4"


@pytest.fixture
def full_fs(tmp_path):
    """A real 8 MiB tmpfs for the run's output (needs root to mount; skipped otherwise), filled so that
    two of the demo's ~1.26 MB checkpoints fit and the third save really fails with ENOSPC."""
    mnt = tmp_path / "out"
    mnt.mkdir()
    with tmpfs(mnt, "size=8m,mode=0700"):
        filler = mnt / "filler.bin"
        vfs = os.statvfs(mnt)
        filler.write_bytes(b"\0" * (vfs.f_bavail * vfs.f_frsize - int(3.3 * (1 << 20))))
        yield mnt, filler


def test_a_really_full_filesystem_waits_until_space_is_freed(harness, full_fs):
    """No injection at all: the demo's third save fails on a full tmpfs with the libraries' own ENOSPC
    text; the runner measures the real free space against 1.2 x the largest checkpoint, waits, and
    restarts once the user deletes a file there."""
    mnt, filler = full_fs
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", str(mnt),
           "--max_steps", "16", "--save_steps", "4"]
    run = harness.start(harness.recipe(command=cmd, checkpoints={"dir": str(mnt)},
                                       cooldown={"ceiling_s": 0.5, "disk_free_min_mib": 0}))
    st = run.wait(lambda s: s.get("status") == "cooldown" and any(
        "room on" in w for w in (s.get("cooldown") or {}).get("waiting_on") or []), 120, "a wait for room")
    report = run.crash(1)
    assert report["class"] == "disk_full", report
    line = next(w for w in st["cooldown"]["waiting_on"] if "room on" in w)
    assert line.startswith(f"room on {mnt}: ") and "1.2 x the largest checkpoint" in line, line
    alert = next(a for a in run.events("alert") if a["rule"] == "disk_full")
    values = alert["values"]
    assert values["need_bytes"] == int(1.2 * values["largest_save_bytes"]) > values["free_bytes"], values
    ceiling_at = st["cooldown"]["ceiling_at"]
    until(lambda: time.time() > ceiling_at + 2 and run.state().get("cooldown", {}).get("waiting_on"), 30,
          what="the ceiling long passed, still waiting")
    assert not [e for e in run.events("attempt_start") if e.get("attempt") == 2]
    filler.unlink()   # the user frees space
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded", st
    assert os.path.basename(run.events("attempt_start")[1]["resumed_from"]) == "checkpoint-8"
    assert [m["step"] for m in run.metrics() if m["attempt"] == 2] == list(range(9, 17))
    assert not marked_processes(run.id)


def test_a_new_runner_keeps_waiting_for_room(harness, tmp_path, monkeypatch):
    """The runner dies during the wait (SIGKILL, by its recorded PID); `supervise` starts a new one that
    goes on waiting past the ceiling instead of launching into the full disk."""
    import signal
    need = tmp_path / "need_mib"
    need.write_text(str(int(_free_mib(tmp_path) * 4 + (1 << 20))))
    monkeypatch.setenv("MOECONSOLE_TEST_DISK_MIN_FREE_FILE", str(need))
    run = harness.start(harness.recipe(command=_demo("enospc@8"), cooldown={"ceiling_s": 0.5}))
    st = run.wait(lambda s: s.get("status") == "cooldown" and any(
        "room on" in w for w in (s.get("cooldown") or {}).get("waiting_on") or []), 120, "a wait for room")
    old = st["runner"]["pid"]
    os.kill(old, signal.SIGKILL)
    until(lambda: not os.path.exists(f"/proc/{old}") or open(f"/proc/{old}/stat").read().split(") ")[1][0] == "Z",
          60, what="the runner to end")
    harness.cli("supervise", run.id, check=True)
    st = run.wait(lambda s: (s.get("runner") or {}).get("pid") != old and s.get("status") == "cooldown" and any(
        "room on" in w for w in (s.get("cooldown") or {}).get("waiting_on") or []), 60, "the new runner's wait")
    ceiling_at = st["cooldown"]["ceiling_at"]
    until(lambda: time.time() > ceiling_at + 2 and run.state().get("cooldown", {}).get("waiting_on"), 30,
          what="the new ceiling long passed, still waiting")
    assert not [e for e in run.events("attempt_start") if e.get("attempt") == 2]
    assert len([a for a in run.events("alert") if a["rule"] == "disk_full" and not a.get("resolved")]) == 1
    need.write_text("0")
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded", st
    assert os.path.basename(run.events("attempt_start")[1]["resumed_from"]) == "checkpoint-4"
    assert not marked_processes(run.id)
