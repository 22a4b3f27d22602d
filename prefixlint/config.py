"""Project configuration: `[tool.prefixlint]` in pyproject.toml, or a `prefixlint.toml` /
`.prefixlint.toml` (top-level keys), found by walking up from the first path (ruff's rules).

Rule selection follows ruff and flake8: selectors are code prefixes (`PFX1`, `PFX101`) or `ALL`,
and when a code matches both a select and an ignore selector, the longest selector wins (an
ignore wins a tie). Paths in `exclude`, `extend-exclude` and `per-file-ignores` use gitignore
semantics relative to the folder that holds the config file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.core.rules import resolve_selector

if TYPE_CHECKING:
    from prefixlint.settings import Options

CONFIG_FILES = (".prefixlint.toml", "prefixlint.toml", "pyproject.toml")
SEVERITIES = ("info", "warning", "error")

# key -> (kind, help); the kinds are checked by _check_value.
_KEYS: dict[str, str] = {
    "select": "selectors",
    "extend-select": "selectors",
    "ignore": "selectors",
    "per-file-ignores": "per-file",
    "exclude": "strings",
    "extend-exclude": "strings",
    "tokenizer": "string",
    "engine": "string",
    "fail-on": "string",
    "cache-dir": "string",
    "respect-gitignore": "bool",
    "variables": "variables",
    "template-kinds": "template-kinds",
    "template-search-path": "strings",
    "python": "python",
}
# `template-kinds` values: what a matching .jinja/.j2 file is (prefixlint/jinja/classify.py).
TEMPLATE_KINDS = ("chat", "prompt", "not-prompt")
_VARIABLE_KEYS = ("static", "dynamic")
_PYTHON_KEYS = ("sinks", "sink", "source", "guess-severity")


class ConfigError(Exception):
    """A config file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    path: Path | None = None  # None: no config file found (all defaults)
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None  # None: the built-in defaults
    extend_exclude: tuple[str, ...] = ()
    tokenizer: str | None = None
    engine: str | None = None
    fail_on: str | None = None
    cache_dir: str | None = None
    respect_gitignore: bool | None = None  # None: not set (on)
    static_variables: tuple[str, ...] = ()
    dynamic_variables: tuple[str, ...] = ()
    template_kinds: tuple[tuple[str, str], ...] = ()  # (glob, one of TEMPLATE_KINDS)
    template_search_path: tuple[str, ...] = ()  # absolute folders
    # `[tool.prefixlint.python] sinks`: the project's own prompt builders (qualified or bare names)
    python_sinks: tuple[str, ...] = ()
    # `[tool.prefixlint.python] guess-severity`: the most a value known only by its name may be
    python_guess_severity: str | None = None
    # `[[tool.prefixlint.python.sink]]`: rows of the models table (JSON, as the table's TOML reads)
    python_sink_rows: tuple[str, ...] = ()
    # `[[tool.prefixlint.python.source]]`: the project's own calls whose result is per-request content
    python_source_rows: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    # Every config file path looked for, found or not: a recorded run (runmemo) depends on them all.
    consulted: tuple[str, ...] = field(default=(), compare=False)

    @property
    def root(self) -> Path:
        """The folder that relative paths in the config are relative to."""
        return self.path.parent if self.path is not None else Path.cwd()


