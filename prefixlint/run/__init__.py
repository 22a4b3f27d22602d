"""One `check` run: the sources found, the analyses scheduled, the result cache and the replayed
runs, the filters (suppressions, per-file ignores, select/ignore) applied to what they found."""
