"""prefixlint's speed on one large real Python repository, beside `python -c pass`. Prints figures; run
by hand (not by the test suite):

    python bench/python_repo.py REPO --file PATH/IN/REPO.py [--source /path/to/prefixlint/checkout]

e.g. `python bench/python_repo.py /work/repos/camel-ai__camel --file camel/prompts/base.py` (the
repositories of bench/review/, checked out as bench/review.py explains).

1. `python -c pass` and `python -c "import prefixlint"`: the floor of any run.
2. Whole tree, cold: `check --no-cache .` (every source analysed again).
3. Whole tree, warm: `check .` again after one run filled the result cache (best of 3).
4. Pre-commit: `check --force-exclude FILE` on one prompt-building .py file after appending a new
   comment to it, so no cache can answer (best of 3, a new comment each time); the file is restored
   afterwards, byte for byte.
5. With `--slowest N`: the N sources whose cold analysis (one process, verified fixes included)
   took the most CPU, each with its seconds: where a repository's time goes, file by file.

The caches go to a temporary folder (PREFIXLINT_CACHE_DIR), removed at the end, never into the
repository. `--source` puts that checkout's package first on PYTHONPATH (default: the installed one).

Repositories measured (issue 28 point 6), cold, CPU seconds (user + sys, pool workers included) of

    cd REPO && PYTHONPATH=CHECKOUT /usr/bin/time -f '%U %S' \
        python3 -m prefixlint check --no-cache --format json .

on a 2-core machine shared with other work, so figures vary by ±10-15% from run to run; "before" is
main at 2003103, "after" the branch that memoizes evaluation (evaluate.Evaluator.value, module
names read in functions, Project.resolve, string literals). Each before/after pair ran at the same
time, so under the same load (* ragflow's two ran at different times, under different load).
Every repository's JSON output was byte-identical before and after. In one process (no pool),
pr-agent's analysis went from 17.6 to 7.6 s (not paired), XAgent's from 5.3 to 4.6, langroid's
from 31.1 to 29.1 (paired).
All of them were profiled while tuning (griptape only timed): they are tuned figures.

| repository (.py files)       | before | after | .py per CPU s after |
|------------------------------|--------|-------|---------------------|
| qodo-ai/pr-agent (115)       | 24.5   | 15.1  | 7.6                 |
| OpenBMB/XAgent (148)         | 10.7   | 9.7   | 15.3                |
| langroid (438)               | 46.9   | 46.6  | 9.4                 |
| griptape (1,230)             | 19.6   | 19.9  | 61.9                |
| eosphoros-ai/DB-GPT (1,460)  | 94.5   | 92.0  | 15.9                |
| infiniflow/ragflow (1,189)*  | 211.9  | 198.8 | 6.0                 |

Not yet at the issue's 50 .py per CPU second except on griptape (which was there before): what
remains, per profile, is libcst's parse and the position index of every module that has prompt
shapes or is imported by one (about half of langroid's and DB-GPT's time), the verified-fix pass
that `check` runs for each finding (mostly its libcst metadata: 8.7 of DB-GPT's 81.5 s in one
process, for 10 sources), and in ragflow a few modules whose evaluation follows helpers to the
nesting limit (wiki_incremental.py alone: ~18 s).

One parse per module per run (issue 28 point 6, branch parse): the cold rows above, in one
process and with 2 workers (CPU summed over the parent and the workers), as this script's
`whole tree, cold` rows run them (`lint_paths` with `workers` fixed). "before" is main at e4a42e2,
"after" the branch: the parse cache bounded by source size instead of 200 modules (llama_index
core parsed 867 times for 465 modules), the modules with prompt text parsed before the pool forks
(shared by the workers), each worker one contiguous run of the tree. Every repository's JSON
output was byte-identical before and after, and with 1 and 2 workers. Not paired (the two columns
ran minutes apart on the shared machine: +-15%); all repositories were profiled or timed while
tuning, so these are tuned figures. The llama_index row is its slice llama-index-core/llama_index.

| repository (.py files)      | 1 proc. before | after       | .py/s | 2 workers before | after     | .py/s |
|-----------------------------|----------------|-------------|-------|------------------|-----------|-------|
| qodo-ai/pr-agent (115)      | 12.8           | 11.7        | 9.8   | 16.0             | 13.1      | 8.8   |
| huggingface/smolagents (75) | 12.5           | 12.2        | 6.1   | 18.0-19.6        | 13.7-13.9 | 5.4   |
| griptape (1,230)            | 15.1 (17.9)    | 18.9 (17.2) | 65-72 | 21.0             | 20.8      | 59    |
| llama_index core (504)      | 57.4           | 37.2        | 13.5  | 65.0             | 45.4      | 11.1  |
| eosphoros-ai/DB-GPT (1,460) | 99.8           | 70.2        | 20.8  | 107.8            | 92.5      | 15.8  |
| infiniflow/ragflow (1,189)  | 212.0          | 173.0       | 6.9   | not measured     | 210.0     | 5.7   |

(CPU seconds; .py/s: .py files per CPU second after.)

(griptape in brackets: a second pair, run back to back.) The price is memory: peak RSS in one
process 620 MB on llama_index core, 2.0 GB on ragflow (project.MAX_PARSED_BYTES). Still short of
50 .py per CPU second except on griptape. Where the rest goes (cProfile, one process, llama_index
after): libcst's parse and position index of the ~470 modules reached (~10 s of CPU to parse and
index all 504 once, unprofiled), most of them not prompt modules but reached by
`Project.methods_named` (a method call named like `chat`/`query` looked up among all classes of
the project: up to 50 modules parsed per name) and by the callee summaries
(summaries.requests_at_call, memoized per checked file, not per run); the cyclic GC (17% of CPU:
every full collection walks the parsed trees); and the verified-fix pass (libcst's ScopeProvider,
~14% on llama_index for 5 findings).

CPU won back from the fill, landing, source and memory passes (issue 28 point 6, branch speed2):
cold, 2 workers (the default), CPU of `check --no-cache --format json` as above, summed over the
parent and the workers. "before" is main at a70cb6d, "after" the branch; each pair ran at the same
time (under the same load), and every repository's JSON output was byte-identical before and after
(`cmp`). What changed: two name look-ups (fills.used_elsewhere, landing._requests_using) that ran a
backtracking regex over every importer's or every project module's text now look for the name as a
substring first (most of the gain on llama_index: 74 -> 47 s unpaired); fewer cyclic GC collections
during a run and the modules parsed ahead frozen before the fork; the verified-fix pass reuses the
frontend's parse and builds the parent map without libcst's rebuilding visit; whether a module names
a modelled API is searched once per process. All six were profiled or timed while tuning: tuned
figures. The llama_index row is its slice llama-index-core/llama_index.

| repository (.py files)      | before | after | .py per CPU s after |
|-----------------------------|--------|-------|---------------------|
| qodo-ai/pr-agent (115)      | 13.3   | 10.5  | 11.0                |
| huggingface/smolagents (75) | 14.4   | 12.9  | 5.8                 |
| OpenBMB/ChatDev (191)       | 18.8   | 15.1  | 12.6                |
| llama_index core (504)      | 60.6   | 47.6  | 10.6                |
| langroid (438)              | 50.6   | 41.7  | 10.5                |
| eosphoros-ai/DB-GPT (1,460) | 84.2   | 67.9  | 21.5                |

(CPU seconds.) Still short of 50 .py per CPU second. Where the rest goes on llama_index core, in
one process (~36 s): libcst's parse (~7 s) and position index (~7 s) of the ~490 modules parsed (73
checked ones with prompt shapes, the rest reached by Project.methods_named and the callee summaries),
the verified-fix pass (~7 s, mostly libcst's ScopeProvider and PositionProvider for 30 findings),
and the wrapper summaries (summaries.requests_at_call), recomputed for every checked file.

Per-node match memos (issue 28 point 6, branch speed3): `Frameworks.match_callable` and
`valuecalls.sink_reference` read only a module's index and the models table, and are now worked
out once per node instead of once per argument, call and checked file. Cold, 2 workers, CPU of
`check --no-cache --format json` as above; "before" is main at efc4af3, "after" the branch; each
pair ran at the same time, and every JSON output was byte-identical (`cmp`). All three tuned.

| repository (.py files)      | before | after | .py per CPU s after |
|-----------------------------|--------|-------|---------------------|
| qodo-ai/pr-agent (115)      | 13.1   | 12.8  | 9.0                 |
| langroid (438)              | 47.3   | 44.6  | 9.8                 |
| eosphoros-ai/DB-GPT (1,460) | 94.4   | 93.8  | 15.6                |

(CPU seconds; the gains are inside the machine's +-10-15% noise.) Sampled in one process on
pr-agent (a SIGPROF sampler, not cProfile, whose per-call cost inflates the small look-ups it
counts): through_value 6.1% -> 2.6% of the run, find_sinks 19.8% -> 15.3%. Where the rest goes,
sampled the same way: parsing and indexing modules is 34% of pr-agent's run and 45% of DB-GPT's;
the candidates' evaluation (mostly `passed_by_callers`, what the callers of a function pass) 25%
and the sinks' 15% on pr-agent. With 2 workers DB-GPT costs ~78 CPU s against ~56 in one process:
the parse ahead of the fork stops at half the parse cache (359 of 803 modules), and the workers
parse 108 modules both need. Memoizing `_callees` and `find_class` per checked file was measured
too and saved nothing (the first look-up, which parses the module, is the cost), so it is not in.

The fixers read the frontend's parse (issue 28 point 6, branch speed4): the verified-fix pass took
each finding's file's node positions from a second libcst codegen (PositionProvider) and resolved
libcst's scopes up front; it now reads the ranges the frontend's index recorded in the same codegen
(identical, tested) and resolves scopes on the first name look-up. The module screen is answered once
per text in a process, so pool workers reuse what the parse ahead of the fork found. Cold, 2 workers,
CPU of `check --no-cache --format json` as above; "before" is main at 7115d2d, "after" the branch;
each pair ran at the same time on a machine at load 10-25 (other sessions), and every JSON output was
byte-identical (`cmp`), as were fixtures/ and the shared Python corpus. All tuned (gpt-researcher
and TaskWeaver were profiled on this branch).

| repository (.py files)      | before | after | .py per CPU s after |
|-----------------------------|--------|-------|---------------------|
| gpt-researcher (274)        | 26.9   | 26.3  | 10.4                |
| TaskWeaver (167)            | 9.6    | 8.9   | 18.8                |
| qodo-ai/pr-agent (115)      | 10.6   | 10.0  | 11.5                |
| langroid (438)              | 44.8   | 43.1  | 10.2                |
| eosphoros-ai/DB-GPT (1,460) | 83.5   | 76.3  | 19.1                |

(CPU seconds.) In one process on gpt-researcher (tuned) the fixers' `load` went from 4.1 to 0.6 s,
but the pass as a whole only from 11.5 to 10.0 s of 19.8: most of their files look a name up, so
libcst's ScopeProvider (a whole rebuilding visit) still runs, later. Where gpt-researcher's run goes
(SIGPROF sampling, one process): the verified-fix pass ~47-57% (the fixed texts analysed again
~23%, scopes ~9%), parsing and indexing ~22%, the callee summaries ~33% inside the evaluation. On
DB-GPT: parse and index ~44% (32% for imported modules reached by `summaries._callees`,
`methods_named` and `find_class`), the prefilter 8%, the fix pass 8%. Still short of 50 .py per CPU
second: what would get there is not parsing the modules the callee summaries reach when no call in
them can reach a sink, which needs a project-wide, provably conservative screen of that (not built).

The fixers' scope analysis without rebuilding visits (issue 28 point 6, branch speed6): building the
candidate fixes (not verifying them) was mostly libcst's ScopeProvider, four visits that rebuild every
node; they now walk the children lists the fixers already read. Cold, 2 workers, CPU of `check
--no-cache --format json` as above; "before" is main at 78b2e05, "after" the branch; each pair ran at
the same time on a machine at load 3-9, and every JSON output was byte-identical (`cmp`), as was
fixtures/. All three tuned (profiled on this branch).

| repository (.py files)      | before      | after       | .py per CPU s after |
|-----------------------------|-------------|-------------|---------------------|
| khoj (252)                  | 24.0 / 26.6 | 23.3 / 25.4 | 10.8                |
| SuperAGI (461)              | 11.7 / 12.0 | 11.4 / 11.8 | 40.4                |
| mem0 (376)                  | 23.7 / 23.5 | 22.9 / 22.8 | 16.5                |

(CPU seconds, two paired runs each; the second "before" of each was main at 26a52e6, output not
compared.) In one process (unprofiled, process_time) khoj's fix pass is ~5 of ~17 s: ~3.2 s the
re-analysis of 9 fixed texts (src/khoj/routers/helpers.py's one: ~2.2 s, as much as its first
analysis: libcst's parse and index ~16% of it, the evaluation the rest, the callee summaries ~16%),
~1.7 s the candidates (was ~2.6). With 2 workers each repository costs 4-7 CPU s more than in one
process (khoj 19 vs 23, mem0 13 vs 20, SuperAGI 6.5 vs 9.3): more than the whole fix pass, and the
largest remaining cost outside the analysis itself.

Fewer libcst parses and text searches outside the evaluation (issue 28 point 6, branch speed7):
reachability's words parsed with libcst every project module whose text has an `if` line ending
in a literal (`if x is None:` is one), ~1 in 4 modules, only to find no arm that literals decide
(113 of langroid's 438, 41 of pr-agent's; 26% of langroid's cProfile): CPython's parser now screens
their tests first (an over-approximation of `Evaluator.constant`), and none of langroid's 113 is
parsed. The run-time name-read search of every importer (`reachability._read_by_name`: a regex
with no literal prefix, 7% of DB-GPT's cProfile) is answered once per file and process
(`project.text_has`, which `names_api` and `importers` use too), and the project's words are read
once before the pool forks instead of once in each worker. "before" is main at a8b74d9, "after"
the branch; each pair ran at the same time, on a machine at load 10-29 (other sessions: CPU times
are inflated against the tables above), and every JSON output was byte-identical (`cmp`), in one
process and with 2 workers, as were fixtures/ and the shared Python corpus. All tuned.
DB-GPT was profiled (cProfile, one process) but its pair did not finish in time under that load.

| repository (.py files)      | run                       | before | after | .py per CPU s after |
|-----------------------------|---------------------------|--------|-------|---------------------|
| qodo-ai/pr-agent (115)      | 2 workers, load ~4        | 16.6   | 11.8  | 9.7                 |
| qodo-ai/pr-agent (115)      | 1 process, load ~4        | 12.4   | 10.3  | 11.2                |
| qodo-ai/pr-agent (115)      | 2 workers, load ~25       | 25.1   | 17.4  | 6.6                 |
| langroid (438)              | 2 workers, load ~25       | 91.3   | 75.0  | 5.8                 |
| huggingface/smolagents (75) | 2 workers, load ~25       | 33.5   | 25.6  | 2.9                 |
| OpenBMB/XAgent (148)        | 2 workers, load ~25       | 17.3   | 11.1  | 13.3                |
| huggingface/smolagents (75) | 1 process, load ~10 (*)   | 16.8   | 15.0  | 5.0                 |
| OpenBMB/XAgent (148)        | 1 process, load ~10 (*)   | 7.9    | 6.4   | 23.1                |
| OpenBMB/ChatDev (191)       | 1 process, load ~10 (*)   | 20.8   | 17.2  | 11.1                |
| griptape (1,230)            | 1 process, load ~10 (*)   | 27.2   | 23.8  | 51.7                |
| qodo-ai/pr-agent (115)      | 1 process, load ~10 (*)   | 18.7   | 15.4  | 7.5                 |

(*: the if-test screen alone, before the last two changes, which do not touch the analysis in one
process.) The load is the machine's (2 cores) while the pair ran: the same figures are 1.5-2x
those of a quiet machine, the ratio holds.

(CPU seconds, cold.) Still short of 50 .py per CPU second. What remains, per cProfile of the
branch: libcst's parse and index of the modules evaluated (on DB-GPT 586 imported modules parsed
through `Evaluator.of`, mostly by `summaries._callees`' resolutions, against 225 checked ones),
the callee summaries recomputed per checked file, and the evaluation itself.

libcst's node classes answer hash, == and isinstance in C (issue 28 point 6, branch speed): a
SIGPROF sample of langroid in one process (de8a8b1) spent 8.0% of the run in `CSTNode.__hash__` (a
Python method returning `id(self)`, called for every look-up in a dict keyed by nodes) and 6.0% in
ABCMeta's Python `__instancecheck__` (every `isinstance(node, cst.Attribute)` that is not an exact
type match); scopes/parse.py now gives every node class `object`'s identity hash and == and a
metaclass with `type`'s instance check, which mean the same (libcst registers no virtual subclass).
Cold, CPU of `check --no-cache --format json` as above; "before" is main at de8a8b1, "after" the
branch at its last commit; each pair ran back to back on a machine at load 7-11 (other sessions;
the 2-worker gains are inside the +-10-15% noise, the 1-process ones just outside it), and every
JSON output was byte-identical before and after (`cmp`), except pr-agent's, where main's own
output changes from run to run (the branch's last fix, below). All tuned (langroid and pr-agent
profiled on this branch).

| repository (.py files)      | run        | before | after | .py per CPU s after |
|-----------------------------|------------|--------|-------|---------------------|
| qodo-ai/pr-agent (115)      | 1 process  | 7.6    | 7.0   | 16.5                |
| langroid (438)              | 1 process  | 25.5   | 23.3  | 18.8                |
| qodo-ai/pr-agent (115)      | 2 workers  | 9.1    | 8.8   | 13.1                |
| huggingface/smolagents (75) | 2 workers  | 8.1    | 8.0   | 9.4                 |
| OpenBMB/XAgent (148)        | 2 workers  | 4.0    | 3.7   | 39.8                |
| OpenBMB/ChatDev (191)       | 2 workers  | 9.0    | 8.8   | 21.7                |
| langroid (438)              | 2 workers  | 27.3   | 25.2  | 17.4                |
| griptape (1,230)            | 2 workers  | 9.3    | 9.1   | 136                 |
| eosphoros-ai/DB-GPT (1,460) | 2 workers  | 47.3   | 45.6  | 32.0                |

(CPU seconds; "1 process": process_time of the run inside the interpreter, imports excluded.)
Measured apart, in one process on langroid: the hash 23.3 -> 21.5 s, the instance check 25.7 ->
23.7 s (each paired, at different loads). A per-evaluator memo of the class and callable look-ups
(find_class, receiver_class, resolve_callable) was measured too: 22.6 -> 22.1 s, inside the noise,
so it is not in. pr-agent's output was not deterministic on main: `{{ ticket.title }}` of a value
passed to a template printed the stand-in's bound `str.title`, address included, into the prompt
text (its token counts changed from run to run); it is the field now. Where langroid's run goes
after (same sampler): the callee summaries (summaries.requests_at_call) ~55% inclusive, recomputed
for every checked file; libcst's parse ~13% (almost all of it the dataclass `__init__` of the nodes
it makes) and the index's codegen ~14%; the candidates ~12%; `_field_class` 3% (its own time).
To reach 50 .py per CPU second on langroid (~9 s): sharing the callee summaries across the checked
files of a run, which needs the per-checked-file budgets (imported bytes, evaluation steps) to stop
deciding what a summary holds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import BASE_ENV, CPU_TIMES, PY, best, row, run  # noqa: E402  (bench/run.py: the same helpers)

# `prefixlint check` with lint_paths' `workers` fixed (the CLI picks one per core for many sources).
_WITH_WORKERS = (
    "import sys, prefixlint.api as api; api.lint_paths.__defaults__ = ({},); "
    "from prefixlint.cli import main; sys.argv[0] = 'prefixlint'; main()"
)


# The same cold check in one process, each source's analysis timed in CPU seconds (its verified fixes
# included): where a repository's time goes, file by file, printed as "seconds<TAB>path".
_PER_SOURCE = (
    "import sys, time, prefixlint.api as api; api.lint_paths.__defaults__ = (1,); real = api.analyse_source\n"
    "spent = {{}}\n"
    "def timed(source, run):\n"
    "    start = time.process_time(); out = real(source, run)\n"
    "    spent[source.path] = time.process_time() - start; return out\n"
    "api.analyse_source = timed\n"
    "from prefixlint.cli import main\n"
    "sys.argv = ['prefixlint', 'check', '--no-cache', '--format', 'json', '.']\n"
    "out, sys.stdout = sys.stdout, open('/dev/null', 'w')\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "sys.stdout = out\n"
    "for path, cpu in sorted(spent.items(), key=lambda kv: -kv[1])[:{}]:\n"
    "    print(f'{{cpu:.2f}}\\t{{path}}')\n"
)


def slowest_sources(repo: Path, env: dict[str, str], count: int) -> list[tuple[float, str]]:
    """The `count` sources whose cold analysis (one process) took the most CPU, with its seconds."""
    done = subprocess.run(
        [PY, "-c", _PER_SOURCE.format(count)],
        cwd=str(repo),
        env={**BASE_ENV, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line]
    return [(float(cpu), path) for cpu, path in rows]


def count_files(repo: Path) -> tuple[int, int]:
    """(.py files, template files) under the repository, its .git excluded."""
    py = templates = 0
    for _root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d != ".git"]
        py += sum(name.endswith(".py") for name in files)
        templates += sum(name.endswith((".jinja", ".j2", ".jinja2")) for name in files)
    return py, templates


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("repo", type=Path)
    parser.add_argument(
        "--file", required=True, help="a prompt-building .py file, relative to the repository"
    )
    parser.add_argument("--source", type=Path, help="a prefixlint checkout to measure")
    parser.add_argument(
        "--slowest", type=int, default=0, metavar="N", help="also list the N sources slowest to analyse, cold"
    )
    args = parser.parse_args()
    repo = args.repo.resolve()
    changed = repo / args.file
    if not changed.is_file():
        raise SystemExit(f"no such file: {changed}")
    if args.source is not None:
        BASE_ENV["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(args.source.resolve()), os.environ.get("PYTHONPATH")])
        )
    py, templates = count_files(repo)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {repo}: {py} .py, {templates} templates")
    original = changed.read_bytes()
    with tempfile.TemporaryDirectory(prefix="prefixlint-pyrepo-") as name:
        tmp = Path(name)
        BASE_ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        env = {"PREFIXLINT_CACHE_DIR": str(tmp / "cache")}
        try:
            cold_args = ["check", "--no-cache", "--format", "json", "."]
            run([PY, "-c", "import prefixlint"])  # compile prefixlint's bytecode once
            base = best([PY, "-c", "pass"], repeat=5)
            imp = best([PY, "-c", "import prefixlint"], repeat=5)
            row("python -c pass", *base, f"{PY} -c pass")
            row("python -c 'import prefixlint'", *imp, f'{PY} -c "import prefixlint"')
            for workers in (1, 2):
                cold = run([PY, "-c", _WITH_WORKERS.format(workers), *cold_args], env=env, cwd=str(repo))
                label = "1 process" if workers == 1 else f"{workers} workers"  # CPU: workers summed
                row(
                    f"whole tree, cold, {label}",
                    *cold,
                    f"prefixlint check --no-cache . (lint_paths workers={workers})",
                    f"{py / CPU_TIMES[cold[0]]:.1f} .py/CPU s",
                )
            check = [PY, "-m", "prefixlint", "check", "--format", "json", "."]
            run(check, env=env, cwd=str(repo))  # fills the result cache
            warm = best(check, env=env, cwd=str(repo))
            row("whole tree, warm", *warm, "prefixlint check .", f"{warm[0] / imp[0]:.2f}x import")
            one = [PY, "-m", "prefixlint", "check", "--force-exclude", args.file]
            times = []
            for k in range(3):  # a new edit each time: the result cache cannot answer
                changed.write_bytes(original + f"\n# prefixlint bench edit {k}\n".encode())
                times.append(run(one, env=env, cwd=str(repo)))
            wall, rss = min(times)
            row(
                "1 changed .py (pre-commit)",
                wall,
                rss,
                f"prefixlint check --force-exclude {args.file}",
                f"+{wall - base[0]:.2f} s over pass",
            )
            if args.slowest:
                print("  slowest sources, cold, 1 process (CPU s of each analysis, its fixes included):")
                for cpu, path in slowest_sources(repo, env, args.slowest):
                    print(f"  {cpu:8.2f} s  {path}")
        finally:
            changed.write_bytes(original)


if __name__ == "__main__":
    main()
