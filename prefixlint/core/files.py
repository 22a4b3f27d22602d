"""Read an input file without trusting it: regular files only (a FIFO would block forever, a device
never ends), at most a size limit (a 1 GB tokenizer_config.json is a finding, not a memory spike).
Symlink loops and unreadable files surface as OSError with the system's reason."""

from __future__ import annotations

import os
import stat

MAX_SOURCE_BYTES = 16 << 20  # templates, tokenizer_config.json, .py: real ones are < 1 MB
MAX_TOKENIZER_BYTES = 512 << 20  # tokenizer.json: the largest real ones are ~35 MB


class InputError(ValueError):
    """A file that is not a readable input; the message says why, in a few words."""


def megabytes(size: int) -> str:
    return f"{size / 2**20:,.1f} MB"


def check_input_file(path: str | os.PathLike[str], max_bytes: int) -> int:
    """The file's size; raises InputError for a non-regular file or one over `max_bytes` (0: no limit)."""
    st = os.stat(path)  # follows symlinks; a loop raises OSError (ELOOP)
    if stat.S_ISDIR(st.st_mode):
        raise InputError("is a folder")
    if not stat.S_ISREG(st.st_mode):
        raise InputError("not a regular file (a FIFO, device or socket)")
    if max_bytes and st.st_size > max_bytes:
        raise InputError(f"too large: {megabytes(st.st_size)}, over the {megabytes(max_bytes)} limit")
    return st.st_size


def read_limited(path: str | os.PathLike[str], max_bytes: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes` (0: no limit)."""
    check_input_file(path, max_bytes)
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1) if max_bytes else fh.read()
    if max_bytes and len(data) > max_bytes:  # it grew since the stat
        raise InputError(f"too large: over the {megabytes(max_bytes)} limit")
    return data


def project_root(paths: list[str]) -> str:
    """The folder the checked paths belong to: the git work tree around them, else their common
    folder. Imported modules, prompt files and template names are looked for under it."""
    absolute = [os.path.abspath(p) for p in paths] or [os.getcwd()]
    folders = [p if os.path.isdir(p) else os.path.dirname(p) for p in absolute]
    common = os.path.commonpath(folders)
    here = common
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return common
        here = parent


def read_text(path: str, max_bytes: int = MAX_SOURCE_BYTES) -> str:
    """A source's text; raises ValueError with a reason for binary, non-UTF-8, too large or
    non-regular files (prefixlint.core.files), OSError for unreadable ones and symlink loops."""
    return decode_source(read_limited(path, max_bytes))


def decode_source(data: bytes) -> str:
    """A source file's bytes as text; raises ValueError for binary or non-UTF-8 data."""
    if b"\x00" in data[:8192]:
        raise ValueError("binary file (NUL bytes), not a text source")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from exc
