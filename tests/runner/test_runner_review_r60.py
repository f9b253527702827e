"""Review R60 of newcomer round 6 (a loop of one's own saving with ``torch.save``), mended:

1. every torch.save file of a save is checked whole, not only the one that chose the layout: a half-written
   ``optimizer.pt`` (or a DeepSpeed rank's ZeRO shard) had verified ``ok``, became the resume point and every
   restart crashed in ``torch.load``; a DeepSpeed ``global_stepN/`` is finished once its ``latest`` names it;
2. a Lightning Fabric FSDP save (DCP shards and a ``meta.pt`` of plain values) is a save, not ``EMPTY_STUB``;
3. ``empty_stub`` is a whole save of plain values only: ``model.pt`` beside a ``meta.pt`` of plain values is ok;
7. a real tarball ``model.tar`` is no torch save; a legacy-format save says "size only"."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from moeconsole.runner.checkpoints.discover import find_checkpoints, save_underway
from moeconsole.runner.checkpoints.verify import verify_checkpoint
from tests.runner.test_newcomer6_own_saves import own_loop_run

torch = pytest.importorskip("torch")


def _model():
    lin = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(lin.parameters())
    lin(torch.randn(1, 4)).sum().backward()
    opt.step()
    return lin, opt


def _cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _only(root: Path):
    found = find_checkpoints(root)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("side", ["optimizer.pt", "scheduler.pt", "scaler.pt", "rng_state.pth"])
def test_a_cut_file_beside_the_weights_is_truncated_and_underway(tmp_path, side):
    lin, opt = _model()
    d = tmp_path / "checkpoint-95"
    d.mkdir()
    torch.save(lin.state_dict(), d / "model.pt")
    torch.save(opt.state_dict(), d / side)
    ck = _only(tmp_path)
    assert verify_checkpoint(ck.path).verdict == "ok" and save_underway(ck) is None     # whole: a save
    _cut(d / side)
    v = verify_checkpoint(ck.path)
    assert v.verdict == "truncated" and not v.ok, v
    assert side in (save_underway(ck) or "")


def _deepspeed(root: Path, step: int = 100, ranks: int = 4, latest: str | None = "global_step100") -> Path:
    lin, _ = _model()
    g = root / f"global_step{step}"
    g.mkdir(parents=True)
    torch.save({"module": lin.state_dict()}, g / "mp_rank_00_model_states.pt")
    for r in range(ranks):
        torch.save({"optimizer_state_dict": {"fp32": torch.zeros(3)}}, g / f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt")
    if latest is not None:
        (root / "latest").write_text(latest)
    return g


def test_deepspeed_save_every_rank_shard_whole_and_latest_names_it(tmp_path):
    g = _deepspeed(tmp_path / "whole")
    ck = _only(tmp_path / "whole")
    assert verify_checkpoint(ck.path).verdict == "ok" and save_underway(ck) is None
    g = _deepspeed(tmp_path / "cut")
    _cut(g / "zero_pp_rank_3_mp_rank_00_optim_states.pt")
    ck = _only(tmp_path / "cut")
    assert verify_checkpoint(ck.path).verdict == "truncated"
    assert "zero_pp_rank_3" in (save_underway(ck) or "")


def test_deepspeed_save_underway_until_latest_names_it(tmp_path):
    _deepspeed(tmp_path / "none", latest=None)
    assert "latest" in (save_underway(_only(tmp_path / "none")) or "")
    root = tmp_path / "older"
    _deepspeed(root, step=100, latest="global_step50")
    assert "global_step50" in (save_underway(_only(root)) or "")
    # an older save whose latest has moved on is finished
    root = tmp_path / "newer"
    _deepspeed(root, step=100, latest="global_step200")
    assert save_underway(_only(root)) is None


def test_fabric_fsdp_sharded_save_is_a_save(tmp_path):
    dcp = pytest.importorskip("torch.distributed.checkpoint")
    lin, _ = _model()
    d = tmp_path / "ckpt" / "ckpt_100"
    dcp.save({"model": lin.state_dict()}, checkpoint_id=str(d))
    torch.save({"iteration": 100}, d / "meta.pt")       # lightning/fabric/strategies/fsdp.py _METADATA_FILENAME
    ck = _only(tmp_path / "ckpt")
    v = verify_checkpoint(ck.path)
    assert v.verdict == "ok", v
    assert save_underway(ck) is None


def test_plain_values_beside_weights_are_fine_plain_values_alone_are_a_stub(tmp_path):
    lin, _ = _model()
    d = tmp_path / "two" / "checkpoint-90"
    d.mkdir(parents=True)
    torch.save(lin.state_dict(), d / "model.pt")
    torch.save({"step": 90, "epoch": 1, "best": 0.5}, d / "meta.pt")
    assert verify_checkpoint(_only(tmp_path / "two").path).verdict == "ok"
    d = tmp_path / "plain" / "checkpoint-90"
    d.mkdir(parents=True)
    torch.save({"step": 90}, d / "meta.pt")
    torch.save({"best": 0.5}, d / "state.pt")
    v = verify_checkpoint(_only(tmp_path / "plain").path)
    assert v.verdict == "empty_stub", v


def test_a_real_tarball_is_no_torch_save_and_legacy_says_size_only(tmp_path):
    t = tmp_path / "tar" / "step_60"
    t.mkdir(parents=True)
    (tmp_path / "notes.txt").write_text("x")
    with tarfile.open(t / "model.tar", "w") as tf:
        tf.add(tmp_path / "notes.txt", arcname="notes.txt")
    assert find_checkpoints(tmp_path / "tar") == []
    lin, _ = _model()
    d = tmp_path / "pthtar" / "checkpoint-70"
    d.mkdir(parents=True)
    torch.save({"state_dict": lin.state_dict()}, d / "checkpoint.pth.tar")   # the ImageNet example's name
    assert verify_checkpoint(_only(tmp_path / "pthtar").path).verdict == "ok"
    d = tmp_path / "legacy" / "checkpoint-50"
    d.mkdir(parents=True)
    torch.save({"model": lin.state_dict()}, d / "state.pt", _use_new_zipfile_serialization=False)
    v = verify_checkpoint(_only(tmp_path / "legacy").path)
    assert v.verdict == "ok" and "size only" in v.reason, v.reason


TRAIN_OPT = """\
import argparse, io, os, pathlib, torch
p = argparse.ArgumentParser(); p.add_argument("--resume_from_checkpoint"); a = p.parse_args()
model = torch.nn.Linear(4, 1); opt = torch.optim.AdamW(model.parameters()); start = 0
if a.resume_from_checkpoint:
    model.load_state_dict(torch.load(os.path.join(a.resume_from_checkpoint, "model.pt")))
    opt.load_state_dict(torch.load(os.path.join(a.resume_from_checkpoint, "optimizer.pt")))
    start = int(pathlib.Path(a.resume_from_checkpoint).name.split("-")[1])
