"""`moeconsole runs ls|show|diff|rebuild` through the real CLI, and moeconsole.runner.rundir.rundiff on run dirs
written the way the runner writes them (the BF16 vs FP8 comparison users make)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from moeconsole.runner.core.numbers import as_float
import numpy as np
import pytest

from moeconsole.runner.rundir import jsonio, rundiff

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, base: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(base)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def two_runs(base, make_run):
    bf16 = make_run(base, "20240101-000000-bf16-aaaa", name="moe-bf16", status="succeeded", steps=80,
                    restart_at=None, checkpoints=((40, True),),
                    recipe={"name": "moe", "command": ["swift", "sft", "--torch_dtype", "bfloat16", "--lr", "1e-4"],
                            "kill": {"grace_s": 60}})
    fp8 = make_run(base, "20240102-000000-fp8-bbbb", name="moe-fp8", status="failed", steps=60, restart_at=30,
                   loss_scale=1.1, mem_base=50.0, step_time=0.4, crash={"class": "cuda_oom"},
                   recipe={"name": "moe", "command": ["swift", "sft", "--torch_dtype", "bfloat16", "--lr", "1e-4",
                                                      "--fp8_recipe", "blockwise"], "kill": {"grace_s": 90}})
    return bf16, fp8


def metric_values(run, key):
    return np.array([as_float(r[key]) for r in jsonio.read_jsonl(run.metrics)], dtype=float)


def test_compare_stats_match_the_metrics_files(base, make_run):
    bf16, fp8 = two_runs(base, make_run)
    d = rundiff.compare(bf16.path, fp8.path).to_dict()
    for side, run in (("a", bf16), ("b", fp8)):
        loss = metric_values(run, "loss")
        assert d[side]["final_loss"] == pytest.approx(loss[-1])
        assert d[side]["min_loss"] == pytest.approx(loss.min())
        assert d[side]["peak_mem_gib"] == pytest.approx(metric_values(run, "mem_gib").max())
        assert d[side]["mean_tokens_per_s"] == pytest.approx(metric_values(run, "tokens_per_s").mean())
        assert d[side]["mean_step_time_s"] == pytest.approx(metric_values(run, "step_time_s").mean())
    assert d["a"]["status"] == "succeeded" and d["b"]["status"] == "failed"
    assert d["delta"]["peak_mem_gib"]["better"] == "b"  # FP8 used less memory
    assert d["delta"]["final_loss"]["better"] == "a"
    diff = {x["key"]: x for x in d["recipe_diff"]}
    assert diff["command --fp8_recipe"] == {"key": "command --fp8_recipe", "a": None, "b": "blockwise", "only": "b"}
    assert diff["kill.grace_s"]["a"] == 60 and diff["kill.grace_s"]["b"] == 90
    assert "command --torch_dtype" not in diff
    assert len(d["loss"]["a"]) == 80 and len(d["loss"]["b"]) == 60


def test_argv_options():
    opts = rundiff.argv_options(["swift", "sft", "--lr", "1e-4", "--bf16", "--x=1", "--neg", "-1", "--flag"])
    assert opts == {"[0]": "swift", "[1]": "sft", "--lr": "1e-4", "--bf16": True, "--x": "1", "--neg": "-1",
                    "--flag": True}


def test_runs_diff_cli_text_and_json_agree(base, make_run):
    two_runs(base, make_run)
    out = cli("runs", "diff", "bf16", "fp8", "--json", base=base)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    text = cli("runs", "diff", "bf16", "fp8", base=base)
    assert text.returncode == 0, text.stderr
    assert "--fp8_recipe" in text.stdout and "blockwise" in text.stdout
    for label in ("final loss", "min loss", "peak memory GiB", "mean tokens/s", "mean step time s"):
        assert label in text.stdout
    peak_line = next(line for line in text.stdout.splitlines() if line.startswith("peak memory GiB"))
    assert f"{d['a']['peak_mem_gib']:.4g}" in peak_line and "B better" in peak_line


def test_runs_ls_show_rebuild(base, make_run):
    two_runs(base, make_run)
    ls = cli("runs", "ls", "--json", base=base)
    assert ls.returncode == 0, ls.stderr
    rows = json.loads(ls.stdout)["runs"]
    assert {r["name"] for r in rows} == {"moe-bf16", "moe-fp8"}
    text = cli("runs", base=base)
    assert "MOE-BF16" not in text.stdout and "moe-bf16" in text.stdout and "FAILED" in text.stdout
    show = cli("runs", "show", "fp8", base=base)
    assert show.returncode == 0, show.stderr
    assert "cuda_oom" in show.stdout and "checkpoint-40" in show.stdout and "BAD" in show.stdout
    show_json = json.loads(cli("runs", "show", "fp8", "--json", base=base).stdout)
    assert show_json["crashes"][0]["class"] == "cuda_oom"
    assert {c["step"] for c in show_json["checkpoints"]} == {20, 40}
    rebuilt = cli("runs", "rebuild", base=base)
    assert rebuilt.returncode == 0 and "indexed 2 runs" in rebuilt.stdout


@pytest.mark.parametrize("args", [("runs", "show", "nosuchrun"), ("runs", "diff", "bf16", "nosuchrun"),
                                  ("runs", "show"), ("runs", "diff", "bf16")])
def test_bad_input_is_one_line_and_exit_2(base, make_run, args):
    two_runs(base, make_run)
    out = cli(*args, base=base)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("moeconsole: ")
    assert "Traceback" not in out.stderr


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_runs_ls_is_current_for_live_runs_and_marks_a_gone_runner_stale(base, make_run):
    import os
    from moeconsole.runner.rundir import store
    live = make_run(base, "20240105-000000-demo-live", name="tiny-moe-cpu", status="running", steps=10,
                    runner_pid=os.getpid(), crash={"class": "cuda_oom"},
                    recipe={"name": "tiny-moe-cpu", "command": ["python"], "args": {"fault": "oom@40", "lr": 0.001}})
    gone = make_run(base, "20240104-000000-demo-gone", name="tiny-moe-cpu", status="running", steps=5,
                    runner_pid=_dead_pid(),
                    recipe={"name": "tiny-moe-cpu", "command": ["python"], "args": {"fault": None, "lr": 0.001}})
    assert cli("runs", "rebuild", base=base).returncode == 0
    # the runner goes on after the index was written: 30 more steps, state.json says so
    for step in range(11, 41):
        jsonio.append_jsonl(live.metrics, {"v": 1, "t": 0.0, "attempt": 2, "step": step, "loss": 0.25})
    state = live.read_state()
    state["step"] = 40
    jsonio.atomic_write_json(live.state, state)

    out = cli("runs", "ls", base=base)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = lines[0].split()
    # not a terminal: every column, the important ones first, the full id
    assert header[:3] == ["STATUS", "NAME", "STEP"] and "CRASHES" in header and "LAST" in header and "ID" in header
    live_line = next(line for line in lines if live.run_id in line)  # the full id
    gone_line = next(line for line in lines if gone.run_id in line)
    assert "tiny-moe-cpu args.fault=oom@40" in live_line and "tiny-moe-cpu args.fault=null" in gone_line
    assert " 40/100 " in live_line and " 1 " in live_line and "cuda_oom" in live_line and "0.25" in live_line
    # the run screen's word (``snapshot.status_word``), not one of its own
    assert gone_line.startswith("RUNNING? (runner gone)  ") and "runner gone" not in live_line
    # the index itself was brought up to date
    row = next(r for r in store.list_runs(base, refresh=False) if r["id"] == live.run_id)
    assert row["last_step"] == 40 and row["crashes"] == 1 and row["last_crash_class"] == "cuda_oom"
    rows = json.loads(cli("runs", "ls", "--json", base=base).stdout)["runs"]
    assert {r["id"]: r["stale"] for r in rows} == {live.run_id: False, gone.run_id: True}
    # a finished (and a damaged) run's row has the liveness keys a live one has, not only "stale"
    done = make_run(base, "20240103-000000-demo-done", name="done", status="succeeded", steps=5)
    (base / "20240102-000000-demo-bad").mkdir()
    (base / "20240102-000000-demo-bad" / "state.json").write_text("{not json")
    assert cli("runs", "rebuild", base=base).returncode == 0
    rows = json.loads(cli("runs", "ls", "--json", base=base).stdout)["runs"]
    assert {r["id"] for r in rows} >= {live.run_id, gone.run_id, done.run_id}
    liveness = {"stale", "runner_alive", "runner_stopped", "runner_pid"}
    assert all(liveness <= set(r) for r in rows), [(r["id"], sorted(liveness - set(r))) for r in rows]
    assert {r["id"]: (r["stale"], r["runner_alive"]) for r in rows if r["id"] in (done.run_id, gone.run_id)} \
        == {done.run_id: (False, False), gone.run_id: (True, False)}
    # a unique prefix of the id is enough to open the run
    out = cli("runs", "show", "20240104", base=base)
    assert out.returncode == 0 and gone.run_id in out.stdout


def test_an_old_index_gains_the_new_columns(base, make_run):
    import sqlite3
    from moeconsole.runner.rundir import store
    make_run(base, "20240101-000000-a-aaaa", name="a", status="failed", crash={"class": "nccl_timeout"})
    conn = sqlite3.connect(base / store.INDEX_NAME)
    conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, name TEXT, recipe_hash TEXT, status TEXT, "
                 "started_at REAL, ended_at REAL, attempts INTEGER, restarts INTEGER, last_step INTEGER, "
                 "max_steps INTEGER, last_loss REAL, min_loss REAL, path TEXT, updated_at REAL)")
    conn.commit()
    conn.close()
    assert cli("runs", "rebuild", base=base).returncode == 0
    (row,) = store.list_runs(base)
    assert row["crashes"] == 1 and row["last_crash_class"] == "nccl_timeout" and row["display_name"] == "a"


def test_an_old_index_file_is_read_and_keeps_a_nan_last_loss_once_migrated(base, make_run):
    """SQLite stores a NaN REAL as NULL: the index had shown no loss (and `runs ls` of a live run the
    finite one before it) for a run whose last loss was NaN. The index keeps it in a column of its
    own (``last_loss_text``); an index file written before that column is read as it was and gains it."""
    import sqlite3
    from moeconsole.runner.rundir import store
    run = make_run(base, "20240101-000000-a-aaaa", name="a", status="failed", steps=3)
    conn = sqlite3.connect(base / store.INDEX_NAME)
    conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, name TEXT, recipe_hash TEXT, status TEXT, "
                 "started_at REAL, ended_at REAL, attempts INTEGER, restarts INTEGER, last_step INTEGER, "
                 "max_steps INTEGER, last_loss REAL, min_loss REAL, path TEXT, updated_at REAL)")
    conn.execute("INSERT INTO runs (id, name, status, last_step, last_loss, min_loss, path, updated_at) "
                 "VALUES (?, 'a', 'failed', 3, 0.5, 0.25, ?, 1.0)", (run.run_id, str(run.path)))
    conn.commit()
    conn.close()
    (row,) = store.list_runs(base, refresh=False)   # read after the migration (the rows survive it)
    assert (row["last_loss"], row["min_loss"]) == (0.5, 0.25) and "last_loss_text" not in row
    conn = store.connect(base)
    try:
        for loss in (float("nan"), float("inf"), 0.75):
            store.upsert(conn, {**row, "last_loss": loss})
            (again,) = store.list_runs(base, refresh=False)
            assert repr(again["last_loss"]) == repr(loss) and again["min_loss"] == 0.25
    finally:
        conn.close()
    conn = sqlite3.connect(base / store.INDEX_NAME)
    assert "last_loss_text" in {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    conn.close()


def test_a_numpy_nan_last_loss_is_kept_by_the_index(base, make_run):
    """The runner's book hands the index numpy floats: the text kept for a last loss that is not
    finite had been ``repr(loss)``, 'np.float64(nan)', which the index cannot read back, so the
    row showed no loss at all for a run that diverged. Now it keeps 'nan' (and 'inf', '-inf')."""
    from moeconsole.runner.rundir import store
    run = make_run(base, "20240101-000000-a-aaaa", name="a", status="failed", steps=3)
    (row,) = store.list_runs(base, refresh=False)
    conn = store.connect(base)
    try:
        for loss in (np.float64("nan"), np.float64("inf"), np.float64("-inf")):
            store.upsert(conn, {**row, "last_loss": loss})
            (again,) = store.list_runs(base, refresh=False)
            assert again["id"] == run.run_id and repr(again["last_loss"]) == repr(float(loss)), again
    finally:
        conn.close()


def test_runs_ls_prints_nan_for_a_finished_run_that_diverged(base, make_run):
    """A finished run whose last logged loss is NaN: `runs ls` (from the index its rebuild writes,
    a real SQLite file) prints nan in LAST LOSS, never the finite loss before it nor nothing."""
    from moeconsole.runner.rundir import store
    run = make_run(base, "20240101-000000-div-aaaa", name="div", status="failed", steps=12, nan_at=12,
                   restart_at=None)
    out = cli("runs", "ls", base=base)
    assert out.returncode == 0, out.stderr
    assert (base / store.INDEX_NAME).exists()
    header = next(line for line in out.stdout.splitlines() if "LOSS" in line)
    line = next(line for line in out.stdout.splitlines() if "div" in line)
    col = header.index("LAST LOSS") if "LAST LOSS" in header else header.index("LOSS")
    assert line[col:].split()[0] == "nan", (header, line)
    rows = json.loads(cli("runs", "ls", "--json", base=base).stdout)["runs"]
    assert [r["id"] for r in rows] == [run.run_id]


def test_the_list_is_sorted_by_the_start_it_shows(base, make_run):
    """The STARTED column shows when a run started on the boot clock (``rundir.start_shown``): a run
    whose start was stamped by a wall clock 3 h fast shows its true start. The browser and `runs ls`
    had sorted by the stored stamp, listing it first, above a run shown to have started later."""
    import time
    from moeconsole.runner.rundir import rundir, store
    from moeconsole.runner.telemetry import identity
    now, up = time.time(), identity.uptime()
    assert up is not None
    fast = make_run(base, "20240101-000000-fast-aaaa", name="fast", status="killed", steps=3)
    plain = make_run(base, "20240101-000000-plain-bbbb", name="plain", status="killed", steps=3)
    for run, state in ((fast, {"started_at": now - 7200 + 3 * 3600, "started_boot_id": identity.boot_id(),
                               "started_uptime_s": up - 7200}),      # started 2 h ago, stamped 1 h ahead
                       (plain, {"started_at": now - 3600})):         # started 1 h ago
        jsonio.atomic_write_json(run.state, {**run.read_state(), **state})
    rows = store.list_runs(base)
    assert [r["id"] for r in rows] == [plain.run_id, fast.run_id]
    shown = [rundir.start_shown(r, time.time()) for r in rows]
    assert shown == sorted(shown, reverse=True)
    oldest_first = store.list_runs(base, descending=False)
    assert [r["id"] for r in oldest_first] == [fast.run_id, plain.run_id]
    listed = cli("runs", "ls", base=base).stdout
    assert listed.index(plain.run_id) < listed.index(fast.run_id), listed


def test_a_run_named_with_spaces_or_a_long_name_is_found_by_that_name(base, make_run):
    """`run --name "qwen3 moe lora"` makes the id `...-qwen3-moe-lora-XXXX` (the name's slug) and
    shows the name everywhere, but `runs show "qwen3 moe lora"` answered "no run matches" (and a
    name over 40 characters, cut in the id, the same): the name the screens show now finds it."""
    from moeconsole.runner.rundir import rundir
    spaced = "qwen3 moe lora"
    long = "qwen3.5-397b-a17b-megatron-lora-ep8-pp4-fp8-blockwise"
    a = make_run(base, rundir.new_run_id(spaced), name=spaced, status="succeeded", steps=40, restart_at=None)
    b = make_run(base, rundir.new_run_id(long), name=long, status="failed", steps=30, crash={"class": "cuda_oom"})
    make_run(base, "20240101-000000-demo-0001", name="demo", status="killed", steps=20)
    shown = cli("runs", "show", spaced, base=base)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].startswith(f"{spaced}  SUCCEEDED") and a.run_id in shown.stdout
    shown = cli("runs", "show", long, "--json", base=base)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == b.run_id
    diff = cli("runs", "diff", spaced, long, base=base)
    assert diff.returncode == 0, diff.stderr
    assert f"A  {spaced}" in diff.stdout and f"B  {long}" in diff.stdout
    missing = cli("runs", "show", "qwen3 moe lora v2", base=base)
    assert missing.returncode == 2 and missing.stderr.startswith("moeconsole: no run matches")


def test_a_run_named_in_another_script_or_with_accents_gets_an_id_of_its_own_and_is_found(base, make_run):
    """A newcomer's `--name "démo run"` became the id `...-d-mo-run-XXXX`, and a name in Chinese an
    id with no name in it at all (`...-run-XXXX`, every such run alike): accents fold to ASCII now
    and a name with letters that have no ASCII form gets a short hash of itself, so each is its own
    id, found by the name the screens show; a run made before (`d-mo-run`) is still found by its name."""
    from moeconsole.runner.rundir import rundir
    accented, cjk, other, mixed = "démo run", "训练", "微调", "训练 v2"
    ids = {name: rundir.new_run_id(name) for name in (accented, cjk, other, mixed)}
    assert "-demo-run-" in ids[accented], ids
    for name in (cjk, other, mixed):
        assert "-run-" not in ids[name], ids
    assert len({i.split("-", 2)[2].rsplit("-", 1)[0] for i in ids.values()}) == 4, ids   # four different names
    runs = {name: make_run(base, run_id, name=name, status="succeeded", steps=10, restart_at=None)
            for name, run_id in ids.items()}
    for name, run in runs.items():
        shown = cli("runs", "show", name, "--json", base=base)
        assert shown.returncode == 0, (name, shown.stderr)
        assert json.loads(shown.stdout)["id"] == run.run_id, name
    assert rundir.new_run_id(cjk).split("-")[2] == ids[cjk].split("-")[2]   # the same name, the same slug
    legacy = "démo run!"
    made_before = make_run(base, "20240101-000000-d-mo-run-0002", name=legacy, status="killed", steps=5)
    shown = cli("runs", "show", legacy, "--json", base=base)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == made_before.run_id


# (`--json PATH` prints the log's snapshot, as `runs show PATH` and `attach PATH` show it:
# test_console_one_verdict.py)
@pytest.mark.parametrize("command", [("kill", "{path}"), ("restart", "{path}"), ("runs", "receipt", "{path}")])
def test_a_training_log_given_as_run_says_it_is_not_a_run_and_how_to_open_it(base, make_run, tmp_path, command):
    """A newcomer hands a command a log file or an output directory that exists: it answered "no
    run matches '/data/out/logging.jsonl' under ~/.local/share/moeconsole/runs", as if the path were
    missing. It says now that the path is not a run directory and which command opens it."""
    make_run(base, "20240101-000000-demo-0001", name="demo", status="succeeded", steps=20, restart_at=None)
    log = tmp_path / "out" / "logging.jsonl"
    log.parent.mkdir()
    log.write_text('{"loss": 1.5, "global_step/max_steps": "1/10"}\n')
    for path in (log, log.parent):
        out = cli(*(word.format(path=path) for word in command), base=base)
        assert out.returncode == 2, (out.stdout, out.stderr)
        assert out.stderr == (f"moeconsole: {path}: not a run directory (no state.json or recipe.yaml); a training "
                              f"log or output directory opens with `moeconsole attach {path}`\n"), out.stderr


def test_no_runs_yet_says_how_to_start_one_in_the_cli_and_the_browser(tmp_path):
    """A newcomer's first `moeconsole runs ls` answered "no runs under DIR" and `moeconsole --json`
    the same as an error, with no next step (only the browser named `moeconsole run RECIPE`). All
    three say one sentence now, the built-in demo in it."""
    import asyncio
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.runner.rundir import rundir
    from tests.waiting import until_ui
    empty = tmp_path / "runs"
    empty.mkdir()
    ls = cli("runs", "ls", base=empty)
    assert ls.returncode == 0 and ls.stdout == f"no runs under {empty}: {rundir.NO_RUNS_NEXT}\n", ls.stdout
    assert "`moeconsole demo`" in rundir.NO_RUNS_NEXT
    snap = cli("--json", "--once", base=empty)
    assert snap.returncode == 2 and snap.stderr == f"moeconsole: no runs under {empty}: {rundir.NO_RUNS_NEXT}\n"

    async def go() -> str:
        app = MoeConsole(empty, None, gpu=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen))
            await pilot.pause()
            return " ".join(strip.text.strip() for strip in app.screen._compositor.render_strips())
    shown = asyncio.run(go())
    assert "moeconsole demo" in shown and "moeconsole run RECIPE" in shown, shown


def test_runs_started_from_different_directories_are_not_named_by_the_directory(base, make_run):
    """Two demo runs of one name, started from two working directories with different faults:
    their names told them apart by the internal ``_launch.cwd`` (first by key, it filled the
    80-column NAME as "…_launch.cwd=/tmp/nc6…" and hid the fault). Where a run was launched from
    is not what tells runs apart: the fault is."""
    for i, (cwd, fault) in enumerate((("/home/me/a", "oom@40"), ("/scratch/me/somewhere/else", "nan@30"))):
        make_run(base, f"2024010{i + 1}-000000-tiny-moe-cpu-{'ab12' if i else 'cd34'}", name="tiny-moe-cpu",
                 status="succeeded", recipe={"name": "tiny-moe-cpu", "_launch": {"recipe_dir": cwd + "/recipes",
                                                                                   "cwd": cwd},
                                             "command": ["{python}", "-m", "moeconsole.runner.demo.train",
                                                         f"--fault={fault}"]})
    done = cli("runs", "ls", "--json", base=base)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    rows = rows if isinstance(rows, list) else rows["runs"]
    names = sorted(r["display_name"] for r in rows)
    assert names == ["tiny-moe-cpu --fault=nan@30", "tiny-moe-cpu --fault=oom@40"], names


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_runs_ls_on_an_output_that_cannot_carry_unicode_writes_stand_ins(base, make_run, encoding):
    """A latin-1 locale on an old cluster, or PYTHONIOENCODING=ascii: `runs ls` ended in a
    UnicodeEncodeError traceback at its first '—' (a run without a crash). It prints the table
    with an ASCII stand-in for what the encoding lacks; `runs show` too."""
    import os
    run = make_run(base, status="succeeded")
    for args in (["runs", "ls"], ["runs", "show", run.run_id]):
        done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(base)],
                              cwd=REPO, capture_output=True, timeout=60,
                              env={**os.environ, "PYTHONIOENCODING": encoding, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
        out = done.stdout.decode(encoding)
        assert run.run_id in out and "\u2014" not in out, out


def test_a_run_directory_removed_by_hand_leaves_the_list(base, make_run):
    """`rm -r` of a finished run's directory (there is no `runs rm`: docs/console.md says to
    delete the directory): `runs` kept listing it from the index while `runs show` answered
    "no run matches"; now the list and the browser drop it, and the index forgets it."""
    import json
    import shutil
    bf16, fp8 = two_runs(base, make_run)
    first = cli("runs", "--json", base=base)
    assert first.returncode == 0, first.stderr
    assert {r["id"] for r in json.loads(first.stdout)["runs"]} == {bf16.run_id, fp8.run_id}
    shutil.rmtree(fp8.path)
    for _ in range(2):   # the list, then the index it left behind
        after = cli("runs", "--json", base=base)
        assert after.returncode == 0, after.stderr
        assert [r["id"] for r in json.loads(after.stdout)["runs"]] == [bf16.run_id]
    shown = cli("runs", "show", fp8.run_id, base=base)
    assert shown.returncode == 2 and "no run matches" in shown.stderr
