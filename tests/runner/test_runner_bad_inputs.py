"""Bad input to any command: one line on stderr and exit 2 (or the documented answer), never a
traceback, never a hang, and never a process signalled. Through the real CLI."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from moeconsole.runner.rundir import yamlio
from tests.runner.conftest import NO_SAVES, REPO
from tests.waiting import until

# A command that saves nothing, judged without a checkpoint directory: its clean exit is a success
# (with one, it would be a run without a verified save, UNSAVED).

SLEEPER = ["{python}", "-c", "import time\nprint(\"{'loss': '1.0', 'global_step/max_steps': '1/100'}\", "
                             "flush=True)\ntime.sleep(600)\n"]
RUN_COMMANDS = [("kill", "{}"), ("restart", "{}"), ("supervise", "{}"), ("attach", "{}"), ("verify", "{}"),
                ("runs", "show", "{}"), ("runs", "receipt", "{}"), ("runs", "diff", "x", "{}"), ("agent", "{}"),
                ("prometheus", "serve", "{}", "--port", "0"), ("--json", "{}", "--once")]


def refused(proc: subprocess.CompletedProcess, *needles: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr[-2000:]
    assert len(lines[0]) < 400, "one readable line, not a 5000-character dump"
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def _args(template: tuple[str, ...], ref: str) -> list[str]:
    return [a.format(ref) if a == "{}" else a for a in template]


@pytest.fixture
def live_run(harness):
    run = harness.start(harness.recipe(command=SLEEPER))
    run.wait(lambda s: s.get("status") == "running", what="running")
    yield run
    harness.cli("kill", run.id, "--grace", "1")


@pytest.mark.parametrize("ref", ["", "   "])
@pytest.mark.parametrize("command", RUN_COMMANDS, ids=lambda c: " ".join(c))
def test_an_empty_run_is_a_usage_error_and_kills_nothing(harness, live_run, command, ref):
    refused(harness.cli(*_args(command, ref)), "RUN is empty")
    assert live_run.state()["status"] == "running" and not live_run.events("kill")


@pytest.mark.parametrize("command", RUN_COMMANDS, ids=lambda c: " ".join(c))
@pytest.mark.parametrize("ref", ["r" * 300, "a/" + "b" * 300, "x" * 5000])
def test_a_run_longer_than_a_file_name_is_one_line(harness, command, ref):
    refused(harness.cli(*_args(command, ref)), "too long")


def test_a_runs_dir_that_is_a_file_or_unwritable_is_one_line(harness, tmp_path):
    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    recipe = harness.recipe(command=["true"])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args in (["runs", "ls"], ["runs", "rebuild"], ["kill", "x"], ["--json", "x", "--once"], ["run", str(recipe)],
                 ["attach"]):
        proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(not_dir)],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
        refused(proc, "not a directory")
    for args, code in ((["runs", "ls"], 0), (["kill", "x"], 2), (["runs", "rebuild"], 2)):
        proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", "/proc"],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
        assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stderr[-1500:]


@pytest.mark.parametrize("args, needle", [
    (["--json", "X", "--interval", "inf"], "--interval"), (["--json", "X", "--interval", "0"], "--interval"),
    (["--json", "X", "--interval", "-1"], "--interval"), (["--json", "X", "--interval", "nan"], "--interval"),
    (["agent", "X", "--interval", "inf"], "--interval"), (["prometheus", "serve", "X", "--interval", "0"], "--interval"),
    (["kill", "X", "--grace", "1e308"], "--grace"), (["kill", "X", "--timeout", "inf"], "--timeout"),
    (["gpus", "--port", "99999"], "--port"), (["gpus", "--kill", "0"], "--kill"),
    (["prometheus", "serve", "X", "--port", "70000"], "--port"),
])
def test_flags_out_of_range_are_refused(harness, args, needle):
    refused(harness.cli(*args), needle)


def _fifo(tmp_path: Path) -> Path:
    p = tmp_path / "fifo.yaml"
    os.mkfifo(p)
    return p


@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "dir"])
@pytest.mark.parametrize("command", ["lint", "run", "systemd", "service"])
def test_a_recipe_that_is_not_a_regular_file_is_refused_at_once(harness, tmp_path, command, what):
    path = {"/dev/zero": "/dev/zero", "fifo": str(_fifo(tmp_path)), "dir": str(tmp_path)}[what]
    t = time.monotonic()
    refused(harness.cli(command, path, timeout=60), path)
    assert time.monotonic() - t < 30, "never read forever"


def _deep_block(n: int) -> str:
    return "name: deep\ncommand: [echo, hi]\nalerts:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, n)) + \
        "  " * n + "x: 1\n"


@pytest.mark.parametrize("text, needle", [
    (_deep_block(200), "nested deeper"),
    ("name: deep\ncommand: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper"),
    ("name: n\ncommand: [echo, hi]\nkill: {grace_s: " + "9" * 400 + "}\n", "digits"),
    ("name: n\ncommand: [echo, hi]\nkill: {grace_s: " + "9" * 5000 + "}\n", "digits"),
    ("name: n\ncommand: [echo, hi]\nkill: {grace_s: 1e308}\n", "kill.grace_s"),
    ("name: n\ncommand: [echo, hi]\nrestart: {max_restarts: 99999999999}\n", "restart.max_restarts"),
    ("name: n\ncommand: [echo, hi]\nheartbeat: {timeout_s: 1.0e+300}\n", "heartbeat.timeout_s"),
    ("name: n\ncommand: [echo, hi]\npreflight: {port: 0}\n", "preflight.port"),
    ("name: n\ncommand: [echo, hi]\nsync: {dest: /tmp/x, keep_last: 100000000000}\n", "keep_last"),
    ("name: n\nname: m\ncommand: [echo, hi]\n", "given twice"),
    ("name: n\ncommand: [echo, hi]\nkill: {grace_s: 1, grace_s: 2}\n", "given twice"),
    ("name: n\ncommand: [echo, hi]\nnotify: {command: [/bin/true], on: [crash], on: [end]}\n", "given twice"),
])
def test_hostile_recipe_values_are_one_line(harness, tmp_path, text, needle):
    path = tmp_path / "r.yaml"
    path.write_text(text)
    for command in ("lint", "run"):
        refused(harness.cli(command, str(path)), needle)
    assert not [p for p in harness.runs_dir.iterdir() if p.is_dir()], "nothing was started"


@pytest.mark.parametrize("sets, needle", [
    (["command=5"], "must be a list of arguments"), (["command=5", "args.x=1"], {"lint": "--set command=5: must be a list", "run": "not a list"}),
    (["kill.grace_s=" + "[" * 3000], "--set kill.grace_s="), (["kill.grace_s=" + "9" * 5000], "--set kill.grace_s="),
    (["kill.grace_s=1e308"], "kill.grace_s"), (["cooldown.floor_s=.inf"], "cooldown.floor_s"),
    (["restart.max_restarts=" + "9" * 400], "restart.max_restarts"),
])
def test_hostile_set_values_are_one_line(harness, sets, needle):
    path = harness.recipe(command=["true"])
    args = [a for s in sets for a in ("--set", s)]
    for command in ("lint", "run"):   # lint names the root (args.x is refused only because command is)
        refused(harness.cli(command, str(path), *args), needle[command] if isinstance(needle, dict) else needle)


# ---- the documented recipe sections, verbatim ------------------------------------------------

def _documented_sections() -> list[tuple[str, str]]:
    """Every indented or fenced YAML block in docs/ that starts with a recipe key."""
    from moeconsole.runner.recipes.model import KEYS
    out = []
    for md in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]:
        text = md.read_text()
        blocks = re.findall(r"```ya?ml\n(.*?)```", text, re.S)
        blocks += ["\n".join(line[4:] for line in m.group(0).splitlines())
                   for m in re.finditer(r"(?m)(?:^    \S.*\n)(?:^(?:    .*|)\n)*", text)]
        for block in blocks:
            first = block.lstrip().split(":", 1)[0]
            if first in KEYS and first not in ("name", "command") and ":" in block.splitlines()[0]:
                out.append((f"{md.name}:{first}", block))
    return out


DOCUMENTED = _documented_sections()


def test_the_documented_sections_are_found():
    names = {n.split(":", 1)[1] for n, _ in DOCUMENTED}
    assert {"notify", "metrics", "sync"} <= names, names


@pytest.mark.parametrize("where, block", DOCUMENTED, ids=[n for n, _ in DOCUMENTED])
def test_documented_recipe_sections_load_verbatim(harness, tmp_path, where, block):
    path = tmp_path / "doc.yaml"
    whole = re.search(r"(?m)^command:", block)  # a whole recipe, shown as it is
    path.write_text(block + "\n" if whole else "name: doc\ncommand: [\"{python}\", \"-c\", \"print(1)\"]\n" + block + "\n")
    out = harness.cli("lint", str(path))
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr, (where, out.stderr)
    assert "moeconsole:" not in out.stderr, (where, out.stderr)  # no usage error: the section loads


def test_notify_on_crash_as_documented_reaches_the_runner(harness, tmp_path):
    """``on`` is a string key (YAML 1.2), so the documented form configures the filter."""
    log = tmp_path / "got.jsonl"
    hook = tmp_path / "hook.py"
    hook.write_text(f"import sys\nopen({str(log)!r}, 'ab').write(sys.stdin.buffer.read() + b'\\n')\n")
    path = tmp_path / "r.yaml"
    path.write_text(f"""name: on
