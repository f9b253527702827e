"""A day in an hour (issue 32, item 17): the 397B record's 22.5-hour job, compressed.

4,473 iterations of the ms-swift ``megatron sft`` double (tests/fakes/megatron) at a fast step
time, a save every 100 iterations, and the record's crash mix injected at seeded random steps:
a CUDA OOM in FLA's backward (traceback, exit 1), an NCCL watchdog timeout (its report, SIGABRT),
a save whose adapter is a 39 KB stub, a node-style SIGKILL of the whole training tree from
outside, and a hang (no output, alive). The run goes through the real CLI (``run --detach``) and
the real detached runner with the project's recovery policy (restart, resume from the newest
verified checkpoint); the runner's RSS, open files and threads are sampled from /proc throughout.

Every wait of the record is divided by the same compression (18.0 s per step in the record, over
the step time here): the restart wait (90 s), the crash window (1 h), the heartbeat. The pure
parts (the schedule, the step-range and flatness checks) are unit-tested in
tests/megatron/test_day_replay.py; the replay itself runs only here.
"""
from __future__ import annotations

import json
import os
import random
import signal
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAKE = REPO / "tests" / "fakes" / "megatron"

RECORD_STEPS = 4473
RECORD_STEP_S = 18.0           # the record's seconds per iteration
SAVE_STEPS = 100
CRASH_KINDS = ("oom", "nccl", "sigkill", "hang")      # each ends its attempt
STUB = "stub"                                          # a bad save; the attempt trains on
OUTSIDE = frozenset({"sigkill"})                       # dealt by the replay, not by the fake
CLASS_OF = {"oom": "cuda_oom", "nccl": "nccl_error", "sigkill": "killed_oom", "hang": "hang"}


@dataclass(frozen=True)
class Fault:
    kind: str
    step: int
    attempt: int

    @property
    def spec(self) -> str:
        """As FAKE_FAULTS takes it (runner/demo/faultspec.py's KIND@STEP#ATTEMPT)."""
        return f"{self.kind}@{self.step}#{self.attempt}"


def schedule(seed: int, steps: int = RECORD_STEPS, save_steps: int = SAVE_STEPS) -> list[Fault]:
    """The record's crash mix at seeded random steps, in step order, each bound to the attempt it
    fires in (a crash ends its attempt; the stub does not). Each fault sits in its own save
    interval, 10-90 steps past a save (so the save before it has settled). The stub is the save
    at the start of one crash's interval: that crash must resume from the save before the stub."""
    rng = random.Random(seed)
    intervals = steps // save_steps                     # whole intervals [k*100+1, k*100+99]
    chosen = rng.sample(range(1, intervals), len(CRASH_KINDS))
    kinds = list(CRASH_KINDS)
    rng.shuffle(kinds)
    faults = [(kind, k * save_steps + rng.randint(10, 90)) for kind, k in zip(kinds, chosen)]
    stub_interval = rng.choice(chosen)
    faults.append((STUB, stub_interval * save_steps))
    out, attempt = [], 1
    for kind, step in sorted(faults, key=lambda f: f[1]):
        out.append(Fault(kind, step, attempt))
        if kind != STUB:
            attempt += 1
    return out


def expected_resumes(faults: list[Fault], save_steps: int = SAVE_STEPS,
                     landed: dict[int, int] | None = None) -> dict[int, int]:
    """attempt -> the step it must resume from: the newest save before its crash that is not a
    stub (0: from scratch). ``landed``: attempt -> the last step it logged, for a fault dealt from
    outside (it lands when it is seen, a few steps after its step)."""
    stubs = {f.step for f in faults if f.kind == STUB}
    out = {1: 0}
    for f in faults:
        if f.kind == STUB:
            continue
        at = (landed or {}).get(f.attempt, f.step - 1) if f.kind in OUTSIDE else f.step - 1
        good = at // save_steps * save_steps
        while good in stubs:
            good -= save_steps
        out[f.attempt + 1] = good
    return out


def step_ranges(metrics: list[dict]) -> dict[int, list[int]]:
    """attempt -> the steps it logged, in order."""
    out: dict[int, list[int]] = {}
    for m in metrics:
        if isinstance(m.get("step"), int) and isinstance(m.get("attempt"), int):
            out.setdefault(m["attempt"], []).append(m["step"])
    return out


