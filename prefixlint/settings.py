"""The resolved settings of a run, and what they mean for each source (ruff's "resolve once").

config.py turns the config file and the command line into one `Options`; the library face
(prefixlint/api.py), the diff gate and `explain` take it and resolve it once into the run plan
(prefixlint/plan.py): no stage reads `Options`. What a setting means for one source is derived
here: the engine profile with `--block-size` applied (`Options.engine_profile`), the rules
reported for it (`Options.codes_for`); prefixlint/plan.py resolves them, with the tokenizer of each
source, into the plain data the stages take. This module imports no other part of prefixlint at
load time except the rule table, the limits and the path patterns, so every part can import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.core.limits import Limits
from prefixlint.core.pathmatch import PathMatcher
from prefixlint.core.rules import RULES, resolve_selector

if TYPE_CHECKING:
    from prefixlint.engines import Engine


@dataclass
class Options:
    tokenizer: str | None = None  # None: a tokenizer.json beside the template, else the embedded default
    engine: str = "vllm"
    block_size: int | None = None  # `--block-size`: the engine's cache block in tokens (None: its own)
    excludes: tuple[str, ...] = ()
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    multiturn: bool = True
    # Template variables this app keeps fixed, and ones it passes per request (config `variables`).
    static_variables: tuple[str, ...] = ()
    dynamic_variables: tuple[str, ...] = ()
    # From the config (prefixlint/config.py); `root` is the folder its paths are relative to.
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None  # gitignore patterns; None: the built-in defaults
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False  # apply excludes to files named explicitly too (pre-commit)
    respect_gitignore: bool = True  # skip what git ignores in the folders walked (ruff's default)
    root: str | None = None  # None: the current folder
    suppressions: bool = True
    cache_dir: str | None = None  # None: no result cache (the CLI sets one unless --no-cache)
    # Config `template-kinds`: (glob, "chat" | "prompt" | "not-prompt"), a later glob wins.
    template_kinds: tuple[tuple[str, str], ...] = ()
    # Where app prompt templates' includes are looked for after their own folder and the project
    # root: config `template-search-path`, absolute.
    template_search_path: tuple[str, ...] = ()
    # The project's own prompt builders (config `[tool.prefixlint.python] sinks`): each argument of a
    # call to one is prompt text, in order.
    python_sinks: tuple[str, ...] = ()
    # The most a Python finding on a value known only by its name (a `{current_date}` placeholder,
    # a parameter named `query`) may be: config `[tool.prefixlint.python] guess-severity`.
    python_guess_severity: str = "info"
    # The project's own rows of the models table (`[[tool.prefixlint.python.sink]]`), as JSON.
    python_sink_rows: tuple[str, ...] = ()
    # The project's own `[[tool.prefixlint.python.source]]` rows: calls whose result is per-request content.
    python_source_rows: tuple[str, ...] = ()
    # Count a Python source's prompt in tokens (its JSON `cacheable_prefix_tokens`/`total_tokens`);
    # off for outputs that do not show them, so a pre-commit run loads no tokenizer for a clean file.
    python_numbers: bool = True
    # The folder imports, prompt files and template names are relative to: the config file's
    # folder, else found from the paths checked (prefixlint.core.files.project_root).
    project_root: str | None = None
    # Chat template variables fixed for every render (`--var`, `--chat-template-kwargs`), as an
    # app passes `chat_template_kwargs` (e.g. enable_thinking=False).
    template_vars: dict[str, Any] = field(default_factory=dict)
    # Look for a verified fix of each finding (prefixlint/fixes/verify.py): one more analysis per candidate.
    fixes: bool = True

    def enabled_codes(self) -> set[str]:
        """The codes the selection turns on, before per-file ignores."""
        return enabled_codes(self.select + self.extend_select, self.ignore)

    def codes_for(self, path: str) -> set[str]:
        """The codes reported for `path`: the selection less its `per-file-ignores`."""
        return self.enabled_codes() - per_file_ignored(Path(self.root or "."), self.per_file_ignores, path)

    def engine_profile(self) -> Engine | None:
        """The chosen engine's profile, with `--block-size` in place of its own block (a step
        engine's increment follows the block when it was the block); None for an unknown name."""
        from prefixlint.engines import load_engines

        profile = load_engines().get(self.engine)
        if profile is None or self.block_size is None:
            return profile
        return profile.with_block(self.block_size)


def _specificity(selector: str) -> int:
    return 0 if selector == "ALL" else len(selector)


def enabled_codes(select: Iterable[str], ignore: Iterable[str]) -> set[str]:
    """Codes enabled by ruff-style selectors: per code, the longest matching selector decides."""
    chosen: dict[str, tuple[int, bool]] = {}  # code -> (specificity, enabled)
    for selectors, enabled in ((select, True), (ignore, False)):
        for selector in selectors:
            norm = selector.strip().upper()
            for code in resolve_selector(norm):
                rank = (_specificity(norm), not enabled)  # at equal length, ignore beats select
                best = chosen.get(code)
                if best is None or rank > (best[0], not best[1]):
                    chosen[code] = (rank[0], enabled)
    return {code for code, (_, on) in chosen.items() if on and code in RULES}


def per_file_ignored(
    root: Path, per_file_ignores: Iterable[tuple[str, tuple[str, ...]]], path: str
) -> set[str]:
    """The codes that `per-file-ignores` turns off for `path`."""
    out: set[str] = set()
    for glob, selectors in per_file_ignores:
        if PathMatcher(root, [glob]).matches(path):
            out.update(c for s in selectors for c in resolve_selector(s))
    return out
