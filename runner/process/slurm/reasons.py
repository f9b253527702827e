"""Slurm's pending reasons that waiting never clears, and what to change for each (pure).

A job PENDING for ``Priority`` or ``Resources`` starts once other jobs end; a job PENDING for
``PartitionNodeLimit`` (two nodes asked of a one-node partition) sits in the queue forever. The
runner raises a WARN for the second kind (``moeconsole.runner.supervisor``), naming the reason
and the recipe key to change; this table is the one place that says which reasons those are.

The reason words are Slurm's own: ``src/common/job_state_reason.c`` (the ``jsra[]`` table that
``job_state_reason_string`` reads; SchedMD/slurm 284c3b95f0, 2026-08-20) and their meanings in
``doc/html/job_reason_codes.shtml`` and ``doc/man/man1/squeue.1`` ("JOB REASON CODES"). Left out
on purpose, because they clear as other jobs end or time passes: ``Priority``, ``Resources``,
``Dependency``, ``BeginTime``, ``Licenses``, ``Reservation``, every aggregate limit
(``AssocGrp*``, ``QOSGrp*``), the limits on how many jobs or resources a user or account holds
at once (``AssocMaxJobsLimit``, ``AssocMaxSubmitJobLimit``, ``QOSMax*PerUser*``,
``Max*PerAccount``, ``Max*RunMinsPer*``), ``JobArrayTaskLimit``, ``AccountingPolicy``.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, NamedTuple

from moeconsole.runner.process.slurm.text import PENDING_STATES

# reason word -> what to change. The recipe's keys are named (``slurm.nodes``, ``slurm.time``,
# ``slurm.partition``, ``slurm.account``, ``slurm.sbatch``).
NEVER_BY_WAITING: dict[str, str] = {
    # the partition's limits (squeue.1: "outside of its partition's current limits")
    "PartitionNodeLimit": "the job asks for more (or fewer) nodes than its partition allows, or the partition's "
                          "nodes are down or drained: lower slurm.nodes or send it to a partition with enough "
                          "nodes (slurm.partition; sinfo lists them)",
    "PartitionTimeLimit": "the job's time limit is longer than its partition allows: lower slurm.time or choose "
                          "a partition with a longer MaxTime (slurm.partition)",
    "PartitionDown": "the partition is DOWN: choose another partition (slurm.partition) or ask an administrator",
    "PartitionInactive": "the partition is INACTIVE: choose another partition (slurm.partition) or ask an "
                         "administrator",
    "PartitionConfig": "the job breaks a limit of its partition: check slurm.nodes, slurm.time and "
                       "slurm.sbatch against `scontrol show partition`",
    "AccountNotAllowed": "the account may not use this partition: change slurm.account or slurm.partition",
    "QOSNotAllowed": "the QOS may not use this partition: change the --qos in slurm.sbatch or slurm.partition",
    "InvalidAccount": "the account is invalid: change slurm.account",
    "InvalidQOS": "the QOS is invalid: change the --qos in slurm.sbatch",
    "BadConstraints": "the job's requirements can never be met: check --constraint, --gres and the node counts "
                      "in the recipe's slurm section",
    "DependencyNeverSatisfied": "the job depends on a job that will never satisfy it: cancel it (k) and drop the "
                                "--dependency from slurm.sbatch",
    "JobHeldAdmin": "an administrator holds the job: ask them to release it",
    "JobHeldUser": "the job is held: `scontrol release JOB` lets it start",
    "JobHoldMaxRequeue": "the job was requeued too often and is held: `scontrol release JOB` or cancel it",
    "MaxMemPerLimit": "the memory asked per CPU or per node is over the limit: lower --mem/--mem-per-cpu in "
                      "slurm.sbatch",
    "DeadLine": "the job cannot meet its --deadline: change it in slurm.sbatch",
    "ReservationDeleted": "the job's reservation was deleted: drop --reservation from slurm.sbatch",
    "ReservationInvalid": "the job's reservation is invalid: fix --reservation in slurm.sbatch",
    "NodeDown": "a node the job needs is down: exclude it (--exclude in slurm.sbatch) or ask an administrator",
}
# The job's own request exceeds (or falls short of) a per-job or per-node limit of its
# association or QOS (job_reason_codes.shtml: "A portion of the job request exceeds a maximum
# limit (e.g., PerJob, PerNode)"; QOSMin*: below the QOS's minimum).
_PER_JOB = re.compile(r"^(Assoc|QOS)Max\w*Per(Job|Node)(Limit)?$|^QOSMin\w+$")
PER_JOB_ADVICE = ("the job's request is outside a per-job limit of its association or QOS (`sacctmgr show "
                  "assoc` / `sacctmgr show qos`): lower slurm.nodes, slurm.time or the resources in slurm.sbatch")
# squeue.1: "Nodes which are DOWN, DRAINED, or not responding will be identified as part of the
# job's reason field as UnavailableNodes. Such nodes will typically require the intervention of
# a system administrator."
UNAVAILABLE = "UnavailableNodes:"


class Stuck(NamedTuple):
    reason: str      # Slurm's word (PartitionNodeLimit)
    detail: str      # what Slurm added after it (the unavailable nodes), or ""
    advice: str      # what to change


def stuck(reason: str | None) -> Stuck | None:
    """A pending reason that waiting never clears, with what to change; None for one that clears
    as the queue moves (or no reason). ``reason`` as squeue's ``%r`` prints it, e.g.
    ``ReqNodeNotAvail, UnavailableNodes:node2``."""
    text = (reason or "").strip()
    if not text:
        return None
    word, _, rest = text.partition(",")
    word, rest = word.strip(), rest.strip()
    if word == "ReqNodeNotAvail":
        nodes = rest.partition(UNAVAILABLE)[2].strip() if UNAVAILABLE in rest else ""
        if not nodes:   # in use or reserved: that clears
            return None
        return Stuck(word, f"unavailable nodes {nodes}",
                     f"the nodes it needs ({nodes}) are down, drained or not responding: exclude them "
                     "(--exclude in slurm.sbatch), send it elsewhere (slurm.partition) or ask an administrator")
    advice = NEVER_BY_WAITING.get(word) or (PER_JOB_ADVICE if _PER_JOB.match(word) else None)
    return None if advice is None else Stuck(word, rest, advice)


def stuck_message(job_id: str | None, s: Stuck) -> str:
    """The alert's line: the job, Slurm's reason (and its detail) and what to change."""
    detail = f" ({s.detail})" if s.detail else ""
    return f"Slurm job {job_id or '?'} cannot start by waiting: {s.reason}{detail}: {s.advice}"


RULE = "slurm_pending"   # the alert's rule and cause (one group: the job that cannot start)


def _stuck_of(job: Mapping[str, Any] | None) -> Stuck | None:
    if not job or str(job.get("state") or "") not in PENDING_STATES or job.get("ended_at") is not None:
        return None
    return stuck(job.get("reason"))


def pending_alert(before: Mapping[str, Any] | None, job: Mapping[str, Any]) -> dict[str, Any] | None:
    """The alert event's fields when a batch job's record changes from ``before`` to ``job``
    (``state.json``'s ``job``, a ``JobRecord``): a WARN when it now waits for a reason that never
    clears (new for another job or attempt; an ``update`` of the open one when only the reason
    changed), its end (``resolved``) when it no longer does (started, ended, or waits for a
    reason that clears); else None."""
    was, now = _stuck_of(before), _stuck_of(job)
    same_job = bool(before) and (before or {}).get("job_id") == job.get("job_id") \
        and (before or {}).get("attempt") == job.get("attempt")
    if now is not None and (not same_job or was != now):
        message = stuck_message(job.get("job_id"), now)
        # the same job, stuck for another reason (Slurm says PartitionConfig, then
        # PartitionNodeLimit): the open alert's line changes, it is not a second event
        update = 1 if same_job and was is not None else 0
        return {"level": "warning", "rule": RULE, "cause": RULE, "message": message, "update": update,
                "values": {"headline": message, "reason": now.reason, "detail": now.detail, "advice": now.advice,
                           "job_id": job.get("job_id")}}
    if was is not None and now is None:
        message = f"Slurm job {job.get('job_id') or '?'} no longer waits for {was.reason}"
        return {"level": "info", "rule": RULE, "cause": RULE, "message": message, "resolved": True,
                "values": {"reason": was.reason, "job_id": job.get("job_id"), "state": job.get("state")}}
    return None
