"""Generated cases for the table's `[[source]]` rows (issue 28, points 1-3): each source row, called as
the row says (its call names, a receiver its globs take, its keyword, its package imported), lands
its result at each place a RAG app puts it, in a request of the table's request rows (taken in turn):

- joined at the head of the system message (`+`, an f-string, a filled template, `join`);
- inserted as a new first message (`messages.insert(0, ...)`);
- written into the first message's content ahead of the system text
  (`messages[0]["content"] = found + messages[0]["content"]`);
- as the tools of the request (ahead of the system prompt), and, for a row of tools, described in a
  ReAct header's `{tool_desc}` ahead of its rules;
- at the tail of the user turn: silent (nothing static follows);
- a row whose result is the conversation with what it recalls (`turns`), spliced as messages: the
  history, silent even with static text after it.

The `model_output` row (`replies`): what a request row's call gives back, read as its text in one of
the ways replies are read (`.content`, `.choices[0].message.content`, `["content"]`, `.output_text`,
`json.loads(...)[...]`, `.strip()`), lands at each place as the other rows' results do, the calls of
every request row that gives a reply taken in turn (awaited, one in two).

Ahead of the system text, a per-request value costs it and the history after it: PFX105 (the code of
the row's provenance) at the line of the source call, at the rule's severity (one lower for a row
whose result changes per edit, `timing = "edit"`). A query row runs a statement its row takes: one
its `statements` build (`sqlalchemy_core.select(Item)`, `store.query(Item).all()`) or SQL text.
A look-alike (the same method on a receiver the row does not take, or in a module that does not
import its package) is silent; so is a row's placeholder at the end of a template. The builders are
those of the generated suite (tests/generalisation_cases.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from generalisation_cases import CHECKED, CONSTANTS, Case, Module, _primary, _takes, callee, slug

from prefixlint.core.findings import Severity
from prefixlint.core.rules import RULES
from prefixlint.python import analyze_python
from prefixlint.python.frameworks import SinkModel, SourceModel, builtin
from prefixlint.python.segments import Provenance
from prefixlint.settings import Options

WARNING = RULES["PFX105"].default_severity.label
# (a `read` row, command output or the clipboard, gives text no finding is about: its own examples test it)
CALLING = [row for row in builtin().sources if row.calls and row.kind != "read"]
REPLY = next(row for row in builtin().sources if row.replies)
FILLED = [row for row in builtin().sources if row.placeholders]
# The request rows: a whole request whose text goes in a list of role messages.
REQUESTS = [
    row
    for row in builtin().sinks
    if row.whole_request
    and row.calls
    and not row.decorators
    and not row.bases
    and _primary(row) == "messages"
]
WITH_TOOLS = [row for row in REQUESTS if _takes(row, "tools")]
# The request calls that give back the model's reply (a row's `objects` build a session or a run).
REPLYING = [
    (row, call)
    for row in REQUESTS
    if row.replies
    for call in row.calls
    if call not in row.objects and not call.endswith(".__call__")
]
# How a reply is read as text (`made` is what the call gave).
READS = [
    "made.content",
    "made.choices[0].message.content",
    'made["content"]',
    "made.output_text",
    'json.loads(made.choices[0].message.content)["role"]',
    "made.text.strip()",
]
JOINS = {  # the system text, the value at its head
    "plus": 'found + "\\n\\n" + RULES',
    "f-string": 'f"{found}\\n\\n{RULES}"',
    "template": "CONTEXT.format(context=found) + RULES",
    "join": '"\\n\\n".join([found, RULES])',
}
PLACES = ["system-head", "insert-first", "first-content", "tools", "user-tail"]


@dataclass(frozen=True)
class Call:
    """How a generated module calls a source row: the statement, the receiver (a module-level object
    the code cannot see into), the imports."""

    statement: str
    receiver: str
    imports: tuple[str, ...]
    setup: tuple[str, ...] = ()  # module-level lines that make the receiver (else `connect_store()`)
    found: str = 'found = "\\n\\n".join(str(item) for item in items)'  # the text made of `items`


def _receiver(row: SourceModel) -> str:
    """A name the row's first receiver glob takes: `*retriev*` -> `the_retriev_obj`."""
    if not row.receivers:
        return "store"
    glob = row.receivers[0]
    return ("the_" if glob.startswith("*") else "") + glob.strip("*") + ("_obj" if glob.endswith("*") else "")


def _package(row: SourceModel) -> tuple[str, ...]:
    return (f"import {row.imports[0].replace('*', '_core')}",) if row.imports else ()


