"""Settings objects read from the project's config files: `[[settings]]` rows of the models table.

`Dynaconf(settings_files=[...])` merges TOML, YAML and JSON files in order (a later file's value
wins); `OmegaConf.load(path)` reads one; `EasyDict(yaml.safe_load(f))` wraps data. The code then
reads `get_settings().pr_review_prompt.system`, `settings["agent"]["system"]` or
`settings.get("agent.system", "")`: each read is matched to the key path in that data, and gives the
text kept there (a prompt template that a `.format(...)` or a Jinja `render(...)` fills). The object
is followed through names, module attributes, `self.` attributes stored once and the project's
functions that return it (`def get_settings(): ... return global_settings`). A value filled into
such a text says which file and key it comes from: a deployment's own settings may replace it.
"""

from __future__ import annotations

import os
from typing import Any

import libcst as cst

from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.evaluate.env import Env, func_name
from prefixlint.python.frameworks import SettingsModel
from prefixlint.python.frameworks.names import imported_packages
from prefixlint.python.scopes import string_value
from prefixlint.python.segments import Text, Value, is_static, static_text

_MAX_DEPTH = 8


class SettingsData(dict):
    """A settings object's data: nested dicts of text values, read by key (in any case where the
    library reads keys so) and by dotted path."""

    def __init__(self, items: dict[str, Any], row: SettingsModel) -> None:
        super().__init__(items)
        self.row = row

    def key(self, name: str) -> Any:
        """The value under `name` (a `dotted` row's `a.b` is a nested path), or None."""
        if name in self:
            return self[name]
        if self.row.case_insensitive:
            folded = name.lower()
            for key, value in self.items():
                if key.lower() == folded:
                    return value
        if self.row.dotted and "." in name:
            head, rest = name.split(".", 1)
            inner = self.key(head)
            return inner.key(rest) if isinstance(inner, SettingsData) else None
        return None


def _wrapped(data: Any, row: SettingsModel) -> Any:
    """Data with every dict in it a SettingsData of `row` (a nested table reads as the top does)."""
    if isinstance(data, dict):
        return SettingsData({k: _wrapped(v, row) for k, v in data.items()}, row)
    if isinstance(data, list):
        return [_wrapped(v, row) for v in data]
    return data


def _merged(into: dict[str, Any], data: dict[str, Any]) -> None:
    """Merge `data` into `into`: tables key by key, any other value replaced (a later file wins)."""
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merged(into[key], value)
        else:
            into[key] = value


