"""What the index of one module holds and answers: its functions, classes, imports and, per scope,
where each name is bound (`Binding`, under which arms of `if`/`try`/loops: `Branch`).

Flow-insensitive on purpose (no import, no execution): a name read at a position takes its last
binding before that position in the same function, else the module's last binding. Names resolve
through the module's own import statements (`qualified_names`), far cheaper than libcst's scope
analysis. The index is built by binder.py, fed node by node from the one traversal parse.py makes.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import libcst as cst

Pos = tuple[int, int]


@dataclass(frozen=True)
class Binding:
    """`kind`: assign (`x = e`), unpack (`a, x = e`: `element` is x's position), aug (`x += e`),
    append/extend (`x.append(e)`), prepend (`x.insert(0, e)`), head (`x[0] = e`, `x[0]["content"] = e`,
    `x[0].content = e`: `key` is the target), setitem (`x[k] = e`: `key` is k; `x.update(...)` and
    `x.setdefault(k, e)`: `key` None, `expr` the call), shuffle (`random.shuffle(x)`),
    loop (`for x in e`: `expr` is the iterable), unknown (anything else that binds)."""

    kind: str
    pos: Pos
    expr: cst.BaseExpression | None
    # the `for` iterables around the binding in its function, outermost first: text added in
    # them is added once per item of each, in their order
    loops: tuple[cst.BaseExpression, ...] = ()
    branch: Branch = ()  # the arms of `if`/`try`/loops around it, inside its function
    key: cst.BaseExpression | None = None  # setitem (`name[key] = expr`): the key; head: the target
    element: int = 0  # unpack (`a, name = expr`): the position of the name in the target


# The arms a statement sits in, outermost first: (id of the if/try/loop/match node, arm number).
# A binding whose branch is a prefix of a read's branch runs on every path to that read.
Branch = tuple[tuple[int, int], ...]


@dataclass
class Scope:
    node: cst.CSTNode
    parent: Scope | None
    cls: cst.ClassDef | None = None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)

    def bind(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)


@dataclass
class FunctionBody:
    """The returns (with a value) and yields of one function, not of functions, lambdas or classes
    nested in it."""

    returns: list[cst.Return] = field(default_factory=list)
    yields: list[cst.Yield] = field(default_factory=list)


_BUILTINS = frozenset(dir(builtins))


@dataclass
class ModuleIndex:
    module: cst.Module
    positions: dict[cst.CSTNode, tuple[Pos, Pos]]  # node -> its (start, end) as libcst's PositionProvider
    imports: dict[str, set[str]]  # local name -> the dotted names it is imported as (`dt` -> datetime)
    module_scope: Scope
    scopes: dict[cst.CSTNode, Scope] = field(default_factory=dict)  # FunctionDef/ClassDef -> scope
    scope_of: dict[cst.CSTNode, Scope] = field(default_factory=dict)  # statement/expression -> scope
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)  # module-level
    methods: dict[tuple[str, str], cst.FunctionDef] = field(default_factory=dict)  # (class, name)
    class_of: dict[cst.FunctionDef, cst.ClassDef] = field(default_factory=dict)
    bodies: dict[cst.FunctionDef, FunctionBody] = field(default_factory=dict)
    # (entering?, node) in source order for the node types later passes look at (binder.py's
    # _EVENT_TYPES): they replay this list instead of walking the whole tree again.
    events: list[tuple[bool, cst.CSTNode]] = field(default_factory=list)
    branch_of: dict[cst.CSTNode, Branch] = field(default_factory=dict)  # Name, Return -> the arms around it
    branch_nodes: dict[int, cst.CSTNode] = field(default_factory=dict)  # id in a Branch -> its if/try/loop
    in_lambda: set[int] = field(default_factory=set)  # ids of the calls and names inside a lambda
    literal_tests: dict[cst.If, object] = field(default_factory=dict)  # Evaluator.literal_test's memo
    classes: dict[str, cst.ClassDef] = field(default_factory=dict)  # module-level
    # (class name, attribute) -> `self.attribute = ...` bindings in the class's methods
    instance_attrs: dict[tuple[str, str], list[Binding]] = field(default_factory=dict)
    # `self.agent, self.role = e` in a method: (class, attribute) -> unpack bindings (`element`)
    instance_unpacked: dict[tuple[str, str], list[Binding]] = field(default_factory=dict)
    path: str = ""
    star_imports: list[str] = field(default_factory=list)  # the modules of `from m import *`
    _qualified: dict[tuple[cst.CSTNode, int], frozenset[str]] = field(default_factory=dict, repr=False)
    matched: dict[tuple[object, cst.CSTNode], object] = field(default_factory=dict, repr=False)  # frameworks
    _enclosing: dict[cst.FunctionDef, cst.FunctionDef] | None = field(default=None, repr=False)

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The function a nested function is defined in (whose names it reads as a closure), or None;
        the table is made from the recorded events on first need."""
        if self._enclosing is None:
            self._enclosing = {}
            stack: list[cst.FunctionDef] = []
            for entering, event in self.events:
                if type(event) is cst.FunctionDef:
                    if entering:
                        if stack:
                            self._enclosing[event] = stack[-1]
                        stack.append(event)
                    else:
                        stack.pop()
        return self._enclosing.get(node) if isinstance(node, cst.FunctionDef) else None

    def pos(self, node: cst.CSTNode) -> Pos:
        p = self.positions.get(node)
        return (p[0][0], p[0][1] + 1) if p else (1, 1)

    def qualified_names(self, node: cst.CSTNode, scope: Scope | None = None) -> set[str]:
        """The dotted names a `Name` or `Attribute` chain stands for through the module's imports
        (`dt.datetime.now` after `import datetime as dt`: `datetime.datetime.now`). Resolved by hand
        from the import statements, far cheaper than libcst's scope analysis: a name a function
        binds itself (a parameter `time`) is not the import. `scope`: where the name is read (by
        default the scope it was indexed in). Computed once per node and scope (the module's
        imports and bindings are fixed once it is indexed)."""
        key = (node, 0 if scope is None else id(scope))
        found = self._qualified.get(key)
        if found is None:
            found = self._qualified[key] = frozenset(self._qualified_names(node, scope))
        return found  # type: ignore[return-value]

    def _qualified_names(self, node: cst.CSTNode, scope: Scope | None) -> set[str]:
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return set()
        bases = self.imported_as(node.value)
        if not bases:
            return set()
        if scope is None:
            scope = self.scope_of.get(node, self.module_scope)
        if scope is not self.module_scope and (node.value in scope.params or node.value in scope.bindings):
            return set()
        tail = "".join("." + p for p in reversed(parts))
        return {base + tail for base in bases}

    def imported_as(self, name: str) -> set[str]:
        """The dotted names a module-level name is imported as; a name no import statement names
        may come from each `from m import *` (unless the module binds it itself, or a builtin)."""
        found = self.imports.get(name)
        if found or not self.star_imports or name in self.module_scope.bindings or name in _BUILTINS:
            return found or set()
        if name in self.functions or name in self.classes:
            return set()
        return {m + name if m.endswith(".") else f"{m}.{name}" for m in self.star_imports}

    def scope_for(self, node: cst.CSTNode) -> Scope:
        return self.scope_of.get(node, self.module_scope)

    def assigned(self, node: cst.BaseExpression) -> cst.BaseExpression | None:
        """The expression a name read at `node` was last assigned (`x = e`: `e`), when that is the
        one assignment that reaches it: the last one runs on every path to the read, or it is the
        only one (None when another arm may have assigned something else, or the name is a
        parameter or a loop variable there); not bound in its function, the module's last. For
        `self.x`, the last `self.x = e` of the class's methods."""
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
        ):
            cls = self.scope_for(node).cls
            found = self.instance_attrs.get((cls.name.value, node.attr.value), []) if cls is not None else []
            return found[-1].expr if found else None
        if not isinstance(node, cst.Name):
            return None
        scope, here = self.scope_for(node), self.pos(node)
        read_in = self.branch_of.get(node, ())
        bindings = [b for b in scope.bindings.get(node.value, ()) if b.pos < here and b.kind != "setitem"]
        if len(bindings) > 1 and bindings[-1].branch != read_in[: len(bindings[-1].branch)]:
            return None
        if bindings:
            return bindings[-1].expr if bindings[-1].kind == "assign" else None
        if scope is not self.module_scope and node.value in scope.params:
            return None
        module = self.module_scope.bindings.get(node.value)
        return module[-1].expr if module and module[-1].kind == "assign" else None

    def in_main_guard(self, node: cst.CSTNode) -> bool:
        """Whether `node` is within a module-level `if __name__ == "__main__":` block: the script run
        by hand, whose literal arguments are examples of what a request passes."""
        here = self.pos(node)
        for stmt in self.module.body:
            if isinstance(stmt, cst.If) and _is_main_test(stmt.test):
                start, end = self.positions.get(stmt, ((0, 0), (0, 0)))
                if start <= here <= end:
                    return True
        return False

    def replay(self, visitor: object) -> None:
        """Call `visitor.visit_<Type>(node)` / `leave_<Type>(node)` as a libcst visit would, for the
        recorded node types (a visitor there must not skip children)."""
        for entering, node in self.events:
            method = getattr(visitor, ("visit_" if entering else "leave_") + type(node).__name__, None)
            if method is not None:
                method(node)


def _is_main_test(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides) and any(
        isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__" for s in sides
    )