def source_call(row: SourceModel, turn: int, look_alike: str = "") -> Call:
    """`items = <receiver>.<call>(question)` as the row says (keyword, receiver, package), or with one
    of them missing (`look_alike`: "receiver" or "package"); a query row's call runs its statement."""
    method = row.calls[turn % len(row.calls)]
    assert method.startswith("."), f"{row.name}: a generated call writes a method (`.name`)"
    receiver = "CACHE" if look_alike == "receiver" else _receiver(row)
    argument = f"{row.keywords[0]}=question" if row.keywords else "question"
    imports = () if look_alike == "package" else _package(row)
    if row.sql:
        argument = '"SELECT name, description FROM items WHERE topic = ?", (question,)'
    elif row.statements and row.statements[0].startswith("."):  # run on what the method is called on
        return Call(f"items = {receiver}{row.statements[0]}(Item){method}()", receiver, imports)
    elif row.statements:  # `sqlalchemy*.select`: through the package as the module imports it
        package = row.imports[0].replace("*", "_core")
        argument = f"{package}.{row.statements[0].rsplit('.', 1)[-1]}(Item)"
    return Call(f"items = {receiver}{method}({argument})", receiver, imports)


def reply_call(turn: int) -> Call:
    """`made = <a request call>(model=MODEL, messages=[...])` (awaited in an `async def` one turn in
    two), its reply read as text in one of the ways replies are read."""
    request, pattern = REPLYING[turn % len(REPLYING)]
    made = callee(pattern, request.imports, receiver="llm_client")
    awaited = "await " if turn % 2 else ""
    messages = '[{"role": "user", "content": f"Plan the answer to: {question}"}]'
    statement = f"made = {awaited}{made.expr}(model=MODEL, {_keyword(request, 'messages')}={messages})"
    imports = (*made.imports, "import json")
    return Call(statement, "", imports, made.setup, f"found = {READS[turn % len(READS)]}")


def expected_finding(row: SourceModel) -> tuple[str, str]:
    """The code a row's result is reported with, and the severity ahead of the system text."""
    code = Provenance[row.provenance.upper()].value
    severity = RULES[code].default_severity
    if row.timing:  # it changes per edit, not per request: a lower kind of loss
        severity = Severity(max(Severity.INFO, severity - 1))
    return code, severity.label


def _system(place: str, turn: int) -> str:
    if place == "system-head":
        return list(JOINS.values())[turn % len(JOINS)]
    return "RULES"


def _keyword(row: SinkModel, part: str) -> str:
    """The keyword a request row takes a part by (`messages`, `input`, `tools`)."""
    return next(k for k, p in row.arguments.items() if p == part and k.isidentifier())


def write(source: SourceModel, request: SinkModel, place: str, turn: int, look_alike: str = "") -> Case:
    """A module whose `respond()` calls the source, builds text of its result and sends it at `place`."""
    main = Module()
    call = reply_call(turn) if source.replies else source_call(source, turn, look_alike)
    made = callee(request.calls[turn % len(request.calls)], request.imports)
    main.need(call.imports)
    main.need(made.imports)
    main.needles = {"value": call.statement}
    main.add('MODEL = "gpt-4o"')
    main.constants(["RULES"])
    main.add('CONTEXT = "Context for this question:\\n{context}\\n---\\n"')
    main.add('REACT_HEADER = "You can use these tools:\\n{tool_desc}\\n\\n" + RULES')
    if call.receiver or look_alike:
        main.add("CACHE = {}" if look_alike == "receiver" else f"{call.receiver} = connect_store()")
    for line in dict.fromkeys((*call.setup, *made.setup)):
        main.add(line)
    main.add()
    main.add(f"{'async ' if 'await ' in call.statement else ''}def respond(question: str, history: list):")
    main.add(call.statement, frozenset({"value"}), depth=1)
    main.add(call.found, depth=1)
    if source.replies:
        main.add("items = [found]", depth=1)  # the places that walk a source's items
    user = 'f"{question}\\n\\nContext:\\n{found}"' if place == "user-tail" else "question"
    if place == "react-header":  # retrieved tools described in a ReAct header, ahead of its rules
        main.add(
            'tool_desc = "\\n".join(f"{item.metadata.name}: {item.metadata.description}" for item in items)',
            depth=1,
        )
        main.add("system = REACT_HEADER.format(tool_desc=tool_desc)", depth=1)
        main.add('messages = [{"role": "system", "content": system}, *history]', depth=1)
    elif place == "spliced":  # the recalled conversation spliced as messages, a reminder after it
        main.add(
            'messages = [{"role": "system", "content": RULES}, *items, {"role": "system", "content": RULES}]',
            depth=1,
        )
    elif place == "insert-first":
        main.add("messages = [" + '{"role": "system", "content": RULES}, *history]', depth=1)
        main.add('messages.insert(0, {"role": "system", "content": found})', depth=1)
    else:
        main.add(f'messages = [{{"role": "system", "content": {_system(place, turn)}}}, *history]', depth=1)
    if place == "first-content":
        main.add('messages[0]["content"] = found + "\\n\\n" + messages[0]["content"]', depth=1)
    main.add(f'messages.append({{"role": "user", "content": {user}}})', depth=1)
    keywords = [f"{_keyword(request, 'messages')}=messages"]
    if place == "tools":
        main.add("tools = [item.metadata.to_openai_tool() for item in items]", depth=1)
        keywords.insert(0, f"{_keyword(request, 'tools')}=tools")
    main.add(f"return {made.expr}(model=MODEL, {', '.join(keywords)})", depth=1)
    costs = place not in ("user-tail", "spliced") and not look_alike
    code, severity = expected_finding(source)
    expected = {(code, main.line_of("value")): severity} if costs else {}
    name = f"{slug(source.name)}/{slug(request.name)}/{place}{'/' + look_alike if look_alike else ''}"
    if source.replies:  # which call's reply
        name += "/" + slug(REPLYING[turn % len(REPLYING)][1])
    return Case(name, {CHECKED: main.text()}, expected)