def trained_twice(ranges: dict[int, list[int]], resumed: dict[int, int], last_step: int) -> list[str]:
    """What breaks "no step trained twice beyond the resume points": each attempt must log every
    step from its resume point + 1 on, once, in order, without a gap; together they must reach
    ``last_step``; a step at or before an attempt's resume point is never trained again. Empty
    when all holds."""
    problems = []
    for attempt in sorted(set(ranges) | set(resumed)):
        got = ranges.get(attempt, [])
        if attempt not in resumed:
            problems.append(f"attempt {attempt} logged steps but its resume point is unknown")
            continue
        first = resumed[attempt] + 1
        want = list(range(first, first + len(got)))
        if got != want:
            dup = sorted({s for s in got if got.count(s) > 1})[:5]
            problems.append(f"attempt {attempt} (resumed from {resumed[attempt]}) logged "
                            f"{got[:1]}..{got[-1:]} ({len(got)} records)"
                            + (f", repeated {dup}" if dup else ", not the steps from its resume point on"))
    if ranges and max(ranges) in ranges and (ranges[max(ranges)] or [0])[-1] != last_step:
        problems.append(f"the last attempt ended at {ranges[max(ranges)][-1:]} not {last_step}")
    return problems


def redone(ranges: dict[int, list[int]], resumed: dict[int, int]) -> int:
    """Steps trained again after a crash: each crashed attempt's steps past the next resume point."""
    return sum(max(0, got[-1] - resumed[a + 1]) for a, got in ranges.items() if got and a + 1 in resumed)


@dataclass
class Sample:
    t: float
    rss_kib: int
    fds: int
    threads: int


@dataclass
class Flatness:
    ok: bool
    detail: str
    figures: dict = field(default_factory=dict)


# Tolerances, first quarter's median -> last quarter's median. A runner's RSS climbs by a few MiB
# in its first minutes and then stays (modules imported at the first save verified, the first
# crash classified, allocator arenas: measured 51-52 -> 55-56 MiB in this replay, 54.6 -> 56.7 MiB
# over 20,000 steps without faults), so the first quarter is warm-up: at most 5% + 4 MiB. After
# it the line must be flat: the second quarter's median -> the last's at most + 2 MiB, which a
# leak of 1 KiB per step (2.3 MiB over the half of the day's 4,700 steps between the two) breaks.
# Threads and files are counts the runner holds per attempt (waiter thread, log, control socket,
# clients): the same at the end as at the start, + 2 for a client or a reaper caught between its
# open and its close.
RSS_FRAC, RSS_SLACK_KIB, COUNT_SLACK = 0.05, 4096, 2
LATE_SLACK_KIB = 2048


def _quarter(samples: list[Sample], n: int) -> list[Sample]:
    """The samples of the n-th quarter (0..3) of the sampled time."""
    t0, span = samples[0].t, (samples[-1].t - samples[0].t) or 1.0
    return [s for s in samples if n <= 4 * (s.t - t0) / span <= n + 1]


