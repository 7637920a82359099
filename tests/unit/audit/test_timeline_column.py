"""The timeline's ``facts`` column on an audit database made before it (issue 42): added
when the store opens, old rows answering no facts instead of failing the run query."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from services.audit.queries import with_facts
from services.audit.store import SqliteStore

OLD_TIMELINE = """CREATE TABLE timeline (stream_seq INTEGER PRIMARY KEY, run_id TEXT,
  event_id TEXT, type TEXT, at REAL, detail TEXT)"""


async def test_store_when_opened_on_a_database_without_facts_adds_the_column(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(OLD_TIMELINE)
        db.execute("INSERT INTO timeline VALUES (1, 'r1', 'e1', 'run.requested', 1.0, 'asked')")
    store = await SqliteStore.open(path)
    await store.close()
    with sqlite3.connect(path) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(timeline)")]
        (old,) = db.execute("SELECT facts FROM timeline").fetchall()
    assert columns[-1] == "facts" and old == (None,)


def test_with_facts_when_a_row_predates_the_column_answers_none() -> None:
    row = {"stream_seq": 1, "type": "run.requested", "facts": None}
    assert with_facts(row)["facts"] == {}
    assert with_facts(row | {"facts": '{"scene_id":"s"}'})["facts"] == {"scene_id": "s"}
