"""Analyse one Python module: parse (never import or run), find prompts, report volatile holes."""

from __future__ import annotations

import ast
import os
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.core.findings import Diagnostic, Severity, SourceResult, Span
from prefixlint.plan import PythonPart, as_python_part
from prefixlint.python.candidates import find_candidates
from prefixlint.python.evaluate import Evaluator
from prefixlint.python.findings import diagnostics, prefix_numbers
from prefixlint.python.frameworks import for_project
from prefixlint.python.project import Project, parsed_module, remember
from prefixlint.python.prompt import Prompt
from prefixlint.python.scopes import index_module, parse_module
from prefixlint.python.segments import Hole, holes
from prefixlint.python.sinks import find_sinks

if TYPE_CHECKING:
    from prefixlint.models.tokens import LoadedTokenizer
    from prefixlint.settings import Options


class _LazyTokenizer:
    """Loads the tokenizer only when a finding needs a token count (loading takes ~0.6 s)."""

    def __init__(self, path: str, spec: str | None) -> None:
        self.path, self.spec = path, spec
        self._tokenizer: LoadedTokenizer | None = None

    def get(self) -> LoadedTokenizer:
        if self._tokenizer is None:
            from prefixlint.models.tokens import choose_tokenizer

            self._tokenizer = choose_tokenizer(self.path, self.spec)[0]
        return self._tokenizer

    def count(self, text: str) -> int:
        return self.get().count(text)

    def stand_in(self) -> bool:
        """Whether the counts come from the embedded stand-in, not the model's own tokenizer."""
        from prefixlint.models.tokens import EMBEDDED_NAME

        return self.get().name == EMBEDDED_NAME


def syntax_error(path: str, text: str, exc: cst.ParserSyntaxError) -> Diagnostic:
    """PFX003 where CPython's own parser puts the error (libcst's position can be a line late);
    `compile` only parses, it runs nothing."""
    line, column, message = exc.raw_line, exc.raw_column + 1, str(exc.message).strip()
    try:
        compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        line, column, message = err.lineno or line, err.offset or column, err.msg or message
    except (ValueError, RecursionError, MemoryError):
        pass
    first = message.splitlines()[0] if message else "invalid syntax"
    return Diagnostic(
        "PFX003",
        Span(path, line, column),
        f"does not parse as Python: {first}",
        Severity.ERROR,
        hint="fix the syntax error; nothing else in this file was analysed",
    )


def _sent_elsewhere(prompts: list[Prompt], path: str) -> bool:
    """Whether a volatile value of this module is in a candidate that no sink here sends."""
    reached = {(h.line, h.column) for p in prompts if p.reached for h in holes(p.value)}
    return any(
        h.provenance.volatile and not h.weak and h.path == path and (h.line, h.column) not in reached
        for p in prompts
        if not p.reached
        for h in holes(p.value)
    )


def analyze_python(path: str, text: str, settings: PythonPart | Options) -> SourceResult:
    """Diagnostics for one Python source (kind "python")."""
    index = parsed_module(path, text)
    if index is None:
        try:
            module = parse_module(text)
        except cst.ParserSyntaxError as exc:
            return SourceResult(path, "python", diagnostics=[syntax_error(path, text, exc)])
        index = index_module(module, os.path.abspath(path))
        remember(path, text, index)  # for the checked files that import it
    part = as_python_part(settings)
    project = Project(part.project_root or os.path.dirname(os.path.abspath(path)))
    project.add_module(path, index, text)
    evaluator = Evaluator(index, project)
    project.evaluators[os.path.abspath(path)] = evaluator
    tokenizer = _LazyTokenizer(path, part.tokenizer)
    engine = part.engine
    project.frameworks = for_project(part.sinks, part.sink_rows, part.source_rows)
    prompts = find_sinks(index, evaluator) + find_candidates(index, evaluator, part.sinks)
    unreachable = None
    if prompts:
        from prefixlint.python.reachability import unreachable_code

        unreachable = unreachable_code(project, path, text, index, evaluator)
        # Code that cannot run sends no request: what it builds is no prompt.
        live = [p for p in prompts if not unreachable.holds(p.line)]
        if len(live) < len(prompts) and unreachable.deciding:
            project.read += unreachable.deciding  # a reference added elsewhere brings them back
        prompts = live
    guess = Severity.parse(part.guess_severity)
    dispatch = None
    if any(not p.reached for p in prompts):
        from prefixlint.python.dispatch import dynamic_dispatch

        dispatch = dynamic_dispatch(project, path)
        if dispatch is not None:  # the wording depends on it: a cached result is dropped when it changes
            project.read.append(os.path.join(project.root, dispatch.rsplit(":", 1)[0]))
    covered: list[Diagnostic] = []

    def passed(hole: Hole) -> object | None:
        from prefixlint.python.entrypoints import entry_passing

        return entry_passing(evaluator, hole)

    found = diagnostics(
        path, prompts, tokenizer.count, engine, guess, tokenizer.stand_in, dispatch, covered, passed
    )
    flagged = {(d.span.line, d.span.column) for d in found if d.span.path == path}
    if flagged and any(p.open_tail for p in prompts):
        from prefixlint.python.landing import judged_where_landed

        judged = judged_where_landed(prompts, project, path, flagged)
        if judged is not prompts:  # a template placeholder is judged where the template lands
            prompts, covered = judged, []
            found = diagnostics(
                path, prompts, tokenizer.count, engine, guess, tokenizer.stand_in, dispatch, covered, passed
            )
    if _sent_elsewhere(prompts, os.path.abspath(path)):
        # Its text reaches no sink here: the modules that import it may send it.
        from prefixlint.python.consumers import consumer_requests

        elsewhere = consumer_requests(project, path)
        if elsewhere:
            here = {d.span.path for d in found} | {path}
            covered = []
            seen = diagnostics(
                path,
                prompts + elsewhere,
                tokenizer.count,
                engine,
                guess,
                tokenizer.stand_in,
                dispatch,
                covered,
                passed,
            )
            found = [d for d in seen if d.span.path in here]
            covered = [d for d in covered if d.span.path in here]
    from prefixlint.python.breakpoints import breakpoint_diagnostics
    from prefixlint.python.history import history_diagnostics

    found += breakpoint_diagnostics(path, index, evaluator, tokenizer.count)
    found += history_diagnostics(path, text, index, evaluator)
    from prefixlint.python.embedded import embedded_template_diagnostics

    found += embedded_template_diagnostics(path, index, evaluator, tokenizer.get, part.template)
    if unreachable is not None and unreachable.any:
        kept = [d for d in found if d.span.path != path or not unreachable.holds(d.span.line)]
        if len(kept) < len(found) and unreachable.deciding:
            project.read += unreachable.deciding
        found = kept
        covered = [d for d in covered if d.span.path != path or not unreachable.holds(d.span.line)]
    from prefixlint.core.fingerprint import stamp

    result = SourceResult(path, "python", diagnostics=sorted(found, key=Diagnostic.sort_key))
    result.covered = sorted(covered, key=Diagnostic.sort_key)
    result.dependencies = [stamp(p) for p in dict.fromkeys(project.read) if p != os.path.abspath(path)]
    numbers = prefix_numbers(prompts, tokenizer.count) if part.numbers else None
    if numbers is not None:
        result.cacheable_prefix_tokens, result.total_tokens = numbers
        result.tokenizer = tokenizer.get().name
    return result
