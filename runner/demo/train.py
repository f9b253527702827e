"""The built-in demo workload: LoRA fine-tuning of a tiny MoE causal LM on CPU, ms-swift style.

    python -m runner.demo.train --output_dir DIR --max_steps N [--save_steps 10] [--logging_steps 1]
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
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from runner.demo.faultspec import Fault, FaultPlan, attempt_from_env, parse_fault

PROG = "runner.demo.train"
NUM_HEADS = 4


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
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
    p.add_argument("--fault", action="append", default=[], metavar="KIND@STEP[#ATTEMPT]",
                   help="inject a fault (repeatable); see docs/demo.md")
    return p


def validate(args: argparse.Namespace, world_size: int, faults: Sequence[Fault]) -> None:
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
    if args.hidden_size % (2 * NUM_HEADS):
        raise ValueError(f"--hidden_size must be a multiple of {2 * NUM_HEADS}, got {args.hidden_size}")
    if not 2 <= args.seq_len <= 4096:
        raise ValueError(f"--seq_len must be between 2 and 4096, got {args.seq_len}")
    if args.batch_size % world_size:
        raise ValueError(f"--batch_size {args.batch_size} does not split over WORLD_SIZE {world_size}")
    for f in faults:
        if f.kind == "stub" and not is_save_step(f.step, args):
            raise ValueError(f"--fault stub@{f.step}: no checkpoint is saved at step {f.step} "
                             f"(save_steps={args.save_steps}, max_steps={args.max_steps})")


def is_save_step(step: int, args: argparse.Namespace) -> bool:
    return step % args.save_steps == 0 or step == args.max_steps


def is_log_step(step: int, args: argparse.Namespace) -> bool:
    """ms-swift logs the first step, every ``logging_steps``, and (here) the last one."""
    return step == 1 or step % args.logging_steps == 0 or step == args.max_steps


def append_jsonl(path: Path, record: dict) -> None:
    """ms-swift's logging.jsonl append: plain json.dumps (a NaN stays the bare token NaN)."""
    with open(path, "a") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")


@dataclass
class Interval:
    """Sums since the last logged step: the logged loss and token_acc are interval means."""
    loss: float = 0.0
    acc: float = 0.0
    steps: int = 0

    def add(self, loss: float, acc: float) -> None:
        self.loss += loss
        self.acc += acc
        self.steps += 1

    def take(self) -> tuple[float, float]:
        n = max(self.steps, 1)
        out = (self.loss / n, self.acc / n)
        self.loss, self.acc, self.steps = 0.0, 0.0, 0
        return out


@dataclass(frozen=True)
class StepResult:
    loss: float
    token_acc: float
    grad_norm: float


@dataclass
class Progress:
    """What this process has done so far (for the log lines and the end-of-run records)."""
    started: float = field(default_factory=time.time)
    steps: int = 0
    losses: list[float] = field(default_factory=list)
    log_history: list[dict] = field(default_factory=list)
    last_checkpoint: Path | None = None

    @property
    def elapsed(self) -> float:
        return time.time() - self.started


