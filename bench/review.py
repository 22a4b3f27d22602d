"""prefixlint on real repositories, scored against findings reviewed by hand. Run by hand (not by the
test suite; one run takes about a minute on a shared 2-core machine):

    python bench/review.py --repos-dir /work/repos [--only geekan__MetaGPT] [--source /path/to/checkout]

`--source` measures the prefixlint package of that checkout (put first on PYTHONPATH) instead of the
installed one: pass the checkout of the version you mean (the "before" figures in the report were
made with the commit named on the `# prefixlint:` line it prints).

The labelled set lives in bench/review/:

- `<owner>__<name>.tsv`, one per repository: `repo commit path line code verdict reason`, one row per
  finding prefixlint reported when the set was made, `verdict` = `real` (the volatile value reaches
  prompt text sent to a model, ahead of a meaningful amount of static text, ≥ ~16 tokens, of the same
  request) or `false`, with a one-line reason read from the code.
- `missed.tsv`: `repo commit path line code shape note`, real cache-busters seen while reading that
  prefixlint did not report (the shape says why it is hard: helper in another module, wrapper call,
  positional argument, ...).

Only paths, lines, verdicts and commits are kept here, never the repositories' files.

Getting the repositories (each folder named like its TSV, checked out at the TSV's commit):

    python bench/review.py --print-setup --repos-dir /work/repos    # prints the commands below
    git clone https://github.com/geekan/MetaGPT /work/repos/geekan__MetaGPT
    git -C /work/repos/geekan__MetaGPT checkout --detach ba2868974b2ecc3fe4218ad29dd334867c07f678
    (the same for every other TSV here: camel-ai/camel, letta-ai/letta, and khoj-ai/khoj and
    TransformerOptimus/SuperAGI, reviewed held out; gpt-engineer-org/gpt-engineer and
    stitionai/devika, reviewed held out at merge41 (issue 28, stop 41: verdicts real, false or
    debatable, the last counted in neither); the commits are in the TSVs)

From a partial mirror that lacks some large blobs (a plain checkout fails on them), check out only
the blobs present: `git ls-tree -r -z <commit>` → `git cat-file --batch-check` → keep the ones not
`missing` → `git checkout <commit> --pathspec-from-file=<list> --pathspec-file-nul`, then
`git checkout --detach <commit>`; every .py file is small, so nothing prefixlint reads is lost.

For each repository the script runs `python -m prefixlint check . --format json --no-cache` inside it
(the prefixlint that this interpreter imports), matches each finding to a labelled row (same path and
code, line within ±3) and prints: files (.py / templates), wall time, peak memory, findings per code,
reviewed real / false, unreviewed findings (listed as TSV rows ready to label), precision = real /
(real + false) among the reviewed, and how many rows of missed.tsv are now found. A checkout at
another commit than the TSV's is reported (line numbers may have moved).
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
LINE_SLACK = 3


def read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def env_for(source: Path | None) -> dict[str, str]:
    """The environment of the prefixlint runs: with `source`, that checkout's package comes first."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source.resolve()), env.get("PYTHONPATH", "")]))
    return env


def prefixlint_version(env: dict[str, str]) -> str:
    """Where the prefixlint being measured comes from: its folder, commit and whether it is edited."""
    code = "import prefixlint, os; print(os.path.dirname(os.path.dirname(prefixlint.__file__)))"
    where = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/")
    folder = where.stdout.strip()
    # The last commit that changed the package (a bench-only commit on top does not change what runs).
    log = ["git", "-C", folder, "log", "-1", "--format=%h", "--", "prefixlint"]
    commit = subprocess.run(log, capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", folder, "status", "--porcelain", "--", "prefixlint"], capture_output=True, text=True
    )
    edited = " + uncommitted edits" if dirty.stdout.strip() else ""
    return f"{folder}, package at commit {commit.stdout.strip() or '?'}{edited}"


