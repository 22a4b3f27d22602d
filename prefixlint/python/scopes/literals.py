"""Evaluated string literals by their source text: libcst's `evaluated_value` runs
`ast.literal_eval` (a compile) on every read, and the evaluator reads the same keys and literals
again and again.
"""

from __future__ import annotations

import libcst as cst

# Evaluated string literals by their source text: libcst's `evaluated_value` runs `ast.literal_eval`
# (a compile) on every read, and the evaluator reads the same keys and literals again and again.
_STRINGS: dict[str, str | bytes] = {}
MAX_REMEMBERED_STRINGS = 100_000


def string_value(node: cst.SimpleString) -> str | bytes:
    """`node.evaluated_value`, computed once per literal text in this process."""
    found = _STRINGS.get(node.value)
    if found is None:
        if len(_STRINGS) >= MAX_REMEMBERED_STRINGS:
            _STRINGS.clear()
        found = _STRINGS[node.value] = node.evaluated_value
    return found
