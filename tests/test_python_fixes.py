"""prefixlint.python.fixes: the candidate fixes for Python findings. Each kind's exact edits and
fixed text on sources written here; sources where no candidate is right; and on every fixture
finding, whether a candidate holds when the fixed text is analysed again (the check `check --fix`
makes before it attaches a fix)."""

from __future__ import annotations

import os
import textwrap
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest
from conftest import CORPUS, FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz import PY_SEEDS, PY_TOKENS, mutated

import prefixlint.python.fixes as fixes
from prefixlint.api import lint_source
from prefixlint.core.edits import apply_edits
from prefixlint.core.findings import Diagnostic, Edit, Fix, Severity, SourceResult, Span
from prefixlint.fixes.autofix import fix_paths
from prefixlint.fixes.kinds import fixes_for as fixes_for_kind
from prefixlint.fixes.verify import Verifier, first_verified, verify
from prefixlint.models.token_memo import remembering
from prefixlint.plan import fix_part
from prefixlint.python import analyze_python
from prefixlint.python.fixes.precision import day_format
from prefixlint.run.sources import Source
from prefixlint.settings import Options

PATH = "prompts.py"
CODES = {"PFX101", "PFX102", "PFX103", "PFX104", "PFX105", "PFX201"}


def finding(text: str, code: str, at: str, label: str | None = None, nth: int = 0) -> Diagnostic:
    """A finding as the frontend reports it: at the start of `at` (its nth occurrence), naming
    `label` (default: `at`) in backticks."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(at, offset + 1)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    message = f"a volatile value (`{label or at}`) is ahead of 40 static tokens of the prompt"
    return Diagnostic(code, Span(PATH, line, column), message, Severity.ERROR)


def fixes_for(text: str, code: str, at: str, label: str | None = None, nth: int = 0) -> list[Fix]:
    text = textwrap.dedent(text)
    return list(fixes.candidates(PATH, text, finding(text, code, at, label, nth)))


def fixed(text: str, fix: Fix) -> str:
    return apply_edits(textwrap.dedent(text), fix.edits)


# --- moves in one text ----------------------------------------------------------------------------
AGENT = """\
    import datetime

    def planner():
        return ChatAgent(f"Today is {datetime.date.today()}.\\nPlan the next step, then say why.")
    """


def test_fstring_sentence_moves_to_the_end_of_its_text() -> None:
    [fix] = fixes_for(AGENT, "PFX101", "datetime.date.today()")
    assert fix.applicability == "unsafe" and fix.verified is False
    assert fix.message == (
        "move `datetime.date.today()` to the end of the text it is in "
        "(the text `Today is {datetime.date.today()}.`)"
    )
    assert fix.edits == (
        Edit(PATH, 4, 24, 4, 59, ""),
        Edit(PATH, 4, 92, 4, 92, "\\nToday is {datetime.date.today()}."),
    )
    assert fixed(AGENT, fix).splitlines()[3] == (
        '    return ChatAgent(f"Plan the next step, then say why.\\nToday is {datetime.date.today()}.")'
    )


MID_LINE = """\
    import platform

    SYSTEM = f"You review code. You run on {platform.system()}. Be brief and concrete, cite lines."
    """


def test_a_sentence_inside_a_line_takes_the_space_before_it() -> None:
    [fix] = fixes_for(MID_LINE, "PFX104", "platform.system()")
    assert fixed(MID_LINE, fix).splitlines()[2] == (
        'SYSTEM = f"You review code. Be brief and concrete, cite lines. You run on {platform.system()}."'
    )


OPENAI = """\
    from datetime import datetime as dt

    def answer(question: str) -> str:
        stamp = dt.now().isoformat()
        return client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {"role": "system", "content": f"Current time: {stamp}\\n\\n{RULES}"},
                {"role": "user", "content": question},
            ],
        )
    """


def test_value_moves_to_the_end_of_the_last_user_message() -> None:
    first, ahead, second, third = fixes_for(OPENAI, "PFX101", "dt.now()")
    assert first.message == (
        "move `dt.now()` to the end of the last user message (the text `Current time: {stamp}`)"
    )
    assert first.edits == (
        Edit(PATH, 8, 45, 8, 70, ""),
        Edit(PATH, 9, 49, 9, 49, ' + f"\\n\\nCurrent time: {stamp}"'),
    )
    lines = fixed(OPENAI, first).splitlines()
    assert lines[7] == '            {"role": "system", "content": f"{RULES}"},'
    assert lines[8] == '            {"role": "user", "content": question + f"\\n\\nCurrent time: {stamp}"},'
    # then the start of the user message, ahead of the user's text (a `+` chain before the name)
    assert ahead.message == (
        "move `dt.now()` to the start of the last user message (the text `Current time: {stamp}`)"
    )
    assert fixed(OPENAI, ahead).splitlines()[8] == (
        '            {"role": "user", "content": f"Current time: {stamp}\\n\\n" + question},'
    )
    # then the end of its own text, then the date alone
    assert second.message.startswith("move `dt.now()` to the end of the text it is in")
    assert fixed(OPENAI, second).splitlines()[7] == (
        '            {"role": "system", "content": f"{RULES}\\n\\nCurrent time: {stamp}"},'
    )
    assert third.message == "keep only the date of `dt.now()`: `dt.now().date()`"
    assert third.edits == (Edit(PATH, 4, 21, 4, 21, ".date()"),)


ANTHROPIC = """\
    import os
    import socket

    def review(diff: str) -> str:
        system = (
            f"Host: {socket.gethostname()}\\n"  # the machine
            f"Repository: {os.getcwd()}\\n"
            + INSTRUCTIONS
        )
        return client.messages.create(system=system, messages=[{"role": "user", "content": diff}])
    """  # noqa: E501


def test_a_literal_left_empty_goes_with_its_line_and_comment() -> None:
    found = fixes_for(ANTHROPIC, "PFX104", "socket.gethostname()")
    to_user, _, to_end, block_to_user, _, block_to_end = found  # (each with its move ahead of the user's)
    assert to_user.edits[0] == Edit(PATH, 6, 1, 7, 1, "")  # whole lines, as lines
    assert fixed(ANTHROPIC, to_user) == textwrap.dedent(
        """\
        import os
        import socket

        def review(diff: str) -> str:
            system = (
                f"Repository: {os.getcwd()}\\n"
                + INSTRUCTIONS
            )
            return client.messages.create(system=system, messages=[{"role": "user", "content": diff + f"\\n\\nHost: {socket.gethostname()}"}])
        """  # noqa: E501
    )
    assert (
        fixed(ANTHROPIC, to_end).splitlines()[6]
        == '        + INSTRUCTIONS + f"\\nHost: {socket.gethostname()}"'
    )
    # Then with the other value beside it, which would be left in front of the instructions.
    assert block_to_user.message.startswith("move `socket.gethostname()`, with `os.getcwd()` beside it,")
    assert fixed(ANTHROPIC, block_to_end).splitlines()[4:7] == [
        "    system = (",
        '        INSTRUCTIONS + f"\\nHost: {socket.gethostname()}\\nRepository: {os.getcwd()}"',
        "    )",
    ]


FEWSHOT = """\
    import random

    def prompt() -> str:
        examples = list(EXAMPLES)
        random.shuffle(examples)
        return "\\n\\n".join(examples) + "\\n\\n" + TASK
    """


def test_an_operand_moves_to_the_end_of_its_plus_chain() -> None:
    [fix] = fixes_for(FEWSHOT, "PFX103", "random.shuffle(examples)")
    assert fix.edits == (
        Edit(PATH, 6, 12, 6, 45, ""),
        Edit(PATH, 6, 49, 6, 49, ' + "\\n\\n" + "\\n\\n".join(examples)'),
    )
    assert fixed(FEWSHOT, fix).splitlines()[5] == '    return TASK + "\\n\\n" + "\\n\\n".join(examples)'


BUILD = '''\
    import time

    BUILD_PROMPT = """Build started at {started}.
    {instructions}""".format(started=int(time.time()), instructions=INSTRUCTIONS)
    '''


def test_a_format_template_sentence_moves_inside_the_template() -> None:
    [fix] = fixes_for(BUILD, "PFX101", "time.time()")
    assert fix.edits == (
        Edit(PATH, 3, 19, 4, 1, ""),
        Edit(PATH, 4, 15, 4, 15, "\nBuild started at {started}."),
    )
    assert fixed(BUILD, fix).splitlines()[2:4] == [
        'BUILD_PROMPT = """{instructions}',
        'Build started at {started}.""".format(started=int(time.time()), instructions=INSTRUCTIONS)',
    ]


