"""Text a library adds to a request beside what the code gives it: format instructions an output
parser writes, a JSON schema the provider renders (the models table's `[[appended]]` rows).

It is the same on every request of the app, so a value ahead of it costs it too; the code does not
show its length, so it is static text of unseen length (`segments.Open`) holding at least the
row's `tokens`. Where it lands decides what it adds: after the template's last text ("end": LlamaIndex
`PromptTemplate(output_parser=...)`), as the value a call returns ("value": LangChain's
`parser.get_format_instructions()`, which a placeholder or `partial_variables` takes), or ahead
of the messages ("system", "tools": OpenAI's `response_format=`, `with_structured_output(Schema)`):
there it follows no value of the messages, and adds nothing to what they cost.
"""

from __future__ import annotations

import libcst as cst

from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.evaluate.env import Env
from prefixlint.python.frameworks import AppendedModel, SinkModel
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import Hole, Open, Segment, Text, Value, concat, is_constant, text

# The keyword of a template call whose dict fills placeholders before the call's inputs do
# (LangChain `PromptTemplate(..., partial_variables={"format_instructions": ...})`).
PARTIALS = "partial_variables"
# Methods that fill some placeholders now and leave the rest to a later fill (LangChain `partial`,
# LlamaIndex `partial_format`): what they return is still a template.
PARTIAL_FILLS = ("partial", "partial_format")


class Appended(EvaluatorBase):
    """Text a library adds to a template or a request."""

    def _appended_text(self, call: cst.CSTNode, row: AppendedModel) -> Value:
        return (Open(self.index.pos(call)[0], row.tokens, row.name),)

    def _appended_rows(self, call: cst.Call, lands: tuple[str, ...]) -> list[AppendedModel]:
        return [r for r in self.project.frameworks.match_appended(self.index, call) if r.lands in lands]

    def followed(self, call: cst.Call, row: SinkModel, key: str, value: Value) -> Value:
        """An argument's `value` with what the framework writes after it in the request it renders
        (the sink row's `follows`): the literal text of its source, or static text of unseen length
        holding at least that many tokens."""
        after = row.follows.get(key)
        if after is None:
            return value
        if isinstance(after, str):
            return concat(value, text(after))
        return concat(value, (Open(self.index.pos(call)[0], after, f"what {row.name} writes after `{key}`"),))

    def appended_value(self, call: cst.Call) -> Value | None:
        """What a call returns when it is text a library writes (`parser.get_format_instructions()`)."""
        rows = self._appended_rows(call, ("value",))
        return self._appended_text(call, rows[0]) if rows else None

    def with_appended(self, call: cst.Call, value: Value) -> Value:
        """`value`, the text a template or request call is given, with what the library appends after
        it (`PromptTemplate(tmpl, output_parser=parser)`: the parser's format string; or the object set
        so afterwards: `self.template.output_parser = parser`)."""
        if _passed_in(value):
            return value  # a template object the caller passes: what it holds before the text is not seen
        rows = self._appended_rows(call, ("end",)) + self._set_later(call)
        return concat(value, *(self._appended_text(call, r) for r in rows)) if rows else value

    def _set_later(self, call: cst.Call) -> list[AppendedModel]:
        """The `end` rows with keywords whose keyword the module sets as an attribute of the object the
        call builds (`TEMPLATE = PromptTemplate(...)`, then `TEMPLATE.output_parser = p`, or
        `self._template = template or TEMPLATE` and `self._template.output_parser = p`)."""
        rows = [r for r in self.project.frameworks.appended if r.lands == "end" and r.keywords]
        if not rows:
            return []
        given = {a.keyword.value for a in call.args if a.keyword is not None}
        names = self._bound_to(call)
        out = []
        for row in rows:
            if given & set(row.keywords) or not names:
                continue  # given in the call: `match_appended` has it already
            later = frozenset(
                k for k in row.keywords if any(self._may_be(t.value, names) for t in self._attribute_sets(k))
            )
            if later and row in self.project.frameworks.match_appended(self.index, call, later):
                out.append(row)
        return out

    def _bound_to(self, call: cst.Call) -> set[str]:
        """The module-level names the object a call builds is assigned to."""
        return {
            name
            for name, bindings in self.index.module_scope.bindings.items()
            if any(b.expr is call for b in bindings)
        }

    def _partial_method(self, call: cst.Call) -> dict[str, cst.BaseExpression]:
        """The keywords of `.partial(...)` called on the template a call builds (chained, or on the
        name it is bound to): placeholders filled before the inputs are."""
        names = self._bound_to(call)
        return {
            arg.keyword.value: arg.value
            for method in PARTIAL_FILLS
            for c in self.calls_named(method)
            if isinstance(c.func, cst.Attribute)
            and (c.func.value is call or self._may_be(c.func.value, names))
            for arg in c.args
            if arg.keyword is not None
        }

    def _attribute_sets(self, attr: str) -> list[cst.Attribute]:
        """The targets `x.attr = ...` assigned in the module (collected once per module)."""
        found = _SETS.get(id(self.index))
        if found is None or found[0] is not self.index:  # an id is reused once its index is gone
            if len(_SETS) > 64:  # it keeps the indexes alive: a few modules at a time
                _SETS.clear()
            targets: dict[str, list[cst.Attribute]] = {}
            for entering, node in self.index.events:
                if entering and isinstance(node, cst.Assign):
                    for t in node.targets:
                        if isinstance(t.target, cst.Attribute):
                            targets.setdefault(t.target.attr.value, []).append(t.target)
            found = _SETS[id(self.index)] = (self.index, targets)
        return found[1].get(attr, [])

    def _may_be(self, node: cst.BaseExpression, names: set[str], depth: int = 0) -> bool:
        """Whether `node` may hold the object bound to one of `names`: the name, or an attribute of
        `self` assigned from an expression naming it (through `or` and `if`)."""
        if depth > 3:
            return False
        if isinstance(node, cst.Name):
            return node.value in names
        if isinstance(node, cst.BooleanOperation):
            return self._may_be(node.left, names, depth + 1) or self._may_be(node.right, names, depth + 1)
        if isinstance(node, cst.IfExp):
            return self._may_be(node.body, names, depth + 1) or self._may_be(node.orelse, names, depth + 1)
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
        ):
            cls = self.index.scope_for(node).cls
            bindings = (
                self.index.instance_attrs.get((cls.name.value, node.attr.value), [])
                if cls is not None
                else []
            )
            return any(b.expr is not None and self._may_be(b.expr, names, depth + 1) for b in bindings)
        return False

    def appended_ahead(self, call: cst.Call) -> list[tuple[str, Value]]:
        """(part, text) the provider renders ahead of the messages for a request call: its own keywords
        (`response_format=Schema`) and the calls that built the object it is called on
        (`llm.with_structured_output(Schema).invoke(...)`)."""
        out: list[tuple[str, Value]] = []
        node: cst.BaseExpression = call
        for _ in range(8):  # a receiver chain of a few calls
            if isinstance(node, cst.Call):
                out += [
                    (r.lands, self._appended_text(node, r))
                    for r in self._appended_rows(node, ("system", "tools"))
                ]
                node = node.func
            elif isinstance(node, cst.Attribute):
                node = node.value
            elif isinstance(node, cst.Name) and isinstance(built := self.index.assigned(node), cst.Call):
                node = built  # `llm = model.with_structured_output(Schema)`, then `llm.invoke(...)`
            else:
                break
        return out

    def partial_variables(self, call: cst.Call) -> dict[str, cst.BaseExpression]:
        """The placeholders a template call's `partial_variables={...}` fills, and with what."""
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == PARTIALS and isinstance(arg.value, cst.Dict):
                from prefixlint.python.scopes import string_value

                return {
                    key: el.value
                    for el in arg.value.elements
                    if isinstance(el, cst.DictElement)
                    and isinstance(el.key, cst.SimpleString)
                    and isinstance(key := string_value(el.key), str)
                }
        return {}

    def template_call(self, call: cst.Call, value: Value, env: Env) -> Value:
        """The text of a template call (`PromptTemplate(...)`, `.from_template(...)`): its placeholders
        that `partial_variables` or a `.partial(...)` of the object fills filled, then what the library
        appends after it."""
        inner = env.deeper(template=False)
        # a callable given as a partial variable is called at each format: what it returns
        named = {k: self.called_value(v, inner) for k, v in self.partial_variables(call).items()}
        # a `.partial(...)` made elsewhere may run per request (its values are judged there): only the
        # text it fills that is the same on every call (format instructions) belongs to the template
        for k, v in self._partial_method(call).items():
            filled = self.value(v, inner)
            if is_constant(filled):
                named.setdefault(k, filled)
        if named:
            value = fill_named(value, named)
        return self.with_appended(call, value)


