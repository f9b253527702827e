"""Nobody else gets in (issue 32, items 10-12): directories made 0700 whatever the umask, a runs
directory others can write refused, a planted run's command never run, a foreign index rebuilt
privately, nothing written through a symlink (crashes/, receipt --out). Real CLI, real runner,
real umask, real symlinks."""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.runner.conftest import NO_SAVES, REPO, Run, base_recipe

QUICK = ["{python}", "-c", "print(\"{'loss': '1.0', 'global_step/max_steps': '1/1'}\", flush=True)"]


def cli(*args: str, umask: int | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_")}
    e["PYTHONPATH"] = str(REPO)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], capture_output=True, text=True,
                          timeout=120, env=e, cwd=REPO, stdin=subprocess.DEVNULL,
                          preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


def recipe(tmp: Path, **over) -> Path:
    path = tmp / f"r{len(list(tmp.glob('r*.yaml')))}.yaml"
    lint = {"lint": {"ignore": ["no_checkpoint_dir", "shell_wrapper", "secret_literal", "executable_missing"]}}
    path.write_text(yaml.safe_dump(base_recipe(**{"command": QUICK, **NO_SAVES, **lint, **over})))
    return path


def mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def refused(p: subprocess.CompletedProcess, *words: str) -> str:
    lines = p.stderr.strip().splitlines()
    assert p.returncode in (1, 2) and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr[-800:]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def finished(run: Path) -> dict:
    """The run's final state, once its runner is gone too (it writes the index last)."""
    from moeconsole.runner.rundir.rundir import RunDir, TERMINAL, runner_locked
    from tests.waiting import until

    def over() -> dict | None:
        try:
            st = json.loads((run / "state.json").read_text())
        except (OSError, ValueError):
            return None
        return st if st.get("status") in TERMINAL and not runner_locked(RunDir(run)) else None
    return until(over, timeout=120, what="the run's end and its runner's exit")


