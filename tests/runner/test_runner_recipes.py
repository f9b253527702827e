"""Bad input, lint, secrets and recipe drift."""
from __future__ import annotations

import json

import pytest

from tests.runner.conftest import port_holder


def _no_runs(runs_dir) -> bool:
    return not [p for p in runs_dir.iterdir() if p.is_dir()]


@pytest.mark.parametrize("text,needle", [
    ("name: x\ncommand: [python, -c\n", "invalid YAML"),
    ("name: x\ncommand: [python]\nbogus: 1\n", "bogus: unknown key"),
    ("name: x\ncommand: python train.py\n", "command: must be a list of arguments (an argv, never a shell string)"),
    ("name: x\ncommand: [python]\nkill: {grace_s: soon}\n", "kill.grace_s: expected a number"),
    ("name: x\ncommand: [python]\nrestart: {max_restarts: many}\n", "restart.max_restarts"),
    ("- just\n- a list\n", "must be a YAML mapping"),
])
def test_bad_recipe_is_one_line_exit_2_and_nothing_launched(harness, tmp_path, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    out = harness.cli("run", str(path), "--detach")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and needle in lines[0], out.stderr
    assert "Traceback" not in out.stderr
    assert _no_runs(harness.runs_dir)


def test_missing_recipe_file(harness, tmp_path):
    out = harness.cli("run", str(tmp_path / "nope.yaml"), "--detach")
    assert out.returncode == 2 and "no such recipe file" in out.stderr


def test_a_mistyped_recipe_name_names_the_recipe_meant(harness, tmp_path):
    """`lint recipes/tiny-moe.yaml` (a newcomer's guess at the demo recipe's name) said only "no
    such recipe file": the line names the near recipe of that directory, else the ones it holds."""
    (tmp_path / "tiny-moe-cpu.yaml").write_text("name: x\ncommand: [true]\n")
    (tmp_path / "torchrun-cpu.yaml").write_text("name: y\ncommand: [true]\n")
    out = harness.cli("lint", str(tmp_path / "tiny-moe.yaml"))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert f"no such recipe file (did you mean {tmp_path / 'tiny-moe-cpu.yaml'}?)" in out.stderr, out.stderr
    out = harness.cli("run", str(tmp_path / "qwen.yaml"), "--detach")
    assert out.returncode == 2
    assert f"no such recipe file (recipes in {tmp_path}: tiny-moe-cpu.yaml, torchrun-cpu.yaml)" in out.stderr, out.stderr


def test_lint_flags_shell_string_and_swift_stub_trap(harness, tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("name: x\ncommand: ['python train.py --lr 1']\n")
    out = harness.cli("lint", str(p))
    assert out.returncode == 1 and "shell_string" in out.stdout
    p.write_text("name: m\ncommand: [megatron, sft, --save_safetensors, 'true', --no_save_optim, 'true',"
                 " --tuner_type, lora, --merge_lora, 'false']\nlint: {ignore: [executable_missing]}\n"
                 "swift: {version: '4.2.0'}\n")
    out = harness.cli("lint", str(p), "--json")
    doc = json.loads(out.stdout)
    # The record's combination on 4.2: a warning citing the record (the source saves the adapter).
    assert [x["level"] for x in doc["problems"] if x["rule"] == "swift_megatron_stub_trap"] == ["warning"]


def test_shipped_recipes_lint_clean_of_errors(harness):
    from pathlib import Path
    for recipe in sorted(Path(__file__).resolve().parents[2].joinpath("recipes").glob("*.yaml")):
        out = harness.cli("lint", str(recipe), "--json")
        doc = json.loads(out.stdout)
        errors = [p for p in doc["problems"] if p["level"] == "error" and p["rule"] not in
                  ("executable_missing", "module_missing")]
        assert not errors, (recipe.name, errors)


def test_every_shipped_recipe_that_needs_an_install_says_how(harness):
    """A shipped recipe whose command is not moeconsole's own Python (the demo) runs something a
    fresh machine lacks (`swift`, `megatron`): its `setup` says how to get it, and lint on a machine
    without it names that as the next step."""
    from pathlib import Path
    from moeconsole.runner.recipes import recipe as recipes
    checked = []
    for path in sorted(Path(__file__).resolve().parents[2].joinpath("recipes").glob("*.yaml")):
        loaded = recipes.load(path)
        if loaded.command[0] == "{python}":
            continue
        checked.append(path.name)
        assert loaded.setup.strip(), path.name
        out = harness.cli("lint", str(path), "--json")
        missing = [p for p in json.loads(out.stdout)["problems"] if p["rule"] == "executable_missing"]
        assert all(p["message"].endswith(f"set it up: {loaded.setup}") for p in missing), (path.name, missing)
    assert len(checked) >= 4, checked   # swift-tiny-cpu and the three 397B recipes


def test_secrets_stay_out_of_run_files(harness):
    secret = "hf_SUPERSECRETVALUE1234567890"
    run = harness.start(harness.recipe(env={"HF_TOKEN": secret, "OMP_NUM_THREADS": "1"},
                                       command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir",
                                                "{run_dir}/output", "--max_steps", "6", "--fault", "oom@3",
                                                "--save_steps", "2"]))
    run.wait_status("succeeded", "failed", "paused", timeout=90)
    for name in ("recipe.yaml", "state.json", "events.jsonl", "metrics.jsonl", "crashes/attempt-1.json"):
        assert secret not in (run.path / name).read_text(), name
    assert (run.path / "secrets.json").stat().st_mode & 0o777 == 0o600
    snap = harness.cli("--json", run.id, "--once", "--no-gpu", check=True)
    assert secret not in snap.stdout


def test_recipe_drift_is_refused_unless_allowed(harness, tmp_path):
    shared = tmp_path / "ckpts"
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", str(shared), "--max_steps", "8",
           "--save_steps", "4"]
    first = harness.start(harness.recipe(command=cmd, checkpoints={"dir": str(shared)}))
    first.wait_status("succeeded", timeout=90)
    changed = cmd + ["--learning_rate", "0.01"]
    second = harness.start(harness.recipe(command=changed, checkpoints={"dir": str(shared)}), refused=True)
    assert "did not start" in second.start_stderr and "drift" in second.start_stderr
    st = second.wait_status("failed", "succeeded", timeout=60)
    assert st["status"] == "failed" and "drift" in st["pause_reason"]
    # the refusal names what changed, as `runs diff` would
    assert "changed: command --learning_rate (none) -> 0.01" in st["pause_reason"], st["pause_reason"]
    assert "changed: command --learning_rate" in second.start_stderr
    assert second.events("drift")[0]["changed"] == [{"key": "command --learning_rate", "a": None, "b": "0.01",
                                                     "only": "b"}]
    assert second.events("drift") and not second.events("attempt_start")
    # The refusal leaves the evidence alone: the same drifted recipe is refused again.
    sidecar = json.loads((shared / "checkpoint-8" / "moeconsole.json").read_text())
    assert sidecar["recipe_hash"] == first.state()["recipe_hash"]
    again = harness.start(harness.recipe(command=changed, checkpoints={"dir": str(shared)}), refused=True)
    st = again.wait_status("failed", "succeeded", timeout=60)
    assert st["status"] == "failed" and "drift" in st["pause_reason"]
    third = harness.start(harness.recipe(command=changed, checkpoints={"dir": str(shared)}), "--allow-drift")
    st = third.wait_status("failed", "succeeded", timeout=90)
    assert st["status"] == "succeeded"
    assert third.events("attempt_start")[0]["resumed_from"].endswith("checkpoint-8")


