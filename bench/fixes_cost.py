"""What looking for verified fixes costs (issue 23): each candidate is one more analysis of the
fixed text, paid once per content (the result cache keeps the fix), at most MAX_REANALYSES a source.

    python bench/fixes_cost.py [--runs N] [PATH...]     (default: fixtures/ and ../shared/corpus/python)

Prints, per source with a finding a fix is looked for, the analysis time without fixes and with
them (CPU seconds, best of N (3), in this process, tokenizer loaded, no result cache), the
analyses of fixed text made and the verified fixes, then the totals (the verified fixes of the
Python sources by applicability: issue 23's "35 of 70"); and the pre-commit shape:
`prefixlint check FILE --no-cache` in a fresh process for the file
whose fixes cost most, median of N, wall and CPU, with and without fixes (the CLI runs through a
wrapper that sets `Options.fixes`; the command line has no switch for it).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's prefixlint, not an installed one

_WRAPPER = """
import sys
import prefixlint.settings as settings
settings.Options.fixes = {fixes}
from prefixlint.cli import main
main(sys.argv[1:])
"""


def _best(func, runs: int = 3) -> float:  # type: ignore[no-untyped-def]
    """CPU seconds of this process (the machine is shared: wall time follows the others' load)."""
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        func()
        best = min(best, time.process_time() - start)
    return best


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli_seconds(path: str, fixes: bool, runs: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of `check --no-cache PATH` in a fresh process (its tokenizer
    helper's CPU included)."""
    code = _WRAPPER.format(fixes=fixes)
    walls, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), _children_cpu()
        subprocess.run(
            [sys.executable, "-c", code, "check", "--no-cache", "-q", "--exit-zero", path],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main(paths: list[str], runs: int) -> None:
    import prefixlint.api as api
    from prefixlint.api import analyse_source, iter_sources
    from prefixlint.settings import Options

    plain, fixing = Options(fixes=False), Options(fixes=True)
    sources = list(iter_sources(paths, plain))
    for source in sources[:1]:
        analyse_source(source, plain)  # load the tokenizer once
    analysed = [0]
    lint_source = api.lint_source

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        analysed[0] += 1
        return lint_source(*args, **kwargs)

    rows = []
    python: dict[str, int] = {"safe": 0, "unsafe": 0, "none": 0}
    for source in sources:
        api.lint_source, analysed[0] = counted, 0
        results = analyse_source(source, fixing)
        api.lint_source, reanalyses = lint_source, analysed[0] - 1
        found = [d for r in results for d in r.diagnostics if d.code[3] in "12345"]
        if not found:
            continue
        if source.kind == "python":
            for d in found:
                python[d.fix.applicability if d.fix else "none"] += 1
        without = _best(lambda s=source: analyse_source(s, plain), runs)
        with_fixes = _best(lambda s=source: analyse_source(s, fixing), runs)
        fixed = sum(d.fix is not None for d in found)
        rows.append((source.path, without, with_fixes, reanalyses, fixed, len(found)))
    width = max((len(r[0]) for r in rows), default=10)
    print(f"{'source':<{width}}  CPU without   with fixes  analyses of fixed text  fixed/findings")
    for path, without, with_fixes, reanalyses, fixed, found in rows:
        print(
            f"{path:<{width}}  {without * 1000:9.0f} ms  {with_fixes * 1000:6.0f} ms  "
            f"{reanalyses:22d}  {fixed}/{found}"
        )
    total_without = sum(r[1] for r in rows)
    total_with = sum(r[2] for r in rows)
    print(f"total CPU over {len(rows)} sources: {total_without:.2f} s without, {total_with:.2f} s with fixes")
    most = max((r[3] for r in rows), default=0)
    print(f"analyses of fixed text: {sum(r[3] for r in rows)}, at most {most} a source")
    if any(python.values()):
        print(
            f"Python: {python['safe'] + python['unsafe']} of {sum(python.values())} fixable findings "
            f"with a verified fix ({python['safe']} safe, {python['unsafe']} unsafe, {python['none']} none)"
        )
    if rows:
        slowest = max(rows, key=lambda r: r[2] - r[1])[0]
        (off, off_cpu), (on, on_cpu) = _cli_seconds(slowest, False, runs), _cli_seconds(slowest, True, runs)
        print(
            f"pre-commit shape, `check --no-cache {slowest}`: {off:.2f} s ({off_cpu:.2f} s CPU) without, "
            f"{on:.2f} s ({on_cpu:.2f} s CPU) with fixes"
        )


if __name__ == "__main__":
    args = sys.argv[1:]
    runs = 3
    if args[:1] == ["--runs"]:
        runs, args = int(args[1]), args[2:]
    main(args or ["fixtures/", str(REPO.parent / "shared" / "corpus" / "python")], runs)
