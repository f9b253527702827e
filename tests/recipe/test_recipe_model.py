"""Every recipe section is a declarative model: a wrong type, an unknown key, a NaN, a number out
of range and a value outside a choice are each refused by ``moeconsole lint`` and ``moeconsole
run`` as one line on stderr (file, key path, the problem and what is allowed), exit 2, nothing
started. The messages are asserted as a user reads them."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from moeconsole.runner.core import bounds, schema
from moeconsole.runner.recipes import model, recipe as recipes

REPO = Path(__file__).resolve().parents[2]
BASE = {"name": "t", "command": ["{python}", "-c", "print(1)"]}
NAN = float("nan")

# (section, value given, the line's place, what the line says) for every section of fixed keys
CASES = [
    # wrong type
    ("cooldown", {"floor_s": "soon"}, "cooldown.floor_s", "expected a number, got str 'soon'"),
    ("kill", {"grace_s": [1]}, "kill.grace_s", "expected a number, got list [1]"),
    ("heartbeat", {"startup_s": True}, "heartbeat.startup_s", "expected a number or null, got True"),
    ("checkpoints", {"verify": "yes"}, "checkpoints.verify", "expected true/false, got str 'yes'"),
    ("checkpoints", {"pause_after_bad_saves": 1.5}, "checkpoints.pause_after_bad_saves", "whole number"),
    ("resume", {"args": "--resume"}, "resume.args", "expected a list or null, got str '--resume'"),
    ("swift", {"pins": ["a"]}, "swift.pins", "expected a mapping or null, got list ['a']"),
    ("markers", {"init_done": 3}, "markers.init_done", "expected a string or null, got int 3"),
    ("gpus", {"devices": "0,1"}, "gpus.devices", "expected a list or null, got str '0,1'"),
    ("preflight", {"port": "http"}, "preflight.port", "expected a whole number or null, got str 'http'"),
    ("lint", {"ignore": "all"}, "lint.ignore", "expected a list, got str 'all'"),
    ("restart", {"max_restarts": "many"}, "restart.max_restarts", "expected a whole number, got str 'many'"),
    ("alerts", {"grad_warn_x": "big"}, "alerts.grad_warn_x", "expected a number, got str 'big'"),
    ("memory", {"window": "wide"}, "memory.window", "expected a whole number, got str 'wide'"),
    ("metrics", {"port": "x"}, "metrics.port", "expected a whole number or null, got str 'x'"),
    ("notify", {"command": "page-me --now"}, "notify.command", "a list of arguments (an argv, never a shell string)"),
    ("sync", {"full": "yes"}, "sync.full", "expected true/false, got str 'yes'"),
    ("slurm", {"agents": 1}, "slurm.agents", "expected true/false, got int 1"),
    ("cooldown", "fast", "cooldown", "expected a mapping, got str 'fast'"),
    # unknown key, with a near miss named
    ("cooldown", {"floor": 1}, "cooldown.floor", "unknown key (did you mean floor_s?)"),
    ("kill", {"grace": 3}, "kill.grace", "unknown key (did you mean grace_s?)"),
    ("heartbeat", {"timeout": 3}, "heartbeat.timeout", "unknown key (did you mean timeout_s?)"),
    ("checkpoints", {"verfy": True}, "checkpoints.verfy", "unknown key (did you mean verify?)"),
    ("resume", {"drfit": "warn"}, "resume.drfit", "unknown key (did you mean drift?)"),
    ("swift", {"verison": "4.6"}, "swift.verison", "unknown key (did you mean version?)"),
    ("markers", {"init": "x"}, "markers.init", "unknown key (did you mean init_done?)"),
    ("gpus", {"device": [0]}, "gpus.device", "unknown key (did you mean devices?)"),
    ("preflight", {"on_bsy": "wait"}, "preflight.on_bsy", "unknown key (did you mean on_busy?)"),
    ("lint", {"ignores": []}, "lint.ignores", "unknown key (did you mean ignore?)"),
    ("restart", {"max_restart": 3}, "restart.max_restart", "unknown key (did you mean max_restarts?)"),
    ("alerts", {"grad_warn": 5}, "alerts.grad_warn", "unknown key (did you mean grad_warn_x or"),
    ("memory", {"horizon": 5}, "memory.horizon", "unknown key (did you mean horizon_steps?)"),
    ("metrics", {"prot": 1}, "metrics.prot", "unknown key (did you mean port?)"),
    ("notify", {"webhok": "http://x"}, "notify.webhok", "unknown key (did you mean webhook?)"),
    ("sync", {"dst": "/x"}, "sync.dst", "unknown key (did you mean dest?)"),
    ("slurm", {"node": 2}, "slurm.node", "unknown key (did you mean nodes?)"),
    # NaN: never a number the runner computes with
    ("cooldown", {"ceiling_s": NAN}, "cooldown.ceiling_s", "must be a finite number of seconds >= 0 and <= 2592000 (30 days), got nan"),
    ("kill", {"grace_s": NAN}, "kill.grace_s", "must be a finite number of seconds >= 0 and <= 3600 (1 h), got nan"),
    ("heartbeat", {"timeout_s": NAN}, "heartbeat.timeout_s", "> 0 and <= 2592000 (30 days), got nan"),
    ("checkpoints", {"settle_s": NAN}, "checkpoints.settle_s", "finite number of seconds"),
    ("gpus", {"memory_capacity_gib": NAN}, "gpus.memory_capacity_gib", "must be a finite number (GiB) > 0 and <= 1048576, got nan"),
    ("restart", {"reset_after_s": NAN}, "restart.reset_after_s", "finite number of seconds"),
    ("alerts", {"loss_spike_x": NAN}, "alerts.loss_spike_x", "must be a finite number (threshold) >= 0"),
    ("memory", {"critical_s": NAN}, "memory.critical_s", "finite number of seconds"),
    ("metrics", {"interval_s": NAN}, "metrics.interval_s", "finite number of seconds > 0"),
    ("notify", {"min_interval_s": NAN}, "notify.min_interval_s", "finite number of seconds"),
    ("sync", {"retry_s": NAN}, "sync.retry_s", "finite number of seconds"),
    ("slurm", {"poll_s": NAN}, "slurm.poll_s", "finite number of seconds >= 0.05 and <= 600 (10 min), got nan"),
    ("cost_per_hour", NAN, "cost_per_hour", "must be a finite number (money per hour) >= 0 and <= 1000000000, got nan"),
    # out of range
    ("cooldown", {"poll_s": 0}, "cooldown.poll_s", "must be a finite number of seconds > 0 and <= 3600 (1 h), got 0"),
    ("kill", {"grace_s": 1e308}, "kill.grace_s", "must be a finite number of seconds >= 0 and <= 3600 (1 h), got 1e+308"),
    ("heartbeat", {"stale_state_s": 0}, "heartbeat.stale_state_s", "> 0"),
    ("checkpoints", {"pause_after_bad_saves": -1}, "checkpoints.pause_after_bad_saves", "must be a whole number >= 0"),
    ("swift", {"validated_max_length": 0}, "swift.validated_max_length", "must be a whole number >= 1"),
    ("gpus", {"devices": [0, -1]}, "gpus.devices[1]", "must be a whole number >= 0 and <= 65536, got -1"),
    ("preflight", {"port": 70000}, "preflight.port", "must be a TCP port 1..65535, got 70000"),
    ("restart", {"max_restarts": 99999999999}, "restart.max_restarts", "must be a whole number >= 0 and <= 1000000, got 99999999999"),
    ("alerts", {"ema_alpha": 2.0}, "alerts.ema_alpha", "must be a finite number (fraction) > 0 and <= 0.999, got 2.0"),
    ("memory", {"window": 0}, "memory.window", "must be a whole number >= 1 and <= 1000000, got 0"),
    ("metrics", {"port": 70000}, "metrics.port", "must be a TCP port 0..65535, got 70000"),
    ("notify", {"timeout_s": -1}, "notify.timeout_s", ">= 0"),
    ("sync", {"keep_last": 0}, "sync.keep_last", "must be a whole number >= 1 and <= 1000000, got 0"),
    ("slurm", {"rendezvous_port": 80}, "slurm.rendezvous_port", "must be a TCP port 1024..65535, got 80"),
    ("cost_per_hour", -3, "cost_per_hour", ">= 0"),
    # a value outside its choices
    ("engine", "k8s", "engine", "must be one of local, slurm, got 'k8s'"),
    ("resume", {"drift": "sometimes"}, "resume.drift", "must be one of allow, refuse, warn, got 'sometimes'"),
    ("preflight", {"on_busy": "nuke"}, "preflight.on_busy", "must be one of kill, refuse, wait, got 'nuke'"),
    ("notify", {"on": ["crash", "always"]}, "notify.on[1]", "must be one of crash, critical, end, pause, got 'always'"),
    # rules across keys and shapes
    ("cooldown", {"floor_s": 30, "ceiling_s": 10}, "cooldown.ceiling_s", "must be >= cooldown.floor_s (10 < 30)"),
    ("restart", {"backoff_initial_s": 700}, "restart.backoff_initial_s", "must not exceed backoff_max_s (700 > 600)"),
    ("alerts", {"grad_warn_x": 500}, "alerts.grad_crit_x", "must not be below grad_warn_x"),
    ("gpus", {"devices": [0, 0]}, "gpus.devices", "must be distinct GPU indexes"),
    ("resume", {"arg": "resume_from"}, "resume.arg", "must be a flag such as --resume_from_checkpoint, got 'resume_from'"),
    ("memory", {"transients": {"ok": "1GiB", "fla": "lots"}}, "memory.transients.fla",
     "must be a size such as 266MiB or 1.5GiB, got 'lots'"),
    ("slurm", {"time": "an hour"}, "slurm.time", "must be a Slurm time (MM, HH:MM:SS, D-HH:MM:SS), got 'an hour'"),
    ("metrics", {"textfile": "/tmp/x.txt"}, "metrics.textfile", "must be a path ending in .prom"),
    ("name", "../evil", "name", "must be ASCII letters, digits and . _ + -"),
    ("command", [], "command", "empty list"),
    ("command", ["echo", True], "command[1]", "got True"),
    ("env", {"FLAG": True}, "env.FLAG", "expected a string or a number, got True"),
    ("cooldwn", {"floor_s": 1}, "cooldwn", "unknown key (did you mean cooldown?)"),
]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=REPO)


def _write(tmp_path: Path, key: str, value: object) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({**BASE, key: value}))
    return path


@pytest.mark.parametrize("key, value, place, says", CASES, ids=[f"{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_each_section_refuses_with_the_key_and_the_rule(tmp_path, key, value, place, says):
    path = _write(tmp_path, key, value)
    with pytest.raises(recipes.RecipeError) as err:
        recipes.load(path)
    assert err.value.place == place and says in err.value.problem, str(err.value)
    assert str(err.value).startswith(f"{path}: {place}: ") and "\n" not in str(err.value)


@pytest.mark.parametrize("key, value, place, says", [CASES[i] for i in (0, 20, 38, 51, 66, 68)])
def test_lint_and_run_say_it_in_one_line_and_exit_2(tmp_path, key, value, place, says):
    path = _write(tmp_path, key, value)
    runs = tmp_path / "runs"
    for args in (["lint", str(path)], ["run", str(path), "--detach", "--runs-dir", str(runs)]):
        proc = _cli(*args)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert lines[0].startswith(f"moeconsole: {path}: {place}: ") and says in lines[0], lines[0]
    assert not runs.exists() or not any(p.is_dir() for p in runs.iterdir())


def test_every_section_of_fixed_keys_is_covered():
    sections = {k for k in model.KEYS if model.section_model(k) is not None}
    covered = {c[0] for c in CASES}
    kinds = {k: {c[3].split(",")[0].split(" (")[0][:12] for c in CASES if c[0] == k} for k in sections}
    assert sections <= covered, sections - covered
    for k in sections:   # each section refuses at least a wrong type and an unknown key
        assert any(c[0] == k and "unknown key" in c[3] for c in CASES), k
        assert any(c[0] == k and ("expected" in c[3] or "a list of arguments" in c[3]) for c in CASES), (k, kinds[k])


def test_the_ranges_are_bounds_ranges_and_the_types_agree():
    """One range rule: every ranged number of every section carries a bounds.Range, whose
    ``integer`` agrees with the field's type (an int field never gets a seconds range)."""
    import msgspec.inspect as mi
    seen = 0
    for key in model.KEYS:
        section = model.section_model(key)
        if section is None:
            continue
        for f in mi.type_info(section).fields:
            for t in (f.type.types if isinstance(f.type, mi.UnionType) else (f.type,)):
                if isinstance(t, mi.Metadata) and "range" in (t.extra or {}):
                    rng = t.extra["range"]
                    assert isinstance(rng, bounds.Range)
                    assert rng.integer == isinstance(t.type, mi.IntType), (key, f.name)
                    seen += 1
    assert seen > 40


