"""The planner service: turns English requests into spec 000 operation sets."""
