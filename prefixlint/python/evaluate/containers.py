"""Containers, comprehensions and operators: lists and tuples of messages, dicts (a message, a
content part, a tool schema, a payload), sets, comprehensions, `+`, `*`, `%`, `or`, `x if c else y`.

A list of messages is the request's turns (a role's `Break` opens each); a list spliced in that we
cannot see is the conversation so far. Iterating a set or a shuffled list makes what is built in
that order volatile; a set of one element, or a sorted one, keeps its order.
"""

from __future__ import annotations

import libcst as cst

from prefixlint.python.evaluate.base import SET, EvaluatorBase
from prefixlint.python.evaluate.env import (
    _PASS_THROUGH,
    UNDECIDED,
    Env,
    _as_history,
    _is_message_list,
    _role_of,
    _unordered,
)
from prefixlint.python.scopes import string_value
from prefixlint.python.segments import (
    EMPTY,
    Break,
    Hole,
    Open,
    Provenance,
    Text,
    Value,
    choice,
    concat,
    first_volatile,
    holes,
    is_constant,
    is_static,
    static_text,
    text,
    without,
)
from prefixlint.python.volatile import ROLES, SET_OPERATORS

_MAX_REPEAT = 200_000  # characters of repeated text evaluated (`"-" * 80`); longer stays unknown
# Keys of a tool's (or function's) schema: a dict holding one is text the model reads.
_SCHEMA_KEYS = {"description", "parameters", "input_schema", "function", "properties", "enum"}