def placeholder_case(row: SourceModel, turn: int, at_head: bool) -> Case:
    """A template of the row's package whose placeholder stands ahead of the rules or at the end."""
    templates = [  # that take the template as their first argument, as the case writes it
        r
        for r in builtin().sinks
        if r.templates
        and any(i.split("*")[0] in row.imports[0] for i in r.imports or r.calls)
        and r.part_of(None, 0) is not None
    ]
    sink = templates[turn % len(templates)]
    made = callee(next(c for c in sink.calls if "from_messages" not in c), sink.imports)
    field = row.placeholders[turn % len(row.placeholders)]
    text = (
        f'"Context:\\n{{{field}}}\\n\\n" + RULES' if at_head else f'RULES + "\\n---\\n{{{field}}}\\n---\\n"'
    )
    main = Module()
    main.need(made.imports)
    main.constants(["RULES"])
    main.add()
    main.add(f"QA = {made.expr}({text} + " + '"Query: {query_str}")', frozenset({"value"}))
    # the framework fills it where the checked code does not show: a guess, at most info by default
    expected = {("PFX105", main.line_of("value")): "info"} if at_head else {}
    return Case(f"{slug(row.name)}/{field}/{'head' if at_head else 'tail'}", {CHECKED: main.text()}, expected)


def cases() -> list[Case]:
    """Each source row at each place, in the request rows taken in turn (the tools in rows that take
    them), and its look-alikes at the head; each placeholder row at the head and at the tail."""
    out, turn = [], 0
    for source in CALLING:
        for place in PLACES:
            rows = WITH_TOOLS if place == "tools" else REQUESTS
            out.append(write(source, rows[turn % len(rows)], place, turn))
            turn += 1
        if source.kind == "tools":  # in a ReAct header's `{tool_desc}`, ahead of the header's rules
            out.append(write(source, REQUESTS[turn % len(REQUESTS)], "react-header", turn))
            turn += 1
        if source.turns:  # the conversation it gives, spliced as messages, is the history: silent
            out.append(write(source, REQUESTS[turn % len(REQUESTS)], "spliced", turn))
            turn += 1
        for look_alike in ("receiver" if source.receivers else "", "package" if source.imports else ""):
            if look_alike:  # in a request row that does not import the source's packages itself
                rows = [r for r in REQUESTS if not set(r.imports) & set(source.imports)]
                out.append(write(source, rows[turn % len(rows)], "system-head", turn, look_alike))
                turn += 1
    for row in FILLED:
        for at_head in (True, False):
            out.append(placeholder_case(row, turn, at_head))
            turn += 1
    for place in PLACES:  # a model's reply, at each place, the replying calls taken in turn
        for _ in range(len(REPLYING) if place == "system-head" else 1):
            rows = WITH_TOOLS if place == "tools" else REQUESTS
            out.append(write(REPLY, rows[turn % len(rows)], place, turn))
            turn += 1
    for request in REQUESTS:  # every request row once, with the first source at the head
        out.append(write(CALLING[0], request, "system-head", turn))
        turn += 1
    return out


