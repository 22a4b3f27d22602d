"""Prompt text kept outside the code: files read by a path written in the code, and YAML/JSON data.

A read is followed when its path is known statically (a literal, `__file__`-relative, or with a
static tail such as `f"{pkg_dir}/prompts/{name}.txt"` with `name` known): the file's text becomes
static text. Data (a YAML or JSON file, a dict literal) is a structure of dicts, lists and values
that subscripts and `**mapping` read; a template named by a path (`Template(Path("agent.jinja"))`)
is that file's text. Jinja templates rendered from Python are in rendering.py.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from typing import Any

import libcst as cst

from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.evaluate.env import Env
from prefixlint.python.scopes import Binding, Branch, string_value
from prefixlint.python.segments import EMPTY, Text, Value, choice, is_static, static_text, text
from prefixlint.python.volatile import PATH_METHODS, PATH_TYPES

# How a dict spread into another (`**base`) is read: (its expression, env, the entries' nodes) ->
# its entries, or None when they cannot be seen.
Spread = Callable[
    [cst.BaseExpression, Env, "dict[str, tuple[Any, cst.BaseExpression, Env]] | None"],
    "dict[str, Value] | None",
]

# Calls that read a whole text file, by qualified name or by method name.
_READ_METHODS = {"read", "read_text", "readlines", "read_bytes"}
_OPENERS = {"open", "io.open", "codecs.open", "builtins.open"}
_PATH_TYPES = {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "Path"}
_LOADERS = {"yaml.safe_load", "yaml.load", "yaml.full_load", "json.load", "json.loads", "tomllib.load",
            "tomllib.loads", "toml.load", "toml.loads"}  # fmt: skip
_COPIES = {"copy.deepcopy", "copy.copy"}
# Functions of a project's own we cannot read but whose name says they read a file by its path.
_READER_NAME = re.compile(r"^(load|read|get|open)_?(text|file|prompt|template|yaml|json|txt)s?$", re.I)
TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2", ".txt", ".md", ".prompt")


class PromptFiles(EvaluatorBase):
    """Prompt text read from files and data by a path written in the code."""

    def _path_of(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> str | None:
        """The file a path expression names, if it can be found: `"prompts/x.txt"`, `Path(__file__).parent
        / "x.yaml"`, `os.path.join(HERE, "x.j2")`, `importlib.resources.files(pkg) / "x.md"`."""
        written = self._path_text(node, env, depth)
        if written is None:
            return None
        return self._find(written)

    def _find(self, written: str) -> str | None:
        here = os.path.dirname(os.path.abspath(self.path))
        if os.path.isabs(written):
            return written if os.path.isfile(written) else None
        return self.project.find_file(written, here)

    def _path_text(self, node: cst.BaseExpression, env: Env, depth: int) -> str | None:
        """A path as written, with anything unknown before its last static part dropped (the folder a
        package is installed in is not needed to find the file in the project)."""
        if depth > 8:
            return None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            left = self._path_text(node.left, env, depth + 1)
            right = self._path_text(node.right, env, depth + 1)
            if right is None:
                return None
            return right if left is None or os.path.isabs(right) else os.path.join(left, right)
        if isinstance(node, cst.Attribute) and node.attr.value == "parent":
            inner = self._path_text(node.value, env, depth + 1)
            return os.path.dirname(inner) if inner is not None else None
        if isinstance(node, cst.Call):
            qnames = self.index.qualified_names(node.func)
            name = node.func.attr.value if isinstance(node.func, cst.Attribute) else ""
            args = [a.value for a in node.args if a.keyword is None]
            if qnames & (_PATH_TYPES | {"os.path.join"}) or name == "joinpath":
                parts = [node.func.value] if name == "joinpath" else []
                texts = [self._path_text(a, env, depth + 1) for a in parts + args]
                known = [t for t in texts if t is not None]
                return os.path.join(*known) if known else None
            if qnames & {"os.path.dirname"} and args:
                inner = self._path_text(args[0], env, depth + 1)
                return os.path.dirname(inner) if inner is not None else None
            if qnames & {"os.path.abspath", "os.path.realpath", "os.path.normpath"} and args:
                return self._path_text(args[0], env, depth + 1)
            if name in ("resolve", "absolute", "expanduser"):
                return self._path_text(node.func.value, env, depth + 1)
            if name == "with_name" and args:  # `Path(__file__).with_name("prompt.txt")`
                folder = self._path_text(node.func.value, env, depth + 1)
                file = self._path_text(args[0], env, depth + 1)
                if file is None:
                    return None
                return os.path.join(os.path.dirname(folder), file) if folder is not None else file
            if qnames & {"importlib.resources.files", "importlib_resources.files"} and args:
                return self._package_folder(args[0], env)
            configured = self.config_default(node, env)  # `Path(cfg.get("prompt", HERE / "p.md"))`
            return static_text(configured) if configured is not None else None
        value = self.value(node, env.deeper())
        if is_static(value):
            return static_text(value) or None
        # The static tail after the last unknown part: `f"{package_path}/prompts/{name}.txt"`.
        last = max(i for i, seg in enumerate(value) if not isinstance(seg, Text))
        tail = static_text(value[last + 1 :]).lstrip("/\\")
        return tail if "/" in tail or "." in tail else None

    def _package_folder(self, node: cst.BaseExpression, env: Env) -> str | None:
        value = self.value(node, env.deeper())
        if not is_static(value):
            return None
        init = self.project.module_path(static_text(value), self.path)
        return os.path.dirname(init) if init is not None and init.endswith("__init__.py") else None

    def _file_value(self, path: str) -> Value | None:
        content = self.project.text(path)
        found = text(content) if content is not None else None
        self.note_config_file(path, found)
        return found

    def _template_source(self, source: cst.BaseExpression, env: Env) -> Value:
        """The text of `Template(...)`: a string, or a file named by a path (`Path("agent.jinja")`)."""
        value = self.value(source, env.deeper(template=env.template))
        if is_static(value) and static_text(value).endswith(TEMPLATE_SUFFIXES):
            path = self.project.find_file(static_text(value), os.path.dirname(os.path.abspath(self.path)))
            content = self.project.text(path) if path is not None else None
            if content is not None:
                return text(content)
        return value

    def path_like(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether `node` is a path object: made by `Path(...)`, joined with `/`, `.parent`, a
        path method, or a name assigned one (`TOOLS = Path(__file__).parent / "tools"`)."""
        if depth > 4:
            return False
        deeper = depth + 1
        if isinstance(node, cst.Call):
            if self.index.qualified_names(node.func) & PATH_TYPES:
                return True
            func = node.func
            return (
                isinstance(func, cst.Attribute)
                and func.attr.value in PATH_METHODS
                and self.path_like(func.value, deeper)
            )
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
            return self.path_like(node.left, deeper)
        if isinstance(node, cst.Attribute) and node.attr.value == "parent":
            return self.path_like(node.value, deeper)
        if isinstance(node, (cst.Name, cst.Attribute)) and (value := self.index.assigned(node)) is not None:
            return self.path_like(value, deeper)
        return False

    def read_call(self, node: cst.Call, env: Env) -> Value | None:
        """The text a call reads from a prompt file, or None if it is not such a read."""
        func = node.func
        qnames = self.index.qualified_names(func)
        args = [a.value for a in node.args if a.keyword is None]
        if isinstance(func, cst.Attribute) and func.attr.value in _READ_METHODS:
            path = self._opened(func.value, env)
            return self._file_value(path) if path is not None else None
        if isinstance(func, cst.Attribute) and func.attr.value == "get_template" and args:
            path = self._path_of(args[0], env)  # a loader's folder is not followed: found by its name
            return self._file_value(path) if path is not None else None
        if qnames & {"importlib.resources.read_text", "pkg_resources.resource_string"} and len(args) >= 2:
            folder = self._package_folder(args[0], env)
            name = self.value(args[1], env.deeper())
            if folder is not None and is_static(name):
                path = os.path.join(folder, static_text(name))
                return self._file_value(path) if os.path.isfile(path) else None
        if qnames & _LOADERS and args:
            loaded = self.data(node, env)
            return _as_text(loaded)
        if isinstance(func, (cst.Name, cst.Attribute)) and args and self.resolve_callable(func, node) is None:
            name = func.value if isinstance(func, cst.Name) else func.attr.value
            if _READER_NAME.match(name):
                path = self._path_of(args[0], env)
                if path is not None:
                    return self._file_value(path)
        return None

    def _opened(self, node: cst.BaseExpression, env: Env) -> str | None:
        """The file behind `open(P)`, `P.open()`, a `Path`, or a name bound to one (`with open(P) as f`
        binds `f` to `open(P)`)."""
        if isinstance(node, cst.Call):
            qnames = self._call_names(node.func)
            args = [a.value for a in node.args if a.keyword is None]
            if qnames & _OPENERS and args:
                return self._path_of(args[0], env)
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "open":
                return self._path_of(node.func.value, env)
        if isinstance(node, cst.Name):
            expr = self.last_assignment(node)
            if expr is not None:
                return self._opened(expr, env)
        return self._path_of(node, env)

    def entries_set_after(
        self,
        node: cst.Name,
        env: Env,
        before: dict[str, Any] | None = None,
        built: cst.BaseExpression | None = None,
        nodes: dict[str, tuple[Any, cst.BaseExpression, Env]] | None = None,
    ) -> dict[str, Any]:
        """The entries of a dict after those set on it once it was built (`variables["date"] = value`,
        `d.update(k=v)`, `d.update({...})`, `d.setdefault("k", v)`), up to `node`: `before`'s, updated.
        Only what is set after `built` (the expression that made the dict) and on a path that can
        reach `node` counts (not in another arm of the same `if`): an entry set on every path to
        `node` replaces the one before; one set on some paths only is either (an entry absent
        before is then possibly absent: empty text). `nodes` gets the expression of each entry set
        on every path (`d["config"] = {...}`: the fields a row names inside it)."""
        out: dict[str, Any] = dict(before or {})
        scope, here = self.index.scope_for(node), self.index.pos(node)
        since = self.index.pos(built) if built is not None else (0, 0)
        read_in = self.index.branch_of.get(node, ())
        for binding in scope.bindings.get(node.value, ()):
            if binding.kind != "setitem" or not since < binding.pos < here:
                continue
            if not self.may_run(binding.branch, env) or self._other_arm(binding.branch, read_in):
                continue
            always = binding.branch == read_in[: len(binding.branch)]
            for name, value, only_if_absent, expr in self._entries_set(binding, env):
                if only_if_absent and name in out and always:
                    continue  # `setdefault` of an entry the dict holds on every path
                if not always or only_if_absent:
                    old = out.get(name, EMPTY)
                    if isinstance(old, tuple) and isinstance(value, tuple):
                        value = choice([old, value])
                elif nodes is not None and expr is not None:
                    nodes[name] = (self, expr, env.deeper())
                out[name] = value
        return out

    def _other_arm(self, branch: Branch, read_in: Branch) -> bool:
        """Whether code in `branch` runs only where `read_in` does not: another arm of an `if` or a
        `match` both sit in."""
        for (key, arm), (other, read_arm) in zip(branch, read_in, strict=False):
            if key != other:
                return False
            if arm != read_arm:
                return isinstance(self.index.branch_nodes.get(key), (cst.If, cst.Match))
        return False

    def _entries_set(
        self, binding: Binding, env: Env
    ) -> list[tuple[str, Any, bool, cst.BaseExpression | None]]:
        """(entry, value, only if absent, its expression) for what one `setitem` binding sets."""
        expr = binding.expr
        if binding.key is not None:
            key = self.value(binding.key, env.deeper())
            name = static_text(key) if is_static(key) else "\x00" + self.label(binding.key)
            return [(name, self.value(expr, env.deeper()) if expr is not None else None, False, expr)]
        if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute):
            return []
        if expr.func.attr.value == "setdefault":
            key = self.value(expr.args[0].value, env.deeper())
            if not is_static(key):
                return []
            given = expr.args[1].value if len(expr.args) > 1 else None
            value = self.value(given, env.deeper()) if given is not None else EMPTY
            return [(static_text(key), value, True, given)]
        out: list[tuple[str, Any, bool, cst.BaseExpression | None]] = []
        for arg in expr.args:  # `update({...}, k=v)`: a mapping we can see, then keywords
            if arg.keyword is not None:
                out.append((arg.keyword.value, self.value(arg.value, env.deeper()), False, arg.value))
            elif not arg.star or arg.star == "**":
                entries = self.mapping_entries(arg.value, env)
                out += [(k, v, False, None) for k, v in (entries or {}).items()]
        return out

    def mapping_entries(
        self,
        node: cst.BaseExpression,
        env: Env,
        nodes: dict[str, tuple[Any, cst.BaseExpression, Env]] | None = None,
        spread: Spread | None = None,
    ) -> dict[str, Value] | None:
        """The entries of a dict built here, as `**node` passes them: a display (`{"k": v}`, with
        the dicts it spreads: `{**base, "k": v}`), `dict(k=v, ...)`, or a name bound to one on every
        path, with the entries set on it afterwards (entries_set_after); None when it is none of
        these (a helper's result, a parameter). `nodes` gets each displayed entry's expression
        (where this evaluator reads it); `spread` reads a dict spread into it (spread_entries)."""
        shown = self.last_assignment(node) if isinstance(node, cst.Name) else node
        out: dict[str, Value] = {}
        if isinstance(shown, cst.Dict):
            for el in shown.elements:  # in order: a later entry wins
                if isinstance(el, cst.StarredDictElement):
                    out.update(self.spread_entries(el.value, env.deeper(), nodes, spread))
                elif isinstance(el.key, cst.SimpleString):
                    key = string_value(el.key)
                    if isinstance(key, str):
                        out[key] = self.value(el.value, env.deeper())
                        if nodes is not None:
                            nodes[key] = (self, el.value, env.deeper())
        elif isinstance(shown, cst.Call) and self.is_dict_call(shown):
            for arg in shown.args:
                if arg.keyword is not None:
                    out[arg.keyword.value] = self.value(arg.value, env.deeper())
                    if nodes is not None:
                        nodes[arg.keyword.value] = (self, arg.value, env.deeper())
                elif not arg.star or arg.star == "**":  # `dict(base, k=v)`, `dict(**base)`
                    out.update(self.spread_entries(arg.value, env.deeper(), nodes, spread))
        elif shown is not None or not isinstance(node, cst.Name):
            return None  # (a name assigned in several arms: only the entries set after them are seen)
        if isinstance(node, cst.Name):
            entries = self.entries_set_after(node, env, out, shown, nodes)
            out = {k: v for k, v in entries.items() if isinstance(v, tuple)}
        return out

    def spread_entries(
        self,
        node: cst.BaseExpression,
        env: Env,
        nodes: dict[str, tuple[Any, cst.BaseExpression, Env]] | None,
        spread: Spread | None,
    ) -> dict[str, Value]:
        """The entries a dict spread into another gives (`**base`): read by `spread` (a sink's
        request follows a project helper's returned dict too), else as mapping_entries reads it;
        `**({"system": s} if s else {})`: either arm's, an entry only one arm has possibly absent."""
        if isinstance(node, cst.IfExp):
            arms = [self.spread_entries(arm, env, nodes, spread) for arm in (node.body, node.orelse)]
            keys = dict.fromkeys([*arms[0], *arms[1]])
            return {k: choice([arms[0].get(k, EMPTY), arms[1].get(k, EMPTY)]) for k in keys}
        found = spread(node, env, nodes) if spread is not None else self.mapping_entries(node, env, nodes)
        return found or {}

    def passed_mapping(
        self,
        node: cst.BaseExpression,
        env: Env,
        hops: int = 0,
        nodes: dict[str, tuple[Any, cst.BaseExpression, Env]] | None = None,
    ) -> dict[str, Value]:
        """The entries of a dict passed as `**mapping` (to a sink, or to a project function): a dict
        built here (mapping_entries), or what a project helper called for it returns
        (`**self._build_request(messages)`), read the same way in the helper with what the call
        passes. `nodes` gets each displayed entry's expression (where its evaluator reads it)."""
        shown = self.last_assignment(node) if isinstance(node, cst.Name) else node
        if isinstance(shown, cst.Call) and hops < 2 and not self.is_dict_call(shown):
            return self._returned_mapping(shown, env, hops, nodes)

        def spread(n: cst.BaseExpression, e: Env, ns: dict | None) -> dict[str, Value]:
            return self.passed_mapping(n, e, hops, ns)

        if isinstance(shown, cst.IfExp):  # `**(extra if c else {})`
            return self.spread_entries(shown, env, nodes, spread)
        # a dict spread into the display (`{**self._base_params(x), "stream": True}`) is read the same way
        return self.mapping_entries(node, env, nodes, spread) or {}

    def _returned_mapping(
        self,
        call: cst.Call,
        env: Env,
        hops: int,
        nodes: dict[str, tuple[Any, cst.BaseExpression, Env]] | None = None,
    ) -> dict[str, Value]:
        """The entries of the dicts a project helper returns, with what `call` passes for its
        parameters (one per key: where its returns disagree, the key's options)."""
        found = self.resolve_callable(call.func, call)
        if found is None or env.depth > 8:
            return {}
        callee, fn = found
        bound = self.bind_arguments(fn, call, env)
        inner = Env(args={**env.args, fn: bound}, depth=env.depth + 1, summary=env.summary)
        options: dict[str, list[Value]] = {}
        for ret in callee.index.bodies[fn].returns:
            if ret.value is not None:
                for key, value in callee.passed_mapping(ret.value, inner, hops + 1, nodes).items():
                    options.setdefault(key, []).append(value if callee is self else self.anchor(value, call))
        return {key: choice(values) for key, values in options.items()}

    def is_dict_call(self, call: cst.Call) -> bool:
        """`dict(...)` of the builtin (not a project's `dict`)."""
        return isinstance(call.func, cst.Name) and self._call_names(call.func) == {"dict"}

    def _call_names(self, func: cst.BaseExpression) -> set[str]:
        """Qualified names of a callee; a builtin (`open`) that nothing in the module rebinds is itself."""
        names = self.index.qualified_names(func)
        if not names and isinstance(func, cst.Name) and func.value not in self.index.functions:
            scope = self.index.scope_for(func)
            if func.value not in scope.bindings and func.value not in self.index.module_scope.bindings:
                return {func.value}
        return names

    def last_assignment(self, node: cst.Name) -> cst.BaseExpression | None:
        """The expression `node` was last assigned, when that is the one assignment that reaches it
        (ModuleIndex.assigned)."""
        return self.index.assigned(node)

    # --- data: YAML, JSON and literal containers ---------------------------------------------------
    def data(self, node: cst.BaseExpression, env: Env, depth: int = 0) -> Any:
        """A structure of dicts, lists and text values (`Value`s) for an expression, or None."""
        if depth > 8:
            return None
        if isinstance(node, cst.Dict):
            out: dict[str, Any] = {}
            for el in node.elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                    key = string_value(el.key)
                    item = self.data(el.value, env, depth + 1)
                    if item is None:  # not data we can read (`os.environ["X"]`): what it evaluates to
                        item = self.value(el.value, env.deeper())
                    out[key if isinstance(key, str) else repr(key)] = item
                elif isinstance(el, cst.StarredDictElement):
                    inner = self.data(el.value, env, depth + 1)
                    if isinstance(inner, dict):
                        out.update(inner)
            return out
        if isinstance(node, (cst.List, cst.Tuple)):
            return [self.data(el.value, env, depth + 1) for el in node.elements]
        if isinstance(node, cst.Name):
            extra = self.keywords_collected(node, env)
            if extra is not None:
                return extra
            expr = self.last_assignment(node)
            if expr is not None:
                found = self.data(expr, env, depth + 1)
                if isinstance(found, dict):
                    found = self.entries_set_after(node, env, found, expr)
                return found
            for qualified in sorted(self.index.imported_as(node.value)):  # a constant of another module
                found = self.resolve(qualified)
                bindings = found[0].index.module_scope.bindings.get(found[1]) if found is not None else None
                if bindings and bindings[-1].kind == "assign" and bindings[-1].expr is not None:
                    return found[0].data(bindings[-1].expr, env, depth + 1)
            return self.value(node, env.deeper())
        if (
            isinstance(node, cst.Subscript)
            and len(node.slice) == 1
            and isinstance(node.slice[0].slice, cst.Index)
        ):
            container = self.data(node.value, env, depth + 1)
            key = self.value(node.slice[0].slice.value, env.deeper())
            if isinstance(container, dict) and is_static(key):
                return container.get(static_text(key))
            return None
        if isinstance(node, cst.Call):
            qnames = self.index.qualified_names(node.func)
            args = [a.value for a in node.args if a.keyword is None]
            if qnames & _LOADERS and args:
                source = args[0]
                path = (
                    self._opened(source, env)
                    if not qnames & {"json.loads", "tomllib.loads", "toml.loads"}
                    else None
                )
                content = self.project.text(path) if path is not None else None
                if content is None:
                    value = self.value(source, env.deeper())
                    content = static_text(value) if is_static(value) else None
                parsed = _parse(content, path or "") if content is not None else None
                self.note_config_file(path, parsed)
                return parsed
            copied = self._copied(node, qnames, args)
            if copied is not None:  # `copy.deepcopy(self.vars)`, `dict(base)`, `base.copy()`: the same data
                found = self.data(copied, env, depth + 1)
                return found if isinstance(found, (dict, list)) else None
            if isinstance(node.func, cst.Name) and node.func.value == "dict":
                return {
                    a.keyword.value: self.data(a.value, env, depth + 1)
                    for a in node.args
                    if a.keyword is not None
                }
            returned = self.returned_data(node, env, depth)
            if returned is not None:
                return returned
        if isinstance(node, cst.Attribute) and (found := self.settings_of(node, env)) is not None:
            return found  # `self.agents_config` of a `@CrewBase` class, `settings.section`
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
            and (stored := self._stored_once(node)) is not None
        ):
            return self.data(stored, env, depth + 1)  # `self.prompt_data = read_yaml(...)`
        value = self.value(node, env.deeper())
        return value

    def _copied(
        self, call: cst.Call, qnames: set[str], args: list[cst.BaseExpression]
    ) -> cst.BaseExpression | None:
        """What a call copies whole, or None: `copy.deepcopy(x)`, `copy.copy(x)`, `dict(x)` with
        nothing else, `x.copy()`."""
        one = len(call.args) == 1 and len(args) == 1 and not call.args[0].star
        if one and (qnames & _COPIES or self.is_dict_call(call)):
            return args[0]
        if not call.args and isinstance(call.func, cst.Attribute) and call.func.attr.value == "copy":
            return call.func.value
        return None

    def returned_data(self, call: cst.Call, env: Env, depth: int) -> Any:
        """The data a project helper returns (`def read_yaml(path): ... return yaml.safe_load(f)`),
        with what the call passes bound to its parameters; None when it has no one return to read."""
        callee = self.resolve_callable(call.func, call)
        if callee is None:
            return None
        evaluator, fn = callee
        body = evaluator.index.bodies[fn]
        returns = [r.value for r in body.returns if r.value is not None]
        if len(returns) != 1 or body.yields or fn in self.active:
            return None
        bound = self.bind_arguments(fn, call, env)
        params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
        params = params[1:] if params and params[0] in ("self", "cls") else params
        for name, arg in zip(params, call.args, strict=False):
            if arg.keyword is None and not arg.star and not is_static(bound.get(name, ())):
                found = self._path_of(arg.value, env)  # a path the code writes as it finds it
                if found is not None:
                    bound[name] = text(found)
        inner = Env(args={**env.args, fn: bound}, depth=env.depth + 1)
        self.active.append(fn)
        try:
            found = evaluator.data(returns[0], inner, depth + 1)
        finally:
            self.active.pop()
        return found if isinstance(found, (dict, list)) else None

    def _stored_once(self, node: cst.Attribute) -> cst.BaseExpression | None:
        """What the one assignment of `self.attr` in its class stores."""
        cls = self.index.scope_for(node).cls
        bindings = self.index.instance_attrs.get((cls.name.value, node.attr.value), []) if cls else []
        if len(bindings) == 1 and bindings[0].kind == "assign":
            return bindings[0].expr
        return None

    def keywords_collected(self, node: cst.Name, env: Env) -> dict[str, Value] | None:
        """`kwargs` of a `def render(self, **kwargs)` being inlined: the keywords its call passes that
        name no parameter of its own (`Prompt(...).render(now=...)` gives `{"now": ...}`)."""
        scope = self.index.scope_for(node)
        fn = scope.node
        if not isinstance(fn, cst.FunctionDef) or fn not in env.args:
            return None
        star = fn.params.star_kwarg
        if not isinstance(star, cst.Param) or star.name.value != node.value:
            return None
        params = fn.params
        own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        return {name: value for name, value in env.args[fn].items() if name not in own}

    def parsed(self, content: str, path: str) -> Any:
        """A config file's data (YAML, JSON or TOML by its suffix), its leaves text values."""
        return _parse(content, path)

    def dumps_constant(self, node: cst.Call, env: Env) -> Value | None:
        """`json.dumps(SCHEMA, ...)` of a constant: the very text it gives (dicts keep their order)."""
        args = [a.value for a in node.args if a.keyword is None]
        plain = _plain(self.data(args[0], env)) if args else None
        if plain is None:
            return None
        options: dict[str, Any] = {}
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in ("indent", "sort_keys", "ensure_ascii"):
                if not isinstance(arg.value, (cst.Integer, cst.Name)):
                    return None
                raw = arg.value.value
                options[arg.keyword.value] = int(raw) if raw.isdigit() else raw == "True"
        return text(json.dumps(plain, **options))

    def named_arguments(self, call: cst.Call, env: Env) -> dict[str, Value]:
        """The values a `.format(...)`-like call passes by name: keywords, `**mapping` and a dict passed
        positionally (`.invoke({...})`, `.format_map(d)`)."""
        named: dict[str, Value] = {}
        for arg in call.args:
            if arg.keyword is not None:
                named[arg.keyword.value] = self.value(arg.value, env.deeper())
            elif arg.star == "**" or (not arg.star and isinstance(arg.value, (cst.Dict, cst.Name))):
                mapping = self.data(arg.value, env)
                if isinstance(mapping, dict):
                    for key, item in mapping.items():
                        value = _as_text(item) if item is not None else None
                        if value is not None:
                            named[key] = value
        return named


