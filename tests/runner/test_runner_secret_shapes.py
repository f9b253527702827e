"""Secrets in more forms (issue 32, item 13): found by value shape as well as by name, and masked
on every sink. A table of the shapes through the one redaction pass, then each shape planted in a
real run (environment, argv, the training's own output and metric fields, a crash) and searched
for in every file of the run directory and every output of every command about it."""
from __future__ import annotations

import json
import sqlite3

import pytest

from moeconsole.runner.rundir.secrets import Redactor, is_secret_name, redact_argv, redact_cmdline

BEARER_ENV = "envbearerQ9Q9Q9Q9"
HDR_ENV = "hdrbearerZ8Z8Z8Z8"
URL_SLASH = "pa/ss9876slash"
QUERY_PW = "qpw55667788"
ARGV_BEARER = "argvbearer77aa"
APIKEY_HDR = "hdrkey3344zz"
P_PW = "shortp4ss99"
TOKEN_EQ = "tokeq12345zz"
SPACE_PW = "spacepw000111"
AIZA = "AIza" + "SyB" + "x1Y2" * 8
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
METRIC_BEARER = "metricbear88xx"
LOG_PW = "logpw24680zz"
PLANTED = (BEARER_ENV, HDR_ENV, URL_SLASH, QUERY_PW, ARGV_BEARER, APIKEY_HDR, P_PW, TOKEN_EQ, SPACE_PW, AIZA,
           PEM_BODY, METRIC_BEARER, LOG_PW)