def flat(samples: list[Sample]) -> Flatness:
    """First-quarter vs last-quarter medians (quarters of the sampled time) of RSS, open files
    and threads; and the RSS of the second quarter vs the last (after the warm-up)."""
    if len(samples) < 8:
        return Flatness(False, f"only {len(samples)} samples")
    first, second, last = _quarter(samples, 0), _quarter(samples, 1), _quarter(samples, 3)
    figures, bad = {}, []
    for name, get, limit in (("rss_kib", lambda s: s.rss_kib, lambda a: a * (1 + RSS_FRAC) + RSS_SLACK_KIB),
                             ("fds", lambda s: s.fds, lambda a: a + COUNT_SLACK),
                             ("threads", lambda s: s.threads, lambda a: a + COUNT_SLACK)):
        a, b = statistics.median(map(get, first)), statistics.median(map(get, last))
        figures[name] = (a, b, max(map(get, samples)))
        if b > limit(a):
            bad.append(f"{name} {a:g} -> {b:g}")
    mid = statistics.median(s.rss_kib for s in second)
    figures["rss_mid_kib"] = mid
    if figures["rss_kib"][1] > mid + LATE_SLACK_KIB:
        bad.append(f"rss_kib after the warm-up {mid:g} -> {figures['rss_kib'][1]:g}")
    tenths = [statistics.median(s.rss_kib for s in samples[i * len(samples) // 10:(i + 1) * len(samples) // 10] or
                                [samples[-1]]) / 1024 for i in range(10)]
    text = (f"RSS {figures['rss_kib'][0] / 1024:.1f} -> {mid / 1024:.1f} -> {figures['rss_kib'][1] / 1024:.1f} MiB "
            f"(quarters 1, 2, 4; max {figures['rss_kib'][2] / 1024:.1f}; by tenths "
            f"{' '.join(f'{x:.1f}' for x in tenths)}), files {figures['fds'][0]:g} -> {figures['fds'][1]:g} "
            f"(max {figures['fds'][2]}), threads {figures['threads'][0]:g} -> {figures['threads'][1]:g} "
            f"(max {figures['threads'][2]}), {len(samples)} samples")
    return Flatness(not bad, ("grew: " + ", ".join(bad) + "; " if bad else "") + text, figures)


def sample_proc(pid: int) -> Sample | None:
    """RSS, open files and threads of ``pid`` from /proc; None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    vals = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return Sample(time.monotonic(), int(vals["VmRSS"].split()[0]), fds, int(vals["Threads"].split()[0]))


# ---- the replay ---------------------------------------------------------------------------------

def recipe(tmp: Path, faults: list[Fault], steps: int, step_s: float) -> dict:
    """The record's command on the Megatron path as ms-swift 4.6 parses it (docs/megatron.md):
    LoRA rank 32 / alpha 64, global batch 8, lr 2e-5 to 2e-6 with a 3% warmup, a save every 100
    iterations, safetensors without the optimizer; adapters (not merged) so a stub adapter is the
    record's incident. --train_iters pins the 4,473 iterations (the record's figure; ms-swift would
    derive it from the dataset and epochs). Every wait is the record's over the compression."""
    squeeze = RECORD_STEP_S / step_s
    data = tmp / "sft.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}]}) + "\n" for i in range(64)))
    return {
        "name": "day",
        "command": ["{python}", str(FAKE), "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--dataset", str(data),
                    "--tuner_type", "lora", "--lora_rank", "32", "--lora_alpha", "64", "--train_iters", str(steps),
                    "--micro_batch_size", "1", "--global_batch_size", "8", "--save_steps", str(SAVE_STEPS),
                    "--logging_steps", "1", "--lr", "2e-5", "--min_lr", "2e-6", "--lr_warmup_fraction", "0.03",
                    "--output_dir", "{run_dir}/output", "--save_safetensors", "true", "--no_save_optim", "true",
                    "--merge_lora", "false"],
        "env": {"OMP_NUM_THREADS": "1", "FAKE_STEP_S": str(step_s), "FAKE_SWIFT_VERSION": "4.6.0",
                "FAKE_MEMORY_GIB": "132.91", "FAKE_FAULTS": ",".join(f.spec for f in faults if f.kind not in OUTSIDE)},
        "resume": {"args": ["--adapters", "{checkpoint}", "--finetune", "false"]},
        "swift": {"version": "4.6.0"},
        "checkpoints": {"dir": "{run_dir}/output", "settle_s": 0.5},
        # RestartSec=90 and the record's 90 s restart wait; "more than 3 crashes in an hour" pages.
        "restart": {"max_restarts": 10, "backoff_initial_s": round(90 / squeeze, 3), "backoff_max_s": 5,
                    "max_crashes_per_window": 3, "crash_window_s": round(3600 / squeeze, 1)},
        "cooldown": {"floor_s": round(90 / squeeze, 3), "ceiling_s": 10, "poll_s": 0.1},
        "kill": {"grace_s": 5},
        # The hang: 30 minutes of silence is the default verdict; a floor of 15 s keeps a busy
        # 2-core machine's pauses (a save, a slow start of Python) from reading as one.
        "heartbeat": {"timeout_s": max(15.0, round(1800 / squeeze, 1))},
        # The per-GPU memory readings kept for a crash report span 10 minutes: 33 steps of the
        # record, every step of this replay unless squeezed too.
        "memory": {"history_s": round(600 / squeeze, 1)},
        "lint": {"ignore": ["executable_missing"]},
    }


