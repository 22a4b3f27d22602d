"""The tracer maps every output character to the template span that produced it, exactly."""

from __future__ import annotations

from prefixlint.jinja.environment import Limits
from prefixlint.jinja.template import ChatTemplate

MESSAGES = [
    {"role": "system", "content": "SYS"},
    {"role": "user", "content": "Hello there"},
]


def _render(source: str, **kwargs):
    template = ChatTemplate(source, "t.jinja", limits=Limits())
    return template.render(MESSAGES, **kwargs), template


def _where(source: str, rendered, needle: str) -> tuple[int, int, str]:
    o = rendered.origin_at(rendered.text.index(needle))
    return o.line, o.column, o.kind


def test_literal_characters_map_to_their_exact_column_despite_trim_and_lstrip() -> None:
    source = (
        "{%- for m in messages %}\n    {%- if m.role == 'user' %}\n  Q: {{ m.content }}!\n"
        "    {%- endif %}\n{%- endfor %}"
    )
    rendered, _ = _render(source)
    assert rendered.text == "  Q: Hello there!"
    assert _where(source, rendered, "Q:") == (3, 3, "literal")
    assert _where(source, rendered, "!") == (3, 21, "literal")
    assert _where(source, rendered, "Hello") == (3, 6, "expression")


def test_loop_iterations_map_to_the_same_source_and_generation_tag_is_traced() -> None:
    source = "{% for m in messages %}[{{ m.role }}]\n{% endfor %}{% generation %}<gen>{% endgeneration %}"
    rendered, _ = _render(source)
    assert rendered.text == "[system]\n[user]\n<gen>"
    assert _where(source, rendered, "[user") == (1, 24, "literal")
    assert _where(source, rendered, "user") == (1, 25, "expression")
    assert _where(source, rendered, "<gen>") == (2, 29, "literal")


def test_macro_output_is_attributed_to_the_call_site() -> None:
    source = "{% macro hdr(r) %}<<{{ r }}>>{% endmacro %}\nstart {{ hdr('x') }} end"
    rendered, _ = _render(source)
    assert rendered.text == "start <<x>> end"
    assert _where(source, rendered, "<<x") == (2, 7, "expression")
    assert _where(source, rendered, " end") == (2, 21, "literal")


def test_set_block_is_opaque_so_comparisons_inside_the_template_still_work() -> None:
    source = "{% set s %}abc{% endset %}{% if s == 'abc' %}equal{% else %}DIFFERENT{% endif %}"
    rendered, _ = _render(source)
    assert rendered.text == "equal"


def test_clock_calls_are_recorded_with_their_template_line() -> None:
    source = "Hi\n{%- set d = strftime_now('%Y-%m-%d') %}\nDate {{ d }}"
    template = ChatTemplate(source, "t.jinja")
    rendered = template.render(MESSAGES)
    assert rendered.text == "HiDate 2025-03-31"  # `{%-` ate the newline
    (call,) = template.clock.calls
    assert (call.line, call.fmt, call.value) == (2, "%Y-%m-%d", "2025-03-31")
