"""Prompt candidates: text that looks like a prompt by its shape (a message dict, a constant or a
function named like a prompt, an agent's first argument, a `system=` keyword of any call).

A shape is only a candidate: what it builds is prompt text for sure when it reaches a modelled
sink (prefixlint/python/sinks.py), and a finding on a candidate that reaches none is at most
info (prefixlint/python/findings.py)."""

from __future__ import annotations

import re

import libcst as cst

from prefixlint.python.evaluate import Env, Evaluator, _message_role, _role_of, func_name
from prefixlint.python.evaluate.base import bare_set
from prefixlint.python.forwarding import forwarded_whole
from prefixlint.python.prompt import Prompt
from prefixlint.python.scopes import ModuleIndex, string_value
from prefixlint.python.segments import Hole, Value, concat, static_text
from prefixlint.python.volatile import says_prompt, says_prompt_attribute

# Keyword arguments that carry prompt text or messages, in the order the request puts them.
SYSTEM_KWARGS = ("instructions", "system", "system_prompt", "system_message", "preamble", "tools")
TEXT_KWARGS = ("prompt", "template")
MESSAGE_KWARGS = ("messages", "input")
# Methods whose first positional argument is the whole prompt (LangChain, Gemini, LlamaIndex).
PROMPT_METHODS = {
    "invoke",
    "ainvoke",
    "predict",
    "generate_content",
    "complete",
    "acomplete",
    "from_template",
}


# A `.render()` whose text we can read is a prompt when it has this much static text (not a
# one-line HTML or log template).
MIN_RENDERED_TEXT = 80
# Calls that write text to a log or the console, not to a model: a template rendered straight into
# one is no prompt (`log.info(env.from_string(LINE).render(...))`).
_LOG_CALLS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log", "print"}
# A rendered template that is markup (an HTML page or mail) is no prompt.
_MARKUP = re.compile(
    r"\s*<(?:!doctype|html|head|body|div|p|table|span|h[1-6]|ul|ol|li|br|a|img|form)\b", re.I
)


def is_message_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Dict):
        return any(
            isinstance(e, cst.DictElement)
            and isinstance(e.key, cst.SimpleString)
            and string_value(e.key) == "role"
            for e in node.elements
        )
    if isinstance(node, cst.Call):
        return _message_role(node, func_name(node.func)) is not None
    if isinstance(node, cst.Tuple):
        return len(node.elements) == 2 and _role_of(node.elements[0].value) is not None
    return False


