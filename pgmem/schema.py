"""Schema management: alembic revisions plus the idempotent sql/ files."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import psycopg
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory

from alembic import command
from pgmem.paths import migrations_dir, sql_dir
from pgmem.queries import schema as q
from pgmem.queries.schema import VERSION_TABLE

__all__ = [
    "DEFAULT_DIMS",
    "VERSION_TABLE",
    "SchemaError",
    "current_revision",
    "declared_sql",
    "downgrade",
    "installed_dims",
    "status",
    "upgrade",
    "upgrade_sql",
]

DEFAULT_DIMS = 384  # all-MiniLM-L6-v2, the offline embedding model


class SchemaError(Exception):
    """A migration request that cannot be carried out; the message says why."""


def declared_sql() -> str:
    """Every idempotent SQL file, in name order (the files number their areas)."""
    files = sorted((sql_dir() / "functions").glob("*.sql"))
    return "\n".join(f"-- {f.name}\n{f.read_text()}" for f in files)


def _config(dsn: str | None, **attributes: object) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes.update(attributes, dsn=dsn)
    return cfg


def _head() -> str:
    head = ScriptDirectory.from_config(_config(None)).get_current_head()
    assert head is not None
    return head


def current_revision(dsn: str) -> str | None:
    with psycopg.connect(dsn) as conn:
        if conn.execute(q.REGCLASS, {"name": f"public.{VERSION_TABLE}"}).fetchone() == (None,):
            return None
        row = conn.execute(q.VERSION_NUM).fetchone()
        return row[0] if row else None


def installed_dims(dsn: str) -> int | None:
    with psycopg.connect(dsn) as conn:
        if conn.execute(q.REGCLASS, {"name": "pgmem.settings"}).fetchone() == (None,):
            return None
        row = conn.execute(q.DEFAULT_DIMS).fetchone()
        return row[0] if row else None


def upgrade(dsn: str, revision: str = "head", dims: int | None = None) -> None:
    """Upgrade to ``revision``; ``dims`` fixes the embedding size at the first run."""
    existing = installed_dims(dsn)
    if dims is not None and existing is not None and dims != existing:
        raise SchemaError(
            f"the schema already stores {existing}-dimensional embeddings; --dims {dims} "
            "applies only to a first migration (re-embedding into a new size is not supported)"
        )
    target = _head() if revision == "head" else revision
    command.upgrade(
        _config(dsn, dims=dims or existing or DEFAULT_DIMS, apply_sql=target == _head()), revision
    )


def downgrade(dsn: str, revision: str = "base") -> None:
    command.downgrade(_config(dsn, apply_sql=False), revision)


def upgrade_sql(revision: str = "head", dims: int = DEFAULT_DIMS) -> str:
    """The SQL an upgrade from an empty database would run, for a DBA to review."""
    target = _head() if revision == "head" else revision
    cfg = _config(None, dims=dims, apply_sql=target == _head())
    out = io.StringIO()
    cfg.stdout = out
    with redirect_stdout(out):
        command.upgrade(cfg, revision, sql=True)
    return out.getvalue()


def status(dsn: str) -> dict[str, object]:
    """What a DBA checks first: revision, tables and their RLS, roles, extensions."""
    with psycopg.connect(dsn) as conn:
        tables = conn.execute(q.TABLES_AND_RLS).fetchall()
        roles = [
            r[0]
            for r in conn.execute(
                q.ROLES_PRESENT,
                {"roles": ["pgmem_admin", "pgmem_app", "pgmem_readonly", "pgmem_service"]},
            )
        ]
        extensions: dict[str, str] = dict(conn.execute(q.EXTENSIONS).fetchall())
        cron_database = conn.execute(q.CRON_DATABASE).fetchone()
    return {
        "revision": current_revision(dsn),
        "head": _head(),
        "dims": installed_dims(dsn),
        "tables": [{"table": t, "rls": rls, "forced": forced} for t, rls, forced in tables],
        "roles": roles,
        "extensions": extensions,
        "cron_database": cron_database[0] if cron_database else None,
        "database": cron_database[1] if cron_database else None,
    }
