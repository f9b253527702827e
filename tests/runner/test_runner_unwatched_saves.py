"""A command run without ``checkpoints.dir`` that saves anyway (newcomer round 10: `moeconsole run --
python train.py` writing `out/checkpoint-20/`, `-40/`, ...): the run said once, in a lint warning before
the screen opened, that nothing is watched, and never again while the saves piled up that a crash would
not resume from. Now the runner finds the saves this run writes (``checkpoints.unwatched``) and raises one
warning naming the directory and the `--set` that watches it."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tests.runner.conftest import Run
from tests.runner.test_runner_bare_command import cli

# saves a torch.save-named file into out/checkpoint-N/ every 2 steps, then waits (printing steps) for
# the test to say stop: the runner's look comes at its own pace, not at a sleep of the test's
TRAIN = """\
import pathlib, sys, time
step = 0
while not pathlib.Path("stop").exists() and step < 3000:
    step += 1
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    if step in (2, 4):
        d = pathlib.Path("out") / f"checkpoint-{step}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "state.pt").write_bytes(b"not really a tensor, but named as torch.save names it")
    time.sleep(0.05)
"""


def _run(work: Path, *sets: str) -> Run:
    runs = work.parent / "runs"
    proc = cli(runs, work, "run", "--detach", "--set", "restart.max_restarts=0", *sets, "--",
               sys.executable, "train.py")
    assert proc.returncode == 0, proc.stderr
    return Run(runs / proc.stdout.strip().splitlines()[0])


def _alerts(run: Run) -> list[dict]:
    return [e for e in run.events("alert") if e.get("rule") == "saves_unwatched"]


def _stop(work: Path, run: Run) -> dict:
    (work / "stop").write_text("x")
    return run.wait_status("succeeded", "failed", timeout=120)


def test_saves_made_without_checkpoints_dir_are_named_once_with_the_set_that_watches_them(tmp_path):
    work = tmp_path / "work"
    old = work / "out" / "checkpoint-1"          # an older run's save in the same place: not this run's
    old.mkdir(parents=True)
    (old / "state.pt").write_bytes(b"old")
    then = time.time() - 3600
    os.utime(old / "state.pt", (then, then))
    os.utime(old, (then, then))
    (work / "train.py").write_text(TRAIN)
    run = _run(work)
    run.wait(lambda s: bool(_alerts(run)), timeout=120, what="the saves_unwatched alert")
    # still running when it said so, so a user can act before the crash that would start over
    assert run.state()["status"] == "running"
    state = _stop(work, run)
    assert state["status"] == "succeeded", state
    alerts = _alerts(run)
    assert len(alerts) == 1, alerts
    a = alerts[0]
    assert a["level"] == "warning"
    assert "--set checkpoints.dir=out" in a["message"], a
    assert a["values"]["where"] == "out"
    named = [Path(p).name for p in a["values"]["paths"]]
    assert "checkpoint-1" not in named and set(named) <= {"checkpoint-2", "checkpoint-4"} and named, named
    # what the user reads: `runs show` lists the warning's headline
    text = cli(run.path.parent, work, "runs", "show", run.id).stdout
    assert "saves in out/ are not watched (checkpoints.dir is not set)" in text, text


def test_no_such_warning_when_checkpoints_dir_is_set(tmp_path):
    """Absence needs a window: a run with checkpoints.dir set (verification off, so nothing else
    watches) runs beside one without, started first; once the other has said its warning, this one
    has looked as long, at the same pace, over saves of its own."""
    watched, bare = tmp_path / "watched", tmp_path / "bare"
    for work in (watched, bare):
        work.mkdir()
        (work / "train.py").write_text(TRAIN)
    run = _run(watched, "--set", "checkpoints.dir=out", "--set", "checkpoints.verify=false")
    run.wait(lambda s: (watched / "out" / "checkpoint-4").exists(), timeout=120, what="its saves")
    other = _run(bare)
    other.wait(lambda s: bool(_alerts(other)), timeout=120, what="the other run's saves_unwatched alert")
    _stop(bare, other)
    assert _stop(watched, run)["status"] == "succeeded"
    assert not _alerts(run), _alerts(run)


def _save(d: Path, at: float) -> None:
    d.mkdir(parents=True)
    (d / "model.safetensors").write_bytes(b"x")     # found by its name; the look reads no tensor
    os.utime(d / "model.safetensors", (at, at))
    os.utime(d, (at, at))


def test_a_save_made_after_the_wall_clock_stepped_back_is_still_this_runs(tmp_path):
    """The first look notes what is there; a save that appears after it is this run's even when
    its files' times are from before the run started (the wall clock stepped back an hour)."""
    from moeconsole.runner.checkpoints.unwatched import SavesLook
    start = time.time()
    _save(tmp_path / "out" / "ckpt_10", start - 7200)     # an older run's
    look = SavesLook(start)
    assert look.look(tmp_path) == [] and not look.done
    _save(tmp_path / "out" / "ckpt_20", start - 3600)     # this run's, stamped by a clock set back
    found = look.look(tmp_path)
    assert [c.path.name for c in found] == ["ckpt_20"], found
    look.done = True                                      # the runner said them: no more looks
    assert not look.due(time.monotonic()) and look.look(tmp_path) == []