def _has_section(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except OSError:
        return False
    except ValueError:
        # A broken pyproject.toml that is not ours is not our error; one with our table is.
        return "[tool.prefixlint" in text
    return isinstance(data.get("tool"), dict) and "prefixlint" in data["tool"]


def find_config(start: Path, consulted: list[str] | None = None) -> Path | None:
    """The nearest config file at or above `start` (a file's folder, or a folder); each path
    looked at is appended to `consulted`."""
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    for directory in (folder, *folder.parents):
        for name in CONFIG_FILES:
            candidate = directory / name
            if consulted is not None:
                consulted.append(str(candidate))
            if candidate.is_file() and (name != "pyproject.toml" or _has_section(candidate)):
                return candidate
    return None


def _selectors(value: Any, key: str, where: str) -> tuple[str, ...]:
    items = _strings(value, key, where)
    for item in items:
        if not resolve_selector(item):
            raise ConfigError(
                f"{where}: `{key}`: unknown rule code or prefix {item!r} (see `prefixlint rules`)"
            )
    return tuple(s.strip().upper() for s in items)


def _sink_rows(value: Any, name: str, where: str, source: bool = False) -> tuple[str, ...]:
    """Project rows of the models table (`[[sink]]` rows, or `[[source]]` ones), checked as the
    table's own rows are (a broken one is an error naming it), kept as JSON so that the settings
    stay plain, hashable data."""
    import json

    from prefixlint.python.frameworks import TableError, sink_from_row, source_from_row

    read = source_from_row if source else sink_from_row

    if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
        raise ConfigError(f"{where}: `{name}` must be an array of tables (`[[{name}]]`)")
    for i, row in enumerate(value):
        try:
            read(row, f"`{name}` {i + 1}")
        except TableError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return tuple(json.dumps(row, sort_keys=True) for row in value)


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def _string(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: `{key}` must be a string, got {value!r}")
    return value


def _template_kinds(value: Any, key: str, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `{key}` must be a table of glob = kind ({', '.join(TEMPLATE_KINDS)})")
    for glob, kind in value.items():
        if kind not in TEMPLATE_KINDS:
            raise ConfigError(
                f"{where}: `{key}.{glob!r}`: unknown template kind {kind!r}; "
                f"known: {', '.join(TEMPLATE_KINDS)}"
            )
    return tuple(value.items())


def parse_config(data: dict[str, Any], path: Path, prefix: str = "") -> Config:
    """Validate a `[tool.prefixlint]` table (or a prefixlint.toml's top level)."""
    where = str(path)
    values: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        kind = _KEYS.get(key)
        if kind is None:
            raise ConfigError(f"{where}: unknown key `{name}`; known keys: {', '.join(_KEYS)}")
        if kind == "selectors":
            values[key] = _selectors(value, name, where)
        elif kind == "strings":
            values[key] = _strings(value, name, where)
        elif kind == "string":
            values[key] = _string(value, name, where)
        elif kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: `{name}` must be true or false, got {value!r}")
            values[key] = value
        elif kind == "per-file":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `{name}` must be a table of glob = [codes]")
            values[key] = tuple(
                (glob, _selectors(codes, f"{name}.{glob!r}", where)) for glob, codes in value.items()
            )
        elif kind == "template-kinds":
            values[key] = _template_kinds(value, name, where)
        elif kind == "python":
            if not isinstance(value, dict):
                raise ConfigError(f'{where}: `{name}` must be a table (e.g. `sinks = ["pkg.mod.build"]`)')
            for sub in value:
                if sub not in _PYTHON_KEYS:
                    raise ConfigError(
                        f"{where}: unknown key `{name}.{sub}`; known keys: {', '.join(_PYTHON_KEYS)}"
                    )
            values["python-sinks"] = _strings(value.get("sinks", []), f"{name}.sinks", where)
            values["python-sink-rows"] = _sink_rows(value.get("sink", []), f"{name}.sink", where)
            values["python-source-rows"] = _sink_rows(value.get("source", []), f"{name}.source", where, True)
            guess = value.get("guess-severity")
            if guess is not None and guess not in SEVERITIES:
                raise ConfigError(
                    f"{where}: `{name}.guess-severity` must be one of {', '.join(SEVERITIES)}, got {guess!r}"
                )
            values["python-guess-severity"] = guess
        else:  # variables
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `{name}` must be a table with `static` and `dynamic` lists")
            for sub in value:
                if sub not in _VARIABLE_KEYS:
                    raise ConfigError(f"{where}: unknown key `{name}.{sub}`; known keys: static, dynamic")
            values["static"] = _strings(value.get("static", []), f"{name}.static", where)
            values["dynamic"] = _strings(value.get("dynamic", []), f"{name}.dynamic", where)
            both = sorted(set(values["static"]) & set(values["dynamic"]))
            if both:
                raise ConfigError(f"{where}: `{name}`: {', '.join(both)} listed as both static and dynamic")

    fail_on = values.get("fail-on")
    if fail_on is not None and fail_on not in SEVERITIES:
        raise ConfigError(
            f"{where}: `{prefix}fail-on` must be one of {', '.join(SEVERITIES)}, got {fail_on!r}"
        )
    engine = values.get("engine")
    if engine is not None:
        engine = engine.strip().lower()
        from prefixlint.engines import load_engines

        if engine not in load_engines():
            known = ", ".join(sorted(load_engines()))
            raise ConfigError(f"{where}: `{prefix}engine`: unknown engine {engine!r}; known: {known}")
    tokenizer = values.get("tokenizer")
    if tokenizer is not None and (path.parent / tokenizer).exists():
        tokenizer = str(path.parent / tokenizer)  # a path is relative to the config file, a Hub id is not
    return Config(
        path=path,
        select=values.get("select"),
        extend_select=values.get("extend-select", ()),
        ignore=values.get("ignore", ()),
        per_file_ignores=values.get("per-file-ignores", ()),
        exclude=values.get("exclude"),
        extend_exclude=values.get("extend-exclude", ()),
        tokenizer=tokenizer,
        engine=engine,
        fail_on=fail_on,
        cache_dir=values.get("cache-dir"),
        respect_gitignore=values.get("respect-gitignore"),
        static_variables=values.get("static", ()),
        dynamic_variables=values.get("dynamic", ()),
        template_kinds=values.get("template-kinds", ()),
        python_sinks=values.get("python-sinks", ()),
        python_guess_severity=values.get("python-guess-severity"),
        python_sink_rows=values.get("python-sink-rows", ()),
        python_source_rows=values.get("python-source-rows", ()),
        template_search_path=tuple(
            str((path.parent / folder).resolve()) for folder in values.get("template-search-path", ())
        ),
        raw=data,
    )


def load_config(path: Path) -> Config:
    """Read and validate one config file; raises ConfigError naming the file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    if path.name == "pyproject.toml" or "tool" in data:
        # A pyproject.toml, or any file with a `[tool.prefixlint]` table (`--config other.toml`).
        tool = data.get("tool", {})
        table = tool.get("prefixlint", {}) if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: `tool.prefixlint` must be a table")
        if path.name != "pyproject.toml" and not table:
            raise ConfigError(f"{path}: no `[tool.prefixlint]` table (and `tool` is no prefixlint key)")
        return parse_config(table, path, prefix="tool.prefixlint.")
    return parse_config(data, path)


def discover_config(paths: Iterable[str], explicit: str | None = None) -> Config:
    """The config for a run: `explicit` if given, else the nearest one above the first path."""
    if explicit is not None:
        return replace(load_config(Path(explicit)), consulted=(explicit,))
    first = next(iter(paths), None)
    consulted: list[str] = []
    found = find_config(Path(first) if first else Path.cwd(), consulted)
    return replace(load_config(found) if found is not None else Config(), consulted=tuple(consulted))


def build_options(
    config: Config,
    *,
    tokenizer: str | None = None,
    engine: str | None = None,
    select: tuple[str, ...] = (),
    extend_select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    excludes: tuple[str, ...] = (),
    multiturn: bool = True,
    force_exclude: bool = False,
    use_cache: bool = False,
    respect_gitignore: bool | None = None,
    template_vars: dict[str, Any] | None = None,
    block_size: int | None = None,
) -> Options:
    """Options for a run: command-line values win over the config's, which win over defaults.
    As in ruff, `--select` replaces the config's whole selection (its `select`, `extend-select`
    and `ignore`), so `--select PFX302` reports PFX302 even with `ignore = ["PFX302"]` in the
    config; without it, `--extend-select` and `--ignore` add to the config's. `per-file-ignores`
    still apply."""
    from prefixlint.settings import Options

    root = config.root
    cache_dir = None
    if use_cache:
        from prefixlint.run.cache import default_cache_dir

        cache_dir = str(root / config.cache_dir) if config.cache_dir else str(default_cache_dir(root))
    return Options(
        tokenizer=tokenizer if tokenizer is not None else config.tokenizer,
        engine=engine or config.engine or "vllm",
        excludes=excludes,
        select=select or config.select or ("ALL",),
        ignore=ignore if select else config.ignore + ignore,
        multiturn=multiturn,
        static_variables=config.static_variables,
        dynamic_variables=config.dynamic_variables,
        extend_select=extend_select if select else config.extend_select + extend_select,
        per_file_ignores=config.per_file_ignores,
        exclude=config.exclude,
        extend_exclude=config.extend_exclude,
        force_exclude=force_exclude,
        respect_gitignore=next(
            (v for v in (respect_gitignore, config.respect_gitignore) if v is not None), True
        ),
        root=str(root),
        cache_dir=cache_dir,
        template_kinds=config.template_kinds,
        template_search_path=config.template_search_path,
        python_sinks=config.python_sinks,
        python_guess_severity=config.python_guess_severity or "info",
        python_sink_rows=config.python_sink_rows,
        python_source_rows=config.python_source_rows,
        project_root=str(root) if config.path is not None else None,
        template_vars=dict(template_vars or {}),
        block_size=block_size,
    )
