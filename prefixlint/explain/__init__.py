"""`prefixlint explain`: why two requests, or a whole request log, miss the prefix cache.

requests.py parses request bodies and renders them; simulate.py replays token sequences through
per-engine cache models; causes.py clusters divergence points; whatif.py re-simulates with a cause
moved; log.py/pair.py/narrate.py drive them; html.py writes the self-contained page.
"""
