"""The lab's throwaway databases: one helper for ``pgmem bench`` and ``pgmem eval``.

A scratch database is created on a server, marked with a comment naming the harness
that made it, optionally migrated, and dropped afterwards unless kept. A database of
that name that some other hand created is never touched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from pgmem import schema
from pgmem.queries import lab as Q
from pgmem.queries import worker as WQ

_DATABASE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class ScratchError(Exception):
    """A scratch database cannot be made under that name."""


def mark(owner: str) -> str:
    """The comment a scratch database of ``owner`` (e.g. ``pgmem eval``) carries."""
    return f"{owner} scratch database (dropped and recreated by {owner})"


@contextmanager
def scratch_database(
    server_dsn: str,
    name: str,
    *,
    owner: str,
    keep: bool = False,
    replace: bool = False,
    migrate: bool = True,
    error: Callable[[str], Exception] = ScratchError,
) -> Iterator[str]:
    """A new database ``name`` on ``server_dsn``'s server, migrated unless ``migrate`` is
    false; yields its DSN and drops it afterwards unless ``keep``.

    An existing database of that name is an ``error``, except with ``replace`` when
    ``owner`` made it (a kept run's): that one is dropped and recreated.
    """
    if not _DATABASE_NAME.match(name):
        raise error(f"database name {name!r}: use lower-case letters, digits and _")
    ident = sql.Identifier(name)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        row = conn.execute(Q.DATABASE_COMMENT, {"name": name}).fetchone()
        if row is not None:
            if not replace:
                raise error(
                    f'database "{name}" already exists (a kept or interrupted run?); '
                    f'drop it (drop database "{name}") or pass --database'
                )
            if row[0] != mark(owner):
                raise error(
                    f"database {name!r} exists and was not created by {owner}; "
                    "choose another name with --database"
                )
            conn.execute(Q.DROP_DATABASE.format(ident))
        conn.execute(Q.CREATE_DATABASE.format(ident))
        conn.execute(Q.COMMENT_DATABASE.format(ident, sql.Literal(mark(owner))))
    dsn = make_conninfo(server_dsn, dbname=name)
    try:
        if migrate:
            schema.upgrade(dsn)
        yield dsn
    finally:
        if not keep:
            drop_database(server_dsn, name)


def drop_database(server_dsn: str, name: str) -> None:
    """Remove database ``name`` (if it exists) from ``server_dsn``'s server, sessions and all."""
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(Q.DROP_DATABASE.format(sql.Identifier(name)))


@contextmanager
def tenant_connection(dsn: str, tenant: str) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    """A connection acting as an application would: pgmem_service with ``tenant`` bound.

    Row-level security applies to everything it reads and writes, as in production.
    """
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        conn.execute(WQ.DROP_TO_SERVICE)
        conn.execute(Q.BIND_TENANT, {"tenant": tenant})
        yield conn
