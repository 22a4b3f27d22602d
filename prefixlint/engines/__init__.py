"""What each serving engine caches of a shared prefix: the profiles as data (profiles.py, from
`data/engines.toml`) and the cache models that `explain` and the severity rule share: packed token
sequences (packed.py), the radix tree (radix.py), vLLM's block pool (blockpool.py), llama-server's
slots and prompt cache (llamacpp.py), the replay of a log through every engine (simulate.py), and
what an engine loses of tokens that are not shared (loss.py: the arithmetic under severity.py).

The profiles' names are importable from here (`from prefixlint.engines import Engine, load_engines`).
"""

from prefixlint.engines.profiles import (
    EVICTIONS,
    Breakpoints,
    Engine,
    EngineDataError,
    ServerCache,
    cacheable_per_engine,
    describe,
    load_engines,
    profiles,
)

__all__ = [
    "EVICTIONS",
    "Breakpoints",
    "Engine",
    "EngineDataError",
    "ServerCache",
    "cacheable_per_engine",
    "describe",
    "load_engines",
    "profiles",
]