PLAN = '''\
    import datetime

    PLAN_PROMPT = """Today is {current_date}.
    Plan the next research step and say why.
    """

    def plan() -> str:
        return PLAN_PROMPT.format(current_date=datetime.date.today().isoformat())
    '''


def test_a_format_template_assigned_to_a_constant_is_edited_where_it_is_written() -> None:
    [fix] = fixes_for(PLAN, "PFX101", "datetime.date.today()")
    # before the white space the template ends with
    assert fixed(PLAN, fix).splitlines()[2:5] == [
        'PLAN_PROMPT = """Plan the next research step and say why.',
        "Today is {current_date}.",
        '"""',
    ]


LANGCHAIN = """\
    chat = ChatPromptTemplate.from_messages(
        [
            ("system", "Today is {current_date}.\\nYou are a travel agent. Quote prices in EUR."),
            ("human", "{question}"),
        ]
    )
    """


def test_a_placeholder_moves_into_the_human_template() -> None:
    to_user, ahead, to_end = fixes_for(LANGCHAIN, "PFX101", '"Today', label="{current_date}")
    assert to_user.edits == (
        Edit(PATH, 3, 21, 3, 47, ""),
        Edit(PATH, 4, 30, 4, 30, "\\n\\nToday is {current_date}."),
    )
    lines = fixed(LANGCHAIN, to_user).splitlines()
    assert lines[2:4] == [
        '        ("system", "You are a travel agent. Quote prices in EUR."),',
        '        ("human", "{question}\\n\\nToday is {current_date}."),',
    ]
    # ahead of the user's text: into the template literal, before its placeholder
    assert fixed(LANGCHAIN, ahead).splitlines()[3] == (
        '        ("human", "Today is {current_date}.\\n\\n{question}"),'
    )
    assert fixed(LANGCHAIN, to_end).splitlines()[2] == (
        '        ("system", "You are a travel agent. Quote prices in EUR.\\nToday is {current_date}."),'
    )


PLAIN_USER = """\
    import datetime

    MESSAGES = [
        {"role": "system", "content": f"Today is {datetime.date.today()}.\\nAnswer in French."},
        {"role": "user", "content": "Summarise {the} text."},
        {"role": "user", "content": 'Summarise the text.'},
    ]
    """


def test_a_plain_user_literal_becomes_an_f_string() -> None:
    to_user = fixes_for(PLAIN_USER, "PFX101", "datetime.date.today()")[0]
    assert Edit(PATH, 6, 33, 6, 33, "f") in to_user.edits
    assert fixed(PLAIN_USER, to_user).splitlines()[5] == (
        """    {"role": "user", "content": f'Summarise the text.\\n\\nToday is {datetime.date.today()}.'},"""
    )


REQUEST = """\
    import uuid

    def draft(session_id: str, date: str, message: str) -> str:
        prompt = (
            f"Session {session_id}\\n"
            f"Date of the request: {date}\\n"
            f"Trace: {uuid.uuid4()}\\n"
            + GUIDE
        )
        return completion(messages=[{"role": "system", "content": prompt}, {"role": "user", "content": message}])
    """  # noqa: E501


def test_the_values_beside_it_move_together_as_a_later_candidate() -> None:
    messages = [f.message for f in fixes_for(REQUEST, "PFX105", "date}", label="date")]
    assert messages == [
        "move `date` to the end of the last user message (the text `Date of the request: {date}`)",
        "move `date` to the start of the last user message (the text `Date of the request: {date}`)",
        "move `date` to the end of the text it is in (the text `Date of the request: {date}`)",
        "move `date`, with `session_id` and `uuid.uuid4()` beside it, to the end of the last user message "
        "(the text `Session {session_id} Date of the request: {date} Trace: {...`)",
        "move `date`, with `session_id` and `uuid.uuid4()` beside it, to the start of the last user message "
        "(the text `Session {session_id} Date of the request: {date} Trace: {...`)",
        "move `date`, with `session_id` and `uuid.uuid4()` beside it, to the end of the text it is in "
        "(the text `Session {session_id} Date of the request: {date} Trace: {...`)",
    ]


TAGGED = '''\
    def planning_prompt(query: str) -> str:
        return f"""
    <user_query>
    {query}
    </user_query>
    Come up with a plan for the query, in at most five steps, naming the tool of each step.
    """
    '''


def test_markup_tags_around_a_value_move_with_it() -> None:
    [fix] = fixes_for(TAGGED, "PFX105", "query}", label="query")
    assert fixed(TAGGED, fix) == textwrap.dedent(
        '''\
        def planning_prompt(query: str) -> str:
            return f"""
        Come up with a plan for the query, in at most five steps, naming the tool of each step.
        <user_query>
        {query}
        </user_query>
        """
        '''
    )


