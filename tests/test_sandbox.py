"""Server-side template injection payloads (fixtures/hostile/ssti/) never reach the OS.

Each payload is linted in-process under an audit hook that records every process, file-write,
network, environment and dynamic-library event, with a canary secret in the environment and one
in a file beside the payloads. Every payload must come out as an error finding on its own file
(PFX001/PFX002), the canaries must appear nowhere, and nothing may be executed or written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jinja2
import pytest
from conftest import FIXTURES

from prefixlint.api import Options, lint_paths
from prefixlint.jinja.template import ChatTemplate

SSTI = FIXTURES / "hostile" / "ssti"
PAYLOADS = sorted(SSTI.glob("*.jinja"))
MARKER = Path("/tmp/prefixlint-ssti-marker")  # what the payloads try to `touch`
FILE_CANARY = (SSTI / "secret.txt").read_text(encoding="utf-8").strip()
ENV_CANARY = "CANARY-ENV-51d0e2"
OPTIONS = Options(multiturn=False)

# Audit events that mean a template got out of the sandbox.
FORBIDDEN_EVENTS = (
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "pty.spawn",
    "subprocess.Popen",
    "socket.",
    "ctypes.",
    "os.remove",
    "os.rename",
    "os.mkdir",
    "os.rmdir",
    "os.chmod",
    "os.chown",
    "os.putenv",
    "os.unsetenv",
    "os.kill",
    "os.symlink",
    "os.link",
    "os.truncate",
    "shutil.",
    "urllib.",
    "webbrowser.",
    "sqlite3.",
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_recorded: list[tuple[str, tuple]] | None = None  # events while recording, else None


def _audit(event: str, args: tuple) -> None:
    if _recorded is None:
        return
    if event.startswith(FORBIDDEN_EVENTS):
        _recorded.append((event, args))
    elif event == "open":
        path, mode, flags = (tuple(args) + (None, None, 0))[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(
            (flags or 0) & _WRITE_FLAGS
        )
        if writing or (isinstance(path, (str, bytes)) and "secret" in os.fsdecode(path)):
            _recorded.append((event, args))


sys.addaudithook(_audit)  # permanent by design; inert unless a test is recording


@contextmanager
def recording() -> Iterator[list[tuple[str, tuple]]]:
    """Record forbidden events while the block runs (pytest's own between tests are not ours)."""
    global _recorded
    MARKER.unlink(missing_ok=True)
    events: list[tuple[str, tuple]] = []
    _recorded = events
    try:
        yield events
    finally:
        _recorded = None


@pytest.fixture(autouse=True)
def _canary_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFIXLINT_CANARY", ENV_CANARY)


@pytest.fixture(autouse=True, scope="module")
def _tokenizer_loaded() -> None:
    # prefixlint's own tokenizer helper (a fork, then a kill) is not the template reaching the OS:
    # loaded before any recording, as an earlier test file of the same run would have.
    from prefixlint.models.tokens import load_tokenizer

    load_tokenizer(None)


def test_there_are_payloads() -> None:
    assert len(PAYLOADS) >= 40


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: p.stem)
def test_payload_is_an_error_finding_and_touches_nothing(payload: Path) -> None:
    with recording() as events:
        report = lint_paths([str(payload)], OPTIONS)
    [result] = report.sources
    errors = [d for d in result.diagnostics if d.code in ("PFX001", "PFX002") and d.severity.label == "error"]
    # A payload that reads an attribute of an app object (`config.items()`, `request.application`)
    # fails on prefixlint's stand-in string before its attack: that is said, at info.
    stand_in = [
        d for d in result.diagnostics if d.code == "PFX002" and "with the stand-in value of" in d.message
    ]
    assert errors or stand_in, f"{payload.name} rendered without an error: {result.diagnostics}"
    assert events == [], f"{payload.name} reached the OS: {events}"
    assert not MARKER.exists()
    text = json.dumps([d.to_json() for d in result.diagnostics])
    assert ENV_CANARY not in text and FILE_CANARY not in text


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: p.stem)
def test_payload_render_raises(payload: Path) -> None:
    """Directly: the render raises (SecurityError, no loader, undefined), it never prints an
    empty string where an attribute walk was attempted."""
    template = ChatTemplate(payload.read_text(encoding="utf-8"), str(payload))
    with recording() as events, pytest.raises((jinja2.TemplateError, TypeError)):
        template.render([{"role": "user", "content": "hi"}])
    assert events == []


def test_lone_dunder_access_is_an_error_not_empty_text() -> None:
    # HF's sandbox prints '' for `x.__class__`; ours raises so the attempt is reported.
    with pytest.raises(jinja2.exceptions.SecurityError):
        ChatTemplate("{{ messages.__class__ }}", "t.jinja").render([])


def test_all_payloads_in_one_cli_run(tmp_path: Path) -> None:
    """The real command on the whole folder: one finding per payload, exit 1, no traceback,
    no canary, no marker file."""
    env = {**os.environ, "PREFIXLINT_CANARY": ENV_CANARY, "PYTHONDONTWRITEBYTECODE": "1"}
    MARKER.unlink(missing_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "prefixlint",
            "check",
            "--no-cache",
            "--no-multiturn",
            "--format",
            "json",
            str(SSTI),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert ENV_CANARY not in proc.stdout + proc.stderr and FILE_CANARY not in proc.stdout + proc.stderr
    assert not MARKER.exists()
    report = json.loads(proc.stdout)
    flagged = {
        Path(d["path"]).name
        for d in report["diagnostics"]
        if d["code"] in ("PFX001", "PFX002")
        and (d["severity"] == "error" or "with the stand-in value of" in d["message"])
    }
    assert flagged == {p.name for p in PAYLOADS}
    assert list(tmp_path.iterdir()) == []
