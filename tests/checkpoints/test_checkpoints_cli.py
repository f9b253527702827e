"""``moeconsole verify`` (and the stub rule in ``moeconsole lint``) through real subprocesses."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from moeconsole.runner.rundir import jsonio

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, runs_dir: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "moeconsole.console.cli", *args]
    if runs_dir is not None:
        argv += ["--runs-dir", str(runs_dir)]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


def test_verify_dir_with_a_stub_and_a_good_checkpoint(mk, tmp_path):
    out = tmp_path / "out"
    mk.adapter(out / "checkpoint-10")
    mk.stub(out / "checkpoint-20" / "adapter_model.safetensors")
    (out / "checkpoint-20" / "adapter_config.json").write_text('{"r": 8}')
    proc = cli("verify", str(out))
    _no_traceback(proc)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("EMPTY_STUB") and str(out / "checkpoint-20") in lines[0]
    assert "0 tensors" in lines[0] and "39.0 KB" in lines[0]
    ok_line = next(line for line in lines if line.startswith("ok "))
    assert str(out / "checkpoint-10") in ok_line and "16 tensors" in ok_line and "4.1K params" in ok_line
    assert lines[-1] == f"2 checkpoints: 1 ok, 1 bad (1 empty_stub); newest ok: {out / 'checkpoint-10'}"


def test_verify_ok_checkpoint_exit_0_and_json(mk, tmp_path):
    d = mk.adapter(tmp_path / "checkpoint-10")
    assert cli("verify", str(d)).returncode == 0
    proc = cli("verify", str(d), "--json")
    assert proc.returncode == 0
    out = json.loads(proc.stdout)
    assert out["v"] == 1 and out["ok"] is True
    (ck,) = out["checkpoints"]
    assert (ck["verdict"], ck["step"], ck["tensors"], ck["layout"]) == ("ok", 10, 16, "hf_adapter")


def test_verify_single_safetensors_file_full_hash_equals_sha256sum(mk, tmp_path):
    d = mk.demo(tmp_path / "checkpoint-1", 1)
    f = d / "adapter_model.safetensors"
    proc = cli("verify", str(f), "--full", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    full = json.loads(proc.stdout)["checkpoints"][0]["full"]
    sha = subprocess.run(["sha256sum", str(f)], capture_output=True, text=True).stdout.split()[0]
    assert full["file_hashes"]["adapter_model.safetensors"] == sha
    assert full["tensors_scanned"] == 8 and full["nonfinite_tensors"] == 0


def test_unreadable_inputs_exit_2_with_one_line(tmp_path, runs_dir):
    for target in (str(tmp_path / "missing"), "no-such-run"):
        proc = cli("verify", target, runs_dir=runs_dir)
        assert proc.returncode == 2
        _no_traceback(proc)
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
        assert proc.stderr.startswith("moeconsole: ")
    (tmp_path / "notes.txt").write_text("hello")
    proc = cli("verify", str(tmp_path / "notes.txt"))
    assert proc.returncode == 2 and "not a .safetensors file" in proc.stderr


def test_directory_without_checkpoints_exit_1(tmp_path):
    proc = cli("verify", str(tmp_path))
    assert proc.returncode == 1 and f"no checkpoints found under {tmp_path}" in proc.stdout


def _make_run(runs_dir: Path, run_id: str, ckpt_root: Path, recipe_hash: str, grad_norms: list[float]) -> Path:
    run = runs_dir / run_id
    run.mkdir(parents=True)
    jsonio.atomic_write_json(run / "state.json", {"v": 1, "status": "running", "checkpoint_root": str(ckpt_root),
                                                  "recipe_hash": recipe_hash})
    for step, g in enumerate(grad_norms, start=1):
        jsonio.append_jsonl(run / "metrics.jsonl", {"v": 1, "t": time.time(), "attempt": 1, "step": step,
                                                    "grad_norm": g, "loss": 1.0})
    return run


def test_verify_a_run_by_id_reports_suspect_and_drift(mk, tmp_path, runs_dir):
    from moeconsole.runner.checkpoints.sidecar import write_sidecar

    root = tmp_path / "ckpts"
    mk.adapter(root / "checkpoint-10")
    spiky = mk.adapter(root / "checkpoint-20")
    write_sidecar(spiky, run_id="x", recipe_hash="oldhash", step=20, verdict="ok", suspect=False)
    _make_run(runs_dir, "20260102-030405-demo-ab12", root, "newhash", [1.0] * 19 + [float("nan")])
    proc = cli("verify", "demo-ab12", "--json", runs_dir=runs_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["target"] == "run 20260102-030405-demo-ab12"
    newest, older = out["checkpoints"]
    assert (newest["step"], newest["suspect"], newest["drift"], newest["recipe_hash"]) == (20, True, True, "oldhash")
    assert (older["step"], older["suspect"], older["drift"]) == (10, False, None)
    human = cli("verify", "demo-ab12", runs_dir=runs_dir).stdout
    assert "SUSPECT: saved during a grad-norm excursion: grad norm was nan at step 20" in human
    assert "DRIFT: saved under recipe oldhash" in human


def test_verify_run_falls_back_to_output_dir(mk, runs_dir):
    run = runs_dir / "20260102-000000-r-0001"
    run.mkdir()
    (run / "state.json").write_text('{"v": 1, "status": "failed"}')
    mk.stub(run / "output" / "checkpoint-5" / "adapter_model.safetensors")
    proc = cli("verify", "r-0001", runs_dir=runs_dir)
    assert proc.returncode == 1 and proc.stdout.startswith("EMPTY_STUB")


def test_verify_run_of_an_ended_run_judges_its_unfinished_save_as_it_is(runs_dir):
    """A run killed while its Trainer wrote a save: the save lacks trainer_state.json, and its runner
    verified it `incomplete` when the attempt ended. `verify RUN` of the ended run said IN_PROGRESS
    ("trainer_state.json not written yet", exit 3), as for a live one: nothing writes an ended run's
    saves. While the run is live it still waits for the writer."""
    run = runs_dir / "20260102-000000-r-0002"
    run.mkdir()
    _trainer_save_up_to_the_optimizer(run / "output" / "checkpoint-10")
    for status, word in (("killed", "INCOMPLETE"), ("running", "IN_PROGRESS")):
        (run / "state.json").write_text(json.dumps({"v": 1, "status": status}))
        proc = cli("verify", "r-0002", runs_dir=runs_dir)
        _no_traceback(proc)
        assert proc.stdout.split()[0] == word and "trainer_state.json" in proc.stdout, (status, proc.stdout)
        assert proc.returncode == (1 if status == "killed" else 3), (status, proc.returncode)


def test_compare_identical_and_different(mk, tmp_path):
    a = mk.demo(tmp_path / "a" / "checkpoint-5", 5, seed=1)
    b = mk.demo(tmp_path / "b" / "checkpoint-5", 5, seed=1)
    c = mk.demo(tmp_path / "c" / "checkpoint-5", 5, seed=2)
    same = cli("verify", str(tmp_path / "a"), "--compare", str(tmp_path / "b"))
    assert same.returncode == 0 and "IDENTICAL" in same.stdout, same.stdout
    diff = cli("verify", str(a), "--compare", str(c), "--json")
    assert diff.returncode == 1
    (comp,) = json.loads(diff.stdout)["compare"]
    assert comp["identical"] is False and comp["tensors_differ_count"] == 8
    assert all(d["max_abs_diff"] > 0 for d in comp["tensors_differ"])
    human = cli("verify", str(a), "--compare", str(c)).stdout
    assert "DIFFERENT" in human and "8 of 8 tensors differ" in human and "max abs diff" in human
    nothing = cli("verify", str(b), "--compare", str(tmp_path / "missing"))
    assert nothing.returncode == 2


def test_real_demo_trainer_stub_fault_is_caught(tmp_path):
    """The demo trainer with an injected stub save: verify flags exactly that checkpoint."""
    out = tmp_path / "out"
    train = subprocess.run([sys.executable, "-m", "moeconsole.runner.demo.train", "--output_dir", str(out), "--max_steps", "4",
                            "--save_steps", "2", "--fault", "stub@4"], cwd=REPO, capture_output=True, text=True,
                           timeout=120)
    assert train.returncode == 0, train.stderr[-2000:]
    proc = cli("verify", str(out), "--json")
    assert proc.returncode == 1
    verdicts = {c["step"]: c["verdict"] for c in json.loads(proc.stdout)["checkpoints"]}
    assert verdicts == {4: "empty_stub", 2: "ok"}


@pytest.mark.parametrize("merge", [None, "true", "false"])
def test_lint_flags_the_stub_trap(tmp_path, merge):
    command = ["megatron", "sft", "--model", "Qwen/Qwen3-30B-A3B", "--tuner_type", "lora",
               "--save_safetensors", "true", "--no_save_optim", "true", "--output_dir", "{run_dir}/output"]
    if merge:
        command += ["--merge_lora", merge]
    # On 4.2.0 an omitted --merge_lora follows --save_safetensors (megatron_args.py l.706-707): it
    # merges, no trap. Only an explicit false is the record's combination: a warning citing it.
    recipe = {"name": "trap", "command": command, "checkpoints": {"dir": "{run_dir}/output"},
              "swift": {"version": "4.2.0"}}
    path = tmp_path / "trap.yaml"
    path.write_text(yaml.safe_dump(recipe))
    proc = cli("lint", str(path), "--json")
    _no_traceback(proc)
    rules = {p["rule"]: p for p in json.loads(proc.stdout)["problems"]}
    assert ("swift_megatron_stub_trap" in rules) == (merge == "false")
    assert proc.returncode == 0, rules
    if merge == "false":
        trap = rules["swift_megatron_stub_trap"]
        assert trap["level"] == "warning" and "39 KB" in trap["message"] and "record" in trap["message"]
    else:
        assert "swift_merged_save_disk" in rules         # it merges: the disk cost is what matters


def _finish_merged(d: Path) -> None:
    """What mcore-bridge's ``StreamingSafetensorSaver.finalize`` (mcore_bridge/utils/safetensors.py
    1.6.5 l.153-183) and ms-swift's save_weights do last: rename the shards, write the index, then
    config.json."""
    shards = sorted(d.glob("model-*-of-?????.safetensors"))
    weight_map = {}
    for p in shards:
        final = p.with_name(p.name.replace("?????", f"{len(shards):05d}"))
        p.rename(final)
        from safetensors import safe_open
        with safe_open(str(final), framework="numpy") as f:
            weight_map.update({k: final.name for k in f.keys()})
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3_5_moe"}))


def test_a_merged_save_being_written_is_in_progress_not_bad(tmp_path):
    """checkpoint-N/ holds Megatron metadata only while checkpoint-N-merged/ is written with
    temporary ``-of-?????`` shard names: the one-shot verify says IN_PROGRESS (exit 3), not
    EMPTY_STUB / MISSING_CONFIG."""
    from tests.checkpoints.conftest import merged_started, swift_common

    out = tmp_path / "out"
    swift_common(out / "checkpoint-100", 100)
    merged_started(out / "checkpoint-100-merged", 100)
    proc = cli("verify", str(out))
    _no_traceback(proc)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [ln.split()[0] for ln in lines[:2]] == ["IN_PROGRESS", "IN_PROGRESS"], lines
    assert any("-of-?????" in ln for ln in lines)
    assert "EMPTY_STUB" not in proc.stdout and "MISSING_CONFIG" not in proc.stdout
    assert lines[-1].startswith("2 checkpoints: 0 ok, 2 in progress")
    data = json.loads(cli("verify", str(out), "--json").stdout)
    assert {c["verdict"] for c in data["checkpoints"]} == {"in_progress"} and data["ok"] is False


def test_verify_wait_waits_for_the_merged_save_to_settle(tmp_path):
    from tests.checkpoints.conftest import merged_started, swift_common

    out = tmp_path / "out"
    swift_common(out / "checkpoint-100", 100)
    merged = merged_started(out / "checkpoint-100-merged", 100, shards_done=2)
    proc = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "verify", str(out), "--wait", "120",
                             "--settle", "0.5"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()          # printed once it sees the save underway
        assert first.startswith("waiting up to 120 s for 2 save(s) still being written"), first
        assert proc.poll() is None
        _finish_merged(merged)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stdout + stderr
    assert [ln.split()[0] for ln in stdout.splitlines()[:2]] == ["ok", "ok"], stdout
    # the newest save is checkpoint-100 (its weights the -merged sibling's); the -merged dir itself is an
    # export, never named the newest save (discover.is_export; it had been)
    assert stdout.splitlines()[-1].endswith(f"newest ok: {out / 'checkpoint-100'}; 1 export (merged weights, no resume point)")


def test_prune_superseded_attempt_directories_never_the_resume_point(mk, tmp_path):
    """v0 saved 100 and 200 and crashed; v1 resumed and saved 300 and 400; v2 resumed from 400 and
    saved a stub at 500. v0 is superseded (v1 verified beyond it); v1 holds the resume point
    (checkpoint-400) and v2 is the newest: both stay. Nothing goes without --yes."""
    out = tmp_path / "out"
    v0, v1, v2 = (out / f"v{i}-20260101-00000{i}" for i in range(3))
    mk.adapter(v0 / "checkpoint-100")
    mk.adapter(v0 / "checkpoint-200")
    mk.adapter(v1 / "checkpoint-300")
    mk.adapter(v1 / "checkpoint-400")
    mk.stub(v2 / "checkpoint-500" / "adapter_model.safetensors")
    (v2 / "checkpoint-500" / "adapter_config.json").write_text('{"r": 8}')
    listed = cli("verify", str(out), "--prune-superseded")
    assert listed.returncode == 1            # the stub is still bad
    assert f"superseded (remove with --yes): {v0} (2 checkpoint(s)," in listed.stdout, listed.stdout
    assert str(v1) + " (" not in listed.stdout and str(v2) + " (" not in listed.stdout
    assert v0.exists()
    doc = json.loads(cli("verify", str(out), "--prune-superseded", "--json").stdout)
    assert [d["path"] for d in doc["superseded"]] == [str(v0)]
    removed = cli("verify", str(out), "--prune-superseded", "--yes")
    assert f"removed: {v0}" in removed.stdout and not v0.exists() and v1.exists() and v2.exists()
    again = cli("verify", str(out), "--prune-superseded")
    assert "no superseded attempt directory" in again.stdout


def test_prune_superseded_never_removes_the_save_a_restart_would_take_when_the_newer_one_is_suspect(mk, tmp_path):
    """v0 saved 100 and 200; v1 resumed and saved 300 during a grad-norm spike (its runner stamped it
    suspect). A restart resumes from checkpoint-200, the newest clean save (``order.resume_point``):
    v0 holds it and is never superseded, though v1 went beyond it. (The highest step had been kept
    instead, and v0 listed and removed with --yes: the save a restart would take.)"""
    from moeconsole.runner.checkpoints.sidecar import write_sidecar
    out = tmp_path / "out"
    v0, v1 = (out / f"v{i}-20260101-00000{i}" for i in range(2))
    mk.adapter(v0 / "checkpoint-100")
    mk.adapter(v0 / "checkpoint-200")
    mk.adapter(v1 / "checkpoint-300")
    write_sidecar(v1 / "checkpoint-300", run_id="r", recipe_hash="h", step=300, verdict="ok", suspect=True)
    removed = cli("verify", str(out), "--prune-superseded", "--yes")
    _no_traceback(removed)
    assert "no superseded attempt directory" in removed.stdout, removed.stdout
    assert (v0 / "checkpoint-200").is_dir() and (v1 / "checkpoint-300").is_dir()


def test_verify_on_a_live_run_does_not_call_a_save_its_trainer_deletes_meanwhile_bad(tmp_path):
    """`moeconsole verify DIR` while ms-swift trains with --save_total_limit: a checkpoint deleted
    while it is read (tests/checkpoints/conftest.py delete_when_read) is named as deleted, gets no
    verdict, and does not make the exit status 1."""
    import json

    from tests.checkpoints.conftest import delete_when_read, write_demo_checkpoint

    out = tmp_path / "output"
    write_demo_checkpoint(out / "checkpoint-4", 4)
    doomed = write_demo_checkpoint(out / "checkpoint-2", 2)
    thread, done = delete_when_read(doomed)
    proc = cli("verify", str(out), "--json")
    thread.join(timeout=60)
    assert done == ["deleted"], done
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads(proc.stdout)
    assert [Path(c["path"]).name for c in res["checkpoints"]] == ["checkpoint-4"]
    assert res["deleted"] == [str(doomed)] and res["ok"]


def _transformers_shard(d: Path, i: int, total: int) -> dict[str, str]:
    """One shard as transformers' ``save_pretrained`` writes it (modeling_utils.py: config.json
    first, then each shard under its final ``-0000i-of-0000Y`` name, the index after the last)."""
    import numpy as np
    from safetensors.numpy import save_file

    name = f"model-{i:05d}-of-{total:05d}.safetensors"
    tensors = {f"model.layers.{i}.mlp.down_proj.weight": np.full((4, 8), float(i), np.float32)}
    save_file(tensors, str(d / name), metadata={"format": "pt"})
    return {k: name for k in tensors}


def test_a_transformers_sharded_save_between_shards_is_in_progress_not_missing_a_shard(tmp_path):
    """A full fine-tune's checkpoint-N/ while transformers writes it: config.json, shard 1 of 2, no
    index yet. A shard takes seconds to serialize before its file appears, so the files go quiet
    between shards: that is a save in progress (exit 3), not MISSING_SHARD, and the runner's
    watcher does not report it (which would raise a critical alert) until the index is there."""
    from moeconsole.runner.checkpoints.watch import CheckpointWatcher

    out = tmp_path / "out"
    d = out / "checkpoint-10"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3_moe"}))
    weight_map = _transformers_shard(d, 1, 2)
    now = [0.0]
    watcher = CheckpointWatcher(out, settle_s=1.0, stale_s=100.0, clock=lambda: now[0])

    def settled() -> list[str]:
        got = []
        for _ in range(3):
            got += [c.path.name for c in watcher.poll()]
            now[0] += 2.0
        return got

    assert settled() == []
    proc = cli("verify", str(out))
    _no_traceback(proc)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.split()[0] == "IN_PROGRESS" and "1 of 2 shards" in proc.stdout, proc.stdout
    assert "MISSING_SHARD" not in proc.stdout
    weight_map.update(_transformers_shard(d, 2, 2))
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    assert settled() == ["checkpoint-10"]
    proc = cli("verify", str(out))
    assert proc.returncode == 0 and proc.stdout.split()[0] == "ok", proc.stdout + proc.stderr


def test_a_finished_save_whose_index_names_an_absent_shard_is_missing_shard_not_in_progress(tmp_path):
    """The index is written after every shard (transformers; mcore-bridge's finalize renames the
    shards first), and a merged save's config.json after the index: with them there, a shard the
    index names that is not on disk was lost. verify says MISSING_SHARD (exit 1), for a full
    fine-tune's checkpoint-N/ and for ms-swift's checkpoint-N-merged/ alike, never IN_PROGRESS."""
    from tests.checkpoints.conftest import merged_finished, merged_started, swift_common

    out = tmp_path / "out"
    d = out / "checkpoint-10"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3_moe"}))
    weight_map = {**_transformers_shard(d, 1, 2), **_transformers_shard(d, 2, 2)}
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (d / "model-00002-of-00002.safetensors").unlink()
    swift_common(out / "checkpoint-20", 20)
    merged = merged_started(out / "checkpoint-20-merged", 20, shards_done=2)
    merged_finished(merged, 20)
    (merged / "model-00001-of-00002.safetensors").unlink()
    proc = cli("verify", str(out))
    _no_traceback(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdicts = {ln.split()[1].rsplit("/", 1)[-1]: ln.split()[0] for ln in proc.stdout.splitlines()[:3]}
    assert verdicts == {"checkpoint-10": "MISSING_SHARD", "checkpoint-20": "MISSING_SHARD",
                        "checkpoint-20-merged": "MISSING_SHARD"}, proc.stdout
    assert "IN_PROGRESS" not in proc.stdout


def _trainer_save_up_to_the_optimizer(d: Path) -> Path:
    """An ms-swift/transformers Trainer checkpoint-N/ part-way through ``Trainer._save_checkpoint``:
    the adapter and training_args.bin (``save_model``), optimizer.pt and scheduler.pt written,
    trainer_state.json (written last) not yet."""
    import torch

    from tests.checkpoints.conftest import write_adapter
    write_adapter(d)
    torch.save({"lr": 1e-4}, d / "training_args.bin")
    torch.save({"state": {}, "param_groups": []}, d / "optimizer.pt")
    torch.save({"last_epoch": 10}, d / "scheduler.pt")
    return d


def test_a_trainer_save_before_its_trainer_state_is_in_progress_and_a_long_quiet_one_may_have_died(tmp_path):
    """While the Trainer writes the optimizer state (minutes for a full fine-tune), checkpoint-N/
    has everything but trainer_state.json: verify says IN_PROGRESS (exit 3), not INCOMPLETE "cut
    short", and the runner's watcher does not report it (a critical alert) until trainer_state.json
    is there. The same files left untouched for hours (the run was killed mid-save) say that the
    writer may have died; the watcher then verifies it after stale_s, and it is incomplete."""
    from moeconsole.runner.checkpoints.verify import verify_checkpoint
    from moeconsole.runner.checkpoints.watch import CheckpointWatcher

    out = tmp_path / "out"
    d = _trainer_save_up_to_the_optimizer(out / "checkpoint-10")
    now = [0.0]
    watcher = CheckpointWatcher(out, settle_s=1.0, stale_s=100.0, clock=lambda: now[0])

    def settled() -> list[str]:
        got = []
        for _ in range(3):
            got += [c.path.name for c in watcher.poll()]
            now[0] += 2.0
        return got

    assert settled() == []
    proc = cli("verify", str(out))
    _no_traceback(proc)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.split()[0] == "IN_PROGRESS" and "trainer_state.json not written yet" in proc.stdout
    assert "INCOMPLETE" not in proc.stdout and "may have died" not in proc.stdout, proc.stdout

    killed = _trainer_save_up_to_the_optimizer(tmp_path / "killed" / "checkpoint-20")
    hours_ago = time.time() - 3 * 3600
    for p in [killed, *killed.rglob("*")]:
        os.utime(p, (hours_ago, hours_ago))
    proc = cli("verify", str(killed.parent))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "nothing written for 3h00m: its writer may have died mid-save" in proc.stdout, proc.stdout
    v = verify_checkpoint(killed)                        # what the watcher finds after stale_s
    assert v.verdict == "incomplete" and "trainer_state.json" in v.reason, v.reason

    now[0] += 200.0                                      # the save in out/ never finished: stale
    assert settled() == ["checkpoint-10"]
    (d / "trainer_state.json").write_text(json.dumps({"global_step": 10, "log_history": []}))
    proc = cli("verify", str(out))
    assert proc.returncode == 0 and proc.stdout.split()[0] == "ok", proc.stdout + proc.stderr


def test_a_full_megatron_save_before_its_config_is_in_progress_not_missing_config(tmp_path):
    """ms-swift 4.6 ``--tuner_type full --save_safetensors true``: checkpoint-N/ gets the Megatron
    metadata and tracker, then the model through GPTBridge.save_weights (shards, renamed, the
    index), then config.json from ms-swift's save_weights wrapper. Between the index and config.json
    the save is in progress (exit 3), not MISSING_CONFIG; with config.json it is ok."""
    from tests.checkpoints.conftest import merged_finished, merged_started

    out = tmp_path / "out"
    ck = merged_started(out / "checkpoint-50", 50, shards_done=2)     # the same writer as a merged save
    merged_finished(ck, 50)
    (ck / "config.json").unlink()                                      # the moment before it is written
    proc = cli("verify", str(out))
    _no_traceback(proc)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stdout.split()[0] == "IN_PROGRESS" and "no config.json yet" in proc.stdout, proc.stdout
    assert "MISSING_CONFIG" not in proc.stdout
    (ck / "config.json").write_text(json.dumps({"model_type": "qwen3_5_moe"}))
    proc = cli("verify", str(out))
    assert proc.returncode == 0 and proc.stdout.split()[0] == "ok", proc.stdout + proc.stderr


def test_a_megatron_save_the_tracker_does_not_name_yet_is_in_progress(tmp_path):
    """Megatron writes latest_checkpointed_iteration.txt after every rank finished saving: until
    then the iteration (a Megatron save dir's iter_N/, or ms-swift's checkpoint-N/ with its own
    tracker) is being written. verify says IN_PROGRESS (exit 3) by the watcher's rule, not
    INCOMPLETE; once the tracker names it, it is verified (ok)."""
    from tests.checkpoints.conftest import write_megatron_iter

    save = tmp_path / "megatron"
    write_megatron_iter(save, 100)
    write_megatron_iter(save, 200, tracker=False, seed=1)       # the tracker still says 100
    swift = tmp_path / "swift" / "v0-20260101-000000"
    ck = swift / "checkpoint-300"
    (ck).mkdir(parents=True)
    (ck / "args.json").write_text("{}")
    write_megatron_iter(ck, 300, tracker=False, seed=2)         # ms-swift's own tracker not written yet
    for target, lines in ((save, {"iter_0000200": "IN_PROGRESS", "iter_0000100": "ok"}),
                          (swift, {"checkpoint-300": "IN_PROGRESS"})):
        proc = cli("verify", str(target))
        _no_traceback(proc)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        got = {ln.split()[1].rsplit("/", 1)[-1]: ln.split()[0] for ln in proc.stdout.splitlines()[:len(lines)]}
        assert got == lines, proc.stdout
        assert "INCOMPLETE" not in proc.stdout and "latest_checkpointed_iteration.txt" in proc.stdout, proc.stdout
    (save / "latest_checkpointed_iteration.txt").write_text("200")
    (ck / "latest_checkpointed_iteration.txt").write_text("300")
    for target in (save, swift):
        proc = cli("verify", str(target))
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_verify_a_run_whose_command_trains_through_a_trainer_calls_its_cut_first_save_incomplete(tmp_path, runs_dir):
    """`verify RUN` knows the run's saver from its recipe (`swift sft`: transformers' Trainer), so its
    first save holding only the adapter is not ok there (still being written: verify never calls a
    save whose writer may be at work cut short; the resume would refuse it); the same directory by
    path has no saver to go by and is a whole PEFT save."""
    import yaml

    from tests.checkpoints.conftest import write_adapter

    root = tmp_path / "out"
    first = write_adapter(root / "v0-20261129-190230" / "checkpoint-4", extras=False)
    run = _make_run(runs_dir, "20260102-030405-sft-cd34", root, "h", [1.0] * 4)
    (run / "recipe.yaml").write_text(yaml.safe_dump({"name": "sft", "command": ["swift", "sft", "--model", "m"],
                                                     "resume": {"arg": "--resume_from_checkpoint"}}))
    proc = cli("verify", "sft-cd34", runs_dir=runs_dir)
    assert proc.returncode == 3 and proc.stdout.startswith("IN_PROGRESS"), proc.stdout + proc.stderr
    assert "trainer_state.json not written yet" in proc.stdout and "none verified ok" in proc.stdout
    by_path = cli("verify", str(first))
    assert by_path.returncode == 0 and by_path.stdout.startswith("ok "), by_path.stdout + by_path.stderr


def test_a_plain_trainer_save_is_not_told_it_lacks_ms_swifts_args_json(tmp_path):
    """A `python train.py` of one's own on transformers' Trainer saves no args.json, and `verify`
    noted under every save "args.json is missing (ms-swift copies it into every checkpoint)". ms-swift
    copies it from the output directory it wrote it into (4.6.0 swift/trainers/mixin.py l.436-438):
    the note is for a save of such a directory only."""
    from tests.checkpoints.conftest import write_demo_checkpoint

    out = tmp_path / "out"
    for step in (10, 20):
        (write_demo_checkpoint(out / f"checkpoint-{step}", step) / "args.json").unlink()
    proc = cli("verify", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "args.json is missing" not in proc.stdout, proc.stdout
    (out / "args.json").write_text(json.dumps({"tuner_type": "lora"}))   # ms-swift's output directory
    proc = cli("verify", str(out))
    # both saves have it: said once for the two (verify's shared_notes)
    assert proc.stdout.count("args.json is missing (ms-swift copies it into every checkpoint)") == 1, proc.stdout
    assert "note (all 2 checkpoints): args.json is missing" in proc.stdout, proc.stdout


def test_verify_of_a_run_that_names_no_checkpoints_dir_says_where_its_log_saved(tmp_path, runs_dir):
    """`moeconsole run -- python hf_train.py` names no checkpoints.dir; the script saves in ./out.
    `verify RUN` said only "no checkpoints found under RUN/output" (exit 1), as if nothing was saved.
    It says why and names the command that verifies what the run's log says it saved."""
    import yaml

    from tests.checkpoints.conftest import write_demo_checkpoint

    work = tmp_path / "work"
    write_demo_checkpoint(work / "out" / "checkpoint-10", 10)
    run = runs_dir / "20260102-030405-hf_train-ab12"
    run.mkdir()
    jsonio.atomic_write_json(run / "state.json", {"v": 1, "status": "succeeded", "name": "hf_train"})
    (run / "recipe.yaml").write_text(yaml.safe_dump({
        "name": "hf_train", "command": ["python", "hf_train.py"],
        "_launch": {"recipe_dir": str(work), "cwd": str(work)}}))
    (run / "train.log").write_text("=== moeconsole: attempt 1 start 2026-01-02T03:04:05 argv=python hf_train.py\n"
                                   "[transformers] Saving model checkpoint to out/checkpoint-10\n")
    proc = cli("verify", "hf_train", runs_dir=runs_dir)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(f"`moeconsole verify {work / 'out'}`"), proc.stdout
    assert "names no checkpoints.dir" in proc.stdout
    assert cli("verify", str(work / "out")).returncode == 0
    (run / "train.log").write_text("step 1 loss 2.0\n")       # a log that names no save
    proc = cli("verify", "hf_train", runs_dir=runs_dir)
    assert "names no checkpoints.dir" in proc.stdout and "`moeconsole verify DIR`" in proc.stdout, proc.stdout


