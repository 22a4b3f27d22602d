"""What a chat template that does not compile, or does not render for some inputs, is reported
as: PFX001 with the parser's reason, PFX002 per error and where it was raised (info when the value
prefixlint made up is what the template cannot use), and the clock reads seen in the source alone
when no input renders."""

from __future__ import annotations

import re

import jinja2

from prefixlint.core.findings import Diagnostic, Severity
from prefixlint.jinja.template import ChatTemplate, describe_error


def render_error_diagnostics(
    failures: dict[tuple[int, str], list[str]], working: bool, template: ChatTemplate
) -> list[Diagnostic]:
    """The PFX002 of each (line, error) a render raised, naming where (`failures`); an error when
    no input renders (`working` false), else a warning (info for a deliberate `raise_exception`)."""
    out = []
    for (line, error), where in sorted(failures.items()):
        scenarios = sorted({w.split(" (")[0] for w in where}, key=lambda w: (w.startswith("in the multi"), w))
        deliberate = error.startswith("TemplateError:")
        stand_in = _stand_in_failure(error, template)
        severity = Severity.ERROR if not working else Severity.INFO if deliberate else Severity.WARNING
        message = f"raises {error} when rendered {' / '.join(scenarios)}"
        if stand_in is not None:
            # The value prefixlint made up has the wrong type for the template: its fault, not the template's.
            severity = Severity.INFO
            message += f", with the stand-in value of `{stand_in}`: pass a real one with --var to analyse it"
        if working:
            message += "; analysed with the inputs that render"
        out.append(Diagnostic("PFX002", template.span(line), message, severity))
    for note in template.setup_notes:
        out.append(Diagnostic("PFX002", template.span(1), f"template {note}", Severity.INFO))
    return out


_NO_ATTRIBUTE = re.compile(r"UndefinedError: '(\w+) object' has no attribute")


def _stand_in_failure(error: str, template: ChatTemplate) -> str | None:
    """The variable whose made-up value (supply_required_variables) the template cannot use: the
    template reads an attribute a value of that type does not have (`subtask.actions_to_json()` on
    the stand-in string)."""
    m = _NO_ATTRIBUTE.match(error)
    if m is None:
        return None
    for name, value in template.extra_kwargs.items():
        if type(value).__name__ == m.group(1) and f"{name}=" in " ".join(template.setup_notes):
            return name
    return None


def unconfirmed_clock(template: ChatTemplate) -> list[Diagnostic]:
    """No input renders: report clock reads from the source alone, as warnings."""
    out = []
    for i, text in enumerate(template.traced.source.split("\n"), 1):
        if "strftime_now" in text:
            message = "`strftime_now` reads the current time; not confirmed by rendering (no input renders)"
            out.append(
                Diagnostic(
                    "PFX101", template.span(i, text.find("strftime_now") + 1), message, Severity.WARNING
                )
            )
    return out


def compile_diagnostic(template: ChatTemplate) -> Diagnostic | None:
    """Compile the template (once); the PFX001 that says why it does not, or None."""
    try:
        _ = template.traced
    except jinja2.TemplateSyntaxError as exc:
        message = f"does not parse: {exc.message}" if exc.message else "does not parse"
        return Diagnostic("PFX001", template.span(exc.lineno or 1), message, Severity.ERROR)
    except (RecursionError, MemoryError, ValueError) as exc:
        return Diagnostic(
            "PFX001", template.span(1), f"does not compile: {describe_error(exc)}", Severity.ERROR
        )
    return None
