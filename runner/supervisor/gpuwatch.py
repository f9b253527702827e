"""The run's view of its GPUs: NVML snapshots for crash reports and the crash classes, the
memory samples of the envelope while an attempt runs, and the whole run's GPU and host history
(``gpu-history.json``, continued by a new runner). Telemetry never stops supervision: a backend
that fails says so in the snapshot (``available: false``) and the runner goes on."""
from __future__ import annotations

import time
from typing import Any, Callable, Collection

from moeconsole.runner.process import proctree
from moeconsole.runner.rundir import gpuhistory, rundir
from moeconsole.runner.supervisor.memory_feed import MemoryFeed


class GpuWatch:
    def __init__(self, run: rundir.RunDir, memory: MemoryFeed, diag: Callable[[str], None]) -> None:
        from moeconsole.runner.telemetry.host import CpuMeter
        self.run = run
        self.memory = memory  # the envelope per GPU, its forecast, OOM verdicts
        self.diag = diag
        self.history = gpuhistory.load_history(run) or gpuhistory.GpuHistory()
        self.cpu_meter = CpuMeter(share_in=run.path.parent)  # one-shots on this host start from its readings
        self._saved_at = 0.0
        self.backend: Any = None
        try:
            from moeconsole.runner.telemetry.gpu import get_backend
            self.backend = get_backend()
        except Exception as exc:  # telemetry must never stop supervision
            diag(f"GPU telemetry unavailable: {exc}")

    def snapshot(self) -> dict[str, Any] | None:
        """The GPUs as NVML sees them now (None without a backend)."""
        if not self.backend:
            return None
        try:
            return self.backend.snapshot().to_dict()
        except Exception as exc:
            return {"available": False, "reason": str(exc)}

    def foreign_memory(self, gpu: dict[str, Any] | None, own: Collection[int]) -> bool:
        """Someone else's process holds memory on the GPUs (``gpu``: a snapshot; ``own``: the
        attempt's PIDs)."""
        if not gpu or not gpu.get("available"):
            return False
        listed = [p["pid"] for g in gpu.get("gpus", []) for p in g.get("processes") or [] if p.get("pid")]
        return bool(proctree.foreign_pids(listed, set(own), self.run.run_id, self.run.path))

    def explainer(self, own_pids: Collection[int], *, attempt_start_step: int, env: dict[str, str],
                  python: str | None) -> Callable[[Any, int | None], dict[str, Any] | None]:
        """The memory verdict of a CUDA OOM (the judge's ``explain``): the PIDs its message
        names count as foreign only when proven to be none of the attempt's."""
        from moeconsole.runner.core.crash import foreign_holders
        from moeconsole.runner.process.proctree import live_pid_set

        def explain(verdict: Any, step: int | None) -> dict[str, Any] | None:
            return self.memory.explain(verdict, prove_foreign=lambda named: foreign_holders(named, own_pids,
                                                                                              live_pid_set()),
                                       last_step=step, attempt_start_step=attempt_start_step, env=env, python=python)
        return explain

    def sample(self, now: float, step: int | None, own_pids: Collection[int]) -> bool:
        """NVML's view of the run's GPUs into the history and the memory envelope (a step's peak
        is the highest sample during it); True when the envelope was fed."""
        from moeconsole.runner.telemetry.host import ram_now
        if self.backend is None:
            return False
        gpu = self.snapshot()
        self.history.feed(gpu, {"cpu_pct": self.cpu_meter.sample(), **ram_now()}, now)
        if gpu and gpu.get("available"):
            self.memory.on_gpus(gpu, step, own_pids, now)
            return True
        if gpu and gpu.get("backend") == "none":   # no NVML here at all (not a snapshot that failed)
            self.memory.watch.no_gpu = True
        return False

    def save(self, run: rundir.RunDir, force: bool = False) -> None:
        """gpu-history.json in ``run`` (the run directory where it is now), at most every
        ``gpuhistory.SAVE_S`` unless forced."""
        if self.history.changed and (force or time.monotonic() - self._saved_at >= gpuhistory.SAVE_S):
            self._saved_at = time.monotonic()
            try:
                gpuhistory.save_history(run, self.history)
            except OSError as exc:
                self.diag(f"gpu-history.json not written: {exc}")
