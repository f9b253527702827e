"""The real ms-swift 4.6 with several processes on CPU: `NPROC_PER_NODE=2` in the recipe's env makes
`swift sft` start torchrun (swift/cli/main.py l.30-35 `use_torchrun`, l.74-83 `get_torchrun_args`,
l.98: `python -m torch.distributed.run --nproc_per_node 2 --master_port P sft.py ...`), which starts
one trainer per rank, each in a session of its own. `--use_cpu true` makes transformers' Trainer
distributed on CPU (accelerate picks MULTI_CPU with gloo only with cpu=True, accelerate/state.py
l.800-813): rank 0 alone prints the step dicts and saves. Each run is a few steps; every wait is
generous (the machine is 2 busy cores)."""
from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from moeconsole.runner.telemetry.host import oom_kills
from tests.demo.demo_helpers import free_port
from tests.swift.swift_helpers import TIMEOUT, Run, cli, require_swift, running, start
from tests.waiting import until

TWO_RANKS = ("env.NPROC_PER_NODE=2", "args.use_cpu=true")


def two_ranks(runs, tiny, *overrides: str, ddp: bool = True) -> Run:
    """A 2-rank run on a rendezvous port of its own (other runs on the machine use 29500)."""
    given = TWO_RANKS if ddp else TWO_RANKS[:1]
    return start(runs, tiny, *given, f"env.MASTER_PORT={free_port()}", *overrides)


def ranks_of(run: Run) -> dict[int, psutil.Process]:
    """The trainers torchrun started for the run, by their RANK (torchrun sets it in each one's env)."""
    out = {}
    for p in psutil.process_iter():
        try:
            env = p.environ()
            if env.get("MOECONSOLE_RUN_DIR") == str(run.path) and "RANK" in env:
                out[int(env["RANK"])] = p
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return out


def swift_logged_losses(run: Run) -> dict[int, float]:
    out = {}
    for logfile in sorted((run.path / "output").glob("v*-*/logging.jsonl")):
        for line in logfile.read_text().splitlines():
            r = json.loads(line)
            if "loss" in r and "global_step/max_steps" in r:
                out[int(r["global_step/max_steps"].split("/")[0])] = r["loss"]
    return out


def step_dicts(run: Run) -> list[str]:
    """The per-step dicts ms-swift printed (every rank's), as train.log holds them."""
    text = (run.path / "train.log").read_bytes().decode(errors="replace")
    return [seg for line in text.splitlines() for seg in line.split("\r")
            if seg.lstrip().startswith("{'loss'") and "global_step/max_steps" in seg]


def alerts(run: Run, rule: str) -> list[dict]:
    return [a for a in run.events("alert") if a.get("rule") == rule]


@pytest.fixture(scope="module")
def finished(swift_runs, tiny) -> Run:
    require_swift()
    run = two_ranks(swift_runs, tiny, "args.max_steps=8", "args.save_steps=4")
    run.wait(lambda s: s.get("status") == "succeeded", "status succeeded")
    return run


def test_a_two_rank_run_shows_rank_0s_steps_once_and_its_saves(finished):
    """Measured: torchrun + 2 ranks; `rank: 0, local_rank: 0, world_size: 2` in the log, one dict per
    step (rank 0's: the Trainer logs on the world's process zero), checkpoints 4 and 8 verified."""
    log = (finished.path / "train.log").read_bytes().decode(errors="replace")
    assert "-m torch.distributed.run --nproc_per_node 2 --master_port" in log
    assert "rank: 0, local_rank: 0, world_size: 2" in log
    assert len(step_dicts(finished)) == 8
    logged = swift_logged_losses(finished)
    records = finished.metrics()
    assert [m["step"] for m in records] == list(range(1, 9))
    for m in records:
        assert m["loss"] == pytest.approx(logged[m["step"]], rel=1e-3)
    assert sorted(e["step"] for e in finished.ok_checkpoints()) == [4, 8]
    assert alerts(finished, "not_distributed") == []
    snap = cli(None, "--json", str(finished.path), "--once", "--no-gpu")
    assert snap.returncode == 0, snap.stderr
    shown = json.loads(snap.stdout.splitlines()[0])["run"]
    assert (shown["status"], shown["step"], shown["max_steps"], shown["metric_count"]) == ("succeeded", 8, 8, 8)


