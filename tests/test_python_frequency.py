"""Which request-dependent values vary at least as often as others (prefixlint/python/frequency.py),
and what that leaves of the findings: a later value costs only what an earlier one does not lose."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES

from prefixlint.api import Options
from prefixlint.core.findings import Diagnostic, Severity
from prefixlint.python import analyze_python
from prefixlint.python.frequency import (
    COVERS,
    Frequency,
    frequency,
    most_frequent,
    varies_at_least_as_often,
    varies_more_often,
)
from prefixlint.python.segments import Hole, Provenance


def hole(provenance: Provenance = Provenance.CLOCK, **kw: object) -> Hole:
    return Hole(provenance, 1, 1, "v", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (hole(), Frequency.CALL),
        (hole(Provenance.ID), Frequency.CALL),
        (hole(Provenance.REQUEST), Frequency.CALL),
        (hole(daily=True), Frequency.DAY),
        (hole(timing="import"), Frequency.PROCESS),
        (hole(Provenance.ID, timing="construction"), Frequency.OBJECT),
        (hole(Provenance.ENVIRONMENT), Frequency.PROCESS),  # a machine value, read per call or not
        (hole(Provenance.ENVIRONMENT, deployment=True), Frequency.DEPLOYMENT),  # a setting, however read
        (hole(Provenance.ENVIRONMENT, deployment=True, timing="import"), Frequency.DEPLOYMENT),
        (hole(Provenance.UNORDERED), Frequency.PROCESS),
        (hole(Provenance.UNKNOWN, history=True), Frequency.CONVERSATION),
        (hole(Provenance.UNKNOWN), None),
    ],
)
def test_frequency_of_a_value(value: Hole, want: Frequency | None) -> None:
    assert frequency(value) is want


def test_the_order_is_reflexive_and_per_call_covers_everything() -> None:
    assert all(f in COVERS[f] for f in Frequency)
    assert COVERS[Frequency.CALL] == frozenset(Frequency)
    assert all(Frequency.CALL not in COVERS[f] for f in Frequency if f is not Frequency.CALL)


@pytest.mark.parametrize(
    ("earlier", "later", "want"),
    [
        (hole(), hole(Provenance.ID), True),  # per call before per call
        (hole(Provenance.REQUEST), hole(timing="import"), True),
        (hole(timing="import"), hole(), False),  # per process before per call: both cost
        (hole(Provenance.ENVIRONMENT), hole(Provenance.RANDOM), False),
        (hole(daily=True), hole(Provenance.ENVIRONMENT), False),  # a day and a process: unordered
        (hole(Provenance.ENVIRONMENT), hole(daily=True), False),
        (hole(Provenance.UNKNOWN, history=True), hole(timing="construction"), True),
        (hole(Provenance.UNKNOWN, history=True), hole(), False),
        (hole(timing="construction"), hole(timing="import"), True),
        (hole(timing="import"), hole(timing="construction"), False),
        (hole(Provenance.UNKNOWN), hole(timing="import"), False),  # unknown is not request-dependent
        # two deployments are two processes: a machine value parts every request a setting parts
        (hole(Provenance.ENVIRONMENT), hole(Provenance.ENVIRONMENT, deployment=True), True),
        (hole(Provenance.ENVIRONMENT, deployment=True), hole(Provenance.ENVIRONMENT), False),
        (hole(daily=True), hole(Provenance.ENVIRONMENT, deployment=True), False),  # unordered
        (hole(Provenance.ENVIRONMENT, deployment=True), hole(daily=True), False),
    ],
)
def test_varies_at_least_as_often(earlier: Hole, later: Hole, want: bool) -> None:
    assert varies_at_least_as_often(earlier, later) is want


FILLER = " ".join(
    f"Rule {i}: answer the question precisely and cite the sources you used." for i in range(25)
)


def module(first: str, second: str, head: str = "", params: str = "question: str") -> str:
    """A system prompt with two values, each ahead of ~375 static tokens, sent with the question."""
    return (
        "import datetime\nimport os\nimport uuid\nfrom openai import OpenAI\n\n"
        f"client = OpenAI()\n{head}\n\n"
        f"def answer({params}) -> str:\n"
        "    system = (\n"
        f'        f"First: {{{first}}}\\n"\n'
        f'        "{FILLER}\\n"\n'
        f'        f"Then: {{{second}}}\\n"\n'
        f'        "{FILLER}"\n'
        "    )\n"
        "    return client.chat.completions.create(\n"
        '        model="m",\n'
        '        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],\n'
        "    )\n"
    )


def findings(tmp_path: Path, source: str) -> list[tuple[str, int, Severity, str]]:
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    result = analyze_python(str(path), source, Options())
    return [(d.code, d.span.line, d.severity, d.message) for d in result.diagnostics]


def test_a_per_request_input_then_a_clock_is_one_finding_at_the_input(tmp_path: Path) -> None:
    found = findings(tmp_path, module("query", "datetime.datetime.now()", params="question: str, query: str"))
    assert [(code, line) for code, line, _, _ in found] == [("PFX105", 11)]


def test_a_clock_then_an_id_is_one_finding_at_the_clock(tmp_path: Path) -> None:
    """The id, a block and more on, varies as often as the clock: the requests the clock parts lose
    both texts (the evidence counts them), but what follows the id is lost to it too, so the
    clock's own loss, on which it is judged, ends at the id, and the message names the id; the id
    has no finding of its own."""
    source = module("datetime.datetime.now()", "uuid.uuid4()")
    found = findings(tmp_path, source)
    assert [(code, line, severity) for code, line, severity, _ in found] == [("PFX101", 11, Severity.ERROR)]
    own = re.search(
        r"; (\d+) static tokens of them are its own: `uuid.uuid4\(\)` \(line 13, per request\)", found[0][3]
    )
    assert own is not None and "after it parts these requests again" in found[0][3]
    (clock,) = analyze_python(str(tmp_path / "m.py"), source, Options()).diagnostics
    assert (
        clock.static_tokens is not None and 1.8 * int(own.group(1)) < clock.static_tokens
    )  # one FILLER of two


def test_a_clock_then_an_import_time_value_is_a_co_cause_at_info(tmp_path: Path) -> None:
    """The clock parts every request the per-process value parts: the value costs nothing on top
    (a co-cause), at info, and says which value already parts the requests; what it costs alone
    (an error, once the clock moves) is kept for the fix verifier, not reported."""
    found = findings(tmp_path, module("datetime.datetime.now()", "WORKDIR", head="WORKDIR = os.getcwd()"))
    assert [(code, line, severity) for code, line, severity, _ in found] == [
        ("PFX104", 7, Severity.INFO),
        ("PFX101", 11, Severity.ERROR),
    ]
    assert (
        "but `datetime.datetime.now()` (line 11, per second) before it already parts these requests"
        in (found[0][3])
    )


def test_two_values_that_vary_as_often_are_one_finding(tmp_path: Path) -> None:
    """A per-request input behind a per-second clock, a block and more apart: the requests the
    input parts differ at the clock already, and the input is no co-cause either (it varies no
    less often): no finding of its own."""
    found = findings(tmp_path, module("datetime.datetime.now()", "query", params="question: str, query: str"))
    assert [(code, line) for code, line, _, _ in found] == [("PFX101", 11)]


def test_an_import_time_value_then_a_per_call_clock_are_both_reported(tmp_path: Path) -> None:
    found = findings(tmp_path, module("WORKDIR", "datetime.datetime.now()", head="WORKDIR = os.getcwd()"))
    assert [(code, line) for code, line, _, _ in found] == [("PFX104", 7), ("PFX101", 13)]
    assert found[1][2] is Severity.ERROR and "may already part" not in found[1][3]


def test_a_clock_after_a_name_guess_is_kept_at_info_and_says_which(tmp_path: Path) -> None:
    found = findings(
        tmp_path, module("session_id", "datetime.datetime.now()", params="question: str, session_id: str")
    )
    assert [(code, line) for code, line, _, _ in found] == [("PFX102", 11), ("PFX101", 13)]
    _, _, severity, message = found[1]
    assert severity is Severity.INFO
    assert "`session_id` before it, named like an identifier, may already part the requests" in message


def test_a_parameter_written_twice_costs_once(tmp_path: Path) -> None:
    """The second `{task}` is the value already written: requests that agree on the first agree on
    it, so it parts none (whatever its name says)."""
    source = (
        "from openai import OpenAI\n\nclient = OpenAI()\n\n\n"
        "def answer(task, notes) -> str:\n"
        f'    system = f"Task: {{task}}\\n{FILLER}\\nAgain: {{task}}\\n{FILLER}"\n'
        "    return client.chat.completions.create(\n"
        '        model="m", messages=[{"role": "system", "content": system}]\n'
        "    )\n"
    )
    found = findings(tmp_path, source)
    assert [(code, line) for code, line, _, _ in found] == [("PFX105", 7)]


def test_a_candidate_text_does_not_outrank_the_request_that_sends_it(tmp_path: Path) -> None:
    """`USER_PROMPT` alone opens with the id, but the request that sends it opens with the clock,
    which parts every request first: what the id costs is what it costs there, nothing."""
    source = (
        "import datetime\nimport uuid\n\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
        f'RULES = "{FILLER}"\n'
        'USER_PROMPT = f"Deployment {uuid.uuid4()}\\n" + RULES\n\n\n'
        "def answer(question: str) -> str:\n"
        '    system = f"Now: {datetime.datetime.now()}\\n" + RULES\n'
        '    user = {"role": "user", "content": USER_PROMPT + question}\n'
        '    messages = [{"role": "system", "content": system}, user]\n'
        '    return client.chat.completions.create(model="m", messages=messages)\n'
    )
    found = findings(tmp_path, source)
    # the id is made once, at import: in the request, behind the per-call clock, a co-cause at info
    assert [(code, line, severity) for code, line, severity, _ in found] == [
        ("PFX102", 8, Severity.INFO),
        ("PFX101", 12, Severity.ERROR),
    ]
    assert "(a co-cause)" in found[0][3]


def test_a_setting_is_at_most_info_and_names_the_variable(tmp_path: Path) -> None:
    """A setting of the deployment ahead of ~375 static tokens: the same on every request of one
    deployment, an info finding that says so and names the variable. The per-request input after
    it varies more often: a finding of its own (at info, as a name guess)."""
    found = findings(tmp_path, module('os.getenv("APP_REGION")', "query", params="question: str, query: str"))
    assert [(code, line, severity) for code, line, severity, _ in found] == [
        ("PFX104", 11, Severity.INFO),
        ("PFX105", 13, Severity.INFO),
    ]
    assert 'a deployment setting (`os.getenv("APP_REGION")`)' in found[0][3]
    assert "deployment's configuration (`APP_REGION`)" in found[0][3]
    assert "never within one" in found[0][3]


def test_a_clock_after_a_setting_is_reported_in_full_and_the_setting_loses_the_text_up_to_it(
    tmp_path: Path,
) -> None:
    """The clock changes more often than the setting before it: it parts the requests of one
    deployment, a finding of its own over the text after it; the setting loses only the text up to
    the clock, at info."""
    found = findings(tmp_path, module('os.environ["BUILD"]', "datetime.datetime.now()"))
    assert [(code, line, severity) for code, line, severity, _ in found] == [
        ("PFX104", 11, Severity.INFO),
        ("PFX101", 13, Severity.ERROR),
    ]
    assert "(`BUILD`)" in found[0][3] and "may already part" not in found[1][3]


def test_a_setting_behind_a_clock_costs_nothing_on_top(tmp_path: Path) -> None:
    """The clock parts every request the setting parts: the setting is no finding of its own (a
    co-cause is reported only above info, and a setting never is)."""
    found = findings(tmp_path, module("datetime.datetime.now()", 'os.environ["BUILD"]'))
    assert [(code, line, severity) for code, line, severity, _ in found] == [("PFX101", 11, Severity.ERROR)]


def test_the_most_frequent_of_a_group_is_the_one_nothing_else_varies_more_often_than() -> None:
    date, clock, pid = hole(daily=True), hole(), hole(Provenance.ENVIRONMENT)
    setting = hole(Provenance.ENVIRONMENT, deployment=True)
    assert most_frequent([date, clock]) is clock
    assert most_frequent([setting, pid]) is pid
    assert most_frequent([date, pid]) is date  # unordered: the first
    assert most_frequent([hole(Provenance.UNKNOWN)]) is None
    assert varies_more_often(pid, setting) and not varies_more_often(setting, pid)
    assert not varies_more_often(clock, hole(Provenance.ID))  # as often: not more


# --- the first varying field carries the loss (fixtures/python/first_varying_field.py) -------------
FIRST_FIELD = FIXTURES / "python" / "first_varying_field.py"


def first_field_findings() -> list[Diagnostic]:
    source = FIRST_FIELD.read_text(encoding="utf-8")
    return analyze_python(str(FIRST_FIELD), source, Options()).diagnostics


def test_a_query_after_the_snippets_searched_for_it_is_no_finding_of_its_own() -> None:
    """SuperAGI's shape: the snippets, then the query, then a short tail. The requests part at the
    snippets, which carry the loss up to the query; the query adds nothing (no finding at line 32)."""
    found = {(d.span.line, d.code): d for d in first_field_findings()}
    snippets = found[(30, "PFX105")]
    assert snippets.severity is Severity.INFO  # a parameter whose name says nothing: a guess
    assert (32, "PFX105") not in found


def test_an_id_after_a_date_is_reported_with_the_tail_up_to_the_end() -> None:
    """The id varies more often than the date: the date loses the text up to the id (a warning, per
    day), the id loses CLOSING after it, a finding of its own at its rule's severity."""
    found = {(d.span.line, d.code): d for d in first_field_findings()}
    date, request = found[(40, "PFX101")], found[(41, "PFX102")]
    assert (date.severity, request.severity) == (Severity.WARNING, Severity.ERROR)
    assert "may already part" not in request.message and "co-cause" not in request.message
    assert date.static_tokens > request.static_tokens > 16


