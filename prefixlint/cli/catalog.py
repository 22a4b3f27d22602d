"""`prefixlint rules`, `rule CODE` and `engines`: what the catalog and the engine profiles hold."""

from __future__ import annotations

import json

import click

from prefixlint.cli.app import cli, fail


@cli.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules_cmd(fmt: str) -> None:
    """List every rule."""
    from prefixlint.core.rules import RULES

    if fmt == "json":
        items = [
            {
                "code": r.code,
                "name": r.name,
                "summary": r.summary,
                "severity": r.default_severity.label,
                "severities": [s.label for s in r.severities],
            }
            for r in RULES.values()
        ]
        click.echo(json.dumps(items, indent=2))
        return
    # The severity column is the range a finding can have: the default is the highest, except
    # for PFX002 (warning by default, error when no input renders).
    for r in RULES.values():
        span = r.severities[0].label + (".." + r.severities[-1].label if len(r.severities) > 1 else "")
        click.echo(f"{r.code}  {r.name:<28} {span:<13} {r.summary}")


@cli.command("engines")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def engines_cmd(fmt: str) -> None:
    """List the engines `--engine` takes and what each caches of a shared prefix."""
    from dataclasses import asdict

    from prefixlint.engines import describe, load_engines

    engines = load_engines()
    if fmt == "json":
        click.echo(json.dumps([asdict(e) | {"summary": describe(e)} for e in engines.values()], indent=2))
        return
    for engine in engines.values():
        click.echo(f"{engine.name:<10} {describe(engine)}")
    click.echo("Facts and their sources: prefixlint/data/engines.toml.")


@cli.command("rule")
@click.argument("code")
def rule_cmd(code: str) -> None:
    """Print a rule's page (by code, PFX101, or name, clock-in-prefix): what it finds, why it
    busts the cache, examples."""
    from prefixlint.core.rules import find_rule

    rule = find_rule(code)
    if rule is None:
        fail(f"unknown rule {code!r}: give a code or a name (see `prefixlint rules`)")
    click.echo(rule.page_for_reading(), nl=False)
