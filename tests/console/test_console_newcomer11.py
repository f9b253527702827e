"""The eleventh newcomer round (README only, a fresh clone, tmux over SSH, a machine set up by
someone else: `LANG=C`, runs under a directory whose path has a space and an accent, their own
`runner.py` in the working directory): where they were misled, as they met it.

A command the console prints for the user to type must find, typed as printed, what it names:
- under an ASCII-only output (``LANG=C`` in tmux, ``PYTHONIOENCODING=ascii``) `moeconsole attach 0bb4
  --runs-dir '/tmp/x y/ü'` was printed `--runs-dir '/tmp/x y/u'` (the stand-in of each letter the
  output lacks): another directory, where the run is not; `runs show`'s `dir` (the one `rm -r` is
  told to take) likewise. Such a path is now the shell's ANSI-C word, `$'/tmp/x y/\\303\\274'`
  (``runner/core/shellwords.py``).
- a path with a space in a hint (`moeconsole attach /tmp/work dir`) was two words.
- `restart RUN --runs-dir DIR` on a finished run named `moeconsole restart <id> --force`, without
  `--runs-dir`: typed, it looked for the run where it is not.
Real processes for the command line, Pilot for the app."""
from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from moeconsole.runner.rundir import rundir

REPO = Path(__file__).resolve().parents[2]


def _env(home: Path, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MOECONSOLE_RUNS_DIR", "XDG_DATA_HOME")}
    return {**env, "HOME": str(home), "PYTHONPATH": str(REPO), "COLUMNS": "200", **more}


def _cli(env: dict[str, str], *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=180, stdin=subprocess.DEVNULL)


def _as_bash_reads(words: str) -> list[str]:
    """What bash makes of ``words`` (a command as printed): its arguments, the bytes as bash has them."""
    out = subprocess.run(["bash", "-c", f"printf '%s\\0' {words}"], capture_output=True, timeout=20,
                         env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert out.returncode == 0, out
    return [os.fsdecode(w) for w in out.stdout.split(b"\0")[:-1]]


def _commands(text: str, verb: str) -> list[str]:
    """Every `moeconsole VERB ...` between backticks in ``text``."""
    return re.findall(rf"`(moeconsole {verb} [^`]*)`", text)


def test_run_detach_under_an_ascii_output_names_a_runs_directory_that_types_back(tmp_path):
    """`run --detach --runs-dir '.../x y/ü'` from a shell whose output takes ASCII only: the
    command it prints next (`runs show`, the run having ended at once; `attach` and `kill` for a
    live one, by the same words), typed into bash as printed, reaches the run (it named
    `.../x y/u`: "no run matches")."""
    base = tmp_path / "x y" / "ü"
    env = _env(tmp_path / "home", PYTHONIOENCODING="ascii", LANG="C", LC_ALL="C")
    out = _cli(env, "run", "--detach", "--runs-dir", str(base), "--", sys.executable, "-c", "print('step 1 loss 2.0')")
    try:
        assert out.returncode == 0, out.stderr
        printed = [c for c in _commands(out.stderr, "[a-z ]+") if "--runs-dir" in c]
        assert printed, out.stderr
        words = _as_bash_reads(printed[0])
        assert words[words.index("--runs-dir") + 1] == str(base), (kills[0], words)
        again = _cli(env, *words[1:])
        assert again.returncode == 0 and "no run matches" not in again.stderr, again
    finally:
        from tests.conftest import end_processes, run_processes
        end_processes(run_processes(base))


def test_runs_show_names_the_runs_directory_as_a_word_an_ascii_output_carries(tmp_path, make_run):
    base = tmp_path / "my runs" / "démo ü"
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="succeeded")
    env = _env(tmp_path / "home", PYTHONIOENCODING="ascii")
    out = _cli(env, "runs", "show", "743b", "--runs-dir", str(base))
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.split()[:1] == ["dir"])
    word = line.split(None, 1)[1]
    assert _as_bash_reads(word) == [str(run.path)], line
    # where the output carries it, the path as it is
    plain = _cli(_env(tmp_path / "home", PYTHONIOENCODING="utf-8"), "runs", "show", "743b", "--runs-dir", str(base))
    assert f"  dir       {run.path}" in plain.stdout.splitlines(), plain.stdout