def test_defaults_come_from_the_models(tmp_path):
    r = recipes.load(_write(tmp_path, "description", "d"))
    assert r.cooldown == model.Cooldown(floor_s=10.0, ceiling_s=90.0, gpu_mem_tolerance_mib=1024.0, poll_s=0.5)
    assert r.kill.grace_s == 60.0 and r.heartbeat.startup_s is None
    assert r.preflight == model.Preflight(on_busy="wait", port=None) and r.resume.drift == "refuse"
    # every section is its model, defaults filled, the ones another module owns too
    assert r.restart.max_restarts == 10 and r.sync.enabled is False
    # recipe.yaml shows an owned section as the recipe wrote it: nothing set, nothing shown
    on_disk = recipes.for_run_dir(r)
    assert on_disk["restart"] == {} and on_disk["sync"] == {}
    assert on_disk["cooldown"] == {"floor_s": 10.0, "ceiling_s": 90.0, "gpu_mem_tolerance_mib": 1024.0, "poll_s": 0.5,
                                   "disk_free_min_mib": 1024.0, "disk_margin": 1.2}
    # a section given as null is its defaults, as before
    r = recipes.load(_write(tmp_path, "kill", None))
    assert r.kill == model.KillSettings(grace_s=60.0)


def test_old_alerts_memory_keys_still_load_and_lint_says_where_they_went(tmp_path):
    path = _write(tmp_path, "alerts", {"mem_capacity_gib": 80, "grad_warn_x": 5})
    r = recipes.load(path)
    assert r.alerts.grad_warn_x == 5
    assert recipes.for_run_dir(r)["alerts"] == {"mem_capacity_gib": 80, "grad_warn_x": 5}
    proc = _cli("lint", str(path))
    assert "alerts.mem_capacity_gib is no longer read" in proc.stdout + proc.stderr


