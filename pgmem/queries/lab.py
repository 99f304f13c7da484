"""The lab's shared statements (:mod:`pgmem.lab.scratch`): scratch databases and the
application-like tenant session, by name."""

from __future__ import annotations

from typing import Final

from psycopg import sql

DATABASE_COMMENT: Final = """
select pg_catalog.shobj_description(d.oid, 'pg_database')
from pg_catalog.pg_database as d
where d.datname = %(name)s
"""
CREATE_DATABASE: Final = sql.SQL("create database {}")
COMMENT_DATABASE: Final = sql.SQL("comment on database {} is {}")
DROP_DATABASE: Final = sql.SQL("drop database if exists {} with (force)")
BIND_TENANT: Final = "select pgmem.set_tenant(%(tenant)s, false)"

# pgmem bench --store (pgmem.lab.store_bench): LangGraph's PostgresStore gets a schema
# of its own in the scratch database.
STORE_BENCH_SCHEMA: Final = sql.SQL("create schema {}")
