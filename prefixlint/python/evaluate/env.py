"""The environment an expression is evaluated in, the evaluator's limits, and the small helpers
its parts share.

`Env` carries what the functions being inlined were given and the names comprehensions bind; the
limits bound how deep and how long one prompt is followed. The helpers read libcst nodes without
evaluating anything (a callee's name, a parameter's default, the types an annotation names, the
literal arguments of a call, a message constructor's role) or reshape values (a list of messages
spliced in as the conversation so far).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import libcst as cst

from prefixlint.python.scopes import ModuleIndex, string_value
from prefixlint.python.segments import Break, Choice, Hole, Provenance, Value, holes
from prefixlint.python.volatile import ROLES, builder_role

# Nesting of expressions followed (names, calls, operands), and of functions inlined: bounded so
# that a deep or recursive project costs little, deep enough for an agent's prompt builder.
MAX_DEPTH = 32
MAX_CALLS = 8
MAX_CALLERS = 8  # call sites of a function followed for what they pass
PARAMETER_OF = "a parameter of"  # how a parameter's hole says where it comes from (`via`)
# Expressions evaluated for one prompt before the rest of it is left unknown: branches and `+=`
# chains can multiply the work, and a pre-commit hook must not hang on one pathological module.
STEP_BUDGET = 20_000
_PASS_THROUGH = {"str", "list", "tuple", "repr", "format", "reversed"}


@dataclass(frozen=True)
class Env:
    """Argument values of the helpers being inlined, and names bound by comprehensions."""

    args: dict[cst.CSTNode, dict[str, Value]] = field(default_factory=dict)
    shadow: dict[str, Value] = field(default_factory=dict)
    depth: int = 0
    template: bool = False  # string literals are templates whose `{placeholders}` are filled later
    # The function whose summary is being made (summaries.py): its parameters stay parameters, not
    # what the calls in this module pass.
    summary: cst.CSTNode | None = None
    # Literal values the call being inlined passes (or leaves at a literal default), per function:
    # `if flag:` with `flag=False` does not run (branches no caller takes are no prompt text).
    consts: dict[cst.CSTNode, dict[str, object]] = field(default_factory=dict)

    def deeper(self, **changes: object) -> Env:
        fields = {
            "args": self.args,
            "shadow": self.shadow,
            "depth": self.depth + 1,
            "template": self.template,
            "summary": self.summary,
            "consts": self.consts,
        }
        return Env(**{**fields, **changes})


def func_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _default_of(fn: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    if not isinstance(fn, cst.FunctionDef):
        return None
    p = fn.params
    return next(
        (x.default for x in (*p.posonly_params, *p.params, *p.kwonly_params) if x.name.value == name), None
    )


def _message_role(call: cst.Call, func_name: str) -> str | None:
    """The role of a message constructor call (`SystemMessage(...)`, `Message("system", ...)`), else None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "role":
            return _role_of(arg.value) or "unknown"
    has_content = any(a.keyword and a.keyword.value in ("content", "text") for a in call.args)
    if not func_name.endswith("Message"):
        # builders such as `make_assistant_message(content=...)`, `create_user_message(text=...)`
        return builder_role(func_name) if has_content else None
    prefix = func_name[: -len("Message")].lower()
    if prefix in ROLES:
        return prefix
    positional = [a.value for a in call.args if a.keyword is None]
    if positional and (role := _role_of(positional[0])):
        return role
    return "unknown" if has_content else None


def _role_of(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString) and isinstance(string_value(node), str):
        value = string_value(node).lower()
        return value if value in ROLES else None
    if isinstance(node, cst.Attribute):  # MessageRole.SYSTEM, Role.USER
        value = node.attr.value.lower()
        return value if value in ROLES else None
    return None


def _is_message_list(node: cst.BaseExpression, value: Value) -> bool:
    """A list display, or a value that is messages (it opens with a role)."""
    return isinstance(node, (cst.List, cst.ListComp)) or bool(value) and isinstance(value[0], Break)