for step in range(start + 1, 9):
    model(torch.randn(2, 4)).sum().backward(); opt.step()
    print(f"step {step} | loss {1.0 / step:.4f} | lr 1e-4", flush=True)
    if step % 2 == 0:
        d = pathlib.Path("out") / f"checkpoint-{step}"; d.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), d / "model.pt")
        if step == 6 and not pathlib.Path("cut-once").exists():   # killed while writing the optimizer state
            pathlib.Path("cut-once").write_text("x")
            b = io.BytesIO(); torch.save(opt.state_dict(), b)
            (d / "optimizer.pt").write_bytes(b.getvalue()[: len(b.getvalue()) // 2])
            os._exit(137)
        torch.save(opt.state_dict(), d / "optimizer.pt")
"""

TRAIN_META = """\
import argparse, os, pathlib, torch
p = argparse.ArgumentParser(); p.add_argument("--resume_from_checkpoint"); a = p.parse_args()
model = torch.nn.Linear(4, 1); start = 0
if a.resume_from_checkpoint:
    model.load_state_dict(torch.load(os.path.join(a.resume_from_checkpoint, "model.pt")))
    start = torch.load(os.path.join(a.resume_from_checkpoint, "meta.pt"))["step"]
for step in range(start + 1, 9):
    print(f"step {step} | loss {1.0 / step:.4f} | lr 1e-4", flush=True)
    if step % 2 == 0:
        d = pathlib.Path("out") / f"checkpoint-{step}"; d.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), d / "model.pt")
        torch.save({"step": step, "epoch": 0}, d / "meta.pt")
"""


def test_killed_while_writing_the_optimizer_resumes_from_the_save_before(tmp_path):
    run, state = own_loop_run(tmp_path, TRAIN_OPT, ceiling_s=2)
    assert state["status"] == "succeeded", state
    starts = run.events("attempt_start")
    assert len(starts) == 2, starts
    assert "checkpoint-6" not in json.dumps(starts[1]), starts[1]
    assert str(tmp_path / "out" / "checkpoint-4") in json.dumps(starts[1]), starts[1]


def test_weights_and_a_meta_file_of_plain_values_verify_ok(tmp_path):
    run, state = own_loop_run(tmp_path, TRAIN_META, ceiling_s=2)
    bad = [e for e in run.events("checkpoint") if not e.get("ok", True)]
    assert state["status"] == "succeeded" and not bad, (state, bad)