def _passed_in(value: Value) -> bool:
    """Whether the template is only a parameter (`structured_predict(cls, prompt)` inside a helper
    that is given `prompt`): its own text, and where its values stand in it, are the caller's."""
    return bool(value) and all(isinstance(s, Hole) and s.param is not None for s in value)


_SETS: dict[int, tuple[ModuleIndex, dict[str, list[cst.Attribute]]]] = {}


def fill_named(value: Value, named: dict[str, Value]) -> Value:
    """`value` with the placeholders `named` gives filled, the others left for a later fill (what
    LangChain's `partial` does)."""
    braced = {"{" + k: v for k, v in named.items()}
    return concat(*(_partial(seg, braced) for seg in value))


def _partial(seg: Segment, named: dict[str, Value]) -> Value:
    """One segment with the partial variables in it filled: a placeholder still written as text
    (`{format_instructions}`) or already a hole named after it."""
    if isinstance(seg, Hole) and seg.by_name and seg.label.endswith("}") and seg.label[:-1] in named:
        return named[seg.label[:-1]]
    if not isinstance(seg, Text) or "{" not in seg.text:
        return (seg,)
    out: list[Value] = []
    rest = seg.text
    while True:
        starts = [(rest.find(k + "}"), k) for k in named if rest.find(k + "}") >= 0]
        if not starts:
            break
        at, key = min(starts)
        if rest[at - 1 : at] == "{":  # `{{name}}` is an escaped brace, no placeholder
            out.append(text(rest[: at + len(key) + 1]))
            rest = rest[at + len(key) + 1 :]
            continue
        out += [text(rest[:at]), named[key]]
        rest = rest[at + len(key) + 1 :]
    return concat(*out, text(rest))
