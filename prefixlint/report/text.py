"""Text reporters: one line per finding (`path:line:col: CODE name: message`), or a full view with
the source line, a caret, and the two diverging contexts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prefixlint.model import Diagnostic

if TYPE_CHECKING:
    from prefixlint.api import Report


def concise_line(d: Diagnostic) -> str:
    return f"{d.span.path}:{d.span.line}:{d.span.column}: {d.code} {d.name}: {d.message}"


def _summary(report: Report) -> str:
    diagnostics = report.diagnostics
    files = len({s.path for s in report.sources})
    skipped = len({s.path for s in report.sources if s.kind == "not_prompt"})
    if skipped:  # documentation, web pages, scaffolding: prefixlint/jinja/classify.py
        files = f"{files - skipped} file(s); {skipped} skipped as not prompts (see --show-files)"
    else:
        files = f"{files} file(s)"
    tokenizer = _tokenizers_used(report)
    if not diagnostics:
        return f"No findings in {files} ({tokenizer})."
    counts: dict[str, int] = {}
    for d in diagnostics:
        counts[d.severity.label] = counts.get(d.severity.label, 0) + 1
    parts = ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))
    return f"Found {len(diagnostics)} finding(s) in {files}: {parts} ({tokenizer})."


def _tokenizers_used(report: Report) -> str:
    """The tokenizers the sources were analysed with (not the policy that picks them), most used
    first; when no source names one, the run's if a Python source may have counted tokens with it
    (it does not name it), else none."""
    from collections import Counter

    used = Counter(s.tokenizer for s in report.sources if s.tokenizer)
    if not used:
        python = any(s.kind == "python" for s in report.sources)
        return f"tokenizer: {report.tokenizer}" if python else "no tokenizer used"
    names = [name for name, _ in sorted(used.items(), key=lambda item: (-item[1], item[0]))]
    return ("tokenizer: " if len(names) == 1 else "tokenizers: ") + ", ".join(names)


def render_concise(report: Report, quiet: bool = False) -> str:
    lines = [concise_line(d) for d in report.diagnostics]
    if not quiet:
        lines.append(_summary(report))
    return "".join(line + "\n" for line in lines)


def render_statistics(report: Report, as_json: bool = False, quiet: bool = False) -> str:
    """How many findings of each rule code, most frequent first (ruff's `--statistics`): a line
    `COUNT<TAB>CODE<TAB>name<TAB>severity` each, or a JSON list of {code, name, severity, count}."""
    import json
    from collections import Counter

    diagnostics = report.diagnostics
    counts = Counter(d.code for d in diagnostics)
    worst = {}
    for d in diagnostics:
        worst[d.code] = max(worst.get(d.code, d.severity), d.severity)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if as_json:
        from prefixlint.rules import RULES

        items = [
            {"code": code, "name": RULES[code].name, "count": n, "severity": worst[code].label}
            for code, n in rows
        ]
        return json.dumps(items, indent=2) + "\n"
    names = {d.code: d.name for d in diagnostics}
    lines = [f"{n:>5}\t{code}\t{names[code]}\t{worst[code].label}" for code, n in rows]
    if not quiet:
        lines.append(_summary(report))
    return "".join(line + "\n" for line in lines)


def _source_line(path: str, line: int) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return lines[line - 1] if 0 < line <= len(lines) else ""


def render_full(report: Report, quiet: bool = False) -> str:
    out: list[str] = []
    for d in report.diagnostics:
        out.append(f"{concise_line(d)} [{d.severity.label}]")
        text = _source_line(d.span.path, d.span.line)
        if text and len(text) < 400:
            gutter = f"{d.span.line:>5} | "
            out.append(gutter + text)
            out.append(" " * (len(gutter) + d.span.column - 1) + "^")
        ev = d.evidence
        if ev is not None:
            out.append(
                f"      first divergent token: {ev.token_index:,} (char {ev.char_offset:,}); "
                f"static tokens lost: {ev.static_tokens_lost:,}; reply tokens lost: {ev.reply_tokens_lost:,}"
            )
            out.append(f"      a: {ev.context_a!r}")
            out.append(f"      b: {ev.context_b!r}")
            if ev.engines:
                out.append(
                    "      cacheable: " + ", ".join(f"{k} {v:,}" for k, v in sorted(ev.engines.items()))
                )
            if ev.engines_lost:
                out.append(
                    "      lost per engine: "
                    + ", ".join(f"{k} {v:,}" for k, v in sorted(ev.engines_lost.items()))
                )
            if ev.inputs:
                out.append(f"      inputs: {ev.inputs}")
        if d.hint:
            out.append(f"      hint: {d.hint}")
        out.append("")
    if quiet:
        return "".join(line + "\n" for line in out)
    out.append(_summary(report))
    return "\n".join(out) + "\n"