def test_a_slow_look_looks_less_often(tmp_path, monkeypatch):
    """A walk that took long (a network home directory) puts the next look off so looking costs at
    most LOOK_SHARE of the runner's time; a quick one comes back after every_s."""
    from moeconsole.runner.checkpoints import unwatched
    look = unwatched.SavesLook(time.time(), every_s=1.0)
    assert look.due(time.monotonic())
    look.look(tmp_path)
    assert not look.due(time.monotonic()) and look.next_at - time.monotonic() <= 1.0

    def slow(root, **kw):
        until_ = time.monotonic() + 0.05
        while time.monotonic() < until_:   # a walk that takes 50 ms of the clock
            pass
        return []
    monkeypatch.setattr(unwatched, "find_checkpoints", slow)
    look.look(tmp_path)
    assert look.next_at - time.monotonic() >= 0.05 / unwatched.LOOK_SHARE - 1.0, look.next_at - time.monotonic()


def test_ms_swift_saves_name_its_output_dir_not_this_invocations_version_dir(tmp_path):
    """ms-swift writes each invocation into a new output/v<N>-<time>/ (add_version_to_work_dir): the
    --set that watches the next run's saves names output/, which holds them all."""
    from moeconsole.runner.checkpoints.unwatched import SavesLook, unwatched_alert
    look = SavesLook(time.time())
    look.look(tmp_path)
    _save(tmp_path / "output" / "v0-20261204-001500" / "checkpoint-50", time.time())
    found = look.look(tmp_path)
    headline, message, where = unwatched_alert(found, tmp_path)
    assert where == "output", where
    assert "--set checkpoints.dir=output " in message and "checkpoint-50" in message, message


# saves into <dir>/checkpoint-N every 10 steps while it runs (another run's, watched by its own checkpoints.dir)
TRAIN_SAVING = """\
import pathlib, sys, time
out = sys.argv[1]
step = 0
while not pathlib.Path("stop").exists() and step < 3000:
    step += 1
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    if step % 10 == 0:
        d = pathlib.Path(out) / f"checkpoint-{step}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "state.pt").write_bytes(b"x")
    time.sleep(0.05)
"""


def test_another_live_runs_watched_saves_in_the_same_directory_are_not_this_runs(tmp_path):
    """Two ablations started from one checkout: one watches out_a/ (checkpoints.dir), the other runs without
    and saves into out_c/. The second's warning names its own out_c/, not the first's newer saves."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "ablation.py").write_text(TRAIN_SAVING)
    runs = tmp_path / "runs"

    def start(*args: str) -> Run:
        proc = cli(runs, work, "run", "--detach", "--set", "restart.max_restarts=0", *args)
        assert proc.returncode == 0, proc.stderr
        return Run(runs / proc.stdout.strip().splitlines()[0])

    a = start("--set", "checkpoints.dir=out_a", "--set", "checkpoints.verify=false", "--",
              sys.executable, "ablation.py", "out_a")
    a.wait(lambda s: (work / "out_a" / "checkpoint-10").exists(), timeout=120, what="out_a's first save")
    c = start("--", sys.executable, "ablation.py", "out_c")
    c.wait(lambda s: bool(_alerts(c)), timeout=120, what="c's saves_unwatched alert")
    _stop(work, c)
    _stop(work, a)
    [alert] = _alerts(c)
    assert alert["values"]["where"] == "out_c", alert
    assert all("/out_c/" in p for p in alert["values"]["paths"]), alert["values"]["paths"]
    assert not _alerts(a)


# saves twice and ends at once: the whole attempt is shorter than the runner's look period (unwatched.LOOK_S)
QUICK = """\
import pathlib, time
time.sleep(0.5)
for step in range(1, 5):
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    if step in (2, 4):
        d = pathlib.Path("out") / f"checkpoint-{step}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "state.pt").write_bytes(b"not really a tensor, but named as torch.save names it")
"""


def test_saves_of_an_attempt_shorter_than_a_look_are_named_when_it_ends(tmp_path):
    """Newcomer round 13: a Hugging Face Trainer script of the user's ran 6 s, saved checkpoint-50 and -100
    into hf_out/, and its run ended SUCCEEDED with no word of them (the runner looks every 10 s)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(QUICK)
    run = _run(work)
    state = run.wait_status("succeeded", "failed", timeout=120)
    assert state["status"] == "succeeded", state
    alerts = _alerts(run)
    assert len(alerts) == 1 and "--set checkpoints.dir=out" in alerts[0]["message"], alerts