# --- moves of whole items ---------------------------------------------------------------------------
HELPERS = """\
    import time

    def _date_line() -> str:
        return "Date: %s\\n" % time.strftime("%Y-%m-%d")

    def system_prompt(name: str) -> str:
        parts = [_date_line(), _persona(name), TOOLS]
        return "".join(parts)

    def long_prompt() -> str:
        return "".join(
            [
                _date_line(),  # first
                PERSONA,
                TOOLS
            ]
        )
    """


def test_a_helpers_value_moves_to_the_end_of_the_joined_list() -> None:
    one_line, multi_line = fixes_for(HELPERS, "PFX101", 'time.strftime("%Y-%m-%d")')
    assert one_line.message == (
        'move `time.strftime("%Y-%m-%d")` to the end of the list joined into the text '
        "(the item `_date_line()`)"
    )
    assert one_line.edits == (Edit(PATH, 7, 14, 7, 28, ""), Edit(PATH, 7, 49, 7, 49, ", _date_line()"))
    assert fixed(HELPERS, one_line).splitlines()[6] == "    parts = [_persona(name), TOOLS, _date_line()]"
    assert fixed(HELPERS, multi_line).splitlines()[12:17] == [
        "            PERSONA,",
        "            TOOLS,",
        "            _date_line(),  # first",
        "        ]",
        "    )",
    ]


ONE_ITEM = """\
    import random

    def example() -> str:
        chosen = [random.choice(EXAMPLES)]
        return "\\n".join(chosen)

    def ask(question: str) -> str:
        system = example() + "\\n" + RULES
        return client.chat.completions.create(
            model="m", messages=[{"role": "system", "content": system}, {"role": "user", "content": question}]
        )
    """


def test_the_one_item_of_a_joined_list_moves_as_the_joined_text() -> None:
    """Nothing else is in the list to move it behind: the text the list is joined into is all the
    value, and it moves where it is used."""
    to_user, ahead, to_end = fixes_for(ONE_ITEM, "PFX103", "random.choice(EXAMPLES)")
    assert to_user.message == (
        "move `random.choice(EXAMPLES)` to the end of the last user message (the text `example()`)"
    )
    assert to_user.edits == (
        Edit(PATH, 8, 14, 8, 33, ""),
        Edit(PATH, 10, 105, 10, 105, ' + "\\n\\n" + example()'),
    )
    assert ahead.edits[1] == Edit(PATH, 10, 97, 10, 97, 'example() + "\\n\\n" + ')
    assert fixed(ONE_ITEM, to_end).splitlines()[7] == '    system = RULES + "\\n" + example()'


def test_a_helper_with_two_callers_moves_in_the_one_that_sends_the_prompt_first() -> None:
    """The finding names the request it is about ("(line 31)", the caller that passes
    `pick=True`): the moves in that function are tried before those in the other caller, whose
    prompt the value never reaches."""
    text = (FIXTURES / "python" / "branch_not_taken.py").read_text(encoding="utf-8")
    found = finding(text, "PFX103", "random.choice(EXAMPLES)")
    unsent = [f.message for f in fixes.candidates(PATH, text, found)]
    assert unsent[0].endswith("(the text `examples()`)")
    sent = replace(found, message=found.message + " of the request of `create()` (line 31)")
    assert [f.message for f in fixes.candidates(PATH, text, sent)] == [*unsent[3:], *unsent[:3]]
    assert unsent[3].endswith("(the text `examples(pick=True)`)")


YIELDS = """\
    from datetime import date
    from pathlib import Path

    def workspace():
        yield {"role": "system", "content": f"Working directory: {Path.cwd()}"}

    def today():
        yield {"role": "system", "content": f"Today: {date.today()}"}

    def everything():
        yield from base()
        yield from workspace()
        yield from rules()
        yield from today()
    """


def test_a_yield_moves_after_the_yields_that_follow_it() -> None:
    [fix] = fixes_for(YIELDS, "PFX104", "Path.cwd()")
    assert fix.message == (
        "move `Path.cwd()` after the values yielded after it "
        "(`yield from workspace()` after `yield from today()`)"
    )
    assert fix.edits == (
        Edit(PATH, 12, 1, 13, 1, ""),
        Edit(PATH, 15, 1, 15, 1, "    yield from workspace()\n"),
    )


def test_a_yield_stays_in_front_of_one_the_finding_says_must_move_too() -> None:
    text = textwrap.dedent(YIELDS)
    found = finding(text, "PFX104", "Path.cwd()")
    says = replace(found, message=found.message + "; `date.today()` right after it parts the requests too")
    [fix] = fixes.candidates(PATH, text, says)
    assert fix.message.endswith("(`yield from workspace()` after `yield from rules()`)")
    assert apply_edits(text, fix.edits).splitlines()[-3:] == [
        "    yield from rules()",
        "    yield from workspace()",
        "    yield from today()",
    ]


TIME_MESSAGE = """\
    import time

    MESSAGES = [
        {"role": "system", "content": f"The time is {time.strftime('%c')}"},
        {"role": "system", "content": RULES},
        {"role": "user", "content": question},
    ]
    """


def test_a_system_message_that_is_only_the_value_goes_into_the_user_message() -> None:
    to_user, precision = fixes_for(TIME_MESSAGE, "PFX101", "time.strftime('%c')")
    assert (
        to_user.message
        == "move `time.strftime('%c')` to the end of the last user message (its system message removed)"
    )
    assert fixed(TIME_MESSAGE, to_user).splitlines()[2:6] == [
        "MESSAGES = [",
        '    {"role": "system", "content": RULES},',
        """    {"role": "user", "content": question + f"\\n\\nThe time is {time.strftime('%c')}"},""",
        "]",
    ]
    assert precision.edits == (Edit(PATH, 4, 64, 4, 68, "'%x'"),)


CONSTRUCTORS = """\
    import time

    def context(prompt, memory, question):
        with_user = [
            SystemMessage(content=prompt),
            SystemMessage(content=f"The current time and date is {time.strftime('%c')}"),
            HumanMessage(content=question),
        ]
        without = [
            SystemMessage(content=prompt),
            SystemMessage(f"The current time and date is {time.strftime('%c')}"),
            SystemMessage(content=f"Remember:\\n{memory}"),
        ]
    """


def test_message_constructors_move_like_message_dicts() -> None:
    to_user, _ = fixes_for(CONSTRUCTORS, "PFX101", "time.strftime('%c')")
    assert fixed(CONSTRUCTORS, to_user).splitlines()[3:7] == [
        "    with_user = [",
        "        SystemMessage(content=prompt),",
        "        HumanMessage(content=question + "
        """f"\\n\\nThe current time and date is {time.strftime('%c')}"),""",
        "    ]",
    ]
    # No user message after it: the message goes to the end of the list.
    to_end, _ = fixes_for(CONSTRUCTORS, "PFX101", "time.strftime('%c')", nth=1)
    assert to_end.message.startswith("move `time.strftime('%c')` to the end of the message list")
    assert fixed(CONSTRUCTORS, to_end).splitlines()[8:12] == [
        "    without = [",
        "        SystemMessage(content=prompt),",
        '        SystemMessage(content=f"Remember:\\n{memory}"),',
        """        SystemMessage(f"The current time and date is {time.strftime('%c')}"),""",
    ]


