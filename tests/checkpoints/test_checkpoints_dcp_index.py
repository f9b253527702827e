"""A Megatron torch_dist / torch DCP save is judged by what its ``.metadata`` lists: tensors and
parameters counted, every ``.distcp`` as long as the data placed in it, a save listing no model
tensor an empty stub, and a ``.metadata`` reaching for any other global refused, never run.

Every save here is written by torch itself (``torch.distributed.checkpoint.save``, single
process, ``no_dist=True``) on CPU."""
from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from moeconsole.runner.checkpoints.dcp_metadata import ALLOWED_GLOBALS, DcpMetadataError, parse_dcp_metadata
from moeconsole.runner.checkpoints.verify import verify_checkpoint

REPO = Path(__file__).resolve().parents[2]


def _planner_keeping_plans():
    """Megatron-core's save attaches the local plans to the global metadata
    (megatron/core/dist_checkpointing/strategies/state_dict_saver.py, save_state_dict_async_plan:
    ``global_metadata.all_local_plans = all_local_plans``), so its ``.metadata`` also pickles
    SavePlan / WriteItem / TensorWriteData. The same, on torch's default planner."""
    from torch.distributed.checkpoint import DefaultSavePlanner

    class KeepPlans(DefaultSavePlanner):
        def create_global_plan(self, all_plans):
            plans, md = super().create_global_plan(all_plans)
            md.all_local_plans = all_plans
            return plans, md

    return KeepPlans(flatten_state_dict=False)


def megatron_save(save_dir: Path, iteration: int, state: dict) -> Path:
    """A torch_dist iteration as Megatron-core lays it out: common.pt, the flat DCP state (keys are
    the ShardedTensor keys: ``decoder.layers...``, ``optimizer.state.exp_avg.decoder...``;
    ShardedObjects as io.BytesIO, strategies/torch.py ``_mcore_to_torch_sharded_object``),
    ``.metadata`` with the plans, then metadata.json, and the tracker. Two writer threads, so two
    ``.distcp`` files per rank (strategies/torch.py ``TorchDistSaveShardedStrategy(thread_count=2)``:
    "the number of files in the checkpoint (saving ranks * num_threads)")."""
    import torch
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemWriter

    d = save_dir / f"iter_{iteration:07d}"
    d.mkdir(parents=True)
    torch.save({"iteration": iteration, "args": None}, d / "common.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save(state, storage_writer=FileSystemWriter(str(d), thread_count=2), no_dist=True,
                 planner=_planner_keeping_plans())
    (d / "metadata.json").write_text(json.dumps({"sharded_backend": "torch_dist", "sharded_backend_version": 1,
                                                 "common_backend": "torch"}))
    (save_dir / "latest_checkpointed_iteration.txt").write_text(str(iteration))
    return d


