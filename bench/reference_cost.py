"""What telling dead prompt builders apart costs (issue 28 point 2, prefixlint/python/references.py):
the CPU a whole `check` of a repository spends in the reference judgement, against the whole check.

    python bench/reference_cost.py REPO...

Prints, per repository, the CPU seconds of the whole check in this process (one worker, no result
cache, tokenizer loading included), the part spent judging candidates no sink is seen to send
(building the project's text once, searching it by name), the modules judged, and the findings.
Measured in CPU seconds, not wall time: the machine is shared.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's prefixlint, not an installed one

from prefixlint.api import Options, lint_paths  # noqa: E402
from prefixlint.python import references  # noqa: E402


def measure(repo: str) -> tuple[float, float, int, int]:
    """(whole check, reference judgement, modules judged, findings), CPU seconds."""
    spent = [0.0, 0]
    judge = references.judge_unreached

    def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
        start = time.process_time()
        try:
            return judge(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - start
            spent[1] += 1

    references.judge_unreached = timed  # analyze.py imports it at call time
    here = os.getcwd()
    os.chdir(repo)
    try:
        start = time.process_time()
        report = lint_paths(["."], Options(), workers=1)
        total = time.process_time() - start
    finally:
        os.chdir(here)
        references.judge_unreached = judge
    return total, spent[0], spent[1], len(report.diagnostics)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for repo in argv:
        total, judged, modules, found = measure(repo)
        share = 100 * judged / total if total else 0.0
        print(
            f"{repo}: check {total:.2f} s CPU, references {judged:.2f} s ({share:.1f}%) "
            f"in {modules} modules, {found} findings"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
