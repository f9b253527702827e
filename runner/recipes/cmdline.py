"""Where a flag lives in a recipe's command: the launcher's part or the training script's (pure).

A launched command often has two parsers: ``python -m torch.distributed.run --nproc_per_node 2
--master_port 29517 -m train --max_steps 200`` is read by torchrun up to the script (``-m train``)
and by the training script after it. A launcher flag that lands after the script reaches the
trainer, which exits ``unrecognized arguments``; a script flag before it reaches torchrun. So
every change the runner or ``--set`` makes to a command goes through :func:`set_flag`, which
replaces a flag where it stands (same spelling, same position) and inserts a missing one in its
own part: launcher flags just before the script, script flags at the end.

torchrun's flags are those of ``torch.distributed.run.get_args_parser`` (torch 2.13,
``torch/distributed/run.py``): every option takes one value except the switches in
``_TORCHRUN_SWITCHES``; options accept ``-`` and ``_`` spellings (``--master-port`` and
``--master_port``) and ``--flag=value``. Its ``env`` actions read defaults from ``PET_<NAME>``,
not ``MASTER_PORT``, which is why a moved rendezvous port must be written into the command.
Other launchers (``swift``, ``megatron``, a plain ``python script.py``) have one parser: the
whole command after the program is the script's.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Mapping

# torch/distributed/run.py get_args_parser(): options with one value (canonical, "_" spelling).
_TORCHRUN_VALUED = frozenset({
    "nnodes", "nproc_per_node", "rdzv_backend", "rdzv_endpoint", "rdzv_id", "rdzv_conf", "max_restarts",
    "monitor_interval", "start_method", "event_log_handler", "role", "log_dir", "redirects", "tee",
    "local_ranks_filter", "duplicate_stdout_filters", "duplicate_stderr_filters", "node_rank", "master_addr",
    "master_port", "local_addr", "logs_specs", "numa_binding", "signals_to_handle", "shutdown_timeout",
})
# ... and the switches (action check_env, nargs 0). ``-m``/``--module`` and ``--no-python`` say how
# the script is run; they belong to torchrun.
_TORCHRUN_SWITCHES = frozenset({"standalone", "module", "no_python", "run_path", "virtual_local_rank"})
_TORCHRUN_SHORT = {"-m": "module", "-r": "redirects", "-t": "tee"}
TORCHRUN_FLAGS = _TORCHRUN_VALUED | _TORCHRUN_SWITCHES
_TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")

# CPython's own options before a script or -m (python --help): those that take a value.
_PYTHON_VALUED = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_PYTHON_EXE = re.compile(r"python[0-9.]*\Z")


@dataclass(frozen=True)
class Layout:
    """A command split in two: ``argv[:script_at]`` is read by the launcher (and the
    interpreter), ``argv[script_at:]`` by the training script. ``launcher`` names the launcher
    whose flags are known (``torchrun``), else ``""``."""

    script_at: int
    launcher: str = ""
    insert_at: int = -1  # where a new launcher flag goes: before switches like -m that lead to the script

    def __post_init__(self) -> None:
        if self.insert_at < 0:
            object.__setattr__(self, "insert_at", self.script_at)

    def launcher_flag(self, flag: str) -> bool:
        """Is ``flag`` one the launcher itself reads?"""
        return self.launcher == "torchrun" and canon(flag) in TORCHRUN_FLAGS


def canon(flag: str) -> str:
    """``--master-port=1`` -> ``master_port``: one name for every spelling of a long option."""
    return flag.lstrip("-").split("=", 1)[0].replace("-", "_")


def groups(argv: list[str]) -> list[list[str]]:
    """argv split into [flag, values...] groups (a leading non-flag group holds the program)."""
    out: list[list[str]] = []
    for a in argv:
        if a.startswith("--") and a != "--":
            out.append([a])
        elif out:
            out[-1].append(a)
        else:
            out.append([a])
    return out


def _is_python(arg: str) -> bool:
    return arg == "{python}" or bool(_PYTHON_EXE.match(os.path.basename(arg)))


def _skip_python_options(argv: list[str], i: int) -> int:
    """Past CPython's options starting at ``i`` (``-u``, ``-X dev``, ``-W ignore``, ...), up to
    ``-m``, ``-c`` or the script path."""
    while i < len(argv):
        a = argv[i]
        if a in ("-m", "-c") or not a.startswith("-") or a == "-":
            return i
        if a == "--":
            return i + 1
        i += 2 if a in _PYTHON_VALUED else 1
    return i


def _skip_torchrun_options(argv: list[str], i: int) -> int:
    """Past torchrun's options starting at ``i``: the index of the training script (or of the
    module name after ``-m``)."""
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return i + 1
        if not a.startswith("-") or a == "-":
            return i
        name = _TORCHRUN_SHORT.get(a) or canon(a)
        if "=" in a or name in _TORCHRUN_SWITCHES:
            i += 1
        else:
            i += 2  # a valued option (an unknown one too: argparse would need its value)
    return i


# torchrun switches that say how the script is run; they stand right before it.
_SCRIPT_SWITCHES = frozenset({"module", "no_python", "run_path"})


def _torchrun_layout(argv: list[str], start: int) -> Layout:
    script_at = _skip_torchrun_options(argv, start)
    insert_at = script_at
    while insert_at > start and (_TORCHRUN_SHORT.get(argv[insert_at - 1]) or canon(argv[insert_at - 1])) \
            in _SCRIPT_SWITCHES and argv[insert_at - 1].startswith("-"):
        insert_at -= 1
    return Layout(script_at, "torchrun", insert_at)


def argv_layout(argv: list[str]) -> Layout:
    """Where the training script starts in ``argv``, and which launcher reads what is before it."""
    if not argv:
        return Layout(0)
    if os.path.basename(argv[0]) == "torchrun":
        return _torchrun_layout(argv, 1)
    if _is_python(argv[0]):
        i = _skip_python_options(argv, 1)
        if i + 1 < len(argv) and argv[i] == "-m" and argv[i + 1] in _TORCHRUN_MODULES:
            return _torchrun_layout(argv, i + 2)
        if i < len(argv) and os.path.basename(argv[i]) == "torchrun":
            # the ``torchrun`` console script run by its interpreter: what /proc shows for a plain
            # ``torchrun ...`` (the kernel runs a shebang script as ``INTERPRETER SCRIPT ARGS``;
            # torch 2.13's entry_points.txt l.3 ``torchrun = torch.distributed.run:main``, written by pip with
            # a ``#!.../bin/python`` shebang)
            return _torchrun_layout(argv, i + 1)
        return Layout(i)
    return Layout(1)


def _occurrences(argv: list[str], flag: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """(start, length) of every ``flag VALUE`` / ``flag=VALUE`` in ``argv[lo:hi]``, any spelling."""
    want = canon(flag)
    out = []
    i = lo
    while i < hi:
        a = argv[i]
        if a.startswith("--") and a != "--" and canon(a) == want:
            n = 1 if "=" in a else (2 if i + 1 < len(argv) and not _is_flag(argv[i + 1]) else 1)
            out.append((i, n))
            i += n
            continue
        i += 1
    return out


def _is_flag(arg: str) -> bool:
    return arg.startswith("--") and len(arg) > 2


def home(argv: list[str], flag: str) -> str:
    """``"launcher"`` or ``"script"``: where ``flag`` is (or, when absent, belongs). A flag
    already present stays in its part; a missing one goes to the launcher only if the
    launcher reads it."""
    lay = argv_layout(argv)
    if _occurrences(argv, flag, 0, lay.script_at):
        return "launcher"
    if _occurrences(argv, flag, lay.script_at, len(argv)):
        return "script"
    return "launcher" if lay.launcher_flag(flag) else "script"


def set_flag(argv: list[str], flag: str, value: str | None) -> list[str]:
    """``argv`` with ``flag`` set to ``value`` in place: the first occurrence (``--f v`` or
    ``--f=v``, either spelling) keeps its position and form, later repeats in the same part are
    dropped; a missing flag is inserted in its part (:func:`home`): just before the script for a
    launcher flag, at the end for a script flag. ``value=None`` removes it from its part."""
    argv = [str(a) for a in argv]
    lay = argv_layout(argv)
    part = home(argv, flag)
    lo, hi = (0, lay.script_at) if part == "launcher" else (lay.script_at, len(argv))
    found = _occurrences(argv, flag, lo, hi)
    if not found:
        if value is None:
            return argv
        at = lay.insert_at if part == "launcher" else len(argv)
        return argv[:at] + [flag, value] + argv[at:]
    out = list(argv)
    for start, n in reversed(found[1:] if value is not None else found):
        del out[start:start + n]
    if value is not None:
        start, n = found[0]
        written = out[start]
        out[start:start + n] = [f"{written.split('=', 1)[0]}={value}"] if "=" in written else [written, value]
    return out


# torchrun flags that say how to start the processes, which a training script does not take
# (unlike --log_dir or --role, which a script may well have of its own).
LAUNCH_ONLY = frozenset({"nproc_per_node", "nnodes", "node_rank", "master_port", "master_addr", "rdzv_backend",
                         "rdzv_endpoint", "rdzv_id", "rdzv_conf", "standalone", "max_restarts", "start_method"})
PORT_FLAG = "--master_port"


def misplaced(argv: list[str]) -> list[str]:
    """Launch-only flags that stand after the training script (the script gets them and exits
    ``unrecognized arguments``), one line each; empty when the command is well formed."""
    lay = argv_layout(argv)
    if not lay.launcher:
        return []
    script = " ".join(argv[lay.insert_at:lay.script_at + 1])
    return [f"{a.split('=', 1)[0]} is a {lay.launcher} flag but stands after the training script ({script}): "
            f"the script gets it and exits with 'unrecognized arguments'"
            for a in argv[lay.script_at:] if _is_flag(a) and canon(a) in LAUNCH_ONLY]


def with_port(argv: list[str], port: int) -> list[str]:
    """The command with its rendezvous port moved to ``port``: ``--master_port`` (any spelling)
    replaced where it stands; under torchrun without one (and without ``--standalone`` or
    ``--rdzv_endpoint``, which choose their own) it is added before the script, because torchrun
    reads ``PET_MASTER_PORT``, not ``MASTER_PORT``. Other commands get ``MASTER_PORT`` from the
    environment only."""
    lay = argv_layout(argv)
    present = _occurrences(argv, PORT_FLAG, 0, len(argv))
    own_choice = any(canon(a) in ("standalone", "rdzv_endpoint") for a in argv[:lay.script_at] if a.startswith("--"))
    if present or (lay.launcher == "torchrun" and not own_choice):
        return set_flag(argv, PORT_FLAG, str(port))
    return list(argv)


# ---- how many processes the command starts (one owner: lint, the memory estimate, ms-swift's checks) ----
SWIFT_PROGRAMS = ("swift", "megatron")


def is_swift_command(argv: list[str]) -> bool:
    """An ms-swift entry point (``swift``/``megatron``, as the program or the script python runs, or
    ``swift/cli`` / ``swift.cli``)."""
    return any(os.path.basename(a) in SWIFT_PROGRAMS for a in argv[:2]) or \
        any("swift/cli" in a or a.startswith("swift.cli") for a in argv)


def _launcher_value(argv: list[str], lay: Layout, name: str) -> str | None:
    """The value torchrun reads for ``--name`` (either spelling, ``=`` or not; the last one wins, as
    argparse takes it), from the launcher's part of the command only."""
    found = _occurrences(argv, f"--{name}", 0, lay.script_at)
    if not found:
        return None
    start, n = found[-1]
    a = argv[start]
    return a.split("=", 1)[1] if "=" in a else (argv[start + 1] if n == 2 else None)


