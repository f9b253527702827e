"""The table of Slurm pending reasons that waiting never clears (pure): Slurm's own words
(src/common/job_state_reason.c, squeue.1 "JOB REASON CODES"), what to change for each, and the
alert a job's record change gives."""
from __future__ import annotations

from moeconsole.runner.process.slurm.reasons import NEVER_BY_WAITING, RULE, pending_alert, stuck

# Every reason word Slurm has: the ``.str`` of each entry of ``jsra[]`` in
# src/common/job_state_reason.c (SchedMD/slurm 284c3b95f08a2dc2478499837b03355e1b9c5c75).
SLURM_REASONS = frozenset("""
    AccountNotAllowed AccountingPolicy AssocGrpBB AssocGrpBBMinutes AssocGrpBBRunMinutes
    AssocGrpBilling AssocGrpBillingMinutes AssocGrpBillingRunMinutes AssocGrpCPUMinutesLimit
    AssocGrpCPURunMinutesLimit AssocGrpCpuLimit AssocGrpEnergy AssocGrpEnergyMinutes
    AssocGrpEnergyRunMinutes AssocGrpGRES AssocGrpGRESMinutes AssocGrpGRESRunMinutes
    AssocGrpJobsLimit AssocGrpLicense AssocGrpLicenseMinutes AssocGrpLicenseRunMinutes
    AssocGrpMemLimit AssocGrpMemMinutes AssocGrpMemRunMinutes AssocGrpNodeLimit AssocGrpNodeMinutes
    AssocGrpNodeRunMinutes AssocGrpSubmitJobsLimit AssocGrpUnknown AssocGrpUnknownMinutes
    AssocGrpUnknownRunMinutes AssocGrpWallLimit AssocMaxBBMinutesPerJob AssocMaxBBPerJob
    AssocMaxBBPerNode AssocMaxBillingMinutesPerJob AssocMaxBillingPerJob AssocMaxBillingPerNode
    AssocMaxCpuMinutesPerJobLimit AssocMaxCpuPerJobLimit AssocMaxCpuPerNode
    AssocMaxEnergyMinutesPerJob AssocMaxEnergyPerJob AssocMaxEnergyPerNode AssocMaxGRESMinutesPerJob
    AssocMaxGRESPerJob AssocMaxGRESPerNode AssocMaxJobsLimit AssocMaxLicenseMinutesPerJob
    AssocMaxLicensePerJob AssocMaxMemMinutesPerJob AssocMaxMemPerJob AssocMaxMemPerNode
    AssocMaxNodeMinutesPerJob AssocMaxNodePerJobLimit AssocMaxSubmitJobLimit
    AssocMaxUnknownMinutesPerJob AssocMaxUnknownPerJob AssocMaxUnknownPerNode
    AssocMaxWallDurationPerJobLimit AssociationJobLimit AssociationResourceLimit
    AssociationTimeLimit BadConstraints BeginTime BurstBufferOperation BurstBufferResources
    BurstBufferStageIn Cleaning Constraints DeadLine Dependency DependencyNeverSatisfied FedJobLock
    InactiveLimit InvalidAccount InvalidQOS JobArrayTaskLimit JobHeldAdmin JobHeldUser
    JobHoldMaxRequeue JobLaunchFailure Licenses MaxBBPerAccount MaxBBRunMinsPerAccount
    MaxBBRunMinsPerUser MaxBillingPerAccount MaxBillingRunMinsPerAccount MaxBillingRunMinsPerUser
    MaxCpuPerAccount MaxCpuRunMinsPerAccount MaxCpuRunMinsPerUser MaxEnergyPerAccount
    MaxEnergyRunMinsPerAccount MaxEnergyRunMinsPerUser MaxGRESPerAccount MaxGRESRunMinsPerAccount
    MaxGRESRunMinsPerUser MaxJobsPerAccount MaxLicensePerAccount MaxLicenseRunMinsPerAccount
    MaxLicenseRunMinsPerUser MaxMemPerLimit MaxMemoryPerAccount MaxMemoryRunMinsPerAccount
    MaxMemoryRunMinsPerUser MaxNodePerAccount MaxNodeRunMinsPerAccount MaxNodeRunMinsPerUser
    MaxPoweredUpNodes MaxSubmitJobsPerAccount MaxUnknownPerAccount MaxUnknownRunMinsPerAccount
    MaxUnknownRunMinsPerUser MpiPortsBusy NodeDown NonZeroExitCode None NvidiaImexChannels
    OutOfMemory PartitionConfig PartitionDown PartitionInactive PartitionNodeLimit
    PartitionTimeLimit Priority Prolog QOSGrpBB QOSGrpBBMinutes QOSGrpBBRunMinutes QOSGrpBilling
    QOSGrpBillingMinutes QOSGrpBillingRunMinutes QOSGrpCPUMinutesLimit QOSGrpCPURunMinutesLimit
    QOSGrpCpuLimit QOSGrpEnergy QOSGrpEnergyMinutes QOSGrpEnergyRunMinutes QOSGrpGRES
    QOSGrpGRESMinutes QOSGrpGRESRunMinutes QOSGrpJobsLimit QOSGrpLicense QOSGrpLicenseMinutes
    QOSGrpLicenseRunMinutes QOSGrpMemLimit QOSGrpMemoryMinutes QOSGrpMemoryRunMinutes
    QOSGrpNodeLimit QOSGrpNodeMinutes QOSGrpNodeRunMinutes QOSGrpSubmitJobsLimit QOSGrpUnknown
    QOSGrpUnknownMinutes QOSGrpUnknownRunMinutes QOSGrpWallLimit QOSJobLimit QOSMaxBBPerJob
    QOSMaxBBPerNode QOSMaxBBPerUser QOSMaxBillingMinutesPerJob QOSMaxBillingPerJob
    QOSMaxBillingPerNode QOSMaxBillingPerUser QOSMaxCpuMinutesPerJobLimit QOSMaxCpuPerJobLimit
    QOSMaxCpuPerNode QOSMaxCpuPerUserLimit QOSMaxEnergyMinutesPerJob QOSMaxEnergyPerJob
    QOSMaxEnergyPerNode QOSMaxEnergyPerUser QOSMaxGRESMinutesPerJob QOSMaxGRESPerJob
    QOSMaxGRESPerNode QOSMaxGRESPerUser QOSMaxJobsPerUserLimit QOSMaxLicenseMinutesPerJob
    QOSMaxLicensePerJob QOSMaxLicensePerUser QOSMaxMemoryMinutesPerJob QOSMaxMemoryPerJob
    QOSMaxMemoryPerNode QOSMaxMemoryPerUser QOSMaxNodeMinutesPerJob QOSMaxNodePerJobLimit
    QOSMaxNodePerUserLimit QOSMaxSubmitJobPerUserLimit QOSMaxUnknownMinutesPerJob
    QOSMaxUnknownPerJob QOSMaxUnknownPerNode QOSMaxUnknownPerUser QOSMaxWallDurationPerJobLimit
    QOSMinBB QOSMinBilling QOSMinCpuNotSatisfied QOSMinEnergy QOSMinGRES QOSMinLicense QOSMinMemory
    QOSMinNode QOSMinUnknown QOSNotAllowed QOSResourceLimit QOSTimeLimit QOSUsageThreshold
    RaisedSignal ReqNodeNotAvail Reservation ReservationDeleted ReservationInvalid Resources
    SchedDefer SystemFailure TimeLimit
""".split())


def test_the_table_names_only_reasons_slurm_has():
    assert set(NEVER_BY_WAITING) <= SLURM_REASONS, set(NEVER_BY_WAITING) - SLURM_REASONS
    stuck_words = {w for w in SLURM_REASONS if stuck(w) is not None}
    # the per-job limits the pattern covers are Slurm's words too, and none that clears by waiting
    assert {"QOSMaxNodePerJobLimit", "AssocMaxWallDurationPerJobLimit", "QOSMinGRES"} <= stuck_words
    assert not stuck_words & {"AssocMaxJobsLimit", "QOSMaxJobsPerUserLimit", "AssocGrpNodeLimit", "Priority",
                              "Resources", "MaxJobsPerAccount", "QOSMaxCpuPerUserLimit", "MaxCpuRunMinsPerUser"}


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
