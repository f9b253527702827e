"""The one bounds rule and the one YAML loader, on plain values; and the callers that used to
keep their own copies answer alike."""
from __future__ import annotations

import pytest

from moeconsole.runner.core import bounds, lifecycle as lc
from moeconsole.runner.rundir import yamlio
from moeconsole.runner.telemetry.kill import Termination


@pytest.mark.parametrize("value", [1e308, float("inf"), float("nan"), -1, 10 ** 400, 3601, "soon", None, True])
def test_a_grace_out_of_range_never_reaches_a_deadline(value):
    with pytest.raises(bounds.OutOfRange):
        bounds.check(value, bounds.GRACE, "kill.grace_s")
    assert bounds.sane_seconds(value, 10.0, bounds.GRACE) == 10.0


@pytest.mark.parametrize("value", [0, 0.5, 60, 3600])
def test_a_grace_in_range_is_kept(value):
    assert bounds.check(value, bounds.GRACE, "x") == value
    assert bounds.sane_seconds(value, 10.0, bounds.GRACE) == value


@pytest.mark.parametrize("grace", [1e308, float("nan"), -5.0, 7200.0, 30.0])
def test_the_lifecycle_and_the_kill_module_bound_a_grace_alike(grace):
    """A control request's grace_s (the lifecycle) and a blocker's Termination (the kill
    module) go through one rule: a grace of 1e308 is finite, yet a kill with it would never
    escalate. They used to be two copies of the check."""
    import subprocess
    import sys
    from moeconsole.runner.process.proctree import start_time
    life = lc.Life(lc.Status.RUNNING, attempt_live=True)
    cfg = lc.Settings(grace_s=10.0, floor_s=0.0, ceiling_s=0.0)
    after, _ = lc.step(life, lc.Control("kill", grace_s=grace), 100.0, cfg)
    assert after.kill is not None
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        term = Termination(proc.pid, start_time(proc.pid), grace_s=grace)
        assert after.kill.deadline - 100.0 == term.grace_s == (grace if 0 <= grace <= 3600 else 10.0)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("text, rng, ok", [("inf", bounds.INTERVAL, False), ("0", bounds.INTERVAL, False),
                                           ("0.05", bounds.INTERVAL, True), ("65535", bounds.PORT, True),
                                           ("65536", bounds.PORT, False), ("0", bounds.PORT_OR_ANY, True),
                                           ("9" * 5000, bounds.PORT, False), ("1.5", bounds.PORT, False)])
def test_command_line_numbers(text, rng, ok):
    if ok:
        assert bounds.parse(text, rng, "--x") == float(text)
    else:
        with pytest.raises(bounds.OutOfRange) as err:
            bounds.parse(text, rng, "--x")
        assert len(str(err.value)) < 200


def test_yaml_1_2_scalars_and_round_trip():
    doc = yamlio.loads_yaml("notify: {on: [crash], off: 1}\nx: [yes, no, y, n, 017, 1e-4, 2024-01-01, 0x10, true, ~]\n")
    assert doc == {"notify": {"on": ["crash"], "off": 1}, "x": ["yes", "no", "y", "n", 17, 1e-4, "2024-01-01", 16,
                                                                True, None]}
    values = ["1e-4", "on", "017", "true", "2024-01-01", "", "~", "0x1F", "- x", "a: b"]
    assert yamlio.loads_yaml(yamlio.yaml_text({"v": values})) == {"v": values}


@pytest.mark.parametrize("text, needle", [("a: 1\na: 2\n", "given twice"), ("a: {b: 1, b: 2}\n", "given twice"),
                                          ("[" * 5000 + "]" * 5000, "nested deeper"),
                                          ("a: " + "1" * 5000, "digits"), ("a: !!python/object:os.system x", "tag"),
                                          ("a: [1, 2", "invalid YAML")])
def test_yaml_refusals_are_one_line(text, needle):
    with pytest.raises(yamlio.YamlError) as err:
        yamlio.loads_yaml(text, "r.yaml")
    msg = str(err.value)
    assert needle in msg and msg.startswith("r.yaml") and "\n" not in msg and len(msg) < 300
