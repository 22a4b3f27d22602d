"""A one-file pre-commit run beside the floor of its imports, measured in one run. Prints figures;
run by hand (not by the test suite):

    python bench/hook.py [--runs 5] [--source CHECKOUT]

The floor is `python -c "import click, jinja2, libcst, tokenizers"`: the libraries a run needs,
imported and nothing done. The hook runs are `prefixlint check --force-exclude FILE` in a fresh git
repository holding a Python file and a chat template, each with a finding (copies of
fixtures/python/openai_alias_clock.py and fixtures/templates/clock_in_system.jinja), with the
cache in a temporary folder:

- cold: `--no-cache`, the tokenizer loaded;
- first run with the cache: no encodings remembered and no index of the tokenizer yet, so the
  tokenizer loads, and the run writes the index (prefixlint/models/token_index.py) once (timed once:
  there is only one first run);
- edited, prompt text the same: a new comment appended before each run, so neither the replayed
  run nor the result cache can answer, and only the encodings remembered by the last run can
  (prefixlint/models/token_memo.py): the usual hook run;
- edited, prompt text changed: a word of the prompt changed before each run, so the new text is
  encoded from the index: a tokenizer holding only the tokens its words can use, the tokenizer
  file itself not loaded.

Each figure is the best of `--runs` runs, in CPU seconds (user + system, the process and its
helpers): the machine may be shared, and CPU time says what wall time cannot. The floor and the
two edits run in turn (floor, edit, edit, floor, ...), so that a change in the machine's load
weighs on all three alike. The last lines check that the edited runs report what a cold run
reports for the same file (JSON, byte for byte), for both kinds of edit, and give each hook time
as a multiple of the floor.

Measured on the shared 2-core machine (load average 8 to 10, the test suite running beside it),
best of 5, `python bench/hook.py` and, for the commit before the index (2003103, unpacked with
`git archive`), `python bench/hook.py --source CHECKOUT`:

    edit                              before (2003103)   with the index
    app.py, prompt text the same      1.33x              1.34x
    app.py, prompt text changed       2.41x              1.46x
    chat.jinja, prompt text the same  0.91x              1.26x (noise: alternated, 0.31 s and 0.34 s)
    chat.jinja, prompt text changed   2.33x              1.39x
    first run, app.py / chat.jinja    3.15x / 2.34x      5.69x / 6.17x (writes the index, once)

with the floor at 0.39 s and 0.34 s of CPU; every edited run's JSON was the cold run's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PY = sys.executable
FLOOR = "import click, jinja2, libcst, tokenizers"


def cpu_of(
    args: list[str], env: dict[str, str], cwd: Path | None = None, expect: int = 1
) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one command (its helpers included: it reaps them),
    which must exit `expect` (1: it found the finding)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != expect:
        raise SystemExit(f"exit {proc.returncode}, not {expect}: {' '.join(args)}")
    return usage.ru_utime + usage.ru_stime, wall, out.decode()


def best(runs: list[tuple[float, float, str]]) -> tuple[float, float]:
    return min(r[0] for r in runs), min(r[1] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--source", type=Path, default=REPO, help="the prefixlint checkout to time")
    args = parser.parse_args()
    # As an installed tool runs: with compiled bytecode, this checkout's package first.
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PREFIXLINT_CACHE_DIR")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.source.resolve()), env.get("PYTHONPATH")]))
    subprocess.run([PY, "-m", "compileall", "-q", str(args.source / "prefixlint")], check=True, env=env)
    print(
        f"# one-file hook runs beside the import floor, best of {args.runs}; {os.cpu_count()} cores",
        flush=True,
    )
    print(f"# {PY}, prefixlint from {args.source.resolve()}", flush=True)
    floors: list[tuple[float, float, str]] = []
    lines: list[tuple[str, tuple[float, float]]] = []
    verdicts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="prefixlint-hook-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        cases = {
            "app.py": (REPO / "fixtures/python/openai_alias_clock.py", "# edit {k}\n", "Answer in English"),
            "chat.jinja": (
                REPO / "fixtures/templates/clock_in_system.jinja",
                "{{# edit {k} #}}\n",
                "travel company",
            ),
        }
        for name, (fixture, comment, word) in cases.items():
            env["PREFIXLINT_CACHE_DIR"] = str(Path(tmp) / f"cache-{name}")  # each case from empty
            path = repo / name
            shutil.copy(fixture, path)
            original = path.read_text(encoding="utf-8")
            hook = [PY, "-m", "prefixlint", "check", "--force-exclude", name]
            coldrun = best([cpu_of([*hook, "--no-cache"], env, repo) for _ in range(args.runs)])
            first = best([cpu_of(hook, env, repo)])  # the run before the edit: the last commit's
            same, changed = [], []
            # In turn, so that a change in the machine's load weighs on the floor and both edits alike.
            for k in range(args.runs):
                floors.append(cpu_of([PY, "-c", FLOOR], env, expect=0))
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(comment.format(k=k))  # the prompt text of the run before
                same.append(cpu_of(hook, env, repo))
                path.write_text(original.replace(word, f"{word} ({k})"), encoding="utf-8")
                changed.append(cpu_of(hook, env, repo))
            # The verdicts: a hook run of an edited file reports what a cold run of it reports.
            json_args = [*hook[:-1], "--format", "json", name]
            for edit, text in (
                ("prompt text the same", path.read_text(encoding="utf-8") + comment.format(k="json")),
                ("prompt text changed", original.replace(word, f"{word} (json)")),
            ):
                path.write_text(text, encoding="utf-8")
                warm_json = cpu_of(json_args, env, repo)[2]
                cold_json = cpu_of([*json_args, "--no-cache"], env, repo)[2]
                verdict = "same as cold" if warm_json == cold_json else "DIFFERS from cold"
                verdicts.append(f"  {name}: JSON of an edited run, {edit}: {verdict}")
            lines += [
                (f"{name}: cold (--no-cache)", coldrun),
                (f"{name}: first run, writes the index", first),
                (f"{name}: edited, prompt text the same", best(same)),
                (f"{name}: edited, prompt text changed", best(changed)),
            ]
    floor = best(floors)
    print(f"  {'import floor':<44} {floor[0]:6.3f} s CPU {floor[1]:6.3f} s wall  $ python -c {FLOOR!r}")
    for label, figure in lines:
        ratio = figure[0] / floor[0]
        print(f"  {label:<44} {figure[0]:6.3f} s CPU {figure[1]:6.3f} s wall  {ratio:4.2f}x floor")
    print("\n".join(verdicts))
    for edit in ("prompt text the same", "prompt text changed"):
        ratios = [
            f"{label.split(':')[0]} {figure[0] / floor[0]:.2f}x" for label, figure in lines if edit in label
        ]
        print(f"# hook ({edit}) / floor: " + ", ".join(ratios))


if __name__ == "__main__":
    main()