WRAPPED = '''\
    PROMPT = """We are solving an issue in this repository. Here is the issue text:
    --- BEGIN ISSUE ---
    {problem_statement}
    --- END ISSUE ---

    Localize the bug, then write the edit as a SEARCH/REPLACE block.
    """
    '''


def test_begin_and_end_markers_and_the_line_that_introduces_them_move_with_the_value() -> None:
    [fix] = fixes_for(WRAPPED, "PFX105", '"""We', label="{problem_statement}")
    assert fixed(WRAPPED, fix) == textwrap.dedent(
        '''\
        PROMPT = """We are solving an issue in this repository.

        Localize the bug, then write the edit as a SEARCH/REPLACE block.
        Here is the issue text:
        --- BEGIN ISSUE ---
        {problem_statement}
        --- END ISSUE ---
        """
        '''
    )


# --- order ------------------------------------------------------------------------------------------
SETS = """\
    import json

    TOOLS = {"search", "calculator"}
    SCHEMAS = {"search": {"q": "string"}}

    def listing() -> str:
        return "\\n".join(f"- {name}" for name in TOOLS) + "\\nCall one tool per turn."

    def schemas() -> str:
        enabled = {name for name in SCHEMAS}
        body = json.dumps({name: SCHEMAS[name] for name in enabled})
        return f"Schemas: {body}\\nValidate arguments first."

    def joined() -> str:
        return ", ".join(set(names)) + " are available."

    def shapes() -> str:
        return ", ".join(str(s) for s in {(1, "a"), (2, "b")}) + " are shapes."
    """


def test_sorted_where_a_set_of_strings_is_iterated() -> None:
    [fix] = fixes_for(SETS, "PFX201", '{"search", "calculator"}', label="a set")
    assert fix.applicability == "safe"
    assert fix.message == "sort `TOOLS` where it is iterated (line 7): `sorted(TOOLS)`"
    assert fix.edits == (Edit(PATH, 7, 46, 7, 46, "sorted("), Edit(PATH, 7, 51, 7, 51, ")"))
    assert 'for name in sorted(TOOLS)) + "' in fixed(SETS, fix)


def test_sort_keys_for_json_of_a_dict_built_from_a_set() -> None:
    sort, keys = fixes_for(SETS, "PFX201", "{name for name in SCHEMAS}", label="a set")
    assert sort.applicability == keys.applicability == "safe"
    assert "for name in sorted(enabled)})" in fixed(SETS, sort)
    assert keys.message == "add `sort_keys=True` to the `json.dumps(...)` of line 11"
    assert keys.edits == (Edit(PATH, 11, 64, 11, 64, ", sort_keys=True"),)


def test_items_of_unknown_type_are_an_unsafe_sort() -> None:
    [fix] = fixes_for(SETS, "PFX201", "set(names)", label="a set")
    assert fix.applicability == "unsafe" and "sorting raises on items that do not compare" in fix.message
    assert '", ".join(sorted(set(names)))' in fixed(SETS, fix)
    [tuples] = fixes_for(SETS, "PFX201", '{(1, "a")', label="a set")
    assert tuples.applicability == "unsafe"


def test_dict_items_sort_by_their_keys() -> None:
    source = """\
        TOOLS = {name: f"- {name}" for name in {"search", "calculator"}}

        def prompt() -> str:
            return "\\n".join(line for _, line in TOOLS.items()) + "\\nCall one tool per turn."
        """
    [fix] = fixes_for(source, "PFX201", "TOOLS.items()")
    assert fix.applicability == "safe"
    assert "for _, line in sorted(TOOLS.items()))" in fixed(source, fix)


def test_no_sort_for_items_that_cannot_compare_or_order_that_does_not_reach_text() -> None:
    source = """\
        ROWS = {frozenset({1}), frozenset({2})}
        NAMES = {"a", "b"}

        def prompt() -> str:
            return ", ".join([{"k": 1} for k in ROWS]) + f"Names: {NAMES}. Use them."
        """
    # iterated into a list of dicts (no order to give), and a set's repr written whole
    assert fixes_for(source, "PFX201", '{"a", "b"}', label="a set") == []


# --- precision ---------------------------------------------------------------------------------------
PRECISION = """\
    import time
    from datetime import datetime

    A = f"Now: {datetime.now()}. " + RULES
    B = f"Now: {datetime.now():%Y-%m-%d %H:%M}. " + RULES
    C = "Now: " + datetime.now().strftime("%A %Y-%m-%dT%H:%M:%S") + ". " + RULES
    D = "Now: " + time.strftime("%Y-%m-%d %H:%M") + ". " + RULES
    E = "Now: " + str(datetime.now().hour) + ". " + RULES
    """


@pytest.mark.parametrize(
    ("nth", "edit"),
    [
        (0, Edit(PATH, 4, 27, 4, 27, ".date()")),
        (1, Edit(PATH, 5, 28, 5, 42, "%Y-%m-%d")),
        (2, Edit(PATH, 6, 39, 6, 61, '"%A %Y-%m-%d"')),
    ],
)
def test_a_datetime_keeps_its_date(nth: int, edit: Edit) -> None:
    precision = fixes_for(PRECISION, "PFX101", "datetime.now()", nth=nth)[-1]
    assert precision.message.startswith("keep only the date of `datetime.now()`")
    assert precision.edits == (edit,)


def test_time_strftime_keeps_its_date_and_an_hour_has_no_date_to_keep() -> None:
    assert fixes_for(PRECISION, "PFX101", 'time.strftime("%Y-%m-%d %H:%M")')[-1].edits == (
        Edit(PATH, 7, 29, 7, 45, '"%Y-%m-%d"'),
    )
    assert not any(
        f.message.startswith("keep") for f in fixes_for(PRECISION, "PFX101", "datetime.now()", nth=3)
    )


@pytest.mark.parametrize(
    ("fmt", "day"),
    [
        ("%A %Y-%m-%d %H:%M", "%A %Y-%m-%d"),
        ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d"),
        ("%H:%M %d/%m", "%d/%m"),
        ("%c", "%x"),
        ("%Y-%m-%d %H:%M:%S %Z", "%Y-%m-%d %Z"),
        ("%Y-%m-%d", None),  # nothing to drop
        ("%X", None),  # nothing left
        ("%I:%M %p", None),
        ("%Y-%m-%d at %H:%M", None),  # "at" would be left alone
    ],
)
def test_day_format(fmt: str, day: str | None) -> None:
    assert day_format(fmt) == day


