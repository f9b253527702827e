"""Benchmark: the demo trainer. Prints a Markdown section.

    .venv/bin/python bench/bench_demo.py [--steps N] [--starts N]

1. Start-up: launch of ``python -m moeconsole.runner.demo.train`` to its first step line in the log file,
   against launch of ``python -c "import torch; print(...)"`` to that print (baseline, same run).
2. One training step in-process (forward, backward, clip, AdamW) of the default MoE (8 experts,
   top-2, shared expert), against the same model with one routed expert, top-1 (baseline).
3. The optimizer step alone: the demo's AdamW against ``torch.optim.AdamW`` (foreach off, the
   single-tensor loop torch uses on CPU) on the same 126 LoRA tensors.
4. A checkpoint save (all six files, temp dir + rename) against ``safetensors.torch.save_file``
   of the same adapter tensors alone.
5. Seconds per step reported by the trainer itself: one process against torchrun with 2.
"""
from __future__ import annotations

import argparse
import ast
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from benchlib import timings

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PY = sys.executable


def p99(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]




def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("MOECONSOLE_ATTEMPT", "WORLD_SIZE", "RANK")}
    e["PYTHONPATH"] = str(REPO)
    return e


def time_to_marker(cmd: list[str], marker: bytes, log: Path) -> float:
    """Seconds from Popen to ``marker`` appearing in the process's log file; then kill it."""
    t0 = time.perf_counter()
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env())
    try:
        while marker not in log.read_bytes():
            if proc.poll() is not None:
                raise RuntimeError(log.read_text()[-2000:])
            time.sleep(0.005)
        return time.perf_counter() - t0
    finally:
        proc.kill()
        proc.wait()


def time_to_first_step(workdir: Path, i: int) -> float:
    cmd = [PY, "-m", "moeconsole.runner.demo.train", "--output_dir", str(workdir / f"s{i}"),
           "--max_steps", "1000", "--save_steps", "1000"]
    return time_to_marker(cmd, b"global_step/max_steps", workdir / f"start{i}.log")


def time_import_torch(workdir: Path, i: int) -> float:
    cmd = [PY, "-c", "import torch, time; print('imported', flush=True); time.sleep(60)"]
    return time_to_marker(cmd, b"imported", workdir / f"import{i}.log")


def trainer(*extra: str):
    from moeconsole.runner.demo.dist import World
    from moeconsole.runner.demo.faultspec import FaultPlan
    from moeconsole.runner.demo.train import build_train_parser
    from moeconsole.runner.demo.trainer import DemoTrainer

    args = build_train_parser().parse_args(["--output_dir", tempfile.mkdtemp(prefix="bench-demo-"),
                                      "--max_steps", "100000", *extra])
    t = DemoTrainer(args, World(), FaultPlan([], 1, 0), [])
    t.con.enabled = False
    return t


def step_timings(t, n: int) -> list[float]:
    step = iter(range(1, 10 ** 9))
    return timings(lambda: t.train_step(next(step)), n, warmup=5)


def optimizer_timings(n: int) -> tuple[list[float], list[float]]:
    import torch

    from moeconsole.runner.demo.model import ModelConfig, TinyMoELM, lora_parameters
    from moeconsole.runner.demo.optim import AdamW

    def make():
        model = TinyMoELM(ModelConfig(), 42)
        params = lora_parameters(model)
        for p in params:
            p.grad = torch.randn_like(p) * 1e-3
        return params

    ours = AdamW(make(), lr=3e-3)
    theirs = torch.optim.AdamW(make(), lr=3e-3, weight_decay=0.0, foreach=False)
    return timings(ours.step, n), timings(theirs.step, n)


def save_timings(t, n: int) -> tuple[list[float], list[float]]:
    from safetensors.torch import save_file

    from moeconsole.runner.demo.model import lora_state_dict

    t.train_step(1)
    t.con.enabled = False
    step = iter(range(1, 10 ** 9))
    full = timings(lambda: t.save(next(step)), n)
    tensors = lora_state_dict(t.model)
    out = t.output_dir / "bare.safetensors"
    bare = timings(lambda: save_file(tensors, str(out)), n)
    return full, bare


def reported_speed(workdir: Path, steps: int, nproc: int) -> float:
    cmd = [PY]
    if nproc:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd += ["-m", "torch.distributed.run", "--nproc_per_node", str(nproc), "--master_port", str(port)]
    cmd += ["-m", "moeconsole.runner.demo.train", "--output_dir", str(workdir / f"speed{nproc}"),
            "--max_steps", str(steps), "--save_steps", str(steps)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=600)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    lines = [ln.rsplit("\r", 1)[-1].strip() for ln in proc.stdout.split("\n")]
    steps_logged = [ast.literal_eval(ln) for ln in lines if ln.startswith("{'loss'")]
    return float(steps_logged[-1]["train_speed(s/it)"])


def row(what: str, xs: list[float], scale: float = 1000.0) -> str:
    return f"| {what} | {statistics.median(xs) * scale:.2f} | {p99(xs) * scale:.2f} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200, help="timed steps per in-process measurement")
    ap.add_argument("--starts", type=int, default=5, help="process launches per start-up measurement")
    ap.add_argument("--speed-steps", type=int, default=100)
    opts = ap.parse_args()

    import torch
    torch.set_num_threads(1)
    workdir = Path(tempfile.mkdtemp(prefix="bench-demo-"))

    starts = [time_to_first_step(workdir, i) for i in range(opts.starts)]
    imports = [time_import_torch(workdir, i) for i in range(opts.starts)]
    moe = step_timings(trainer(), opts.steps)
    dense = step_timings(trainer("--experts", "1", "--top_k", "1"), opts.steps)
    ours, theirs = optimizer_timings(opts.steps)
    full_save, bare_save = save_timings(trainer(), 20)
    single = reported_speed(workdir, opts.speed_steps, 0)
    pair = reported_speed(workdir, opts.speed_steps, 2)

    print("## Demo trainer\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}, 1 torch thread per process.\n")
    print("| what | median ms | p99 ms |")
    print("|---|---:|---:|")
    print(row(f"launch of `python -c 'import torch'` to its first output (baseline), {opts.starts} runs", imports))
    print(row("launch to first step line in the log", starts))
    print(row(f"train step, 1 expert top-1 + shared (baseline), {opts.steps} steps", dense))
    print(row(f"train step, 8 experts top-2 + shared (default), {opts.steps} steps", moe))
    print(row("torch.optim.AdamW step, 126 LoRA tensors (baseline)", theirs))
    print(row("demo AdamW step, same tensors", ours))
    print(row("safetensors save_file of the adapter alone (baseline), 20 saves", bare_save))
    print(row("full checkpoint save (6 files, temp dir + rename), 20 saves", full_save))
    print()
    print(f"Ratios: start-up / import torch = {statistics.median(starts) / statistics.median(imports):.2f}; "
          f"MoE step / dense step = {statistics.median(moe) / statistics.median(dense):.2f}; "
          f"demo AdamW / torch AdamW = {statistics.median(ours) / statistics.median(theirs):.2f}; "
          f"full save / bare save_file = {statistics.median(full_save) / statistics.median(bare_save):.2f}.\n")
    print(f"Seconds per step as the trainer reports it (`train_speed(s/it)`, {opts.speed_steps} steps, "
          f"global batch 16 x 64 bytes): 1 process {single:.4f}, torchrun 2 processes {pair:.4f} "
          f"(ratio {pair / single:.2f}).")


if __name__ == "__main__":
    main()
