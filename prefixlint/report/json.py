"""The JSON report (contract: DESIGN.md "Output"); keys are stable and sorted for byte-identical runs."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefixlint.run.check import Report


def render_json(report: Report) -> str:
    document = {
        "version": 1,
        "tokenizer": report.tokenizer,
        "engine": report.engine,
        "template_variables": report.template_vars,
        "diagnostics": [d.to_json() for d in report.diagnostics],
        "sources": [s.to_json() for s in report.sources],
        # `check --fix`: the findings fixed, as they were reported before the fix was written.
        "fixed": [asdict(a) for a in report.fixed],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
