"""Symbolic evaluation of string-building expressions into segments (never runs the code).

Literals stay text; volatile library calls, volatile-named inputs and unordered iteration become
holes; same-module names and helpers are followed; anything else is an unknown hole."""

from __future__ import annotations

import os
import re
import string
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import libcst as cst
from libcst._nodes.internal import CodegenState

from prefixlint.python import appended
from prefixlint.python.frameworks import ConfigModel, SourceModel
from prefixlint.python.scopes import Binding, Branch, ModuleIndex, Pos, Scope, string_value
from prefixlint.python.segments import (
    EMPTY,
    Break,
    Choice,
    Hole,
    Open,
    Provenance,
    Segment,
    Text,
    Value,
    choice,
    concat,
    first_volatile,
    holes,
    is_constant,
    is_static,
    join,
    map_holes,
    map_text,
    per_option,
    static_text,
    strip_edges,
    text,
    without,
)
from prefixlint.python.volatile import (
    PATH_LISTINGS,
    PATH_METHODS,
    PATH_TYPES,
    ROLES,
    SET_METHODS,
    SET_OPERATORS,
    SET_TYPES,
    call_name_provenance,
    name_provenance,
    parameter_provenance,
    placeholder_provenance,
    qualified_provenance,
    says_prompt,
    says_prompt_attribute,
)

if TYPE_CHECKING:
    from prefixlint.python.project import Project

# Nesting of expressions followed (names, calls, operands), and of functions inlined: bounded so
# that a deep or recursive project costs little, deep enough for an agent's prompt builder.
MAX_DEPTH = 32
MAX_CALLS = 8
MAX_CALLERS = 8  # call sites of a function followed for what they pass
PARAMETER_OF = "a parameter of"  # how a parameter's hole says where it comes from (`via`)
# Expressions evaluated for one prompt before the rest of it is left unknown: branches and `+=`
# chains can multiply the work, and a pre-commit hook must not hang on one pathological module.
STEP_BUDGET = 20_000
_PERCENT = re.compile(r"%(?:\((\w+)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[sdrfiaeEgGxXoc%]")
_IDENT = re.compile(r"[A-Za-z_]\w*$")
_FIELD = re.compile(r"\{([A-Za-z_]\w*)")
_DOUBLE_BRACE = re.compile(r"\{\{\s*\$?([A-Za-z_][\w.]*)\s*\}\}")
_DOLLAR = re.compile(r"\$(?:\$|([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\})")
_PASS_THROUGH = {"str", "list", "tuple", "repr", "format", "reversed"}
# Methods that fill a template's placeholders (str, string.Template, LangChain, LlamaIndex, Jinja).
_FILL_METHODS = {"format", "format_map", "substitute", "safe_substitute", "partial", "format_messages",
                 "format_prompt", "invoke", "render"}  # fmt: skip
# Factories of template objects and the keyword of their text (LangChain, Jinja's `from_string`).
_TEMPLATE_FACTORIES = {"from_template": "template", "from_messages": "messages", "from_string": "source"}
_LOOKUPS = {"get", "pop", "setdefault", "index", "count", "startswith", "endswith", "__getitem__"}
# Classes whose instances are volatile (a parameter annotated so), and ones a literal seed makes stable.
_VOLATILE_TYPES = {
    "random.Random",
    "random.SystemRandom",
    "numpy.random.Generator",
    "numpy.random.RandomState",
}
_SEEDABLE = {"random.Random", "numpy.random.default_rng", "numpy.random.RandomState", "random.seed"}
_MAX_REPEAT = 200_000  # characters of repeated text evaluated (`"-" * 80`); longer stays unknown
_OPAQUE = {"len", "bool", "isinstance", "hasattr", "getattr", "type", "id", "print"}
# Builtins whose result is their argument in another form: `int(time.time())` is still the clock.
_CONVERSIONS = {"int", "float", "round", "abs"}
_CONSTRUCTORS = {"__init__", "__post_init__", "model_post_init", "__attrs_post_init__"}
# Keys of a tool's (or function's) schema: a dict holding one is text the model reads.
_SCHEMA_KEYS = {"description", "parameters", "input_schema", "function"}
# How a finding names what a source row's kind gives.
_SOURCE_WHAT = {
    "context": "content retrieved for each request",
    "memory": "memories recalled for each request",
    "tools": "tools retrieved for each request",
    "search": "web results fetched for each request",
}
_CASE_METHODS = {"upper": str.upper, "lower": str.lower, "title": str.title, "capitalize": str.capitalize}


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


