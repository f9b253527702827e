"""The supervised run in a hostile world, round 13. Each test drives the real CLI, the real
detached runner and real processes (a real cgroup freezer, real signals, libfaketime), and
asserts on what the user sees: state.json, `--json --once`, `runs show`, `runs ls`, the status
line the run screen draws."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest


from moeconsole.console import format as fmt
from tests.runner.conftest import REPO
from tests.runner.test_runner_world12 import ONE_ATTEMPT, _run_pids, _steady, freeze, freezer, thaw
from tests.waiting import until


def _cli(*args: str, runs_dir, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(runs_dir)],
                          capture_output=True, timeout=120, env=full, cwd=REPO)


def _shown(run_id: str, runs_dir) -> dict:
    """`--json --once`'s run, as a user's script reads it."""
    out = _cli("--json", "--once", run_id, "--no-gpu", runs_dir=runs_dir)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.decode().splitlines()[-1])["run"]


def _views_say(run, runs_dir, word: str) -> None:
    """`--json`, `runs show`, `runs ls` (text and JSON) and the run screen's status line all say ``word``."""
    doc = _shown(run.id, runs_dir)
    assert doc["status_word"] == word and doc["eta_s"] is None, doc
    assert word.encode() in _cli("runs", "show", run.id, runs_dir=runs_dir).stdout
    row = next(r for r in json.loads(_cli("runs", "ls", "--json", runs_dir=runs_dir).stdout)["runs"]
               if r["id"] == run.id)
    assert fmt.state_word(row) == word, row
    line = "".join(text for text, _ in fmt.status_lines(doc, quiet_s=120.0, heartbeat_s=4.0)[0])
    assert word in line and "held 2m" in line and "quiet" not in line and "ETA" not in line, line


