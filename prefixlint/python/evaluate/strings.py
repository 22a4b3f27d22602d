"""String building: literals, f-strings, `%`, `.format` and the other fill methods, `string.Template`,
double-brace placeholders, and the methods called on a value (`join`, `strip`, case, `replace`,
a clock's `strftime`).

A placeholder the checked code fills takes the value passed for it; one nobody fills becomes a
hole named after it, judged by its name. A clock formatted to the day is a daily value.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from prefixlint.python.evaluate.appended import PARTIAL_FILLS, fill_named
from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.evaluate.env import Env, func_name
from prefixlint.python.scopes import string_value
from prefixlint.python.segments import (
    Hole,
    Provenance,
    Text,
    Value,
    choice,
    concat,
    first_volatile,
    is_static,
    join,
    map_text,
    per_option,
    static_text,
    strip_edges,
    text,
    without,
)
from prefixlint.python.volatile import PATH_LISTINGS, placeholder_provenance

_PERCENT = re.compile(r"%(?:\((\w+)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[sdrfiaeEgGxXoc%]")
_IDENT = re.compile(r"[A-Za-z_]\w*$")
_FIELD = re.compile(r"\{([A-Za-z_]\w*)")
_DOUBLE_BRACE = re.compile(r"\{\{\s*\$?([A-Za-z_][\w.]*)\s*\}\}")
_DOLLAR = re.compile(r"\$(?:\$|([A-Za-z_]\w*)|\{([A-Za-z_]\w*)\})")
# Methods that fill a template's placeholders (str, string.Template, LangChain, LlamaIndex, Jinja).
_FILL_METHODS = {"format", "format_map", "substitute", "safe_substitute", "format_messages",
                 "format_prompt", "invoke", "render", *PARTIAL_FILLS}  # fmt: skip
# Factories of template objects and the keyword of their text (LangChain, Jinja's `from_string`).
_TEMPLATE_FACTORIES = {"from_template": "template", "from_messages": "messages", "from_string": "source"}
_FILE_READS = {"read_text", "read_bytes", "open"}
_LOOKUPS = {"get", "pop", "setdefault", "index", "count", "startswith", "endswith", "__getitem__"}
_CASE_METHODS = {"upper": str.upper, "lower": str.lower, "title": str.title, "capitalize": str.capitalize}
# Clocks read to the day, and the strftime directives that read finer than a day.
_DAY_CLOCKS = {"datetime.date.today", "pendulum.today"}
_TIME_DIRECTIVES = re.compile(r"%[-#]?[HIMSfpXcTrRsz]")


class Strings(EvaluatorBase):
    """String building: literals, formatting, placeholders and the methods called on a value."""

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
                value = self.iterated(self.value(part.expression, env), part.expression)  # `{tools}`
                spec = part.format_spec
                literal = spec is not None and all(isinstance(p, cst.FormattedStringText) for p in spec)
                if literal and not _TIME_DIRECTIVES.search("".join(p.value for p in spec)):
                    value = _to_the_day(value)  # `{datetime.now():%Y-%m-%d}`
                parts.append(value)
        return concat(*parts)

    def _v_Integer(self, node: cst.Integer, env: Env) -> Value:
        return text(node.value)

    _v_Float = _v_Integer

    def method_call(
        self,
        node: cst.Call,
        name: str,
        args: list[cst.Arg],
        kwargs: dict[str, cst.BaseExpression],
        first: Value | None,
        env: Env,
        deeper: Env,
    ) -> Value:
        """A method called on a value (`sep.join(parts)`, `text.strip()`, `tmpl.format(...)`,
        `now.strftime(...)`), the call's arguments already read (`first`: the first positional's
        value; `deeper`: the environment its arguments are evaluated in)."""
        method = node.func.attr.value
        if (prov := self.receiver_provenance(node.func.value)) is not None:
            return self.hole(prov, node)
        if method in PATH_LISTINGS and self.path_like(node.func.value):
            return self.hole(Provenance.UNORDERED, node)  # labelled by its code, as its fix finds it
        receiver = self.value(node.func.value, deeper)
        if method in _FILL_METHODS:
            return self.format(self.template_of(node.func.value, receiver, env), node, env)
        if method == "join":
            items = self.items(args[0].value, deeper) if args else None
            if items is None:
                return self.propagate(
                    node, [self.iterated(first, args[0].value)] if first is not None else []
                )
            items = [self.iterated(item, args[0].value) for item in items]  # a set's order is the text's
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
                return self.template_call(node, value, env)
        if method in _FILE_READS:  # `Path(p).read_text()`: the file's text, not its path's
            return file_content(self._opaque(node, name, [receiver, *self.text_parts(node, name, deeper)]))
        if method in self.project.frameworks.order_methods:
            # `.order_by(Model.created_at.desc())`: the arguments order the rows, they are not written
            return self.propagate(node, [receiver])
        if method in _LOOKUPS:  # `d.get(key)`: the key picks, it is not written
            written = args[0].value if method == "get" and args else None
            key = string_value(written) if isinstance(written, cst.SimpleString) else None
            if isinstance(key, str) and (field := self.field_of_parameter(receiver, key, node)) is not None:
                return field
            return self.propagate(node, [receiver])
        clock = first_volatile(receiver)
        to_the_day = method == "date" or method == "strftime" and _day_format(node.args)
        if clock is not None and clock.provenance is Provenance.CLOCK and to_the_day:
            return _to_the_day((clock,))  # `datetime.now().strftime("%Y-%m-%d")`: the day only
        if (h := first_volatile(receiver)) is not None and h.by_name:
            return (h,)  # `timestamp.astimezone().strftime(...)`: the value itself, transformed
        parts = [receiver, *self.text_parts(node, name, deeper)]
        return self._opaque(node, name, parts)

    def format(self, template: Value, call: cst.Call, env: Env) -> Value:
        """`template.format(...)`, `.substitute(...)`, `.render(...)` and the like: the placeholders
        filled with the values passed (by keyword, `**mapping` or a dict)."""
        method = func_name(call.func)
        named = self.named_arguments(call, env)
        if method == "render":
            attributes = self.object_arguments(call)
            return per_option(template, lambda v: self.render_jinja(v, named, call, attributes))
        if method in ("substitute", "safe_substitute"):
            return per_option(template, lambda v: self.substitute(v, call, named))
        if method in PARTIAL_FILLS:  # the placeholders it does not fill are filled later
            # a template we cannot see at all (an object built by a library call): the values go
            # somewhere in it, as a format of it puts them
            return per_option(
                template,
                lambda v: (
                    fill_named(v, named)
                    if any(isinstance(s, Text) for s in v)
                    else self.fill_all(v, call, [], named)
                ),
            )
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
                out.append(self.filled_from_config(seg.text, f"{{{base}}}", value))
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


def _fstring_text(raw: str, prefix: str) -> str:
    raw = raw.replace("{{", "{").replace("}}", "}")
    if "r" in prefix.lower():
        return raw
    try:
        return raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
    except UnicodeDecodeError:
        return raw


def _day_format(args: Sequence[cst.Arg]) -> bool:
    """Whether a strftime call's format (its first argument, a literal) reads no finer than the day."""
    first = next((a.value for a in args if a.keyword is None), None)
    return isinstance(first, cst.SimpleString) and not _TIME_DIRECTIVES.search(str(string_value(first)))


def _to_the_day(value: Value) -> Value:
    """A clock value read to the day only (only when it is just that clock)."""
    if len(value) == 1 and isinstance(value[0], Hole) and value[0].provenance is Provenance.CLOCK:
        return (replace(value[0], daily=True),)
    return value


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


def file_content(value: Value) -> Value:
    """What a file opened at `value` holds: not its path's per-machine text (`~/.app/prompt.yaml`
    expanded for each machine holds the same prompt on all of them); a per-request path still
    gives per-request content."""
    return without(value, Provenance.ENVIRONMENT)