def test_two_close_parameters_are_one_group_named_at_the_first() -> None:
    found = [d for d in first_field_findings() if d.span.line == 48]
    assert [(d.code, d.span.column, d.severity) for d in found] == [("PFX105", 23, Severity.INFO)]
    assert found[0].group == (("query", 48, 42),)
    assert "`query` is known only as a parameter" not in found[0].message  # both are guesses


def test_the_fixture_has_exactly_its_marked_findings() -> None:
    assert sorted((d.span.line, d.code) for d in first_field_findings()) == [
        (30, "PFX105"),
        (40, "PFX101"),
        (41, "PFX102"),
        (48, "PFX105"),
    ]


# --- what is not prompt text at the call (fixtures/python/orm_columns.py) --------------------------
ORM = FIXTURES / "python" / "orm_columns.py"


def test_orm_column_defaults_and_sort_keys_are_silent_and_a_real_clock_beside_them_is_not() -> None:
    """`Column(DateTime, default=datetime.utcnow, onupdate=...)` is the time a row is written, and
    `order_by(Note.created_at.desc())` / `max(..., key=...)` only order: no finding in `answer()`
    or `freshest()`. `stamped()` writes `datetime.utcnow()` into its system prompt: an error at
    that line, whose loss is not cut short by the column read beside it."""
    source = ORM.read_text(encoding="utf-8")
    found = analyze_python(str(ORM), source, Options()).diagnostics
    assert [(d.code, d.span.line, d.severity) for d in found] == [("PFX101", 54, Severity.ERROR)]
    assert "`datetime.utcnow()`" in found[0].message and not found[0].group


