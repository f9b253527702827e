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
    """What `make` reads of a fresh clone: its Makefile, pyproject.toml (requires-python), scripts/ and
    runner/core/cpu_torch.py (the torch step's own source: .venv is rebuilt when it changes)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "runner" / "core").mkdir(parents=True)
    for name in ("Makefile", "pyproject.toml", "runner/core/cpu_torch.py"):
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


def _check(checkout):
    """scripts/check_python.py run as the Makefile runs it, with the running Python as `python3`."""
    return subprocess.run([sys.executable, str(checkout / "scripts" / "check_python.py"), "python3", "make demo"],
                          capture_output=True, text=True, timeout=60)


def _with_floor(tmp_path, spelling: str):
    checkout = _checkout(tmp_path)
    text = (checkout / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.11"' in text
    (checkout / "pyproject.toml").write_text(text.replace('requires-python = ">=3.11"', f"requires-python = {spelling}"))
    return checkout


@pytest.mark.parametrize("spelling", ['">=3.99"', "'>=3.99'", '"~=3.99"', '">=3.99,<4"', '">= 3.99"'])
def test_a_python_below_the_floor_is_named_whatever_the_floors_spelling(tmp_path, spelling):
    """The version branch of the check, run on every machine (the old-Python test above needs a Python
    older than 3.11 and skips without one, as in CI): a floor above the running Python, in each valid
    TOML spelling; single quotes had disabled the check in silence (a 3.6 passed)."""
    done = _check(_with_floor(tmp_path, spelling))
    have = "%d.%d" % sys.version_info[:2]
    assert done.returncode == 2, done
    assert done.stderr.startswith(f"make: python3 is Python {have}."), done.stderr
    assert "moeconsole needs 3.99 or newer: make demo PYTHON=python3.99" in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_a_floor_the_check_cannot_read_is_said_not_passed_over(tmp_path):
    done = _check(_with_floor(tmp_path, '">3.10"'))
    assert done.returncode == 2, done
    assert done.stderr == ("make: cannot read the lowest Python moeconsole needs from pyproject.toml's "
                           "`requires-python = \">3.10\"` (a `>=X.Y` or `~=X.Y` is expected)\n"), done.stderr


def test_the_checks_floor_is_what_pip_reads_from_pyproject():
    """The floor the check reads equals the lowest Python 3.X pip's own reading of requires-python
    (tomllib, packaging's SpecifierSet) admits."""
    import importlib.util
    import tomllib

    from packaging.specifiers import SpecifierSet
    spec = importlib.util.spec_from_file_location("check_python", REPO / "scripts" / "check_python.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    admits = SpecifierSet(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"])
    lowest = next((3, minor) for minor in range(0, 100) if f"3.{minor}.0" in admits)
    assert module.required_version(REPO / "pyproject.toml") == lowest


def _wheel(index, version: str, name: str = "torch", requires: tuple[str, ...] = ()) -> None:
    """A real (tiny) wheel of `name` `version` in a PEP 503 simple index at `index`."""
    import zipfile
    whl_name = f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    (index / name).mkdir(parents=True, exist_ok=True)
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(index / name / whl_name, "w") as whl:
        whl.writestr(f"{name}/__init__.py", f"__version__ = {version!r}\n")
        whl.writestr(f"{info}/METADATA", meta)
        whl.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        whl.writestr(f"{info}/RECORD", "")
    (index / name / "index.html").write_text(
        "".join(f'<a href="{p.name}">{p.name}</a>\n' for p in sorted((index / name).glob("*.whl"))))
    (index / "index.html").write_text("".join(f'<a href="{d.name}/">{d.name}</a>\n'
                                              for d in sorted(index.iterdir()) if d.is_dir()))


def _torch_line(checkout, *make_args) -> list[str]:
    """The Makefile's own torch step, as `make -n setup` prints it, with PY the running Python."""
    import shlex
    done = _make(checkout, "-n", "setup", "PY=PYEXE", "VENV=venv-not-made", *make_args)
    line = next(line for line in done.stdout.splitlines() if not line.lstrip().startswith("#")
                and "torch" in line and ("pip install" in line or "install_torch" in line))
    argv = shlex.split(line)
    assert argv[0] == "PYEXE", line
    return [sys.executable, *argv[1:]]


def _run_torch_line(checkout, tmp_path, pypi, *make_args, user=None, find_links=None, cpu_env=None):
    """Run that step as `make` would, installing into tmp_path/target (pip's PIP_TARGET), with pip's
    site config cleared and PyPI played by `pypi`; `user` an extra index in the user's own pip config,
    `find_links` a wheel dir of theirs. What got installed: the torch versions in the target."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "TORCH_CPU_INDEX"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=pypi.as_uri(), PIP_NO_INPUT="1",
               PIP_TARGET=str(tmp_path / "target"))
    if user is not None:
        env["PIP_EXTRA_INDEX_URL"] = user.as_uri()
    if find_links is not None:
        env["PIP_FIND_LINKS"] = str(find_links)
    if cpu_env is not None:
        env["TORCH_CPU_INDEX"] = cpu_env
    for arg in make_args:   # make exports the variables of its command line to every recipe
        name, _, value = arg.partition("=")
        env[name] = value
    done = subprocess.run(_torch_line(checkout, *make_args), cwd=checkout, env=env, capture_output=True,
                          text=True, timeout=600)
    installed = sorted(d.name[len("torch-"):-len(".dist-info")]
                       for d in (tmp_path / "target").glob("torch-*.dist-info"))
    return done, installed


@pytest.mark.parametrize("theirs", ["2.13.0+cu128", "2.13.0+rocm6.4", "2.13.0+xpu", "2.13.0"])
def test_make_installs_the_cpu_build_of_torch_whatever_else_the_users_pip_sees(tmp_path, theirs):
    """PyPI's Linux torch==2.13.0 is the CUDA build (4.7 GB with its nvidia-* wheels) and a GPU
    cluster's pip config often adds PyTorch's cu128 index: with the version pinned and not the build,
    pip took the highest local label, and cu128, rocm6.4 and xpu all sort above cpu. The Makefile's
    own torch step installs 2.13.0+cpu from the CPU index whatever else the user's pip sees."""
    pypi, cpu, user = tmp_path / "pypi", tmp_path / "cpu", tmp_path / "user"
    _wheel(pypi, "2.13.0")
    _wheel(cpu, "2.13.0+cpu")
    _wheel(user, theirs)
    done, installed = _run_torch_line(REPO, tmp_path, pypi, f"TORCH_CPU_INDEX={cpu.as_uri()}", user=user)
    assert done.returncode == 0, done.stderr
    assert installed == ["2.13.0+cpu"], (installed, done.stderr)


