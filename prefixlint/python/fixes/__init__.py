"""Candidate fixes for the Python frontend's findings, as libcst reads the checked file (never run):
unverified, in order of preference; `prefixlint.fixes.verify` analyses the fixed text again and attaches
the first that holds.

- PFX201 (order.py), safe: `sorted(...)` where the set is iterated, `sort_keys=True` on the
  `json.dumps` of a dict built from it; unsafe when the items' type is unknown, nothing when they
  cannot compare.
- PFX101-PFX105 (moves.py), unsafe: the value with its sentence (and the tags or markers around
  it) to the end of the last user message of the same call or list, then to the end of its own
  text; then with the sentences beside it that vary too; an all-volatile message, an item of a
  joined list or a `yield` to the end of its sequence. PFX101 last (precision.py): the date kept,
  the time of day dropped.

The modules: source.py (the parsed file, positions, names), strings.py (literals as atoms),
text.py (a string expression, its sentences, the edits that cut and append), flows.py (where a
value goes), messages.py (how code writes chat messages).

Edits are only ever in the checked file: a value computed in another module or written in a
prompt file gets nothing here."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

import libcst as cst

from prefixlint.core.findings import Diagnostic, Fix
from prefixlint.python.fixes import moves, order, precision
from prefixlint.python.fixes.flows import InText
from prefixlint.python.fixes.source import Source, load
from prefixlint.python.fixes.text import Change, build, outermost
from prefixlint.python.scopes import keep_candidate_tree
from prefixlint.python.volatile import SET_METHODS, SET_OPERATORS

_MOVABLE = {"PFX101", "PFX102", "PFX103", "PFX104", "PFX105"}
_LABEL = re.compile(r"`([^`]+)`")
# How the frontend says a value comes from elsewhere: "(`helper()`, `datetime.now()` in pkg/clock.py:7)".
_ELSEWHERE = re.compile(r"`[^`]*` in \S+:\d+")
_PLACEHOLDER = re.compile(r"^\{(\w+)\}$")
_LONE_CR = re.compile(r"\r(?!\n)")
# Where the frontend says the prompt is sent: "... of the request of `create()` (line 31)".
_SINK_LINE = re.compile(r"\(line (\d+)\)")


def candidates(path: str, text: str, diagnostic: Diagnostic) -> Iterator[Fix]:
    """Unverified fixes for one finding of `path` (whose content is `text`), the preferred first;
    nothing when none can be built."""
    code, span = diagnostic.code, diagnostic.span
    if code not in _MOVABLE and code != "PFX201":
        return
    if span.path and os.path.abspath(span.path) != os.path.abspath(path):
        return  # reported in a prompt file: the fix belongs there
    if _ELSEWHERE.search(diagnostic.message):
        return
    if _LONE_CR.search(text):
        return  # libcst ends a line at a lone "\r", the applier of edits only at "\n"
    label_match = _LABEL.search(diagnostic.message)
    src = load(path, text)
    if src is None or label_match is None:
        return
    label = label_match.group(1)
    named = frozenset(_LABEL.findall(diagnostic.message)) - {label}
    group = frozenset(member for member, _, _ in diagnostic.group)
    seen: set[tuple[Change, ...]] = set()
    for applicability, message, changes in _guarded(_all(src, diagnostic, label, named, group)):
        key = tuple(sorted(changes))
        if key in seen or not _parses(text, key):
            continue
        seen.add(key)
        edits = tuple(src.edit(*c) for c in key)
        yield Fix(applicability, message, edits, verified=False)


def _all(
    src: Source, diagnostic: Diagnostic, label: str, named: frozenset[str], group: frozenset[str]
) -> Iterator[tuple[str, str, list[Change]]]:
    nodes = src.starting_at(diagnostic.span.line, diagnostic.span.column)
    if diagnostic.code == "PFX201":  # named by its code (`TOOLS.keys()`), or as "a set"
        anchor = next((n for n in nodes if _label(src, n) == label), None) or next(
            (n for n in nodes if _is_collection(n)), None
        )
        if anchor is not None:
            yield from order.candidates(src, anchor)
        return
    if (m := _PLACEHOLDER.match(label)) is not None:
        start = _placeholder(src, nodes, m.group(1))
        if start is not None:
            for message, changes in moves.candidates(
                src, start.root.node, label, start=start, named=named, group=group
            ):
                yield "unsafe", message, changes
        return
    anchor = next((n for n in nodes if _label(src, n) == label), None)
    if anchor is None:
        return
    found = list(moves.candidates(src, anchor, label, named=named, group=group))
    if (m := _SINK_LINE.search(diagnostic.message)) is not None:
        # the function that sends the prompt the finding is about: its edits first (a helper
        # called by several functions is moved out of the text of the one that matters)
        sender = src.function_at(int(m.group(1)))
        found.sort(key=lambda c: sender is None or not any(src.within(sender, start) for start, _, _ in c[1]))
    for message, changes in found:
        yield "unsafe", message, changes
    if diagnostic.code == "PFX101":
        for message, changes in precision.candidates(src, anchor, label):
            yield "unsafe", message, changes


def _guarded(found: Iterable[tuple[str, str, list[Change]]]) -> Iterator[tuple[str, str, list[Change]]]:
    """The candidates until one cannot be built: odd input never turns into a traceback."""
    try:
        yield from found
    except Exception:
        return


def _label(src: Source, node: cst.CSTNode) -> str:
    """A node as the frontend names it in a message: its first line, at most 60 characters."""
    lines = src.code(node).strip().splitlines()
    code = lines[0] if lines else ""
    return code if len(code) <= 60 else code[:57] + "..."


def _is_collection(node: cst.CSTNode) -> bool:
    if isinstance(node, (cst.Set, cst.SetComp)):
        return True
    if isinstance(node, cst.BinaryOperation):  # `BASE | EXTRA`
        return type(node.operator).__name__ in SET_OPERATORS
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):  # `BASE.union(EXTRA)`
        return node.func.attr.value in SET_METHODS
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value in ("set", "frozenset")
    )


def _placeholder(src: Source, nodes: list[cst.CSTNode], name: str) -> InText | None:
    """The `{name}` of the template literal the finding points at."""
    string = next((n for n in nodes if isinstance(n, (cst.SimpleString, cst.ConcatenatedString))), None)
    if string is None:
        return None
    root = build(src, outermost(src, string), template=True)
    if root is None:
        return None
    hits = [i for i, a in enumerate(root.all_atoms()) if a.kind == "placeholder" and a.name == name]
    return InText(root, hits[0]) if len(hits) == 1 else None


def _parses(text: str, changes: tuple[Change, ...]) -> bool:
    """Whether the changes (sorted) apply cleanly, none overlapping and no two insertions at one
    place (whose order an applier could take either way), and leave a module that parses."""
    out: list[str] = []
    at = 0
    for k, (start, end, replacement) in enumerate(changes):
        if start < at or (k and start == end == changes[k - 1][0] == changes[k - 1][1]):
            return False
        out += [text[at:start], replacement]
        at = end
    out.append(text[at:])
    fixed = "".join(out)
    if fixed == text:
        return False
    try:
        module = cst.parse_module(fixed)
    except Exception:
        return False
    keep_candidate_tree(fixed, module)  # its verification analyses this text next
    return True
