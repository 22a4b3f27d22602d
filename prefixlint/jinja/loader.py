"""Where an app prompt template's `{% include %}`, `{% import %}`, `{% from … import %}` and
`{% extends %}` find their files.

Folders are tried in order: the template's own folder, then `search_path` (prefixlint passes the
project root, then the config's `template-search-path`). A name resolves inside one of them or not
at all: `..` segments are refused (as jinja2's FileSystemLoader does), symlinks are resolved and a
file whose real path leaves its folder is refused, and every file is read with the size limit of a
source (prefixlint.core.files). A name found nowhere raises `TemplateNotFound` naming the folders tried.

Chat templates get no loader: transformers and vLLM render them without one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import jinja2
from jinja2.loaders import split_template_path

from prefixlint.core.files import MAX_SOURCE_BYTES, read_limited


def shown(path: str) -> str:
    """A folder as a message shows it: relative to the current folder when under it (the same
    output on every checkout), else as given."""
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return path if rel.startswith(os.pardir) else rel


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # another drive
        return False


class PromptLoader(jinja2.BaseLoader):
    """Reads included templates from a fixed list of folders, never from outside them."""

    def __init__(self, folders: Sequence[str], max_bytes: int = MAX_SOURCE_BYTES) -> None:
        self.folders = list(dict.fromkeys(os.path.normpath(f) for f in folders))
        self.max_bytes = max_bytes

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        pieces = split_template_path(template)  # raises TemplateNotFound for `..`
        for folder in self.folders:
            candidate = os.path.normpath(os.path.join(folder, *pieces))
            real, real_folder = os.path.realpath(candidate), os.path.realpath(folder)
            if not _inside(real, real_folder) or not os.path.isfile(real):
                continue  # a symlink out of the folder counts as absent
            try:
                data = read_limited(real, self.max_bytes)
                text = data.decode("utf-8-sig")
            except (OSError, ValueError) as exc:  # InputError and UnicodeDecodeError are ValueErrors
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise jinja2.TemplateError(f"cannot read {candidate}: {reason}") from None
            return text, candidate, lambda: True
        where = ", ".join(os.path.join(shown(f), "") for f in self.folders)
        raise jinja2.TemplateNotFound(template, f"{template!r} not found in {where}")

    def list_templates(self) -> list[str]:
        return []  # never walks the folders


def prompt_loader(template_path: str, search_path: Sequence[str] = ()) -> jinja2.BaseLoader:
    """A loader for the includes of the template at `template_path`: its own folder first, then
    the `search_path` folders in order."""
    own = os.path.dirname(template_path) or os.curdir
    return PromptLoader([own, *search_path])


def project_root(path: str, configured: str | None = None) -> str:
    """The folder an app's template names are relative to: the configured one (the config file's
    folder, or the one the run found), else the git work tree holding `path`, else its folder. A
    run over paths in unrelated trees finds their common folder (`/`, say): below it, the
    template's own work tree is its project (reach.py would otherwise read the whole disk)."""
    from prefixlint.core.files import project_root as found_from

    own = found_from([path])
    if configured is None:
        return own
    configured = os.path.abspath(configured)
    below = own != configured and own.startswith(os.path.join(configured, ""))
    work_tree = os.path.exists(os.path.join(own, ".git"))
    return own if below and (work_tree or os.path.dirname(configured) == configured) else configured
