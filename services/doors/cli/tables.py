"""Tables that fit the terminal, and the words a table shows for a request.

At 80 columns a table shows what a person needs to pick a row and copy its id; a wider
terminal shows more columns. Piped output is 1000 wide, so it gets every column, one row a
line. Ids are never cut; the one stretching column (the request) is cut with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.table import Table

from contracts.scene_files import IMPORT_TOOL, REVERT_TOOL
from services.doors.cli import console as show
from services.doors.core.client import MeshClient

Column = tuple[str, int]  # a column, and the narrowest console width that shows it
_GAP = 3  # what rich's simple box adds around each column


def fitted_table(
    title: str, rows: list[dict[str, Any]], columns: Sequence[Column], width: int, stretch: str
) -> Table:
    """``rows`` in the columns ``width`` has room for; ``stretch`` takes what is left."""
    names = [name for name, at in columns if width >= at]
    cells = [[_cell(row.get(name)) for name in names] for row in rows]
    widths = {name: max([len(name), *(len(r[i]) for r in cells)]) for i, name in enumerate(names)}
    left = width - sum(w for n, w in widths.items() if n != stretch) - _GAP * len(names)
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for name in names:
        if name == stretch:
            table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=max(left, 8))
        else:
            table.add_column(name, no_wrap=True, min_width=widths[name])
    for row_cells in cells:
        table.add_row(*row_cells)
    return table


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def plan_text(plan: Any) -> str:
    """A plan run as written, named by what it does: an import, a revert, or its tools."""
    operations = plan.get("operations") if isinstance(plan, dict) else None
    ops = [op for op in operations or [] if isinstance(op, dict)]
    tools = [str(op.get("tool_name") or op.get("tool") or "?") for op in ops]
    if tools == [IMPORT_TOOL]:
        size = ops[0].get("args", {}).get("bytes")
        return f"import a .blend ({_size(size)})" if isinstance(size, int) else "import a .blend"
    if tools == [REVERT_TOOL]:
        return f"revert to revision {ops[0].get('args', {}).get('revision')}"
    if tools:
        return "plan: " + ", ".join(tools)
    return "(plan as written)"


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{max(1, round(n / 1024))} KB"


async def request_texts(client: MeshClient, run_ids: Iterable[str]) -> dict[str, str]:
    """Each run's request as a table shows it, read from its RunRequested in the log."""
    texts = {}
    for run_id in dict.fromkeys(run_ids):
        asked = await client.requested(run_id)
        if asked is not None:
            words = asked.prompt
            texts[run_id] = show.request_text(words) if words else plan_text(asked.plan)
    return texts
