"""Template switches a caller can set (`enable_thinking`, `preserve_thinking`, `reasoning_effort`):
which of a template's variables are the caller's, the values worth trying for each, and how
`--var` spells a value so that it reads it back as that value.

A setting prefixlint names ("`--var preserve_thinking=true` keeps the prefix stable") must hold the
way a user applies it (issue 23, point 2): the variable is one the template reads from its caller,
the value one the template tells apart, spelled as `--var` parses it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from jinja2 import nodes

from prefixlint.jinja.environment import REASONING_FIELDS
from prefixlint.jinja.template import ChatTemplate

_SWITCH = re.compile(r"think|reason", re.IGNORECASE)
# Message fields a template may `set` at top level: not switches.
_MESSAGE_FIELDS = frozenset({*REASONING_FIELDS, "content"})
MAX_STRING_VALUES = 3  # string values tried per switch, besides true and false


def caller_switches(template: ChatTemplate) -> list[str]:
    """Switch-like variables the template reads from its caller, by name; never one that is the
    template's own (own_variables)."""
    own = own_variables(template)
    return sorted(
        v
        for v in template.external_variables
        if _SWITCH.search(v) and v not in _MESSAGE_FIELDS and v not in own
    )


def own_variables(template: ChatTemplate) -> frozenset[str]:
    """Variables the template assigns before it ever reads them, from a value that is not their
    own (`{% set keep_reasoning = preserve_thinking %}`): no caller passes those. One the template
    reads first (`{% if x is not defined %}{% set x = true %}`) or sets from itself
    (`{% set x = x | default(true) %}`) is the caller's, with a default."""
    lexed = [
        (kind, value) for _, kind, value in template.env.lex(template.traced.source) if kind != "whitespace"
    ]
    first: dict[str, int] = {}
    for i, (kind, value) in enumerate(lexed):
        if kind == "name" and value not in first and not (i and lexed[i - 1] == ("operator", ".")):
            first[value] = i
    own = set()
    for name, i in first.items():
        j = i - 1
        while (
            j > 0 and (lexed[j][0] == "name" or lexed[j] == ("operator", ",")) and lexed[j] != ("name", "set")
        ):
            j -= 1  # back over the other targets of `set a, b = …`
        if lexed[j] != ("name", "set") or lexed[j - 1][0] != "block_begin":
            continue
        end = next((k for k in range(i, len(lexed)) if lexed[k][0] == "block_end"), len(lexed))
        right = lexed[i + 1 : end]
        if ("name", name) not in right:
            own.add(name)
    return frozenset(own)


def switch_values(template: ChatTemplate, name: str) -> list[Any]:
    """The values worth trying for a switch: the strings the template tells apart (`name ==
    'high'`, `name in ['low', 'high']`, `name | default('low')`) in the order they first appear,
    then true and false."""
    strings: list[str] = []
    for node in _parsed(template).find_all((nodes.Compare, nodes.Filter)):
        if isinstance(node, nodes.Filter):
            if node.name == "default" and _is_name(node.node, name):
                strings.extend(_strings(node.args[:1]))
            continue
        operands = [node.expr, *(op.expr for op in node.ops)]
        if any(_is_name(o, name) for o in operands):
            strings.extend(_strings(o for o in operands if not _is_name(o, name)))
    unique = list(dict.fromkeys(strings))[:MAX_STRING_VALUES]
    return [*unique, True, False]


def spelled(value: Any) -> str:
    """How `--var NAME=VALUE` must spell `value` to read it back as `value`: JSON (`true`, not
    Python's `True`, which `--var` reads as the string "True" and an `is true` test rejects), a
    plain string as itself unless JSON would read it as something else."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value)


def as_vars(setting: dict[str, Any]) -> str:
    """A setting as the command-line options that apply it: `--var a=true --var b=false`."""
    return " ".join(f"--var {name}={spelled(value)}" for name, value in setting.items())


def _parsed(template: ChatTemplate) -> nodes.Template:
    return template.env.parse(template.traced.source)


def _is_name(node: nodes.Node, name: str) -> bool:
    return isinstance(node, nodes.Name) and node.name == name


def _strings(operands: Any) -> list[str]:
    out = []
    for operand in operands:
        items = operand.items if isinstance(operand, nodes.List | nodes.Tuple) else [operand]
        out.extend(i.value for i in items if isinstance(i, nodes.Const) and isinstance(i.value, str))
    return out
