"""The aiosqlite internals the audit store depends on, checked on the installed aiosqlite.

``services.audit.sqlite_views`` runs a whole projection (several statements and the commit)
as one job on aiosqlite's worker thread through ``Connection._execute``, and hands the
views that thread's ``sqlite3`` connection through ``Connection._conn``: aiosqlite has no
public way to do either, and one thread hop per statement was the projection's main cost.
If a release renames them or stops running jobs on the connection's own thread, these
tests fail here, before the audit store misbehaves.
"""

from __future__ import annotations

import inspect
import sqlite3
import threading

import aiosqlite

from services.audit.sqlite_views import _on_thread


def test_execute_is_a_coroutine_taking_a_function_and_its_arguments() -> None:
    execute = inspect.getattr_static(aiosqlite.Connection, "_execute", None)
    assert execute is not None and inspect.iscoroutinefunction(execute), (
        "aiosqlite no longer has Connection._execute as a coroutine; "
        "services/audit/sqlite_views.py must find another way to run a job on its thread"
    )
    params = list(inspect.signature(execute).parameters)
    assert params[:2] == ["self", "fn"], params


def test_conn_is_a_property_giving_the_sqlite3_connection() -> None:
    assert isinstance(inspect.getattr_static(aiosqlite.Connection, "_conn", None), property)


async def test_a_job_runs_on_the_connection_thread_with_its_own_connection() -> None:
    async with aiosqlite.connect(":memory:") as db:
        raw = db._conn
        assert isinstance(raw, sqlite3.Connection)

        def job(conn: sqlite3.Connection, value: int) -> tuple[str, int]:
            conn.execute("CREATE TABLE t (v INTEGER)")
            conn.execute("INSERT INTO t VALUES (?)", (value,))
            (got,) = conn.execute("SELECT v FROM t").fetchone()
            return threading.current_thread().name, got

        thread_name, got = await _on_thread(db, job, raw, 7)
    assert got == 7
    assert thread_name != threading.current_thread().name  # not the event loop's thread
