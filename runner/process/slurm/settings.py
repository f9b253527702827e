"""The recipe's ``slurm:`` section, checked when the recipe loads (no engine needed: ``lint`` and
``--set`` use it without Slurm)."""
from __future__ import annotations

from typing import Annotated, Any

from moeconsole.runner.process.slurm.text import check_sbatch_option, check_srun_option
from moeconsole.runner.core import bounds, schema

_NAME = schema.text(r"^[A-Za-z0-9._,+-]+$", "a Slurm name (letters, digits, . _ , + -)")
_TIME = schema.text(r"^(\d+-)?\d+(:\d{2}){0,2}$", "a Slurm time (MM, HH:MM:SS, D-HH:MM:SS)")
_POLL = bounds.Range(0.05, 600.0)
_RENDEZVOUS_PORT = bounds.Range(1024, 65535, integer=True, unit="port")


class SlurmSettings(schema.Section, frozen=True):
    """The recipe's ``slurm:`` section."""
    nodes: schema.PositiveCount = 1
    gpus_per_node: schema.PositiveCount | None = None
    ntasks_per_node: schema.PositiveCount = 1
    # the job's time limit (MM, HH:MM:SS, D-HH:MM:SS); a bare number is minutes
    time: Annotated[str, _TIME] | schema.Count | None = None
    partition: Annotated[str, _NAME] | None = None
    account: Annotated[str, _NAME] | None = None
    sbatch: tuple[str, ...] = ()     # more options, each "--flag" or "--flag=value"
    srun: tuple[str, ...] = ()       # options for the training step's srun
    poll_s: Annotated[float, schema.within(_POLL)] = 2.0   # how often Slurm is asked about the job
    agents: bool = False             # one `moeconsole agent` per node, for the GPU panel
    # multi-node: the training runs under moeconsole.runner.process.slurm.nodestep
    rendezvous_port: Annotated[int, schema.within(_RENDEZVOUS_PORT)] | None = None
    rendezvous_wait_s: Annotated[float, schema.within(bounds.Range(0.0, bounds.DAY))] = 600.0  # how long the first node waits for a held port

    @property
    def time_limit(self) -> str | None:
        """``time`` as sbatch takes it (a bare number of minutes as text)."""
        return None if self.time is None else str(self.time)

    def __post_init__(self) -> None:
        for key in ("sbatch", "srun"):
            for opt in getattr(self, key):
                try:
                    (check_sbatch_option if key == "sbatch" else check_srun_option)(opt)
                except ValueError as exc:
                    raise ValueError(f"{key}: {exc}") from None

    @classmethod
    def from_recipe(cls, section: Any) -> "SlurmSettings":
        """SettingsError (a ValueError) naming the key (``slurm.nodes: ...``)."""
        return schema.convert({} if section is None else section, cls, "slurm")
