"""The generated generalisation suite (issue 28, point 5): every row of the models table, every
source kind, every way text is built and every position in the request, combined pairwise
(tests/generalisation_cases.py), each case asserting the findings the loss rule gives it (code,
line and severity) or silence. The code is analysed, never run."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from generalisation_cases import (
    CONSTANTS,
    MECHANISMS,
    POSITIONS,
    SOURCES,
    WAYS,
    Case,
    Cover,
    _value_rows,
    all_pairs,
    cases,
    findings,
    slug,
    valid,
    value_call_cases,
)

from prefixlint.models.tokens import load_tokenizer
from prefixlint.python.frameworks import builtin

CASES = cases()
VALUE_CASES = value_call_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, tmp_path: Path) -> None:
    found = findings(case, tmp_path)
    assert found == case.expected, f"{case.id}\n{case.source()}"


def _parts(case: Case) -> list[str]:
    return case.id.split("/")  # row, source, way, position


def test_every_row_source_way_and_position_is_generated() -> None:
    ids = [_parts(c) for c in CASES]
    assert {i[0] for i in ids} == {slug(r.name) for r in builtin().sinks}
    assert {i[1] for i in ids} == {s.name for s in SOURCES}
    assert {i[2] for i in ids} == set(WAYS)
    assert {i[3] for i in ids} == {p.name for p in POSITIONS}
    assert len({c.id for c in CASES}) == len(CASES)


def test_each_row_is_sent_at_each_position_it_has() -> None:
    seen = {(i[0], i[3]) for i in map(_parts, CASES)}
    for row in builtin().sinks:
        for position in POSITIONS:
            if any(valid(row, s, w, position) for s in SOURCES for w in WAYS):
                assert (slug(row.name), position.name) in seen


def test_each_source_is_built_each_way_where_a_finding_is_expected_and_where_none_is() -> None:
    found = {(i[1], i[2]) for c in CASES if c.expected for i in [_parts(c)]}
    at_tail = {(i[1], i[2]) for i in map(_parts, CASES) if i[3] == "tail"}
    rows = builtin().sinks
    for source in SOURCES:
        for way in WAYS:
            if not any(valid(r, source, way, p) for r in rows for p in POSITIONS):
                continue  # a parameter cannot stand in a class or module constant
            assert (source.name, way) in at_tail
            # A constructor's parameters configure the object: a value passed there is none.
            if source.code and not (source.param and way == "constructor-attribute"):
                assert (source.name, way) in found


def test_all_pairs_holds_every_valid_pair_and_no_invalid_tuple() -> None:
    dims: list[list[object]] = [[0, 1, 2], ["a", "b"], ["x", "y", "z"]]

    def ok(n: object, letter: object, end: object) -> bool:
        return not (n == 2 and end == "z")

    chosen = all_pairs(dims, ok, [Cover(0, 1), Cover(0, 2), Cover(1, 2)])
    assert all(ok(*t) for t in chosen)
    valid_tuples = [t for t in itertools.product(*dims) if ok(*t)]
    for a, b in itertools.combinations(range(3), 2):
        wanted = {(t[a], t[b]) for t in valid_tuples}
        assert wanted == {(t[a], t[b]) for t in chosen}
    assert len(chosen) < len(valid_tuples)
    assert chosen == all_pairs(dims, ok, [Cover(0, 1), Cover(0, 2), Cover(1, 2)])  # deterministic


def test_the_static_texts_a_finding_rests_on_are_more_than_a_block() -> None:
    """40 tokens and more after a value, so that a finding does not depend on block alignment."""
    count = load_tokenizer(None).count
    assert count(CONSTANTS["RULES"]) >= 40 and count(CONSTANTS["MORE"]) >= 40
    assert count(CONSTANTS["EXAMPLE_Q"] + CONSTANTS["EXAMPLE_A"]) >= 40


def test_findings_and_silences_are_both_expected() -> None:
    assert sum(bool(c.expected) for c in CASES) >= 200
    assert sum(not c.expected for c in CASES) >= 200


@pytest.mark.parametrize("case", VALUE_CASES, ids=[c.id for c in VALUE_CASES])
def test_request_through_a_value(case: Case, tmp_path: Path) -> None:
    """A clock ahead of RULES sent through the mechanism is a finding at its line, warning or above;
    sent to a logger the same way, nothing above info."""
    found = findings(case, tmp_path)
    if case.expected:
        ((code, line),) = case.expected
        assert set(found) == {(code, line)}, f"{case.id}\n{case.source()}"
        assert found[(code, line)] in ("warning", "error"), f"{case.id}\n{case.source()}"
    else:
        assert set(found.values()) <= {"info"}, f"{case.id}\n{case.source()}"


def test_every_mechanism_reaches_several_rows_and_together_every_row() -> None:
    ids = [c.id.split("/") for c in VALUE_CASES]
    for mechanism in MECHANISMS:
        rows = {i[2] for i in ids if i[1] == mechanism.name and i[3] == "sink"}
        assert len(rows) >= 5, mechanism.name
        assert any(i[1] == mechanism.name and i[3] == "logger" for i in ids)
    assert {i[2] for i in ids} == {slug(r.name) for r in _value_rows()}
