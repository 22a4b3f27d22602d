"""Which findings of one repository changed severity between two prefixlint checkouts, and the CPU
seconds each took. Prints figures; run by hand (not by the test suite):

    python bench/severity_diff.py REPO --before /path/to/main --after /path/to/branch

Each checkout runs `check --no-cache --format json .` in REPO (its package first on PYTHONPATH, a
fresh PREFIXLINT_CACHE_DIR), one after the other, with CPU seconds as user + sys of the run and its
pool workers. Then every finding (path, line, column, code) whose severity differs, or that only one
side has, is printed with the after side's message, to be read in the code and given a verdict.

Measured for issue 28 point 4 (request entry points): gpt-researcher (TUNED), 7 findings info ->
warning, all TRUE per the reviews; see the branch's report for langroid, pr-agent, DB-GPT, ragflow.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile


def _run(repo: str, checkout: str) -> tuple[dict, float]:
    env = dict(os.environ, PYTHONPATH=checkout)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as cache:
        env["PREFIXLINT_CACHE_DIR"] = cache
        done = subprocess.run(
            [sys.executable, "-m", "prefixlint", "check", "--no-cache", "--format", "json", "."],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout), cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("--before", required=True, help="a prefixlint checkout (put first on PYTHONPATH)")
    parser.add_argument("--after", required=True, help="another checkout")
    args = parser.parse_args()
    (old, old_cpu), (new, new_cpu) = _run(args.repo, args.before), _run(args.repo, args.after)

    def key(d: dict) -> tuple:
        return (d["path"], d["line"], d["column"], d["code"])

    olds = {key(d): d for d in old["diagnostics"]}
    news = {key(d): d for d in new["diagnostics"]}
    print(f"{args.repo}: CPU s before {old_cpu:.1f}, after {new_cpu:.1f}")
    print(f"findings before {len(olds)}, after {len(news)}")
    for k in sorted(olds.keys() | news.keys()):
        a, b = olds.get(k, {}).get("severity"), news.get(k, {}).get("severity")
        if a != b:
            message = (news.get(k) or olds[k])["message"]
            print(f"{k[0]}:{k[1]}:{k[2]} {k[3]} {a} -> {b}: {message}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
