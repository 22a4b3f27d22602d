"""The `--html` page: one self-contained file (inline CSS and script, no network) showing a
representative prompt as tokens coloured by how many requests shared the prefix up to each, the
engine's block boundaries, the divergence point, and the ranked causes."""

from __future__ import annotations

import html
import json
from typing import Any

from prefixlint.engines import load_engines

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
"""

# Counts the page's own tokens once it is loaded: the headless-browser test reads these back.
_SCRIPT = """
document.addEventListener('DOMContentLoaded',function(){
  var t=document.querySelectorAll('.prompt .tok');
  document.body.dataset.tokens=t.length;
  document.body.dataset.blocks=document.querySelectorAll('.prompt .blk').length;
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


def render_html(report: dict[str, Any], representative: dict[str, Any], engine: str) -> str:
    """The page for a log report (`LogReport.to_json()`) and its representative prompt."""
    block = load_engines()[engine].block_size if engine in load_engines() else 1
    requests = max(int(report.get("requests", 0)), 1)
    tokens: list[str] = representative.get("tokens", [])
    shared_by: list[int] = representative.get("shared_by", [])
    divergence = representative.get("divergence")
    spans = []
    for i, piece in enumerate(tokens):
        count = shared_by[i] if i < len(shared_by) else 0
        classes = "tok blk" if block > 1 and i % block == 0 else "tok"
        ident = ' id="divergence"' if i == divergence else ""
        title = f"token {i}: shared by {count} of {requests} requests"
        spans.append(
            f'<span class="{classes}"{ident} data-i="{i}" data-shared="{count}" title="{title}" '
            f'style="background:{_colour(count / requests)}">{html.escape(piece)}</span>'
        )
    rows = []
    for rank, c in enumerate(report.get("causes", []), 1):
        what_if = c.get("what_if_hit_rate")
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
            f"<td>{html.escape(c['kind'])}: {example}</td>"
            f"<td>{'' if what_if is None else f'{what_if:.1%}'}</td></tr>"
        )
    engine_rows = []
    for name, v in report.get("engines", {}).items():
        lru = v.get("lru")
        lru_cell = f"{lru['hit_rate']:.1%} (LRU {lru['capacity_tokens']:,} tokens)" if lru else ""
        engine_rows.append(
            f'<tr class="engine"><td>{html.escape(name)}</td><td>{v["hit_rate"]:.1%}</td>'
            f"<td>{v['hit_tokens']:,}</td><td>{lru_cell}</td></tr>"
        )
    engines = "".join(engine_rows)
    legend = "".join(
        f'<span style="background:{_colour(s)}">{s:.0%} of requests</span>'
        for s in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    data = json.dumps({"requests": report.get("requests"), "tokens": report.get("tokens")})
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>prefixlint explain</title>
<style>{_CSS}</style><script>{_SCRIPT}</script></head>
<body data-report='{html.escape(data)}'>
<h1>Why the prefix cache misses</h1>
<p>{report.get("requests", 0):,} requests, {report.get("tokens", 0):,} prompt tokens.</p>
<p id="inputs">{_inputs(report)}</p>
<h2>Hit rate per engine</h2>
<table id="engines"><tr><th>engine</th><th>hit rate</th><th>hit tokens</th><th>with an LRU cache</th></tr>
{engines}</table>
<h2>Causes, ranked by tokens lost</h2>
<table id="causes"><tr><th>#</th><th>section</th><th>template</th><th>token</th><th>requests</th>
<th>tokens lost</th><th>what differs</th><th>hit rate if moved</th></tr>
{"".join(rows)}</table>
{_breaks(report)}<h2>A representative prompt</h2>
<p class="legend">Each token is coloured by how many requests shared the prompt up to it. {legend}
Blue bars: {engine} blocks of {block} tokens. Red outline: where the top cause diverges.</p>
<div class="prompt">{"".join(spans)}</div>
</body></html>
"""
