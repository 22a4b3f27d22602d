"""Jinja templates rendered from Python: `template.render(...)` of a template the code builds or
reads from a file.

The template is rendered in the sandbox with a marker standing in for each value the code passes;
the markers in the output become that value's segments, and attributes of an object passed in
(`render(agent=self)` then `{{ agent.name }}`) are looked up on its class. A name nothing passes is a
hole named after it, judged by its name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import libcst as cst

from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.segments import Hole, Provenance, Value, concat, is_static, static_text, text
from prefixlint.python.volatile import placeholder_provenance

_MARKER = re.compile(r"\x00pfx(\d+)\x00", re.I)
MAX_RENDER_CHARS = 1_000_000
# Attributes Jinja and its sandbox look up on a value to decide how to treat it: never markers.
_JINJA_PROBES = {"unsafe_callable", "alters_data", "jinja_pass_arg", "contextfunction", "evalcontextfunction",
                 "environmentfunction"}  # fmt: skip


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


def _printed(value: object) -> object:
    """What `{{ ... }}` prints (the environment's `finalize`): a field named like a method of `str`
    (`{{ ticket.title }}`) is that str method of the marker, which would print as
    `<built-in method title of _Marker object at 0x...>`, an address that changes from run to run:
    it is the field's marker instead."""
    owner = getattr(value, "__self__", None)
    if isinstance(owner, _Marker) and callable(value):
        return _Marker(owner.registry, (*owner.path, value.__name__))
    return value


class Rendering(EvaluatorBase):
    """Jinja templates rendered from Python."""

    def render_jinja(
        self,
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

        from prefixlint.core.limits import Limits
        from prefixlint.jinja.environment import RenderClock, make_environment, recursion_limit, time_limit
        from prefixlint.jinja.inputs import BASE_TIME
        from prefixlint.jinja.loader import prompt_loader

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

        template_path = template_path or self.project.path_of(static_text(source)) or self.path
        search = [f for f in (os.path.dirname(os.path.abspath(self.path)), self.project.root) if f]
        limits = Limits()
        # The sandbox with prefixlint's output and size limits, with jinja2's own defaults for
        # whitespace (an app's `Environment()`, not a chat template's trim_blocks/lstrip_blocks).
        env = make_environment(RenderClock(BASE_TIME), limits, prompt_loader(template_path, search))
        env.trim_blocks = env.lstrip_blocks = False
        env.undefined = Undefined
        env.finalize = _printed
        context = {name: _Marker(registry, (name,)) for name in named}
        context.update({name: _Marker(registry, (name,)) for name in attributes if name not in context})
        try:
            with time_limit(limits.seconds, "rendering"), recursion_limit(limits.recursion):
                rendered = env.from_string(static_text(source)).render(**context)
        except Exception:  # noqa: BLE001 - a template that cannot render here is left as unknown text
            return self.unknown(where)
        rendered = rendered[:MAX_RENDER_CHARS]
        out: list[Value] = []
        last = 0
        for m in _MARKER.finditer(rendered):
            out.append(text(rendered[last : m.start()]))
            last = m.end()
            path = registry[int(m.group(1))]
            value = self._marker_value(path, named, attributes, where)
            out.append(self.filled_from_config(static_text(source), "{{ " + path[0] + " }}", value))
        out.append(text(rendered[last:]))
        return concat(*out)

    def _marker_value(
        self,
        path: tuple[str, ...],
        named: dict[str, Value],
        attributes: dict[str, Callable[[str], Value | None]],
        where: cst.CSTNode,
    ) -> Value:
        root, rest = path[0], path[1:]
        if root in attributes and rest:
            found = attributes[root](rest[0])
            if found is not None:
                return found if len(rest) == 1 else self.propagate(where, [found])
        if root in named:
            return named[root] if not rest else self.propagate(where, [named[root]])
        label = ".".join(p for p in path if p != "[]")
        prov = placeholder_provenance(label) or Provenance.UNKNOWN
        line, column = self.index.pos(where)
        return (Hole(prov, line, column, "{{ " + label + " }}", True, self.path),)
