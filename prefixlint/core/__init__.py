"""The core every part shares and that imports no other part: findings, the rule catalog, the
limits, reading untrusted files, path patterns, text edits, the package fingerprint."""
