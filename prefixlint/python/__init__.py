"""The Python frontend (libcst): finds prompt-building code and what in it breaks prefix caching.

Imported lazily by the API so that linting templates alone never loads libcst."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefixlint.api import Options
    from prefixlint.model import SourceResult


def analyze_python(path: str, text: str, options: Options) -> SourceResult:
    from prefixlint.python.analyze import analyze_python as analyze

    return analyze(path, text, options)


__all__ = ["analyze_python"]
