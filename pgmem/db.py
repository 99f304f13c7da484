"""Connections to the pgmem database, optionally bound to a tenant."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.rows import dict_row

from pgmem import server
from pgmem.config import Config


def resolve_dsn(dsn: str | None = None, *, start: bool = True) -> str:
    """An explicit DSN or PGMEM_DSN; otherwise the embedded server (started when asked)."""
    config = Config.from_env(dsn)
    if config.dsn:
        return config.dsn
    return server.ensure_running(config) if start else server.dsn(config)


@contextmanager
def transaction(
    dsn: str, tenant: str | None = None
) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    """One transaction; with ``tenant``, bound to it through pgmem.set_tenant."""
    with psycopg.connect(dsn, row_factory=dict_row) as conn, conn.transaction():
        if tenant is not None:
            conn.execute("select pgmem.set_tenant(%s)", (tenant,))
        yield conn
