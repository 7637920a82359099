"""The users registry as the embedded server admits it: ``users.toml`` read again when it
changes, so the server reloads its authorization (docs/adr/0015)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.runtime.nats import access
from services.runtime.server import suspensions, users

log = logging.getLogger("blendmesh.nats")


class Registry:
    """The server's authorization as the users registry makes it, read again on change.

    A registry that cannot be read admits no user at all (the roles still log in), and
    says why in the log: a broken file must never keep a removed key working.
    """

    def __init__(
        self, path: Path, passwords: Mapping[str, str], prefix: str, interval: float
    ) -> None:
        self.path = path
        self.interval = interval
        self._passwords = passwords
        self._prefix = prefix
        self._stamp: object = ()
        self._registered: dict[str, str] = {}  # key -> user, as the file lists them
        self._keys: dict[str, str] = {}  # those admitted now (none of a suspended user)

    @property
    def count(self) -> int:
        return len(self._keys)

    def admits(self, user: str) -> bool:
        """Whether some key of ``user`` is admitted now."""
        return user in self._keys.values()

    @property
    def authorization(self) -> dict[str, Any]:
        return access.authorization(self._passwords, self._prefix, self._keys)

    def changed(self) -> bool:
        """Read the file if it changed since the last look, and the suspensions each time
        (one ends by the clock, not by a write); whether the admitted keys changed."""
        try:
            st = self.path.stat()
            stamp: object = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                found = users.load(self.path)
            except users.UsersFileError as exc:
                log.error("%s; no user may log in until it is fixed", exc)
                found = {}
            self._registered = {key: user.name for user in found.values() for key in user.keys}
        out = suspensions.active(self.path.with_name(suspensions.FILE_NAME), time.time())
        keys = {key: name for key, name in self._registered.items() if name not in out}
        if keys == self._keys:
            return False
        for name in sorted(set(self._keys.values()) - set(keys.values())):
            if name in out:
                log.warning("user %r is suspended for flooding a door until %s", name,
                            time.strftime("%H:%M:%S", time.localtime(out[name])))  # fmt: skip
        self._keys = keys
        return True
