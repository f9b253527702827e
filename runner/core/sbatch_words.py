"""What sbatch's refusal of a job says: the one owner of sbatch's words, read by the Slurm client when its own
sbatch gives no job id (``process.slurm.client.Submission``) and by the crash classifier when a log or a pasted
text holds sbatch's line (``core.crash``: a recipe's own launcher that submits, a job script that resubmits).

sbatch prints its refusal through Slurm's log with its program name (src/sbatch/sbatch.c, ``main``:
``error("Batch job submission failed: %s", slurm_strerror(errno))``, behind ``sbatch: error: ``); the reason is
``slurm_strerror``'s text of the controller's answer (src/common/slurm_errno.c: ``Requested time limit is invalid
(missing or exceeds some limit)``, ``Invalid partition name specified``, ``Invalid account or account/partition
combination specified``, ``Job violates accounting/QOS policy ...``) or, when no controller answered, of the
communication failure (``Unable to contact slurm controller (connect failure)``, ``Socket timed out on send/recv
operation``, ``Zero Bytes were transmitted or received``): those are worth trying again later, the others are not.
"""
from __future__ import annotations

import re

# sbatch's words for a controller it cannot reach right now (the job was not refused)
UNREACHABLE_WORDS = ("Unable to contact slurm controller", "Socket timed out", "timed out", "temporarily unable",
                     "Connection refused", "Zero Bytes were transmitted", "Communication connection failure")

# sbatch's refusal line at a line's start (behind a markdown quote or emphasis, as a paste shows it)
SBATCH_REFUSAL = re.compile(r"^[\s>`*]*sbatch: error: Batch job submission failed: (?P<why>\S.*?)\s*$")


def unreachable(why: str) -> bool:
    """sbatch's reason says no controller answered (try again later), not that it refused the job."""
    low = why.lower()
    return any(w.lower() in low for w in UNREACHABLE_WORDS)
