"""prefixlint: find what breaks prefix (KV) caching in LLM prompts."""

__version__ = "0.1.0"
