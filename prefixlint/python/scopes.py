"""An index of one module: its functions, classes and, per scope, where each name is bound.

Flow-insensitive on purpose (no import, no execution): a name read at a position takes its last
binding before that position in the same function, else the module's last binding."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata.position_provider import PositionProvidingCodegenState

Pos = tuple[int, int]


@dataclass(frozen=True)
class Binding:
    """`kind`: assign (`x = e`), unpack (`a, x = e`: `element` is x's position), aug (`x += e`),
    append/extend (`x.append(e)`), prepend (`x.insert(0, e)`), head (`x[0] = e`, `x[0]["content"] = e`,
    `x[0].content = e`: `key` is the target), shuffle (`random.shuffle(x)`),
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


def _is_zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.value == "0"


def _first_message(target: cst.BaseExpression) -> str | None:
    """The list whose first message an assignment target rewrites: `messages` for `messages[0]`,
    `messages[0]["content"]` and `messages[0].content`."""
    if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Subscript):
        target = target.value  # `messages[0]["content"]`
    elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Subscript):
        target = target.value  # `messages[0].content`
    if (
        isinstance(target, cst.Subscript)
        and isinstance(target.value, cst.Name)
        and len(target.slice) == 1
        and isinstance(target.slice[0].slice, cst.Index)
        and _is_zero(target.slice[0].slice.value)
    ):
        return target.value.value
    return None


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
    # (entering?, node) in source order for the node types later passes look at (_EVENT_TYPES):
    # they replay this list instead of walking the whole tree again.
    events: list[tuple[bool, cst.CSTNode]] = field(default_factory=list)
    branch_of: dict[cst.CSTNode, Branch] = field(default_factory=dict)  # Name, Return -> the arms around it
    branch_nodes: dict[int, cst.CSTNode] = field(default_factory=dict)  # id in a Branch -> its if/try/loop
    in_lambda: set[int] = field(default_factory=set)  # ids of the calls and names inside a lambda
    classes: dict[str, cst.ClassDef] = field(default_factory=dict)  # module-level
    # (class name, attribute) -> `self.attribute = ...` bindings in the class's methods
    instance_attrs: dict[tuple[str, str], list[Binding]] = field(default_factory=dict)
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

    def replay(self, visitor: object) -> None:
        """Call `visitor.visit_<Type>(node)` / `leave_<Type>(node)` as a libcst visit would, for the
        recorded node types (a visitor there must not skip children)."""
        for entering, node in self.events:
            method = getattr(visitor, ("visit_" if entering else "leave_") + type(node).__name__, None)
            if method is not None:
                method(node)


# Evaluated string literals by their source text: libcst's `evaluated_value` runs `ast.literal_eval`
# (a compile) on every read, and the evaluator reads the same keys and literals again and again.
_STRINGS: dict[str, str | bytes] = {}
MAX_REMEMBERED_STRINGS = 100_000


def string_value(node: cst.SimpleString) -> str | bytes:
    """`node.evaluated_value`, computed once per literal text in this process."""
    found = _STRINGS.get(node.value)
    if found is None:
        if len(_STRINGS) >= MAX_REMEMBERED_STRINGS:
            _STRINGS.clear()
        found = _STRINGS[node.value] = node.evaluated_value
    return found


def _plain_names(target: cst.BaseExpression) -> bool:
    """Whether `target` is a tuple or list of plain names (`a, b`), none starred."""
    return isinstance(target, (cst.Tuple, cst.List)) and all(
        isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements
    )