def test_control_socket_works_under_a_deep_runs_directory(tmp_path):
    # sockaddr_un holds about 108 bytes; a deep runs directory must still get a socket.
    from moeconsole.runner.supervisor import control
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 5)
    deep.mkdir(parents=True)
    path = deep / "control.sock"
    assert len(str(path)) > 120
    server = control.listen(path)
    try:
        import threading
        def answer():
            import select
            select.select([server], [], [], 5)
            conn, _ = server.accept()
            req = control.read_request(conn)
            control.reply(conn, {"ok": True, "echo": req["cmd"]})
        t = threading.Thread(target=answer)
        t.start()
        assert control.send(path, {"cmd": "status"}, timeout=5) == {"ok": True, "echo": "status"}
        t.join()
        assert path.stat().st_mode & 0o777 == 0o600
    finally:
        server.close()


def test_lint_checks_executables_under_the_recipe_dir(harness, tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("name: x\ncommand: ['{recipe_dir}/missing-venv/bin/swift', sft, --dataset, d.jsonl]\n")
    out = harness.cli("lint", str(p))
    # A warning in lint (the recipe may be linted away from the machine that runs it); an error in run.
    assert out.returncode == 0 and "warning executable_missing" in out.stdout and "missing-venv" in out.stdout


def test_a_missing_executable_names_the_next_step(harness, tmp_path):
    """A newcomer's `lint recipes/swift-tiny-cpu.yaml` said only that .venv-swift/bin/swift is
    not there: the message names the recipe's `setup` (how to install it), else the two ways out;
    `run` refuses with the same words before anything is launched."""
    p = tmp_path / "r.yaml"
    p.write_text("name: x\nsetup: make swift-env in the checkout\ncommand: ['{recipe_dir}/missing-venv/bin/swift', sft, --dataset, d.jsonl]\n")
    out = harness.cli("lint", str(p))
    assert out.returncode == 0, out.stderr
    assert (f"warning executable_missing: '{tmp_path}/missing-venv/bin/swift': no such file; "
            "set it up: make swift-env in the checkout") in out.stdout, out.stdout
    run = harness.cli("run", str(p), "--detach")
    assert run.returncode == 1 and "lint error: executable_missing" in run.stderr, run.stderr
    assert "set it up: make swift-env in the checkout" in run.stderr and "nothing launched" in run.stderr
    p.write_text("name: x\ncommand: [no-such-trainer-y7, sft]\n")
    out = harness.cli("lint", str(p))
    assert ("'no-such-trainer-y7' is not an executable on PATH here; install it, or name it by its full path "
            "in command") in out.stdout, out.stdout


def test_preflight_refuse_fails_the_run_naming_the_port_holder(harness, tmp_path):
    holder, port = port_holder(tmp_path)
    try:
        run = harness.start(harness.recipe(preflight={"port": port, "on_busy": "refuse"}), refused=True)
        assert f"did not start: " in run.start_stderr and f"port {port} busy" in run.start_stderr
        st = run.wait_status("failed", "succeeded", "running", timeout=60)
        assert st["status"] == "failed" and not run.events("attempt_start")
        assert f"port {port} busy" in st["pause_reason"] and f"PID {holder.pid}" in st["pause_reason"]
        assert holder.poll() is None, "refuse never kills"
    finally:
        holder.kill()
        holder.wait()


def test_preflight_kill_ends_the_port_holder_then_launches(harness, tmp_path):
    holder, port = port_holder(tmp_path)
    try:
        run = harness.start(harness.recipe(preflight={"port": port, "on_busy": "kill"}, kill={"grace_s": 1}))
        st = run.wait_status("succeeded", "failed", timeout=90)
        assert st["status"] == "succeeded"
        assert holder.wait(timeout=5) is not None
        kills = run.events("blocker_kill")
        assert kills and kills[0]["pid"] == holder.pid and kills[0]["result"]["ok"]
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_port_still_busy_at_the_ceiling_moves_the_run_to_a_free_port(harness, tmp_path):
    holder, port = port_holder(tmp_path)
    script = tmp_path / "show_port.py"
    script.write_text("import os, sys\nprint('step: 1  loss: 1.0')\n"
                      "print('port', os.environ['MASTER_PORT'], ' '.join(sys.argv[1:]), flush=True)\n")
    try:
        run = harness.start(harness.recipe(command=["{python}", str(script), "--master_port", str(port)],
                                           env={"MASTER_PORT": str(port)}, checkpoints={"dir": None},
                                           resume={"arg": None}, cooldown={"floor_s": 0, "ceiling_s": 1.0}))
        st = run.wait_status("succeeded", "failed", timeout=60)
        assert st["status"] == "succeeded"
        change = run.events("port_change")[0]
        assert change["old"] == port and change["new"] != port
        assert [a for a in run.events("alert") if a["rule"] == "cooldown_ceiling"]
        log = (run.path / "train.log").read_text()
        new = change["new"]
        assert f"port {new} --master_port {new}" in log, log
        assert holder.poll() is None, "wait never kills"
    finally:
        holder.kill()
        holder.wait()


def test_the_recipe_log_format_reads_the_training_log(harness):
    """A training whose log no reader knows: with ``log_format`` in the recipe the runner's
    metrics.jsonl holds its steps and losses (src "user"); the declaration reaches the live
    reader through the recipe the runner loads."""
    code = ("import sys\n"
            "for i in range(1, 7):\n"
            "    print(f'#{i * 10:05d}# ce~{3.0 - i / 10:.2f} ~ rate~1e-4', flush=True)\n")
    run = harness.start(harness.recipe(command=["{python}", "-c", code], restart={"max_restarts": 0},
                                       log_format=r"^#(?P<step>\d+)# ce~(?P<loss>\S+) ~ rate~(?P<lr>\S+)"))
    run.wait_status("succeeded", "unsaved", "failed", timeout=90)
    recs = [json.loads(ln) for ln in (run.path / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["loss"], r["src"]) for r in recs] == [
        (10, 2.9, "user"), (20, 2.8, "user"), (30, 2.7, "user"), (40, 2.6, "user"), (50, 2.5, "user"),
        (60, 2.4, "user")]


def test_a_projects_own_recipes_are_listed_beside_a_shipped_near_name(tmp_path):
    """Review R22 #4: in a directory holding qwen-sft.yaml and qwen-dpo.yaml, `moeconsole run torchrun`
    said only "(did you mean .../recipes/torchrun-cpu.yaml?)": the user's own recipes went unnamed."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    for name in ("qwen-sft.yaml", "qwen-dpo.yaml"):
        (tmp_path / name).write_text("name: q\ncommand: [true]\n")
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-m", "moeconsole", "run", "torchrun", "--runs-dir", str(tmp_path / "runs")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out
    assert "(recipes in .: qwen-dpo.yaml, qwen-sft.yaml; or the shipped " in out.stderr, out.stderr
    assert "torchrun-cpu.yaml?)" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "runs").exists()
