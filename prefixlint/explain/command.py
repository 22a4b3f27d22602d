"""What `prefixlint explain` does with its arguments (cli/explain.py keeps only the option list)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from prefixlint.core.files import read_text
from prefixlint.engines import Engine, load_engines
from prefixlint.explain.reading import LogLimitError, LogLimits, Reading
from prefixlint.jinja.template import ChatTemplate
from prefixlint.models.tokens import LoadedTokenizer, choose_tokenizer, load_tokenizer, special_tokens_for
from prefixlint.run.sources import ConfigError, source_kind, templates_in_tokenizer_config
from prefixlint.settings import Options

DEFAULT_ENGINES = ("vllm", "sglang", "openai")
TEMPLATE_SUFFIXES = (".jinja", ".j2")


class ExplainError(Exception):
    """A usage problem (exit 2) with the message to show."""


def _template_from(path: Path, tokenizer: LoadedTokenizer) -> ChatTemplate:
    if source_kind(path) == "gguf":
        from prefixlint.models.gguf import GGUFError, source_name, template_named

        try:
            found = template_named(path)
        except GGUFError as exc:
            raise ExplainError(f"{path}: {exc}") from exc
        return ChatTemplate(
            found.source, source_name(str(path), found.name), special_tokens=tokenizer.special_tokens
        )
    text = read_text(str(path))
    if path.name.endswith(".json"):
        named = templates_in_tokenizer_config(text)
        if not named:
            raise ExplainError(f"{path}: no chat_template in it")
        special = special_tokens_for(str(path), tokenizer)
        return ChatTemplate(named[0].source, str(path), special_tokens=special, fixed_line=named[0].line)
    return ChatTemplate(text, str(path), special_tokens=special_tokens_for(str(path), tokenizer))


def resolve(
    template: str | None, model_dir: str | None, tokenizer: str | None
) -> tuple[ChatTemplate | None, LoadedTokenizer]:
    """The template (from --template, else the chat_template.jinja or tokenizer_config.json of the
    model folder or of the folder the tokenizer was found in, else none) and the tokenizer
    (--tokenizer, else the model folder's, else the one beside the template, else the embedded
    default)."""
    loaded = load_tokenizer(tokenizer or model_dir) if (tokenizer or model_dir) else None
    candidates: list[Path] = []
    if template:
        candidates.append(Path(template))
    for given in (model_dir, tokenizer):
        if given and source_kind(given) == "gguf" and Path(given).is_file():
            candidates.append(Path(given))  # a GGUF model holds its chat template
    folders = [Path(f) for f in (model_dir, tokenizer) if f and Path(f).is_dir()]
    if loaded is not None:
        folders.append(Path(loaded.path).parent)  # a tokenizer.json file or a Hub id's snapshot
    for folder in dict.fromkeys(folders):
        candidates += [folder / "chat_template.jinja", folder / "tokenizer_config.json"]
    for path in candidates:
        if path.is_file():
            if loaded is None:
                loaded = choose_tokenizer(str(path), None)[0]
            try:
                return _template_from(path, loaded), loaded
            except ConfigError as exc:
                if template and path == Path(template):
                    raise ExplainError(f"{path}: {exc}") from exc
    return None, loaded or load_tokenizer(None)


def engines_for(names: tuple[str, ...]) -> list[Engine]:
    known = load_engines()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ExplainError(f"unknown engine {unknown[0]!r}; known: {', '.join(sorted(known))}")
    return [known[n] for n in names or DEFAULT_ENGINES]


def log_limits(
    max_requests: int | None = None,
    max_seconds: float | None = None,
    max_request_bytes: int | None = None,
    max_messages: int | None = None,
    limit: tuple[str, ...] = (),
) -> LogLimits:
    """The log limits: the defaults, then `--limit NAME=N` pairs, then the named `--max-*` options."""
    pairs: dict[str, float] = {}
    for item in limit:
        name, _, value = item.partition("=")
        try:
            pairs[name.strip()] = float(value)
        except ValueError:
            raise ExplainError(f"--limit {item!r}: expected NAME=NUMBER, e.g. --limit depth=256") from None
    named = {"requests": max_requests, "seconds": max_seconds, "request_bytes": max_request_bytes}
    named["messages"] = max_messages
    pairs.update({k: v for k, v in named.items() if v is not None})
    try:
        return LogLimits().with_overrides(pairs)
    except ValueError as exc:
        raise ExplainError(f"--limit: {exc}") from exc


def is_template(path: str) -> bool:
    name = Path(path).name
    return name.endswith((*TEMPLATE_SUFFIXES, ".gguf")) or name == "tokenizer_config.json"


def run(
    paths: tuple[str, ...],
    *,
    log: str | tuple[str, ...] | None,
    template: str | None,
    model_dir: str | None,
    tokenizer: str | None,
    engines: tuple[str, ...],
    cache_tokens: int | None,
    log_format: str | None = None,
    server_args: str | None = None,
    metrics: str | None = None,
    prefill_rate: float | None = None,
    top: int,
    what_if: int,
    interval: float,
    fmt: str,
    html_path: str | None,
    template_vars: dict[str, Any] | None = None,
    max_requests: int | None = None,
    max_seconds: float | None = None,
    max_request_bytes: int | None = None,
    max_messages: int | None = None,
    limit: tuple[str, ...] = (),
    replicas: int | None = None,
    routing: str = "round-robin",
    block_size: int | None = None,
    workers: int | None = None,
    trace: str | None = None,
    export_trace: str | None = None,
    trace_salt: str | None = None,
    capacity_curve: bool = False,
    dask: str | None = None,
) -> str:
    """The text (or JSON) to print; raises ExplainError for usage problems. `template_vars`
    (`--var`, `--chat-template-kwargs`) are passed to every render, as vLLM's chat_template_kwargs."""
    template_vars = template_vars or {}
    chosen = engines_for(engines)
    limits = log_limits(max_requests, max_seconds, max_request_bytes, max_messages, limit)
    # `--log` given more than once: the files are read as one log, in the order given.
    logs = (log,) if isinstance(log, str) else tuple(log or ())
    log = (logs[0] if len(logs) == 1 else logs) if logs else None
    if export_trace is not None and log is None:
        raise ExplainError("--export-trace writes the trace of a log: give --log FILE")
    if export_trace is not None and any(Path(export_trace).resolve() == Path(p).resolve() for p in logs):
        raise ExplainError(f"--export-trace {export_trace}: that is the log itself; name another file")
    if trace_salt is not None and export_trace is None:
        raise ExplainError("--trace-salt keys an exported trace: give --export-trace FILE")
    if dask is not None and log is None and trace is None:
        raise ExplainError("--dask renders and tokenizes a log: give --log FILE")
    if dask is not None and trace is not None and not replicas:
        raise ExplainError("--dask on a trace simulates its replicas there: give --replicas N")
    if dask is not None and workers is not None:
        raise ExplainError("give either --workers N (processes here) or --dask, not both")
    if trace is not None:
        if log is not None or paths:
            raise ExplainError("give either --trace FILE or a log or requests, not both")
        return _explain_trace(
            trace,
            chosen,
            block_size,
            cache_tokens,
            replicas,
            routing,
            capacity_curve,
            limits,
            fmt,
            html_path,
            dask,
        )
    if log is None and len(paths) == 1 and is_template(paths[0]):
        from prefixlint.api import lint_paths
        from prefixlint.explain.narrate import narrate, narrate_json

        options = Options(tokenizer=tokenizer, engine=chosen[0].name, template_vars=template_vars)
        report = lint_paths([paths[0]], options)
        _warn_unread(template_vars, [s.variables for s in report.sources])
        if fmt == "json":
            return json.dumps(narrate_json(report.sources), indent=2) + "\n"
        return narrate(report.sources)
    if log is None and len(paths) != 2:
        raise ExplainError("give two requests (A B), a template, or --log FILE")
    if log is not None and paths:
        raise ExplainError("give either --log FILE or requests, not both")
    chat_template, loaded = resolve(template, model_dir, tokenizer)
    from prefixlint.explain.requests import Renderer, RequestError, read_request_file

    renderer = Renderer(chat_template, limits.request_bytes)
    renderer.template.extra_kwargs.update(template_vars)
    # A template that does not compile is reported where it renders.
    with contextlib.suppress(Exception):
        _warn_unread(template_vars, [renderer.template.reads])
    if log is None:
        from prefixlint.explain.pair import explain_pair, pair_text

        try:
            a, b = read_request_file(paths[0], limits), read_request_file(paths[1], limits)
        except RequestError as exc:
            raise ExplainError(str(exc)) from exc
        try:
            result = explain_pair(a, b, renderer, loaded, chosen)
        except RequestError as exc:
            raise ExplainError(f"{paths[0]} and {paths[1]}: {exc}") from exc
        result["tokenizer"] = loaded.name
        result["template"] = chat_template.path if chat_template else None
        if a.prompt is not None and b.prompt is not None:
            result["template"] = None  # two plain prompts: nothing was rendered
        elif chat_template is None:
            result["template"] = renderer.template.path
        result["template_variables"] = template_vars
        if fmt == "json":
            return json.dumps(result, indent=2, ensure_ascii=False) + "\n"
        return pair_text(result, (paths[0], paths[1]))

    from prefixlint.explain.dask_stage import DaskError
    from prefixlint.explain.log import explain_log
    from prefixlint.explain.log_report import log_text, nothing_read
    from prefixlint.explain.observed import LogObservations, configured, findings
    from prefixlint.explain.render_pool import RenderWorkerDied
    from prefixlint.explain.server import ServerArgsError, read_server

    try:
        server, scrape = read_server(server_args, metrics, _log_head(logs[0], limits))
    except ServerArgsError as exc:
        raise ExplainError(str(exc)) from exc
    if server is not None and server.engine and not engines:
        # The server named is the engine to judge by: put it first.
        known = load_engines()
        chosen = [known[server.engine]] + [e for e in chosen if e.name != server.engine]
    simulated = configured(chosen, server)
    if block_size is not None:  # `--block-size` wins over what the server's settings say
        simulated[0] = simulated[0].with_block(block_size)
    capacity = cache_tokens or (server.capacity_tokens if server else None)
    observations = LogObservations(simulated[0], chosen[0])
    writer = None
    if export_trace is not None:
        from prefixlint.explain.trace_export import TraceExportError, TraceWriter

        try:
            writer = TraceWriter(export_trace, simulated[0], trace_salt)
        except TraceExportError as exc:
            raise ExplainError(str(exc)) from exc
    try:
        report = explain_log(
            log,
            renderer,
            loaded,
            simulated,
            capacity=capacity,
            top=top,
            what_ifs=what_if,
            interval=interval,
            reading=Reading(limits, log_format=log_format),
            observations=observations,
            replicas=replicas,
            routing=routing,
            workers=workers,
            curve=capacity_curve,
            export=writer,
            dask=dask,
        )
    except (LogLimitError, DaskError) as exc:
        raise ExplainError(str(exc)) from exc
    except RenderWorkerDied as exc:  # its message does not name the log
        raise ExplainError(f"{', '.join(logs)}: {exc}") from exc
    finally:
        if writer is not None:
            writer.close()
    unread = nothing_read(", ".join(logs), report)
    if unread is not None:
        raise ExplainError(unread)
    extra = findings(
        observations, report.engines, report.primary, server=server, metrics=scrape, prefill_rate=prefill_rate
    )
    rate = extra.ttft["prefill_tokens_per_s"]
    for cause in report.causes:
        cause.ttft_ms_saved_per_request = _saved_ms(cause, report, rate)
    data: dict[str, Any] = report.to_json()
    data["tokenizer"] = loaded.name
    data["template"] = renderer.template.path if observations.chat_requests else None
    data["template_variables"] = template_vars
    data["observed"] = extra.observed
    data["ttft"] = extra.ttft
    data["server"] = extra.server
    data["causes"] = sorted(
        [c.to_json(report.primary) for c in extra.causes] + data["causes"], key=lambda c: -c["tokens_lost"]
    )
    if html_path:
        from prefixlint.explain.html import render_html

        Path(html_path).write_text(render_html(data, report.representative, report.primary), encoding="utf-8")
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    from prefixlint.explain.observed import findings_text

    head, tail = findings_text(extra, data)
    return head + log_text(report) + tail


