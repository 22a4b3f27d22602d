"""The cases of the generated generalisation suite (issue 28, point 5), written from the models table.

Every `[[sink]]` row of the table (prefixlint/data/frameworks.toml) × every source kind (a clock, an
id, randomness, a machine value, unordered data, a per-request input, and stable look-alikes) ×
every way text is built (f-string, `%`, `.format`, `+`, `join`, `string.Template`, the table's
template rows, helpers, methods, class and instance attributes, another module, a prompt file),
each in a few variants × every position in the request (head, middle, tail, ahead of static
messages, a later message, a tool description, two values close together). Combined pairwise
(`cases`): each row with each family of sources, each group of ways and each position it has,
each source with each way and each position, each way at each position, both where a finding is
expected and, at the tail, where silence is. Each case is a small project written to a folder,
and the findings the loss rule expects of it, decided here from the rule and never by running
prefixlint:

- a value costs the static text after it, up to the next per-request input, including the later
  static messages and tools of the request: the static texts here are well over a cache block (40
  tokens and more), so a value followed by one is a finding at the line where the value is made
  (where it enters the checked file, for a value made in another module);
- a value at the end, with nothing static after it before the request ends or the user's turn (a
  per-request input) starts, is silent; where the sink sends only a piece of a request
  (`whole_request = false`) and no user's turn follows, what follows is built elsewhere: a finding
  of at most a warning (none for a per-request input, which is meant to vary);
- two values less than a block apart part the requests as one: one finding, at the first; a block
  or more apart, the second, when it changes less often than the first (the pid behind a per-call
  value), costs nothing on top of it: a co-cause, at info;
- a value made once, at import (a class or module constant) or construction (`__init__`), or a date
  (it changes once a day), is one severity lower; a per-request input known by its name is at
  most info;
- a setting of the deployment (an environment variable) is the same on every request of one
  deployment: at most info wherever it is; a value beside it that changes more often (the pid, per
  process) parts the requests of one deployment where it stands: a finding of its own, and the
  setting loses only the text up to it;
- a stable value (a sorted set, a seeded generator) is silent wherever it is.

Nothing here imports or runs the generated code.
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from prefixlint.core.findings import Severity
from prefixlint.core.rules import RULES
from prefixlint.python.frameworks import PARTS, SinkModel, builtin

CHECKED = "app.py"  # the file each case analyses
OTHER = "prompt_parts.py"  # another module of the project
V = "<value>"  # where the value stands among a text's pieces
W = "<second>"  # where a second volatile value stands, less than a block after the first or more

# Static texts, each well over one cache block (the tokenizer counts ~40-60 tokens each).
CONSTANTS = {
    "RULES": "Answer in plain English and cite the knowledge base article you rely on by its title. Never "
    "invent order numbers, prices or delivery dates. Escalate refunds over fifty euros to a human agent, "
    "and keep every answer under two hundred words, with the most important sentence first.",
    "MORE": "When the customer is upset, acknowledge it in one short sentence before you answer. Offer at "
    "most two next steps, each with the page of the help centre that explains it, and end by asking "
    "whether anything else is unclear.",
    "LEAD": "You are the support assistant of a small online shop.",
    "TOOL_DOC": "Look up an order by its number and return its status.",
    "EXAMPLE_Q": "Where is my parcel? I ordered a blue kettle last week and the tracking page has not "
    "changed since Monday.",
    "EXAMPLE_A": "I am sorry for the wait. Parcels usually move within five working days; if yours has "
    "not moved by Friday, reply here and a colleague will open a claim with the carrier.",
}
DATA = {  # constants the sources draw from
    "GREETINGS": '["Hello!", "Hi there!", "Welcome back!"]',
    "EXAMPLES": '["Q: Can I return a gift? A: Yes, within 30 days.", '
    '"Q: Do you ship abroad? A: To the EU only.", "Q: Can I change my address? A: Until the parcel ships."]',
}


# --- source kinds ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
    """A value put into a prompt: the expression (single-quoted strings only, as it may stand in
    an f-string), what it needs, and the code it should be reported under (None: stable)."""

    name: str
    code: str | None
    expr: str
    imports: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()  # statements before the expression, in its scope
    mark_setup: int | None = None  # the value is made by this setup statement (a shuffle)
    param: str = ""  # a per-request input: a parameter of the function that sends the request
    is_str: bool = False  # `+` needs no `str()` around it
    daily: bool = False  # a date: it changes once a day, so it splits the cache per day
    deployment: bool = False  # a setting of the deployment: never lost within one, at most info


_SETTING: dict = {"is_str": True, "deployment": True}
SOURCES = [
    Source("clock-datetime-now", "PFX101", "datetime.now()", ("from datetime import datetime",)),
    Source("clock-time-time", "PFX101", "time.time()", ("import time",)),
    Source("clock-date-today", "PFX101", "date.today()", ("from datetime import date",), daily=True),
    Source("clock-strftime", "PFX101", "time.strftime('%Y-%m-%d %H:%M')", ("import time",), is_str=True),
    Source("id-uuid4", "PFX102", "uuid.uuid4()", ("import uuid",)),
    Source("id-token-hex", "PFX102", "secrets.token_hex(8)", ("import secrets",), is_str=True),
    Source("random-choice", "PFX103", "random.choice(GREETINGS)", ("import random",), is_str=True),
    Source(
        "random-sample", "PFX103", "' / '.join(random.sample(EXAMPLES, 2))", ("import random",), is_str=True
    ),
    Source(
        "random-shuffled-list",
        "PFX103",
        "' / '.join(picked)",
        ("import random",),
        setup=("picked = list(EXAMPLES)", "random.shuffle(picked)"),
        mark_setup=1,
        is_str=True,
    ),
    Source("machine-getcwd", "PFX104", "os.getcwd()", ("import os",), is_str=True),
    Source("machine-hostname", "PFX104", "socket.gethostname()", ("import socket",), is_str=True),
    Source("machine-platform", "PFX104", "platform.system()", ("import platform",), is_str=True),
    # settings of the deployment, read from the environment: a kind of their own (per deployment)
    Source("setting-environ", "PFX104", "os.environ['DEPLOYMENT']", ("import os",), **_SETTING),
    Source("setting-getenv", "PFX104", "os.getenv('REGION', 'eu')", ("import os",), **_SETTING),
    Source("unordered-set-join", "PFX201", "', '.join({'billing', 'shipping', 'returns'})", is_str=True),
    Source(
        "unordered-json-set",
        "PFX201",
        "json.dumps(list({'billing', 'shipping', 'returns'}))",
        ("import json",),
        is_str=True,
    ),
    Source("request-input", "PFX105", "customer_name", param="customer_name", is_str=True),
    Source("stable-sorted-set", None, "', '.join(sorted({'billing', 'shipping', 'returns'}))", is_str=True),
    Source(
        "stable-seeded-random", None, "random.Random(7).choice(GREETINGS)", ("import random",), is_str=True
    ),
    # what is not prompt text at the call (the table's `[[ordering]]` rows and ORM column row): a
    # clock as a sort key or an ORDER BY, a column's default, the time a row is written
    Source(
        "stable-sort-key",
        None,
        "max(EXAMPLES, key=lambda e: time.time() - len(e))",
        ("import time",),
        is_str=True,
    ),
    Source(
        "stable-order-by",
        None,
        "str(db.query(Note.text).order_by(time.time() - Note.ts).first())",
        ("import time", "from myapp.db import Note, db"),
        is_str=True,
    ),
    Source(
        "stable-orm-column-default",
        None,
        "str(Column(DateTime, default=datetime.utcnow, onupdate=datetime.utcnow))",
        ("from datetime import datetime", "from sqlalchemy import Column, DateTime"),
        is_str=True,
    ),
]
SECOND = Source("machine-pid", "PFX104", "os.getpid()", ("import os",))  # the value at W


# --- positions -----------------------------------------------------------------------------------
# The pieces of the text that holds the value, per shape: static text after the value, or none.
SHAPES = {
    "head": [V, "RULES"],
    "middle": ["LEAD", V, "RULES"],
    "tail": ["RULES", V],
    "tool": ["TOOL_DOC", V],
    "pair": [V, W, "RULES"],
    "far": [V, "RULES", W, "RULES"],
}


@dataclass(frozen=True)
class Position:
    name: str
    shape: str  # the shape of the text that holds the value
    needs: str = ""  # the part of the request the row must take
    costs: bool = True  # static text follows the value in the request


POSITIONS = [
    Position("head", "head"),
    Position("middle", "middle"),
    Position("tail", "tail", costs=False),
    Position("before-static-messages", "tail", needs="messages"),  # few-shot messages follow
    Position("later-message", "head", needs="messages"),  # in a user turn, ahead of static text
    Position("tool-description", "tool", needs="tools"),  # the tools go first: the system text follows
    # Two values less than a block apart part the requests as one: one finding, at the first.
    Position("two-close-values", "pair"),
    # Two values a block or more apart: the second costs only what the first does not lose, nothing
    # when the first varies at least as often (os.getpid(), per process, after anything but a date).
    Position("two-values", "far"),
]


# --- the rows of the table -----------------------------------------------------------------------
def _primary(row: SinkModel) -> str:
    """The part a row's text goes to: its system text, else the messages, else a whole prompt, else
    the user's turn, else the tools."""
    if row.decorators:
        return row.returns
    parts = set(row.arguments.values()) | set(row.attributes.values())
    return next(p for p in ("system", "messages", "prompt", "user", "tools") if p in parts)