def replay(work: Path, step_s: float, seed: int, steps: int, cli, state, end_all) -> list:
    """Run the day; return the campaign's Check rows (part ``day``)."""
    from campaign import Check  # the campaign's report row
    from moeconsole.runner.process import proctree

    out: list[Check] = []
    faults = schedule(seed, steps)
    print(f"day: seed {seed}, step time {step_s} s, faults "
          + ", ".join(f"{f.kind}@{f.step} (attempt {f.attempt})" for f in faults), flush=True)
    tmp = work / "day"
    runs = tmp / "runs"
    runs.mkdir(parents=True)
    path = tmp / "day.json"
    path.write_text(json.dumps(recipe(tmp, faults, steps, step_s)))
    t0 = time.monotonic()
    rc, so, err = cli(["run", str(path), "--detach"], runs, timeout=120)
    if rc != 0 or not so.strip():
        return [Check("day", "the replay starts (run --detach)", False, f"exit {rc}: {err.strip()[-300:]}")]
    run = runs / so.strip().splitlines()[0]
    samples: list[Sample] = []
    runners: set[tuple[int, float]] = set()
    kills: list[str] = []
    stop = threading.Event()
    outside = [f for f in faults if f.kind in OUTSIDE]

    def watch() -> None:
        """Sample the runner once a second; deal the outside SIGKILL when its attempt reaches its
        step (looked for every 0.1 s while one is due)."""
        next_sample = 0.0
        while not stop.is_set():
            st = state(run)
            r = st.get("runner") or {}
            if time.monotonic() >= next_sample and isinstance(r.get("pid"), int) \
                    and proctree.same_process(r["pid"], r.get("start_time") or 0):
                next_sample = time.monotonic() + 1.0
                runners.add((r["pid"], r["start_time"]))
                s = sample_proc(r["pid"])
                if s:
                    samples.append(s)
            for f in list(outside):
                if st.get("attempt") == f.attempt and (st.get("step") or 0) >= f.step:
                    kills.append(node_kill(run, r.get("pid"), proctree) + f" at step {st.get('step')}")
                    outside.remove(f)
            stop.wait(0.1 if outside else 1.0)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    limit = 60 * 60
    try:
        while time.monotonic() - t0 < limit and state(run).get("status") not in ("succeeded", "failed", "paused",
                                                                                 "unsaved", "killed"):
            time.sleep(1.0)
    finally:
        stop.set()
        th.join(10)
    took = time.monotonic() - t0
    st = state(run)
    try:
        out += judge(run, st, faults, steps, samples, runners, kills, took)
    finally:
        end_all(runs)
    return out


def node_kill(run: Path, runner_pid: int | None, proctree) -> str:
    """SIGKILL every process of the training at once, as a lost node does: the run's marked
    processes (its environment marker), never the runner, each by PID and start time."""
    procs = [(p, c) for p, c in proctree.marked_processes(run.name).items() if p != runner_pid]
    n = 0
    for pid, created in procs:
        if proctree.same_process(pid, created):
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except OSError:
                pass
    return f"SIGKILLed {n} processes"