def _message_role(call: cst.Call, func_name: str) -> str | None:
    """The role of a message constructor call (`SystemMessage(...)`, `Message("system", ...)`), else None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "role":
            return _role_of(arg.value) or "unknown"
    has_content = any(a.keyword and a.keyword.value in ("content", "text") for a in call.args)
    if not func_name.endswith("Message"):
        # builders such as `make_assistant_message(content=...)`, `create_user_message(text=...)`
        words = re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", func_name).lower())
        if "message" in words and has_content:
            return next((w for w in words if w in ROLES), "unknown")
        return None
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


def _starts_message(seg: Segment) -> bool:
    """A message boundary in a list of messages: a role, or the turns spliced in (`*history`)."""
    return isinstance(seg, Break) or isinstance(seg, Hole) and seg.history


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
    """Evaluates the expressions of one module; calls and names that lead into other modules of the
    project are evaluated by those modules' evaluators (`project`), and what comes back is placed at
    the call in this module."""

    def __init__(self, index: ModuleIndex, project: Project | None = None) -> None:
        self.index = index
        self.path = index.path
        if project is None:
            from prefixlint.python.project import Project

            project = Project(os.path.dirname(os.path.abspath(index.path or ".")))
        self.project = project
        self.active = project.active
        self._calls: dict[str, list[cst.Call]] | None = None  # calls by callee name (calls_named)

    # --- helpers -------------------------------------------------------------------------------
    def label(self, node: cst.CSTNode) -> str:
        """The first line of the node's code, at most 60 characters."""
        module = self.index.module
        state = _FirstLine(default_indent=module.default_indent, default_newline=module.default_newline)
        try:  # only the first line is shown: a big node (a class, a long dict) is not generated whole
            node._codegen(state)
            code = "".join(state.tokens).strip()
        except _Enough:
            code = "".join(state.tokens).lstrip()
        code = code.splitlines()[0] if code else ""
        return code if len(code) <= 60 else code[:57] + "..."

    def hole(
        self,
        provenance: Provenance,
        node: cst.CSTNode,
        label: str | None = None,
        by_name: bool = False,
        weak: bool = False,
    ) -> Value:
        line, column = self.index.pos(node)
        if label is None:  # generating a node's code is costly: only volatile holes are ever shown
            label = self.label(node) if provenance.volatile else ""
        timing = self.timing(node) if provenance.volatile else "call"
        return (Hole(provenance, line, column, label, by_name, self.path, weak=weak, timing=timing),)

    def source_hole(self, source: SourceModel, node: cst.CSTNode, label: str | None = None) -> Value:
        """What a source row's call (or a placeholder its framework fills) gives: content made for
        each request, named by the row in the message."""
        (hole,) = self.hole(Provenance[source.provenance.upper()], node, label)
        return (replace(hole, via=f"{_SOURCE_WHAT[source.kind]}: {source.name}", turns=source.turns),)

    def timing(self, node: cst.CSTNode) -> str:
        """When the expression at `node` runs: "import" (module or class level), "construction"
        (in `__init__` and the like: once per object), else "call"."""
        if id(node) in self.index.in_lambda:
            return "call"  # `instructions=lambda ctx: f"... {datetime.now()}"`: each time it is called
        owner = self.index.scope_for(node).node
        if isinstance(owner, (cst.Module, cst.ClassDef)):
            return "import"
        if isinstance(owner, cst.FunctionDef) and owner.name.value in _CONSTRUCTORS:
            return "construction"
        return "call"

    def anchor(self, value: Value, node: cst.CSTNode) -> Value:
        """A value computed in another module, placed at `node` of this one (where it enters the
        code being checked); the message keeps where it really comes from. Placeholders written in
        a prompt file keep their place in that file."""
        line, column = self.index.pos(node)

        def move(h: Hole) -> Hole:
            if h.path == self.path or not h.path.endswith(".py") or not h.provenance.volatile:
                return h
            where = f"{os.path.relpath(h.path, self.project.root)}:{h.line}"
            via = h.via or f"`{h.label}` in {where}"
            origin = h.origin or (h.path, h.line, h.column, h.label, h.via)
            label = self.label(node)
            return replace(h, line=line, column=column, path=self.path, label=label, via=via, origin=origin)

        return map_holes(value, move)

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
        """The value of `node` in `env`. Worked out once per checked file for each node and context:
        the same expression is met again and again (a helper's body for every read of its result,
        a subscript's base for its data and for its value). The context is everything the result
        can depend on (the environment, the nesting, the functions being inlined, the parameters
        and attributes being followed), so a value remembered is the one working it out again
        gives; the steps it took are counted again, and one cut short by the step budget, which
        depends on what came before, is not remembered."""
        project = self.project
        if type(node) in _LITERAL_NODES:
            return self._value(node, env)
        key = (
            id(node),  # alive while the project holds its module
            id(env.args),
            id(env.shadow),
            id(env.consts),
            env.summary,
            env.depth,
            env.template,
            tuple(map(id, project.active)),
            frozenset(project.following),
            frozenset(project.reading),
        )
        memo = project.values
        found = memo.get(key)
        if found is not None and project.steps + found[1] <= STEP_BUDGET:
            project.steps += found[1]
            project.cut += found[2]
            return found[0]
        steps, cut, over = project.steps, project.cut, project.over_budget
        value = self._value(node, env)
        if project.over_budget == over:
            memo[key] = (value, project.steps - steps, project.cut - cut, env)  # env: its ids stay taken
        return value

    def _value(self, node: cst.BaseExpression, env: Env) -> Value:
        project = self.project
        project.steps += 1
        if env.depth > MAX_DEPTH or project.steps > STEP_BUDGET:
            project.cut += 1
            if project.steps > STEP_BUDGET:
                project.over_budget += 1
            return self.unknown(node)
        method = getattr(self, "_v_" + type(node).__name__, None)
        return method(node, env) if method else self.unknown(node)

    def _v_SimpleString(self, node: cst.SimpleString, env: Env) -> Value:
        v = string_value(node)
        value = text(v) if isinstance(v, str) else text(v.decode("latin-1"))
        if not env.template:
            return value
        if _DOUBLE_BRACE.search(static_text(value)):
            return self.placeholders(value, node)
        return self.fill(value, node, [], {})

    def _v_ConcatenatedString(self, node: cst.ConcatenatedString, env: Env) -> Value:
        return concat(self.value(node.left, env), self.value(node.right, env))

    def _v_FormattedString(self, node: cst.FormattedString, env: Env) -> Value:
        parts: list[Value] = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(text(_fstring_text(part.value, node.prefix)))
            else:
                value = self.value(part.expression, env)
                spec = part.format_spec
                literal = spec is not None and all(isinstance(p, cst.FormattedStringText) for p in spec)
                if literal and not _TIME_DIRECTIVES.search("".join(p.value for p in spec)):
                    value = _to_the_day(value)  # `{datetime.now():%Y-%m-%d}`
                parts.append(value)
        return concat(*parts)

    def _v_Integer(self, node: cst.Integer, env: Env) -> Value:
        return text(node.value)

    _v_Float = _v_Integer

    def _v_Await(self, node: cst.Await, env: Env) -> Value:
        return self.value(node.expression, env)

    def _v_Name(self, node: cst.Name, env: Env) -> Value:
        return self.lookup(node.value, node, env)

    def _v_Attribute(self, node: cst.Attribute, env: Env) -> Value:
        qualified = self.index.qualified_names(node)
        if (prov := qualified_provenance(qualified)) is not None:
            return self.hole(prov, node)
        receiver = node.value
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
            scope = self.index.scope_for(node)
            if scope.cls is not None:
                found = self.class_attribute(scope.cls, node.attr.value, env, at=node)
                if found is not None:
                    return found
        elif qualified and isinstance(receiver, (cst.Name, cst.Attribute)):
            for name in sorted(qualified):  # `prompts.SYSTEM` after `from . import prompts`
                found = self.project.resolve(name, self.path)
                if found is not None:
                    value = found[0].module_attribute(found[1], env)
                    if value is not None:
                        return self.anchor(value, node)
        if not (isinstance(receiver, cst.Name) and receiver.value in ("self", "cls")):
            owner = self.object_class(receiver, node)  # `Settings.TEXT`, `Settings().TEXT`, `obj.text`
            if owner is not None:
                here = owner[0] is self
                found = owner[0].class_attribute(owner[1], node.attr.value, env, at=node if here else None)
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
        return self.unknown(node)

    def _v_Subscript(self, node: cst.Subscript, env: Env) -> Value:
        from prefixlint.python.prompt_files import data

        if isinstance(node.value, (cst.Subscript, cst.Name, cst.Call)):
            found = data(self, node, env)  # `config["planner"]["system"]` of a YAML file or a dict
            if isinstance(found, tuple):
                return found
        base = self.value(node.value, env.deeper())
        if (h := first_volatile(base)) is not None and not h.by_name and not h.turns:
            return (h,)
        # an item of an input known only by its name: as attributes; a turn of a recalled conversation
        return self.unknown(node)

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
            return self.hole(Provenance.UNORDERED, node, "a set")  # `BASE | EXTRA`: a new set
        return self.propagate(node, [left, right])

    def _v_BooleanOperation(self, node: cst.BooleanOperation, env: Env) -> Value:
        return choice([self.value(node.left, env.deeper()), self.value(node.right, env.deeper())])

    def _v_IfExp(self, node: cst.IfExp, env: Env) -> Value:
        test = self.constant(node.test, env)
        if test is not _UNKNOWN:
            return self.value(node.body if test else node.orelse, env.deeper())
        return choice([self.value(node.body, env.deeper()), self.value(node.orelse, env.deeper())])

    def may_run(self, branch: Branch, env: Env) -> bool:
        """Whether code in these arms can run, given the literal arguments of the calls inlined:
        an `if` arm whose test they decide otherwise cannot."""
        if not env.consts:
            return True
        for key, arm in branch:
            node = self.index.branch_nodes.get(key)
            if isinstance(node, cst.If):
                test = self.constant(node.test, env)
                if test is not _UNKNOWN and bool(test) != (arm == 0):
                    return False
        return True

    def constant(self, node: cst.BaseExpression, env: Env) -> object:
        """The value of a test made of literals and the literal arguments of the call being inlined
        (`flag`, `not flag`, `mode == "x"`, `x is None`), else _UNKNOWN."""
        if isinstance(node, cst.Name):
            if node.value in _LITERALS:
                return _LITERALS[node.value]
            fn = self.index.scope_for(node).node
            known = env.consts.get(fn, {})
            return known.get(node.value, _UNKNOWN)
        if isinstance(node, (cst.Integer, cst.SimpleString)):
            return literal_value(node)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            inner = self.constant(node.expression, env)
            return _UNKNOWN if inner is _UNKNOWN else not inner
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            left, right = self.constant(node.left, env), self.constant(node.comparisons[0].comparator, env)
            if left is _UNKNOWN or right is _UNKNOWN:
                return _UNKNOWN
            op = type(node.comparisons[0].operator)
            compare = _COMPARE.get(op)
            return compare(left, right) if compare is not None else _UNKNOWN
        return _UNKNOWN

    def _v_Lambda(self, node: cst.Lambda, env: Env) -> Value:
        return self.value(node.body, env.deeper())  # a default_factory: what calling it gives

    def _v_Set(self, node: cst.Set, env: Env) -> Value:
        if len(node.elements) == 1 and not isinstance(node.elements[0], cst.StarredElement):
            return self.value(node.elements[0].value, env.deeper())  # one element has one order
        return self.hole(Provenance.UNORDERED, node, "a set")

    def _v_SetComp(self, node: cst.SetComp, env: Env) -> Value:
        return self.hole(Provenance.UNORDERED, node, "a set")

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
            string_value(e.key): e.value
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
        if guessed and entries.keys() & _SCHEMA_KEYS:
            # A tool's schema, serialised into the prompt: its text, in order, with the value in it
            # and the static text after it (`"description": f"... {date.today()} ..."`).
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

    # --- calls ---------------------------------------------------------------------------------
    def _v_Call(self, node: cst.Call, env: Env) -> Value:
        qnames = self.index.qualified_names(node.func)
        if qnames & _SEEDABLE and node.args and all(_is_literal(a.value) for a in node.args):
            return self.unknown(node)  # `random.Random(0)`: the same sequence on every run
        if (prov := qualified_provenance(qnames)) is not None:
            found = self.hole(prov, node)
            if qnames & _DAY_CLOCKS or (qnames & {"time.strftime"} and _day_format(node.args)):
                return _to_the_day(found)
            return found
        if (source := self.project.frameworks.match_source(self.index, node)) is not None:
            return self.source_hole(source, node)
        if isinstance(self.project.frameworks.match_call(self.index, node), ConfigModel):
            return self.unknown(node)  # `OpenAI(api_key=os.environ[...])` configures a client
        if (written := appended.made(self, node)) is not None:
            return written  # `parser.get_format_instructions()`: text the library writes
        name = func_name(node.func)
        deeper = env.deeper(template=False)  # a call's arguments are not the template
        args = [a for a in node.args if a.keyword is None and not a.star]
        kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if (role := _message_role(node, name)) is not None:
            content = kwargs.get("content") or kwargs.get("text")
            if content is None and args:
                content = args[-1].value if len(args) > 1 or _role_of(args[0].value) is None else None
            return concat((Break(role),), self.value(content, deeper) if content is not None else EMPTY)
        if name in ("field", "Field") and (kwargs.keys() & {"default", "default_factory"} or args):
            # a dataclass / pydantic field: what an instance holds unless the caller sets it
            default = kwargs.get("default") or kwargs.get("default_factory") or args[0].value
            return self.value(default, deeper)

        from prefixlint.python import prompt_files

        read = prompt_files.read_call(self, node, env)
        if read is not None:
            return read
        first = self.value(args[0].value, deeper) if args else None

        if "typing.cast" in qnames and len(args) == 2:
            return self.value(args[1].value, deeper)  # `cast(TextNode, node)`: the value itself
        if qnames & {"textwrap.dedent", "inspect.cleandoc"} and first is not None:
            return per_option(first, lambda v: text(textwrap.dedent(static_text(v))) if is_static(v) else v)
        if "json.dumps" in qnames and first is not None:
            dumped = prompt_files.dumps_constant(self, node, env)
            if dumped is not None:
                return dumped
            sort_keys = kwargs.get("sort_keys")
            if sort_keys is not None and not (isinstance(sort_keys, cst.Name) and sort_keys.value == "False"):
                first = without(first, Provenance.UNORDERED)
            return self.propagate(node, [first])
        if (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value in SET_METHODS
            and _unordered(self.value(node.func.value, deeper))
        ):
            return self.hole(Provenance.UNORDERED, node, "a set")  # `BASE.union(EXTRA)`: a new set
        if isinstance(node.func, cst.Name) and not self._is_local_function(node.func):
            if name == "sorted" and first is not None:
                return without(self.propagate(node, [first]), Provenance.UNORDERED)
            if name in ("set", "frozenset"):
                return self.hole(Provenance.UNORDERED, node, "a set")
            if (name in _PASS_THROUGH or qnames & {"pathlib.Path", "pathlib.PurePath"}) and first is not None:
                return first
            if name in _OPAQUE:
                return self.unknown(node)
            if name in _CONVERSIONS and first is not None:
                return self.propagate(node, [first])

        called = self.call_output(node, env)
        if called is not None:
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
                return appended.template_call(self, node, self._template_source(source, env), env)
        if isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if (prov := self.receiver_provenance(node.func.value)) is not None:
                return self.hole(prov, node)
            if method in PATH_LISTINGS and self.path_like(node.func.value):
                return self.hole(Provenance.UNORDERED, node)  # labelled by its code, as its fix finds it
            receiver = self.value(node.func.value, deeper)
            if method in _FILL_METHODS:
                from prefixlint.python.fills import template_of

                return self.format(template_of(self, node.func.value, receiver, env), node, env)
            if method == "join":
                items = self.items(args[0].value, deeper) if args else None
                if items is None:
                    return self.propagate(node, [first] if first is not None else [])
                return per_option(receiver, lambda sep: join(sep, items))
            if method in ("strip", "lstrip", "rstrip"):
                chars = static_text(first) if first is not None and is_static(first) else None
                left, right = method != "rstrip", method != "lstrip"
                return per_option(receiver, lambda v: strip_edges(v, chars, left=left, right=right))
            if method in _CASE_METHODS:
                return map_text(receiver, _CASE_METHODS[method])
            if method == "replace" and len(args) >= 2 and first is not None and is_static(first):
                new = self.value(args[1].value, deeper)
                return per_option(receiver, lambda v: self.replace(v, static_text(first), new))
            if method in _TEMPLATE_FACTORIES:
                source = args[0].value if args else kwargs.get(_TEMPLATE_FACTORIES[method])
                if source is not None:
                    value = self.value(source, env.deeper(template=env.template))
                    return appended.template_call(self, node, value, env)
            if method in _LOOKUPS:  # `d.get(key)`: the key picks, it is not written
                return self.propagate(node, [receiver])
            clock = first_volatile(receiver)
            to_the_day = method == "date" or method == "strftime" and _day_format(node.args)
            if clock is not None and clock.provenance is Provenance.CLOCK and to_the_day:
                return _to_the_day((clock,))  # `datetime.now().strftime("%Y-%m-%d")`: the day only
            if (h := first_volatile(receiver)) is not None and h.by_name:
                return (h,)  # `timestamp.astimezone().strftime(...)`: the value itself, transformed
            parts = [receiver, *self.text_parts(node, name, deeper)]
            return self._opaque(node, name, parts)
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
        configure it (`api_key=`, `headers=`, `timeout=`: the table's `not_prompt` keywords)."""
        config = self.project.frameworks.not_prompt
        return [a for a in call.args if a.keyword is None or a.keyword.value not in config]

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

    def _template_source(self, source: cst.BaseExpression, env: Env) -> Value:
        """The text of `Template(...)`: a string, or a file named by a path (`Path("agent.jinja")`)."""
        from prefixlint.python import prompt_files

        value = self.value(source, env.deeper(template=env.template))
        if is_static(value) and static_text(value).endswith(prompt_files.TEMPLATE_SUFFIXES):
            path = self.project.find_file(static_text(value), os.path.dirname(os.path.abspath(self.path)))
            content = self.project.text(path) if path is not None else None
            if content is not None:
                return text(content)
        return value

    def _opaque(self, node: cst.Call, name: str, parts: list[Value]) -> Value:
        """A call we cannot follow: volatile if an input is volatile by its source (a name is only a
        guess, and a looked-up key is not written); static-but-unknown text when every input is
        static, or when its name says it builds a prompt."""
        for part in parts:
            for h in holes(part):
                if h.provenance.volatile and not h.by_name:
                    return (h,)
        if parts and all(is_constant(p) for p in parts) or says_prompt(name):
            return (Open(self.index.pos(node)[0]),)
        return self.unknown(node)

    def _is_local_function(self, func: cst.Name) -> bool:
        return func.value in self.index.functions

    def resolve_callable(
        self, func: cst.BaseExpression, call: cst.CSTNode
    ) -> tuple[Evaluator, cst.FunctionDef] | None:
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
        for qualified in sorted(self.index.qualified_names(func, self.index.module_scope)):
            found = self.project.resolve(qualified, self.path)
            if found is None:
                continue
            evaluator, attr = found
            head, _, tail = attr.partition(".")
            if not tail and head in evaluator.index.functions:
                return evaluator, evaluator.index.functions[head]
            if tail and head in evaluator.index.classes:
                return evaluator.method(evaluator.index.classes[head], tail)
        if isinstance(func, cst.Attribute):  # `Builder().build()`, `builder.build()`
            owner = self.object_class(func.value, call)
            if owner is not None:
                return owner[0].method(owner[1], func.attr.value)
        return None

    def object_class(
        self, node: cst.BaseExpression, at: cst.CSTNode
    ) -> tuple[Evaluator, cst.ClassDef] | None:
        """The project class `node` names (`Settings`) or makes (`Settings()`), or the class of the
        object it holds (`builder = Builder()`, a parameter `b: Builder`, `self.builder`)."""
        if isinstance(node, cst.Call):
            return self.find_class(node.func, reexported=True)
        if isinstance(node, (cst.Name, cst.Attribute)):
            found = self.find_class(node)
            if found is not None:
                return found
            from prefixlint.python.summaries import receiver_class

            return receiver_class(self, node, at)
        return None

    def element_value(self, node: cst.BaseExpression, element: int, env: Env) -> Value | None:
        """Element `element` of the tuple `node` is or a project function returns (`head, tools =
        build()`), or None when that is not known."""
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
        tuples it returns (None when a return is not a tuple literal)."""
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
            if element is not None:
                returned = [_tuple_element(r, element) for r in returned]
                if not all(returned):
                    return None
            options = [self.value(r, inner) for r in returned]
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
        return bound

    # --- names ---------------------------------------------------------------------------------
    def lookup(self, name: str, node: cst.CSTNode, env: Env) -> Value:
        if name in env.shadow:
            return env.shadow[name]
        if name == "__file__":
            return text(self.path)
        scope = self.index.scope_for(node)
        pos = self.index.pos(node)
        found = self.scoped_value(name, scope, pos, node, env, self.index.branch_of.get(node, ()))
        if found is not None:
            return found
        if (prov := qualified_provenance(self.index.qualified_names(node))) is not None:
            return self.hole(prov, node)
        imported = self.imported_value(name, node, env)
        return imported if imported is not None else self.unknown(node)

    def imported_value(self, name: str, node: cst.CSTNode, env: Env) -> Value | None:
        """A constant another module of the project defines (`from .prompts import SYSTEM`)."""
        for qualified in sorted(self.index.imported_as(name)):
            found = self.project.resolve(qualified, self.path)
            if found is None:
                continue
            evaluator, attr = found
            value = evaluator.module_attribute(attr, env)
            if value is not None:
                return self.anchor(value, node)
        return None

    def module_attribute(self, attr: str, env: Env) -> Value | None:
        """The value of module-level `attr` of this module, or None if it is not a constant here."""
        if env.depth > MAX_DEPTH or "." in attr:
            return None
        bindings = self.index.module_scope.bindings.get(attr)
        if bindings and bindings[-1].kind != "unknown":
            return self.binding_value(attr, self.index.module_scope, bindings[-1], env.deeper())
        if attr in self.index.imports and not bindings:  # re-exported (`from .x import y` in __init__)
            node = cst.Name(attr)
            return self.imported_value(attr, node, env.deeper())
        return None

    def scoped_value(
        self, name: str, scope: Scope, pos: Pos, node: cst.CSTNode, env: Env, branch: Branch = ()
    ) -> Value | None:
        """The value of `name` read at `pos` in `scope`: one of the bindings that may reach it (the
        last one that runs on every path to the read, and any later ones in branches), or None if
        nothing in this module binds it."""
        options: list[Value] = []
        earlier = [
            b
            for b in scope.bindings.get(name, ())
            if b.pos < pos and not self._reads_itself(b, node) and self.may_run(b.branch, env)
        ]
        for binding in reversed(earlier):
            if binding.kind == "setitem":
                continue  # an entry of a dict (prompt_files.data reads those)
            options.append(self.binding_value(name, scope, binding, env))
            always = binding.branch == branch[: len(binding.branch)]
            if binding.kind not in ("assign", "unpack", "unknown", "loop") or always:
                return choice(options)
        unbound = self.unbound_value(name, scope, node, env)
        if unbound is not None:
            options.append(unbound)
        return choice(options) if options else None

    def _reads_itself(self, binding: Binding, node: cst.CSTNode) -> bool:
        """Whether `node` is read by the binding's own value (`prompt = self.render(prompt)` reads the
        earlier `prompt`)."""
        if binding.expr is None or binding.kind == "loop":
            return False
        start, end = self.index.positions.get(binding.expr, ((0, 0), (0, 0)))
        return start <= self.index.pos(node) < (end[0], end[1] + 1)

    def unbound_value(self, name: str, scope: Scope, node: cst.CSTNode, env: Env) -> Value | None:
        """A name not bound earlier in its function: a parameter, or a module-level name."""
        if name in scope.params:
            if scope.node not in env.args:  # the function judged on its own: its caller is unknown
                return self.parameter(name, scope, node, env)
            bound = env.args[scope.node]
            if name in bound:
                return bound[name]
            # A call that does not pass it: the default (or what *args/**kwargs carried: unknown)
            default = _default_of(scope.node, name)
            if default is not None:
                return self.value(default, Env(args=env.args, depth=env.depth + 1))
            return self.hole(Provenance.UNKNOWN, node, name, by_name=True)
        outer = self.index.enclosing_function(scope.node)
        outer_scope = self.index.scopes.get(outer) if outer is not None else None
        if outer_scope is not None and (name in outer_scope.params or name in outer_scope.bindings):
            # a closure reads the names of the function it is defined in (`def _call(): return f(messages)`)
            return self.scoped_value(name, outer_scope, self.index.pos(scope.node), scope.node, env)
        if scope.parent is not None:
            module = scope.parent
            bindings = module.bindings.get(name, ())
            if bindings:  # a module name read in a function: its last binding
                # Module-level code runs at import: no caller's arguments reach it, so its value is
                # the memoized one (it was worked out again for each call of each function reading it).
                return self.binding_value(name, module, bindings[-1], Env(depth=env.depth + 1))
        return None

    def parameter(self, name: str, scope: Scope, node: cst.CSTNode, env: Env) -> Value:
        """A parameter whose caller we do not follow: its annotation (a `random.Random`) or its name
        decides; a constructor's parameters configure the object and are static. Each such hole
        says which parameter it is, so that a call can put what it passes in its place."""
        fn = scope.node
        param = (id(fn), name)
        if isinstance(fn, cst.FunctionDef):
            entry = self.project.frameworks.entry_point(self.index, fn)
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

    def passed_by_callers(self, fn: cst.FunctionDef, name: str) -> Value | None:
        """What the calls of `fn` in this module pass for parameter `name` (its default where a call
        leaves it out), or None when nothing in this module calls it: then its caller is unknown."""
        key = (id(fn), name)
        if key in self.project.following:
            return None
        calls = [
            c
            for c in self.calls_named(fn.name.value)
            if not _inside(self.index, c, fn) and self.resolve_callable(c.func, c) == (self, fn)
        ][:MAX_CALLERS]
        if not calls:
            return None
        self.project.following.add(key)
        try:
            from prefixlint.python.fills import with_items

            values = []
            for call in calls:
                # a call in a loop over items passes one item per call (each its own request)
                bound = self.bind_arguments(fn, call, with_items(self, call, Env(depth=MAX_DEPTH // 2)))
                default = _default_of(fn, name)
                if name in bound and _is_parameter(bound[name]):
                    return None  # the caller passes its own parameter on: still an unknown caller
                if name in bound:
                    values.append(self.anchor(bound[name], call))
                elif default is not None:
                    values.append(self.value(default, Env(depth=MAX_DEPTH // 2)))
                else:
                    values.append(self.hole(Provenance.UNKNOWN, call, name, by_name=True))
        finally:
            self.project.following.discard(key)
        return choice(values)

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

    def annotation_provenance(self, fn: cst.FunctionDef, name: str) -> Provenance | None:
        """The provenance of a parameter annotated with a volatile type (`rnd: random.Random`)."""
        p = fn.params
        for param in (*p.posonly_params, *p.params, *p.kwonly_params):
            if param.name.value == name and param.annotation is not None:
                for part in _annotation_names(param.annotation.annotation):
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

    def path_like(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether `node` is a path object: made by `Path(...)`, joined with `/`, `.parent`, a
        path method, or a name assigned one (`TOOLS = Path(__file__).parent / "tools"`)."""
        if depth > 4:
            return False
        deeper = depth + 1
        if isinstance(node, cst.Call):
            if self.index.qualified_names(node.func) & PATH_TYPES:
                return True
            func = node.func
            return (
                isinstance(func, cst.Attribute)
                and func.attr.value in PATH_METHODS
                and self.path_like(func.value, deeper)
            )
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            return self.path_like(node.left, deeper)
        if isinstance(node, cst.Attribute) and node.attr.value == "parent":
            return self.path_like(node.value, deeper)
        if isinstance(node, (cst.Name, cst.Attribute)) and (value := self.index.assigned(node)) is not None:
            return self.path_like(value, deeper)
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

    def binding_value(self, name: str, scope: Scope, binding: Binding, env: Env) -> Value:
        if env.args or env.shadow:
            return self._binding_value(name, scope, binding, env)
        # Without arguments bound, a binding has one value wherever it is read: computed once.
        key = (id(binding), env.template)
        memo = self.project.memo
        if key in memo:
            return memo[key]
        cut = self.project.cut
        value = self._binding_value(name, scope, binding, env)
        if self.project.cut == cut:  # not cut short by a limit here: the same wherever it is read
            memo[key] = value
        return value

    def _binding_value(self, name: str, scope: Scope, binding: Binding, env: Env) -> Value:
        deeper = env.deeper()
        if binding.kind == "assign" and binding.expr is not None:
            return self.in_loop(binding, self.value(binding.expr, deeper), deeper)
        if binding.kind == "unpack" and binding.expr is not None:
            element = self.element_value(binding.expr, binding.element, deeper)
            if element is not None:
                return self.in_loop(binding, element, deeper)
        if binding.kind in ("aug", "append", "extend") and binding.expr is not None:
            before = self.scoped_value(name, scope, binding.pos, binding.expr, deeper, binding.branch)
            added = self.in_loop(binding, self.value(binding.expr, deeper), deeper)
            if (
                binding.kind == "extend"
                or binding.kind == "aug"
                and any(isinstance(x, Break) for x in before or ())
            ):
                added = self.as_history(added, binding.expr)  # `messages.extend(history)`, `+= history`
            elif (
                binding.kind == "append"
                and isinstance(binding.expr, cst.Subscript)
                and _holds_messages(before or EMPTY)
            ):
                # `messages.insert(k, history[i])`: an earlier turn we cannot see, replayed
                if len(added) == 1 and isinstance(added[0], Hole) and not added[0].label:
                    added = (replace(added[0], label=self.label(binding.expr.value)),)
                added = _as_history(added)
            return concat(before or EMPTY, added)
        if binding.kind in ("prepend", "head") and binding.expr is not None:
            before = self.scoped_value(name, scope, binding.pos, binding.expr, deeper, binding.branch)
            if binding.kind == "prepend":  # `messages.insert(0, message)`
                return concat(self.value(binding.expr, deeper), before or EMPTY)
            return per_option(before or EMPTY, lambda v: self.new_head(v, binding, deeper))
        if binding.kind == "shuffle" and binding.expr is not None:
            return self.hole(Provenance.RANDOM, binding.expr)
        if binding.kind == "loop" and binding.expr is not None:
            # One element of a shuffled list or a set is not random text itself: the order only
            # matters to text accumulated across the loop (in_loop).
            iterable = without(
                without(self.value(binding.expr, deeper), Provenance.RANDOM), Provenance.UNORDERED
            )
            if holes(iterable) and all(h.by_name for h in holes(iterable)):
                # An item of an input known by its name (a turn of `chat_history`) is not that input
                return self.hole(Provenance.UNKNOWN, binding.expr, name, by_name=True)
            return self.propagate(binding.expr, [iterable])
        line, column = binding.pos
        return (Hole(Provenance.UNKNOWN, line, column, name, path=self.path),)

    def new_head(self, messages: Value, binding: Binding, env: Env) -> Value:
        """A list of messages whose first message is rewritten: `messages[0] = m`, or its content
        (`messages[0]["content"] = x + messages[0]["content"]`: the old content read in a `+` chain
        is what the list held). A list whose first message we do not see is left as it is."""
        assert binding.expr is not None and binding.key is not None
        if not messages or not isinstance(messages[0], Break):
            return messages
        rest = next((k for k in range(1, len(messages)) if _starts_message(messages[k])), len(messages))
        if isinstance(binding.key, cst.Subscript) and not isinstance(binding.key.value, cst.Subscript):
            return concat(self.value(binding.expr, env), messages[rest:])  # the whole message
        old, target = messages[1:rest], self.index.module.code_for_node(binding.key)

        def content(node: cst.BaseExpression) -> Value:
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
                return concat(content(node.left), content(node.right))
            if self.index.module.code_for_node(node) == target:
                return old
            return self.value(node, env)

        return concat((messages[0],), content(binding.expr), messages[rest:])

    def in_loop(self, binding: Binding, value: Value, env: Env) -> Value:
        """Text added once per iteration of a loop over volatile data (a set, a sample, the
        completion order of futures), however deep the loop it is added in, is volatile."""
        if not binding.loops or first_volatile(value) is not None:
            return value
        for iterable in reversed(binding.loops):
            order = first_volatile(self.value(iterable, env))
            if order is not None:
                return (order,)
        return value

    def as_history(self, value: Value, node: cst.BaseExpression) -> Value:
        """A list of messages spliced into a request that we cannot see, or see empty (state filled
        as the conversation goes: `self.history = []`), is the conversation so far."""
        if not value and isinstance(node, (cst.Name, cst.Attribute)):
            line, column = self.index.pos(node)
            return (Hole(Provenance.UNKNOWN, line, column, self.label(node), path=self.path, history=True),)
        return _as_history(value)

    # --- classes -------------------------------------------------------------------------------
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
                options.append(_as_state(self.value(binding.expr, env.deeper())))
        for expr in self._given_to_super(cls, attr):  # a pydantic model's field set by its constructor
            options.append(_as_state(self.value(expr, env.deeper())))
        if options:
            return choice(options)
        for evaluator, base in self.base_classes(cls):
            found = evaluator.class_attribute(base, attr, env.deeper(), depth + 1, subclasses=False)
            if found is not None:  # placed where it is read here (`at`), or at the class
                return self.anchor(found, at or cls) if evaluator is not self else found
        if subclasses and _declares_without_value(cls, attr):
            # an abstract field (`prompt: str`, `prompt: str = field()`) that subclasses give a value
            options = []
            for evaluator, sub in self.project.subclasses(self, cls):
                found = evaluator.class_attribute(sub, attr, env.deeper(), depth + 1, subclasses=False)
                if found is not None:
                    options.append(self.anchor(found, at or cls) if evaluator is not self else found)
            if options:
                return choice(options)
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

    def base_classes(self, cls: cst.ClassDef) -> list[tuple[Evaluator, cst.ClassDef]]:
        out: list[tuple[Evaluator, cst.ClassDef]] = []
        for arg in cls.bases:
            found = self.find_class(arg.value)
            if found is not None:
                out.append(found)
        return out

    def find_class(
        self, node: cst.BaseExpression, reexported: bool = False
    ) -> tuple[Evaluator, cst.ClassDef] | None:
        """The project class `node` names. `reexported`: also through a package that re-exports
        it (`from griptape.utils import J2` with `from .j2 import J2` in its `__init__.py`), for
        an object made and used at once (`J2(path).render(...)`); not everywhere, since following
        every re-export of a package that re-exports all its classes costs ~40% more CPU."""
        if isinstance(node, cst.Name) and node.value in self.index.classes:
            return self, self.index.classes[node.value]
        return self._imported_class(self.index.qualified_names(node, self.index.module_scope), 3 * reexported)

    def _imported_class(self, qualified: set[str], hops: int) -> tuple[Evaluator, cst.ClassDef] | None:
        """The class an import names, through at most `hops` re-exports."""
        for name in sorted(qualified):
            found = self.project.resolve(name, self.path)
            if found is None:
                continue
            evaluator, attr = found
            if attr in evaluator.index.classes:
                return evaluator, evaluator.index.classes[attr]
            if hops and "." not in attr and not evaluator.index.module_scope.bindings.get(attr):
                again = evaluator._imported_class(evaluator.index.imported_as(attr), hops - 1)
                if again is not None:
                    return again
        return None

    def method(
        self, cls: cst.ClassDef, name: str, depth: int = 0
    ) -> tuple[Evaluator, cst.FunctionDef] | None:
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

    # --- sequences -----------------------------------------------------------------------------
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
            from prefixlint.python.prompt_files import data

            found = data(self, node, env)
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

    # --- formatting ----------------------------------------------------------------------------
    def format(self, template: Value, call: cst.Call, env: Env) -> Value:
        """`template.format(...)`, `.substitute(...)`, `.render(...)` and the like: the placeholders
        filled with the values passed (by keyword, `**mapping` or a dict)."""
        from prefixlint.python import prompt_files

        method = func_name(call.func)
        named = prompt_files.named_arguments(self, call, env)
        if method == "render":
            attributes = self.object_arguments(call)
            return per_option(template, lambda v: prompt_files.render_jinja(self, v, named, call, attributes))
        if method in ("substitute", "safe_substitute"):
            return per_option(template, lambda v: self.substitute(v, call, named))
        if method == "partial":  # the placeholders it does not fill are filled later
            return per_option(template, lambda v: appended.fill_named(v, named))
        positional = [
            self.value(a.value, env.deeper())
            for a in call.args
            if a.keyword is None and not a.star and not isinstance(a.value, cst.Dict)
        ]
        keep = method == "partial"  # `partial(a=...)` fills some now, the rest later
        return per_option(template, lambda v: self.fill_all(v, call, positional, named, keep))

    def fill_all(
        self,
        template: Value,
        where: cst.CSTNode,
        positional: list[Value],
        named: dict[str, Value],
        keep: bool = False,
    ) -> Value:
        """`fill`, and when the template is not all visible (its placeholders are built from names
        we cannot read), the values passed go somewhere in it: at its end, the place that keeps the
        least static text after them."""
        filled = self.fill(template, where, positional, named, keep)
        if is_static(template) or keep:
            return filled
        used = {m.group(1) for seg in template if isinstance(seg, Text) for m in _FIELD.finditer(seg.text)}
        # Where each goes is unknown, so each is judged on its own (one of them at the end): the
        # static text inside a value (letta's memory block after its timestamp) still counts, while
        # values placed one after another would pass for text that follows each other.
        rest = [v for k, v in named.items() if k not in used and not is_static(v)]
        return concat(filled, choice(rest)) if rest else filled

    def object_arguments(self, call: cst.Call) -> dict[str, Callable[[str], Value | None]]:
        """Keyword arguments that pass `self` to a template: its attributes are looked up on the class."""
        out: dict[str, Callable[[str], Value | None]] = {}
        scope = self.index.scope_for(call)
        for arg in call.args:
            if (
                arg.keyword is not None
                and isinstance(arg.value, cst.Name)
                and arg.value.value == "self"
                and scope.cls is not None
            ):
                cls = scope.cls
                out[arg.keyword.value] = lambda attr, cls=cls: self.class_attribute(cls, attr, Env(), at=call)
        return out

    def substitute(self, template: Value, where: cst.CSTNode, named: dict[str, Value]) -> Value:
        """`string.Template.substitute`: `$name` and `${name}`."""

        def field(m: re.Match[str]) -> Value:
            if m.group(0) == "$$":
                return text("$")
            name = m.group(1) or m.group(2)
            return named.get(name) or self.placeholder(name, where)

        return _replace_matches(template, _DOLLAR, field)

    def placeholder(self, name: str, where: cst.CSTNode) -> Value:
        """A placeholder nobody in the checked code fills: a hole named after it."""
        if (source := self.project.frameworks.placeholder_source(self.index, name)) is not None:
            # the framework fills it per request, where the checked code does not show: a guess
            (hole,) = self.source_hole(source, where, "{" + name + "}")
            return (replace(hole, timing="call", by_name=True),)
        prov = placeholder_provenance(name) if _IDENT.match(name.replace(".", "_")) else None
        (hole,) = self.hole(prov or Provenance.UNKNOWN, where, "{" + name + "}", by_name=True)
        return (replace(hole, timing="call"),)  # filled when the template is, not where it is written

    def placeholders(self, value: Value, where: cst.CSTNode) -> Value:
        """Double-brace placeholders (`{{ name }}`, `{{time.date}}`: Jinja, Handlebars, Semantic
        Kernel) in a template string, as holes named after them."""
        return _replace_matches(value, _DOUBLE_BRACE, lambda m: self.placeholder(m.group(1), where))

    def fill(
        self,
        template: Value,
        where: cst.CSTNode,
        positional: list[Value],
        named: dict[str, Value],
        keep: bool = False,
    ) -> Value:
        """`str.format` on the static parts; a placeholder nobody fills becomes a hole named after it
        (with `keep`, it stays a placeholder, to be filled later)."""
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
            for literal, field_name, spec, conv in parsed:
                out.append(text(literal))
                if field_name is None:
                    continue
                if keep and field_name.split(".")[0].split("[")[0] not in named:
                    written = field_name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "")
                    out.append(text("{" + written + "}"))
                    continue
                base = re.split(r"[.\[]", field_name, maxsplit=1)[0]
                if base == "" or base.isdigit():
                    index = auto if base == "" else int(base)
                    auto += 1
                    value = positional[index] if index < len(positional) else None
                else:
                    value = named.get(base)
                if value is None:
                    value = self.placeholder(field_name, where)
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
                string_value(e.key): self.value(e.value, env.deeper())
                for e in right.elements
                if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
            }
        positions = iter(values)

        def field(m: re.Match[str]) -> Value:
            if m.group(0) == "%%":
                return text("%")
            if m.group(1):
                return named.get(m.group(1)) or self.unknown(node)
            return next(positions, None) or self.unknown(node)

        return _replace_matches(left, _PERCENT, field)

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