def _takes(row: SinkModel, part: str) -> bool:
    """Whether a call of the row passes `part` (a class row or a decorated function sends one text)."""
    return not row.decorators and not row.bases and part in row.arguments.values()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class Callee:
    """How a generated module calls a pattern of the table: its imports, module-level setup and the
    expression called."""

    imports: tuple[str, ...]
    setup: tuple[str, ...]
    expr: str


def callee(pattern: str, imports: tuple[str, ...], receiver: str = "client") -> Callee:
    """`.chat.completions.create` is called on a client; a dotted name (`langchain*.PromptTemplate`,
    `litellm.completion`) is imported, its `*` filled in, from the module up to its first
    capitalised name (a class), or up to its last name; `pkg.Llama.__call__` is a call of an object
    `pkg.Llama(...)` builds. A row that applies only where a package is imported imports it."""
    needed = tuple(f"import {name.replace('*', '')}" for name in imports[:1])
    if pattern.startswith("."):
        return Callee(needed, (f"{receiver} = connect()",), receiver + pattern)
    if pattern.endswith(".__call__"):
        built = callee(pattern.removesuffix(".__call__"), imports)
        return Callee(built.imports, (*built.setup, f'llm = {built.expr}("model.gguf")'), "llm")
    names = [part.replace("*", "") or "pkg" for part in pattern.split(".")]
    first_class = next((i for i, n in enumerate(names) if n[:1].isupper()), len(names) - 1)
    module, head, tail = names[:first_class], names[first_class], names[first_class + 1 :]
    if not module:
        module = ["pkg"]
    written = ".".join([head, *tail])
    if first_class == len(names) - 1 and not head[:1].isupper():
        statement, written = f"import {'.'.join(module)}", ".".join([*module, head])
    else:
        statement = f"from {'.'.join(module)} import {head}"
    if imports and not any(fnmatch.fnmatchcase(names[0], i.split(".")[0]) for i in imports):
        return Callee((statement, *needed), (), written)
    return Callee((statement,), (), written)


# --- generated modules ---------------------------------------------------------------------------
Line = tuple[str, frozenset[str]]  # a statement, and the values made on it ("value", "second")
NOTHING: frozenset[str] = frozenset()


@dataclass
class Module:
    """A module being written: its imports, then its lines; `marks` say on which lines each value
    is made (the line a finding on it is expected at, once the imports are counted)."""

    imports: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    marks: dict[str, list[int]] = field(default_factory=dict)  # value -> indexes into `lines`
    # The expression of each value: in a statement of several lines, it is made on the line of it.
    needles: dict[str, str] = field(default_factory=dict)

    def need(self, statements: Iterable[str]) -> None:
        self.imports += [s for s in statements if s not in self.imports]

    def add(self, statement: str = "", marks: frozenset[str] = NOTHING, depth: int = 0) -> None:
        lines = statement.split("\n")
        for mark in marks:
            needle = self.needles.get(mark, "")
            at = next((i for i, line in enumerate(lines) if needle and needle in line), 0)
            self.marks.setdefault(mark, []).append(len(self.lines) + at)
        self.lines += ["    " * depth + line if line else "" for line in lines]

    def constants(self, names: Iterable[str]) -> None:
        for name in names:
            value = CONSTANTS.get(name)
            self.add(f"{name} = {value!r}" if value is not None else f"{name} = {DATA[name]}")

    def text(self) -> str:
        head = sorted(self.imports, key=lambda s: (s.startswith("from "), s))
        return "\n".join([*head, "", *self.lines]) + "\n"

    def line_of(self, mark: str) -> int:
        (index,) = self.marks[mark]
        return len(self.imports) + 2 + index  # after the imports and a blank line, 1-based


def _key(piece: str) -> str:
    return {V: "value", W: "second"}.get(piece, piece.lower())


def _operand(source: Source, piece: str, as_str: bool = False) -> str:
    if piece not in (V, W):
        return piece
    made = source if piece == V else SECOND
    return made.expr if made.is_str or not as_str else f"str({made.expr})"


def _fields(pieces: list[str], opening: str = "{", closing: str = "}") -> str:
    return "\\n".join(opening + _key(p) + closing for p in pieces)


def _keywords(source: Source, pieces: list[str]) -> str:
    return ", ".join(f"{_key(p)}={_operand(source, p)}" for p in pieces)


