"""Whether a query that a source row's call runs returns its rows in storage order.

The statement is the call's first argument, else what the method is called on
(`session.query(Flow).all()`). It is followed through the names it is assigned to in its function
(every assignment: `q = select(Flow)` in one arm, `q = q.where(...)` in another) and down its
method chain (`select(Flow).where(...)`). It is unordered when one of the row's `statements` builds
it (or, for an `sql` row, it is SQL text that selects) and nothing orders it: no method of the
row's `ordered` in the chain, no `ORDER BY` in the text. A statement we cannot see is no source.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from prefixlint.python.frameworks.names import as_pattern, written_chain
from prefixlint.python.frameworks.rows import SourceModel

if TYPE_CHECKING:
    import libcst as cst

    from prefixlint.python.scopes import ModuleIndex

_SELECT = re.compile(r"\s*(?:with\b.*?\)\s*)?select\b", re.IGNORECASE | re.DOTALL)
_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)
_MAX_HOPS = 8  # names and chain links followed from the call to the statement


def unordered_query(index: ModuleIndex, call: cst.Call, row: SourceModel) -> bool:
    """Whether `call` runs a statement of the row that nothing orders."""
    import libcst as cst

    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    start = positional[0] if positional else call.func.value if isinstance(call.func, cst.Attribute) else None
    return start is not None and _statement(index, start, row, 0, set()) is True


def _statement(
    index: ModuleIndex, node: cst.BaseExpression, row: SourceModel, hops: int, seen: set[int]
) -> bool | None:
    """True: a statement of the row, unordered; False: one that is ordered; None: not known."""
    import libcst as cst

    if hops > _MAX_HOPS:
        return None
    if isinstance(node, cst.Await):
        node = node.expression
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in row.ordered:
            return False
        if row.statements:
            chain, qualified = written_chain(func), index.qualified_names(func)
            if any(as_pattern(p).matches(chain, qualified) for p in row.statements):
                return True
        if row.sql and node.args and node.args[0].keyword is None:  # `text("SELECT ...")`
            found = _sql(node.args[0].value)
            if found is not None:
                return found
        return _statement(index, func.value, row, hops + 1, seen) if isinstance(func, cst.Attribute) else None
    if row.sql and (found := _sql(node)) is not None:
        return found
    if isinstance(node, cst.Name):
        scope = index.scope_for(node)
        verdicts = []
        for binding in scope.bindings.get(node.value, ()):
            if binding.kind == "assign" and binding.expr is not None and id(binding.expr) not in seen:
                seen.add(id(binding.expr))
                verdicts.append(_statement(index, binding.expr, row, hops + 1, seen))
        if False in verdicts:
            return False  # ordered on some path: say nothing
        return True if True in verdicts else None
    return None


def _sql(node: cst.BaseExpression) -> bool | None:
    """SQL text written out: True when it selects with no ORDER BY, False when it orders, None when
    it is not SQL that selects (or not text)."""
    import libcst as cst

    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        text = node.evaluated_value
    elif isinstance(node, cst.FormattedString):
        text = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
    else:
        return None
    if not isinstance(text, str) or not _SELECT.match(text):
        return None
    return not _ORDER_BY.search(text)
