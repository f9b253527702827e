"""Review R58: the programs a process runs and the frames that are its, as CPython prints and reads them."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.programs import STRING, frames_ran_here, python_program, traceback_complete


@pytest.mark.parametrize("argv, want", [
    (["python", "-um", "pkg.train"], "-m:pkg.train"),          # was /work/pkg.train
    (["python3", "-uc", "import t; t.main()"], STRING),        # was /work/import t; t.main()
    (["python", "-Bum", "torch.distributed.run", "t.py"], "-m:torch.distributed.run"),
    (["python", "-mpkg.train"], "-m:pkg.train"),
    (["python", "-Wignore", "-u", "t.py"], "/work/t.py"),      # -W takes the rest of its cluster
    (["python", "-W", "ignore", "t.py"], "/work/t.py"),
    (["python", "-uX", "dev", "t.py"], "/work/t.py"),          # -X at a cluster's end takes the next word
    (["python", "--", "t.py"], "/work/t.py"),
    (["python", "-u", "t.py", "-m", "x"], "/work/t.py"),
])
def test_short_flag_clusters_are_walked_as_cpythons_getopt_does(argv, want):
    assert python_program(argv, "/work") == want


def test_a_relative_frame_of_python_3_8_is_the_script_run_from_its_cwd():
    """Python <= 3.8 prints `File "train8.py"` (the script as typed): it is `/work/train8.py` run in /work."""
    assert frames_ran_here(["train8.py"], {"/work/train8.py": True}) is True
    assert frames_ran_here(["./sub/train8.py"], {"/work/sub/train8.py": True}) is True
    assert frames_ran_here(["../w/train8.py"], {"/x/w/train8.py": False}) is False
    assert frames_ran_here(["train8.py"], {"/work/other.py": True}) is None


def test_a_zip_or_directory_program_is_matched_by_its_frames_inside_it():
    assert frames_ran_here(["/work/app.pyz/__main__.py"], {"/work/app.pyz": True}) is True
    assert frames_ran_here(["/work/src/__main__.py", "/work/src/lib.py"], {"/work/src": True}) is True
    assert frames_ran_here(["app.pyz/__main__.py"], {"/work/app.pyz": True}) is True   # 3.8, relative
    # a prefix of the name is not the program
    assert frames_ran_here(["/work/app.pyz2/__main__.py"], {"/work/app.pyz": True}) is None


def test_only_a_traceback_printed_from_the_programs_entry_is_complete():
    assert traceback_complete([("/srv/train.py", "<module>"), ("/venv/numpy/memmap.py", "__new__")])
    assert traceback_complete([("<string>", "<module>"), ("/usr/lib/multiprocessing/spawn.py", "spawn_main")])
    assert traceback_complete([("<frozen runpy>", "_run_module_as_main"), ("<frozen runpy>", "_run_code")])
    # Hydra strips its frames down to the @hydra.main function; a thread's starts in threading.py
    assert not traceback_complete([("/venv/fairseq_cli/hydra_train.py", "hydra_main")])
    assert not traceback_complete([("/usr/lib/python3.11/threading.py", "_bootstrap_inner")])
    # Python 3.8's relative script frame proves nothing
    assert not traceback_complete([("train8.py", "<module>")])
    assert not traceback_complete([])
