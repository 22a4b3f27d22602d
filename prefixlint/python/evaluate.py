"""Symbolic evaluation of string-building expressions into segments (never runs the code).

Literals stay text; volatile library calls, volatile-named inputs and unordered iteration become
holes; same-module names and helpers are followed; anything else is an unknown hole."""

from __future__ import annotations

import re
import string
import textwrap
from dataclasses import dataclass, field

import libcst as cst

from prefixlint.python.scopes import Binding, ModuleIndex, Pos, Scope
from prefixlint.python.segments import (
    EMPTY,
    Break,
    Hole,
    Open,
    Provenance,
    Text,
    Value,
    concat,
    first_volatile,
    is_static,
    join,
    map_text,
    static_text,
    strip_edges,
    text,
    without,
)
from prefixlint.python.volatile import ROLES, name_provenance, qualified_provenance, says_prompt

MAX_DEPTH = 12
_PERCENT = re.compile(r"%(?:\((\w+)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[sdrfiaeEgGxXoc%]")
_IDENT = re.compile(r"[A-Za-z_]\w*$")
_PASS_THROUGH = {"str", "list", "tuple", "repr", "format", "reversed"}
_OPAQUE = {"len", "bool", "int", "float", "isinstance", "hasattr", "getattr", "type", "id", "print"}
_CASE_METHODS = {"upper": str.upper, "lower": str.lower, "title": str.title, "capitalize": str.capitalize}


@dataclass(frozen=True)
class Env:
    """Argument values of the helpers being inlined, and names bound by comprehensions."""

    args: dict[cst.CSTNode, dict[str, Value]] = field(default_factory=dict)
    shadow: dict[str, Value] = field(default_factory=dict)
    depth: int = 0
    template: bool = False  # string literals are templates whose `{placeholders}` are filled later

    def deeper(self, **changes: object) -> Env:
        fields = {
            "args": self.args,
            "shadow": self.shadow,
            "depth": self.depth + 1,
            "template": self.template,
        }
        return Env(**{**fields, **changes})


