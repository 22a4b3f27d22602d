"""A module parsed and indexed: libcst's parse without its second check of every node, and the index
built in the one traversal that libcst's position codegen makes anyway (a libcst visit rebuilds
every node; each later pass replays the recorded events instead).
"""

from __future__ import annotations

import contextlib
from abc import ABCMeta
from collections.abc import Iterator

import libcst as cst
from libcst.metadata.position_provider import PositionProvidingCodegenState

from prefixlint.python.scopes.binder import Indexer
from prefixlint.python.scopes.index import ModuleIndex, Pos, Scope


class _Syntactic:
    """`record_syntactic_position` as a plain context manager (libcst's is a generator, several times
    slower): the node's range is where its own tokens start and end, or its `start_node`'s start /
    `end_node`'s end."""

    __slots__ = ("end_node", "node", "start", "start_node", "state")

    def __init__(
        self,
        state: _IndexingState,
        node: cst.CSTNode,
        start_node: cst.CSTNode | None,
        end_node: cst.CSTNode | None,
    ) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        state = self.state
        ranges = state.ranges
        start = ranges[self.start_node][0] if self.start_node is not None else self.start
        end = ranges[self.end_node][1] if self.end_node is not None else (state.line, state.column)
        ranges[self.node] = (start, end)


class _IndexingState(PositionProvidingCodegenState):
    """libcst's `PositionProvider` codegen (the syntactic range of every node, here as
    ((line, column), (line, column)) tuples), indexing each node as it goes: one traversal
    instead of one per pass (a libcst visit rebuilds every node)."""

    def __init__(self, module: cst.Module, indexer: Indexer) -> None:
        super().__init__(
            default_indent=module.default_indent, default_newline=module.default_newline, provider=None
        )
        self.indexer = indexer
        self.ranges: dict[cst.CSTNode, tuple[Pos, Pos]] = indexer.index.positions

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:  # the generated code itself is not kept: only where it goes
        if not self.tokens:  # only whether any was added (an empty module's codegen adds a newline)
            self.tokens.append(value)
        if "\n" in value or "\r" in value:
            self._update_position(value)
        else:  # most tokens: no regex split
            self.column += len(value)

    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append((self.line, self.column))
        self.indexer.enter(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        if node not in self.ranges:  # else its syntactic range is already recorded
            self.ranges[node] = (start, (self.line, self.column))
        self.indexer.leave(node)


def _unchecked(self: cst.CSTNode) -> None:
    pass


class _NodeClass(ABCMeta):
    """libcst's node classes' metaclass, answering `isinstance` in C (`type`'s own check): ABCMeta's
    is a Python method, ~8% of a cold run, and libcst registers no virtual subclass and defines no
    `__subclasshook__` for it to find."""

    __instancecheck__ = type.__instancecheck__
    __subclasscheck__ = type.__subclasscheck__


def _node_classes_in_c() -> None:
    """libcst's nodes hash and compare by identity in Python methods (`CSTNode.__hash__` returns
    `id(self)`, `__eq__` is `self is other`, copied into every node class), called for each look-up
    in a dict keyed by nodes (positions, scopes, memos): ~8% of a cold run. `object`'s own slots
    mean the same (identity, which no output depends on: a hash of `id` already changes from run
    to run) in C; and `isinstance` of a node class is `type`'s (_NodeClass). Classes libcst makes
    later copy `CSTNode`'s methods and inherit its metaclass, which are these then."""
    python_hash, python_eq = cst.CSTNode.__dict__["__hash__"], cst.CSTNode.__dict__["__eq__"]
    classes = [cst.CSTNode]
    while classes:
        cls = classes.pop()
        classes += cls.__subclasses__()
        if type(cls) is ABCMeta:
            cls.__class__ = _NodeClass
        if cls.__dict__.get("__hash__") is python_hash:
            cls.__hash__ = object.__hash__  # type: ignore[method-assign,assignment]
        if cls.__dict__.get("__eq__") is python_eq:
            cls.__eq__ = object.__eq__  # type: ignore[method-assign,assignment]


_node_classes_in_c()


# Fixed texts the fixers parsed to see that a candidate still parses (python/fixes), with their
# trees: the verifier analyses that very text next, and takes the tree instead of parsing it again
# (a whole-file libcst parse per candidate verified). Each is taken once; the oldest go first.
_CANDIDATE_TREES: dict[str, cst.Module] = {}
MAX_CANDIDATE_TREES = 8


def keep_candidate_tree(text: str, module: cst.Module) -> None:
    """Keep a fixed text's tree (parsed by libcst's own `parse_module`) for its analysis."""
    if len(_CANDIDATE_TREES) >= MAX_CANDIDATE_TREES:
        del _CANDIDATE_TREES[next(iter(_CANDIDATE_TREES))]
    _CANDIDATE_TREES[text] = module


def parse_module(text: str) -> cst.Module:
    """libcst's parse, without checking again each node the parser has just built: a node checks
    its own fields when it is made (`CSTNode.__post_init__`), which libcst's own note there says
    the parser does not need; it is ~15% of a parse. Nodes made anywhere else are still checked.
    A fixed text a fixer has just parsed is not parsed again (`keep_candidate_tree`)."""
    kept = _CANDIDATE_TREES.pop(text, None)
    if kept is not None:
        return kept
    with unchecked_nodes():
        return cst.parse_module(text)


@contextlib.contextmanager
def unchecked_nodes() -> Iterator[None]:
    """Nodes made meanwhile are not checked (`CSTNode.__post_init__`): for libcst's parser, and for
    a read-only visit (a `CSTVisitor`, libcst's scope analysis), which rebuilds every node from the
    checked ones it visits and throws the copies away."""
    checked = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
    try:
        yield
    finally:
        cst.CSTNode.__post_init__ = checked  # type: ignore[method-assign]


def index_module(module: cst.Module, path: str = "") -> ModuleIndex:
    """The index and every node's position, from one traversal of the module."""
    index = ModuleIndex(module, {}, {}, Scope(module, None), path=path)
    indexer = Indexer(index)
    module._codegen(_IndexingState(module, indexer))
    indexer.finish()
    return index
