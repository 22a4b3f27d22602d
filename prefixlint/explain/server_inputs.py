"""Bounded readers for what `explain` learns about the server: a Prometheus text scrape (`--metrics`)
and a server command line (`--server-args`). Any bytes give a result or an `InputError` that names
the input and the limit; a bad line of a scrape is a counted skip. What the values mean (caching on
or off, block size, hit counters) is for the caller; this module only reads them safely."""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field

from prefixlint.explain.reading import Skip, Skips, size_text

METRICS_BYTES = 64_000_000  # a scrape of a large server is a few MB
METRICS_LINE_BYTES = 64_000
METRICS_SAMPLES = 1_000_000
LABELS_PER_SAMPLE = 64
ARGS_BYTES = 64_000  # a command line (Linux allows ~2 MB; real ones are under 4 kB)
ARGS_TOKENS = 4_000


class InputError(Exception):
    """An input that cannot be read as a whole (exit 2), naming it and the limit or the fault."""


@dataclass
class Metrics:
    """Samples by metric name: (labels, value) in scrape order; skipped lines counted by reason."""

    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)
    skips: Skips = field(default_factory=Skips)

    def total(self, name: str, **labels: str) -> float | None:
        """The sum of `name`'s samples whose labels include `labels` (None: no such sample)."""
        found = [
            v for lab, v in self.samples.get(name, []) if all(lab.get(k) == w for k, w in labels.items())
        ]
        return math.fsum(found) if found else None


# Possessive where a retry could only fail again: linear on any line.
_SAMPLE = re.compile(rb"([a-zA-Z_:][a-zA-Z0-9_:]*+)(?:\{(.*)\})?[ \t]++(\S++)(?:[ \t]++-?\d++)?+[ \t]*+")
_LABEL = re.compile(
    rb'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]++|\\.)*+)"[ \t]*(?:,|$)', re.DOTALL
)
_ESCAPES = {b"\\\\": "\\", b'\\"': '"', b"\\n": "\n"}


def parse_metrics(data: bytes, name: str = "<metrics>") -> Metrics:
    """A Prometheus text exposition (version 0.0.4; OpenMetrics text reads the same way)."""
    if len(data) > METRICS_BYTES:
        raise InputError(f"{name}: larger than {size_text(METRICS_BYTES)} (a Prometheus scrape is a few MB)")
    out = Metrics()
    count = 0
    for number, line in enumerate(data.split(b"\n"), 1):
        line = line.strip()
        if not line or line.startswith(b"#"):
            continue
        skip = _sample(line, out)
        if skip is not None:
            out.skips.add(number, skip)
            continue
        count += 1
        if count > METRICS_SAMPLES:
            raise InputError(f"{name}: more than {METRICS_SAMPLES:,} samples")
    return out


def _sample(line: bytes, out: Metrics) -> Skip | None:
    if len(line) > METRICS_LINE_BYTES:
        return Skip("line-too-long", f"longer than {size_text(METRICS_LINE_BYTES)}")
    found = _SAMPLE.fullmatch(line)
    if found is None:
        return Skip("not-a-sample", "not `name{labels} value`")
    metric, label_text, value_text = found.groups()
    try:
        value = float(value_text)
    except ValueError:
        return Skip(
            "not-a-sample", f"the value {value_text[:40].decode('utf-8', 'replace')!r} is not a number"
        )
    labels: dict[str, str] = {}
    if label_text:
        pos = 0
        while pos < len(label_text):
            pair = _LABEL.match(label_text, pos)
            if pair is None or pair.end() == pos:
                return Skip("not-a-sample", 'labels are not `name="value"` pairs')
            if len(labels) >= LABELS_PER_SAMPLE:
                return Skip("too-many-labels", f"more than {LABELS_PER_SAMPLE} labels")
            raw = pair.group(2)
            text = re.sub(rb"\\[\\\"n]", lambda m: _ESCAPES[m.group(0)].encode(), raw)
            labels[pair.group(1).decode()] = text.decode("utf-8", "replace")
            pos = pair.end()
    out.samples.setdefault(metric.decode(), []).append((labels, value))
    return None


@dataclass(frozen=True)
class ServerArgs:
    """A server command line: the words before the first option (`vllm serve MODEL`), the options
    in order (`--flag` → None, `--key value` or `--key=value` → the value; a key given twice keeps
    the last, as argparse does) and the engine the words name, if any. Without each engine's
    option table, `--flag WORD` reads WORD as the flag's value: pass the model before the flags."""

    words: tuple[str, ...]
    options: dict[str, str | None]
    engine: str | None


_ENGINES = {"vllm": "vllm", "sglang": "sglang", "llama-server": "llama.cpp", "server": "llama.cpp"}


def parse_server_args(text: str, name: str = "--server-args") -> ServerArgs:
    """Split a command line as a POSIX shell does (never run it); InputError for what no shell
    would split (an unclosed quote) or one over the limits."""
    if len(text.encode("utf-8", "surrogatepass")) > ARGS_BYTES:
        raise InputError(f"{name}: longer than {size_text(ARGS_BYTES)}")
    if "\x00" in text:
        raise InputError(f"{name}: holds a NUL character")
    try:
        tokens = shlex.split(text, comments=False, posix=True)
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from exc
    if len(tokens) > ARGS_TOKENS:
        raise InputError(f"{name}: more than {ARGS_TOKENS:,} words")
    words: list[str] = []
    options: dict[str, str | None] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("-") and len(token) > 1 and not _is_number(token):
            key, eq, value = token.partition("=")
            if eq:
                options[key] = value
            elif i + 1 < len(tokens) and not _is_option(tokens[i + 1]):
                options[key] = tokens[i + 1]
                i += 1
            else:
                options[key] = None
        elif not options:
            words.append(token)
        i += 1
    return ServerArgs(tuple(words), options, _engine(words, options.get("-m")))


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _is_option(token: str) -> bool:
    return token.startswith("-") and len(token) > 1 and not _is_number(token)


def _engine(words: list[str], module: str | None) -> str | None:
    """`vllm serve`, `sglang …`, `llama-server`, or `python -m vllm.…` / `python -m sglang.…`."""
    if module and module.startswith(("vllm.", "sglang.")):
        return module.split(".", 1)[0]
    for word in words[:4]:
        base = word.rsplit("/", 1)[-1]
        if base in _ENGINES:
            return _ENGINES[base]
    return None
