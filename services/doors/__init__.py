"""The doors: every way a person or a program reaches the mesh (CLI, HTTP, MCP, the bus)."""
