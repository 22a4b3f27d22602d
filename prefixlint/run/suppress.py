"""Inline suppressions, and PFX004 for the ones that suppress nothing.

- Jinja: `{# prefixlint: ignore[PFX101] #}` (or `{# noqa: PFX101 #}`) on the finding's line, or
  alone on the line above it; `{# prefixlint: ignore-file[PFX101] #}` anywhere for the whole file.
- Python: `# prefixlint: ignore[PFX101]` on the line or alone on the line above, `# noqa: PFX101`
  on the line (flake8's form, so ruff with `external = ["PFX"]` leaves it alone), and
  `# prefixlint: ignore-file[PFX101]`.
- tokenizer_config.json: findings point at the `chat_template` key, not at template lines, so a
  directive inside an embedded template covers that whole file.

Codes are prefix selectors (`PFX1` covers PFX101); no codes means every code. A bare `# noqa` or
a `noqa` naming only other tools' codes is never reported as unused: it may be theirs.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from prefixlint.core.findings import Diagnostic, Severity, Span
from prefixlint.core.rules import resolve_selector

UNUSED_CODE = "PFX004"

_DIRECTIVE = re.compile(
    r"(?P<kind>prefixlint:\s*ignore(?P<file>-file)?(?:\[(?P<codes>[^\]]*)\])?"
    r"|noqa(?::\s*(?P<noqa>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?)",
    re.IGNORECASE,
)
_JINJA_COMMENT = re.compile(r"\{#(.*?)#\}", re.DOTALL)


@dataclass
class Directive:
    line: int
    column: int
    codes: tuple[str, ...]  # upper-case selectors; empty: every code
    file_level: bool
    standalone: bool  # alone on its line: it also covers the next line
    ours: bool  # only ours are reported when unused (a bare noqa may belong to another tool)
    used: set[str] = field(default_factory=set)

    def covers(self, code: str) -> bool:
        return not self.codes or any(code.startswith(c) for c in self.codes)

    def applies_to(self, line: int) -> bool:
        return self.file_level or line == self.line or (self.standalone and line == self.line + 1)


def _directives_in(comment: str, line: int, column: int, standalone: bool) -> list[Directive]:
    out = []
    for m in _DIRECTIVE.finditer(comment):
        if m.group("kind").lower().startswith("noqa"):
            before = comment[: m.start()].rstrip()
            if before and not before.endswith("#"):
                continue  # `noqa` must open a comment (flake8); elsewhere it is prose
            codes = tuple(re.split(r"[\s,]+", m.group("noqa").upper())) if m.group("noqa") else ()
            ours = tuple(c for c in codes if c.startswith("PFX"))
            if codes and not ours:
                continue  # another tool's noqa
            out.append(Directive(line, column, ours, False, standalone, ours=bool(ours)))
        else:
            codes = tuple(c.strip().upper() for c in (m.group("codes") or "").split(",") if c.strip())
            out.append(Directive(line, column, codes, bool(m.group("file")), standalone, ours=True))
    return out


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def jinja_directives(text: str) -> list[Directive]:
    out = []
    for m in _JINJA_COMMENT.finditer(text):
        line, column = _line_col(text, m.start())
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        rest = text[line_start : m.start()] + text[m.end() : len(text) if line_end < 0 else line_end]
        end_line = line + m.group(0).count("\n")
        standalone = not rest.strip()
        for d in _directives_in(
            m.group(1).strip("-+ \t\n"), end_line if standalone else line, column, standalone
        ):
            out.append(d)
    return out


def python_directives(text: str) -> list[Directive]:
    comments: list[tuple[int, int, str, bool]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                standalone = not tok.line[: tok.start[1]].strip()
                comments.append((tok.start[0], tok.start[1] + 1, tok.string, standalone))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # A file that does not tokenize: fall back to `#` on each line (good enough for PFX003).
        for i, line in enumerate(text.splitlines(), 1):
            at = line.find("#")
            if at >= 0:
                comments.append((i, at + 1, line[at:], not line[:at].strip()))
    out = []
    for line, column, comment, standalone in comments:
        out.extend(_directives_in(comment.lstrip("#").strip(), line, column, standalone))
    return out


def directives_for(kind: str, text: str) -> list[Directive]:
    lowered = text.lower()  # a substring test is ~20x faster than the directive pattern's search
    if "prefixlint" not in lowered and "noqa" not in lowered:
        return []  # no directive anywhere: skip tokenizing (most of a warm, all-cached run)
    found = python_directives(text) if kind == "python" else jinja_directives(text)
    if kind == "tokenizer_config":
        for d in found:
            d.file_level = True
    return found


def suppress(diagnostics: list[Diagnostic], directives: list[Directive]) -> list[Diagnostic]:
    """The diagnostics no directive covers; marks each directive with the codes it covered."""
    kept = []
    for d in diagnostics:
        hits = [s for s in directives if s.applies_to(d.span.line) and s.covers(d.code)]
        for s in hits:
            s.used.add(d.code)
        if not hits:
            kept.append(d)
    return kept


def unused_suppressions(
    directives: list[Directive], path: str, not_analysed: tuple[str, ...] = ()
) -> list[Diagnostic]:
    """PFX004 for each directive of ours that covered nothing (call after `suppress` on every
    result of the file). Codes starting with `not_analysed` (an analysis that was switched off)
    are never called unused."""
    out = []
    for s in directives:
        if not s.ours:
            continue
        unknown = [c for c in s.codes if not resolve_selector(c)]
        idle = [
            c
            for c in s.codes
            if resolve_selector(c)
            and not c.startswith(not_analysed)
            and not any(u.startswith(c) for u in s.used)
        ]
        scope = "file-level suppression" if s.file_level else "suppression"
        if unknown:
            message = f"{scope} names unknown rule code(s) {', '.join(unknown)}"
        elif idle or (not s.codes and not s.used):
            message = f"{scope} of {', '.join(idle) if idle else 'every rule'} suppresses nothing; remove it"
        else:
            continue
        out.append(Diagnostic(UNUSED_CODE, Span(path, s.line, s.column), message, Severity.WARNING))
    return out
