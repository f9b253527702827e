"""The table of Slurm pending reasons that waiting never clears (pure): Slurm's own words
(src/common/job_state_reason.c, squeue.1 "JOB REASON CODES"), what to change for each, and the
alert a job's record change gives."""
from __future__ import annotations

from moeconsole.runner.process.slurm.reasons import RULE, pending_alert, stuck


def test_reasons_that_never_clear_name_what_to_change():
    s = stuck("PartitionNodeLimit")
    assert s is not None and s.reason == "PartitionNodeLimit" and "slurm.nodes" in s.advice \
        and "slurm.partition" in s.advice
    assert "slurm.time" in stuck("PartitionTimeLimit").advice
    for word in ("PartitionDown", "PartitionInactive", "InvalidAccount", "InvalidQOS", "BadConstraints",
                 "DependencyNeverSatisfied", "JobHeldUser", "JobHeldAdmin", "AccountNotAllowed",
                 # per-job limits of an association or QOS: the request itself is too big
                 "QOSMaxNodePerJobLimit", "QOSMaxWallDurationPerJobLimit", "AssocMaxNodePerJobLimit",
                 "AssocMaxCpuPerJobLimit", "AssocMaxGRESPerNode", "QOSMaxGRESPerJob", "QOSMinCpuNotSatisfied"):
        got = stuck(word)
        assert got is not None and got.reason == word and got.advice, word


def test_reasons_that_clear_as_the_queue_moves_are_not_alerts():
    for word in (None, "", "None", "Priority", "Resources", "Dependency", "BeginTime", "Licenses", "Reservation",
                 "AssocMaxJobsLimit", "AssocMaxSubmitJobLimit", "AssocGrpNodeLimit", "QOSGrpCpuLimit",
                 "QOSMaxJobsPerUserLimit", "QOSMaxCpuPerUserLimit", "MaxJobsPerAccount", "JobArrayTaskLimit",
                 "AccountingPolicy", "ReqNodeNotAvail", "ReqNodeNotAvail, May be reserved for other job"):
        assert stuck(word) is None, word


def test_req_node_not_avail_is_stuck_only_with_unavailable_nodes():
    # squeue.1: DOWN, DRAINED or not responding nodes are named as "UnavailableNodes"
    s = stuck("ReqNodeNotAvail, UnavailableNodes:node[2-3]")
    assert s is not None and s.detail == "unavailable nodes node[2-3]" and "node[2-3]" in s.advice


def _job(state="PENDING", reason="PartitionNodeLimit", job_id="17", attempt=1):
    return {"engine": "slurm", "attempt": attempt, "job_id": job_id, "state": state, "reason": reason}


def test_the_alert_opens_once_per_job_and_reason_and_ends_when_the_job_starts():
    ev = pending_alert(None, _job())
    assert ev is not None and ev["level"] == "warning" and ev["rule"] == ev["cause"] == RULE
    assert ev["message"].startswith("Slurm job 17 cannot start by waiting: PartitionNodeLimit: ")
    assert "slurm.nodes" in ev["values"]["headline"]
    assert pending_alert(_job(), {**_job(), "nodes": []}) is None, "the same job and reason: said once"
    assert pending_alert(_job(reason="Priority"), _job()) is not None, "now stuck: news"
    assert ev["update"] == 0 and pending_alert(_job(reason="Priority"), _job())["update"] == 0
    changed = pending_alert(_job(reason="PartitionConfig"), _job())
    assert changed["values"]["reason"] == "PartitionNodeLimit" and changed["update"] == 1, \
        "the same job stuck for another reason: the open alert's line, not a second event"
    new = pending_alert(_job(), _job(job_id="18", attempt=2))
    assert new is not None and new["update"] == 0, "a new attempt's job: its own alert"
    end = pending_alert(_job(), _job(state="RUNNING", reason=None))
    assert end is not None and end["resolved"] and end["level"] == "info"
    assert pending_alert(_job(), _job(state="CANCELLED", reason=None))["resolved"]
    assert pending_alert(_job(reason="Priority"), _job(state="RUNNING", reason=None)) is None
