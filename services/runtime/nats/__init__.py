"""Talking to NATS and JetStream: the connection and its logins, streams, buckets and
stores, reading the log back. Imports nothing of the other rooms."""
