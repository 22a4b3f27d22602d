"""A request built as a keyword dict in the function that sends it (`kwargs = dict(...)`, entries set
afterwards on every path or some, `**kwargs`), and carried through wrappers to their callers."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from prefixlint.api import Options
from prefixlint.core.findings import Diagnostic, Severity
from prefixlint.python import analyze_python

FIXTURE = FIXTURES / "python" / "kwargs_requests.py"

_GUIDE = (
    'GUIDE = ("Keep every file name, function name and decision the user made, drop greetings and small "\n'
    '         "talk, and write the summary in the first person as the user, in plain prose without lists "\n'
    '         "or headings, under two hundred words, and never invent a decision nobody made.")\n'
)
_MESSAGES = '[{"role": "system", "content": %s}, {"role": "user", "content": question}]'


def _diagnostics(path: str, text: str) -> list[Diagnostic]:
    return analyze_python(path, text, Options()).diagnostics


def _one(text: str) -> Diagnostic:
    [diag] = _diagnostics("app.py", text)
    return diag


def test_a_clock_sent_through_two_wrapper_methods_names_the_call() -> None:
    found = {d.span.line: d for d in _diagnostics(str(FIXTURE), FIXTURE.read_text(encoding="utf-8"))}
    clock = found[44]
    assert (clock.code, clock.severity) == ("PFX101", Severity.ERROR)
    assert "`litellm.completion()` (LiteLLM completion) (line 26)" in clock.message
    assert "no call that sends it" not in clock.message


def test_a_key_set_on_each_branch_takes_each_value() -> None:
    found = {d.span.line: d for d in _diagnostics(str(FIXTURE), FIXTURE.read_text(encoding="utf-8"))}
    assert (found[54].code, found[54].severity) == ("PFX103", Severity.ERROR)
    assert "(line 59)" in found[54].message


def test_a_mapping_not_built_here_is_not_followed() -> None:
    found = {d.span.line: d for d in _diagnostics(str(FIXTURE), FIXTURE.read_text(encoding="utf-8"))}
    assert (found[63].code, found[63].severity) == ("PFX101", Severity.INFO)
    assert "no call that sends it to a model was found" in found[63].message


@pytest.mark.parametrize(
    "build",
    [
        'kwargs = dict(model="m")\n    kwargs.update(messages=messages)',
        'kwargs = {"model": "m"}\n    kwargs.update({"messages": messages})',
        'kwargs = dict(model="m")\n    kwargs.setdefault("messages", messages)',
        'kwargs = dict({"model": "m"}, messages=messages)',
        'base = {"messages": messages}\n    kwargs = dict(**base, model="m")',
    ],
    ids=["update-keywords", "update-mapping", "setdefault", "dict-of-mapping", "dict-of-starred"],
)
def test_each_way_of_setting_an_entry_reaches_the_sink(build: str) -> None:
    text = (
        f"import litellm\nfrom datetime import datetime\n\n{_GUIDE}\n\n"
        "def send(messages):\n"
        f"    {build}\n"
        "    return litellm.completion(**kwargs)\n\n\n"
        "def ask(question):\n"
        '    system = f"Now: {datetime.now():%H:%M:%S}\\n" + GUIDE\n'
        '    return send([{"role": "system", "content": system}, {"role": "user", "content": question}])\n'
    )
    diag = _one(text)
    assert (diag.code, diag.span.line, diag.severity) == ("PFX101", 15 + build.count("\n"), Severity.ERROR)
    assert "`litellm.completion()`" in diag.message


def test_a_key_set_on_some_paths_only_is_possibly_absent_but_still_sent() -> None:
    text = (
        f"import litellm\nfrom datetime import datetime\n\n{_GUIDE}\n\n"
        "def send(question, chat):\n"
        '    system = f"Now: {datetime.now():%H:%M:%S}\\n" + GUIDE\n'
        '    kwargs = dict(model="m", prompt=question)\n'
        "    if chat:\n"
        f'        kwargs["messages"] = {_MESSAGES % "system"}\n'
        "    return litellm.completion(**kwargs)\n"
    )
    diag = _one(text)
    assert (diag.code, diag.span.line, diag.severity) == ("PFX101", 10, Severity.ERROR)


def test_setdefault_of_an_entry_set_on_every_path_changes_nothing() -> None:
    text = (
        f"import litellm\nfrom datetime import datetime\n\n{_GUIDE}\n\n"
        "def send(question):\n"
        f'    kwargs = {{"messages": {_MESSAGES % "GUIDE"}}}\n'
        '    kwargs.setdefault("messages", [{"role": "system", "content": f"{datetime.now()}" + GUIDE}])\n'
        "    return litellm.completion(**kwargs)\n"
    )
    assert [d for d in _diagnostics("app.py", text) if d.severity > Severity.INFO] == []


def test_an_unresolvable_mapping_keeps_todays_behaviour() -> None:
    text = (
        f"import litellm\nfrom datetime import datetime\n\n{_GUIDE}\n\n"
        "def send(messages, extra):\n"
        "    kwargs = extra.copy()\n"
        '    kwargs["model"] = "m"\n'
        "    return litellm.completion(**kwargs)\n\n\n"
        "def ask(question, extra):\n"
        '    system = f"Now: {datetime.now():%H:%M:%S}\\n" + GUIDE\n'
        f"    return send({_MESSAGES % 'system'}, extra)\n"
    )
    diag = _one(text)
    assert (diag.code, diag.span.line, diag.severity) == ("PFX101", 16, Severity.INFO)
    assert "of the message list" in diag.message and "litellm.completion" not in diag.message


def test_an_entry_set_in_another_arm_or_before_the_dict_is_built_is_not_sent() -> None:
    text = (
        f"import litellm\nfrom datetime import datetime\n\n{_GUIDE}\n\n"
        "def send(question, anthropic):\n"
        "    if anthropic:\n"
        '        kwargs = {"model": "a"}\n'
        '        kwargs["messages"] = [{"role": "system", "content": f"{datetime.now()}" + GUIDE}]\n'
        "        return litellm.completion(**kwargs)\n"
        "    else:\n"
        f'        kwargs = {{"model": "b", "messages": {_MESSAGES % "GUIDE"}}}\n'
        "        return litellm.completion(**kwargs)\n"
    )
    [diag] = _diagnostics("app.py", text)
    assert (diag.code, diag.span.line) == ("PFX101", 12)
    assert "(line 13)" in diag.message  # the first arm's request only


@pytest.mark.parametrize(
    "build",
    [
        'params = {"model": "m", "messages": messages, **({"system": system} if system else {})}',
        'params = {**base(messages), **({"system": system} if system else {})}',
        'params = {**base(messages), "system": system, "stream": True}',
    ],
    ids=["conditional-spread", "helper-spread", "helper-then-entries"],
)
def test_a_dict_spread_into_the_request_display_is_read(build: str) -> None:
    text = (
        f"import anthropic\nfrom datetime import datetime\n\n{_GUIDE}\n\n"
        "def base(messages):\n"
        '    return {"model": "m", "messages": messages}\n\n\n'
        "def send(question):\n"
        '    system = f"Now: {datetime.now():%H:%M:%S}\\n" + GUIDE\n'
        '    messages = [{"role": "user", "content": question}]\n'
        f"    {build}\n"
        "    return anthropic.Anthropic().messages.create(**params)\n"
    )
    diag = _one(text)
    assert (diag.code, diag.span.line, diag.severity) == ("PFX101", 14, Severity.ERROR)
    assert "messages.create()" in diag.message


def test_a_later_entry_of_the_display_wins_over_a_spread_before_it() -> None:
    text = (
        f"import anthropic\nfrom datetime import datetime\n\n{_GUIDE}\n\n"
        "def send(question, extra):\n"
        '    clocked = {"system": f"Now: {datetime.now():%H:%M:%S}\\n" + GUIDE}\n'
        '    params = {"messages": [{"role": "user", "content": question}], **clocked, "system": GUIDE}\n'
        "    return anthropic.Anthropic().messages.create(**params)\n"
    )
    assert [d for d in _diagnostics("app.py", text) if d.severity > Severity.INFO] == []