def _mapping(source: Source, pieces: list[str]) -> str:
    return "{" + ", ".join(f'"{_key(p)}": {_operand(source, p)}' for p in pieces) + "}"


def _fstring(source: Source, pieces: list[str]) -> str:
    return 'f"' + "\\n".join("{" + _operand(source, p) + "}" for p in pieces) + '"'


# The ways text is built in `respond` itself, each in a few variants: the statements that leave it
# in `text` (a value is made on the line its expression is written on), and their imports.
Inline = tuple[list[str], tuple[str, ...]]


def _f_string(src: Source, pieces: list[str], variant: int) -> Inline:
    if variant % 2 == 0:
        return [f"text = {_fstring(src, pieces)}"], ()
    block = "\n".join("    {" + _operand(src, p) + "}" for p in pieces)  # a triple-quoted block
    return [f'text = textwrap.dedent(f"""\\\n{block}\n""")'], ("import textwrap",)


def _percent(src: Source, pieces: list[str], variant: int) -> Inline:
    if variant % 2 == 0:
        values = ", ".join(_operand(src, p) for p in pieces)
        return ['text = "' + "\\n".join("%s" for _ in pieces) + f'" % ({values})'], ()
    return [f'text = "{_fields(pieces, "%(", ")s")}" % {_mapping(src, pieces)}'], ()


def _format_keywords(src: Source, pieces: list[str], variant: int) -> Inline:
    if variant % 2 == 0:
        return [f'text = "{_fields(pieces)}".format({_keywords(src, pieces)})'], ()
    values = ", ".join(_operand(src, p) for p in pieces)
    return ['text = "' + "\\n".join("{}" for _ in pieces) + f'".format({values})'], ()


def _format_mapping(src: Source, pieces: list[str], variant: int) -> Inline:
    if variant % 3 == 0:
        return [f'text = "{_fields(pieces)}".format(**{_mapping(src, pieces)})'], ()
    call = "format(**values)" if variant % 3 == 1 else "format_map(values)"
    return [f"values = {_mapping(src, pieces)}", f'text = "{_fields(pieces)}".{call}'], ()


def _concat(src: Source, pieces: list[str], variant: int) -> Inline:
    operands = [_operand(src, p, as_str=True) for p in pieces]
    if variant % 2 == 0:
        return ["text = " + ' + "\\n" + '.join(operands)], ()
    return [f"text = {operands[0]}"] + [f'text += "\\n" + {o}' for o in operands[1:]], ()


def _join(src: Source, pieces: list[str], variant: int) -> Inline:
    operands = [_operand(src, p, as_str=True) for p in pieces]
    form = variant % 5
    if form == 0:
        return ['text = "\\n".join([' + ", ".join(operands) + "])"], ()
    if form == 1:
        return ['text = "\\n".join((' + ", ".join(operands) + "))"], ()
    if form == 2:
        return [
            f"parts = [{operands[0]}]",
            *(f"parts.append({o})" for o in operands[1:]),
            'text = "\\n".join(parts)',
        ], ()
    if form == 3:  # a generator over the pieces written out
        items = ", ".join(_operand(src, p) for p in pieces)
        return ['text = "".join(f"{part}\\n" for part in (' + items + "))"], ()
    return ['text = "\\n".join(map(str, [' + ", ".join(_operand(src, p) for p in pieces) + "]))"], ()


def _string_template(src: Source, pieces: list[str], variant: int) -> Inline:
    fields, values = _fields(pieces, "$", ""), _keywords(src, pieces)
    if variant % 3 == 0:
        return [f'text = Template("{fields}").substitute({values})'], ("from string import Template",)
    if variant % 3 == 1:
        return [f'text = string.Template("{fields}").substitute({values})'], ("import string",)
    return [f'text = Template("{fields}").safe_substitute({values})'], ("from string import Template",)


INLINE: dict[str, Callable[[Source, list[str], int], Inline]] = {
    "f-string": _f_string,
    "percent": _percent,
    "format-keywords": _format_keywords,
    "format-mapping": _format_mapping,
    "concat": _concat,
    "join": _join,
    "string-template": _string_template,
}
OTHER_MODULE = OTHER.removesuffix(".py")
PASSED = "passed_value"  # the parameter of `respond` a caller in another module fills with the value
# Ways whose text is made once, and when: no parameter of the request can stand in it.
TIMING = {
    "class-attribute": "import",
    "other-module-constant": "import",
    "constructor-attribute": "construction",
}
IN_CLASS = {"self-method", "constructor-attribute"}  # the request is sent from a method


OWNED = ("PFX0", "PFX1", "PFX2")  # PFX003: a generated file that does not parse


def findings(case: Case, root: Path) -> dict[tuple[str, int], str]:
    """The findings of the analysed file of a case written to `root`: (code, line) -> severity."""
    from prefixlint.python import analyze_python
    from prefixlint.settings import Options

    for name, content in case.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content, encoding="utf-8")
    path = root / case.checked
    result = analyze_python(str(path), case.files[case.checked], Options(project_root=str(root)))
    return {(d.code, d.span.line): d.severity.label for d in result.diagnostics if d.code.startswith(OWNED)}


@dataclass
class Case:
    id: str
    files: dict[str, str]
    expected: dict[tuple[str, int], str]  # (code, line) -> severity label
    checked: str = CHECKED  # the file analysed, relative to the project

    def source(self) -> str:
        """The project as text, numbered, for a failure message."""
        out = []
        for name, content in self.files.items():
            out.append(f"--- {name}")
            out += [f"{i:3} {line}" for i, line in enumerate(content.splitlines(), start=1)]
        return "\n".join(out)


