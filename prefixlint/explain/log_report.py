"""What `explain --log` reports of a log: the LogReport its run fills in, as JSON (the contract)
and as plain text; and why a log that gave no request is a usage error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prefixlint.explain.breakpoints import breakpoints_text
from prefixlint.explain.causes import Cause
from prefixlint.explain.conversations import conversations_text

SHOWN_BREAKS = 5  # conversation breaks the text report shows (the JSON has them all)


@dataclass
class LogReport:
    requests: int
    tokens: int
    engines: dict[str, dict[str, object]]
    causes: list[Cause]
    skipped: int
    skip_reasons: list[str]
    primary: str
    representative: dict[str, Any] = field(default_factory=dict)
    routing: dict[str, dict[str, object]] | None = None  # per policy, with --replicas
    log_format: str | None = None
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    sample: dict[str, int] | None = None  # set when --max-requests stopped the reading
    conversations: dict[str, Any] | None = None  # Conversations.to_json(): turns that break the prefix
    breakpoints: dict[str, Any] | None = None  # ProviderBreakpoints.to_json(), for Anthropic bodies
    capacity_curve: list[dict[str, object]] | None = None  # with --capacity-curve: [{tokens, hit_rate}]
    curve_engine: str | None = None  # the engine whose block cache the curve is of
    trace: dict[str, Any] | None = None  # read from a trace (--trace): its block size, why no causes

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "requests": self.requests,
            "tokens": self.tokens,
            "skipped": self.skipped,
            "skip_reasons": self.skip_reasons,
            "skipped_by_reason": self.skipped_by_reason,
            "log_format": self.log_format,
            "sample": self.sample,
            "engine": self.primary,
            "engines": self.engines,
            "routing": self.routing,
            "causes": [c.to_json(self.requests, self.primary) for c in self.causes],
            "conversations": self.conversations,
            "breakpoints": self.breakpoints,
            "capacity_curve": self.capacity_curve,
            "capacity_curve_engine": self.curve_engine,
            "trace": self.trace,
        }


def nothing_read(path: str, report: LogReport) -> str | None:
    """Why a log gave no request to explain, naming the file and the skip reasons (a usage error:
    0 requests and a 0% hit rate would read like a real result); None when it gave some."""
    if report.requests:
        return None
    if not report.skipped:
        return f"{path}: no request in this log: it holds no line"
    reasons = ", ".join(f"{n:,} {reason}" for reason, n in report.skipped_by_reason.items())
    lines = "line" if report.skipped == 1 else "lines"
    return (
        f"{path}: no readable request in this log: {report.skipped:,} {lines} skipped ({reasons}; "
        f"first: {report.skip_reasons[0]}); `--log-format` names the format when detection guesses wrong"
    )


def log_text(report: LogReport) -> str:
    """The log explanation as plain lines: hit rates, then causes with their what-ifs."""
    out = [f"{report.requests:,} requests, {report.tokens:,} prompt tokens"]
    if report.sample:
        out.append(
            f"sampled: the first {report.sample['max_requests']:,} requests of the log (--max-requests); "
            f"reading stopped at line {report.sample['stopped_at_line']:,}"
        )
    if report.skipped:
        reasons = ", ".join(f"{n:,} {reason}" for reason, n in report.skipped_by_reason.items())
        lines = "line" if report.skipped == 1 else "lines"
        out.append(f"{report.skipped:,} {lines} skipped ({reasons}; first: {report.skip_reasons[0]})")
    for name, v in report.engines.items():
        line = (
            f"  {name:<10} hit rate {float(v['hit_rate']):7.2%}  ({int(v['hit_tokens']):,} tokens from cache)"  # type: ignore[arg-type]
        )
        lru = v.get("lru")
        if isinstance(lru, dict):
            line += f"; LRU {lru['capacity_tokens']:,} tokens: {lru['hit_rate']:.2%}"
        out.append(line)
    if report.routing:
        policies = ", ".join(
            f"{name} {float(v['hit_rate']):.2%}" + (" (now)" if v["current"] else "")  # type: ignore[arg-type]
            for name, v in report.routing.items()
        )
        replicas = next(iter(report.routing.values()))["replicas"]
        out.append(f"  {report.primary} over {replicas} replicas, by routing: {policies}")
    if report.capacity_curve is not None:
        out += curve_text(report.capacity_curve, report.curve_engine)
    if report.trace is not None:
        out.append(f"No causes: {report.trace['note']}.")
        if "warning" in report.trace:
            out.append(f"warning: {report.trace['warning']}")
    elif not report.causes:
        out.append("No request diverges from an earlier one: nothing to explain.")
    for rank, c in enumerate(report.causes, 1):
        share = c.count / report.requests if report.requests else 0.0
        where = c.section + (
            f", template line {c.template_line}: {c.template_text}" if c.template_line else ""
        )
        out.append(f"{rank}. {share:.1%} of requests diverge at token {c.token_index} in {where}")
        out.append(f"   {c.kind}: {c.example_a!r} vs {c.example_b!r}")
        if c.tokens_lost:
            out.append(f"   {c.tokens_lost:,} static tokens after it recomputed")
        else:
            out.append("   nothing static follows: the requests' own content differs from here")
        if c.what_if and c.span is not None:
            before = float(report.engines[report.primary]["hit_rate"])  # type: ignore[arg-type]
            after = c.what_if.get(report.primary, 0.0)
            saved = c.ttft_ms_saved_per_request
            out.append(
                f"   what if {c.span.text!r} (after `{c.anchor}`) moved to the end of its message: "
                f"{report.primary} hit rate {before:.1%} → {after:.1%}"
                + (f", {saved:,.0f} ms less TTFT per request" if saved is not None else "")
            )
    if report.breakpoints:
        out += breakpoints_text(report.breakpoints, SHOWN_BREAKS)
    if report.conversations and report.conversations["count"]:
        out += conversations_text(report.conversations, SHOWN_BREAKS)
    return "\n".join(out) + "\n"


def curve_text(points: list[dict[str, object]], engine: str | None) -> list[str]:
    """The capacity curve as lines: the hit rate at each cache size."""
    if not points:
        return [f"capacity curve ({engine or 'no block-pool engine'}): no request to measure"]
    out = [f"capacity curve: {engine} hit rate by cache size (LRU of blocks, from reuse distances)"]
    out += [f"  {int(p['tokens']):>13,} tokens  {float(p['hit_rate']):7.2%}" for p in points]  # type: ignore[call-overload, arg-type]
    return out
