"""A string-building expression (literals, f-strings, implicit concatenation, `+` chains, a
`.format` template) as one run of atoms, cut into sentences; and the edits that take atoms out of
it, or write new ones at its end or its start, keeping the rest as it is written."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from prefixlint.python.fixes.source import Source, parens
from prefixlint.python.fixes.strings import Atom, Token, encode, literal, placeholders, token_atoms

# An edit in text offsets: replace [start, end) with the string.
Change = tuple[int, int, str]

# Operands that ` + more` can follow without parentheses.
_ATOMIC = (
    cst.Name,
    cst.Attribute,
    cst.Subscript,
    cst.Call,
    cst.SimpleString,
    cst.FormattedString,
    cst.ConcatenatedString,
)

# What a `+` chain may be appended inside without parentheses (the text is all of their operand).
_PLUS_OK = (
    cst.Assign,
    cst.AnnAssign,
    cst.AugAssign,
    cst.Return,
    cst.Arg,
    cst.DictElement,
    cst.Element,
    cst.Yield,
    cst.Expr,
    cst.IfExp,
    cst.BooleanOperation,
    cst.Lambda,
    cst.NamedExpr,
)


@dataclass
class Piece:
    """A token or an operand (a leaf, with its atoms) or a sequence of pieces written one after
    another (`"a" "b"`, `a + b`); start/end include its parentheses."""

    node: cst.CSTNode
    start: int
    end: int
    atoms: list[Atom] = field(default_factory=list)
    token: Token | None = None
    children: list[Piece] = field(default_factory=list)

    @property
    def leaf(self) -> bool:
        return not self.children

    def all_atoms(self) -> list[Atom]:
        return self.atoms if self.leaf else [a for c in self.children for a in c.all_atoms()]

    def last_leaf(self) -> Piece:
        return self if self.leaf else self.children[-1].last_leaf()

    def first_leaf(self) -> Piece:
        return self if self.leaf else self.children[0].first_leaf()


def _is_add(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)


def _parts(node: cst.CSTNode, top: bool = True) -> list[cst.CSTNode]:
    """The operands of a `+` chain or the literals of an implicit concatenation, in order (a
    parenthesised one is a single part)."""
    if not top and parens(node):
        return [node]
    if _is_add(node):
        return _parts(node.left, False) + _parts(node.right, False)  # type: ignore[attr-defined]
    if isinstance(node, cst.ConcatenatedString) and (top or not parens(node)):
        return _parts(node.left, False) + _parts(node.right, False)
    return [node]


def build(src: Source, node: cst.CSTNode, template: bool = False) -> Piece | None:
    """The text `node` writes; `template`: its `{fields}` are placeholders of `.format`, and every
    piece must be a literal. None when it is not string text."""
    start, end = src.span(node)
    if isinstance(node, (cst.SimpleString, cst.FormattedString)):
        if "b" in node.prefix.lower():
            return None
        inner = src.inner(node)
        token, atoms = token_atoms(node, inner[0], src.text[inner[0] : inner[1]])
        if template and (token.is_f or (atoms := placeholders(atoms)) is None):  # type: ignore[assignment]
            return None
        return Piece(node, start, end, atoms, token)
    if _is_add(node) or isinstance(node, cst.ConcatenatedString):
        kids = [build(src, part, template) for part in _parts(node)]
        if any(k is None for k in kids):
            return None
        return Piece(node, start, end, children=kids)  # type: ignore[arg-type]
    if template:
        return None
    code = src.text[start:end]
    return Piece(node, start, end, [Atom("operand", "", code, start, end, node=node)])


def outermost(src: Source, node: cst.CSTNode) -> cst.CSTNode:
    """The whole string expression `node` is part of."""
    while isinstance(parent := src.parent(node), cst.ConcatenatedString) or (
        parent is not None and _is_add(parent)
    ):
        node = parent
    return node


def has_literal(piece: Piece) -> bool:
    return any(a.token is not None for a in piece.all_atoms())


# --- sentences ----------------------------------------------------------------------------------
def sentences(atoms: list[Atom]) -> list[tuple[int, int]]:
    """[start, end) atom ranges of the sentences: cut at line breaks and after `.`, `!` or `?`
    followed by white space; the white space between them is in none."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    for i, a in enumerate(atoms):
        if start is None:
            if not a.is_space:
                start = i
            continue
        ends_line = a.kind == "text" and "\n" in a.text
        if ends_line or (a.is_space and atoms[i - 1].kind == "text" and atoms[i - 1].text in (".", "!", "?")):
            out.append((start, i))
            start = None
    if start is not None:
        end = len(atoms)
        while end > start and atoms[end - 1].is_space:
            end -= 1
        out.append((start, end))
    return out


def cut(atoms: list[Atom], start: int, end: int) -> tuple[list[int], list[Atom]] | None:
    """What to take out to move sentences [start, end) away: their atoms and the white space that
    separates them from the rest (the following one when they begin a line, else the one before),
    and that white space, which goes in front of them where they land. None when nothing but white
    space follows them (they are at the end already)."""
    after = end
    while after < len(atoms) and atoms[after].is_space:
        after += 1
    if after == len(atoms):
        return None
    before = start
    while before > 0 and atoms[before - 1].is_space:
        before -= 1
    if before == 0 or "\n" in "".join(a.text for a in atoms[before:start]):
        taken, sep = list(range(start, after)), atoms[end:after]
    else:
        taken, sep = list(range(before, end)), atoms[before:start]
    between = "".join(a.text for a in sep) or " "
    if "\n" not in between and any(a.kind == "text" and "\n" in a.text for a in atoms[start:end]):
        between = "\n"  # lines that move are lines where they land
    # Only the white space itself moves, not where it was written.
    return taken, [Atom("text", between, "", -1, -1)]


