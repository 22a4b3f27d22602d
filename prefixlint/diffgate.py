"""The CI gate on changes: `prefixlint diff REF` (or `check --diff REF`).

Each source under the paths (templates, tokenizer_config.json chat templates, Python prompt code)
is analysed twice, as it is in the working tree and as it was at git REF (its blob read with
`git show REF:path`, from its old path when git sees a rename; nothing is checked out), with the
same tokenizer, options and suppressions. The gate judges regressions, not edits. A source fails
it only when

- its cacheable prefix shrinks by at least one cache unit of the chosen engine (what the engine
  caches of the old prefix is more than what it caches of the new one: a whole 16-token block for
  vLLM, one token for SGLang, a 128-token step above 1,024 for OpenAI), or by more than
  `max_prefix_loss` tokens when that is given, or
- it gains findings at or above the failing severity (counted per rule code, so findings that
  only moved to another line are not new).

A static prefix that changed (the canonical request renders to tokens that differ from the old
ones inside the old cacheable prefix) is information: the first requests after deploy find a cold
cache once, and the note says how many tokens are computed again. It never fails. Deleted sources
are listed, never fail. When REF names no commit because the repository has none yet (an unborn
HEAD, a first commit), every source is new: the gate checks findings only and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.core.findings import Diagnostic, Severity, SourceResult
from prefixlint.core.words import counted
from prefixlint.engines import Engine
from prefixlint.plan import RunPlan, TemplatePart, resolve
from prefixlint.run.sources import Source

if TYPE_CHECKING:
    from prefixlint.settings import Options

TEMPLATE_KINDS = ("jinja", "tokenizer_config")
GATED_KINDS = (*TEMPLATE_KINDS, "python", "gguf")


class DiffError(Exception):
    """Not a git work tree, REF does not name a commit, or git failed; the message names the ref
    and gives git's own words."""


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
    warnings: list[str] = field(default_factory=list)  # never fail: new findings below --fail-on
    notes: list[str] = field(default_factory=list)  # information: a changed static prefix
    status: str = "changed"  # "changed", "unchanged" (the same bytes at REF), "new", "deleted"
    old_path: str | None = None  # the path at REF, when git sees a rename
    line: int = 1  # where an annotation points

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
            "notes": self.notes,
            "status": self.status,
            "old_path": self.old_path,
            "failed": bool(self.failures),
        }


@dataclass
class DiffResult:
    ref: str
    changes: list[TemplateChange]
    fail_on: Severity
    engine: str = "vllm"
    notes: list[str] = field(default_factory=list)  # about the whole run (a first commit)
    first_commit: bool = False  # REF names no commit in a repository that has none yet
    sources: int = 0  # sources found under the paths (some hold no prompt: no change listed)
    template_vars: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return any(c.failures for c in self.changes)


def _git(args: list[str], cwd: Path, what: str | None = None) -> bytes:
    """git's output; DiffError with `what` (or the command) and git's own message on failure."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except OSError as exc:
        raise DiffError(f"cannot run git: {exc}") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
        raise DiffError(f"{what or 'git ' + args[0]}: {message}")
    return done.stdout


def _succeeds(args: list[str], cwd: Path) -> bool:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False).returncode == 0
    except OSError:
        return False


def _resolve_ref(ref: str, top: Path) -> bool:
    """True when `ref` names a commit; False when the repository has no commit yet (an unborn HEAD:
    everything is new); DiffError naming the ref and git's message otherwise."""
    if _succeeds(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], top):
        return True
    if not _succeeds(["rev-parse", "--verify", "--quiet", "HEAD"], top) and not _git(
        ["rev-list", "-n", "1", "--all"], top
    ):
        return False
    _git(["log", "-1", "--format=%H", "--end-of-options", ref, "--"], top, f"git ref {ref!r}")
    raise DiffError(f"git ref {ref!r}: does not name a commit")


def _changed_paths(ref: str, top: Path, paths: list[str]) -> tuple[dict[str, str], list[str]]:
    """Between `ref` and the working tree (as git sees it, renames found): {new path: old path} of
    renamed files and the old paths of deleted ones, relative to `top`, under `paths`."""
    specs = [Path(p).resolve().relative_to(top).as_posix() or "." for p in paths]
    out = _git(
        ["diff", "--name-status", "-z", "-M", "--no-ext-diff", ref, "--", *specs],
        top,
        f"git diff {ref}",
    )
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    renamed: dict[str, str] = {}
    deleted: list[str] = []
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        if status.startswith(("R", "C")):
            if status.startswith("R"):
                renamed[fields[i + 2]] = fields[i + 1]
            i += 3
            continue
        if status == "D":
            deleted.append(fields[i + 1])
        i += 2
    return renamed, deleted


