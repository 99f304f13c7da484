"""Alembic environment: once-only revisions, then the idempotent sql/ files.

Every run that ends at head re-applies sql/functions/*.sql (CREATE OR
REPLACE only) in the same transaction as the revisions, so functions and
views always match the installed code. pgmem.schema drives this module and
passes the connection string and options through ``config.attributes``.
"""

from __future__ import annotations

import psycopg
from sqlalchemy import create_engine

from alembic import context
from pgmem.schema import VERSION_TABLE, declared_sql

config = context.config


def _as_admin(sql: str) -> str:
    # Functions and views belong to pgmem_admin, not to whoever migrates.
    # Casting to vector loads pgvector's library, which defines its settings
    # (hnsw.iterative_scan…): a function's SET clause naming a setting that is
    # still an unknown placeholder is refused for a non-superuser owner.
    return f"select '[1]'::public.vector;\nset local role pgmem_admin;\n{sql}\nreset role;"


def run_offline() -> None:
    context.configure(
        url="postgresql+psycopg://",
        literal_binds=True,
        transactional_ddl=True,
        version_table=VERSION_TABLE,
        # Named binds: pyformat would print every % of the SQL as %%.
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()
        if config.attributes.get("apply_sql"):
            context.execute(_as_admin(declared_sql()))


def run_online() -> None:
    dsn = config.attributes["dsn"]
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn))
    with engine.connect() as connection:
        context.configure(
            connection=connection, transactional_ddl=True, version_table=VERSION_TABLE
        )
        with context.begin_transaction():
            context.run_migrations()
            if config.attributes.get("apply_sql"):
                # Raw driver call: the files hold many statements and $$ bodies.
                connection.connection.driver_connection.execute(_as_admin(declared_sql()))
    engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
