"""`moeconsole runs receipt` on a real run that crashed once, restarted from its checkpoint and
saved an empty stub: the JSON carries every fact, the markdown renders, the plot is a real PNG,
and without matplotlib the receipt still comes out and says why there is no plot."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runner.conftest import Harness

REPO = Path(__file__).resolve().parents[2]


def _cli(runs_dir: Path, *args: str, pythonpath: str = str(REPO)) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)


@pytest.fixture
def crashed_run(tmp_path, runs_dir):
    h = Harness(tmp_path, runs_dir)
    recipe = h.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                               "--max_steps", "12", "--save_steps", "4", "--step_delay", "0.0",
                               "--fault", "segv@6#1", "--fault", "stub@8#2"], cost_per_hour=70)
    run = h.start(recipe)
    run.wait_status("succeeded", "failed", "killed", timeout=240)
    return run


def test_receipt_json_markdown_and_plot(crashed_run, runs_dir, tmp_path):
    proc = _cli(runs_dir, "runs", "receipt", crashed_run.id, "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["v"] == 1 and r["kind"] == "moeconsole.receipt"
    assert r["run"]["status"] == "succeeded" and r["run"]["attempts"] == 2 and r["run"]["restarts"] == 1
    assert r["steps"]["first"] == 1 and r["steps"]["last"] == 12 and r["steps"]["max_steps"] == 12
    assert r["restarts_at"] == [5]                       # attempt 2 resumed from checkpoint-4
    assert [c["class"] for c in r["crashes"]] == ["segfault"]
    verdicts = {c["step"]: c["verdict"] for c in r["checkpoints"]}
    assert verdicts[4] == "ok" and verdicts[12] == "ok" and verdicts[8].lower() == "empty_stub"
    assert all(len(c["header_sha256"]) == 64 for c in r["checkpoints"])
    assert r["loss"]["min"] <= r["loss"]["first"] and r["loss"]["last"] == r["loss"]["min"]
    assert r["alerts"]["by_rule"].get("critical:checkpoint_bad") == 1
    assert r["cost"]["per_hour"] == 70 and r["cost"]["total"] > 0
    assert r["environment"]["recorded_at_launch"] and r["environment"]["versions"]["torch"].startswith("2.")

    out = tmp_path / "report"
    proc = _cli(runs_dir, "runs", "receipt", crashed_run.id, "--out", str(out), "--full")
    assert proc.returncode == 0, proc.stderr
    md = (out / "receipt.md").read_text()
    assert "![loss curve](loss.png)" in md and "| 1 | segfault | restart |" in md
    assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    full = json.loads((out / "receipt.json").read_text())
    assert all(len(c["sha256"]) == 64 for c in full["checkpoints"])   # --full hashes content


def test_receipt_without_matplotlib_says_why(crashed_run, runs_dir):
    # A Python without matplotlib: its import refused in the CLI's own process (a blocker on
    # PYTHONPATH no longer shadows an installed package: moeconsole imports its install's first).
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    cli = ("import runpy, sys; sys.modules['matplotlib'] = None; "
           "runpy.run_module('moeconsole.console.cli', run_name='__main__', alter_sys=True)")
    proc = subprocess.run([sys.executable, "-c", cli, "runs", "receipt", crashed_run.id, "--md", "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "(no plot: matplotlib is not installed" in proc.stdout
    assert "![loss curve]" not in proc.stdout


def test_receipt_of_an_unknown_run_is_one_line(runs_dir):
    proc = _cli(runs_dir, "runs", "receipt", "nope")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("unwritable", ["HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"])
def test_receipt_with_an_unwritable_matplotlib_directory_is_quiet_and_leaves_no_scratch(tmp_path, unwritable):
    """Matplotlib keeps two directories by one rule (its config, and its cache where the font list
    goes: ``_get_config_or_cache_dir``), under HOME or the XDG variables. When one cannot be made (a
    HOME on a read-only or missing directory on someone else's machine, an XDG variable naming a
    file, a read-only ~/.cache), it printed "mkdir -p failed ..." and "Matplotlib created a
    temporary cache directory ..." around the receipt. The plot is still drawn, stderr says
    nothing, and no scratch directory is left in TMPDIR."""
    pytest.importorskip("matplotlib")
    from tests.console.conftest import write_run
    runs = tmp_path / "runs"
    runs.mkdir(mode=0o700)
    run = write_run(runs, status="succeeded")
    scratch, home = tmp_path / "tmp", tmp_path / "home"
    scratch.mkdir()
    home.mkdir()
    blocked = tmp_path / "a-file"
    blocked.write_text("a file, not a directory: nothing can be made under it\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "MOECONSOLE_RUNS_DIR")}
    env.update(HOME=str(home), TMPDIR=str(scratch), PYTHONPATH=str(REPO))
    env[unwritable] = str(blocked)
    out = tmp_path / "report"
    proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "receipt", run.run_id,
                           "--out", str(out), "--runs-dir", str(runs)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert proc.stderr == "", proc.stderr
    assert list(scratch.iterdir()) == []


def test_a_save_whose_tensors_were_not_counted_has_no_count_in_the_receipt(tmp_path, runs_dir):
    """A legacy Megatron save (``mp_rank_XX/model_optim_rng.pt``: no index to count from) is
    verified ok but its tensors are not counted: the receipt says so (null, ``-``), not "0 tensors",
    which reads as a save without weights; a counted save beside it keeps its count."""
    from tests.checkpoints.conftest import write_demo_checkpoint, write_megatron_legacy
    from tests.console.conftest import write_run
    run = write_run(runs_dir, status="succeeded", checkpoints=())
    legacy = write_megatron_legacy(run.path / "output" / "megatron", 4)
    counted = write_demo_checkpoint(run.path / "output" / "checkpoint-8", 8)
    run.event("checkpoint", path=str(legacy), step=4, ok=True, verdict="ok")
    run.event("checkpoint", path=str(counted), step=8, ok=True, verdict="ok")
    proc = _cli(runs_dir, "runs", "receipt", run.path.name, "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {c["step"]: c for c in json.loads(proc.stdout)["checkpoints"]}
    assert (rows[4]["verdict"], rows[4]["tensors"]) == ("ok", None), rows
    assert rows[8]["verdict"] == "ok" and rows[8]["tensors"] > 0, rows
    out = tmp_path / "report"
    proc = _cli(runs_dir, "runs", "receipt", run.path.name, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in (out / "receipt.md").read_text().splitlines() if str(legacy) in line)
    assert "| - |" in line and "| 0 |" not in line, line


def _torch_dist_save(save: Path, iteration: int, index: bytes, ends: dict[str, int]) -> Path:
    d = save / f"iter_{iteration:07d}"
    d.mkdir(parents=True)
    (d / ".metadata").write_bytes(index)
    for name, end in ends.items():
        with open(d / name, "wb") as f:
            f.truncate(end)
    (d / "common.pt").write_bytes(b"common")
    (d / "metadata.json").write_text('{"sharded_backend": "torch_dist"}')
    (save / "latest_checkpointed_iteration.txt").write_text(str(iteration))
    return d


def _bytes_read() -> int:
    """What this process has read through read(2) and the like so far (/proc/self/io ``rchar``)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_the_receipt_reads_a_megatron_index_once_and_never_one_above_the_read_limit(tmp_path, runs_dir):
    """The receipt's header identity of a Megatron save comes from the ``.metadata`` verify reads
    anyway: the index is read once (not again for the digest), and a ``.metadata`` above verify's
    read limit (512 MB) is not read at all (its size stands in), so it cannot make the receipt slow."""
    from moeconsole.runner.rundir.receipt import build_receipt
    from tests.console.conftest import write_run
    run = write_run(runs_dir, status="succeeded", checkpoints=())
    from tests.checkpoints.conftest import dcp_index_bytes
    index, ends = dcp_index_bytes(12_000)
    read_ok = _torch_dist_save(run.path / "output" / "megatron", 4, index, ends)
    huge = _torch_dist_save(run.path / "output" / "megatron2", 8, index, ends)
    with open(huge / ".metadata", "r+b") as f:    # sparse: 600 MB that cost no disk
        f.truncate(600 << 20)
    run.event("checkpoint", path=str(read_ok), step=4, ok=True, verdict="ok")
    run.event("checkpoint", path=str(huge), step=8, ok=True, verdict="ok")
    build_receipt(run)                              # imports and first reads out of the way
    before = _bytes_read()
    receipt = build_receipt(run)
    read = _bytes_read() - before
    rows = {c.step: c for c in receipt.checkpoints}
    assert (rows[4].verdict, rows[4].tensors) == ("ok", 12_000), rows[4]
    assert rows[8].tensors is None, rows[8]          # above the limit: not counted, and not read
    assert len(index) < read < 1.5 * len(index), (read, len(index))
    assert len(rows[4].header_sha256 or "") == len(rows[8].header_sha256 or "") == 64, rows
    first = rows[8].header_sha256
    with open(huge / ".metadata", "r+b") as f:
        f.truncate((600 << 20) + 1)
    assert build_receipt(run).checkpoints[1].header_sha256 != first   # its size still tells saves apart
