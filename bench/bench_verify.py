"""Benchmark: checkpoint verification. Prints a Markdown section.

    .venv/bin/python bench/bench_verify.py [--iterations N] [--hash-gb G] [--rounds R]

1. Header verification (the fast path) of sparse shards of 1, 10 and 30 GB, each with the same
   real header of a MoE expert shard (5,000 bf16 tensors, ~0.6 MB of JSON): it must stay well
   under 50 ms and flat as the file grows. Baseline in the same run: the safetensors library
   opening the same file and listing its keys (``safe_open(...).keys()``).
2. ``--full`` hash throughput on a real (not sparse) 2 GB safetensors file against
   ``sha256sum`` (same digest), plus ``openssl dgst -sha256`` and ``b2sum`` for reference; the
   file is read once first, so every tool reads from the page cache (CPU-bound comparison).
3. The whole ``verify --full`` (hash + NaN/inf + all-zeros scan) on that file.
4. A Megatron torch_dist save's DCP ``.metadata`` with 100,000 tensors (``--dcp-entries``): the
   index torch itself pickles (its own Metadata / TensorStorageMetadata / _StorageInfo classes, the
   shape of a MoE save with every routed expert its own tensor), read by our restricted unpickler
   (dcp_metadata.py) against torch's own ``pickle.loads`` of the same bytes (which would run
   anything in it); then the whole ``verify`` of that save (sparse ``.distcp`` files).

Sparse files take no disk blocks; the 2 GB file is real. Everything is deleted at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from moeconsole.runner.checkpoints.safetensors_file import check_safetensors  # noqa: E402
from moeconsole.runner.checkpoints.scan import hash_file  # noqa: E402
from moeconsole.runner.checkpoints.verify import verify_checkpoint  # noqa: E402
from benchlib import p99, timings

GB = 1 << 30
HEADER_TENSORS = 5000






def moe_shard_header(total_bytes: int, n: int = HEADER_TENSORS) -> bytes:
    """A header like a MoE expert shard's: n bf16 expert matrices that exactly fill ``total_bytes``."""
    per = (total_bytes // n) & ~1
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for i in range(n):
        size = per if i < n - 1 else total_bytes - offset
        layer, rest = divmod(i, 1536)
        expert, proj = divmod(rest, 3)
        name = f"model.layers.{layer}.mlp.experts.{expert}.{('gate_proj', 'up_proj', 'down_proj')[proj]}.weight"
        header[name] = {"dtype": "BF16", "shape": [size // 2], "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    return raw + b" " * (-len(raw) % 8)


def sparse_shard(path: Path, total_bytes: int) -> None:
    raw = moe_shard_header(total_bytes)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + total_bytes)


def library_keys(path: Path) -> int:
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as f:
        return len(f.keys())


def bench_header(tmp: Path, iterations: int) -> list[str]:
    """All sizes are timed round-robin, so load from other processes hits each size alike."""
    sizes = (1, 10, 30)
    paths = {}
    for gb in sizes:
        paths[gb] = tmp / f"shard-{gb}gb.safetensors"
        sparse_shard(paths[gb], gb * GB)
        v = check_safetensors(paths[gb])
        assert v.ok and v.tensors == HEADER_TENSORS, v.reason
    small = tmp / "adapter.safetensors"
    raw = moe_shard_header(32 << 20, n=16)
    with open(small, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + (32 << 20))
    cases = {**{f"{gb} GB (sparse)": paths[gb] for gb in sizes}, "32 MB adapter (sparse)": small}
    ours: dict[str, list[float]] = {k: [] for k in cases}
    lib: dict[str, list[float]] = {k: [] for k in cases}
    for name, path in cases.items():          # warm-up
        check_safetensors(path)
        library_keys(path)
    for _ in range(iterations):
        for name, path in cases.items():
            t0 = time.perf_counter()
            check_safetensors(path)
            t1 = time.perf_counter()
            library_keys(path)
            t2 = time.perf_counter()
            ours[name].append(t1 - t0)
            lib[name].append(t2 - t1)
    rows = ["| file size | tensors | header | ours median ms | ours p99 ms | library median ms | ours / library |",
            "|---|---|---|---|---|---|---|"]
    for name, path in cases.items():
        v = check_safetensors(path)
        hdr = struct.unpack("<Q", path.open("rb").read(8))[0]
        om, lm = statistics.median(ours[name]), statistics.median(lib[name])
        rows.append(f"| {name} | {v.tensors} | {hdr / 1024:.1f} KB | {om * 1e3:.3f} | {p99(ours[name]) * 1e3:.3f} | "
                    f"{lm * 1e3:.3f} | {om / lm:.2f} |")
        path.unlink()
    medians = [statistics.median(ours[f"{gb} GB (sparse)"]) for gb in sizes]
    rows.append("")
    rows.append(f"30 GB vs 1 GB median: x{medians[-1] / medians[0]:.2f} (max/min over the three sizes "
                f"x{max(medians) / min(medians):.2f}): the fast path reads the header and one fstat, never the data.")
    return rows


def write_real_file(path: Path, total_bytes: int) -> None:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    parts = 8
    per = total_bytes // parts // 4
    tensors = {f"model.layers.{i}.mlp.weight": rng.standard_normal(per, dtype=np.float32) for i in range(parts)}
    save_file(tensors, str(path), metadata={"format": "pt"})


def run_tool(argv: list[str], path: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([*argv, str(path)], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def bench_hash(tmp: Path, gb: float, rounds: int) -> list[str]:
    ckpt = tmp / "checkpoint-1"
    ckpt.mkdir()
    path = ckpt / "model.safetensors"
    write_real_file(path, int(gb * GB))
    (ckpt / "config.json").write_text("{}")
    size = path.stat().st_size
    hash_file(path)                                     # warm the page cache
    tools: dict[str, Callable[[], float]] = {
        "moeconsole hash_file (sha256)": lambda: hash_file(path)[2],
        "sha256sum (coreutils)": lambda: run_tool(["sha256sum"], path),
    }
    if shutil.which("openssl"):
        tools["openssl dgst -sha256"] = lambda: run_tool(["openssl", "dgst", "-sha256"], path)
    if shutil.which("b2sum"):
        tools["b2sum (BLAKE2b)"] = lambda: run_tool(["b2sum"], path)
    samples: dict[str, list[float]] = {k: [] for k in tools}
    for _ in range(rounds):                             # interleaved, so drift hits every tool alike
        for name, fn in tools.items():
            samples[name].append(fn())
    ours_digest = hash_file(path)[0]
    theirs = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True).stdout.split()[0]
    assert ours_digest == theirs, "digest differs from sha256sum"
    base = statistics.median(samples["sha256sum (coreutils)"])
    rows = [f"File: {size / GB:.2f} GiB real safetensors (8 F32 tensors), page cache warm, {rounds} interleaved rounds; "
            "digest identical to sha256sum's.", "",
            "| tool | median s | MB/s | speed vs sha256sum |", "|---|---|---|---|"]
    for name, xs in samples.items():
        med = statistics.median(xs)
        rows.append(f"| {name} | {med:.3f} | {size / med / 1e6:.0f} | {base / med:.2f} |")
    t_full = timings(lambda: verify_checkpoint(ckpt, full=True), max(1, rounds // 2), warmup=1)
    v = verify_checkpoint(ckpt, full=True)
    assert v.ok, v.reason
    med = statistics.median(t_full)
    rows += ["", f"`verify --full` of the whole checkpoint (hash, then NaN/inf + all-zeros scan of "
             f"{v.full['tensors_scanned']} tensors through the safetensors library): median {med:.2f} s, "
             f"{size / med / 1e6:.0f} MB/s end to end; the hash part alone reported {v.full['mb_per_s']} MB/s."]
    return rows


def dcp_metadata_bytes(n: int, files: int = 64, chunk: int = 1 << 20) -> tuple[bytes, dict[str, int]]:
    """torch's own ``.metadata`` pickle for ``n`` bf16 expert tensors spread over ``files`` shards
    (built with torch's classes exactly as FileSystemWriter.finish pickles them), and each
    shard's length."""
    import pickle

    import torch
    from torch.distributed.checkpoint.filesystem import _StorageInfo
    from torch.distributed.checkpoint.metadata import (ChunkStorageMetadata, Metadata, MetadataIndex,
                                                       TensorProperties, TensorStorageMetadata)

    sdm: dict = {}
    storage: dict = {}
    ends: dict[str, int] = {}
    props = TensorProperties(dtype=torch.bfloat16)
    for i in range(n):
        layer, expert = divmod(i, 512)
        fqn = f"decoder.layers.{layer}.mlp.experts.local_experts.{expert}.linear_fc1.weight"
        sdm[fqn] = TensorStorageMetadata(props, torch.Size([1024, chunk // 2048]),
                                         [ChunkStorageMetadata(torch.Size([0, 0]), torch.Size([1024, chunk // 2048]))])
        f = f"__{i % files}_0.distcp"
        storage[MetadataIndex(fqn, (0, 0))] = _StorageInfo(f, ends.get(f, 0), chunk)
        ends[f] = ends.get(f, 0) + chunk
    return pickle.dumps(Metadata(sdm, storage_data=storage)), ends


def bench_dcp_index(tmp: Path, n: int, iterations: int) -> list[str]:
    import pickle

    from moeconsole.runner.checkpoints.dcp_metadata import parse_dcp_metadata

    raw, ends = dcp_metadata_bytes(n)
    save = tmp / "megatron"
    d = save / "iter_0000100"
    d.mkdir(parents=True)
    (d / ".metadata").write_bytes(raw)
    for f, end in ends.items():
        with open(d / f, "wb") as fh:
            fh.truncate(end)
    (d / "common.pt").write_bytes(b"x")
    (d / "metadata.json").write_text('{"sharded_backend": "torch_dist"}')
    (save / "latest_checkpointed_iteration.txt").write_text("100")
    assert len(parse_dcp_metadata(raw).tensors) == n
    v = verify_checkpoint(d)
    assert v.ok and v.tensors == n, v.reason
    wall: dict[str, list[float]] = {k: [] for k in ("ours", "torch", "verify")}
    cpu: dict[str, list[float]] = {k: [] for k in wall}
    calls = {"ours": lambda: parse_dcp_metadata(raw), "torch": lambda: pickle.loads(raw),
             "verify": lambda: verify_checkpoint(d)}
    for _ in range(iterations):                 # interleaved, so load from other processes hits each alike
        for name, fn in calls.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    shutil.rmtree(save)
    label = {"ours": "restricted unpickler (`parse_dcp_metadata`)",
             "torch": "`pickle.loads` with torch's classes (executes the pickle)",
             "verify": "whole `verify` of the save (index + stat of every shard)"}
    return [f"`.metadata` of {n:,} tensors over {len(ends)} `.distcp` files: {len(raw) / 1e6:.1f} MB; "
            f"{iterations} interleaved rounds. CPU time (`process_time`) is what the reading costs; wall "
            "time also holds the waits of a shared machine.", "",
            "| reader | median CPU s | median wall s | p99 wall s |", "|---|---|---|---|"] + [
            f"| {label[k]} | {statistics.median(cpu[k]):.3f} | {statistics.median(wall[k]):.3f} | {p99(wall[k]):.3f} |"
            for k in calls]


def _shown(executable: str) -> str:
    """The interpreter as the user would type it from the repo (``.venv/bin/python``)."""
    try:
        return str(Path(executable).relative_to(REPO))
    except ValueError:
        return executable


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--hash-gb", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dcp-entries", type=int, default=100_000)
    ap.add_argument("--only-dcp", action="store_true", help="run the DCP .metadata case only")
    ap.add_argument("--dir", default=None, help="where to put the benchmark files (default: a temp dir)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-verify-", dir=args.dir))
    free = shutil.disk_usage(tmp).free
    if free < (args.hash_gb + 1) * GB:
        sys.exit(f"bench_verify: need {args.hash_gb + 1:.0f} GB free in {tmp}, have {free / GB:.1f}")
    try:
        t0 = time.time()
        cpu = platform.processor() or platform.machine()
        lines = ["## Checkpoint verification", "",
                 f"`{' '.join([_shown(sys.executable), *sys.argv])}` on {os.cpu_count()} cores ({cpu}), "
                 f"Python {platform.python_version()}, numpy {np.__version__}.", "",
                 "### Header verification (fast path), sparse shards with a real 5,000-tensor header", ""]
        if not args.only_dcp:
            lines += bench_header(tmp, args.iterations)
            lines += ["", "### `--full` content hash against sha256sum", ""]
            lines += bench_hash(tmp, args.hash_gb, args.rounds)
        lines += ["", "### Megatron torch_dist: reading DCP's `.metadata`", ""]
        lines += bench_dcp_index(tmp, args.dcp_entries, args.rounds)
        lines += ["", f"Total benchmark time {time.time() - t0:.0f} s."]
        print("\n".join(lines))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