class DemoTrainer:
    """One process's share of the training: model, optimizer, data, faults, output."""

    def __init__(self, args: argparse.Namespace, world: Any, plan: FaultPlan, argv: list[str]) -> None:
        import torch

        from runner.demo import checkpoint as ckpt
        from runner.demo.data import load_corpus
        from runner.demo.model import TARGET_MODULES, ModelConfig, TinyMoELM, lora_parameters
        from runner.demo.optim import AdamW
        from runner.demo.swiftlog import SwiftConsole

        torch.set_num_threads(args.num_threads)
        self.args, self.world, self.plan = args, world, plan
        self.con = SwiftConsole(enabled=world.is_main)
        self.output_dir = Path(args.output_dir).resolve()
        self.cfg = ModelConfig(hidden_size=args.hidden_size, num_layers=args.num_layers, num_heads=NUM_HEADS,
                               experts=args.experts, top_k=args.top_k, max_seq_len=args.seq_len,
                               lora_rank=args.lora_rank, lora_alpha=args.lora_alpha)
        self.model = TinyMoELM(self.cfg, args.seed)
        if plan.fires("gpu_busy"):  # where a GPU run would move the weights onto the device
            from runner.demo import faults
            faults.raise_gpu_busy_oom(world.local_rank)
        self.params = lora_parameters(self.model)
        self.optimizer = AdamW(self.params, lr=args.learning_rate, weight_decay=0.0)
        self.corpus = load_corpus()
        self.progress = Progress()
        self.interval = Interval()
        self.start_step = 0
        self.args_record = dict(vars(args), argv=argv, world_size=world.size, model=self.cfg.as_dict())
        if os.environ.get("MOECONSOLE_RECIPE_HASH"):
            self.args_record["moeconsole_recipe_hash"] = os.environ["MOECONSOLE_RECIPE_HASH"]
        self.adapter_config = ckpt.adapter_config(TARGET_MODULES, self.cfg.lora_rank, self.cfg.lora_alpha,
                                                  self.cfg.as_dict())

    @property
    def logging_jsonl(self) -> Path:
        return self.output_dir / "logging.jsonl"

    def describe_model(self) -> None:
        from runner.demo.model import parameter_counts

        trainable, total = parameter_counts(self.model)
        c = self.cfg
        self.con.info(f"model: tiny MoE causal LM, {c.num_layers} layers, {c.experts} experts top-{c.top_k} "
                      f"+ 1 shared, LoRA r={c.lora_rank}; trainable params: {trainable:,} || "
                      f"all params: {total:,} || trainable%: {100 * trainable / total:.4f}")

    def resume(self, path: Path) -> None:
        """Load adapter weights, optimizer moments, RNG and log history; continue after its step."""
        from runner.demo import checkpoint as ckpt
        from runner.demo.model import load_lora_state_dict

        tensors, optimizer_state, state = ckpt.load_checkpoint(path)
        try:
            load_lora_state_dict(self.model, tensors)
            self.optimizer.load_state_dict(optimizer_state)
        except (ValueError, KeyError, TypeError, RuntimeError) as exc:
            raise ckpt.CheckpointLoadError(f"{path} does not fit this model: {exc}") from None
        self.start_step = int(state["global_step"])
        self.progress.log_history = list(state.get("log_history") or [])
        self.con.info(f"Resuming from checkpoint {path} at step {self.start_step}")

    def arm_step_faults(self, step: int) -> None:
        """Faults that act inside the computation of ``step``."""
        from runner.demo import faults

        layer0 = self.model.layers[0]
        if self.plan.fires("nan", step):
            faults.poison_with_nan(layer0.attn.q_proj.lora_A)
        if self.plan.fires("cuda_fault", step):
            layer0.mlp.router_hook = faults.illegal_memory_access_router
        if self.plan.fires("recompute", step):
            layer0.checkpoint_mlp = True
            layer0.mlp.router_hook = faults.drifting_router()

    def train_step(self, step: int) -> StepResult:
        import torch
        import torch.nn.functional as F

        from runner.demo import dist, faults
        from runner.demo.data import batch_for_step, shard

        args, world = self.args, self.world
        inputs, labels = batch_for_step(self.corpus, args.seed, step, args.batch_size, args.seq_len)
        inputs, labels = shard(inputs, world.rank, world.size), shard(labels, world.rank, world.size)
        logits = self.model(inputs)
        if self.plan.fires("oom", step):
            logits = faults.oom_in_backward(logits, world.local_rank)
        loss = F.cross_entropy(logits.reshape(-1, self.cfg.vocab_size), labels.reshape(-1))
        scale = faults.SPIKE_SCALE if self.plan.fires("spike", step) else 1.0
        self.optimizer.zero_grad()
        (loss * scale).backward()
        dist.average_gradients(self.params, world)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, args.max_grad_norm))
        self.optimizer.step()
        with torch.no_grad():
            tokens = float(labels.numel())
            correct = (logits.argmax(-1) == labels).sum().double()
            totals = torch.stack([loss.detach().double() * tokens, correct, torch.tensor(tokens).double()])
            totals = dist.sum_across_ranks(totals, world)
        return StepResult(loss=float(totals[0] / totals[2]), token_acc=float(totals[1] / totals[2]),
                          grad_norm=grad_norm)

    def report(self, step: int, result: StepResult) -> None:
        """Bar update on every step; dict line, logging.jsonl and log history on logging steps."""
        from runner.demo.swiftlog import progress_bar, rss_gib, train_message

        args, progress = self.args, self.progress
        progress.steps += 1
        progress.losses.append(result.loss)
        self.interval.add(result.loss, result.token_acc)
        elapsed = progress.elapsed
        self.con.bar(progress_bar(step, args.max_steps, elapsed, progress.steps))
        if not is_log_step(step, args):
            return
        mean_loss, mean_acc = self.interval.take()
        metrics = {"loss": mean_loss, "grad_norm": result.grad_norm, "learning_rate": args.learning_rate,
                   "token_acc": mean_acc, "epoch": self.epoch(step)}
        progress.log_history.append({**metrics, "step": step})
        logs = train_message(metrics, step, args.max_steps, elapsed, progress.steps, rss_gib())
        self.con.step_dict(logs)
        if self.world.is_main:
            append_jsonl(self.logging_jsonl, logs)

    def epoch(self, step: int) -> float:
        from runner.demo.data import epoch_at

        return epoch_at(step, self.args.batch_size, self.args.seq_len, self.corpus.numel())

    def save(self, step: int) -> None:
        from runner.demo import checkpoint as ckpt
        from runner.demo.model import lora_state_dict

        args = self.args
        target = ckpt.checkpoint_dir(self.output_dir, step)
        self.con.info(f"Saving model checkpoint to {target}")
        state = ckpt.trainer_state(step=step, max_steps=args.max_steps, epoch=self.epoch(step),
                                   logging_steps=args.logging_steps, save_steps=args.save_steps,
                                   batch_size=args.batch_size, log_history=self.progress.log_history)
        self.progress.last_checkpoint = ckpt.save_checkpoint(
            self.output_dir, step, tensors=lora_state_dict(self.model), config=self.adapter_config,
            args=self.args_record, state=state, optimizer_state=self.optimizer.state_dict(),
            stub=self.plan.fires("stub", step))

    def finish(self) -> None:
        """End-of-run dict and logging.jsonl records, as HF/ms-swift write them."""
        from runner.demo.swiftlog import format_time, rss_gib

        args, progress = self.args, self.progress
        runtime = progress.elapsed
        if progress.steps and self.world.is_main:
            summary = {"train_runtime": round(runtime, 4),
                       "train_samples_per_second": round(progress.steps * args.batch_size / runtime, 3),
                       "train_steps_per_second": round(progress.steps / runtime, 3),
                       "train_loss": sum(progress.losses) / len(progress.losses),
                       "epoch": self.epoch(args.max_steps)}
            self.con.step_dict(summary)
            append_jsonl(self.logging_jsonl, summary)
            last = progress.last_checkpoint
            append_jsonl(self.logging_jsonl, {
                "last_model_checkpoint": str(last) if last else None, "best_model_checkpoint": None,
                "best_metric": None, "global_step": args.max_steps, "log_history": progress.log_history,
                "memory": round(rss_gib(), 2)})
        self.con.end_bar()
        self.con.info(f"End time of running main: {time.strftime('%Y-%m-%d %H:%M:%S')} "
                      f"(train time {format_time(runtime)})")

    def run(self) -> None:
        try:
            for step in range(self.start_step + 1, self.args.max_steps + 1):
                fail_before_step(self.plan, step, self.world.rank)
                self.arm_step_faults(step)
                result = self.train_step(step)
                if self.args.step_delay:
                    time.sleep(self.args.step_delay)
                self.report(step, result)
                if is_save_step(step, self.args) and self.world.is_main:
                    self.save(step)
            self.finish()
        finally:
            # ms-swift prints these from a cleanup block: they also appear after a crash.
            self.con.info(f"last_model_checkpoint: {self.progress.last_checkpoint}")
            self.con.info("best_model_checkpoint: None")


