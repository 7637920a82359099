"""Hosting a service: settings, the consumer loop, publishing, health, metrics, tracing
and logs, the store's room. Builds on ``nats``."""
