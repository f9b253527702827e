"""ms-swift Megatron saves as the released source writes them, judged at the right moment.

- 4.2.0 ``save_checkpoint`` with ``--merge_lora true`` writes ``checkpoint-N/`` (metadata only)
  and then, over many minutes for a 397B model, ``checkpoint-N-merged/`` (shards under
  ``-of-?????`` names, renamed, the index, then config.json). Until that sibling has settled the
  save is unfinished, and the sibling is part of the save's fingerprint.
- 4.6.0 with ``--use_megatron_fsdp``: ``iter_N/`` is plain torch DCP (``.metadata`` + ``*.distcp``).
- 4.6.0 ``update_last_checkpoint_symlink``: ``last-checkpoint`` -> ``checkpoint-N``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

from moeconsole.runner.checkpoints.discover import find_checkpoints
from moeconsole.runner.checkpoints.keeper import CheckpointKeeper
from moeconsole.runner.checkpoints.sidecar import read_sidecar, sidecar_current, write_sidecar
from moeconsole.runner.checkpoints.verify import verify_checkpoint
from moeconsole.runner.checkpoints.watch import CheckpointWatcher, latest_good
from tests.checkpoints.conftest import (REPO, merged_finished, merged_started, swift_common, write_adapter,
                                        write_stub)
from tests.waiting import reached


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def settle(w: CheckpointWatcher, clock: Clock, rounds: int = 4, step: float = 2.0) -> list:
    got = []
    for _ in range(rounds):
        got += w.poll()
        clock.now += step
    return got


def test_42_metadata_dir_waits_for_its_merged_model_to_settle(tmp_path):
    clock = Clock()
    w = CheckpointWatcher(tmp_path, settle_s=1.0, stale_s=600.0, clock=clock)
    ck = swift_common(tmp_path / "checkpoint-100", 100)
    merged = merged_started(tmp_path / "checkpoint-100-merged", 100)
    # The writer gathers the next experts: nothing changes for longer than settle_s.
    assert settle(w, clock, rounds=6) == []
    assert not verify_checkpoint(ck).ok          # judged now it would read as bad: hence the wait
    merged_finished(merged, 100)
    ready = settle(w, clock)
    assert sorted(c.path.name for c in ready) == ["checkpoint-100", "checkpoint-100-merged"]
    v = verify_checkpoint(ck)
    assert v.ok and "checkpoint-100-merged" in v.reason, v.problems
    assert verify_checkpoint(merged).tensors == 8


def test_an_early_verdict_is_rejudged_once_the_merged_sibling_changes(tmp_path):
    """The sibling's files are part of checkpoint-N's fingerprint: a sidecar written while the
    merged model was incomplete stops being trusted when the merged model lands."""
    run = tmp_path / "v0-20260101-000000"
    ck = swift_common(run / "checkpoint-100", 100)
    merged = merged_started(run / "checkpoint-100-merged", 100)
    early = verify_checkpoint(ck)
    assert not early.ok
    write_sidecar(ck, run_id="r", recipe_hash="h", step=100, verdict=early.verdict, suspect=False)
    side = read_sidecar(ck)
    assert any(k.startswith("../checkpoint-100-merged/") for k in side["files"]), side["files"]
    assert sidecar_current(ck, side) and latest_good(tmp_path) is None
    merged_finished(merged, 100)
    assert not sidecar_current(ck, side)
    assert latest_good(tmp_path, include_merged=False).path == ck


class Recorder:
    """A RunWriter that keeps the events in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[dict] = []

    @property
    def run_id(self) -> str:
        return "r1"

    def event(self, type_: str, **fields) -> dict:
        rec = {"type": type_, **fields}
        self.events.append(rec)
        return rec