class _CandidateFinder:
    """visit_/leave_ methods replayed over the index's recorded nodes (ModuleIndex.replay)."""

    def __init__(
        self, index: ModuleIndex, evaluator: Evaluator, declared: frozenset[str] = frozenset()
    ) -> None:
        self.declared = declared  # configured sinks: qualified (`pkg.mod.fn`) or bare (`fn`) names
        self.index = index
        self.ev = evaluator
        self.prompts: list[Prompt] = []
        self.depth = 0  # function nesting: constants are module or class level
        self.classes: list[cst.ClassDef] = []
        self.logged: set[cst.CSTNode] = set()  # arguments of logging calls (_LOG_CALLS)

    def add(self, node: cst.CSTNode, value: Value | None, what: str, open_tail: bool = False) -> None:
        # a set itself (`self.never_prompts = set()`) is a collection, not text: its order reaches
        # a prompt only where it is iterated into one (Evaluator.iterated)
        if value is not None and not (value and all(isinstance(s, Hole) and bare_set(s) for s in value)):
            self.prompts.append(Prompt(value, self.index.pos(node)[0], what, open_tail))

    def value(self, node: cst.BaseExpression, template: bool = False) -> Value | None:
        self.ev.project.steps = 0  # each prompt gets the whole budget
        try:
            if isinstance(node, cst.Name) and node.value in self.index.functions:
                # `instructions=build_instructions`: the agent calls it for every request
                return self.ev.function_output(self.index.functions[node.value], None, Env())
            return self.ev.value(node, Env(template=template))
        except RecursionError:  # pathologically deep code: skip this prompt, not the file
            return None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1
        decorated = any(says_prompt(_decorator_name(d.decorator)) for d in node.decorators)
        if says_prompt(node.name.value) or decorated:  # also pydantic-ai's `@agent.system_prompt`
            self.ev.project.steps = 0
            try:
                output = self.ev.function_output(node, None, Env())
            except RecursionError:
                return
            self.add(node, output, f"what `{node.name.value}()` builds")

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth -= 1
        self._message_lists(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.pop()

    def _message_lists(self, fn: cst.FunctionDef) -> None:
        """A list the function fills with messages (`messages.append({"role": ...})`): the whole
        list as it stands at the end; when it is returned, the caller may append more."""
        scope = self.index.scopes.get(fn)
        if scope is None:
            return
        returned = {r.value.value for r in self.index.bodies[fn].returns if isinstance(r.value, cst.Name)}
        end = self.index.positions.get(fn, ((0, 0), (10**9, 0)))[1]
        for name, bindings in scope.bindings.items():
            if not any(
                b.kind in ("append", "prepend", "extend") and b.expr is not None and _holds_message(b.expr)
                for b in bindings
            ):
                continue
            self.ev.project.steps = 0
            try:
                value = self.ev.scoped_value(name, scope, end, fn, Env())
            except RecursionError:
                continue
            if value is not None:
                value = forwarded_whole("messages", value)  # a conversion helper's reshaped list
                self.prompts.append(
                    Prompt(value, bindings[0].pos[0], f"the messages in `{name}`", name in returned)
                )

    def visit_Call(self, node: cst.Call) -> None:
        if self.ev.project.frameworks.match_call(self.index, node) is not None:
            return  # the models table says what this call's arguments are (sinks.py): no guess
        name = func_name(node.func)
        if name in _LOG_CALLS:  # visited before its arguments
            self.logged.update(a.value for a in node.args)
        callee = _dotted(node.func) or name  # `role_prompt.set()`, never a bare `set()` in a label
        if self.declared and (name in self.declared or self.index.qualified_names(node.func) & self.declared):
            parts = [self.value(a.value) for a in node.args]
            if all(p is not None for p in parts):
                self.add(node, concat(*parts), f"the arguments of `{callee}()` (a configured sink)")
        if _message_role(node, name) is not None:
            self.add(node, self.value(node), f"the `{name}` message")
            return
        kwargs = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        # Each text argument is a prompt of its own; the system part also precedes the messages.
        system = [k for k in SYSTEM_KWARGS if k in kwargs]
        for k in (*SYSTEM_KWARGS, *TEXT_KWARGS):
            if k in kwargs:
                self.add(node, self.value(kwargs[k], template=k == "template"), f"`{k}=` of `{callee}()`")
        for k in MESSAGE_KWARGS:
            # `input=` is a prompt only beside instructions (OpenAI Responses); alone it is too common
            if k in kwargs and (k != "input" or system):
                head = self.value(kwargs[system[0]]) if system else ()
                body = self.value(kwargs[k])
                if head is not None and body is not None:
                    self.add(node, concat(head, body), f"the request of `{callee}()`")
        if name in ("format", "format_map", "substitute") and isinstance(node.func, cst.Attribute):
            owner = _dotted(node.func.value)
            if owner and any(says_prompt(part) for part in owner.split(".")):
                # `prompts.plan.format(current_date=...)`: a prompt template filled here, whatever
                # the call it is then passed to
                self.add(node, self.value(node), f"`{owner}` formatted")
        if (
            name == "render"
            and isinstance(node.func, cst.Attribute)
            and self.depth
            and node not in self.logged
        ):
            # `template.render(...)` of a Jinja template we can read: the rendered prompt
            rendered = self.value(node)
            shown = static_text(rendered) if rendered is not None else ""
            if len(shown) >= MIN_RENDERED_TEXT and not _MARKUP.match(shown):
                self.add(node, rendered, "the rendered template")
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if (
            name.endswith("Agent")
            and positional
            and not set(system) - {"tools"}
            and self._may_be_prompt(node)
        ):
            # `ChatAgent("You are ...")`: an agent's first argument is its system message
            self.add(node, self.value(positional[0]), f"the first argument of `{name}()`", open_tail=True)
        if isinstance(node.func, cst.Attribute) and positional:
            if name in PROMPT_METHODS:
                self.add(
                    node,
                    self.value(node if name == "from_template" else positional[0]),
                    f"the prompt passed to `{name}()`",
                )
            elif name == "from_messages":
                self.add(node, self.value(positional[0], template=True), "the messages of `from_messages()`")

    def _may_be_prompt(self, call: cst.Call) -> bool:
        """Whether an agent class's first argument may be its prompt: a class we cannot read, or a
        project class whose constructor keeps its first parameter under a prompt-like name (not a
        `ReportAgent(output_dir)` that only writes files)."""
        found = self.ev.find_class(call.func)
        init = found[0].method(found[1], "__init__") if found is not None else None
        if init is None:
            return True
        params = [p.name.value for p in init[1].params.params if p.name.value not in ("self", "cls")]
        if not params:
            return False
        first = params[0]
        if says_prompt_attribute(first):
            return True
        kept = [
            attr
            for (cls, attr), bindings in init[0].index.instance_attrs.items()
            if cls == found[1].name.value
            for b in bindings
            if isinstance(b.expr, cst.Name) and b.expr.value == first
        ]
        return any(says_prompt_attribute(attr) for attr in kept)

    def visit_List(self, node: cst.List) -> None:
        if any(is_message_literal(e.value) for e in node.elements):
            self.add(node, self.value(node), "the message list")

    def visit_Dict(self, node: cst.Dict) -> None:
        if is_message_literal(node):
            self.add(node, self.value(node), "the message")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._assigned(node, target.target, node.value, augmented=False)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assigned(node, node.target, node.value, augmented=False)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._assigned(node, node.target, node.value, augmented=True)

    def _assigned(
        self, node: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression, augmented: bool
    ) -> None:
        in_class = self.depth == 0 and bool(self.classes)
        if in_class and self.ev.project.frameworks.match_class(self.index, self.classes[-1]) is not None:
            return  # a class row's attributes are what the table says they are (sinks.py): no guess
        if (
            isinstance(target, cst.Name)
            and in_class
            and says_prompt_attribute(target.value)
            and not augmented
        ):
            # A tool's or agent's `description`/`instructions` field: sent with what follows it.
            owner = f"{self.classes[-1].name.value}.{target.value}"
            self.add(node, self.value(value), f"`{owner}`", open_tail=True)
        elif isinstance(target, cst.Name) and self.depth == 0 and says_prompt(target.value) and not augmented:
            # A prompt constant: its `{placeholders}` are filled later by whoever formats it. Where
            # this module formats it, what it is filled with decides (that call is judged there).
            from prefixlint.python.fills import name_filled

            filled_here = name_filled(self.ev, target.value, node)
            self.add(node, self.value(value, template=not filled_here), f"`{target.value}`")
        elif isinstance(target, cst.Attribute) and says_prompt_attribute(target.attr.value):
            # Text stored on an object is read elsewhere: what follows it there is unknown.
            owner = self.index.module.code_for_node(target)
            self.add(node, self.value(value), f"`{owner}`", open_tail=True)


def _dotted(node: cst.BaseExpression) -> str:
    """`a.b.c` for a chain of names, else ""."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


def _decorator_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Call):
        node = node.func
    return func_name(node)


def _holds_message(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.List, cst.Tuple)):
        return any(is_message_literal(e.value) for e in node.elements)
    return is_message_literal(node)


def find_candidates(index: ModuleIndex, evaluator: Evaluator, declared: tuple[str, ...] = ()) -> list[Prompt]:
    finder = _CandidateFinder(index, evaluator, frozenset(declared))
    index.replay(finder)
    return finder.prompts
