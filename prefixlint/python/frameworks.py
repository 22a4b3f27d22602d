"""What reaches a model from Python: the models table (`prefixlint/data/frameworks.toml`), read once.

Each `[[sink]]` row names an API of an LLM client or framework, how a call (or a decorator) of it
is recognised, and which of its arguments carry prompt text and which part of the request each
becomes (`PARTS`, in the order the request puts them). `[[config]]` rows name calls whose
arguments only configure a client (keys, URLs, timeouts): a volatile value passed to them is no
prompt text. `[[source]]` rows name calls whose result is content made per request (retrievers and
vector stores, memory recalled by the input, tools retrieved for the query, web search): a value of
that provenance wherever it lands (prefixlint/python/evaluate.py asks `match_source`). A project's
own prompt builders (`[tool.prefixlint.python] sinks`) and sources (`[[...python.source]]`) are rows
of the same table. Every row carries a valid and an invalid example that the tests run
(`tests/test_frameworks.py`), as Fixit runs its rules' examples.

A call pattern is either `.a.b.c`, the end of the called expression as written
(`self.client.chat.completions.create` ends with `.chat.completions.create`), or a dotted name
matched (`fnmatch`, `*` crossing dots) against what the called name is imported as
(`langchain*.ChatPromptTemplate.from_messages`). A row with `imports` applies only in modules that
import one of those packages: how a generic method name (`.invoke`, `.chat`) is told apart.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from prefixlint.python.volatile import says_prompt_attribute

if TYPE_CHECKING:  # libcst is imported where a node is looked at: reading the table needs none of it
    import libcst as cst

    from prefixlint.python.scopes import ModuleIndex

# The parts of a request in the order a chat request puts them (tools and system first, OpenAI's,
# Anthropic's and the chat templates' order), then a whole prompt (completion style).
PARTS = ("tools", "system", "messages", "user", "prompt")
# When a sink's arguments are evaluated: on every call, or once when the object is constructed.
WHEN = ("request", "construction")
# How a framework's memory rewrites the history it gives back (`[[memory]]` rows), and "append":
# it gives back every message in order, so each turn's request extends the previous one.
REWRITES = ("window", "token_window", "summary", "summary_buffer", "chunked", "processors", "append")
# Where text a library adds lands (`[[appended]]`): after the last text the call is given ("end"),
# as what the call returns ("value"), or ahead of the messages ("system", "tools").
LANDS = ("end", "value", "system", "tools")


@dataclass(frozen=True)
class SinkModel:
    """One row of the table: an API whose arguments (or decorated function's return) are prompt text."""

    name: str
    calls: tuple[str, ...] = ()
    decorators: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()  # a class row: subclasses of these are the prompt
    imports: tuple[str, ...] = ()
    # keyword, position ("0") or a field of one (`config.system_instruction`) -> part, in render order
    arguments: dict[str, str] = field(default_factory=dict)
    # A class row's text: class attribute, `__doc__`, or `attr.keyword` / `*.keyword` -> part.
    attributes: dict[str, str] = field(default_factory=dict)
    returns: str = ""  # the part a decorated function's return value becomes
    when: str = "request"
    # Its strings are templates whose `{placeholders}` are filled later (LangChain, LlamaIndex).
    templates: bool = False
    # Its keyword arguments (and `**mapping`) not named in `arguments` fill the placeholders of
    # the template it is given as its prompt (LlamaIndex `llm.predict(tmpl, query_str=q)`).
    fills: bool = False
    # The call sends a whole request (nothing else follows what it is given), as an API call does;
    # a message or template object is one piece of a request assembled elsewhere.
    whole_request: bool = True
    # The engine (engines.toml) whose `cache_control` breakpoints its content blocks carry, for
    # PFX503 (prefixlint/python/breakpoints.py): "anthropic"; "" when it has none.
    breakpoints: str = ""
    examples: dict[str, str] = field(default_factory=dict)

    def part_of(self, keyword: str | None, position: int) -> str | None:
        """The part an argument becomes, given its keyword (None for a positional one); `*` in the
        table stands for every argument not named otherwise."""
        found = self.arguments.get(keyword if keyword is not None else str(position))
        return found if found is not None else self.arguments.get("*")

    def fields_of(self, keyword: str | None, position: int) -> list[tuple[str, str]]:
        """The (field, part) pairs the table names inside an argument (`config.system_instruction`)."""
        prefix = f"{keyword if keyword is not None else position}."
        return [(k[len(prefix) :], part) for k, part in self.arguments.items() if k.startswith(prefix)]

    def rank(self, key: str, table: dict[str, str] | None = None) -> int:
        """Where an argument (or attribute) comes in its part: the order the row lists them; one
        only `*` names comes after those."""
        keys = list(self.arguments if table is None else table)
        return keys.index(key) if key in keys else len(keys)


@dataclass(frozen=True)
class ConfigModel:
    """A call whose arguments configure a client: never prompt text."""

    name: str
    calls: tuple[str, ...]
    imports: tuple[str, ...] = ()
    examples: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EntryModel:
    """A decorator that makes a function a request entry point (a web route, a chat handler, a
    tool the model calls): what its parameters receive differs per request, whatever their names."""

    name: str
    decorators: tuple[str, ...]
    imports: tuple[str, ...] = ()
    examples: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryModel:
    """A framework's memory or history utility (`[[memory]]`): how the history it hands to the
    model each turn is rewritten, and what makes it rewrite. Reached three ways: `calls` builds the
    memory object and `reads` give its messages (`memory.load_memory_variables`,
    `memory.chat_memory.messages`); `passed` names the keywords a chain, agent or runner takes it
    by (`memory=`), so the framework reads it every turn; `keyword` instead names an argument of
    the call itself that makes it rewrite (`Agent(history_processors=...)`); a `function` row's
    call returns the rewritten messages (`trim_messages(messages, ...)`)."""

    name: str
    calls: tuple[str, ...]
    rewrites: str
    trigger: tuple[str, ...] = ()  # the arguments that set when it rewrites (`k`, `max_token_limit`)
    always: bool = True  # it rewrites with its defaults; else only when a trigger is passed
    reads: tuple[str, ...] = ()
    passed: tuple[str, ...] = ()
    keyword: str = ""
    function: bool = False
    keeps_when: tuple[str, ...] = ()  # `strategy=first`: passed so, it keeps the oldest messages instead
    imports: tuple[str, ...] = ()
    source: str = ""  # where the behaviour was read (the library's source or docs)
    examples: dict[str, str] = field(default_factory=dict)

    @property
    def keeps_prefix(self) -> bool:
        return self.rewrites == "append"


@dataclass(frozen=True)
class AppendedModel:
    """Text a library adds to a request beside what the call is given (format instructions, an
    output schema): static per app, of a length the code does not show, at least `tokens`."""

    name: str
    calls: tuple[str, ...]
    keywords: tuple[str, ...] = ()  # the call adds it only when given one of these; () = always
    lands: str = "end"
    tokens: int = 0  # the shortest text the library writes there (the default tokenizer's count)
    imports: tuple[str, ...] = ()
    examples: dict[str, Any] = field(default_factory=dict)


# What a source row's calls give: retrieved context, recalled memory, retrieved tools, web results.
SOURCE_KINDS = ("context", "memory", "tools", "search")
# A source row's provenance, by the name the table writes it in (segments.Provenance's members).
PROVENANCES = ("request", "clock", "id", "random", "environment", "unordered")


@dataclass(frozen=True)
class SourceModel:
    """A call whose result is content made for each request (retrieved documents, memories
    recalled by the input, tools retrieved for the query): a value of that provenance wherever it
    lands in a prompt. `receivers` and `keywords` keep a generic method name (`.get`, `.query`,
    `.invoke`) to the objects it means; `placeholders` are the template fields the framework fills
    with such content itself (LlamaIndex's `{context_str}`), in modules that import it."""

    name: str
    kind: str
    calls: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    # globs over the receiver's last written name (`self._retriever` -> `_retriever`), lowercased
    receivers: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()  # the call passes one of these keywords (`memory.get(input=...)`)
    placeholders: tuple[str, ...] = ()
    provenance: str = "request"
    # Its result is the conversation with what it recalls (segments.Hole.turns).
    turns: bool = False
    examples: dict[str, str] = field(default_factory=dict)

    def takes(self, call: cst.Call) -> bool:
        """Whether a call whose name matched is this row's: its receiver and keywords agree."""
        if self.keywords and not any(_passes(a, self.keywords) for a in call.args):
            return False
        if not self.receivers:
            return True
        receiver = receiver_name(call.func).lower()
        return bool(receiver) and any(fnmatch.fnmatchcase(receiver, g) for g in self.receivers)


def _passes(arg: cst.Arg, keywords: tuple[str, ...]) -> bool:
    """`input=...`, or a variable of that name passed (`mem.get(input, **kwargs)`)."""
    import libcst as cst

    if arg.keyword is not None:
        return arg.keyword.value in keywords
    return isinstance(arg.value, cst.Name) and arg.value.value in keywords


class TableError(ValueError):
    """A row of a models table that cannot be used (names the row)."""


@dataclass(frozen=True)
class _Pattern:
    text: str
    suffix: bool  # `.a.b`: the end of the written chain; else a glob over the qualified name

    def matches(self, written: str, qualified: set[str]) -> bool:
        if self.suffix:
            return written == self.text[1:] or written.endswith(self.text)
        return any(fnmatch.fnmatchcase(q, self.text) for q in qualified)


class Frameworks:
    """The table, indexed by the last name of each pattern so that a call costs a dict lookup."""

    def __init__(
        self,
        sinks: list[SinkModel],
        configs: list[ConfigModel],
        not_prompt: frozenset[str] = frozenset(),
        entries: list[EntryModel] | None = None,
        memories: list[MemoryModel] | None = None,
        appended: list[AppendedModel] | None = None,
        sources: list[SourceModel] | None = None,
    ) -> None:
        self.sinks = sinks
        self.sources = sources or []
        self.configs = configs
        self.not_prompt = not_prompt  # keywords and dict keys that only configure a call
        self.entries = entries or []
        self.memories = memories or []
        self._memories: dict[str, list[tuple[_Pattern, MemoryModel]]] = {}
        for memory in self.memories:
            for text in memory.calls:
                self._memories.setdefault(_last(text), []).append((_pattern(text), memory))
        # A module whose text names none of these builds no framework memory (history.py's prefilter).
        # Only rows that rewrite can give a finding: an append-only one costs no module a look;
        # a `keyword` row is told by its keyword (`history_processors`), not its class (`Agent`).
        rewriting = [m for m in self.memories if not m.keeps_prefix]
        self.memory_words = frozenset(m.keyword or _last(t) for m in rewriting for t in m.calls)
        memory_names = sorted(re.escape(w) for w in self.memory_words)
        # What a read or a hand-over is spelt with: a call or attribute named otherwise is none.
        self.memory_reads = frozenset(r.rsplit(".", 1)[-1] for m in rewriting for r in m.reads)
        self.memory_passed = frozenset(k for m in rewriting for k in m.passed)
        self.memory_needles = re.compile(
            r"\b(?:" + "|".join(memory_names) + ")" if memory_names else r"(?!x)x"
        )
        self.appended = appended or []
        self._appended: dict[str, list[tuple[_Pattern, AppendedModel]]] = {}
        for row in self.appended:
            for text in row.calls:
                self._appended.setdefault(_last(text), []).append((_pattern(text), row))
        self._calls: dict[str, list[tuple[_Pattern, SinkModel | ConfigModel]]] = {}
        self._decorators: dict[str, list[tuple[_Pattern, SinkModel]]] = {}
        self._bases: dict[str, list[tuple[_Pattern, SinkModel]]] = {}
        # `*Config`: a class of any module named so, matched only when no named row is
        self._named_like: list[tuple[str, ConfigModel]] = []
        for row in [*configs, *sinks]:  # config rows first: `OpenAI(...)` is no sink
            for text in row.calls:
                if text.startswith("*") and isinstance(row, ConfigModel):
                    self._named_like.append((text, row))
                else:
                    self._calls.setdefault(_last(text), []).append((_pattern(text), row))
        for sink in sinks:
            for text in sink.decorators:
                self._decorators.setdefault(_last(text), []).append((_pattern(text), sink))
            for text in sink.bases:
                self._bases.setdefault(_last(text), []).append((_pattern(text), sink))
        self._entries: dict[str, list[tuple[_Pattern, EntryModel]]] = {}
        for entry in self.entries:
            for text in entry.decorators:
                self._entries.setdefault(_last(text), []).append((_pattern(text), entry))
        self._sources: dict[str, list[tuple[_Pattern, SourceModel]]] = {}
        for source in self.sources:
            for text in source.calls:
                self._sources.setdefault(_last(text), []).append((_pattern(text), source))
        self._placeholders = [s for s in self.sources if s.placeholders]
        # The packages whose objects are called (`llm(prompt)`): only modules importing one look further.
        self._called = {p.text.split(".")[0] for p, _ in self._calls.get(_CALL, ())}
        names = sorted({re.escape(n) for s in sinks for n in _needles(s)} | set(memory_names))
        # A module whose text names none of these cannot use a modelled API (python.may_hold_prompts),
        # nor build a modelled memory; a prefix, as `langchain` is of `langchain_core`.
        self.needles = re.compile(r"\b(?:" + "|".join(names) + ")") if names else re.compile(r"(?!x)x")

    def extended(self, sinks: list[SinkModel], sources: list[SourceModel] | None = None) -> Frameworks:
        return Frameworks(
            [*self.sinks, *sinks],
            self.configs,
            self.not_prompt,
            self.entries,
            self.memories,
            self.appended,
            [*(sources or []), *self.sources],
        )

    def memory_class(self, index: ModuleIndex, node: cst.BaseExpression) -> MemoryModel | None:
        """The `[[memory]]` row an expression names as a class (`Memory`, a parameter's default)."""
        found = _match(self._memories, index, node)
        return found if isinstance(found, MemoryModel) and not found.keyword else None

    def match_memory(self, index: ModuleIndex, call: cst.Call) -> MemoryModel | None:
        """The `[[memory]]` row a call builds (or, for a `function` row, is), if any; a `keyword`
        row only when the call passes that keyword."""
        import libcst as cst

        found = _match(self._memories, index, call.func)
        if found is None and isinstance(call.func, cst.Attribute):  # `ChatMemoryBuffer.from_defaults(...)`
            found = _match(self._memories, index, call.func.value)
        if isinstance(found, MemoryModel) and found.keyword:
            keywords = {a.keyword.value for a in call.args if a.keyword is not None}
            return found if found.keyword in keywords else None
        return found if isinstance(found, MemoryModel) else None

    def match_appended(
        self, index: ModuleIndex, call: cst.Call, later: frozenset[str] = frozenset()
    ) -> list[AppendedModel]:
        """The `[[appended]]` rows a call is an instance of and given the keyword of (in the call,
        or among `later`: attributes set on the object it builds)."""
        chain = written_chain(call.func)
        rows = self._appended.get(chain.rsplit(".", 1)[-1]) if chain else None
        if not rows:
            return []
        imported = imported_packages(index)
        qualified = index.qualified_names(call.func)
        given = {a.keyword.value for a in call.args if a.keyword is not None} | later
        return [
            row
            for pattern, row in rows
            if not (row.imports and not any(fnmatch.filter(imported, p) for p in row.imports))
            and (not row.keywords or given & set(row.keywords))
            and pattern.matches(chain, qualified)
        ]

    def match_source(self, index: ModuleIndex, call: cst.Call) -> SourceModel | None:
        """The source row a call is an instance of (its result is per-request content), if any."""
        key = (self, call, "source")
        memo = index.matched
        if key not in memo:
            chain = written_chain(call.func)
            rows = self._sources.get(chain.rsplit(".", 1)[-1]) if chain else None
            found = None
            if rows:
                imported = imported_packages(index)
                qualified = index.qualified_names(call.func)
                for pattern, row in rows:
                    if row.imports and not any(fnmatch.filter(imported, p) for p in row.imports):
                        continue
                    if pattern.matches(chain, qualified) and row.takes(call):
                        found = row
                        break
            memo[key] = found
        return memo[key]

    def placeholder_source(self, index: ModuleIndex, name: str) -> SourceModel | None:
        """The source row whose framework fills a template's `{name}` itself, in this module."""
        for row in self._placeholders:
            if name in row.placeholders and (
                not row.imports or any(fnmatch.filter(imported_packages(index), p) for p in row.imports)
            ):
                return row
        return None

    def match_call(self, index: ModuleIndex, call: cst.Call) -> SinkModel | ConfigModel | None:
        """The row a call is an instance of, if any. A configuration object known only by its name
        (`LangDBParams(run_id=...)`) is one unless it is given prompt text (`system_prompt=`).
        Matched once per call node (every pass over the module asks again)."""
        key = (self, call)
        memo = index.matched
        if key not in memo:
            memo[key] = self._match_call(index, call)
        return memo[key]

    def match_callable(self, index: ModuleIndex, func: cst.BaseExpression) -> SinkModel | ConfigModel | None:
        """The row an expression is, as the called thing of a call (`client.chat.completions.create`
        written as a value, passed to a retrier or a thread), if any."""
        import libcst as cst

        found = _match(self._calls, index, func)
        if (
            found is None
            and self._called
            and isinstance(func, (cst.Name, cst.Attribute))
            and any(fnmatch.filter(imported_packages(index), p) for p in self._called)
        ):
            found = _match_instance(self._calls[_CALL], index, func)
        return found

    def _match_call(self, index: ModuleIndex, call: cst.Call) -> SinkModel | ConfigModel | None:
        found = self.match_callable(index, call.func)
        if found is not None or not self._named_like:
            return found
        last = written_chain(call.func).rsplit(".", 1)[-1]
        for pattern, row in self._named_like:
            if fnmatch.fnmatchcase(last, pattern):
                keywords = [a.keyword.value for a in call.args if a.keyword is not None]
                return None if any(says_prompt_attribute(k) for k in keywords) else row
        return None

    def entry_point(self, index: ModuleIndex, fn: cst.FunctionDef) -> EntryModel | None:
        """The row that makes `fn` a request entry point, if one of its decorators is one."""
        import libcst as cst  # loaded by then; the table alone (prefilter.py) needs no libcst

        for decorator in fn.decorators:
            node = decorator.decorator
            found = _match(self._entries, index, node.func if isinstance(node, cst.Call) else node)
            if found is not None:
                return found
        return None

    def match_decorator(self, index: ModuleIndex, decorator: cst.Decorator) -> SinkModel | None:
        import libcst as cst

        node = decorator.decorator
        found = _match(self._decorators, index, node.func if isinstance(node, cst.Call) else node)
        return found if isinstance(found, SinkModel) else None

    def match_class(self, index: ModuleIndex, cls: cst.ClassDef) -> SinkModel | None:
        """The class row a class definition is a subclass of (`class QA(dspy.Signature)`), if any."""
        for base in cls.bases:
            if base.keyword is None:
                found = _match(self._bases, index, base.value)
                if isinstance(found, SinkModel):
                    return found
        return None


_CALL = "__call__"  # a pattern's last name for calls of an object the pattern's name built


def _match(table: dict[str, list[tuple[_Pattern, Any]]], index: ModuleIndex, func: cst.BaseExpression) -> Any:
    chain = written_chain(func)
    if not chain:
        return None
    rows = table.get(chain.rsplit(".", 1)[-1])
    if not rows:
        return None
    return _first(rows, index, chain, index.qualified_names(func))


def _first(rows: list[tuple[_Pattern, Any]], index: ModuleIndex, chain: str, qualified: set[str]) -> Any:
    imported = imported_packages(index)
    for pattern, row in rows:
        if row.imports and not any(fnmatch.filter(imported, p) for p in row.imports):
            continue
        if pattern.matches(chain, qualified):
            return row
    return None


def _match_instance(
    rows: list[tuple[_Pattern, Any]], index: ModuleIndex, func: cst.Name | cst.Attribute
) -> Any:
    """A call of an object (`llm(prompt)`, `self.llm(prompt)`) matched as `<what built it>.__call__`."""
    import libcst as cst

    built = index.assigned(func)
    if not isinstance(built, cst.Call):
        return None
    chain = written_chain(built.func)
    if not chain:
        return None
    qualified = {f"{q}.{_CALL}" for q in index.qualified_names(built.func)}
    return _first(rows, index, f"{chain}.{_CALL}", qualified)


def written_chain(node: cst.BaseExpression) -> str:
    """`self.client.chat.completions.create` for that chain of names; calls and subscripts in the
    chain (`get_client().messages.create`) keep only the names after them."""
    import libcst as cst

    parts: list[str] = []
    while True:
        if isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        elif isinstance(node, cst.Name):
            parts.append(node.value)
            break
        else:
            break
    return ".".join(reversed(parts))


_IMPORTED: dict[int, tuple[ModuleIndex, frozenset[str]]] = {}


def receiver_name(func: cst.BaseExpression) -> str:
    """The last name of what a method is called on: `self._retriever` for `self._retriever.retrieve`,
    `as_retriever` for `index.as_retriever().retrieve`; "" for a plain function."""
    import libcst as cst

    if not isinstance(func, cst.Attribute):
        return ""
    receiver = func.value
    if isinstance(receiver, cst.Call):
        receiver = receiver.func
    if isinstance(receiver, cst.Attribute):
        return receiver.attr.value
    return receiver.value if isinstance(receiver, cst.Name) else ""


def imported_packages(index: ModuleIndex) -> frozenset[str]:
    """The top-level packages a module imports (`langchain_core`, `openai`)."""
    found = _IMPORTED.get(id(index))
    if found is None or found[0] is not index:  # an id is reused once its index is gone
        if len(_IMPORTED) > 64:  # it keeps the indexes alive: a few modules at a time
            _IMPORTED.clear()
        packages = frozenset(d.lstrip(".").split(".")[0] for names in index.imports.values() for d in names)
        found = _IMPORTED[id(index)] = (index, packages)
    return found[1]


def _last(pattern: str) -> str:
    return pattern.rsplit(".", 1)[-1]


def _needles(row: SinkModel) -> set[str]:
    """What a module's text must contain for the row to match in it: a package it imports (`imports`,
    the first name of a qualified pattern), else the chain a suffix pattern is written as."""
    if row.imports:
        return {p.split("*")[0].rstrip(".") for p in row.imports if p.split("*")[0]}
    out = set()
    for text in (*row.calls, *row.decorators, *row.bases):
        first = text.split(".")[0] if not text.startswith(".") else ""
        out.add(first.split("*")[0] if first and first.split("*")[0] else text.lstrip("."))
    return out


def _pattern(text: str) -> _Pattern:
    return _Pattern(text, text.startswith("."))


def _strings(row: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = row.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TableError(f"{where}: `{key}` must be a list of names")
    return tuple(value)


_ARGUMENT = re.compile(r"(?:\*|\d+|[A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)?$")  # `0`, `system`, `config.tools`


def _parts(table: Any, key: str, where: str, what: str) -> dict[str, str]:
    """A row's `arguments` or `attributes`: names (`_ARGUMENT`) mapped to parts."""
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise TableError(f"{where}: `{key}` maps {what} to a part")
    for name, part in table.items():
        if not _ARGUMENT.match(name):
            raise TableError(
                f"{where}: `{key}` cannot name `{name}` (a name, a position, `*`, or `name.field`)"
            )
        if part not in PARTS:
            raise TableError(f"{where}: unknown part `{part}` (one of {', '.join(PARTS)})")
    return dict(table)


def _named(row: dict[str, Any], model: type, where: str) -> tuple[str, str]:
    """A row's name and `where` naming it; TableError for a key `model` has not or no name."""
    unknown = sorted(set(row) - {f.name for f in fields(model)})
    if unknown:
        raise TableError(f"{where}: unknown key `{unknown[0]}`")
    name = row.get("name")
    if not isinstance(name, str) or not name:
        raise TableError(f"{where}: every row needs a `name`")
    return name, f"{where} ({name})"


def sink_from_row(row: dict[str, Any], where: str) -> SinkModel:
    """A `[[sink]]` row as a SinkModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, SinkModel, where)
    arguments = _parts(row.get("arguments", {}), "arguments", where, "a keyword or position")
    attributes = _parts(row.get("attributes", {}), "attributes", where, "a class attribute")
    if (row.get("returns") or "system") not in PARTS:
        raise TableError(f"{where}: unknown part `{row['returns']}` (one of {', '.join(PARTS)})")
    when = row.get("when", "request")
    if when not in WHEN:
        raise TableError(f"{where}: `when` is one of {', '.join(WHEN)}")
    calls, decorators = _strings(row, "calls", where), _strings(row, "decorators", where)
    bases = _strings(row, "bases", where)
    if not calls and not decorators and not bases:
        raise TableError(f"{where}: a row needs `calls`, `decorators` or `bases`")
    if decorators and not row.get("returns"):
        raise TableError(f"{where}: a decorator row says which part its function `returns`")
    if bases and not attributes:
        raise TableError(f"{where}: a class row (`bases`) says which `attributes` are its text")
    for text in (*calls, *decorators, *bases):
        if any(c in _last(text) for c in "*?["):
            raise TableError(f"{where}: `{text}`: its last name is written out (globs go before it)")
    for text in calls:
        if _last(text) == _CALL and text.startswith("."):
            raise TableError(f"{where}: `{text}`: a `.__call__` pattern names what builds the object")
    return SinkModel(
        name=name,
        calls=calls,
        decorators=decorators,
        bases=bases,
        imports=_strings(row, "imports", where),
        arguments=arguments,
        attributes=attributes,
        returns=row.get("returns", ""),
        when=when,
        templates=bool(row.get("templates", False)),
        fills=bool(row.get("fills", False)),
        whole_request=bool(row.get("whole_request", True)),
        breakpoints=str(row.get("breakpoints", "")),
        examples=dict(row.get("examples", {})),
    )


def config_from_row(row: dict[str, Any], where: str) -> ConfigModel:
    name, _ = _named(row, ConfigModel, where)
    calls = _strings(row, "calls", f"{where} ({name})")
    if not calls:
        raise TableError(f"{where} ({name}): a config row needs `calls`")
    imports = _strings(row, "imports", where)
    return ConfigModel(name, calls, imports, dict(row.get("examples", {})))


def entry_from_row(row: dict[str, Any], where: str) -> EntryModel:
    name, _ = _named(row, EntryModel, where)
    decorators = _strings(row, "decorators", f"{where} ({name})")
    if not decorators:
        raise TableError(f"{where} ({name}): an entry row needs `decorators`")
    return EntryModel(name, decorators, _strings(row, "imports", where), dict(row.get("examples", {})))


def memory_from_row(row: dict[str, Any], where: str) -> MemoryModel:
    """A `[[memory]]` row as a MemoryModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, MemoryModel, where)
    calls = _strings(row, "calls", where)
    if not calls:
        raise TableError(f"{where}: a memory row needs `calls`")
    rewrites = row.get("rewrites")
    if rewrites not in REWRITES:
        raise TableError(f"{where}: `rewrites` is one of {', '.join(REWRITES)}")
    reads, passed = _strings(row, "reads", where), _strings(row, "passed", where)
    keyword, function = str(row.get("keyword", "")), bool(row.get("function", False))
    if not (reads or passed or keyword or function):
        raise TableError(
            f"{where}: a memory row says how it is reached (`reads`, `passed`, `keyword` or `function`)"
        )
    always = row.get("always", True)
    if not isinstance(always, bool):
        raise TableError(f"{where}: `always` is true or false")
    trigger = _strings(row, "trigger", where)
    if not always and not trigger:
        raise TableError(
            f"{where}: a row that rewrites only when told (`always = false`) names its `trigger`"
        )
    return MemoryModel(
        name=name,
        calls=calls,
        rewrites=rewrites,
        trigger=trigger,
        always=always,
        reads=reads,
        passed=passed,
        keyword=keyword,
        function=function,
        keeps_when=_strings(row, "keeps_when", where),
        imports=_strings(row, "imports", where),
        source=str(row.get("source", "")),
        examples=dict(row.get("examples", {})),
    )


def source_from_row(row: dict[str, Any], where: str) -> SourceModel:
    """A `[[source]]` row as a SourceModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, SourceModel, where)
    kind = row.get("kind")
    if kind not in SOURCE_KINDS:
        raise TableError(f"{where}: `kind` is one of {', '.join(SOURCE_KINDS)}")
    provenance = row.get("provenance", "request")
    if provenance not in PROVENANCES:
        raise TableError(f"{where}: `provenance` is one of {', '.join(PROVENANCES)}")
    calls, placeholders = _strings(row, "calls", where), _strings(row, "placeholders", where)
    if not calls and not placeholders:
        raise TableError(f"{where}: a source row needs `calls` or `placeholders`")
    for text in calls:
        if any(c in _last(text) for c in "*?["):
            raise TableError(f"{where}: `{text}`: its last name is written out (globs go before it)")
    return SourceModel(
        name=name,
        kind=kind,
        calls=calls,
        imports=_strings(row, "imports", where),
        receivers=tuple(g.lower() for g in _strings(row, "receivers", where)),
        keywords=_strings(row, "keywords", where),
        placeholders=placeholders,
        provenance=provenance,
        turns=bool(row.get("turns", False)),
        examples=dict(row.get("examples", {})),
    )


def appended_from_row(row: dict[str, Any], where: str) -> AppendedModel:
    name, where = _named(row, AppendedModel, where)
    calls = _strings(row, "calls", where)
    if not calls:
        raise TableError(f"{where}: an appended row needs `calls`")
    lands = row.get("lands", "end")
    if lands not in LANDS:
        raise TableError(f"{where}: `lands` is one of {', '.join(LANDS)}")
    tokens = row.get("tokens", 0)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise TableError(f"{where}: `tokens` is a count (the least the library writes)")
    return AppendedModel(
        name,
        calls,
        _strings(row, "keywords", where),
        lands,
        tokens,
        _strings(row, "imports", where),
        dict(row.get("examples", {})),
    )


def parse_table(text: str, where: str) -> Frameworks:
    data = tomllib.loads(text)
    sinks = [sink_from_row(r, f"{where}: sink {i + 1}") for i, r in enumerate(data.get("sink", []))]
    configs = [config_from_row(r, f"{where}: config {i + 1}") for i, r in enumerate(data.get("config", []))]
    entries = [entry_from_row(r, f"{where}: entry {i + 1}") for i, r in enumerate(data.get("entry", []))]
    memories = [memory_from_row(r, f"{where}: memory {i + 1}") for i, r in enumerate(data.get("memory", []))]
    appended = [
        appended_from_row(r, f"{where}: appended {i + 1}") for i, r in enumerate(data.get("appended", []))
    ]
    sources = [source_from_row(r, f"{where}: source {i + 1}") for i, r in enumerate(data.get("source", []))]
    keywords = _strings(data.get("not_prompt", {}), "keywords", f"{where}: not_prompt")
    return Frameworks(sinks, configs, frozenset(keywords), entries, memories, appended, sources)


@cache
def builtin() -> Frameworks:
    """The table shipped with prefixlint (read once per process)."""
    text = resources.files("prefixlint.data").joinpath("frameworks.toml").read_text("utf-8")
    return parse_table(text, "frameworks.toml")


def declared_sink(name: str) -> SinkModel:
    """A project's own prompt builder from `python.sinks` (`myapp.chat.format_chat_message`, or a
    bare `format_chat_message`): every argument of a call of it is prompt text, in order."""
    pattern = name if "." in name else "." + name
    return SinkModel(
        name=f"`{name}` (python.sinks)", calls=(pattern,), arguments={"*": "prompt"}, whole_request=False
    )


@cache
def for_project(
    declared: tuple[str, ...], rows: tuple[str, ...] = (), source_rows: tuple[str, ...] = ()
) -> Frameworks:
    """The table with the project's own rows: `python.sinks` names, `[[python.sink]]` and
    `[[python.source]]` rows (JSON, checked when the config was read). The project's sources are
    tried before the built-in ones."""
    import json

    own = [declared_sink(n) for n in declared]
    own += [sink_from_row(json.loads(row), "config python.sink") for row in rows]
    sources = [source_from_row(json.loads(row), "config python.source") for row in source_rows]
    return builtin().extended(own, sources) if own or sources else builtin()
