"""The add-on's zip and a Blender session that runs it, for the add-on's tests.

``BlenderSession`` starts ``tests/support/addon_session.py`` under the venv's Python (real
``bpy``, in a child process) with its own Blender user folder and home, and sends it one
command at a time.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

from services.doors.cli.addon import build

DRIVER = Path(__file__).parent / "addon_session.py"


def addon_zip(folder: Path) -> Path:
    return build(folder / "blendmesh-addon.zip")


def _prepared(home: Path) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    return addon_zip(home)


def _log(home: Path) -> BinaryIO:
    return open(home / "stderr.txt", "wb")  # closed by the caller


class BlenderSession:
    def __init__(self, proc: asyncio.subprocess.Process, home: Path) -> None:
        self.proc, self.home = proc, home

    @classmethod
    async def start(cls, home: Path) -> BlenderSession:
        zip_path = await asyncio.to_thread(_prepared, home)
        env = {
            **os.environ,
            "HOME": str(home),  # an untitled session's pulls land in ~/blendmesh
            "BLENDER_USER_RESOURCES": str(home / "blender"),
            "PYTHONPATH": "",
        }
        with _log(home) as stderr:  # the child keeps its own copy
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                str(DRIVER),
                str(zip_path),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=env,
                cwd=home,
            )
        session = cls(proc, home)
        assert (await session._answer(120)).get("ready"), "the add-on did not install"
        return session

    async def send(self, timeout: float = 240, **command: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        await self.proc.stdin.drain()
        answer = await self._answer(timeout)
        assert "driverError" not in answer, (answer, self.stderr()[-3000:])
        return answer

    async def _answer(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            while True:
                line = await self.proc.stdout.readline()
                if not line:
                    raise AssertionError(f"Blender ended: {self.stderr()[-3000:]}")
                if line.startswith(b"@@"):
                    answer: dict[str, Any] = json.loads(line[2:])
                    return answer

    def stderr(self) -> str:
        return (self.home / "stderr.txt").read_text(errors="replace")

    async def close(self) -> None:
        if self.proc.returncode is None:
            try:
                await self.send(timeout=30, do="quit")
                await asyncio.wait_for(self.proc.wait(), 30)
            except (AssertionError, TimeoutError, BrokenPipeError, ConnectionResetError):
                self.proc.kill()
                await self.proc.wait()
