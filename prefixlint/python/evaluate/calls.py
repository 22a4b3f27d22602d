"""Calls and callees: what a call gives, and the function of the project it runs.

Volatile library calls are holes; a framework's source or configuration call is what its row says;
a call of a project function is that function's output (its returns on the branches the literal
arguments take, or its yields), with what the call passes bound to its parameters; a call we
cannot follow is volatile when an input is, else unknown (or static text its name promises). The
calls of a module are indexed by callee name and by the function they are written in.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from typing import Self

import libcst as cst

from prefixlint.python.evaluate.base import SET, EvaluatorBase, bare_set
from prefixlint.python.evaluate.env import (
    _PASS_THROUGH,
    MAX_CALLS,
    MAX_DEPTH,
    Env,
    _message_role,
    _role_of,
    _tuple_element,
    _unordered,
    constant_arguments,
    func_name,
)
from prefixlint.python.evaluate.strings import (
    _DAY_CLOCKS,
    _FILL_METHODS,
    _day_format,
    _to_the_day,
    file_content,
)
from prefixlint.python.frameworks import ConfigModel
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import (
    EMPTY,
    Break,
    Hole,
    Open,
    Provenance,
    Value,
    choice,
    concat,
    first_volatile,
    holes,
    is_constant,
    is_static,
    map_holes,
    per_option,
    per_request,
    static_text,
    text,
    without,
)
from prefixlint.python.volatile import (
    SET_METHODS,
    call_name_provenance,
    qualified_provenance,
    reads_environment,
    says_prompt,
    says_prompt_attribute,
)

# Seeded with a literal, these give the same sequence on every run (`random.Random(0)`).
_SEEDABLE = {"random.Random", "numpy.random.default_rng", "numpy.random.RandomState", "random.seed"}
# Builtins whose result says nothing of its argument's text.
_OPAQUE = {"len", "bool", "isinstance", "hasattr", "getattr", "type", "id", "print"}
_OPENERS = {"builtins.open", "io.open", "codecs.open"}
# Return annotations of a flag or a number a caller branches on: what it gives is no prompt text.
_NOT_TEXT_RETURNS = {"bool"}
# Builtins whose result is their argument in another form: `int(time.time())` is still the clock.
_CONVERSIONS = {"int", "float", "round", "abs"}


class Calls(EvaluatorBase):
    """Calls and the functions they run."""

    def _v_Call(self, node: cst.Call, env: Env) -> Value:
        qnames = self.index.qualified_names(node.func)
        if qnames & _SEEDABLE and node.args and all(_is_literal(a.value) for a in node.args):
            return self.unknown(node)  # `random.Random(0)`: the same sequence on every run
        if (configured := self.config_default(node, env)) is not None:
            return configured  # `_get_path("prompt_file", os.path.join(HERE, "p.yaml"))`: that file
        if (configured := self.settings_read(node, env)) is not None:
            return configured  # `settings.get("agent.system", "")` of a settings object
        if reads_environment(qnames):
            return self.setting_read(node)  # `os.getenv("REGION")`: per deployment
        if (prov := qualified_provenance(qnames)) is not None:
            found = self.hole(prov, node)
            if qnames & _DAY_CLOCKS or (qnames & {"time.strftime"} and _day_format(node.args)):
                return _to_the_day(found)
            return found
        if (source := self.project.frameworks.match_source(self.index, node)) is not None:
            return self.source_hole(source, node)
        if (reply := self.project.frameworks.match_reply(self.index, node)) is not None:
            # a model's reply, made per request; named by the call, not by its first line of arguments
            return self.source_hole(reply[0], node, f"{self.label(node.func)}(...)", sink=reply[1])
        if (request := self.project.frameworks.match_request(self.index, node)) is not None:
            return self.request_hole(request, node)  # `input()`, `parser.parse_args()`: what a run brings
        if (schema := self.project.frameworks.match_schema(self.index, node.func)) is not None:
            return self.schema_value(node, schema, env)  # `Enum("Zone", names)`: the choices' order
        if isinstance(self.project.frameworks.match_call(self.index, node), ConfigModel):
            return self.unknown(node)  # `OpenAI(api_key=os.environ[...])` configures a client
        if (written := self.appended_value(node)) is not None:
            return written  # `parser.get_format_instructions()`: text the library writes
        if any(q.startswith("langchain") and q.endswith(".MessagesPlaceholder") for q in qnames):
            # the messages a template is given under that name: the conversation so far
            line, column = self.index.pos(node)
            return (Hole(Provenance.UNKNOWN, line, column, self.label(node), path=self.path, history=True),)
        name = func_name(node.func)
        deeper = env.deeper(template=False)  # a call's arguments are not the template
        args = [a for a in node.args if a.keyword is None and not a.star]
        kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if (role := _message_role(node, name)) is not None:
            content = kwargs.get("content") or kwargs.get("text")
            if content is None and args:
                content = args[-1].value if len(args) > 1 or _role_of(args[0].value) is None else None
            # `format_chat_message(role="system", message=...)` of the project: what it builds
            made = self.call_output(node, env) if content is None and kwargs else None
            if made is not None and isinstance(made[0], Break):
                return made
            return concat((Break(role),), self.value(content, deeper) if content is not None else EMPTY)
        if name in ("field", "Field") and (kwargs.keys() & {"default", "default_factory"} or args):
            # a dataclass / pydantic field: what an instance holds unless the caller sets it
            default = kwargs.get("default") or kwargs.get("default_factory") or args[0].value
            return self.value(default, deeper)

        read = self.read_call(node, env)
        if read is not None:
            return read
        first = self.value(args[0].value, deeper) if args else None
        if first is not None and (qnames & _OPENERS or name == "open" and isinstance(node.func, cst.Name)):
            return file_content(self._opaque(node, name, self.text_parts(node, name, deeper)))

        if "typing.cast" in qnames and len(args) == 2:
            return self.value(args[1].value, deeper)  # `cast(TextNode, node)`: the value itself
        if qnames & {"textwrap.dedent", "inspect.cleandoc"} and first is not None:
            return per_option(first, lambda v: text(textwrap.dedent(static_text(v))) if is_static(v) else v)
        if "json.dumps" in qnames and first is not None:
            dumped = self.dumps_constant(node, env)
            if dumped is not None:
                return dumped
            sort_keys = kwargs.get("sort_keys")
            if sort_keys is not None and not (isinstance(sort_keys, cst.Name) and sort_keys.value == "False"):
                first = without(first, Provenance.UNORDERED)
            return self.propagate(node, [self.iterated(first, args[0].value)])  # its items, in order
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value in SET_METHODS
            and _unordered(self.value(node.func.value, deeper))
        ):
            return self.hole(Provenance.UNORDERED, node, SET)  # `BASE.union(EXTRA)`: a new set
        if isinstance(node.func, cst.Name) and not self._is_local_function(node.func):
            if name in ("set", "frozenset"):
                return self.hole(Provenance.UNORDERED, node, SET)
            if name in ("str", "repr", "format") and first is not None:
                return self.iterated(first, args[0].value)  # `str(tools)`: the set's items, in its order
            if (name in _PASS_THROUGH or qnames & {"pathlib.Path", "pathlib.PurePath"}) and first is not None:
                return first
            if name == "getattr" and (read := self.own_attribute(node, env)) is not None:
                return read
            if name in _OPAQUE:
                return self.unknown(node)
            if name in _CONVERSIONS and first is not None:
                return self.propagate(node, [first])

        if self._order_free(node.func, qnames):
            # `max(os.listdir(d))`, `os.path.commonpath(list(paths))`, `sorted(tools)`: the same
            # result in any order, so an order is no provenance of it; what else is given still is
            parts = [without(p, Provenance.UNORDERED) for p in self.text_parts(node, name, deeper)]
            return self.propagate(node, parts)

        called = self.call_output(node, env)
        if called is not None:
            called = self.named_setting(node, called)  # `_get_str("role_name", ...)` over the env
            if not is_constant(called) and first_volatile(called) is None:
                # `node.get_content()` of a per-request `node`: what the method reads of its own
                # object we cannot see, but the object is the request's
                found = self._request_receiver(node.func, deeper)
                if found is not None:
                    return found
            return called

        template_class = isinstance(node.func, cst.Name) or name[:1].isupper()  # not `x.render_template()`
        if name.endswith("Template") and template_class and (args or kwargs):
            # `PromptTemplate("...")`, `string.Template(...)`, `PromptTemplate(template="...")`: the
            # text, formatted later
            source = kwargs.get("template") or kwargs.get("source") or (args[0].value if args else None)
            if source is not None:
                return self.template_call(node, self._template_source(source, env), env)
        if isinstance(node.func, cst.Attribute):
            return self.method_call(node, name, args, kwargs, first, env, deeper)
        parts = self.text_parts(node, name, deeper)
        if not any(first_volatile(p) for p in parts) and (prov := call_name_provenance(name)) is not None:
            return self.hole(prov, node, f"{name}()", by_name=True)
        return self._opaque(node, name, parts)

    def _request_receiver(self, func: cst.BaseExpression, env: Env) -> Value | None:
        """The per-request input a method is called on (`node` of `node.get_content()`, a
        parameter or a loop item, not `self`), or None."""
        if not isinstance(func, cst.Attribute):
            return None
        base = func.value
        while isinstance(base, cst.Attribute):
            base = base.value
        if not isinstance(base, cst.Name) or base.value in ("self", "cls"):
            return None
        receiver = self.value(func.value, env)
        if len(receiver) == 1 and isinstance(receiver[0], Hole):
            return receiver if receiver[0].provenance is Provenance.REQUEST else None
        return None

    def text_arguments(self, call: cst.Call) -> list[cst.Arg]:
        """The arguments of a call that may end up in its result's text: not the ones that only
        configure it (`api_key=`, `headers=`, `timeout=`: the table's `not_prompt` keywords) nor
        those that only order or pick what it gives (`key=` of `max`: its `[[ordering]]` rows)."""
        skip = self.project.frameworks.unwritten_keywords
        return [a for a in call.args if a.keyword is None or a.keyword.value not in skip]

    def text_parts(self, call: cst.Call, name: str, env: Env) -> list[Value]:
        """The values of a call's text arguments. A setting read from the environment and handed to
        an object by keyword configures the object, whatever the keyword is called
        (`GoogleWebSearchDriver(api_key=os.environ[...], search_id=os.environ[...])`), unless the
        keyword says it is prompt text (`Persona(instructions=os.environ["PERSONA"])`)."""
        parts = []
        for arg in self.text_arguments(call):
            value = self.value(arg.value, env)
            found = holes(value)
            configures = (
                name[:1].isupper()
                and arg.keyword is not None
                and not says_prompt_attribute(arg.keyword.value)
                and found
                and all(h.provenance is Provenance.ENVIRONMENT for h in found)
            )
            if not configures:
                parts.append(value)
        return parts

    def _opaque(self, node: cst.Call, name: str, parts: list[Value]) -> Value:
        """A call we cannot follow: volatile if an input is volatile by its source (a name is only a
        guess, and a looked-up key is not written, and a set passed whole is iterated into no text
        we see); static-but-unknown text when every input is static, or when its name says it
        builds a prompt."""
        for part in parts:
            for h in holes(part):
                if h.provenance.volatile and not h.by_name and not bare_set(h):
                    return (h,)
        if parts and all(is_constant(p) for p in parts) or says_prompt(name):
            return (Open(self.index.pos(node)[0]),)
        if any(per_request(h) for part in parts for h in holes(part)):
            (hole,) = self.unknown(node)
            return (replace(hole, per_call=True),)
        return self.unknown(node)

    def _order_free(self, func: cst.BaseExpression, qnames: set[str]) -> bool:
        """Whether the callee is an order-free reduction of the table's `[[ordering]]` rows: a
        builtin named bare (not one the module defines) or an imported function by its name."""
        free = self.project.frameworks.order_free_calls
        if isinstance(func, cst.Name) and not qnames and not self._is_local_function(func):
            return func.value in free
        return bool(qnames & free)

    def _is_local_function(self, func: cst.Name) -> bool:
        return func.value in self.index.functions

    def resolve_callable(
        self, func: cst.BaseExpression, call: cst.CSTNode
    ) -> tuple[Self, cst.FunctionDef] | None:
        """The function `func` names, in this module or another of the project: `helper`,
        `self.method` (inherited too), `Class.method`, `module.helper`, an imported helper."""
        if isinstance(func, cst.Name):
            fn = self.index.functions.get(func.value)
            if fn is not None:
                return self, fn
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            owner = func.value.value
            if owner in ("self", "cls"):
                cls = self.index.scope_for(call).cls
                return self.method(cls, func.attr.value) if cls is not None else None
            if owner in self.index.classes:
                return self.method(self.index.classes[owner], func.attr.value)
        found = self._imported_function(self.index.qualified_names(func, self.index.module_scope), 2)
        if found is not None:
            return found
        if isinstance(func, cst.Attribute):  # `Builder().build()`, `builder.build()`
            owner = self.object_class(func.value, call, func.attr.value)
            if owner is not None:
                return owner[0].method(owner[1], func.attr.value)
        return None

    def _imported_function(self, qualified: set[str], hops: int) -> tuple[Self, cst.FunctionDef] | None:
        """The function (or method) an import names, through at most `hops` re-exports (a
        package's `__init__.py` that imports it from the module defining it)."""
        for name in sorted(qualified):
            found = self.resolve(name)
            if found is None:
                continue
            evaluator, attr = found
            head, _, tail = attr.partition(".")
            if not tail and head in evaluator.index.functions:
                return evaluator, evaluator.index.functions[head]
            if tail and head in evaluator.index.classes:
                return evaluator.method(evaluator.index.classes[head], tail)
            if hops and not tail and not evaluator.index.module_scope.bindings.get(head):
                again = evaluator._imported_function(evaluator.index.imported_as(head), hops - 1)
                if again is not None:
                    return again
        return None

    def element_value(self, node: cst.BaseExpression, element: int, env: Env) -> Value | None:
        """Element `element` of the tuple `node` is or a project function returns (`head, tools =
        build()`, `await build()`), or None when that is not known."""
        if isinstance(node, cst.Await):
            node = node.expression
        if isinstance(node, (cst.Tuple, cst.List)):
            found = _tuple_element(node, element)
            return self.value(found, env) if found is not None else None
        if isinstance(node, cst.Call):
            return self.call_output(node, env, element)
        return None

    def call_output(self, call: cst.Call, env: Env, element: int | None = None) -> Value | None:
        """What a call of a function the project defines gives (placed at the call when the
        function is in another module), or None if the callee cannot be read. With `element`,
        that element of the tuple it returns."""
        callee = self.resolve_callable(call.func, call)
        if callee is None:
            return None
        evaluator, fn = callee
        returns = fn.returns.annotation if fn.returns is not None else None
        if returns is not None and _annotation_name(returns) in _NOT_TEXT_RETURNS:
            # `self._get_bool("prompt_compression", False)` read from the environment: a switch the
            # code branches on, fixed per deployment, not text a prompt holds
            return self.unknown(call)
        bound = self.bind_arguments(fn, call, env)
        consts = constant_arguments(fn, call)
        if isinstance(call.func, cst.Attribute) and (made := self.instance_state(call.func.value, env)):
            env = env.deeper(args={**env.args, **made})  # `Prompt("system.j2").render(...)`
        output = evaluator.function_output(
            fn, call if evaluator is self else None, env, bound, consts, element
        )
        if output is None:
            return None
        output = self.run_at(output, call)
        return output if evaluator is self else self.anchor(output, call)

    def run_at(self, value: Value, call: cst.Call) -> Value:
        """What a function gives, run by a call at import (`SYSTEM = build()`) or in a constructor:
        the values its code makes are made then, once, not on each request (a placeholder or a
        parameter, known by its name, is filled where it is, not where this runs)."""
        timing = self.timing(call)
        if timing == "call":
            return value
        return map_holes(
            value, lambda h: replace(h, timing=timing) if h.timing == "call" and not h.by_name else h
        )

    def called_value(self, node: cst.BaseExpression, env: Env) -> Value:
        """An argument's text; a function or method passed by reference (`instructions=build_instructions`,
        `instructions=self.instructions`, one imported, a `partial_variables` callable) is called by
        the framework for each request: what it returns."""
        if isinstance(node, (cst.Name, cst.Attribute)) and not self._bound_here(node):
            found = self.resolve_callable(node, node)
            if found is not None:
                callee, fn = found
                output = callee.function_output(fn, None, env)
                return output if callee is self else self.anchor(output, node)
        return self.value(node, env)

    def _bound_here(self, node: cst.BaseExpression) -> bool:
        """A name its function binds (a parameter `prompt`), not the module's function of that name."""
        scope = self.index.scope_for(node)
        return (
            isinstance(node, cst.Name)
            and scope is not self.index.module_scope
            and (node.value in scope.params or node.value in scope.bindings)
        )

    def function_output(
        self,
        fn: cst.FunctionDef,
        call: cst.Call | None,
        env: Env,
        bound: dict[str, Value] | None = None,
        consts: dict[str, object] | None = None,
        element: int | None = None,
    ) -> Value | None:
        """What a helper contributes: its yields in order, or one of its return values (those on
        the branches the call's literal arguments take); with `element`, that element of the
        tuples it returns (None when a return is neither a tuple literal nor a call whose element
        is known)."""
        if fn in self.active or env.depth > MAX_DEPTH or len(self.active) >= MAX_CALLS:
            return self.unknown(call or fn)
        args = dict(env.args)
        if bound is not None:
            args[fn] = bound
        elif call is not None:
            args[fn] = self.bind_arguments(fn, call, env)
        if consts is None and call is not None:
            consts = constant_arguments(fn, call)
        known = {**env.consts, fn: consts} if consts is not None else env.consts
        inner = Env(args=args, depth=env.depth + 1, summary=env.summary, consts=known)
        self.active.append(fn)
        try:
            body = self.index.bodies[fn]
            if body.yields:
                return concat(*(self.yielded(y, inner) for y in body.yields)) if element is None else None
            returned = [
                r.value
                for r in body.returns
                if r.value is not None and self.may_run(self.index.branch_of.get(r, ()), inner)
            ]
            if element is None:
                options = [self.value(r, inner) for r in returned]
            else:  # a tuple literal's element, or that of what a returned call gives
                elements = [self.element_value(r, element, inner) for r in returned]
                if any(e is None for e in elements):
                    return None
                options = [e for e in elements if e is not None]
        finally:
            self.active.pop()
        if not options:
            return self.unknown(call or fn)
        return choice(options)

    def yielded(self, node: cst.Yield, env: Env) -> Value:
        if node.value is None:
            return EMPTY
        if isinstance(node.value, cst.From):
            item = node.value.item
            if isinstance(item, cst.Call):
                called = self.call_output(item, env)
                if called is not None:
                    return called
                if says_prompt(func_name(item.func)):
                    return (Open(self.index.pos(item)[0]),)
            return self.propagate(item, [self.value(item, env)])
        return self.value(node.value, env)

    def bind_arguments(self, fn: cst.FunctionDef, call: cst.Call, env: Env) -> dict[str, Value]:
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        if params and params[0] in ("self", "cls"):  # a method (of this module's class or another's)
            params = params[1:]
        bound: dict[str, Value] = {}
        positional = [a for a in call.args if a.keyword is None]
        for name, arg in zip(params, positional, strict=False):
            if arg.star:
                break
            bound[name] = self.value(arg.value, env.deeper())
        for arg in call.args:
            if arg.keyword is not None:
                bound[arg.keyword.value] = self.value(arg.value, env.deeper())
            elif arg.star == "**":  # `self.send(**kwargs)`: a dict built here, or one a helper returns
                for key, value in self.passed_mapping(arg.value, env).items():
                    bound.setdefault(key, value)
        return bound

    def calls_filling(self, constant: str) -> list[cst.Call]:
        """The calls in this module that fill the placeholders of `constant` (`CONSTANT.format(...)`)."""
        return [
            c
            for method in _FILL_METHODS
            for c in self.calls_named(method)
            if isinstance(c.func, cst.Attribute)
            and isinstance(c.func.value, cst.Name)
            and c.func.value.value == constant
        ]

    def calls_named(self, name: str) -> list[cst.Call]:
        """The calls in this module of a function or method called `name`."""
        if self._calls is None:
            self._calls = {}
            for entering, node in self.index.events:
                if entering and type(node) is cst.Call:
                    self._calls.setdefault(func_name(node.func), []).append(node)
        return self._calls.get(name, [])


def _is_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString))


def calls_in(index: ModuleIndex, fn: cst.FunctionDef) -> list[cst.Call]:
    """The calls written inside `fn` (nested functions included), in source order."""
    by_function = _CALLS.get(id(index))
    if by_function is None or by_function[0] is not index:
        table: dict[int, list[cst.Call]] = {}
        stack: list[cst.FunctionDef] = []
        for entering, node in index.events:
            if type(node) is cst.FunctionDef:
                if entering:
                    stack.append(node)
                else:
                    stack.pop()
            elif entering and type(node) is cst.Call:
                for owner in stack:
                    table.setdefault(id(owner), []).append(node)
        if len(_CALLS) > 512:
            _CALLS.clear()
        by_function = _CALLS[id(index)] = (index, table)
    return by_function[1].get(id(fn), [])


_CALLS: dict[int, tuple[ModuleIndex, dict[int, list[cst.Call]]]] = {}


def _annotation_name(node: cst.BaseExpression) -> str:
    return node.value if isinstance(node, cst.Name) else ""
