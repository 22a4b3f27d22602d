"""Attributes, classes and the state of objects: `self.x`, `Settings.TEXT`, `obj.text`, and the
project class an object is of.

An attribute of an instance is its class-level value, what its methods assign to it, what the
constructor call passes, what a base class gives, or (for an abstract field) what subclasses give.
The class of an object is found from the call that made it, a parameter's annotation or default,
or a field's annotation; classes are looked up through imports and re-exports.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Self

import libcst as cst

from prefixlint.python.annotations import annotation_names, parameter_annotation
from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.evaluate.callsites import MAX_CALLER_MODULES
from prefixlint.python.evaluate.env import (
    MAX_CALLERS,
    MAX_DEPTH,
    Env,
    _annotation_heads,
    _default_of,
    _inside,
    func_name,
    passed_argument,
)
from prefixlint.python.project import (
    MAX_FILE_BYTES,
    MAX_SIBLING_MODULES,
    modules_defining,
    modules_setting,
    modules_storing,
)
from prefixlint.python.scopes import string_value
from prefixlint.python.segments import (
    Hole,
    Provenance,
    Text,
    Value,
    choice,
    first_volatile,
    holes,
    map_holes,
    splice_holes,
)
from prefixlint.python.volatile import name_provenance, qualified_provenance, reads_environment

# Calls up followed for the class of a parameter (`respond(self)` passed on through two wrappers
# is three): each parses at most MAX_CALLER_MODULES modules.
MAX_PASSED_HOPS = 3


class Objects(EvaluatorBase):
    """Attributes, classes and the state of objects."""

    def _v_Attribute(self, node: cst.Attribute, env: Env) -> Value:
        qualified = self.index.qualified_names(node)
        if reads_environment(qualified):
            return self.setting_read(node)  # `os.environ`, subscripted or read by key later
        if (prov := qualified_provenance(qualified)) is not None:
            return self.hole(prov, node)
        if qualified and (request := self.project.frameworks.match_request(self.index, node)) is not None:
            return self.request_hole(request, node)  # `sys.argv`, `flask.request.json`
        if (configured := self.settings_read(node, env)) is not None:
            return configured  # `get_settings().review_prompt.system`: the text in the config file
        receiver = node.value
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            scope = self.index.scope_for(node)
            if scope.cls is not None:
                found = self.class_attribute(scope.cls, node.attr.value, env, at=node)
                if found is not None:
                    return found
        elif qualified and isinstance(receiver, (cst.Name, cst.Attribute)):
            for name in sorted(qualified):  # `prompts.SYSTEM` after `from . import prompts`
                found = self.resolve(name)
                if found is not None:
                    value = found[0].module_attribute(found[1], env)
                    if value is not None:
                        return self.anchor(value, node)
        if not (isinstance(receiver, cst.Name) and receiver.value in ("self", "cls")):
            owner = self.object_class(receiver, node, node.attr.value)  # `Settings.TEXT`, `obj.text`
            if owner is not None:
                here = owner[0] is self
                found = owner[0].class_attribute(owner[1], node.attr.value, env, at=node if here else None)
                if found is not None and _unknown_parameter(found):
                    found = None  # a constructor's parameter its makers pass on: its name says more
                if found is not None:
                    return found if here else self.anchor(found, node)
        base = self.value(receiver, env.deeper())
        if (h := first_volatile(base)) is not None and not h.by_name:
            return (h,)
        if (prov := name_provenance(node.attr.value, attribute=True)) is not None:
            return self.hole(prov, node, by_name=True)
        if h is not None and h.provenance is Provenance.REQUEST and len(base) == 1:
            # A field of a per-request input (`task.content` of a `task` parameter) is one too.
            (field,) = self.hole(Provenance.REQUEST, node, by_name=True, weak=h.weak)
            return (replace(field, via=h.via, item=h.item),)
        if len(base) == 1 and isinstance(base[0], Hole) and base[0].per_call:
            # a field of what an opaque call made from a per-request input (`provider.pr.title`)
            (field,) = self.unknown(node)
            return (replace(field, per_call=True),)
        return self.field_of_parameter(base, node.attr.value, node) or self.unknown(node)

    def own_attribute(self, call: cst.Call, env: Env) -> Value | None:
        """`getattr(self, "name", default)` in a method: `self.name`, else the default (None when
        the call is no such read)."""
        args = [a.value for a in call.args if a.keyword is None and not a.star]
        if not (2 <= len(args) <= 3 and isinstance(args[0], cst.Name) and args[0].value in ("self", "cls")):
            return None
        attr = string_value(args[1]) if isinstance(args[1], cst.SimpleString) else None
        cls = self.index.scope_for(call).cls
        if not isinstance(attr, str) or cls is None:
            return None
        found = self.class_attribute(cls, attr, env, at=call)
        if found is None and len(args) == 3:
            return self.value(args[2], env.deeper())
        return found

    def object_class(
        self, node: cst.BaseExpression, at: cst.CSTNode, member: str | None = None
    ) -> tuple[Self, cst.ClassDef] | None:
        """The project class `node` names (`Settings`) or makes (`Settings()`), or the class of the
        object it holds (`builder = Builder()`, a parameter `b: Builder`, `self.builder`);
        `member`: what is read of it (receiver_class)."""
        if isinstance(node, cst.Call):
            return self.find_class(node.func, reexported=True)
        if isinstance(node, (cst.Name, cst.Attribute)):
            found = self.find_class(node)
            if found is not None:
                return found
            return self.receiver_class(node, at, member)
        return None

    def instance_state(self, node: cst.BaseExpression, env: Env) -> dict[cst.CSTNode, dict[str, Value]]:
        """What the constructor call that made an object passes, for the methods called on it
        (`J2("tasks/system.j2").render(...)`, `p = Prompt(name)` then `p.render()`): the
        arguments of its class's `__init__`, or the fields of a dataclass-like class without one,
        keyed as `Env.args` keys a function's arguments (`self.name` then reads them)."""
        if isinstance(node, cst.Name):
            node = self.index.assigned(node)
        if not isinstance(node, cst.Call):
            return {}
        found = self.find_class(node.func, reexported=True)
        if found is None:
            return {}
        owner, cls = found
        init = owner.method(cls, "__init__")
        if init is not None:
            return {init[1]: self.bind_arguments(init[1], node, env)}
        positional = [a for a in node.args if a.keyword is None]
        fields: dict[str, Value] = {}
        for name, arg in zip(_positional_fields(cls), positional, strict=False):
            if arg.star:
                break
            fields[name] = self.value(arg.value, env.deeper())
        for arg in node.args:
            if arg.keyword is not None:
                fields[arg.keyword.value] = self.value(arg.value, env.deeper())
        return {cls: fields} if fields else {}

    def class_attribute(
        self,
        cls: cst.ClassDef,
        attr: str,
        env: Env,
        depth: int = 0,
        subclasses: bool = True,
        at: cst.CSTNode | None = None,
    ) -> Value | None:
        """`self.attr` for an instance of `cls`: its class-level value (a dataclass field's default),
        what its methods assign to `self.attr`, else what a base class gives."""
        if depth > 4 or env.depth > MAX_DEPTH:
            return None
        key = (id(cls), attr)
        if key in self.project.reading:
            # `self.config = self.config.copy(...)` read while `self.config` is worked out: its own
            # earlier value, as a binding that reads itself (else each read unfolded it again, to
            # the nesting limit: 38,600 reads of one attribute for one langroid module)
            return None
        self.project.reading.add(key)
        try:
            return self._class_attribute(cls, attr, env, depth, subclasses, at)
        finally:
            self.project.reading.discard(key)

    def _class_attribute(
        self, cls: cst.ClassDef, attr: str, env: Env, depth: int, subclasses: bool, at: cst.CSTNode | None
    ) -> Value | None:
        given = env.args.get(cls)  # a field the constructor call of the object passes
        if given is not None and attr in given:
            return given[attr]
        options: list[Value] = []
        class_scope = self.index.scopes[cls]
        if class_scope.bindings.get(attr) and not _field_without_default(class_scope.bindings[attr][-1].expr):
            options.append(self.binding_value(attr, class_scope, class_scope.bindings[attr][-1], env))
        for binding in self.index.instance_attrs.get((cls.name.value, attr), ()):
            if binding.expr is not None:
                # A parameter a method stores on the object (`self.summary = summary`) is the
                # object's state, not an input of the request that reads it later.
                stored = _as_state(self.value(binding.expr, env.deeper()))
                options.append(self.constructed(cls, stored, env, at))
        for binding in self.index.instance_unpacked.get((cls.name.value, attr), ()):
            if binding.expr is not None:  # `self.agent, self.role = choose(task)`: its element
                stored = self.element_value(binding.expr, binding.element, env.deeper())
                if stored is not None:
                    options.append(_as_state(stored))
        for expr in self._given_to_super(cls, attr):  # a pydantic model's field set by its constructor
            options.append(_as_state(self.value(expr, env.deeper())))
        if any(isinstance(s, Text) for o in options for s in o):
            # text the class keeps (not a handle or a config): what `obj.attr = ...` sets elsewhere
            # is one more value (looked for only then: the modules searched count against the
            # checked file's import budget)
            for site, expr in self.set_from_outside(cls, attr):
                found = site.value(expr, Env(depth=MAX_DEPTH // 2))
                if any(isinstance(s, Text) for s in found) or first_volatile(found) is not None:
                    options.append(self.anchor(found, at) if at is not None else found)
        if options:
            return choice(options)
        declared = self.declared_field(cls, attr, env, at)
        if declared is not None:
            return declared
        for evaluator, base in self.base_classes(cls):
            found = evaluator.class_attribute(base, attr, env.deeper(), depth + 1, subclasses=False)
            if found is not None:  # placed where it is read here (`at`), or at the class
                return self.anchor(found, at or cls) if evaluator is not self else found
        if subclasses and _declares_without_value(cls, attr):
            # an abstract field (`prompt: str`, `prompt: str = field()`) that subclasses give a value
            options = []
            for evaluator, sub in self.subclasses(cls):
                found = evaluator.class_attribute(sub, attr, env.deeper(), depth + 1, subclasses=False)
                if found is not None:
                    options.append(self.anchor(found, at or cls) if evaluator is not self else found)
            if options:
                return choice(options)
        return None

    def constructed(self, cls: cst.ClassDef, stored: Value, env: Env, at: cst.CSTNode | None) -> Value:
        """What an attribute stored from a constructor's parameter (`self.pr_url = pr_url`) holds:
        what the project's constructions of `cls` pass for it, else its default when nothing makes
        one (placed where it is read, `at`). Not while a method of `cls` is summarised as a wrapper:
        there the call that makes the object fills it (summaries.py)."""
        init = self.index.methods.get((cls.name.value, "__init__"))
        if init is None or not any(h.param is not None and h.param[0] == id(init) for h in holes(stored)):
            return stored
        if env.summary is not None and self.index.class_of.get(env.summary) is cls:
            return stored

        def given(hole: Hole) -> Value | None:
            if hole.param is None or hole.param[0] != id(init):
                return None
            key = (id(init), hole.param[1])
            memo = self.project.constructed
            if key not in memo:
                memo[key] = None  # a construction that reads the attribute it sets gives nothing more
                memo[key] = self._constructed_with(cls, init, hole.param[1])
            found = memo[key]
            return self.anchor(found, at) if found is not None and at is not None else found

        return splice_holes(stored, given)

    def _constructed_with(self, cls: cst.ClassDef, init: cst.FunctionDef, name: str) -> Value | None:
        sites = self.constructions(cls)[:MAX_CALLERS]
        if sites:
            return self.passed_at(init, name, sites)
        default = _default_of(init, name)
        if default is None or isinstance(default, cst.Name) and default.value == "None":
            return None
        return self.value(default, Env(depth=MAX_DEPTH // 2))

    def set_from_outside(self, cls: cst.ClassDef, attr: str) -> list[tuple[Self, cst.BaseExpression]]:
        """The values the project assigns to `attr` of objects of `cls` from outside the class
        (`interpreter.system_message = ...`, the object's class known where it is set): in at most
        MAX_CALLER_MODULES modules, found by a text search; memoized per class and attribute."""
        key = (id(cls), "set:" + attr)
        memo = self.project.passed_classes
        if key in memo:
            return memo[key]
        memo[key] = []  # an assignment whose receiver's class reads this attribute adds nothing more
        out = []
        for path in modules_setting(self.project, attr)[:MAX_CALLER_MODULES]:
            site = self if os.path.abspath(path) == os.path.abspath(self.path) else self.evaluator(path)
            for target, expr in site.attribute_assignments(attr) if site is not None else ():
                owner = site.object_class(target.value, target, attr)
                if owner is not None and owner[1] is cls:
                    out.append((site, expr))
        memo[key] = out
        return out

    def attribute_assignments(self, attr: str) -> list[tuple[cst.Attribute, cst.BaseExpression]]:
        """`x.attr = value` statements of this module whose receiver is not `self`."""
        out = []
        for entering, node in self.index.events:
            if not (entering and type(node) is cst.Assign):
                continue
            for target in node.targets:
                t = target.target
                if (
                    isinstance(t, cst.Attribute)
                    and t.attr.value == attr
                    and not (isinstance(t.value, cst.Name) and t.value.value in ("self", "cls"))
                ):
                    out.append((t, node.value))
        return out

    def declared_field(self, cls: cst.ClassDef, attr: str, env: Env, at: cst.CSTNode | None) -> Value | None:
        """`self.attr` where the class declares `attr` as data, as a component framework reads it
        (the table's `[[fields]]` rows: `inputs = [MessageTextInput(name="attr"), ...]`): a value made
        per request for a field connected to the flow, else the constant's default text (unknown
        without one: typed in once per app, it is never a finding)."""
        frameworks = self.project.frameworks
        bindings = self.index.scopes[cls].bindings
        for listing in frameworks.field_lists:
            found = bindings.get(listing)
            listed = found[-1].expr if found else None
            if not isinstance(listed, (cst.List, cst.Tuple)):
                continue
            for element in listed.elements:
                call = element.value
                if isinstance(element, cst.StarredElement) or not isinstance(call, cst.Call):
                    continue  # `*Base.get_base_inputs()`: the base class's own fields
                declared = frameworks.match_field(self.index, call)
                if declared is None or declared.row.attribute != listing:
                    continue
                keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
                named = keywords.get(declared.row.key)
                if not (isinstance(named, cst.SimpleString) and string_value(named) == attr):
                    continue
                if _connected_per_request(
                    keywords.get(declared.row.types), declared.row.request_types, declared.per_request
                ):
                    (hole,) = self.hole(Provenance.REQUEST, at or call, f"self.{attr}")
                    via = f"an input declared as `{func_name(call.func)}` ({declared.row.name})"
                    return (replace(hole, timing="call", via=via),)  # filled on each run of the flow
                default = keywords.get(declared.row.default)
                return self.value(default, env.deeper()) if default is not None else self.unknown(at or call)
        return None

    def _given_to_super(self, cls: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
        """`attr=...` of the `super().__init__(...)` call in the class's own `__init__` (pydantic
        models set their fields so: `prompt = prompt or DEFAULT_PROMPT; super().__init__(prompt=prompt)`)."""
        init = self.index.methods.get((cls.name.value, "__init__"))
        if init is None:
            return []
        return [
            arg.value
            for call in self.calls_named("__init__")
            if isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Call)
            and func_name(call.func.value.func) == "super"
            and _inside(self.index, call, init)
            for arg in call.args
            if arg.keyword is not None and arg.keyword.value == attr
        ]

    def base_classes(self, cls: cst.ClassDef) -> list[tuple[Self, cst.ClassDef]]:
        out: list[tuple[Self, cst.ClassDef]] = []
        for arg in cls.bases:
            found = self.find_class(arg.value)
            if found is not None:
                out.append(found)
        return out

    def find_class(
        self, node: cst.BaseExpression, reexported: bool = False
    ) -> tuple[Self, cst.ClassDef] | None:
        """The project class `node` names. `reexported`: also through a package that re-exports
        it (`from griptape.utils import J2` with `from .j2 import J2` in its `__init__.py`), for
        an object made and used at once (`J2(path).render(...)`); not everywhere, since following
        every re-export of a package that re-exports all its classes costs ~40% more CPU."""
        if isinstance(node, cst.Name) and node.value in self.index.classes:
            return self, self.index.classes[node.value]
        return self._imported_class(self.index.qualified_names(node, self.index.module_scope), 3 * reexported)

    def _imported_class(self, qualified: set[str], hops: int) -> tuple[Self, cst.ClassDef] | None:
        """The class an import names, through at most `hops` re-exports."""
        return self.imported_definition(qualified, hops, "classes")  # type: ignore[return-value]

    def imported_definition(
        self, qualified: set[str], hops: int, kind: str
    ) -> tuple[Self, cst.ClassDef | cst.FunctionDef] | None:
        """The module-level class or function (`kind`: the index's "classes" or "functions") an
        import names, through at most `hops` re-exports."""
        for name in sorted(qualified):
            found = self.resolve(name)
            if found is None:
                continue
            evaluator, attr = found
            table = getattr(evaluator.index, kind)
            if attr in table:
                return evaluator, table[attr]
            if hops and "." not in attr and not evaluator.index.module_scope.bindings.get(attr):
                again = evaluator.imported_definition(evaluator.index.imported_as(attr), hops - 1, kind)
                if again is not None:
                    return again
        return None

    def method(self, cls: cst.ClassDef, name: str, depth: int = 0) -> tuple[Self, cst.FunctionDef] | None:
        fn = self.index.methods.get((cls.name.value, name))
        if fn is not None:
            return self, fn
        if depth > 4:
            return None
        for evaluator, base in self.base_classes(cls):
            found = evaluator.method(base, name, depth + 1)
            if found is not None:
                return found
        return None

    def subclasses(self, cls: cst.ClassDef) -> list[tuple[Self, cst.ClassDef]]:
        """Classes deriving from `cls` in the modules beside its own (where an abstract base's
        concrete classes usually live); found by a text search first, so few modules are parsed."""
        name = cls.name.value
        folder = os.path.dirname(self.path)
        try:
            files = sorted(f for f in os.listdir(folder) if f.endswith(".py"))[:MAX_SIBLING_MODULES]
        except OSError:
            return []
        out = []
        for file in files:
            path = os.path.join(folder, file)
            text = (
                self.project.text(path)
                if path == self.path or os.path.getsize(path) < MAX_FILE_BYTES
                else None
            )
            if text is None or not re.search(rf"class\s+\w+\s*\([^)]*\b{re.escape(name)}\b", text):
                continue
            other = self.evaluator(path)
            if other is None:
                continue
            for candidate in other.index.classes.values():
                if any(found == (self, cls) for found in other.base_classes(candidate)):
                    out.append((other, candidate))
        return out

    def methods_named(self, name: str) -> list[tuple[Self, cst.FunctionDef]]:
        """The methods called `name` that classes of the project define (found by a text search of
        every module, indexed once per process, then parsed only where one is defined)."""
        out = []
        for path in modules_defining(self.project, name)[:MAX_SIBLING_MODULES]:
            other = self.evaluator(path)
            if other is None:
                continue
            out += [(other, fn) for (_, method), fn in sorted(other.index.methods.items()) if method == name]
        return out

    def receiver_class(
        self, node: cst.BaseExpression, at: cst.CSTNode, member: str | None = None
    ) -> tuple[Self, cst.ClassDef] | None:
        """The project class of an object: `x = Client(...)`, a parameter `x: Client` (or one the
        project's callers pass a `Client` for, when `member`, what is read of it, is a method or an
        attribute some project class has), `self.x` set to `Client(...)` (or a parameter so
        annotated) in a method, a class attribute `x: Client`, or `obj.x` of such an object."""
        if isinstance(node, cst.Name):
            scope = self.index.scope_for(at)
            for binding in reversed(scope.bindings.get(node.value, ())):
                if binding.kind == "assign" and isinstance(binding.expr, cst.Call):
                    return self.find_class(binding.expr.func)
            found = self._parameter_class(node)
            outer = self.index.enclosing_function(scope.node)
            if found is None and outer is not None and node.value not in scope.params:
                found = self._scope_class(outer, node.value)  # a closure's name, of the function around it
            if (
                found is None
                and member is not None
                and isinstance(scope.node, cst.FunctionDef)
                and node.value in scope.params
                and (modules_defining(self.project, member) or modules_storing(self.project, member))
            ):
                found = self.passed_class(scope.node, node.value)  # `respond(self)` in a method
            return found
        if not isinstance(node, cst.Attribute):
            return None
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            cls = self.index.scope_for(at).cls
            return self.attribute_class(cls, node.attr.value) if cls is not None else None
        owner = self.receiver_class(node.value, at, node.attr.value)  # `interpreter.llm`, `self.agent.llm`
        return owner[0].attribute_class(owner[1], node.attr.value) if owner is not None else None

    def attribute_class(self, cls: cst.ClassDef, attr: str) -> tuple[Self, cst.ClassDef] | None:
        """The project class of what an instance of `cls` holds in `attr`: `self.llm = Client(...)`,
        `self.llm = llm` (a parameter `llm: Client`, or one its constructions pass a `Client` for),
        `self.llm = handler()` (a parameter `handler: type[Base] = Client`), or a field `llm: Client`."""
        for binding in self.index.instance_attrs.get((cls.name.value, attr), ()):
            expr = binding.expr
            target = expr.func if isinstance(expr, cst.Call) else expr
            if isinstance(target, (cst.Name, cst.Attribute)):
                found = self.find_class(target) or self._parameter_class(target)
                if found is None and isinstance(target, cst.Name) and target is expr:
                    fn = self.index.scope_for(target).node
                    if isinstance(fn, cst.FunctionDef) and target.value in self.index.scopes[fn].params:
                        found = self.passed_class(fn, target.value)
                if found is not None:
                    return found
        return self._field_class(cls, attr)

    def passed_class(self, fn: cst.FunctionDef, param: str) -> tuple[Self, cst.ClassDef] | None:
        """The class of what the project's calls of `fn` pass for `param`, when the parameter says
        nothing itself: `ReportGenerator(self)` in a method of `GPTResearcher` makes `researcher`
        of `ReportGenerator.__init__` a `GPTResearcher`, `respond(self)` in a method of
        `Interpreter` makes `interpreter` one. The first call that tells (Evaluator.callers,
        Evaluator.constructions); memoized per parameter, none while it is being worked out."""
        key = (id(fn), "passed class:" + param)
        memo = self.project.passed_classes
        if key in memo:
            return memo[key]
        names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        if param not in names or key in self.project.reading or self.project.passing >= MAX_PASSED_HOPS:
            return None
        cls = self.index.class_of.get(fn)
        if cls is not None and (names.index(param) == 0 or fn.name.value != "__init__"):
            return None  # a method's callers are sought by its name alone, on any object: too many
        found = None
        self.project.reading.add(key)
        self.project.passing += 1
        try:
            sites = self.constructions(cls) if cls is not None else self.callers(fn)
            for site, call in sites[:MAX_CALLERS]:
                arg = passed_argument(fn, call, param)
                if isinstance(arg, cst.Name) and arg.value == "self":
                    owner = site.index.scope_for(call).cls
                    found = (site, owner) if owner is not None else None
                elif isinstance(arg, cst.BaseExpression):
                    found = site.object_class(arg, call)
                if found is not None:
                    break
        finally:
            self.project.reading.discard(key)
            self.project.passing -= 1
        memo[key] = found
        return found

    def _field_class(self, cls: cst.ClassDef, name: str, depth: int = 0) -> tuple[Self, cst.ClassDef] | None:
        """The class a field is annotated with in a class body (`model: Model = field(...)` of a
        dataclass or attrs class), in the class or its bases."""
        for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if (
                    isinstance(small, cst.AnnAssign)
                    and isinstance(small.target, cst.Name)
                    and small.target.value == name
                ):
                    for part in annotation_names(small.annotation.annotation):
                        found = self.find_class(part)
                        if found is not None:
                            return found
                    return None
        if depth < 4:
            for base_ev, base in self.base_classes(cls):
                found = base_ev._field_class(base, name, depth + 1)
                if found is not None:
                    return found
        return None

    def _scope_class(self, fn: cst.FunctionDef, name: str) -> tuple[Self, cst.ClassDef] | None:
        """The class of `name` in function `fn`: what it was last assigned by a class call, else the
        class its parameter stands for."""
        scope = self.index.scopes.get(fn)
        if scope is None:
            return None
        for binding in reversed(scope.bindings.get(name, ())):
            if binding.kind == "assign" and isinstance(binding.expr, cst.Call):
                return self.find_class(binding.expr.func)
        if name not in scope.params:
            return None
        default = _default_of(fn, name)
        if isinstance(default, (cst.Name, cst.Attribute)):
            found = self.find_class(default)
            if found is not None:
                return found
        return self._annotated_class(fn, name)

    def _parameter_class(self, node: cst.BaseExpression) -> tuple[Self, cst.ClassDef] | None:
        """The class a parameter stands for: its default when that is a class, else its annotation."""
        if not isinstance(node, cst.Name):
            return None
        scope = self.index.scope_for(node)
        if not (isinstance(scope.node, cst.FunctionDef) and node.value in scope.params):
            return None
        default = _default_of(scope.node, node.value)
        if isinstance(default, (cst.Name, cst.Attribute)):
            found = self.find_class(default)
            if found is not None:
                return found
        return self._annotated_class(scope.node, node.value)

    def _annotated_class(self, fn: cst.FunctionDef, name: str) -> tuple[Self, cst.ClassDef] | None:
        annotation = parameter_annotation(fn, name)
        for part in annotation_names(annotation) if annotation is not None else ():
            found = self.find_class(part)
            if found is not None:
                return found
        return None


def _connected_per_request(
    types: cst.BaseExpression | None, request_types: tuple[str, ...], default: bool
) -> bool:
    """Whether a declared field is per request: by what it says it is connected to
    (`input_types=["LanguageModel"]` is a model, `["Message"]` a message), else by its class."""
    if not isinstance(types, (cst.List, cst.Tuple)) or not types.elements:
        return default
    written = [
        string_value(e.value) if isinstance(e.value, cst.SimpleString) else None for e in types.elements
    ]
    if None in written:
        return default
    return any(t in request_types for t in written)


def _unknown_parameter(value: Value) -> bool:
    """A value that is only a parameter nothing tells more of (a constructor's, its makers unseen)."""
    return (
        len(value) == 1
        and isinstance(value[0], Hole)
        and not value[0].provenance.volatile
        and value[0].param is not None
    )


def _as_state(stored: Value) -> Value:
    """A value kept on an object: a parameter whose name says nothing is its state, not an input."""
    return map_holes(stored, lambda h: replace(h, provenance=Provenance.UNKNOWN) if h.weak else h)


def _declares_without_value(cls: cst.ClassDef, attr: str) -> bool:
    """Whether `cls` declares `attr` (annotated) without giving it a value."""
    for statement in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if (
                isinstance(small, cst.AnnAssign)
                and isinstance(small.target, cst.Name)
                and small.target.value == attr
            ):
                return small.value is None or _field_without_default(small.value)
    return False


def _positional_fields(cls: cst.ClassDef) -> list[str]:
    """The fields of a dataclass-like class (`name: str = field(...)`) that its generated
    `__init__` takes by position, in order: not `ClassVar`s, not `kw_only=True` ones."""
    out = []
    for statement in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if not (isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)):
                continue
            if any(func_name(n) == "ClassVar" for n in _annotation_heads(small.annotation.annotation)):
                continue
            value = small.value
            if isinstance(value, cst.Call) and any(
                a.keyword is not None and a.keyword.value == "kw_only" and func_name(a.value) == "True"
                for a in value.args
            ):
                continue
            out.append(small.target.value)
    return out


def _field_without_default(node: cst.BaseExpression | None) -> bool:
    """`field(repr=False)`: a dataclass field every instance must be given (by a subclass, say)."""
    if not (isinstance(node, cst.Call) and func_name(node.func) in ("field", "Field")):
        return False
    keywords = {a.keyword.value for a in node.args if a.keyword is not None}
    return not keywords & {"default", "default_factory"} and all(a.keyword is not None for a in node.args)