command: ["sh", "-c", "exit 3"]
restart: {{max_restarts: 0}}
cooldown: {{floor_s: 0, ceiling_s: 5, poll_s: 0.05}}
notify: {{on: [crash], command: ["{sys.executable}", "{hook}"], min_interval_s: 0}}
""")
    assert yamlio.load_yaml_file(path)["notify"]["on"] == ["crash"]
    assert harness.cli("lint", str(path)).returncode == 0
    out = harness.cli("run", str(path), "--detach")  # 0, or 1 when the attempt failed within the launch's wait
    assert out.returncode in (0, 1) and out.stdout.strip(), out.stderr
    from tests.runner.conftest import Run
    run = Run(harness.runs_dir / out.stdout.strip().splitlines()[0])
    run.wait_status("failed", timeout=60)

    def all_sent_and_delivered() -> bool:
        """The runner is gone (it dispatched whatever it would) and no delivery is still running
        (each one writes the hook's line before it ends): a wrongly sent "end" would be in the log."""
        import psutil
        runner = (run.state().get("runner") or {}).get("pid")
        if runner and psutil.pid_exists(runner) and psutil.Process(runner).status() != psutil.STATUS_ZOMBIE:
            return False
        marker = str(run.path / "notify.log")
        if any(marker in (p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])):
            return False
        return log.exists() and bool(log.read_text().strip())
    until(all_sent_and_delivered, timeout=60, what="the runner gone and every notification delivered")
    kinds = [json.loads(line)["kind"] for line in log.read_text().splitlines() if line.strip()]
    assert kinds and set(kinds) == {"crash"}, kinds  # "end" is not in on: [crash]