def test_restart_of_a_finished_run_under_another_runs_directory_names_it(tmp_path, make_run):
    """`restart 743b --runs-dir DIR` of a succeeded run refuses without --force and names the
    command that does it: by the short id with `--runs-dir DIR` (a bare command looks in
    ~/.local/share), never the whole id alone."""
    base = tmp_path / "other runs"
    make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="succeeded")
    out = _cli(_env(tmp_path / "home"), "restart", "743b", "--runs-dir", str(base))
    assert out.returncode == 2, out
    commands = _commands(out.stderr, "restart")
    assert len(commands) == 1, out.stderr
    assert _as_bash_reads(commands[0]) == ["moeconsole", "restart", "--force", "743b", "--runs-dir", str(base)], commands


def test_a_path_with_a_space_in_a_hint_is_one_word(tmp_path):
    """`--json DIR` of a directory that is no run names `moeconsole attach DIR`: one word, quoted."""
    where = tmp_path / "work dir"
    where.mkdir()
    out = _cli(_env(tmp_path / "home"), "--json", str(where))
    assert out.returncode == 2, out
    commands = _commands(out.stderr, "attach")
    assert commands and shlex.split(commands[0]) == ["moeconsole", "attach", str(where)], out.stderr


def test_the_ascii_console_names_the_restart_of_a_run_in_a_directory_with_an_accent(tmp_path, make_run, monkeypatch):
    """The console drawing in ASCII (`LANG=C` in tmux) over a killed run under `.../démo ü`: `r`
    names `moeconsole restart 743b --runs-dir WORD`, and WORD reads back as that directory (the
    driver's stand-ins had made it `demo u`)."""
    from moeconsole.console import glyphs
    from moeconsole.runner.core import shellwords
    from tests.console.test_console_app import app_for, attached, telemetry
    from tests.waiting import until_ui
    monkeypatch.setenv("MOECONSOLE_ASCII", "1")
    monkeypatch.setattr(glyphs, "DRAWING_ASCII", [False])   # this process's other apps draw as before
    monkeypatch.setattr(shellwords, "ASCII_OUTPUT", [False])
    from textual.scrollbar import ScrollBar
    monkeypatch.setattr(ScrollBar, "renderer", ScrollBar.renderer)
    base = tmp_path / "démo ü"
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="killed", restart_at=None)

    async def go() -> str:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("r")
            return await until_ui(pilot, lambda: next((str(n.message) for n in app._notifications
                                                       if str(n.message).startswith("r: ")), None), what="what r says")
    said = glyphs.to_ascii(asyncio.run(go()))   # what the driver writes to the terminal
    commands = _commands(said, "restart")
    assert commands, said
    words = _as_bash_reads(commands[0])
    assert words[:3] == ["moeconsole", "restart", "743b"] and words[words.index("--runs-dir") + 1] == str(base), said
    assert rundir.resolve(Path(words[words.index("--runs-dir") + 1]), "743b").path == run.path


def test_a_word_the_output_carries_is_quoted_as_before_and_every_other_reads_back():
    """The refusals: an ASCII word, or any word where the output takes UTF-8, is ``shlex.quote``'s
    as before; the rest (a quote, a backslash, a newline, bytes that are not UTF-8) read back."""
    from moeconsole.runner.core import shellwords
    for word in ("743b", "/tmp/x y", "it's", "/tmp/démo ü"):
        assert shellwords.quote(word, ascii_only=word.isascii()) == shlex.quote(word)
        assert shellwords.quote(word, ascii_only=False) == shlex.quote(word)
    for word in ("/tmp/démo ü", "a'b\\c ü", "x\ny ü", os.fsdecode(b"/tmp/\xff dir")):
        quoted = shellwords.quote(word, ascii_only=True)
        assert quoted.isascii() and _as_bash_reads(quoted) == [word], quoted
    assert shellwords.quote(os.fsdecode(b"/tmp/\xff"), ascii_only=False) == "$'/tmp/\\377'"
    assert shellwords.path_shown("/tmp/démo", ascii_only=False) == "/tmp/démo"
    assert _as_bash_reads(shellwords.path_shown("/tmp/a\nb", ascii_only=False)) == ["/tmp/a\nb"]


