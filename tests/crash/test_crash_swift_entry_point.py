"""ms-swift's entry point (``swift``/``megatron``: swift/cli/main.py ``cli_main``, ``parse_yaml_args``) reads only
its argv, the config file and the environment before it starts the trainer, so what it raises itself is the
recipe's: ``config_error``, never restarted into the same end. Both texts are real: ms-swift 4.6.0's ``swift stf``
(a misspelt subcommand, ``ROUTE_MAPPING`` l.91), and 4.3.0's own main.py (``pip download --no-deps ms-swift==4.3.0``)
run with a config file whose ENV differs from the environment (l.55: its ``logger`` import was dropped). Each was
``unknown`` and restarted."""
from __future__ import annotations

from moeconsole.runner.core import crash

STF_460 = """Traceback (most recent call last):
  File "/work/main/.venv-swift/bin/swift", line 8, in <module>
    sys.exit(cli_main())
             ^^^^^^^^^^
  File "/work/main/.venv-swift/lib/python3.11/site-packages/swift/cli/main.py", line 91, in cli_main
    file_path = importlib.util.find_spec(route_mapping[method_name]).origin
                                         ~~~~~~~~~~~~~^^^^^^^^^^^^^
KeyError: 'stf'""".splitlines()

NAMEERROR_430 = """Traceback (most recent call last):
  File "<string>", line 4, in <module>
  File "/tmp/s13/ms_swift-4.3.0/swift/cli/main.py", line 88, in cli_main
    parse_yaml_args(argv)
  File "/tmp/s13/ms_swift-4.3.0/swift/cli/main.py", line 55, in parse_yaml_args
    logger.warning(f'{k} is already set in environment, using `{os.environ[k]}` instead of `{v}`')
    ^^^^^^
NameError: name 'logger' is not defined""".splitlines()


def test_a_misspelt_subcommand_is_a_configuration_error():
    v = crash.classify(1, STF_460)
    assert (v.cls, v.recovery) == ("config_error", "fail"), v
    assert "KeyError: 'stf'" in v.summary


def test_4_3_0s_name_error_on_a_config_files_env_is_a_configuration_error():
    v = crash.classify(1, NAMEERROR_430)
    assert (v.cls, v.recovery) == ("config_error", "fail"), v


def test_the_same_exception_from_the_trainer_is_not():
    """A KeyError raised in the training (innermost frame outside the entry point) keeps its class."""
    trainer = [line.replace("swift/cli/main.py", "swift/trainers/mixin.py").replace("in cli_main", "in training_step")
               for line in STF_460]
    assert crash.classify(1, trainer).cls != "config_error"