@pytest.mark.parametrize("where", ["--runs-dir", "XDG_DATA_HOME"])
def test_umask_000_still_makes_every_directory_and_file_private(tmp_path, where):
    """Under umask 000 the base (and the parents it needed), each run directory, crashes/,
    exits/ and the index are owner-only; nothing the runner writes is writable by others."""
    if where == "--runs-dir":
        base, args, env = tmp_path / "a" / "b" / "runs", ["--runs-dir", str(tmp_path / "a" / "b" / "runs")], {}
    else:
        base, args, env = tmp_path / "xdg" / "moeconsole" / "runs", [], {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    p = cli("run", str(recipe(tmp_path)), "--detach", *args, umask=0, env=env)
    assert p.returncode in (0, 1) and p.stdout.strip(), p.stderr
    run = base / p.stdout.strip().splitlines()[0]
    finished(run)
    assert cli("runs", "ls", *args, umask=0, env=env).returncode == 0
    for d in [base, base.parent, run, run / "crashes", run / "exits"]:
        assert mode(d) == 0o700, (d, oct(mode(d)))
    assert mode(base / "index.sqlite") == 0o600
    for f in run.rglob("*"):
        if not f.is_symlink():
            assert not mode(f) & 0o022, (f, oct(mode(f)))


def test_a_runs_directory_others_can_write_is_refused(tmp_path):
    base = tmp_path / "runs"
    base.mkdir()
    os.chmod(base, 0o777)
    for args in (["run", str(recipe(tmp_path)), "--detach"], ["runs", "ls"]):
        line = refused(cli(*args, "--runs-dir", str(base)), "writable by other users", "0777")
        assert str(base) in line
    assert list(base.iterdir()) == []


def test_a_run_directory_others_can_write_is_never_supervised(tmp_path, runs_dir):
    """A run whose directory became writable by others (its recipe could have been swapped):
    supervise and restart refuse it and its command does not run."""
    marker = tmp_path / "ran"
    p = cli("run", str(recipe(tmp_path, command=["{python}", "-c", f"open({str(marker)!r}, 'a').write('x')"])),
            "--detach", "--runs-dir", str(runs_dir))
    run = runs_dir / p.stdout.strip().splitlines()[0]
    finished(run)
    marker.unlink(missing_ok=True)
    os.chmod(run, 0o777)
    for action in ("supervise", "restart"):
        refused(cli(action, run.name, "--runs-dir", str(runs_dir)), "writable by other users", "refusing")
    assert not marker.exists()


def test_a_planted_run_is_never_run_by_root(tmp_path, runs_dir):
    """Another user's run directory in root's base (planted while the base was open): root's
    supervise refuses it; its command never runs as root."""
    if os.geteuid() != 0:
        pytest.skip("needs root to own files as another user")
    marker = tmp_path / "pwned"
    planted = runs_dir / "20260101-000000-planted-abcd"
    (planted / "crashes").mkdir(parents=True)
    (planted / "exits").mkdir()
    cmd = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('root')"]
    (planted / "recipe.yaml").write_text(yaml.safe_dump({"name": "planted", "command": cmd, **NO_SAVES}))
    (planted / "state.json").write_text(json.dumps({"v": 1, "status": "failed", "name": "planted", "attempt": 1}))
    for p in [planted, *planted.rglob("*")]:
        os.chown(p, 65534, 65534)
    os.chmod(planted, 0o700)
    for action in ("supervise", "restart"):
        refused(cli(action, planted.name, "--runs-dir", str(runs_dir)), "uid 65534", "refusing")
    assert not marker.exists()


def test_another_users_base_is_read_but_never_written(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to own files as another user")
    base = tmp_path / "theirs"
    base.mkdir(mode=0o755)
    os.chown(base, 65534, 65534)
    refused(cli("run", str(recipe(tmp_path)), "--detach", "--runs-dir", str(base)), "owned by uid 65534")
    assert cli("runs", "ls", "--runs-dir", str(base)).returncode == 0
    assert list(base.iterdir()) == []  # no index either


@pytest.mark.parametrize("planted", ["0666", "foreign-owner", "foreign-wal"])
def test_a_planted_index_is_rebuilt_privately(tmp_path, runs_dir, planted):
    """index.sqlite pre-created by someone else (0666, or owned by another user, or a -wal beside
    ours): ``runs ls`` never answers from it; the index is rebuilt 0600 from the run directories."""
    if planted != "0666" and os.geteuid() != 0:
        pytest.skip("needs root to own files as another user")
    p = cli("run", str(recipe(tmp_path)), "--detach", "--runs-dir", str(runs_dir))
    run = runs_dir / p.stdout.strip().splitlines()[0]
    finished(run)
    index = runs_dir / "index.sqlite"
    if planted == "foreign-wal":
        # A valid write-ahead log of our own index holding one more row, planted beside it by
        # someone else: SQLite would replay it into every reader's view.
        import shutil
        assert cli("runs", "ls", "--runs-dir", str(runs_dir)).returncode == 0
        evil = tmp_path / "evil.sqlite"
        shutil.copy(index, evil)
        conn = sqlite3.connect(evil)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("INSERT INTO runs (id, name, status, path, started_at) "
                     "VALUES ('20990101-000000-evil-ffff', 'evil', 'succeeded', '/', 1)")
        conn.commit()
        shutil.copy(tmp_path / "evil.sqlite-wal", runs_dir / "index.sqlite-wal")
        conn.close()
        os.chown(runs_dir / "index.sqlite-wal", 65534, 65534)
    else:
        for f in runs_dir.glob("index.sqlite*"):
            f.unlink()
        conn = sqlite3.connect(index)
        conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, name TEXT, status TEXT, path TEXT, started_at REAL)")
        conn.execute("INSERT INTO runs VALUES ('20990101-000000-evil-ffff', 'evil', 'succeeded', '/', 1)")
        conn.commit()
        conn.close()
        if planted == "0666":
            os.chmod(index, 0o666)
        else:
            os.chown(index, 65534, 65534)
            os.chmod(index, 0o644)
    ls = cli("runs", "ls", "--runs-dir", str(runs_dir), "--json")
    assert ls.returncode == 0, ls.stderr
    assert "evil" not in ls.stdout and run.name in ls.stdout
    st = os.lstat(index)
    assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o600
    for side in runs_dir.glob("index.sqlite-*"):  # no side file of someone else's is kept either
        assert os.lstat(side).st_uid == os.geteuid(), side


def test_a_crashes_directory_made_a_symlink_is_never_written_through(tmp_path, runs_dir):
    """The run's crashes/ replaced by a link to an outside directory while the training runs:
    the crash report is refused (runner.log says so), the outside directory stays empty, and
    the run still ends FAILED with its crash event."""
    go = tmp_path / "go"
    crash = ["{python}", "-c", f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
                               "raise SystemExit(3)\n"]
    p = cli("run", str(recipe(tmp_path, command=crash, restart={"max_restarts": 0})), "--detach",
            "--runs-dir", str(runs_dir))
    run = Run(runs_dir / p.stdout.strip().splitlines()[0])
    run.wait(lambda s: s.get("status") == "running", what="running")
    outside = tmp_path / "outside"
    outside.mkdir()
    (run.path / "crashes").rmdir()
    (run.path / "crashes").symlink_to(outside)
    go.touch()
    end = finished(run.path)
    assert end["status"] == "failed"
    assert list(outside.iterdir()) == []
    assert run.events("crash")
    assert "refused to write" in (run.path / "runner.log").read_text()


def test_receipt_out_replaces_planted_symlinks_and_never_writes_through_them(tmp_path, runs_dir):
    p = cli("run", str(recipe(tmp_path)), "--detach", "--runs-dir", str(runs_dir))
    run = runs_dir / p.stdout.strip().splitlines()[0]
    finished(run)
    out = tmp_path / "out"
    out.mkdir()
    victims = {}
    for name in ("receipt.md", "receipt.json", "loss.png"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious\n")
        (out / name).symlink_to(victim)
        victims[name] = victim
    r = cli("runs", "receipt", run.name, "--out", str(out), "--runs-dir", str(runs_dir))
    assert r.returncode == 0, r.stderr
    for name, victim in victims.items():
        assert victim.read_text() == "precious\n"
    for name in ("receipt.md", "receipt.json"):
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0
    assert run.name in (out / "receipt.md").read_text()


def test_runs_ls_answers_display_names_from_the_index(tmp_path, runs_dir):
    """Runs that share a name are told apart by their recipe values; once ``runs ls`` has read
    them (rebuilding the index on the way), the index answers them: a recipe.yaml changed
    behind its back with the same mtime is not read again."""
    ids = []
    for lr in ("1", "2"):
        p = cli("run", str(recipe(tmp_path, command=[*QUICK, "--lr", lr])), "--detach", "--runs-dir", str(runs_dir))
        ids.append(runs_dir / p.stdout.strip().splitlines()[0])
        finished(ids[-1])
    for f in runs_dir.glob("index.sqlite*"):
        f.unlink()
    first = json.loads(cli("runs", "ls", "--json", "--runs-dir", str(runs_dir)).stdout)["runs"]
    names = sorted(r["display_name"] for r in first)
    assert any("--lr=1" in n for n in names) and any("--lr=2" in n for n in names), names
    assert (runs_dir / "index.sqlite").exists()
    rec = ids[0] / "recipe.yaml"
    st = rec.stat()
    text = rec.read_text()
    assert "--lr, '1'" in text, text[:300]
    rec.write_text(text.replace("--lr, '1'", "--lr, '9'"))
    os.utime(rec, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = json.loads(cli("runs", "ls", "--json", "--runs-dir", str(runs_dir)).stdout)["runs"]
    assert sorted(r["display_name"] for r in again) == names
    assert all("recipe_values" not in r for r in again)


def test_the_service_never_takes_up_a_run_others_could_have_changed(tmp_path, runs_dir):
    """``moeconsole service RECIPE`` takes up the live run of its recipe (name and hash): one whose
    directory others can write is refused in one line, and its command is not run."""
    marker = tmp_path / "ran"
    rec = recipe(tmp_path, command=["{python}", "-c", f"open({str(marker)!r}, 'a').write('x')"])
    p = cli("run", str(rec), "--detach", "--runs-dir", str(runs_dir))
    run = runs_dir / p.stdout.strip().splitlines()[0]
    finished(run)
    marker.unlink(missing_ok=True)
    state = json.loads((run / "state.json").read_text())
    (run / "state.json").write_text(json.dumps({**state, "status": "running", "ended_at": None}))
    os.chmod(run, 0o777)
    refused(cli("service", str(rec), "--runs-dir", str(runs_dir)), "writable by other users", "refusing")
    assert not marker.exists()


def test_lint_fix_replaces_a_planted_bak_link_and_never_writes_through_it(tmp_path):
    """``lint --fix`` keeps the old recipe as ``RECIPE.bak``: a link planted there is replaced,
    its target untouched; the recipe keeps its mode."""
    from tests.recipe.test_recipe_edit import FLOW
    p = tmp_path / "r.yaml"
    p.write_text("# my recipe\n" + FLOW.split("\n", 1)[1].replace("env: {A: \"1\"}\n", "")
                 + "checkpoints: {dir: /ckpt/out}\nswift: {version: \"4.6.0\"}\n"
                 + "lint: {ignore: [executable_missing]}\n")
    os.chmod(p, 0o640)
    before = p.read_text()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "r.yaml.bak").symlink_to(victim)
    done = cli("lint", "--fix", str(p))
    assert "fixed:" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "r.yaml.bak").is_symlink() and (tmp_path / "r.yaml.bak").read_text() == before
    assert mode(p) == 0o640 and p.read_text() != before
