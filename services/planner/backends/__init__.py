"""Planner backends: the offline rules grammar and the LLM-backed planners."""
