"""prefixlint's speed, next to the unavoidable work, in one run on this machine. Prints figures; run
by hand (not by the test suite):

    python bench/run.py [--corpus ../shared/corpus] [--only corpus,precommit,scaling] [--max-scale 1000]

1. `check` on the corpus (templates + Python), cold (`--no-cache`) and warm (result cache): wall
   time and peak memory; the same for the templates alone.
2. The floor for the same template work (bench/floor.py) and 3. the naive transformers baseline
   (bench/naive.py), both fed by bench/workload.py (what prefixlint renders, counted).
4. Pre-commit latency: one changed template (and one changed .py) in a generated repository of 500
   templates and 1,000 Python files, interpreter start included, beside `python -c pass` and
   `python -c "import prefixlint"`.
5. Scaling: 10, 100, 1,000 templates, cold.
Generated repositories go to a temporary folder, removed at the end.
"""

from __future__ import annotations

import argparse
import json
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


# Every command runs as an installed tool would: with compiled bytecode (kept out of the checkout).
BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
CPU_TIMES: dict[float, float] = {}  # wall seconds of a run -> its CPU seconds


def run(args: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one command; its output is discarded. Its CPU time goes to
    CPU_TIMES (the machine may be shared: CPU seconds say what wall seconds cannot)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**BASE_ENV, **(env or {})}, cwd=cwd
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(args)}\n{err}")
    CPU_TIMES[wall] = usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss / 1024


def best(args: list[str], repeat: int = 3, **kw: object) -> tuple[float, float]:
    """The fastest of `repeat` runs (the others are noise from a shared machine)."""
    return min((run(args, **kw) for _ in range(repeat)), key=lambda r: r[0])  # type: ignore[arg-type]


def row(label: str, wall: float, rss: float | None, command: str, note: str = "") -> None:
    mem = f"{rss:7.0f} MB" if rss is not None else " " * 10
    cpu = f"{CPU_TIMES[wall]:7.2f} s CPU" if wall in CPU_TIMES else " " * 13
    print(f"  {label:<34} {wall:8.2f} s {cpu} {mem}  {note:<22} $ {command}", flush=True)


def check_cmd(*paths: str, cache: bool = False) -> list[str]:
    return [PY, "-m", "prefixlint", "check", "--format", "json", *([] if cache else ["--no-cache"]), *paths]


def corpus_section(corpus: Path, tmp: Path) -> None:
    print(f"\n## 1-3. check on {corpus} vs the floor and the naive baseline", flush=True)
    templates = [str(corpus / "templates")]
    everything = [str(corpus)]
    for label, paths in (("templates", templates), ("whole corpus", everything)):
        workload = tmp / f"workload-{label.replace(' ', '-')}.json"
        subprocess.run([PY, str(BENCH / "workload.py"), str(workload), *paths], check=True, env=BASE_ENV)
        counts = json.loads(workload.read_text())
        renders = sum(e["renders"] for e in counts)
        tokenizers = len({e["tokenizer"] for e in counts})
        print(
            f"  {label}: {len(counts)} templates, {renders} renders, "
            f"{tokenizers} tokenizers (counted, untimed)"
        )
        floor = best([PY, str(BENCH / "floor.py"), str(workload)])
        naive = best([PY, str(BENCH / "naive.py"), str(workload)], repeat=1)
        cold = best(check_cmd(*paths))
        row(f"floor ({label})", *floor, f"{PY} bench/floor.py WORKLOAD")
        row(f"naive transformers ({label})", *naive, f"{PY} bench/naive.py WORKLOAD")
        row(
            f"check cold ({label})",
            *cold,
            " ".join(check_cmd(label.upper().replace(" ", "_"))),
            f"{cold[0] / floor[0]:.2f}x floor, {naive[0] / cold[0]:.1f}x faster than naive",
        )
    cache_env = {"PREFIXLINT_CACHE_DIR": str(tmp / "cache")}
    run(check_cmd(*everything, cache=True), env=cache_env)  # fill the cache, record the run
    warm = best(check_cmd(*everything, cache=True), env=cache_env, repeat=5)
    # --output-file is never recorded nor replayed: this is the per-file result cache alone.
    per_file = [*check_cmd(*everything, cache=True), "--output-file", os.devnull]
    warm_files = best(per_file, env=cache_env, repeat=5)
    imp = best([PY, "-c", "import prefixlint"], repeat=5)
    row("import prefixlint", *imp, f'{PY} -c "import prefixlint"')
    row(
        "check warm (whole corpus)",
        *warm,
        " ".join(check_cmd("CORPUS", cache=True)),
        f"{warm[0] / imp[0]:.2f}x import (replayed)",
    )
    row(
        "check warm, per-file cache only",
        *warm_files,
        " ".join(check_cmd("CORPUS", cache=True)) + " --output-file /dev/null",
        f"{warm_files[0] / imp[0]:.2f}x import",
    )


PLAIN_MODULE = '''"""Generated module {i}: ordinary code that builds no LLM input."""

import json
import os


class Store{i}:
    def __init__(self, root):
        self.root = root
        self.items = {{}}

    def load(self, name):
        with open(os.path.join(self.root, name), encoding="utf-8") as fh:
            self.items[name] = json.load(fh)
        return self.items[name]

    def total(self):
        return sum(len(v) for v in self.items.values())


def helper_{i}(values):
    out = []
    for v in values:
        if v % 2:
            out.append(v * {i})
    return out
'''