def test_a_recipe_whose_program_is_relative_to_its_workdir_is_run_from_anywhere(tmp_path):
    """`workdir: W` and `command: ["./train.sh"]`, run from another directory: the engine starts
    the command in W, where ./train.sh is; lint had looked for it where `run` was typed and
    refused the run ("not an executable file here; ... nothing launched")."""
    work = tmp_path / "w"
    work.mkdir()
    script = work / "train.sh"
    script.write_text("#!/bin/sh\necho 'step 1 loss 1.0'\n")
    script.chmod(0o755)
    recipe = tmp_path / "wd.yaml"
    recipe.write_text(f"name: wd\nworkdir: {work}\ncommand: [\"./train.sh\"]\n")
    env = _env(tmp_path / "home")
    lint = _cli(env, "lint", str(recipe), cwd=tmp_path)
    assert "executable_missing" not in lint.stdout + lint.stderr, lint
    base = tmp_path / "runs"
    try:
        out = _cli(env, "run", "--detach", "--runs-dir", str(base), str(recipe), cwd=tmp_path)
        assert out.returncode == 0 and "nothing launched" not in out.stderr, out.stderr
        [run] = rundir.list_run_dirs(base)
        assert "step 1 loss 1.0" in run.log.read_text(errors="replace")
    finally:
        from tests.conftest import end_processes, run_processes
        end_processes(run_processes(base))


def test_a_program_given_by_path_that_cannot_run_says_what_it_is(tmp_path):
    """`run -- PATH` whose PATH is no file, a directory, or a script without the x bit: each said
    "is not an executable file here; install it, or name it by its full path in command" (the path
    already full). Now what it is, and the way out; nothing is launched (exit 1). The refusal:
    a bare name not on PATH says as before."""
    script = tmp_path / "train.py"
    script.write_text("print('step 1 loss 1.0')\n")
    env = _env(tmp_path / "home")
    base = tmp_path / "runs"

    def said(*command: str) -> str:
        out = _cli(env, "run", "--detach", "--runs-dir", str(base), "--", *command, cwd=tmp_path)
        assert out.returncode == 1 and "nothing launched" in out.stderr, out
        return next(line for line in out.stderr.splitlines() if "executable_missing" in line)
    line = said(str(script))
    assert "is a file without execute permission" in line and f"`chmod +x {script}`" in line, line
    assert "put python3 before it" in line and "install it" not in line, line
    line = said("./trian.py")
    assert f"'./trian.py' (in {tmp_path}): no such file" in line and "install it" not in line, line
    assert "is a directory" in said(str(tmp_path)), said(str(tmp_path))
    assert "is not an executable on PATH here; install it" in said("no-such-trainer-n11")
    assert not base.exists() or not rundir.list_run_dirs(base)


def _said_after(base, run, presses: str) -> list[str]:
    """What the run screen of ``run`` notifies after each key of ``presses`` (None: nothing)."""
    from tests.console.test_console_app import app_for, attached, said_after_each, telemetry

    async def go() -> list[str | None]:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            return await said_after_each(pilot, presses)
    return asyncio.run(go())


def test_a_key_the_help_offers_says_why_it_does_nothing_now(base, make_run):
    """`a` and `d` on a run that had no alert, `z` with no process to end, `u` while the runner
    lives: their bindings are off then (the footer leaves them out), and the press did nothing,
    without a word. Each says why, from the condition it needs (``keys.unmet_words``)."""
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="succeeded",
                   checkpoints=(), restart_at=None)
    a, d = _said_after(base, run, "ad")
    assert a == "a: no active alert" and d == "d: this run has had no alert", (a, d)
    live = make_run(base, "20261124-100000-tiny-moe-cpu-9c1d", name="tiny-moe-cpu", status="running",
                    runner_pid=os.getpid(), checkpoints=(), restart_at=None)
    z, u = _said_after(base, live, "zu")
    assert z == "z: no listed process can be ended now" and u == "u: the runner is alive: nothing to start", (z, u)


