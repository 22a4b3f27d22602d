"""Chat templates written as Python strings (`jinja2.Template(s)`, `env.from_string(s)`): the
Jinja frontend analyses them, with every finding placed at the string's line."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.core.findings import Diagnostic
from prefixlint.python.evaluate import Env, Evaluator
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import is_static, static_text

if TYPE_CHECKING:
    from prefixlint.models.tokens import LoadedTokenizer
    from prefixlint.plan import TemplatePart

_CONSTRUCTORS = {
    "jinja2.Template",
    "jinja2.environment.Template",
    "jinja2.Environment.from_string",
    "jinja2.sandbox.ImmutableSandboxedEnvironment.from_string",
    "jinja2.sandbox.SandboxedEnvironment.from_string",
}


class _TemplateFinder:
    """visit_Call replayed over the index's recorded nodes (ModuleIndex.replay)."""

    def __init__(self, index: ModuleIndex, evaluator: Evaluator) -> None:
        self.index, self.ev = index, evaluator
        self.found: list[tuple[str, int]] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        by_name = self.index.qualified_names(func) & _CONSTRUCTORS
        # `env.from_string(...)` on an environment built elsewhere: the method name is enough.
        by_method = isinstance(func, cst.Attribute) and func.attr.value == "from_string"
        args = [a for a in node.args if a.keyword is None or a.keyword.value == "source"]
        if not (by_name or by_method) or not args:
            return
        value = self.ev.value(args[0].value, Env())
        if is_static(value) and ("{{" in static_text(value) or "{%" in static_text(value)):
            from prefixlint.jinja.classify import chat_reason

            # Only a chat template (it reads message roles) is analysed as one; an app's prompt
            # string is followed where it is rendered, and an HTML report is no prompt at all.
            if chat_reason(self.index.path, static_text(value)) is not None:
                self.found.append((static_text(value), self.index.pos(args[0].value)[0]))


def embedded_template_diagnostics(
    path: str,
    index: ModuleIndex,
    evaluator: Evaluator,
    tokenizer: Callable[[], LoadedTokenizer],
    part: TemplatePart,
) -> list[Diagnostic]:
    finder = _TemplateFinder(index, evaluator)
    index.replay(finder)
    if not finder.found:
        return []
    from prefixlint.jinja.analyze import analyze_template
    from prefixlint.jinja.template import ChatTemplate

    out: list[Diagnostic] = []
    loaded = tokenizer()
    for source, line in finder.found:
        template = ChatTemplate(
            source, path, special_tokens=dict(loaded.special_tokens), limits=part.limits, fixed_line=line
        )
        out.extend(analyze_template(template, loaded, part).diagnostics)
    return out
