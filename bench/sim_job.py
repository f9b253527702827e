"""A simulated multi-node training job's output: every rank prints its Megatron-LM iteration
line each step, behind torchrun's ``[rankN]:`` prefix (``--tee 3`` with the rank prefix the
2-node recipe uses), in the order the ranks happen to finish. Run as the recipe's command under
a real runner, so the runner ingests it as it would the real job's train.log.

    python bench/sim_job.py --ranks 1024 --step-s 4 --slow-ranks 800-807 --slow 1.3

The line is the one Megatron-LM's ``training_log`` prints (each rank its own local loss and
its own elapsed time); ranks in ``--slow-ranks`` take ``--slow`` times as long (a straggler
node). At start every rank prints a few warnings, as a real job's ranks do.
"""
from __future__ import annotations

import argparse
import random
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--step-s", type=float, default=4.0)
    ap.add_argument("--max-steps", type=int, default=100000)
    ap.add_argument("--slow-ranks", default="")
    ap.add_argument("--slow", type=float, default=1.3)
    args = ap.parse_args()
    lo, _, hi = args.slow_ranks.partition("-")
    slow = set(range(int(lo), int(hi or lo) + 1)) if lo else set()
    rng = random.Random(0)
    out = sys.stdout
    for r in range(args.ranks):
        out.write(f"[rank{r}]:[W1126 03:38:53.238125921 socket.cpp:207] [c10d] The hostname of the client "
                  f"socket cannot be retrieved. err=-3\n"
                  f"[rank{r}]:/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:87: UserWarning: "
                  f"None of the inputs have requires_grad=True. Gradients will be None\n")
    out.flush()
    step = 0
    next_at = time.monotonic()
    while step < args.max_steps:
        step += 1
        order = list(range(args.ranks))
        rng.shuffle(order)
        lines = []
        for r in order:
            ms = args.step_s * 1000 * (args.slow if r in slow else 1.0) * (1 + rng.uniform(-0.01, 0.01))
            loss = 2.0 / (1 + step / 200) + 0.5 + rng.uniform(-0.02, 0.02)
            lines.append(f"[rank{r}]: [2026-11-26 03:{step % 60:02d}:00] iteration {step:8d}/{args.max_steps:8d} | "
                         f"consumed samples: {step * 1024:12d} | elapsed time per iteration (ms): {ms:.1f} | "
                         f"learning rate: 1.000000E-04 | global batch size:  1024 | lm loss: {loss:.6E} | "
                         f"loss scale: 1.0 | grad norm: {0.4 + rng.uniform(0, 0.1):.3f} | "
                         f"number of skipped iterations:   0 | number of nan iterations:   0 |\n")
        out.write("".join(lines))
        out.flush()
        next_at += args.step_s
        time.sleep(max(0.0, next_at - time.monotonic()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