def launch_counts(env: Mapping[str, str], argv: list[str]) -> tuple[str, str] | None:
    """(processes per node, nodes) as the command's launcher reads them, as written (torchrun also
    takes ``gpu``/``auto`` per node and ``MIN:MAX`` nodes); None when no torchrun starts the command.

    - torchrun (``torchrun``, ``python -m torch.distributed.run``): its ``--nproc_per_node`` /
      ``--nnodes`` before the script, else ``PET_NPROC_PER_NODE`` / ``PET_NNODES`` (its ``env``
      actions, torch/distributed/run.py), else 1 each. It never reads ``NPROC_PER_NODE``.
    - ms-swift's ``swift``/``megatron``: torchrun only when ``NPROC_PER_NODE`` or ``NNODES`` is in
      the environment (swift/cli/main.py ``use_torchrun``, 4.6.0), which it passes on as
      ``--nproc_per_node``/``--nnodes`` (``get_torchrun_args``; a missing one is torchrun's 1)."""
    lay = argv_layout(argv)
    if lay.launcher == "torchrun":
        return (_launcher_value(argv, lay, "nproc_per_node") or env.get("PET_NPROC_PER_NODE") or "1",
                _launcher_value(argv, lay, "nnodes") or env.get("PET_NNODES") or "1")
    if is_swift_command(argv) and (env.get("NPROC_PER_NODE") is not None or env.get("NNODES") is not None):
        return env.get("NPROC_PER_NODE") or "1", env.get("NNODES") or "1"
    return None