def _blob(ref: str, top: Path, path: str, renamed: dict[str, str] | None = None) -> str | None:
    """The file's text at `ref` (from its old path if renamed), or None if it did not exist there
    (or is not text)."""
    rel = Path(path).resolve().relative_to(top).as_posix()
    rel = (renamed or {}).get(rel, rel)
    try:
        data = _git(["show", f"{ref}:{rel}"], top)
    except DiffError:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def _old_gguf(
    ref: str, top: Path, source: Source, renamed: dict[str, str], run: RunPlan
) -> list[SourceResult] | None:
    """The results of a GGUF's templates as they were at `ref` (None if it did not exist there): its
    blob goes to a scratch file, read like the working tree's, with the working tree's tokenizer."""
    import tempfile

    from prefixlint.run.filters import apply_filters
    from prefixlint.run.template_sources import lint_gguf

    rel = Path(source.path).resolve().relative_to(top).as_posix()
    try:
        data = _git(["show", f"{ref}:{renamed.get(rel, rel)}"], top)
    except DiffError:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        old_file = Path(scratch) / "old.gguf"
        old_file.write_bytes(data)
        results = lint_gguf(source, run.template, str(old_file))
    apply_filters(source, results, run, None)  # a binary file holds no suppression comments
    return results


def _canonical_ids(source: Source, text: str, name: str, part: TemplatePart) -> list[int] | None:
    """The token ids of one fixed request (system prompt, one user turn, fixed clock)."""
    from prefixlint.jinja.inputs import USER_TURNS, conversation
    from prefixlint.jinja.template import ChatTemplate
    from prefixlint.models.tokens import choose_tokenizer, read_special_tokens, special_tokens_for
    from prefixlint.run.sources import ConfigError, templates_in_tokenizer_config

    tokenizer = choose_tokenizer(source.path, part.tokenizer)[0]
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
        template = ChatTemplate(text, source.path, special_tokens=special, limits=part.limits)
        template.extra_kwargs.update(part.template_vars)
        template.supply_required_variables(messages, None)
        rendered = template.render(messages)
    except Exception:  # a template that does not render has no static prefix to compare
        return None
    return list(tokenizer.encode_many([rendered.text])[0].ids)


def _analyse(source: Source, text: str | None, run: RunPlan) -> list[SourceResult]:
    from prefixlint.api import lint_source
    from prefixlint.run.filters import apply_filters

    results = lint_source(source, run, text)
    apply_filters(source, results, run, text)
    return results


def _compare(
    change: TemplateChange,
    old: SourceResult | None,
    new: SourceResult,
    max_prefix_loss: int | None,
    fail_on: Severity,
    engine: Engine | None,
) -> None:
    old_codes = Counter(d.code for d in old.diagnostics) if old is not None else Counter()
    extra = Counter(d.code for d in new.diagnostics) - old_codes
    for d in new.diagnostics:
        if extra[d.code] > 0:
            extra[d.code] -= 1
            change.added.append(d)
    for d in change.added:
        where = f"{d.span.path}:{d.span.line}" if d.span.path != change.path else f"line {d.span.line}"
        line = f"new finding {d.code} {d.name} at {where}: {d.message}"
        if d.severity >= fail_on:
            change.failures.append(line)
        else:
            change.warnings.append(f"{line} ({d.severity.label}, below --fail-on: does not fail)")
    if change.added:
        change.line = change.added[0].span.line
    before, after = change.before, change.after
    if before is None or after is None or after >= before:
        return
    if max_prefix_loss is not None:
        if before - after > max_prefix_loss:
            change.failures.append(
                f"cacheable prefix shrank by {before - after:,} tokens (limit {max_prefix_loss:,})"
            )
        return
    profile = engine if engine is not None else Engine("none", 1, 0, 1, False)
    cached_before, cached_after = profile.cacheable(before), profile.cacheable(after)
    if cached_after < cached_before:
        unit = profile.block_size if profile.block_size > 1 else profile.increment
        lost = (cached_before - cached_after) // max(unit, 1)
        units = (
            counted(lost, "block") + f" of {unit}"
            if profile.block_size > 1
            else counted(lost, "step") + f" of {unit}"
        )
        if unit == 1:
            units = counted(lost, "token")
        change.failures.append(
            f"cacheable prefix shrank by {counted(before - after, 'token')}: {profile.name} now caches "
            f"{cached_after:,} of its tokens instead of {cached_before:,} ({units} less per request)"
        )


