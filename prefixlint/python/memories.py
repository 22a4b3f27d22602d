"""PFX401 for a conversation whose history a framework's memory rewrites (`[[memory]]` rows).

A sliding window, a token window, a summary regenerated over a limit: each hands the model a
history that, once full, does not extend the previous turn's, so every turn recomputes what is
kept. What each memory does is data (prefixlint/data/frameworks.toml); this module tells where
application code reaches one on a conversation's per-turn path, for python/history/ (sent.py), which follows
what a request sends:

- a read of a memory object built by a row (`memory.load_memory_variables({})["history"]`,
  `memory.chat_memory.messages`, `await ctx.get_messages()`) in what is sent;
- the result of a row's function (`trim_messages(history, max_tokens=...)`) in what is sent;
- a memory passed to what runs the conversation (`ConversationChain(memory=memory)`), or an
  argument of it that rewrites (`Agent(history_processors=[...])`).

Append-only rows are silent: they keep the prefix. A read made once (module level, no loop, or
in a constructor) is silent too: no turn follows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.core.findings import Diagnostic, Severity, Span
from prefixlint.python.cstwalk import nodes as _nodes  # libcst's `children` is ~10x slower
from prefixlint.python.frameworks import Frameworks, MemoryModel, written_chain

if TYPE_CHECKING:
    from prefixlint.python.scopes import ModuleIndex

_ONCE = ("__init__", "__post_init__", "reset", "clear")  # run once, before any turn (as history/walk.py)


@dataclass(frozen=True)
class Reach:
    """A memory reached by a request: the row, the node reported, the call that built it."""

    row: MemoryModel
    node: cst.CSTNode
    built: cst.Call
    how: str  # what the finding quotes: `memory.load_memory_variables({})`, `memory=memory`


def per_turn(fn: cst.FunctionDef | None, loops: tuple[cst.CSTNode, ...]) -> bool:
    """Whether code runs on each turn: in a loop, or in a function other than a constructor (a
    handler, a `chat()` method); module-level code outside a loop runs once."""
    return bool(loops) or (fn is not None and fn.name.value not in _ONCE)


def built_by(
    index: ModuleIndex, frameworks: Frameworks, node: cst.BaseExpression, depth: int = 0
) -> cst.Call | None:
    """The call of a memory row that built the object `node` names (itself, a name or `self.x`
    assigned it, either side of `given or default`, what a keyed store was given under the key it
    is read by: `ctx.store.get("memory")` after `ctx.store.set("memory", m)`), if any."""
    value = node if isinstance(node, cst.Call) else index.assigned(node)
    if isinstance(value, cst.Await):
        value = value.expression
    if depth > 4:
        return None
    if value is None and isinstance(node, cst.Name):
        for given in _given_as(index, node):  # `self._memory = memory`, a constructor's parameter
            found = built_by(index, frameworks, given, depth + 1)
            if found is not None:
                return found
        return None
    if value is None:
        return None
    if isinstance(value, cst.BooleanOperation):
        return built_by(index, frameworks, value.left, depth + 1) or built_by(
            index, frameworks, value.right, depth + 1
        )
    if not isinstance(value, cst.Call):
        return built_by(index, frameworks, value, depth + 1) if isinstance(value, cst.Name) else None
    if row_built(index, frameworks, value) is not None:
        return value
    for stored in _stored_under(index, value):
        found = built_by(index, frameworks, stored, depth + 1)
        if found is not None:
            return found
    return None


def _given_as(index: ModuleIndex, name: cst.Name) -> list[cst.BaseExpression]:
    """A parameter of a constructor, `__init__(self, memory)`: what the class's own methods give
    it (`cls(memory=memory)` in `from_defaults`), each read where it is given."""
    scope = index.scope_for(name)
    fn, cls = scope.node, scope.cls
    if not (isinstance(fn, cst.FunctionDef) and fn.name.value == "__init__" and cls is not None):
        return []
    if name.value not in scope.params:
        return []
    out = []
    for call in _nodes(cls.body, cst.Call):
        if isinstance(call.func, cst.Name) and call.func.value in ("cls", cls.name.value):
            out += [a.value for a in call.args if a.keyword is not None and a.keyword.value == name.value]
    return [v for v in out if isinstance(v, cst.Name) and v.value == name.value or isinstance(v, cst.Call)]


def row_built(index: ModuleIndex, frameworks: Frameworks, call: cst.Call) -> MemoryModel | None:
    """The row a call builds: a row's call, or `memory_cls.from_defaults(...)` where
    `memory_cls: Type[BaseMemory] = Memory` is a parameter (the row of its default)."""
    found = frameworks.match_memory(index, call)
    func = call.func
    receiver = func.value if isinstance(func, cst.Attribute) else None
    if found is not None or not isinstance(receiver, cst.Name):
        return found
    scope = index.scope_for(receiver)
    fn = scope.node
    if receiver.value not in scope.params or not isinstance(fn, cst.FunctionDef):
        return None
    p = fn.params
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        if param.name.value == receiver.value and param.default is not None:
            return frameworks.memory_class(index, param.default)
    return None


def _stored_under(index: ModuleIndex, read: cst.Call) -> list[cst.BaseExpression]:
    """`store.get("key")`: what this module gives `store.set("key", value)` (the same receiver as
    written, the same literal key)."""
    from prefixlint.python.scopes import string_value

    func = read.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "get" and read.args):
        return []
    key = read.args[0].value
    if not isinstance(key, cst.SimpleString):
        return []
    owner, wanted = written_chain(func.value), string_value(key)
    out = []
    for call in _set_calls(index):
        f = call.func
        if (
            isinstance(f, cst.Attribute)
            and len(call.args) >= 2
            and written_chain(f.value) == owner
            and isinstance(call.args[0].value, cst.SimpleString)
            and string_value(call.args[0].value) == wanted
        ):
            out.append(call.args[1].value)
    return out


def read_of(index: ModuleIndex, frameworks: Frameworks, node: cst.BaseExpression) -> Reach | None:
    """A read of a memory object that gives its messages (`memory.get()`, `memory.buffer`,
    `memory.chat_memory.messages`), or a call of a row's function (`trim_messages(...)`)."""
    if isinstance(node, cst.Call):
        func = node.func
        last = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
        if last in frameworks.memory_words:
            row = frameworks.match_memory(index, node)
            if row is not None and row.function:
                return Reach(row, node, node, f"`{_code(node.func)}()`")
        if not isinstance(func, cst.Attribute) or last not in frameworks.memory_reads:
            return None
        receiver, path = func.value, func.attr.value
    elif isinstance(node, cst.Attribute) and node.attr.value in frameworks.memory_reads:
        receiver, path = node.value, node.attr.value
    else:
        return None
    while True:  # `memory.chat_memory.messages`: try `messages`, then `chat_memory.messages`
        built = built_by(index, frameworks, receiver)
        row = row_built(index, frameworks, built) if built is not None else None
        if row is not None and path in row.reads:
            return Reach(row, node, built, f"`{written_chain(receiver)}.{path}`")
        if not isinstance(receiver, cst.Attribute):
            return None
        receiver, path = receiver.value, f"{receiver.attr.value}.{path}"