def test_the_keeper_raises_no_alert_while_a_merged_model_is_written_slowly(tmp_path):
    out = tmp_path / "out" / "v0-20260101-000000"
    out.mkdir(parents=True)
    run = Recorder(tmp_path)
    keeper = CheckpointKeeper(run, tmp_path / "out", recipe_hash="h", settle_s=0.2)

    def poll_for(seconds: float) -> None:
        """Poll as the runner does for this long: the time that passes is what is under test."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            keeper.poll(lambda step, path: [], attempt=1)
            time.sleep(0.05)

    ck = swift_common(out / "checkpoint-4", 4)
    merged = merged_started(out / "checkpoint-4-merged", 4)
    poll_for(1.5)                                   # well past settle_s, the merged model unfinished
    assert not [e for e in run.events if e["type"] == "alert"], run.events
    assert not [e for e in run.events if e["type"] == "checkpoint"], run.events
    merged_finished(merged, 4)
    def both_verified() -> bool:
        keeper.poll(lambda step, path: [], attempt=1)
        return len([e for e in run.events if e["type"] == "checkpoint"]) >= 2
    reached(both_verified, timeout=30)
    checks = {Path(e["path"]).name: e for e in run.events if e["type"] == "checkpoint"}
    assert set(checks) == {"checkpoint-4", "checkpoint-4-merged"}, run.events
    assert all(e["ok"] for e in checks.values()) and not [e for e in run.events if e["type"] == "alert"]
    assert keeper.resume_point(allow_drift=False) == str(ck)


def test_a_46_megatron_fsdp_save_is_valid(tmp_path):
    """4.6.0 megatron_fsdp_checkpoint.save_checkpoint: torch DCP FileSystemWriter, no common.pt."""
    import torch
    import torch.distributed.checkpoint as dcp

    ck = write_adapter(tmp_path / "checkpoint-50")
    (ck / "latest_checkpointed_iteration.txt").write_text("50")
    it = ck / "iter_0000050"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save({"model.decoder.layers.0.lora_A.weight": torch.ones(4, 8), "iteration": torch.tensor(50)},
                 checkpoint_id=str(it), no_dist=True)
    assert {".metadata"} <= {p.name for p in it.iterdir()} and not (it / "common.pt").exists()
    v = verify_checkpoint(ck)
    assert v.ok, v.problems
    alone = verify_checkpoint(it)
    assert alone.ok and "fsdp_dtensor" in alone.reason, alone.problems
    for shard in it.glob("*.distcp"):
        shard.unlink()
    bad = verify_checkpoint(ck)
    assert not bad.ok and bad.verdict in ("missing_shard", "empty_stub")


def test_last_checkpoint_is_the_checkpoint_it_points_at(tmp_path):
    run = tmp_path / "v0-20260101-000000"
    swift_common(write_adapter(run / "checkpoint-20"), 20)
    ck = swift_common(write_adapter(run / "checkpoint-40"), 40)
    os.symlink("checkpoint-40", run / "last-checkpoint")        # relative, as update_last_checkpoint_symlink
    (found,) = find_checkpoints(run / "last-checkpoint")
    assert found.path == ck.resolve() and found.step == 40
    assert [c.step for c in find_checkpoints(tmp_path)] == [40, 20]
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "verify", str(run / "last-checkpoint")],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 checkpoint: 1 ok" in out.stdout and "iter_0000040" not in out.stdout.split("\n")[0]


def cli_verify(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "verify", str(path)], capture_output=True, text=True,
                          cwd=REPO, timeout=60)


def test_verifying_iter_n_alone_says_where_the_weights_are(tmp_path):
    ck = swift_common(write_adapter(tmp_path / "checkpoint-30"), 30)
    out = cli_verify(ck / "iter_0000030")
    assert out.returncode == 0, out.stdout
    assert "metadata only" in out.stdout and f"the adapter in {ck}" in out.stdout
    assert "the safetensors here are the weights" not in out.stdout
    bare = swift_common(tmp_path / "checkpoint-60", 60)        # no adapter, no -merged: nothing anywhere
    out = cli_verify(bare / "iter_0000060")
    assert out.returncode == 1 and "EMPTY_STUB" in out.stdout, out.stdout


def test_messages_name_the_right_things(tmp_path):
    # A merged dir without its model: no "-merged-merged".
    merged = swift_common(tmp_path / "checkpoint-10-merged", 10)
    (merged / "config.json").write_text("{}")
    v = verify_checkpoint(merged)
    assert not v.ok and "-merged-merged" not in json.dumps(v.to_dict())
    # An adapter save: the resume hint names --adapters.
    ck = swift_common(write_adapter(tmp_path / "checkpoint-20"), 20)
    v = verify_checkpoint(ck)
    assert v.ok and any(f"--adapters {ck} --finetune false" in n for n in v.notes), v.notes
    # A stub beside common.pt: no claim that "the safetensors here are the weights".
    stub = swift_common(tmp_path / "checkpoint-30", 30)
    write_stub(stub / "adapter_model.safetensors")
    (stub / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    v = verify_checkpoint(stub)
    assert v.verdict == "empty_stub" and not any("are the weights" in n for n in v.notes)


def test_a_42_save_is_synced_with_its_merged_weights(tmp_path):
    """The recipe's sync copies checkpoint-N/ with checkpoint-N-merged/, where its weights are; the
    copy verifies as a pair, and retention removes the pair."""
    from moeconsole.runner.checkpoints.sync import MARKER, sync_one

    out, dest = tmp_path / "out", tmp_path / "ebs"
    for n in (100, 200, 300):
        swift_common(out / f"checkpoint-{n}", n)
        merged_finished(merged_started(out / f"checkpoint-{n}-merged", n), n)
        res = sync_one(out / f"checkpoint-{n}", dest, keep_last=2, use_rsync=False)
        assert res.ok, res.reason
        assert (dest / f"checkpoint-{n}" / MARKER).is_file() and (dest / f"checkpoint-{n}-merged" / "config.json").is_file()
        v = verify_checkpoint(dest / f"checkpoint-{n}")
        assert v.ok and f"checkpoint-{n}-merged" in v.reason, v.problems
    assert sorted(p.name for p in dest.iterdir()) == ["checkpoint-200", "checkpoint-200-merged",
                                                      "checkpoint-300", "checkpoint-300-merged"]
    # An unfinished merged model is never synced.
    swift_common(out / "checkpoint-400", 400)
    merged_started(out / "checkpoint-400-merged", 400)
    res = sync_one(out / "checkpoint-400", dest, keep_last=2, use_rsync=False)
    assert not res.ok and "not synced" in res.reason and not (dest / "checkpoint-400").exists()


def test_a_finetune_attempt_rewriting_the_tracker_lower_leaves_earlier_iterations_whole(tmp_path):
    """Megatron-LM ``--finetune`` saving into its load dir: attempt 2 counts from iteration 1 again
    and its save of iteration 4 writes the tracker (``iter_finalize_fn``: the iteration just
    saved, lower or not). Attempt 1's iter_0000008, written before that tracker, is a finished
    save in a run whose resumes count from step 1 again (``rewrites``), not one still being
    written; the save written last is the newest. An iteration above the tracker written after it
    is still unfinished there too (its writer has not named it yet), and elsewhere the tracker
    decides as before."""
    from moeconsole.runner.checkpoints.discover import save_underway, sort_newest_first
    from moeconsole.runner.checkpoints.verify import verify_found
    from tests.checkpoints.conftest import write_megatron_iter

    save = tmp_path / "save"
    past = time.time() - 600
    for it in (4, 8):   # attempt 1, ten minutes ago
        d = write_megatron_iter(save, it, tracker=False, seed=it)
        for f in [*d.iterdir(), d]:
            os.utime(f, (past + it, past + it))
    write_megatron_iter(save, 4, tracker=False, seed=40)               # attempt 2 rewrites iteration 4
    (save / "latest_checkpointed_iteration.txt").write_text("4")        # then names it in the tracker
    found = {c.path.name: c for c in find_checkpoints(save)}
    eight = found["iter_0000008"]
    assert save_underway(eight, rewrites=True) is None
    assert verify_found(eight, rewrites=True).verdict == "ok"
    assert save_underway(eight) is not None and verify_found(eight).verdict == "incomplete"   # by the tracker alone
    assert [c.path.name for c in sort_newest_first(list(found.values()), rewrites=True)] == ["iter_0000004", "iter_0000008"]
    assert latest_good(save, rewrites=True).path.name == "iter_0000004"
    # attempt 2 goes on: iteration 8 again, its shards written after the tracker, not named by it yet
    write_megatron_iter(save, 8, tracker=False, seed=80)
    later = time.time() + 5
    for f in [*eight.path.iterdir(), eight.path]:
        os.utime(f, (later, later))
    assert "still names iteration 4" in (save_underway(eight, rewrites=True) or "")
    assert verify_found(eight, rewrites=True).verdict == "incomplete"


def test_a_swift_checkpoint_whose_own_tracker_names_a_lower_iteration_is_unfinished_in_every_order(tmp_path):
    """ms-swift's Megatron save writes iteration N only into ``checkpoint-N/`` with its own tracker
    (4.6.0 swift/megatron/trainers/base.py ``save_checkpoint`` l.832-847), so a lower tracker there
    never means a later save rewrote it (that happens in a Megatron-LM save dir, ``--finetune``).
    Its iteration above its tracker is unfinished, for a run whose resumes count from step 1
    again (``rewrites``) too. Before, the verifier exempted it there ("a later save rewrote the
    tracker": ok) while the live watcher called it still being written: one save, two verdicts."""
    from moeconsole.runner.checkpoints.discover import save_underway
    from moeconsole.runner.checkpoints.verify import verify_found
    from tests.checkpoints.conftest import write_megatron_iter

    ck = tmp_path / "out" / "checkpoint-8"
    past = time.time() - 600
    d = write_megatron_iter(ck, 8, tracker=False)
    for f in [*d.iterdir(), d]:
        os.utime(f, (past, past))
    (ck / "latest_checkpointed_iteration.txt").write_text("4")    # written after the iteration's files
    [found] = find_checkpoints(tmp_path / "out")
    for rewrites in (False, True):
        assert "still names iteration 4" in (save_underway(found, rewrites=rewrites) or ""), rewrites
        assert verify_found(found, rewrites=rewrites).verdict == "incomplete", rewrites
