"""Secrets on every path out of a run: planted in the environment, the command line and the
training's own output (as metric fields), then searched for in every file of the run directory
and every output of every command about the run. ``train.log`` is the training's raw output and
``secrets.json`` (0600) holds the literal secrets for the runner: those two keep them."""
from __future__ import annotations

import json
import os
import sqlite3
import stat

from tests.runner.conftest import NO_SAVES  # saves nothing, judged without a checkpoint directory: a clean exit is a success

HF = "hf_" + "Zq7" * 12
HUB = "plain-hub-secret-99"
URL_PW = "urlpass1234x"
ENV_SECRET = "w4ndb-secret-value-1234"
ARGV_PW = "argvpass5678y"
PLANTED = (HF, HUB, URL_PW, ENV_SECRET, ARGV_PW)

TRAINER = f"""
import json, os, sys

seen = {{"argv": sys.argv[1:], "env": os.environ.get("WANDB_API_KEY")}}
json.dump(seen, open(os.environ["MOECONSOLE_RUN_DIR"] + "/../seen.json", "w"))
for s in range(1, 6):
    print({{"loss": 1.0 + s / 10, "grad_norm": 0.5, "learning_rate": 1e-05, "token_acc": 0.71, "epoch": 0.1,
           "global_step/max_steps": f"{{s}}/5", "elapsed_time": "1m 2s"}}, flush=True)
print({{"loss": 0.9, "global_step/max_steps": "6/9", "hub_token": "{HUB}", "note": "pushed with {HF}",
       "data_url": "https://me:{URL_PW}@data.example/x", "run_note": os.environ["WANDB_API_KEY"]}}, flush=True)
print("token_acc: 0.71 at the end; login with " + os.environ["WANDB_API_KEY"], flush=True)
raise SystemExit(1)
"""


def _grep(text: str, where: str) -> None:
    leaked = [p for p in PLANTED if p in text]
    assert not leaked, f"{where} shows {leaked}"


