"""Rows, result types and the client interface the handles over the SQL functions share.

:class:`pgmem.client.Memory` builds on this module, and so do its session and task
handles (:mod:`pgmem.session`, :mod:`pgmem.task`), which reach the database through
the small :class:`Client` interface a ``Memory`` provides: the client imports its
handles, never the other way round.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeAlias

import psycopg
from psycopg.rows import dict_row

__all__ = ["Client", "Connection", "PromptText", "Results", "Row", "Rows", "fetch_all", "fetch_one"]

Row: TypeAlias = dict[str, Any]
Rows: TypeAlias = list[Row]


class Results(list[Row]):
    """Rows of :meth:`Memory.search` or :meth:`Memory.add`, and whether the embedder
    failed on the way: ``degraded`` (then ``degraded_reason`` says why). A degraded
    search ranked by full text alone; a degraded add stored its facts without vectors,
    which the worker's embed pass gives them once the embedder answers again."""

    def __init__(self, rows: Iterable[Row] = (), *, degraded_reason: str | None = None) -> None:
        super().__init__(rows)
        self.degraded_reason = degraded_reason

    @property
    def degraded(self) -> bool:
        return self.degraded_reason is not None


class PromptText(str):
    """The text of :meth:`Memory.context` or :meth:`Session.prompt`, with ``degraded``
    and ``degraded_reason`` as :class:`Results` has them."""

    degraded_reason: str | None

    def __new__(cls, text: str, *, degraded_reason: str | None = None) -> PromptText:
        self = super().__new__(cls, text)
        self.degraded_reason = degraded_reason
        return self

    @property
    def degraded(self) -> bool:
        return self.degraded_reason is not None


Connection: TypeAlias = psycopg.Connection[Any]


class Client(Protocol):
    """What a session or task handle asks of its client (a :class:`pgmem.client.Memory`)."""

    def transaction(self, conn: Connection | None = None) -> AbstractContextManager[Connection]:
        """A transaction (a savepoint inside the caller's) with the tenant bound."""
        ...

    def _call(self, conn: Connection | None = None) -> AbstractContextManager[Connection]:
        """Where a call of one statement runs."""
        ...

    def _query_vector(self, query: str | None) -> tuple[list[float] | None, str | None]:
        """The query's vector, or None and why when the embedder fails."""
        ...


def fetch_all(conn: Connection, query: str, params: Mapping[str, Any]) -> Rows:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


def fetch_one(conn: Connection, query: str, params: Mapping[str, Any]) -> Row:
    rows = fetch_all(conn, query, params)
    if not rows:
        raise RuntimeError("the statement returned no row")  # every caller's returns one
    return rows[0]
