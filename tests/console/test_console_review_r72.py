"""Review R72: how `runs show` and `--json` say a verified save is gone from disk. Real run
directories (tests.console.conftest.write_run), the real CLI, a real bind mount where the case is an
unmounted disk (root only: skipped with the reason otherwise)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from moeconsole.runner.rundir import jsonio
from tests.console.conftest import write_run
from tests.console.test_console_runs import cli


def _show(run, base) -> list[str]:
    out = cli("runs", "show", run.path.name, base=base)
    assert out.returncode == 0, out.stderr
    # each line: the verdict, then two spaces and the save's path
    return [ln.strip().rsplit("  ", 1)[0] for ln in out.stdout.splitlines() if ln.strip().startswith("ckpt ")]


def _json_checkpoints(run, base) -> dict[int, dict]:
    out = cli("--json", "--once", "--no-gpu", run.path.name, base=base)
    assert out.returncode == 0, out.stderr
    return {c["step"]: c for c in json.loads(out.stdout.splitlines()[-1])["checkpoints"]}


def test_saves_on_an_unmounted_disk_read_out_of_reach_not_deleted(tmp_path):
    """The run's checkpoints directory is a mount point; both verified saves are on the mounted disk.
    Rotated away beside a newer save, a save reads DEL (the trainer's rotation). Unmounted, the mount
    point is an empty directory. Before: every save read `ckpt DEL ... deleted since it was verified
    (the trainer's --save_total_limit?)` and `--json` gave `deleted: true`. Now: `ckpt OUT ...; not found
    where it was verified ...: out of reach, not known to be deleted`, `gone: unreachable`, `deleted: false`."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a bind mount needs root and mount(8)")
    base = tmp_path / "runs"
    run = write_run(base, status="failed", steps=60, checkpoints=((20, True), (40, True), (50, True)))
    ckpt, disk = run.path / "ckpt", tmp_path / "disk"
    ckpt.rename(disk)
    ckpt.mkdir()
    for n in (20, 40, 50):
        (disk / f"checkpoint-{n}" / "adapter_model.safetensors").write_bytes(b"x")
    done = subprocess.run(["mount", "--bind", str(disk), str(ckpt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount --bind refused here: {done.stderr.strip()}")
    try:
        shutil.rmtree(ckpt / "checkpoint-20")       # the trainer's rotation: a newer save stays beside it
        lines = _show(run, base)
        assert lines[0].startswith("ckpt OK  step 50") and lines[1].startswith("ckpt OK  step 40"), lines
        assert lines[2].startswith("ckpt DEL step 20 checkpoint-20 ok 16 tensors; deleted since it was verified"), lines
    finally:
        subprocess.run(["umount", str(ckpt)], capture_output=True, check=False)
    assert not any(ckpt.iterdir()) and (disk / "checkpoint-50").is_dir()
    lines = _show(run, base)
    assert [ln.split(";")[0] for ln in lines] == ["ckpt OUT step 50 checkpoint-50 ok 16 tensors",
                                                  "ckpt OUT step 40 checkpoint-40 ok 16 tensors",
                                                  "ckpt OUT step 20 checkpoint-20 ok 16 tensors"], lines
    assert all("out of reach, not known to be deleted" in ln and "deleted since" not in ln for ln in lines), lines
    cks = _json_checkpoints(run, base)
    assert {s: (c.get("gone"), c.get("deleted")) for s, c in cks.items()} == {
        50: ("unreachable", False), 40: ("unreachable", False), 20: ("unreachable", False)}, cks


def test_a_save_removed_with_its_version_directory_reads_removed(tmp_path):
    """ms-swift's `v<N>-<time>/` output dirs: an earlier attempt's directory removed whole (what
    `verify --prune-superseded --yes` deletes, or a user by hand) while the later one holds a newer save.
    Before: its save read `ckpt OK` (its parent gone, taken for a save out of sight). Now: `ckpt DEL
    ...; removed with its directory since it was verified`, `deleted: true`, `gone: removed`."""
    base = tmp_path / "runs"
    run = write_run(base, status="failed", steps=60, checkpoints=())
    out = tmp_path / "out"
    v0, v1 = out / "v0-20261201-000000" / "checkpoint-4", out / "v1-20261201-001000" / "checkpoint-8"
    for i, d in enumerate((v0, v1)):
        d.mkdir(parents=True)
        (d / "adapter_model.safetensors").write_bytes(b"x")
        jsonio.append_jsonl(run.events, {"v": 1, "t": 2000.0 + i, "type": "checkpoint", "path": str(d),
                                         "step": 4 * (i + 1), "verdict": "ok", "ok": True, "reason": "",
                                         "suspect": False, "tensors": 24})
    shutil.rmtree(v0.parent)
    lines = _show(run, base)
    assert lines[0] == "ckpt OK  step 8 checkpoint-8 ok 24 tensors", lines
    assert lines[1].startswith("ckpt DEL step 4 checkpoint-4 ok 24 tensors; removed with its directory since it "
                               "was verified"), lines
    cks = _json_checkpoints(run, base)
    assert (cks[4].get("gone"), cks[4].get("deleted")) == ("removed", True) and "gone" not in cks[8], cks


def test_the_run_screens_poll_never_looks_at_the_saves_on_disk(tmp_path, monkeypatch):
    """The run screen, compare and the exporter poll every second or scrape; none shows whether a save
    is still on disk. Before: each poll looked at every save the run ever verified (0.4-1 s a poll at
    1,000 saves; on a hung NFS mount, a hung console). Now only `runs show` and `--json` look."""
    from moeconsole.runner.rundir.snapshot import RunWatcher
    run = write_run(tmp_path / "runs", status="running", steps=60, checkpoints=((20, True), (40, True)))
    looked: list[str] = []
    real = os.path.lexists
    monkeypatch.setattr(os.path, "lexists", lambda p: (looked.append(str(p)), real(p))[1])
    watcher = RunWatcher(run)
    for _ in range(3):
        watcher.poll(with_gpu=False)
    assert not [p for p in looked if "checkpoint-" in p], looked
    shown = watcher.poll(with_gpu=False, saves_gone=True)
    assert [p for p in looked if "checkpoint-" in p] and all("gone" not in c for c in shown.checkpoints)


def _saves(tmp_path, on_disk):
    d = tmp_path / "output" / "v0-20261204-043758"
    for step in on_disk:
        (d / f"checkpoint-{step}").mkdir(parents=True)
        (d / f"checkpoint-{step}" / "adapter_model.safetensors").write_bytes(b"x")
    return d


def test_saves_gone_beside_the_best_the_trainer_kept_were_deleted(tmp_path):
    """transformers' end with --save_total_limit 1 deletes every save but the best, the newest too (trainer.py
    _finalize_training l.2006-2011): measured with ms-swift 4.6 (tests/swift/test_swift_best_kept.py)."""
    from moeconsole.runner.checkpoints.order import GONE_DELETED, GONE_UNREACHABLE, saves_gone
    d = _saves(tmp_path, [2])
    saves = [(str(d / f"checkpoint-{s}"), s) for s in (2, 4, 6)]
    assert saves_gone(saves, best=str(d / "checkpoint-2")) == {str(d / "checkpoint-4"): GONE_DELETED,
                                                              str(d / "checkpoint-6"): GONE_DELETED}
    # without the best named, or the best not on disk (an empty mount point), as before: nothing proves a deletion
    assert set(saves_gone(saves).values()) == {GONE_UNREACHABLE}
    empty = _saves(tmp_path / "other", [])
    empty.mkdir(parents=True)
    gone = [(str(empty / f"checkpoint-{s}"), s) for s in (2, 4, 6)]
    assert set(saves_gone(gone, best=str(empty / "checkpoint-2")).values()) == {GONE_UNREACHABLE}
    # the best kept in another directory proves nothing of this one
    elsewhere = _saves(tmp_path / "third", [2])
    assert set(saves_gone(saves[1:], best=str(elsewhere / "checkpoint-2")).values()) == {GONE_UNREACHABLE}
