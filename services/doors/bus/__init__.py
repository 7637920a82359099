"""The bus door: what a user's own NATS login may ask of the mesh (docs/adr/0015)."""
