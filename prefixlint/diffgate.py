"""The CI gate on changes: `prefixlint diff REF` (or `check --diff REF`).

Each template under the paths is analysed twice, as it is in the working tree and as it was at
git REF (its blob read with `git show REF:path`; nothing is checked out), with the same tokenizer,
options and suppressions. A template fails the gate when

- its cacheable prefix shrinks by more than `max_prefix_loss` tokens (default: when it loses a
  whole vLLM block, the unit vLLM caches),
- it gains findings at or above the failing severity (counted per rule code, so findings that
  only moved to another line are not new), or
- its static prefix changes: the canonical request renders to tokens that differ from the old
  ones inside the old cacheable prefix, so the first requests after deploy find a cold cache.
  That is a warning (it fails only with the failing severity at warning or below, the default),
  with the number of tokens that will be computed once again.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.model import Diagnostic, Severity, SourceResult
from prefixlint.sources import Source

if TYPE_CHECKING:
    from prefixlint.api import Options

TEMPLATE_KINDS = ("jinja", "tokenizer_config")


class DiffError(Exception):
    """Not a git work tree, or REF does not name a commit."""


@dataclass
class TemplateChange:
    path: str
    name: str
    before: int | None  # cacheable prefix tokens at REF; None: the template is new
    after: int | None
    added: list[Diagnostic] = field(default_factory=list)
    static_changed_at: int | None = None  # first token where the canonical render differs
    recomputed: int = 0  # tokens computed once after deploy
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.path} [{self.name}]" if self.name else self.path

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "name": self.name,
            "cacheable_prefix_tokens_before": self.before,
            "cacheable_prefix_tokens_after": self.after,
            "added": [d.to_json() for d in self.added],
            "static_prefix_changed_at": self.static_changed_at,
            "recomputed_tokens": self.recomputed,
            "failures": self.failures,
            "warnings": self.warnings,
        }


@dataclass
class DiffResult:
    ref: str
    changes: list[TemplateChange]
    fail_on: Severity

    @property
    def failed(self) -> bool:
        warn_fails = self.fail_on <= Severity.WARNING
        return any(c.failures or (warn_fails and c.warnings) for c in self.changes)


def _git(args: list[str], cwd: Path) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except OSError as exc:
        raise DiffError(f"cannot run git: {exc}") from exc
    if done.returncode != 0:
        raise DiffError(done.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed")
    return done.stdout


def _blob(ref: str, top: Path, path: str) -> str | None:
    """The file's text at `ref`, or None if it did not exist there (or is not text)."""
    rel = Path(path).resolve().relative_to(top).as_posix()
    try:
        data = _git(["show", f"{ref}:{rel}"], top)
    except DiffError:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _canonical_ids(source: Source, text: str, name: str, options: Options) -> list[int] | None:
    """The token ids of one fixed request (system prompt, one user turn, fixed clock)."""
    from prefixlint.api import special_tokens_for, tokenizer_for
    from prefixlint.jinja.inputs import USER_TURNS, conversation
    from prefixlint.jinja.template import ChatTemplate
    from prefixlint.sources import ConfigError, templates_in_tokenizer_config
    from prefixlint.tokens import read_special_tokens

    tokenizer = tokenizer_for(source.path, options)
    special = special_tokens_for(source.path, tokenizer)
    if source.kind == "tokenizer_config":
        try:
            named = templates_in_tokenizer_config(text)
        except ConfigError:
            return None
        chosen = [t for t in named if len(named) == 1 or t.name == name]
        if not chosen:
            return None
        text = chosen[0].source
        special = read_special_tokens(Path(source.path)) or special
    messages = conversation(USER_TURNS[0], system=True)
    try:
        template = ChatTemplate(text, source.path, special_tokens=special, limits=options.limits)
        template.supply_required_variables(messages, None)
        rendered = template.render(messages)
    except Exception:  # a template that does not render has no static prefix to compare
        return None
    return list(tokenizer.encode(rendered.text).ids)


def _analyse(source: Source, text: str | None, options: Options, enabled: set[str]) -> list[SourceResult]:
    from prefixlint.api import _filter, _lint_source

    results = _lint_source(source, options, text)
    _filter(source, results, options, enabled, text)
    return results


