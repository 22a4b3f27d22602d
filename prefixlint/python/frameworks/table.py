"""The models table read from TOML (`prefixlint/data/frameworks.toml`, read once per process), and
the checks each row passes before it is used: a row that cannot be used is a `TableError` naming
the row and the key. A project's own prompt builders (`[tool.prefixlint.python] sinks`, and
`[[...python.sink]]` / `[[...python.source]]` rows) are rows of the same table (`for_project`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from functools import cache
from importlib import resources
from typing import Any

from prefixlint.python.frameworks.lookup import Frameworks
from prefixlint.python.frameworks.names import CALL, last_name
from prefixlint.python.frameworks.rows import (
    LANDS,
    PARTS,
    PROVENANCES,
    REWRITES,
    SOURCE_KINDS,
    SOURCE_TIMINGS,
    WHEN,
    AppendedModel,
    ConfigModel,
    EntryModel,
    FieldsModel,
    GetterModel,
    MemoryModel,
    OrderModel,
    RequestModel,
    SchemaModel,
    SettingsModel,
    SinkModel,
    SourceModel,
)


class TableError(ValueError):
    """A row of a models table that cannot be used (names the row)."""


def _strings(row: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = row.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TableError(f"{where}: `{key}` must be a list of names")
    return tuple(value)


_ARGUMENT = re.compile(r"(?:\*|\d+|[A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)?$")  # `0`, `system`, `config.tools`


def _parts(table: Any, key: str, where: str, what: str) -> dict[str, str]:
    """A row's `arguments` or `attributes`: names (`_ARGUMENT`) mapped to parts."""
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise TableError(f"{where}: `{key}` maps {what} to a part")
    for name, part in table.items():
        if not _ARGUMENT.match(name):
            raise TableError(
                f"{where}: `{key}` cannot name `{name}` (a name, a position, `*`, or `name.field`)"
            )
        if part not in PARTS:
            raise TableError(f"{where}: unknown part `{part}` (one of {', '.join(PARTS)})")
    return dict(table)


def _named(row: dict[str, Any], model: type, where: str) -> tuple[str, str]:
    """A row's name and `where` naming it; TableError for a key `model` has not or no name."""
    unknown = sorted(set(row) - {f.name for f in fields(model)})
    if unknown:
        raise TableError(f"{where}: unknown key `{unknown[0]}`")
    name = row.get("name")
    if not isinstance(name, str) or not name:
        raise TableError(f"{where}: every row needs a `name`")
    return name, f"{where} ({name})"