def _message_role(call: cst.Call, func_name: str) -> str | None:
    """The role of a message constructor call (`SystemMessage(...)`, `Message("system", ...)`), else None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "role":
            return _role_of(arg.value) or "unknown"
    if not func_name.endswith("Message"):
        return None
    prefix = func_name[: -len("Message")].lower()
    if prefix in ROLES:
        return prefix
    positional = [a.value for a in call.args if a.keyword is None]
    if positional and (role := _role_of(positional[0])):
        return role
    return "unknown" if any(a.keyword and a.keyword.value == "content" for a in call.args) else None


def _role_of(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        value = node.evaluated_value.lower()
        return value if value in ROLES else None
    if isinstance(node, cst.Attribute):  # MessageRole.SYSTEM, Role.USER
        value = node.attr.value.lower()
        return value if value in ROLES else None
    return None


def func_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _fstring_text(raw: str, prefix: str) -> str:
    raw = raw.replace("{{", "{").replace("}}", "}")
    if "r" in prefix.lower():
        return raw
    try:
        return raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return raw


class Evaluator:
    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self.active: list[cst.FunctionDef] = []

    # --- helpers -------------------------------------------------------------------------------
    def label(self, node: cst.CSTNode) -> str:
        code = self.index.module.code_for_node(node).strip().splitlines()[0]
        return code if len(code) <= 60 else code[:57] + "..."

    def hole(
        self, provenance: Provenance, node: cst.CSTNode, label: str | None = None, by_name: bool = False
    ) -> Value:
        line, column = self.index.pos(node)
        return (Hole(provenance, line, column, label or self.label(node), by_name),)

    def unknown(self, node: cst.CSTNode) -> Value:
        return self.hole(Provenance.UNKNOWN, node)

    def propagate(self, node: cst.CSTNode, parts: list[Value]) -> Value:
        """An opaque result that still depends on its inputs: volatile if any input is."""
        for part in parts:
            if (h := first_volatile(part)) is not None:
                return (h,)
        return self.unknown(node)

    # --- expressions ---------------------------------------------------------------------------
    def value(self, node: cst.BaseExpression, env: Env) -> Value:
        if env.depth > MAX_DEPTH:
            return self.unknown(node)
        method = getattr(self, "_v_" + type(node).__name__, None)
        return method(node, env) if method else self.unknown(node)

    def _v_SimpleString(self, node: cst.SimpleString, env: Env) -> Value:
        v = node.evaluated_value
        value = text(v) if isinstance(v, str) else text(v.decode("latin-1"))
        return self.fill(value, node, [], {}) if env.template else value

    def _v_ConcatenatedString(self, node: cst.ConcatenatedString, env: Env) -> Value:
        return concat(self.value(node.left, env), self.value(node.right, env))

    def _v_FormattedString(self, node: cst.FormattedString, env: Env) -> Value:
        parts: list[Value] = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(text(_fstring_text(part.value, node.prefix)))
            else:
                parts.append(self.value(part.expression, env))
        return concat(*parts)

    def _v_Integer(self, node: cst.Integer, env: Env) -> Value:
        return text(node.value)

    _v_Float = _v_Integer

    def _v_Await(self, node: cst.Await, env: Env) -> Value:
        return self.value(node.expression, env)

    def _v_Name(self, node: cst.Name, env: Env) -> Value:
        return self.lookup(node.value, node, env)

    def _v_Attribute(self, node: cst.Attribute, env: Env) -> Value:
        if (prov := qualified_provenance(self.index.qualified_names(node))) is not None:
            return self.hole(prov, node)
        receiver = node.value
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            scope = self.index.scope_for(node)
            if scope.cls is not None:
                class_scope = self.index.scopes[scope.cls]
                if class_scope.bindings.get(node.attr.value):
                    return self.binding_value(
                        node.attr.value, class_scope, class_scope.bindings[node.attr.value][-1], env
                    )
        base = self.value(receiver, env.deeper())
        if (h := first_volatile(base)) is not None and not h.by_name:
            return (h,)
        if (prov := name_provenance(node.attr.value, attribute=True)) is not None:
            return self.hole(prov, node, by_name=True)
        return self.unknown(node)

    def _v_Subscript(self, node: cst.Subscript, env: Env) -> Value:
        return self.propagate(node, [self.value(node.value, env.deeper())])

    def _v_BinaryOperation(self, node: cst.BinaryOperation, env: Env) -> Value:
        left, right = self.value(node.left, env.deeper()), self.value(node.right, env.deeper())
        if isinstance(node.operator, cst.Add):
            return concat(left, right)
        if isinstance(node.operator, cst.Modulo):
            return self.percent(left, node.right, env, node)
        return self.propagate(node, [left, right])

    def _choose(self, node: cst.CSTNode, options: list[Value]) -> Value:
        # A branch we cannot decide: the volatile one if any (it is what may reach the prompt),
        # else the one with the most static text.
        for option in options:
            if first_volatile(option) is not None:
                return option
        return max(options, key=lambda v: len(static_text(v)))

    def _v_BooleanOperation(self, node: cst.BooleanOperation, env: Env) -> Value:
        return self._choose(node, [self.value(node.left, env.deeper()), self.value(node.right, env.deeper())])

    def _v_IfExp(self, node: cst.IfExp, env: Env) -> Value:
        return self._choose(
            node, [self.value(node.body, env.deeper()), self.value(node.orelse, env.deeper())]
        )

    def _v_Set(self, node: cst.CSTNode, env: Env) -> Value:
        return self.hole(Provenance.UNORDERED, node, "a set")

    _v_SetComp = _v_Set

    def _v_List(self, node: cst.CSTNode, env: Env) -> Value:
        items = self.items(node, env)
        return concat(*items) if items is not None else self.unknown(node)

    _v_ListComp = _v_List
    _v_GeneratorExp = _v_List

    def _v_DictComp(self, node: cst.DictComp, env: Env) -> Value:
        # Built in the order of what it iterates: volatile if that is (a set, a sample).
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            if (h := first_volatile(self.value(comp.iter, env.deeper()))) is not None and not h.by_name:
                return (h,)
            comp = comp.inner_for_in
        return self.unknown(node)

    def _v_Tuple(self, node: cst.Tuple, env: Env) -> Value:
        elements = [e.value for e in node.elements]
        if len(elements) == 2 and (role := _role_of(elements[0])):  # ("system", "...") in LangChain
            return concat((Break(role),), self.value(elements[1], env.deeper()))
        return self._v_List(node, env)

    def _v_Dict(self, node: cst.Dict, env: Env) -> Value:
        entries = {
            e.key.evaluated_value: e.value
            for e in node.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
        }
        if "role" in entries:
            role = _role_of(entries["role"]) or "unknown"
            content = entries.get("content")
            body = self.value(content, env.deeper()) if content is not None else EMPTY
            return concat((Break(role),), body)
        for key in ("text", "content"):  # a content part: {"type": "text", "text": ...}
            if key in entries:
                return self.value(entries[key], env.deeper())
        return self.propagate(
            node, [self.value(e.value, env.deeper()) for e in node.elements if isinstance(e, cst.DictElement)]
        )

    # --- calls ---------------------------------------------------------------------------------
    def _v_Call(self, node: cst.Call, env: Env) -> Value:
        qnames = self.index.qualified_names(node.func)
        if (prov := qualified_provenance(qnames)) is not None:
            return self.hole(prov, node)
        name = func_name(node.func)
        deeper = env.deeper(template=False)  # a call's arguments are not the template
        args = [a for a in node.args if a.keyword is None and not a.star]
        kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if (role := _message_role(node, name)) is not None:
            content = kwargs.get("content") or kwargs.get("text")
            if content is None and args:
                content = args[-1].value if len(args) > 1 or _role_of(args[0].value) is None else None
            return concat((Break(role),), self.value(content, deeper) if content is not None else EMPTY)
        first = self.value(args[0].value, deeper) if args else None

        if qnames & {"textwrap.dedent", "inspect.cleandoc"} and first is not None:
            return text(textwrap.dedent(static_text(first))) if is_static(first) else first
        if "json.dumps" in qnames and first is not None:
            sort_keys = kwargs.get("sort_keys")
            if sort_keys is not None and not (isinstance(sort_keys, cst.Name) and sort_keys.value == "False"):
                first = without(first, Provenance.UNORDERED)
            return self.propagate(node, [first])
        if isinstance(node.func, cst.Name) and not self._is_local_function(node.func):
            if name == "sorted" and first is not None:
                return without(self.propagate(node, [first]), Provenance.UNORDERED)
            if name in ("set", "frozenset"):
                return self.hole(Provenance.UNORDERED, node, "a set")
            if name in _PASS_THROUGH and first is not None:
                return first
            if name in _OPAQUE:
                return self.unknown(node)

        if isinstance(node.func, cst.Attribute) and (fn := self.resolve_function(node.func, node)) is None:
            method = node.func.attr.value
            receiver = self.value(node.func.value, deeper)
            if method == "format":
                return self.format(receiver, node, env)
            if method == "join":
                items = self.items(args[0].value, deeper) if args else None
                if items is None:
                    return self.propagate(node, [first] if first is not None else [])
                return join(receiver, items)
            if method in ("strip", "lstrip", "rstrip"):
                chars = static_text(first) if first is not None and is_static(first) else None
                return strip_edges(receiver, chars, left=method != "rstrip", right=method != "lstrip")
            if method in _CASE_METHODS:
                return map_text(receiver, _CASE_METHODS[method])
            if method == "replace" and len(args) >= 2 and first is not None and is_static(first):
                return self.replace(receiver, static_text(first), self.value(args[1].value, deeper))
            if method in ("from_template", "from_messages") and args:
                return self.value(args[0].value, env.deeper(template=True))
            parts = [receiver] + [self.value(a.value, deeper) for a in node.args]
            out = self.propagate(node, parts)
            return self._opaque_prompt(node, name, out)

        fn = self.resolve_function(node.func, node)
        if fn is not None:
            return self.function_output(fn, node, env)
        parts = [self.value(a.value, deeper) for a in node.args]
        return self._opaque_prompt(node, name, self.propagate(node, parts))

    def _opaque_prompt(self, node: cst.Call, name: str, out: Value) -> Value:
        """A call into another module whose name says prompt: likely static text we cannot see."""
        if first_volatile(out) is None and says_prompt(name):
            return (Open(self.index.pos(node)[0]),)
        return out

    def _is_local_function(self, func: cst.Name) -> bool:
        return func.value in self.index.functions

    def resolve_function(self, func: cst.BaseExpression, call: cst.CSTNode) -> cst.FunctionDef | None:
        """A function of this module that `func` names: `helper`, `self.method`, `Class.method`."""
        if isinstance(func, cst.Name):
            return self.index.functions.get(func.value)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            owner = func.value.value
            if owner in ("self", "cls"):
                cls = self.index.scope_for(call).cls
                return self.index.methods.get((cls.name.value, func.attr.value)) if cls is not None else None
            return self.index.methods.get((owner, func.attr.value))
        return None

    def function_output(self, fn: cst.FunctionDef, call: cst.Call | None, env: Env) -> Value:
        """What a helper contributes: its yields in order, or its most telling return value."""
        if fn in self.active or env.depth > MAX_DEPTH:
            return self.unknown(call or fn)
        args = dict(env.args)
        if call is not None:
            args[fn] = self.bind_arguments(fn, call, env)
        inner = Env(args=args, depth=env.depth + 1)
        self.active.append(fn)
        try:
            body = self.index.bodies[fn]
            if body.yields:
                return concat(*(self.yielded(y, inner) for y in body.yields))
            options = [self.value(r.value, inner) for r in body.returns if r.value is not None]
        finally:
            self.active.pop()
        if not options:
            return self.unknown(call or fn)
        volatile = [o for o in options if first_volatile(o) is not None]
        return volatile[-1] if volatile else max(options, key=lambda v: len(static_text(v)))

    def yielded(self, node: cst.Yield, env: Env) -> Value:
        if node.value is None:
            return EMPTY
        if isinstance(node.value, cst.From):
            item = node.value.item
            if isinstance(item, cst.Call):
                fn = self.resolve_function(item.func, item)
                if fn is not None:
                    return self.function_output(fn, item, env)
                if says_prompt(func_name(item.func)):
                    return (Open(self.index.pos(item)[0]),)
            return self.propagate(item, [self.value(item, env)])
        return self.value(node.value, env)

    def bind_arguments(self, fn: cst.FunctionDef, call: cst.Call, env: Env) -> dict[str, Value]:
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        if fn in self.index.class_of and params and params[0] in ("self", "cls"):
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
        return bound

    # --- names ---------------------------------------------------------------------------------
    def lookup(self, name: str, node: cst.CSTNode, env: Env) -> Value:
        if name in env.shadow:
            return env.shadow[name]
        scope = self.index.scope_for(node)
        pos = self.index.pos(node)
        found = self.scoped_value(name, scope, pos, node, env)
        if found is not None:
            return found
        if (prov := qualified_provenance(self.index.qualified_names(node))) is not None:
            return self.hole(prov, node)
        return self.unknown(node)

    def scoped_value(self, name: str, scope: Scope, pos: Pos, node: cst.CSTNode, env: Env) -> Value | None:
        """The value of `name` read at `pos` in `scope`, or None if nothing in this module binds it."""
        earlier = [b for b in scope.bindings.get(name, ()) if b.pos < pos]
        if earlier:
            return self.binding_value(name, scope, earlier[-1], env)
        if name in scope.params:
            bound = env.args.get(scope.node, {})
            if name in bound:
                return bound[name]
            return self.hole(name_provenance(name) or Provenance.UNKNOWN, node, name, by_name=True)
        if scope.parent is not None:
            module = scope.parent
            bindings = module.bindings.get(name, ())
            if bindings:  # a module name read in a function: its last binding
                return self.binding_value(name, module, bindings[-1], Env(args=env.args, depth=env.depth + 1))
        return None

    def binding_value(self, name: str, scope: Scope, binding: Binding, env: Env) -> Value:
        deeper = env.deeper()
        if binding.kind == "assign" and binding.expr is not None:
            return self.in_loop(binding, self.value(binding.expr, deeper), deeper)
        if binding.kind in ("aug", "append", "extend") and binding.expr is not None:
            before = self.scoped_value(name, scope, binding.pos, binding.expr, deeper)
            added = self.in_loop(binding, self.value(binding.expr, deeper), deeper)
            return concat(before or EMPTY, added)
        if binding.kind == "shuffle" and binding.expr is not None:
            return self.hole(Provenance.RANDOM, binding.expr)
        if binding.kind == "loop" and binding.expr is not None:
            return self.propagate(binding.expr, [self.value(binding.expr, deeper)])
        line, column = binding.pos
        return (Hole(Provenance.UNKNOWN, line, column, name),)

    def in_loop(self, binding: Binding, value: Value, env: Env) -> Value:
        """Text added once per iteration of a loop over volatile data (a set, a sample) is volatile."""
        if binding.loop_iter is None or first_volatile(value) is not None:
            return value
        order = first_volatile(self.value(binding.loop_iter, env))
        return (order,) if order is not None else value

    # --- sequences -----------------------------------------------------------------------------
    def items(self, node: cst.BaseExpression, env: Env) -> list[Value] | None:
        """The elements of a list-like expression as values, or None if not known."""
        if isinstance(node, (cst.List, cst.Tuple)):
            out: list[Value] = []
            for el in node.elements:
                if isinstance(el, cst.StarredElement):
                    inner = self.items(el.value, env.deeper())
                    out.extend(inner if inner is not None else [self.value(el.value, env.deeper())])
                else:
                    out.append(self.value(el.value, env.deeper()))
            return out
        if isinstance(node, (cst.Set, cst.SetComp)):
            return [self.hole(Provenance.UNORDERED, node, "a set")]
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            shadow = dict(env.shadow)
            order: Hole | None = None
            comp: cst.CompFor | None = node.for_in
            while comp is not None:
                iterable = self.value(comp.iter, env.deeper())
                order = order or first_volatile(iterable)
                for target in _target_names(comp.target):
                    shadow[target] = (order,) if order else self.hole(Provenance.UNKNOWN, comp.target, target)
                comp = comp.inner_for_in
            element = self.value(node.elt, env.deeper(shadow=shadow))
            return [(order,)] if order is not None and first_volatile(element) is None else [element]
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.args:
            if node.func.value == "sorted":
                inner = self.items(node.args[0].value, env.deeper())
                return [without(v, Provenance.UNORDERED) for v in inner] if inner is not None else None
            if node.func.value in ("list", "tuple"):
                return self.items(node.args[0].value, env.deeper())
        if isinstance(node, cst.Name):
            value = self.lookup(node.value, node, env)
            return [value]
        return None

    # --- formatting ----------------------------------------------------------------------------
    def format(self, template: Value, call: cst.Call, env: Env) -> Value:
        positional = [
            self.value(a.value, env.deeper()) for a in call.args if a.keyword is None and not a.star
        ]
        named = {
            a.keyword.value: self.value(a.value, env.deeper()) for a in call.args if a.keyword is not None
        }
        return self.fill(template, call, positional, named)

    def fill(
        self, template: Value, where: cst.CSTNode, positional: list[Value], named: dict[str, Value]
    ) -> Value:
        """`str.format` on the static parts; a placeholder nobody fills becomes a hole named after it."""
        out: list[Value] = []
        auto = 0
        for seg in template:
            if not isinstance(seg, Text):
                out.append((seg,))
                continue
            try:
                parsed = list(string.Formatter().parse(seg.text))
            except ValueError:
                out.append((seg,))
                continue
            for literal, field_name, _spec, _conv in parsed:
                out.append(text(literal))
                if field_name is None:
                    continue
                base = re.split(r"[.\[]", field_name, maxsplit=1)[0]
                if base == "" or base.isdigit():
                    index = auto if base == "" else int(base)
                    auto += 1
                    value = positional[index] if index < len(positional) else None
                else:
                    value = named.get(base)
                if value is None:
                    prov = name_provenance(base) if _IDENT.match(base) else None
                    value = self.hole(prov or Provenance.UNKNOWN, where, "{" + field_name + "}", by_name=True)
                elif base != field_name:
                    value = self.propagate(where, [value])
                out.append(value)
        return concat(*out)

    def percent(self, left: Value, right: cst.BaseExpression, env: Env, node: cst.CSTNode) -> Value:
        if isinstance(right, cst.Tuple):
            values = [self.value(e.value, env.deeper()) for e in right.elements]
        else:
            values = [self.value(right, env.deeper())]
        named = {}
        if isinstance(right, cst.Dict):
            named = {
                e.key.evaluated_value: self.value(e.value, env.deeper())
                for e in right.elements
                if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
            }
        out: list[Value] = []
        index = 0
        for seg in left:
            if not isinstance(seg, Text):
                out.append((seg,))
                continue
            last = 0
            for m in _PERCENT.finditer(seg.text):
                out.append(text(seg.text[last : m.start()]))
                last = m.end()
                if m.group(0) == "%%":
                    out.append(text("%"))
                elif m.group(1):
                    out.append(named.get(m.group(1)) or self.unknown(node))
                else:
                    out.append(values[index] if index < len(values) else self.unknown(node))
                    index += 1
            out.append(text(seg.text[last:]))
        return concat(*out)

    def replace(self, value: Value, old: str, new: Value) -> Value:
        if not old:
            return value
        out: list[Value] = []
        for seg in value:
            if isinstance(seg, Text):
                pieces = seg.text.split(old)
                out.append(join(new, [text(p) for p in pieces]))
            else:
                out.append((seg,))
        return concat(*out)


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []
