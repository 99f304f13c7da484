"""Where pgmem finds its database: environment first, then the local server."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# A port away from the system default (5432) so the embedded server never
# clashes with a PostgreSQL the machine already runs.
DEFAULT_PORT = 54329
DEFAULT_DATABASE = "pgmem"


@dataclass(frozen=True)
class Config:
    home: Path
    port: int
    database: str
    dsn: str | None  # an external server; when set pgmem never starts its own

    @classmethod
    def from_env(cls, dsn: str | None = None) -> Config:
        home = Path(os.environ.get("PGMEM_HOME", ".pgmem")).expanduser().resolve()
        port = int(os.environ.get("PGMEM_PORT", DEFAULT_PORT))
        database = os.environ.get("PGMEM_DATABASE", DEFAULT_DATABASE)
        return cls(home=home, port=port, database=database, dsn=dsn or os.environ.get("PGMEM_DSN"))