def test_a_training_frozen_by_its_cgroup_is_said_frozen_in_every_view_and_not_once_thawed(harness):
    """The training frozen by its cgroup while the runner runs (round 12's open item): only the
    `stopped` warning said so; state.json, `--json`, `runs show`, `runs ls` and the status line
    said RUNNING with an ETA and "quiet 2m (hang limit 4s)". state.json's ``held`` is the one fact
    (the runner sets it and clears it), and every view says "RUNNING (training frozen: thaw
    CGROUP)" from it, with no ETA; once thawed it is gone within a recheck."""
    # a hang limit the quiet after the thaw cannot reach on a loaded machine (4 s failed at load 20)
    run = harness.start(harness.recipe(command=_steady(40), heartbeat={"timeout_s": 12, "startup_s": 60},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    with freezer() as group:
        pids = _run_pids(st)
        freeze(group, pids)
        st = run.wait(lambda s: s.get("held"), 60, what="state.json to say the training is held")
        assert st["held"] == {"how": "frozen", "pids": sorted(st["held"]["pids"]), "cgroups": [f"/{group.name}"],
                              "pgid": None}, st
        assert set(st["held"]["pids"]) <= set(pids), (st["held"], pids)
        _views_say(run, harness.runs_dir, f"RUNNING (training frozen: thaw /{group.name})")
        thaw(group)
        st = run.wait(lambda s: s.get("held") is None, 60, what="state.json to forget the freeze")
    assert _shown(run.id, harness.runs_dir)["status_word"] in ("RUNNING", "SUCCEEDED")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=180)
    assert st["status"] == "succeeded" and st.get("held") is None, (st, run.events("crash"))
    assert [m["step"] for m in run.metrics()] == list(range(1, 41))


def test_a_training_stopped_by_sigstop_is_said_stopped_in_every_view_until_continued(harness):
    """The training's leader stopped (SIGSTOP, a debugger): the same fact, "training stopped:
    kill -CONT PID", in every view while it lasts; gone once continued, silent or not."""
    run = harness.start(harness.recipe(command=_steady(30), heartbeat={"timeout_s": 12, "startup_s": 60},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    leader = next(int(p["pid"]) for p in st["pids"] if p.get("role") == "leader")
    os.kill(leader, signal.SIGSTOP)
    try:
        st = run.wait(lambda s: s.get("held"), 60, what="state.json to say the training is held")
        assert st["held"] == {"how": "stopped", "pids": [leader], "cgroups": [], "pgid": os.getpgid(leader)}, st
        _views_say(run, harness.runs_dir, f"RUNNING (training stopped: kill -CONT {leader})")
    finally:
        os.kill(leader, signal.SIGCONT)
    run.wait(lambda s: s.get("held") is None, 60, what="state.json to forget the stop")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=180)
    assert st["status"] == "succeeded", (st, run.events("crash"))
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"]


def test_a_stopped_training_reads_held_once_its_silence_shows_and_after_a_takeover(harness):
    """Review R23: ``held`` was asked only when the heartbeat limit ran out (30 minutes by default),
    and a runner that took the run over (`supervise`) wrote ``held: null`` over the old runner's fact
    and read plain RUNNING for its whole start-up allowance while the leader stayed in state T. Now
    asked once the views show the silence (``QUIET_SHOWN_S``) and at the takeover's first tick."""
    run = harness.start(harness.recipe(command=_steady(60), heartbeat={"timeout_s": 900, "startup_s": 900,
                                                                       "stale_state_s": 2},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    leader = next(int(p["pid"]) for p in st["pids"] if p.get("role") == "leader")
    word = f"RUNNING (training stopped: kill -CONT {leader})"
    os.kill(leader, signal.SIGSTOP)
    try:
        # long before the 900 s limit: the views' quiet indicator and the word come together
        st = run.wait(lambda s: s.get("held"), 120, what="state.json to say the training is held")
        assert st["held"]["pids"] == [leader] and _shown(run.id, harness.runs_dir)["status_word"] == word
        old = st["runner"]["pid"]
        os.kill(old, signal.SIGKILL)
        until(lambda: _shown(run.id, harness.runs_dir).get("stale"), 60, what="--json to call the run stale")
        out = _cli("supervise", run.id, runs_dir=harness.runs_dir)
        assert out.returncode == 0, out.stderr
        # the new runner says it at once (its hang clock gives it 900 s of start-up allowance)
        st = run.wait(lambda s: s["runner"]["pid"] != old and s.get("status") == "running" and s.get("held"),
                      120, what="the new runner to say the training is held")
        assert st["held"]["pids"] == [leader], st
        doc = _shown(run.id, harness.runs_dir)
        assert doc["status_word"] == word and doc["eta_s"] is None, doc
    finally:
        os.kill(leader, signal.SIGCONT)
    run.wait(lambda s: s.get("held") is None, 60, what="state.json to forget the stop")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=240)
    assert st["status"] == "succeeded", (st, run.events("crash"))


def _ago(piece: str) -> str:
    """The age in "last good checkpoint: step N, AGE ago"."""
    assert piece.endswith(" ago") and ", " in piece, piece
    return piece.rsplit(", ", 1)[1][:-len(" ago")]


def test_the_last_good_checkpoints_age_never_follows_a_step_of_the_wall_clock(harness):
    """"last good checkpoint: step N, Xs ago" (the status line after a bad save or a critical
    alert) was the screen's wall clock less the verdict's wall-clock stamp: "0s ago" for as long as
    a step back of the clock lasted (NTP correcting a fast clock), an hour too old after a step
    forward. The verdict is stamped on the boot clock too, and its age is measured there."""
    run = harness.start(harness.recipe(restart={"max_restarts": 0}))
    run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=180)
    until(lambda: _shown(run.id, harness.runs_dir)["last_good_checkpoint"], 60, what="a good checkpoint")
    # the verdict made two minutes earlier, on both clocks (no wait for an age to pass)
    events = [json.loads(line) for line in run.path.joinpath("events.jsonl").read_text().splitlines() if line]
    for ev in events:
        if ev.get("type") == "checkpoint":
            assert isinstance(ev.get("t_up"), (int, float)) and ev["t_up"] > 120, ev
            ev["t"], ev["t_up"] = ev["t"] - 120, ev["t_up"] - 120
    assert any(ev.get("type") == "checkpoint" for ev in events)
    run.path.joinpath("events.jsonl").write_text("".join(json.dumps(ev) + "\n" for ev in events))
    for step in (-3600.0, 3600.0):   # the clock an hour back, an hour forward, since the save
        line = fmt.status_lines(_shown(run.id, harness.runs_dir), show_last_good=True, now=time.time() + step)[1]
        piece = next(text for text, _ in line if "last good checkpoint" in text)
        assert _ago(piece).startswith("2m"), (step, piece)


def test_the_memory_history_kept_for_a_crash_report_is_trimmed_by_a_duration_not_the_wall_clock(tmp_path):
    """The runner's memory history (the last ``memory.history_s`` of readings, for a CUDA OOM's
    crash report) was trimmed by the readings' wall-clock stamps: a step forward of the clock
    emptied it at the next reading (the report lost the climb to the OOM), a step back kept it
    past its span for as long as the step. It is trimmed by the monotonic clock."""
    from moeconsole.runner.core.memory import Reading
    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.recipes.model import Launch
    from moeconsole.runner.supervisor.memory_feed import MemoryFeed
    from tests.runner.conftest import base_recipe
    recipe = recipes.validate(base_recipe(memory={"history_s": 2}), launch=Launch(recipe_dir=str(tmp_path)))
    from moeconsole.runner.supervisor import memory_feed
    real, moved = time.monotonic, [0.0]
    with pytest.MonkeyPatch.context() as mp:   # the feed's monotonic clock, moved on by the test, not waited on
        mp.setattr(memory_feed.time, "monotonic", lambda: real() + moved[0])
        feed = MemoryFeed(recipe, lambda _msg: None)
    wall = time.time()
    for i, t in enumerate((wall, wall + 1, wall + 7200, wall + 7201), start=1):   # NTP: two hours forward
        feed.watch.observe(Reading("log", step=i, t=t, peak_gib=10.0 + i))
    assert [h["step"] for h in feed.watch.history(None)] == [1, 2, 3, 4]
    moved[0] += 2.5   # the history's span (2 s) passes on the monotonic clock
    feed.watch.observe(Reading("log", step=5, t=wall - 3600, peak_gib=15.0))   # ... then three hours back
    assert [h["step"] for h in feed.watch.history(None)] == [5]


@contextlib.contextmanager
def uts_namespace(name: str) -> Iterator[Callable[..., subprocess.CompletedProcess]]:
    """A UTS namespace of its own (the machine's hostname, others' tests, untouched) named
    ``name``: yields ``cli(*args, runs_dir)`` running the CLI in it (a runner started there lives
    there too). Skips where one cannot be made (not root, no unshare)."""
    holder = subprocess.Popen(["unshare", "--uts", "--fork", "--", "sh", "-c", f"hostname {name} && exec sleep 600"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def inner() -> int | None:
            try:
                kids = Path(f"/proc/{holder.pid}/task/{holder.pid}/children").read_text().split()
            except OSError:
                return None
            return int(kids[0]) if kids and Path(f"/proc/{kids[0]}/comm").read_text().strip() == "sleep" else None
        if holder.poll() is not None:
            pytest.skip(f"cannot make a UTS namespace: {holder.stderr.read().decode() if holder.stderr else ''}")
        pid = until(inner, 30, what="the namespace's holder")

        def cli(*args: str, runs_dir) -> subprocess.CompletedProcess:
            full = {**os.environ, "PYTHONPATH": str(REPO)}
            full.pop("MOECONSOLE_RUNS_DIR", None)
            return subprocess.run(["nsenter", "-t", str(pid), "--uts", "--", sys.executable, "-m",
                                   "moeconsole.console.cli", *args, "--runs-dir", str(runs_dir)],
                                  capture_output=True, timeout=120, env=full, cwd=REPO)
        cli.pid = pid  # type: ignore[attr-defined]
        yield cli
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_hostname_changed_mid_run_leaves_the_runner_known_as_the_runs(harness):
    """The machine's hostname changed while a run trains (`hostnamectl set-hostname`, DHCP,
    cloud-init's first boot), then the runner stopped (SIGSTOP): the views took the runner for one
    on another host (it was known by the hostname it started under): "RUNNING? (runner gone)"
    and `moeconsole supervise RUN` next, which the live runner's lock refuses, where it is stopped
    and `kill -CONT` is what it needs. A process is the run's runner by what makes its PID mean
    one process: this boot and this PID namespace, not a name the user may change."""
    recipe = harness.recipe(command=_steady(200), heartbeat={"timeout_s": 60, "stale_state_s": 2},
                            kill={"grace_s": 3}, **ONE_ATTEMPT)
    with uts_namespace("before-rename") as cli:
        out = cli("run", str(recipe), "--detach", runs_dir=harness.runs_dir)
        assert out.returncode == 0 and out.stdout.strip(), out.stderr
        run_id = out.stdout.decode().split()[0]
        run_path = harness.runs_dir / run_id
        st = until(lambda: (lambda s: s if (s.get("step") or 0) >= 2 else None)(
            json.loads((run_path / "state.json").read_text())), 90, what="step 2")
        subprocess.run(["nsenter", "-t", str(cli.pid), "--uts", "--", "hostname", "after-rename"], check=True)
        runner = st["runner"]["pid"]
        os.kill(runner, signal.SIGSTOP)
        try:
            def stale() -> dict | None:
                got = cli("--json", "--once", run_id, "--no-gpu", runs_dir=harness.runs_dir)
                doc = json.loads(got.stdout.decode().splitlines()[-1])["run"] if got.returncode == 0 else {}
                return doc if doc.get("stale") else None
            doc = until(stale, 90, what="--json to call the state stale")
            assert doc["status_word"] == f"RUNNING? (runner stopped: kill -CONT {runner})", doc
            assert doc["next_command"] == f"kill -CONT {runner}", doc
        finally:
            os.kill(runner, signal.SIGCONT)
        killed = cli("kill", run_id, runs_dir=harness.runs_dir)
        assert killed.returncode == 0, killed.stderr
        st = until(lambda: (lambda s: s if s.get("status") in ("killed", "failed") else None)(
            json.loads((run_path / "state.json").read_text())), 90, what="the run to be killed")
        assert st["status"] == "killed", st


@pytest.mark.parametrize("detach", [False, True])
def test_the_terminal_run_was_typed_in_closing_leaves_the_run_supervised(harness, detach):
    """The SSH connection or tmux window `moeconsole run` was typed in closes (the terminal hangs
    up: SIGHUP to its session), with the console attached (`run`) or while `run --detach` waits
    for the first step: the runner is in a session of its own and lives on; the run trains to its
    end under it, every step recorded."""
    import pty
    recipe = harness.recipe(command=_steady(30 if detach else 16), heartbeat={"timeout_s": 60}, **ONE_ATTEMPT)
    pid, fd = pty.fork()
    if pid == 0:   # the shell's child in the terminal
        os.environ.pop("MOECONSOLE_RUNS_DIR", None)
        os.environ["PYTHONPATH"] = str(REPO)
        os.chdir(REPO)
        os.execv(sys.executable, [sys.executable, "-m", "moeconsole.console.cli", "run", str(recipe),
                                  *(["--detach"] if detach else []), "--runs-dir", str(harness.runs_dir)])
    try:
        def started() -> Path | None:
            runs = [p for p in harness.runs_dir.iterdir() if (p / "state.json").exists()] \
                if harness.runs_dir.exists() else []
            return runs[0] if runs else None
        buf = bytearray()

        def step2() -> dict | None:   # the terminal is read meanwhile, as a terminal does
            import select
            while select.select([fd], [], [], 0)[0]:
                try:
                    buf.extend(os.read(fd, 65536))
                except OSError:
                    break
            path = started()
            st = json.loads((path / "state.json").read_text()) if path else {}
            return st if (st.get("step") or 0) >= 2 else None
        st = until(step2, 90, what="step 2")
    finally:
        os.close(fd)   # the terminal hangs up
    _, status = os.waitpid(pid, 0)
    run_path = started()
    assert run_path is not None
    runner = st["runner"]["pid"]
    st = until(lambda: (lambda s: s if s.get("status") not in ("starting", "running") else None)(
        json.loads((run_path / "state.json").read_text())), 180, what="the run to end")
    assert st["status"] == "succeeded" and st["runner"]["pid"] == runner, (st, bytes(buf[-2000:]))
    steps = [json.loads(line)["step"] for line in (run_path / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 31 if detach else 17)), steps


def test_a_runs_directory_remounted_noexec_nosuid_mid_run_loses_nothing(harness, runs_dir):
    """The runs directory's filesystem remounted `noexec,nosuid,nodev` while a run trains (a
    hardening script, an admin's `mount -o remount`, a home directory moved to such a mount): the
    runner execs nothing from the run directory (its control socket, lock and files need none of
    these), so the run trains on to its end, answers `--json`, and every step is recorded."""
    from tests.conftest import tmpfs
    with tmpfs(runs_dir, "size=64m,mode=0700", end_runs=True):
        run = harness.start(harness.recipe(command=_steady(12), **ONE_ATTEMPT))
        run.wait(lambda s: (s.get("step") or 0) >= 2, 90, what="step 2")
        remounted = subprocess.run(["mount", "-o", "remount,noexec,nosuid,nodev", str(runs_dir)], capture_output=True)
        assert remounted.returncode == 0, remounted.stderr
        assert _shown(run.id, runs_dir)["status_word"] == "RUNNING"
        st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=180)
        assert st["status"] == "succeeded", (st, run.events("crash"))
        assert [m["step"] for m in run.metrics()] == list(range(1, 13))


def test_a_kill_of_a_training_frozen_by_its_cgroup_says_it_waits_for_the_thaw(harness):
    """`kill RUN` of a run whose training a cgroup freezes: a frozen process takes no signal,
    SIGKILL included, until it is thawed, and `kill` waited its minute and said "still STOPPING
    after 1m03s", the views "STOPPING", nothing saying why. The held fact lives on through the
    kill: "still STOPPING (training frozen: thaw CGROUP)" in `kill` and every
    view; once thawed, the run is KILLED and nothing of it lives."""
    run = harness.start(harness.recipe(command=_steady(200), heartbeat={"timeout_s": 4, "startup_s": 60},
                                       kill={"grace_s": 2}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    with freezer() as group:
        pids = _run_pids(st)
        freeze(group, pids)
        run.wait(lambda s: s.get("held"), 60, what="state.json to say the training is held")
        killed = harness.cli("kill", run.id, "--timeout", "8")
        word = f"STOPPING (training frozen: thaw /{group.name})"
        assert killed.returncode != 0 and f"still {word}" in (killed.stdout + killed.stderr), killed
        assert _shown(run.id, harness.runs_dir)["status_word"] == word
        thaw(group)
        st = run.wait_status("killed", "failed", timeout=120)
    assert st["status"] == "killed" and st.get("held") is None, st
    until(lambda: not [p for p in pids if os.path.exists(f"/proc/{p}")], 60, what="the training to end")
