"""The framework memories of the models table (`[[memory]]` rows), generated: each row x each way
it is reached (each of its reads, each keyword it is passed by, its rewriting keyword, its
function) x where that happens (in a turn handler, in a module-level loop, once at module level)
-> PFX401 at the line of the read or the argument, with its severity, or silence (an append-only
row, or a memory read once). Modules are written with the generalisation suite's builders
(tests/generalisation_cases.py) and analysed, never run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from generalisation_cases import Module, callee, slug

from prefixlint.python import analyze_python
from prefixlint.python.frameworks import MemoryModel, builtin
from prefixlint.settings import Options

# Reads that are methods, and how each is called (the rest are attributes: `memory.buffer`).
_METHODS = {
    "load_memory_variables": '.load_memory_variables({})["history"]',
    "get": ".get()",
    "aget": ".aget()",
    "get_messages": ".get_messages()",
    "get_items": ".get_items()",
}
_ASYNC = {"aget", "get_messages", "get_items"}
PLACES = ("handler", "loop", "once")  # a turn handler, a module-level chat loop, module level once
_SYSTEM = '{"role": "system", "content": "You are a careful assistant. Answer briefly, cite sources."}'


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    expected: dict[tuple[str, int], str]


def _built(row: MemoryModel, module: Module) -> str:
    """The expression that builds the row's memory, its trigger arguments given."""
    made = callee(row.calls[0], row.imports)
    module.need(made.imports)
    arguments = ", ".join(f"{t}=4000" for t in row.trigger)
    if row.function or row.reads == ("messages",):
        arguments = ", ".join(["history", *(f"{t}=4000" for t in row.trigger)])
    return f"{made.expr}({arguments})"


def _turn(module: Module, place: str, body: list[str], mark: int, asynchronous: bool) -> int:
    """Writes `body` where `place` says; the line of `body[mark]`, 1-based, imports counted."""
    if place == "handler":
        module.add(f"{'async ' if asynchronous else ''}def turn(question: str):")
        depth = 1
    elif place == "loop":
        module.add("while True:")
        module.add('question = input("> ")', depth=1)
        depth = 1
    else:
        module.add('question = "Say hello."')
        depth = 0
    first = len(module.lines)
    for line in body:
        module.add(line, depth=depth)
    return len(module.imports) + 2 + first + mark


def _send(what: str, wait: bool) -> str:
    call = f'client.chat.completions.create(model="gpt-4o", messages=[{_SYSTEM}, *{what}])'
    return f"reply = {'await ' if wait else ''}{call}"


def _read_case(row: MemoryModel, read: str, place: str) -> Case:
    module = Module()
    module.need(("from openai import OpenAI", "from openai import AsyncOpenAI"))
    asynchronous = read in _ASYNC
    module.add(f"client = {'AsyncOpenAI' if asynchronous else 'OpenAI'}()")
    module.add("history = []")
    per_call = row.function or row.reads == ("messages",)  # made from the history on each turn
    built = _built(row, module)
    if not per_call:
        module.add(f"memory = {built}")
    body = [] if not per_call else [f"memory = {built}"]
    access = _METHODS.get(read, f".{read}")
    wait = "await " if read in _ASYNC else ""
    body += [f"kept = {wait}memory{access}" if not row.function else f"kept = {built}"]
    if row.function:
        body = body[1:]
    body += [_send("kept", asynchronous), "history.append(reply)"]
    if place != "handler" and asynchronous:
        place_id = place  # top-level `await` does not parse outside a coroutine: handler only
        return Case(f"{slug(row.name)}/{read}/{place_id}", "", {})
    line = _turn(module, place, body, len(body) - 3, asynchronous)
    expected = {} if place == "once" or row.keeps_prefix else {("PFX401", line): _severity(row)}
    return Case(f"{slug(row.name)}/{read}/{place}", module.text(), expected)


