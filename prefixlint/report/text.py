"""Text reporters: one line per finding (`path:line:col: CODE [*] name: message [severity]`, `[*]`
where `--fix` would fix it, as ruff marks them) with a `help:` line under it, or a full view with
the source line, a caret, the two diverging contexts and the fix as a diff."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prefixlint.core.findings import Diagnostic, Fix, SourceResult
from prefixlint.core.words import counted

if TYPE_CHECKING:
    from prefixlint.run.check import Report


def concise_line(d: Diagnostic, unsafe_fixes: bool = False) -> str:
    """`path:line:col: CODE [*] name: message [severity]`; `[*]` when `--fix` (with
    `--unsafe-fixes` as given) would fix it."""
    from prefixlint.fixes.autofix import applicable

    marker = "[*] " if applicable(d.fix, unsafe_fixes) else ""
    where = f"{d.span.path}:{d.span.line}:{d.span.column}"
    return f"{where}: {d.code} {marker}{d.name}: {d.message} [{d.severity.label}]"


def help_text(d: Diagnostic, unsafe_fixes: bool = False) -> str:
    """What to do about a finding: its fix (saying when it takes `--unsafe-fixes`), else its hint."""
    if d.fix is not None:
        if d.fix.applicability == "unsafe" and not unsafe_fixes:
            return f"{d.fix.message} (unsafe fix: `--fix --unsafe-fixes` applies it)"
        return f"{d.fix.message} (`--fix` applies it)"
    return d.hint


def _fixable_counts(report: Report) -> tuple[int, int]:
    """(fixes `--fix` applies as the run is set, unsafe ones it leaves for `--unsafe-fixes`)."""
    from prefixlint.fixes.autofix import applicable

    diagnostics = report.diagnostics
    now = sum(applicable(d.fix, report.unsafe_fixes) for d in diagnostics)
    hidden = sum(d.fix is not None and not applicable(d.fix, report.unsafe_fixes) for d in diagnostics)
    return now, hidden


def render_fix_summary(report: Report, show_fixes: bool) -> str:
    """What `--fix` wrote (`Fixed N findings.`, listed per file with `show_fixes`), or, without
    it, what it would fix: ruff's `[*] N fixable with the --fix option` line."""
    lines = []
    if report.fixed:
        lines.append(f"Fixed {counted(len(report.fixed), 'finding')}.")
        if show_fixes:
            for path in dict.fromkeys(a.path for a in report.fixed):
                lines.append(f"- {path}:")
                lines += [
                    f"    {a.line}:{a.column} {a.code} {a.name} ({a.applicability}): {a.message}"
                    for a in report.fixed
                    if a.path == path
                ]
    elif show_fixes:
        from prefixlint.fixes.autofix import applicable

        listed = [d for d in report.diagnostics if d.fix is not None]
        if listed:
            lines.append("Fixes:")
        for d in listed:
            how = "--fix" if applicable(d.fix, report.unsafe_fixes) else "--fix --unsafe-fixes"
            lines.append(f"- {d.span.path}:{d.span.line}:{d.span.column} {d.code} ({how}): {d.fix.message}")
    now, hidden = _fixable_counts(report)
    if now or hidden:
        parts = [f"[*] {now} fixable with `--fix`"] if now else []
        if hidden:
            parts.append(
                f"{hidden} more with `--fix --unsafe-fixes`"
                if now
                else f"{hidden} fixable with `--fix --unsafe-fixes`"
            )
        lines.append(" (".join(parts) + (")" if now and hidden else "") + ".")
    return "".join(line + "\n" for line in lines)


def _summary(report: Report) -> str:
    diagnostics = report.diagnostics
    # A GGUF's templates are sources of one file (`model.gguf[chat_template]`, `[…tool_use]`).
    paths = {_file_of(s) for s in report.sources}
    skipped = len({_file_of(s) for s in report.sources if s.kind == "not_prompt"})
    if skipped:  # documentation, web pages, scaffolding: prefixlint/jinja/classify.py
        files = (
            f"{counted(len(paths) - skipped, 'file')}; {skipped:,} skipped as not prompts (see --show-files)"
        )
    else:
        files = counted(len(paths), "file")
    tokenizer = _tokenizers_used(report)
    if not diagnostics:
        return f"No findings in {files} ({tokenizer})."
    counts: dict[str, int] = {}
    for d in diagnostics:
        counts[d.severity.label] = counts.get(d.severity.label, 0) + 1
    parts = ", ".join(
        counted(n, label, "info" if label == "info" else None) for label, n in sorted(counts.items())
    )
    return f"Found {counted(len(diagnostics), 'finding')} in {files}: {parts} ({tokenizer})."


def _file_of(source: SourceResult) -> str:
    """The file a result comes from: `model.gguf[chat_template]` is a template of `model.gguf`."""
    if source.kind == "gguf" and source.path.endswith("]"):
        return source.path.rsplit("[", 1)[0]
    return source.path


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


def render_concise(report: Report, quiet: bool = False, show_fixes: bool = False) -> str:
    lines = []
    for d in report.diagnostics:
        lines.append(concise_line(d, report.unsafe_fixes))
        help_line = help_text(d, report.unsafe_fixes)
        if help_line:
            lines.append(f"  help: {help_line}")
    if not quiet:
        lines.append(_summary(report))
    return "".join(line + "\n" for line in lines) + ("" if quiet else render_fix_summary(report, show_fixes))


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
        from prefixlint.core.rules import RULES

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


def render_full(report: Report, quiet: bool = False, show_fixes: bool = False) -> str:
    out: list[str] = []
    for d in report.diagnostics:
        out.append(concise_line(d, report.unsafe_fixes))
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
        help_line = help_text(d, report.unsafe_fixes)
        if help_line:
            out.append(f"      help: {help_line}")
        if d.fix is not None:
            out += ["      " + line for line in fix_diff(d.fix)]
        out.append("")
    if quiet:
        return "".join(line + "\n" for line in out)
    out.append(_summary(report))
    return "\n".join(out) + "\n" + render_fix_summary(report, show_fixes)


DIFF_LINE_CHARS = 200  # a tokenizer_config.json holds its whole template on one line


def fix_diff(fix: Fix) -> list[str]:
    """A fix as a unified diff of the file it edits (one line of context), as ruff shows one."""
    import difflib

    from prefixlint.core.edits import EditError, apply_edits
    from prefixlint.fixes.autofix import read_source

    out = []
    for path in dict.fromkeys(e.path for e in fix.edits):
        try:
            before = read_source(path)[0]
            after = apply_edits(before, [e for e in fix.edits if e.path == path])
        except (OSError, ValueError, EditError):
            continue  # the file changed since it was analysed: the help line still says the fix
        diff = difflib.unified_diff(
            before.splitlines(), after.splitlines(), path, f"{path} (fixed)", n=1, lineterm=""
        )
        for line in diff:
            out.append(line if len(line) <= DIFF_LINE_CHARS else line[: DIFF_LINE_CHARS - 1] + "…")
    return out