def model_and_optimizer(layers: int = 3) -> dict:
    import torch

    g = torch.Generator().manual_seed(0)
    state: dict = {}
    for i in range(layers):
        key = f"decoder.layers.{i}.mlp.linear_fc1.weight"
        state[key] = torch.randn(16, 8, generator=g, dtype=torch.bfloat16)
        state[f"optimizer.state.exp_avg.{key}"] = torch.zeros(16, 8)
        state[f"optimizer.state.exp_avg_sq.{key}"] = torch.zeros(16, 8)
    state["embedding.word_embeddings.weight"] = torch.randn(32, 8, generator=g)
    state["rng_state/shard_0.0_1.1"] = io.BytesIO(pickle.dumps({"random_rng_state": [1, 2, 3]}))
    return state


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_a_torch_dist_save_counts_its_model_tensors_and_parameters_not_the_optimizer_state(tmp_path):
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer())
    v = verify_checkpoint(d)
    assert v.ok, v.problems
    assert (v.tensors, v.params) == (4, 3 * 16 * 8 + 32 * 8)
    assert "4 model tensors + 6 optimizer-state tensors (768 values)" in v.reason
    proc = cli("verify", str(d), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (ck,) = json.loads(proc.stdout)["checkpoints"]
    assert (ck["tensors"], ck["params"], ck["layout"], ck["counted"]) == (4, 640, "megatron", True)
    line = cli("verify", str(d)).stdout.splitlines()[0]
    assert line.startswith("ok ") and "4 tensors" in line and "640 params" in line, line


def test_a_distcp_shard_cut_short_is_truncated_and_named(tmp_path):
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer())
    shard, other = sorted(d.glob("*.distcp"))
    size = shard.stat().st_size
    os.truncate(shard, size - 100)
    v = verify_checkpoint(d)
    assert v.verdict == "truncated", v.problems
    assert f"{shard.name} is {size - 100:,} bytes, but .metadata places data up to byte {size:,}" in v.reason
    assert next(f for f in v.files if f["path"] == shard.name)["verdict"] == "truncated"
    proc = cli("verify", str(d))
    assert proc.returncode == 1 and proc.stdout.startswith("TRUNCATED"), proc.stdout + proc.stderr
    assert "also" not in proc.stdout and other.name not in proc.stdout     # the intact one is not blamed
    shard.unlink()
    gone = verify_checkpoint(d)
    assert gone.verdict == "missing_shard" and shard.name in gone.reason and len(gone.problems) == 1, gone.problems


def test_an_empty_distcp_the_index_places_nothing_in_is_not_a_stub(tmp_path):
    """One tensor, two writer threads: torch leaves the second thread's file at 0 bytes."""
    import torch

    d = megatron_save(tmp_path / "save", 10, {"decoder.layers.0.mlp.linear_fc1.weight": torch.ones(4, 4)})
    assert sorted(p.stat().st_size == 0 for p in d.glob("*.distcp")) == [False, True]
    v = verify_checkpoint(d)
    assert v.ok and (v.tensors, v.params) == (1, 16), v.problems
    (full,) = [p for p in d.glob("*.distcp") if p.stat().st_size]
    full.write_bytes(b"")
    v = verify_checkpoint(d)
    assert v.verdict == "empty_stub" and f"{full.name} is empty (0 bytes)" in v.reason, v.problems


def test_a_save_whose_metadata_lists_no_model_tensor_is_an_empty_stub(tmp_path):
    import torch

    nothing = megatron_save(tmp_path / "a", 10, {"iteration": io.BytesIO(b"10"), "args": io.BytesIO(b"{}")})
    v = verify_checkpoint(nothing)
    assert v.verdict == "empty_stub" and "lists no tensors at all (2 non-tensor item(s))" in v.reason, v.problems
    assert v.counted        # read, and it lists none: zero, not unknown
    line = cli("verify", str(nothing)).stdout.splitlines()[0]
    assert line.startswith("EMPTY_STUB") and " 0 tensors " in line and " 0 params " in line, line
    optim_only = megatron_save(tmp_path / "b", 10, {"optimizer.state.exp_avg.decoder.w": torch.zeros(4, 4)})
    v = verify_checkpoint(optim_only)
    assert v.verdict == "empty_stub" and "only optimizer state (1 tensors)" in v.reason, v.problems


def test_a_metadata_reaching_for_os_system_is_refused_and_never_run(tmp_path):
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer())
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    md = pickle.loads((d / ".metadata").read_bytes())     # our own file, written by torch just now
    md.storage_meta = Payload()
    raw = pickle.dumps(md)
    (d / ".metadata").write_bytes(raw)
    v = verify_checkpoint(d)
    assert v.verdict == "corrupt_header", v.problems
    assert f"refers to {os.system.__module__}.system" in v.reason and "nothing in it was run" in v.reason
    proc = cli("verify", str(d))
    assert proc.returncode == 1 and proc.stdout.startswith("CORRUPT_HEADER") and "Traceback" not in proc.stderr
    assert not marker.exists()
    pickle.loads(raw)                                  # the control: plain unpickling does run it
    assert marker.exists()


