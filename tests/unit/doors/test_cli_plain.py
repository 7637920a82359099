"""A run's result printed to a pipe: the words a terminal shows, as plain lines, without rich."""

from __future__ import annotations

import io
import sys

import pytest
from rich.console import Console
from rich.table import Table

from contracts.failures import FailureContract
from contracts.gates import GateEnvelope
from contracts.receipts import Receipt, RunResult
from services.doors.cli import console as show
from services.doors.cli import plain, screen
from services.doors.cli.common import progress, report
from services.doors.cli.screen import PIPED_WIDTH, Piped
from tests.support.trusted_runs import asked, delete_op, requested


def result(**fields: object) -> RunResult:
    base: dict[str, object] = {
        "run_id": "run-1",
        "request_id": "q1",
        "thread_id": "t1",
        "scene_id": "s",
        "user": "ana",
        "status": "completed",
    }
    return RunResult(**{**base, **fields})  # type: ignore[arg-type]


def receipt(op_id: str, tool: str, ms: float) -> Receipt:
    return Receipt(
        operation_id=op_id,
        tool_name=tool,
        safety_level="safe_write",
        status="succeeded",
        duration_ms=ms,
        scene_hash_after="abcdef0123456789",
    )


def test_result_lines_when_completed_align_the_receipts_one_row_a_line() -> None:
    done = result(
        planner="plan",
        receipts=[receipt("m1", "object.create", 3.6), receipt("m22", "object.transform", 12.25)],
        gates=GateEnvelope(success=True),
        blend_path="/nowhere/s.blend",
    )
    assert plain.result_lines(done) == [
        "run run-1 · completed · plan",
        "operation  tool              status       ms  scene hash",
        "m1         object.create     succeeded   3.6  abcdef012345",
        "m22        object.transform  succeeded  12.2  abcdef012345",
        "gates passed",
        "Saved scene s to /nowhere/s.blend",
    ]


def test_result_lines_when_failed_name_the_code_the_gates_and_the_hint() -> None:
    failed = result(
        status="failed",
        message="no object [Box]",
        gates=GateEnvelope(success=False, failed_gates=["names_valid"], messages=["bad name"]),
        failure=FailureContract(
            error_code="OBJECT_NOT_FOUND",
            recoverable=True,
            retry_hint="name an object the scene holds",
            minimal_repair_plan=[],
        ),
    )
    assert plain.result_lines(failed) == [
        "gates failed (names_valid):",
        "  bad name",
        "OBJECT_NOT_FOUND: no object [Box]",
        "hint: name an object the scene holds",
    ]


def test_result_lines_when_waiting_without_an_ask_say_how_to_answer() -> None:
    waiting = result(status="awaiting_confirmation", pending_operations=["op1", "op2"])
    assert plain.result_lines(waiting) == [
        "Run run-1 waits for approval of op1, op2.",
        "  approve: blendmesh approve run-1",
        "  reject:  blendmesh reject run-1",
    ]


def test_terminal_and_pipe_when_a_result_is_shown_say_the_same_words() -> None:
    """rich draws what plain says: markup-like text in a message is shown, not obeyed."""
    from contracts.fold import fold_run

    waiting = fold_run([requested(), asked(delete_op())])
    assert waiting is not None
    failed = result(
        status="failed",
        message="[bold]kept[/bold] :smile:",
        failure=FailureContract(
            error_code="OBJECT_NOT_FOUND", recoverable=True, retry_hint="h", minimal_repair_plan=[]
        ),
    )
    for shown in (waiting, failed):
        terminal = Console(record=True, width=PIPED_WIDTH)
        show.print_result(terminal, shown)
        assert terminal.export_text().splitlines() == plain.result_lines(shown)


def test_piped_print_when_plain_text_writes_it_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    Piped().print("[red]not markup[/] :smile:", markup=False)
    Piped(stderr=True).print("to stderr", markup=False, highlight=False, soft_wrap=True)
    said = capsys.readouterr()
    assert said.out == "[red]not markup[/] :smile:\n"
    assert said.err == "to stderr\n"


def test_piped_print_when_rich_must_draw_makes_a_wide_console(
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = Table(title="t")
    table.add_column("c")
    table.add_row("x" * 300)
    piped = Piped()
    piped.print(table)
    piped.print("[green]ok[/]")
    out = capsys.readouterr().out
    assert "│ " + "x" * 300 + " │" in out  # one row a line, as wide as it needs
    assert out.endswith("\nok\n")
    assert screen.rich(piped) is piped.rich and piped.rich.width == PIPED_WIDTH


def test_report_when_piped_prints_plain_lines_and_its_exit_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    waiting = result(status="awaiting_confirmation", pending_operations=["op1"])
    assert report(waiting, False, Piped()) == 3
    assert capsys.readouterr().out.splitlines() == plain.result_lines(waiting)


def test_progress_when_piped_writes_each_line_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    progress(Piped(stderr=True), quiet=False)(requested())
    progress(Piped(stderr=True), quiet=True)(requested())
    assert capsys.readouterr().err == "run run-t on scene s\n"


def test_screen_when_a_stream_is_a_terminal_is_rich_and_else_piped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert isinstance(screen.screen(), Piped)
    terminal = screen.screen(stderr=True)
    assert isinstance(terminal, Console) and screen.rich(terminal) is terminal