@pytest.mark.parametrize("sets, says", [
    (["cooldown.poll_s=.nan"], "--set cooldown.poll_s=.nan: must be a finite number of seconds > 0"),
    (["preflight.on_busy=nuke"], "--set preflight.on_busy=nuke: must be one of kill, refuse, wait, got 'nuke'"),
    (["slurm.nodez=2"], "--set slurm.nodez=2: unknown key 'slurm.nodez' (did you mean slurm.nodes or"),
    (["memory.windw=3"], "--set memory.windw=3: unknown key 'memory.windw' (did you mean memory.window or"),
    (["sync.keep_last=0"], "--set sync.keep_last=0: must be a whole number >= 1"),
])
def test_set_values_meet_the_same_models(tmp_path, sets, says):
    path = _write(tmp_path, "description", "d")
    with pytest.raises(Exception) as err:
        recipes.load(path, sets)
    assert says in str(err.value), str(err.value)


def test_schema_names_a_mapping_value_and_refuses_infinity():
    from moeconsole.runner.core.memory import MemorySection
    with pytest.raises(schema.SettingsError) as err:
        schema.convert({"transients": {"a": 1, "b": [2]}}, MemorySection, "memory")
    assert str(err.value) == "memory.transients.b: expected a number or a string, got list [2]"
    with pytest.raises(schema.SettingsError, match="got inf"):
        schema.convert({"critical_s": float("inf")}, MemorySection, "memory")


def test_lint_of_a_command_written_as_one_string_says_the_list_to_write(tmp_path):
    """A newcomer's first recipe writes `command: python train.py --lr 1e-4`; lint answered
    "command: expected a list, got str '...'" without the fix. It says now that the command is an
    argv (never run through a shell) and gives the list to write, split as a shell would."""
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    recipe = tmp_path / "first.yaml"
    recipe.write_text("name: first\ncommand: python train.py --lr 1e-4 --note 'two words'\n")
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "lint", str(recipe)], cwd=repo,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr == (f"moeconsole: {recipe}: command: must be a list of arguments (an argv, never a shell "
                          f"string), got \"python train.py --lr 1e-4 --note 'two words'\"; write it as a list: "
                          f'["python", "train.py", "--lr", "1e-4", "--note", "two words"]\n'), out.stderr
