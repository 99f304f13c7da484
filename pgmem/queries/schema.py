"""Every statement schema management (:mod:`pgmem.schema`) and the embedded server
(:mod:`pgmem.server`) run, by name."""

from __future__ import annotations

from typing import Final

from psycopg import sql

# Not alembic_version: the application may use alembic too.
VERSION_TABLE: Final = "pgmem_alembic_version"

REGCLASS: Final = "select to_regclass(%(name)s)"
VERSION_NUM: Final = f"select version_num from public.{VERSION_TABLE}"
DEFAULT_DIMS: Final = "select embedding_dims from pgmem.settings where tenant_id = '_default'"
TABLES_AND_RLS: Final = """
select c.relname, c.relrowsecurity, c.relforcerowsecurity
from pg_class as c
where c.relnamespace = to_regnamespace('pgmem') and c.relkind = 'r'
order by c.relname
"""
ROLES_PRESENT: Final = (
    "select rolname from pg_roles where rolname = any(%(roles)s) order by rolname"
)
EXTENSIONS: Final = (
    "select extname, extversion from pg_extension where extname in ('vector', 'pg_cron')"
)
CRON_DATABASE: Final = "select current_setting('cron.database_name', true), current_database()"

# --------------------------------------------------------------- embedded server

DATABASE_EXISTS: Final = "select 1 from pg_database where datname = %(name)s"
CREATE_DATABASE: Final = sql.SQL("create database {name}")