def passed_in(index: ModuleIndex, frameworks: Frameworks, call: cst.Call) -> Reach | None:
    """A memory given to what runs the conversation (`ConversationChain(memory=m)`), or the call
    of a `keyword` row that passes its rewriting argument (`Agent(history_processors=[...])`)."""
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    if not keywords & (frameworks.memory_passed | frameworks.memory_words):
        return None
    row = frameworks.match_memory(index, call)
    if row is not None and row.keyword:
        arg = next(a for a in call.args if a.keyword is not None and a.keyword.value == row.keyword)
        return Reach(row, arg, call, f"`{row.keyword}=`")
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value not in frameworks.memory_passed:
            continue
        built = built_by(index, frameworks, arg.value)
        row = row_built(index, frameworks, built) if built is not None else None
        if row is not None and arg.keyword.value in row.passed:
            return Reach(row, arg, built, f"`{arg.keyword.value}={_code(arg.value)}`")
    return None


_WHAT = {
    "window": "keeps only the newest messages ({trigger})",
    "token_window": "keeps only the newest messages that fit a token limit ({trigger})",
    "summary": "sends a summary of the conversation that is made again on every turn ({trigger})",
    "summary_buffer": "folds the oldest messages into a new summary whenever the limit is passed ({trigger})",
    "chunked": "evicts the oldest messages in chunks once the limit is passed ({trigger})",
    "processors": "runs history processors over the messages before each request",
}
_LOSS = {
    "window": "once the window is full, each turn drops the oldest message, so each request diverges "
    "right after what is kept and the whole kept history is recomputed every turn",
    "token_window": "once the window is full, each turn drops the oldest messages, so each request "
    "diverges right after what is kept and the whole kept history is recomputed every turn",
    "summary": "each request diverges at the summary, so it and everything after it is recomputed every turn",
    "summary_buffer": "once the window is full, nearly every turn makes a new summary at the head, so "
    "each request diverges there and the whole kept history is recomputed every turn",
    "chunked": "each eviction moves the start of the history, so the kept history is recomputed once "
    "per chunk (amortised over the turns between evictions)",
    "processors": "if one drops or rewrites earlier messages (a sliding window), once the window is "
    "full each request diverges there and the kept history is recomputed every turn",
}
HINT = (
    "keep the history append-only and shorten it at a cache block boundary in large steps (e.g. "
    "halve it when full, so the prefix holds until the next cut), or summarise in large chunks and "
    "keep the summary fixed between them"
)


