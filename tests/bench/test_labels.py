import pytest

from bench.labels import label, normalise_name, parse_runtime


def test_label_writes_the_thread_count_in_parentheses():
    assert label("serial", 1) == "serial"
    assert label("seer", 2) == "seer(2)"
    assert label("static-block", 8) == "static-block(8)"


@pytest.mark.parametrize(("text", "parsed"), [
    ("serial", ("serial", 1)), ("seer", ("seer", 1)), ("seer(2)", ("seer", 2)),
    ("seer:2", ("seer", 2)), ("static-block(12)", ("static-block", 12)),
    ("static-block:3", ("static-block", 3)),
])
def test_parse_runtime_reads_both_forms(text, parsed):
    assert parse_runtime(text) == parsed
    assert parse_runtime(label(*parsed)) == parsed


@pytest.mark.parametrize("text", ["seer(2", "seer:x", "seer[2]", "", "seer(2):3"])
def test_parse_runtime_rejects_other_text(text):
    with pytest.raises(ValueError, match="is not 'kind', 'kind\\(threads\\)' or 'kind:threads'"):
        parse_runtime(text)


def test_normalise_name_rewrites_only_a_trailing_colon_runtime():
    assert normalise_name("step-n60-cost5us-seer:2") == "step-n60-cost5us-seer(2)"
    assert normalise_name("pcs-n36-cost5us-gain8-static-block:2") == \
        "pcs-n36-cost5us-gain8-static-block(2)"
    for name in ("step-n60-cost5us-seer(2)", "aircraft-n800-cost200us-serial",
                 "atomics-fast-fetch_add-x2", "capacity-2threads"):
        assert normalise_name(name) == name