def fail_before_step(plan: FaultPlan, step: int, rank: int) -> None:
    """Faults that end (or freeze) the process at the start of ``step``."""
    from runner.demo import faults

    if plan.fires("hang", step):
        faults.hang_forever()
    if plan.fires("sigkill", step):
        faults.die_by_sigkill()
    if plan.fires("segv", step):
        faults.die_by_segfault()
    if plan.fires("bus", step):
        faults.die_by_bus_error()
    if plan.fires("nccl", step):
        faults.die_by_nccl_watchdog(rank, step)


def run(args: argparse.Namespace, world: Any, plan: FaultPlan, argv: list[str]) -> int:
    from runner.demo import dist, faults

    output_dir = Path(args.output_dir).resolve()
    if world.is_main:
        output_dir.mkdir(parents=True, exist_ok=True)
        sys.stderr.write(f"[INFO:swift] output_dir: {output_dir}\n")
        sys.stderr.flush()
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
    from runner.demo.dist import World

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    try:
        faults = [parse_fault(text) for text in args.fault]
        attempt = attempt_from_env()
        world = World.from_env()
        validate(args, world.size, faults)
    except ValueError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    from runner.demo.checkpoint import CheckpointLoadError

    try:
        return run(args, world, FaultPlan(faults, attempt, world.rank), argv)
    except CheckpointLoadError as exc:
        sys.stderr.write(f"{PROG}: error: cannot resume: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
