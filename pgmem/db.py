"""Where the pgmem database is: an explicit DSN, PGMEM_DSN or the embedded server."""

from __future__ import annotations

from pgmem import server
from pgmem.config import Config


def resolve_dsn(dsn: str | None = None, *, start: bool = True) -> str:
    """An explicit DSN or PGMEM_DSN; otherwise the embedded server (started when asked)."""
    config = Config.from_env(dsn)
    if config.dsn:
        return config.dsn
    return server.ensure_running(config) if start else server.dsn(config)
