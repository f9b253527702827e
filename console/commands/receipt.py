"""``moeconsole runs receipt RUN [--json|--md] [--full] [--out DIR]``: a run's receipt.

``--json`` prints the schema-versioned receipt; ``--md`` prints it as markdown with a loss-curve
image beside the tables (matplotlib, optional: without it the markdown says so and carries a
text sparkline instead). ``--out DIR`` writes receipt.json, receipt.md and loss.png there, ready
to attach to a report. Plain output is the markdown too.
"""
from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from moeconsole.console import format as fmt
from moeconsole.console import memory as memory_view
from moeconsole.runner.rundir import jsonio, receipt as receipts, rundir
from moeconsole.runner.core.errors import InputError

SPARK = "▁▂▃▄▅▆▇█"


def plot_loss(curve: list[list[float]], path: Path, restarts_at: Sequence[int] = (), *,
              follow_dir: bool = False) -> str | None:
    """Draw the loss curve into ``path``; None when it was drawn, else why not."""
    if len(curve) < 2:
        return "fewer than two finite loss values"
    scratch = _private_mpl_config()
    try:
        return _plot(curve, path, restarts_at, follow_dir=follow_dir)
    finally:
        if scratch is not None:
            import shutil
            os.environ.pop("MPLCONFIGDIR", None)
            shutil.rmtree(scratch, ignore_errors=True)