def test_k_on_a_run_whose_runner_is_gone_names_u(base, make_run):
    """The runner killed (-9) under a training that goes on: `k` did nothing. It says that no
    runner watches the run and that `u` starts one, which adopts the training; then `k`."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="running",
                   runner_pid=gone.pid, restart_at=None)
    k, r = _said_after(base, run, "kr")
    assert k == "k: no runner watches this run now: u starts one (it adopts the training), then k", k
    assert r.startswith("r: no runner watches this run now: u starts one"), r


def test_keys_that_apply_or_a_run_that_is_over_say_as_before(base, make_run):
    """The refusals: `k` on a killed run names the command that does it instead (``over_words``),
    as before; `q` on a live run detaches (its Quit entry needs a run that is over)."""
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="killed", restart_at=None)
    [k] = _said_after(base, run, "k")
    assert k.startswith("k: the run is KILLED, no runner watches it:"), k
    from tests.console.test_console_app import app_for, attached, telemetry
    from tests.waiting import until_ui
    live = make_run(base, "20261124-100000-tiny-moe-cpu-9c1d", name="tiny-moe-cpu", status="running",
                    runner_pid=os.getpid(), restart_at=None)

    async def detach() -> list[str]:
        app = app_for(base, live, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("q")
            await until_ui(pilot, lambda: not app.is_running or app._exit_renderables is not None or app.return_code
                           is not None, what="q to close the console")
            return [str(n.message) for n in app._notifications]
    assert not any(m.startswith("q: ") for m in asyncio.run(detach()))


def test_ctrl_c_in_a_dialog_answers_it_as_esc_does(base, make_run, fake_runner):
    """Ctrl-C at the kill question, in the help, the chart picker, an event's detail, the run
    browser's open-path and filter prompts, the log's search: nothing happened, without a word
    (Textual keeps the app's keys from a modal screen, where the app's Ctrl-C says how to leave).
    It closes each as Esc does: the question answered no, nothing sent; the dialog's own line of
    keys says so (`n / Esc / Ctrl-C = cancel`)."""
    from tests.console.test_console_app import _screen_text, app_for, attached, live_run, telemetry
    from tests.waiting import until_ui
    from textual.screen import ModalScreen
    from moeconsole.console.screens.dialogs import ConfirmScreen
    run = live_run(base, make_run)
    runner = fake_runner(run)

    async def go() -> list[tuple[str, str]]:
        app = app_for(base, run, telemetry=telemetry())
        left = []
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            under = type(app.screen).__name__
            for opening in ("k", "question_mark", "c", "enter", "b o", "b slash", "l slash"):
                for key in opening.split():
                    await pilot.press(key)
                await until_ui(pilot, lambda: isinstance(app.screen, ModalScreen), what=f"the dialog of {opening}")
                dialog = type(app.screen).__name__
                if isinstance(app.screen, ConfirmScreen):
                    assert "n / Esc / Ctrl-C = cancel" in _screen_text(app)
                await pilot.press("ctrl+c")
                await until_ui(pilot, lambda: not isinstance(app.screen, ModalScreen), what=f"{dialog} closed by Ctrl-C")
                left.append((dialog, type(app.screen).__name__))
                if opening == "k":
                    # the kill question's answer is said at once (read before it times out: a
                    # notification lasts seconds, the seven dialogs longer on a loaded machine)
                    await until_ui(pilot, lambda: "cancelled: nothing was sent" in [str(n.message) for n in app._notifications],
                                   what="the kill question's 'cancelled: nothing was sent'")
                while type(app.screen).__name__ != under:
                    await pilot.press("escape")
                    await pilot.pause()
        return left
    left = asyncio.run(go())
    assert [dialog for dialog, _ in left] == ["ConfirmScreen", "HelpScreen", "MetricPicker", "DetailScreen",
                                              "PromptScreen", "PromptScreen", "PromptScreen"], left
    assert runner.requests == [], runner.requests


def test_a_command_whose_module_or_script_is_not_there_fails_once_saying_so(tmp_path):
    """`run -- python3 -m my_trian` (a typo): the interpreter says `.../python3: No module named
    my_trian` and exits 1. The runner called it `unknown` and restarted it, a cooldown each time,
    up to max_restarts: the same refusal every time. It is the command's own error
    (``config_error``, CPython's runpy and main.c words): the run fails at once, naming it."""
    from tests.waiting import until
    env = _env(tmp_path / "home")
    base = tmp_path / "runs"
    try:
        out = _cli(env, "run", "--detach", "--runs-dir", str(base), "--", sys.executable, "-m", "my_trian_n11",
                   cwd=tmp_path)
        # `run --detach` waits for the first step: the run has ended by then, and it says how
        assert out.returncode == 1 and "ended FAILED" in out.stderr and "config_error" in out.stderr, out.stderr
        [run] = rundir.list_run_dirs(base)
        state = until(lambda: (st := run.read_state()).get("status") in rundir.TERMINAL and st, 60,
                      what="the run to end")
        assert (state["status"], state["attempt"]) == ("failed", 1), state
        assert state["last_crash"]["class"] == "config_error", state["last_crash"]
        show = _cli(env, "runs", "show", run.run_id, "--runs-dir", str(base))
        assert "No module named my_trian_n11" in show.stdout and "fix its path or name in the command" in show.stdout, \
            show.stdout
    finally:
        from tests.conftest import end_processes, run_processes
        end_processes(run_processes(base))


def test_the_interpreters_refusal_is_told_from_a_dependency_and_a_log_level():
    """The refusals: a ModuleNotFoundError the program raised is still a missing dependency, and a
    log line that only resembles the interpreter's (`INFO: No module named x`) decides nothing."""
    from moeconsole.runner.core.crash import classify
    told = {text: classify(1, [text], steps_seen=0, attempt=1).cls for text in (
        "/usr/bin/python3: can't open file '/w/trian.py': [Errno 2] No such file or directory",
        "/opt/env/bin/python3.11: No module named my_trian",
        "python3: Error while finding module specification for 'pkg.train' (ModuleNotFoundError: No module named 'pkg')",
        "/usr/bin/python3: No module named pkg.__main__; 'pkg' is a package and cannot be directly executed",
        "ModuleNotFoundError: No module named 'flash_attn'",
        "INFO: No module named x")}
    assert list(told.values()) == ["config_error"] * 4 + ["missing_dependency", "unknown"], told
    # not the first attempt (an attempt resumed after steps): restarted as before (config_error's rule)
    assert classify(1, ["/usr/bin/python3: No module named my_trian"], steps_seen=0, attempt=2).cls == "unknown"


def test_runs_show_names_the_next_command_with_the_runs_directory(tmp_path, make_run):
    """`runs show RUN --runs-dir DIR` of a FAILED run: its `next` line said `moeconsole restart
    <whole id>`, which, typed, looked in ~/.local/share and found nothing. It names the run as the
    run screen's banner does (short id, `--runs-dir DIR`); `--json` keeps the whole id."""
    base = tmp_path / "other runs"
    make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="failed",
             crash={"class": "cuda_oom"})
    env = _env(tmp_path / "home")
    out = _cli(env, "runs", "show", "743b", "--runs-dir", str(base))
    line = next(line for line in out.stdout.splitlines() if line.split()[:1] == ["next"])
    assert _as_bash_reads(line.split(None, 1)[1]) == ["moeconsole", "restart", "743b", "--runs-dir", str(base)], line
    import json
    js = json.loads(_cli(env, "runs", "show", "743b", "--json", "--runs-dir", str(base)).stdout)
    assert js["run"]["next_command"] == "moeconsole restart 20261124-093000-tiny-moe-cpu-743b"


