"""Fixes for an unordered collection whose order reaches the text: `sorted(...)` where a set is
iterated, `sort_keys=True` on the `json.dumps` of a dict built from one. Safe when the items are
known to compare (strings, numbers), else unsafe: `sorted()` raises on items that do not."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from prefixlint.python.fixes.source import Source
from prefixlint.python.fixes.text import Change
from prefixlint.python.frameworks import builtin, written_chain
from prefixlint.python.frameworks.names import as_pattern
from prefixlint.python.volatile import (
    COMPLETION_ORDER,
    PATH_LISTINGS,
    SET_METHODS,
    SET_OPERATORS,
    UNORDERED_ITEMS,
)

# (applicability, message, changes)
Candidate = tuple[str, str, list[Change]]

_STR_METHODS = {
    "lower",
    "upper",
    "strip",
    "lstrip",
    "rstrip",
    "title",
    "casefold",
    "format",
    "replace",
    "join",
}


def candidates(src: Source, anchor: cst.CSTNode) -> Iterator[Candidate]:
    """`sorted()` where the collection `anchor` is iterated, then `sort_keys=True` on the JSON
    of a dict built in its order."""
    sites = _iterations(src, anchor)
    kind = items(src, anchor)
    if sites and (sort := _applicability(kind)) is not None:
        shown = src.code(sites[0]).strip()
        where = ", ".join(str(src.edit(*src.span(s), "").start_line) for s in sites)
        # items that do not compare but are named (a directory entry, an entry point) sort by name
        close = ", key=lambda t: t.name)" if kind == "name" else ")"
        changes: list[Change] = []
        for site in sites:
            start, end = src.span(site)
            changes += [(start, start, "sorted("), (end, end, close)]
        yield (
            sort[0],
            f"sort `{shown}` where it is iterated (line {where}): `sorted({shown}{close}`{sort[1]}",
            changes,
        )
    for d, dumps in _dumps_of(src, _dicts(src, anchor, sites)):
        keys = _applicability(items(src, d))
        if keys is None:
            continue
        end = src.span(dumps.args[-1].value)[1]
        line = src.edit(*src.span(dumps), "").start_line
        message = f"add `sort_keys=True` to the `json.dumps(...)` of line {line}{keys[1]}"
        yield keys[0], message, [(end, end, ", sort_keys=True")]


def _applicability(kind: str) -> tuple[str, str] | None:
    """Safe for items that compare; unsafe, said why, when their type is unknown; None when
    they cannot be sorted (dicts, lists)."""
    if kind == "unorderable":
        return None
    if kind in ("str", "number", "name"):
        return "safe", ""
    return (
        "unsafe",
        " (unsafe: the items' type is not known here, and sorting raises on items that do not compare)",
    )


def _iterations(src: Source, anchor: cst.CSTNode) -> list[cst.CSTNode]:
    """Where the collection is iterated in an order-keeping way: the expression itself, or each
    read of the name it is assigned to, not already sorted."""
    if _iterated(src, anchor):
        return [anchor]
    return [ref for ref in src.reads_of(anchor, attributes=True) or () if _iterated(src, ref)]


def _iterated(src: Source, node: cst.CSTNode) -> bool:
    """Whether `node` is what a loop, a comprehension, a join, `list()`, `tuple()`, `enumerate()`
    or an unpacking goes through (the order of its items is then the order of what they build)."""
    parent = src.parent(node)
    if isinstance(parent, (cst.For, cst.CompFor)):
        return parent.iter is node
    if isinstance(parent, cst.StarredElement):
        return True
    if isinstance(parent, cst.Arg) and not parent.star and _schema_choices(src, parent):
        return True  # `Enum("Zone", names)`: the schema lists the choices in this order
    if isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star:
        call = src.parent(parent)
        if not isinstance(call, cst.Call) or call.args[0] is not parent:
            return False
        func = call.func
        if isinstance(func, cst.Attribute):
            return func.attr.value == "join"
        return isinstance(func, cst.Name) and func.value in ("list", "tuple", "enumerate")
    return False


def _schema_choices(src: Source, arg: cst.Arg) -> bool:
    """Whether `arg` holds the choices of a schema row's call (the models table's `[[schema]]`)."""
    call = src.parent(arg)
    if not isinstance(call, cst.Call):
        return False
    positional = [a for a in call.args if a.keyword is None and not a.star]
    keyword = arg.keyword.value if arg.keyword is not None else None
    position = next((i for i, a in enumerate(positional) if a is arg), -1)
    chain, qualified = written_chain(call.func), src.qualified(call.func)
    return any(
        row.chosen(keyword, position) and any(as_pattern(p).matches(chain, qualified) for p in row.calls)
        for row in builtin().schemas
    )


def _dicts(src: Source, anchor: cst.CSTNode, sites: list[cst.CSTNode]) -> list[cst.CSTNode]:
    """The dicts built in the collection's order: comprehensions that iterate one of the sites,
    and the collection itself when it is a dict."""
    out = [anchor] if isinstance(anchor, (cst.Dict, cst.DictComp)) else []
    for site in sites:
        comp = src.parent(site)
        if isinstance(comp, cst.CompFor) and isinstance(d := src.parent(comp), cst.DictComp):
            out.append(d)
    return out


def _dumps_of(src: Source, dicts: list[cst.CSTNode]) -> list[tuple[cst.CSTNode, cst.Call]]:
    """`json.dumps` calls of each dict (written there, or through the name it is assigned to)
    not already given `sort_keys`."""
    out: list[tuple[cst.CSTNode, cst.Call]] = []
    for d in dicts:
        uses: list[cst.CSTNode] = list(src.reads_of(d) or [d])
        for use in uses:
            arg = src.parent(use)
            call = src.parent(arg) if isinstance(arg, cst.Arg) else None
            if (
                isinstance(call, cst.Call)
                and call.args[0] is arg
                and _is_json_dumps(src, call.func)
                and not any(a.keyword is not None and a.keyword.value == "sort_keys" for a in call.args)
                and all(call is not c for _, c in out)
            ):
                out.append((d, call))
    return out


def _is_json_dumps(src: Source, func: cst.BaseExpression) -> bool:
    return "json.dumps" in src.qualified(func)


def items(src: Source, node: cst.CSTNode, depth: int = 0) -> str:
    """What iterating `node` gives: "str" or "number" (items that compare), "unorderable" (dicts,
    lists, sets) or "unknown"."""
    if depth > 6:
        return "unknown"
    deeper = depth + 1
    if isinstance(node, (cst.Set, cst.List, cst.Tuple)):
        if not all(isinstance(e, cst.Element) for e in node.elements):
            return "unknown"  # `{*more, "x"}`
        return _same([_value_kind(src, e.value, deeper) for e in node.elements])
    if isinstance(node, (cst.SetComp, cst.ListComp, cst.GeneratorExp)):
        return _value_kind(src, node.elt, deeper, node.for_in)
    if isinstance(node, cst.Dict):
        return _same(
            [_value_kind(src, e.key, deeper) for e in node.elements if isinstance(e, cst.DictElement)]
        )
    if isinstance(node, cst.DictComp):
        return _value_kind(src, node.key, deeper, node.for_in)
    if isinstance(node, cst.BinaryOperation) and type(node.operator).__name__ in SET_OPERATORS:
        # `BASE - {"shell"}` holds BASE's items; `|` and `^` those of both
        sides = (
            [node.left] if isinstance(node.operator, (cst.Subtract, cst.BitAnd)) else [node.left, node.right]
        )
        return _same([items(src, s, deeper) for s in sides])
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in SET_METHODS
    ):
        keep = node.func.attr.value in ("union", "symmetric_difference")
        return _same(
            [items(src, e, deeper) for e in [node.func.value, *(a.value for a in node.args if keep)]]
        )
    if isinstance(node, cst.Call):
        func = node.func
        if src.qualified(func) & COMPLETION_ORDER:
            return "unorderable"  # futures: sorting them orders nothing that reaches the text
        if known := {UNORDERED_ITEMS[q] for q in src.qualified(func) if q in UNORDERED_ITEMS}:
            return known.pop() if len(known) == 1 else "unknown"
        if isinstance(func, cst.Name) and func.value in ("set", "frozenset", "list", "tuple", "sorted"):
            return items(src, node.args[0].value, deeper) if node.args else "str"  # empty: nothing to compare
        if isinstance(func, cst.Attribute) and func.attr.value in PATH_LISTINGS:
            return "str"  # paths compare as their text does
        if isinstance(func, cst.Attribute) and func.attr.value in ("keys", "items") and not node.args:
            # (key, value) pairs sort by their keys, which differ: the values are never compared
            return items(src, func.value, deeper)
    if isinstance(node, cst.Name) and (value := src.assigned(node)) is not None:
        return items(src, value, deeper)
    if isinstance(node, cst.Name) and (param := _parameter(src, node)) is not None:
        return _element_kind(param)
    return "unknown"


def _parameter(src: Source, name: cst.Name) -> cst.Param | None:
    """The parameter `name` reads, when it reads one."""
    bound = src.bindings(name)
    if len(bound) != 1:
        return None
    param = bound[0] if isinstance(bound[0], cst.Param) else src.parent(bound[0])
    return param if isinstance(param, cst.Param) else None


def _element_kind(param: cst.Param) -> str:
    """What the items of a parameter annotated `set[str]` (`frozenset[int]`) are."""
    ann = param.annotation.annotation if param.annotation is not None else None
    if isinstance(ann, cst.BinaryOperation) and isinstance(ann.right, cst.Name) and ann.right.value == "None":
        ann = ann.left  # `set[str] | None`: iterated, it is the set
    if isinstance(ann, cst.Subscript) and len(ann.slice) == 1 and isinstance(ann.slice[0].slice, cst.Index):
        element = ann.slice[0].slice.value
        if isinstance(element, cst.Name):
            return {"str": "str", "int": "number", "float": "number"}.get(element.value, "unknown")
    return "unknown"


def _value_kind(src: Source, value: cst.CSTNode, depth: int, loops: cst.CompFor | None = None) -> str:
    """ "str" or "number", "unorderable" for a dict, list or set, else "unknown"; a
    comprehension's target stands for the items of what it iterates."""
    if isinstance(value, (cst.SimpleString, cst.FormattedString)):
        return "str" if "b" not in value.prefix.lower() else "unknown"
    if isinstance(value, cst.ConcatenatedString):
        return _value_kind(src, value.left, depth)
    if isinstance(value, (cst.Integer, cst.Float)):
        return "number"
    if isinstance(value, (cst.Dict, cst.DictComp, cst.List, cst.ListComp, cst.Set, cst.SetComp)):
        return "unorderable"
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Name) and func.value == "str":
            return "str"
        if isinstance(func, cst.Attribute) and func.attr.value in _STR_METHODS:
            return "str" if _value_kind(src, func.value, depth, loops) == "str" else "unknown"
    if isinstance(value, cst.Name):
        comp = loops
        while comp is not None:
            if isinstance(comp.target, cst.Name) and comp.target.value == value.value:
                return items(src, comp.iter, depth)
            comp = comp.inner_for_in
        if depth < 6 and (assigned := src.assigned(value)) is not None:
            return _value_kind(src, assigned, depth + 1)
    return "unknown"


def _same(kinds: list[str]) -> str:
    if "unorderable" in kinds:
        return "unorderable"
    return kinds[0] if kinds and len(set(kinds)) == 1 else "unknown"