# --- edits --------------------------------------------------------------------------------------
_NONE, _SOME, _ALL = 0, 1, 2


def _state(piece: Piece, gone: set[int]) -> int:
    if piece.leaf:
        n = sum(1 for a in piece.atoms if id(a) in gone)
        return _NONE if n == 0 else _ALL if n == len(piece.atoms) else _SOME
    states = {_state(c, gone) for c in piece.children}
    return states.pop() if len(states) == 1 and _SOME not in states else _SOME


def removal(src: Source, piece: Piece, gone: set[int]) -> list[Change] | None:
    """The changes that take the atoms whose ids are in `gone` out of `piece`; a literal or operand
    left empty goes whole, with its operator, and its line when it was alone on it. None when
    nothing would be left."""
    state = _state(piece, gone)
    if state == _ALL:
        return None
    if state == _NONE:
        return []
    if piece.leaf:
        changes: list[Change] = []
        run: list[Atom] = []
        for a in [*piece.atoms, None]:
            if a is not None and id(a) in gone:
                run.append(a)
            elif run:
                changes.append((run[0].start, run[-1].end, ""))
                run = []
        return changes
    kids, changes = piece.children, []
    i = 0
    while i < len(kids):
        state = _state(kids[i], gone)
        if state == _SOME:
            changes += removal(src, kids[i], gone) or []
        if state != _ALL:
            i += 1
            continue
        j = i
        while j + 1 < len(kids) and _state(kids[j + 1], gone) == _ALL:
            j += 1
        if j + 1 < len(kids):  # up to the next piece kept: the operators and its own comment go too
            start, end = kids[i].start, kids[j + 1].start
            if (
                src.at_line_start(start)
                and src.at_line_start(end)
                and src.line_start(start) < src.line_start(end)
            ):
                start, end = src.line_start(start), src.line_start(end)  # whole lines, as lines
            changes.append((start, end, ""))
        else:  # the last pieces: from the end of the one kept before them
            start, end = kids[i - 1].end, kids[j].end
            if (
                src.line_end(start) <= kids[i].start
            ):  # on lines of their own: keep the line before, and its comment
                start = src.break_at(start)
                rest = src.text[end : src.break_at(end)]
                if not rest.strip() or rest.strip().startswith("#"):
                    end += len(rest)
            changes.append((start, end, ""))
        i = j + 1
    return changes


def append(src: Source, root: Piece, atoms: list[Atom]) -> list[Change] | None:
    """The changes that write `atoms` at the end of the text `root` (before the white space it
    ends with): into its last literal when they fit there, else as a `+` chain after it."""
    return _write(src, root, atoms, at_end=True)


def prepend(src: Source, root: Piece, atoms: list[Atom]) -> list[Change] | None:
    """The changes that write `atoms` at the start of the text `root`: into its first literal when
    they fit there, else as a `+` chain before it."""
    return _write(src, root, atoms, at_end=False)


def _write(src: Source, root: Piece, atoms: list[Atom], at_end: bool) -> list[Change] | None:
    leaf = root.last_leaf() if at_end else root.first_leaf()
    token = leaf.token
    fields = any(a.kind == "field" for a in atoms)
    marks = any(a.kind == "placeholder" for a in atoms)
    operands = any(a.kind == "operand" for a in atoms)
    if token is not None and not operands and not token.is_raw:
        template = any(a.kind == "placeholder" for a in leaf.atoms)
        to_f = fields and not token.is_f and not marks
        body = src.text[token.body_start : token.body_end]
        fits = not (fields and (template or "u" in token.prefix or (to_f and ("{" in body or "}" in body))))
        fits = fits and not (marks and token.is_f)
        written = encode(atoms, token.quote, braces=token.is_f or to_f or marks or template) if fits else None
        if written is not None:
            at = token.body_start
            if at_end:
                at = token.body_end
                for a in reversed(leaf.atoms):
                    if not a.is_space:
                        break
                    at = a.start
            return [(at, at, written)] + ([(token.start, token.start, "f")] if to_f else [])
    if marks:
        return None  # a placeholder must stay in a template literal
    added = _plus(atoms)
    if added is None:
        return None
    node = root.node
    if not root.leaf:  # inside its parentheses, if it has them
        at = root.children[-1].end if at_end else root.children[0].start
    elif isinstance(node, _ATOMIC) or parens(node):
        at = src.inner(node)[1 if at_end else 0]
    else:
        return None
    if not parens(node) and not isinstance(src.parent(node), _PLUS_OK):
        return None
    return [(at, at, " + " + added if at_end else added + " + ")]


def _plus(atoms: list[Atom]) -> str | None:
    """The atoms as a `+` chain: literals for runs of text and fields, operands as written."""
    parts: list[str] = []
    run: list[Atom] = []
    for a in [*atoms, None]:
        if a is not None and a.kind != "operand":
            run.append(a)
            continue
        if run:
            written = literal(run)
            if written is None:
                return None
            parts.append(written)
            run = []
        if a is not None:
            parts.append(a.raw)
    return " + ".join(parts)