# --- nothing to offer ---------------------------------------------------------------------------------
def test_a_value_from_another_module_or_a_prompt_file_gets_nothing() -> None:
    source = "def system_prompt() -> str:\n    return today_line() + '\\n' + RULES\n"
    elsewhere = Diagnostic(
        "PFX101",
        Span(PATH, 2, 12),
        "the current date/time (`today_line()`, `datetime.now()` in assistant/clock.py:7) is ahead of "
        "36 static tokens",
        Severity.ERROR,
    )
    assert list(fixes.candidates(PATH, source, elsewhere)) == []
    in_prompt_file = Diagnostic(
        "PFX101", Span("prompts/system.j2", 1, 10), "`today` is named like a date", Severity.WARNING
    )
    assert list(fixes.candidates(PATH, source, in_prompt_file)) == []


@pytest.mark.parametrize(
    ("source", "at", "label"),
    [
        # already the end of its text, and what follows is built elsewhere
        ('task.description += f"\\n\\nCurrent Date: {datetime.now():%Y-%m-%d}"\n', "datetime.now()", None),
        # the same value twice: moving one would leave the other in front
        (
            'cwd = os.getcwd()\nP = f"Run {cwd}/a.py first.\\nThen {cwd}/b.py.\\nBe careful."\n',
            "os.getcwd()",
            None,
        ),
        # a placeholder written twice
        ('T = "Ticket {ticket_id}\\nSee {ticket_id}.\\nClassify it."\n', '"Ticket', "{ticket_id}"),
        # bytes are not prompt text
        ('B = b"Host: " + socket.gethostname().encode() + b"\\nRules"\n', "socket.gethostname()", None),
        # a value that is only compared
        ('X = "late" if time.time() > 5 else "early"\n', "time.time()", None),
        # the span does not point at the value named
        ('P = f"Today {date.today()}.\\nRules."\n', "Today", "date.today()"),
    ],
)
def test_no_candidate_where_none_is_right(source: str, at: str, label: str | None) -> None:
    assert fixes_for(source, "PFX101", at, label) == []


@pytest.mark.parametrize(
    "text",
    ["def build(:\n    return 1\n", "", "\x00\x01", "P = f'{" * 50, 'P = "unterminated\n'],
)
def test_odd_input_gives_nothing_and_no_traceback(text: str) -> None:
    diagnostic = Diagnostic("PFX101", Span(PATH, 1, 1), "the current date/time (`P`)", Severity.ERROR)
    assert list(fixes.candidates(PATH, text, diagnostic)) == []


def test_codes_without_python_fixes_get_nothing() -> None:
    text = textwrap.dedent(AGENT)
    for code in ("PFX003", "PFX302", "PFX401"):
        diagnostic = finding(text, "PFX101", "datetime.date.today()")
        assert (
            list(
                fixes.candidates(
                    PATH, text, Diagnostic(code, diagnostic.span, diagnostic.message, Severity.ERROR)
                )
            )
            == []
        )


# --- the verifier on the fixtures (prefixlint.fixes.verify: the fixed text analysed again) ------------------
PROJECT = FIXTURES / "python_project"
PY_FIXTURES = sorted((FIXTURES / "python").glob("*.py")) + sorted(PROJECT.rglob("*.py"))


def options(path: Path) -> Options:
    """As `check` runs: the multi-file fixture's root is its folder, where its imports resolve."""
    return Options(project_root=str(PROJECT)) if PROJECT in path.parents else Options()