def test_planted_secrets_reach_no_file_and_no_output_of_a_run(harness, tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    out = harness.cli("run", str(harness.recipe(
        command=["{python}", str(script), "--dataset", f"https://user:{ARGV_PW}@data.example/d"],
        env={"WANDB_API_KEY": ENV_SECRET, "OMP_NUM_THREADS": "1"}, restart={"max_restarts": 0},
        lint={"ignore": ["secret_literal"]})), "--detach")
    assert out.returncode in (0, 1), out.stderr
    _grep(out.stdout + out.stderr, "run --detach")
    from tests.runner.conftest import Run
    run = Run(harness.runs_dir / out.stdout.strip().splitlines()[0])
    run.wait_status("failed", timeout=90)
    seen = json.loads((harness.runs_dir / "seen.json").read_text())
    assert seen["env"] == ENV_SECRET and f"https://user:{ARGV_PW}@data.example/d" in seen["argv"], \
        "the training gets the real values"

    # every file of the run directory but the two that must hold them
    for path in sorted(run.path.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name not in ("train.log", "secrets.json", "control.sock"):
            _grep(path.read_bytes().decode("utf-8", "replace"), str(path.relative_to(run.path)))
    assert stat.S_IMODE((run.path / "secrets.json").stat().st_mode) == 0o600

    # every output of every command about the run
    receipt_dir = tmp_path / "receipt"
    for args in (["--json", run.id, "--once", "--no-gpu"], ["runs", "show", run.id], ["runs", "show", run.id, "--json"],
                 ["runs", "ls"], ["runs", "ls", "--json"], ["runs", "receipt", run.id, "--json"],
                 ["runs", "receipt", run.id, "--md"], ["runs", "receipt", run.id, "--out", str(receipt_dir)],
                 ["parse", str(run.path / "train.log"), "--json"], ["parse", str(run.path / "train.log")],
                 ["verify", run.id, "--json"], ["prometheus", "serve", run.id, "--textfile", str(tmp_path / "m.prom")]):
        res = harness.cli(*args)
        assert "Traceback" not in res.stderr, (args, res.stderr[-1500:])
        _grep(res.stdout + res.stderr, " ".join(args[:2]))
    for path in list(receipt_dir.rglob("*")) + [tmp_path / "m.prom"]:
        if path.is_file() and path.suffix != ".png":
            _grep(path.read_text(errors="replace"), str(path))
    with sqlite3.connect(harness.runs_dir / "index.sqlite") as conn:
        _grep(json.dumps([list(r) for r in conn.execute("SELECT * FROM runs")]), "index.sqlite")

    # what is not a secret stays readable: the metric token_acc and its log line
    snap = json.loads(harness.cli("--json", run.id, "--once", "--no-gpu").stdout)
    metrics = [json.loads(line) for line in (run.path / "metrics.jsonl").read_text().splitlines()]
    assert metrics[0]["extra"]["token_acc"] == 0.71 and metrics[-1]["extra"]["hub_token"] == "***"
    assert any("token_acc: 0.71" in line for line in snap["log_tail"])
    crash = run.crash(1)
    assert any("token_acc: 0.71" in line for line in crash["log_tail"])
    assert any("'token_acc': 0.71" in line for line in crash["log_tail"])


def test_the_run_index_is_private(harness):
    run = harness.start(harness.recipe(command=["sleep", "0.3"], **NO_SAVES))
    run.wait_status("succeeded")
    assert harness.cli("runs", "ls").returncode == 0
    index = harness.runs_dir / "index.sqlite"
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    for extra in ("index.sqlite-wal", "index.sqlite-shm"):
        p = harness.runs_dir / extra
        if p.exists():
            assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0, extra
    os.chmod(index, 0o644)  # an index from an older version is made private on the next open
    assert harness.cli("runs", "ls").returncode == 0
    assert stat.S_IMODE(index.stat().st_mode) == 0o600


def test_one_secret_name_rule_for_recipe_and_redactor(harness, tmp_path):
    """AUTHOR and PAD_TOKEN are not secrets (the recipe keeps them, the log shows them);
    HF_TOKEN is, for recipe.yaml and for the redactor alike."""
    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.rundir.secrets import Redactor, is_secret_name
    env = {"AUTHOR": "ada-lovelace", "PAD_TOKEN": "<|pad|>", "HF_TOKEN": "tok-value-123", "AUTH_URL": "http://x/a"}
    r = recipes.for_run_dir(recipes.validate({"command": ["x"], "env": env}))
    assert r["env"]["AUTHOR"] == "ada-lovelace" and r["env"]["PAD_TOKEN"] == "<|pad|>"
    assert r["env"]["HF_TOKEN"] == recipes.REDACTED
    assert (recipes.secrets_doc(recipes.validate({"command": ["x"], "env": env})) or {})["env"] == {"HF_TOKEN": "tok-value-123"}
    red = Redactor.from_env(env)
    assert red.values == ["tok-value-123"]
    line = "AUTHOR=ada-lovelace PAD_TOKEN=<|pad|> token_acc: 0.71 HF_TOKEN=tok-value-123 AUTH_URL=http://x/a"
    assert red.redact(line) == "AUTHOR=ada-lovelace PAD_TOKEN=<|pad|> token_acc: 0.71 HF_TOKEN=*** AUTH_URL=http://x/a"
    assert [n for n in ("AUTHOR", "PAD_TOKEN", "token_acc", "AUTH_URL") if is_secret_name(n)] == []
    # the hash ignores a rotated token but not an author
    base = recipes.validate({"command": ["x"], "env": dict(env)})
    rotated = recipes.validate({"command": ["x"], "env": {**env, "HF_TOKEN": "other"}})
    other_author = recipes.validate({"command": ["x"], "env": {**env, "AUTHOR": "grace"}})
    assert recipes.recipe_hash(base) == recipes.recipe_hash(rotated) != recipes.recipe_hash(other_author)