def _gate_source(
    result: DiffResult,
    source: Source,
    rel: str,
    renamed: dict[str, str],
    top: Path,
    run: RunPlan,
    max_prefix_loss: int | None,
    fail_on: Severity,
) -> None:
    """Compare one source now with its version at `result.ref`; the changes go to `result`."""
    from prefixlint.core.files import read_text
    from prefixlint.models.tokens import common_prefix_len

    ref = result.ref
    try:
        new_text = None if source.kind == "gguf" else read_text(source.path, run.limits.file_bytes)
    except (OSError, ValueError):
        new_text = None  # the analysis reads it again, and says why it cannot
    new_results = _analyse(source, new_text, run)
    if source.kind == "gguf":  # a binary file: its templates are compared one by one, by name
        found = None if result.first_commit else _old_gguf(ref, top, source, renamed, run)
        old_text = None if found is None else ""
        old_by_name = {r.path: r for r in found or []}
    else:
        old_text = None if result.first_commit else _blob(ref, top, source.path, renamed)
        if old_text is None:
            old_results = []
        elif old_text == new_text:  # the same text: the same analysis (`diff HEAD` of a clean tree)
            old_results = new_results
        else:
            old_results = _analyse(source, old_text, run)
        old_by_name = {r.name: r for r in old_results}
    for new in new_results:
        if new.kind == "not_prompt":
            continue  # documentation, a web page, scaffolding: no prefix to gate
        old = old_by_name.get(new.path if source.kind == "gguf" else new.name)
        if (
            new.cacheable_prefix_tokens is None
            and not new.diagnostics
            and (old is None or not old.diagnostics)
        ):
            continue  # no prompt in it (a Python module, a config without a chat template)
        change = TemplateChange(
            new.path if source.kind == "gguf" else source.path,
            new.name,
            old.cacheable_prefix_tokens if old is not None else None,
            new.cacheable_prefix_tokens,
            status=_status(old_text, new_text, rel in renamed),
            old_path=renamed.get(rel),
        )
        _compare(change, old, new, max_prefix_loss, fail_on, run.engine)
        if (
            source.kind in TEMPLATE_KINDS
            and old is not None
            and old_text
            and new_text
            and old_text != new_text
            and change.before
        ):
            old_ids = _canonical_ids(source, old_text, new.name, run.template)
            new_ids = _canonical_ids(source, new_text, new.name, run.template)
            if old_ids is not None and new_ids is not None:
                common = common_prefix_len(old_ids, new_ids)
                if common < min(change.before, len(old_ids)):
                    change.static_changed_at = common
                    change.recomputed = max((change.after or 0) - common, 0)
                    change.notes.append(
                        f"static prefix changed at token {common:,}: {counted(change.recomputed, 'token')} "
                        "computed once more after deploy (cold cache once, not a regression)"
                    )
        result.changes.append(change)


def diff_gate(
    ref: str,
    paths: list[str],
    options: Options,
    max_prefix_loss: int | None = None,
    fail_on: Severity = Severity.WARNING,
) -> DiffResult:
    """Compare each source under `paths` with its version at git `ref`."""
    from prefixlint.models.token_memo import remembering
    from prefixlint.run.sources import iter_sources

    run = resolve(options)  # from here on, only the plan
    paths = paths or ["."]
    anchor = Path(paths[0]).resolve()
    folder = anchor if anchor.is_dir() else anchor.parent
    toplevel = _git(["rev-parse", "--show-toplevel"], folder, f"{folder}: not in a git work tree")
    top = Path(toplevel.decode().strip()).resolve()
    result = DiffResult(ref, [], fail_on, run.engine_name, template_vars=dict(run.template.template_vars))
    if _resolve_ref(ref, top):
        renamed, deleted = _changed_paths(ref, top, paths)
    else:
        result.first_commit = True
        renamed, deleted = {}, []
        result.notes.append(
            f"{ref}: the repository has no commit yet (a first commit): every source is new, "
            "so the gate checks their findings only"
        )
    for source in iter_sources(paths, run):
        if source.kind not in GATED_KINDS:
            continue
        result.sources += 1
        rel = Path(source.path).resolve().relative_to(top).as_posix()
        # One book of encodings for both versions: the version at REF is most often the one the
        # last run analysed as new (prefixlint/models/token_memo.py).
        with remembering(run.cache_dir, source.path):
            _gate_source(result, source, rel, renamed, top, run, max_prefix_loss, fail_on)
    for old_rel in deleted:
        path = os.path.relpath(top / old_rel)
        from prefixlint.run.sources import source_kind

        if source_kind(old_rel) in GATED_KINDS:
            result.changes.append(TemplateChange(path, "", None, None, status="deleted"))
    return result