class _Index:
    """PyTorch's CPU index played by a real HTTP server on loopback, which notes every path asked."""

    def __init__(self, root):
        import functools
        import http.server
        import threading
        asked = self.asked = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                asked.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_the_cpu_index_is_asked_for_torch_alone(tmp_path):
    """Every one of torch's dependencies had been looked up on the CPU index too, each with pip's 5
    retries: 50 warning lines and 77 s on a machine whose DNS fails (CI's). Now only torch is asked
    there; its dependencies come with the project from the user's own indexes."""
    pypi, cpu = tmp_path / "pypi", tmp_path / "cpu"
    _wheel(pypi, "2.13.0", requires=("filelock",))
    _wheel(pypi, "3.0", name="filelock")
    _wheel(cpu, "2.13.0+cpu", requires=("filelock",))
    index = _Index(cpu)
    try:
        done, installed = _run_torch_line(REPO, tmp_path, pypi, f"TORCH_CPU_INDEX={index.url}")
    finally:
        index.close()
    assert done.returncode == 0, done.stderr
    assert installed == ["2.13.0+cpu"], (installed, done.stderr)
    assert [path for path in index.asked if "filelock" in path] == [], index.asked


def _closed_port_url() -> str:
    import socket
    with socket.socket() as sock:   # a port nothing listens on: connections are refused at once
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/whl/cpu"


def test_an_unreachable_cpu_index_stops_with_one_line_instead_of_taking_the_cuda_build(tmp_path):
    """The CPU index unreachable and no CPU wheel of the user's own: pip had warned in retry lines and
    then installed PyPI's 2.13.0 (the CUDA build) in silence. Now nothing is installed and one line
    names the build and the two ways on."""
    pypi = tmp_path / "pypi"
    _wheel(pypi, "2.13.0")
    url = _closed_port_url()
    done, installed = _run_torch_line(REPO, tmp_path, pypi, f"TORCH_CPU_INDEX={url}")
    assert done.returncode != 0
    assert installed == [], installed
    said = done.stderr.strip().splitlines()
    assert len(said) == 1, done.stderr
    assert said[0].startswith(f"torch: the CPU build torch==2.13.0+cpu could not be installed from {url}"), said
    assert "TORCH_CPU_INDEX=" in said[0] and "Retrying" not in done.stderr + done.stdout, done.stderr


def test_an_unreachable_cpu_index_with_a_local_cpu_wheel_says_so_in_one_line(tmp_path):
    """This machine's case, and CI's: DNS fails, a wheel dir holds 2.13.0+cpu. It is installed, and
    one line says where it came from (pip's retry warnings are not shown)."""
    pypi, wheels = tmp_path / "pypi", tmp_path / "wheels"
    _wheel(pypi, "2.13.0")
    _wheel(wheels, "2.13.0+cpu")
    url = _closed_port_url()
    done, installed = _run_torch_line(REPO, tmp_path, pypi, f"TORCH_CPU_INDEX={url}", find_links=wheels / "torch")
    assert done.returncode == 0, done.stderr
    assert installed == ["2.13.0+cpu"], installed
    assert done.stdout.strip() == f"torch: {url} did not answer; torch==2.13.0+cpu came from your own pip sources (a wheel dir)"
    assert "Retrying" not in done.stderr + done.stdout, done.stderr


@pytest.mark.parametrize("how", ["make TORCH_CPU_INDEX=", "exported TORCH_CPU_INDEX="])
def test_an_empty_torch_cpu_index_skips_it(tmp_path, how):
    """`make demo TORCH_CPU_INDEX=` (no CPU index: torch from my own indexes) had left a dangling
    `--extra-index-url` and pip stopped: "--extra-index-url option requires 1 argument". Now the step
    installs nothing and says where torch will come from."""
    pypi = tmp_path / "pypi"
    _wheel(pypi, "2.13.0")
    if how.startswith("make"):
        done, installed = _run_torch_line(REPO, tmp_path, pypi, "TORCH_CPU_INDEX=")
    else:
        done, installed = _run_torch_line(REPO, tmp_path, pypi, cpu_env="")
    assert done.returncode == 0, done.stderr
    assert installed == [], installed
    assert done.stdout.startswith("torch: TORCH_CPU_INDEX is empty: torch==2.13.0 comes with the project"), done.stdout


def test_swift_env_installs_torch_with_the_makefiles_step():
    """scripts/swift-env.sh's .venv-swift takes torch through the same step (its own pip line had
    its own URL and pin, untested)."""
    text = (REPO / "scripts" / "swift-env.sh").read_text()
    steps = [line.strip() for line in text.splitlines() if "torch" in line and not line.strip().startswith("#")]
    assert steps == ['"$VENV/bin/python" scripts/install_torch.py'], steps
