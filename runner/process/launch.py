"""Starting and steering runners from a client: create the run directory, start the detached
runner, wait until it is up; send kill/restart and wait for the outcome."""
from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import msgspec

from moeconsole.runner.process import pyexec
from moeconsole.runner.supervisor import control
from moeconsole.runner.core import lifecycle as lc, units
from moeconsole.runner.rundir import jsonio, rundir, runfiles
from moeconsole.runner.core.schema import as_dict
from moeconsole.runner.process import proctree
from moeconsole.runner.process.waiter import process_limit_said
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.core.errors import InputError, utf8_text
from moeconsole.runner.core.state import STATE_HEARTBEAT_S

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

READY_TIMEOUT_S = 20.0


def create_run(base: Path, recipe: "RunRecipe", *, name: str | None = None, allow_drift: bool = False) -> rundir.RunDir:
    """A new run directory with its recipe, secrets, state and empty logs; all of it or nothing:
    a write that fails (a full disk) removes the directory again and is one ``InputError``. The
    working directory is where the command will run (``_launch.cwd``): one that was deleted under
    the shell is said as such before anything is made (it had read "cannot create a run directory
    under BASE: No such file or directory", blaming a runs directory that was fine)."""
    cwd = recipes.current_dir("the run's command would start there")
    name = utf8_text(name, "run name") if name else name   # decided from its bytes: an ASCII locale's escapes
    run = rundir.create(base, name or recipe.name or "")
    try:
        _fill_run(run, recipe, name=name, allow_drift=allow_drift, cwd=cwd)
    except OSError as exc:
        rundir.remove_new(run)
        raise InputError(f"cannot create a run directory under {base}: {exc.strerror or exc}; "
                         "nothing was left behind") from None
    return run


