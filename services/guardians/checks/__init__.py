"""blendmesh's guardians: one pure function per gate, ``(repo_path) -> dict``.

Each reads ``<repo_path>/inspection.json`` (and, for its parameters, ``gates.json``)
and nothing else: no ``bpy``, no bus, no writes, no sockets, no code from the folder.
Each returns ``{"tool": <its guardian id>, "gate": <004 §8 gate>, "passed": bool,
"messages": [...], "problems": int, ...counts}``; a missing or unreadable artifact
raises, which the orchestrator turns into ``guardian_call_failed`` (never a pass).
"""
