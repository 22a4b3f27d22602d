"""What looking for verified fixes costs (issue 23): each candidate is one more analysis of the
fixed text, paid once per content (the result cache keeps the fix).

    python bench/fixes_cost.py [PATH...]        (default: fixtures/)

Prints, per source with a finding a fix is looked for, the analysis time without fixes and with
them (best of 3, in this process, tokenizer loaded, no result cache), then the totals; and the
pre-commit shape: `prefixlint check FILE --no-cache` in a fresh process for the slowest file,
median of 5, with and without fixes (PREFIXLINT_NO_FIXES=1 is read by this script only: it runs
the CLI through a wrapper that turns `Options.fixes` off).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_WRAPPER = """
import sys
import prefixlint.settings as settings
settings.Options.fixes = {fixes}
from prefixlint.cli import main
main(sys.argv[1:])
"""


def _best(func, runs: int = 3) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def _cli_seconds(path: str, fixes: bool, runs: int = 5) -> float:
    code = _WRAPPER.format(fixes=fixes)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code, "check", "--no-cache", "-q", "--exit-zero", path],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(paths: list[str]) -> None:
    from prefixlint.api import analyse_source, iter_sources
    from prefixlint.settings import Options

    plain, fixing = Options(fixes=False), Options(fixes=True)
    sources = list(iter_sources(paths, plain))
    for source in sources[:1]:
        analyse_source(source, plain)  # load the tokenizer once
    rows = []
    for source in sources:
        results = analyse_source(source, fixing)
        found = [d for r in results for d in r.diagnostics if d.code[3] in "12345"]
        if not found or source.kind == "python":  # Python fixes come from the pyfix side
            continue
        without = _best(lambda s=source: analyse_source(s, plain))
        with_fixes = _best(lambda s=source: analyse_source(s, fixing))
        fixed = sum(d.fix is not None for d in found)
        rows.append((source.path, without, with_fixes, fixed, len(found)))
    width = max((len(r[0]) for r in rows), default=10)
    print(f"{'source':<{width}}  without   with fixes  fixed/findings")
    for path, without, with_fixes, fixed, found in rows:
        print(f"{path:<{width}}  {without * 1000:6.0f} ms  {with_fixes * 1000:6.0f} ms   {fixed}/{found}")
    total_without = sum(r[1] for r in rows)
    total_with = sum(r[2] for r in rows)
    print(f"total over {len(rows)} sources: {total_without:.2f} s without, {total_with:.2f} s with fixes")
    if rows:
        slowest = max(rows, key=lambda r: r[2] - r[1])[0]
        off, on = _cli_seconds(slowest, False), _cli_seconds(slowest, True)
        print(f"pre-commit shape, `check --no-cache {slowest}`: {off:.2f} s without, {on:.2f} s with fixes")


if __name__ == "__main__":
    main(sys.argv[1:] or ["fixtures/"])
