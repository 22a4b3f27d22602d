"""The result cache: an unchanged source is not analysed again.

One JSON file per source result under `<cache dir>/v1/`, named by a SHA-256 of everything the
analysis reads: the file's bytes and path, the tokenizer file (path, size, mtime, inode) and the
tokenizer_config.json beside the source, every analysis option, and prefixlint itself (version
and the stamps of its own files, so an editable install never serves stale results). What
is cached is the raw analysis, before select/ignore, per-file ignores and suppressions, which are
cheap and applied on every run. JSON, not pickle: a cache dir that arrives with a hostile
repository must not run code.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.core.findings import Diagnostic, Edit, Evidence, Fix, Severity, SourceResult, Span
from prefixlint.core.fingerprint import package_digest, stamp

if TYPE_CHECKING:
    from prefixlint.run.sources import Source

CACHE_DIR_NAME = ".prefixlint_cache"
FORMAT = "v1"


def default_cache_dir(root: Path) -> Path:
    """`$PREFIXLINT_CACHE_DIR`, else `.prefixlint_cache/` in the project root."""
    env = os.environ.get("PREFIXLINT_CACHE_DIR")
    return Path(env) if env else root / CACHE_DIR_NAME


def tokenizer_inputs(folder: str, tokenizer_file: str) -> list[str]:
    """The files that decide which tokenizer analyses the sources in `folder` (`tokenizer_file`, as
    the run plan decided it), and with which special tokens."""
    tok = Path(tokenizer_file)
    beside = os.path.join(folder, "tokenizer_config.json")
    return [str(tok), str(tok.parent / "tokenizer_config.json"), beside]


def timed_out(result: SourceResult) -> bool:
    return any("took longer than" in d.message for d in result.diagnostics)


def _diagnostic_from_json(d: dict[str, Any]) -> Diagnostic:
    evidence = d.pop("evidence")
    fix = d.pop("fix", None)
    origin = d.pop("origin", None)
    if fix is not None:
        fix = Fix(**{**fix, "edits": tuple(Edit(**e) for e in fix["edits"])})
    return Diagnostic(
        span=Span(**d.pop("span")),
        severity=Severity(d.pop("severity")),
        evidence=Evidence(**evidence) if evidence is not None else None,
        fix=fix,
        origin=Span(**origin) if origin is not None else None,
        group=tuple(tuple(m) for m in d.pop("group", ())),
        **d,
    )


def _result_from_json(data: dict[str, Any]) -> SourceResult:
    diagnostics = [_diagnostic_from_json(d) for d in data.pop("diagnostics")]
    covered = [_diagnostic_from_json(d) for d in data.pop("covered", [])]
    return SourceResult(diagnostics=diagnostics, covered=covered, **data)


class ResultCache:
    """Get and put the raw results of one source; any unreadable entry is a miss."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory / FORMAT
        self.hits = 0
        self.misses = 0
        # Per run, not per source: 500 templates in one folder share one tokenizer lookup.
        self._folder_stamps: dict[tuple[str, str], list[Any]] = {}

    def key(self, source: Source, content: bytes, settings: str, tokenizer_file: str) -> str:
        """The key of `source` given the file's bytes, the run's analysis settings (`settings`, as
        the run plan writes them) and the tokenizer file of its folder."""
        folder = os.path.dirname(source.path) or "."
        stamps = self._folder_stamps.get((folder, tokenizer_file))
        if stamps is None:
            stamps = [stamp(p) for p in tokenizer_inputs(folder, tokenizer_file)]
            self._folder_stamps[folder, tokenizer_file] = stamps
        header = json.dumps([package_digest(), source.path, source.kind, stamps]) + settings
        return hashlib.sha256(header.encode() + b"\0" + content).hexdigest()

    def get(self, key: str | None) -> list[SourceResult] | None:
        if key is None:
            return None
        try:
            data = json.loads((self.directory / f"{key}.json").read_text(encoding="utf-8"))
            results = [_result_from_json(item) for item in data]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            self.misses += 1
            return None
        if any(stamp(dep[0]) != dep for r in results for dep in r.dependencies):
            self.misses += 1  # a module it imports or a prompt file it reads has changed
            return None
        self.hits += 1
        return results

    def put(self, key: str | None, results: list[SourceResult]) -> None:
        if key is None or any(timed_out(r) for r in results):
            return  # a time limit depends on the machine's load that day, not on the file: retry next run
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._mark_root()
            text = json.dumps([asdict(r) for r in results], ensure_ascii=False)
            # Write then rename, so a concurrent run (pre-commit, an editor) never reads half a file.
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, self.directory / f"{key}.json")
        except OSError:
            pass  # a read-only checkout still lints, only without a cache

    def _mark_root(self) -> None:
        root = self.directory.parent
        gitignore = root / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("# Created by prefixlint automatically.\n*\n", encoding="utf-8")
        tag = root / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n# prefixlint result cache\n", "utf-8"
            )
