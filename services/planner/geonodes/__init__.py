"""Spec 004 responses: checked against the node catalog, compiled into operations."""
