"""The supervised run in a hostile world, round 12: a runner and a training paused for real. A
cgroup freezer (what `docker pause`, `systemctl freeze` and a batch system's suspend use) freezes
the run's processes; each test drives the real CLI, the real detached runner and real processes,
and asserts on what the user sees (state.json, the alerts, the steps recorded)."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Iterable, Iterator

import pytest

from tests.runner.conftest import NO_SAVES, REPO
from tests.waiting import until

ONE_ATTEMPT = {"restart": {"max_restarts": 0}, **NO_SAVES}

# cgroup v1's freezer hierarchy (freezer.state: THAWED, FREEZING, FROZEN; Documentation/
# admin-guide/cgroup-v1/freezer-subsystem.rst) or cgroup v2's cgroup.freeze (0/1, with "frozen 1"
# in cgroup.events once every task is frozen; Documentation/admin-guide/cgroup-v2.rst).
V1 = Path("/sys/fs/cgroup/freezer")


@contextlib.contextmanager
def freezer() -> Iterator[Path]:
    """A new freezer cgroup (v1), removed afterwards with whatever is left in it moved back to the
    root. Skips where it cannot be made (not root, no freezer hierarchy)."""
    group = V1 / f"moeconsole-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
    except OSError as exc:
        pytest.skip(f"no cgroup v1 freezer to make a group in: {exc}")
    try:
        yield group
    finally:
        (group / "freezer.state").write_text("THAWED\n")
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (V1 / "cgroup.procs").write_text(pid + "\n")
        until(lambda: not (group / "cgroup.procs").read_text().split(), what="the test's freezer group to empty")
        group.rmdir()


def freeze(group: Path, pids: Iterable[int]) -> None:
    for pid in pids:
        (group / "cgroup.procs").write_text(f"{pid}\n")
    (group / "freezer.state").write_text("FROZEN\n")
    until(lambda: (group / "freezer.state").read_text().strip() == "FROZEN", what="the group to be frozen")


def thaw(group: Path) -> None:
    (group / "freezer.state").write_text("THAWED\n")


# ``steps`` steps of 0.5 s of CPU work each (a step's compute: frozen in the middle, it still has
# its rest to do once thawed, unlike a sleep whose deadline passed while frozen); the silence
# between steps is well under a 4 s heartbeat.
def _steady(steps: int) -> list[str]:
    return ["{python}", "-c", textwrap.dedent(f"""
        import time
        for i in range(1, {steps + 1}):
            print('{{"step": %d, "loss": %r}}' % (i, 1.0 / i), flush=True)
            began = time.process_time()
            while time.process_time() - began < 0.5:
                pass
    """)]


def _run_pids(st: dict) -> list[int]:
    return [int(p["pid"]) for p in st.get("pids") or []]


def test_a_runner_frozen_with_its_training_past_the_heartbeat_calls_no_hang_once_thawed(harness):
    """The runner and its training frozen together (a laptop's session frozen, `docker pause`, a
    VM's vCPUs held, `systemctl freeze`) for three heartbeats, then thawed together: the training
    printed nothing while frozen, and the runner's first look after the thaw took its own absence
    for the training's silence: a `hang` crash, the healthy training killed. The silence the
    runner did not watch is not counted: the run trains on to its end, every step recorded."""
    run = harness.start(harness.recipe(command=_steady(20), heartbeat={"timeout_s": 4, "startup_s": 60},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    with freezer() as group:
        freeze(group, [st["runner"]["pid"], *_run_pids(st)])
        frozen_at = time.monotonic()
        until(lambda: time.monotonic() - frozen_at > 12, 60, what="three heartbeats of freeze")
        thaw(group)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=120)
    hangs = [a for a in run.events("alert") if a.get("rule") == "hang"]
    assert st["status"] == "succeeded" and not hangs, (st["status"], hangs, run.events("crash"))
    assert [m["step"] for m in run.metrics()] == list(range(1, 21))


def test_a_training_frozen_by_its_cgroup_is_called_frozen_not_hung_and_trains_on_once_thawed(harness):
    """The training's processes frozen by a cgroup freezer (`docker pause` of its container,
    `systemctl freeze` of its unit, a batch system's suspend) while the runner runs: a frozen
    task is in state D, not T, so round 4's stopped check missed it and the silence was killed as
    a `hang` crash. Now one `stopped` warning says the training is frozen by its cgroup (and that
    `kill -CONT` will not wake it), the hang clock waits, and once thawed the run trains on."""
    run = harness.start(harness.recipe(command=_steady(16), heartbeat={"timeout_s": 4, "startup_s": 60},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    with freezer() as group:
        freeze(group, _run_pids(st))
        said = until(lambda: [a for a in run.events("alert") if a.get("rule") in ("stopped", "hang")], 60,
                     what="the runner to say why the training is silent")
        thaw(group)
    assert [a["rule"] for a in said] == ["stopped"], said
    assert "frozen" in said[0]["message"] and group.name in said[0]["message"], said[0]["message"]
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=120)
    assert st["status"] == "succeeded", (st["status"], run.events("crash"))
    assert [m["step"] for m in run.metrics()] == list(range(1, 17))
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"]


def test_a_runner_frozen_by_its_cgroup_is_called_frozen_in_every_view_and_loses_nothing_once_thawed(harness):
    """The runner alone frozen by a cgroup freezer past `stale_state_s`, the training printing on:
    `--json`, `runs show` and `runs ls` said "RUNNING? (runner alive, state.json not written: see
    runner.log)" and runner.log said nothing (a frozen process is in state D or S, not T, so
    round 7's stopped check missed it). They say it is frozen by its cgroup and offer no
    `kill -CONT` (it does not wake a frozen process); once thawed every step is recorded."""
    run = harness.start(harness.recipe(command=_steady(24), heartbeat={"timeout_s": 30, "stale_state_s": 2},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    with freezer() as group:
        freeze(group, [st["runner"]["pid"]])

        def shown() -> dict | None:
            out = _cli("--json", "--once", run.id, "--no-gpu", runs_dir=harness.runs_dir)
            doc = json.loads(out.stdout.decode().splitlines()[-1])["run"] if out.returncode == 0 else {}
            return doc if doc.get("stale") else None

        doc = until(shown, 90, what="--json to call the state stale")
        word = f"RUNNING? (runner frozen: thaw /{group.name})"
        assert doc["status_word"] == word and doc["next_command"] is None, doc
        assert word.encode() in _cli("runs", "show", run.id, runs_dir=harness.runs_dir).stdout
        assert word[:40].encode() in _cli("runs", "ls", runs_dir=harness.runs_dir).stdout
        thaw(group)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=120)
    assert st["status"] == "succeeded", (st["status"], run.events("crash"))
    assert [m["step"] for m in run.metrics()] == list(range(1, 25))


# The interpreter told to keep an ASCII locale: every argument and path reaches Python decoded as
# ASCII, each other byte a lone surrogate (surrogateescape, PEP 383).
ASCII_LOCALE = {"PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "LC_ALL": "C", "LANG": "C"}


def _cli(*args: str, runs_dir, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", os.fsencode(runs_dir)],
                          capture_output=True, timeout=120, env=full, cwd=REPO)


def test_a_utf8_run_name_typed_under_an_ascii_locale_is_the_name_typed(harness, runs_dir):
    """`run --name café` under `PYTHONUTF8=0 PYTHONCOERCECLOCALE=0 LC_ALL=C`: the name's bytes
    are UTF-8, yet it was refused as "not UTF-8 text (it holds the byte 0xc3)" (the check looked at
    the escapes, not the bytes). It is the run's name now, found again by that name the same way;
    a latin-1 byte is still refused, naming that byte."""
    name = "café"
    out = _cli("run", str(harness.recipe(**ONE_ATTEMPT)), "--detach", "--name", name, runs_dir=runs_dir,
               env=ASCII_LOCALE)
    assert out.returncode in (0, 1) and out.stdout.strip(), out.stderr.decode(errors="backslashreplace")
    run_id = out.stdout.decode().split()[0]
    assert json.loads((runs_dir / run_id / "state.json").read_text(encoding="utf-8"))["name"] == name
    shown = _cli("runs", "show", name, runs_dir=runs_dir, env=ASCII_LOCALE)
    assert shown.returncode == 0 and f"id        {run_id}".encode() in shown.stdout, shown.stderr
    latin1 = _cli("run", str(harness.recipe(**ONE_ATTEMPT)), "--detach", "--name", b"caf\xe9\xc3\xa9",
                  runs_dir=runs_dir, env=ASCII_LOCALE)
    assert latin1.returncode == 2 and b"not UTF-8" in latin1.stderr and b"0xe9" in latin1.stderr, latin1.stderr


def test_a_utf8_runs_directory_under_an_ascii_locale_is_refused_naming_the_locale(harness, tmp_path):
    """The runs directory's path is UTF-8 but this Python holds it as escapes (and would encode it
    as ASCII in every file call): the refusal said its bytes were not UTF-8; it says which setting
    to change."""
    base = tmp_path / "données"
    out = _cli("run", str(harness.recipe(**ONE_ATTEMPT)), "--detach", runs_dir=base, env=ASCII_LOCALE)
    err = out.stderr.decode(errors="backslashreplace")
    assert out.returncode == 2 and "Traceback" not in err, err
    assert "not UTF-8" not in err and "PYTHONUTF8=1" in err and "LC_ALL=C.UTF-8" in err, err
    assert not base.exists() or not list(base.iterdir())


def test_runs_show_prints_a_runs_directory_path_holding_a_newline_on_one_line(harness, tmp_path):
    """A runs directory whose path holds a newline (allowed by Linux; round 11 found runs work
    there): `runs show`'s `dir` printed it raw on two lines, the second one reading as a field of
    its own. It is one line, written as bash reads it back (``shellwords``: `$'...\\012...'`), so a
    user can paste it (newcomer round 11)."""
    base = tmp_path / "a\nb"
    out = _cli("run", str(harness.recipe(**ONE_ATTEMPT)), "--detach", runs_dir=base)
    assert out.returncode in (0, 1) and out.stdout.strip(), out.stderr
    run_id = out.stdout.decode().split()[0]
    shown = _cli("runs", "show", run_id, runs_dir=base).stdout.decode()
    dir_lines = [line for line in shown.splitlines() if line.startswith("  dir ")]
    assert len(dir_lines) == 1, shown
    word = dir_lines[0].split(None, 1)[1]
    pasted = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, text=True, timeout=30).stdout
    assert pasted == str(base / run_id), (word, pasted)
    assert not [line for line in shown.splitlines() if line.startswith("b/")], shown


LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


@pytest.mark.skipif(not os.path.exists(LIBFAKETIME), reason="libfaketime not installed (apt-get install faketime)")
def test_an_alert_acknowledged_after_the_wall_clock_stepped_back_is_closed_in_runs_ls(harness, runs_dir):
    """A run made, ended and listed while the wall clock was an hour fast (libfaketime +1h for the
    CLI and its runner: the index stamped the run's row then), the clock corrected (NTP), the
    run's critical alert acknowledged (the console's `a`: ``alertgroups.acknowledge``): `runs ls`
    and the browser went on counting it open for the hour, since acks.json's time was older than
    the row's wall-clock stamp. The files are compared by what they are, not by a clock."""
    from moeconsole.runner.rundir import jsonio
    from moeconsole.runner.rundir.alertgroups import AlertBook, acknowledge, active, read_acks
    fast_clock = {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": "+1h"}
    recipe = harness.recipe(command=["{python}", "-c", "import sys; print('{\"step\": 1, \"loss\": 1.0}');"
                                     " sys.exit('RuntimeError: boom')"], env={"LD_PRELOAD": ""}, **ONE_ATTEMPT)
    out = _cli("run", str(recipe), "--detach", runs_dir=harness.runs_dir, env=fast_clock)
    assert out.stdout.strip(), out.stderr
    run_id = out.stdout.decode().split()[0]
    run_path = harness.runs_dir / run_id
    until(lambda: json.loads((run_path / "state.json").read_text()).get("status") == "failed", 90,
          what="the run to fail")

    def listed(env: dict | None = None) -> dict:
        out = _cli("runs", "ls", "--json", runs_dir=harness.runs_dir, env=env)
        assert out.returncode == 0, out.stderr
        return next(r for r in json.loads(out.stdout)["runs"] if r["id"] == run_id)

    fast = listed(fast_clock)
    assert fast["open_critical"] >= 1, fast
    book = AlertBook()
    for _, ev in jsonio.iter_jsonl(run_path / "events.jsonl"):
        book.feed(ev)
    acknowledge(run_path, active(book.groups(read_acks(run_path))))
    after = listed()
    assert (after["open_alerts"], after["open_critical"]) == (0, 0), after
    assert "alerts_seen" not in after
    shown = _cli("runs", "show", run_id, "--json", runs_dir=harness.runs_dir)   # the index's own columns stay its own
    assert shown.returncode == 0, shown.stderr
    assert "alerts_seen" not in json.loads(shown.stdout) and "recipe_values" not in json.loads(shown.stdout)
