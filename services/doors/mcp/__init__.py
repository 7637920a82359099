"""The MCP front door: any MCP host plans, blendmesh decides, a person approves in the host.

A door like the CLI and the gateway: it submits runs through ``MeshClient`` and reads
through the services' client modules, never their internals. ``blendmesh mcp`` serves it
on stdio; the gateway serves it at ``/mcp`` over streamable HTTP.
"""