@pytest.mark.parametrize("target", [("builtins", "eval"), ("subprocess", "Popen"), ("torch", "load"),
                                    ("torch.distributed.checkpoint.metadata", "torch")])
def test_every_global_outside_the_allow_list_is_refused(target):
    module, name = target
    raw = b"\x80\x04" + b"\x8c" + bytes([len(module)]) + module.encode() + b"\x8c" + bytes([len(name)]) + \
        name.encode() + b"\x93" + b"\x8c\x01x\x85R."
    with pytest.raises(DcpMetadataError) as err:
        parse_dcp_metadata(raw)
    assert err.value.refused == f"{module}.{name}"
    assert all(not callable(v) or isinstance(v, type) or v.__module__.endswith("dcp_metadata")
               for v in ALLOWED_GLOBALS.values())


def test_a_storage_entry_pointing_outside_the_save_is_corrupt(tmp_path):
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer(layers=1))
    md = pickle.loads((d / ".metadata").read_bytes())
    for info in md.storage_data.values():
        info.relative_path = "../../etc/passwd"
    (d / ".metadata").write_bytes(pickle.dumps(md))
    v = verify_checkpoint(d)
    assert v.verdict == "corrupt_header" and "bad file name '../../etc/passwd'" in v.reason, v.problems


def test_a_cut_short_metadata_is_corrupt(tmp_path):
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer(layers=1))
    raw = (d / ".metadata").read_bytes()
    (d / ".metadata").write_bytes(raw[: len(raw) // 2])
    v = verify_checkpoint(d)
    assert v.verdict == "corrupt_header" and ".metadata is cut short" in v.reason, v.problems
    entry = next(f for f in v.files if f["path"] == ".metadata")      # the bad file is named as bad
    assert (entry["ok"], entry["verdict"]) == (False, "corrupt_header") and "cut short" in entry["reason"], entry
    # the index was not read: the save's count is unknown ('-'), not zero tensors
    line = cli("verify", str(d)).stdout.splitlines()[0]
    assert line.startswith("CORRUPT_HEADER") and " - tensors " in line and " 0 tensors " not in line, line
    (ck,) = json.loads(cli("verify", str(d), "--json").stdout)["checkpoints"]
    assert ck["counted"] is False and ck["tensors"] == 0, ck


def test_an_adapter_beside_megatron_state_is_counted_once(mk, tmp_path):
    """ms-swift with --no_save_optim false: the safetensors adapter in checkpoint-N/ and the full
    Megatron state (DCP) in its iter_N/; the weights are counted from the adapter, the Megatron
    state's count is a note."""
    ck = mk.adapter(tmp_path / "checkpoint-50")
    adapter_only = verify_checkpoint(ck)
    megatron_save(ck, 50, model_and_optimizer())
    v = verify_checkpoint(ck)
    assert v.ok, v.problems
    assert (v.tensors, v.params) == (adapter_only.tensors, adapter_only.params)
    assert "Megatron state beside the safetensors: 4 model tensors (640 params) listed by its .metadata" in v.notes
    os.truncate(next(p for p in (ck / "iter_0000050").glob("*.distcp") if p.stat().st_size), 10)
    assert verify_checkpoint(ck).verdict == "truncated"


TRAINER = '''
import json, os, sys, warnings
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import FileSystemWriter

out = sys.argv[1]
for it in (4, 8):
    d = os.path.join(out, f"iter_{it:07d}")
    os.makedirs(d)
    torch.save({"iteration": it, "args": None}, os.path.join(d, "common.pt"))
    state = {f"decoder.layers.{i}.mlp.linear_fc1.weight": torch.full((16, 8), float(it)) for i in range(3)}
    state["optimizer.state.exp_avg.decoder.layers.0.mlp.linear_fc1.weight"] = torch.zeros(16, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save(state, storage_writer=FileSystemWriter(d, thread_count=2), no_dist=True)
    with open(os.path.join(d, "metadata.json"), "w") as f:
        json.dump({"sharded_backend": "torch_dist", "sharded_backend_version": 1, "common_backend": "torch"}, f)
    if it == 8:   # a rank's shard cut short (a full disk under an async save), the tracker written all the same
        shard = max((os.path.join(d, n) for n in os.listdir(d) if n.endswith(".distcp")), key=os.path.getsize)
        os.truncate(shard, os.path.getsize(shard) // 2)
    with open(os.path.join(out, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write(str(it))
    print(f"step: {it}  loss: 1.0", flush=True)
'''


def test_the_runner_counts_a_megatron_save_raises_on_a_cut_short_one_and_the_receipt_shows_both(tmp_path, runs_dir):
    from tests.runner.conftest import Harness

    script = tmp_path / "megatron_like.py"
    script.write_text(TRAINER)
    h = Harness(tmp_path, runs_dir)
    run = h.start(h.recipe(command=["{python}", str(script), "{run_dir}/output"], resume={"arg": None}))
    st = run.wait_status("unsaved", "succeeded", "failed", "killed", timeout=240)
    assert st["status"] == "unsaved", st           # finished, but its newest save is bad: not a success
    assert "the newest checkpoint iter_0000008 is truncated; last good checkpoint: iter_0000004" in st["pause_reason"]
    checks = {Path(e["path"]).name: e for e in run.events("checkpoint")}
    assert set(checks) == {"iter_0000004", "iter_0000008"}, run.events()
    good, bad = checks["iter_0000004"], checks["iter_0000008"]
    assert (good["ok"], good["tensors"], good["params"]) == (True, 3, 3 * 16 * 8), good
    assert (bad["ok"], bad["verdict"]) == (False, "truncated") and ".distcp is " in bad["reason"], bad
    alerts = [a for a in run.events("alert") if a.get("rule") == "checkpoint_bad"]
    assert alerts and "iter_0000008 is truncated" in alerts[0]["message"], alerts
    doc = json.loads(h.cli("runs", "receipt", run.id, "--json", check=True).stdout)
    rows = {Path(c["path"]).name: c for c in doc["checkpoints"]}
    assert (rows["iter_0000004"]["tensors"], rows["iter_0000004"]["verdict"]) == (3, "ok"), rows
    assert rows["iter_0000008"]["verdict"] == "truncated", rows
    assert all(len(c["header_sha256"] or "") == 64 for c in rows.values()), rows
    assert rows["iter_0000004"]["header_sha256"] != rows["iter_0000008"]["header_sha256"]


def test_an_ok_stored_by_older_checks_is_judged_again_before_a_resume(tmp_path):
    """A sidecar written before .metadata was read (no "checks" key) called a cut-short save ok;
    its files are unchanged since, but a resume must not start from it."""
    from moeconsole.runner.checkpoints.sidecar import fingerprint, read_sidecar, write_sidecar
    from moeconsole.runner.checkpoints.watch import latest_good
    from moeconsole.runner.rundir import jsonio

    save = tmp_path / "save"
    megatron_save(save, 100, model_and_optimizer())
    d = megatron_save(save, 200, model_and_optimizer())
    shard = max(d.glob("*.distcp"), key=lambda p: p.stat().st_size)
    os.truncate(shard, shard.stat().st_size // 2)
    old = {"v": 1, "run_id": "r", "recipe_hash": "h", "step": 200, "verdict": "ok", "suspect": False,
           "verified_at": 1767323045.1, "files": fingerprint(d)}
    jsonio.atomic_write_json(d / "moeconsole.json", old)
    assert read_sidecar(d) == old
    assert latest_good(save).path.name == "iter_0000100"
    write_sidecar(d, run_id="r", recipe_hash="h", step=200, verdict="ok", suspect=False)   # today's checks
    assert latest_good(save).path.name == "iter_0000200"       # a current stored verdict is trusted as before


def _global(module: str, name: str) -> bytes:
    """Pickle opcodes pushing ``module.name`` (SHORT_BINUNICODE x2, STACK_GLOBAL)."""
    return (b"\x8c" + bytes([len(module)]) + module.encode() + b"\x8c" + bytes([len(name)]) + name.encode() + b"\x93")


def test_a_metadata_cannot_change_the_stand_ins_for_the_next_read(tmp_path):
    """BUILD with a slot state sets attributes on whatever it is given, a class too: a pickle
    setting Metadata.__setstate__ (to torch.Size, the one builtin it can reach) would make every
    later, sound save in the same runner read as corrupt."""
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer(layers=1))
    good = (d / ".metadata").read_bytes()
    evil = (b"\x80\x04" + _global("torch.distributed.checkpoint.metadata", "Metadata") + b"N}"
            + b"\x8c\x0c__setstate__" + _global("torch", "Size") + b"s\x86b.")
    for target in (("torch.distributed.checkpoint.metadata", "Metadata"), ("torch.serialization", "_get_layout")):
        raw = evil.replace(_global("torch.distributed.checkpoint.metadata", "Metadata"), _global(*target))
        with pytest.raises(DcpMetadataError):
            parse_dcp_metadata(raw)
    assert len(parse_dcp_metadata(good).tensors) == 4


def test_a_metadata_repeating_one_long_string_is_refused_not_joined(tmp_path):
    """A pickle can name one 1 MB string 100,000 times at 2 bytes each; a stand-in that joined or
    printed its arguments would build 100 GB. The path stand-in refuses before joining."""
    big = b"\x8d" + (1 << 20).to_bytes(8, "little") + b"x" * (1 << 20) + b"\x94"      # BINUNICODE8, MEMOIZE
    raw = (b"\x80\x04" + _global("pathlib", "PosixPath") + big[:-1] + b"\x94\x30("    # memo 0, POP the copy, MARK
           + b"h\x00" * 100_000 + b"tR.")                                               # BINGET 0 x 10^5, TUPLE, REDUCE
    with pytest.raises(DcpMetadataError) as err:
        parse_dcp_metadata(raw)
    assert "a path that is not a few strings" in str(err.value) and len(str(err.value)) < 300, err.value


def test_a_metadata_above_the_read_limit_is_said_to_be_uncounted(tmp_path, monkeypatch):
    from moeconsole.runner.checkpoints import megatron

    d = megatron_save(tmp_path / "save", 100, model_and_optimizer(layers=1))
    monkeypatch.setattr(megatron, "_MAX_DCP_METADATA_BYTES", 1024)
    v = verify_checkpoint(d)
    assert v.ok and v.tensors == 0 and not v.counted, v.problems
    size = (d / ".metadata").stat().st_size
    assert f"iter_0000100/.metadata is {size / 1024:.1f} KB: not read (above 1.0 KB); tensors not counted, " \
        "shards checked for presence and size only" in v.notes, v.notes
    entry = next((f for f in v.files if f["path"] == ".metadata"), None)   # listed, so --full hashes it
    assert entry is not None and entry["ok"] and entry["reason"] == "not read (above 1.0 KB)", v.files
    full = verify_checkpoint(d, full=True)
    assert ".metadata" in full.full["file_hashes"], full.full


def test_a_tensor_size_that_is_no_tensors_is_corrupt(tmp_path):
    """Dimensions a tensor cannot have (negative, past 64 bits, more than 64 of them: multiplying
    out 10^5 huge numbers costs seconds) make the index corrupt."""
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer(layers=1))
    for size in ((4, -1), (1 << 64, 2), (2,) * 65):
        md = pickle.loads((d / ".metadata").read_bytes())
        md.state_dict_metadata["embedding.word_embeddings.weight"].size = size
        (d / ".metadata").write_bytes(pickle.dumps(md))
        v = verify_checkpoint(d)
        assert v.verdict == "corrupt_header" and "'embedding.word_embeddings.weight' has a size that is not up to 64 " \
            "non-negative 64-bit integers" in v.reason, (size, v.problems)


def test_a_shard_the_index_places_in_a_subdirectory_is_checked_there(tmp_path):
    """DCP's relative_path is a path under the checkpoint: a shard there is found and measured."""
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer(layers=1))
    md = pickle.loads((d / ".metadata").read_bytes())
    (d / "rank_0").mkdir()
    for info in md.storage_data.values():
        if info.relative_path == "__0_0.distcp":
            info.relative_path = "rank_0/__0_0.distcp"
    (d / "__0_0.distcp").rename(d / "rank_0" / "__0_0.distcp")
    (d / ".metadata").write_bytes(pickle.dumps(md))
    v = verify_checkpoint(d)
    assert v.ok and v.tensors == 2, v.problems
    shard = d / "rank_0" / "__0_0.distcp"
    os.truncate(shard, shard.stat().st_size - 1)
    v = verify_checkpoint(d)
    assert v.verdict == "truncated" and "rank_0/__0_0.distcp is " in v.reason, v.problems