def _explain_trace(
    path: str,
    engines: list[Engine],
    block_size: int | None,
    capacity: int | None,
    replicas: int | None,
    routing: str,
    curve: bool,
    limits: LogLimits,
    fmt: str,
    html_path: str | None,
    dask: str | None,
) -> str:
    """`explain --trace`: the trace replayed; the fields a log's report has that a trace cannot
    fill are null, never missing."""
    from prefixlint.explain.dask_stage import DaskError
    from prefixlint.explain.log_report import log_text, nothing_read
    from prefixlint.explain.trace_replay import explain_trace

    size = block_size or engines[0].block_size
    if block_size is not None:
        engines = [engines[0].with_block(block_size), *engines[1:]]
    try:
        report = explain_trace(
            path,
            engines,
            block_size=size,
            capacity=capacity,
            replicas=replicas,
            routing=routing,
            curve=curve,
            reading=Reading(limits),
            dask=dask,
        )
    except (LogLimitError, DaskError) as exc:
        raise ExplainError(str(exc)) from exc
    unread = nothing_read(path, report)
    if unread is not None:
        raise ExplainError(unread)
    data: dict[str, Any] = report.to_json()
    data.update(tokenizer=None, template=None, template_variables={}, server=None)
    data["observed"] = {"hit_rate": None}
    data["ttft"] = {"prefill_tokens_per_s": None, "recomputed_ms_per_request": None}
    if html_path:
        from prefixlint.explain.html import render_html

        Path(html_path).write_text(render_html(data, report.representative, report.primary), encoding="utf-8")
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return f"trace: {path}; blocks of {size} tokens\n" + log_text(report)