def sink_from_row(row: dict[str, Any], where: str) -> SinkModel:
    """A `[[sink]]` row as a SinkModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, SinkModel, where)
    arguments = _parts(row.get("arguments", {}), "arguments", where, "a keyword or position")
    attributes = _parts(row.get("attributes", {}), "attributes", where, "a class attribute")
    if (row.get("returns") or "system") not in PARTS:
        raise TableError(f"{where}: unknown part `{row['returns']}` (one of {', '.join(PARTS)})")
    when = row.get("when", "request")
    if when not in WHEN:
        raise TableError(f"{where}: `when` is one of {', '.join(WHEN)}")
    calls, decorators = _strings(row, "calls", where), _strings(row, "decorators", where)
    bases = _strings(row, "bases", where)
    if not calls and not decorators and not bases:
        raise TableError(f"{where}: a row needs `calls`, `decorators` or `bases`")
    if decorators and not row.get("returns"):
        raise TableError(f"{where}: a decorator row says which part its function `returns`")
    if bases and not attributes:
        raise TableError(f"{where}: a class row (`bases`) says which `attributes` are its text")
    for text in (*calls, *decorators, *bases):
        if any(c in last_name(text) for c in "*?["):
            raise TableError(f"{where}: `{text}`: its last name is written out (globs go before it)")
    for text in calls:
        if last_name(text) == CALL and text.startswith("."):
            raise TableError(f"{where}: `{text}`: a `.__call__` pattern names what builds the object")
    follows = row.get("follows", {})
    if not isinstance(follows, dict):
        raise TableError(f"{where}: `follows` maps an argument to the text written after it")
    for key, after in follows.items():
        if key not in arguments:
            raise TableError(f"{where}: `follows` names `{key}`, which is not one of its `arguments`")
        if (
            isinstance(after, bool)
            or not isinstance(after, (int, str))
            or (isinstance(after, int) and after < 1)
        ):
            raise TableError(
                f"{where}: `follows.{key}` is the literal text or a count of tokens (at least 1)"
            )
    return SinkModel(
        name=name,
        calls=calls,
        decorators=decorators,
        bases=bases,
        imports=_strings(row, "imports", where),
        arguments=arguments,
        attributes=attributes,
        returns=row.get("returns", ""),
        when=when,
        templates=bool(row.get("templates", False)),
        fills=bool(row.get("fills", False)),
        whole_request=bool(row.get("whole_request", True)),
        breakpoints=str(row.get("breakpoints", "")),
        follows=dict(follows),
        objects=_strings(row, "objects", where),
        examples=dict(row.get("examples", {})),
    )


def config_from_row(row: dict[str, Any], where: str) -> ConfigModel:
    name, _ = _named(row, ConfigModel, where)
    calls = _strings(row, "calls", f"{where} ({name})")
    if not calls:
        raise TableError(f"{where} ({name}): a config row needs `calls`")
    imports = _strings(row, "imports", where)
    return ConfigModel(name, calls, imports, dict(row.get("examples", {})))


def entry_from_row(row: dict[str, Any], where: str) -> EntryModel:
    name, _ = _named(row, EntryModel, where)
    decorators = _strings(row, "decorators", f"{where} ({name})")
    callbacks = _strings(row, "callbacks", f"{where} ({name})")
    parameter = row.get("parameter", "")
    if not isinstance(parameter, str) or (parameter and not parameter.isidentifier()):
        raise TableError(f"{where} ({name}): `parameter` is a parameter's name")
    if not (decorators or callbacks or parameter):
        raise TableError(f"{where} ({name}): an entry row needs `decorators`, `callbacks` or `parameter`")
    imports = _strings(row, "imports", where)
    if (parameter or callbacks) and not imports:
        raise TableError(f"{where} ({name}): a `parameter` or `callbacks` row says its `imports`")
    inputs = row.get("inputs", [])
    if not isinstance(inputs, list) or not all(type(i) is int and i >= 0 for i in inputs):
        raise TableError(f"{where} ({name}): `inputs` is a list of parameter positions (0, 1, ...)")
    examples = dict(row.get("examples", {}))
    return EntryModel(name, decorators, imports, examples, parameter, callbacks, tuple(inputs))


def request_from_row(row: dict[str, Any], where: str) -> RequestModel:
    """A `[[request]]` row as a RequestModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, RequestModel, where)
    calls, reads = _strings(row, "calls", where), _strings(row, "reads", where)
    if not calls and not reads:
        raise TableError(f"{where}: a request row needs `calls` or `reads`")
    return RequestModel(name, calls, reads, _strings(row, "imports", where), dict(row.get("examples", {})))


