"""``moeconsole parse`` as a user runs it: a real subprocess, its output and exit code."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from tests.ingest import ingest_samples as S

REPO = Path(__file__).resolve().parents[2]
VENV_PY = REPO / ".venv" / "bin" / "python"
PY = str(VENV_PY if VENV_PY.exists() else Path(sys.executable))


def parse_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "moeconsole.console.cli", "parse", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def swift_log(path: Path, n: int = 200, spike_at: int | None = None, nan_at: int | None = None) -> None:
    lines = ["[INFO:swift] Start time of running main: 2026-01-02 03:04:05"]
    for s in range(1, n + 1):
        grad = 500.0 if s == spike_at else 0.9
        loss = math.nan if s == nan_at else 2.0 - s / (2 * n)
        lines.append(S.tqdm_write(S.swift_hf_dict(s, n, loss, grad, mem=35.12, speed=0.2), s, n))
        if s % 50 == 0:
            lines.append(f"[INFO:swift] Saving model checkpoint to /o/v0/checkpoint-{s}")
    lines.append("[INFO:swift] last_model_checkpoint: /o/v0/checkpoint-200")
    path.write_text("\n".join(lines) + "\n")


def test_summary_of_a_clean_log(tmp_path):
    log = tmp_path / "train.log"
    swift_log(log)
    res = parse_cli(str(log))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "formats      swift_dict (200)" in out
    assert "steps        1 -> 200 of 200 (200 records)" in out
    assert "loss         first 1.998 (step 1), last 1.5 (step 200), min 1.5 (step 200)" in out
    assert "lines        206 (200 metric, 5 marks, 1 not understood)" in out
    assert "grad norm    max 0.9" in out
    assert "memory       peak 35.12 GiB" in out
    assert "checkpoints  4 saved, last /o/v0/checkpoint-200" in out
    assert "alerts       none" in out
    # the next step for the line not understood: which flag names it (a newcomer saw only a count)
    assert "not understood 1 line(s); --explain lists each with the reason" in out
    assert res.stderr == ""


def test_summary_lists_alerts(tmp_path):
    log = tmp_path / "train.log"
    swift_log(log, spike_at=150, nan_at=180)
    out = parse_cli(str(log)).stdout
    assert "1 critical grad_norm_spike" in out and "1 critical non_finite" in out
    assert "CRITICAL grad_norm_spike: grad norm 500 is" in out
    assert "CRITICAL non_finite: loss is nan at step 180" in out
    assert "non-finite   loss 1" in out
    assert "alerts       (monitors off)" in parse_cli(str(log), "--no-monitors").stdout


def test_json_mode_prints_one_record_per_line(tmp_path):
    log = tmp_path / "train.log"
    swift_log(log, nan_at=7)
    res = parse_cli(str(log), "--json")
    assert res.returncode == 0
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(rows) == 200
    assert all(r["v"] == 1 and r["src"] == "swift_dict" for r in rows)
    assert [r["step"] for r in rows] == list(range(1, 201))
    assert rows[6]["loss"] == "nan"                  # NaN kept as a string (JSON has no NaN)
    assert set(rows[0]) == {"v", "step", "max_steps", "loss", "grad_norm", "lr", "mem_gib", "tokens_per_s",
                            "step_time_s", "epoch", "extra", "src"}


def test_json_mode_on_a_trainer_state(tmp_path):
    state = {"global_step": 20, "max_steps": 20, "log_history": [
        {"epoch": 0.5, "grad_norm": 0.5, "learning_rate": 1e-5, "loss": 1.25, "step": 10},
        {"epoch": 1.0, "grad_norm": 0.4, "learning_rate": 1e-5, "loss": 1.0, "step": 20}]}
    ckpt = tmp_path / "checkpoint-20"
    ckpt.mkdir()
    path = ckpt / "trainer_state.json"
    path.write_text(json.dumps(state, indent=2, sort_keys=True))
    rows = [json.loads(x) for x in parse_cli(str(path), "--json").stdout.splitlines()]
    assert [(r["step"], r["loss"], r["src"]) for r in rows] == [(10, 1.25, "hf_state"), (20, 1.0, "hf_state")]
    out = parse_cli(str(ckpt)).stdout                # the checkpoint directory, summary mode
    assert "formats      hf_state (2)" in out and "steps        10 -> 20 of 20 (2 records)" in out


def test_garbage_is_not_an_error(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 400)
    res = parse_cli(str(junk))
    assert res.returncode == 0
    assert "no metric records found" in res.stdout and "not understood" in res.stdout


def test_unreadable_inputs_exit_2_with_one_line(tmp_path):
    bad_state = tmp_path / "trainer_state.json"
    bad_state.write_text("{not json")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    for target, words in ((tmp_path / "nope.log", "no such file"), (empty_dir, "no log found"),
                          (bad_state, "not valid JSON")):
        for extra in ([], ["--json"]):
            res = parse_cli(str(target), *extra)
            assert res.returncode == 2
            assert res.stdout == ""
            assert res.stderr.startswith("moeconsole: ") and words in res.stderr
            assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_missing_argument_is_a_usage_error():
    res = parse_cli()
    assert res.returncode == 2 and "Traceback" not in res.stderr


def _parse_on_a_terminal(args: list[str], tmp_path: Path) -> tuple[int, bytes, bytes]:
    """``parse`` with stderr on a pseudo-terminal (stdout to a file), the bar's delay set to 0."""
    import os
    import pty
    import select
    master, slave = pty.openpty()
    out_path = tmp_path / "stdout"
    env = dict(os.environ, MOECONSOLE_PROGRESS_AFTER_S="0")
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([PY, "-m", "moeconsole.console.cli", "parse", *args], cwd=REPO, stdout=out, stderr=slave,
                                env=env)
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            err += data
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    os.close(master)
    return proc.returncode, out_path.read_bytes(), err