class Writer:
    """Writes one case: the checked module (and another module or a prompt file when the way needs
    one), in which `respond()` builds the text one way and sends it at one position of a row's
    request, `turn` choosing among the row's call patterns and argument forms, `variant` among the
    forms of the way."""

    def __init__(
        self, row: SinkModel, source: Source, way: str, position: Position, turn: int, variant: int
    ) -> None:
        self.row, self.source, self.way, self.position = row, source, way, position
        self.turn, self.variant = turn, variant
        self.pieces = SHAPES[position.shape]
        self.main, self.other = Module(), Module()
        self.main.needles = {"value": source.expr, "second": SECOND.expr}
        self.files: dict[str, str] = {}
        self.folder = ""  # of the modules and files, in the project
        self.methods: list[Line] = []  # of `class Assistant`, beside `respond`
        self.body: list[Line] = []  # of `respond`, before the request
        self.params: list[str] = []  # of `respond`, after `question` and a per-request input
        # When the value is made: on each request, once at import or once per object.
        self.timing = "import" if row.bases else TIMING.get(way, "call")

    # What the values need, and where they are made.
    def values_in(self, module: Module) -> None:
        """The imports and data constants the values need, in the module that makes them."""
        made = [self.source, *([SECOND] if W in self.pieces else [])]
        module.need(i for m in made for i in m.imports)
        module.constants(d for d in DATA if any(d in m.expr or any(d in s for s in m.setup) for m in made))

    def setup(self) -> list[Line]:
        """The source's setup statements; a shuffle makes the value."""
        return [
            (s, frozenset({"value"}) if i == self.source.mark_setup else NOTHING)
            for i, s in enumerate(self.source.setup)
        ]

    def made_here(self, in_respond: bool) -> frozenset[str]:
        """The values made on the line of the text's expression: the value (unless a setup line
        makes it, or it is a parameter of `respond` read elsewhere) and the second one."""
        marks = {"second"} if W in self.pieces else set()
        if self.source.mark_setup is None and (in_respond or not self.source.param):
            marks.add("value")
        return frozenset(marks)

    def fills(self) -> list[str]:
        return [p for p in self.pieces if p in (V, W)]

    # The ways.
    def inline(self) -> None:
        statements, imports = INLINE[self.way](self.source, self.pieces, self.variant)
        self.main.need(imports)
        self.values_in(self.main)
        self.body += self.setup()
        made = self.made_here(in_respond=True)
        for statement in statements:
            self.body.append((statement, frozenset(m for m in made if self.main.needles[m] in statement)))

    def template_method(self) -> None:
        """A template of one of the table's template rows, filled in `respond`."""
        rows = template_rows()
        row, pattern_turn = rows[self.turn % len(rows)]
        made = callee(row.calls[pattern_turn % len(row.calls)], row.imports, receiver="templates")
        self.main.need(made.imports)
        for line in made.setup:
            self.main.add(line)
        literal = ' + "\\n" + '.join(f'"{{{_key(p)}}}"' if p in (V, W) else p for p in self.pieces)
        self.main.add(f"TEMPLATE = {made.expr}({', '.join(self.call_arguments(row, {'prompt': literal}))})")
        self.values_in(self.main)
        self.body += self.setup()
        fills = self.fills()
        methods = FILLED_BY[_package(row)]
        if "MessagePromptTemplate." in row.calls[pattern_turn % len(row.calls)]:
            methods = ("format",)  # a message's template is no Runnable: no `invoke`, no `partial`
        filled = {
            "format": f"TEMPLATE.format({_keywords(self.source, fills)})",
            "invoke": f"TEMPLATE.invoke({_mapping(self.source, fills)})",
            "partial": f"TEMPLATE.partial({_keywords(self.source, fills)}).format()",
        }[methods[self.variant % len(methods)]]
        self.body.append((f"text = {filled}", self.made_here(in_respond=True)))

    def function(self) -> None:
        """`build()` returns the text: a helper of this module or another, a method of `Assistant`
        (`self.build()`) or of a `Builder` object."""
        way, param = self.way, self.source.param
        target = self.other if way == "other-module-function" else self.main
        self.values_in(target)
        params = (["self"] if way in ("self-method", "object-method") else []) + (
            [f"{param}: str"] if param else []
        )
        lines = [(f"def build({', '.join(params)}) -> str:", NOTHING)]
        lines += [("    " + s, m) for s, m in self.setup()]
        lines.append((f"    return {_fstring(self.source, self.pieces)}", self.made_here(in_respond=False)))
        if way == "self-method":
            self.methods = lines
        else:
            if way == "object-method":
                lines = [("class Builder:", NOTHING)] + [("    " + s, m) for s, m in lines]
            for s, m in lines:
                target.add(s, m)
            target.add()
        called = {
            "helper": "build",
            "self-method": "self.build",
            "object-method": "Builder().build",
            "other-module-function": "build",
        }[way]
        if way == "object-method" and self.variant % 2:
            self.body.append(("builder = Builder()", NOTHING))
            called = "builder.build"
        if way == "other-module-function":
            called = self.import_other("build")
        if way in ("helper", "object-method") and not param and self.variant % 4 == 2:
            # Called once, at import (`TEXT = build()`): what it makes is made then.
            self.main.add(f"TEXT = {called}()")
            self.main.add()
            self.body.append(("text = TEXT", NOTHING))
            self.timing = "import"
            return
        # A parameter is read where `respond` passes it; a value made in another module is
        # reported where it enters the checked one.
        marks = {"value"} if param else set()
        if way == "other-module-function":
            marks |= {"value"} | ({"second"} if W in self.pieces else set())
        self.body.append((f"text = {called}({param})", frozenset(marks)))

    def import_other(self, name: str) -> str:
        """How the checked module imports `name` from the other one: by name, the module itself,
        relatively (the two in a package), or all its names (`*`)."""
        form = self.variant % 4
        if form == 1:
            self.main.need([f"import {OTHER_MODULE}"])
            return f"{OTHER_MODULE}.{name}"
        if form == 3:
            self.main.need([f"from {OTHER_MODULE} import *"])
            return name
        if form == 2:
            self.folder = "support/"
            self.files["__init__.py"] = ""
        self.main.need([f"from {'.' if form == 2 else ''}{OTHER_MODULE} import {name}"])
        return name

    def class_attribute(self) -> None:
        self.values_in(self.main)
        self.main.add("class Settings:")
        for s, m in self.setup():
            self.main.add(s, m, depth=1)
        self.main.add(
            f"TEXT = {_fstring(self.source, self.pieces)}", self.made_here(in_respond=False), depth=1
        )
        self.main.add()
        self.body.append((f"text = {'Settings' if self.variant % 2 == 0 else 'Settings()'}.TEXT", NOTHING))

    def constructor_attribute(self) -> None:
        self.values_in(self.main)
        param = self.source.param
        self.methods = [(f"def __init__(self{', ' + param + ': str' if param else ''}) -> None:", NOTHING)]
        self.methods += [("    " + s, m) for s, m in self.setup()]
        self.methods.append(
            (f"    self.text = {_fstring(self.source, self.pieces)}", self.made_here(in_respond=False))
        )
        self.body.append(("text = self.text", NOTHING))

    def other_module_constant(self) -> None:
        self.values_in(self.other)
        for line, _ in self.setup():
            self.other.add(line)
        self.other.add(f"TEXT = {_fstring(self.source, self.pieces)}")
        # Made in another module, the values are reported where they enter the checked one.
        made = frozenset({"value", *(["second"] if W in self.pieces else [])})
        self.body.append((f"text = {self.import_other('TEXT')}", made))

    def passed_from_another_module(self) -> None:
        """`respond()` builds the text with a parameter; a function of another module, which holds
        no prompt text of its own, makes the value and passes it: reported where it enters."""
        src = self.source
        self.values_in(self.main)  # the second value is made here
        self.params.append(f"{PASSED}: str")
        passed = replace(src, expr=PASSED, imports=(), setup=(), mark_setup=None)
        made = frozenset({"value", *(["second"] if W in self.pieces else [])})
        self.main.needles["value"] = PASSED
        self.body.append((f"text = {_fstring(passed, self.pieces)}", made))
        checked = CHECKED.removesuffix(".py")
        # by name, or through the module (`import app`, `app.respond(...)`)
        called = f"{checked}.respond" if self.variant % 2 else "respond"
        self.other.need(
            [*src.imports, f"import {checked}" if self.variant % 2 else f"from {checked} import respond"]
        )
        self.other.constants(d for d in DATA if d in src.expr or any(d in line for line in src.setup))
        self.other.add()
        self.other.add("def ask_now(question):")
        for line in src.setup:
            self.other.add(line, depth=1)
        self.other.add(f"return {called}(question, {src.expr})", depth=1)

    def prompt_file(self) -> None:
        """The static text in a file the code reads by a path it writes; the values filled in here."""
        add, need = self.main.add, self.main.need
        reader = self.variant % 10
        jinja = reader in (6, 7)  # a Jinja template, rendered with the values
        field = "{{{{ {} }}}}" if jinja else "{{{}}}"
        content = "\n".join(field.format(_key(p)) if p in (V, W) else CONSTANTS[p] for p in self.pieces)
        if reader == 6:
            self.files["prompt.j2"] = content + "\n"
            need(["import jinja2", "from pathlib import Path"])
            add("LOADER = jinja2.FileSystemLoader(Path(__file__).parent)")
            add('TEMPLATE = jinja2.Environment(loader=LOADER).get_template("prompt.j2")')
        elif reader == 7:
            self.files["prompt.jinja"] = content + "\n"
            need(["from jinja2 import Template", "from pathlib import Path"])
            add('TEMPLATE = Template((Path(__file__).parent / "prompt.jinja").read_text())')
        elif reader == 3:
            indented = "\n".join("    " + line for line in content.splitlines())
            self.files["prompts.yaml"] = f"support:\n  system: |\n{indented}\n"
            need(["import yaml", "from pathlib import Path"])
            add('PROMPTS = yaml.safe_load((Path(__file__).parent / "prompts.yaml").read_text())')
            add('TEMPLATE = PROMPTS["support"]["system"]')
        elif reader == 8:  # the path is a config value with a literal default, read by the project's helper
            indented = "\n".join("  " + line for line in content.splitlines())
            self.files["prompts.yaml"] = f"system: |\n{indented}\n"
            need(["import os", "import yaml"])
            add("def read_yaml(path):\n    with open(path) as file:\n        return yaml.safe_load(file)")
            add()
            add("class Settings:\n    def get_path(self, key, default):")
            add("return os.environ.get(key) or default", depth=2)
            add()
            add("HERE = os.path.dirname(os.path.abspath(__file__))")
            add('PATH = Settings().get_path("PROMPT_FILE", os.path.join(HERE, "prompts.yaml"))')
            add('TEMPLATE = read_yaml(PATH)["system"]')
        elif reader == 9:  # `os.getenv` with a literal default path
            self.files["prompt.md"] = content + "\n"
            need(["import os", "from pathlib import Path"])
            add('TEMPLATE = Path(os.getenv("PROMPT_FILE", Path(__file__).parent / "prompt.md")).read_text()')
        elif reader == 5:
            self.files["prompts.json"] = json.dumps({"support": {"system": content}}, indent=2) + "\n"
            need(["import json", "import os"])
            add('with open(os.path.join(os.path.dirname(__file__), "prompts.json")) as handle:')
            add('TEMPLATE = json.load(handle)["support"]["system"]', depth=1)
        else:
            self.files["prompt.txt"] = content + "\n"
            if reader == 0:
                need(["from pathlib import Path"])
                add('TEMPLATE = (Path(__file__).parent / "prompt.txt").read_text(encoding="utf-8")')
            elif reader == 1:
                need(["import os"])
                add("HERE = os.path.dirname(os.path.abspath(__file__))")
                add('TEMPLATE = open(os.path.join(HERE, "prompt.txt"), encoding="utf-8").read()')
            elif reader == 2:
                add('with open("prompt.txt", encoding="utf-8") as handle:')
                add("TEMPLATE = handle.read()", depth=1)
            else:
                need(["from pathlib import Path"])
                add('TEMPLATE = Path(__file__).with_name("prompt.txt").read_text()')
        self.main.add()
        self.values_in(self.main)
        self.body += self.setup()
        fill = "render" if jinja else "format"
        self.body.append(
            (f"text = TEMPLATE.{fill}({_keywords(self.source, self.fills())})", self.made_here(True))
        )

    # The request.
    def arguments(self) -> list[str]:
        """The arguments of the row's call for the position, the text (`text`) where the value is."""
        row, pos = self.row, self.position.name
        primary = _primary(row)
        parts: dict[str, str] = {}
        holder = "RULES" if pos in ("later-message", "tool-description") else "text"
        messages: list[str] = []
        if primary == "messages":
            messages.append('{"role": "system", "content": ' + holder + "}")
        else:
            parts[primary] = holder
        if pos == "later-message":
            messages.append('{"role": "user", "content": text}')
        else:
            if pos == "before-static-messages":
                messages += [
                    '{"role": "user", "content": EXAMPLE_Q}',
                    '{"role": "assistant", "content": EXAMPLE_A}',
                ]
            messages.append('{"role": "user", "content": question}')
        if _takes(row, "messages"):
            parts["messages"] = "[" + ", ".join(messages) + "]"
        elif _takes(row, "user") and primary != "user":
            parts["user"] = "question"
        if pos == "tool-description":
            parts["tools"] = (
                '[{"type": "function", "function": {"name": "lookup_order", "description": text, '
                '"parameters": {"type": "object", "properties": {}}}}]'
            )
        return self.call_arguments(row, {p: parts[p] for p in PARTS if p in parts})

    def call_arguments(self, row: SinkModel, parts: dict[str, str]) -> list[str]:
        """The arguments that pass each part to a call of the row: by keyword, by position (every
        other case, where the row takes both), or as a field of an argument (`config.tools`: in a
        dict, a call's keywords or JSON, in turn)."""
        positional: dict[int, str] = {}
        keywords: list[str] = []
        fields: dict[str, list[tuple[str, str]]] = {}
        for part, value in parts.items():
            keys = [k for k, p in row.arguments.items() if p == part]
            named = [k for k in keys if not k.isdigit() and k != "*"]
            places = sorted(int(k) for k in keys if k.isdigit()) or ([0] if "*" in keys else [])
            if places and (not named or self.turn % 2):
                positional[places[0]] = value
            elif "." in named[0]:
                outer, inner = named[0].split(".", 1)
                fields.setdefault(outer, []).append((inner, value))
            else:
                keywords.append(f"{named[0]}={value}")
        for outer, items in fields.items():
            mapping = "{" + ", ".join(f'"{k}": {v}' for k, v in items) + "}"
            form = self.turn % 3
            if form == 1:
                self.main.need(["import json"])
                mapping = f"json.dumps({mapping})"
            elif form == 2:
                mapping = "Options(" + ", ".join(f"{k}={v}" for k, v in items) + ")"
            keywords.append(f"{outer}={mapping}")
        last = max(positional, default=-1)
        return [positional.get(i, "None") for i in range(last + 1)] + keywords

    def write(self) -> Case:
        main, row = self.main, self.row
        main.constants(c for c in CONSTANTS if c != "LEAD" or "LEAD" in self.pieces)
        if self.way in ("other-module-function", "other-module-constant"):
            self.other.constants(p for p in self.pieces if p not in (V, W))
        main.add()
        if self.way in INLINE:
            self.inline()
        elif self.way in ("helper", "self-method", "object-method", "other-module-function"):
            self.function()
        else:
            getattr(self, self.way.replace("-", "_"))()
        patterns = row.decorators or row.bases or row.calls
        made = callee(
            patterns[self.turn % len(patterns)], row.imports, "agent" if row.decorators else "client"
        )
        main.need(made.imports)
        for line in made.setup:
            main.add(line)
        main.add()
        if row.bases:
            self.prompt_class(made.expr)
        else:
            self.respond(made.expr)
        files = {CHECKED: main.text(), **self.files}
        if self.other.lines:
            files[OTHER] = self.other.text()
        name = f"{slug(row.name)}/{self.source.name}/{self.way}/{self.position.name}"
        folder = self.folder
        return Case(name, {folder + k: v for k, v in files.items()}, self.expected(), folder + CHECKED)

    def prompt_class(self, base: str) -> None:
        """A class row: a subclass whose attribute (or a keyword of the call an attribute is
        assigned) holds the text, built in the class body."""
        keys = [k for k, p in self.row.attributes.items() if p == _primary(self.row) and k != "__doc__"]
        key = keys[self.turn % len(keys)]
        owner, _, field = key.partition(".")
        self.main.add(f"class Support({base}):")
        for s, m in self.body:
            self.main.add(s, m, depth=1)
        attribute = "answer" if owner == "*" else owner
        self.main.add(f"{attribute} = InputField({field}=text)" if field else f"{owner} = text", depth=1)

    def respond(self, called: str) -> None:
        """`respond()`, which sends the request (or, decorated, returns the text)."""
        main, row = self.main, self.row
        depth = 0
        params = [
            "question: str",
            *([f"{self.source.param}: str"] if self.source.param else []),
            *self.params,
        ]
        if self.way in IN_CLASS:
            main.add("class Assistant:")
            for s, m in self.methods:
                main.add(s, m, depth=1)
            main.add()
            depth, params = 1, ["self", *params]
        if row.decorators:
            main.add(f"@{called}")
        main.add(f"def respond({', '.join(params)}):", depth=depth)
        for s, m in self.body:
            main.add(s, m, depth=depth + 1)
        if row.decorators:
            main.add("return text", depth=depth + 1)
        elif self._as_keyword_dict():
            # `kwargs = dict(...)`, the last entry set afterwards, `called(**kwargs)`: the request
            # as a dict of keywords built where it is sent (a way a call receives its arguments)
            *first, last = self.arguments()
            main.add("kwargs = dict(", depth=depth + 1)
            for argument in first:
                main.add(argument + ",", depth=depth + 2)
            main.add(")", depth=depth + 1)
            key, _, value = last.partition("=")
            main.add(f'kwargs["{key}"] = {value}', depth=depth + 1)
            main.add(f"return {called}(**kwargs)", depth=depth + 1)
        else:
            main.add(f"return {called}(", depth=depth + 1)
            for argument in self.arguments():
                main.add(argument + ",", depth=depth + 2)
            main.add(")", depth=depth + 1)

    def _as_keyword_dict(self) -> bool:
        """Every fourth case of a row whose arguments here are all keywords, the text not a template
        the call fills with its own keywords."""
        row = self.row
        if self.turn % 4 != 3 or row.templates or row.fills:
            return False
        arguments = self.arguments()
        return bool(arguments) and all(re.match(r"[A-Za-z_]\w*=", a) for a in arguments)

    def expected(self) -> dict[tuple[str, int], str]:
        """The finding the loss rule gives this case: at the first value that parts the requests."""
        src, pos = self.source, self.position
        # A constructor's parameters configure the object: a value passed there is no input.
        counts = src.code is not None and not (self.way == "constructor-attribute" and src.param)
        if counts:
            mark, code = "value", src.code
        elif W in self.pieces:
            mark, code = "second", SECOND.code
        else:
            return {}
        assert code is not None
        severity = RULES[code].default_severity
        if not pos.costs:
            # Nothing static follows the value where the request ends, or where the user's turn
            # (a per-request input) comes next; after a piece of a request, what follows is built
            # elsewhere: at most a warning, and nothing for a value meant to vary.
            row = self.row
            followed_by_input = _takes(row, "messages") or _takes(row, "user") and _primary(row) != "user"
            if row.whole_request or followed_by_input or src.param:
                return {}
            severity = min(severity, Severity.WARNING)
        daily = src.daily if mark == "value" else SECOND.daily
        if self.timing != "call" or daily:  # made once per process, object or day: a lower loss
            severity = Severity(max(Severity.INFO, severity - 1))
        if mark == "value" and src.param:
            severity = Severity.INFO  # a per-request input known by its name: a guess
        if mark == "value" and src.deployment:
            return self._beside_a_setting()
        found = {(code, self.main.line_of(mark)): severity.label}
        if mark == "value" and pos.shape == "far" and daily and self.timing == "call":
            # a date read per call changes once a day, the pid once per process: neither covers the
            # other, so the second costs the requests of one day that differ in process
            found[(SECOND.code, self.main.line_of("second"))] = RULES[SECOND.code].default_severity.label
        elif mark == "value" and pos.shape == "far" and self._more_often_than_a_process():
            # the first parts every request the pid parts, and more often: the pid costs nothing on
            # top of it, a co-cause, reported at info
            found[(SECOND.code, self.main.line_of("second"))] = Severity.INFO.label
        return found

    def _beside_a_setting(self) -> dict[tuple[str, int], str]:
        """A setting of the deployment is at most info. The pid after it changes per process, more
        often: the requests of one deployment part there, its own finding (lower when made once per
        process or object), and the setting loses only the text up to it: nothing when the pid is
        less than a block after it, the static text between when it is further."""
        assert self.source.code is not None
        found = {(self.source.code, self.main.line_of("value")): Severity.INFO.label}
        if W not in self.pieces:
            return found
        if self.position.shape == "pair":
            found = {}
        second = RULES[SECOND.code].default_severity
        if self.timing != "call":
            second = Severity(max(Severity.INFO, second - 1))
        found[(SECOND.code, self.main.line_of("second"))] = second.label
        return found

    def _more_often_than_a_process(self) -> bool:
        """Whether the value changes more often than once per process (per call or per object, and
        not a per-machine value or an unordered iteration, which change per process themselves)."""
        per_process = self.source.code in ("PFX104", "PFX201")
        return not per_process and (
            self.timing == "call" and not self.source.daily or self.timing == "construction"
        )


