"""An index of one module: its functions, classes and, per scope, where each name is bound.

Flow-insensitive on purpose (no import, no execution): a name read at a position takes its last
binding before that position in the same function, else the module's last binding."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import PositionProvider

Pos = tuple[int, int]


@dataclass(frozen=True)
class Binding:
    """`kind`: assign (`x = e`), aug (`x += e`), append/extend (`x.append(e)`), shuffle (`random.shuffle(x)`),
    loop (`for x in e`: `expr` is the iterable), unknown (anything else that binds)."""

    kind: str
    pos: Pos
    expr: cst.BaseExpression | None
    loop_iter: cst.BaseExpression | None = None  # the innermost `for` iterable around the binding


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
class ModuleIndex:
    module: cst.Module
    wrapper: cst.MetadataWrapper
    positions: dict
    imports: dict[str, set[str]]  # local name -> the dotted names it is imported as (`dt` -> datetime)
    module_scope: Scope
    scopes: dict[cst.CSTNode, Scope] = field(default_factory=dict)  # FunctionDef/ClassDef -> scope
    scope_of: dict[cst.CSTNode, Scope] = field(default_factory=dict)  # statement/expression -> scope
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)  # module-level
    methods: dict[tuple[str, str], cst.FunctionDef] = field(default_factory=dict)  # (class, name)
    class_of: dict[cst.FunctionDef, cst.ClassDef] = field(default_factory=dict)

    def pos(self, node: cst.CSTNode) -> Pos:
        p = self.positions.get(node)
        return (p.start.line, p.start.column + 1) if p else (1, 1)

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """The dotted names a `Name` or `Attribute` chain stands for through the module's imports
        (`dt.datetime.now` after `import datetime as dt`: `datetime.datetime.now`). Resolved by hand
        from the import statements, far cheaper than libcst's scope analysis: a name a function
        binds itself (a parameter `time`) is not the import."""
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name) or node.value not in self.imports:
            return set()
        scope = self.scope_of.get(node, self.module_scope)
        if scope is not self.module_scope and (node.value in scope.params or node.value in scope.bindings):
            return set()
        tail = "".join("." + p for p in reversed(parts))
        return {base + tail for base in self.imports[node.value]}

    def scope_for(self, node: cst.CSTNode) -> Scope:
        return self.scope_of.get(node, self.module_scope)


def _names_in_target(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _names_in_target(el.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in_target(target.value)
    return []


class _Indexer(cst.CSTVisitor):
    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self.stack: list[Scope] = [index.module_scope]
        self.loops: list[cst.BaseExpression] = []
        self.saved_loops: list[list[cst.BaseExpression]] = []
        self.classes: list[cst.ClassDef] = []

    @property
    def scope(self) -> Scope:
        return self.stack[-1]

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.index.scope_of[node] = self.scope
        return super().on_visit(node)

    def _binding(self, kind: str, node: cst.CSTNode, expr: cst.BaseExpression | None) -> Binding:
        return Binding(kind, self.index.pos(node), expr, self.loops[-1] if self.loops else None)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.bind(node.name.value, self._binding("unknown", node, None))
        scope = Scope(node, self.index.module_scope, cls=node)
        self.index.scopes[node] = scope
        self.stack.append(scope)
        self.classes.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.pop()
        self.classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        if isinstance(self.scope.node, cst.Module):
            self.index.functions[name] = node
        elif isinstance(self.scope.node, cst.ClassDef):
            self.index.methods[(self.scope.node.name.value, name)] = node
            self.index.class_of[node] = self.scope.node
        cls = self.classes[-1] if self.classes else None
        scope = Scope(node, self.index.module_scope, cls=cls)
        p = node.params
        for param in [*p.posonly_params, *p.params, *p.kwonly_params]:
            scope.params.append(param.name.value)
        for star in (p.star_arg, p.star_kwarg):
            if isinstance(star, cst.Param):
                scope.params.append(star.name.value)
        self.index.scopes[node] = scope
        self.stack.append(scope)
        self.saved_loops.append(self.loops)
        self.loops = []  # an enclosing function's loop does not repeat this function's body

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()
        self.loops = self.saved_loops.pop()

    def visit_For(self, node: cst.For) -> None:
        for name in _names_in_target(node.target):
            self.scope.bind(name, Binding("loop", self.index.pos(node), node.iter))

    def visit_For_body(self, node: cst.For) -> None:
        self.loops.append(node.iter)

    def leave_For_body(self, node: cst.For) -> None:
        self.loops.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.scope.bind(target.target.value, self._binding("assign", node, node.value))
            else:
                for name in _names_in_target(target.target):
                    self.scope.bind(name, self._binding("unknown", node, None))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name):
            kind = "assign" if node.value is not None else "unknown"
            if node.value is not None:
                self.scope.bind(node.target.value, self._binding(kind, node, node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name) and isinstance(node.operator, cst.AddAssign):
            self.scope.bind(node.target.value, self._binding("aug", node, node.value))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self.scope.bind(node.target.value, self._binding("assign", node, node.value))

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            if item.asname is not None:
                for name in _names_in_target(item.asname.name):
                    self.scope.bind(name, self._binding("unknown", node, None))

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not (isinstance(call, cst.Call) and call.args):
            return
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.attr.value in ("append", "extend", "insert")
        ):
            kind = "extend" if func.attr.value == "extend" else "append"
            arg = call.args[-1].value
            self.scope.bind(func.value.value, self._binding(kind, node, arg))
        elif isinstance(call.args[0].value, cst.Name) and {
            "random.shuffle",
            "numpy.random.shuffle",
        } & self.index.qualified_names(func):
            self.scope.bind(call.args[0].value.value, self._binding("shuffle", node, call))


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return node.value if isinstance(node, cst.Name) else ""


def module_imports(module: cst.Module) -> dict[str, set[str]]:
    """Every import in the module, anywhere (flow-insensitive, as the rest of the index): local
    name -> dotted names. `import a.b` binds `a` to `a`; `import a.b as c` binds `c` to `a.b`;
    `from a import b as c` binds `c` to `a.b`; relative imports keep their dots (`.b`). Walks
    statements only: expressions hold no imports, and skipping them is most of the saving."""
    found: dict[str, set[str]] = {}

    def add(node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _dotted(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    found.setdefault(alias.asname.name.value, set()).add(full)
                else:
                    head = full.split(".")[0]
                    found.setdefault(head, set()).add(head)
        elif not isinstance(node.names, cst.ImportStar):
            base = "." * len(node.relative) + (_dotted(node.module) if node.module is not None else "")
            for alias in node.names:
                name = _dotted(alias.name)
                asname = alias.asname.name if alias.asname is not None else None
                local = asname.value if isinstance(asname, cst.Name) else name
                found.setdefault(local, set()).add(base + name if base.endswith(".") else f"{base}.{name}")

    def walk(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            add(node)
        elif not isinstance(node, cst.BaseExpression):
            for child in node.children:
                walk(child)

    walk(module)
    return found


def index_module(module: cst.Module) -> ModuleIndex:
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    index = ModuleIndex(module, wrapper, positions, module_imports(module), Scope(module, None))
    module.visit(_Indexer(index))
    return index