# The fix `check` attaches (the first candidate that verifies), for every fixture finding of the
# codes with Python fixes; None: nothing holds (why, beside each).
FIRST_THAT_HOLDS = {
    "agent_wrappers.py:19 PFX104": "move `platform.system()` to the end of the text it is in",
    "agent_wrappers.py:24 PFX101": "move `datetime.date.today()` to the end of the text it is in",
    "agent_wrappers.py:28 PFX101": "move `time.time()` to the end of the text it is in",
    "agent_wrappers.py:44 PFX101": "move `datetime.date.today()` to the end of the text it is in",
    "agent_wrappers.py:59 PFX101": "move `datetime.datetime.now()` to the end of the text it is in",
    # The finding says the working directory right after it must move too: both go, together.
    "anthropic_system_env.py:15 PFX104": "move `socket.gethostname()`, with `operating_system.getcwd()` "
    "beside it, to the end of the last user message",
    # A helper's random example, taken by one of its two callers: that caller's call moves.
    "branch_not_taken.py:16 PFX103": "move `random.choice(EXAMPLES)` to the end of the last user message "
    "(the text `examples(pick=True)`)",
    # Appended to a task description another module turns into a prompt: the end of what this file
    # writes already, and a date already.
    "attribute_append.py:9 PFX101": None,
    # A Jinja template in a Python string: the Jinja fixes' job.
    "embedded_jinja.py:6 PFX101": None,
    # A message builder's question ahead of the rules in the same text: it moves after them.
    "content_parts.py:19 PFX105": "move `question` to the end of the text it is in",
    # The date and the summary 8 tokens after it are one group: only the move of both is offered.
    "close_values.py:37 PFX101": "move `datetime.now()`, with `initial_research` beside it, to the end of "
    "the text it is in",
    "close_values.py:48 PFX105": "move `question` to the end of the text it is in",
    "close_values.py:49 PFX101": "move `date.today()` to the end of the text it is in",
    "close_values.py:56 PFX104": "move `os.getpid()` to the end of the last user message",
    # The date with the location and the name beside it: one group, all three move, ahead of the
    # user's query (after it, their static text would follow the query: a block lost to it).
    "close_values_per_user.py:21 PFX101": "move `date.today()`, with `where` and `user_name` beside it, to "
    "the start of the last user message",
    # The first varying field carries the loss: the query after the snippets has no finding, and no
    # move of the snippets alone into the user turn holds (the query would then part the requests).
    "first_varying_field.py:30 PFX105": None,
    "first_varying_field.py:40 PFX101": "move `date.today()` to the end of the last user message",
    "first_varying_field.py:41 PFX102": "move `uuid.uuid4()` to the end of the last user message",
    "first_varying_field.py:48 PFX105": "move `snippets`, with `query` beside it, to the end of the text it "
    "is in",
    # A clock that really reaches the prompt beside ORM columns and an ORDER BY.
    "orm_columns.py:54 PFX101": "move `datetime.utcnow()` to the end of the last user message",
    # Settings of the deployment (info) move like any value; the clock after a setting is its own.
    "deployment_settings.py:25 PFX104": 'move `environ.get("APP_REGION", "eu")` to the end of the last user '
    "message",
    "deployment_settings.py:29 PFX104": 'move `os.getenv("OPERATOR_ITERATIONS", 100)` to the end of the last '
    "user message",
    "deployment_settings.py:43 PFX101": "move `datetime.now()` to the end of the last user message",
    "deployment_settings.py:60 PFX104": "move `socket.gethostname()` to the end of the text it is in",
    "close_values.py:57 PFX101": "move `datetime.now()` to the end of the last user message",
    "helpers_and_constants.py:17 PFX101": 'move `time.strftime("%Y-%m-%d")` to the end of the list '
    "joined into the text",
    "history_per_turn.py:16 PFX101": "move `datetime.now()` to the end of the last user message",
    "langchain_templates.py:6 PFX102": "move `{ticket_id}` to the end of the text it is in",
    "langchain_templates.py:12 PFX101": "move `{current_date}` to the end of the last user message",
    # The earlier turns follow the time on every turn: no move within the system text holds.
    "replayed_turns.py:15 PFX101": None,
    "unpacked_parts.py:17 PFX101": "move `datetime.now()` to the end of the text it is in",
    "openai_alias_clock.py:15 PFX101": "move `dt.now()` to the end of the last user message",
    "random_fewshot.py:17 PFX103": "move `random.shuffle(examples)` to the end of the text it is in",
    "random_fewshot.py:22 PFX103": "move `pick(EXAMPLES, 2)` to the end of the text it is in",
    "request_inputs.py:15 PFX102": "move `session_id`, with `date` and `uuid.uuid4()` beside it, to the "
    "end of the last user message",
    "request_inputs.py:31 PFX105": "move `query` to the end of the text it is in",
    "set_tools.py:11 PFX201": "sort `TOOL_NAMES` where it is iterated",
    "set_tools.py:17 PFX201": "sort `enabled` where it is iterated",
    "set_iterations.py:26 PFX201": "sort `self.fnames` where it is iterated",
    "kwargs_requests.py:44 PFX101": "move `datetime.now()` to the end of the last user message",
    "kwargs_requests.py:54 PFX103": "move `random.random()` to the end of the last user message",
    "kwargs_requests.py:63 PFX101": "move `datetime.now()` to the end of the last user message",
    # The clock is read in assistant/clock.py: the fix belongs there.
    "agent.py:24 PFX101": None,
    "agent.py:35 PFX104": "move `os.getcwd()` to the end of the text it is in",
    # Filled into a template written in another module (`SYSTEM_TEMPLATE.format(**variables)`).
    "agent.py:43 PFX105": None,
    # Filled into a template read from a YAML prompt file: the sentence is written there.
    "agent.py:58 PFX101": None,
    # Rendered into a Jinja prompt file.
    "agent.py:67 PFX101": None,
    "placeholders.py:4 PFX101": "move `{current_date}` to the end of the text it is in",
    "workspace_path.py:12 PFX104": "move `os.path.expanduser('~')` to the end of the last user message",
    # A project helper builds the message: the clock moves behind the rules in its own text.
    "message_helper.py:25 PFX101": "move `datetime.datetime.now()` to the end of the text it is in",
    # The placeholder sits in the YAML file a config default names: the template there must change.
    "planner.py:30 PFX101": None,
    # Set in a subclass in another module.
    "roles.py:13 PFX101": None,
    # The words of its own sentence follow the value ("on this {os} machine."), and a tool's
    # description goes ahead of the whole conversation.
    "tools.py:7 PFX104": None,
    # Recalled memories and retrieved context joined ahead of the system text through a name, an
    # index write or an insert: no candidate edit moves them out of the system message (a move to
    # the user's turn across messages is not among the candidates yet).
    "memory_first_message.py:15 PFX105": None,
    "memory_first_message.py:23 PFX105": None,
    "retriever_system.py:17 PFX105": None,
    "retriever_system.py:24 PFX105": None,
    # A model's reply as the whole system message, written by a call in another function or
    # method: the reply is read where it is made, so no candidate edit at that line moves it.
    "model_output.py:23 PFX105": None,
    "model_output.py:76 PFX105": None,
    # A set a forwarder passes on to the sink's tools: sorted where it is iterated.
    "forwarded_kwargs.py:58 PFX201": "sort `enabled` where it is iterated (line 58): `sorted(enabled)`",
    # The guess passed on through wrappers is moved where its text is built, once.
    "passed_on_guess.py:17 PFX105": "move `question` to the end of the text it is in "
    "(the text `Someone will ask: {question}`)",
    "passed_on_guess.py:42 PFX101": None,
    # The date is in a config file's text (YAML, TOML): no Python edit moves it.
    "crew.py:16 PFX101": None,
    "reviewer.py:20 PFX101": None,
    # A date ahead of a field of what a per-request call returns: moved to the end of its own text;
    # the one ahead of a config attribute, to the end of the last user message.
    "per_request_unknowns.py:35 PFX101": "move `datetime.now()` to the end of the text it is in "
    "(the text `Reviewed on {datetime.now()}.`)",
    "per_request_unknowns.py:40 PFX101": "move `datetime.now()` to the end of the last user message "
    "(the text `Reviewed on {datetime.now()}.`)",
    # A converted message list ahead of a static system message the adapter adds: no edit holds.
    "provider_adapters.py:43 PFX105": None,
    "provider_adapters.py:49 PFX105": "move `note` to the end of the text it is in (the text `Note: {note}`)",
}


def _first_verified(
    source: Source, text: str, results: list[SourceResult], diagnostic: Diagnostic, settings: Options
) -> tuple[Fix | None, list[str]]:
    """What `check` attaches to the finding: its fixed texts analysed as the source was."""
    verifier = Verifier(source, lambda fixed: lint_source(source, settings, fixed))
    return first_verified("python", source, text, results, diagnostic, fix_part(settings), verifier)


def _why_not(
    source: Source, text: str, results: list[SourceResult], diagnostic: Diagnostic, candidate: Fix
) -> str | None:
    """Why `candidate` does not hold for the finding (None: it does), its fixed text analysed as
    the source was with the default options."""
    verifier = Verifier(source, lambda fixed: lint_source(source, Options(), fixed))
    kinds = fixes_for_kind("python")
    return verify(kinds, candidate, source, text, results, diagnostic, fix_part(Options()), verifier.analysed)


def _fixture_findings() -> list[tuple[Path, Diagnostic, list[SourceResult]]]:
    out = []
    for path in PY_FIXTURES:
        results = lint_source(Source(str(path), "python"), options(path))
        for d in (d for r in results for d in r.diagnostics):
            if d.code in CODES and d.span.path == str(path):
                out.append((path, d, results))
    return out


FINDINGS = _fixture_findings()


def test_the_table_names_every_fixture_finding() -> None:
    assert {f"{p.name}:{d.span.line} {d.code}" for p, d, _ in FINDINGS} == set(FIRST_THAT_HOLDS)


