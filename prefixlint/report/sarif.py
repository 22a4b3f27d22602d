"""SARIF 2.1.0 (OASIS), the format GitHub code scanning and most CI dashboards import.

One run; `tool.driver.rules` lists every rule (its page as help), each result points at its rule by
id and index. Paths stay relative (to `%SRCROOT%`, the folder prefixlint ran in) so uploads from
CI line up with the repository."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from prefixlint.core.findings import Fix, Severity
from prefixlint.report.text import help_text

if TYPE_CHECKING:
    from prefixlint.run.check import Report

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prefixlint")
    except PackageNotFoundError:
        return "0"


def _artifact(path: str) -> dict[str, Any]:
    p = PurePath(path)
    if p.is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(p.as_posix()), "uriBaseId": "%SRCROOT%"}


def _rules() -> list[dict[str, Any]]:
    from prefixlint.core.rules import RULES

    out = []
    for rule in RULES.values():
        entry: dict[str, Any] = {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "defaultConfiguration": {"level": _LEVELS[rule.default_severity]},
        }
        with contextlib.suppress(OSError, ModuleNotFoundError):  # a page not written yet: no help
            entry["help"] = {"text": rule.summary, "markdown": rule.page()}
        out.append(entry)
    return out


def _sarif_fix(fix: Fix) -> dict[str, Any]:
    """A fix as SARIF 2.1.0 `fixes[]`: per file, its replacements (an insertion is an empty
    deleted region; end columns are exclusive in both)."""
    changes = []
    for path in dict.fromkeys(e.path for e in fix.edits):
        replacements = [
            {
                "deletedRegion": {
                    "startLine": e.start_line,
                    "startColumn": e.start_column,
                    "endLine": e.end_line,
                    "endColumn": e.end_column,
                },
                "insertedContent": {"text": e.replacement},
            }
            for e in fix.edits
            if e.path == path
        ]
        changes.append({"artifactLocation": _artifact(path), "replacements": replacements})
    return {"description": {"text": f"{fix.message} ({fix.applicability})"}, "artifactChanges": changes}


def render_sarif(report: Report) -> str:
    rules = _rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for d in report.diagnostics:
        help_line = help_text(d, report.unsafe_fixes)
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _LEVELS[d.severity],
            "message": {"text": d.message + (f"\nhelp: {help_line}" if help_line else "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": _artifact(d.span.path),
                        "region": {"startLine": max(d.span.line, 1), "startColumn": max(d.span.column, 1)},
                    }
                }
            ],
        }
        if d.evidence is not None:
            result["properties"] = {
                "tokenIndex": d.evidence.token_index,
                "cacheableTokens": d.evidence.cacheable_tokens,
                "staticTokensLost": d.evidence.static_tokens_lost,
                "replyTokensLost": d.evidence.reply_tokens_lost,
            }
        if d.fix is not None:
            result["fixes"] = [_sarif_fix(d.fix)]
        results.append(result)
    document = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "prefixlint",
                        "version": _version(),
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