# --- unknown text made per request ends the count (fixtures/python/per_request_unknowns.py) -------
PER_REQUEST = FIXTURES / "python" / "per_request_unknowns.py"


def per_request_findings() -> dict[int, Diagnostic]:
    source = PER_REQUEST.read_text(encoding="utf-8")
    return {d.span.line: d for d in analyze_python(str(PER_REQUEST), source, Options()).diagnostics}


def test_a_date_before_a_field_of_what_a_per_request_call_returns_loses_no_rules() -> None:
    """`pull.details.title` of `open_pull_request(question)` differs per request: the rules after
    it are lost to it, and the few tokens between the date and it are less than a block."""
    assert 29 not in per_request_findings()


def test_a_date_before_a_method_call_on_a_per_request_object_loses_only_the_text_up_to_it() -> None:
    """`pull.describe()` differs per request: the date loses the preamble (about 45 tokens, more than
    a block: an error) but not the rules (about 80 more) behind the description."""
    found = per_request_findings()
    described = found[35]
    assert (described.code, described.severity) == ("PFX101", Severity.ERROR)
    assert 30 < described.static_tokens < 60


def test_a_config_attribute_after_a_date_stays_static_and_the_rules_are_lost_to_the_date() -> None:
    """`settings.project_name` is unknown but no request makes it: the rules after it count."""
    found = per_request_findings()[40]
    assert (found.code, found.severity) == ("PFX101", Severity.ERROR)
    assert found.static_tokens > 75


def test_the_per_request_fixture_has_exactly_its_marked_findings() -> None:
    assert sorted(per_request_findings()) == [35, 40]
