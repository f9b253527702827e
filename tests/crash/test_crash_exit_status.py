"""Exit statuses from real processes (signals, shells, a swift-style wrapper, torchrun) decoded
and classified. torchrun runs on CPU with tiny workers; every process is ended by PID."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from moeconsole.runner.core.crash import classify, decode_exit

PYTHON = sys.executable
TORCHRUN_TIMEOUT_S = float(os.environ.get("MOECONSOLE_TEST_TORCHRUN_TIMEOUT", "90"))


@pytest.mark.parametrize("rc, expected", [
    (None, (None, None)),
    (0, (0, None)), (1, (1, None)), (16, (16, None)), (17, (17, None)), (128, (128, None)),
    (-9, (None, 9)), (-11, (None, 11)), (-6, (None, 6)), (-7, (None, 7)), (-15, (None, 15)),
    (134, (134, 6)), (135, (135, 7)), (137, (137, 9)), (139, (139, 11)), (143, (143, 15)),
    (159, (159, 31)), (160, (160, None)), (224, (224, None)),
    (241, (241, 15)), (247, (247, 9)), (254, (254, 2)), (255, (255, None)),
])
def test_decode_exit_table(rc, expected):
    assert decode_exit(rc) == expected


def run(argv: list[str], timeout: float = 30) -> int:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


SELF_KILL = "import os, signal; os.kill(os.getpid(), signal.{sig})"


@pytest.mark.parametrize("sig, cls", [("SIGKILL", "killed_oom"), ("SIGSEGV", "segfault"),
                                      ("SIGBUS", "bus_error")])
def test_real_signal_deaths_popen_and_shell(sig, cls):
    signum = int(getattr(signal, sig))
    code = SELF_KILL.format(sig=sig)
    rc = run([PYTHON, "-c", code])
    assert rc == -signum and decode_exit(rc) == (None, signum)
    assert classify(rc, []).cls == cls
    # A shell running it reports 128+N.
    rc_shell = run(["sh", "-c", '"$0" -c "$1"; exit $?', PYTHON, code])
    assert rc_shell == 128 + signum and decode_exit(rc_shell) == (rc_shell, signum)
    assert classify(rc_shell, []).cls == cls


@pytest.mark.parametrize("sig, expected_rc, cls", [("SIGKILL", 247, "killed_oom"), ("SIGTERM", 241, "unknown")])
def test_real_swift_style_wrapper_exits_256_minus_n(sig, expected_rc, cls):
    """A Python wrapper doing sys.exit(child.returncode), as the `swift` CLI does."""
    wrapper = textwrap.dedent(f"""
        import subprocess, sys
        child = subprocess.run([sys.executable, "-c", {SELF_KILL.format(sig=sig)!r}])
        sys.exit(child.returncode)
    """)
    rc = run([PYTHON, "-c", wrapper])
    assert rc == expected_rc
    assert decode_exit(rc) == (expected_rc, int(getattr(signal, sig)))
    v = classify(rc, [])
    assert v.cls == cls
    if cls == "unknown":
        assert v.summary == "ended by SIGTERM"


# --- real torchrun ----------------------------------------------------------------------

def end_tree(pid: int) -> None:
    """End a torchrun and its workers (which live in sessions of their own) by PID."""
    try:
        root = psutil.Process(pid)
        procs = root.children(recursive=True) + [root]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=5)


def torchrun(tmp_path: Path, worker: str, nproc: int = 2, port: int | None = None) -> tuple[int, list[str]]:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(worker))
    log = tmp_path / "train.log"
    if port is None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    argv = [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
            "--master_addr", "127.0.0.1", "--master_port", str(port), str(script)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "OMP_NUM_THREADS": "1"})
        try:
            rc = proc.wait(timeout=TORCHRUN_TIMEOUT_S)
        finally:
            end_tree(proc.pid)
            proc.wait()
    return rc, log.read_text(errors="replace").splitlines()


WORKER_HEAD = """
    import os, signal, sys, time
    rank = int(os.environ["RANK"])
    print(f"rank {rank} up", flush=True)
"""


def test_real_torchrun_segfaulting_worker(tmp_path):
    rc, tail = torchrun(tmp_path, WORKER_HEAD + """
    if rank == 1:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(60)
    """)
    assert rc == 1                       # torchrun itself exits 1
    v = classify(rc, tail, steps_seen=0)
    assert v.cls == "segfault" and v.retryable
    assert "rank 1" in v.summary
    assert any(e.startswith("exitcode  : -11") for e in v.evidence)


def test_real_torchrun_worker_killed_is_killed_oom(tmp_path):
    rc, tail = torchrun(tmp_path, WORKER_HEAD + """
    if rank == 0:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)
    """)
    v = classify(rc, tail, steps_seen=12)
    assert v.cls == "killed_oom" and "rank 0" in v.summary


def test_real_torchrun_port_in_use(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        rc, tail = torchrun(tmp_path, WORKER_HEAD, port=port)
    assert rc == 1
    v = classify(rc, tail, steps_seen=0)
    assert v.cls == "port_in_use" and v.recovery == "wait_port"
    assert v.summary == f"port {port} is already in use (EADDRINUSE)"


def test_real_torchrun_worker_printing_oom_then_exit_1(tmp_path):
    """A worker prints the formats.md OOM text in a real traceback; its sibling sees the
    failure too. The block's root cause is exit 1, the OOM text decides."""
    rc, tail = torchrun(tmp_path, WORKER_HEAD + """
    class OutOfMemoryError(RuntimeError):
        pass
    def chunk_gated_delta_rule_bwd():
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 266.00 MiB. GPU 1 has a total "
            "capacity of 139.72 GiB of which 200.00 MiB is free. Including non-PyTorch memory, this "
            "process has 139.50 GiB memory in use. Of the allocated memory 130.00 GiB is allocated by "
            "PyTorch, and 5.00 GiB is reserved by PyTorch but unallocated.")
    def backward():
        chunk_gated_delta_rule_bwd()
    if rank == 1:
        time.sleep(0.3)
        backward()
    time.sleep(60)
    """)
    v = classify(rc, tail, steps_seen=30)
    assert v.cls == "cuda_oom"
    assert v.summary == ("CUDA out of memory in backward (chunk_gated_delta_rule_bwd), "
                         "tried to allocate 266.00 MiB on GPU 1")


def test_real_torchrun_megatron_exit_17(tmp_path):
    rc, tail = torchrun(tmp_path, WORKER_HEAD + """
    if rank == 0:
        print("Unexpected result tensor(nan, device='cuda:0') on rank 0 at iteration #52 invocation #1 "
              "(message='found NaN in local grad norm for bucket #0 in backward pass before "
              "data-parallel communication collective')", flush=True)
        sys.exit(17)
    time.sleep(60)
    """)
    v = classify(rc, tail, steps_seen=50)
    assert v.cls == "divergence" and not v.retryable and v.recovery == "pause"
    assert "iteration 52" in v.summary and "exit 17" in v.summary