def test_verify_of_a_run_names_the_logged_saves_under_the_workdir_its_command_ran_in(tmp_path, runs_dir):
    """A recipe with `workdir: "{recipe_dir}/attempt-{attempt}"` runs its command there, not where
    `moeconsole run` was started (``runargs.workdir``, the launcher's rule); attempt 2 logs
    "Saving model checkpoint to out/checkpoint-10". `verify RUN` resolved that path against the
    launch directory, found nothing there and named no directory (`moeconsole verify DIR`); it
    names attempt 2's workdir's out/."""
    import yaml

    from tests.checkpoints.conftest import write_demo_checkpoint

    recipe_dir, launched = tmp_path / "recipes", tmp_path / "launched"
    launched.mkdir()
    write_demo_checkpoint(recipe_dir / "attempt-2" / "out" / "checkpoint-10", 10)
    run = runs_dir / "20260102-030405-hf_train-cd34"
    run.mkdir()
    jsonio.atomic_write_json(run / "state.json", {"v": 1, "status": "succeeded", "name": "hf_train", "attempt": 2})
    (run / "recipe.yaml").write_text(yaml.safe_dump({
        "name": "hf_train", "command": ["python", "hf_train.py"], "workdir": "{recipe_dir}/attempt-{attempt}",
        "_launch": {"recipe_dir": str(recipe_dir), "cwd": str(launched)}}))
    (run / "train.log").write_text("=== moeconsole: attempt 1 start 2026-01-02T03:04:05 argv=python hf_train.py\n"
                                   "step 1 loss 2.0\n"
                                   "=== moeconsole: attempt 2 start 2026-01-02T03:05:05 argv=python hf_train.py\n"
                                   "[transformers] Saving model checkpoint to out/checkpoint-10\n")
    proc = cli("verify", "hf_train", runs_dir=runs_dir)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith(f"`moeconsole verify {recipe_dir / 'attempt-2' / 'out'}`"), proc.stdout