# How the template objects of a package are filled with values by name (`{value}` placeholders): the
# table does not say, so the template rows of other packages (Jinja's `{{ value }}` and `.run()` of
# Haystack, Semantic Kernel's `{{$value}}`) are not used to build text here (they are rows still).
FILLED_BY = {"langchain": ("format", "invoke", "partial"), "llama_index": ("format", "partial")}


def _package(row: SinkModel) -> str:
    return row.calls[0].split(".")[0].replace("*", "") if row.calls else ""


@cache
def template_rows() -> list[tuple[SinkModel, int]]:
    """The table's template rows that take a string template filled by name, with each of their call
    patterns."""
    return [
        (row, i)
        for row in builtin().sinks
        if row.templates and "prompt" in row.arguments.values() and _package(row) in FILLED_BY
        for i in range(len(row.calls))
    ]


# --- which combinations exist, and which are generated -------------------------------------------
WAYS = [
    *INLINE,
    "template-method",
    "helper",
    "self-method",
    "object-method",
    "class-attribute",
    "constructor-attribute",
    "other-module-function",
    "other-module-constant",
    "passed-from-another-module",
    "prompt-file",
]


def appends_after(row: SinkModel) -> bool:
    """Whether the library appends text after whatever a call of the row is given (an `[[appended]]`
    row landing at the end, for every call): nothing it sends ends with the value, so it has no
    tail; tests/test_generated_tail.py generates what follows there."""
    calls = set(row.calls)
    return any(a.lands == "end" and not a.keywords and calls & set(a.calls) for a in builtin().appended)


