"""`check_prefix_stable(..., processes=N)`: the build run in N fresh interpreters, each with its own
`PYTHONHASHSEED`, so that the order of sets (and of dicts built from them) varies as it varies
between the processes of a real deployment, which one process never shows.

The build is imported in each interpreter by its module and qualified name (a module-level
function), and run there in the base world (the clock, ids, randomness and the environment fixed as
in-process): only the hash seed differs. Its return value comes back as JSON.
`python -m prefixlint.testing.processes MODULE QUALNAME KINDS` is that child.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

MARK = "\x00prefixlint-build "  # the child's result line, told apart from what the build prints
SEEDS_FROM = 1  # PYTHONHASHSEED of the first process (0 would turn hash randomisation off)
TIMEOUT = 300  # seconds one child may take


class ProcessBuildError(RuntimeError):
    """The build could not be run in a fresh interpreter (not importable, or it raised there)."""


def importable_name(build: Callable[..., Any]) -> tuple[str, str]:
    """(module, qualified name) a fresh interpreter imports `build` by; ValueError when it has none."""
    module, qualname = getattr(build, "__module__", None), getattr(build, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname:
        raise ValueError(
            f"processes: build must be a module-level function, imported in each fresh interpreter "
            f"(got {module}.{qualname or build!r})"
        )
    return module, qualname


def _child_env(seed: int) -> dict[str, str]:
    # The child finds the user's modules where this process does (pytest's rootdir inserts, src/).
    paths = [os.getcwd() if p == "" else p for p in sys.path if isinstance(p, str)]
    return {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": os.pathsep.join(paths)}


def build_in_processes(
    build: Callable[..., Any], processes: int, vary: tuple[str, ...]
) -> list[tuple[int, Any]]:
    """(hash seed, the build's return value) from each of `processes` fresh interpreters."""
    module, qualname = importable_name(build)
    out = []
    for seed in range(SEEDS_FROM, SEEDS_FROM + processes):
        done = subprocess.run(
            [sys.executable, "-m", "prefixlint.testing.processes", module, qualname, ",".join(vary)],
            env=_child_env(seed),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        results = [line[len(MARK) :] for line in done.stdout.splitlines() if line.startswith(MARK)]
        if done.returncode != 0 or not results:
            tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise ProcessBuildError(
                f"build {module}.{qualname} in a fresh interpreter (PYTHONHASHSEED={seed}): {tail}"
            )
        out.append((seed, json.loads(results[-1])))
    return out


def _jsonable(value: Any) -> Any:
    from prefixlint.testing.compare import _as_message

    if isinstance(value, list | tuple):
        return [_jsonable(_as_message(v)) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def main(argv: list[str]) -> int:
    """The child: import the build, run it in the base world, print its value as JSON."""
    from prefixlint.testing.building import build_in
    from prefixlint.testing.worlds import BASE_WORLD

    module, qualname, kinds = argv
    target: Any = importlib.import_module(module)
    for name in qualname.split("."):
        target = getattr(target, name)
    value, _ = build_in(target, BASE_WORLD, tuple(k for k in kinds.split(",") if k))
    sys.stdout.write("\n" + MARK + json.dumps(_jsonable(value), ensure_ascii=False, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
