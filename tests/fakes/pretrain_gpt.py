#!/usr/bin/env python3
"""A test double for Megatron-LM's ``pretrain_gpt.py`` (NVIDIA/Megatron-LM main, d98e8a6): no model
and no GPU, but Megatron-LM's own save layout, tracker, resume and printed lines, so a supervisor
can run -> save -> verify -> crash -> resume against a plain Megatron save directory (ms-swift
nests the same layout inside ``checkpoint-N/``; tests/fakes/megatron imitates that one).

What it imitates (megatron/training/checkpointing.py unless named):

- ``--save DIR``: every ``--save-interval`` iterations ``DIR/iter_{:07d}/`` (``get_checkpoint_name``
  l.230-246) in the torch_dist format (a real ``torch.distributed.checkpoint`` save: ``*.distcp`` +
  ``.metadata``, with Megatron's ``metadata.json`` and ``common.pt``), then the tracker
  ``DIR/latest_checkpointed_iteration.txt`` naming the iteration (``iter_finalize_fn`` l.1075-1084:
  written after every rank finished), then "successfully saved checkpoint from iteration {:7d} to
  DIR [ t 1/1, gtp_remat 1/1, p 1/1 ]" (l.1085-1090).
- ``--load DIR``: the iteration is the tracker's (``read_metadata`` l.388-406; ``--ckpt-step N``
  overrides it, ``_load_base_checkpoint`` l.2018-2027); no tracker: "WARNING: could not find the
  metadata file ..." and a start from iteration 0 (l.2049-2066); else "successfully loaded
  checkpoint from DIR [ t 1/1, gtp_remat 1/1, p 1/1 ] at iteration N" (l.3159-3165), and training
  goes on at N + 1.
- ``--finetune``: the checkpoint is loaded but the iteration is 0 (``load_checkpoint`` l.2852-2853:
  ``if args.finetune or release: iteration = 0``), so training counts from iteration 1 again and,
  with ``--save`` = ``--load``, writes ``iter_*`` and the tracker over the earlier attempt's
  (``iter_finalize_fn`` writes the tracker with the iteration just saved, lower or not).
- each iteration's ``training_log`` line (megatron/training/training.py l.3567-3641).

Test knobs (environment): FAKE_STEP_S (seconds per iteration, default 0.05); FAKE_CRASH_AT (a real
SIGSEGV, runner/demo/faults.py ``die_by_segfault``, right after this iteration, its save included,
in a run that loaded no checkpoint; ``N@A,M@B``: at N in the runner's attempt A
(``MOECONSOLE_ATTEMPT``), at M in attempt B, whatever they loaded); FAKE_CRASH_ON_RESUME=1 (the same death right after a checkpoint
loaded, before any iteration: a run that can never get past its resume point).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

TRACKER = "latest_checkpointed_iteration.txt"


def print_rank_0(msg: str) -> None:
    print(msg, flush=True)


def now() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")


def parse(argv: list[str]) -> argparse.Namespace:
    """The flags of megatron/training/arguments.py this double needs (dashes, as Megatron spells them)."""
    ap = argparse.ArgumentParser(prog="pretrain_gpt.py")
    ap.add_argument("--save")
    ap.add_argument("--load")
    ap.add_argument("--ckpt-step", dest="ckpt_step", type=int)
    ap.add_argument("--finetune", action="store_true")
    ap.add_argument("--train-iters", dest="train_iters", type=int, required=True)
    ap.add_argument("--save-interval", dest="save_interval", type=int)
    ap.add_argument("--log-interval", dest="log_interval", type=int, default=1)
    ap.add_argument("--global-batch-size", dest="global_batch_size", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-4)
    return ap.parse_args(argv)


def read_metadata(tracker: Path) -> tuple[int, bool]:
    """checkpointing.py ``read_metadata``: an int, or ``release`` (iteration 0); anything else exits."""
    text = tracker.read_text().strip()
    try:
        return int(text), False
    except ValueError:
        if text != "release":
            print_rank_0(f"ERROR: Invalid metadata file {tracker}. Exiting")
            sys.exit()
        return 0, True


def load_checkpoint(args: argparse.Namespace) -> int:
    """The iteration training goes on from (0: nothing loaded)."""
    if not args.load:
        return 0
    tracker = Path(args.load) / TRACKER
    iteration = -1
    if tracker.is_file():
        iteration, _release = read_metadata(tracker)
    if args.ckpt_step:
        iteration = args.ckpt_step
    if iteration == -1:
        print_rank_0(f"WARNING: could not find the metadata file {tracker}")
        print_rank_0("    will not load any checkpoints and will start from random")
        return 0
    ckpt = Path(args.load) / f"iter_{iteration:07d}"
    print_rank_0(f" loading distributed checkpoint from {args.load} at iteration {iteration}")
    if not (ckpt / "common.pt").is_file():
        raise FileNotFoundError(f"[Errno 2] No such file or directory: '{ckpt / 'common.pt'}'")
    print_rank_0(f"  successfully loaded checkpoint from {args.load} [ t 1/1, gtp_remat 1/1, p 1/1 ] "
                 f"at iteration {iteration}")
    return 0 if args.finetune else iteration


def save_checkpoint(args: argparse.Namespace, iteration: int) -> None:
    from tests.checkpoints.conftest import write_megatron_iter   # a real torch_dist iteration dir

    save = Path(args.save)
    print_rank_0(f"saving checkpoint at iteration {iteration:7d} to {args.save} in torch_dist format")
    write_megatron_iter(save, iteration, tracker=False, seed=iteration)
    (save / TRACKER).write_text(str(iteration))       # iter_finalize_fn: after every rank saved
    print_rank_0(f"  [{now()}] successfully saved checkpoint from iteration {iteration:7d} to {args.save} "
                 "[ t 1/1, gtp_remat 1/1, p 1/1 ]")


def training_log(args: argparse.Namespace, iteration: int, elapsed_ms: float) -> None:
    """training.py ``training_log``: the fields in Megatron's order."""
    loss = 2.0 * math.exp(-iteration / 40) + 0.5
    s = f" [{now()}]"
    s += " iteration {:8d}/{:8d} |".format(iteration, args.train_iters)
    s += " consumed samples: {:12d} |".format(iteration * args.global_batch_size)
    s += " elapsed time per iteration (ms): {:.1f} |".format(elapsed_ms)
    s += f" learning rate: {args.lr:.6E} |"
    s += f" global batch size: {args.global_batch_size:5d} |"
    s += " lm loss: {:.6E} |".format(loss)
    s += " loss scale: 1.0 |"
    s += f" grad norm: {1.0 / math.sqrt(iteration):.3f} |"
    s += " number of skipped iterations: {:3d} |".format(0)
    s += " number of nan iterations: {:3d} |".format(0)
    print_rank_0(s)


