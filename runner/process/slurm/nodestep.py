"""The training step's wrapper on each node of a multi-node Slurm job: the rendezvous, then exec.

``srun`` starts one task per node (``ntasks_per_node: 1``); each runs
``python -m moeconsole.runner.process.slurm.nodestep --run-dir DIR --attempt N --port P [--wait-s S] -- COMMAND...``.
It finds the first node of the allocation (``SLURM_JOB_NODELIST``), tells torchrun where the
rendezvous is through torchrun's own environment defaults (``PET_NNODES``,
``PET_RDZV_ENDPOINT``, ``PET_RDZV_ID``, ``PET_RDZV_BACKEND``; any of them the recipe set is
kept) plus ``MASTER_ADDR``/``MASTER_PORT`` for launchers that read those, and ``exec``s the
command: the training then *is* the srun task, so ``scancel --signal=TERM`` reaches it.

A rendezvous port held by someone else on the first node would make torchrun there fail to host
the store and connect to the stranger instead. So the first node waits until the port binds
(saying who holds it, once, in the run's log), up to ``--wait-s``; after that it takes a free port
instead and says so. It then publishes the endpoint in ``jobs/attempt-N.rdzv.json`` (shared
storage, as the whole run directory is); the other nodes wait for that file before they start,
so no node ever connects to a port that is not the rendezvous yet.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

from moeconsole.runner.core.units import printable
from moeconsole.runner.process.slurm.text import expand_nodes
from moeconsole.runner.process.waiter import restore_dispositions
from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.telemetry.preflight import port_free
from moeconsole.runner.telemetry.procs import port_users

POLL_S = 0.25
SCHEMA = 1


def _say(text: str) -> None:
    """One line into the job's output (the run's train.log), flushed at once."""
    sys.stdout.write(f"moeconsole: {text}\n")
    sys.stdout.flush()


def rendezvous_env(environ: dict[str, str], host: str, port: int) -> dict[str, str]:
    """The environment torchrun (and MASTER_ADDR readers) start from on this node. Values the
    recipe already set win: a recipe may pin its own rendezvous id or backend."""
    nodes = environ.get("SLURM_JOB_NUM_NODES") or environ.get("SLURM_NNODES") or "1"
    env = dict(environ)
    defaults = {"MASTER_ADDR": host, "MASTER_PORT": str(port), "PET_NNODES": nodes,
                "PET_RDZV_ENDPOINT": f"{host}:{port}",
                "PET_RDZV_BACKEND": "c10d", "PET_RDZV_ID": environ.get("SLURM_JOB_ID", "moeconsole"),
                # every worker's lines carry its global rank: "[rank3]: ..."
                "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": "[rank${rank}]:"}
    for key, value in defaults.items():
        env.setdefault(key, value)
    return env


def first_node(environ: dict[str, str]) -> str:
    nodes = expand_nodes(environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or "")
    return nodes[0] if nodes else socket.gethostname()


def _holders(port: int) -> str:
    pids, _ = port_users(port)
    if not pids:
        return "held by a process this node does not show"
    names = []
    for pid in sorted(pids)[:3]:
        try:   # another process's name, set by it (prctl, /proc/self/comm): train.log gets one printable line
            comm = Path(f"/proc/{pid}/comm").read_bytes().decode("utf-8", "replace").removesuffix("\n")
            names.append(f"pid {pid} ({printable(comm)})")
        except OSError:
            names.append(f"pid {pid}")
    return "held by " + ", ".join(names)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, wait_s: float, node: str) -> int:
    """The port to host the rendezvous on: ``port`` once it binds, or a free one after ``wait_s``."""
    started = time.monotonic()
    said = False
    while not port_free(port):
        if not said:
            _say(f"{node}: rendezvous port {port} is in use ({_holders(port)}); waiting up to {wait_s:.0f}s")
            said = True
        if time.monotonic() - started >= wait_s:
            other = _free_port()
            _say(f"{node}: rendezvous port {port} still in use after {wait_s:.0f}s; using port {other} instead")
            return other
        time.sleep(POLL_S)
    if said:
        _say(f"{node}: rendezvous port {port} is free after {time.monotonic() - started:.0f}s")
    return port


def wait_for_publication(path: Path, job_id: str, wait_s: float, node: str, host: str) -> int | None:
    started = time.monotonic()
    said = False
    while time.monotonic() - started < wait_s:
        doc = jsonio.read_json(path, default=None)
        if isinstance(doc, dict) and doc.get("job_id") == job_id and isinstance(doc.get("port"), int):
            return int(doc["port"])
        if not said and time.monotonic() - started > 2:
            _say(f"{node}: waiting for {host} to open the rendezvous")
            said = True
        time.sleep(POLL_S)
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m moeconsole.runner.process.slurm.nodestep")
    p.add_argument("--run-dir", required=True, type=Path)
    p.add_argument("--attempt", required=True, type=int)
    p.add_argument("--port", required=True, type=int)
    p.add_argument("--wait-s", type=float, default=600.0)
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("nodestep: no command after --", file=sys.stderr)
        return 2
    environ = dict(os.environ)
    node = environ.get("SLURMD_NODENAME") or socket.gethostname()
    host = first_node(environ)
    job_id = environ.get("SLURM_JOB_ID", "")
    pub = rundir.RunDir(args.run_dir).rendezvous_record(args.attempt)
    if environ.get("SLURM_NODEID", "0") == "0":
        port = wait_for_port(args.port, args.wait_s, node)
        jsonio.atomic_write_json(pub, {"v": SCHEMA, "job_id": job_id, "host": host, "port": port,
                                       "t": time.time()})
    else:
        got = wait_for_publication(pub, job_id, args.wait_s + 120, node, host)
        if got is None:
            _say(f"{node}: {host} never opened the rendezvous; giving up")
            return 1
        port = got
    env = rendezvous_env(environ, host, port)
    try:
        restore_dispositions()   # the command starts with SIGPIPE/SIGXFSZ at their defaults, not ours
        os.execvpe(command[0], command, env)
    except OSError as exc:
        print(f"nodestep: cannot run {command[0]}: {exc}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
