"""Geometry Nodes trees: finding, setting and restoring their nodes, and their catalog."""
