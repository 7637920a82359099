"""The home folder is owner-only: it holds every user's prompts, scenes and previews.

The audit views keep prompts, the scene store keeps every revision, and the NATS store
keeps the whole log. A process that writes into the home first makes it owner-only and
sets its umask to 077, so everything it creates from then on (and everything created by
its children: nats-server, the Blender bridge) is owner-only too, whoever wrote it.
"""

from __future__ import annotations

import os
from pathlib import Path

OWNER_ONLY_UMASK = 0o077
HOME_MODE = 0o700


def private_home(home: Path) -> None:
    """Create ``home`` owner-only, tighten it if it exists, and set the umask to 077.

    An existing home made by an older blendmesh (or by hand) is tightened when this
    user owns it; its contents are then out of others' reach through it.
    """
    os.umask(OWNER_ONLY_UMASK)
    home.mkdir(mode=HOME_MODE, parents=True, exist_ok=True)
    if home.stat().st_uid == os.getuid() and home.stat().st_mode & 0o077:
        home.chmod(HOME_MODE)