CASES = cases()


def findings(case: Case, root: Path) -> dict[tuple[str, int], str]:
    path = root / case.checked
    path.write_text(case.files[case.checked], encoding="utf-8")
    result = analyze_python(str(path), case.files[case.checked], Options(project_root=str(root)))
    owned = ("PFX1", "PFX2")
    return {(d.code, d.span.line): d.severity.label for d in result.diagnostics if d.code.startswith(owned)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, tmp_path: Path) -> None:
    assert findings(case, tmp_path) == case.expected, f"{case.id}\n{case.source()}"


def test_every_source_row_lands_at_every_place() -> None:
    generated = {tuple(c.id.split("/")[::2][:2]) for c in CASES}
    for row in [*CALLING, REPLY]:
        for place in PLACES:
            assert (slug(row.name), place) in generated
    assert {c.id.split("/")[0] for c in CASES} >= {slug(r.name) for r in FILLED}


def test_the_static_text_is_more_than_a_block() -> None:
    """The losses asserted are real: the rules after the value are well over a cache block."""
    assert len(CONSTANTS["RULES"]) > 200


def test_a_project_source_row(tmp_path: Path) -> None:
    """`[[tool.prefixlint.python.source]]`: the project's own per-request content, a row of the same
    kind, tried with its receivers; a broken one is a config error naming it."""
    from prefixlint.config import ConfigError, build_options, load_config

    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[[tool.prefixlint.python.source]]\nname = "our search service"\nkind = "context"\n'
        'calls = [".lookup"]\nreceivers = ["*kb*"]\n',
        encoding="utf-8",
    )
    module = tmp_path / "bot.py"
    module.write_text(
        "from openai import OpenAI\n\nclient = OpenAI()\nkb = connect_kb()\ncache = connect_cache()\n"
        f"RULES = {CONSTANTS['RULES']!r}\n\n\n"
        "def answer(question: str):\n"
        "    hits = kb.lookup(question)\n"
        "    other = cache.lookup(question)\n"
        "    return client.chat.completions.create(model='gpt-4o', messages=[\n"
        "        {'role': 'system', 'content': f'{hits}\\n{RULES}'},\n"
        "        {'role': 'system', 'content': f'{other}\\n{RULES}'},\n"
        "        {'role': 'user', 'content': question},\n"
        "    ])\n",
        encoding="utf-8",
    )
    text = module.read_text(encoding="utf-8")
    assert analyze_python(str(module), text, Options()).diagnostics == []  # no row says `lookup`
    found = analyze_python(str(module), text, build_options(load_config(config))).diagnostics
    assert [(d.code, d.span.line, d.severity.label) for d in found] == [("PFX105", 10, WARNING)]
    assert "our search service" in found[0].message
    config.write_text('[[tool.prefixlint.python.source]]\nname = "x"\ncalls = [".lookup"]\n')
    with pytest.raises(ConfigError, match="python.source` 1 .x.: `kind` is one of"):
        load_config(config)


@pytest.mark.parametrize(
    "call",
    [
        're.search(r"order \\d+", question).group(0)',
        "settings.get(input)",
        'os.environ.get("SEARCH_HINT", "")',
        'json.loads(cached).get("query", "")',
    ],
)
def test_generic_names_are_no_sources(call: str, tmp_path: Path) -> None:
    """`re.search`, `dict.get` and the like in a module that imports every source package: no row
    takes them (their receivers are none of the rows'), so nothing per request is seen."""
    imports = sorted({line for row in CALLING for line in _package(row)})
    source = "\n".join(
        ["import json", "import os", "import re", *imports, "from openai import OpenAI", ""]
        + [
            "client = OpenAI()",
            "settings = {}",
            f"RULES = {CONSTANTS['RULES']!r}",
            "",
            "",
            "def answer(question: str, cached: str, input: str):",
            f"    found = {call}",
            "    return client.chat.completions.create(model='gpt-4o', messages=[",
            "        {'role': 'system', 'content': found + RULES}, {'role': 'user', 'content': question}])",
        ]
    )
    path = tmp_path / CHECKED
    path.write_text(source, encoding="utf-8")
    found = analyze_python(str(path), source, Options(project_root=str(tmp_path))).diagnostics
    assert [d for d in found if "for each request" in d.message] == []
