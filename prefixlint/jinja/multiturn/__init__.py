"""The multi-turn analysis (DESIGN.md: analyses → multi-turn; PFX401–PFX403).

An engine that served turn N holds the KV cache of turn N's prompt and of the reply it generated.
Turn N+1 reuses it only if its prompt starts with those exact tokens. For each conversation
scenario this renders every turn with the generation prompt, tokenizes all renders in one batch
and checks, for each step N → N+1:

1. turn N's tokens are a prefix of turn N+1's;
2. turn N + the reply as the model emitted it (its tokens, then the end-of-turn token) is too.

A break is classified by where it happens: the reasoning of the reply is gone from turn N+1
(PFX401), a block of turn N's history reappears further on in turn N+1 (PFX402), the break lies
in turn N's generation prompt or at the reply's boundary (PFX403), or an earlier turn is rendered
differently (PFX401). Switch-like template variables (`enable_thinking`, `preserve_thinking`) are
then tried to say which setting, if any, keeps the prefix stable: each is applied as a user applies
it, `--var` on every render (the caller's `--var`s win over every mode a scenario runs in, as
vLLM's `chat_template_kwargs` would), and shown only once the check, run again with it, no longer
finds the break.

The package: scenarios.py (the conversations replayed), render.py (which apply, rendered),
compare.py (the comparison across turns), hints.py (the settings verified to keep the prefix),
findings.py (the diagnostics).
"""

from prefixlint.jinja.multiturn.findings import MultiTurnResult, analyze_multiturn
from prefixlint.jinja.multiturn.render import MultiTurnRenders, render_multiturn

__all__ = ["MultiTurnRenders", "MultiTurnResult", "analyze_multiturn", "render_multiturn"]
