"""The trial run ``box.probe`` starts: it proves the sandbox came up and Python runs in it."""

print("confined")
