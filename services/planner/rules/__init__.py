"""The offline planner: English requests read by a small grammar (docs/grammar.md)."""
