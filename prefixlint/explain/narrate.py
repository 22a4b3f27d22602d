"""`prefixlint explain TEMPLATE`: `check`'s variants and multi-turn findings told as a story."""

from __future__ import annotations

from typing import Any

from prefixlint.core.findings import SourceResult


def narrate(results: list[SourceResult]) -> str:
    """One paragraph per finding: where, what, what it costs, how to fix."""
    out: list[str] = []
    for result in results:
        title = result.path + (f" ({result.name})" if result.name else "")
        out.append(title)
        out.append("=" * len(title))
        if result.cacheable_prefix_tokens is not None and result.total_tokens:
            out.append(
                f"Of a typical {result.total_tokens}-token prompt, the first "
                f"{result.cacheable_prefix_tokens} tokens are the same for every request: cacheable."
            )
        if result.multiturn_reuse is not None:
            out.append(
                f"Across turns, {result.multiturn_reuse:.0%} of turn N's tokens are reused by turn N+1."
            )
        if not result.diagnostics:
            out.append("Nothing in this template breaks prefix caching for the inputs tried.")
        for d in result.diagnostics:
            story = f"Line {d.span.line}: {d.message} ({d.code} {d.name})."
            if d.evidence is not None:
                ev = d.evidence
                story += f" The prompts part at token {ev.token_index} (character {ev.char_offset})"
                if ev.context_a or ev.context_b:
                    story += f": {ev.context_a!r} versus {ev.context_b!r}"
                story += "."
                per = "turn" if d.code.startswith("PFX4") else "request"
                if ev.static_tokens_lost:
                    story += f" {ev.static_tokens_lost} static tokens after it are recomputed on every {per}."
                if ev.reply_tokens_lost:
                    story += (
                        f" {ev.reply_tokens_lost} generated tokens of the reply lose their cache every {per}."
                    )
                if ev.engines:
                    story += (
                        " Cached per engine: " + ", ".join(f"{k} {v}" for k, v in ev.engines.items()) + "."
                    )
            if d.hint:
                story += f" Fix: {d.hint}"
            out.append("")
            out.append(story)
        out.append("")
    return "\n".join(out)


def narrate_json(results: list[SourceResult]) -> dict[str, Any]:
    return {
        "version": 1,
        "sources": [{**r.to_json(), "diagnostics": [d.to_json() for d in r.diagnostics]} for r in results],
    }
