"""bench.compare: the paired statistics, and one tiny HEAD-against-HEAD run."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.compare import Row, check_imports, format_table, summarise, verdict

ROOT = Path(__file__).resolve().parents[2]


def test_verdict_calls_a_straddling_or_small_ratio_a_tie():
    assert verdict(1.10, 0.95, 1.20) == "same within noise"  # range straddles 1
    assert verdict(1.02, 1.01, 1.04) == "same within noise"  # within 3 %
    assert verdict(0.80, 0.75, 0.85) == "B faster (20 %)"
    assert verdict(1.25, 1.20, 1.30) == "B slower (25 %)"


def test_summarise_pairs_rounds_and_lists_unpaired_names():
    # B is 2x slower in every round, although round 2 ran on a slower machine
    a = [{"x-serial": [[1.0, 1.0]], "only-a": [[1.0]]}, {"x-serial": [[3.0]]}]
    b = [{"x-serial": [[2.0]]}, {"x-serial": [[6.0]]}]
    rows, unpaired = summarise(a, b)
    assert rows == [Row("x-serial", 1.0, 4.0, 2.0, 2.0, 2.0)]
    assert unpaired == ["only-a"]
    lines = format_table(rows)
    assert lines[0] == "| benchmark | A median | B median | B/A (median) | B/A (range) | verdict |"
    assert lines[2] == "| x-serial | 1 s | 4 s | 2.000 | 2.000-2.000 | B slower (100 %) |"


def test_check_imports_refuses_packages_from_elsewhere(tmp_path):
    for package in ("bench", "workloads"):  # seer is missing: it would come from this checkout
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    with pytest.raises(RuntimeError, match=r"seer/__init__\.py is imported instead of the copy"):
        check_imports(tmp_path)


def test_compare_head_with_head(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench.compare", "HEAD", "HEAD", "--rounds", "2", "--results",
         str(tmp_path), "--debug-single-value", "--entities", "60", "--costs", "0",
         "--runtimes", "serial", "seer:2"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # rounds alternate which revision goes first
    assert re.findall(r"round (\d) of 2: ([AB])", out) == [("1", "A"), ("1", "B"), ("2", "B"),
                                                           ("2", "A")]
    assert "| benchmark | A median | B median | B/A (median) | B/A (range) | verdict |" in out
    for name in ("step-n60-cost0us-serial", "step-n60-cost0us-seer(2)"):
        assert re.search(rf"^\| {re.escape(name)} \| .* \| .* \| [\d.]+ \| [\d.]+-[\d.]+ \| ",
                         out, re.MULTILINE)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a-round1.json", "a-round2.json", "b-round1.json", "b-round2.json"]
    trees = Path(re.search(r"worktrees in (\S+)", out)[1])
    assert not trees.exists()
    listed = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    assert str(trees) not in listed


@pytest.mark.parametrize(("args", "message"), [
    (["HEAD", "HEAD", "-o", "x.json"], "are set by bench.compare"),
    (["HEAD", "no-such-revision-xyz"], "is not a commit"),
    (["HEAD", "HEAD", "--rounds", "0"], "--rounds must be >= 1"),
    (["HEAD", "--cpu", "serial"], "give two revisions"),
    (["HEAD", "HEAD", "--cpu", "serial", "--costs", "5"], "unrecognized arguments"),
])
def test_compare_rejects_bad_arguments(args, message):
    proc = subprocess.run([sys.executable, "-m", "bench.compare", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr


def test_cpu_table_pairs_wall_and_cpu_per_round():
    from bench.compare import format_cpu_table

    # B halves the wall time and keeps the CPU time, in both rounds (round 2 on a slower host)
    a = [{"seer(2)": (2.0, 4.0)}, {"seer(2)": (4.0, 8.0)}]
    b = [{"seer(2)": (1.0, 4.0)}, {"seer(2)": (2.0, 8.0)}]
    lines = format_cpu_table(a, b)
    assert lines[0].startswith("| runtime | A wall | B wall | B/A wall | A CPU |")
    assert lines[2] == ("| seer(2) | 3 s | 1.5 s | 0.500 (0.500-0.500) | 6 s | 6 s | "
                        "1.000 (1.000-1.000) | B faster (50 %) |")


def test_compare_cpu_head_with_head():
    proc = subprocess.run(
        [sys.executable, "-m", "bench.compare", "HEAD", "HEAD", "--rounds", "1", "--cpu",
         "serial", "seer:2", "--workload", "pcs", "--entities", "16", "--cost", "1",
         "--steps", "1", "--warmup", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for name in ("serial", "seer(2)"):
        assert re.search(rf"^\| {re.escape(name)} \| [\d.]+ \w?s \|", proc.stdout, re.MULTILINE)