def _private_mpl_config() -> str | None:
    """A scratch MPLCONFIGDIR (returned, to be removed) when matplotlib's own directories would not
    be writable: a HOME that is read-only, missing or someone else's, or an XDG directory that is.
    Matplotlib then made a temporary one itself and printed two lines of warnings around the
    receipt ("mkdir -p failed for path ...", "Matplotlib created a temporary cache directory ...").
    Its rule (matplotlib/__init__.py ``_get_config_or_cache_dir``, for ``get_configdir`` and for
    ``get_cachedir``, where the font list is written): $MPLCONFIGDIR for both, else
    $XDG_CONFIG_HOME/matplotlib (~/.config/matplotlib) and $XDG_CACHE_HOME/matplotlib
    (~/.cache/matplotlib), each created if missing."""
    if os.environ.get("MPLCONFIGDIR"):
        return None
    if all(_writable_dir(Path(os.environ.get(xdg) or Path.home() / default) / "matplotlib")
           for xdg, default in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"))):
        return None
    import tempfile
    scratch = tempfile.mkdtemp(prefix="moeconsole-mpl-")
    os.environ["MPLCONFIGDIR"] = scratch
    return scratch


def _writable_dir(path: Path) -> bool:
    """``path`` made if missing and writable, as matplotlib needs its directories."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        return os.access(path, os.W_OK | os.X_OK)
    except OSError:
        return False


def _plot(curve: list[list[float]], path: Path, restarts_at: Sequence[int], *, follow_dir: bool) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib)"
    fig, ax = plt.subplots(figsize=(6.4, 2.6), dpi=100)
    ax.plot([p[0] for p in curve], [p[1] for p in curve], linewidth=1.2)
    for i, step in enumerate(restarts_at):
        ax.axvline(step, color="tab:red", alpha=0.5, linestyle="--", linewidth=1,
                   label="restart" if i == 0 else None)
    if restarts_at:
        ax.legend(loc="upper right", fontsize=8)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    import io
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    # A new file renamed into place: a planted ``loss.png`` symlink is replaced, never written through.
    jsonio.atomic_write_bytes(path, png.getvalue(), follow_dir=follow_dir)
    return None


def curve_sparkline(curve: list[list[float]], width: int = 60) -> str:
    ys = [p[1] for p in curve if math.isfinite(p[1])]
    if not ys:
        return ""
    if len(ys) > width:
        ys = [ys[int(i * len(ys) / width)] for i in range(width)]
    lo, hi = min(ys), max(ys)
    span = (hi - lo) or 1.0
    return "".join(SPARK[min(len(SPARK) - 1, int((y - lo) / span * (len(SPARK) - 1)))] for y in ys)


def _env_row(name: str, e: dict[str, Any]) -> list[str]:
    return [name, fmt.num(e.get("first")), fmt.num(e.get("min")), fmt.num(e.get("median")), fmt.num(e.get("max")),
            fmt.num(e.get("last")), str(e.get("nonfinite") or 0)]


def _markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def memory_lines(mem: dict[str, Any]) -> list[str]:
    """The per-GPU envelope, tightest first: capacity = steady peak + fragmentation + transients +
    effective headroom, then the trend and the CUDA OOM verdicts."""
    gpus = mem.get("gpus") or []
    if not gpus:
        return ["no memory readings"]
    g3 = memory_view.gib_digits
    out = _markdown_table(["GPU", "capacity", "steady peak", "fragmentation", "transients", "effective headroom",
                  "trend", "activations + workspace"],
                 [[str(g.get("label") or g.get("gpu")), f"{g3(g.get('capacity_gib'))} ({g.get('capacity_source') or fmt.NA})",
                   g3(g.get("steady_peak_gib")), g3(g.get("fragmentation_gib")), g3(g.get("transients_gib")),
                   g3(g.get("effective_headroom_gib")) + ("" if g.get("ok") is not False else " (below minimum)"),
                   memory_view.trend_words(g), g3(g.get("activations_workspace_gib"))] for g in gpus])
    out += ["", f"GiB; minimum headroom {g3(mem.get('min_headroom_gib'))}"
            + (f", static estimate {g3((mem.get('static') or {}).get('per_gpu_gib'))} per GPU" if mem.get("static") else "")]
    for o in mem.get("ooms") or []:
        out.append(f"- attempt {o.get('attempt')} CUDA OOM: {o.get('memory_verdict')}: {o.get('memory_summary')}")
    return out


def _span(first: Any, last: Any) -> str:
    """"1..25", or the missing mark when no step was recorded (a run that failed at start-up)."""
    return fmt.NA if first is None and last is None else f"{fmt.intc(first)}..{fmt.intc(last)}"


def markdown(r: dict[str, Any], image: str | None, no_image_reason: str | None) -> str:
    run, steps, rec = r["run"], r["steps"], r["recipe"]
    lines = [f"# Run receipt: {run.get('name') or run['id']}", "",
             f"- run `{run['id']}`, status **{run.get('status_word') or run.get('status')}**"
             + (f", {run['waiting']}" if run.get("waiting") else ""),
             f"- started {fmt.date(run.get('started_at'))}, ended {fmt.date(run.get('ended_at'))}, "
             f"elapsed {fmt.duration(run.get('elapsed_s'))}",
             f"- attempts {run.get('attempts')}, {fmt.RESTARTS_WORD} {run.get('restarts')}, bad saves {run.get('bad_saves') or 0}",
             f"- steps {_span(steps.get('first'), steps.get('last'))} of {steps.get('max_steps') or fmt.NA} "
             f"({steps.get('records') or 0} records)",
             f"- recipe `{rec.get('name')}` hash `{rec.get('hash')}`, engine {rec.get('engine')}",
             f"- cost {fmt.money(r['cost'].get('total'))} at {fmt.money(r['cost'].get('per_hour'))}/h", ""]
    if run.get("pause_reason"):
        lines += [f"- last reason: {run['pause_reason']}", ""]
    lines += ["## Loss", ""]
    if image:
        lines += [f"![loss curve]({image})", ""]
    else:
        spark = curve_sparkline(r.get("loss_curve") or [])
        lines += [f"`{spark}`" if spark else "(no loss values)", "", f"(no plot: {no_image_reason})", ""]
    lines += ["## Metrics", ""]
    lines += _markdown_table(["series", "first", "min", "median", "max", "last", "non-finite"],
                    [_env_row(k, r[k]) for k in ("loss", "grad_norm", "mem_gib", "step_time_s", "tokens_per_s")])
    lines += ["", "## GPU memory", ""]
    lines += memory_lines(r.get("memory") or {})
    lines += ["", "## Restarts and crashes", ""]
    if r["crashes"]:
        lines += _markdown_table(["attempt", "class", "recovery", "summary"],
                        [[str(c.get("attempt")), str(c.get("class")), str(c.get("decision") or c.get("recovery") or ""),
                          str(c.get("summary") or "")[:120]] for c in r["crashes"]])
        hints = [c for c in r["crashes"] if c.get("hint")]
        if hints:
            lines += [""] + [f"- hint for attempt {c.get('attempt')} ({c.get('class')}): {c['hint']}" for c in hints]
    else:
        lines.append("none")
    lines += ["", "## Checkpoints", ""]
    if r["checkpoints"]:
        lines += _markdown_table(["step", "verdict", "tensors", "suspect", "header sha256", "content sha256", "path"],
                        [[str(c.get("step")), str(c.get("verdict")), "-" if c.get("tensors") is None else str(c["tensors"]),
                          "yes" if c.get("suspect") else "", (c.get("header_sha256") or "")[:16],
                          (c.get("sha256") or "")[:16], str(c.get("path"))] for c in r["checkpoints"]])
    else:
        lines.append("none")
    if r.get("export"):
        ex = r["export"]
        lines += ["", "## Merged model", "",
                  f"The saves are LoRA adapters; the merged Hugging Face model of the newest verified one "
                  f"({ex['checkpoint']}) is written to {ex['writes']} by:", "", "```", ex["shell"], "```"]
    lines += ["", "## Alerts", ""]
    groups = r["alerts"].get("groups") or []
    if groups:
        lines += [f"{len(groups)} cause(s), {r['alerts'].get('open', 0)} open", ""]
        lines += _markdown_table(["level", "cause", "count", "steps", "state", "first alert"],
                        [[str(g["level"]), str(g["key"]), str(g["count"]),
                          f"{g['first_step']}..{g['last_step']}" if g.get("first_step") is not None else fmt.NA,
                          str(g.get("standing") or ("acknowledged" if g["acknowledged"] else "open")),
                          str(g["title"])] for g in groups])
    elif r["alerts"]["total"]:
        lines += _markdown_table(["rule", "count"], [[k, str(v)] for k, v in sorted(r["alerts"]["by_rule"].items())])
    else:
        lines.append("none")
    versions = r["environment"].get("versions") or {}
    lines += ["", "## Environment", ""]
    if versions:
        lines += _markdown_table(["package", "version"], [[k, str(v)] for k, v in sorted(versions.items())])
    else:
        lines.append("versions were not recorded at launch")
    return "\n".join(lines) + "\n"


def run_receipt(base: Path, ref: str, *, as_json: bool, full: bool, out: str | None) -> int:
    run = rundir.resolve(base, ref)
    r = receipts.build_receipt(run, full=full).to_dict()
    if out:
        out_dir = Path(out)
        try:  # the directory the user named (it may be a link); the files in it never are followed
            rundir.make_private_dirs(out_dir)
            why = plot_loss(r["loss_curve"], out_dir / "loss.png", r["restarts_at"], follow_dir=True)
            jsonio.atomic_write_bytes(out_dir / "receipt.json", (jsonio.dumps(r) + "\n").encode(), follow_dir=True)
            jsonio.atomic_write_bytes(out_dir / "receipt.md", markdown(r, None if why else "loss.png", why).encode(),
                                      follow_dir=True)
        except OSError as exc:
            raise InputError(f"--out {out}: {exc.strerror or exc}") from None
        sys.stdout.write(f"{out_dir / 'receipt.md'}\n")
        return 0
    if as_json:
        sys.stdout.write(jsonio.dumps(r) + "\n")
        return 0
    image = run.path / "receipt" / "loss.png"
    try:  # inside the run directory, owner-only like every run file, never through a link
        rundir.make_private_dir(image.parent, exist_ok=True)
        why = plot_loss(r["loss_curve"], image, r["restarts_at"])
    except OSError as exc:
        raise InputError(f"{image.parent}: {exc.strerror or exc}") from None
    sys.stdout.write(markdown(r, None if why else os.fspath(image), why))
    return 0
