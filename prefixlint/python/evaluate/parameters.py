"""Parameters: what a function's parameter holds when its caller is not followed, and what its
callers pass when they are.

A parameter is judged by its annotation (a `random.Random`, a set) or its name; a request entry
point's parameters are the request itself; the calls of the function in this module say what it
gets. A call inside a loop over a collection sends one request per item: the names the loop binds
are per-request values there. A template parameter with a default holds that default.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Self

import libcst as cst

from prefixlint.python.annotations import annotation_names, parameter_annotation
from prefixlint.python.cstwalk import kids
from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.evaluate.env import (
    MAX_CALLERS,
    MAX_DEPTH,
    PARAMETER_OF,
    SPREAD,
    Env,
    _annotation_heads,
    _default_of,
    _inside,
    passed_argument,
)
from prefixlint.python.scopes import ModuleIndex, Scope
from prefixlint.python.scopes import names_in_target as _names_in_target
from prefixlint.python.segments import Hole, Provenance, Value, choice, holes, is_constant
from prefixlint.python.volatile import SET_TYPES, name_words, parameter_provenance, qualified_provenance

# Classes whose instances are volatile (a parameter annotated so: `rnd: random.Random`).
_VOLATILE_TYPES = {
    "random.Random",
    "random.SystemRandom",
    "numpy.random.Generator",
    "numpy.random.RandomState",
}

# Words of a parameter's name that make its fields the app's settings or the command line's.
_SETTINGS_CONTAINERS = {"config", "configs", "cfg", "conf", "settings", "options", "opts", "env", "environ",
                        "secrets", "credentials", "args", "argv", "params", "flags", "kwargs"}  # fmt: skip

Loop = tuple[tuple[str, ...], cst.BaseExpression]  # the names a loop binds, and what it iterates
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


class Parameters(EvaluatorBase):
    """Parameters, what callers pass, and loops over items."""

    def parameter(self, name: str, scope: Scope, node: cst.CSTNode, env: Env) -> Value:
        """A parameter whose caller we do not follow: its annotation (a `random.Random`) or its name
        decides; a constructor's parameters configure the object and are static. Each such hole
        says which parameter it is, so that a call can put what it passes in its place."""
        fn = scope.node
        param = (id(fn), name)
        if isinstance(fn, cst.FunctionDef):
            entry = self.project.frameworks.entry_point(self.index, fn, name)
            if entry is not None and not isinstance(_default_of(fn, name), cst.Call):
                # What a route or a handler receives is the request itself, whatever its name (a
                # default made by a call, `Depends(get_db)`, is wiring, not input).
                where = f"a parameter of `{fn.name.value}()`, a request entry point ({entry.name})"
                (hole,) = self.hole(Provenance.REQUEST, node, name, weak=False)
                return (replace(hole, via=where, param=param),)
            if self.set_annotated(fn, name):
                # `enabled: set[str]` iterated: its order is the caller's process's, whatever it
                # holds (kept by a constructor, it is the attribute's order too)
                (hole,) = self.hole(Provenance.UNORDERED, node, name, weak=False)
                return (replace(hole, via=f"{PARAMETER_OF} `{fn.name.value}()`", param=param),)
            if fn.name.value == "__init__":
                (hole,) = self.hole(Provenance.UNKNOWN, node, name, by_name=True)
                return (replace(hole, param=param),)
            if env.summary is not fn:
                passed = self.passed_by_callers(fn, name)
                if passed is None:
                    passed = self.passed_elsewhere(fn, name, node)
                if passed is not None:
                    return passed
            where = f"{PARAMETER_OF} `{fn.name.value}()`"
        else:
            where = ""
        found = parameter_provenance(name)
        if found is None:
            (hole,) = self.hole(Provenance.UNKNOWN, node, name, by_name=True)
            return (replace(hole, param=param),)
        prov, weak = found
        (hole,) = self.hole(prov, node, name, by_name=True, weak=weak)
        return (replace(hole, via=where, param=param),)

    def field_of_parameter(self, base: Value, key: str, node: cst.CSTNode) -> Value | None:
        """`state["title"]`, `state.get("title")`, `state.title` of a parameter whose own name says
        nothing of what it holds (a LangGraph `state`, a `data` dict): judged by the key, as a
        parameter of that name is (`title` a per-request input at info, `model` configuration).
        Not in a constructor (its parameters configure the object), nor of settings or arguments
        (`config["title"]` is the app's), nor when its callers were followed (`base` is theirs)."""
        if len(base) != 1 or not isinstance(base[0], Hole) or not key.isidentifier():
            return None
        container = base[0]
        if container.provenance is not Provenance.UNKNOWN or container.param is None:
            return None
        fn = self.index.scope_for(node).node
        if not isinstance(fn, cst.FunctionDef) or id(fn) != container.param[0] or fn.name.value == "__init__":
            return None
        if (
            container.param[1] in ("self", "cls")
            or set(name_words(container.param[1])) & _SETTINGS_CONTAINERS
        ):
            return None
        found = parameter_provenance(key)
        if found is None:
            return None
        prov, weak = found
        (hole,) = self.hole(prov, node, by_name=True, weak=weak)
        where = f"`{key}` of `{container.param[1]}`, {PARAMETER_OF} `{fn.name.value}()`"
        return (replace(hole, via=where),)

    def passed_by_callers(self, fn: cst.FunctionDef, name: str) -> Value | None:
        """What the calls of `fn` in this module pass for parameter `name` (its default where a call
        leaves it out), or None when nothing in this module calls it: then its caller is unknown."""
        calls = [
            (self, c)
            for c in self.calls_named(fn.name.value)
            if not _inside(self.index, c, fn) and self.resolve_callable(c.func, c) == (self, fn)
        ][:MAX_CALLERS]
        return self.passed_at(fn, name, calls)

    def passed_at(self, fn: cst.FunctionDef, name: str, sites: list[tuple[Self, cst.Call]]) -> Value | None:
        """What the calls `sites` (each with the evaluator of its module) pass for parameter `name`
        of `fn` (its default where a call leaves it out), or None when there are none or one passes
        its own parameter on (its caller is unknown then)."""
        key = (id(fn), name)
        if key in self.project.following or not sites:
            return None
        self.project.following.add(key)
        try:
            values = []
            for site, call in sites:
                passed = site.argument_passed(fn, call, name)
                default = _default_of(fn, name)
                if passed is not None and _is_parameter(passed):
                    return None  # the caller passes its own parameter on: still an unknown caller
                if passed is not None and is_constant(passed) and site.index.in_main_guard(call):
                    continue  # a literal the script is tried with by hand: an example, not every request's
                if passed is not None:
                    values.append(site.anchor(passed, call))
                elif default is not None:
                    values.append(self.value(default, Env(depth=MAX_DEPTH // 2)))
                else:
                    values.append(site.hole(Provenance.UNKNOWN, call, name, by_name=True))
        finally:
            self.project.following.discard(key)
        return choice(values) if values else None

    def passed_elsewhere(self, fn: cst.FunctionDef, name: str, node: cst.CSTNode) -> Value | None:
        """What the calls of `fn` in other modules pass for parameter `name`, placed at `node`, where
        it enters this module's prompt (the message names where it comes from): the volatile values
        made by a library call that one of them passes (a clock, an id, the machine), else, when
        every one passes a constant, that text, as `passed_by_callers` does in this module. The
        module that calls may hold no prompt text of its own (`ask(time.time(), diff)`), so it is
        never checked itself. Otherwise (no caller seen, one passes an input or its own parameter
        on, one leaves it to the default) the parameter stays what its name says (entrypoints.py
        says when a request entry point passes one)."""
        key, project = (id(fn), name), self.project
        if key not in project.elsewhere:
            if project.seeking_elsewhere:  # one hop: what those callers pass on from theirs is not followed
                return None
            project.elsewhere[key] = None
            project.seeking_elsewhere = True
            try:
                project.elsewhere[key] = self._passed_elsewhere(fn, name)
            finally:
                project.seeking_elsewhere = False
        found = project.elsewhere[key]
        return self.anchor(found, node) if found is not None else None

    def argument_passed(self, fn: cst.FunctionDef, call: cst.Call, name: str) -> Value | None:
        """What `call`, in this module, passes for parameter `name` of `fn` (None: it leaves it to
        the default); only that argument is worked out."""
        # a call in a loop over items passes one item per call (each its own request)
        env = self.with_items(call, Env(depth=MAX_DEPTH // 2))
        node = passed_argument(fn, call, name)
        if node is SPREAD:
            return self.bind_arguments(fn, call, env).get(name)
        return self.value(node, env.deeper()) if isinstance(node, cst.BaseExpression) else None

    def _passed_elsewhere(self, fn: cst.FunctionDef, name: str) -> Value | None:
        volatile, constant = [], []
        sites = [
            (site, call)
            for site, call in self.callers(fn)
            if site is not self
            and site.resolve_callable(call.func, call) == (self, fn)  # not a method of that name elsewhere
            and not _checked_itself(site)
        ]
        for site, call in sites[:MAX_CALLERS]:
            found = site.argument_passed(fn, call, name)
            if found is None:
                constant.append(None)
                continue
            passed = site.anchor(found, call)
            if any(_made_volatile(h) for h in holes(passed)):
                volatile.append(passed)
            constant.append(passed if is_constant(passed) else None)
        if volatile:
            return choice(volatile)
        if constant and all(v is not None for v in constant):
            return choice([v for v in constant if v is not None])
        return None

    def annotation_provenance(self, fn: cst.FunctionDef, name: str) -> Provenance | None:
        """The provenance of a parameter annotated with a volatile type (`rnd: random.Random`)."""
        annotation = parameter_annotation(fn, name)
        for part in annotation_names(annotation) if annotation is not None else ():
            names = self.index.qualified_names(part, self.index.module_scope)
            if names & _VOLATILE_TYPES:
                return qualified_provenance(names & _VOLATILE_TYPES)
        return None

    def set_annotated(self, fn: cst.FunctionDef, name: str) -> bool:
        """Whether parameter `name` of `fn` is annotated as a set (`set[str]`, `AbstractSet[T]`,
        `frozenset | None`)."""
        p = fn.params
        for param in (*p.posonly_params, *p.params, *p.kwonly_params):
            if param.name.value == name and param.annotation is not None:
                for head in _annotation_heads(param.annotation.annotation):
                    names = self.index.qualified_names(head, self.index.module_scope)
                    names = {n.removeprefix("builtins.") for n in names}
                    if isinstance(head, cst.Name) and not names:
                        names = {head.value}
                    if names & SET_TYPES:
                        return True
        return False

    def receiver_provenance(self, node: cst.BaseExpression) -> Provenance | None:
        """The provenance of calls on an object of a volatile type: a parameter annotated
        `random.Random`, or `self.rnd` set from one in a method."""
        scope = self.index.scope_for(node)
        if (
            isinstance(node, cst.Name)
            and node.value in scope.params
            and isinstance(scope.node, cst.FunctionDef)
        ):
            return self.annotation_provenance(scope.node, node.value)
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
            and scope.cls is not None
        ):
            for binding in self.index.instance_attrs.get((scope.cls.name.value, node.attr.value), ()):
                if isinstance(binding.expr, cst.Name):
                    found = self.receiver_provenance(binding.expr)
                    if found is not None:
                        return found
        return None

    def with_items(self, call: cst.Call, env: Env) -> Env:
        """`env` with the names bound by the loops around `call` as per-item request values. A loop
        over fixed items (a literal list, constants) sends the same requests on every run: its names
        keep their values."""
        loops = loops_around(self.index, call)
        if not loops:
            return env
        shadow = dict(env.shadow)
        for names, iterable in loops:
            collection = self.value(iterable, env.deeper(shadow=shadow))
            if is_constant(collection) or not collection:
                continue
            # As confident as a parameter: sure when the collection is a per-request input known as
            # one (or volatile at its source), else "if its callers pass one".
            strong = any(
                h.provenance.volatile
                and not h.history
                and not h.weak
                and not h.by_name
                or h.provenance is Provenance.REQUEST
                and not h.weak
                and not h.history
                for h in holes(collection)
            )
            label = self.label(iterable)
            for name in names:
                (hole,) = self.hole(Provenance.REQUEST, iterable, name, by_name=True, weak=not strong)
                shadow[name] = (replace(hole, item=label, timing="call"),)
        return env.deeper(shadow=shadow) if shadow != env.shadow else env

    def template_of(self, node: cst.BaseExpression, value: Value, env: Env) -> Value:
        """The template a parameter holds where its callers are not seen: its default, when it has one
        (`tmpl: str = DEFAULT_TMPL`): a template configures the call, it is not the request's data."""
        if not (isinstance(node, cst.Name) and len(value) == 1 and isinstance(value[0], Hole)):
            return value
        if value[0].param is None:
            return value
        fn = self.index.scope_for(node).node
        default = _default_of(fn, node.value) if env.summary is not fn else None
        if default is None or (isinstance(default, cst.Name) and default.value == "None"):
            return value
        return self.value(default, Env(depth=env.depth + 1))


def _is_parameter(value: Value) -> bool:
    """A value that is just a parameter of the function it was read in."""
    return (
        len(value) == 1
        and isinstance(value[0], Hole)
        and value[0].by_name  # an entry point's parameter is the request, not an unknown caller's value
        and value[0].via.startswith(PARAMETER_OF)
    )


def loops_around(index: ModuleIndex, call: cst.Call) -> tuple[Loop, ...]:
    """The loops (outermost first) around `call` within its function (or the module's top level)."""
    owner = index.scope_for(call).node
    table = _TABLES.get(id(owner))
    if table is None or table[0] is not owner:
        if len(_TABLES) > 256:
            _TABLES.clear()
        found: dict[int, tuple[Loop, ...]] = {}
        _walk(owner, owner, (), found)
        table = _TABLES[id(owner)] = (owner, found)
    return table[1].get(id(call), ())


_TABLES: dict[int, tuple[cst.CSTNode, dict[int, tuple[Loop, ...]]]] = {}


def _walk(
    node: cst.CSTNode, owner: cst.CSTNode, loops: tuple[Loop, ...], out: dict[int, tuple[Loop, ...]]
) -> None:
    if node is not owner and isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return  # a scope of its own: its calls are looked up from it
    if isinstance(node, cst.Call):
        if loops:
            out[id(node)] = loops
        lam = node.args[0].value if len(node.args) >= 2 else None
        if isinstance(node.func, cst.Name) and node.func.value == "map" and isinstance(lam, cst.Lambda):
            # `map(lambda n: llm.predict(..., n), nodes)`: the lambda runs once per item
            for arg in node.args[1:]:
                _walk(arg, owner, loops, out)
            params = tuple(p.name.value for p in lam.params.params[:1])
            _walk(lam.body, owner, (*loops, (params, node.args[1].value)), out)
            return
    elif isinstance(node, cst.For):
        _walk(node.iter, owner, loops, out)
        _walk(node.body, owner, (*loops, (tuple(_names_in_target(node.target)), node.iter)), out)
        if node.orelse is not None:
            _walk(node.orelse, owner, loops, out)
        return
    elif isinstance(node, _COMPREHENSIONS):
        inner = loops
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            _walk(comp.iter, owner, inner, out)
            inner = (*inner, (tuple(_names_in_target(comp.target)), comp.iter))
            for test in comp.ifs:
                _walk(test, owner, inner, out)
            comp = comp.inner_for_in
        parts = (node.key, node.value) if isinstance(node, cst.DictComp) else (node.elt,)
        for part in parts:
            _walk(part, owner, inner, out)
        return
    for child in kids(node):  # libcst's `children` rebuilds the node on every read
        _walk(child, owner, loops, out)


def _made_volatile(hole: Hole) -> bool:
    """A volatile value a library call makes (not a per-request input, nor a guess from a name)."""
    return hole.provenance not in (Provenance.UNKNOWN, Provenance.REQUEST) and not hole.by_name


def _checked_itself(ev: EvaluatorBase) -> bool:
    """Whether a module is checked itself (it has prompt text of its own, prefilter.py): what it
    passes to a function of the project that builds a prompt, it reports where it passes it."""
    from prefixlint.python import cpython_tree, may_hold_prompts
    from prefixlint.python.prefilter import has_shapes

    text = ev.project.text(ev.path)
    if text is None or not may_hold_prompts(text):
        return False
    tree = cpython_tree(ev.path, text)
    return tree is not None and has_shapes(tree, ev.project.frameworks)
