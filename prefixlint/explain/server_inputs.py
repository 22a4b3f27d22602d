"""Bounded readers for what `explain` learns about the server: a Prometheus text scrape (`--metrics`)
and a server command line (`--server-args`). Any bytes give a result or an `InputError` that names
the input and the limit; a bad line of a scrape is a counted skip. What the values mean (caching on
or off, block size, hit counters) is explain/server.py's; this module only reads them safely."""

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


def split_command(text: str, name: str = "--server-args") -> list[str]:
    """A command line split as a POSIX shell does (never run); InputError for what no shell would
    split (an unclosed quote, a NUL) or one over the limits."""
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
    return tokens
