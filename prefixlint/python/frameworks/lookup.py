"""The lookup (`Frameworks`): the table's rows indexed by the last name of each pattern, so that
finding the row a call, decorator, class or memory is an instance of costs a dict lookup; and the
text a module must contain for any row to match in it (`needles`, `memory_needles`), which lets a
module that names no modelled API skip the frontend.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from prefixlint.python.annotations import annotation_names, parameter_annotation
from prefixlint.python.frameworks.names import (
    CALL,
    Pattern,
    as_pattern,
    imported_packages,
    last_name,
    positional_parameters,
    written_chain,
)
from prefixlint.python.frameworks.queries import unordered_query
from prefixlint.python.frameworks.rows import (
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
from prefixlint.python.volatile import says_prompt_attribute

if TYPE_CHECKING:  # libcst is imported where a node is looked at: reading the table needs none of it
    import libcst as cst

    from prefixlint.python.scopes import ModuleIndex


class Declared(NamedTuple):
    """A field declaration's class as the table knows it: its row, and whether what it holds is made
    per request."""

    row: FieldsModel
    per_request: bool

    @property
    def imports(self) -> tuple[str, ...]:
        return self.row.imports


class Frameworks:
    """The table, indexed by the last name of each pattern so that a call costs a dict lookup."""

    def __init__(
        self,
        sinks: list[SinkModel],
        configs: list[ConfigModel],
        not_prompt: frozenset[str] = frozenset(),
        entries: list[EntryModel] | None = None,
        memories: list[MemoryModel] | None = None,
        appended: list[AppendedModel] | None = None,
        sources: list[SourceModel] | None = None,
        fields: list[FieldsModel] | None = None,
        schemas: list[SchemaModel] | None = None,
        requests: list[RequestModel] | None = None,
        getters: list[GetterModel] | None = None,
        orders: list[OrderModel] | None = None,
        settings: list[SettingsModel] | None = None,
    ) -> None:
        self.sinks = sinks
        self.settings = settings or []
        self._settings = _by_last_name(self.settings, "calls")
        self._settings_classes = _by_last_name(self.settings, "decorators")
        # The packages a module that loads a settings object imports, and how its text says so: a
        # module that imports none is not parsed to follow a settings object into it.
        self.settings_packages = frozenset(t.split(".")[0] for row in self.settings for t in row.calls)
        packages = "|".join(sorted(re.escape(p) for p in self.settings_packages)) or "(?!x)x"
        self.settings_needle = re.compile(rf"^\s*(?:from|import)\s+(?:{packages})\b", re.M)
        self.sources = sources or []
        self.configs = configs
        self.not_prompt = not_prompt  # keywords and dict keys that only configure a call
        self.orders = orders or []
        # methods whose arguments only order their receiver, keywords that only order or pick
        self.order_methods = frozenset(m for row in self.orders for m in row.methods)
        self.order_keywords = frozenset(k for row in self.orders for k in row.keywords)
        self.unwritten_keywords = not_prompt | self.order_keywords  # a call's arguments never its text
        # calls whose result is the same in any order of their arguments' items
        self.order_free_calls = frozenset(c for row in self.orders for c in row.calls)
        self.entries = entries or []
        self.memories = memories or []
        self._memories: dict[str, list[tuple[Pattern, MemoryModel]]] = {}
        for memory in self.memories:
            for text in memory.calls:
                self._memories.setdefault(last_name(text), []).append((as_pattern(text), memory))
        # A module whose text names none of these builds no framework memory (history's prefilter).
        # Only rows that rewrite can give a finding: an append-only one costs no module a look;
        # a `keyword` row is told by its keyword (`history_processors`), not its class (`Agent`).
        rewriting = [m for m in self.memories if not m.keeps_prefix]
        self.memory_words = frozenset(m.keyword or last_name(t) for m in rewriting for t in m.calls)
        memory_names = sorted(re.escape(w) for w in self.memory_words)
        # What a read or a hand-over is spelt with: a call or attribute named otherwise is none.
        self.memory_reads = frozenset(r.rsplit(".", 1)[-1] for m in rewriting for r in m.reads)
        self.memory_passed = frozenset(k for m in rewriting for k in m.passed)
        self.memory_needles = re.compile(
            r"\b(?:" + "|".join(memory_names) + ")" if memory_names else r"(?!x)x"
        )
        self.appended = appended or []
        self._appended: dict[str, list[tuple[Pattern, AppendedModel]]] = {}
        for row in self.appended:
            for text in row.calls:
                self._appended.setdefault(last_name(text), []).append((as_pattern(text), row))
        self._calls: dict[str, list[tuple[Pattern, SinkModel | ConfigModel]]] = {}
        self._decorators: dict[str, list[tuple[Pattern, SinkModel]]] = {}
        self._bases: dict[str, list[tuple[Pattern, SinkModel]]] = {}
        # `*Config`: a class of any module named so, matched only when no named row is
        self._named_like: list[tuple[str, ConfigModel]] = []
        for row in [*configs, *sinks]:  # config rows first: `OpenAI(...)` is no sink
            for text in row.calls:
                if text.startswith("*") and isinstance(row, ConfigModel):
                    self._named_like.append((text, row))
                else:
                    self._calls.setdefault(last_name(text), []).append((as_pattern(text), row))
        for sink in sinks:
            for text in sink.decorators:
                self._decorators.setdefault(last_name(text), []).append((as_pattern(text), sink))
            for text in sink.bases:
                self._bases.setdefault(last_name(text), []).append((as_pattern(text), sink))
        self._entries: dict[str, list[tuple[Pattern, EntryModel]]] = {}
        self._callbacks: dict[str, list[tuple[Pattern, EntryModel]]] = {}
        for entry in self.entries:
            for text in entry.decorators:
                self._entries.setdefault(last_name(text), []).append((as_pattern(text), entry))
            for text in entry.callbacks:
                self._callbacks.setdefault(last_name(text), []).append((as_pattern(text), entry))
        self._by_parameter = [e for e in self.entries if e.parameter]
        self.requests = requests or []
        self._request_calls: dict[str, list[tuple[Pattern, RequestModel]]] = {}
        self._request_reads: dict[str, list[tuple[Pattern, RequestModel]]] = {}
        for request in self.requests:
            for texts, table in ((request.calls, self._request_calls), (request.reads, self._request_reads)):
                for text in texts:
                    table.setdefault(last_name(text), []).append((as_pattern(text), request))
        self._sources: dict[str, list[tuple[Pattern, SourceModel]]] = {}
        for source in self.sources:
            for text in source.calls:
                self._sources.setdefault(last_name(text), []).append((as_pattern(text), source))
        self._placeholders = [s for s in self.sources if s.placeholders]
        # The `model_output` row: what the request rows' calls give back is made per request.
        self._reply = next((s for s in self.sources if s.replies), None)
        self.fields = fields or []
        # declaring class -> (pattern, row, per request); the class attributes that list fields
        self._fields: dict[str, list[tuple[Pattern, Declared]]] = {}
        for row in self.fields:
            for texts, per_request in ((row.request, True), (row.constant, False)):
                for text in texts:
                    entry = (as_pattern(text), Declared(row, per_request))
                    self._fields.setdefault(last_name(text), []).append(entry)
        self.field_lists = frozenset(row.attribute for row in self.fields)
        self.schemas = schemas or []
        self.getters = getters or []  # tried in order: a named shape before the generic one
        self._schemas: dict[str, list[tuple[Pattern, SchemaModel]]] = {}
        for schema in self.schemas:
            for text in schema.calls:
                self._schemas.setdefault(last_name(text), []).append((as_pattern(text), schema))
        # The packages whose objects are called (`llm(prompt)`): only modules importing one look further.
        self._called = {p.text.split(".")[0] for p, _ in self._calls.get(CALL, ())}
        names = sorted({re.escape(n) for s in sinks for n in _needles(s)} | set(memory_names))
        # A module whose text names none of these cannot use a modelled API (python.may_hold_prompts),
        # nor build a modelled memory; a prefix, as `langchain` is of `langchain_core`.
        self.needles = re.compile(r"\b(?:" + "|".join(names) + ")") if names else re.compile(r"(?!x)x")

    def extended(self, sinks: list[SinkModel], sources: list[SourceModel] | None = None) -> Frameworks:
        return Frameworks(
            [*self.sinks, *sinks],
            self.configs,
            self.not_prompt,
            self.entries,
            self.memories,
            self.appended,
            [*(sources or []), *self.sources],
            self.fields,
            self.schemas,
            self.requests,
            self.getters,
            self.orders,
            self.settings,
        )

    def match_field(self, index: ModuleIndex, call: cst.Call) -> Declared | None:
        """The `[[fields]]` row a declaration call is of (`MessageTextInput(name=...)`), and whether
        the field it declares is per request (else a constant of the app)."""
        return _match(self._fields, index, call.func) if self._fields else None

    def memory_class(self, index: ModuleIndex, node: cst.BaseExpression) -> MemoryModel | None:
        """The `[[memory]]` row an expression names as a class (`Memory`, a parameter's default)."""
        found = _match(self._memories, index, node)
        return found if isinstance(found, MemoryModel) and not found.keyword else None

    def match_memory(self, index: ModuleIndex, call: cst.Call) -> MemoryModel | None:
        """The `[[memory]]` row a call builds (or, for a `function` row, is), if any; a `keyword`
        row only when the call passes that keyword."""
        import libcst as cst

        found = _match(self._memories, index, call.func)
        if found is None and isinstance(call.func, cst.Attribute):  # `ChatMemoryBuffer.from_defaults(...)`
            found = _match(self._memories, index, call.func.value)
        if isinstance(found, MemoryModel) and found.keyword:
            keywords = {a.keyword.value for a in call.args if a.keyword is not None}
            return found if found.keyword in keywords else None
        return found if isinstance(found, MemoryModel) else None

    def match_appended(
        self, index: ModuleIndex, call: cst.Call, later: frozenset[str] = frozenset()
    ) -> list[AppendedModel]:
        """The `[[appended]]` rows a call is an instance of and given the keyword of (in the call,
        or among `later`: attributes set on the object it builds)."""
        chain = written_chain(call.func)
        rows = self._appended.get(chain.rsplit(".", 1)[-1]) if chain else None
        if not rows:
            return []
        imported = imported_packages(index)
        qualified = index.qualified_names(call.func)
        given = {a.keyword.value for a in call.args if a.keyword is not None} | later
        return [
            row
            for pattern, row in rows
            if not (row.imports and not any(fnmatch.filter(imported, p) for p in row.imports))
            and (not row.keywords or given & set(row.keywords))
            and pattern.matches(chain, qualified)
        ]

    def match_source(self, index: ModuleIndex, call: cst.Call) -> SourceModel | None:
        """The source row a call is an instance of (its result is per-request content), if any."""
        key = (self, call, "source")
        memo = index.matched
        if key not in memo:
            chain = written_chain(call.func)
            rows = self._sources.get(chain.rsplit(".", 1)[-1]) if chain else None
            found = None
            if rows:
                imported = imported_packages(index)
                qualified = index.qualified_names(call.func)
                for pattern, row in rows:
                    if row.imports and not any(fnmatch.filter(imported, p) for p in row.imports):
                        continue
                    if not (pattern.matches(chain, qualified) and row.takes(call)):
                        continue
                    if (row.statements or row.sql) and not unordered_query(index, call, row):
                        continue  # a query whose rows are ordered, or one we cannot see
                    found = row
                    break
            memo[key] = found
        return memo[key]

    def match_reply(self, index: ModuleIndex, call: cst.Call) -> tuple[SourceModel, SinkModel] | None:
        """The `model_output` row and the request row of a call that sends a request and gives back
        the model's reply (`client.chat.completions.create(...)`, `llm.ainvoke(messages)`, a
        project's own `python.sinks` wrapper), if it is one; not a call that builds an object
        (the row's `objects`: `model.start_chat()`)."""
        if self._reply is None or self._sends_nothing(index, call):
            return None
        found = self.match_call(index, call)
        if not isinstance(found, SinkModel) or not found.replies:
            return None
        if found.objects:
            chain, qualified = written_chain(call.func), index.qualified_names(call.func)
            if any(as_pattern(text).matches(chain, qualified) for text in found.objects):
                return None
        return self._reply, found

    def _sends_nothing(self, index: ModuleIndex, call: cst.Call) -> bool:
        """Whether a method is called on what sends no request: plain data (`CACHE = {}` then
        `CACHE.invoke(q)`), or a piece of a request a row builds (a prompt template, a message:
        `TEMPLATE.invoke({...})` formats it). A request row's generic method name (`.invoke`,
        `.run`, `.chat`) on either gives no reply."""
        import libcst as cst

        if not isinstance(call.func, cst.Attribute):
            return False
        receiver = call.func.value
        if isinstance(receiver, (cst.Name, cst.Attribute)):
            receiver = index.assigned(receiver)
        if isinstance(receiver, cst.Call):
            built = self.match_call(index, receiver)
            return isinstance(built, SinkModel) and not built.whole_request
        plain = (cst.Dict, cst.List, cst.Set, cst.Tuple, cst.DictComp, cst.ListComp, cst.SetComp)
        return isinstance(receiver, (*plain, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))

    def match_schema(self, index: ModuleIndex, func: cst.BaseExpression) -> SchemaModel | None:
        """The schema row a called or subscripted expression is (`Enum`, `Literal`), if any."""
        if not self._schemas:
            return None
        found = _match(self._schemas, index, func)
        return found if isinstance(found, SchemaModel) else None

    def placeholder_source(self, index: ModuleIndex, name: str) -> SourceModel | None:
        """The source row whose framework fills a template's `{name}` itself, in this module."""
        for row in self._placeholders:
            if name in row.placeholders and (
                not row.imports or any(fnmatch.filter(imported_packages(index), p) for p in row.imports)
            ):
                return row
        return None

    def match_call(self, index: ModuleIndex, call: cst.Call) -> SinkModel | ConfigModel | None:
        """The row a call is an instance of, if any. A configuration object known only by its name
        (`LangDBParams(run_id=...)`) is one unless it is given prompt text (`system_prompt=`).
        Matched once per call node (every pass over the module asks again)."""
        key = (self, call)
        memo = index.matched
        if key not in memo:
            memo[key] = self._match_call(index, call)
        return memo[key]

    def match_callable(self, index: ModuleIndex, func: cst.BaseExpression) -> SinkModel | ConfigModel | None:
        """The row an expression is, as the called thing of a call (`client.chat.completions.create`
        written as a value, passed to a retrier or a thread), if any. Matched once per node (the
        value finders ask it of the same names for every call and checked file)."""
        key = (self, func, "callable")
        memo = index.matched
        if key not in memo:
            memo[key] = self._match_callable(index, func)
        return memo[key]  # type: ignore[return-value]

    def _match_callable(self, index: ModuleIndex, func: cst.BaseExpression) -> SinkModel | ConfigModel | None:
        import libcst as cst

        found = _match(self._calls, index, func)
        if (
            found is None
            and self._called
            and isinstance(func, (cst.Name, cst.Attribute))
            and any(fnmatch.filter(imported_packages(index), p) for p in self._called)
        ):
            found = _match_instance(self._calls[CALL], index, func)
        return found

    def _match_call(self, index: ModuleIndex, call: cst.Call) -> SinkModel | ConfigModel | None:
        found = self.match_callable(index, call.func)
        if found is not None or not self._named_like:
            return found
        last = written_chain(call.func).rsplit(".", 1)[-1]
        for pattern, row in self._named_like:
            if fnmatch.fnmatchcase(last, pattern):
                keywords = [a.keyword.value for a in call.args if a.keyword is not None]
                return None if any(says_prompt_attribute(k) for k in keywords) else row
        return None

    def entry_point(
        self, index: ModuleIndex, fn: cst.FunctionDef, name: str | None = None
    ) -> EntryModel | None:
        """The row that makes `fn` a request entry point, if one of its decorators is one, or its
        first parameter is named as a `parameter` row's in a module importing its package. With
        `name`, only if that parameter is one the row's `inputs` say receives the request."""
        row = self._entry_point(index, fn)
        if row is None or name is None or not row.inputs:
            return row
        names = positional_parameters(fn)
        return row if name in names and names.index(name) in row.inputs else None

    def _entry_point(self, index: ModuleIndex, fn: cst.FunctionDef) -> EntryModel | None:
        import libcst as cst  # loaded by then; the table alone (prefilter.py) needs no libcst

        for decorator in fn.decorators:
            node = decorator.decorator
            found = _match(self._entries, index, node.func if isinstance(node, cst.Call) else node)
            if found is not None:
                return found
        given = self._given(index).get(fn.name.value) if self._callbacks else None
        if given is not None:
            return given
        if not self._by_parameter:
            return None
        names = [p.name.value for p in fn.params.params]
        first = names[1] if names[:1] in (["self"], ["cls"]) and len(names) > 1 else names[0] if names else ""
        imported = imported_packages(index)
        for row in self._by_parameter:
            if row.parameter == first and any(fnmatch.filter(imported, p) for p in row.imports):
                return row
        return None

    def _given(self, index: ModuleIndex) -> dict[str, EntryModel]:
        """The names of the module's functions given to a `callbacks` row's call
        (`gr.ChatInterface(fn=respond)`, `graph.add_node("plan", plan)`), read once per module."""
        import libcst as cst

        key = (self, "callbacks")
        found = index.matched.get(key)  # type: ignore[call-overload]
        if found is None:
            found = {}
            for entering, node in index.events:
                if not (entering and type(node) is cst.Call):
                    continue
                if last_name(written_chain(_callee(index, node.func))) not in self._callbacks:
                    continue
                row = _match(self._callbacks, index, node.func)
                for arg in node.args if row is not None else ():
                    if isinstance(arg.value, cst.Name):
                        found.setdefault(arg.value.value, row)
            index.matched[key] = found  # type: ignore[index]
        return found  # type: ignore[return-value]

    def match_settings(self, index: ModuleIndex, call: cst.Call) -> SettingsModel | None:
        """The `[[settings]]` row a call is of (`Dynaconf(settings_files=[...])`), if any."""
        return _match(self._settings, index, call.func) if self._settings else None

    def match_settings_class(self, index: ModuleIndex, cls: cst.ClassDef) -> SettingsModel | None:
        """The `[[settings]]` row a class decorator is of (`@CrewBase`), if any."""
        import libcst as cst

        for decorator in cls.decorators if self._settings_classes else ():
            node = decorator.decorator
            found = _match(self._settings_classes, index, node.func if isinstance(node, cst.Call) else node)
            if found is not None:
                return found
        return None

    def match_request(self, index: ModuleIndex, node: cst.BaseExpression) -> RequestModel | None:
        """The `[[request]]` row a call (`input()`, `parser.parse_args()`) or an attribute read
        (`sys.argv`) is of. A builtin is matched as `builtins.NAME` where nothing binds the name."""
        import libcst as cst

        if isinstance(node, cst.Attribute):
            return _match(self._request_reads, index, node) if self._request_reads else None
        if not isinstance(node, cst.Call) or not self._request_calls:
            return None
        func = node.func
        if not isinstance(func, cst.Name):
            return _match(self._request_calls, index, func)
        scope = index.scope_for(func)
        bound = func.value in scope.bindings or func.value in scope.params or func.value in index.imports
        if bound or func.value in index.module_scope.bindings:
            return _match(self._request_calls, index, func)
        return _first(self._request_calls.get(func.value, []), index, func.value, {f"builtins.{func.value}"})

    def match_decorator(self, index: ModuleIndex, decorator: cst.Decorator) -> SinkModel | None:
        import libcst as cst

        node = decorator.decorator
        found = _match(self._decorators, index, node.func if isinstance(node, cst.Call) else node)
        return found if isinstance(found, SinkModel) else None

    def match_class(self, index: ModuleIndex, cls: cst.ClassDef) -> SinkModel | None:
        """The class row a class definition is a subclass of (`class QA(dspy.Signature)`), if any."""
        for base in cls.bases:
            if base.keyword is None:
                found = _match(self._bases, index, base.value)
                if isinstance(found, SinkModel):
                    return found
        return None


def _by_last_name(rows: list[Any], attribute: str) -> dict[str, list[tuple[Pattern, Any]]]:
    """The rows indexed by the last name of each pattern in their `attribute` (`calls`, `decorators`)."""
    out: dict[str, list[tuple[Pattern, Any]]] = {}
    for row in rows:
        for text in getattr(row, attribute):
            out.setdefault(last_name(text), []).append((as_pattern(text), row))
    return out


def _callee(index: ModuleIndex, func: cst.BaseExpression) -> cst.BaseExpression:
    """What a call calls: a subscripted generic class (`Agent[UserContext](...)`, as the Agents SDK
    documents it) builds that class, when the name before the subscript is an import (not a
    local table of callables, `handlers["x"](...)`)."""
    import libcst as cst

    generic = isinstance(func, cst.Subscript) and isinstance(func.value, (cst.Name, cst.Attribute))
    return func.value if generic and index.qualified_names(func.value) else func  # type: ignore[attr-defined]


def _match(table: dict[str, list[tuple[Pattern, Any]]], index: ModuleIndex, func: cst.BaseExpression) -> Any:
    func = _callee(index, func)
    chain = written_chain(func)
    if not chain:
        return None
    rows = table.get(chain.rsplit(".", 1)[-1])
    if not rows:
        return None
    return _first(rows, index, chain, index.qualified_names(func))


def _first(rows: list[tuple[Pattern, Any]], index: ModuleIndex, chain: str, qualified: set[str]) -> Any:
    imported = imported_packages(index)
    for pattern, row in rows:
        if row.imports and not any(fnmatch.filter(imported, p) for p in row.imports):
            continue
        if pattern.matches(chain, qualified):
            return row
    return None


def _match_instance(
    rows: list[tuple[Pattern, Any]], index: ModuleIndex, func: cst.Name | cst.Attribute
) -> Any:
    """A call of an object (`llm(prompt)`, `self.llm(prompt)`) matched as `<what built it>.__call__`,
    or, for an object a parameter is declared to hold (`model: Model`, also kept as `self.model =
    model`), as `<the declared class>.__call__`."""
    import libcst as cst

    built = index.assigned(func)
    if isinstance(built, cst.Call):
        made = [built.func]
    else:
        made = _declared_classes(index, built if isinstance(built, cst.Name) else func)
    for node in made:
        chain = written_chain(node)
        if chain:
            qualified = {f"{q}.{CALL}" for q in index.qualified_names(node)}
            found = _first(rows, index, f"{chain}.{CALL}", qualified)
            if found is not None:
                return found
    return None


def _declared_classes(index: ModuleIndex, node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The classes the annotation of the parameter read at `node` names (none for a name the
    function binds itself: then the parameter's declared class is not what it holds)."""
    import libcst as cst

    if not isinstance(node, cst.Name):
        return []
    scope = index.scope_for(node)
    fn = scope.node
    if not isinstance(fn, cst.FunctionDef) or node.value not in scope.params or node.value in scope.bindings:
        return []
    annotation = parameter_annotation(fn, node.value)
    return annotation_names(annotation) if annotation is not None else []


def _needles(row: SinkModel) -> set[str]:
    """What a module's text must contain for the row to match in it: a package it imports (`imports`,
    the first name of a qualified pattern), else the chain a suffix pattern is written as."""
    if row.imports:
        return {p.split("*")[0].rstrip(".") for p in row.imports if p.split("*")[0]}
    out = set()
    for text in (*row.calls, *row.decorators, *row.bases):
        first = text.split(".")[0] if not text.startswith(".") else ""
        out.add(first.split("*")[0] if first and first.split("*")[0] else text.lstrip("."))
    return out