# Clocks read to the day, and the strftime directives that read finer than a day.
_DAY_CLOCKS = {"datetime.date.today", "pendulum.today"}
_TIME_DIRECTIVES = re.compile(r"%[-#]?[HIMSfpXcTrRsz]")


def _day_format(args: Sequence[cst.Arg]) -> bool:
    """Whether a strftime call's format (its first argument, a literal) reads no finer than the day."""
    first = next((a.value for a in args if a.keyword is None), None)
    return isinstance(first, cst.SimpleString) and not _TIME_DIRECTIVES.search(str(string_value(first)))


def _to_the_day(value: Value) -> Value:
    """A clock value read to the day only (only when it is just that clock)."""
    if len(value) == 1 and isinstance(value[0], Hole) and value[0].provenance is Provenance.CLOCK:
        return (replace(value[0], daily=True),)
    return value


# Nodes whose value costs less to work out again than to look up (Evaluator.value).
_LITERAL_NODES = frozenset({cst.SimpleString, cst.Integer, cst.Float})
_UNKNOWN = object()  # a test whose value the literal arguments do not decide
_LITERALS: dict[str, object] = {"True": True, "False": False, "None": None}
_COMPARE = {
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
    cst.Is: lambda a, b: a is b,
    cst.IsNot: lambda a, b: a is not b,
}