def _status(old_text: str | None, new_text: str | None, renamed: bool) -> str:
    """ "new" (not at REF), "unchanged" (the same bytes at the same path), else "changed"."""
    if old_text is None:
        return "new"
    return "unchanged" if old_text == new_text and not renamed else "changed"


def _tokens(n: int | None) -> str:
    return "none" if n is None else "?" if n < 0 else f"{n:,}"


def _headline(c: TemplateChange) -> str:
    before, after = c.before, c.after
    status = "FAIL" if c.failures else "ok"
    if c.status == "deleted":
        return f"{c.label}: deleted"
    renamed = f" (renamed from {c.old_path})" if c.old_path else ""
    if c.status == "new":
        shown = "" if after is None else f", cacheable prefix {_tokens(after)} tokens"
        return f"{c.label}{renamed}: new{shown}  {status}"
    if before is None and after is None:  # it does not render, then or now: nothing to compare
        return f"{c.label}{renamed}: {c.status}, no cacheable prefix measured  {status}"
    delta = "" if after is None or before is None else f" ({after - before:+,})"
    return (
        f"{c.label}{renamed}: cacheable prefix {_tokens(before)} -> {_tokens(after)} tokens{delta}  {status}"
    )


def render_diff(result: DiffResult, fmt: str = "concise") -> str:
    """The gate's verdict as `concise` (alias `text`), `json`, `github` (workflow annotations) or
    `sarif` (the findings the change adds)."""
    if fmt == "json":
        document = {
            "version": 1,
            "ref": result.ref,
            "engine": result.engine,
            "failed": result.failed,
            "first_commit": result.first_commit,
            "template_variables": result.template_vars,
            "notes": result.notes,
            "templates": [c.to_json() for c in result.changes],
        }
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if fmt == "github":
        return _render_github(result)
    if fmt == "sarif":
        return _render_sarif(result)
    lines = [f"note: {n}" for n in result.notes]
    for c in result.changes:
        lines.append(_headline(c))
        lines.extend(f"    error: {f}" for f in c.failures)
        lines.extend(f"    warning: {w}" for w in c.warnings)
        lines.extend(f"    note: {n}" for n in c.notes)
    failing = sum(bool(c.failures) for c in result.changes)
    verdict = f"{failing} of {len(result.changes)} fail the gate" if failing else "the gate passes"
    lines.append(f"Compared {counted(len(result.changes), 'source')} with {result.ref}: {verdict}.")
    return "\n".join(lines) + "\n"


def _render_github(result: DiffResult) -> str:
    from prefixlint.report.github import _escape_data, _escape_property

    out = [f"::notice title=prefixlint diff::{_escape_data(n)}" for n in result.notes]
    for c in result.changes:
        for level, messages in (("error", c.failures), ("warning", c.warnings), ("notice", c.notes)):
            for message in messages:
                props = f"file={_escape_property(c.path)},line={c.line},title=prefixlint diff"
                out.append(f"::{level} {props}::{_escape_data(message)}")
    return "".join(line + "\n" for line in out)


def _render_sarif(result: DiffResult) -> str:
    """SARIF of the findings the change adds (a shrunk prefix has no rule code: it is in the
    concise, json and github outputs)."""
    from prefixlint.report.sarif import render_sarif
    from prefixlint.run.check import Report

    sources = [SourceResult(c.path, "jinja", c.name, diagnostics=list(c.added)) for c in result.changes]
    return render_sarif(Report("", result.engine, sources))
