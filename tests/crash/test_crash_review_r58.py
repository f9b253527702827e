"""Review R58: a sizeless refusal under an address-space limit is "run elsewhere" only when the traceback
proves it (printed whole from the program's entry, no frame a program here ran, no named client that may run
the same program elsewhere)."""
from __future__ import annotations

from moeconsole.runner.core.crash import classify

LIMIT = 16 << 30
SITE = "/home/u/.venv/lib/python3.11/site-packages"
STEP = '{"step": 3, "loss": 0.5}'


def _cls(tail, programs, client=None, seen=200 << 20):
    return classify(1, tail, steps_seen=3, address_limit=LIMIT, address_space_seen=seen,
                    programs_run=programs, elsewhere_client=client)


def _tb(*frames, error="MemoryError"):
    lines = [STEP, "Traceback (most recent call last):"]
    for file, func in frames:
        lines += [f'  File "{file}", line 5, in {func}', "    buf = bytearray(n)"]
    return lines + [error]


def test_python_3_8s_relative_script_frame_under_the_limit_is_the_limits():
    tail = _tb(("train8.py", "<module>"))
    v = _cls(tail, {"/home/u/proj/train8.py": True, "-m:moeconsole.runner.process.waiter": True})
    assert v.cls == "environment_error" and "16.0 GB" in v.summary, v.summary
    # not run here either (no program here ends so): a relative frame proves nothing, the limit is named
    v = _cls(tail, {"/home/u/bin/ray": True})
    assert v.cls == "environment_error", v.summary
    # the same process ran free of the limit: not the limit's
    assert "address-space limit" not in _cls(tail, {"/home/u/proj/train8.py": False}).summary


def test_a_zipapp_or_directory_program_run_here_is_the_limits():
    for prog in ("/home/u/proj/app.pyz", "/home/u/proj/appdir"):
        tail = _tb(("<frozen runpy>", "_run_module_as_main"), ("<frozen runpy>", "_run_code"),
                   (f"{prog}/__main__.py", "<module>"), (f"{SITE}/mylib/train.py", "train"))
        assert _cls(tail, {prog: True}).cls == "environment_error"
        v = _cls(tail, {"/home/u/bin/ray": True})   # both ways: a whole traceback of no program here
        assert v.cls == "unknown" and v.recovery == "restart" and f"({prog}/__main__.py)" in v.summary, v.summary


def test_a_traceback_that_leaves_the_program_out_keeps_the_limits_verdict():
    """Hydra's run_and_report prints frames from the @hydra.main function; a thread's from threading.py."""
    hydra = _tb(("/venv/lib/python3.10/site-packages/fairseq_cli/hydra_train.py", "hydra_main"),
                (f"{SITE}/fairseq/data/indexed_dataset.py", "__init__"), (f"{SITE}/numpy/core/memmap.py", "__new__"),
                error="OSError: [Errno 12] Cannot allocate memory")
    here = {"/venv/bin/fairseq-hydra-train": True}
    assert _cls(hydra, here).cls == "environment_error"
    thread = ["Exception in thread Thread-3 (_loader):"] + _tb(
        ("/usr/lib/python3.11/threading.py", "_bootstrap_inner"), ("/usr/lib/python3.11/threading.py", "run"),
        (f"{SITE}/datasets/arrow_reader.py", "_loader"))
    assert _cls(thread, {"/home/u/proj/train.py": True}).cls == "environment_error"


def test_the_unknown_summary_names_the_programs_frame_not_the_librarys():
    tail = _tb(("/tmp/ray/session_1/working_dir/train.py", "<module>"), (f"{SITE}/numpy/core/memmap.py", "__new__"),
               error="OSError: [Errno 12] Cannot allocate memory")
    v = _cls(tail, {"/home/u/bin/ray": True})
    assert v.cls == "unknown" and "(/tmp/ray/session_1/working_dir/train.py)" in v.summary, v.summary
    assert "memmap.py" not in v.summary


def test_a_named_clients_remote_rank_running_the_same_program_is_not_proven_the_local_limits():
    """mpirun/horovodrun: local ranks run /shared/train.py here under the limit, remote ranks over `ssh`."""
    tail = [STEP, "[1,9]<stderr>:Traceback (most recent call last):",
            '[1,9]<stderr>:  File "/shared/proj/train.py", line 40, in <module>',
            "[1,9]<stderr>:    state = pickle.load(f)", "[1,9]<stderr>:MemoryError"]
    v = _cls(tail, {"/shared/proj/train.py": True}, client="ssh")
    assert v.cls == "unknown" and v.recovery == "restart" and "`ssh`" in v.summary, v.summary
    # a process here came near the limit: it is the limit's
    assert _cls(tail, {"/shared/proj/train.py": True}, client="ssh", seen=LIMIT - (64 << 20)).cls == "environment_error"
    # no client: the local match decides, as round 20
    assert _cls(tail, {"/shared/proj/train.py": True}).cls == "environment_error"
