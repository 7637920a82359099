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

from contracts.scene_files import plan_words as plan_text
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


async def request_texts(client: MeshClient, run_ids: Iterable[str]) -> dict[str, str]:
    """Each run's request as a table shows it, read from its RunRequested in the log."""
    texts = {}
    for run_id in dict.fromkeys(run_ids):
        asked = await client.requested(run_id)
        if asked is not None:
            words = asked.prompt
            texts[run_id] = show.request_text(words) if words else plan_text(asked.plan)
    return texts
