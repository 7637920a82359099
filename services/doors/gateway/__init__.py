"""The HTTP gateway: the spec 002 routes over the mesh, bearer tokens, safe errors."""