def test_parse_draws_a_progress_bar_on_a_terminal_and_wipes_it(tmp_path):
    log = tmp_path / "train.log"
    swift_log(log, n=2000)
    code, out, err = _parse_on_a_terminal([str(log)], tmp_path)
    assert code == 0
    assert b"\rparse " in err and b"%" in err and err.endswith(b"\r\x1b[K")
    assert b"formats      swift_dict (2,000)" in out           # the summary itself untouched
    code, out, err = _parse_on_a_terminal([str(log), "--json"], tmp_path)
    assert code == 0 and err.endswith(b"\r\x1b[K")
    assert out == parse_cli(str(log), "--json").stdout.encode()  # the NDJSON untouched
    # not a terminal: no bar
    res = subprocess.run([PY, "-m", "moeconsole.console.cli", "parse", str(log)], cwd=REPO, capture_output=True, timeout=60,
                         env={**__import__("os").environ, "MOECONSOLE_PROGRESS_AFTER_S": "0"})
    assert res.returncode == 0 and res.stderr == b""


def test_a_log_no_reader_knows_names_the_way_to_declare_its_format(tmp_path):
    """`parse` of a log in a format of one's own said "no metric records found" and nothing
    more; it names --log-format, and the format it names reads the log."""
    log = tmp_path / "odd.log"
    log.write_text("it=1 L=2.5 gn=1.0\nit=2 L=2.1 gn=0.9\nit=3 L=1.9 gn=0.8\n")
    out = parse_cli(str(log)).stdout
    assert "no metric records found; if its lines hold metrics, declare their format: --log-format" in out, out
    declared = parse_cli(str(log), "--log-format", r"it=(?P<step>\d+) L=(?P<loss>\S+)")
    assert declared.returncode == 0, declared.stderr
    assert "steps        1 -> 3 (3 records)" in declared.stdout and "last 1.9 (step 3)" in declared.stdout, declared.stdout