class Containers(EvaluatorBase):
    """Containers, comprehensions and operators."""

    def _v_Await(self, node: cst.Await, env: Env) -> Value:
        return self.value(node.expression, env)

    def _v_BinaryOperation(self, node: cst.BinaryOperation, env: Env) -> Value:
        left, right = self.value(node.left, env.deeper()), self.value(node.right, env.deeper())
        if isinstance(node.operator, cst.Add):
            if _is_message_list(node.left, left):  # `[system] + history`: the conversation so far
                right = self.as_history(right, node.right)
            elif _is_message_list(node.right, right):
                left = self.as_history(left, node.left)
            return concat(left, right)
        if isinstance(node.operator, cst.Modulo):
            return self.percent(left, node.right, env, node)
        if isinstance(node.operator, cst.Multiply):  # `"=" * 40`, `RULE * 3`: the text repeated
            times = next(
                (n.evaluated_value for n in (node.left, node.right) if isinstance(n, cst.Integer)), None
            )
            repeated = right if isinstance(node.left, cst.Integer) else left
            if (
                isinstance(times, int)
                and is_static(repeated)
                and 0 <= times * len(static_text(repeated)) <= _MAX_REPEAT
            ):
                return text(static_text(repeated) * times)
        if type(node.operator).__name__ in SET_OPERATORS and _unordered(left, right):
            return self.hole(Provenance.UNORDERED, node, SET)  # `BASE | EXTRA`: a new set
        return self.propagate(node, [left, right])

    def _v_BooleanOperation(self, node: cst.BooleanOperation, env: Env) -> Value:
        return choice([self.value(node.left, env.deeper()), self.value(node.right, env.deeper())])

    def _v_IfExp(self, node: cst.IfExp, env: Env) -> Value:
        test = self.constant(node.test, env)
        if test is not UNDECIDED:
            return self.value(node.body if test else node.orelse, env.deeper())
        return choice([self.value(node.body, env.deeper()), self.value(node.orelse, env.deeper())])

    def _v_Lambda(self, node: cst.Lambda, env: Env) -> Value:
        return self.value(node.body, env.deeper())  # a default_factory: what calling it gives

    def _v_Subscript(self, node: cst.Subscript, env: Env) -> Value:
        if (schema := self.project.frameworks.match_schema(self.index, node.value)) is not None:
            return self.schema_value(node, schema, env)  # `Literal[tuple(ZONES)]`: the choices' order
        if (configured := self.settings_read(node, env)) is not None:
            return configured  # `settings["agent"]["system"]` of a settings object
        if isinstance(node.value, (cst.Subscript, cst.Name, cst.Call)) or _self_data(node):
            found = self.data(node, env)  # `config["planner"]["system"]` of a YAML file or a dict
            if isinstance(found, tuple):
                return found
        base = self.value(node.value, env.deeper())
        key = _string_key(node)
        if len(base) == 1 and isinstance(base[0], Hole) and base[0].deployment and not base[0].setting:
            return self.setting_read(node, key)  # `os.environ["REGION"]`: that setting
        if (h := first_volatile(base)) is not None and not h.by_name and not h.turns:
            return (h,)
        if key is not None and (field := self.field_of_parameter(base, key, node)) is not None:
            return field
        # an item of an input known only by its name: as attributes; a turn of a recalled conversation
        return self.unknown(node)

    def _v_Set(self, node: cst.Set, env: Env) -> Value:
        if len(node.elements) == 1 and not isinstance(node.elements[0], cst.StarredElement):
            return self.value(node.elements[0].value, env.deeper())  # one element has one order
        return self.hole(Provenance.UNORDERED, node, SET)

    def _v_SetComp(self, node: cst.SetComp, env: Env) -> Value:
        return self.hole(Provenance.UNORDERED, node, SET)

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
        if len(elements) == 2 and _is_history_placeholder(elements[0]):
            # LangChain's ("placeholder", "{chat_history}"): a MessagesPlaceholder, the conversation so
            # far, unless its framework fills it with something else (`{agent_scratchpad}`: the steps)
            written = string_value(elements[1]) if isinstance(elements[1], cst.SimpleString) else None
            name = written.strip("{}") if isinstance(written, str) else ""
            if name and self.project.frameworks.placeholder_source(self.index, name) is not None:
                return self.placeholder(name, elements[1])
            line, column = self.index.pos(node)
            label = self.label(elements[1])
            return (Hole(Provenance.UNKNOWN, line, column, label, path=self.path, history=True),)
        return self._v_List(node, env)

    def _role_given(self, node: cst.BaseExpression, env: Env) -> str:
        """The role a helper's parameter is given (`{"role": role, ...}` with `role="system"`)."""
        if not isinstance(node, cst.Name):
            return "unknown"
        given = self.value(node, env.deeper())
        role = static_text(given).lower() if is_static(given) else ""
        return role if role in ROLES else "unknown"

    def _v_Dict(self, node: cst.Dict, env: Env) -> Value:
        entries = {
            string_value(e.key): e.value
            for e in node.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
        }
        if "role" in entries:
            role = _role_of(entries["role"]) or self._role_given(entries["role"], env)
            content = entries.get("content")
            body = self.value(content, env.deeper()) if content is not None else EMPTY
            return concat((Break(role),), body)
        for key in ("text", "content"):  # a content part: {"type": "text", "text": ...}
            if key in entries:
                return self.value(entries[key], env.deeper())
        # Any other dict (a tool schema, an API payload): a value in it that is volatile by its
        # source makes its text volatile; one only named so (`"tool_call_id": call_id`) does not.
        config = self.project.frameworks.not_prompt  # `"authorization": ...` configures, it is no text
        kept = [
            e
            for e in node.elements
            if isinstance(e, cst.DictElement)
            and not (isinstance(e.key, cst.SimpleString) and string_value(e.key) in config)
        ]
        values = [self.value(e.value, env.deeper()) for e in kept]
        volatile = any(h.provenance.volatile and not h.by_name for v in values for h in holes(v))
        guessed = any(h.provenance.volatile for v in values for h in holes(v))
        spelled = any(
            isinstance(e.value, cst.Dict) and _spelled(v) for e, v in zip(kept, values, strict=True)
        )
        if guessed and (entries.keys() & _SCHEMA_KEYS or spelled):
            # A tool's schema, serialised into the prompt: its text, in order, with the value in it
            # and the static text after it (`"description": f"... {date.today()} ..."`); a dict
            # that holds one (`{"zone": {"enum": list(ZONES), ...}, "days": {...}}`) is text too.
            parts: list[Value] = []
            for e, value in zip(kept, values, strict=True):
                key = string_value(e.key) if isinstance(e.key, cst.SimpleString) else None
                parts += [text(f'"{key}": ' if isinstance(key, str) else ""), value, text(", ")]
            return concat(*parts)
        if volatile:  # any other dict (an API payload): a volatile value makes its text volatile
            return next((h,) for v in values for h in holes(v) if h.provenance.volatile and not h.by_name)
        if values and len(kept) == len(node.elements) and all(is_constant(v) for v in values):
            return (Open(self.index.pos(node)[0]),)  # constant data: its rendering is the same every time
        return self.unknown(node)

    def items(self, node: cst.BaseExpression, env: Env) -> list[Value] | None:
        """The elements of a list-like expression as values, or None if not known."""
        if isinstance(node, (cst.List, cst.Tuple)):
            out: list[Value] = []
            for el in node.elements:
                if isinstance(el, cst.StarredElement):
                    inner = self.items(el.value, env.deeper())
                    if not inner:  # `[system, *history, user]`: the conversation so far
                        inner = [self.as_history(self.value(el.value, env.deeper()), el.value)]
                    out.extend(_as_history(v) for v in inner)
                else:
                    out.append(self.value(el.value, env.deeper()))
            return out
        if isinstance(node, (cst.Set, cst.SetComp)):
            return [self.value(node, env)]  # one element keeps its order, more do not
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            each = self.each_item(node, env)
            if each is not None:
                return each
            shadow = dict(env.shadow)
            order: Hole | None = None
            comp: cst.CompFor | None = node.for_in
            while comp is not None:
                iterable = self.iterated(self.value(comp.iter, env.deeper()), comp.iter)  # items in its order
                order = order or first_volatile(iterable) or _summarised_parameter(iterable, env)
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
            if node.func.value == "filter" and len(node.args) == 2:  # `filter(None, parts)`
                return self.items(node.args[1].value, env.deeper())
            if node.func.value == "map" and len(node.args) == 2:  # `map(str, parts)`
                func = node.args[0].value
                if isinstance(func, cst.Name) and func.value in _PASS_THROUGH:
                    return self.items(node.args[1].value, env.deeper())
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            left, right = self.items(node.left, env.deeper()), self.items(node.right, env.deeper())
            if left is not None and right is not None:
                return left + right
        if isinstance(node, cst.IfExp):  # `parts + (extra if flag else [])`: the items it may add
            body, orelse = self.items(node.body, env.deeper()), self.items(node.orelse, env.deeper())
            if body is not None and orelse is not None:
                return body if len(body) >= len(orelse) else orelse
        if isinstance(node, cst.Call):
            return [self.value(node, env)]
        if isinstance(node, cst.Name):
            found = self.data(node, env)
            if isinstance(found, list):
                return [item if isinstance(item, tuple) else self.unknown(node) for item in found]
            return [self.lookup(node.value, node, env)]
        return None

    def each_item(self, node: cst.ListComp | cst.GeneratorExp, env: Env) -> list[Value] | None:
        """`(f"{part}\\n" for part in (a, b))` over a list or tuple written out: the element once per
        item, in order (the items are known, so their order is too); None for any other loop."""
        comp = node.for_in
        if comp.inner_for_in is not None or comp.ifs or not isinstance(comp.target, cst.Name):
            return None
        if not isinstance(comp.iter, (cst.List, cst.Tuple)):
            return None
        items = self.items(comp.iter, env.deeper())
        if items is None:
            return None
        target = comp.target.value
        return [self.value(node.elt, env.deeper(shadow={**env.shadow, target: item})) for item in items]

    def as_history(self, value: Value, node: cst.BaseExpression) -> Value:
        """A list of messages spliced into a request that we cannot see, or see empty (state filled
        as the conversation goes: `self.history = []`), is the conversation so far."""
        if not value and isinstance(node, (cst.Name, cst.Attribute)):
            line, column = self.index.pos(node)
            return (Hole(Provenance.UNKNOWN, line, column, self.label(node), path=self.path, history=True),)
        return _as_history(value)


