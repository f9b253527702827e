"""A merged export (``checkpoint-N-merged/``: ms-swift 4.6 ``swift export --merge_lora``,
swift/pipelines/export/merge_lora.py ``output_dir = f'{args.adapters[0]}-merged'``) holds a full model
and no optimizer or trainer state: it is never a save of the training, nor a resume point
(discover.is_export, the one rule). Real safetensors files on disk; the watcher, ``v``,
``moeconsole verify`` and the checkpoints panel's line. Before, the watcher counted broken exports as
bad saves in a row (a pause), made an export the run's last checkpoint, ``v`` and ``verify`` named an
export the newest save, and nothing said it was an export."""
from __future__ import annotations

import json
import os
from pathlib import Path

from moeconsole.console.format import checkpoint_line
from moeconsole.runner.checkpoints.discover import find_checkpoints, is_export
from moeconsole.runner.checkpoints.keeper import CheckpointKeeper
from moeconsole.runner.supervisor.judge import bad_saves_pause
from tests.checkpoints.conftest import lora_tensors, merged_model, write_adapter
from tests.checkpoints.test_checkpoints_cli import _no_traceback, cli
from tests.checkpoints.test_checkpoints_keeper import Recorder
from tests.waiting import until


def _later(d: Path, by: float = 5.0) -> None:
    """``d``'s files (and ``d``) written ``by`` seconds after now: the newer of two dirs by time."""
    t = os.stat(d).st_mtime + by
    for f in [*d.iterdir(), d]:
        os.utime(f, (t, t))


def _keeper(tmp_path: Path) -> tuple[CheckpointKeeper, Recorder, Path]:
    out = tmp_path / "out"
    rec = Recorder(tmp_path)
    return CheckpointKeeper(rec, out, recipe_hash="h", settle_s=0.05), rec, out


def _verdicts(keeper: CheckpointKeeper, rec: Recorder, n: int) -> list[dict]:
    def seen():
        keeper.poll(lambda step, path: [], 1)
        got = [e for e in rec.events if e["type"] == "checkpoint"]
        return got if len(got) >= n else None
    return until(seen, timeout=30, what=f"{n} checkpoint verdicts")


def test_the_rule_is_the_layout_discovery_gives_a_merged_dir(tmp_path):
    out = tmp_path / "out"
    write_adapter(out / "checkpoint-4", lora_tensors(r=8, layers=2, hidden=32))
    merged_model(out / "checkpoint-4-merged", 4)
    found = {c.path.name: (c.layout, is_export(c.layout)) for c in find_checkpoints(out)}
    assert found == {"checkpoint-4": ("hf_adapter", False), "checkpoint-4-merged": ("merged", True)}
    assert not is_export(None)


def test_an_export_beside_its_save_is_recorded_as_an_export_never_the_last_save(tmp_path):
    keeper, rec, out = _keeper(tmp_path)
    write_adapter(out / "checkpoint-4", lora_tensors(r=8, layers=2, hidden=32))
    _verdicts(keeper, rec, 1)
    merged_model(out / "checkpoint-4-merged", 4)      # `swift export --merge_lora` of it, after
    _later(out / "checkpoint-4-merged")
    events = _verdicts(keeper, rec, 2)
    by_name = {Path(e["path"]).name: e for e in events}
    assert by_name["checkpoint-4-merged"]["ok"] is True and by_name["checkpoint-4-merged"]["export"] is True
    assert not by_name["checkpoint-4"].get("export")
    assert keeper.last is not None and Path(keeper.last["path"]).name == "checkpoint-4", keeper.last
    assert Path(keeper.last_good()["path"]).name == "checkpoint-4"
    assert keeper.final_check().ok
    # `v`: the newest save, not the newer export
    said = keeper.verify_latest()
    assert "checkpoint-4-merged" not in said["message"] and "checkpoint-4" in said["message"], said
    # the checkpoints panel's line says what it is
    line, _ = checkpoint_line(by_name["checkpoint-4-merged"])
    assert "export" in line and "no resume point" in line, line
    assert "export" not in checkpoint_line(by_name["checkpoint-4"])[0]


def test_broken_exports_are_not_bad_saves_in_a_row(tmp_path):
    """Two exports cut short (an interrupted `swift export`: 39 KB stubs) after a good save: the
    training's saves are fine, so no bad-save streak, no pause, no critical checkpoint_bad alert."""
    keeper, rec, out = _keeper(tmp_path)
    write_adapter(out / "checkpoint-4", lora_tensors(r=8, layers=2, hidden=32))
    _verdicts(keeper, rec, 1)
    merged_model(out / "checkpoint-8-merged", 8, stub=True)
    merged_model(out / "checkpoint-12-merged", 12, stub=True)
    events = _verdicts(keeper, rec, 3)
    exports = [e for e in events if Path(e["path"]).name.endswith("-merged")]
    assert [e["ok"] for e in exports] == [False, False] and all(e["export"] for e in exports)
    assert keeper.bad_saves == {"total": 0, "in_a_row": []}, keeper.bad_saves
    assert bad_saves_pause(keeper, 2) is None
    assert not [e for e in rec.events if e["type"] == "alert" and e.get("rule") == "checkpoint_bad"]
    assert Path(keeper.last["path"]).name == "checkpoint-4"


def test_verify_names_the_newest_save_and_says_what_an_export_is(tmp_path):
    out = tmp_path / "out"
    write_adapter(out / "checkpoint-4", lora_tensors(r=8, layers=2, hidden=32))
    merged_model(out / "checkpoint-4-merged", 4)
    _later(out / "checkpoint-4-merged")
    proc = cli("verify", str(out))
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    merged = next(ln for ln in lines if "checkpoint-4-merged" in ln)
    assert "export" in merged, lines
    assert lines[-1].endswith(f"newest ok: {out / 'checkpoint-4'}; 1 export (merged weights, no resume point)"), lines
    data = json.loads(cli("verify", str(out), "--json").stdout)
    flags = {Path(c["path"]).name: c["export"] for c in data["checkpoints"]}
    assert flags == {"checkpoint-4-merged": True, "checkpoint-4": False}
