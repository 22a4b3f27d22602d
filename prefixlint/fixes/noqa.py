"""`check --add-noqa`: write a suppression for every current finding (how a team adopts prefixlint on
an old tree), in the syntax prefixlint/run/suppress.py reads, without changing what the source does.

- A template gets `{# prefixlint: ignore[PFX101] #}` alone on a new line above the finding's line
  (trim_blocks and lstrip_blocks make that line render nothing; `{#-` when the finding's line opens
  with a tag that strips the whitespace before it). The base request is rendered before and after:
  when the comment would change it (a line inside `{% raw %}` or a multi-line tag), the file gets
  one `{# prefixlint: ignore-file[...] #}` at its top instead.
- Python gets `# noqa: PFX101` at the end of the line (added to a `# noqa:` already there); a line
  that ends inside a string or with a backslash gets `# prefixlint: ignore-file[...]` at the top.
- A tokenizer_config.json gets the comment at the start of its chat template string, where any
  directive covers the whole file.
- A GGUF model is never written: its findings are listed as not suppressed.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prefixlint.core.edits import edit_between, offset_of
from prefixlint.core.findings import Diagnostic, Edit
from prefixlint.fixes.autofix import read_source, write_source
from prefixlint.run.sources import source_kind
from prefixlint.run.suppress import UNUSED_CODE

if TYPE_CHECKING:
    from prefixlint.plan import TemplatePart


@dataclass
class NoqaResult:
    added: int = 0  # suppression comments written
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path:line: CODE: why", for what was not written


def _codes(findings: list[Diagnostic]) -> str:
    return ", ".join(sorted({d.code for d in findings}))


def _template_edits(path: str, text: str, by_line: dict[int, list[Diagnostic]]) -> list[Edit]:
    lines = text.split("\n")
    edits = []
    for line, findings in by_line.items():
        body = lines[line - 1].lstrip() if line <= len(lines) else ""
        strip = "-" if re.match(r"\{[%{#]-", body) else ""
        comment = f"{{#{strip} prefixlint: ignore[{_codes(findings)}] #}}\n"
        at = offset_of(text, line, 1)
        edits.append(edit_between(path, text, at, at, comment))
    return edits


def _same_render(before: str, after: str, path: str, part: TemplatePart) -> bool:
    """Whether two template sources render the base request alike (both failing counts as alike)."""
    from prefixlint.jinja.inputs import USER_TURNS, conversation
    from prefixlint.jinja.template import ChatTemplate

    def render(source: str) -> str | None:
        template = ChatTemplate(source, path, limits=part.limits)
        template.extra_kwargs.update(part.template_vars)
        messages = conversation(USER_TURNS[0], system=True)
        template.supply_required_variables(messages, None)
        try:
            return template.render(messages).text
        except Exception:  # an untrusted template's error: compared, not raised
            return None

    return render(before) == render(after)


def _python_edits(path: str, text: str, by_line: dict[int, list[Diagnostic]]) -> list[Edit] | None:
    """`# noqa: CODES` at the end of each line; None when a line cannot take one (it ends inside a
    string or with a backslash)."""
    lines = text.split("\n")
    inside: set[int] = set()  # lines whose end is inside a token (a multi-line string)
    comments: dict[int, tokenize.TokenInfo] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            inside.update(range(tok.start[0], tok.end[0]))
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = tok
    except (tokenize.TokenError, SyntaxError):
        return None
    edits = []
    for line, findings in by_line.items():
        content = lines[line - 1] if line <= len(lines) else ""
        if line in inside or content.rstrip().endswith("\\"):
            return None
        codes = _codes(findings)
        comment = comments.get(line)
        existing = (
            re.search(r"noqa:\s*[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*", comment.string) if comment else None
        )
        if comment is not None and existing is not None:
            at = offset_of(text, line, comment.start[1] + 1) + existing.end()
            edits.append(edit_between(path, text, at, at, f", {codes}"))
        else:
            end = len(content.rstrip())
            at = offset_of(text, line, end + 1)
            edits.append(edit_between(path, text, at, at, f"  # noqa: {codes}"))
    return edits


def _file_level(path: str, text: str, kind: str, findings: list[Diagnostic]) -> Edit:
    codes = _codes(findings)
    if kind == "python":
        lines = text.split("\n")
        first = 0  # after a shebang and an encoding line
        while first < min(2, len(lines)) and (lines[first].startswith("#!") or "coding" in lines[first]):
            first += 1
        at = offset_of(text, first + 1, 1)
        return edit_between(path, text, at, at, f"# prefixlint: ignore-file[{codes}]\n")
    return edit_between(path, text, 0, 0, f"{{# prefixlint: ignore-file[{codes}] #}}\n")


def _config_edit(path: str, text: str, findings: list[Diagnostic]) -> Edit | None:
    from prefixlint.run.sources import ConfigError, template_literals

    try:
        literals = template_literals(text)
    except ConfigError:
        return None
    if not literals:
        return None
    at = literals[0].start + 1  # after the opening quote: no character there needs escaping
    return edit_between(path, text, at, at, f"{{# prefixlint: ignore[{_codes(findings)}] #}}")


def add_noqa(findings: list[Diagnostic], part: TemplatePart) -> NoqaResult:
    """Write a suppression for each of `findings` (PFX004, an unused suppression, is left alone);
    a template's comment is written only where the template, rendered with the run's template
    part, renders the same."""
    from prefixlint.core.edits import apply_edits

    result = NoqaResult()
    by_path: dict[str, list[Diagnostic]] = {}
    for d in findings:
        if d.code != UNUSED_CODE:
            by_path.setdefault(d.span.path, []).append(d)
    for path, found in by_path.items():
        kind = source_kind(path)
        if kind not in ("jinja", "tokenizer_config", "python"):
            result.skipped += [
                f"{d.span.path}:{d.span.line}: {d.code}: not a file prefixlint writes" for d in found
            ]
            continue
        try:
            text, bom = read_source(path)
        except (OSError, ValueError) as exc:
            result.skipped += [f"{path}:{d.span.line}: {d.code}: cannot read ({exc})" for d in found]
            continue
        by_line: dict[int, list[Diagnostic]] = {}
        for d in found:
            by_line.setdefault(max(d.span.line, 1), []).append(d)
        if kind == "tokenizer_config":
            edit = _config_edit(path, text, found)
            edits = [edit] if edit is not None else None
        elif kind == "python":
            edits = _python_edits(path, text, by_line)
        else:
            edits = _template_edits(path, text, by_line)
            if "\r" in text or not _same_render(text, apply_edits(text, edits), path, part):
                edits = None
        if edits is None:
            if kind == "tokenizer_config":
                result.skipped += [
                    f"{path}:{d.span.line}: {d.code}: no chat template string found" for d in found
                ]
                continue
            edits = [_file_level(path, text, kind, found)]
        write_source(path, apply_edits(text, edits), bom)
        result.added += len(edits)
        result.files.append(path)
    return result
