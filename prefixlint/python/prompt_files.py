"""Prompt text kept outside the code: files read by a path written in the code, YAML/JSON data,
and Jinja templates rendered from Python.

A read is followed when its path is known statically (a literal, `__file__`-relative, or with a
static tail such as `f"{pkg_dir}/prompts/{name}.txt"` with `name` known): the file's text becomes
static text. A Jinja template is rendered in the sandbox with a marker standing in for each value
the code passes; the markers in the output become that value's segments, and attributes of an
object passed in (`render(agent=self)` then `{{ agent.name }}`) are looked up on its class.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import libcst as cst

from prefixlint.python.scopes import string_value
from prefixlint.python.segments import Hole, Provenance, Text, Value, concat, is_static, static_text, text
from prefixlint.python.volatile import placeholder_provenance

if TYPE_CHECKING:
    from prefixlint.python.evaluate import Env, Evaluator

# Calls that read a whole text file, by qualified name or by method name.
_READ_METHODS = {"read", "read_text", "readlines", "read_bytes"}
_OPENERS = {"open", "io.open", "codecs.open", "builtins.open"}
_PATH_TYPES = {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "Path"}
_LOADERS = {"yaml.safe_load", "yaml.load", "yaml.full_load", "json.load", "json.loads", "tomllib.load",
            "tomllib.loads", "toml.load", "toml.loads"}  # fmt: skip
# Functions of a project's own we cannot read but whose name says they read a file by its path.
_READER_NAME = re.compile(r"^(load|read|get|open)_?(text|file|prompt|template|yaml|json|txt)s?$", re.I)
TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2", ".txt", ".md", ".prompt")
_MARKER = re.compile(r"\x00pfx(\d+)\x00", re.I)
MAX_RENDER_CHARS = 1_000_000
# Attributes Jinja and its sandbox look up on a value to decide how to treat it: never markers.
_JINJA_PROBES = {"unsafe_callable", "alters_data", "jinja_pass_arg", "contextfunction", "evalcontextfunction",
                 "environmentfunction"}  # fmt: skip


def _path_of(ev: Evaluator, node: cst.BaseExpression, env: Env, depth: int = 0) -> str | None:
    """The file a path expression names, if it can be found: `"prompts/x.txt"`, `Path(__file__).parent
    / "x.yaml"`, `os.path.join(HERE, "x.j2")`, `importlib.resources.files(pkg) / "x.md"`."""
    written = _path_text(ev, node, env, depth)
    if written is None:
        return None
    return _find(ev, written)


def _find(ev: Evaluator, written: str) -> str | None:
    here = os.path.dirname(os.path.abspath(ev.path))
    if os.path.isabs(written):
        return written if os.path.isfile(written) else None
    return ev.project.find_file(written, here)


def _path_text(ev: Evaluator, node: cst.BaseExpression, env: Env, depth: int) -> str | None:
    """A path as written, with anything unknown before its last static part dropped (the folder a
    package is installed in is not needed to find the file in the project)."""
    if depth > 8:
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        left = _path_text(ev, node.left, env, depth + 1)
        right = _path_text(ev, node.right, env, depth + 1)
        if right is None:
            return None
        return right if left is None or os.path.isabs(right) else os.path.join(left, right)
    if isinstance(node, cst.Attribute) and node.attr.value == "parent":
        inner = _path_text(ev, node.value, env, depth + 1)
        return os.path.dirname(inner) if inner is not None else None
    if isinstance(node, cst.Call):
        qnames = ev.index.qualified_names(node.func)
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else ""
        args = [a.value for a in node.args if a.keyword is None]
        if qnames & (_PATH_TYPES | {"os.path.join"}) or name == "joinpath":
            parts = [node.func.value] if name == "joinpath" else []
            texts = [_path_text(ev, a, env, depth + 1) for a in parts + args]
            known = [t for t in texts if t is not None]
            return os.path.join(*known) if known else None
        if qnames & {"os.path.dirname"} and args:
            inner = _path_text(ev, args[0], env, depth + 1)
            return os.path.dirname(inner) if inner is not None else None
        if qnames & {"os.path.abspath", "os.path.realpath", "os.path.normpath"} and args:
            return _path_text(ev, args[0], env, depth + 1)
        if name in ("resolve", "absolute", "expanduser"):
            return _path_text(ev, node.func.value, env, depth + 1)
        if name == "with_name" and args:  # `Path(__file__).with_name("prompt.txt")`
            folder = _path_text(ev, node.func.value, env, depth + 1)
            file = _path_text(ev, args[0], env, depth + 1)
            if file is None:
                return None
            return os.path.join(os.path.dirname(folder), file) if folder is not None else file
        if qnames & {"importlib.resources.files", "importlib_resources.files"} and args:
            return _package_folder(ev, args[0], env)
        return None
    value = ev.value(node, env.deeper())
    if is_static(value):
        return static_text(value) or None
    # The static tail after the last unknown part: `f"{package_path}/prompts/{name}.txt"`.
    last = max(i for i, seg in enumerate(value) if not isinstance(seg, Text))
    tail = static_text(value[last + 1 :]).lstrip("/\\")
    return tail if "/" in tail or "." in tail else None


def _package_folder(ev: Evaluator, node: cst.BaseExpression, env: Env) -> str | None:
    value = ev.value(node, env.deeper())
    if not is_static(value):
        return None
    init = ev.project.module_path(static_text(value), ev.path)
    return os.path.dirname(init) if init is not None and init.endswith("__init__.py") else None


def _file_value(ev: Evaluator, path: str) -> Value | None:
    content = ev.project.text(path)
    return text(content) if content is not None else None


def read_call(ev: Evaluator, node: cst.Call, env: Env) -> Value | None:
    """The text a call reads from a prompt file, or None if it is not such a read."""
    func = node.func
    qnames = ev.index.qualified_names(func)
    args = [a.value for a in node.args if a.keyword is None]
    if isinstance(func, cst.Attribute) and func.attr.value in _READ_METHODS:
        path = _opened(ev, func.value, env)
        return _file_value(ev, path) if path is not None else None
    if isinstance(func, cst.Attribute) and func.attr.value == "get_template" and args:
        path = _path_of(ev, args[0], env)  # a loader's folder is not followed: found by its name
        return _file_value(ev, path) if path is not None else None
    if qnames & {"importlib.resources.read_text", "pkg_resources.resource_string"} and len(args) >= 2:
        folder = _package_folder(ev, args[0], env)
        name = ev.value(args[1], env.deeper())
        if folder is not None and is_static(name):
            path = os.path.join(folder, static_text(name))
            return _file_value(ev, path) if os.path.isfile(path) else None
    if qnames & _LOADERS and args:
        loaded = data(ev, node, env)
        return _as_text(loaded)
    if isinstance(func, (cst.Name, cst.Attribute)) and args and ev.resolve_callable(func, node) is None:
        name = func.value if isinstance(func, cst.Name) else func.attr.value
        if _READER_NAME.match(name):
            path = _path_of(ev, args[0], env)
            if path is not None:
                return _file_value(ev, path)
    return None


def _opened(ev: Evaluator, node: cst.BaseExpression, env: Env) -> str | None:
    """The file behind `open(P)`, `P.open()`, a `Path`, or a name bound to one (`with open(P) as f`
    binds `f` to `open(P)`)."""
    if isinstance(node, cst.Call):
        qnames = _call_names(ev, node.func)
        args = [a.value for a in node.args if a.keyword is None]
        if qnames & _OPENERS and args:
            return _path_of(ev, args[0], env)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "open":
            return _path_of(ev, node.func.value, env)
    if isinstance(node, cst.Name):
        expr = last_assignment(ev, node)
        if expr is not None:
            return _opened(ev, expr, env)
    return _path_of(ev, node, env)


def entries_set_after(ev: Evaluator, node: cst.Name, env: Env) -> dict[str, Any]:
    """Entries set on a dict after it was built (`variables["date"] = value`), before `node`."""
    out: dict[str, Any] = {}
    scope = ev.index.scope_for(node)
    for binding in scope.bindings.get(node.value, ()):
        if binding.kind == "setitem" and binding.pos < ev.index.pos(node) and binding.key is not None:
            key = ev.value(binding.key, env.deeper())
            name = static_text(key) if is_static(key) else "\x00" + ev.label(binding.key)
            out[name] = ev.value(binding.expr, env.deeper()) if binding.expr is not None else None
    return out


def _call_names(ev: Evaluator, func: cst.BaseExpression) -> set[str]:
    """Qualified names of a callee; a builtin (`open`) that nothing in the module rebinds is itself."""
    names = ev.index.qualified_names(func)
    if not names and isinstance(func, cst.Name) and func.value not in ev.index.functions:
        scope = ev.index.scope_for(func)
        if func.value not in scope.bindings and func.value not in ev.index.module_scope.bindings:
            return {func.value}
    return names


def last_assignment(ev: Evaluator, node: cst.Name) -> cst.BaseExpression | None:
    """The expression `node` was last assigned, when that is the one assignment that reaches it
    (ModuleIndex.assigned)."""
    return ev.index.assigned(node)


# --- data: YAML, JSON and literal containers ---------------------------------------------------
def data(ev: Evaluator, node: cst.BaseExpression, env: Env, depth: int = 0) -> Any:
    """A structure of dicts, lists and text values (`Value`s) for an expression, or None."""
    if depth > 8:
        return None
    if isinstance(node, cst.Dict):
        out: dict[str, Any] = {}
        for el in node.elements:
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                key = string_value(el.key)
                item = data(ev, el.value, env, depth + 1)
                if item is None:  # not data we can read (`os.environ["X"]`): what it evaluates to
                    item = ev.value(el.value, env.deeper())
                out[key if isinstance(key, str) else repr(key)] = item
            elif isinstance(el, cst.StarredDictElement):
                inner = data(ev, el.value, env, depth + 1)
                if isinstance(inner, dict):
                    out.update(inner)
        return out
    if isinstance(node, (cst.List, cst.Tuple)):
        return [data(ev, el.value, env, depth + 1) for el in node.elements]
    if isinstance(node, cst.Name):
        extra = keywords_collected(ev, node, env)
        if extra is not None:
            return extra
        expr = last_assignment(ev, node)
        if expr is not None:
            found = data(ev, expr, env, depth + 1)
            if isinstance(found, dict):
                found = {**found, **entries_set_after(ev, node, env)}
            return found
        for qualified in sorted(ev.index.imported_as(node.value)):  # a constant of another module
            found = ev.project.resolve(qualified, ev.path)
            bindings = found[0].index.module_scope.bindings.get(found[1]) if found is not None else None
            if bindings and bindings[-1].kind == "assign" and bindings[-1].expr is not None:
                return data(found[0], bindings[-1].expr, env, depth + 1)
        return ev.value(node, env.deeper())
    if (
        isinstance(node, cst.Subscript)
        and len(node.slice) == 1
        and isinstance(node.slice[0].slice, cst.Index)
    ):
        container = data(ev, node.value, env, depth + 1)
        key = ev.value(node.slice[0].slice.value, env.deeper())
        if isinstance(container, dict) and is_static(key):
            return container.get(static_text(key))
        return None
    if isinstance(node, cst.Call):
        qnames = ev.index.qualified_names(node.func)
        args = [a.value for a in node.args if a.keyword is None]
        if qnames & _LOADERS and args:
            source = args[0]
            path = (
                _opened(ev, source, env)
                if not qnames & {"json.loads", "tomllib.loads", "toml.loads"}
                else None
            )
            content = ev.project.text(path) if path is not None else None
            if content is None:
                value = ev.value(source, env.deeper())
                content = static_text(value) if is_static(value) else None
            return _parse(content, path or "") if content is not None else None
        if isinstance(node.func, cst.Name) and node.func.value == "dict":
            return {
                a.keyword.value: data(ev, a.value, env, depth + 1) for a in node.args if a.keyword is not None
            }
    value = ev.value(node, env.deeper())
    return value


def keywords_collected(ev: Evaluator, node: cst.Name, env: Env) -> dict[str, Value] | None:
    """`kwargs` of a `def render(self, **kwargs)` being inlined: the keywords its call passes that
    name no parameter of its own (`Prompt(...).render(now=...)` gives `{"now": ...}`)."""
    scope = ev.index.scope_for(node)
    fn = scope.node
    if not isinstance(fn, cst.FunctionDef) or fn not in env.args:
        return None
    star = fn.params.star_kwarg
    if not isinstance(star, cst.Param) or star.name.value != node.value:
        return None
    params = fn.params
    own = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    return {name: value for name, value in env.args[fn].items() if name not in own}


def _parse(content: str, path: str) -> Any:
    try:
        if path.endswith((".yaml", ".yml")) or not path.endswith(".json"):
            import yaml

            loaded = yaml.safe_load(content)
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


def dumps_constant(ev: Evaluator, node: cst.Call, env: Env) -> Value | None:
    """`json.dumps(SCHEMA, ...)` of a constant: the very text it gives (dicts keep their order)."""
    args = [a.value for a in node.args if a.keyword is None]
    plain = _plain(data(ev, args[0], env)) if args else None
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


def named_arguments(ev: Evaluator, call: cst.Call, env: Env) -> dict[str, Value]:
    """The values a `.format(...)`-like call passes by name: keywords, `**mapping` and a dict passed
    positionally (`.invoke({...})`, `.format_map(d)`)."""
    named: dict[str, Value] = {}
    for arg in call.args:
        if arg.keyword is not None:
            named[arg.keyword.value] = ev.value(arg.value, env.deeper())
        elif arg.star == "**" or (not arg.star and isinstance(arg.value, (cst.Dict, cst.Name))):
            mapping = data(ev, arg.value, env)
            if isinstance(mapping, dict):
                for key, item in mapping.items():
                    value = _as_text(item) if item is not None else None
                    if value is not None:
                        named[key] = value
    return named


# --- Jinja templates rendered from Python --------------------------------------------------------
class _Marker(str):
    """Stands in for a value passed to a template: prints as a marker, and every attribute, item,
    call or iteration of it is a marker of its own (recorded with its path)."""

    registry: list[tuple[str, ...]]

    def __new__(cls, registry: list[tuple[str, ...]], path: tuple[str, ...]) -> _Marker:
        registry.append(path)
        self = super().__new__(cls, f"\x00pfx{len(registry) - 1}\x00")
        self.registry, self.path = registry, path
        return self

    def __getattr__(self, name: str) -> _Marker:
        if name.startswith("_") or name in _JINJA_PROBES:
            raise AttributeError(name)
        return _Marker(self.registry, (*self.path, name))

    def __getitem__(self, key: object) -> _Marker:  # type: ignore[override]
        return _Marker(self.registry, (*self.path, str(key)))

    def __call__(self, *args: object, **kwargs: object) -> _Marker:
        return self

    def __iter__(self):  # type: ignore[override]  # one item: the loop body renders once
        yield _Marker(self.registry, (*self.path, "[]"))


def render_jinja(
    ev: Evaluator,
    source: Value,
    named: dict[str, Value],
    where: cst.CSTNode,
    attributes: dict[str, Callable[[str], Value | None]],
    template_path: str | None = None,
) -> Value:
    """A Jinja template (static text) rendered with `named` values; `attributes[name](attr)` gives
    the value of `name.attr` for objects passed in. Undeclared names become holes named after them."""
    if not is_static(source):
        return source
    import jinja2

    from prefixlint.jinja.environment import RenderClock, make_environment, recursion_limit, time_limit
    from prefixlint.jinja.inputs import BASE_TIME
    from prefixlint.jinja.loader import prompt_loader
    from prefixlint.limits import Limits

    registry: list[tuple[str, ...]] = []

    class Undefined(jinja2.Undefined):
        def __str__(self) -> str:
            return _Marker(registry, (self._undefined_name or "?",))

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_") or name in _JINJA_PROBES:
                raise AttributeError(name)
            return _Marker(registry, (self._undefined_name or "?", name))

        def __iter__(self):  # type: ignore[override]
            yield _Marker(registry, (self._undefined_name or "?", "[]"))

        def __bool__(self) -> bool:
            return True

    template_path = template_path or ev.project.path_of(static_text(source)) or ev.path
    search = [f for f in (os.path.dirname(os.path.abspath(ev.path)), ev.project.root) if f]
    limits = Limits()
    # The sandbox with prefixlint's output and size limits, with jinja2's own defaults for
    # whitespace (an app's `Environment()`, not a chat template's trim_blocks/lstrip_blocks).
    env = make_environment(RenderClock(BASE_TIME), limits, prompt_loader(template_path, search))
    env.trim_blocks = env.lstrip_blocks = False
    env.undefined = Undefined
    context = {name: _Marker(registry, (name,)) for name in named}
    context.update({name: _Marker(registry, (name,)) for name in attributes if name not in context})
    try:
        with time_limit(limits.seconds, "rendering"), recursion_limit(limits.recursion):
            rendered = env.from_string(static_text(source)).render(**context)
    except Exception:  # noqa: BLE001 - a template that cannot render here is left as unknown text
        return ev.unknown(where)
    rendered = rendered[:MAX_RENDER_CHARS]
    out: list[Value] = []
    last = 0
    for m in _MARKER.finditer(rendered):
        out.append(text(rendered[last : m.start()]))
        last = m.end()
        out.append(_marker_value(ev, registry[int(m.group(1))], named, attributes, where))
    out.append(text(rendered[last:]))
    return concat(*out)


def _marker_value(
    ev: Evaluator,
    path: tuple[str, ...],
    named: dict[str, Value],
    attributes: dict[str, Callable[[str], Value | None]],
    where: cst.CSTNode,
) -> Value:
    root, rest = path[0], path[1:]
    if root in attributes and rest:
        found = attributes[root](rest[0])
        if found is not None:
            return found if len(rest) == 1 else ev.propagate(where, [found])
    if root in named:
        return named[root] if not rest else ev.propagate(where, [named[root]])
    label = ".".join(p for p in path if p != "[]")
    prov = placeholder_provenance(label) or Provenance.UNKNOWN
    line, column = ev.index.pos(where)
    return (Hole(prov, line, column, "{{ " + label + " }}", True, ev.path),)
