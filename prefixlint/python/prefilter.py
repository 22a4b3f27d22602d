"""Which modules hold prompt text at all, decided on CPython's own parse (C, ~50x faster than
libcst's and its index), so that one that does not is never parsed by libcst nor evaluated.

The frontend finds prompts through shapes the code must have: a call of a modelled API (sinks.py,
the models table), a message literal, a prompt keyword, a name or field that says prompt, a prompt
method or template (candidates.py), a Jinja template string (embedded.py). `has_shapes` looks for
each on the module's `ast`, as a superset of what those finders accept: it never says no where one
of them would say yes (tests/test_prefilter.py checks that on every fixture and corpus module).

What a module without any of them may still do is call a wrapper of the project with plain values
(`answer = bot.ask(question)`): that call is not followed from there. Its prompt text is in the
wrapper's module, which has the shapes and is checked for what it builds; what the caller passes
is a value, not prompt text.
"""

from __future__ import annotations

import ast
import fnmatch
from typing import TYPE_CHECKING

from prefixlint.python.frameworks import SinkModel
from prefixlint.python.volatile import ROLES, builder_role, says_prompt, says_prompt_attribute

if TYPE_CHECKING:
    from prefixlint.python.frameworks import Frameworks

# The finders' keywords (candidates.SYSTEM_KWARGS, TEXT_KWARGS, MESSAGE_KWARGS): any of them passed
# to any call makes a candidate (`input=` only beside a system keyword, which is itself one).
_PROMPT_KEYWORDS = frozenset(
    {"instructions", "system", "system_prompt", "system_message", "preamble", "tools", "prompt", "template"}
    | {"messages"}
)
# candidates.PROMPT_METHODS and `from_messages`: a method call with a positional argument.
_PROMPT_METHODS = frozenset(
    {
        "invoke",
        "ainvoke",
        "predict",
        "generate_content",
        "complete",
        "acomplete",
        "from_template",
        "from_messages",
    }
)
_FORMAT_METHODS = frozenset({"format", "format_map", "substitute"})
# embedded.py: `jinja2.Template(s)`, `env.from_string(s)` (by their last name: a superset).
_TEMPLATE_CALLS = frozenset({"Template", "from_string"})


def _name(func: ast.expr) -> str:
    """evaluate.func_name on an ast node: the called name, or the attribute called."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _chain(node: ast.expr) -> str:
    """frameworks.written_chain on an ast node."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _dotted(node: ast.expr) -> str:
    """candidates._dotted: `a.b.c` for a chain of names, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def _role_of(node: ast.expr) -> bool:
    """evaluate._role_of: a string or an attribute (`Role.USER`) that names a role."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower() in ROLES
    if isinstance(node, ast.Attribute):
        return node.attr.lower() in ROLES
    return False


def _message_call(call: ast.Call, name: str) -> bool:
    """evaluate._message_role(call) is not None: a message constructor or builder."""
    keywords = {k.arg for k in call.keywords if k.arg is not None}
    if "role" in keywords:
        return True
    has_content = bool(keywords & {"content", "text"})
    if not name.endswith("Message"):
        return has_content and builder_role(name) is not None
    if name[: -len("Message")].lower() in ROLES:
        return True
    return bool(call.args) and _role_of(call.args[0]) or has_content


