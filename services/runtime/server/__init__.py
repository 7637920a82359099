"""The embedded nats-server: its config, its users and their keys, a cluster node, and
the guard that keeps a full disk an error. Builds on ``nats`` and ``service``."""
