#!/usr/bin/env bash
# The wheel as a user gets it: built from this checkout, installed with pip into a fresh venv
# outside the checkout, and used from a directory that holds the user's own runner.py, runner/,
# console.py and moeconsole.py. Checks: --help, python -m moeconsole, gpus, lint of a shipped recipe,
# `demo` without torch (one line naming the extra), then with moeconsole[demo] a short headless demo
# run to SUCCEEDED. Nothing but `moeconsole` lands at the top of site-packages.
#   scripts/wheel-check.sh [WORKDIR]     (default: a new temporary directory, removed at the end)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
if [ -n "${1:-}" ]; then work=$1; mkdir -p "$work"; else work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
say() { printf 'wheel-check: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

say "building the wheel"
"$py" -m pip wheel -q --no-deps -w "$work/dist" "$repo" >/dev/null
wheel=$(ls "$work"/dist/moeconsole-*.whl)
"$py" -m venv "$work/venv"
vpy=$work/venv/bin/python
mc=$work/venv/bin/moeconsole
say "installing $(basename "$wheel") into a fresh venv"
"$vpy" -m pip install -q "$wheel" >/dev/null

site=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for bare in runner console; do
  [ ! -e "$site/$bare" ] || fail "the wheel installed a top-level '$bare' package"
done

user=$work/user
mkdir -p "$user/runner"
for f in runner.py runner/__init__.py console.py moeconsole.py; do
  echo "raise SystemExit('the user file $f was imported')" > "$user/$f"
done
cd "$user"
runs=$work/runs

"$mc" --help | grep -q "usage: moeconsole" || fail "moeconsole --help"
"$vpy" -P -m moeconsole --help | grep -q "usage: moeconsole" || fail "python -m moeconsole --help"
"$mc" gpus >/dev/null || fail "moeconsole gpus"
recipes=$("$vpy" -P -c 'import moeconsole; print(moeconsole.recipes_dir())')
"$mc" lint "$recipes/tiny-moe-cpu.yaml" >/dev/null || fail "moeconsole lint of the shipped demo recipe"

set +e
out=$("$mc" demo --detach --runs-dir "$runs" 2>&1); rc=$?
set -e
[ "$rc" = 2 ] && grep -q "moeconsole\[demo\]" <<<"$out" || fail "demo without torch: exit $rc, said: $out"

say "installing the demo extra (torch's CPU build first, as make's .venv: scripts/install_torch.py)"
"$vpy" "$repo/scripts/install_torch.py" >/dev/null
"$vpy" -m pip install -q "$wheel[demo]" >/dev/null
id=$("$mc" demo --detach --runs-dir "$runs" --set args.max_steps=6 --set args.step_delay=0 --set args.save_steps=3 | head -1) \
  || fail "moeconsole demo --detach"
for _ in $(seq 1 600); do
  status=$("$mc" runs show "$id" --json --runs-dir "$runs" | "$vpy" -c 'import json,sys; print(json.load(sys.stdin)["status"])')
  case $status in succeeded) break ;; failed|killed|unsaved) fail "the demo run ended $status" ;; esac
  sleep 0.2
done
[ "$status" = succeeded ] || fail "the demo run did not finish (status $status)"
say "ok: the wheel installs, runs its commands and its demo from a directory full of look-alikes"
