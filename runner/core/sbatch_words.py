"""What sbatch's refusal of a job says: the one owner of sbatch's words, read by the Slurm client when its own
sbatch gives no job id (``process.slurm.client.Submission``) and by the crash classifier when a log or a pasted
text holds sbatch's line (``core.crash``: a recipe's own launcher that submits, a job script that resubmits).

sbatch prints its refusal through Slurm's log with its program name (src/sbatch/sbatch.c, ``main``:
``error("Batch job submission failed: %s", slurm_strerror(errno))``, behind ``sbatch: error: ``); the reason is
``slurm_strerror``'s text of the controller's answer (src/common/slurm_errno.c: ``Requested time limit is invalid
(missing or exceeds some limit)``, ``Invalid partition name specified``, ``Invalid account or account/partition
combination specified``, ``Job violates accounting/QOS policy ...``) or, when no controller answered, of the
communication failure (``Unable to contact slurm controller (connect failure)``, ``Socket timed out on send/recv
operation``, ``Zero Bytes were transmitted or received``). On success it prints ``Submitted batch job <id>``.

Worth trying again later (``transient``; review R40): a controller out of reach (``unreachable``), and what sbatch.c's
own ``main`` loop retries itself before it gives up: ``while (slurm_submit_batch_job(...) < 0)`` sleeps and submits
again on ESLURM_ERROR_ON_DESC_TO_RECORD_COPY ("Slurm job queue full, sleeping and retrying."), ESLURM_NODES_BUSY
("Job creation temporarily disabled, retrying") and EAGAIN ("Slurm temporarily unable to accept job, sleeping and
retrying."), and prints the refusal only after MAX_RETRIES (15) with those errors' texts (slurm_errno.c: "Unable to
create job record, try again", "Requested nodes are busy"; strerror(EAGAIN): "Resource temporarily unavailable").
So is a count of queued jobs at its limit: slurmctld names the limit it met on the line before the refusal
(``sbatch: error: QOSMaxSubmitJobPerUserLimit``; the job_reason names of src/common/slurm_protocol_defs.c,
``job_state_reason_string``: QOSMaxSubmitJobPerUserLimit, QOSMaxSubmitJobPerAccountLimit, QOSGrpSubmitJobsLimit,
AssocMaxSubmitJobLimit, AssocGrpSubmitJobsLimit), which clears once the user's jobs drain; ESLURM_ACCOUNTING_POLICY's
own text ("Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)") names a size or
time limit too, so alone it is a refusal.
"""
from __future__ import annotations

import re

# sbatch's words for a controller it cannot reach right now (the job was not refused)
UNREACHABLE_WORDS = ("Unable to contact slurm controller", "Socket timed out", "timed out", "temporarily unable",
                     "Connection refused", "Zero Bytes were transmitted", "Communication connection failure")
# sbatch's words for a controller that could not take the job now: the errors sbatch.c's main loop retries (their
# texts and its retry notes) and the limits on a count of queued jobs (the module's docstring)
BUSY_WORDS = ("Resource temporarily unavailable", "Unable to create job record, try again", "Requested nodes are busy",
              "sleeping and retrying", "temporarily disabled, retrying", "SubmitJobPerUserLimit",
              "SubmitJobPerAccountLimit", "SubmitJobsLimit", "MaxSubmitJobLimit")

# sbatch's own line at a line's start (behind a markdown quote or emphasis as a paste shows it), never a code span
# that closes on the line ("`sbatch: error: ...` means ...": a quote of it; slurm_strerror's texts hold no backtick);
# possessive, so a long run of spaces costs its length (review R40)
_HEAD = r"^(?:[ \t>]|\*\*?)*+"
SBATCH_REFUSAL = re.compile(_HEAD + r"sbatch: error: Batch job submission failed: (?P<why>[^\s`][^`\n]*+)$")
# any other line sbatch prints (a reason slurmctld gave, a retry note)
SBATCH_LINE = re.compile(_HEAD + r"sbatch: (?:error: )?(?P<what>\S[^\n]*)")
# sbatch's success (sbatch.c: printf("Submitted batch job %u", ...)): a refusal before it was retried and got in
SBATCH_SUBMITTED = re.compile(_HEAD + r"Submitted batch job \d+")


def refusal_reason(text: str) -> str | None:
    """The reason on sbatch's refusal line (None: not that line), without the trailing spaces or a closing emphasis."""
    m = SBATCH_REFUSAL.match(text)
    return None if m is None else m.group("why").rstrip().rstrip("*").rstrip() or None


def controller_unreachable(why: str) -> bool:
    """sbatch's reason says no controller answered (try again later), not that it refused the job."""
    low = why.lower()
    return any(w.lower() in low for w in UNREACHABLE_WORDS)


def transient(text: str) -> bool:
    """sbatch's words (its reason, or its lines around it) say Slurm could not take the job now, not that it refused
    it: no controller answered, or one sbatch retries itself was busy or a queued-job count was at its limit."""
    low = text.lower()
    return controller_unreachable(text) or any(w.lower() in low for w in BUSY_WORDS)
