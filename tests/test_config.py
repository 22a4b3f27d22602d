"""`[tool.prefixlint]` / prefixlint.toml: discovery, validation, selection, excludes, variables."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from prefixlint.api import iter_sources
from prefixlint.cli import cli
from prefixlint.config import (
    Config,
    ConfigError,
    build_options,
    discover_config,
    find_config,
    load_config,
)
from prefixlint.core.rules import RULES
from prefixlint.settings import enabled_codes

CLEAN = (
    "{%- for message in messages %}\n{{- message.role + '\\n' + message.content + '\\n' }}\n{%- endfor %}\n"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_found_upward_and_pyproject_without_the_section_is_skipped(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.prefixlint]\nselect = ["PFX1"]\n')
    write(tmp_path / "app" / "pyproject.toml", '[project]\nname = "app"\n')
    template = write(tmp_path / "app" / "templates" / "chat.jinja", CLEAN)
    assert find_config(template) == tmp_path / "pyproject.toml"
    assert discover_config([str(template)]).select == ("PFX1",)


def test_prefixlint_toml_wins_in_the_same_folder(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.prefixlint]\nselect = ["PFX1"]\n')
    write(tmp_path / "prefixlint.toml", 'select = ["PFX5"]\n')
    assert discover_config([str(tmp_path)]).select == ("PFX5",)


def test_all_keys_parse(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path / "pyproject.toml",
            """[tool.prefixlint]
select = ["ALL"]
extend-select = ["PFX004"]
ignore = ["PFX3", "pfx502"]
exclude = ["vendor/"]
extend-exclude = ["*.generated.jinja"]
tokenizer = "models/tokenizer.json"
engine = "sglang"
fail-on = "error"

[tool.prefixlint.per-file-ignores]
"legacy/*.jinja" = ["PFX101"]

