"""Cross-service plumbing: settings, the bus, the consumer loop, the embedded server.

Nothing else in blendmesh talks to NATS directly; services get what they need from here.
"""