def test_ranks_that_train_without_ddp_are_said_to(swift_runs, tiny):
    """Without `--use_cpu` on a machine with no GPU accelerate finds no distributed backend: every rank
    trains its own copy and prints its own dict of each step, their values apart (measured: 26 dicts for
    12 steps, step 2's loss 6.908 and 6.929), and transformers warns once per rank. Before, the console
    showed one rank's curve (the first dict of each step) and said nothing; now one `not_distributed`
    warning tells it and names `--use_cpu true`."""
    require_swift()
    run = two_ranks(swift_runs, tiny, "args.max_steps=3", "args.save_steps=3", ddp=False)
    run.wait(lambda s: s.get("status") == "succeeded", "status succeeded")
    # both ranks print their steps: more dicts than steps (6 on an idle machine; CI once saw 5, one rank's
    # last dict missing as the ranks ended, which is not what this test is about)
    assert len(step_dicts(run)) > 3, step_dicts(run)
    assert [m["step"] for m in run.metrics()] == [1, 2, 3]
    (alert,) = alerts(run, "not_distributed")
    assert alert["level"] == "warning" and "--use_cpu true" in alert["message"], alert
    snap = cli(None, "--json", str(run.path), "--once", "--no-gpu")
    assert any(a.get("rule") == "not_distributed" for a in json.loads(snap.stdout.splitlines()[0])["alerts"])


# What the measured runs printed (ms-swift 4.6.0, torch 2.13.0, transformers 5.19.0, 2 ranks on CPU), for the
# tests that need no ms-swift: transformers' warning on each rank without --use_cpu, two ranks' dicts of step 1,
# and torchrun's end after rank 1 was SIGKILLed (the traceback's frames left out).
NO_DDP_LOG = """\
[transformers] torch.distributed process group is initialized, but parallel_mode != ParallelMode.DISTRIBUTED. \
In order to use Torch DDP, launch your script with `python -m torch.distributed.launch
[transformers] torch.distributed process group is initialized, but parallel_mode != ParallelMode.DISTRIBUTED. \
In order to use Torch DDP, launch your script with `python -m torch.distributed.launch
{'loss': '6.943', 'grad_norm': '0.3128', 'learning_rate': '0.004268', 'token_acc': '0', 'epoch': '0.07407', \
'global_step/max_steps': '1/4', 'elapsed_time': '0s', 'remaining_time': '1s', 'train_speed(s/it)': '0.2411'}
{'loss': '6.943', 'grad_norm': '0.3447', 'learning_rate': '0.004268', 'token_acc': '0', 'epoch': '0.07407', \
'global_step/max_steps': '1/4', 'elapsed_time': '0s', 'remaining_time': '1s', 'train_speed(s/it)': '0.1872'}
"""
RANK_SIGKILLED_TAIL = """\
W1130 22:18:01.907000 10808 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 10832 closing signal SIGTERM
E1130 22:18:01.975000 10808 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) local_rank: 1 \
(pid: 10833) of binary: /work/main/.venv-swift/bin/python
Traceback (most recent call last):
  File "/work/main/.venv-swift/lib/python3.11/site-packages/torch/distributed/launcher/api.py", line 383, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: 
============================================================
/work/main/.venv-swift/lib/python3.11/site-packages/swift/cli/sft.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-30_22:18:01
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 10832)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 10832
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-30_22:18:01
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 10833)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 10833
============================================================
"""


def test_parse_of_a_log_of_ranks_without_ddp_says_so(tmp_path):
    """`moeconsole parse` of such a log (no ms-swift needed): the two dicts of step 1 are both records, and the
    summary's alerts name `not_distributed` once (before: "alerts none")."""
    log = tmp_path / "train.log"
    log.write_text(NO_DDP_LOG)
    out = cli(None, "parse", str(log))
    assert out.returncode == 0, out.stderr
    assert "1 warning not_distributed" in out.stdout and "--use_cpu true" in out.stdout, out.stdout


