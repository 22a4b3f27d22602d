"""The project's own template fixtures produce exactly the findings listed in
fixtures/templates/expected.tsv (code, line, severity, token index), and nothing else."""

from __future__ import annotations

import csv
from datetime import timedelta

import pytest
from conftest import FIXTURES

from prefixlint.api import Options, lint_paths, tokenizer_for
from prefixlint.jinja.inputs import BASE_TIME, USER_TURNS, conversation
from prefixlint.jinja.template import ChatTemplate
from prefixlint.models.tokens import common_prefix_len

TEMPLATES = FIXTURES / "templates"
OPTIONS = Options(multiturn=False)


def _expected() -> dict[str, set[tuple[str, int, str]]]:
    rows = csv.DictReader((TEMPLATES / "expected.tsv").open(encoding="utf-8"), delimiter="\t")
    out: dict[str, set[tuple[str, int, str]]] = {}
    for row in rows:
        found = out.setdefault(row["file"], set())
        if row["code"]:
            found.add((row["code"], int(row["line"]), row["severity"]))
    return out


@pytest.fixture(scope="module")
def report():
    return lint_paths([str(TEMPLATES)], OPTIONS)


def test_every_fixture_has_expectations(report) -> None:
    listed = set(_expected())
    analysed = {str(__import__("pathlib").Path(s.path).relative_to(TEMPLATES)) for s in report.sources}
    assert analysed == listed


@pytest.mark.parametrize("name", sorted(_expected()))
def test_fixture_findings_are_exactly_the_expected_ones(report, name: str) -> None:
    got = {
        (d.code, d.span.line, d.severity.label)
        for d in report.diagnostics
        if d.span.path == str(TEMPLATES / name)
    }
    assert got == _expected()[name]


def test_token_indices_match_the_expected_file(report) -> None:
    rows = csv.DictReader((TEMPLATES / "expected.tsv").open(encoding="utf-8"), delimiter="\t")
    by_key = {(d.span.path, d.code): d for d in report.diagnostics}
    checked = 0
    for row in rows:
        if row["token_index"]:
            d = by_key[(str(TEMPLATES / row["file"]), row["code"])]
            assert d.evidence is not None and d.evidence.token_index == int(row["token_index"]), row["file"]
            checked += 1
    assert checked >= 5


def test_clock_token_index_is_where_two_real_renders_diverge(report) -> None:
    """Recompute the PFX101 token index independently: render at two instants a day apart with
    the same tokenizer and compare the token ids."""
    path = TEMPLATES / "clock_in_system.jinja"
    tokenizer = tokenizer_for(str(path), OPTIONS)
    template = ChatTemplate(path.read_text(), str(path), special_tokens=dict(tokenizer.special_tokens))
    messages = conversation(USER_TURNS[0], system=True)
    a = template.render(messages, now=BASE_TIME).text
    b = template.render(messages, now=BASE_TIME + timedelta(days=1)).text
    ids_a, ids_b = (e.ids for e in tokenizer.encode_many([a, b]))
    (d,) = [d for d in report.diagnostics if d.span.path == str(path)]
    assert d.evidence.token_index == common_prefix_len(ids_a, ids_b)
    assert d.evidence.char_offset == common_prefix_len(a, b)
    assert "31 March 2025" in d.evidence.context_a and "01 April 2025" in d.evidence.context_b


def test_clean_fixture_is_silent_and_fully_cacheable_until_the_user(report) -> None:
    (source,) = [s for s in report.sources if s.path.endswith("clean.jinja")]
    assert source.diagnostics == []
    assert 0 < source.cacheable_prefix_tokens < source.total_tokens
