"""Review R60 of newcomer round 6, the run screen's "no step read" hint:

4. it is said only while the run runs, and never in place of why a run is paused, failed, waiting or
   unsupervised on an 80-column status line (format.py's promises for the pause reason and the last crash);
5. it fires only on lines shaped like a metric line (a step or metric name the parser reads, or a step-like
   counter first), not on NCCL_DEBUG=INFO, vLLM stats, DeepSpeed init lines or tqdm bars with no total."""
from __future__ import annotations

import pytest

from moeconsole.console import format as fmt
from moeconsole.runner.ingest.explain import unread_shape

HINT = "no step read from 40 alike log lines: set log_format (docs/parsing.md)"


def _line2(run: dict, **kw) -> str:
    return "".join(t for t, _ in fmt.status_lines(run, width=80, unread=HINT, **kw)[1])


@pytest.mark.parametrize("run, shown", [
    ({"status": "paused", "pause_reason": "crashed 3 times in a row with the same error (NCCL timeout): fix and resume"},
     "paused: crashed 3 times"),
    ({"status": "paused", "pause_reason": "no output for 30m 00s (hang): killed 2 times at the same step"},
     "paused: no output"),
    ({"status": "failed", "last_crash": {"class": "nccl_timeout"}}, "last crash: nccl_timeout"),
    ({"status": "running", "stale": True, "runner_alive": False}, "the runner is gone: nothing supervises this run"),
    ({"status": "cooldown", "cooldown": {"waiting": ["gpu_memory"]}}, "waiting on:"),
])
def test_the_hint_never_pushes_why_the_run_waits_off_the_line(run, shown):
    run = {"name": "train", "step": None, "attempt": 2, "restarts": 1, **run}
    line = _line2(run)
    assert shown in line and "no step read" not in line, line
    assert fmt.unread_log_words(run, [f"#{i:05d} 1.{i:04d} 1.0e-04" for i in range(40)]) is None
    # with a CRIT alert the alert and the reason still show
    line = _line2(run, alert="NCCL watchdog timeout on rank 3")
    assert "CRIT NCCL watchdog timeout on rank 3" in line and "no step read" not in line, line


def test_the_hint_shows_whole_while_running():
    run = {"name": "train", "status": "running", "step": None, "attempt": 1, "restarts": 0}
    lines = [f"#{i:05d} 1.{i:04d} 1.0e-04" for i in range(40)]
    words = fmt.unread_log_words(run, lines)
    assert words == HINT
    assert HINT in _line2(run)


NCCL = [f"gpu-node-3:{4120 + r}:{4300 + r} [{r}] NCCL INFO Channel {c:02d}/0 : {r}[{r}] -> {(r + 1) % 8}[{(r + 1) % 8}] "
        "via P2P/CUMEM/read" for c in range(5) for r in range(8)]
VLLM = [f"INFO 12-01 15:01:{i * 5 % 60:02d} [loggers.py:123] Engine 000: Avg prompt throughput: {100 + i}.0 tokens/s, "
        f"Avg generation throughput: {200 + i}.3 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.{i}%, "
        "Prefix cache hit rate: 0.0%" for i in range(12)]
DS_INIT = [f"[2026-12-01 15:00:{i:02d},{i * 37:03d}] [INFO] [partition_parameters.py:348:__exit__] finished "
           f"initializing model - num_params = {i * 7}, num_elems = {i * 3}.12B" for i in range(12)]
TQDM_NO_TOTAL = [f"{i}it [00:{i:02d}, 4.{i}0it/s]" for i in range(12, 40)]
SPLIT = [f"Generating train split: {i * 1234} examples [00:01, 9{i}7.54 examples/s]" for i in range(1, 20)]


@pytest.mark.parametrize("lines", [NCCL, VLLM, DS_INIT, TQDM_NO_TOTAL, SPLIT],
                         ids=["nccl_info", "vllm_stats", "deepspeed_init", "tqdm_no_total", "datasets_split"])
def test_setup_lines_that_repeat_are_no_unread_metric_line(lines):
    assert unread_shape(lines) is None
    assert fmt.unread_log_words({"status": "running", "step": None}, lines) is None


@pytest.mark.parametrize("lines", [
    [f"#{i:05d} 1.{i:04d} 1.0e-04" for i in range(12)],                  # a counter first (newcomer round 6)
    [f"[{i}/500] 2.{i} 0.5" for i in range(12)],                           # a counter out of a total
    [f"ep {i} | mse_loss {i}.5 | tok {i}00" for i in range(12)],            # a loss of the loop's own name
    [f"e={i} learning rate {i}e-4 x {i}" for i in range(12)],              # a metric name the parser reads
])
def test_metric_shaped_lines_still_fire(lines):
    assert unread_shape(lines) == (12, lines[0])


@pytest.mark.parametrize("value, kept", [
    (r"iter#(?P<step>\d+) #tok (?P<tok>\d+)", r"iter#(?P<step>\d+) #tok (?P<tok>\d+)"),   # the reviewer's
    ("s#(?P<step>[0-9]+) #c", "s#(?P<step>[0-9]+) #c"),
    ('"#(?P<step>[0-9]+) x"', "#(?P<step>[0-9]+) x"),          # a # inside quotes: YAML's value
    ("it's (?P<step>[0-9]+) #x", "it's (?P<step>[0-9]+) #x"),  # an apostrophe inside plain text opens no quote
])
def test_set_keeps_a_value_with_a_hash_as_typed(tmp_path, value, kept):
    """`--set 'log_format=iter#(?P<step>\\d+) #tok ...'` had been cut to `iter#(?P<step>\\d+)` silently: a `#`
    inside the value was taken as proof that YAML had kept the comment (review R60)."""
    import sys

    from moeconsole.runner.rundir.yamlio import loads_yaml
    from tests.runner.conftest import Run
    from tests.runner.test_runner_bare_command import cli
    runs = tmp_path / "runs"
    proc = cli(runs, tmp_path, "run", "--detach", "--set", "restart.max_restarts=0", "--set", f"log_format={value}",
               "--", sys.executable, "-c", "print('done')")
    assert proc.returncode == 0, proc.stderr
    run = Run(runs / proc.stdout.strip().splitlines()[0])
    run.wait_status("succeeded", "failed", timeout=120)
    assert loads_yaml((run.path / "recipe.yaml").read_text())["log_format"] == kept
