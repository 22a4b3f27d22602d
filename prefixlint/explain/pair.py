"""`prefixlint explain A B`: where two requests' prompts part, in tokens, and what it costs."""

from __future__ import annotations

from typing import Any

from prefixlint.engines import Engine
from prefixlint.engines.packed import pack
from prefixlint.engines.radix import RadixCache
from prefixlint.explain.causes import classify, diverge
from prefixlint.explain.requests import Renderer, Request
from prefixlint.models.tokens import LoadedTokenizer, common_prefix_len

CONTEXT_TOKENS = 8


def explain_pair(
    a: Request, b: Request, renderer: Renderer, tokenizer: LoadedTokenizer, engines: list[Engine]
) -> dict[str, Any]:
    """B arrives after A: the first divergent token, its section and template line, the context on
    both sides, what each engine serves from cache for B, and the static tokens lost."""
    ra, rb = renderer.render(a), renderer.render(b)
    ea, eb = tokenizer.encode_many([ra.text, rb.text])
    shared = common_prefix_len(ea.ids, eb.ids)
    out: dict[str, Any] = {
        "version": 1,
        "tokens": {"a": len(ea.ids), "b": len(eb.ids)},
        "identical": ea.ids == eb.ids,
        "token_index": shared,
        "engines": {e.name: {"cacheable_tokens": e.cacheable(shared, len(eb.ids))} for e in engines},
        "tokens_lost": 0,
    }
    if shared >= min(len(ea.ids), len(eb.ids)):
        out["char_offset"] = None
        return out

    def side(rendered: Any, enc: Any) -> dict[str, Any]:
        char = enc.offsets[shared][0]
        piece = [
            tokenizer.tokenizer.decode([t], skip_special_tokens=False)
            for t in enc.ids[shared : shared + CONTEXT_TOKENS]
        ]
        before = tokenizer.tokenizer.decode(
            enc.ids[max(0, shared - CONTEXT_TOKENS) : shared], skip_special_tokens=False
        )
        line = rendered.template_line(char)
        return {
            "char_offset": char,
            "section": rendered.section_at(char),
            "template_line": line,
            "template_text": renderer.template.traced.line_text(line).strip() if line else None,
            "before": before,
            "tokens": piece,
        }

    out["a"], out["b"] = side(ra, ea), side(rb, eb)
    out["char_offset"] = out["b"]["char_offset"]
    out["section"] = out["b"]["section"]
    out["template_line"] = out["b"]["template_line"]
    cache = RadixCache()
    cache.insert(pack(ea.ids))
    seq = pack(eb.ids)
    div = diverge(seq, shared, cache, cache.match(seq))
    out["tokens_lost"] = div.lost if div else 0
    out["kind"] = classify("".join(out["a"]["tokens"]), "".join(out["b"]["tokens"]))
    return out


def pair_text(result: dict[str, Any], names: tuple[str, str]) -> str:
    """The two-request explanation as a few plain lines."""
    lines = [
        f"template: {result.get('template') or 'none (plain prompts)'}; tokenizer: {result.get('tokenizer')}",
        f"A: {names[0]} ({result['tokens']['a']} tokens)",
        f"B: {names[1]} ({result['tokens']['b']} tokens)",
    ]
    if result["identical"]:
        lines.append("The two prompts are identical token for token.")
    elif result.get("char_offset") is None:
        lines.append(f"One prompt is a prefix of the other: {result['token_index']} tokens shared.")
    else:
        b = result["b"]
        where = b["section"]
        if b["template_line"]:
            where += f", template line {b['template_line']}: {b['template_text']}"
        lines.append(
            f"First divergent token: #{result['token_index']} (char {b['char_offset']} of B) in {where}"
        )
        for label in ("a", "b"):
            s = result[label]
            lines.append(f"  {label.upper()}: …{s['before']!r} | {' '.join(repr(t) for t in s['tokens'])}")
        if result["tokens_lost"]:
            lines.append(
                f"After the differing span the prompts agree again for {result['tokens_lost']} tokens: "
                "static content the cache cannot reuse. Move that span after it."
            )
    for name, e in result["engines"].items():
        lines.append(f"  {name}: {e['cacheable_tokens']} tokens of B served from cache")
    return "\n".join(lines) + "\n"