def run_check(repo_dir: Path, env: dict[str, str]) -> tuple[dict, float, float]:
    """(the JSON report, wall seconds, peak RSS in MB) of one cold check of the whole repository."""
    args = [sys.executable, "-m", "prefixlint", "check", ".", "--format", "json", "--no-cache"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(args, cwd=repo_dir, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        out.seek(0)
        err.seek(0)
        if code not in (0, 1):
            raise SystemExit(f"prefixlint failed ({code}) in {repo_dir}:\n{err.read().decode()[-2000:]}")
        return json.loads(out.read()), wall, usage.ru_maxrss / 1024


def rel(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def match(diag: dict, rows: list[dict[str, str]]) -> dict[str, str] | None:
    """The labelled row for a finding: same path and code, the nearest line within ±LINE_SLACK."""
    best = None
    for row in rows:
        if row["path"] != rel(diag["path"]) or row["code"] != diag["code"]:
            continue
        distance = abs(int(row["line"]) - int(diag["line"]))
        if distance <= LINE_SLACK and (best is None or distance < best[0]):
            best = (distance, row)
    return best[1] if best else None


def head_commit(repo_dir: Path) -> str:
    proc = subprocess.run(["git", "-C", str(repo_dir), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip()


def review_repo(
    name: str, repo_dir: Path, rows: list[dict[str, str]], missed: list[dict[str, str]], env: dict[str, str]
) -> dict:
    commit = rows[0]["commit"] if rows else ""
    head = head_commit(repo_dir)
    if commit and head != commit:
        print(f"  ! {repo_dir} is at {head or 'no git commit'}, the labels are for {commit}", flush=True)
    report, wall, peak = run_check(repo_dir, env)
    kinds = collections.Counter(source.get("kind") for source in report.get("sources", []))
    diags = report.get("diagnostics", [])
    per_code = collections.Counter(d["code"] for d in diags)
    verdicts = collections.Counter()
    unreviewed = []
    false_positives = []
    for diag in sorted(diags, key=lambda d: (rel(d["path"]), d["line"], d["code"])):
        row = match(diag, rows)
        if row is None:
            unreviewed.append(diag)
        else:
            verdicts[row["verdict"]] += 1
            if row["verdict"] == "false":
                false_positives.append((diag, row))
    found = [m for m in missed if any(match(d, [m]) for d in diags)]
    reviewed = verdicts["real"] + verdicts["false"]
    result = {
        "repo": name,
        "python": kinds.get("python", 0),
        "templates": sum(n for kind, n in kinds.items() if kind != "python"),
        "wall": wall,
        "peak_mb": peak,
        "findings": len(diags),
        "per_code": dict(sorted(per_code.items())),
        "real": verdicts["real"],
        "false": verdicts["false"],
        "unreviewed": len(unreviewed),
        "precision": verdicts["real"] / reviewed if reviewed else None,
        "missed": len(missed),
        "missed_found": len(found),
    }
    print(
        f"  {name:<22} {result['python']:5d} py {result['templates']:3d} tpl {wall:7.2f} s {peak:6.0f} MB"
        f"  findings {len(diags):3d}  real {result['real']:3d}  false {result['false']:3d}"
        f"  unreviewed {len(unreviewed):3d}  precision "
        + (f"{result['precision']:.2f}" if result["precision"] is not None else "  - ")
        + f"  missed found {len(found)}/{len(missed)}",
        flush=True,
    )
    print(f"    per code: {', '.join(f'{c} {n}' for c, n in result['per_code'].items()) or '-'}")
    for diag, row in false_positives:  # what to fix next
        print(f"    false\t{rel(diag['path'])}:{diag['line']}\t{diag['code']}\t{row['reason'][:120]}")
    for diag in unreviewed:
        message = " ".join(diag.get("message", "").split())[:160]
        repo = rows[0]["repo"] if rows else name.replace("__", "/", 1)
        where = f"{rel(diag['path'])}\t{diag['line']}\t{diag['code']}"
        print(f"    unreviewed\t{repo}\t{head}\t{where}\t?\t{message}")
    for row in found:
        print(f"    now found (was missed): {row['path']}:{row['line']} {row['code']}")
    return result


def print_setup(review_dir: Path, repos_dir: Path) -> None:
    for tsv in sorted(review_dir.glob("*__*.tsv")):
        rows = read_tsv(tsv)
        if not rows:
            continue
        target = repos_dir / tsv.stem
        print(f"git clone https://github.com/{rows[0]['repo']} {target}")
        print(f"git -C {target} checkout --detach {rows[0]['commit']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repos-dir", type=Path, default=Path("/work/repos"))
    parser.add_argument("--review-dir", type=Path, default=BENCH / "review")
    parser.add_argument("--only", default="", help="comma-separated folder names (owner__name)")
    parser.add_argument("--print-setup", action="store_true", help="print the clone/checkout commands")
    parser.add_argument(
        "--source", type=Path, help="a prefixlint checkout to measure (default: the installed prefixlint)"
    )
    parser.add_argument("--json", type=Path, help="also write the per-repository figures here")
    args = parser.parse_args()
    if args.print_setup:
        print_setup(args.review_dir, args.repos_dir)
        return
    missed_all = read_tsv(args.review_dir / "missed.tsv") if (args.review_dir / "missed.tsv").exists() else []
    only = {name for name in args.only.split(",") if name}
    results = []
    version = sys.version.split()[0]
    env = env_for(args.source)
    print(f"# prefixlint on reviewed repositories ({args.repos_dir}), python {version}", flush=True)
    print(f"# prefixlint: {prefixlint_version(env)}", flush=True)
    for tsv in sorted(args.review_dir.glob("*__*.tsv")):
        name = tsv.stem
        if only and name not in only:
            continue
        repo_dir = args.repos_dir / name
        if not repo_dir.is_dir():
            print(f"  {name}: no checkout at {repo_dir} (see --print-setup)", flush=True)
            continue
        rows = read_tsv(tsv)
        repo = rows[0]["repo"] if rows else name.replace("__", "/", 1)
        missed = [m for m in missed_all if m["repo"] == repo]
        results.append(review_repo(name, repo_dir, rows, missed, env))
    if results:
        real = sum(r["real"] for r in results)
        false = sum(r["false"] for r in results)
        print(
            f"  {'total':<22} findings {sum(r['findings'] for r in results)}  real {real}  false {false}"
            f"  unreviewed {sum(r['unreviewed'] for r in results)}  precision "
            + (f"{real / (real + false):.2f}" if real + false else "-")
            + f"  missed found {sum(r['missed_found'] for r in results)}/{sum(r['missed'] for r in results)}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