def test_an_empty_metadata_is_the_file_named_as_the_stub(tmp_path):
    """torch writes ``.metadata`` last: a save stopped as it began that write leaves it at 0 bytes."""
    d = megatron_save(tmp_path / "save", 100, model_and_optimizer(layers=1))
    (d / ".metadata").write_bytes(b"")
    v = verify_checkpoint(d)
    assert v.verdict == "empty_stub" and "iter_0000100/.metadata is empty (0 bytes)" in v.reason, v.problems
    assert not v.counted
    entry = next((f for f in v.files if f["path"] == ".metadata"), None)
    assert entry is not None and (entry["ok"], entry["verdict"]) == (False, "empty_stub"), v.files


def test_overlapping_reads_keep_the_collector_paused_until_the_last_one_ends(monkeypatch):
    """The cyclic collector is the process's: a large index is parsed with it paused (3.5 times
    faster), and two threads (the console's, the runner's) may read two saves at once. The first
    read to end must not turn it back on under the other, which would then run at the slow pace;
    after the last, it is as it was before the first."""
    import gc
    import threading

    from moeconsole.runner.checkpoints import dcp_metadata
    from tests.checkpoints.conftest import dcp_index_bytes
    raw, _ = dcp_index_bytes(6_000)
    assert len(raw) > 1 << 20                          # large: read with the collector paused
    inside = {n: threading.Event() for n in ("first", "second")}
    release = {n: threading.Event() for n in ("first", "second")}
    held: set[str] = set()

    def size_then_wait(*args):
        """torch.Size's stand-in (a tuple), which each reader thread reaches once mid-parse and
        waits in until the test lets it go on: the parse is then provably under way."""
        name = threading.current_thread().name
        if name in inside and name not in held:
            held.add(name)
            inside[name].set()
            assert release[name].wait(60)
        return tuple(*args)

    monkeypatch.setitem(dcp_metadata.ALLOWED_GLOBALS, ("torch", "Size"), size_then_wait)
    results: dict[str, int] = {}

    def read(name: str) -> None:
        results[name] = len(dcp_metadata.parse_dcp_metadata(raw).tensors)

    was = gc.isenabled()
    gc.enable()
    threads = {n: threading.Thread(target=read, args=(n,), name=n) for n in ("first", "second")}
    try:
        threads["first"].start()
        assert inside["first"].wait(60)
        assert not gc.isenabled()                      # paused for the first read
        threads["second"].start()
        assert inside["second"].wait(60)
        release["first"].set()
        threads["first"].join(60)
        assert results.get("first") == 6_000
        assert not gc.isenabled(), "the first read to end turned the collector on under the second"
        release["second"].set()
        threads["second"].join(60)
        assert results.get("second") == 6_000
        assert gc.isenabled()                          # as before the first read
        gc.disable()                                   # a caller that keeps it off: left off
        dcp_metadata.parse_dcp_metadata(raw)
        assert not gc.isenabled()
    finally:
        for e in release.values():
            e.set()
        for t in threads.values():
            if t.is_alive():
                t.join(60)
        (gc.enable if was else gc.disable)()


