"""How the executor reaches the world: NATS (KV, object store), the bridge process, files."""