# The data of each prompt file's text in this process, by (text, format): PyYAML's pure-Python
# scanner took 12% of a cold run on a project whose modules read the same few YAML prompt files (370
# loads of a handful of texts). Each caller gets its own dicts and lists (the leaves are immutable).
_PARSED: dict[tuple[str, str], Any] = {}
MAX_PARSED_FILES = 256


def _parse(content: str, path: str) -> Any:
    kind = "toml" if path.endswith(".toml") else "json" if path.endswith(".json") else "yaml"
    key = (content, kind)
    if key not in _PARSED:
        if len(_PARSED) >= MAX_PARSED_FILES:
            _PARSED.clear()
        _PARSED[key] = _load(content, kind)
    return _containers_copied(_PARSED[key])


def _containers_copied(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _containers_copied(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_containers_copied(v) for v in obj]
    return obj


def _load(content: str, kind: str) -> Any:
    try:
        if kind == "yaml":
            import yaml

            loaded = yaml.safe_load(content)
        elif kind == "toml":
            loaded = tomllib.loads(content)
        else:
            loaded = json.loads(content)
    except Exception:  # noqa: BLE001 - a broken data file is not the code's prompt
        return None
    return _values(loaded)


def _values(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _values(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_values(v) for v in obj]
    return text(obj if isinstance(obj, str) else json.dumps(obj))


def _as_text(obj: Any) -> Value | None:
    if isinstance(obj, tuple):
        return obj
    if isinstance(obj, (dict, list)):
        plain = _plain(obj)
        return text(json.dumps(plain, ensure_ascii=False)) if plain is not None else None
    return None


def _plain(obj: Any) -> Any:
    """The structure as plain Python data if every leaf is static text."""
    if isinstance(obj, dict):
        out = {k: _plain(v) for k, v in obj.items()}
        return None if any(v is None for v in out.values()) else out
    if isinstance(obj, list):
        items = [_plain(v) for v in obj]
        return None if any(v is None for v in items) else items
    if isinstance(obj, tuple) and is_static(obj):
        return static_text(obj)
    return None
