"""audit: the read side of blendmesh.

One durable consumer folds the whole event log into SQLite views (runs, actions, the
spec 000 audit records, a timeline per run, dead letters), exactly once per stream
sequence, and answers queries over NATS. The log stays the source of truth: the views can
be thrown away and rebuilt from it at any time (``blendmesh audit rebuild``).
"""