PROMPT_MODULE = '''"""Generated module {i}: builds a prompt."""

from datetime import datetime

SYSTEM_PROMPT = "You are assistant number {i}. Answer briefly and cite your sources."


def build_messages(question):
    return [
        {{"role": "system", "content": SYSTEM_PROMPT + " Today is " + datetime.now().isoformat()}},
        {{"role": "user", "content": question}},
    ]
'''


def corpus_templates(corpus: Path) -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((corpus / "templates").rglob("*.jinja"))]


def make_templates(folder: Path, sources: list[str], n: int) -> list[Path]:
    """`n` distinct templates (a numbered comment on top of the corpus templates, cycled)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        path = folder / f"t{i:04d}.jinja"
        path.write_text(f"{{#- generated {i} -#}}\n" + sources[i % len(sources)], encoding="utf-8")
        out.append(path)
    return out


def precommit_section(corpus: Path, tmp: Path) -> None:
    print("\n## 4. pre-commit: one changed file in a repository of 500 templates + 1,000 .py", flush=True)
    repo = tmp / "repo"
    templates = make_templates(repo / "templates", corpus_templates(corpus), 500)
    pkg = repo / "app"
    pkg.mkdir()
    for i in range(1000):
        body = (PROMPT_MODULE if i % 20 == 0 else PLAIN_MODULE).format(i=i)
        (pkg / f"mod{i:04d}.py").write_text(body, encoding="utf-8")
    (repo / "pyproject.toml").write_text('[tool.prefixlint]\nexclude = ["build"]\n', encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {"PREFIXLINT_CACHE_DIR": str(tmp / "precommit-cache")}
    changed_t, changed_py = templates[7], pkg / "mod0020.py"
    base = best([PY, "-c", "pass"], repeat=5)
    imp = best([PY, "-c", "import prefixlint"], repeat=5)
    row("python -c pass", *base, f"{PY} -c pass")
    row("python -c 'import prefixlint'", *imp, f'{PY} -c "import prefixlint"')
    for label, path in (("1 changed template", changed_t), ("1 changed .py", changed_py)):
        cmd = [PY, "-m", "prefixlint", "check", "--force-exclude", str(path.relative_to(repo))]
        times = []
        for k in range(3):  # a new edit each time: the result cache cannot answer
            with path.open("a", encoding="utf-8") as fh:
                fh.write(f"{{# edit {k} #}}\n" if path.suffix == ".jinja" else f"# edit {k}\n")
            times.append(run(cmd, env=env, cwd=str(repo)))
        wall, rss = min(times)
        row(label, wall, rss, "prefixlint check --force-exclude FILE", f"+{wall - base[0]:.2f} s over pass")
    full = run([PY, "-m", "prefixlint", "check", "--no-cache", "."], cwd=str(repo))
    row("whole repo, cold", *full, "prefixlint check --no-cache .")
    warm_env = {"PREFIXLINT_CACHE_DIR": str(tmp / "repo-cache")}
    run([PY, "-m", "prefixlint", "check", "."], env=warm_env, cwd=str(repo))
    warm = best([PY, "-m", "prefixlint", "check", "."], env=warm_env, cwd=str(repo))
    row("whole repo, warm", *warm, "prefixlint check .", f"{warm[0] / imp[0]:.2f}x import (replayed)")
    per_file = [PY, "-m", "prefixlint", "check", ".", "--output-file", os.devnull]
    warm_files = best(per_file, env=warm_env, cwd=str(repo))
    row(
        "whole repo, warm, per-file cache",
        *warm_files,
        "prefixlint check . --output-file /dev/null",
        f"{warm_files[0] / imp[0]:.2f}x import",
    )


def scaling_section(corpus: Path, tmp: Path, sizes: list[int]) -> None:
    print("\n## 5. scaling (cold, templates only)", flush=True)
    sources = corpus_templates(corpus)
    first = None
    for n in sizes:
        folder = tmp / f"scale{n}"
        make_templates(folder, sources, n)
        wall, rss = run(check_cmd(str(folder)))
        per = wall / n
        first = first or per
        row(
            f"{n:>5} templates", wall, rss, " ".join(check_cmd(f"SCALE{n}")), f"{per * 1000:6.0f} ms/template"
        )
        shutil.rmtree(folder)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus"))
    parser.add_argument("--only", default="corpus,precommit,scaling")
    parser.add_argument("--max-scale", type=int, default=1000)
    args = parser.parse_args()
    corpus = Path(args.corpus).resolve()
    sections = set(args.only.split(","))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, corpus {corpus}")
    with tempfile.TemporaryDirectory(prefix="prefixlint-bench-") as name:
        tmp = Path(name)
        BASE_ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        # Compile the bytecode once, transformers' too (the naive baseline runs once).
        run([PY, "-m", "prefixlint", "check", "--no-cache", str(corpus / "python")])
        run([PY, "-c", "import transformers.utils.chat_template_utils"])
        if "corpus" in sections:
            corpus_section(corpus, tmp)
        if "precommit" in sections:
            precommit_section(corpus, tmp)
        if "scaling" in sections:
            scaling_section(corpus, tmp, [n for n in (10, 100, 1000) if n <= args.max_scale])


if __name__ == "__main__":
    main()
