"""The install ships every package: pyproject.toml lists its packages by hand (the rule pages are
mapped in from rules/), so a package folder added without a line there would be missing from a
non-editable install (CI's) while every test run from the checkout still passed."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {
        ".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "prefixlint").rglob("__init__.py")
    }
    assert folders - listed == set()
    assert listed - folders == {"prefixlint.rule_pages"}