def test_a_toast_shows_brackets_as_typed_never_as_markup(base, make_run):
    """The log view's search for `[rank3]` (a multi-node log's prefix) toasted "'' not found",
    Textual reading `[rank3]` as markup; `[/x]` showed no toast at all; `R` said "ranks from the :
    / srun --label prefixes", its `[rankN]:` eaten. Every toast of the console is plain text."""
    from textual.widgets._toast import Toast, ToastRack
    from tests.console.test_console_app import app_for, attached, said_after_each, telemetry
    from tests.waiting import until_ui
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="killed", restart_at=None)
    names = {"[": "left_square_bracket", "]": "right_square_bracket", "/": "slash"}

    async def go() -> list[str]:
        app = app_for(base, run, telemetry=telemetry())
        drawn: list[str] = []
        async with app.run_test(size=(100, 30), notifications=True) as pilot:
            await attached(pilot)
            await pilot.press("l")

            def toasts() -> list[str]:
                rack = app.screen.get_child_by_type(ToastRack)
                return [t.render().plain for t in rack.query(Toast)]
            for needle in ("[rank3]", "[/x]"):
                await pilot.press("slash")
                await pilot.press(*(names.get(ch, ch) for ch in needle), "enter")
                drawn.append(await until_ui(pilot, lambda: next((t for t in toasts() if "not found" in t), None),
                                            what=f"the toast of {needle}"))
                app.clear_notifications()
            await pilot.press("R")
            drawn.append(await until_ui(pilot, lambda: next((t for t in toasts() if "prefixes" in t), None),
                                        what="the toast of R"))
        return drawn
    drawn = asyncio.run(go())
    assert drawn[0] == "'[rank3]' not found" and drawn[1] == "'[/x]' not found", drawn
    assert "[rankN]:" in drawn[2], drawn


