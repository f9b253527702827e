"""`make demo` / `make test` with the python3 a login node has (newcomer round 7): where that
interpreter cannot make a working .venv/, one line says why and which `make` to run instead, and
nothing is created. Real make, the repository's real Makefile, pyproject.toml and scripts/."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _checkout(tmp_path):
    """What `make` reads of a fresh clone: its Makefile, pyproject.toml (requires-python) and scripts/."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "scripts", tmp_path / "scripts")
    return tmp_path


def _older_python() -> tuple[str, str] | None:
    """A Python older than 3.11 that runs on this machine (RHEL 8's 3.6 and 3.9, Ubuntu 20.04's 3.8,
    pyenv's), and its version: (path, "3.9")."""
    found = [shutil.which(f"python3.{minor}") for minor in range(6, 11)]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.[6-9].*/bin/python3")))
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10.*/bin/python3")))
    for path in filter(None, found):
        try:
            said = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        version = said.stdout.strip()
        if said.returncode == 0 and version and tuple(map(int, version.split("."))) < (3, 11):
            return path, version
    return None


def _make(checkout, *args, timeout=600):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    return subprocess.run(["make", "-C", str(checkout), *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_an_old_python3_is_named_before_any_venv_is_made(tmp_path):
    """python3 3.9: pip's first error had been about torch ("Cannot install torch==2.13.0 ... conflicting
    dependencies"), after a .venv of 3.9 was made; now one line names the version and the way on."""
    found = _older_python()
    if found is None:
        pytest.skip("no Python older than 3.11 on this machine")
    old, version = found
    checkout = _checkout(tmp_path)
    done = _make(checkout, "demo", f"PYTHON={old}")
    said = done.stderr.strip().splitlines()
    assert done.returncode != 0
    assert said[0].startswith(f"make: {old} is Python {version}."), done.stderr
    assert "moeconsole needs 3.11 or newer: make demo PYTHON=python3.11" in said[0], done.stderr
    assert "torch" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (checkout / ".venv").exists()


# Debian and Ubuntu ship `ensurepip` in python3.X-venv, not with python3 (a login node often lacks it);
# their venv then makes the directory without pip and says so (Debian's patch to venv/__init__.py,
# _setup_pip: "The virtual environment was not created successfully because ensurepip is not
# available ..."). Uninstalling a system package is not for a shared test machine: this interpreter
# is the real python3 with ensurepip hidden (an import that fails as the missing module does), and its
# `-m venv` does what Debian's does without ensurepip.
FAKE_DEBIAN_PYTHON = """#!/bin/sh
PYTHONPATH="{shim}" ; export PYTHONPATH
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
    shift 2
    "{python}" -m venv --without-pip "$@" || exit 1
    echo "The virtual environment was not created successfully because ensurepip is not" >&2
    echo "available.  On Debian/Ubuntu systems, you need to install the python3-venv" >&2
    exit 1
fi
exec "{python}" "$@"
"""


def test_a_python3_without_ensurepip_names_the_package_and_another_python(tmp_path):
    shim = tmp_path / "shim" / "ensurepip"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'ensurepip'\", name='ensurepip')\n")
    fake = tmp_path / "python3"
    fake.write_text(FAKE_DEBIAN_PYTHON.format(shim=shim.parent, python=sys.executable))
    fake.chmod(0o755)
    checkout = _checkout(tmp_path / "clone")
    done = _make(checkout, "test", f"PYTHON={fake}")
    said = done.stderr.strip().splitlines()
    assert done.returncode != 0
    assert "without the ensurepip module" in said[0], done.stderr
    assert f"python{sys.version_info[0]}.{sys.version_info[1]}-venv" in said[0], done.stderr
    assert "make test PYTHON=the path of another Python 3.11+" in said[0], done.stderr
    assert not (checkout / ".venv").exists()   # no .venv without pip left for the next `make` to trip on


def test_a_python_that_can_make_the_venv_passes_the_check(tmp_path):
    checkout = _checkout(tmp_path)
    done = subprocess.run([sys.executable, str(checkout / "scripts" / "check_python.py"), "python3", "make demo"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def _wheel(index, version: str) -> None:
    """A real (tiny) wheel of torch `version` in a PEP 503 simple index at `index`."""
    import zipfile
    name = f"torch-{version}-py3-none-any.whl"
    info = f"torch-{version}.dist-info"
    (index / "torch").mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(index / "torch" / name, "w") as whl:
        whl.writestr("torch/__init__.py", f"__version__ = {version!r}\n")
        whl.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
        whl.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info}/RECORD", "")
    (index / "torch" / "index.html").write_text(
        "".join(f'<a href="{p.name}">{p.name}</a>\n' for p in sorted((index / "torch").glob("*.whl"))))
    (index / "index.html").write_text('<a href="torch/">torch</a>\n')


def test_make_installs_the_cpu_build_of_torch_where_pypi_has_the_cuda_one(tmp_path):
    """PyPI's Linux torch==2.13.0 is the CUDA build: `make demo` on a machine without this one's local
    wheel dir had installed it, 4.7 GB of nvidia-* wheels, for a demo that trains on CPU (README: "torch
    is pinned to the 2.13.0 CPU wheel"). The Makefile's own torch line, run by pip against an index
    that holds 2.13.0 (as PyPI) and one that holds 2.13.0+cpu (as PyPI's CPU index), takes +cpu."""
    import json
    import shlex
    pypi, cpu = tmp_path / "pypi", tmp_path / "cpu"
    _wheel(pypi, "2.13.0")
    _wheel(cpu, "2.13.0+cpu")
    done = _make(REPO, "-n", "setup", "PY=PYEXE", f"VENV={tmp_path / 'venv'}", f"TORCH_CPU_INDEX={cpu.as_uri()}")
    line = next(line for line in done.stdout.splitlines() if "pip install" in line and "torch" in line)
    argv = shlex.split(line)
    assert argv[:4] == ["PYEXE", "-m", "pip", "install"], line
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=pypi.as_uri(), PIP_NO_INPUT="1")   # no site config
    pip = subprocess.run([sys.executable, *argv[1:], "--dry-run", "--ignore-installed", "--no-deps",
                          "--report", str(report)], env=env, capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    chosen = [item["metadata"]["version"] for item in json.loads(report.read_text())["install"]]
    assert chosen == ["2.13.0+cpu"], chosen