def test_verify_a_run_whose_resumes_count_from_step_1_judges_the_save_written_last_as_its_runner_does(tmp_path, runs_dir):
    """`swift sft --add_version false --resume_only_model --ignore_data_skip`: attempt 2 resumed
    from checkpoint-16 counts from step 1 again into the same directory and rewrites checkpoint-4,
    cut before its trainer_state.json (the state beside the new weights is attempt 1's). The
    runner's keeper takes the save written last as the newest and calls this one `incomplete`;
    `verify RUN` asks the same order (`checkpoints.order.save_order`). Before, it took
    checkpoint-16 by its step as the one a resume uses, called checkpoint-4 ok and exited 0."""
    import os
    import yaml

    from tests.checkpoints.conftest import lora_tensors, write_adapter

    root = tmp_path / "out"
    past = time.time() - 600
    for step in (4, 16):     # attempt 1's whole saves, ten minutes ago
        ck = write_adapter(root / f"checkpoint-{step}")
        for name in ("training_args.bin", "optimizer.pt"):
            (ck / name).write_bytes(b"x")
        (ck / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
        for f in [*ck.iterdir(), ck]:
            os.utime(f, (past + step, past + step))
    write_adapter(root / "checkpoint-4", lora_tensors(seed=1), extras=False)   # attempt 2's rewrite, cut
    run = _make_run(runs_dir, "20260102-030405-sft-ef56", root, "h", [1.0] * 4)
    (run / "recipe.yaml").write_text(yaml.safe_dump({
        "name": "sft", "command": ["swift", "sft", "--model", "m", "--add_version", "false",
                                   "--resume_only_model", "true", "--ignore_data_skip", "true"],
        "resume": {"arg": "--resume_from_checkpoint"}}))
    proc = cli("verify", "sft-ef56", "--json", runs_dir=runs_dir)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and out["ok"] is False, proc.stdout + proc.stderr
    assert out["judged"].endswith("checkpoint-4"), out["judged"]
    verdicts = {c["path"].rsplit("/", 1)[1]: c["verdict"] for c in out["checkpoints"]}
    assert verdicts == {"checkpoint-4": "incomplete", "checkpoint-16": "ok"}, out
    text = cli("verify", "sft-ef56", runs_dir=runs_dir).stdout
    assert text.startswith("INCOMPLETE") and "checkpoint-4" in text.splitlines()[0], text


def test_prune_superseded_of_a_run_keeps_the_save_its_drift_allowing_runner_resumes_from(mk, tmp_path, runs_dir):
    """A run started with --allow-drift resumes from the newest clean save whatever recipe saved it
    (``order.run_resume_point``): v0's checkpoint-100 (saved under an older recipe); v1's checkpoint-200
    is suspect. v1 went beyond v0, but v0 holds the save the next attempt resumes from: it stays.
    (The rule had been asked without the drift allowance, kept v1's suspect save, and removed v0.)"""
    from moeconsole.runner.checkpoints.sidecar import write_sidecar
    out = tmp_path / "out"
    v0, v1 = (out / f"v{i}-20260101-00000{i}" for i in range(2))
    write_sidecar(mk.adapter(v0 / "checkpoint-100"), run_id="r", recipe_hash="oldhash", step=100, verdict="ok",
                  suspect=False)
    write_sidecar(mk.adapter(v1 / "checkpoint-200"), run_id="r", recipe_hash="newhash", step=200, verdict="ok",
                  suspect=True)
    run = _make_run(runs_dir, "20260102-030405-drift-ab12", out, "newhash", [])
    state = json.loads((run / "state.json").read_text())
    jsonio.atomic_write_json(run / "state.json", {**state, "allow_drift": True})
    removed = cli("verify", "drift-ab12", "--prune-superseded", "--yes", runs_dir=runs_dir)
    _no_traceback(removed)
    assert "no superseded attempt directory" in removed.stdout, removed.stdout
    assert (v0 / "checkpoint-100").is_dir() and (v1 / "checkpoint-200").is_dir()


def test_prune_superseded_of_a_run_keeps_the_save_restart_from_chose(mk, tmp_path, runs_dir):
    """`restart --from checkpoint-200` chose a save in v0 (state.json's ``resume_choice``, kept until
    the next attempt starts); v1 went beyond it. `verify RUN --prune-superseded --yes` keeps v0 (it
    had removed the save the next attempt was told to resume from)."""
    out = tmp_path / "out"
    v0, v1 = (out / f"v{i}-20260101-00000{i}" for i in range(2))
    mk.adapter(v0 / "checkpoint-100")
    chosen = mk.adapter(v0 / "checkpoint-200")
    mk.adapter(v1 / "checkpoint-300")
    run = _make_run(runs_dir, "20260102-030405-chose-ab12", out, "h", [])
    state = json.loads((run / "state.json").read_text())
    jsonio.atomic_write_json(run / "state.json", {**state, "resume_choice": {"path": str(chosen), "step": 200}})
    removed = cli("verify", "chose-ab12", "--prune-superseded", "--yes", runs_dir=runs_dir)
    _no_traceback(removed)
    assert "no superseded attempt directory" in removed.stdout, removed.stdout
    assert (v0 / "checkpoint-200").is_dir() and (v1 / "checkpoint-300").is_dir()


def test_a_jit_save_that_still_holds_its_sentinel_is_no_resume_point(mk, tmp_path):
    """transformers' JIT checkpoint (trainer_jit_checkpoint.py l.55-70) writes
    checkpoint-is-incomplete.txt before the save and removes it after: while it is there the save was
    cut, however whole its files look."""
    out = tmp_path / "out"
    mk.adapter(out / "checkpoint-8")
    mk.adapter(out / "checkpoint-9")
    (out / "checkpoint-9" / "checkpoint-is-incomplete.txt").write_text(
        "Checkpoint started at step 9 and in progress...")
    proc = cli("verify", str(out))
    _no_traceback(proc)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    bad = next(line for line in lines if str(out / "checkpoint-9") in line)
    assert bad.startswith("INCOMPLETE") and "checkpoint-is-incomplete.txt" in bad
    assert lines[-1] == f"2 checkpoints: 1 ok, 1 bad (1 incomplete); newest ok: {out / 'checkpoint-8'}"
    (out / "checkpoint-9" / "checkpoint-is-incomplete.txt").unlink()   # the save finished: the marker is gone
    assert cli("verify", str(out)).returncode == 0