def valid(row: SinkModel, source: Source, way: str, position: Position) -> bool:
    if position.needs and not _takes(row, position.needs):
        return False
    if not position.costs and appends_after(row):
        return False
    if (row.decorators or row.bases) and way in IN_CLASS:
        return False  # the decorated function or the class is the request: no class around it
    if row.bases and source.param:
        return False  # a class body has no parameters
    if source.param and TIMING.get(way) == "import":
        return False  # a parameter is read inside the function, not at import
    if way == "passed-from-another-module" and (
        source.param or row.decorators or row.bases or not source.code
    ):
        # A caller passes what it makes; a decorated function's callers are the library's. What a
        # stable call elsewhere makes (`sorted(tools)`) cannot be told from an input read there:
        # the parameter stays a guess, at info (evaluate/parameters.passed_elsewhere).
        return False
    return not (way == "template-method" and not template_rows())


@dataclass(frozen=True)
class Cover:
    """Pairs to cover: every valid pair of a value of dimension `a` and one of `b`, or of the
    classes the values are in (`of_a`, `of_b`: a source's family, a way's group)."""

    a: int
    b: int
    of_a: Callable[[object], object] | None = None  # None: each value is a class of its own
    of_b: Callable[[object], object] | None = None


def all_pairs(
    dims: list[list[object]], ok: Callable[..., bool], covers: list[Cover]
) -> list[tuple[object, ...]]:
    """Tuples, one value of each dimension, that together hold every valid pair the `covers` ask
    for, greedily and deterministically: each tuple starts from the first pair not yet held and
    takes, dimension by dimension, the value that holds the most pairs not yet held (the least used
    first) and still makes a valid tuple."""
    index = [range(len(d)) for d in dims]
    tuples = zip(itertools.product(*index), itertools.product(*dims), strict=True)
    full = {t for t, values in tuples if ok(*values)}
    # The class of each value, per cover and side (as a position in a sorted list: comparable).
    classes = []
    for c in covers:
        sides = []
        for dim, of in ((c.a, c.of_a), (c.b, c.of_b)):
            names = [of(v) if of is not None else i for i, v in enumerate(dims[dim])]
            order = {n: i for i, n in enumerate(dict.fromkeys(names))}
            sides.append([order[n] for n in names])
        classes.append(sides)

    def held(t: dict[int, int]) -> set[tuple[int, int, int]]:
        return {
            (k, classes[k][0][t[c.a]], classes[k][1][t[c.b]])
            for k, c in enumerate(covers)
            if c.a in t and c.b in t
        }

    pairs = {p for t in full for p in held(dict(enumerate(t)))}
    used = [[0] * len(d) for d in dims]
    out = []
    for first in sorted(pairs):
        if first not in pairs:
            continue
        c = covers[first[0]]
        allowed = {
            c.a: [i for i in index[c.a] if classes[first[0]][0][i] == first[1]],
            c.b: [i for i in index[c.b] if classes[first[0]][1][i] == first[2]],
        }
        dims_order = [c.a, c.b, *(k for k in range(len(dims)) if k not in (c.a, c.b))]
        chosen = _complete({}, dims_order, allowed, index, full, pairs, used, held)
        assert chosen, first
        pairs -= held(dict(enumerate(chosen)))
        for k, v in enumerate(chosen):
            used[k][v] += 1
        out.append(tuple(dims[k][v] for k, v in enumerate(chosen)))
    return out


