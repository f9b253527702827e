"""``parse --json``'s fast NDJSON path writes exactly what dumping the line-by-line parser's
records gives, in one process or two; and a closed pipe ends it quietly."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.pipe import LinePipe
from moeconsole.runner.ingest.template import Template
from moeconsole.runner.ingest.ndjson import write_ndjson
from moeconsole.runner.rundir.jsonio import dumps
from tests.ingest import ingest_samples as S
from tests.ingest.ingest_samples import parsed
from tests.ingest.test_ingest_bulk import write_mixed

REPO = Path(__file__).resolve().parents[2]


def reference(path: Path) -> bytes:
    p = LogParser()
    data = path.read_bytes()
    recs, _ = parsed(p, data)
    return b"".join((dumps({"v": 1, **r}) + "\n").encode() for r in recs)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    path = tmp_path_factory.mktemp("ndjson") / "train.log"
    write_mixed(path)
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_ndjson_is_byte_identical_to_the_parser(mixed, workers, tmp_path):
    out = tmp_path / "out.ndjson"
    with open(out, "wb") as f:
        n = write_ndjson(str(mixed), f, workers=workers, chunk=64 << 10, split_min_bytes=1)
    want = reference(mixed)
    assert out.read_bytes() == want
    if workers == 1:
        assert n == want.count(b"\n")


def test_template_rows_really_take_the_json_format(mixed):
    pipe = LinePipe(LogParser(), json_lines=True)
    from moeconsole.runner.ingest.bulk import read_range
    batches = list(read_range(str(mixed), 0, None, pipe, final=True))
    lines = [r for b in batches for r in b.records or []]
    assert sum(isinstance(x, bytes) for x in lines) > 0.6 * len(lines)   # the rest: other formats


@pytest.mark.parametrize("value, canonical", [
    ("1.235", True), ("2e-05", True), ("1.985e-05", True), ("35.12", True), ("0.0001", True),
    ("35.10", False), ("1e-5", False), ("0.00001", False), ("12345678.5", False), ("nan", False),
    ("1.0", True), ("0.0", True), ("-0.5", True), ("1e+16", True), ("1e+15", False),
])
def test_a_float_is_copied_only_when_its_text_is_its_json(value, canonical):
    line = ("{'loss': '%s', 'grad_norm': '0.5', 'learning_rate': '2e-05', "
            "'global_step/max_steps': '1/10', 'elapsed_time': '3s'}" % value).encode()
    t = Template.learn(b"{'loss': '1.5', 'grad_norm': '0.5', 'learning_rate': '2e-05', "
                       b"'global_step/max_steps': '1/10', 'elapsed_time': '3s'}")
    assert t is not None and t.rx_json is not None
    m = t.rx_json.match(b"\n" + line + b"\n")
    copied = m is not None and m.group(1) is not None
    assert copied == canonical
    if copied:
        p = LogParser()
        (rec,), _ = parsed(p, line + b"\n")
        assert t.json_line(m.groups()) == (dumps({"v": 1, **rec}) + "\n").encode()


def test_integer_values_and_odd_text_fall_back_exactly(tmp_path):
    lines = [S.swift_hf_dict(i, 50, 1.0 + i / 7, 0.5) for i in range(1, 40)]
    lines.insert(10, lines[10].replace("'0.5'", "'1'"))             # grad norm printed as an int
    lines.insert(20, lines[20].replace("1m 2s", 'quote " inside'))   # text that needs escaping
    lines.insert(30, lines[30].replace("1m 2s", "nan"))               # text that is a number
    path = tmp_path / "t.log"
    path.write_text("\n".join(lines) + "\n")
    buf = io.BytesIO()
    write_ndjson(str(path), buf, workers=1)
    assert buf.getvalue() == reference(path)
    assert len(buf.getvalue().splitlines()) == len(lines)
    json.loads(buf.getvalue().splitlines()[21])


def test_json_output_into_a_closed_pipe_ends_quietly(tmp_path):
    path = tmp_path / "big.log"
    write_mixed(path, n=30000)
    cmd = f"{sys.executable} -m moeconsole.console.cli parse {path} --json | head -n 3"
    res = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert len(res.stdout.splitlines()) == 3
    assert res.stderr == "", res.stderr
    assert res.returncode in (0, 141)    # SIGPIPE, as `yes | head` ends


ODD_VALUES = ["1.235", "2e-05", "35.10", "1e-5", "0.00001", "12345678.5", "nan", "1", "1.0", "-0.5",
              "1e+16", "1e+15", "inf", "0x10", "1_0", "", "1.5 ", "-", "+1.5"]


# what the line parser's record writes for a quoted odd value that is a number whose JSON the
# template's strict form holds (records.parse_number: a float; jsonio.dumps: its repr)
JSON_OF_QUOTED = {"35.10": "35.1", "1e-5": "1e-05", "0.00001": "1e-05", "1": "1.0", "1.5 ": "1.5", "+1.5": "1.5"}


@pytest.mark.parametrize("quoted", [True, False])
def test_the_loose_first_pass_matches_exactly_where_the_strict_regex_does(quoted):
    """A template's cheap first pass (numbers loosened, their distinct values checked after)
    gives the strict NDJSON regex's matches group for group: the rows whose values are out of
    form become matches of another shape with the same text, the plain lines after them the same;
    a quoted number out of form whose JSON is in form (``'1'``: ``1.0``) stays a row, as the
    strict regex reads the line with that JSON text in its place."""
    def line(step: int, loss: str, grad: str) -> bytes:
        if quoted:
            d = (f"{{'loss': '{loss}', 'grad_norm': '{grad}', 'learning_rate': '2e-05', "
                 f"'global_step/max_steps': '{step}/100', 'elapsed_time': '{step}s'}}")
            return ("\rTrain: %d/100\r" % step + d).encode()
        return (f'{{"loss": {loss}, "grad_norm": {grad}, "lr": 2e-05, "step": {step}}}').encode()
    t = Template.learn(line(1, "1.5", "0.5"))
    assert t is not None and t.rx_json is not None and t.rx_loose is not None

    def log(of) -> bytes:
        lines = []
        for i, odd in enumerate(ODD_VALUES * 3):
            lines.append(line(i + 1, of(odd) if i % 2 else "1.5", "0.5" if i % 2 else of(odd)))
            lines.append(line(i + 1, "1.25", "0.75"))
            if i % 5 == 0:
                lines.append(b"[INFO:swift] Saving model checkpoint to /o/checkpoint-%d" % i)
        return b"\n" + b"\n".join(lines) + b"\n"
    buf = log(lambda odd: odd)
    as_json = log(lambda odd: JSON_OF_QUOTED.get(odd, odd) if quoted else odd)
    strict = t.rx_json.findall(as_json)
    loose = t.rx_loose.findall(buf)
    assert loose != strict, "some rows have values out of the strict form"
    assert t.loose_rows(loose)[0] == strict
    assert t.loose_rows(loose)[0] == strict, "again, with the texts checked before kept by the template"
    half = len(buf.split(b"\n")) // 2   # the first half of the lines, of both logs
    first, first_json = (b"\n".join(text.split(b"\n")[:half]) + b"\n" for text in (buf, as_json))
    assert t.loose_rows(t.rx_loose.findall(first))[0] == t.rx_json.findall(first_json)
    assert sum(1 for tp in strict if tp[-2]) >= len(ODD_VALUES), "those rows are matches of another shape"