def _save_with_an_empty_writer_file(save: Path) -> Path:
    """One tensor and two writer threads (Megatron-core's thread_count=2): torch's FileSystemWriter
    splits the items into two buckets and opens a file for each (filesystem.py
    ``_split_by_size_and_type``, ``_write_files_from_queue``), so the bucket that got nothing is a
    0-byte ``.distcp``. Written by torch itself."""
    import torch
    d = megatron_save(save, 4, {"decoder.layers.0.mlp.linear_fc1.weight": torch.ones(16, 8)})
    sizes = sorted(p.stat().st_size for p in d.glob("*.distcp"))
    assert len(sizes) == 2 and sizes[0] == 0 < sizes[1], sizes
    return d


def test_an_empty_writer_file_is_fine_when_the_index_says_so_and_not_judged_without_it(tmp_path):
    """Read, the index says the 0-byte file holds nothing: ok. Not read (above the 512 MB read
    limit), the same file cannot be judged either way: the save is not called an empty stub (torch
    writes such files for every save with fewer items than threads), and the ok line says the
    empty shard went unjudged. With a corrupt index, the headline is the index, not the shard."""
    d = _save_with_an_empty_writer_file(tmp_path / "read")
    v = verify_checkpoint(d)
    assert v.ok and v.tensors == 1, v.reason
    assert "not judged" not in v.reason

    d = _save_with_an_empty_writer_file(tmp_path / "big")
    with open(d / ".metadata", "r+b") as f:       # sparse: above the read limit at no disk cost
        f.truncate(600 << 20)
    v = verify_checkpoint(d)
    assert (v.ok, v.verdict) == (True, "ok"), (v.verdict, v.reason, v.problems)
    assert "1 empty .distcp not judged (.metadata not read)" in v.reason, v.reason
    empty = next(f for f in v.files if f["path"].endswith(".distcp") and f["size"] == 0)
    assert "not judged" in empty["reason"] and "writer thread" in empty["reason"], empty
    assert any("0 bytes not judged" in n for n in v.notes), v.notes

    from tests.checkpoints.conftest import write_adapter     # ms-swift 4.x: the adapter beside the Megatron state
    ck = tmp_path / "swift" / "checkpoint-4"
    d = _save_with_an_empty_writer_file(ck)
    write_adapter(ck)
    with open(d / ".metadata", "r+b") as f:
        f.truncate(600 << 20)
    v = verify_checkpoint(ck)
    assert v.ok and "LoRA r=" in v.reason and "1 empty .distcp not judged" in v.reason, (v.verdict, v.reason)

    d = _save_with_an_empty_writer_file(tmp_path / "corrupt")
    raw = (d / ".metadata").read_bytes()
    (d / ".metadata").write_bytes(raw[: len(raw) // 2])
    v = verify_checkpoint(d)
    assert v.verdict == "corrupt_header" and ".metadata" in v.reason, (v.verdict, v.reason)
    assert not any(p["verdict"] == "empty_stub" for p in v.problems), v.problems
    assert any("0 bytes not judged" in n for n in v.notes), v.notes


def test_a_save_whose_every_shard_is_empty_is_a_stub_even_without_its_index(tmp_path):
    d = _save_with_an_empty_writer_file(tmp_path / "s")
    for p in d.glob("*.distcp"):
        os.truncate(p, 0)
    (d / ".metadata").write_bytes(b"\x80\x04not a pickle")
    v = verify_checkpoint(d)
    assert v.verdict == "empty_stub" and ".distcp is empty (0 bytes)" in v.reason, (v.verdict, v.reason)