def _jsonl(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []


def judge(run: Path, st: dict, faults: list[Fault], steps: int, samples: list[Sample], runners: set,
          kills: list[str], took: float) -> list:
    from campaign import Check

    out = []
    events = _jsonl(run / "events.jsonl")
    metrics = _jsonl(run / "metrics.jsonl")
    of = lambda kind: [e for e in events if e.get("type") == kind]  # noqa: E731
    crashes = [e for e in of("crash")]
    last = max((m["step"] for m in metrics if isinstance(m.get("step"), int)), default=None)
    out.append(Check("day", "the run ends SUCCEEDED at the last step", st.get("status") == "succeeded"
                     and last == steps, f"status {st.get('status')}, last step {last} of {steps}, "
                     f"{took / 60:.1f} min, reason {st.get('pause_reason') or '-'}"))

    want = [CLASS_OF[f.kind] for f in faults if f.kind != STUB]
    got = [c.get("class") for c in crashes]
    out.append(Check("day", "each injected crash classified as the record's (oom, nccl, kill, hang)", got == want,
                     f"crashes {got}, injected {want}; outside: {'; '.join(kills) or 'none'}"))
    out.append(Check("day", "attempts and restarts: one per crash, nothing more", st.get("attempt") == len(want) + 1
                     and st.get("restarts") == len(want), f"attempt {st.get('attempt')}, restarts {st.get('restarts')}"))

    checks = of("checkpoint")
    verdict = {}
    for c in checks:                             # a later verdict of the same path replaces the first
        verdict[str(c.get("path"))] = c
    stub_steps = {f.step for f in faults if f.kind == STUB}
    stub_ok = all(any(Path(p).name == f"checkpoint-{s}" and not c.get("ok") for p, c in verdict.items())
                  for s in stub_steps)
    good = sorted({c.get("step") for c in verdict.values() if c.get("ok")})
    out.append(Check("day", "every save verified; the stub found bad", stub_ok
                     and set(good) >= set(range(SAVE_STEPS, steps, SAVE_STEPS)) - stub_steps,
                     f"{len(good)} good saves, stub at {sorted(stub_steps)}: "
                     f"{[c.get('verdict') for p, c in verdict.items() if not c.get('ok')]}"))

    starts = {e.get("attempt"): e for e in of("attempt_start")}
    ranges = step_ranges(metrics)
    expect = expected_resumes(faults, landed={a: r[-1] for a, r in ranges.items() if r})
    resumed, bad = {1: 0}, []
    for attempt in sorted(a for a in starts if isinstance(a, int) and a > 1):
        p = starts[attempt].get("resumed_from")
        c = verdict.get(str(p))
        step = c.get("step") if c else None
        resumed[attempt] = step if isinstance(step, int) else -1
        if not c or not c.get("ok") or step != expect.get(attempt):
            bad.append(f"attempt {attempt} from {Path(str(p)).name} ({'verified' if c and c.get('ok') else 'NOT verified'}"
                       f", expected checkpoint-{expect.get(attempt)})")
    out.append(Check("day", "every resume from the newest verified checkpoint, never the stub", not bad
                     and len(resumed) == len(want) + 1,
                     "; ".join(bad) or ", ".join(f"{a}<-{s}" for a, s in sorted(resumed.items()))))

    problems = trained_twice(ranges, resumed, steps)
    # The trainer's own account: each attempt's logging.jsonl (output/v<N>-*/) holds the same steps.
    own = sorted((run / "output").glob("v*-*/logging.jsonl"), key=lambda p: int(p.parent.name[1:].split("-")[0]))
    mine = {i + 1: [int(str(r["iteration"]).split("/")[0]) for r in _jsonl(p) if "iteration" in r]
            for i, p in enumerate(own)}
    if {a: r for a, r in mine.items() if r} != ranges:
        problems.append("metrics.jsonl and the trainer's logging.jsonl disagree on the steps per attempt: "
                        + ", ".join(f"{a}: {r[:1]}..{r[-1:]} vs {ranges.get(a, [])[:1]}..{ranges.get(a, [])[-1:]}"
                                    for a, r in mine.items() if r != ranges.get(a)))
    out.append(Check("day", "no step trained twice beyond the resume points", not problems,
                     "; ".join(problems)[:400] or
                     f"{sum(map(len, ranges.values()))} steps trained for {steps}: {redone(ranges, resumed)} "
                     "repeated after crashes, none at or before a resume point; per attempt "
                     + ", ".join(f"{a}: {r[0]}-{r[-1]}" for a, r in sorted(ranges.items()) if r)))

    out.append(Check("day", "one runner supervised the whole day", len(runners) == 1, f"runners seen: {len(runners)}"))
    f = flat(samples)
    out.append(Check("day", "the runner's RSS, open files and threads flat (first vs last quarter)", f.ok, f.detail))
    return out