@pytest.mark.parametrize("oom_kills, said", [
    (0, "killed by SIGKILL (rank 1 on localhost, pid 10833) without a user kill, and not by the kernel's OOM killer"),
    (None, "killed by SIGKILL (rank 1 on localhost, pid 10833) without a user kill: most likely the host OOM killer"),
    (1, "most likely the host OOM killer"),
])
def test_torchruns_end_after_a_rank_was_sigkilled_names_the_rank_and_what_the_oom_count_proves(oom_kills, said):
    """`swift` exits 1 after torchrun's ChildFailedError; the root cause is rank 1's SIGKILL. Its class and
    restart are the SIGKILL's; with no OOM kill counted on the machine it was no OOM kill."""
    from moeconsole.runner.core.crash import classify
    v = classify(1, RANK_SIGKILLED_TAIL.splitlines(), steps_seen=52, attempt=1, oom_kills=oom_kills)
    assert (v.cls, v.recovery) == ("killed_oom", "restart")
    assert said in v.summary, v.summary


def test_a_rank_killed_by_another_process_restarts_from_the_verified_save_and_kill_ends_the_tree(swift_runs, tiny):
    """SIGKILL to rank 1 from outside: torchrun SIGTERMs rank 0 and raises ChildFailedError (root
    cause `rank 1 ... exitcode -9 (pid N)`); `swift` exits 1. The crash names that rank and PID,
    says no OOM kill was counted (before: "most likely the host OOM killer"), and the automatic
    restart resumes from the newest verified save. Then `moeconsole kill` ends the whole tree
    (swift, torchrun and both ranks: torchrun's own SIGTERM to its workers races the runner's),
    and `moeconsole restart` resumes again."""
    require_swift()
    run = two_ranks(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4")
    try:
        run.wait(lambda s: run.ok_checkpoints() and len(ranks_of(run)) == 2, "checkpoint-4 verified, 2 ranks")
        ranks = ranks_of(run)
        tracked = {p["pid"] for p in run.state()["pids"]}
        assert {p.pid for p in ranks.values()} <= tracked                 # the ranks are the run's
        torchrun = ranks[0].parent()
        assert "torch.distributed.run" in " ".join(torchrun.cmdline()) and torchrun.pid in tracked
        victim = ranks[1].pid
        oom_before = oom_kills()
        os.kill(victim, signal.SIGKILL)
        state = run.wait(lambda s: s.get("attempt") == 2 and s.get("status") == "running", "the automatic restart")
        (crash,) = run.events("crash")
        assert (crash["class"], crash["decision"]) == ("killed_oom", "restart"), crash
        assert f"rank 1 on localhost, pid {victim}" in crash["summary"], crash["summary"]
        if oom_before is not None and oom_before == oom_kills():    # no OOM kill on the machine meanwhile
            assert "another process sent it" in crash["summary"], crash["summary"]
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        verified = {e["path"]: e["step"] for e in run.ok_checkpoints() if e["attempt"] == 1}
        assert start2["resumed_from"] in verified, (start2["resumed_from"], verified)
        resumed = verified[start2["resumed_from"]]
        run.wait(lambda s: run.metrics(attempt=2), "a step of attempt 2")
        assert run.metrics(attempt=2)[0]["step"] == resumed + 1

        run.wait(lambda s: any(e["attempt"] == 2 for e in run.ok_checkpoints()) and len(ranks_of(run)) == 2,
                 "a save of attempt 2 verified, its 2 ranks")
        tree = {p["pid"]: p["start_time"] for p in run.state()["pids"]}
        killed = cli(swift_runs, "kill", run.id)
        assert killed.returncode == 0, killed.stderr
        run.wait(lambda s: s.get("status") == "killed", "status killed")
        (done,) = [e for e in run.events("kill_done") if e["attempt"] == 2]
        assert done["survivors"] == [], done
        until(lambda: not any(running(p, c) for p, c in tree.items()), 60, what="every process of the tree gone")

        again = cli(swift_runs, "restart", run.id)
        assert again.returncode == 0, again.stderr
        run.wait(lambda s: s.get("attempt") == 3 and run.metrics(attempt=3), "attempt 3's first step")
        (start3,) = [e for e in run.events("attempt_start") if e["attempt"] == 3]
        newest = max((e for e in run.ok_checkpoints() if e["attempt"] == 2), key=lambda e: e["step"])
        assert start3["resumed_from"] == newest["path"]
        assert run.metrics(attempt=3)[0]["step"] == newest["step"] + 1
    finally:
        cli(swift_runs, "kill", run.id)


@pytest.mark.parametrize("share", ["absent", "cut"])
def test_a_save_rank_1_was_killed_writing_its_share_of(swift_runs, tiny, share):
    """Rank 1 SIGKILLed while it writes its `rng_state_1.pth` into checkpoint-8: transformers writes each
    process's RNG state on that process, unordered with rank 0's trainer_state.json (trainer.py l.3355-3375,
    l.3470-3477), so rank 0 finishes its part of the save and the save lacks rank 1's share. A FIFO where rank 1
    writes holds it at its open: rank 0's trainer_state.json lands, then rank 1 is killed there and the FIFO
    goes (``absent``: nothing of rank 1's was written) or is replaced by a share cut short (``cut``: no zip end,
    as a kill inside torch.save leaves). Round 4 called both `incomplete` and resumed from checkpoint-4; review
    R53: absent, transformers resumes all the same with rank 1's RNG fresh (``_load_rng_state`` only logs,
    l.3809-3817), so checkpoint-8 verifies ok and `verify` warns naming process 1; cut short,
    torch.load raises on every resume, so it is `incomplete` and the restart resumes from checkpoint-4."""
    require_swift()
    run = two_ranks(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4")
    fifo = None
    try:
        until(lambda: list((run.path / "output").glob("v0-*")), TIMEOUT, what="ms-swift's v0-<time>/")
        (vdir,) = list((run.path / "output").glob("v0-*"))
        ckpt = vdir / "checkpoint-8"
        ckpt.mkdir()
        fifo = ckpt / "rng_state_1.pth"
        os.mkfifo(fifo)
        run.wait(lambda s: (ckpt / "trainer_state.json").is_file() and len(ranks_of(run)) == 2,
                 "rank 0's part of checkpoint-8 written, rank 1 held at its share")
        assert (ckpt / "rng_state_0.pth").is_file()
        os.kill(ranks_of(run)[1].pid, signal.SIGKILL)
        fifo.unlink()
        if share == "cut":
            whole = (ckpt / "rng_state_0.pth").read_bytes()
            (ckpt / "rng_state_1.pth").write_bytes(whole[: len(whole) // 2])
        state = run.wait(lambda s: s.get("attempt") == 2 and s.get("status") == "running", "the automatic restart")
        verdicts = [(e["ok"], e["verdict"], e.get("reason") or "") for e in run.events("checkpoint")
                    if e["path"] == str(ckpt)]
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        if share == "cut":
            assert verdicts and not any(ok for ok, _v, _r in verdicts), verdicts
            assert verdicts[-1][1] == "incomplete" and "rng_state_1.pth" in verdicts[-1][2], verdicts
            assert start2["resumed_from"] == str(vdir / "checkpoint-4"), start2["resumed_from"]
        else:
            assert verdicts and verdicts[-1][:2] == (True, "ok"), verdicts
            # which of checkpoint-8 and the older checkpoint-4 (holding both shares) is resumed from is
            # latest_good's older-save comparison (round 19, ``discover.process_shares``), not this verdict's
            assert start2["resumed_from"] in (str(ckpt), str(vdir / "checkpoint-4")), start2["resumed_from"]
        assert cli(swift_runs, "kill", run.id).returncode == 0
        run.wait(lambda s: s.get("status") == "killed", "status killed")
        # the run has ended: `verify RUN` judges the save as it is (before: IN_PROGRESS, exit 3, "not written yet")
        shown = cli(swift_runs, "verify", run.id, "--json")
        (eight,) = [c for c in json.loads(shown.stdout)["checkpoints"] if c["path"] == str(ckpt)]
        if share == "cut":
            assert eight["verdict"] == "incomplete" and "rng_state_1.pth" in eight["reason"], eight
        else:
            assert eight["verdict"] == "ok" and any("rng_state_1.pth is missing" in n for n in eight["notes"]), eight
    finally:
        cli(swift_runs, "kill", run.id)
        if fifo is not None and fifo.exists():
            fifo.unlink()


@pytest.mark.parametrize("ranks", [1, 2])
def test_sigint_to_the_trainings_group_is_someones_stop_restarted_from_the_verified_save(swift_runs, tiny, ranks):
    """SIGINT to the training's process group, what Ctrl-C in a terminal sends to its foreground group
    (moeconsole starts the training in a session of its own, so its own terminal's Ctrl-C never gets
    there: this is someone's `kill -INT -PGID`). The wrapper's `subprocess.run` raises KeyboardInterrupt
    (swift/cli/main.py l.98); with one process the trainer, in that group, stops the same way; with two,
    torchrun (in the group) ends its ranks, which sit in sessions of their own. The runner calls it
    `unknown`, "ended by SIGINT", restarts it from the newest verified save, and no process of the first
    attempt is left."""
    require_swift()
    run = (two_ranks(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4") if ranks == 2 else
           start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4"))
    try:
        state = run.wait(lambda s: run.ok_checkpoints() and s.get("pids")
                         and len(ranks_of(run)) == (2 if ranks == 2 else 0), "a verified save")
        tree = {p["pid"]: p["start_time"] for p in state["pids"]}
        leader = next(p for p in state["pids"] if p.get("role") == "leader")
        os.killpg(os.getpgid(leader["pid"]), signal.SIGINT)   # the `swift` wrapper's group
        run.wait(lambda s: s.get("attempt") == 2 and s.get("status") == "running", "the automatic restart")
        (crash,) = run.events("crash")
        assert (crash["class"], crash["decision"]) == ("unknown", "restart"), crash
        assert crash["summary"].startswith("ended by SIGINT") or "KeyboardInterrupt" in crash["summary"], crash
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        verified = {e["path"]: e["step"] for e in run.ok_checkpoints() if e["attempt"] == 1}
        assert start2["resumed_from"] == max(verified, key=verified.get), (start2["resumed_from"], verified)
        until(lambda: not any(running(p, c) for p, c in tree.items()), 60, what="attempt 1's processes gone")
        print("SIGINT", ranks, crash["summary"], crash.get("exit_code"))
    finally:
        cli(swift_runs, "kill", run.id)


def test_a_stopped_rank_is_called_stopped_not_hung_and_kill_still_ends_the_tree(swift_runs, tiny):
    """SIGSTOP to rank 1: rank 0 blocks in gloo's allreduce (measured: `futex_do_wait`), the log goes
    silent. At the heartbeat the runner finds the stopped rank: one `stopped` warning naming its PID,
    no hang and no restart. `moeconsole kill` then ends every process, the stopped one too (SIGCONT
    follows the SIGTERM)."""
    require_swift()
    run = two_ranks(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4", "heartbeat.timeout_s=15")
    try:
        run.wait(lambda s: run.ok_checkpoints() and len(ranks_of(run)) == 2, "checkpoint-4 verified, 2 ranks")
        victim = ranks_of(run)[1]
        os.kill(victim.pid, signal.SIGSTOP)
        until(lambda: alerts(run, "stopped"), 240, what="the stopped warning")
        (said,) = alerts(run, "stopped")
        assert said["values"]["pids"] == [victim.pid] and f"kill -CONT {victim.pid}" in said["message"], said
        state = run.state()
        assert state["status"] == "running" and state["attempt"] == 1 and run.events("crash") == []
        tree = {p["pid"]: p["start_time"] for p in state["pids"]}
        killed = cli(swift_runs, "kill", run.id)
        assert killed.returncode == 0, killed.stderr
        run.wait(lambda s: s.get("status") == "killed", "status killed")
        (done,) = run.events("kill_done")
        assert done["survivors"] == [], done
        until(lambda: not any(running(p, c) for p, c in tree.items()), 60, what="every process of the tree gone")
    finally:
        cli(swift_runs, "kill", run.id)
