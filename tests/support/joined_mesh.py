"""One ``blendmesh up`` that the commands of many e2e tests join, as a person runs command
after command on a mesh left running: ``NATS_URL`` set, the mesh's own home.

Starting a mesh (nats-server, every service, a Blender bridge) is most of what a cold
``blendmesh run`` costs; a test that needs only *a* running mesh joins this one. Each test
joins as a user of its own and names its scenes through ``scene``, so no test reads
another's runs or scenes, whichever ran before it. A test that stops, kills or
reconfigures a mesh, or checks what a command's own embedded mesh leaves behind, starts
its own instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.meshes import Up, blendmesh_up

# A fresh number for each test that joins: the shared mesh lives in one pytest process
# (an xdist worker), so a count of that process's joins never repeats a name on it.
_SEATS = itertools.count(1)


@dataclass(frozen=True)
class SharedMesh:
    """A running ``blendmesh up`` and the home it keeps its files in."""

    up: Up
    home: Path

    @property
    def log(self) -> Path:
        """Everything the mesh has written so far: where a test that got no answer looks."""
        return self.home / "up.log"

    def alive(self) -> None:
        """Fail at once, with what the mesh said, when it has ended: every later test on it
        would otherwise fail on a refused connection that hides why."""
        if self.up.proc.poll() is not None:
            said = self.up.stderr_after_exit()[-4000:]
            raise AssertionError(
                f"the shared blendmesh up ended ({self.up.proc.returncode}):\n{said}"
            )


# A mesh started for one test never stood idle long enough to stop its Blender (ADR 0033);
# this one stands idle while its process runs other tests, and keeps its Blender as they
# did, so a test on it exercises what it did on a mesh of its own.
KEEP_BLENDER = {"BLENDMESH_BRIDGE_IDLE": "0"}


@contextmanager
def shared_mesh(home: Path) -> Iterator[SharedMesh]:
    """``blendmesh up`` on ``home`` on a free port, stopped on exit."""
    with blendmesh_up(home, "--port", "0", env=KEEP_BLENDER, log=home / "up.log") as up:
        yield SharedMesh(up=up, home=home)


@dataclass(frozen=True)
class Joined:
    """One test's seat on the shared mesh: its user, its scene ids, its commands' env."""

    mesh: SharedMesh
    tag: str  # unique on this mesh: ``t7``

    @classmethod
    def seat(cls, mesh: SharedMesh) -> Joined:
        mesh.alive()
        return cls(mesh=mesh, tag=f"t{next(_SEATS)}")

    @property
    def home(self) -> Path:
        """The mesh's home: a command there finds its credentials, as on the same machine."""
        return self.mesh.home

    @property
    def url(self) -> str:
        return self.mesh.up.nats_url

    @property
    def user(self) -> str:
        return f"ana-{self.tag}"

    @property
    def other_user(self) -> str:
        """A second user of this test's own, who owns nothing unless the test says so."""
        return f"ben-{self.tag}"

    def scene(self, name: str) -> str:
        """Scene ``name`` of this test: ids are the mesh's, not the user's, so each test
        names its own."""
        return f"{self.tag}-{name}"

    def own_rows(self, table: str) -> str:
        """The lines of a table of every user's runs (``blendmesh runs``) that name this
        test's user: on the shared mesh the table lists other tests' runs too."""
        return "\n".join(line for line in table.splitlines() if f" {self.user} " in line)

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A command's environment on the shared mesh, as this test's user."""
        return {"NATS_URL": self.url, "BLENDMESH_USER": self.user, **(extra or {})}
