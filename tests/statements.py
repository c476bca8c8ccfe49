"""The statements a Database's sessions send, as a test sees them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from storage.db import Database


@contextmanager
def statements_of(db: Database, keep: Callable[[str], bool] = bool) -> Iterator[list[str]]:
    """The statements `db`'s sessions send meanwhile, whitespace collapsed, those `keep`
    keeps."""
    seen: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        text = " ".join(statement.split())
        if keep(text):
            seen.append(text)

    event.listen(db.session_engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        event.remove(db.session_engine, "before_cursor_execute", before)
