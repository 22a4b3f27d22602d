"""On the shared corpus of real chat templates, the findings agree with labels.tsv's `clock`
column (measured independently with transformers): `yes` → PFX101 at a `strftime_now` line,
`conditional` → PFX101 (a warning), `no` → neither PFX101 nor PFX501. No template crashes."""

from __future__ import annotations

import csv

import pytest
from conftest import CORPUS, needs_corpus

from prefixlint.api import Options, lint_paths

pytestmark = needs_corpus


@pytest.fixture(scope="module")
def corpus_report():
    return lint_paths([str(CORPUS / "templates")], Options(multiturn=False))


def _labels() -> list[dict[str, str]]:
    if not (CORPUS / "labels.tsv").is_file():
        return []
    return list(csv.DictReader((CORPUS / "labels.tsv").open(encoding="utf-8"), delimiter="\t"))


@pytest.mark.parametrize("row", _labels(), ids=lambda r: r["path"])
def test_clock_label(corpus_report, row: dict[str, str]) -> None:
    path = CORPUS / "templates" / row["path"]
    found = [d for d in corpus_report.diagnostics if d.span.path == str(path)]
    clock = [d for d in found if d.code == "PFX101"]
    if row["clock"] == "yes":
        lines = {i for i, t in enumerate(path.read_text().splitlines(), 1) if "strftime_now" in t}
        assert clock and {d.span.line for d in clock} <= lines
        # every request misses on a time; on a date, the first ones after midnight (a warning)
        assert all(d.severity.label == ("warning" if "split once a" in d.message else "error") for d in clock)
    elif row["clock"] == "conditional":
        assert clock
    else:
        assert not clock and not [d for d in found if d.code == "PFX501"], [d.message for d in found]


def test_every_corpus_template_is_analysed_without_an_internal_error(corpus_report) -> None:
    analysed = {s.path for s in corpus_report.sources}
    assert {str(p) for p in (CORPUS / "templates").rglob("*.jinja")} <= analysed
