"""The checked file as the fixers see it: libcst's tree (parsed, never run) with parents, scopes
and positions, and conversions between nodes, text offsets and `Edit` coordinates."""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import libcst as cst
import libcst.metadata as meta

from prefixlint.core.findings import Edit
from prefixlint.python.scopes import Pos, unchecked_nodes

# Line breaks as Python's tokenizer (and libcst) count them: Edit lines are these lines.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class Source:
    path: str
    text: str
    module: cst.Module
    positions: Mapping[cst.CSTNode, meta.CodeRange]
    parents: Mapping[cst.CSTNode, cst.CSTNode]
    # libcst's scope analysis: made on the first name look-up, as many findings' candidates never
    # look one up; its visits walk `children` (`read_only_visits`) instead of rebuilding every node.
    wrapper: meta.MetadataWrapper
    line_starts: list[int]
    # each node's children as libcst's `children` gives them (in the order a visit takes them)
    children: Mapping[cst.CSTNode, Sequence[cst.CSTNode]] = field(default_factory=dict, repr=False)
    _starting: dict[tuple[int, int], list[cst.CSTNode]] | None = field(default=None, repr=False)
    _sorted: set[tuple[int, int]] = field(default_factory=set, repr=False)  # places of _starting sorted
    _scopes: Mapping[cst.CSTNode, meta.Scope | None] | None = field(default=None, repr=False)
    _functions: list[tuple[cst.FunctionDef, int, int]] | None = field(default=None, repr=False)

    @property
    def scopes(self) -> Mapping[cst.CSTNode, meta.Scope | None]:
        if self._scopes is None:
            try:
                with unchecked_nodes(), read_only_visits(self.children):
                    self._scopes = self.wrapper.resolve(meta.ScopeProvider)
            except Exception:  # libcst raises several kinds of error on input it cannot take
                self._scopes = {}  # no name is known: the candidates that need one give nothing
        return self._scopes

    # --- positions ---------------------------------------------------------------------------
    def offset(self, line: int, column: int) -> int:
        """The text offset of a libcst position (1-based line, 0-based column); libcst ends a file
        without a final line break on a line after it."""
        if line > len(self.line_starts):
            return len(self.text)
        return min(self.line_starts[line - 1] + column, len(self.text))

    def edit(self, start: int, end: int, replacement: str) -> Edit:
        (l1, c1), (l2, c2) = self._point(start), self._point(end)
        return Edit(self.path, l1, c1, l2, c2, replacement)

    def _point(self, offset: int) -> tuple[int, int]:
        # Edit lines end at "\n" (as prefixlint.fixes.verify applies them), whatever libcst counts.
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def inner(self, node: cst.CSTNode) -> tuple[int, int]:
        """Where the node is written, without the parentheses around it."""
        r = self.positions[node]
        return self.offset(r.start.line, r.start.column), self.offset(r.end.line, r.end.column)

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        """Where the node is written, with its parentheses."""
        start, end = self.inner(node)
        for paren in parens(node, "lpar"):
            start -= len(self.module.code_for_node(paren))
        for paren in parens(node, "rpar"):
            end += len(self.module.code_for_node(paren))
        return start, end

    def code(self, node: cst.CSTNode) -> str:
        """The node as it is written here, with its parentheses (libcst's own code generation
        cannot write some nodes alone, such as an annotation)."""
        if node not in self.positions:
            return self.module.code_for_node(node)
        start, end = self.span(node)
        return self.text[start:end]

    def line_start(self, offset: int) -> int:
        return self.line_starts[bisect.bisect_right(self.line_starts, offset) - 1]

    def at_line_start(self, offset: int) -> bool:
        """Whether only indentation is written before `offset` on its line."""
        return not self.text[self.line_start(offset) : offset].strip()

    def line_end(self, offset: int) -> int:
        """The offset just after the line break that ends the line `offset` is on."""
        m = _LINE_BREAK.search(self.text, offset)
        return m.end() if m else len(self.text)

    def break_at(self, offset: int) -> int:
        """The offset of the line break that ends the line `offset` is on."""
        m = _LINE_BREAK.search(self.text, offset)
        return m.start() if m else len(self.text)

    def alone_on_lines(self, start: int, end: int) -> bool:
        """Whether [start, end) is all that is written on its lines, apart from indentation and a
        trailing comment."""
        before = self.text[self.line_start(start) : start]
        after = self.text[end : self.line_end(end)]
        return not before.strip() and (not after.strip() or after.strip().startswith("#"))

    # --- the tree ----------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        while (node := self.parents.get(node)) is not None:  # type: ignore[assignment]
            yield node

    def starting_at(self, line: int, column: int) -> list[cst.CSTNode]:
        """The nodes written from (line, 1-based column), the largest first."""
        if self._starting is None:
            self._starting = {}
            for node, (first, col) in _starts(self.positions):
                self._starting.setdefault((first, col + 1), []).append(node)
        nodes = self._starting.get((line, column), [])
        if (line, column) not in self._sorted:  # only the places asked about are sorted
            self._sorted.add((line, column))
            nodes.sort(key=lambda n: -self.inner(n)[1])
        return nodes

    def function_at(self, line: int) -> cst.FunctionDef | None:
        """The innermost function whose definition spans `line`."""
        if self._functions is None:  # asked once per candidate: the tree's functions found once
            self._functions = [
                (n, self.positions[n].start.line, self.positions[n].end.line)
                for n in self.positions
                if isinstance(n, cst.FunctionDef)
            ]
        found = [n for n, first, last in self._functions if first <= line <= last]
        return min(found, key=lambda n: self.inner(n)[1] - self.inner(n)[0], default=None)

    def within(self, node: cst.CSTNode, offset: int) -> bool:
        start, end = self.inner(node)
        return start <= offset < end

    # --- names -------------------------------------------------------------------------------
    def references(self, target: cst.Name | cst.FunctionDef | cst.ClassDef) -> list[cst.Name]:
        """The names that read what `target` binds (an assignment's name, a def), in source order."""
        scope = self.scopes.get(target)
        if scope is None:
            return []
        found: list[cst.Name] = []
        name = target.value if isinstance(target, cst.Name) else target.name.value
        for assignment in scope.assignments[name]:
            if getattr(assignment, "node", None) is target:
                found += [a.node for a in assignment.references if isinstance(a.node, cst.Name)]
        return sorted(found, key=lambda n: self.inner(n)[0])

    def bindings(self, name: cst.Name) -> list[cst.CSTNode]:
        """The nodes that bind what the name `name` reads (assignment targets, defs, imports)."""
        scope = self.scopes.get(name)
        if scope is None:
            return []
        out = []
        for access in scope.accesses[name.value]:
            if access.node is name:
                out += [getattr(r, "node", None) for r in access.referents]
        return sorted(
            (n for n in out if n is not None and n in self.positions), key=lambda n: self.inner(n)[0]
        )

    def reads_of(self, value: cst.CSTNode, attributes: bool = False) -> list[cst.BaseExpression] | None:
        """The reads of the names `value` is assigned to (`x = value`, `x: str = value`), and
        with `attributes` of the object's attribute (`self.x = value`: `self.x` in the class's
        methods), in source order; None when it is assigned to neither."""
        parent = self.parent(value)
        if isinstance(parent, cst.Assign) and parent.value is value:
            targets = [t.target for t in parent.targets]
        elif isinstance(parent, cst.AnnAssign) and parent.value is value:
            targets = [parent.target]
        else:
            return None
        reads: list[cst.BaseExpression] = [
            r for t in targets if isinstance(t, cst.Name) for r in self.references(t)
        ]
        for target in targets if attributes else ():
            if _self_attribute(target) is not None:
                reads += self._attribute_reads(target)
        if not reads and not any(isinstance(t, cst.Name) for t in targets):  # nothing it could read
            return None
        return sorted(reads, key=lambda n: self.inner(n)[0])

    def _attribute_reads(self, target: cst.Attribute) -> list[cst.Attribute]:
        """`self.x` read (not assigned) in the methods of the class whose method assigns it."""
        cls = next((n for n in self.ancestors(target) if isinstance(n, cst.ClassDef)), None)
        name = _self_attribute(target)
        out: list[cst.Attribute] = []
        for node in self.positions:
            if node is target or _self_attribute(node) != name:
                continue
            holder = self.parent(node)
            if isinstance(holder, (cst.AssignTarget, cst.AnnAssign)) and holder.target is node:
                continue
            if next((n for n in self.ancestors(node) if isinstance(n, cst.ClassDef)), None) is cls:
                out.append(node)  # type: ignore[arg-type]
        return out

    def assigned(self, name: cst.Name) -> cst.BaseExpression | None:
        """The value of the one plain assignment `name = value` that `name` reads, if it is one."""
        bound = self.bindings(name)
        if len(bound) != 1 or not isinstance(bound[0], cst.Name):
            return None
        stmt = self.parent(bound[0])
        if isinstance(stmt, cst.AssignTarget) and isinstance(assign := self.parent(stmt), cst.Assign):
            return assign.value if len(assign.targets) == 1 else None
        if isinstance(stmt, cst.AnnAssign) and stmt.target is bound[0]:
            return stmt.value
        return None

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """The dotted names a name or attribute stands for through the imports (`dt.now` after
        `from datetime import datetime as dt`: `datetime.datetime.now`)."""
        scope = self.scopes.get(node)
        try:
            found = scope.get_qualified_names_for(node) if scope is not None else ()
        except Exception:  # a node libcst's scopes do not name
            found = ()
        return {q.name for q in found}

    def looks_static(self, node: cst.CSTNode) -> bool:
        """A value that reads like the same text on every request: a name bound at module level
        (`RULES = "..."`, an import) or not bound here at all, an attribute of an imported module,
        a literal. Parameters, locals and calls are not."""
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            return True
        if isinstance(node, cst.Attribute):
            return isinstance(node.value, cst.Name) and self._imported(node.value)
        if not isinstance(node, cst.Name):
            return False
        bound = self.bindings(node)
        return not bound or all(isinstance(self.scopes.get(b), meta.GlobalScope) for b in bound)

    def _imported(self, name: cst.Name) -> bool:
        bound = self.bindings(name)
        return bool(bound) and all(isinstance(b, (cst.Import, cst.ImportFrom)) for b in bound)