def _fill_run(run: rundir.RunDir, recipe: "RunRecipe", *, name: str | None, allow_drift: bool, cwd: str) -> None:
    recipe = msgspec.structs.replace(recipe, launch=msgspec.structs.replace(recipe.launch, cwd=cwd))
    on_disk = recipes.for_run_dir(recipe)
    _write_new(run.recipe, recipes.dump_yaml(on_disk).encode())
    literal = recipes.secrets_doc(recipe)
    if literal:
        fd = os.open(run.path / "secrets.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(jsonio.dumps(literal))
    _write_new(run.path / runfiles.LAUNCH_ENV_FILE,
               msgspec.json.encode(runfiles.LaunchEnv(env=launch_environment(os.environ))))
    run.write_state({"status": lc.created(), "name": name or recipe.name, "attempt": 0,
                     "recipe_hash": recipes.recipe_hash(recipe), **rundir.start_stamp(),
                     "allow_drift": allow_drift})
    for path in (run.log, run.metrics, run.events, run.runner_log):
        os.close(jsonio.open_append(path))


def launch_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """What ``environ.json`` keeps of the shell that ran ``run``: its environment as the user has it
    (``pyexec.user_env``: our own PYTHONPATH and markers out), without moeconsole's variables
    (``MOECONSOLE_*``: another run's markers, the runs directory) and without a name or value that
    is not UTF-8 text (the JSON file cannot hold it; the runner's own environment still passes it on)."""
    return runfiles.storable_env({k: v for k, v in pyexec.user_env(environ).items() if not k.startswith("MOECONSOLE_")})


def _write_new(path: Path, data: bytes) -> None:
    """A new run file, 0600, never through a symlink."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, jsonio.FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def runner_argv(run: rundir.RunDir) -> list[str]:
    return pyexec.module_argv("moeconsole.runner.supervisor", str(run.path))


def runner_env() -> dict[str, str]:
    """The runner's environment: ours without another run's markers, this checkout importable."""
    return pyexec.own_env({k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_RUN")})


def spawn_runner(run: rundir.RunDir, *, restart: bool = False, resume_from: str | None = None) -> int:
    """Start ``python -m moeconsole.runner.supervisor RUN_DIR`` in a session of its own, detached from this
    terminal: closing the shell, the UI or the SSH connection does not touch it. ``resume_from``
    (with ``restart``): the save the next attempt resumes from (``restart --from``), checked again by the runner."""
    rundir.check_owned(run)  # never start the command of a run another user could have planted
    state = run.read_state()
    refused = acting_refusal(run, state, "a runner", restart=restart) or \
        (still_written_elsewhere(run, state, say=sys.stderr.write) if restart else None)
    if refused is not None:
        raise InputError(f"{run.run_id}: {refused}")
    # the soft open-file limit lifted where the hard one allows (as the runner would): its pipes
    # need room; under a limit that cannot be lifted the runner refuses in one line, or, too low
    # for even the pipes (`ulimit -n 6`), the launch does (below)
    refused = proctree.open_files_refused()
    argv = runner_argv(run) + (["--restart"] if restart else []) + \
        (["--resume-from", resume_from] if restart and resume_from else [])
    try:
        out = jsonio.open_append(run.runner_log)
    except OSError as exc:
        if exc.errno == errno.EROFS:   # no state, no journal, no socket: a runner could do nothing
            raise InputError(f"{run.run_id}: {run.path} is on a read-only filesystem: a runner could record "
                             "nothing there (remount it read-write, or copy the run elsewhere)") from None
        # A symlink planted as runner.log (ELOOP), a directory, a full disk: the file is refused,
        # never the runner (a kill must still get through); its diagnostics are lost instead.
        sys.stderr.write(f"{run.run_id}: cannot use {run.runner_log} ({exc.strerror or exc}); "
                         f"the runner's diagnostics are discarded\n")
        out = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                                close_fds=True, env=runner_env(), cwd=_cwd())
    except OSError as exc:   # EMFILE for its pipes, EAGAIN (a process limit), ENOMEM: one line, the run said FAILED
        os.close(out)        # (its descriptor freed first: the record below needs one)
        said = process_limit_said(exc)
        why = f"cannot start the runner: {refused or exc.strerror or exc}" + (f": {said}" if said and not refused else "")
        record_never_started(run, why)
        raise InputError(f"{run.run_id}: {why}") from None
    os.close(out)
    # The runner outlives us; drop the Popen so nothing waits on it at exit. If it ends while
    # we live (a console attached to a short run), it is reaped at once, never left <defunct>
    # under the console (where it would look like a zombie of the run).
    proc.returncode = 0
    threading.Thread(target=_reap, args=(proc.pid,), name=f"reap-runner-{proc.pid}", daemon=True).start()
    return proc.pid


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass  # already collected (wait_ready or a console's own reaping)


def wait_ready(run: rundir.RunDir, runner_pid: int, timeout: float = READY_TIMEOUT_S) -> dict:
    """Until the runner has written its state with its own pid, or died trying."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = run.read_state()
        if (state.get("runner") or {}).get("pid") == runner_pid and (
                run.sock.exists() or state.get("status") in rundir.TERMINAL):
            return state  # a run refused at start (drift, pre-flight) ends before we look
        if not rundir.pid_alive(runner_pid) or _is_zombie(runner_pid):
            break
        time.sleep(0.05)
    tail = _tail(run.runner_log)
    if rundir.pid_alive(runner_pid):
        raise InputError(f"the runner for {run.run_id} (pid {runner_pid}) is not ready after {timeout:g}s: "
                         f"{tail or 'no output'}")
    why = f"the runner for {run.run_id} did not start: {tail or 'no output'}"
    record_never_started(run, why)
    raise InputError(why)


def record_never_started(run: rundir.RunDir, why: str) -> bool:
    """A new run whose runner died before it wrote a word ends FAILED with a ``launch_failed``
    crash report saying why, never STARTING for good. Only a run still STARTING and with no runner
    holding it is touched (a ``supervise`` of a live run that fails to start a runner changes
    nothing). True when the run was marked."""
    try:
        lock = rundir.lock_runner(run, wait_s=1.0)
    except (rundir.RunLocked, OSError):
        return False  # a runner holds it after all: it owns the run
    try:
        state = run.read_state()
        status = lc.never_started(lc.Status.parse(state.get("status")))  # the lifecycle decides
        if status is None:
            return False
        now = time.time()
        report = runfiles.CrashReport(attempt=0, cls="launch_failed", t=now, run_id=run.run_id, summary=why,
                                      evidence=[why], recovery="fail", retryable=False,
                                      hint="fix what the runner's output names, then start the run again",
                                      log_tail=_runner_log_tail(run.runner_log))
        try:
            jsonio.atomic_write_json(run.crash_report(0), as_dict(report))
        except OSError:
            pass  # the state below still says it
        run.write_state({**state, "status": status, **rundir.end_stamp(state), "pids": [],
                         "last_crash": {"class": "launch_failed", "attempt": 0, "summary": why}})
        run.event_if_possible("status", status=status, reason=why, **{"class": "launch_failed"})
        return True
    except (OSError, ValueError):
        return False
    finally:
        os.close(lock)


def _is_zombie(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return not rundir.pid_alive(pid)


def _cwd() -> str:
    """Where the runner starts: here, unless this directory is gone (then /)."""
    try:
        return os.getcwd()
    except OSError:
        return "/"


def _tail(path: Path, n: int = 3) -> str:
    """What the runner last said: its own error line when it refused to start, else its last lines."""
    lines = _runner_log_tail(path)
    own = [l for l in lines if l.startswith("moeconsole runner:")]
    return own[-1] if own else " | ".join(lines[-n:])


def _runner_log_tail(path: Path, max_bytes: int = 64 * 1024, keep: int = 50) -> list[str]:
    """The runner's last output lines, never through a symlink (a planted one must not print
    another file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - max_bytes))
            text = f.read(max_bytes).decode(errors="replace")
    except OSError:
        return []
    return [l for l in text.splitlines() if l.strip()][-keep:]


def acting_refusal(run: rundir.RunDir, state: dict, what: str, *, restart: bool = False) -> str | None:
    """Why ``what`` (a kill, a runner) must not act on this run directory from here: a copy of a run still
    live elsewhere (``rundir.copy_refusal``: its processes are the original's), or a live run whose runner
    runs on another machine (``elsewhere_refusal``). The one question ``spawn_runner``, ``kill`` and the
    runner's start ask; None: it may act."""
    return rundir.copy_refusal(state, what) or elsewhere_refusal(run, state, what, restart=restart)


def elsewhere_refusal(run: rundir.RunDir, state: dict, what: str, *, restart: bool = False) -> str | None:
    """Why ``what`` (a kill, a runner) must not act from this machine on a live run whose runner ran on
    another one (``rundir.runner_host_elsewhere``: a run directory on a shared filesystem read from the
    login node, a runs directory copied over while its run lives): nothing here sees its processes, so a
    runner here would take the training for ended and start it again here, and a kill here would signal
    none of them and call the run ended. While that runner still writes state.json, always refused; once
    state.json stopped changing past ``stale_after_s`` (the machine may be gone), a restart here is the
    user's way to take the run over (the next attempt starts here), ``kill --machine-gone`` to end it
    (``killrun.end_elsewhere``). None: it may act."""
    host = rundir.runner_host_elsewhere(state)
    if host is None:
        return None
    from moeconsole.runner.rundir.snapshot import runner_liveness
    _alive, age, stale = runner_liveness(state, time.time())
    if stale and restart:
        return None
    typed = rundir.command_ref(run.path.parent, run.run_id)[1]
    shown = units.printable(host)
    if not stale:
        written = f"written {age:.0f} s ago" if age is not None else "with no time of writing"
        return (f"its runner runs on {shown}, another machine (state.json {written}): {what} here could see none of "
                f"its processes; nothing was done (run it on {shown})")
    return (f"its runner ran on {shown}, another machine, and state.json stopped changing {age or 0:.0f} s ago: {what} "
            f"here could see none of its processes, which may still run there; nothing was done (on {shown}, "
            f"`moeconsole runs show {typed}`; if {shown} is gone for good, `moeconsole restart {typed}` starts the "
            f"next attempt here, `moeconsole kill {typed} --machine-gone` records it killed)")


# A live runner rewrites state.json at least every ``STATE_HEARTBEAT_S``, changed or not: three of its rewrites
# watched on this machine's clock without a change tell a silent runner from a live one whatever its clock says.
ELSEWHERE_CONFIRM_S = 3 * STATE_HEARTBEAT_S


def written_while_watched(path: Path, watch_s: float, *, poll_s: float = 0.25) -> float | None:
    """Seconds after which the file at ``path`` held other bytes than when the watch began (a write), on this
    machine's monotonic clock; None when it did not change within ``watch_s``. The bytes, not its stat: an
    open revalidates a file an NFS client caches the attributes of (close-to-open), a stat may not."""
    def read() -> bytes | None:
        try:
            return path.read_bytes()
        except OSError:
            return None
    first, began = read(), time.monotonic()
    while (waited := time.monotonic() - began) < watch_s:
        time.sleep(min(poll_s, max(0.0, watch_s - waited)))
        if read() != first:
            return time.monotonic() - began
    return None


def still_written_elsewhere(run: rundir.RunDir, state: Mapping, *, say: Callable[[str], Any] | None = None) -> str | None:
    """Why a live run whose runner ran on another machine must not be taken for gone after all (None: it may):
    its state.json, silent past ``stale_after_s`` by the two machines' stamps (``elsewhere_refusal``), changed
    while watched here for ``ELSEWHERE_CONFIRM_S``. The age compares that machine's stamp with this machine's
    clock: a clock here ahead of theirs by more than ``stale_after_s`` made a live runner look silent, and a
    `restart` here took its run over (the runner there, seeing it, stood down and ended its training) or a
    `kill --machine-gone` recorded a live training killed. Asked by the commands that act on that silence
    (``spawn_runner``'s takeover, ``killrun.end_elsewhere``), once, before they write anything; ``say``: told
    first that the watch takes a few seconds."""
    host = rundir.runner_host_elsewhere(state)
    if host is None:
        return None
    shown = units.printable(host)
    if say is not None:
        say(f"{run.run_id}: making sure its runner on {shown} is silent: watching state.json for "
            f"{ELSEWHERE_CONFIRM_S:.0f} s\n")
    moved = written_while_watched(run.state, ELSEWHERE_CONFIRM_S)
    if moved is None:
        return None
    stamp = run.read_state().get("updated_at")   # written moments ago there: its age here is the clocks' difference
    differ = (f"; its stamps run about {time.time() - stamp:.0f} s behind this machine's clock (the two clocks differ)"
              if isinstance(stamp, (int, float)) else "")
    return (f"its runner on {shown} still writes state.json (it changed {moved:.1f} s into a watch here){differ}: "
            f"the run is live there; nothing was done")


def read_named_runner_pid(run: rundir.RunDir) -> int | None:
    """``rundir.named_runner_pid`` of the run's state.json, read now (``RunDir.read_state`` never raises: a
    missing or damaged file names no runner)."""
    return rundir.named_runner_pid(run.read_state())


def runner_alive(run: rundir.RunDir, state: dict | None = None) -> bool:
    if rundir.runner_locked(run):
        return True
    state = run.read_state() if state is None else state
    r = state.get("runner") or {}
    return bool(r.get("pid") and rundir.runner_here(r) and r.get("start_time")
                and proctree.same_process(r["pid"], r["start_time"]))


def restart_plan(state: dict, where: str) -> str:
    """What a restart of this run will do, in one sentence: the next attempt, where it resumes
    (``where``: ``resume_plan``'s words), and that elapsed time and cost keep counting."""
    nxt = int(state.get("attempt") or 0) + 1
    return f"start attempt {nxt} {where}{remedy_words(state)}; elapsed time and cost keep counting"


def remedy_words(state: dict) -> str:
    """The environment the next attempt gets for the last crash (state.json's ``next_env``,
    ``judge.remedy_env``), as ``restart``'s plan says it: values masked as recipe.yaml shows them."""
    env = state.get("next_env")
    if not isinstance(env, dict) or not env:
        return ""
    shown = ", ".join(f"{k}={recipes.masked_env_value(str(k), str(v))}" for k, v in sorted(env.items()))
    return f", with {shown} (the last crash's remedy)"


def restart_at_total_refusal(run: rundir.RunDir, state: dict, chosen: dict | None = None, ref: str | None = None) -> str | None:
    """Why ``restart`` does not start an attempt (``ending.resume_at_total_refusal``): the save it would resume from
    (``chosen``, else the one ``resume_plan`` names) holds the training's total, else None. The runner asks the
    same of the save it is about to resume from (``Supervisor._launch_at_total_refusal``). ``ref``: the run as the
    command to type names it (``rundir.command_ref``; its id by default)."""
    from moeconsole.runner.checkpoints.discover import finished_save
    from moeconsole.runner.core.ending import resume_at_total_refusal
    from moeconsole.runner.recipes.runargs import trainer_argv_of
    from moeconsole.runner.recipes.step_count import count_start
    good = chosen if chosen is not None else _resume_good(run, state)
    path = str(good["path"]) if good and good.get("path") else None
    total = state.get("max_steps")
    done = finished_save(Path(path)) if path else None
    if path is None or done is None or not isinstance(total, int):
        return None
    try:
        saved = recipes.saved_recipe(run.path)
    except InputError:
        return None
    attempt = int(state.get("attempt") or 0) + 1
    return resume_at_total_refusal(ref or run.run_id, path, done, total,
                                   count_start(trainer_argv_of(run, saved, attempt, path), path, saved.swift.version))


def _resume_good(run: rundir.RunDir, state: dict) -> dict | None:
    """The save the next attempt resumes from as the runner picks it (``resume_plan``), or None."""
    from moeconsole.runner.checkpoints.order import current_resume_point, run_resume_point, save_order
    root = state.get("checkpoint_root")
    try:
        saved = recipes.saved_recipe(run.path)
    except InputError:
        return None
    if saved is None or not (saved.resume.arg or saved.resume.args) or state.get("no_resume"):
        return None
    order = save_order(run, saved, Path(root) if root else None, state)
    return (current_resume_point(run, state, runner_alive=True, order=order) if runner_alive(run, state)
            else run_resume_point(run, state, order=order))


# Where an attempt of a recipe without resume.arg/args starts (every `run -- COMMAND`): the runner passes no save
NO_RESUME_WORDS = "from step 0 (the recipe has no resume setting)"


def resume_plan(run: rundir.RunDir, state: dict, chosen: dict | None = None) -> tuple[str, bool]:
    """Where the next attempt starts, as the runner picks it, in words and whether it resumes from a
    save: from ``chosen`` (``restart --from``, ``order.chosen_save``), else the newest checkpoint
    verified ok under the run's recipe, else step 0 and why. ``restart`` prints it in its plan and
    again once the attempt runs from step 0."""
    if chosen is not None:
        suspect = ", saved during a grad-norm excursion" if chosen.get("suspect") else ""
        return f"resumed from {Path(str(chosen['path'])).name} (step {chosen.get('step')}, chosen with --from{suspect})", \
            True
    try:
        saved = recipes.saved_recipe(run.path)
    except InputError:
        saved = None
    where, good = NO_RESUME_WORDS, None
    if saved is not None and (saved.resume.arg or saved.resume.args) and not state.get("no_resume"):
        # the runner's own choice: a live runner's resume point; with none alive, the rule a new
        # runner will ask of the disk (a runner that died may not have seen the saves made since)
        from moeconsole.runner.checkpoints.order import save_order
        order = save_order(run, saved, Path(state["checkpoint_root"]) if state.get("checkpoint_root") else None, state)
        good = _resume_good(run, state)
        newest = ", the checkpoint written last that verified ok" if order.rewrites else \
            ", the newest checkpoint verified ok"
        where = (f"resumed from {Path(str(good['path'])).name} (step {good.get('step')}{newest})" if good
                 else "from step 0 (no checkpoint verified ok)")
    return where, good is not None


def request(run: rundir.RunDir, req: control.Request, timeout: float = 10.0) -> control.Answer:
    """One typed control request to the run's runner; no runner answering is an InputError."""
    try:
        return control.send(run.sock, req, timeout=timeout, runner_pid=read_named_runner_pid(run))
    except control.ControlError as exc:
        raise InputError(f"{run.run_id}: {exc}") from None


def wait_status(run: rundir.RunDir, statuses: AbstractSet[str], timeout: float | None) -> dict:
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        state = run.read_state()
        if state.get("status") in statuses:
            return state
        if deadline is not None and time.monotonic() > deadline:
            return state
        if not runner_alive(run, state) and state.get("status") not in statuses:
            time.sleep(0.2)
            state = run.read_state()
            if state.get("status") in statuses or not runner_alive(run, state):
                return state
        time.sleep(0.05)
