"""The built-in demo workload: LoRA fine-tuning of a tiny MoE causal LM on CPU, ms-swift style.

    python -m moeconsole.runner.demo.train --output_dir DIR --max_steps N [--save_steps 10] [--logging_steps 1]
        [--resume_from_checkpoint CKPT_DIR] [--seed 42] [--step_delay 0] [--learning_rate 3e-3]
        [--lora_rank 8] [--batch_size 16] [--seq_len 64] [--experts 8] [--top_k 2]
        [--fault KIND@STEP[#ATTEMPT][:rank=R|all]] ...

It writes what ms-swift 4.x writes (docs/demo.md): per-step dict lines on stdout, a ``Train:`` bar
and ``[INFO:swift]`` lines on stderr, ``logging.jsonl`` and ``checkpoint-N/`` dirs in the output
dir. Under torchrun (WORLD_SIZE > 1) it trains data-parallel over gloo; rank 0 prints and saves.
Exit status: 0 done, 1 a training error, 2 bad arguments; faults add their own (docs/demo.md).
Arguments are checked before torch is imported, so a bad flag costs milliseconds.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from moeconsole.runner.demo.dist import World
from moeconsole.runner.demo.faultspec import Fault, FaultPlan, attempt_from_env, parse_fault
from moeconsole.runner.demo.schedule import is_save_step

PROG = "moeconsole.runner.demo.train"
NUM_HEADS = 4  # ModelConfig.num_heads (kept here so checks run without torch); tested equal


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_train_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Tiny MoE LoRA trainer that logs like ms-swift (moeconsole demo).")
    p.add_argument("--output_dir", required=True)
    p.add_argument("--max_steps", type=int, required=True)
    p.add_argument("--save_steps", type=int, default=10)
    p.add_argument("--logging_steps", type=int, default=1)
    p.add_argument("--resume_from_checkpoint", default=None, metavar="CKPT_DIR")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--step_delay", type=float, default=0.0, metavar="SECONDS",
                   help="extra sleep per step, to emulate a slower run")
    p.add_argument("--learning_rate", type=float, default=3e-3)
    p.add_argument("--lora_rank", type=int, default=8)
    p.add_argument("--lora_alpha", type=int, default=16)
    p.add_argument("--batch_size", type=int, default=16, help="global batch (sequences per step)")
    p.add_argument("--seq_len", type=int, default=64)
    p.add_argument("--experts", type=int, default=8)
    p.add_argument("--top_k", type=int, default=2)
    p.add_argument("--hidden_size", type=int, default=64)
    p.add_argument("--num_layers", type=int, default=2)
    p.add_argument("--max_grad_norm", type=float, default=1.0)
    p.add_argument("--num_threads", type=int, default=1, help="torch CPU threads per process")
    p.add_argument("--enable_jit_checkpoint", action="store_true",
                   help="on SIGTERM, save a checkpoint at the next step's end and stop (transformers' "
                        "JITCheckpointCallback): a preemption's grace time saves the work")
    p.add_argument("--save_on_signal", default=None, metavar="SIG",
                   help="on signal SIG (USR1, Slurm's --signal=USR1@N ahead of a time limit), save at the step's end "
                        "and exit 0, saying nothing (a user's own handler)")
    p.add_argument("--requeue_on_signal", action="store_true",
                   help="with --save_on_signal: after the save, `scontrol requeue $SLURM_JOB_ID` as PyTorch "
                        "Lightning's SLURM auto-requeue does, its answer printed, then exit 0")
    p.add_argument("--fault", action="append", default=[], metavar="KIND@STEP[#ATTEMPT]",
                   help="inject a fault (repeatable); see docs/demo.md")
    return p


def refuse_bad_settings(args: argparse.Namespace, world_size: int, faults: Sequence[Fault]) -> None:
    """Reject settings the trainer cannot run with, as ValueError with a one-line reason."""
    for name in ("max_steps", "save_steps", "logging_steps", "lora_rank", "lora_alpha", "batch_size",
                 "experts", "top_k", "hidden_size", "num_layers", "num_threads"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be at least 1, got {getattr(args, name)}")
    if not args.learning_rate > 0:
        raise ValueError(f"--learning_rate must be positive, got {args.learning_rate}")
    if not args.max_grad_norm > 0:
        raise ValueError(f"--max_grad_norm must be positive, got {args.max_grad_norm}")
    if not args.step_delay >= 0:
        raise ValueError(f"--step_delay must not be negative, got {args.step_delay}")
    if args.top_k > args.experts:
        raise ValueError(f"--top_k {args.top_k} is more than --experts {args.experts}")
    if args.hidden_size % NUM_HEADS:
        raise ValueError(f"--hidden_size must be a multiple of {NUM_HEADS} (attention heads), got {args.hidden_size}")
    if not 2 <= args.seq_len <= 4096:
        raise ValueError(f"--seq_len must be between 2 and 4096, got {args.seq_len}")
    if args.batch_size % world_size:
        raise ValueError(f"--batch_size {args.batch_size} does not split over WORLD_SIZE {world_size}")
    for f in faults:
        if f.kind in ("stub", "enospc") and not is_save_step(f.step, args.save_steps, args.max_steps):
            raise ValueError(f"--fault {f.kind}@{f.step}: no checkpoint is saved at step {f.step} "
                             f"(save_steps={args.save_steps}, max_steps={args.max_steps})")


def run(args: argparse.Namespace, world: World, plan: FaultPlan, argv: list[str]) -> int:
    """Start-up (output dir, port fault, process group), then train. Imports torch."""
    from moeconsole.runner.demo import dist, faults
    from moeconsole.runner.demo.swiftlog import SwiftConsole
    from moeconsole.runner.demo.trainer import DemoTrainer

    output_dir = Path(args.output_dir).resolve()
    if world.is_main:
        try:
            output_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            sys.stderr.write(f"{PROG}: error: cannot create --output_dir {output_dir}: {exc.strerror}\n")
            return 2
    SwiftConsole(enabled=world.is_main).info(f"output_dir: {output_dir}")
    if plan.fires("port"):
        faults.fail_rendezvous_on_busy_port(int(os.environ.get("MASTER_PORT", "29500")),
                                            os.environ.get("MASTER_ADDR", "127.0.0.1"))
    if world.distributed:
        dist.init(world)
    trainer = DemoTrainer(args, world, plan, argv)
    trainer.describe_model()
    if args.resume_from_checkpoint:
        trainer.resume(Path(args.resume_from_checkpoint).resolve())
    trainer.run()
    dist.shutdown(world)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_train_parser().parse_args(argv)
    try:
        faults = [parse_fault(text) for text in args.fault]
        attempt = attempt_from_env()
        world = World.from_env()
        refuse_bad_settings(args, world.size, faults)
    except ValueError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    from moeconsole.runner.demo.checkpoint import CheckpointLoadError

    try:
        return run(args, world, FaultPlan(faults, attempt, world.rank), argv)
    except CheckpointLoadError as exc:
        sys.stderr.write(f"{PROG}: error: cannot resume: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