def _self_attribute(node: cst.CSTNode) -> str | None:
    """`x` for `self.x`."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def parens(node: cst.CSTNode, side: str = "lpar") -> Sequence[cst.CSTNode]:
    """The parentheses written around an expression on one side (`lpar` or `rpar`)."""
    found = getattr(node, side, ())
    return found if isinstance(found, Sequence) else ()  # some nodes hold a MaybeSentinel there


def callee(call: cst.Call) -> str:
    """The last name of what is called: `join` for `", ".join(...)`, `str` for `str(...)`."""
    func = call.func
    return (
        func.attr.value
        if isinstance(func, cst.Attribute)
        else func.value
        if isinstance(func, cst.Name)
        else ""
    )


@lru_cache(maxsize=8)
def load(path: str, text: str) -> Source | None:
    """The file parsed with its metadata; None when libcst cannot read it (a syntax error is the
    frontend's finding, not a fix's)."""
    from prefixlint.python.project import parsed_module

    try:
        index = parsed_module(path, text)  # the frontend's parse of this very text, when it kept one
        module = index.module if index is not None else cst.parse_module(text)
        wrapper = meta.MetadataWrapper(module, unsafe_skip_copy=True)
        # the index's ranges are PositionProvider's, made by the same codegen when it was indexed
        positions = _Ranges(index.positions) if index is not None else wrapper.resolve(meta.PositionProvider)
        children: dict[cst.CSTNode, Sequence[cst.CSTNode]] = {}
        with unchecked_nodes():  # `children` rebuilds each node it reads: the copies are thrown away
            parents = _parents(module, {}, children)
    except Exception:  # libcst raises several kinds of error on input it cannot take
        return None
    starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
    return Source(path, text, module, positions, parents, wrapper, starts, children)


def _starts(positions: Mapping[cst.CSTNode, meta.CodeRange]) -> Iterator[tuple[cst.CSTNode, Pos]]:
    """Each node with its start (line, 0-based column), in the order positions were recorded."""
    if isinstance(positions, _Ranges):  # the tuples as they are: no CodeRange made per node
        return ((node, r[0]) for node, r in positions._ranges.items())
    return ((node, (r.start.line, r.start.column)) for node, r in positions.items())


class _Ranges(Mapping[cst.CSTNode, meta.CodeRange]):
    """The frontend index's node ranges (((line, column), (line, column)) tuples, in the order
    libcst's PositionProvider records them) read as its CodeRanges, without a second codegen."""

    __slots__ = ("_ranges",)

    def __init__(self, ranges: Mapping[cst.CSTNode, tuple[Pos, Pos]]) -> None:
        self._ranges = ranges

    def __getitem__(self, node: cst.CSTNode) -> meta.CodeRange:
        (l1, c1), (l2, c2) = self._ranges[node]
        return meta.CodeRange(meta.CodePosition(l1, c1), meta.CodePosition(l2, c2))

    def __contains__(self, node: object) -> bool:
        return node in self._ranges

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._ranges)

    def __len__(self) -> int:
        return len(self._ranges)


