"""An atomic write that fails names the file being written, never the hidden temp file beside it:
a newcomer's runs directory was read-only and the console's toast said
``chart choice not saved: [Errno 13] Permission denied: '/…/.chart-prefs.json.3764352b'``.
Real EACCES: root without CAP_DAC_OVERRIDE (``setpriv``) obeys the directory's mode like any user."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_SAVE = """
import sys
from pathlib import Path
from moeconsole.console import chartprefs
try:
    chartprefs.save_prefs(Path(sys.argv[1]), "demo", chartprefs.ChartPrefs(charts=["loss"], smooth=0.5, log=True))
except OSError as exc:
    print(f"chart choice not saved: {exc}")   # the toast's words (console/widgets/charts.py _save_prefs)
"""


def _as_a_user() -> list[str]:
    if os.geteuid() != 0:
        return []   # an ordinary user obeys the mode already
    if not shutil.which("setpriv"):
        pytest.skip("needs setpriv to drop root's CAP_DAC_OVERRIDE")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def test_a_read_only_runs_directory_names_chart_prefs_json_not_its_temp_file(tmp_path):
    base = tmp_path / "runs"
    base.mkdir()
    prefs = base / "chart-prefs.json"
    prefs.write_text(json.dumps({"v": 1, "recipes": {}}))
    before = prefs.read_bytes()
    base.chmod(0o555)
    try:
        done = subprocess.run([*_as_a_user(), sys.executable, "-c", _SAVE, str(base)], capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=60)
    finally:
        base.chmod(0o755)
    assert done.returncode == 0 and not done.stderr, done.stderr
    line = done.stdout.strip()
    assert line.startswith("chart choice not saved: [Errno 13] Permission denied"), line
    assert line.endswith(f"{str(prefs)!r}"), line
    assert ".chart-prefs.json." not in line, line
    assert prefs.read_bytes() == before and sorted(p.name for p in base.iterdir()) == ["chart-prefs.json"]