SHAPES = [
    (f"Authorization: Bearer {ARGV_BEARER}", ARGV_BEARER),
    (f"curl -H 'authorization: bearer {ARGV_BEARER}' https://x", ARGV_BEARER),
    (f"fetch https://me:{URL_SLASH}@data.example/x", URL_SLASH),
    (f"GET https://h/d?user=a&password={QUERY_PW}&b=1", QUERY_PW),
    (f"https://h/d?api_key={QUERY_PW}", QUERY_PW),
    (f"launching with --password {SPACE_PW} --lr 1e-4", SPACE_PW),
    (f"mysql -p {P_PW} db", P_PW),
    (f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----", PEM_BODY),
    (f"-----BEGIN RSA PRIVATE KEY-----{PEM_BODY}", PEM_BODY),
    (PEM_BODY, PEM_BODY),
    (f"maps key {AIZA} loaded", AIZA),
    (f'{{"note": "Authorization: Bearer {METRIC_BEARER}"}}', METRIC_BEARER),
    (f"token={TOKEN_EQ}", TOKEN_EQ),
    (f"X-Api-Key: {APIKEY_HDR}", APIKEY_HDR),
    (f"Token {TOKEN_EQ}", TOKEN_EQ),
]
KEPT = ["token_acc: 0.71 loss 1.2", "the token embedding", "Using basic tokenizer", "Basic block", "AUTHOR: me",
        "--max_steps 100 --lr 1e-4", "sha256 " + "ab12" * 16, "https://example.com/x?step=5&page=2",
        "pad_token=<pad>", "global_step/max_steps 1/100", "+ mkdir -p /data/out/run-1"]


@pytest.mark.parametrize("text, secret", SHAPES)
def test_each_secret_shape_is_masked(text, secret):
    out = Redactor().redact(text)
    assert secret not in out and "***" in out, out


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_and_metric_names_stay(text):
    assert Redactor().redact(text) == text


@pytest.mark.parametrize("argv, secret", [
    (["curl", "--header", f"Authorization: Bearer {ARGV_BEARER}"], ARGV_BEARER),
    (["curl", f"--header=X-Api-Key: {APIKEY_HDR}"], APIKEY_HDR),
    (["mysql", "-p", P_PW], P_PW),
    (["train", f"token={TOKEN_EQ}"], TOKEN_EQ),
    (["train", "--password", SPACE_PW], SPACE_PW),
    (["train", "--data", f"https://h/d?password={QUERY_PW}"], QUERY_PW),
    (["train", "--data", f"https://me:{URL_SLASH}@h/d"], URL_SLASH),
])
def test_a_training_argv_shown_is_masked(argv, secret):
    """The one argv pass (process lists of gpus/zombies use redact_cmdline)."""
    assert secret not in " ".join(redact_argv(argv)) and secret not in redact_cmdline(argv)
    assert argv[0] in redact_cmdline(argv)


def test_authorization_is_a_secret_name_and_token_acc_is_not():
    assert is_secret_name("AUTHORIZATION") and is_secret_name("Proxy-Authorization")
    assert not is_secret_name("token_acc") and not is_secret_name("AUTHOR")


TRAINER = f"""
import json, os, sys
print("{{'loss': '1.0', 'token_acc': '0.71', 'global_step/max_steps': '1/9'}}", flush=True)
print({{"loss": 0.9, "token_acc": 0.7, "global_step/max_steps": "2/9",
       "note": "Authorization: Bearer {METRIC_BEARER}", "maps": "{AIZA}"}}, flush=True)
print("relaunch: train.py --password {LOG_PW} --lr 1e-4", flush=True)
print("-----BEGIN PRIVATE KEY-----", flush=True)
print("{PEM_BODY}", flush=True)
print("-----END PRIVATE KEY-----", flush=True)
print("auth " + os.environ["AUTHORIZATION"] + " and " + os.environ["UPSTREAM_HDR"], flush=True)
print("data " + os.environ["DATA_URL"], flush=True)
print("Traceback (most recent call last):\\nRuntimeError: upload failed for " + " ".join(sys.argv[1:]), flush=True)
raise SystemExit(1)
"""


def _grep(text: str, where: str) -> None:
    leaked = [p for p in PLANTED if p in text]
    assert not leaked, f"{where} shows {leaked}"


def test_new_secret_shapes_reach_no_file_and_no_output_of_a_run(harness, tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    argv = ["{python}", str(script), "--header", f"Authorization: Bearer {ARGV_BEARER}",
            f"--header=X-Api-Key: {APIKEY_HDR}", "-p", P_PW, f"token={TOKEN_EQ}", "--password", SPACE_PW,
            "--dataset", f"https://h/d?user=a&password={QUERY_PW}"]
    out = harness.cli("run", str(harness.recipe(
        command=argv, restart={"max_restarts": 0}, checkpoints={"dir": None}, resume={"arg": None},
        env={"AUTHORIZATION": f"Bearer {BEARER_ENV}", "UPSTREAM_HDR": f"Bearer {HDR_ENV}",
             "DATA_URL": f"https://me:{URL_SLASH}@data.example/x", "OMP_NUM_THREADS": "1"},
        lint={"ignore": ["secret_literal", "no_checkpoint_dir", "secret_in_argv"]})), "--detach")
    assert out.returncode in (0, 1) and out.stdout.strip(), out.stderr
    _grep(out.stdout + out.stderr, "run --detach")
    from tests.runner.conftest import Run
    run = Run(harness.runs_dir / out.stdout.strip().splitlines()[0])
    run.wait_status("failed", timeout=90)
    log = (run.path / "train.log").read_text()
    assert ARGV_BEARER in log and BEARER_ENV in log and METRIC_BEARER in log, "the training got the real values"
    assert run.crash(1) and run.events("crash")
    assert any(m.get("extra", {}).get("token_acc") == 0.7 for m in run.metrics()), run.metrics()

    for path in sorted(run.path.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name not in ("train.log", "secrets.json", "control.sock"):
            _grep(path.read_bytes().decode("utf-8", "replace"), str(path.relative_to(run.path)))
    receipt_dir = tmp_path / "receipt"
    for args in (["--json", run.id, "--once", "--no-gpu"], ["runs", "show", run.id], ["runs", "show", run.id, "--json"],
                 ["runs", "ls", "--json"], ["runs", "receipt", run.id, "--json"], ["runs", "receipt", run.id, "--md"],
                 ["runs", "receipt", run.id, "--out", str(receipt_dir)],
                 ["parse", str(run.path / "train.log"), "--json"], ["parse", str(run.path / "train.log")]):
        res = harness.cli(*args)
        assert "Traceback" not in res.stderr, (args, res.stderr[-1500:])
        _grep(res.stdout + res.stderr, " ".join(args[:2]))
    for path in receipt_dir.rglob("*"):
        if path.is_file() and path.suffix != ".png":
            _grep(path.read_text(errors="replace"), str(path))
    with sqlite3.connect(harness.runs_dir / "index.sqlite") as conn:
        _grep(json.dumps([list(r) for r in conn.execute("SELECT * FROM runs")]), "index.sqlite")
