"""Shared test helpers: where the shared corpus is, and a skip when CI's ../shared is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"

needs_corpus = pytest.mark.skipif(
    not (CORPUS / "templates").is_dir(), reason="../shared/corpus is not beside this checkout"
)


def corpus_templates() -> list[Path]:
    if not (CORPUS / "templates").is_dir():
        return []
    return sorted((CORPUS / "templates").rglob("*.jinja"))