def memory_from_row(row: dict[str, Any], where: str) -> MemoryModel:
    """A `[[memory]]` row as a MemoryModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, MemoryModel, where)
    calls = _strings(row, "calls", where)
    if not calls:
        raise TableError(f"{where}: a memory row needs `calls`")
    rewrites = row.get("rewrites")
    if rewrites not in REWRITES:
        raise TableError(f"{where}: `rewrites` is one of {', '.join(REWRITES)}")
    reads, passed = _strings(row, "reads", where), _strings(row, "passed", where)
    keyword, function = str(row.get("keyword", "")), bool(row.get("function", False))
    if not (reads or passed or keyword or function):
        raise TableError(
            f"{where}: a memory row says how it is reached (`reads`, `passed`, `keyword` or `function`)"
        )
    always = row.get("always", True)
    if not isinstance(always, bool):
        raise TableError(f"{where}: `always` is true or false")
    trigger = _strings(row, "trigger", where)
    if not always and not trigger:
        raise TableError(
            f"{where}: a row that rewrites only when told (`always = false`) names its `trigger`"
        )
    return MemoryModel(
        name=name,
        calls=calls,
        rewrites=rewrites,
        trigger=trigger,
        always=always,
        reads=reads,
        passed=passed,
        keyword=keyword,
        function=function,
        keeps_when=_strings(row, "keeps_when", where),
        imports=_strings(row, "imports", where),
        source=str(row.get("source", "")),
        examples=dict(row.get("examples", {})),
    )


def source_from_row(row: dict[str, Any], where: str) -> SourceModel:
    """A `[[source]]` row as a SourceModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, SourceModel, where)
    kind = row.get("kind")
    if kind not in SOURCE_KINDS:
        raise TableError(f"{where}: `kind` is one of {', '.join(SOURCE_KINDS)}")
    provenance = row.get("provenance", "request")
    if provenance not in PROVENANCES:
        raise TableError(f"{where}: `provenance` is one of {', '.join(PROVENANCES)}")
    calls, placeholders = _strings(row, "calls", where), _strings(row, "placeholders", where)
    replies = row.get("replies", False)
    if not isinstance(replies, bool):
        raise TableError(f"{where}: `replies` is true or false")
    if replies != (kind == "model_output"):
        raise TableError(f"{where}: a `model_output` row has `replies = true`, and no other kind does")
    if not calls and not placeholders and not replies:
        raise TableError(f"{where}: a source row needs `calls` or `placeholders`")
    for text in calls:
        if any(c in last_name(text) for c in "*?["):
            raise TableError(f"{where}: `{text}`: its last name is written out (globs go before it)")
    timing = row.get("timing", "")
    if timing not in SOURCE_TIMINGS:
        raise TableError(f"{where}: `timing` is `edit` or left out")
    statements, sql = _strings(row, "statements", where), bool(row.get("sql", False))
    if _strings(row, "ordered", where) and not (statements or sql):
        raise TableError(f"{where}: `ordered` applies to a query row (`statements` or `sql`)")
    return SourceModel(
        name=name,
        kind=kind,
        calls=calls,
        imports=_strings(row, "imports", where),
        receivers=tuple(g.lower() for g in _strings(row, "receivers", where)),
        keywords=_strings(row, "keywords", where),
        placeholders=placeholders,
        provenance=provenance,
        turns=bool(row.get("turns", False)),
        statements=statements,
        sql=sql,
        ordered=_strings(row, "ordered", where),
        timing=timing,
        replies=replies,
        examples=dict(row.get("examples", {})),
    )


def appended_from_row(row: dict[str, Any], where: str) -> AppendedModel:
    name, where = _named(row, AppendedModel, where)
    calls = _strings(row, "calls", where)
    if not calls:
        raise TableError(f"{where}: an appended row needs `calls`")
    lands = row.get("lands", "end")
    if lands not in LANDS:
        raise TableError(f"{where}: `lands` is one of {', '.join(LANDS)}")
    tokens = row.get("tokens", 0)
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise TableError(f"{where}: `tokens` is a count (the least the library writes)")
    return AppendedModel(
        name,
        calls,
        _strings(row, "keywords", where),
        lands,
        tokens,
        _strings(row, "imports", where),
        dict(row.get("examples", {})),
    )