[tool.prefixlint.variables]
static = ["tools", "persona"]
dynamic = ["question", "context"]
""",
        )
    )
    assert config.ignore == ("PFX3", "PFX502")
    assert config.per_file_ignores == (("legacy/*.jinja", ("PFX101",)),)
    assert (config.engine, config.fail_on) == ("sglang", "error")
    options = build_options(config, engine="openai")
    assert options.engine == "openai"  # the command line wins
    assert (options.static_variables, options.dynamic_variables) == (
        ("tools", "persona"),
        ("question", "context"),
    )
    assert options.root == str(tmp_path)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('[tool.prefixlint]\nselct = ["PFX1"]\n', "unknown key `tool.prefixlint.selct`"),
        (
            '[tool.prefixlint]\nignore = ["PFX999"]\n',
            "`tool.prefixlint.ignore`: unknown rule code or prefix 'PFX999'",
        ),
        ('[tool.prefixlint]\nselect = "PFX1"\n', "`tool.prefixlint.select` must be a list of strings"),
        ('[tool.prefixlint]\nfail-on = "fatal"\n', "`tool.prefixlint.fail-on` must be one of"),
        ('[tool.prefixlint]\nengine = "tgi"\n', "unknown engine 'tgi'"),
        (
            '[tool.prefixlint.variables]\nconstant = ["x"]\n',
            "unknown key `tool.prefixlint.variables.constant`",
        ),
        ('[tool.prefixlint.per-file-ignores]\n"*.py" = ["PFX9"]\n', "per-file-ignores.'*.py'"),
        ("[tool.prefixlint\n", "not valid TOML"),
    ],
)
def test_bad_config_names_the_key_and_the_file(tmp_path: Path, body: str, needle: str) -> None:
    path = write(tmp_path / "pyproject.toml", body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert needle in str(err.value)
    assert str(path) in str(err.value)


def test_bad_config_exits_2_with_the_message(tmp_path: Path) -> None:
    write(tmp_path / "prefixlint.toml", 'select = ["PFX1"]\nbogus = 1\n')
    template = write(tmp_path / "chat.jinja", CLEAN)
    result = CliRunner().invoke(cli, ["check", "--no-cache", str(template)])
    assert result.exit_code == 2
    assert "unknown key `bogus`" in result.output and "prefixlint.toml" in result.output


def test_longest_selector_wins() -> None:
    assert enabled_codes(["ALL"], []) == set(RULES)
    assert enabled_codes(["ALL"], ["PFX1"]) == set(RULES) - {c for c in RULES if c.startswith("PFX1")}
    assert enabled_codes(["PFX101"], ["PFX1"]) == {"PFX101"}  # the longer select wins
    assert enabled_codes(["PFX1"], ["PFX101"]) == {c for c in RULES if c.startswith("PFX1")} - {"PFX101"}
    assert enabled_codes(["PFX101"], ["PFX101"]) == set()  # a tie goes to ignore


def test_per_file_ignores_and_fail_on_reach_the_cli(tmp_path: Path) -> None:
    clock = "{{- 'Today is ' + strftime_now('%d %B %Y') + '.\\n' }}\n{{- 'You answer about rooms.\\n' }}\n"
    write(tmp_path / "legacy" / "old.jinja", clock + CLEAN)
    write(tmp_path / "new.jinja", clock + CLEAN)
    write(
        tmp_path / "prefixlint.toml",
        'select = ["PFX101"]\n[per-file-ignores]\n"legacy/" = ["PFX1"]\n',
    )
    result = CliRunner().invoke(cli, ["check", "--no-cache", str(tmp_path)])
    assert result.exit_code == 1
    assert "new.jinja:1:" in result.output and "old.jinja" not in result.output
    # fail-on = "error" in the config: a warning-only run passes (PFX004 is a warning).
    write(tmp_path / "prefixlint.toml", 'select = ["PFX004"]\nfail-on = "error"\n')
    write(tmp_path / "legacy" / "old.jinja", "{# prefixlint: ignore[PFX105] #}\n" + CLEAN)
    result = CliRunner().invoke(cli, ["check", "--no-cache", str(tmp_path / "legacy")])
    assert "PFX004" in result.output and result.exit_code == 0


def test_exclude_uses_gitignore_semantics_relative_to_the_config(tmp_path: Path) -> None:
    for rel in [
        "a.jinja",
        "vendor/b.jinja",
        "sub/vendor/c.jinja",
        "sub/d.generated.jinja",
        "docs/e.jinja",
        "node_modules/f.jinja",
    ]:
        write(tmp_path / rel, CLEAN)
    config = Config(
        path=tmp_path / "prefixlint.toml", extend_exclude=("/vendor/", "*.generated.jinja", "docs/e.jinja")
    )
    found = {
        Path(s.path).relative_to(tmp_path).as_posix()
        for s in iter_sources([str(tmp_path)], build_options(config))
    }
    # `/vendor/` is anchored at the config's folder; sub/vendor/ stays; node_modules is a default exclude.
    assert found == {"a.jinja", "sub/vendor/c.jinja"}
    # `exclude` replaces the defaults (as in ruff); explicit files skip excludes unless forced.
    config = Config(path=tmp_path / "prefixlint.toml", exclude=("sub/",))
    found = {
        Path(s.path).relative_to(tmp_path).as_posix()
        for s in iter_sources([str(tmp_path)], build_options(config))
    }
    assert found == {"a.jinja", "vendor/b.jinja", "docs/e.jinja", "node_modules/f.jinja"}
    explicit = [str(tmp_path / "sub" / "d.generated.jinja")]
    assert len(list(iter_sources(explicit, build_options(config)))) == 1
    assert list(iter_sources(explicit, build_options(config, force_exclude=True))) == []


def test_tokenizer_path_is_relative_to_the_config(tmp_path: Path) -> None:
    write(tmp_path / "models" / "tokenizer.json", "{}")
    config = load_config(write(tmp_path / "prefixlint.toml", 'tokenizer = "models/tokenizer.json"\n'))
    assert config.tokenizer == str(tmp_path / "models" / "tokenizer.json")
    hub = load_config(write(tmp_path / "prefixlint.toml", 'tokenizer = "Qwen/Qwen3-8B"\n'))
    assert hub.tokenizer == "Qwen/Qwen3-8B"


def test_a_pyproject_with_our_table_that_does_not_parse_is_an_error(tmp_path) -> None:
    from click.testing import CliRunner

    from prefixlint.cli import cli

    (tmp_path / "pyproject.toml").write_text('[tool.prefixlint]\nselect = ["PFX1"\n')
    (tmp_path / "t.jinja").write_text("{{ messages[0].content }}")
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "t.jinja"), "--no-cache"])
    assert result.exit_code == 2
    assert "pyproject.toml: not valid TOML" in result.output