class SettingsReads(EvaluatorBase):
    """Settings objects loaded from config files, and the texts the code reads from them."""

    def settings_read(self, node: cst.BaseExpression, env: Env) -> Value | None:
        """The text a read of a settings object gives (`settings.a.b`, `settings["a"]`,
        `settings.get("a.b", default)`), or None when `node` reads no settings object we know of."""
        if not self.project.frameworks.settings:
            return None
        found = self._settings_item(node, env, 0)
        if isinstance(found, tuple):
            return found
        return None

    def settings_of(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> SettingsData | None:
        """The settings object `node` evaluates to, or None (followed once per node)."""
        memo = self.project.settings
        if node not in memo:
            memo[node] = None  # a cycle (`s = s.x`) finds nothing
            found = self._settings_of(node, env, depth) if depth <= _MAX_DEPTH else None
            memo[node] = found
        return memo[node]

    def _settings_of(self, node: cst.BaseExpression, env: Env, depth: int) -> SettingsData | None:
        if isinstance(node, cst.Call):
            row = self.project.frameworks.match_settings(self.index, node)
            if row is not None:
                return self._loaded(node, row, env)
        if isinstance(node, (cst.Attribute, cst.Subscript)) or (
            isinstance(node, cst.Call) and func_name(node.func) == "get"
        ):
            item = self._settings_item(node, env, depth)
            if item is not None:
                return item if isinstance(item, SettingsData) else None
        if isinstance(node, cst.Call):
            return self._returned_settings(node, env, depth)
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
        ):
            loaded = self._class_loaded(node)
            if loaded is not None:
                return loaded
            stored = self._stored_once(node)  # type: ignore[attr-defined]  # PromptFiles
            return self.settings_of(stored, env, depth + 1) if stored is not None else None
        if isinstance(node, (cst.Name, cst.Attribute)):
            expr = self.index.assigned(node)
            if expr is not None:
                return self.settings_of(expr, env, depth + 1)
            for qualified in sorted(self.index.qualified_names(node)):  # `from .config import settings`
                found = self.resolve(qualified) if self._may_load(qualified) else None
                if found is None:
                    continue
                bindings = found[0].index.module_scope.bindings.get(found[1])
                if bindings and bindings[-1].kind == "assign" and bindings[-1].expr is not None:
                    return found[0].settings_of(bindings[-1].expr, env, depth + 1)
        return None

    def _settings_item(self, node: cst.BaseExpression, env: Env, depth: int) -> Any:
        """What a read of a settings object gives: a text Value, a nested SettingsData, a list, or
        None (no settings object, or no such key)."""
        if isinstance(node, cst.Attribute):
            owner, key = self.settings_of(node.value, env, depth + 1), node.attr.value
        elif (
            isinstance(node, cst.Subscript)
            and len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Index)
        ):
            written = node.slice[0].slice.value
            found = string_value(written) if isinstance(written, cst.SimpleString) else None
            if not isinstance(found, str):
                return None
            owner, key = self.settings_of(node.value, env, depth + 1), found
        elif (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and func_name(node.func) == "get"
        ):
            return self._got(node, env, depth)
        else:
            return None
        if owner is None:
            return None
        return owner.key(key)

    def _got(self, call: cst.Call, env: Env, depth: int) -> Any:
        """`settings.get(key, default)`: the value under the key, else what the default gives."""
        assert isinstance(call.func, cst.Attribute)
        args = [a.value for a in call.args if a.keyword is None and not a.star]
        if not args:
            return None
        owner = self.settings_of(call.func.value, env, depth + 1)
        if owner is None:
            return None
        key = self.value(args[0], env.deeper())
        if not is_static(key):
            return None
        found = owner.key(static_text(key))
        if found is not None:
            return found
        if len(args) > 1:
            default = self.data(args[1], env)  # type: ignore[attr-defined]  # PromptFiles
            return _wrapped(default, owner.row) if isinstance(default, (dict, list)) else default
        return None

    def _returned_settings(self, call: cst.Call, env: Env, depth: int) -> SettingsData | None:
        """The settings object a project function returns (`get_settings()`): the first of its
        returns that gives one (the others hand back the same object kept elsewhere, a request's copy)."""
        func = call.func
        if isinstance(func, cst.Name) and func.value in self.index.functions:
            here = self.project.frameworks.settings_packages & imported_packages(self.index)
            callee = (self, self.index.functions[func.value]) if here else None
        else:
            qualified = self.index.qualified_names(func, self.index.module_scope)
            may = any(self._may_load(q) for q in qualified)
            callee = self._imported_function(qualified, 2) if may else None  # type: ignore[attr-defined]
        if callee is None:
            return None
        evaluator, fn = callee
        for returned in evaluator.index.bodies[fn].returns:
            if returned.value is not None:
                found = evaluator.settings_of(returned.value, env, depth + 1)
                if found is not None:
                    return found
        return None

    def _class_loaded(self, node: cst.Attribute) -> SettingsData | None:
        """`self.agents_config` of a class whose decorator loads it (`@CrewBase`): the file the class
        attribute names (a path beside the class's module), else the row's default file."""
        cls = self.index.scope_for(node).cls
        row = self.project.frameworks.match_settings_class(self.index, cls) if cls is not None else None
        if cls is None or row is None or node.attr.value not in row.attributes:
            return None
        written = row.attributes[node.attr.value]
        for stmt in cls.body.body:  # `agents_config = "config/agents.yaml"` in the class body
            for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                targets = small.targets if isinstance(small, cst.Assign) else ()
                if any(isinstance(t.target, cst.Name) and t.target.value == node.attr.value for t in targets):
                    found = string_value(small.value) if isinstance(small.value, cst.SimpleString) else None
                    written = found if isinstance(found, str) else written
        path = os.path.join(os.path.dirname(os.path.abspath(self.path)), written)
        loaded = self._config_file(path) if os.path.isfile(path) else None
        if not isinstance(loaded, dict):
            return None
        self._note_texts(loaded, os.path.relpath(path, self.project.root), row)
        return _wrapped(loaded, row)

    def _may_load(self, qualified: str) -> bool:
        """Whether the module an imported name comes from imports a settings package (its text is
        read, not parsed: following the name into a module that does not would parse it for nothing)."""
        rest = qualified.lstrip(".")
        dots = qualified[: len(qualified) - len(rest)]
        parts = rest.split(".")
        for cut in range(len(parts) - 1, -1, -1):
            if cut == 0 and not dots:
                break
            path = self.project.module_path(dots + ".".join(parts[:cut]), self.path)
            if path is not None:
                content = self.project.text(path)
                return content is not None and bool(self.project.frameworks.settings_needle.search(content))
        return False

    def _loaded(self, call: cst.Call, row: SettingsModel, env: Env) -> SettingsData | None:
        """The data a settings call loads: each file its `files` arguments name, merged in order,
        then what its `data` arguments give."""
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}

        def argument(where: str) -> cst.BaseExpression | None:
            if where.isdigit():
                return positional[int(where)] if int(where) < len(positional) else None
            return keywords.get(where)

        out: dict[str, Any] = {}
        for where in row.files:
            node = argument(where)
            for path in self._file_paths(node, env) if node is not None else []:
                loaded = self._config_file(path)
                if isinstance(loaded, dict):
                    self._note_texts(loaded, os.path.relpath(path, self.project.root), row)
                    _merged(out, loaded)
        for where in row.data:
            node = argument(where)
            given = self.data(node, env) if node is not None else None  # type: ignore[attr-defined]
            if isinstance(given, dict):
                _merged(out, given)
        if not out:
            return None
        return _wrapped(out, row)

    def _note_texts(self, data: Any, where: str, row: SettingsModel, path: str = "") -> None:
        """Remember where each template text of a config file is kept (ConfigReads.filled_from_config
        says so of a value filled into it)."""
        if isinstance(data, dict):
            for key, value in data.items():
                self._note_texts(value, where, row, f"{path}.{key}" if path else key)
        elif isinstance(data, tuple) and len(data) == 1 and isinstance(data[0], Text) and "{" in data[0].text:
            note = f"{where} (key `{path}`, loaded by {row.name}; the config files deployed may differ)"
            self.project.config_texts.setdefault(data[0].text, note)

    def _file_paths(self, node: cst.BaseExpression, env: Env) -> list[str]:
        """The config files an argument names: a path, a list of paths, or a comprehension over a
        list written out (`[join(HERE, f) for f in ["a.toml", "b.toml"]]`)."""
        if isinstance(node, (cst.List, cst.Tuple)):
            return [p for el in node.elements for p in self._file_paths(el.value, env)]
        if isinstance(node, cst.ListComp):
            comp = node.for_in
            if comp.inner_for_in or comp.ifs or not isinstance(comp.target, cst.Name):
                return []
            if not isinstance(comp.iter, (cst.List, cst.Tuple)):
                return []
            out = []
            for el in comp.iter.elements:
                item = self.value(el.value, env.deeper())
                inner = env.deeper(shadow={**env.shadow, comp.target.value: item})
                out += self._file_paths(node.elt, inner)
            return out
        path = self._path_of(node, env)  # type: ignore[attr-defined]  # PromptFiles
        return [path] if path is not None else []

    def _config_file(self, path: str) -> Any:
        content = self.project.text(path)
        return self.parsed(content, path) if content is not None else None  # type: ignore[attr-defined]