def _passed_case(row: MemoryModel, keyword: str, place: str) -> Case:
    module = Module()
    module.need(("from chains import Chain",))
    module.add(f"memory = {_built(row, module)}")
    module.add("chain = Chain(")
    module.add(f"{keyword}=memory,", depth=1)
    line = len(module.imports) + 2 + len(module.lines) - 1
    module.add(")")
    _turn(module, place, ["answer = chain.run(question)"], 0, False)
    expected = {} if place == "once" or row.keeps_prefix else {("PFX401", line): _severity(row)}
    return Case(f"{slug(row.name)}/{keyword}=/{place}", module.text(), expected)


def _keyword_case(row: MemoryModel, place: str) -> Case:
    module = Module()
    made = callee(row.calls[0], row.imports)
    module.need(made.imports)
    module.add("def keep_recent(messages: list) -> list:")
    module.add("return messages[-6:]", depth=1)
    module.add(f"agent = {made.expr}(")
    module.add(f"{row.keyword}=[keep_recent],", depth=1)
    line = len(module.imports) + 2 + len(module.lines) - 1
    module.add(")")
    _turn(module, place, ["answer = agent.run_sync(question)"], 0, False)
    expected = {} if place == "once" or row.keeps_prefix else {("PFX401", line): _severity(row)}
    return Case(f"{slug(row.name)}/{row.keyword}=/{place}", module.text(), expected)


def _severity(row: MemoryModel) -> str:
    return "info" if row.rewrites == "chunked" else "warning"  # a processor here slices its messages


def cases() -> list[Case]:
    out: list[Case] = []
    for row in builtin().memories:
        for place in PLACES:
            out += [_read_case(row, read, place) for read in row.reads]
            if row.function:
                out.append(_read_case(row, "call", place))
            out += [_passed_case(row, keyword, place) for keyword in row.passed]
            if row.keyword:
                out.append(_keyword_case(row, place))
    return [c for c in out if c.source]


CASES = cases()


def findings(case: Case, root: Path) -> dict[tuple[str, int], str]:
    path = root / "turns.py"
    path.write_text(case.source, encoding="utf-8")
    result = analyze_python(str(path), case.source, Options(project_root=str(root)))
    return {(d.code, d.span.line): d.severity.label for d in result.diagnostics if d.code.startswith("PFX4")}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, tmp_path: Path) -> None:
    assert findings(case, tmp_path) == case.expected, f"{case.id}\n{case.source}"


def test_every_row_is_generated_each_way_it_is_reached() -> None:
    ids = {c.id.split("/")[0] for c in CASES}
    assert ids == {slug(r.name) for r in builtin().memories}
    assert any(c.expected for c in CASES) and any(not c.expected for c in CASES)
    for row in builtin().memories:
        reported = [c for c in CASES if c.id.startswith(slug(row.name) + "/") and c.expected]
        assert bool(reported) != row.keeps_prefix, row.name  # an append-only row is never reported


# --- the framework's own code: the memory class is defined in the project (llama_index itself) ------
_BUFFER = """\
import asyncio


class ChatMemoryBuffer:
    def __init__(self, token_limit: int = 3000) -> None:
        self.token_limit = token_limit
        self.messages = []

    @classmethod
    def from_defaults(cls, token_limit: int = 3000) -> "ChatMemoryBuffer":
        return cls(token_limit)

    def put(self, message) -> None:
        self.messages.append(message)

    def get(self, initial_token_count: int = 0) -> list:
        chat_history = self.messages
        message_count = len(chat_history)
        while message_count > 1 and {count} > self.token_limit:
            message_count -= 1
        return chat_history[-message_count:]

    async def aget(self) -> list:
        return await asyncio.to_thread(self.get)
"""
_AGENT = """\
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer


class Agent:
    def __init__(self, llm) -> None:
        self.llm = llm
        self._memory = ChatMemoryBuffer.from_defaults(token_limit=2000)

    async def turn(self, question: str) -> str:
        self._memory.put(ChatMessage(role="user", content=question))
        messages = await self._memory.aget()
        reply = await self.llm.achat(messages)
        self._memory.put(reply.message)
        return reply.message.content
"""


