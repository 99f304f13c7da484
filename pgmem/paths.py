"""Where the SQL and migration folders are, in a checkout or an installed wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _find(installed: str, checkout: str) -> Path:
    # A wheel carries the folders inside the package (see pyproject's
    # package-dir); an editable install or a checkout has them at the top.
    for candidate in (_PACKAGE / installed, _PACKAGE.parent / checkout):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"pgmem's {checkout}/ folder is missing next to {_PACKAGE}")


def sql_dir() -> Path:
    return _find("sql", "sql")


def migrations_dir() -> Path:
    return _find("migrations", "alembic")
