"""Unsafe fixes that move a volatile value later in the request, keeping the sentence it is in:
to the end of the last user message when the same call or list builds the messages, then to its
start (ahead of the user's text, for when what moves holds static text that would follow the
user's text at the end), else to the end of its own text; a whole item to the end of the list
joined into the text, or a `yield` after the others."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from prefixlint.python.fixes import messages
from prefixlint.python.fixes.flows import InList, InStatements, InText, flows
from prefixlint.python.fixes.messages import SYSTEM, USER, content, role
from prefixlint.python.fixes.source import Source, callee, read_only_visits
from prefixlint.python.fixes.strings import Atom, shown
from prefixlint.python.fixes.text import (
    Change,
    Piece,
    append,
    build,
    cut,
    has_literal,
    prepend,
    removal,
    sentences,
)

# What a fix says and changes.
Candidate = tuple[str, list[Change]]

_TURN = [Atom("text", "\n\n", "", -1, -1)]  # between a user's text and what is appended to it


def candidates(
    src: Source,
    anchor: cst.CSTNode,
    label: str,
    start: InText | None = None,
    depth: int = 0,
    named: frozenset[str] = frozenset(),
    group: frozenset[str] = frozenset(),
) -> Iterator[Candidate]:
    """The moves of the value at `anchor` (or of atom `start` of a text), in order of preference;
    `named`: other values the finding says must move too (their sentences then go first); `group`:
    the values of its group (less than a cache block apart: a move that leaves one of those the
    text holds in front recovers nothing, so none is offered)."""
    if depth > 3:
        return
    for flow in [start] if start is not None else flows(src, anchor):
        if isinstance(flow, InText):
            yield from _text_moves(src, flow, label, depth, named, group)
        elif isinstance(flow, InList):
            yield from _list_moves(src, flow, label, named, depth)
        else:
            yield from _statement_moves(src, flow, label, named)


def _text_moves(
    src: Source, flow: InText, label: str, depth: int, named: frozenset[str], group: frozenset[str]
) -> Iterator[Candidate]:
    root, atoms = flow.root, flow.root.all_atoms()
    if not has_literal(root):
        return
    cuts = sentences(atoms)
    mine = next((k for k, (s, e) in enumerate(cuts) if s <= flow.index < e), None)
    if mine is None:
        return
    value = atoms[flow.index]
    if value.kind != "placeholder" and any(
        a.raw == value.raw and a is not value and a.kind == value.kind for a in atoms
    ):
        return  # written twice in this text: moving one would leave the other in front
    own = _wrapped(atoms, cuts, mine, mine)
    block = _volatile_block(src, atoms, cuts, mine)
    spans = [own] + ([block] if block != own else [])
    if any(_value(a) in named for a in atoms[block[0] : block[1]] if a.kind in ("field", "operand")):
        spans.reverse()  # the finding says a value beside it must move too
    here = group & {_value(a) for a in atoms if a.kind in ("field", "operand")}
    spans = [(s, e) for s, e in spans if here <= {_value(a) for a in atoms[s:e]}]
    yield from _sentence_moves(src, flow, label, own, spans)
    if cut(atoms, *block) is None and all(a.is_space for a in atoms[: block[0]]):
        # the whole text varies (or is this sentence): the text itself can move
        yield from candidates(src, root.node, label, depth=depth + 1, named=named, group=group)


def _sentence_moves(
    src: Source, flow: InText, label: str, own: tuple[int, int], spans: list[tuple[int, int]]
) -> Iterator[Candidate]:
    """Sentences [s, e) (the value's own, then it with those beside it) to the end of the last user
    message, to its start, or to the end of their own text."""
    root, atoms = flow.root, flow.root.all_atoms()
    start, end = own
    for s, e in spans:
        if cut(atoms, s, e) is None:
            continue  # at the end of its text already
        moved = atoms[s:e]
        beside = [_value(a) for a in atoms[s:start] + atoms[end:e] if a.kind in ("field", "operand")]
        named = (
            ", ".join(f"`{b}`" for b in beside[:-1])
            + (" and " if len(beside) > 1 else "")
            + (f"`{beside[-1]}`" if beside else "")
        )
        what = f"`{label}`" + (f", with {named} beside it," if beside else "")
        if not flow.template:
            user = _user_content(src, root.node)
            target = build(src, user, _is_template(root)) if user is not None else None
            # After the user's text first; ahead of it when what moves holds static text of its own
            # that would then follow the user's text (the verifier measures which holds).
            for at_end, where in ((True, "end"), (False, "start")):
                changes = _move(src, root, atoms, s, e, target, to_user=True, at_end=at_end)
                if changes is not None:
                    yield (
                        f"move {what} to the {where} of the last user message (the text `{shown(moved)}`)",
                        changes,
                    )
        changes = _move(src, root, atoms, s, e, None, to_user=False)
        if changes is not None:
            yield f"move {what} to the end of the text it is in (the text `{shown(moved)}`)", changes


def _value(atom: Atom) -> str:
    """A value as a reader knows it: its code, without the braces of a replacement field."""
    return atom.raw[1:-1].strip() if atom.kind == "field" else atom.raw


def _move(
    src: Source,
    root: Piece,
    atoms: list[Atom],
    s: int,
    e: int,
    target: Piece | None,
    to_user: bool,
    at_end: bool = True,
) -> list[Change] | None:
    """Take atoms [s, e) out of `root` and write them at the end of `target` (the user message;
    `at_end` False: at its start, ahead of the user's text) or of `root` itself."""
    found = cut(atoms, s, e)
    if found is None or (to_user and target is None):
        return None
    taken, sep = found
    gone = {id(atoms[k]) for k in taken}
    removed = removal(src, root, gone)
    if removed is None:
        return None
    if not to_user:
        added = append(src, root, sep + atoms[s:e])
    elif at_end:
        added = append(src, target, _TURN + atoms[s:e])  # type: ignore[arg-type]
    else:
        added = prepend(src, target, atoms[s:e] + _TURN)  # type: ignore[arg-type]
    return None if added is None else removed + added


def _is_template(root: Piece) -> bool:
    return any(a.kind == "placeholder" for a in root.all_atoms())


def _volatile_block(
    src: Source, atoms: list[Atom], cuts: list[tuple[int, int]], mine: int
) -> tuple[int, int]:
    """The sentences around sentence `mine` that each hold a value that does not look static:
    moved together when moving one alone would leave the next one ahead of the static text."""

    def varies(k: int) -> bool:
        s, e = cuts[k]
        values = [
            a.node.expression if a.kind == "field" else a.node
            for a in atoms[s:e]
            if a.kind in ("field", "operand")
        ]
        return any(not src.looks_static(v) for v in values)  # type: ignore[union-attr,arg-type]

    first = last = mine
    while first > 0 and varies(first - 1):
        first -= 1
    while last + 1 < len(cuts) and varies(last + 1):
        last += 1
    return _wrapped(atoms, cuts, first, last)


_OPEN_TAG = re.compile(r"<([A-Za-z][\w:.-]*)(?:\s[^<>]*)?>")


def _closes(opening: str, closing: str) -> bool:
    """Whether two lines wrap what is between them: `<tag>` and `</tag>`, `--- BEGIN X ---` and
    `--- END X ---`, a code fence and its end, or the same rule line (`---`) twice."""
    if (m := _OPEN_TAG.fullmatch(opening)) is not None:
        return closing == f"</{m.group(1)}>"
    if re.search(r"\bBEGIN\b", opening, re.IGNORECASE):
        return closing.lower() == re.sub(r"\bBEGIN\b", "END", opening, flags=re.IGNORECASE).lower()
    if opening.startswith("```"):
        return closing == "```"
    return opening == closing and bool(opening) and not any(ch.isalnum() for ch in opening)


def _wrapped(atoms: list[Atom], cuts: list[tuple[int, int]], first: int, last: int) -> tuple[int, int]:
    """Sentences first..last as an atom range, with the lines around them that wrap them
    (`<user_query>` ... `</user_query>`): what a value is inside of moves with it."""

    def line(k: int) -> str | None:
        s, e = cuts[k]
        return (
            None if any(a.kind != "text" for a in atoms[s:e]) else "".join(a.text for a in atoms[s:e]).strip()
        )

    wrapped = False
    while first > 0 and last + 1 < len(cuts):
        opening, closing = line(first - 1), line(last + 1)
        if opening is None or closing is None or not _closes(opening, closing):
            break
        first, last, wrapped = first - 1, last + 1, True
    if wrapped and first > 0 and (line(first - 1) or "").endswith(":"):
        first -= 1  # "Here is the issue text:" introduces what is wrapped
    return cuts[first][0], cuts[last][1]


# --- the last user message ------------------------------------------------------------------------
def _user_content(src: Source, node: cst.CSTNode, depth: int = 0) -> cst.BaseExpression | None:
    """The content of the last user message of the list or call the system text `node` goes to."""
    parent = src.parent(node)
    if depth > 4 or parent is None:
        return None
    message = messages.holding(node, parent, src.parent(parent))
    if message is not None:
        return _last_user(src, message) if role(message) in SYSTEM else None
    if (
        isinstance(parent, cst.Arg)
        and parent.keyword is not None
        and parent.keyword.value in ("system", "instructions")
    ):
        call = src.parent(parent)
        for arg in call.args if isinstance(call, cst.Call) else ():
            if arg.keyword is not None and arg.keyword.value in ("messages", "input"):
                seq = src.assigned(arg.value) if isinstance(arg.value, cst.Name) else arg.value
                if isinstance(seq, cst.List):
                    return _last_user_after(seq, -1)
        return None
    for ref in src.reads_of(node) or ():
        if (found := _user_content(src, ref, depth + 1)) is not None:
            return found
    return None


def _last_user(src: Source, message: cst.CSTNode) -> cst.BaseExpression | None:
    element = src.parent(message)
    seq = src.parent(element) if isinstance(element, cst.Element) else None
    if not isinstance(seq, (cst.List, cst.Tuple)):
        return None
    return _last_user_after(seq, list(seq.elements).index(element))


def _last_user_after(seq: cst.List | cst.Tuple, index: int) -> cst.BaseExpression | None:
    """The content of the last user message after element `index`, if nothing unknown (`*history`)
    comes after it."""
    elements = list(seq.elements)
    for k in range(len(elements) - 1, index, -1):
        el = elements[k]
        if isinstance(el, cst.StarredElement):
            return None
        if role(el.value) in USER:
            return content(el.value)
    return None


# --- items of a list, yields ----------------------------------------------------------------------
def _list_moves(
    src: Source, flow: InList, label: str, named: frozenset[str], depth: int
) -> Iterator[Candidate]:
    seq, element = flow.seq, flow.element
    elements = list(seq.elements)
    kind = role(element.value)
    if kind is not None and (kind not in SYSTEM or not flow.whole):
        return  # a system prompt with the value inside stays where it is, and so do other turns
    if kind is not None:
        if _last_user_after(seq, elements.index(element)) is not None:
            yield from _message_moves(src, flow, label)
            return  # after the user's message it would be a turn of its own
    elif not (joins := _joins(src, seq)):
        return
    elif len(elements) == 1:  # the joined text is all the value: it is what moves
        for join in joins:
            yield from candidates(src, join, label, depth=depth + 1, named=named)
        return
    if any(isinstance(e, cst.StarredElement) for e in elements):
        return
    k = elements.index(element)
    target = _last_before_named(src, elements, k, named)
    changes = _item_after(src, elements, element, elements[target]) if target > k else None
    if changes is not None:
        where = "message list" if kind is not None else "list joined into the text"
        end = (
            "the end of the"
            if target == len(elements) - 1
            else "the values that must move too, near the end of the"
        )
        yield (
            f"move `{label}` to {end} {where} (the item `{_short(src.code(element.value))}`)",
            changes,
        )


def _last_before_named(src: Source, siblings: list[cst.CSTNode], k: int, named: frozenset[str]) -> int:
    """The last of the siblings after `k` that holds none of the values the finding names: the
    ones at the end that do hold one keep their place after it (moving past them would only put
    them in front of it)."""
    last = len(siblings) - 1
    while last > k and named and _mentions(src, siblings[last], named):
        last -= 1
    return last


def _mentions(src: Source, node: cst.CSTNode, named: frozenset[str]) -> bool:
    """Whether the code of `node`, or of a function of this module it calls, writes a named value."""
    code = src.code(node)
    if any(n in code for n in named):
        return True
    calls: list[cst.Name] = []
    with read_only_visits(src.children):
        node.visit(_CalledNames(calls))
    for name in calls:
        for bound in src.bindings(name):
            if isinstance(bound, cst.FunctionDef) and any(n in src.code(bound) for n in named):
                return True
    return False


class _CalledNames(cst.CSTVisitor):
    def __init__(self, out: list[cst.Name]) -> None:
        self.out = out

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.out.append(node.func)


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 60 else code[:57] + "..."


def _message_moves(src: Source, flow: InList, label: str) -> Iterator[Candidate]:
    """A system message that is all volatile: its content to the end of the last user message, the
    message itself gone."""
    text = content(flow.element.value)
    elements = list(flow.seq.elements)
    user = _last_user_after(flow.seq, elements.index(flow.element))
    if text is None or user is None:
        return
    moved = build(src, text)
    target = build(src, user)
    if moved is None or target is None:
        return
    added = append(src, target, _TURN + moved.all_atoms())
    gone = _item_removal(src, elements, flow.element)
    if added is not None and gone is not None:
        yield f"move `{label}` to the end of the last user message (its system message removed)", gone + added


def _joins(src: Source, seq: cst.CSTNode) -> list[cst.Call]:
    """The `.join` calls the list is joined into text by: `"".join([...])`, or of a name it is
    assigned to."""
    parent = src.parent(seq)
    if isinstance(parent, cst.Arg):
        call = src.parent(parent)
        return (
            [call]
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and callee(call) == "join"
            else []
        )
    return [call for ref in src.reads_of(seq) or () for call in _joins(src, ref)]


def _multiline(src: Source, elements: list[cst.BaseElement]) -> bool | None:
    """True when each item is alone on its lines, False when all are on one line, None otherwise."""
    spans = [_item_span(src, e) for e in elements]
    if all(src.alone_on_lines(s, e) for s, e in spans):
        return True
    first, last = spans[0][0], spans[-1][1]
    return False if "\n" not in src.text[first:last] and "\r" not in src.text[first:last] else None


def _item_span(src: Source, element: cst.BaseElement) -> tuple[int, int]:
    start, end = src.span(element.value)
    if isinstance(element.comma, cst.Comma):
        end = src.text.index(",", end) + 1
    return start, end


def _item_removal(
    src: Source, elements: list[cst.BaseElement], element: cst.BaseElement
) -> list[Change] | None:
    layout = _multiline(src, elements)
    k = elements.index(element)
    start, end = _item_span(src, element)
    if layout is True:
        return [(src.line_start(start), src.line_end(end), "")]
    if layout is False and k + 1 < len(elements):
        return [(start, src.span(elements[k + 1].value)[0], "")]
    if layout is False and k > 0:
        return [(_item_span(src, elements[k - 1])[1] - 1, src.span(element.value)[1], "")]
    return None


def _item_after(
    src: Source, elements: list[cst.BaseElement], element: cst.BaseElement, target: cst.BaseElement
) -> list[Change] | None:
    """Move one item of a list after another that follows it, written as the list is laid out."""
    layout = _multiline(src, elements)
    start, end = _item_span(src, element)
    _, target_end = _item_span(src, target)
    gone = _item_removal(src, elements, element)
    if gone is None:
        return None
    if layout is True:
        line = src.text[src.line_start(start) : src.line_end(end)]
        comma = [] if isinstance(target.comma, cst.Comma) else [(target_end, target_end, ",")]
        return gone + comma + [(src.line_end(target_end), src.line_end(target_end), line)]
    value_end = src.span(target.value)[1]
    return gone + [(value_end, value_end, ", " + src.code(element.value))]


def _statement_moves(
    src: Source, flow: InStatements, label: str, named: frozenset[str]
) -> Iterator[Candidate]:
    """A `yield` statement moved after the yields that follow it in its block (but before those
    that yield a value the finding says must move too)."""
    stmt = flow.stmt
    block = src.parent(stmt)
    body = list(getattr(block, "body", ()))
    if stmt not in body:
        return
    k = body.index(stmt)
    last = k
    while last + 1 < len(body) and _is_yield(body[last + 1]):
        last += 1
    last = k + _last_before_named(src, body[k : last + 1], 0, named)
    if last == k:
        return
    start, end = src.inner(stmt)
    after = src.inner(body[last])[1]
    if not (src.alone_on_lines(start, end) and src.alone_on_lines(src.inner(body[last])[0], after)):
        return
    line = src.text[src.line_start(start) : src.line_end(end)]
    changes = [
        (src.line_start(start), src.line_end(end), ""),
        (src.line_end(after), src.line_end(after), line),
    ]
    moved, after_it = src.code(stmt.body[0]).strip(), src.code(body[last].body[0]).strip()
    yield f"move `{label}` after the values yielded after it (`{moved}` after `{after_it}`)", changes


def _is_yield(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.Yield)
    )
