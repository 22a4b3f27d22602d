"""The fix registry: what each source kind contributes to fixes (its candidate generator, and what
its fixed text must keep). A kind's module registers itself when imported; the verifier
(prefixlint/fixes/verify.py) asks here, and the generators (prefixlint/jinja/fixes.py,
prefixlint/python/fixes) register here, so neither imports the other."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prefixlint.core.findings import Diagnostic, Fix

if TYPE_CHECKING:
    from prefixlint.plan import FixPart
    from prefixlint.run.sources import Source

# (path, text, finding) -> unverified candidates, best first.
CandidateGenerator = Callable[[str, str, Diagnostic], Iterable[Fix]]
# (candidate, source, original text, fixed text, finding, the run's fix settings) -> None when the
# fixed text keeps what the candidate must keep, else the reason it does not.
Preserves = Callable[["Fix", "Source", str, str, Diagnostic, "FixPart"], "str | None"]


@dataclass(frozen=True)
class KindFixes:
    """What a source kind contributes: its candidates, and what its fixed text must keep."""

    candidates: CandidateGenerator
    preserves: Preserves | None = None


_REGISTRY: dict[str, KindFixes] = {}
_MISSING: set[str] = set()
# Kinds whose generators are imported on first use (the hot path imports none of them).
_LAZY: dict[str, str] = {
    "jinja": "prefixlint.jinja.fixes",
    "prompt_template": "prefixlint.jinja.fixes",
    "tokenizer_config": "prefixlint.jinja.fixes",
    "python": "prefixlint.python.fixes",
}


def register(kind: str, candidates: CandidateGenerator, preserves: Preserves | None = None) -> None:
    """Make `candidates` the generator of source kind `kind` (a later call replaces it)."""
    _REGISTRY[kind] = KindFixes(candidates, preserves)


def fixes_for(kind: str) -> KindFixes | None:
    """The registered fixes of a source kind; a kind's module registers itself when imported, and a
    module that does not exist (yet) means no fixes for that kind."""
    if kind not in _REGISTRY and kind in _LAZY and kind not in _MISSING:
        try:
            module = importlib.import_module(_LAZY[kind])
        except ModuleNotFoundError as exc:
            if exc.name != _LAZY[kind]:
                raise
            _MISSING.add(kind)  # asked once a run, not once a finding
            return None
        if kind not in _REGISTRY and hasattr(module, "candidates"):
            register(kind, module.candidates)
    return _REGISTRY.get(kind)
