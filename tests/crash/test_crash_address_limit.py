"""Round 15: a host allocation refused at the address-space limit the attempt ran under (`ulimit -v`,
RLIMIT_AS; `ulimit -d`, RLIMIT_DATA) is the limit's, not a host OOM: environment_error, not restarted."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

HEAD = ['{"step": 3}', "Traceback (most recent call last):", '  File "train.py", line 5, in <module>']
C10 = ("RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 3221225472 bytes. "
       "Error code 12 (Cannot allocate memory)")


@pytest.mark.parametrize("last", ["MemoryError", "MemoryError: out of memory", C10,
                                  "OSError: [Errno 12] Cannot allocate memory"])
def test_a_host_allocation_refused_under_an_address_limit_names_the_limit(last):
    v = classify(1, [*HEAD, last], address_limit=2 << 30)
    assert v.cls == "environment_error" and v.recovery == "fail" and not v.retryable
    assert "address-space limit (ulimit -v or -d) of 2.0 GB" in v.summary and "ulimit -v unlimited" in (v.hint or "")


@pytest.mark.parametrize("last,cls", [(C10, "killed_oom"), ("MemoryError", "unknown")])
def test_without_a_limit_the_same_lines_read_as_before(last, cls):
    assert classify(1, [*HEAD, last]).cls == cls


@pytest.mark.parametrize("last,cls", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "cuda_oom"),   # device memory
    ("ValueError: MemoryError is not what ended this", "unknown")])
def test_other_ends_under_a_limit_are_not_the_limits(last, cls):
    assert classify(1, [*HEAD, last], address_limit=2 << 30).cls == cls


# Review R36 (finding 1): the limit is named only for a refused allocation that ended the attempt; under any finite
# limit, an earlier ENOMEM the trainer logged and trained past turned real OOMs and faults into a FAILED run.
ENOMEM = "OSError: [Errno 12] Cannot allocate memory"
TB = HEAD[1:]
CUDA_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
            "of 79.15 GiB of which 1.20 GiB is free.")
TIB = 1 << 40


@pytest.mark.parametrize("rc,tail,kw,cls", [
    (1, [ENOMEM, '{"step": 4}', *TB, CUDA_OOM], {}, "cuda_oom"),                       # a fork's ENOMEM, then the GPU's OOM
    (137, ['{"step": 3}', C10, '{"step": 4}'], {}, "killed_oom"),                       # then SIGKILL
    (137, ['{"step": 3}', ENOMEM, '{"step": 4}'], {"oom_kills": 1}, "killed_oom"),      # the kernel's OOM killer counted
    (1, ['{"step": 3}', ENOMEM, *TB, "RuntimeError: CUDA error: an illegal memory access was encountered"], {},
     "cuda_fault"),
    (1, ['{"step": 3}', ENOMEM], {"divergence": True}, "divergence"),                  # the monitors' flag
    (1, [*HEAD, C10], {"oom_kills": 2}, "killed_oom"),                                  # RAM ran out while it ran
    (-9, [*HEAD, "MemoryError"], {}, "killed_oom"),                                     # killed, not refused
])
def test_a_refused_allocation_that_did_not_end_the_attempt_leaves_the_real_cause(rc, tail, kw, cls):
    v = classify(rc, tail, address_limit=TIB, **kw)
    assert v.cls == cls and v.recovery != "fail", (v.cls, v.summary)
    assert "address-space limit" not in v.summary


@pytest.mark.parametrize("tail,kw", [
    ([ENOMEM, '{"step": 4}', *TB, C10], {}),                  # the last exception is the refused one
    ([*HEAD, C10], {"oom_kills": 0}),                           # no OOM kill counted
    ([*HEAD, "MemoryError"], {"oom_kills": None}),
])
def test_a_refused_allocation_that_ended_the_attempt_still_names_the_limit(tail, kw):
    v = classify(1, tail, address_limit=2 << 30, **kw)
    assert v.cls == "environment_error" and v.recovery == "fail"
    assert "address-space limit (ulimit -v or -d) of 2.0 GB" in v.summary


# Round 16: a refused size within the limit but over what the machine's overcommit policy allows any one
# request (host.overcommit_ceiling) is not the limit's; a size over the limit is, whatever the machine.
GIB = 1 << 30
NP_200 = ("numpy._core._exceptions._ArrayMemoryError: Unable to allocate 200. GiB for an array with shape "
          "(26843545600,) and data type float64")
NP_3 = "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.20 GiB for an array with shape (429496730,) and data type float64"
MMAP = "RuntimeError: unable to mmap 214748364800 bytes from file <model.safetensors>: Cannot allocate memory (12)"
TH = "RuntimeError: $ Torch: not enough memory: you tried to allocate 200GB. Buy new RAM!"


@pytest.mark.parametrize("last", [NP_200, TH,
                                  C10.replace("3221225472", str(200 * GIB))])   # a mapping: review R43 (test_crash_review_r43)
def test_a_size_over_what_the_machine_allows_any_request_is_not_a_huge_limits(last):
    v = classify(1, [*HEAD, last], address_limit=TIB, alloc_ceiling=24 * GIB)
    assert v.cls == "killed_oom" and "address-space limit" not in v.summary, (v.cls, v.summary)
    assert "200" in v.summary


@pytest.mark.parametrize("last,limit,ceiling", [
    (NP_3, TIB, 24 * GIB),          # within both: only the limit refuses it (the process's address space near it)
    (NP_3, 2 * GIB, 1 * GIB),       # over the limit: no process under it could have it
    (NP_200, TIB, None),            # the machine's policy not known (or it refuses nothing)
    ("MemoryError", TIB, 24 * GIB),  # no size said
])
def test_a_size_the_machine_allows_or_over_the_limit_still_names_the_limit(last, limit, ceiling):
    v = classify(1, [*HEAD, last], address_limit=limit, alloc_ceiling=ceiling)
    assert v.cls == "environment_error" and "address-space limit" in v.summary, (v.cls, v.summary)


# Round 16: a size within the limit that no process under it was seen holding enough address space to meet
# (a command whose work runs where the runner's limits do not reach: docker run, ssh host cmd) is still the
# limit's since review R43 (a walk misses a mapping's growth), its words naming the other place too.
@pytest.mark.parametrize("seen,elsewhere", [
    (200 << 20, True),             # the attempt's own processes were seen holding 200 MiB: both places named
    (30 * GIB, False),             # ... 30 GiB: near the limit
    (None, False),                 # not watched (an adopted attempt): as before
])
def test_a_size_within_the_limit_no_process_was_seen_near_is_the_limits_and_names_the_other_place(seen, elsewhere):
    v = classify(1, [*HEAD, NP_3], address_limit=32 * GIB, alloc_ceiling=TIB, address_space_seen=seen)
    assert v.cls == "environment_error" and "address-space limit" in v.summary, (v.cls, v.summary)
    assert ("in a container or on another machine" in v.summary) is elsewhere, v.summary


def test_a_size_over_the_limit_is_the_limits_whatever_was_seen():
    v = classify(1, [*HEAD, NP_3], address_limit=2 * GIB, address_space_seen=10 << 20)
    assert v.cls == "environment_error", v.summary


def test_a_refusal_with_no_size_is_the_limits_unless_a_client_of_work_elsewhere_ran_and_nothing_neared_it():
    """Round 18: a bare ``MemoryError`` (or ``[Errno 12] Cannot allocate memory``) under a 32 GiB limit,
    in an attempt that ran `docker` (a client relaying work that runs elsewhere). With a process of the
    attempt seen holding 20 GiB of it, the limit's; with 10 MiB the most any held, nothing proves it:
    restarted as unknown, the words naming both places; not watched (None), the limit's as before.
    Review R50: with no such client (a plain local training), the limit's whatever was seen."""
    for last in ("MemoryError", "OSError: [Errno 12] Cannot allocate memory"):
        near = classify(1, [*HEAD, last], address_limit=32 * GIB, address_space_seen=20 * GIB, elsewhere_client="docker")
        assert near.cls == "environment_error" and near.recovery == "fail", (last, near.summary)
        unwatched = classify(1, [*HEAD, last], address_limit=32 * GIB, address_space_seen=None, elsewhere_client="docker")
        assert unwatched.cls == "environment_error", (last, unwatched.summary)
        far = classify(1, [*HEAD, last], address_limit=32 * GIB, address_space_seen=10 << 20, elsewhere_client="docker")
        assert (far.cls, far.recovery) == ("unknown", "restart"), (last, far.summary)
        assert "no size said" in far.summary and "in a container or on another machine" in far.summary, far.summary
        assert "`docker`" in far.summary and "32.0 GB" in far.summary, far.summary
        assert "not for want of RAM" not in far.summary and "docker run" in (far.hint or ""), far.hint
        local = classify(1, [*HEAD, last], address_limit=32 * GIB, address_space_seen=10 << 20)
        assert (local.cls, local.recovery) == ("environment_error", "fail"), (last, local.summary)
