"""The demo's training loop for one process: model, optimizer, data, faults and ms-swift output.

``moeconsole.runner.demo.train`` checks the arguments, then builds a ``DemoTrainer`` and calls ``run()``.
Under torchrun every rank runs one; rank 0 alone prints, writes logging.jsonl and saves."""
from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from moeconsole.runner.demo import checkpoint as ckpt
from moeconsole.runner.demo import dist, faults
from moeconsole.runner.demo.data import batch_for_step, epoch_at, load_corpus, shard
from moeconsole.runner.demo.dist import World
from moeconsole.runner.demo.faultspec import FaultPlan
from moeconsole.runner.demo.model import (TARGET_MODULES, ModelConfig, TinyMoELM, load_lora_state_dict, lora_parameters,
                               lora_state_dict, parameter_counts)
from moeconsole.runner.demo.optim import AdamW
from moeconsole.runner.demo.schedule import is_log_step, is_save_step
from moeconsole.runner.demo.swiftlog import SwiftConsole, format_time, progress_bar, rss_gib, train_message


# transformers' JITCheckpointCallback (``--enable_jit_checkpoint``; trainer_jit_checkpoint.py in 5.19):
# its SIGTERM handler logs "SIGTERM received, will request JIT checkpoint after {kill_wait}s" and arms a
# timer (l.31-36, kill_wait 3 s, "to distinguish between SIGTERM and SIGKILL"); when it fires, "Kill wait
# period elapsed, requesting checkpoint" (l.38-40); the next step hook saves checkpoint-<global_step>
# ("Saving JIT checkpoint at step N", l.42-72) and stops the training, which exits 0. The runner reads
# these words (core/ending.py ``HANDLED_SIGTERM``).
JIT_KILL_WAIT_S = 3


class JitCheckpoint:
    """The demo's JIT checkpoint on SIGTERM, transformers' words and timing."""

    def __init__(self, con: "SwiftConsole") -> None:
        self.con = con
        self.said = False
        self.requested = threading.Event()
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum: int, frame: object) -> None:
        if self.said:
            return
        self.said = True
        self.con.info(f"SIGTERM received, will request JIT checkpoint after {JIT_KILL_WAIT_S}s")
        timer = threading.Timer(JIT_KILL_WAIT_S, self._enable)
        timer.daemon = True
        timer.start()

    def _enable(self) -> None:
        self.con.info("Kill wait period elapsed, requesting checkpoint")
        self.requested.set()


class SaveOnSignal:
    """A training's own handler of the signal Slurm sends ahead of a time limit (``--save_on_signal``): the handler
    only asks; the loop saves at the step's end and stops, printing nothing of it. With ``requeue``, PyTorch
    Lightning's SLURM auto-requeue after the save (pytorch_lightning 2.4 trainer/connectors/signal_connector.py
    ``_slurm_sigusr_handler_fn`` l.67-103: ``save_checkpoint``, then ``scontrol requeue $SLURM_JOB_ID``, "Requeued
    SLURM job" or "Requeuing SLURM job N failed with error code RC")."""

    def __init__(self, name: str, requeue: bool) -> None:
        self.requested = threading.Event()
        self.requeue = requeue
        signal.signal(signal.Signals["SIG" + name.upper().removeprefix("SIG")], lambda *_: self.requested.set())

    def after_save(self, con: "SwiftConsole") -> None:
        job = os.environ.get("SLURM_JOB_ID")
        if not self.requeue or not job:
            return
        rc = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True, timeout=120).returncode
        con.info(f"Requeued SLURM job: {job}" if rc == 0 else f"Requeuing SLURM job {job} failed with error code {rc}")


