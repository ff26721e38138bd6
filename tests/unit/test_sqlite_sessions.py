"""The suite's native SQLite session service (tests.support.SqliteSessionService) closes the
connection ADK's constructor leaves open on an existing file: from Python 3.13 that connection,
collected unclosed, failed whichever test the garbage collector ran in (``ResourceWarning``)."""

from __future__ import annotations

import gc
import sqlite3
import warnings
from contextlib import closing
from pathlib import Path

import pytest
from google.adk.sessions.sqlite_session_service import (
    SqliteSessionService as AdkSqliteSessionService,
)

from tests.support import SqliteSessionService


def a_file_with_events(path: Path, *columns: str) -> str:
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(f"CREATE TABLE events ({', '.join(columns)})")
    return str(path)


def test_a_service_opened_on_an_existing_file_leaves_no_connection_open(tmp_path: Path) -> None:
    # the check it replaces is still ADK's (renamed, the override would do nothing)
    assert "_is_migration_needed" in vars(AdkSqliteSessionService)
    path = a_file_with_events(tmp_path / "sessions.db", "id TEXT", "event_data TEXT")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SqliteSessionService(path)
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_service_opened_on_a_file_of_the_old_schema_is_still_refused(tmp_path: Path) -> None:
    path = a_file_with_events(tmp_path / "sessions.db", "id TEXT", "actions BLOB")
    with pytest.raises(RuntimeError, match="seems to use an old schema"):
        SqliteSessionService(path)
    assert SqliteSessionService(str(tmp_path / "new.db"))._is_migration_needed() is False
