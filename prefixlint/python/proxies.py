"""Module proxies: a project object that stands for a package it imports lazily.

`litellm = LazyLiteLLM()` in a project module, whose class's `__getattr__` forwards every attribute to
`importlib.import_module("litellm")`, is the package to every module that imports it (`from app.llm
import litellm`; a lazy import keeps start-up fast). Such a module calls the package through the
object, so its index records the name as imported from the package too, and `litellm.completion(...)`
matches the package's rows of the models table as if `import litellm` were written.

Only a name spelled as a package some row of the table needs (`imports`) is followed, and only into
a project module whose text calls `import_module`: nothing else is parsed for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.python.scopes import string_value

if TYPE_CHECKING:
    from prefixlint.python.frameworks import Frameworks
    from prefixlint.python.project import Project
    from prefixlint.python.scopes import ModuleIndex

_IMPORTERS = {"importlib.import_module", "importlib.__import__", "__import__"}
_PACKAGES: dict[int, tuple[object, frozenset[str]]] = {}  # id(frameworks) -> the packages rows need


def add_proxied_imports(project: Project, path: str, index: ModuleIndex) -> None:
    """Record each name `index` imports that is a project module's proxy of a package as imported
    from that package too."""
    packages = _table_packages(project.frameworks)
    for local, dotted_names in index.imports.items():
        if local not in packages or any(d.split(".")[0] == local for d in dotted_names):
            continue
        for dotted in sorted(dotted_names):
            module, _, name = dotted.rpartition(".")
            where = project.module_path(module, path) if module else None
            if where is None or not project.may_define(where, "import_module"):
                continue
            other = project.module(where)
            package = _proxied_package(other, name) if other is not None else None
            if package is not None:
                dotted_names.add(package)
                break


def _proxied_package(index: ModuleIndex, name: str) -> str | None:
    """The package `name` of the module stands for: it is bound once to `Cls()`, and `Cls.__getattr__`
    imports a package named by a literal."""
    bindings = index.module_scope.bindings.get(name, ())
    if len(bindings) != 1 or bindings[0].kind != "assign" or not isinstance(bindings[0].expr, cst.Call):
        return None
    func = bindings[0].expr.func
    cls = index.classes.get(func.value) if isinstance(func, cst.Name) else None
    getattr_ = index.methods.get((cls.name.value, "__getattr__")) if cls is not None else None
    if getattr_ is None:
        return None
    for child in _calls_under(getattr_) + _calls_of_class(index, cls):
        if _IMPORTERS & (index.qualified_names(child.func) | {_written(child.func)}) and child.args:
            package = (
                string_value(child.args[0].value)
                if isinstance(child.args[0].value, cst.SimpleString)
                else None
            )
            if isinstance(package, str) and package:
                return package
    return None


def _calls_of_class(index: ModuleIndex, cls: cst.ClassDef) -> list[cst.Call]:
    """The calls in the class's other methods (`__getattr__` may call a `_load()` that imports)."""
    return [c for (owner, _), m in index.methods.items() if owner == cls.name.value for c in _calls_under(m)]


def _calls_under(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    node.visit(_Calls())
    return found


def _written(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return f"{_written(func.value)}.{func.attr.value}"
    return func.value if isinstance(func, cst.Name) else ""


def _table_packages(frameworks: Frameworks) -> frozenset[str]:
    found = _PACKAGES.get(id(frameworks))
    if found is None or found[0] is not frameworks:
        names = {p.split(".")[0].split("*")[0] for row in frameworks.sinks for p in row.imports}
        found = _PACKAGES[id(frameworks)] = (frameworks, frozenset(n for n in names if n))
    return found[1]