@pytest.mark.parametrize(
    ("path", "diagnostic", "results"),
    FINDINGS,
    ids=lambda x: (
        getattr(x, "name", None) or (f"{x.code}:{x.span.line}" if isinstance(x, Diagnostic) else "")
    ),
)
def test_first_candidate_that_holds_on_the_fixtures(
    path: Path, diagnostic: Diagnostic, results: list[SourceResult]
) -> None:
    """What `check` attaches: the first of the candidates it tries that verifies."""
    text = path.read_text(encoding="utf-8")
    source = Source(str(path), "python")
    first, _ = _first_verified(source, text, results, diagnostic, options(path))
    expected = FIRST_THAT_HOLDS[f"{path.name}:{diagnostic.span.line} {diagnostic.code}"]
    assert (first.message if first else None) == expected or (
        first is not None and expected is not None and first.message.startswith(expected)
    )


# --- robustness -------------------------------------------------------------------------------------
def _corpus_and_fixtures() -> list[Path]:
    found = sorted(FIXTURES.rglob("*.py"))
    if (CORPUS / "python").is_dir():
        found += sorted((CORPUS / "python").rglob("*.py"))
    return found


def test_no_candidate_builder_raises_and_candidates_are_deterministic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`candidates` swallows a builder's error (odd input is never a traceback); here they must
    not happen at all on real code."""
    monkeypatch.setattr(fixes, "_guarded", lambda found: found)
    for path in _corpus_and_fixtures():
        text = path.read_text(encoding="utf-8", errors="replace")
        # the findings as `check` makes them with its result cache: each text encoded once (an
        # h2ogpt module asks ~7,900 counts of few texts: 87 s of CPU without, the test's whole cost)
        with remembering(None, str(path), in_memory=True):
            found = analyze_python(str(path), text, options(path)).diagnostics
        for d in found:
            first = list(fixes.candidates(str(path), text, d))
            assert first == list(fixes.candidates(str(path), text, d))
            for fix in first:
                assert fix.applicability in ("safe", "unsafe") and not fix.verified
                assert fix.message.split()[0] in ("move", "sort", "add", "keep")
                assert all(e.path == str(path) for e in fix.edits)


# Mutated fixtures (tests/test_fuzz.py's strategy): every finding, and a finding placed anywhere
# naming whatever is written there, gets candidates without an error, and each applies and parses.
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # compile() on a mutated `"\o"`
@settings(max_examples=int(os.environ.get("PREFIXLINT_FIX_FUZZ", "25")), deadline=None, database=None)
@given(source=mutated(PY_SEEDS, PY_TOKENS), where=st.integers(0, 10**6), code=st.sampled_from(sorted(CODES)))
def test_candidates_on_mutated_sources(source: str, where: int, code: str) -> None:
    source = source.replace("\x00", "")  # a file with NUL bytes is never analysed (PFX003)
    findings = analyze_python(PATH, source, Options()).diagnostics
    if source.strip():
        at = where % len(source)
        line, column = source.count("\n", 0, at) + 1, at - (source.rfind("\n", 0, at) + 1) + 1
        named = source[at : at + 1 + where % 30].split("\n")[0]
        findings.append(
            Diagnostic(code, Span(PATH, line, column), f"a value (`{named}`) is ahead", Severity.ERROR)
        )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fixes, "_guarded", lambda found: found)  # an error here is a bug, not odd input
        for d in findings:
            for fix in fixes.candidates(PATH, source, d):
                cst.parse_module(apply_edits(source, fix.edits))


# --- neighbours that vary too ---------------------------------------------------------------------
def _first(tmp_path: Path, text: str, code: str) -> tuple[Fix | None, list[str]]:
    path = tmp_path / "reflect.py"
    path.write_text(text, encoding="utf-8")
    source = Source(str(path), "python")
    results = lint_source(source, Options())
    [diagnostic] = [d for r in results for d in r.diagnostics if d.code == code]
    return _first_verified(source, text, results, diagnostic, Options())


REFLECTION = """\
from openai import OpenAI

client = OpenAI()
CLOSING = "Reflect on the given information and summarize key points in a few words, as a list."


def reflect(role_text: str, user_input: str, generated: str) -> str:
    turns = [
        f"SYSTEM: {role_text}",
        f"USER: {user_input}",
        f"ASSISTANT: {generated}",
    ]
    prompt = "Here is a conversation between two roles: " + "\\n\\n".join(turns) + " " + CLOSING
    return client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
