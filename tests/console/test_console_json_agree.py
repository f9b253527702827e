"""`moeconsole --json` and the UI show the same data: both run as real processes on the same
run directory (with the fake NVML library serving eight GPUs and a foreign GPU process), and
what the UI's widgets show is compared with the formatting of the JSON snapshot."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.console import format as fmt
from moeconsole.console.chart import markers_from, render_chart, rows_text
from moeconsole.console.logtail import MetricColumns
from moeconsole.console.widgets.panes import event_pane_lines
from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.core.series import Series

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("probe_ui.py")


@pytest.fixture(scope="module")
def nvml_libdir(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake NVML library")
    from tests.fakes.nvml import build_fake_nvml
    return build_fake_nvml(tmp_path_factory.mktemp("fake-nvml"))


@pytest.fixture
def stranger():
    """A real process that the fake driver lists as holding GPU memory (a zombie to the run)."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield p
    finally:
        p.kill()
        p.wait(timeout=10)


def series_from_pairs(pairs) -> Series:
    s = Series()
    for x, y in pairs:
        s.append(x, as_float(y))
    return s



def json_and_screen(runs_dir, run_id: str, env: dict, *flags: str) -> tuple[dict, dict]:
    """What `--json --once` prints for the run, and what the attached console shows of it (the
    probe app, a process of its own), both read from the same run directory."""
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "--json", "--once", *flags, run_id,
                           "--runs-dir", str(runs_dir)], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    probe = subprocess.run([sys.executable, str(PROBE), str(runs_dir), run_id], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=90)
    assert probe.returncode == 0, probe.stderr[-2000:]
    return json.loads(done.stdout), json.loads(probe.stdout.strip().splitlines()[-1])

def test_json_and_ui_agree(base, make_run, nvml_libdir, stranger, tmp_path):
    from tests.fakes.nvml import FakeGpu, FakeProc, fake_env, write_scenario
    # an id of its own: a process of another test marked with the default id (a leftover of a run that is
    # over) is a leftover on every screen, and may end between the two reads
    run = make_run(base, "20240101-000000-agree-0001", name="agree", runner_pid=os.getpid(), started=False, nan_at=50,
                   crash={"class": "cuda_oom"})
    scenario = write_scenario(tmp_path / "scenario.txt",
                              [FakeGpu(util_pct=30 + i, mem_base_used_mib=60_000 + 1000 * i) for i in range(8)],
                              [FakeProc(gpu=3, pid=stranger.pid, used_mib=12_000)])
    env = fake_env(nvml_libdir, scenario)
    env["PYTHONPATH"] = str(REPO)

    d, ui = json_and_screen(base, run.run_id, env)

    # status line: the very same text from the JSON run object
    # (with the alert state the JSON carries: an unacknowledged critical takes over the headline)
    headline = fmt.alert_args(d["run"], d["alert_groups"])
    assert headline["alert"] and "CRIT ·" in ui["status"][0]
    assert ui["status"] == [fmt.plain(line) for line in fmt.status_lines(d["run"], **headline, now=ui["now"])]
    # events, crashes, checkpoints
    # (the JSON carries the newest 20 events, the screen all it has read: compare the newest)
    # (each fitted to the pane's width by words, as the screen shows it)
    lines = event_pane_lines(d["events"], ui["events_width"])
    assert len(lines) > 5 and ui["events"][-(len(lines) - 1):] == lines[1:]
    # log tail: the newest lines that fit, metric lines as columns
    assert ui["log"] == MetricColumns().rows(d["log_tail"], len(ui["log"]))
    # GPUs: every GPU's memory against capacity and utilisation, from the same driver data
    gpus_text = " ".join(ui["gpus"])
    assert d["gpu"]["available"] and len(d["gpu"]["gpus"]) == 8
    for g in d["gpu"]["gpus"]:
        assert f"{g['mem_used_mib'] / 1024:.1f}/{g['mem_total_mib'] / 1024:.1f}G" in gpus_text
        assert f"{int(g['util_pct'])}%" in gpus_text
    # zombies: the stranger on GPU 3 is listed by both
    json_blockers = [b["pid"] for b in d["blockers"] if b["shown"]]
    assert stranger.pid in json_blockers and ui["blockers"] == json_blockers
    assert ui["blocker_table_mounted"] and ui["datatable_loaded"]   # the zombie's table: mounted, drawn
    # the loss chart: the JSON series drawn at the UI's size gives the UI's plot, marker for marker
    width, height = ui["loss_size"]
    drawn = rows_text(render_chart([series_from_pairs(d["series"]["loss"])], width, height,
                                   markers=markers_from(d["restarts_at"], d["checkpoints"])))
    assert ui["loss_rows"][1:] == drawn[1:]
    assert ui["loss_rows"][0].startswith(f"loss {fmt.num(d['last_metrics']['loss'])}")


# A real runner's run: a log in a declared line format, each step's record naming its line.
SPEC = r"^#(?P<step>\d+)# ce~(?P<loss>\S+)"
STEPS = 24
TRAIN = (
    "import time\n"
    f"for i in range(1, {STEPS + 1}):\n"
    "    print(f'#{i * 10:05d}# ce~{3.0 - i / 100:.2f} ~ rate~1e-4', flush=True)\n"
    "    if i % 8 == 0:\n"
    "        print('note: a plain line', flush=True)\n"
    "time.sleep(600)\n"
)


def test_json_tail_records_are_what_the_screen_tail_shows(tmp_path, runs_dir):
    """``--json``'s ``tail_records`` are the runner's record of each ``log_tail`` line: drawn as
    the screen draws them, they give the attached screen's tail line for line; and the attached
    process, showing the runner's records, never imports the line parser (its format regexes
    are about 2 MiB of the console's memory)."""
    from tests.runner.conftest import Harness
    from tests.waiting import until
    h = Harness(tmp_path, runs_dir)
    run = h.start(h.recipe(command=["{python}", "-c", TRAIN], log_format=SPEC))
    until(lambda: len(run.metrics()) >= STEPS and run.metrics()[-1]["step"] == STEPS * 10,
          timeout=90, what="the runner's records")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    d, ui = json_and_screen(runs_dir, run.id, env, "--no-gpu")

    recs = d["tail_records"]
    assert recs is not None and len(recs) == len(d["log_tail"])
    by_line = {line: rec for line, rec in zip(d["log_tail"], recs) if rec is not None}
    assert len(by_line) >= 10 and all(line.startswith("#") for line in by_line)
    assert all(rec is None for line, rec in zip(d["log_tail"], recs) if not line.startswith("#"))
    for line, rec in by_line.items():             # each line's own record
        assert line.startswith("#%05d# ce~" % rec["step"]), (line, rec)
    assert ui["log"] == MetricColumns().rows(d["log_tail"], len(ui["log"]), records=recs)
    assert ui["log"][0].split() == ["step", "loss", "grad", "norm", "lr"]
    assert not any("ce~" in line for line in ui["log"]), ui["log"]
    assert ui["parser_loaded"] is False
    # no zombie or blocker: the table (a DataTable, ~0.2 MiB) is neither mounted nor imported
    assert not d["blockers"] or not any(b["shown"] for b in d["blockers"])
    assert ui["blocker_table_mounted"] is False and ui["datatable_loaded"] is False