def _holds_messages(value: Value) -> bool:
    """Whether the value (any of its options) holds a message (a role's `Break`)."""
    return any(
        isinstance(x, Break) or isinstance(x, Choice) and any(_holds_messages(o) for o in x.options)
        for x in value
    )


def _as_history(value: Value) -> Value:
    """A list of messages we cannot see spliced into a request (a parameter, `self.history`) is the
    conversation so far: the same on each turn of one conversation, not per request."""
    if (
        len(value) == 1
        and isinstance(value[0], Hole)
        and (value[0].by_name or not value[0].provenance.volatile or value[0].turns)
    ):
        return (replace(value[0], provenance=Provenance.UNKNOWN, history=True, weak=False),)
    return value


def _unordered(*values: Value) -> bool:
    """Whether one of `values` is a set (an unordered hole known by its source, not its name)."""
    return any(h.provenance is Provenance.UNORDERED and not h.by_name for v in values for h in holes(v))


UNDECIDED = object()  # a test whose value the literal arguments do not decide
_LITERALS: dict[str, object] = {"True": True, "False": False, "None": None}
_COMPARE = {
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
    cst.Is: lambda a, b: a is b,
    cst.IsNot: lambda a, b: a is not b,
}


def literal_value(node: cst.BaseExpression | None) -> object:
    """`True`, `None`, `3`, `"x"` as Python values; anything else is UNDECIDED."""
    if isinstance(node, cst.Name) and node.value in _LITERALS:
        return _LITERALS[node.value]
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.SimpleString):
        return string_value(node)
    return UNDECIDED


def constant_arguments(fn: cst.FunctionDef, call: cst.Call) -> dict[str, object]:
    """The literal values a call gives `fn`'s parameters (passed, or left at a literal default)."""
    params = [*fn.params.posonly_params, *fn.params.params]
    if params and params[0].name.value in ("self", "cls"):
        params = params[1:]
    out = {p.name.value: literal_value(p.default) for p in (*params, *fn.params.kwonly_params) if p.default}
    positional = [a for a in call.args if a.keyword is None]
    for param, arg in zip(params, positional, strict=False):
        if arg.star:
            return {}  # `*args`: what goes where is unknown
        out[param.name.value] = literal_value(arg.value)
    for arg in call.args:
        if arg.star == "**":
            return {}
        if arg.keyword is not None:
            out[arg.keyword.value] = literal_value(arg.value)
    return {k: v for k, v in out.items() if v is not UNDECIDED}


SPREAD = object()  # a call that may pass a parameter through `**mapping` (passed_argument)


def passed_argument(fn: cst.FunctionDef, call: cst.Call, name: str) -> cst.BaseExpression | object | None:
    """What `call` passes for parameter `name` of `fn`, as bind_arguments binds it: by keyword,
    else at its position (a method's `self` is not passed; none after a `*args`), SPREAD when only
    a `**mapping` may hold it, None when the call leaves it out."""
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    found: cst.BaseExpression | object | None = None
    positional = [a for a in call.args if a.keyword is None]
    for param, arg in zip(params, positional, strict=False):
        if arg.star:
            break
        if param == name:
            found = arg.value
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            found = arg.value
    if found is None and any(a.star == "**" for a in call.args):
        return SPREAD
    return found


def _inside(index: ModuleIndex, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """Whether `node` is within `fn` (a recursive call says nothing about outside callers)."""
    start, end = index.positions.get(fn, ((0, 0), (0, 0)))
    return start <= index.pos(node) <= end


def _tuple_element(node: cst.BaseExpression, element: int) -> cst.BaseExpression | None:
    """Element `element` of a tuple or list literal without starred parts."""
    if not isinstance(node, (cst.Tuple, cst.List)) or element >= len(node.elements):
        return None
    if not all(isinstance(e, cst.Element) for e in node.elements):
        return None
    return node.elements[element].value


def _annotation_heads(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`ClassVar[str]` gives `ClassVar`; `str | None` gives both sides."""
    if isinstance(node, cst.Subscript):
        return [node.value]
    if isinstance(node, cst.BinaryOperation):
        return _annotation_heads(node.left) + _annotation_heads(node.right)
    return [node]