def test_a_confirmation_shows_a_command_line_with_brackets_as_it_is(base, make_run):
    """The `z` confirmation quotes the blocker's command line; one holding `[/x]` (a regex, a
    glob) was read as markup and ended the console in a MarkupError. Its body is plain text."""
    from moeconsole.console import confirmations
    from moeconsole.console.screens.dialogs import ConfirmScreen
    from tests.console.test_console_app import _screen_text, app_for, attached, telemetry
    from tests.waiting import until_ui
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="running",
                   runner_pid=os.getpid(), restart_at=None)
    blocker = {"pid": 4242, "start_time": 1.0, "user": "ana", "age_s": 60, "labels": ["orphan"],
               "cmdline": "python3 -c \"import re; re.compile('[/x]'); [bold]\""}

    async def go() -> str:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(120, 30)) as pilot:
            await attached(pilot)
            app.push_screen(ConfirmScreen(confirmations.kill_zombie(blocker, None)))
            return await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen) and "[/x]" in
                                  (t := _screen_text(app)) and t, what="the confirmation drawn")
    text = asyncio.run(go())
    assert "re.compile('[/x]'); [bold]" in text, text


def test_a_filter_typed_with_brackets_is_shown_as_typed(base, make_run):
    """The run browser's `/` filter `[/x]` (brackets from a run name or a regex habit) went into the
    title as markup: a MarkupError ended the console. The titles that show what was typed, a
    path or a run's name are plain text (the browser's, the chart picker's, the comparison's)."""
    from moeconsole.console.screens.browser import BrowserScreen
    from tests.console.test_console_app import _screen_text, app_for, attached, telemetry
    from tests.waiting import until_ui
    run = make_run(base, "20261124-093000-tiny-moe-cpu-743b", name="tiny-moe-cpu", status="succeeded", restart_at=None)
    names = {"[": "left_square_bracket", "]": "right_square_bracket", "/": "slash"}

    async def go() -> str:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(100, 30)) as pilot:
            await attached(pilot)
            await pilot.press("b")
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen), what="the browser")
            await pilot.press("slash", *(names.get(ch, ch) for ch in "[/x]"), "enter")
            return await until_ui(pilot, lambda: "filter" in (t := _screen_text(app)) and t, what="the filter shown")
    assert "filter '[/x]'" in asyncio.run(go())


def test_in_tmux_under_lang_c_the_printed_command_types_back_to_the_run(tmp_path):
    """In a tmux pane with `LANG=C` (tmux shows such a client `_` for every non-ASCII character;
    the console's output goes ASCII), `run --detach --runs-dir '.../x y/ü'`: the `runs show`
    command it prints, typed into the same shell as printed, shows the run (it had named
    `.../x y/u`: "no run matches")."""
    import shutil
    import pytest
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    from tests.console.test_console_tmux import Tmux
    base = tmp_path / "x y" / "ü"
    tmux = Tmux(f"moeconsole-test-n11-{os.getpid()}")
    moeconsole = f"env PYTHONPATH={shlex.quote(str(REPO))} {shlex.quote(sys.executable)} -P -m moeconsole"

    def typed(line: str) -> None:
        tmux("send-keys", "-t", "demo", "-l", line)
        tmux("send-keys", "-t", "demo", "Enter")
    try:
        # wide enough that no line wraps: the command is read back from one line of the pane
        tmux("-f", "/dev/null", "new-session", "-d", "-s", "demo", "-x", "400", "-y", "30",
             f"env -u LC_ALL -u LC_CTYPE -u MOECONSOLE_RUNS_DIR LANG=C HOME={shlex.quote(str(tmp_path / 'home'))} "
             "PS1='sh$ ' bash --norc --noprofile -i")
        tmux.wait_for("sh$", timeout=30)
        typed(f"moeconsole() {{ {moeconsole} \"$@\"; }}; clear")
        typed(f"moeconsole run --detach --runs-dir {shlex.quote(str(base))} -- "
              f"{shlex.quote(sys.executable)} -c \"print('step 1 loss 2.0')\"")
        screen = tmux.wait_for("` shows it", timeout=120)
        printed = next(iter(_commands(screen, "runs show")), None)
        assert printed is not None and "\\303\\274" in printed, screen
        typed(f"clear; {printed}")
        [run] = rundir.list_run_dirs(base)
        shown = tmux.wait_for(f"id        {run.run_id}", timeout=60)
        assert "no run matches" not in shown, shown
    finally:
        tmux("kill-server")
        from tests.conftest import end_processes, run_processes
        end_processes(run_processes(base))
