"""Shared test helpers: where the shared corpus is, and a skip when CI's ../shared is absent."""

from __future__ import annotations

import os
import subprocess
import sys
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


def run_prefixlint(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`python -m prefixlint ARGS` as a user runs it (a fresh process: real exit code, real stderr)."""
    full_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    # This checkout's package even when `cwd` is elsewhere (else the installed one would run).
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), full_env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "prefixlint", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def git(cwd: Path, *args: str) -> None:
    """Run git in `cwd` as a test user (no global identity or signing needed)."""
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def diff_repo(tmp_path: Path) -> Path:
    """A git repository whose first commit holds fixtures/ecosystem/diff/base.jinja as its chat template."""
    import shutil

    git(tmp_path, "init", "-q")
    shutil.copy(FIXTURES / "ecosystem" / "diff" / "base.jinja", tmp_path / "chat_template.jinja")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path