def _complete(
    fixed: dict[int, int],
    dims_order: list[int],
    allowed: dict[int, list[int]],
    index: list[range],
    full: set[tuple[int, ...]],
    pairs: set[tuple[int, int, int]],
    used: list[list[int]],
    held: Callable[[dict[int, int]], set[tuple[int, int, int]]],
) -> tuple[int, ...]:
    """A valid tuple extending `fixed` along `dims_order`, each value the one that holds the most
    pairs not held yet; () if there is none."""
    if len(fixed) == len(index):
        t = tuple(fixed[k] for k in range(len(index)))
        return t if t in full else ()
    k = dims_order[len(fixed)]
    before = held(fixed) & pairs

    def rank(v: int) -> tuple[int, int, int]:
        return (-len((held({**fixed, k: v}) & pairs) - before), used[k][v], v)

    for v in sorted(allowed.get(k, index[k]), key=rank):
        found = _complete({**fixed, k: v}, dims_order, allowed, index, full, pairs, used, held)
        if found:
            return found
    return ()


def _family(source: object) -> object:
    return source.name.split("-")[0]  # type: ignore[attr-defined]


WAY_GROUPS = {
    **dict.fromkeys(INLINE, "inline"),
    "template-method": "template",
    **dict.fromkeys(["helper", "self-method", "object-method"], "function"),
    **dict.fromkeys(["class-attribute", "constructor-attribute"], "attribute"),
    **dict.fromkeys(
        ["other-module-function", "other-module-constant", "passed-from-another-module"], "module"
    ),
    "prompt-file": "file",
}