def _summarised_parameter(value: Value, env: Env) -> Hole | None:
    """A parameter of the wrapper being summarised (summaries.py), iterated: the items come in the
    order of what its caller passes (`tools=[to_spec(t) for t in tools]` of a set's items is the set's)."""
    if env.summary is None or len(value) != 1 or not isinstance(value[0], Hole):
        return None
    param = value[0].param
    return value[0] if param is not None and param[0] == id(env.summary) else None


def _self_data(node: cst.Subscript) -> bool:
    """`self.prompt_data["content"]`: a key of data the object holds (read from a file)."""
    base = node.value
    return (
        isinstance(base, cst.Attribute)
        and isinstance(base.value, cst.Name)
        and base.value.value == "self"
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
    )


def _is_history_placeholder(node: cst.BaseExpression) -> bool:
    """The message type LangChain's `ChatPromptTemplate.from_messages` reads as a MessagesPlaceholder
    (langchain_core/prompts/chat.py `_create_template_from_message_type`)."""
    return isinstance(node, cst.SimpleString) and string_value(node) == "placeholder"


def _spelled(value: Value) -> bool:
    """A dict's value rendered as text with a volatile value in it (a schema spelled out)."""
    return any(isinstance(s, Text) and s.text for s in value) and first_volatile(value) is not None


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []


def _string_key(node: cst.Subscript) -> str | None:
    """The key of `d["key"]`, else None."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    key = node.slice[0].slice.value
    value = string_value(key) if isinstance(key, cst.SimpleString) else None
    return value if isinstance(value, str) else None
