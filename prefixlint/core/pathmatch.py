"""gitignore-style path patterns anchored at a folder: the excludes, `per-file-ignores` and
`template-kinds` globs of the config. Below settings and sources, which both match paths."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


class PathMatcher:
    """gitignore-style patterns anchored at `root`; paths outside `root` never match."""

    def __init__(self, root: Path, patterns: Iterable[str]) -> None:
        self.root = root.resolve()
        self.patterns = tuple(patterns)
        self._spec = None
        if self.patterns:  # pathspec costs 40 ms to import: only when there is something to match
            import pathspec

            self._spec = pathspec.GitIgnoreSpec.from_lines(self.patterns)

    def matches(self, path: Path | str, is_dir: bool = False) -> bool:
        if self._spec is None:
            return False
        try:  # strings, not pathlib: this runs once per file of the tree
            rel = os.path.relpath(os.path.abspath(path), self.root)
        except ValueError:  # another drive (Windows)
            return False
        if rel == "." or rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return False  # the root itself, or outside it
        rel = rel.replace(os.sep, "/")
        return self._spec.match_file(rel + "/" if is_dir else rel)