def _names_in_target(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _names_in_target(el.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in_target(target.value)
    return []


# Node types the sink finder, the embedded-template finder (their visit_/leave_ methods) and the
# function-body index need, recorded during the single traversal.
_EVENT_TYPES = (
    cst.FunctionDef, cst.ClassDef, cst.Call, cst.List, cst.Dict,
    cst.Assign, cst.AnnAssign, cst.AugAssign,
)  # fmt: skip
_SHUFFLES = {"random.shuffle", "numpy.random.shuffle"}
_IN_LAMBDA = (cst.Call, cst.Name, cst.Attribute)  # where a volatile value can be read


class _Indexer:
    """Builds the index while `_IndexingState` generates the module's code (codegen meets the nodes
    in the same order as a libcst visitor, and it has to run anyway for positions). Positions are
    known only once a node's code is generated, so bindings are made after the traversal."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self.stack: list[Scope] = [index.module_scope]
        self.loops: list[cst.BaseExpression] = []
        self.saved_loops: list[list[cst.BaseExpression]] = []
        self.classes: list[cst.ClassDef] = []
        self.path: list[cst.CSTNode] = []  # the nodes being generated, outermost first
        self.loop_bodies: list[cst.CSTNode] = []  # `for` bodies being generated
        self.owners: list[cst.CSTNode] = []  # FunctionDef/Lambda/ClassDef around the node
        # (scope, name, kind, node whose position it takes, expr, loops, branch), in traversal order
        self.pending: list[
            tuple[Scope, str, str, cst.CSTNode, cst.BaseExpression | None, object, Branch]
        ] = []
        self.branch: Branch = ()
        self.arms: list[cst.CSTNode] = []  # the blocks that pushed onto `branch`
        self.saved_branches: list[Branch] = []
        self.pending_attrs: list[tuple[str, str, cst.CSTNode, cst.BaseExpression, Branch]] = []
        self.setitem_keys: dict[int, cst.BaseExpression] = {}  # index in `pending` -> the key
        self.unpack_elements: dict[int, int] = {}  # index in `pending` -> the element it binds

    @property
    def scope(self) -> Scope:
        return self.stack[-1]

    def enter(self, node: cst.CSTNode) -> None:
        self.index.scope_of[node] = self.stack[-1]
        path = self.path
        if path:
            parent = path[-1]
            if type(parent) is cst.For and node is parent.body:
                self.loops.append(parent.iter)
                self.loop_bodies.append(node)
            arm = _arm(parent, node) if type(parent) in _BRANCHING else None
            if arm is not None:
                self.branch = (*self.branch, (id(parent), arm))
                self.arms.append(node)
                self.index.branch_nodes[id(parent)] = parent
        path.append(node)
        kind = type(node)
        if kind is cst.Name:
            self.index.branch_of[node] = self.branch
        if kind in _IN_LAMBDA and self.owners and type(self.owners[-1]) is cst.Lambda:
            self.index.in_lambda.add(id(node))
        if kind in _EVENT_TYPES:
            self.index.events.append((True, node))
        method = _ENTER.get(kind)
        if method is not None:
            method(self, node)

    def leave(self, node: cst.CSTNode) -> None:
        self.path.pop()
        if self.arms and node is self.arms[-1]:
            self.arms.pop()
            self.branch = self.branch[:-1]
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            self.index.events.append((False, node))
        method = _LEAVE.get(kind)
        if method is not None:
            method(self, node)
        if self.loop_bodies and node is self.loop_bodies[-1]:
            self.loop_bodies.pop()
            self.loops.pop()

    def finish(self) -> None:
        """Make the bindings, in traversal order, now that every position is known."""
        index = self.index
        for i, (scope, name, kind, node, expr, loops, branch) in enumerate(self.pending):
            # A shuffle's receiver is resolved in the module scope: the statement is indexed
            # before the names inside it.
            if kind == "shuffle" and not _SHUFFLES & index.qualified_names(expr.func, index.module_scope):
                continue
            key = self.setitem_keys.get(i)
            element = self.unpack_elements.get(i, 0)
            scope.bind(name, Binding(kind, index.pos(node), expr, loops, branch, key, element))
        for cls, attr, node, expr, branch in self.pending_attrs:
            binding = Binding("assign", index.pos(node), expr, (), branch)
            index.instance_attrs.setdefault((cls, attr), []).append(binding)

    def _bind(self, name: str, kind: str, node: cst.CSTNode, expr: cst.BaseExpression | None) -> None:
        self.pending.append((self.scope, name, kind, node, expr, tuple(self.loops), self.branch))

    def _bind_self_attribute(
        self, target: cst.BaseExpression, node: cst.CSTNode, expr: cst.BaseExpression
    ) -> None:
        """`self.x = expr` in a method: an attribute every method of the class may read."""
        if (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and self.classes
            and isinstance(self.scope.node, cst.FunctionDef)
        ):
            cls = self.classes[-1].name.value
            self.pending_attrs.append((cls, target.attr.value, node, expr, self.branch))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, "unknown", node, None)
        if isinstance(self.scope.node, cst.Module):
            self.index.classes[node.name.value] = node
        scope = Scope(node, self.index.module_scope, cls=node)
        self.index.scopes[node] = scope
        self.stack.append(scope)
        self.classes.append(node)
        self.owners.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.pop()
        self.classes.pop()
        self.owners.pop()

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
        self.index.bodies[node] = FunctionBody()
        self.stack.append(scope)
        self.owners.append(node)
        self.saved_loops.append(self.loops)
        self.loops = []  # an enclosing function's loop does not repeat this function's body
        self.saved_branches.append(self.branch)
        self.branch = ()  # nor do its branches decide which of this function's bindings run

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.pop()
        self.owners.pop()
        self.loops = self.saved_loops.pop()
        self.branch = self.saved_branches.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.owners.append(node)

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.owners.pop()

    def _body(self) -> FunctionBody | None:
        owner = self.owners[-1] if self.owners else None
        return self.index.bodies[owner] if type(owner) is cst.FunctionDef else None

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and (body := self._body()) is not None:
            body.returns.append(node)
            self.index.branch_of[node] = self.branch

    def visit_Yield(self, node: cst.Yield) -> None:
        if (body := self._body()) is not None:
            body.yields.append(node)

    def visit_For(self, node: cst.For) -> None:
        for name in _names_in_target(node.target):
            self.pending.append((self.scope, name, "loop", node, node.iter, None, self.branch))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            head = _first_message(target.target)
            if head is not None:  # `messages[0] = m`, `messages[0]["content"] = x + messages[0]["content"]`
                self._bind(head, "head", node, node.value)
                self.setitem_keys[len(self.pending) - 1] = target.target
            elif isinstance(target.target, cst.Name):
                self._bind(target.target.value, "assign", node, node.value)
            elif (
                isinstance(target.target, cst.Subscript)
                and isinstance(target.target.value, cst.Name)
                and len(target.target.slice) == 1
                and isinstance(target.target.slice[0].slice, cst.Index)
            ):  # `variables["date"] = value`: an entry of a dict built here
                self._bind(target.target.value.value, "setitem", node, node.value)
                self.setitem_keys[len(self.pending) - 1] = target.target.slice[0].slice.value
            elif _plain_names(target.target):  # `head, tools = build()`: each name one element
                for i, element in enumerate(target.target.elements):
                    self._bind(element.value.value, "unpack", node, node.value)
                    self.unpack_elements[len(self.pending) - 1] = i
            else:
                self._bind_self_attribute(target.target, node, node.value)
                for name in _names_in_target(target.target):
                    self._bind(name, "unknown", node, None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self._bind(node.target.value, "assign", node, node.value)
        elif node.value is not None:
            self._bind_self_attribute(node.target, node, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name) and isinstance(node.operator, cst.AddAssign):
            self._bind(node.target.value, "aug", node, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, "assign", node, node.value)

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            if item.asname is None:
                continue
            target = item.asname.name
            if isinstance(target, cst.Name):  # `with open(p) as f`: f stands for what open(p) gives
                self._bind(target.value, "assign", node, item.item)
            else:
                for name in _names_in_target(target):
                    self._bind(name, "unknown", node, None)

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
            if func.attr.value == "insert" and _is_zero(call.args[0].value):
                kind = "prepend"  # `messages.insert(0, system_message)`: ahead of all the rest
            self._bind(func.value.value, kind, node, call.args[-1].value)
        elif isinstance(call.args[0].value, cst.Name):
            # kept only if `func` is `random.shuffle` (known once all imports are: see finish)
            self._bind(call.args[0].value.value, "shuffle", node, call)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.index.imports.setdefault(alias.asname.name.value, set()).add(full)
            else:
                head = full.split(".")[0]
                self.index.imports.setdefault(head, set()).add(head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        base = "." * len(node.relative) + (_dotted(node.module) if node.module is not None else "")
        if isinstance(node.names, cst.ImportStar):
            self.index.star_imports.append(base)
            return
        for alias in node.names:
            name = _dotted(alias.name)
            asname = alias.asname.name if alias.asname is not None else None
            local = asname.value if isinstance(asname, cst.Name) else name
            full = base + name if base.endswith(".") else f"{base}.{name}"
            self.index.imports.setdefault(local, set()).add(full)


_ENTER = {
    getattr(cst, name[len("visit_") :]): method
    for name, method in vars(_Indexer).items()
    if name.startswith("visit_")
}
_LEAVE = {
    getattr(cst, name[len("leave_") :]): method
    for name, method in vars(_Indexer).items()
    if name.startswith("leave_")
}


_BRANCHING = frozenset({cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match})


def _arm(parent: cst.CSTNode, node: cst.CSTNode) -> int | None:
    """Which arm of a branching statement `node` is (None: not an arm, it always runs with `parent`)."""
    kind = type(parent)
    if kind is cst.If:
        return 0 if node is parent.body else 1 if node is parent.orelse else None
    if kind in (cst.For, cst.While):
        return 0 if node is parent.body else 1 if node is parent.orelse else None
    if kind in (cst.Try, cst.TryStar):
        if node is parent.body or node is parent.orelse:
            return 0
        return next((i + 1 for i, h in enumerate(parent.handlers) if h is node), None)
    if kind is cst.Match:
        return next((i for i, c in enumerate(parent.cases) if c is node), None)
    return None


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return node.value if isinstance(node, cst.Name) else ""


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

    def __init__(self, module: cst.Module, indexer: _Indexer) -> None:
        super().__init__(
            default_indent=module.default_indent, default_newline=module.default_newline, provider=None
        )
        self.indexer = indexer
        self.ranges: dict[cst.CSTNode, tuple[Pos, Pos]] = indexer.index.positions

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:  # the generated code itself is not kept: only where it goes
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


def parse_module(text: str) -> cst.Module:
    """libcst's parse, without checking again each node the parser has just built: a node checks
    its own fields when it is made (`CSTNode.__post_init__`), which libcst's own note there says
    the parser does not need; it is ~15% of a parse. Nodes made anywhere else are still checked."""
    checked = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        cst.CSTNode.__post_init__ = checked  # type: ignore[method-assign]


def index_module(module: cst.Module, path: str = "") -> ModuleIndex:
    """The index and every node's position, from one traversal of the module."""
    index = ModuleIndex(module, {}, {}, Scope(module, None), path=path)
    indexer = _Indexer(index)
    module._codegen(_IndexingState(module, indexer))
    indexer.finish()
    return index