def diagnostic(path: str, index: ModuleIndex, reach: Reach, seen_rewrite: bool = False) -> Diagnostic | None:
    """PFX401 for a memory reached on a per-turn path (None for an append-only row, or a row that
    rewrites only when told and is not told); `seen_rewrite`: a history processor in this module
    is seen to drop the oldest messages."""
    row = reach.row
    given = [a for a in reach.built.args if a.keyword is not None and a.keyword.value in row.trigger]
    if row.keeps_prefix or (not row.always and not given) or _keeps(row, reach.built):
        return None
    if given:
        trigger = ", ".join(f"`{a.keyword.value}={_code(a.value)}`" for a in given)  # type: ignore[union-attr]
    else:
        trigger = "its default " + " / ".join(f"`{t}`" for t in row.trigger) if row.trigger else "its default"
    what = _WHAT[row.rewrites].format(trigger=trigger)
    severity = Severity.WARNING
    if row.rewrites == "chunked" or (row.rewrites == "processors" and not seen_rewrite):
        severity = Severity.INFO
    line, column = index.pos(reach.node)
    message = f"{reach.how}: {row.name} {what}: {_LOSS[row.rewrites]}"
    return Diagnostic("PFX401", Span(path, line, column), message, severity, hint=HINT)


def _keeps(row: MemoryModel, call: cst.Call) -> bool:
    """Whether the call passes an argument that makes the row keep the prefix (`strategy="first"`)."""
    from prefixlint.python.scopes import string_value

    passed = set()
    for a in call.args:
        if a.keyword is not None:
            value = string_value(a.value) if isinstance(a.value, cst.SimpleString) else _code(a.value)
            passed.add(f"{a.keyword.value}={value}")
    return any(k in passed for k in row.keeps_when)


_SETS: dict[int, tuple[ModuleIndex, list[cst.Call]]] = {}


def _set_calls(index: ModuleIndex) -> list[cst.Call]:
    """The module's `x.set(...)` calls, found once per module (only a keyed read asks)."""
    found = _SETS.get(id(index))
    if found is None or found[0] is not index:  # an id is reused once its index is gone
        if len(_SETS) > 16:
            _SETS.clear()
        calls = [
            c
            for c in _nodes(index.module, cst.Call)
            if isinstance(c.func, cst.Attribute) and c.func.attr.value == "set"
        ]
        found = _SETS[id(index)] = (index, calls)
    return found[1]


def _code(node: cst.CSTNode) -> str:
    text = " ".join(cst.Module([]).code_for_node(node).split())
    return text if len(text) <= 40 else text[:37] + "..."
