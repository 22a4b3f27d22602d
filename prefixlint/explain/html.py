"""The `--html` page: one self-contained file (inline CSS and script, no network) showing the hit
rate per engine now and with each cause fixed and the tokens each cause loses, as bars; the ranked
causes; where the representative requests branch (a prefix tree, widest branches first); and a
representative prompt as tokens coloured by how many requests shared the prefix up to each, with
the engine's cache boundaries and the divergence point."""

from __future__ import annotations

import html
import json
from typing import Any

from prefixlint.engines import Engine, describe, load_engines
from prefixlint.explain.curve_plot import curve_svg

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
.prompt{font:12px/1.9 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all;
  border:1px solid #ddd;padding:1em;max-height:40em;overflow:auto}
.tok{border-radius:2px}.blk{border-left:2px solid #3355cc;margin-left:1px}
#divergence{outline:3px solid #d00;outline-offset:1px}
.legend span{display:inline-block;padding:0 .5em;margin-right:.3em}
code{background:#f4f4f4;padding:0 .2em}
.differs code,#tree code{white-space:pre-wrap}#tree li{margin:.3em 0}
.bars{display:grid;grid-template-columns:max-content 1fr max-content;gap:.2em .6em;align-items:center;
  max-width:60em;margin:1em 0}
.bar{height:1em;background:#3355cc;border-radius:2px;min-width:1px}.bar.fixed{background:#2a9d55}
.bar.lost{background:#cc5533}.bars .group{grid-column:1/-1;font-weight:600;margin-top:.4em}
"""

# Counts the page's own tokens once it is loaded: the headless-browser test reads these back.
_SCRIPT = """
document.addEventListener('DOMContentLoaded',function(){
  var t=document.querySelectorAll('.prompt .tok');
  document.body.dataset.tokens=t.length;
  document.body.dataset.blocks=document.querySelectorAll('.prompt .blk').length;
  document.body.dataset.bars=document.querySelectorAll('.bars .bar').length;
  document.body.dataset.rendered='1';
});
"""


def _colour(share: float) -> str:
    # red (no other request shared it) to green (every request shared it)
    return f"hsl({int(share * 120)},70%,85%)"


def _inputs(report: dict[str, Any]) -> str:
    """What was read and with what, and what the server reported, as one escaped paragraph."""
    parts = [
        f"Log format: {report.get('log_format') or '—'}",
        f"template: {report.get('template') or 'none (rendered prompts)'}",
        f"tokenizer: {report.get('tokenizer') or '—'}",
    ]
    observed = (report.get("observed") or {}).get("hit_rate")
    if observed is not None:
        parts.append(f"observed hit rate: {observed:.1%}")
    ms = (report.get("ttft") or {}).get("recomputed_ms_per_request")
    if ms is not None:
        parts.append(f"TTFT spent recomputing: {ms:,.0f} ms per request")
    return html.escape("; ".join(parts) + ".")


def _boundary(engine: Engine | None, i: int) -> bool:
    """Whether a cached prefix can end just before token `i`: a block start (vLLM), the minimum
    and each step after it (OpenAI); a per-token cache has no boundary worth drawing."""
    if engine is None:
        return False
    if engine.minimum_tokens:
        step = max(engine.increment, engine.block_size, 1)
        return i >= engine.minimum_tokens and (i - engine.minimum_tokens) % step == 0
    return engine.block_size > 1 and i % engine.block_size == 0


def _boundaries_text(engine: Engine | None, name: str, drawn: int, tokens: int) -> str:
    """The legend of the blue bars, saying why there are none when none are drawn."""
    if engine is None:
        return ""
    caches = f"{name} caches {describe(engine)}"
    if drawn:
        return f"Blue bars: where {name} can end a cached prefix ({describe(engine)})."
    if engine.block_size > 1 or engine.minimum_tokens:
        return f"{caches}: this prompt's {tokens:,} tokens reach no boundary, so no bars are drawn."
    return f"{caches}: no boundaries to draw."


def _bar(label: str, value: float, scale: float, cls: str, text: str) -> str:
    width = 0.0 if scale <= 0 else 100 * value / scale
    return (
        f"<span>{html.escape(label)}</span>"
        f'<div><div class="bar {cls}" style="width:{width:.2f}%"></div></div><span>{text}</span>'
    )


def _cause_label(rank: int, cause: dict[str, Any]) -> str:
    line = cause.get("template_line")
    where = f", template line {line}" if line else ""
    return f"#{rank} {cause['kind']} in {cause['section']}{where}"


def _charts(report: dict[str, Any]) -> str:
    """Bars: each engine's hit rate now and with each cause moved; the tokens each cause loses."""
    causes = report.get("causes", [])
    rates = []
    for name, v in report.get("engines", {}).items():
        rates.append(f'<div class="group">{html.escape(name)}</div>')
        rates.append(_bar("now", v["hit_rate"], 1.0, "now", f"{v['hit_rate']:.1%}"))
        for rank, c in enumerate(causes, 1):
            fixed = (c.get("what_if") or {}).get(name)
            if fixed is not None:
                rates.append(_bar(f"{_cause_label(rank, c)} moved", fixed, 1.0, "fixed", f"{fixed:.1%}"))
    most = max((c["tokens_lost"] for c in causes), default=0)
    lost = [
        _bar(_cause_label(rank, c), c["tokens_lost"], most, "lost", f"{c['tokens_lost']:,}")
        for rank, c in enumerate(causes, 1)
    ]
    out = (
        "<h2>Hit rate per engine, now and with each cause moved to the end of its message</h2>"
        f'<div class="bars" id="hit-rates">{"".join(rates)}</div>'
    )
    if lost:
        out += f'<h2>Tokens lost per cause</h2><div class="bars" id="tokens-lost">{"".join(lost)}</div>'
    return out


def _excerpt(text: str, most: int = 120) -> str:
    return text if len(text) <= most else text[: most * 2 // 3] + " … " + text[-most // 3 :]


def _tree(nodes: list[dict[str, Any]], requests: int) -> str:
    """The prefix tree of the representative requests as nested lists, widest branches first."""
    if not nodes:
        return ""
    items = []
    for node in nodes:
        what = f"tokens {node['start']:,}–{node['start'] + node['tokens'] - 1:,}"
        items.append(
            f'<li class="branch"><code>{html.escape(_excerpt(node["text"]))}</code> '
            f"<span>({what}, shared by {node['shared_by']:,} of {requests:,} requests)</span>"
            f"{_tree(node['children'], requests)}</li>"
        )
    return f"<ul>{''.join(items)}</ul>"


def _breaks(report: dict[str, Any], top: int = 20) -> str:
    """The conversations section: the top breaks, each with its difference (empty without any)."""
    conv = report.get("conversations") or {}
    if not conv.get("breaks"):
        return ""
    rows = []
    for b in conv["breaks"][:top]:
        where = b["part"] + (f"[{b['message_index']}]" if b["message_index"] is not None else "")
        rows.append(
            '<tr class="break">'
            f"<td>{html.escape(str(b['conversation']))}</td><td>{b['request']} after {b['previous']}</td>"
            f"<td>{html.escape(where)}</td><td>{html.escape(b['kind'])}</td><td>{b['tokens_lost']:,}</td>"
            f'<td><pre class="diff">{html.escape(b["difference"])}</pre></td></tr>'
        )
    return (
        f"<h2>Conversations: turns that do not extend the previous one</h2>\n<p>{conv['count']:,} "
        f"conversations, {conv['requests_checked']:,} requests checked against their previous turn.</p>\n"
        '<table id="conversations"><tr><th>conversation</th><th>log line</th><th>part</th><th>kind</th>'
        f"<th>tokens recomputed</th><th>difference</th></tr>\n{''.join(rows)}</table>\n"
    )


def _curve(report: dict[str, Any]) -> str:
    """The capacity curve section (with --capacity-curve): the plot and what it measures."""
    plot = curve_svg(report.get("capacity_curve") or [], report.get("capacity_curve_engine"))
    if not plot:
        return ""
    engine = html.escape(str(report.get("capacity_curve_engine")))
    return (
        f"<h2>Hit rate by cache size</h2><p>{engine}'s cache as an LRU of blocks, every size from one"
        f" pass over the requests (reuse distances).</p>{plot}\n"
    )


def render_html(report: dict[str, Any], representative: dict[str, Any], engine: str) -> str:
    """The page for a log report (`LogReport.to_json()`) and its representative prompt."""
    profile = load_engines().get(engine)
    requests = max(int(report.get("requests", 0)), 1)
    tokens: list[str] = representative.get("tokens", [])
    shared_by: list[int] = representative.get("shared_by", [])
    divergence = representative.get("divergence")
    spans = []
    drawn = 0
    for i, piece in enumerate(tokens):
        count = shared_by[i] if i < len(shared_by) else 0
        boundary = _boundary(profile, i)
        drawn += boundary
        classes = "tok blk" if boundary else "tok"
        ident = ' id="divergence"' if i == divergence else ""
        title = f"token {i}: shared by {count} of {requests} requests"
        spans.append(
            f'<span class="{classes}"{ident} data-i="{i}" data-shared="{count}" title="{title}" '
            f'style="background:{_colour(count / requests)}">{html.escape(piece)}</span>'
        )
    names = list(report.get("engines", {}))
    rows = []
    for rank, c in enumerate(report.get("causes", []), 1):
        what_if = c.get("what_if") or {}
        moved = ", ".join(f"{html.escape(n)} {what_if[n]:.1%}" for n in names if what_if.get(n) is not None)
        saved = c.get("ttft_ms_saved_per_request")
        line = c.get("template_line")
        where = f"line {line}: <code>{html.escape(c.get('template_text') or '')}</code>" if line else "—"
        if c.get("example"):
            a, b = c["example"]["a"], c["example"]["b"]
            example = f"<code>{html.escape(a)}</code> vs <code>{html.escape(b)}</code>"
        else:  # a server cause: its own sentence
            example = html.escape(c.get("message") or "")
        rows.append(
            '<tr class="cause">'
            f"<td>{rank}</td><td>{html.escape(str(c['section']))}</td><td>{where}</td>"
            f"<td>{'—' if c['token_index'] is None else c['token_index']}</td>"
            f"<td>{c['share']:.1%}</td><td>{c['tokens_lost']:,}</td>"
            f'<td class="differs">{html.escape(c["kind"])}: {example}</td>'
            f"<td>{moved or '—'}</td><td>{'—' if saved is None else f'{saved:,.0f} ms'}</td></tr>"
        )
    with_lru = any(v.get("lru") for v in report.get("engines", {}).values())
    engine_rows = []
    for name, v in report.get("engines", {}).items():
        lru = v.get("lru")
        lru_cell = (
            f"<td>{lru['hit_rate']:.1%} (LRU {lru['capacity_tokens']:,} tokens)</td>" if lru else "<td>—</td>"
        )
        engine_rows.append(
            f'<tr class="engine"><td>{html.escape(name)}</td><td>{v["hit_rate"]:.1%}</td>'
            f"<td>{v['hit_tokens']:,}</td>{lru_cell if with_lru else ''}</tr>"
        )
    engines = "".join(engine_rows)
    lru_head = "<th>with an LRU cache</th>" if with_lru else ""
    legend = "".join(
        f'<span style="background:{_colour(s)}">{s:.0%} of requests</span>'
        for s in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    tree = _tree(representative.get("tree", []), requests)
    if tree:
        tree = (
            "<h2>Where the requests branch</h2><p>The prompts of each cause's example request and"
            f' of the first one, as a tree of the tokens they share.</p><div id="tree">{tree}</div>'
        )
    boundaries = _boundaries_text(profile, engine, drawn, len(tokens))
    data = json.dumps({"requests": report.get("requests"), "tokens": report.get("tokens")})
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>prefixlint explain</title>
<style>{_CSS}</style><script>{_SCRIPT}</script></head>
<body data-report='{html.escape(data)}'>
<h1>Why the prefix cache misses</h1>
<p>{report.get("requests", 0):,} requests, {report.get("tokens", 0):,} prompt tokens.</p>
<p id="inputs">{_inputs(report)}</p>
<h2>Hit rate per engine</h2>
<table id="engines"><tr><th>engine</th><th>hit rate</th><th>hit tokens</th>{lru_head}</tr>
{engines}</table>
{_charts(report)}
{_curve(report)}<h2>Causes, ranked by tokens lost</h2>
<table id="causes"><tr><th>#</th><th>section</th><th>template</th><th>token</th><th>requests</th>
<th>tokens lost</th><th>what differs</th><th>hit rate if moved to the end of its message</th>
<th>TTFT saved per request</th></tr>
{"".join(rows)}</table>
{tree}
{_breaks(report)}<h2>A representative prompt</h2>
<p class="legend">Each token is coloured by how many requests shared the prompt up to it. {legend}
{html.escape(boundaries)} Red outline: where the top cause diverges.</p>
<div class="prompt">{"".join(spans)}</div>
</body></html>
"""