# ---- JSON we did not write, nested beyond sense -----------------------------------------------

def test_deeply_nested_checkpoint_files_are_bad_files_not_tracebacks(harness, tmp_path):
    ck = tmp_path / "checkpoint-5"
    ck.mkdir()
    deep = "[" * 100_000 + "]" * 100_000
    (ck / "model.safetensors.index.json").write_text('{"weight_map": ' + deep + "}")
    (ck / "trainer_state.json").write_text('{"log_history": ' + deep + ', "global_step": 5}')
    out = harness.cli("verify", str(ck), "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-1500:]
    assert "nested too deeply" in json.loads(out.stdout)["checkpoints"][0]["reason"]
    refused(harness.cli("parse", str(ck / "trainer_state.json")), "nested too deeply")


# ---- prometheus serve ----------------------------------------------------------------------

def test_prometheus_serve_refuses_a_directory_textfile_and_serves_a_finished_run(harness, tmp_path):
    run = harness.start(harness.recipe(command=["sleep", "0.3"], **NO_SAVES))
    run.wait_status("succeeded")
    refused(harness.cli("prometheus", "serve", run.id, "--textfile", str(tmp_path)), "directory")
    refused(harness.cli("prometheus", "serve", run.id, "--textfile", str(tmp_path / "no" / "m.prom")), "exist")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "prometheus", "serve", run.id, "--port", "0",
                             "--runs-dir", str(harness.runs_dir)], env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        def bound_port() -> int | None:
            assert proc.poll() is None, proc.communicate()
            try:
                doc = json.loads((run.path / "exporter.json").read_text())
                return doc["port"] if doc.get("pid") == proc.pid else None
            except (OSError, ValueError, KeyError):
                return None
        port = until(bound_port, timeout=60, what="the exporter's port in exporter.json")
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
        assert f'run_id="{run.id}"' in body and 'status="succeeded"' in body
        for _ in range(3):  # a past run is served until stopped: scrape after scrape, the server stays
            assert 'status="succeeded"' in urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                                                  timeout=30).read().decode()
        assert proc.poll() is None, "a past run is served until stopped"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err, err