def fields_from_row(row: dict[str, Any], where: str) -> FieldsModel:
    """A `[[fields]]` row as a FieldsModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, FieldsModel, where)
    attribute = row.get("attribute")
    if not isinstance(attribute, str) or not attribute.isidentifier():
        raise TableError(f"{where}: `attribute` names the class attribute that lists the fields")
    request, constant = _strings(row, "request", where), _strings(row, "constant", where)
    if not request:
        raise TableError(f"{where}: a fields row names its per-request classes (`request`)")
    for text in (*request, *constant):
        if any(c in last_name(text) for c in "*?["):
            raise TableError(f"{where}: `{text}`: its last name is written out (globs go before it)")
    if bool(row.get("types")) != bool(row.get("request_types")):
        raise TableError(f"{where}: `types` and `request_types` are given together")
    both = {last_name(t) for t in request} & {last_name(t) for t in constant}
    if both:
        raise TableError(f"{where}: `{sorted(both)[0]}` is per request or constant, not both")
    return FieldsModel(
        name=name,
        attribute=attribute,
        request=request,
        constant=constant,
        key=str(row.get("key", "name")),
        default=str(row.get("default", "value")),
        types=str(row.get("types", "")),
        request_types=_strings(row, "request_types", where),
        imports=_strings(row, "imports", where),
        source=str(row.get("source", "")),
        examples=dict(row.get("examples", {})),
    )


def schema_from_row(row: dict[str, Any], where: str) -> SchemaModel:
    """A `[[schema]]` row as a SchemaModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, SchemaModel, where)
    calls = _strings(row, "calls", where)
    if not calls:
        raise TableError(f"{where}: a schema row needs `calls`")
    for text in calls:
        if any(c in last_name(text) for c in "*?["):
            raise TableError(f"{where}: `{text}`: its last name is written out (globs go before it)")
    arguments = _strings(row, "arguments", where) or ("*",)
    if not all(_ARGUMENT.match(a) and "." not in a for a in arguments):
        raise TableError(f"{where}: `arguments` are keywords, positions or `*`")
    return SchemaModel(
        name,
        calls,
        arguments,
        _strings(row, "flags", where),
        _strings(row, "imports", where),
        dict(row.get("examples", {})),
    )


def getter_from_row(row: dict[str, Any], where: str) -> GetterModel:
    """A `[[getter]]` row as a GetterModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, GetterModel, where)
    key = row.get("key", 0)
    if not isinstance(key, int) or isinstance(key, bool) or key < 0:
        raise TableError(f"{where}: `key` is the position of the key literal")
    default = _strings(row, "default", where) or ("1", "default")
    if not all(d.isdigit() or d.isidentifier() for d in default):
        raise TableError(f"{where}: `default` names positions or keywords")
    if any(d.isdigit() and int(d) <= key for d in default):
        raise TableError(f"{where}: a positional `default` comes after the key")
    return GetterModel(name, key, default, _strings(row, "functions", where), dict(row.get("examples", {})))


def order_from_row(row: dict[str, Any], where: str) -> OrderModel:
    """An `[[ordering]]` row as an OrderModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, OrderModel, where)
    methods = _strings(row, "methods", where)
    keywords = _strings(row, "keywords", where)
    calls = _strings(row, "calls", where)
    if not methods and not keywords and not calls:
        raise TableError(f"{where}: an ordering row needs `methods`, `keywords` or `calls`")
    if not all(m.isidentifier() for m in (*methods, *keywords)):
        raise TableError(f"{where}: `methods` and `keywords` are bare names (`order_by`, `key`)")
    if not all(all(p.isidentifier() for p in c.split(".")) for c in calls):
        raise TableError(f"{where}: `calls` are builtins or dotted names (`max`, `os.path.commonpath`)")
    return OrderModel(name, methods, keywords, calls, dict(row.get("examples", {})))


def settings_from_row(row: dict[str, Any], where: str) -> SettingsModel:
    """A `[[settings]]` row as a SettingsModel; TableError naming the row and key when it is unusable."""
    name, where = _named(row, SettingsModel, where)
    calls, decorators = _strings(row, "calls", where), _strings(row, "decorators", where)
    files, data = _strings(row, "files", where), _strings(row, "data", where)
    attributes = row.get("attributes", {})
    if not isinstance(attributes, dict) or not all(
        isinstance(k, str) and k.isidentifier() and isinstance(v, str) for k, v in attributes.items()
    ):
        raise TableError(f"{where}: `attributes` maps a class attribute to the file it loads by default")
    if not (calls and (files or data)) and not (decorators and attributes):
        raise TableError(
            f"{where}: a settings row needs `calls`, and `files` or `data`; or `decorators` and `attributes`"
        )
    if not all(a.isdigit() or a.isidentifier() for a in (*files, *data)):
        raise TableError(f"{where}: `files` and `data` name positions or keywords")
    flags = {k: row.get(k, False) for k in ("case_insensitive", "dotted")}
    if "imports" in row:
        raise TableError(f"{where}: a settings row is matched by its qualified `calls`, not `imports`")
    if not all(isinstance(v, bool) for v in flags.values()):
        raise TableError(f"{where}: `case_insensitive` and `dotted` are true or false")
    examples = dict(row.get("examples", {}))
    return SettingsModel(name, calls, decorators, dict(attributes), files, data, **flags, examples=examples)