def literal_value(node: cst.BaseExpression | None) -> object:
    """`True`, `None`, `3`, `"x"` as Python values; anything else is _UNKNOWN."""
    if isinstance(node, cst.Name) and node.value in _LITERALS:
        return _LITERALS[node.value]
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.SimpleString):
        return string_value(node)
    return _UNKNOWN


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
    return {k: v for k, v in out.items() if v is not _UNKNOWN}


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


def _is_parameter(value: Value) -> bool:
    """A value that is just a parameter of the function it was read in."""
    return (
        len(value) == 1
        and isinstance(value[0], Hole)
        and value[0].by_name  # an entry point's parameter is the request, not an unknown caller's value
        and value[0].via.startswith(PARAMETER_OF)
    )


def _as_state(stored: Value) -> Value:
    """A value kept on an object: a parameter whose name says nothing is its state, not an input."""
    return map_holes(stored, lambda h: replace(h, provenance=Provenance.UNKNOWN) if h.weak else h)


def _inside(index: ModuleIndex, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    """Whether `node` is within `fn` (a recursive call says nothing about outside callers)."""
    start, end = index.positions.get(fn, ((0, 0), (0, 0)))
    return start <= index.pos(node) <= end


def _default_of(fn: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    if not isinstance(fn, cst.FunctionDef):
        return None
    p = fn.params
    return next(
        (x.default for x in (*p.posonly_params, *p.params, *p.kwonly_params) if x.name.value == name), None
    )


def _replace_matches(
    template: Value, pattern: re.Pattern[str], field: Callable[[re.Match[str]], Value]
) -> Value:
    """The template with each match of `pattern` in its static text replaced by `field(match)`."""
    out: list[Value] = []
    for seg in template:
        if not isinstance(seg, Text):
            out.append((seg,))
            continue
        last = 0
        for m in pattern.finditer(seg.text):
            out.append(text(seg.text[last : m.start()]))
            out.append(field(m))
            last = m.end()
        out.append(text(seg.text[last:]))
    return concat(*out)


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


class _Enough(Exception):
    """Raised by _FirstLine once the label's text is there."""


class _FirstLine(CodegenState):
    """libcst's code generation, stopped once the first line (or more than a label's 60
    characters of it) is generated."""

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        shown = "".join(self.tokens).lstrip()
        if "\n" in shown or "\r" in shown or len(shown) > 60:
            raise _Enough


def _tuple_element(node: cst.BaseExpression, element: int) -> cst.BaseExpression | None:
    """Element `element` of a tuple or list literal without starred parts."""
    if not isinstance(node, (cst.Tuple, cst.List)) or element >= len(node.elements):
        return None
    if not all(isinstance(e, cst.Element) for e in node.elements):
        return None
    return node.elements[element].value


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


def _unordered(*values: Value) -> bool:
    """Whether one of `values` is a set (an unordered hole known by its source, not its name)."""
    return any(h.provenance is Provenance.UNORDERED and not h.by_name for v in values for h in holes(v))


def _annotation_heads(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`ClassVar[str]` gives `ClassVar`; `str | None` gives both sides."""
    if isinstance(node, cst.Subscript):
        return [node.value]
    if isinstance(node, cst.BinaryOperation):
        return _annotation_heads(node.left) + _annotation_heads(node.right)
    return [node]


def _field_without_default(node: cst.BaseExpression | None) -> bool:
    """`field(repr=False)`: a dataclass field every instance must be given (by a subclass, say)."""
    if not (isinstance(node, cst.Call) and func_name(node.func) in ("field", "Field")):
        return False
    keywords = {a.keyword.value for a in node.args if a.keyword is not None}
    return not keywords & {"default", "default_factory"} and all(a.keyword is not None for a in node.args)


def _is_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString))


def _annotation_names(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The types an annotation names: `X | None`, `Optional[X]`, `"X"` give X."""
    if isinstance(node, cst.BinaryOperation):
        return _annotation_names(node.left) + _annotation_names(node.right)
    if isinstance(node, cst.Subscript):
        return [
            n
            for el in node.slice
            if isinstance(el.slice, cst.Index)
            for n in _annotation_names(el.slice.value)
        ]
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        try:  # a forward reference, `"Model"` or `"Optional[Model]"`
            return _annotation_names(cst.parse_expression(node.evaluated_value.strip()))
        except cst.ParserSyntaxError:
            return []
    return [node] if isinstance(node, (cst.Name, cst.Attribute)) else []


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []
