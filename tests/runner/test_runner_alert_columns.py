"""What a real run's alerts and bad saves look like outside the console: `runs ls` columns,
`runs show` (crash hint, alerts by cause), the receipt, and `runs show PATH` for a log not
made by moeconsole; an acknowledgement (acks.json, as the console's `a` writes it) clears the
open-alert count."""
from __future__ import annotations

import json

from moeconsole.runner.rundir import alertgroups, rundir


def _ls_row(harness, run_id: str) -> dict:
    rows = json.loads(harness.cli("runs", "ls", "--json", check=True).stdout)["runs"]
    return next(r for r in rows if r["id"] == run_id)


def test_runs_ls_show_and_receipt_carry_bad_saves_open_alerts_and_the_crash_hint(harness):
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps", "16",
           "--save_steps", "4", "--fault", "stub@4", "--fault", "oom@10"]
    run = harness.start(harness.recipe(command=cmd))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded", st.get("pause_reason")
    hint = run.crash(1)["hint"]
    assert "expandable_segments" in hint

    ls = harness.cli("runs", "ls", check=True).stdout.splitlines()
    header, line = ls[0], next(l for l in ls if run.id in l)
    assert "BAD SAVES" in header and "ALERTS" in header
    assert line[header.index("BAD SAVES"):].split()[0] == "1", line  # the stub
    # the stub; the OOM is history once attempt 2 trained past its step (``policy.crashes_passed``)
    assert line[header.index("ALERTS"):].split()[:3] == ["1", "(1", "CRIT)"], line
    row = _ls_row(harness, run.id)
    assert (row["bad_saves"], row["open_alerts"], row["open_critical"]) == (1, 1, 1)

    show = harness.cli("runs", "show", run.id, check=True).stdout
    assert f"    hint: {hint}" in show
    assert "alerts by cause (2, 1 open)" in show and "CRIT crash cuda_oom" in show
    assert "CRIT checkpoint checkpoint-4 is empty_stub" in show

    md = harness.cli("runs", "receipt", run.id, check=True).stdout
    assert f"- hint for attempt 1 (cuda_oom): {hint}" in md and "bad saves 1" in md
    assert "2 cause(s), 1 open" in md
    receipt = json.loads(harness.cli("runs", "receipt", run.id, "--json", check=True).stdout)
    assert receipt["crashes"][0]["hint"] == hint and receipt["run"]["bad_saves"] == 1
    assert {g["key"] for g in receipt["alerts"]["groups"]} == {"crash:cuda_oom", "checkpoints"}

    # `a` in a console writes acks.json: every listing follows
    groups = alertgroups.AlertBook().feed_all(run.events()).groups()
    alertgroups.acknowledge(run.path, groups)
    row = _ls_row(harness, run.id)
    assert (row["bad_saves"], row["open_alerts"]) == (1, 0)
    assert "alerts by cause (2, 0 open)" in harness.cli("runs", "show", run.id, check=True).stdout
    assert "(acknowledged)" in harness.cli("runs", "show", run.id, check=True).stdout


def test_runs_show_of_a_log_not_made_by_moeconsole(harness, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(f"{{'loss': {2.0 - i / 10:.3f}, 'grad_norm': 1.0, 'learning_rate': 1e-4, "
                           f"'epoch': {i / 10:.2f}, 'global_step/max_steps': '{i}/10'}}\n" for i in range(1, 11)))
    out = harness.cli("runs", "show", str(log))
    assert out.returncode == 0, out.stderr
    assert "no run matches" not in out.stderr
    assert "train.log (imported)" in out.stdout and "imported  a log not made by moeconsole" in out.stdout
    assert "10/10" in out.stdout
    data = json.loads(harness.cli("runs", "show", str(log), "--json", check=True).stdout)
    assert data["imported_from"] == str(log) and data["last_step"] == 10
    assert not list(rundir.list_run_dirs(harness.runs_dir)), "nothing is added to the runs"