# ---- another user --------------------------------------------------------------------------

AS_NOBODY = """
import importlib, os, sys
for m in sys.argv[1].split(","):
    importlib.import_module(m)
os.setgroups([]); os.setgid(65534); os.setuid(65534)
from moeconsole.console.cli import main
sys.exit(main(sys.argv[2:]))
"""
PRELOAD = ",".join(["moeconsole.console.cli", "moeconsole.console.commands.kill", "moeconsole.console.commands.runs", "moeconsole.console.commands.json",
                    "moeconsole.console.commands.supervise", "moeconsole.console.commands.restart", "moeconsole.console.commands.verify",
                    "moeconsole.console.commands.prometheus", "moeconsole.console.commands.receipt", "moeconsole.runner.rundir.store", "moeconsole.runner.rundir.snapshot",
                    "moeconsole.runner.rundir.seriesfile", "moeconsole.runner.process.launch", "moeconsole.runner.process.killrun", "moeconsole.runner.rundir.receipt", "moeconsole.runner.rundir.rundiff",
                    "moeconsole.runner.ops.exporter", "moeconsole.runner.recipes.recipe", "sqlite3", "psutil", "msgspec", "yaml", "numpy"])


@pytest.fixture
def shared_harness(tmp_path):
    """A harness whose runs directory others may traverse (pytest's own tmp is 0700)."""
    import tempfile
    from tests.conftest import end_processes, run_processes
    from tests.runner.conftest import Harness
    base = Path(tempfile.mkdtemp(prefix="mc-shared-"))
    os.chmod(base, 0o755)
    runs = base / "runs"
    runs.mkdir(mode=0o755)
    try:
        yield Harness(tmp_path, runs)
    finally:
        end_processes(run_processes(runs))
        import shutil
        shutil.rmtree(base, ignore_errors=True)


def test_another_users_runs_are_one_line_not_a_traceback(shared_harness):
    """A user who may not read the runs (``nobody``): ``runs ls`` lists what it can (the index
    is not theirs to write), a command about one run says permission denied."""
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    harness = shared_harness
    run = harness.start(harness.recipe(command=["sleep", "0.3"], **NO_SAVES))
    run.wait_status("succeeded")
    harness.cli("runs", "ls", check=True)  # the index exists, owned by root, 0600
    assert (harness.runs_dir / "index.sqlite").stat().st_mode & 0o777 == 0o600
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": "/tmp"}

    def as_nobody(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", AS_NOBODY, PRELOAD, *args, "--runs-dir", str(harness.runs_dir)],
                              capture_output=True, text=True, env=env, cwd="/", timeout=120)

    ls = as_nobody("runs", "ls")
    assert ls.returncode == 0 and "Traceback" not in ls.stderr, ls.stderr[-1500:]
    assert run.id in ls.stdout
    for args in (["kill", run.id], ["--json", run.id, "--once", "--no-gpu"], ["runs", "show", run.id],
                 ["supervise", run.id], ["restart", run.id], ["runs", "receipt", run.id], ["verify", run.id],
                 ["prometheus", "serve", run.id, "--port", "0"]):
        refused(as_nobody(*args), "permission denied")
    assert run.state()["status"] == "succeeded"
