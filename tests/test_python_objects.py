"""Requests assembled from object state (fixtures/objects_project): prompt text kept on an object
(set in `__init__`, from a constructor parameter or its default) and read by a function given the
object, or by a method, then sent through a method of another object the first one holds.

- the class of `obj.attr` from the attribute's assignments (`self.backend = Backend(self)`) or a
  declared field (`backend: Backend`), so `clerk.backend.complete(...)` is `Backend.complete`;
- the class of a parameter from what the project's callers pass (`reply(self)` in a method of
  `Clerk` makes `clerk` a `Clerk`), then `clerk.rules` reads the class's attribute values;
- a constructor's parameter followed to the project's constructions of the class (in other
  modules), else its default when nothing makes one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prefixlint.core.findings import Severity
from prefixlint.python import analyze_python
from prefixlint.settings import Options

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "objects_project"

Found = dict[tuple[str, int], tuple[Severity, str]]


def _findings(root: Path, relative: str) -> Found:
    path = root / relative
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options(project_root=str(root)))
    return {(d.code, d.span.line): (d.severity, d.message) for d in result.diagnostics}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "objects_project")
    return tmp_path / "objects_project"


def test_object_state_read_by_a_function_given_the_object_is_sent_through_its_backend() -> None:
    found = _findings(FIXTURE, "desk/replies.py")
    assert set(found) == {("PFX104", 5)}
    severity, message = found[("PFX104", 5)]
    assert severity == Severity.WARNING
    assert "`socket.gethostname()` in desk/texts.py:5" in message
    assert "the request `complete()` sends" in message


def test_the_constant_a_constructor_defaults_to_is_linked_to_that_request() -> None:
    found = _findings(FIXTURE, "desk/texts.py")
    assert set(found) == {("PFX104", 5)}
    severity, message = found[("PFX104", 5)]
    # per process (made at import), ahead of the static instructions: a warning, not info
    assert severity == Severity.WARNING
    assert "in desk/replies.py" in message and "no call that sends it" not in message


def test_static_object_state_sent_the_same_way_is_silent() -> None:
    assert not any(line == 5 for _, line in _findings(FIXTURE, "kiosk/replies.py"))
    assert _findings(FIXTURE, "kiosk/clerk.py") == {}


def test_an_attribute_whose_class_sends_nothing_is_no_request() -> None:
    """`Recorder.backend` is a `Logbook`, whose `complete` keeps the messages: the clock in them
    is a prompt's shape only, reported at info as one no call sends."""
    found = _findings(FIXTURE, "kiosk/replies.py")
    assert set(found) == {("PFX101", 10)}
    severity, message = found[("PFX101", 10)]
    assert severity == Severity.INFO and "no call that sends it" in message


def test_without_a_caller_passing_the_object_its_class_is_unknown(project: Path) -> None:
    clerk = project / "desk" / "clerk.py"
    clerk.write_text(
        clerk.read_text(encoding="utf-8").replace("reply(self)", "reply(None)"), encoding="utf-8"
    )
    assert _findings(project, "desk/replies.py") == {}


def test_a_construction_that_passes_static_text_replaces_the_default(project: Path) -> None:
    (project / "desk" / "front.py").write_text(
        "from desk.clerk import Clerk\n\n\ndef open_desk():\n"
        '    return Clerk(rules="You answer questions about the office and nothing else.")\n',
        encoding="utf-8",
    )
    assert _findings(project, "desk/replies.py") == {}


def test_a_constructor_parameter_a_caller_in_another_module_passes_is_per_request() -> None:
    """`Summarizer(topic)` with `topic = input(...)` in notes/cli.py: the user's line, seen at its
    source (the models table's `input()` request row), not guessed by a name: its loss decides."""
    found = _findings(FIXTURE, "notes/summarizer.py")
    assert set(found) == {("PFX105", 19)}
    severity, message = found[("PFX105", 19)]
    assert severity == Severity.WARNING
    assert "`self.topic`, the user's line (`input()`)" in message


def test_a_constructor_parameter_its_callers_give_a_constant_is_silent(project: Path) -> None:
    cli = project / "notes" / "cli.py"
    cli.write_text(
        cli.read_text(encoding="utf-8").replace("Summarizer(topic)", 'Summarizer("budget")'), encoding="utf-8"
    )
    assert _findings(project, "notes/summarizer.py") == {}


def test_a_declared_field_gives_the_class_of_the_object_it_holds() -> None:
    found = _findings(FIXTURE, "desk/counter.py")
    assert set(found) == {("PFX104", 12)}
    assert found[("PFX104", 12)][0] == Severity.WARNING


def test_an_attribute_set_on_the_object_elsewhere_is_one_of_its_values(project: Path) -> None:
    """`clerk.rules = f"... {time.ctime()} ..."` in another module, on an object whose class is
    known there (`clerk = Clerk()`): what the reply reads of `clerk.rules` may be that text."""
    (project / "kiosk" / "front.py").write_text(
        "import time\n\nfrom desk.texts import PLAIN_PROMPT\nfrom kiosk.clerk import Clerk\n\n\n"
        "def open_kiosk():\n    clerk = Clerk()\n"
        '    clerk.rules = f"Kiosk opened {time.ctime()}.\\n" + PLAIN_PROMPT\n    return clerk\n',
        encoding="utf-8",
    )
    found = _findings(project, "kiosk/replies.py")
    assert set(found) == {("PFX101", 5), ("PFX101", 10)}
    assert "`time.ctime()` in kiosk/front.py:9" in found[("PFX101", 5)][1]
    assert found[("PFX101", 5)][0] > Severity.INFO


def test_an_attribute_set_on_an_object_of_another_class_is_not_its_value(project: Path) -> None:
    (project / "kiosk" / "front.py").write_text(
        "import time\n\n\nclass Board:\n    rules = ''\n\n\n"
        "def open_board():\n    board = Board()\n"
        '    board.rules = f"Board opened {time.ctime()}."\n    return board\n',
        encoding="utf-8",
    )
    assert ("PFX101", 5) not in _findings(project, "kiosk/replies.py")
