"""Provider registries: classes registered by name and picked at run time.

`REGISTRY = {"openai": OpenAIProvider, "gemini": GeminiProvider}` then `REGISTRY[name](cfg)`,
`REGISTRY.get(name)(cfg)`, `cls = REGISTRY[name]; provider = cls(cfg)`, a project function that
returns such a look-up, or classes a decorator of the project stores in the registry
(`@register("openai")` whose body does `REGISTRY[name] = cls`): an object made from the look-up is
of one of those classes, so a method called on it runs theirs (and their subclasses' overrides,
hierarchy.py). Read from the indexes already built; the decorated classes of other modules are
found by a text search (once per decorator name and process), at most MAX_DECORATED_MODULES
parsed. Which of the classes the key picks is not decided: all are followed.
"""

from __future__ import annotations

import re

import libcst as cst

from prefixlint.python.evaluate import Evaluator
from prefixlint.python.project import Project, names_api, python_sources, read_text

ClassRef = tuple[Evaluator, cst.ClassDef]

MAX_HOPS = 3
MAX_DECORATED_MODULES = 8
MAX_REGISTERED = 16


def registered_classes(ev: Evaluator, node: cst.BaseExpression, hops: int = 0) -> list[ClassRef]:
    """The classes an object may be when it was made from a registry look-up (through names and
    `self.x` assigned once)."""
    if hops > MAX_HOPS:
        return []
    if isinstance(node, (cst.Name, cst.Attribute)):
        assigned = ev.index.assigned(node)
        return registered_classes(ev, assigned, hops + 1) if assigned is not None else []
    if isinstance(node, cst.Call):
        return looked_up(ev, node.func, hops + 1)
    if isinstance(node, cst.Subscript):  # an object looked up in a dict of objects: `PROVIDERS[kind]`
        return registry_classes(ev, node.value)
    return []


def looked_up(ev: Evaluator, node: cst.BaseExpression, hops: int = 0) -> list[ClassRef]:
    """The classes an expression that looks a class up in a registry may give: `REGISTRY[key]`,
    `REGISTRY.get(key)`, a name assigned one, or a project function that returns one."""
    if hops > MAX_HOPS:
        return []
    if isinstance(node, cst.Name) and (assigned := ev.index.assigned(node)) is not None:
        return looked_up(ev, assigned, hops + 1)
    if isinstance(node, cst.Subscript):
        return registry_classes(ev, node.value)
    if not isinstance(node, cst.Call):
        return []
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
        found = registry_classes(ev, node.func.value)
        if found:
            return found
    callee = ev.resolve_callable(node.func, node)
    if callee is None:
        return []
    callee_ev, fn = callee
    out: list[ClassRef] = []
    for ret in callee_ev.index.bodies[fn].returns:
        if ret.value is not None:
            out += looked_up(callee_ev, ret.value, hops + 1)
    return out[:MAX_REGISTERED]


def registry_classes(ev: Evaluator, table: cst.BaseExpression) -> list[ClassRef]:
    """The classes a registry holds that may send a request themselves (their module names a
    modelled API, as hierarchy.overrides asks of a subclass): the values of the dict it is
    assigned (classes, or objects made of them), and the classes that a decorator of this module,
    which stores into it, decorates. Worked out once per registry and checked file."""
    if not isinstance(table, (cst.Name, cst.Attribute)):
        return []
    key = (ev.path, ev.index.module.code_for_node(table))
    memo = ev.project.registries
    if key not in memo:
        memo[key] = []  # a registry that names itself holds nothing more
        memo[key] = _registry_classes(ev, table)
    return memo[key]


def _registry_classes(ev: Evaluator, table: cst.Name | cst.Attribute) -> list[ClassRef]:
    out: list[ClassRef] = []
    owner, shown = _defined(ev, table)
    if isinstance(shown, cst.Dict):
        for el in shown.elements:
            if not isinstance(el, cst.DictElement):
                continue
            # a class, or an object made of one (`{"openai": OpenAi(), "claude": Claude()}`)
            held = el.value.func if isinstance(el.value, cst.Call) else el.value
            if isinstance(held, (cst.Name, cst.Attribute)) and _may_send(owner, held):
                found = owner.find_class(held, reexported=True)
                if found is not None and found not in out:
                    out.append(found)
    name = table.value if isinstance(table, cst.Name) else table.attr.value
    for decorator in _storing(owner, name):
        out += [c for c in decorated(ev.project, decorator) if c not in out]
    return out[:MAX_REGISTERED]


def _may_send(ev: Evaluator, node: cst.Name | cst.Attribute) -> bool:
    """Whether the module that defines the class `node` names a modelled API, read from its text
    (a registry of git hosts or of commands is not parsed for it)."""
    if isinstance(node, cst.Name) and node.value in ev.index.classes:
        return names_api(ev.project, ev.path)
    for qualified in sorted(ev.index.qualified_names(node, ev.index.module_scope)):
        path = ev.project.module_path(qualified.rsplit(".", 1)[0], ev.path) if "." in qualified else None
        if path is not None and names_api(ev.project, path):
            return True
    return False


def _defined(ev: Evaluator, table: cst.Name | cst.Attribute) -> tuple[Evaluator, cst.BaseExpression | None]:
    """The module that defines a registry and what it assigns it: here, or the module of the project
    it is imported from (`from .providers import REGISTRY`)."""
    shown = ev.index.assigned(table)
    if shown is not None or not isinstance(table, cst.Name):
        return ev, shown
    for qualified in sorted(ev.index.imported_as(table.value)):
        found = ev.resolve(qualified)
        if found is not None and "." not in found[1]:
            bindings = found[0].index.module_scope.bindings.get(found[1], ())
            if bindings and bindings[-1].kind == "assign":
                return found[0], bindings[-1].expr
    return ev, None


def _storing(ev: Evaluator, name: str) -> list[str]:
    """The functions and methods of the module that store into `name` (`name[key] = cls`, in them
    or in a function nested in them): the decorators that register a class there."""
    out = []
    owners = [*ev.index.functions.values(), *ev.index.methods.values()]
    for scope in ev.index.scopes.values():
        if not isinstance(scope.node, cst.FunctionDef):
            continue
        if not any(b.kind == "setitem" for b in scope.bindings.get(name, ())):
            continue
        start = ev.index.positions.get(scope.node, ((0, 0), (0, 0)))[0]
        for owner in owners:
            where = ev.index.positions.get(owner)
            if where is not None and where[0] <= start <= where[1] and owner.name.value not in out:
                out.append(owner.name.value)
    return out


_DECORATED: dict[tuple[str, str], list[str]] = {}


def decorated(project: Project, decorator: str) -> list[ClassRef]:
    """The project's classes decorated with `@decorator(...)` (or `@x.decorator(...)`)."""
    key = (project.root, decorator)
    if key not in _DECORATED:
        needle = re.compile(rf"^\s*@[\w.]*\b{re.escape(decorator)}\b", re.MULTILINE)
        _DECORATED[key] = [
            p
            for p in python_sources(project)
            if decorator in (read_text(p) or "") and needle.search(read_text(p) or "")
        ]
    out: list[ClassRef] = []
    for path in _DECORATED[key][:MAX_DECORATED_MODULES]:
        if not names_api(project, path):
            continue  # it sends no request itself (as for a registry's dict)
        other = Evaluator.of(project, path)
        if other is None:
            continue
        for cls in other.index.classes.values():
            if any(_names(d.decorator) == decorator for d in cls.decorators):
                out.append((other, cls))
    return out


def _names(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else ""


def forget() -> None:
    """A new run searches afresh (files may have changed since the last)."""
    _DECORATED.clear()
