"""The settings that keep a broken conversation's prefix stable, each verified as a user applies
it: the multi-turn analysis run again with the setting as `--var`s (the scenarios rebuilt under it),
then the whole check through `recheck`. One switch at a time, then pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefixlint.core.findings import Diagnostic, Severity
from prefixlint.jinja.multiturn.compare import Break, find_breaks, special_strings
from prefixlint.jinja.multiturn.render import MultiTurnRenders, render_multiturn
from prefixlint.jinja.switches import as_vars, caller_switches, switch_values
from prefixlint.jinja.template import ChatTemplate
from prefixlint.models.tokens import LoadedTokenizer

# A hint is checked again by the whole check (analyze.py gives this): the diagnostics of the check
# run with a setting as `--var`s, and the codes already found without it.
Recheck = Callable[[dict[str, Any]], list[Diagnostic]]
MAX_HINTS = 3  # settings named per finding


def verified_settings(
    template: ChatTemplate,
    rendered: MultiTurnRenders,
    breaks: list[Break],
    tokenizer: LoadedTokenizer,
    recheck: Recheck | None,
    known: frozenset[str],
) -> dict[str, str]:
    """For each code, the settings verified to keep its broken scenarios stable, as a user applies
    them (issue 23, point 2): the multi-turn analysis is run again with the setting as `--var`s (the
    scenarios rebuilt under it, so a mode it turns off is off), then, through `recheck`, the whole
    check: the code is gone, the template raises nowhere it did not, no multi-turn break is left at
    warning or worse and no other new warning or error (a code not in `known`) appears. One switch
    at a time, then pairs."""
    switches = caller_switches(template)
    if not switches:
        return {}
    codes = {b.code for b in breaks}
    errors = {(line, error) for line, error, _ in rendered.failures}
    fixed: dict[str, list[str]] = {}
    rendering = []  # settings under which every scenario renders
    current = {(k, v) for k, v in template.extra_kwargs.items() if isinstance(v, bool | str)}

    def attempt(setting: dict[str, Any]) -> None:
        tried = template.with_variables(setting)
        again = render_multiturn(tried)
        if again.scenarios is None or any((line, error) not in errors for line, error, _ in again.failures):
            return  # the template raises with it: never offered
        rendering.append(setting)
        still, _ = find_breaks(
            again.renderer, again.scenarios, tokenizer, special_strings(tokenizer, tried), again.reasoning
        )
        gone = [c for c in sorted(codes - {b.code for b in still}) if len(fixed.get(c, [])) < MAX_HINTS]
        if gone and recheck is not None:
            after = recheck(setting)
            found = {d.code for d in after}
            # Not stable if a multi-turn break is still a warning or worse, or any new one appears.
            unstable = any(
                d.severity >= Severity.WARNING and (d.code.startswith("PFX4") or d.code not in known | codes)
                for d in after
            )
            gone = [] if unstable else [c for c in gone if c not in found]
        for code in gone:
            fixed.setdefault(code, []).append(f"`{as_vars(setting)}`")

    for name in switches:
        for value in switch_values(template, name):
            if (name, value) not in current:  # the caller's own `--var` is what was just checked
                attempt({name: value})
    if codes - set(fixed) and 1 < len(switches) <= 3:
        for i, first in enumerate(switches):
            for second in switches[i + 1 :]:
                for a in (True, False):
                    for b in (True, False):
                        attempt({first: a, second: b})
    tried = ", ".join(f"`{n}`" for n in switches)
    none = "no setting" if rendering else "no setting the template renders with"
    how = (
        "the check, run again with it, no longer finds the break"
        if recheck
        else "every turn renders and the break is gone"
    )
    return {
        code: (
            f"{' or '.join(fixed[code])} keeps the prefix stable (verified: {how})"
            if code in fixed
            else f"{none} of {tried} keeps it stable"
        )
        for code in codes
    }