def _parents(
    node: cst.CSTNode,
    out: dict[cst.CSTNode, cst.CSTNode],
    kids: dict[cst.CSTNode, Sequence[cst.CSTNode]],
) -> dict[cst.CSTNode, cst.CSTNode]:
    """What libcst's `ParentNodeProvider` computes, in its order (each node's children mapped to it
    once they are done), without its visit, which rebuilds every node of the tree; each node's
    children are kept in `kids` for the read-only visits."""
    children = kids[node] = node.children
    for child in children:
        _parents(child, out, kids)
    for child in children:
        out[child] = node
    return out


@contextlib.contextmanager
def read_only_visits(children: Mapping[cst.CSTNode, Sequence[cst.CSTNode]]) -> Iterator[None]:
    """Meanwhile a `CSTVisitor`'s visit of a node walks its `children` (known ones from `children`)
    instead of rebuilding it from its visited children: libcst's own visit makes a copy of every node
    and throws it away for a visitor, which changes nothing (its scope analysis: four such visits,
    ~70% of their cost). The visitor sees the same nodes in the same order, its `visit_` and `leave_`
    methods called as libcst calls them; what is skipped is the per-field `visit_<Type>_<field>`
    hooks, which the scope and expression-context visitors do not reach (their one, ClassDef_bases,
    sits under a `visit_ClassDef` that visits the children itself). A transformer's visit is libcst's."""
    rebuilding = cst.CSTNode.visit

    def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> cst.CSTNode:
        if not isinstance(visitor, cst.CSTVisitor):
            return rebuilding(node, visitor)  # type: ignore[arg-type]
        if visitor.on_visit(node):
            known = children.get(node)
            for child in node.children if known is None else known:
                child.visit(visitor)
        visitor.on_leave(node)
        return node

    cst.CSTNode.visit = visit  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        cst.CSTNode.visit = rebuilding  # type: ignore[method-assign]