"""


def test_a_move_past_a_neighbour_that_varies_too_is_not_offered(tmp_path: Path) -> None:
    """Moving the user's turn after the assistant's only puts the reply where the input was: the
    reply varies too, and now parts the requests first, ahead of most of the closing sentence (the
    input behind it adds nothing of its own): not offered (ChatDev's reflection prompt)."""
    fix, reasons = _first(tmp_path, REFLECTION, "PFX105")
    assert fix is None
    assert any(
        "move `user_input`" in r and "did not hold" in r and "`generated`, which varies too" in r
        for r in reasons
    )


def test_a_move_that_uncovers_a_later_value_still_holds(tmp_path: Path) -> None:
    """The id after the clock had no finding of its own (the clock parts every request first); moving
    the clock uncovers it, it does not add it, and the ~375 tokens between them are recovered."""
    filler = " ".join(f"Rule {i}: answer precisely and cite the sources you used." for i in range(30))
    text = (
        "import datetime\nimport uuid\nfrom openai import OpenAI\n\nclient = OpenAI()\n\n\n"
        "def answer(question: str) -> str:\n"
        '    system = f"Now: {datetime.datetime.now()}\\n'
        f'{filler}\\nRequest: {{uuid.uuid4()}}\\n{filler}"\n'
        "    return client.chat.completions.create(\n"
        '        model="m",\n'
        '        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],\n'
        "    )\n"
    )
    fix, _ = _first(tmp_path, text, "PFX101")
    assert fix is not None and fix.message.startswith(
        "move `datetime.datetime.now()` to the end of the last user"
    )


_PARSED_FILES = [
    p
    for p in sorted(FIXTURES.glob("python/*.py")) + sorted((CORPUS / "python").glob("*.py"))
    if p.name != "broken.py"
]


@pytest.mark.parametrize("path", _PARSED_FILES[:10] + _PARSED_FILES[-6:], ids=lambda p: p.name)
def test_the_fixers_read_the_frontends_positions_as_libcst_gives_them(path: Path) -> None:
    """A file the frontend indexed is read by the fixers with the index's node ranges (no second
    position codegen): every node libcst's PositionProvider places, at the same range, in its order."""
    import libcst.metadata as meta

    from prefixlint.python import project
    from prefixlint.python.fixes.source import load
    from prefixlint.python.scopes import index_module, parse_module

    text = path.read_text()
    index = index_module(parse_module(text), os.path.abspath(path))
    project.remember(str(path), text, index)
    src = load(str(path), text)
    assert src is not None and src.module is index.module
    expected = meta.MetadataWrapper(index.module, unsafe_skip_copy=True).resolve(meta.PositionProvider)
    assert list(src.positions) == list(expected)
    assert all(src.positions[node] == expected[node] for node in expected)
    assert src.scopes is not None and any(src.scopes.values())  # resolved on first need


# --- a group of close values moves as one -----------------------------------------------------------
def test_a_move_of_only_the_first_value_of_a_group_is_neither_offered_nor_verified() -> None:
    """The date and the per-run summary 8 tokens after it part the requests as one
    (fixtures/python/close_values.py): every candidate moves both; and the date-only move (what
    the candidates give once the group is not known), analysed again, leaves the summary ahead of
    all the static tokens the finding counted. The summary's own finding is only an info then (a
    parameter), but the loss is the same: the verifier compares the loss, not the severity."""
    path = FIXTURES / "python" / "close_values.py"
    text = path.read_text(encoding="utf-8")
    source = Source(str(path), "python")
    results = lint_source(source, Options())
    [date] = [d for r in results for d in r.diagnostics if d.span.line == 37]
    offered = list(fixes.candidates(str(path), text, date))
    assert offered and all("with `initial_research` beside it" in f.message for f in offered)
    [alone] = [
        f for f in fixes.candidates(str(path), text, replace(date, group=())) if "beside it" not in f.message
    ]
    assert "{initial_research}" not in apply_edits(text, alone.edits).splitlines()[-1]  # the date alone moved
    reason = _why_not(source, text, results, date, replace(alone, verified=False))
    assert reason is not None and reason.startswith("`initial_research`, which parts the requests with it")
    assert "every value of the group must move" in reason
    fix, _ = _first_verified(source, text, results, date, Options())
    assert fix is not None and "with `initial_research` beside it" in fix.message
    moved = apply_edits(text, fix.edits)
    assert all(d.span.line not in (37, 38) for d in analyze_python(str(path), moved, Options()).diagnostics)


# --- a fix that creates a cost of its own does not hold ---------------------------------------------
AFTER_THE_QUESTION = """\
import socket

from openai import OpenAI

client = OpenAI()

RULES = (
    "Answer the question in at most three sentences, quote the passage of the manual you rely on, and "
    "say plainly when the manual does not cover it. Never guess a part number or a price."
)


def answer(question: str) -> str:
    system = f"The assistant answering you runs as one of several replicas, here on {socket.gethostname()}.\\n{RULES}"
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    return client.chat.completions.create(model="gpt-4o", messages=messages)
"""  # noqa: E501


def test_a_move_that_puts_its_own_static_text_behind_the_user_input_does_not_hold(tmp_path: Path) -> None:
    """The hostname's sentence moved to the end of the user message would follow `question`, and
    its static words (a block of them) would then follow a per-request input: a new finding, only
    an info (a name guess), but a cache block lost. The verifier judges by that loss, not by the
    severity: the move does not hold, the one ahead of the user's text does, and `--fix` reaches
    its fixed point with that one fix (no second fix for a finding the first one made)."""
    path = tmp_path / "replica.py"
    path.write_text(AFTER_THE_QUESTION, encoding="utf-8")
    source = Source(str(path), "python")
    results = lint_source(source, Options())
    [host] = [d for r in results for d in r.diagnostics]
    assert (host.code, host.span.line, host.severity) == ("PFX104", 14, Severity.ERROR)
    to_user = next(iter(fixes.candidates(str(path), AFTER_THE_QUESTION, host)))
    assert "to the end of the last user message" in to_user.message
    reason = _why_not(source, AFTER_THE_QUESTION, results, host, to_user)
    # `question` is ahead of the sentence's 17 static tokens: the fixed text's 16-token block lost
    assert reason == "it adds PFX105 (info) at line 15, which loses 16 cached tokens"
    fix, tried = _first_verified(source, AFTER_THE_QUESTION, results, host, Options())
    assert fix is not None and fix.message.startswith(
        "move `socket.gethostname()` to the start of the last user message"
    )
    assert tried == [f"{to_user.message[:1].lower()}{to_user.message[1:]} did not hold: {reason}"]
    after, applied = fix_paths([str(path)], Options(), unsafe=True)
    assert [a.code for a in applied] == ["PFX104"]
    assert after.diagnostics == []
    assert path.read_text(encoding="utf-8").splitlines()[14] == (
        '    messages = [{"role": "system", "content": system}, {"role": "user", "content": f"The assistant '
        'answering you runs as one of several replicas, here on {socket.gethostname()}.\\n\\n" + question}]'
    )


# --- the fixers' read-only visits -------------------------------------------------------------------
def _scopes_as_written(src: fixes.Source, scopes: object) -> list[tuple[object, ...]]:
    """Every node's scope, each scope's assignments and accesses, named by node positions: what the
    fixers read of libcst's scope analysis, comparable between two runs of it on one tree."""
    at = {node: src.positions[node] for node in src.positions}
    out: list[tuple[object, ...]] = []
    for node, scope in scopes.items():  # type: ignore[attr-defined]
        if scope is None or node not in at:
            continue
        assigned = sorted(
            (name, str(at.get(a.node)), sorted(str(at.get(r.node)) for r in a.references))
            for name in {a.name for a in scope.assignments}
            for a in scope.assignments[name]
        )
        read = sorted(
            (name, str(at.get(a.node)), sorted(str(at.get(getattr(r, "node", None))) for r in a.referents))
            for name in {a.node.value for a in scope.accesses if isinstance(a.node, cst.Name)}
            for a in scope.accesses[name]
        )
        out.append((str(at[node]), type(scope).__name__, assigned, read))
    return out


@pytest.mark.parametrize(
    "path",
    sorted(FIXTURES.rglob("*.py")) + sorted((CORPUS / "python").rglob("*.py")),
    ids=lambda p: p.name,
)
def test_read_only_visits_give_libcsts_own_scopes(path: Path) -> None:
    """The fixers' scope analysis walks each node's known children instead of libcst's rebuilding
    visit: every node gets the same scope, with the same assignments, references and accesses."""
    import libcst.metadata as meta

    from prefixlint.python.fixes.source import load

    text = path.read_text(encoding="utf-8")
    src = load(str(path), text)
    if src is None:
        pytest.skip("libcst cannot read it")
    fast = src.scopes
    own = meta.MetadataWrapper(src.module, unsafe_skip_copy=True).resolve(meta.ScopeProvider)
    # (a string annotation is parsed again by each run: its nodes are new ones each time)
    assert {n for n in fast if n in src.positions} == {n for n in own if n in src.positions}
    assert _scopes_as_written(src, fast) == _scopes_as_written(src, own)
