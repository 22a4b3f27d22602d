"""The models table's row types: one frozen dataclass per kind of `[[row]]`, and the values a row's
fields may take.

`SinkModel` (an API whose arguments become prompt text, with the part of the request each becomes,
in `PARTS` order), `ConfigModel` (a call that only configures a client), `EntryModel` (a decorator
that makes a function a request entry point), `RequestModel` (a call whose value a request
brings), `MemoryModel` (a framework memory and how it rewrites
the history), `AppendedModel` (text a library adds beside what a call is given), `SourceModel` (a
call whose result is made per request), `FieldsModel` (the inputs a component framework declares as
data and its code reads as attributes), `SchemaModel` (a construct whose arguments become the
choices of a generated schema), `OrderModel` (arguments that only order or pick what a call gives:
a sort key, an ORDER BY), `SettingsModel` (a call that loads config files, or wraps data, into a
settings object read by attribute). Reading them from TOML is table.py's job; finding them at
a call is lookup.py's.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from prefixlint.python.frameworks.names import receiver_name

if TYPE_CHECKING:  # libcst is imported where a node is looked at: reading the table needs none of it
    import libcst as cst


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
    # What the framework writes after an argument in the request it renders (an argument of
    # `arguments` -> the literal text its source writes, or at least that many tokens of static
    # text whose length it decides: CrewAI's format instructions after an agent's `goal`).
    follows: dict[str, int | str] = field(default_factory=dict)
    # The engine (engines.toml) whose `cache_control` breakpoints its content blocks carry, for
    # PFX503 (prefixlint/python/breakpoints.py): "anthropic"; "" when it has none.
    breakpoints: str = ""
    # Its calls that build or act on an object (a chat session, a run, a thread message) and give
    # no reply of the model; "*": all of them. The others' results are the model's reply
    # (replies_to, a `model_output` source).
    objects: tuple[str, ...] = ()
    examples: dict[str, str] = field(default_factory=dict)

    @property
    def replies(self) -> bool:
        """Whether its calls send a request and give back what the model wrote (an API call sent
        per request, not a piece of a request nor an object built once)."""
        return self.whole_request and self.when == "request" and bool(self.calls) and "*" not in self.objects

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
    """What makes a function a request entry point (a web route, a chat handler, a tool the model
    calls, a graph node): one of its `decorators`; or, in a module importing one of `imports`, a
    first parameter named `parameter` (a Django view's `request`), or being passed to one of
    `callbacks` (`gr.ChatInterface(fn=respond)`, `graph.add_node("plan", plan)`). What its
    parameters receive differs per request, whatever their names; with `inputs`, only the
    parameters at those positions (after `self`) do: the Agents SDK calls `instructions(context,
    agent)` with the run's context and the agent itself, which is the app's."""

    name: str
    decorators: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    examples: dict[str, Any] = field(default_factory=dict)
    parameter: str = ""
    callbacks: tuple[str, ...] = ()
    inputs: tuple[int, ...] = ()


@dataclass(frozen=True)
class RequestModel:
    """A call (or a module attribute, `sys.argv`) whose value is what one request or run brings: the
    user's line (`input()`), the command line (`parser.parse_args()`), a websocket message
    (`websocket.receive_text()`), a chat box (`st.chat_input()`). Followed back from a prompt
    builder's parameter through the project's calls (prefixlint/python/entrypoints.py), it is what
    makes "if its callers pass one" seen."""

    name: str
    calls: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()  # attributes read, not called (`sys.argv`)
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


@dataclass(frozen=True)
class FieldsModel:
    """A component framework's declared inputs (`[[fields]]`): a class attribute lists them as calls
    (langflow `inputs = [MessageTextInput(name="input_text"), StrInput(...)]`), the `key` keyword
    names each, and the code reads it as `self.<name>`. What a field holds depends on the class it is
    declared with: `request` classes are connected to the flow's messages and handles (a new value on
    every run), `constant` ones are typed in once per app (their `default` keyword is the text, when
    given); what a declaration says it is connected to (`types`) decides over its class."""

    name: str
    attribute: str
    request: tuple[str, ...]
    constant: tuple[str, ...] = ()
    key: str = "name"
    default: str = "value"
    # The keyword that lists what a declaration is connected to (`input_types=["LanguageModel"]`):
    # given, the field is per request only when one of them is in `request_types` (a message, data),
    # else it is a constant of the app (a model, tools, an embedding), whatever its class.
    types: str = ""
    request_types: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    source: str = ""  # where the classes were read (the library's source)
    examples: dict[str, str] = field(default_factory=dict)


# What a source row's calls give: retrieved context, recalled memory, retrieved tools, web results, the
# input an agent run is invoked with and the steps it has taken (placeholders its framework fills), a
# database query's rows, a model's reply (`model_output`: the result of the request rows' calls), text
# read anew on each call (`read`: a command's output, the clipboard).
SOURCE_KINDS = ("context", "memory", "tools", "search", "input", "rows", "model_output", "read")
# When a source row's result changes, when that is not on each call (`timing`).
SOURCE_TIMINGS = ("", "edit")
# A source row's provenance, by the name the table writes it in (segments.Provenance's members);
# "unknown": text no finding is about, but read anew on each call (segments.Hole.per_call).
PROVENANCES = ("request", "clock", "id", "random", "environment", "unordered", "unknown")


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
    # A query's rows (`session.exec(stmt)`): a source only when the statement is built by one of
    # `statements` (`sqlalchemy.select`), or is SQL text that selects (`sql`), and nothing in it
    # orders the rows (a method of `ordered`, `ORDER BY`): frameworks/queries.py.
    statements: tuple[str, ...] = ()
    sql: bool = False
    ordered: tuple[str, ...] = ()
    # When its result changes, when that is not the call's own (segments.Hole.timing): "edit", the
    # rows come back in storage order, which changes when a row is written.
    timing: str = ""
    # Its calls are the request rows' own (`SinkModel.replies`): what a model call gives back.
    replies: bool = False
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


@dataclass(frozen=True)
class SchemaModel:
    """A construct whose arguments become the choices of a generated schema (a tool's parameters, a
    structured output): `Literal[...]`, `Enum("Zone", names)`, a framework's input with `options=`.
    The schema lists them in the order given, so an unordered value there reorders the request."""

    name: str
    calls: tuple[str, ...]  # a call, or a subscripted name (`typing.Literal[...]`)
    # keyword or position ("1") of the choices; "*" every argument (a subscript's every element)
    arguments: tuple[str, ...] = ("*",)
    # keywords the call passes as `True` for the schema to be made at all (`tool_mode=True`)
    flags: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    examples: dict[str, str] = field(default_factory=dict)

    def chosen(self, keyword: str | None, position: int) -> bool:
        """Whether an argument (a keyword, else its position) holds the choices."""
        return "*" in self.arguments or (keyword if keyword is not None else str(position)) in self.arguments


@dataclass(frozen=True)
class GetterModel:
    """The shape of a config read with a default (`[[getter]]`): a key written as a literal at
    position `key`, then the default at one of `default` (positions or keywords). Where the default
    names a prompt file of the project, the value is that file on every machine where the config
    does not override it (evaluate/config_reads.py). `functions`: the callee's name, () = any call."""

    name: str
    key: int = 0
    default: tuple[str, ...] = ("1", "default")
    functions: tuple[str, ...] = ()
    examples: dict[str, Any] = field(default_factory=dict)

    def default_argument(self, positional: list[Any], keywords: dict[str, Any]) -> Any:
        """The argument node that gives the default, or None."""
        for where in self.default:
            if where.isdigit():
                if int(where) < len(positional):
                    return positional[int(where)]
            elif where in keywords:
                return keywords[where]
        return None


