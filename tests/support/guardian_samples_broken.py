"""A guardian module that cannot be imported: importing it raises (003 §3.3)."""

raise RuntimeError("this module is broken on purpose")
