"""An agent's file (``telemetry/<host>.json``, written by ``moeconsole agent``) at a glance: only
the fields the node judgement (``moeconsole.runner.core.nodehealth.node_figures``) and the run
screen's summary line of a node use, typed so that msgspec skips the rest of the document
without building it (each GPU's name, power, clocks and processes; the host's figures). Leaf
values stay untyped (``Any``): the readers check them one by one, as they do in the whole
document; a file whose structure differs (another version's) fails ``DECODER.decode`` with
``msgspec.ValidationError`` and is then read whole. Imported only by a reader that glances
(a console's run screen past ``NodeReader.GLANCE_PAST`` nodes)."""
from typing import Any

import msgspec


class GpuGlance(msgspec.Struct):
    index: Any = None
    util_pct: Any = None
    mem_used_mib: Any = None
    mem_total_mib: Any = None
    temp_c: Any = None


class GpusGlance(msgspec.Struct):
    available: Any = None
    reason: Any = None
    gpus: list[GpuGlance] = []


class HostGlance(msgspec.Struct):
    hostname: Any = None


class RankGlance(msgspec.Struct):
    rank: Any = None


class AgentGlance(msgspec.Struct):
    t: Any = None
    host: HostGlance | None = None
    gpu: GpusGlance | None = None
    ranks: list[RankGlance] = []
    processes: Any = None


DECODER = msgspec.json.Decoder(AgentGlance)
# A glanced GPU as the dict a whole read gives for those fields (its fields, in their order):
# msgspec's own conversion, a third of the time of a dict built field by field in Python
# (a 128-node console builds 512 a second).
gpu_dict = msgspec.structs.asdict
ValidationError = msgspec.ValidationError
