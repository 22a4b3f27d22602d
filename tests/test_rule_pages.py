"""Every example on every rule page behaves as the page says, so the docs cannot drift.

A fenced block's info string is the language (`jinja` or `python`) and a JSON object:
`{"expect": "PFX101", "line": 3}` — the page's rule must be reported (at that line, if given);
`{"expect": "none"}` — the page's rule must not be reported. `"engine"` selects `--engine`.
A `jsonl` block is a request log: `explain --log` runs on it, and `line` is the log line of the
request the finding names (rules found in request logs, PFX503).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO

from prefixlint.api import Options, lint_paths
from prefixlint.cli import cli
from prefixlint.core.rules import RULES

PAGES = REPO / "rules"
_BLOCK = re.compile(r"^```(jinja|python|jsonl) (\{[^\n]*\})\n(.*?)^```", re.M | re.S)
SUFFIX = {"jinja": ".jinja", "python": ".py", "jsonl": ".jsonl"}


def _examples() -> list[tuple[str, int, str, dict, str]]:
    out = []
    for page in sorted(PAGES.glob("PFX*.md")):
        for i, m in enumerate(_BLOCK.finditer(page.read_text(encoding="utf-8"))):
            out.append((page.stem, i, m.group(1), json.loads(m.group(2)), m.group(3)))
    return out


@pytest.mark.parametrize(
    ("code", "index", "language", "spec", "body"),
    _examples(),
    ids=lambda v: v if isinstance(v, str) and v.startswith("PFX") else None,
)
def test_page_example(code: str, index: int, language: str, spec: dict, body: str, tmp_path: Path) -> None:
    path = tmp_path / f"example{SUFFIX[language]}"
    path.write_text(body, encoding="utf-8")
    if language == "jsonl":
        found_lines = _log_findings(path, code)
    else:
        report = lint_paths([str(path)], Options(engine=spec.get("engine", "vllm")))
        found_lines = [d.span.line for d in report.diagnostics if d.code == code]
    if spec["expect"] == "none":
        assert not found_lines, found_lines
    else:
        assert spec["expect"] == code
        assert found_lines, f"{code} example {index} reported nothing"
        if "line" in spec:
            assert spec["line"] in found_lines


def _log_findings(path: Path, code: str) -> list[int]:
    """The log lines of the requests `explain --log` reports `code` for."""
    result = CliRunner().invoke(cli, ["explain", "--log", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    return [f["request"] for f in (data["breakpoints"] or {}).get("findings", []) if f["code"] == code]


def test_every_page_has_a_bad_and_a_good_example() -> None:
    for page in sorted(PAGES.glob("PFX*.md")):
        specs = [json.loads(m.group(2))["expect"] for m in _BLOCK.finditer(page.read_text(encoding="utf-8"))]
        assert page.stem in RULES, f"{page.name} documents no known rule"
        assert page.stem in specs and "none" in specs, f"{page.name} needs a bad and a good example"