@dataclass(frozen=True)
class OrderModel:
    """Arguments that only order or pick what a call gives, never written into it (`[[ordering]]`):
    a sort key (`key=` of `sorted`, `max`, `list.sort`), an ORDER BY (`.order_by(Model.created_at)`).
    What the call gives is the text of what it orders (the receiver of a method in `methods`, the
    other arguments of a call given a keyword in `keywords`): a clock used as a sort key is no
    prompt text. `calls` are reductions whose result does not depend on the order of what they
    are given (`max`, `sorted`, `os.path.commonpath`): the order of unordered data (a set,
    `os.listdir`) does not reach their result, what else their arguments carry does."""

    name: str
    methods: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()  # a bare name is the builtin; a dotted one the imported function
    examples: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SettingsModel:
    """A call that makes a settings object the code reads by attribute, item or `.get(key)`
    (`[[settings]]`): loaded from the config files its `files` arguments name, in the order listed
    (Dynaconf's `settings_files`, `OmegaConf.load(path)`), or wrapping the data its `data` arguments
    give (`EasyDict(yaml.safe_load(f))`). Or a class decorator that loads the files its class
    `attributes` name (attribute -> the file it loads when the class does not set it, beside the
    class's module) into those attributes (CrewAI's `@CrewBase`: `agents_config`). `case_insensitive`:
    a key is read in any case (Dynaconf); `dotted`: `.get("a.b")` reads a nested key. What a read
    gives is the text in those files (evaluate/settings.py)."""

    name: str
    calls: tuple[str, ...] = ()
    decorators: tuple[str, ...] = ()
    attributes: dict[str, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    data: tuple[str, ...] = ()
    case_insensitive: bool = False
    dotted: bool = False
    examples: dict[str, Any] = field(default_factory=dict)
    imports: tuple[str, ...] = ()  # matched by the qualified name: no module filter