def _compare(
    change: TemplateChange,
    old: SourceResult | None,
    new: SourceResult,
    max_prefix_loss: int | None,
    fail_on: Severity,
) -> None:
    from prefixlint.engines import load_engines

    old_codes = Counter(d.code for d in old.diagnostics) if old is not None else Counter()
    extra = Counter(d.code for d in new.diagnostics) - old_codes
    for d in new.diagnostics:
        if extra[d.code] > 0:
            extra[d.code] -= 1
            change.added.append(d)
    for d in change.added:
        if d.severity >= fail_on:
            change.failures.append(f"new finding {d.code} {d.name} at line {d.span.line}: {d.message}")
    before, after = change.before, change.after
    if before is None or after is None or after >= before:
        return
    if max_prefix_loss is not None:
        if before - after > max_prefix_loss:
            change.failures.append(
                f"cacheable prefix shrank by {before - after:,} tokens (limit {max_prefix_loss:,})"
            )
    else:
        block = load_engines()["vllm"].block_size
        lost = before // block - after // block
        if lost > 0:
            change.failures.append(
                f"cacheable prefix shrank by {before - after:,} tokens ({lost:,} vLLM block(s) of {block})"
            )


def diff_gate(
    ref: str,
    paths: list[str],
    options: Options,
    max_prefix_loss: int | None = None,
    fail_on: Severity = Severity.WARNING,
) -> DiffResult:
    """Compare each template under `paths` with its version at git `ref`."""
    from prefixlint.api import iter_sources, read_text
    from prefixlint.tokens import common_prefix_len

    anchor = Path(paths[0] if paths else ".").resolve()
    top = Path(
        _git(["rev-parse", "--show-toplevel"], anchor if anchor.is_dir() else anchor.parent).decode().strip()
    )
    _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
    enabled = options.enabled_codes()
    changes = []
    for source in iter_sources(paths, options):
        if source.kind not in TEMPLATE_KINDS:
            continue
        old_text = _blob(ref, top, source.path)
        new_results = _analyse(source, None, options, enabled)
        old_results = _analyse(source, old_text, options, enabled) if old_text is not None else []
        old_by_name = {r.name: r for r in old_results}
        try:
            new_text = read_text(source.path, options.limits.file_bytes)
        except (OSError, ValueError):
            new_text = None
        for new in new_results:
            if new.kind == "not_prompt":
                continue  # documentation, a web page, scaffolding: no prefix to gate
            old = old_by_name.get(new.name)
            change = TemplateChange(
                source.path,
                new.name,
                old.cacheable_prefix_tokens if old is not None else None,
                new.cacheable_prefix_tokens,
            )
            _compare(change, old, new, max_prefix_loss, fail_on)
            if old is not None and old_text and new_text and old_text != new_text and change.before:
                old_ids = _canonical_ids(source, old_text, new.name, options)
                new_ids = _canonical_ids(source, new_text, new.name, options)
                if old_ids is not None and new_ids is not None:
                    common = common_prefix_len(old_ids, new_ids)
                    if common < min(change.before, len(old_ids)):
                        change.static_changed_at = common
                        change.recomputed = max((change.after or 0) - common, 0)
                        change.warnings.append(
                            f"static prefix changed at token {common:,}: after deploy, {change.recomputed:,} "
                            "token(s) of the prefix are computed once again (cold cache)"
                        )
            changes.append(change)
    return DiffResult(ref, changes, fail_on)


def _tokens(n: int | None) -> str:
    return "new" if n is None else "?" if n < 0 else f"{n:,}"


def render_diff(result: DiffResult, fmt: str = "text") -> str:
    if fmt == "json":
        document = {
            "version": 1,
            "ref": result.ref,
            "failed": result.failed,
            "templates": [c.to_json() for c in result.changes],
        }
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    warn_fails = result.fail_on <= Severity.WARNING
    lines = []
    failing = 0
    for c in result.changes:
        bad = bool(c.failures or (warn_fails and c.warnings))
        failing += bad
        before, after = c.before, c.after
        delta = "" if before is None or after is None else f" ({after - before:+,})"
        status = "FAIL" if bad else "ok"
        lines.append(
            f"{c.label}: cacheable prefix {_tokens(before)} -> {_tokens(after)} tokens{delta}  {status}"
        )
        lines.extend(f"    error: {f}" for f in c.failures)
        lines.extend(f"    warning: {w}" for w in c.warnings)
    verdict = (
        f"{failing} of {len(result.changes)} template(s) fail the gate" if failing else "the gate passes"
    )
    lines.append(f"Compared {len(result.changes)} template(s) with {result.ref}: {verdict}.")
    return "\n".join(lines) + "\n"