def _framework(root: Path, count: str) -> Path:
    memory = root / "llama_index" / "core" / "memory"
    memory.mkdir(parents=True)
    (root / "llama_index" / "__init__.py").write_text("", encoding="utf-8")
    (root / "llama_index" / "core" / "__init__.py").write_text("", encoding="utf-8")
    (memory / "__init__.py").write_text(
        "from llama_index.core.memory.chat_memory_buffer import ChatMemoryBuffer\n", encoding="utf-8"
    )
    (memory / "chat_memory_buffer.py").write_text(_BUFFER.format(count=count), encoding="utf-8")
    agent = root / "llama_index" / "core" / "agent.py"
    agent.write_text(_AGENT, encoding="utf-8")
    return agent


def test_the_projects_own_memory_class_is_reported_where_its_get_cuts_the_history(tmp_path: Path) -> None:
    agent = _framework(tmp_path, "message_count * 40")
    result = analyze_python(str(agent), agent.read_text(), Options(project_root=str(tmp_path)))
    (found,) = [d for d in result.diagnostics if d.code == "PFX401"]
    assert found.span.path.endswith("chat_memory_buffer.py") and found.span.line == 21
    assert "`chat_history[-message_count:]`" in found.message
    assert "`ChatMemoryBuffer.get`" in found.message and f"{agent}:12" in found.message
    assert found.severity.label == "warning"


def test_a_read_made_once_of_the_projects_own_memory_is_silent(tmp_path: Path) -> None:
    agent = _framework(tmp_path, "message_count * 40")
    source = agent.read_text().replace("    async def turn", "    async def __post_init__")
    agent.write_text(source, encoding="utf-8")
    result = analyze_python(str(agent), source, Options(project_root=str(tmp_path)))
    assert [d for d in result.diagnostics if d.code == "PFX401"] == []


_ENGINE = """\
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import BaseMemory, Memory


class Engine:
    def __init__(self, llm, memory: BaseMemory) -> None:
        self._llm = llm
        self._memory = memory

    @classmethod
    def from_defaults(cls, llm, memory=None, memory_cls=Memory):
        memory = memory or memory_cls.from_defaults(token_limit=4000)
        return cls(llm=llm, memory=memory)

    def chat(self, message: str) -> str:
        self._memory.put(ChatMessage(role="user", content=message))
        reply = self._llm.chat(self._memory.get())
        self._memory.put(reply.message)
        return str(reply.message.content)
"""


def test_a_memory_given_to_the_constructor_by_default_is_followed_to_its_row(tmp_path: Path) -> None:
    """`self._memory = memory`, the `__init__` parameter that `from_defaults` fills with
    `memory or memory_cls.from_defaults()` (`memory_cls=Memory`): LlamaIndex Memory, chunked,
    info at the read; the factory that hands a new memory over is no turn of its own."""
    path = tmp_path / "engine.py"
    path.write_text(_ENGINE, encoding="utf-8")
    result = analyze_python(str(path), _ENGINE, Options(project_root=str(tmp_path)))
    found = {(d.code, d.span.line): d.severity.label for d in result.diagnostics if d.code.startswith("PFX4")}
    assert found == {("PFX401", 17): "info"}


_TABLE = """
[[sink]]
name = "chat"
calls = [".chat.completions.create"]
arguments = { messages = "messages" }

[[memory]]
name = "Acme window"
calls = ["acme.Window"]
rewrites = "window"
trigger = ["limit"]
always = false
reads = ["recent"]
"""


@pytest.mark.parametrize(("arguments", "expected"), [("", {}), ("limit=8", {("PFX401", 9): "warning"})])
def test_a_row_that_rewrites_only_when_told_needs_its_trigger(
    arguments: str, expected: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[type-arg]
    from prefixlint.python import analyze
    from prefixlint.python.frameworks import parse_table

    table = parse_table(_TABLE, "test.toml")
    monkeypatch.setattr(analyze, "for_project", lambda *declared: table)
    source = (
        "import acme\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
        f"memory = acme.Window({arguments})\n\n\n"
        "def turn(question: str):\n"
        "    kept = memory.recent()\n"
        '    user = {"role": "user", "content": question}\n'
        '    return client.chat.completions.create(model="m", messages=[*kept, user])\n'
    )
    case = Case("acme", source, expected)
    assert findings(case, tmp_path) == expected