HEAD_LINES = 2000  # lines of a log read for a server's start-up lines


def _log_head(path: str, limits: LogLimits) -> list[str]:
    """The text lines (not JSON records) among the first HEAD_LINES of the log: where a server's own
    log states its settings. None from a pipe: it can be read once, and the log's reading copies it
    first (explain/stream.py `spooled`), so its start-up lines are not looked for."""
    import os
    import stat
    from itertools import islice

    from prefixlint.explain.reading import LogFile

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return []
    except OSError:
        return []  # not there: the log's own reading reports it
    try:
        with LogFile(path, Reading(limits)) as log:
            return [
                line.decode("utf-8", "replace")
                for _, line in islice(log.lines(), HEAD_LINES)
                if isinstance(line, bytes) and not line.lstrip().startswith((b"{", b"["))
            ]
    except LogLimitError:
        return []  # the log's own reading reports it


def _warn_unread(template_vars: dict[str, Any], reads: list[list[str] | None]) -> None:
    """A warning on stderr for each `--var` the template does not read (a misspelt name)."""
    if not template_vars or any(r is None for r in reads):
        return
    import sys

    from prefixlint.jinja.template import unread_variables

    for warning in unread_variables(list(template_vars), [r for r in reads if r is not None]):
        sys.stderr.write(f"prefixlint: warning: {warning}\n")


def _saved_ms(cause: Any, report: Any, rate: float | None) -> float | None:
    """TTFT per request that moving the cause's span saves, at `rate` prefill tokens per second."""
    after = cause.what_if.get(report.primary)
    if rate is None or after is None or not report.requests:
        return None
    before = float(report.engines[report.primary]["hit_rate"])
    from prefixlint.explain.observed import prefill_ms

    return round(prefill_ms(max(after - before, 0.0) * report.tokens / report.requests, rate), 1)
