"""A column compared with a bound list, in statement text that does not depend on the list's
length. A set-based statement's IN list otherwise renders one placeholder per value, so the
same statement has a different text for every group size. On PostgreSQL each text is a
statement asyncpg prepares (a round trip more, and the server plans it) the first time each
pooled connection sees it, and the group sizes of a busy Bot vary from 1 to 64: half of the
grouped writes' statements were prepared anew. There `= ANY(:list)` binds one array. SQLite
has no arrays, and its statements cost no round trip: there it stays an expanding IN.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, all_, any_, bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal, _TraverseInternalsType


class _InList(ColumnElement[bool]):
    """`column IN :name` (or NOT IN) with `name` bound to a list when the statement runs."""

    type = Boolean()
    _is_implicitly_boolean = True  # a comparison: SQLite must not render it `(…) = 1`
    inherit_cache = True
    _traverse_internals: _TraverseInternalsType = [  # noqa: RUF012 - SQLAlchemy's own shape
        ("column", InternalTraversal.dp_clauseelement),
        ("name", InternalTraversal.dp_string),
        ("negated", InternalTraversal.dp_boolean),
    ]

    def __init__(self, column: ColumnElement[Any], name: str, *, negated: bool) -> None:
        self.column = column
        self.name = name
        self.negated = negated


def in_list(column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    """`column` is one of the list bound as `name` (false for an empty list)."""
    return _InList(column, name, negated=False)


def not_in_list(column: ColumnElement[Any], name: str) -> ColumnElement[bool]:
    """`column` is none of the list bound as `name` (true for an empty list)."""
    return _InList(column, name, negated=True)


@compiles(_InList)
def _expanding_in(element: _InList, compiler: SQLCompiler, **kw: Any) -> str:
    values: BindParameter[Any] = bindparam(element.name, expanding=True)
    clause = element.column.not_in(values) if element.negated else element.column.in_(values)
    return compiler.process(clause, **kw)


@compiles(_InList, "postgresql")
def _array_any(element: _InList, compiler: SQLCompiler, **kw: Any) -> str:
    values = bindparam(element.name, type_=ARRAY(element.column.type))
    clause = element.column != all_(values) if element.negated else element.column == any_(values)
    return compiler.process(clause, **kw)