def append_jsonl_as_swift(path: Path, record: dict) -> None:
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
    """One process's share of the training."""

    def __init__(self, args: argparse.Namespace, world: World, plan: FaultPlan, argv: list[str]) -> None:
        torch.set_num_threads(args.num_threads)
        self.args, self.world, self.plan = args, world, plan
        self.con = SwiftConsole(enabled=world.is_main)
        self.output_dir = Path(args.output_dir).resolve()
        self.cfg = ModelConfig(hidden_size=args.hidden_size, num_layers=args.num_layers, experts=args.experts,
                               top_k=args.top_k, max_seq_len=args.seq_len, lora_rank=args.lora_rank,
                               lora_alpha=args.lora_alpha)
        self.model = TinyMoELM(self.cfg, args.seed)
        if plan.fires("gpu_busy"):  # where a GPU run would move the weights onto the device
            faults.raise_gpu_busy_oom(world.local_rank)
        if plan.fires("driver_old"):  # torch's CUDA init on a node whose driver predates the runtime
            faults.raise_driver_too_old()
        if plan.fires("hub_gated"):  # from_pretrained of a gated model without access
            faults.raise_gated_repo(os.environ.get("MOECONSOLE_DEMO_HUB_URL"))
        if plan.fires("hub_rate_limit"):  # from_pretrained while the Hub's window of requests is spent
            faults.raise_hub_rate_limit(os.environ.get("MOECONSOLE_DEMO_HUB_URL"))
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

    def epoch(self, step: int) -> float:
        return epoch_at(step, self.args.batch_size, self.args.seq_len, self.corpus.numel())

    def describe_model(self) -> None:
        trainable, total = parameter_counts(self.model)
        c = self.cfg
        self.con.info(f"model: tiny MoE causal LM, {c.num_layers} layers, {c.experts} experts top-{c.top_k} "
                      f"+ 1 shared, LoRA r={c.lora_rank}; trainable params: {trainable:,} || "
                      f"all params: {total:,} || trainable%: {100 * trainable / total:.4f}")

    def resume(self, path: Path) -> None:
        """Load adapter weights, optimizer moments, RNG and log history; continue after its step."""
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
        layer0 = self.model.block(0)
        if self.plan.fires("nan", step):
            faults.poison_with_nan(layer0.attn.q_proj.lora_A)
        if self.plan.fires("cuda_fault", step):
            layer0.mlp.router_hook = faults.illegal_memory_access_router
        if self.plan.fires("recompute", step):
            layer0.checkpoint_mlp = True
            layer0.mlp.router_hook = faults.drifting_router()

    def train_step(self, step: int) -> StepResult:
        """Forward, backward, all-reduce, clip, AdamW; the loss and accuracy are global means."""
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
        args, progress = self.args, self.progress
        progress.steps += 1
        progress.losses.append(result.loss)
        self.interval.add(result.loss, result.token_acc)
        elapsed = progress.elapsed
        self.con.bar(progress_bar(step, args.max_steps, elapsed, progress.steps))
        if not is_log_step(step, args.logging_steps, args.max_steps):
            return
        mean_loss, mean_acc = self.interval.take()
        metrics = {"loss": mean_loss, "grad_norm": result.grad_norm, "learning_rate": args.learning_rate,
                   "token_acc": mean_acc, "epoch": self.epoch(step)}
        progress.log_history.append({**metrics, "step": step})
        logs = train_message(metrics, step, args.max_steps, elapsed, progress.steps, rss_gib())
        self.con.step_dict(logs)
        if self.world.is_main:
            append_jsonl_as_swift(self.logging_jsonl, logs)

    def save(self, step: int) -> None:
        args = self.args
        target = ckpt.checkpoint_dir(self.output_dir, step)
        self.con.info(f"Saving model checkpoint to {target}")
        state = ckpt.trainer_state(step=step, max_steps=args.max_steps, epoch=self.epoch(step),
                                   logging_steps=args.logging_steps, save_steps=args.save_steps,
                                   batch_size=args.batch_size, log_history=self.progress.log_history)
        self.progress.last_checkpoint = ckpt.save_checkpoint(
            self.output_dir, step, tensors=lora_state_dict(self.model), config=self.adapter_config,
            args=self.args_record, state=state, optimizer_state=self.optimizer.state_dict(),
            stub=self.plan.fires("stub", step) or self.plan.fires("enospc", step))
        if self.plan.fires("enospc", step):  # the save ran out of room: a stub is left and the write raises
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target / ckpt.ADAPTER_WEIGHTS))

    def save_world(self, step: int) -> None:
        """Every rank's part of the save of ``step``, as transformers' Trainer makes it: process 0 writes the save
        (``should_save``), and every process its own ``rng_state_{process_index}.pth`` into ``checkpoint-N/``
        (trainer.py ``_save_rng_state`` l.3470-3477, 5.19.0). Here the first process of each node other than
        process 0's writes that share, after process 0's save is in place (a sum across ranks orders it: the demo
        writes its save in a temp dir and renames it): on a node with a disk of its own it is the only trace of the
        save there (docs/swift-recipe.md), and on one node it lands in process 0's save, as transformers' does."""
        if self.world.is_main:
            self.save(step)
        if not self.world.distributed:
            return
        dist.sum_across_ranks(torch.zeros(1, dtype=torch.float64), self.world)
        if self.world.local_rank == 0 and not self.world.is_main:
            ckpt.save_rng_share(self.output_dir, step, self.world.rank)

    def jit_stop(self, jit: JitCheckpoint) -> bool:
        return _jit_stop_any(self.world, jit.requested.is_set())

    def finish(self) -> None:
        """End-of-run dict and logging.jsonl records, as HF/ms-swift write them."""
        args, progress = self.args, self.progress
        runtime = progress.elapsed
        if progress.steps and self.world.is_main:
            summary = {"train_runtime": round(runtime, 4),
                       "train_samples_per_second": round(progress.steps * args.batch_size / runtime, 3),
                       "train_steps_per_second": round(progress.steps / runtime, 3),
                       "train_loss": sum(progress.losses) / len(progress.losses),
                       "epoch": self.epoch(args.max_steps)}
            self.con.step_dict(summary)
            append_jsonl_as_swift(self.logging_jsonl, summary)
            last = progress.last_checkpoint
            append_jsonl_as_swift(self.logging_jsonl, {
                "last_model_checkpoint": str(last) if last else None, "best_model_checkpoint": None,
                "best_metric": None, "global_step": args.max_steps, "log_history": progress.log_history,
                "memory": round(rss_gib(), 2)})
        self.con.end_bar()
        self.con.info(f"End time of running main: {time.strftime('%Y-%m-%d %H:%M:%S')} "
                      f"(train time {format_time(runtime)})")

    def run(self) -> None:
        jit = JitCheckpoint(self.con) if getattr(self.args, "enable_jit_checkpoint", False) else None
        own = SaveOnSignal(self.args.save_on_signal, self.args.requeue_on_signal) \
            if getattr(self.args, "save_on_signal", None) else None
        try:
            for step in range(self.start_step + 1, self.args.max_steps + 1):
                fail_before_step(self.plan, step, self.world.rank)
                self.arm_step_faults(step)
                result = self.train_step(step)
                if self.args.step_delay:
                    time.sleep(self.args.step_delay)
                self.report(step, result)
                saved = is_save_step(step, self.args.save_steps, self.args.max_steps)
                if saved:
                    self.save_world(step)
                if jit is not None and self.jit_stop(jit):   # every rank stops at the same step
                    self.con.info(f"Saving JIT checkpoint at step {step}")
                    if not saved:
                        self.save_world(step)
                    break
                if own is not None and _jit_stop_any(self.world, own.requested.is_set()):
                    if not saved:
                        self.save_world(step)
                    if self.world.is_main:
                        own.after_save(self.con)
                    break
            self.finish()
        finally:
            # ms-swift prints these from a cleanup block: they also appear after a crash.
            self.con.info(f"last_model_checkpoint: {self.progress.last_checkpoint}")
            self.con.info("best_model_checkpoint: None")


def _jit_stop_any(world: World, requested: bool) -> bool:
    """Whether any rank's JIT checkpoint was requested (a sum across ranks, so all stop together)."""
    if world.size <= 1:
        return requested
    return bool(dist.sum_across_ranks(torch.tensor([1.0 if requested else 0.0], dtype=torch.float64), world)[0] > 0)


def fail_before_step(plan: FaultPlan, step: int, rank: int) -> None:
    """Faults that end (or freeze) the process at the start of ``step``."""
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
