"""Cross-service plumbing: settings, the bus, the consumer loop, the embedded server.

Runtime knows no service (import-linter holds that). Services talk to NATS through the
connection and consumer loop here; the only other modules that use nats-py are each
service's own adapters (its KV buckets, object stores and request/reply responders) and
client modules, never its handlers' domain logic (docs/architecture.md §4).
"""