def main() -> int:
    from moeconsole.runner.demo.faults import die_by_segfault

    args = parse(sys.argv[1:])
    import torch  # noqa: F401  (loaded before the first save, as in the real trainer)
    start = load_checkpoint(args)
    if start and os.environ.get("FAKE_CRASH_ON_RESUME") == "1":
        die_by_segfault()
    crash_at, start_ok = 0, start == 0
    for item in (os.environ.get("FAKE_CRASH_AT", "") or "").split(","):
        at, _, in_attempt = item.partition("@")
        if not in_attempt:
            crash_at = int(at or 0)
        elif in_attempt == os.environ.get("MOECONSOLE_ATTEMPT"):   # N@A: in attempt A, whatever it loaded
            crash_at, start_ok = int(at), True
    step_s = float(os.environ.get("FAKE_STEP_S", "0.05"))
    for it in range(start + 1, args.train_iters + 1):
        t0 = time.monotonic()
        time.sleep(step_s)
        if it % args.log_interval == 0:
            training_log(args, it, (time.monotonic() - t0) * 1000)
        if args.save and args.save_interval and it % args.save_interval == 0:
            save_checkpoint(args, it)
        if crash_at and it == crash_at and start_ok:
            die_by_segfault()
    if args.save and not (args.save_interval and args.train_iters % args.save_interval == 0):
        save_checkpoint(args, args.train_iters)        # training.py: a final save after the last iteration
    return 0


if __name__ == "__main__":
    sys.exit(main())