def parse_table(text: str, where: str) -> Frameworks:
    data = tomllib.loads(text)
    sinks = [sink_from_row(r, f"{where}: sink {i + 1}") for i, r in enumerate(data.get("sink", []))]
    configs = [config_from_row(r, f"{where}: config {i + 1}") for i, r in enumerate(data.get("config", []))]
    entries = [entry_from_row(r, f"{where}: entry {i + 1}") for i, r in enumerate(data.get("entry", []))]
    requests = [
        request_from_row(r, f"{where}: request {i + 1}") for i, r in enumerate(data.get("request", []))
    ]
    memories = [memory_from_row(r, f"{where}: memory {i + 1}") for i, r in enumerate(data.get("memory", []))]
    appended = [
        appended_from_row(r, f"{where}: appended {i + 1}") for i, r in enumerate(data.get("appended", []))
    ]
    sources = [source_from_row(r, f"{where}: source {i + 1}") for i, r in enumerate(data.get("source", []))]
    fields_rows = [
        fields_from_row(r, f"{where}: fields {i + 1}") for i, r in enumerate(data.get("fields", []))
    ]
    schemas = [schema_from_row(r, f"{where}: schema {i + 1}") for i, r in enumerate(data.get("schema", []))]
    getters = [getter_from_row(r, f"{where}: getter {i + 1}") for i, r in enumerate(data.get("getter", []))]
    orders = [order_from_row(r, f"{where}: ordering {i + 1}") for i, r in enumerate(data.get("ordering", []))]
    settings = [
        settings_from_row(r, f"{where}: settings {i + 1}") for i, r in enumerate(data.get("settings", []))
    ]
    keywords = _strings(data.get("not_prompt", {}), "keywords", f"{where}: not_prompt")
    return Frameworks(
        sinks,
        configs,
        frozenset(keywords),
        entries,
        memories,
        appended,
        sources,
        fields_rows,
        schemas,
        requests,
        getters,
        orders,
        settings,
    )


@cache
def builtin() -> Frameworks:
    """The table shipped with prefixlint (read once per process)."""
    text = resources.files("prefixlint.data").joinpath("frameworks.toml").read_text("utf-8")
    return parse_table(text, "frameworks.toml")


def declared_sink(name: str) -> SinkModel:
    """A project's own prompt builder from `python.sinks` (`myapp.chat.format_chat_message`, or a
    bare `format_chat_message`): every argument of a call of it is prompt text, in order."""
    pattern = name if "." in name else "." + name
    return SinkModel(
        name=f"`{name}` (python.sinks)", calls=(pattern,), arguments={"*": "prompt"}, whole_request=False
    )


@cache
def for_project(
    declared: tuple[str, ...], rows: tuple[str, ...] = (), source_rows: tuple[str, ...] = ()
) -> Frameworks:
    """The table with the project's own rows: `python.sinks` names, `[[python.sink]]` and
    `[[python.source]]` rows (JSON, checked when the config was read). The project's sources are
    tried before the built-in ones."""
    import json

    own = [declared_sink(n) for n in declared]
    own += [sink_from_row(json.loads(row), "config python.sink") for row in rows]
    sources = [source_from_row(json.loads(row), "config python.source") for row in source_rows]
    return builtin().extended(own, sources) if own or sources else builtin()
