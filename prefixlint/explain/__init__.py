"""`prefixlint explain`: why two requests, or a whole request log, miss the prefix cache.

A log flows through these modules, in order:
- reading.py: the file within limits (gzip, line and JSON-depth bounds, skips counted by reason);
- formats.py: each record of a detected log format (OpenAI/Anthropic bodies, LiteLLM, OTel GenAI
  spans, vLLM log lines) as a Request; requests.py: the Request shape and its rendering;
- stream.py: the log as a stream of requests, rendered and encoded in batches (render_pool.py:
  rendering in worker processes for a large log; dask_stage.py: rendering and encoding as Dask
  tasks, `--dask`; segments.py: each distinct prompt segment tokenized once);
- the cache models of prefixlint/engines/ (simulate.py replays every engine; llama-server's slots
  and vLLM's block pool there too); routing.py: replicas behind a router (routers.py: the real
  routers' policies, from data/routers.toml);
- causes.py: divergence points clustered by their volatile span; whatif.py: that span moved;
- observed.py: what the log says the server did (cached tokens, TTFT), against the simulation;
  server.py (over server_inputs.py's bounded readers): `--server-args` and `--metrics`.
log.py drives a log (log_report.py: its report, as JSON and text), pair.py two requests,
narrate.py a template; command.py holds the command's logic; html.py writes the self-contained page.
"""