def node_rank(env: Mapping[str, str], argv: list[str]) -> str | None:
    """The node rank the command's launcher starts this node's processes with, as written; None
    when nothing says (one node, or a launcher not read here).

    - torchrun: its ``--node_rank`` before the script, else ``PET_NODE_RANK``, else 0
      (torch/distributed/run.py ``--node-rank``, an ``env`` action).
    - ms-swift's ``swift``/``megatron`` under torchrun: ``NODE_RANK`` (swift/cli/main.py
      ``get_torchrun_args`` passes it on as ``--node_rank``), else torchrun's 0.
    - any other command: ``NODE_RANK`` when set (the variable launch scripts pass on)."""
    lay = argv_layout(argv)
    if lay.launcher == "torchrun":
        return _launcher_value(argv, lay, "node_rank") or env.get("PET_NODE_RANK") or "0"
    if launch_counts(env, argv) is not None:
        return env.get("NODE_RANK") or "0"
    return env.get("NODE_RANK")


NODE_RANK_WORD = "<node rank>"   # what the world's command shows where each node's own rank stands


def world_command(env: Mapping[str, str], argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """The command as every node of its world runs it: for a command a launcher starts (``launch_counts``: torchrun,
    or ms-swift launching torchrun) this node's rank (torchrun's ``--node_rank``, ``PET_NODE_RANK``, ``NODE_RANK``)
    replaced by ``NODE_RANK_WORD``. A command no launcher starts keeps its ``NODE_RANK``: a script may read it as
    its own setting (a data shard), so changing it is drift (review R48 D4). Two nodes of one torchrun
    world differ by nothing else (torch/distributed/run.py: ``--node-rank`` is the only per-node setting of a
    static rendezvous), so the recipe's identity (``recipes.recipe_hash``) is taken from this: the runners of
    every node stamp the world's saves alike, and over one output dir (shared storage) each takes the other's
    stamp for its own recipe's. Unchanged when no node rank is written, or only a placeholder (``{node_rank}``,
    ``${SLURM_NODEID}``: alike on every node already, and a recipe's identity is not changed for nothing)."""
    env, argv = dict(env), [str(a) for a in argv]

    def written(value: str | None) -> bool:
        return value is not None and "{" not in value

    lay = argv_layout(argv)
    if launch_counts(env, argv) is None:
        return env, argv    # no launcher reads a node rank: NODE_RANK is the script's own setting (review R48 D4)
    if lay.launcher == "torchrun" and written(_launcher_value(argv, lay, "node_rank")):
        argv = set_flag(argv, "--node_rank", NODE_RANK_WORD)
    for name in ("PET_NODE_RANK", "NODE_RANK"):   # torchrun's env action; what a launch script passes on to it
        if written(env.get(name)):
            env[name] = NODE_RANK_WORD
    return env, argv


def joins_another_nodes_rendezvous(env: Mapping[str, str], argv: list[str]) -> bool:
    """Does this node connect to a rendezvous another node hosts? torchrun's static rendezvous has
    node rank 0 start the TCPStore server on the master port and every other node connect to it
    (torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py, ``is_master = self.rank == 0``):
    the port busy on a node of rank 1 is the store it is to join (two nodes on one machine), not a
    holder to wait out, and a port moved there is one nobody listens on."""
    rank = node_rank(env, argv)
    return rank is not None and rank.strip().isdigit() and int(rank) > 0


def world_size(env: Mapping[str, str], argv: list[str]) -> int | None:
    """The processes torchrun starts for the command (per node x nodes, ``launch_counts``); None
    when no torchrun starts it, or a count is not a number (``gpu``/``auto``, an elastic ``1:4``)."""
    counts = launch_counts(env, argv)
    if counts is None:
        return None
    per, nodes = (c.strip() for c in counts)
    return int(per) * int(nodes) if per.isdigit() and nodes.isdigit() else None


@dataclass(frozen=True)
class Rendezvous:
    """Where a torchrun agent of several nodes meets the others (``rendezvous_of``)."""
    endpoint: str           # host:port
    nodes: str              # ``--nnodes`` as written: "2", or an elastic "1:4"
    node_rank: str | None   # ``--node_rank`` (the static rendezvous's), None when not given


# The port torch's rendezvous backends add to an endpoint that names none (torch 2.13
# torch/distributed/elastic/rendezvous/: c10d_rendezvous_backend.py l.32 ``DEFAULT_PORT = 29400``, l.135;
# etcd_rendezvous_backend.py l.144 and etcd_rendezvous.py l.981, 2379). The static backend has none: it
# refuses an endpoint without a port (static_tcp_rendezvous.py l.113-116).
_RDZV_DEFAULT_PORT = {"c10d": 29400, "etcd-v2": 2379, "etcd": 2379}


def _with_port(endpoint: str, port: int | None) -> str:
    """``endpoint`` as torch's ``parse_rendezvous_endpoint`` reads it (rendezvous/utils.py l.68-115): empty
    is ``localhost``, a ``[v6]`` or a host without ``:PORT`` gets ``port``."""
    endpoint = endpoint.strip()
    if not endpoint:
        return f"localhost:{port}" if port is not None else "localhost"
    bracketed = endpoint[0] == "[" and endpoint[-1] == "]"
    if port is None or (not bracketed and ":" in endpoint):
        return endpoint
    return f"{endpoint}:{port}"


def rendezvous_of(argv: list[str]) -> Rendezvous | None:
    """The rendezvous of a torchrun command line (``torchrun ...``, ``python -m torch.distributed.run ...``,
    and the ``python .../bin/torchrun ...`` /proc shows for the first) when it launches more than one
    node, else None. torch 2.13 torch/distributed/run.py: ``--nnodes`` (l.426-431, ``MIN:MAX`` allowed,
    default "1:1"), ``--rdzv-backend`` (l.446-450, default ``static``), ``--rdzv-endpoint`` (l.454),
    ``--master-addr`` (l.629, default 127.0.0.1), ``--master-port`` (l.640, default 29500). The endpoint is
    ``MASTER_ADDR:MASTER_PORT`` for the static backend without one (``get_rdzv_endpoint``, l.790-793);
    any other backend reads ``--rdzv-endpoint`` as it is, its own default port added when it names none
    and ``localhost`` when it is empty (``_with_port``). Only the command line is read (a ``PET_*``
    environment is not)."""
    lay = argv_layout(argv)
    if lay.launcher != "torchrun":
        return None
    nodes = _launcher_value(argv, lay, "nnodes")
    if nodes is None or nodes.strip() in ("1", "1:1"):
        return None
    backend = (_launcher_value(argv, lay, "rdzv_backend") or "static").strip()
    endpoint = _launcher_value(argv, lay, "rdzv_endpoint") or ""
    if backend == "static" and not endpoint:
        endpoint = f"{_launcher_value(argv, lay, 'master_addr') or '127.0.0.1'}:" \
                   f"{_launcher_value(argv, lay, 'master_port') or '29500'}"
    else:
        endpoint = _with_port(endpoint, _RDZV_DEFAULT_PORT.get(backend))
    return Rendezvous(endpoint, nodes.strip(), _launcher_value(argv, lay, "node_rank"))
