"""``moeconsole prometheus rules``: print the shipped alert rules;
``moeconsole prometheus serve RUN [--port N] [--textfile PATH]``: the metrics exporter for a run
(the runner starts one itself when the recipe's ``metrics`` section asks for it)."""
from __future__ import annotations

import sys
from importlib import resources

from moeconsole.runner.rundir import rundir
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.rundir.paths import runs_base


def rules_text() -> str:
    return resources.files("moeconsole.runner.ops").joinpath("alert_rules.yml").read_text()


def run(args) -> int:
    if args.action == "rules":
        sys.stdout.write(rules_text())
        return 0
    if args.action == "serve":
        if not args.run:
            raise InputError("prometheus serve: which run? (moeconsole prometheus serve RUN --port N)")
        run_dir = rundir.resolve(runs_base(getattr(args, "runs_dir", None)), args.run)
        from moeconsole.runner.ops import exporter
        argv = [str(run_dir.path), "--interval", str(args.interval), "--addr", args.addr]
        if args.port is not None:
            argv += ["--port", str(args.port)]
        if args.textfile:
            argv += ["--textfile", args.textfile]
        return exporter.main(argv)
    raise InputError(f"prometheus: unknown action {args.action!r} (choose from rules, serve)")