def cases() -> list[Case]:
    """The combinations of row, source, way and position, chosen pairwise, where static text
    follows the value (a finding) and at the tail, where it does not (silence)."""
    rows = list(builtin().sinks)
    costing = [p for p in POSITIONS if p.costs]
    ending = [p for p in POSITIONS if not p.costs]
    # Each row with each family of sources, each group of ways and each position it has; each
    # source with each way and position, each way at each position. At the tail, where nothing is
    # lost: each row, and each source built each way.
    r, s, w, p = range(4)  # the dimensions
    where_lost = [
        Cover(r, s, of_b=_family),
        Cover(r, w, of_b=WAY_GROUPS.__getitem__),
        Cover(r, p),
        Cover(s, w),
        Cover(s, p),
        Cover(w, p),
    ]
    at_tail = [Cover(r, p), Cover(s, w)]
    chosen = all_pairs([rows, SOURCES, WAYS, costing], valid, where_lost)
    chosen += all_pairs([rows, SOURCES, WAYS, ending], valid, at_tail)
    turns: dict[str, int] = {}
    variants: dict[str, int] = {}
    out = []
    for row, source, way, position in chosen:
        turn, variant = turns.get(row.name, 0), variants.get(way, 0)
        turns[row.name], variants[way] = turn + 1, variant + 1
        out.append(Writer(row, source, way, position, turn, variant).write())
    return out


# --- requests sent through values (issue 28, point 2) -------------------------------------------
# A sink of the table reached where it is not the called expression: passed to a retrier, a thread
# or an executor, bound by `functools.partial` or to a name, handed to a project forwarder or to a
# callable parameter, its keywords built by a helper, or a method of a class picked from a
# registry. Each mechanism sends `text` (a clock ahead of RULES) over several rows of the table: a
# finding at the clock's line, warning or above. The same text passed through the same mechanism to
# a logger is no request: silence, or info for the message literals that are candidates only.
@dataclass(frozen=True)
class Mechanism:
    """How `respond()` reaches the callable: `lines(called, arguments)` writes the statements after
    `text = ...` in `respond` (its last a `return`), `prelude` the module code before it, and
    `inside`: the text is built in `think()` (a callable parameter), not in `respond()`."""

    name: str
    imports: tuple[str, ...]
    prelude: tuple[str, ...]
    lines: Callable[[str, list[str]], list[str]]
    keywords_only: bool = False  # the arguments become a dict's keys
    inside: bool = False


def _args(arguments: list[str]) -> str:
    return ", ".join(arguments)


def _as_dict(arguments: list[str]) -> str:
    return "{" + ", ".join('"{}": {}'.format(*a.split("=", 1)) for a in arguments) + "}"


MECHANISMS = [
    Mechanism(
        "library-retrier",
        ("from retrying_helpers import retry_call",),
        (),
        lambda sink, a: [f"return retry_call({sink}, {_args(a)})"],
    ),
    Mechanism(
        "project-forwarder",
        (),
        ("def with_retry(fn, *args, **kwargs):", "    return fn(*args, **kwargs)", ""),
        lambda sink, a: [f"return with_retry({sink}, {_args(a)})"],
    ),
    Mechanism(
        "to-thread",
        ("import asyncio",),
        (),
        lambda sink, a: [f"return asyncio.to_thread({sink}, {_args(a)})"],
    ),
    Mechanism(
        "partial-called",
        ("import functools",),
        (),
        lambda sink, a: [f"return functools.partial({sink}, {_args(a)})()"],
    ),
    Mechanism(
        "executor-partial",
        ("import asyncio", "from functools import partial"),
        (),
        lambda sink, a: [
            "loop = asyncio.get_running_loop()",
            f"return loop.run_in_executor(None, partial({sink}, {_args(a)}))",
        ],
    ),
    Mechanism("bound-name", (), (), lambda sink, a: [f"send = {sink}", f"return send({_args(a)})"]),
    Mechanism(
        "kwargs-helper",
        (),
        (),
        lambda sink, a: [f"return {sink}(**build_request(question, text))"],
        keywords_only=True,
    ),
    Mechanism(
        "callable-parameter",
        (),
        (),
        lambda sink, a: [f"return think({sink}, question)"],
        inside=True,
    ),
    Mechanism(
        "registry",
        (),
        (),
        lambda sink, a: ["return PROVIDERS[kind]().execute(question, text)"],
    ),
]
ROWS_PER_MECHANISM = 6


def _value_rows() -> list[SinkModel]:
    """The rows a request can be sent to through a value: called by a method chain (`.a.b`), the
    text where the system text or the messages go, a whole request."""
    return [
        r
        for r in builtin().sinks
        if not r.decorators
        and not r.bases
        and r.whole_request
        and any(c.startswith(".") for c in r.calls)
        and _primary(r) in ("system", "messages")
    ]


def value_call_cases() -> list[Case]:
    """Each mechanism over ROWS_PER_MECHANISM rows (in turn, so that together they take every row),
    to a sink (a finding) and, for two of them, to a logger (no request)."""
    rows = _value_rows()
    out = []
    for k, mechanism in enumerate(MECHANISMS):
        for j in range(ROWS_PER_MECHANISM):
            row = rows[(k * ROWS_PER_MECHANISM + j) % len(rows)]
            out.append(_value_case(mechanism, row, sink=True))
            if j < 2:
                out.append(_value_case(mechanism, row, sink=False))
    return out


def _value_case(mechanism: Mechanism, row: SinkModel, sink: bool) -> Case:
    writer = Writer(row, SOURCES[0], "f-string", POSITIONS[0], turn=0, variant=0)
    arguments = writer.arguments()
    pattern = next(c for c in row.calls if c.startswith("."))
    made = callee(pattern, row.imports)
    main = Module(needles={"value": SOURCES[0].expr})
    main.need([*SOURCES[0].imports, *made.imports, *mechanism.imports, *writer.main.imports])
    called = f"{made.expr}" if sink else "logger.info"
    if not sink:
        main.need(["import logging"])
    main.constants(["RULES"])
    main.add()
    for line in made.setup:
        main.add(line)
    if not sink:
        main.add("logger = logging.getLogger(__name__)")
    main.add()
    for line in mechanism.prelude:
        main.add(line)
    value = ('text = f"{datetime.now()}\\n{RULES}"', frozenset({"value"}))
    if mechanism.keywords_only:
        main.add("def build_request(question, text):")
        main.add(f"return {_as_dict(arguments)}", depth=1)
        main.add()
    if mechanism.inside:
        main.add("def think(invoker, question):")
        main.add(*value, depth=1)
        main.add(f"return invoker({_args(arguments)})", depth=1)
        main.add()
    if mechanism.name == "registry":
        main.add("class Provider:")
        main.add("def execute(self, question, text):", depth=1)
        main.add(f"return {called}({_args(arguments)})", depth=2)
        main.add()
        main.add('PROVIDERS = {"main": Provider}')
        main.add()
    params = "question, kind" if mechanism.name == "registry" else "question"
    main.add(f"def respond({params}):")
    if not mechanism.inside:
        main.add(*value, depth=1)
    for line in mechanism.lines(called, arguments):
        main.add(line, depth=1)
    expected = {("PFX101", main.line_of("value")): "warning+"} if sink else {}
    name = f"through/{mechanism.name}/{slug(row.name)}/{'sink' if sink else 'logger'}"
    return Case(name, {CHECKED: main.text()}, expected)
