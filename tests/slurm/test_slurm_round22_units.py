"""Round 22 (Slurm), the rules without the cluster: srun's option names as srun's own getopt reads them (the real
srun binary decides where it is installed: it parses options before it asks any controller)."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from moeconsole.runner.process.slurm import text
from moeconsole.runner.process.slurm.settings import SlurmSettings


@pytest.mark.parametrize("opt, full", [("--outp=/dev/null", "--output"), ("--out=x", "--output"),
                                       ("-o/dev/null", "--output"), ("--kill-on-bad=0", "--kill-on-bad-exit"),
                                       ("-K0", "--kill-on-bad-exit"), ("--err=x", "--error"), ("--jobi=7", "--jobid"),
                                       ("--expo=NONE", "--export"), ("--chd=/tmp", "--chdir")])
def test_srun_options_the_runner_owns_are_refused_however_srun_would_read_them(opt, full):
    """``slurm.srun: [--outp=/dev/null]`` passed the exact-name check and srun read it as ``--output`` (any unambiguous
    prefix, slurm_opt.c's table under glibc's getopt_long; measured on 22.05: the step's lines went to that file): the
    training's log never reached train.log, which the runner reads. Now refused by the full name srun reads."""
    with pytest.raises(ValueError) as err:
        text.check_srun_option(opt)
    assert f"({full})" in str(err.value), err.value
    with pytest.raises(ValueError):
        SlurmSettings.from_recipe({"srun": [opt]})


@pytest.mark.parametrize("opt, full", [("--exclus", "--exclusive"), ("-N2", "--nodes"), ("--cpu-b=none", "--cpu-bind"),
                                       ("--ntasks-per-n=1", "--ntasks-per-node")])
def test_an_srun_abbreviation_or_short_form_is_named_and_refused(opt, full):
    with pytest.raises(ValueError, match=f"srun reads it as {full}: write the option in full"):
        text.check_srun_option(opt)


@pytest.mark.parametrize("opt", ["--cpu-bind=none", "--cpu_bind=none", "--exclusive", "--overlap", "--mpi=pmix",
                                 "--tasks-per-node=1", "--distribution=block", "--gpu-bind=closest"])
def test_srun_options_written_in_full_pass(opt):
    text.check_srun_option(opt)


def _srun_says(opt: str) -> str:
    srun = shutil.which("srun")
    if srun is None:
        pytest.skip("no srun here")
    res = subprocess.run([srun, opt, "true"], capture_output=True, text=True, timeout=120)
    return (res.stderr.splitlines() or [""])[0]


@pytest.mark.parametrize("prefix", ["--ntasks-per", "--gpus-per", "--mem-p", "--cpu", "--clus", "--ntasks-", "--gp"])
def test_an_ambiguous_srun_prefix_lists_what_the_real_srun_lists(prefix):
    """srun itself refuses an ambiguous prefix before it contacts a controller ("option '--ntasks-per=1' is
    ambiguous; possibilities: '--ntasks-per-core' ..."): the table's reading must list the same options (glibc's
    getopt counts two names of one option, ``--cpu-bind`` and ``--cpu_bind``, once)."""
    said = _srun_says(f"{prefix}=1")
    real = sorted(re.findall(r"'--([\w-]+)'", said.split("possibilities:", 1)[-1])) if "ambiguous" in said else None
    try:
        text.srun_option_name(f"{prefix}=1")
        ours = None
    except ValueError as e:
        ours = sorted(re.findall(r"--([\w-]+)", str(e).split("as any of", 1)[1].split(":")[0])) \
            if "as any of" in str(e) else None
    assert real is not None and ours is not None, (said, ours)
    assert {text.OPTION_ALIASES.get(o, o) for o in real} == set(ours), (real, ours)


def test_an_option_srun_does_not_have_is_refused_as_the_real_srun_refuses_it():
    assert "unrecognized option '--wrap=x'" in _srun_says("--wrap=x")
    with pytest.raises(ValueError, match="srun has no option --wrap"):
        text.check_srun_option("--wrap=x")


def test_sbatch_reads_its_options_with_the_same_owner():
    """One reader for both commands (``text.option_name``): sbatch's rules hold as before."""
    assert text.sbatch_option_name("--arr=0-1") == "--array"
    assert text.sbatch_option_name("--tasks-per-node=2") == "--ntasks-per-node"
    with pytest.raises(ValueError, match="sbatch reads --clust as any of"):
        text.sbatch_option_name("--clust=x")