class _Shapes(ast.NodeVisitor):
    def __init__(self, frameworks: Frameworks, declared: frozenset[str]) -> None:
        self.frameworks = frameworks
        self.declared = declared  # last names of the configured sinks
        self.depth = 0  # function nesting (a lambda does not count), as the finders keep it

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if says_prompt(node.name):
            raise _Found
        for decorator in node.decorator_list:
            func = decorator.func if isinstance(decorator, ast.Call) else decorator
            if says_prompt(_name(func)) or _table_match(self.frameworks._decorators, func):
                raise _Found
        self.depth += 1  # its decorators and defaults too, as libcst visits them inside it
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # a class row of the table (`class Ask(dspy.Signature)`, a smolagents `Tool` subclass)
        if any(_table_match(self.frameworks._bases, base) for base in node.bases):
            raise _Found
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> None:
        augmented = isinstance(node, ast.AugAssign)
        if augmented and not isinstance(node.op, ast.Add) or node.value is None:
            self.generic_visit(node)
            return
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and self.depth == 0 and not augmented:
                # module level: says_prompt; class level: says_prompt_attribute (a superset of it)
                if says_prompt_attribute(target.id):
                    raise _Found
            elif isinstance(target, ast.Attribute) and says_prompt_attribute(target.attr):
                raise _Found
        self.generic_visit(node)

    visit_AnnAssign = visit_Assign  # noqa: N815
    visit_AugAssign = visit_Assign  # noqa: N815

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(isinstance(k, ast.Constant) and k.value == "role" for k in node.keys):
            raise _Found
        self.generic_visit(node)

    def visit_Tuple(self, node: ast.Tuple) -> None:
        # `("system", text)`, `(Role.USER, text)` in a message list or appended to one
        if len(node.elts) == 2 and _role_of(node.elts[0]):
            raise _Found
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = _name(func)
        if name in self.declared or _message_call(node, name) or _table_match(self.frameworks._calls, func):
            raise _Found
        if _memory_named(self.frameworks, node):
            raise _Found  # a framework memory that may rewrite a conversation's history (memories.py)
        if any(k.arg in _PROMPT_KEYWORDS for k in node.keywords):
            raise _Found
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        if any(_table_match(self.frameworks._calls, a) for a in positional):
            raise _Found  # a sink passed as a value (`asyncio.to_thread(client.messages.create, ...)`)
        if isinstance(func, ast.Attribute):
            if name in _FORMAT_METHODS:
                owner = _dotted(func.value)
                if owner and any(says_prompt(part) for part in owner.split(".")):
                    raise _Found
            if name == "render" and self.depth:
                raise _Found
            if positional and name in _PROMPT_METHODS:
                raise _Found
        if name.endswith("Agent") and positional:
            raise _Found
        if name in _TEMPLATE_CALLS and (node.args or node.keywords):
            raise _Found
        self.generic_visit(node)


def _table_match(table: dict, func: ast.expr) -> bool:
    """A call the models table may match: a pattern's last name, and for an `.a.b.c` pattern the
    whole written chain (frameworks._Pattern.matches); a glob by its last name alone."""
    chain = _chain(func)
    if not chain:
        return False
    rows = table.get(chain.rsplit(".", 1)[-1])
    if not rows:
        return False
    for pattern, row in rows:
        if not isinstance(row, SinkModel):
            continue  # a config row (a client constructor): never prompt text
        if not pattern.suffix or chain == pattern.text[1:] or chain.endswith(pattern.text):
            return True
    return False


def _memory_named(frameworks: Frameworks, call: ast.Call) -> bool:
    """A call of a rewriting `[[memory]]` row's last name (`ChatMemoryBuffer(...)`,
    `X.from_defaults(...)`), or one that passes a row's rewriting keyword (`history_processors=`)."""
    func = call.func
    names = {_name(func)} | ({_name(func.value)} if isinstance(func, ast.Attribute) else set())
    names |= {k.arg for k in call.keywords if k.arg}
    return any(n in frameworks.memory_words for n in names if n)


def _imports_any(tree: ast.Module, patterns: set[str]) -> bool:
    """Whether the module imports a package of these (frameworks.imported_packages, on `ast`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            packages = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            packages = [node.module.split(".")[0]]
        else:
            continue
        if any(fnmatch.filter(packages, p) for p in patterns):
            return True
    return False


class _Found(Exception):
    pass


def has_shapes(tree: ast.Module, frameworks: Frameworks, declared: tuple[str, ...] = ()) -> bool:
    """Whether the module has anything the sink, candidate or embedded-template finders take up
    (calls of project wrappers aside)."""
    if frameworks._called and _imports_any(tree, frameworks._called):
        return True  # its objects are called by any name (`llm = Llama(...)`, `llm(text)`)
    finder = _Shapes(frameworks, frozenset(d.rsplit(".", 1)[-1] for d in declared))
    try:
        finder.visit(tree)
    except _Found:
        return True
    except RecursionError:
        return True
    return False
