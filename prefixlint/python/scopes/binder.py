"""What binds each name of a module, and where: the indexer that fills a `ModuleIndex` as the nodes
are met in source order (assignments, unpacking, appends and prepends, `for` targets, `with ... as`,
shuffles, `self.x = ...` in methods, imports), with the loops and branch arms around each binding,
the functions' returns and yields, and the node events later passes replay.
"""

from __future__ import annotations

import libcst as cst

from prefixlint.python.scopes.index import Binding, Branch, FunctionBody, ModuleIndex, Scope


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


def _plain_names(target: cst.BaseExpression) -> bool:
    """Whether `target` is a tuple or list of plain names (`a, b`), none starred."""
    return isinstance(target, (cst.Tuple, cst.List)) and all(
        isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in target.elements
    )


def names_in_target(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in names_in_target(el.value)]
    if isinstance(target, cst.StarredElement):
        return names_in_target(target.value)
    return []


# Node types the sink finder, the embedded-template finder (their visit_/leave_ methods) and the
# function-body index need, recorded during the single traversal.
_EVENT_TYPES = (
    cst.FunctionDef, cst.ClassDef, cst.Call, cst.List, cst.Dict,
    cst.Assign, cst.AnnAssign, cst.AugAssign,
)  # fmt: skip
_SHUFFLES = {"random.shuffle", "numpy.random.shuffle"}
_ENTRY_SETTERS = ("update", "setdefault")
_IN_LAMBDA = (cst.Call, cst.Name, cst.Attribute)  # where a volatile value can be read


class Indexer:
    """Builds the index while parse.py's `_IndexingState` generates the module's code (codegen
    meets the nodes in the same order as a libcst visitor, and it has to run anyway for
    positions). Positions are known only once a node's code is generated, so bindings are made
    after the traversal."""

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
        # (class, attribute, node, expr, branch, element of an unpacked tuple or None)
        self.pending_attrs: list[tuple[str, str, cst.CSTNode, cst.BaseExpression, Branch, int | None]] = []
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
        for cls, attr, node, expr, branch, element in self.pending_attrs:
            if element is None:
                binding = Binding("assign", index.pos(node), expr, (), branch)
                index.instance_attrs.setdefault((cls, attr), []).append(binding)
            else:
                binding = Binding("unpack", index.pos(node), expr, (), branch, element=element)
                index.instance_unpacked.setdefault((cls, attr), []).append(binding)

    def _bind(self, name: str, kind: str, node: cst.CSTNode, expr: cst.BaseExpression | None) -> None:
        self.pending.append((self.scope, name, kind, node, expr, tuple(self.loops), self.branch))

    def _bind_self_attribute(
        self,
        target: cst.BaseExpression,
        node: cst.CSTNode,
        expr: cst.BaseExpression,
        element: int | None = None,
    ) -> None:
        """`self.x = expr` in a method: an attribute every method of the class may read; each
        `self.x` of `self.agent, self.role = expr` is its element of what `expr` gives."""
        if isinstance(target, (cst.Tuple, cst.List)) and element is None:
            if all(isinstance(e, cst.Element) for e in target.elements):  # no `*rest`: positions hold
                for i, item in enumerate(target.elements):
                    self._bind_self_attribute(item.value, node, expr, i)
            return
        if (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and self.classes
            and isinstance(self.scope.node, cst.FunctionDef)
        ):
            cls = self.classes[-1].name.value
            self.pending_attrs.append((cls, target.attr.value, node, expr, self.branch, element))

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
        for name in names_in_target(node.target):
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
                for name in names_in_target(target.target):
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
                for name in names_in_target(target):
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
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.attr.value in _ENTRY_SETTERS
        ):
            # `kwargs.update(...)`, `kwargs.setdefault("k", v)`: entries of a dict built here, as
            # `kwargs["k"] = v` is (the call itself is the binding's expression, its key None)
            self._bind(func.value.value, "setitem", node, call)
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
    for name, method in vars(Indexer).items()
    if name.startswith("visit_")
}
_LEAVE = {
    getattr(cst, name[len("leave_") :]): method
    for name, method in vars(Indexer).items()
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
