"""What of a logged reply an engine's cache holds after its request.

Every generated token but the last has its KV computed (the last one sampled is never fed back), so
a server that keeps replies (engine data `reply_cached`: vLLM, SGLang) holds the prompt and then
those tokens; a next turn reuses them where the reply re-renders to the same tokens.

The tokens are the response's own where the server returned them (vLLM's `return_token_ids`: the
choice's `token_ids`); else the reply's text tokenized alone. A reply that ended on the
end-of-sequence token (finish_reason "stop", no stop string) generated one token more than its
text. Where the usage's `completion_tokens` says the text does not re-tokenize to what was generated,
where the two part is unknown, and nothing of the reply is counted as cached (a lower bound).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefixlint.engines.packed import pack
from prefixlint.explain.requests import Reply

if TYPE_CHECKING:
    from prefixlint.explain.requests import Rendered
    from prefixlint.explain.segments import Encodes


def needs_text_ids(reply: Reply | None) -> bool:
    return reply is not None and reply.token_ids is None and bool(reply.text)


def computed_reply(reply: Reply, text_ids: list[int] | None = None) -> list[int]:
    """The reply's tokens whose KV the server computed (`text_ids`: the reply text's tokens)."""
    if reply.token_ids is not None:
        return [int(i) for i in reply.token_ids[:-1]]
    ids = text_ids or []
    eos = reply.finish_reason == "stop" and reply.stop_reason is None
    generated = len(ids) + eos
    if reply.completion_tokens is not None and reply.completion_tokens != generated:
        return []
    return ids if eos else ids[:-1]


def batch_replies(encoder: Encodes, rendered: list[Rendered]) -> list[bytes]:
    """The computed reply tokens (packed) of each request of a batch; b"" for one without a reply.
    Reply texts are tokenized alone, in one batch."""
    texts = [r.request.reply.text for r in rendered if needs_text_ids(r.request.reply)]  # type: ignore[union-attr]
    encoded = iter(encoder.encode(texts)) if texts else iter(())
    out = []
    for r in rendered:
        reply = r.request.reply
        if reply is None:
            out.append(b"")
            continue
        ids = next(encoded).id_list() if needs_text_ids(reply) else None
        out.append(pack(computed_reply(reply, ids)))
    return out
