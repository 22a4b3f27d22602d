"""The fix machinery shared by the frontends: the registry of each kind's candidates, their
verification by analysing the fixed text again, and writing them (`--fix`, `--add-noqa`)."""
