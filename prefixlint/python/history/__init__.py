"""PFX401/PFX402 in Python: an agent's history, kept across turns, sent again rewritten.

A history is a list (or deque) that outlives one request: an attribute of an object, a module or
closure variable, or a local list appended to inside the loop that sends it. When what is sent
from it on turn N+1 does not extend what was sent on turn N, the server recomputes everything
after the first difference on every turn:

- dropped from the head (a sliding window, `pop(0)`, `deque(maxlen=…)`, a counter that skips the
  oldest): once the window is full, each request diverges right after what is kept;
- filtered by role or type (tool results dropped) on the way into the history or to the model:
  the turn that produced them sent them, the next one does not;
- a per-turn block written into the last message of a copy of the history: the previous user
  message loses it on the next turn (PFX402, the block moves with the conversation).

Read from the CST only (nothing is run). What is sent is what a modelled sink (or a project
function that reaches one, prefixlint/python/summaries.py) receives as its messages, followed
through the function's own assignments and `self.method()` returns. The package: facts.py (what
the passes record), shapes.py (the rewrites, told from nodes), walk.py (the pass over a module),
sent.py (what a request sends, followed back), findings.py (which rewrites are findings).
"""

from prefixlint.python.history.findings import history_diagnostics

__all__ = ["history_diagnostics"]
