"""Every message that crosses a process boundary in blendmesh, typed once.

Types are frozen ``msgspec.Struct``s that forbid unknown fields, so a message that
does not match its contract fails loudly at the edge instead of deep inside a service.
"""
