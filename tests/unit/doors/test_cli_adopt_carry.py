"""What ``blendmesh approve`` does with a request an adopted import carried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console

from contracts.events import AnyEvent, RunRequested
from contracts.receipts import RunResult, RunState
from services.doors.cli import scenes as cli_scenes
from services.doors.core.requests import build_request
from services.runtime.service.settings import Settings


class Runs:
    """A client that records the requests it is asked to run and completes each."""

    def __init__(self) -> None:
        self.ran: list[RunRequested] = []

    async def run(self, request: RunRequested, on_event: Any = None, timeout: float = 0) -> Any:
        self.ran.append(request)
        return result(request.run_id, "completed")


def result(run_id: str, status: RunState) -> RunResult:
    return RunResult(
        run_id=run_id, request_id="q", thread_id="t", scene_id="s", user="ana", status=status
    )


def carrying(home: Path) -> tuple[Settings, RunRequested]:
    settings = Settings(home=home, user="ana")
    request = build_request(user="ana", scene_id="s", prompt="add a uv sphere named Ball")
    carried = home / "carried" / "run-import.json"
    carried.parent.mkdir(parents=True)
    carried.write_bytes(msgspec.json.encode(request))
    return settings, request


def ignore(event: AnyEvent) -> None:
    return None


async def test_after_import_when_import_completed_runs_the_carried_request(tmp_path: Path) -> None:
    settings, request = carrying(tmp_path)
    runs, err = Runs(), Console(record=True, width=200)
    done = result("run-import", "completed")
    after = await cli_scenes.after_import(settings, done, runs, ignore, 10, err)  # type: ignore[arg-type]
    assert [r.run_id for r in runs.ran] == [request.run_id] and after.run_id == request.run_id
    assert runs.ran[0].prompt == "add a uv sphere named Ball"
    assert not (tmp_path / "carried" / "run-import.json").exists()


async def test_after_import_when_import_rejected_drops_the_request_saying_so(
    tmp_path: Path,
) -> None:
    settings, _ = carrying(tmp_path)
    runs, err = Runs(), Console(record=True, width=200)
    rejected = result("run-import", "failed")
    after = await cli_scenes.after_import(settings, rejected, runs, ignore, 10, err)  # type: ignore[arg-type]
    assert after is rejected and runs.ran == []
    assert "your request did not run: add a uv sphere named Ball" in err.export_text()
    assert not (tmp_path / "carried" / "run-import.json").exists()


async def test_after_import_when_nothing_carried_returns_the_result(tmp_path: Path) -> None:
    runs, err = Runs(), Console(record=True, width=200)
    done = result("run-other", "completed")
    settings = Settings(home=tmp_path, user="ana")
    assert await cli_scenes.after_import(settings, done, runs, ignore, 10, err) is done  # type: ignore[arg-type]
    assert runs.ran == []
