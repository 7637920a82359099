"""The policy service: allow, ask a human, or deny each operation (spec 002 §6)."""
