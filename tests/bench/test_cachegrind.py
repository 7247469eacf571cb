"""bench.compare --cachegrind: reading its files, per-step differences, one real run."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from bench import compare
from bench.compare import Counts, column, difference, parse, top_differences

SAMPLE = """\
desc: I1 cache:         32768 B, 64 B, 8-way associative
desc: LL cache:         2097152 B, 64 B, 16-way associative
cmd: python x.py
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=/usr/src/Objects/listobject.c
fn=list_append
10 100 1 0 20 2 1 5 1
11 50
fn=list_extend
3 7 0 0 1 1 0 0 0 1
fl=???
fn=daxpy_k
1 1000 0 0 300 10 0 100 3 2
summary: 1157 1 0 321 13 1 105 4 3
"""


def test_parse_reads_totals_and_functions() -> None:
    counts = parse(SAMPLE)
    assert counts.totals["Ir"] == 1157
    assert counts.totals["DLmw"] == 3
    # trailing counts left out of a line count as zero; lines of one function add up
    assert counts.functions["listobject.c:list_append"]["Ir"] == 150
    assert counts.functions["listobject.c:list_append"]["D1mr"] == 2
    assert counts.functions["listobject.c:list_extend"]["DLmw"] == 1
    assert counts.functions["???:daxpy_k"]["Dr"] == 300
    assert column(counts.totals, "L1d misses") == 13 + 4  # D1mr + D1mw
    assert column(counts.totals, "LL misses") == 0 + 1 + 3  # ILmr + DLmr + DLmw


def test_parse_without_summary_adds_up_functions() -> None:
    counts = parse(SAMPLE.rsplit("summary:", 1)[0])
    assert counts.totals["Ir"] == 150 + 7 + 1000


def test_parse_refuses_other_text() -> None:
    with pytest.raises(ValueError, match="events"):
        parse("hello\n1 2 3\n")


def test_difference_is_per_step_and_keeps_functions_of_either_run() -> None:
    short = Counts(Counter(Ir=100, DLmr=4), {"a": Counter(Ir=60), "gone": Counter(Ir=40)})
    long = Counts(Counter(Ir=500, DLmr=10), {"a": Counter(Ir=300), "new": Counter(Ir=200)})
    d = difference(long, short, steps=2)
    assert d.totals["Ir"] == 200 and d.totals["DLmr"] == 3
    assert d.functions["a"]["Ir"] == 120
    assert d.functions["new"]["Ir"] == 100
    assert d.functions["gone"]["Ir"] == -20


def test_top_differences_ranks_by_change() -> None:
    a = Counts(Counter(), {"same": Counter(Ir=1000), "more_ir": Counter(Ir=100),
                           "more_misses": Counter(DLmr=1)})
    b = Counts(Counter(), {"same": Counter(Ir=1000), "more_ir": Counter(Ir=10_100),
                           "more_misses": Counter(DLmr=501)})
    rows = top_differences(a, b, 3)
    # largest change first; equal changes (none, here) by name
    assert [r[0] for r in rows] == ["more_ir", "more_misses", "same"]
    assert rows[0][2] == "+10,000" and rows[2][2] == "+0"
    rows = top_differences(a, b, 1, by="LL misses")
    assert [r[0] for r in rows] == ["more_misses"]
    assert rows[0][4] == "+500"


def test_cli_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        compare.main(["--cachegrind", "serial", "--steps", "0"])
    with pytest.raises(SystemExit):
        compare.main(["--cachegrind", "serial", "--costs", "5"])
    assert "unrecognized arguments: --costs 5" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counts_a_real_run(tmp_path) -> None:
    out = tmp_path / "cg.json"
    result = compare.main(["--cachegrind", "serial", "--steps", "1", "--out", str(out),
                              "--workload", "pcs", "--entities", "100", "--cost", "15",
                              "--warmup", "1"])
    per_step = result["serial"]
    # A step of 100 PCS cells runs about 25 million instructions. The count is the
    # difference of two processes, so it must be well above what their start and exit
    # differ by (a step of a few thousand instructions can come out negative).
    assert per_step["instructions"] > 5_000_000
    assert per_step["L1d misses"] >= 0
    assert json.loads(out.read_text())["per_step"]["serial"] == per_step
