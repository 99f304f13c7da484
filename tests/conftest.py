"""Fixtures: a real PostgreSQL (the embedded server, or PGMEM_DSN), a
migrated template database, and a fresh clone of it for every test."""

from __future__ import annotations

import math
import os
import struct
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pytest_postgresql.janitor import DatabaseJanitor

from pgmem import schema, server
from pgmem.config import Config

# Every role a test creates starts with this, so teardown finds leftovers.
TEST_ROLE_PREFIX = f"pgmem_t_test{os.getpid()}"


@contextmanager
def raises_sqlstate(code: str) -> Iterator[None]:
    """pgmem's own SQLSTATEs (class PM) have no psycopg exception class of their own."""
    with pytest.raises(psycopg.Error) as info:
        yield
    assert info.value.sqlstate == code, info.value


def half(vector: Sequence[float]) -> list[float]:
    """A vector as pgmem stores and compares it (halfvec): each element rounded
    to IEEE half precision (alembic 0006)."""
    return [struct.unpack("e", struct.pack("e", x))[0] for x in vector]


def half_cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity pgmem computes between a stored vector and a query:
    both in half precision."""
    a, b = half(a), half(b)
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture(scope="session")
def server_dsn() -> str:
    """Superuser DSN of the server the tests use (PGMEM_DSN must be a superuser)."""
    config = Config.from_env()
    return config.dsn or server.ensure_running(config)


def _janitor(server_dsn: str, dbname: str, **kwargs: object) -> DatabaseJanitor:
    params = conninfo_to_dict(server_dsn)
    return DatabaseJanitor(
        user=str(params.get("user", "postgres")),
        host=str(params.get("host", "")),
        port=str(params.get("port", "5432")),
        password=params.get("password"),  # type: ignore[arg-type]
        dbname=dbname,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="session")
def cron_dsn(server_dsn: str) -> str:
    """The server's pg_cron database (cron.database_name), migrated, so pg_cron and
    pgmem both exist there; skips only on a server that does not load pg_cron."""
    with psycopg.connect(server_dsn) as conn:
        row = conn.execute("select current_setting('cron.database_name', true)").fetchone()
    if not row or not row[0]:
        pytest.skip("pg_cron is not loaded on this server")
    target = make_conninfo(server_dsn, dbname=row[0])
    schema.upgrade(target)
    return target


@pytest.fixture(scope="session")
def template_db(server_dsn: str) -> Iterator[str]:
    name = f"pgmem_tmpl_{os.getpid()}"
    janitor = _janitor(server_dsn, name, as_template=True)
    janitor.init()
    schema.upgrade(make_conninfo(server_dsn, dbname=name))
    yield name
    janitor.drop()
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        roles = conn.execute(
            "select rolname from pg_roles where rolname like %s", (TEST_ROLE_PREFIX + "%",)
        ).fetchall()
        for (role,) in roles:
            conn.execute(
                psycopg.sql.SQL("drop role if exists {}").format(psycopg.sql.Identifier(role))
            )


@pytest.fixture
def dsn(server_dsn: str, template_db: str) -> Iterator[str]:
    """Superuser DSN of a fresh, migrated database for this test alone."""
    name = f"pgmem_test_{uuid.uuid4().hex[:12]}"
    janitor = _janitor(server_dsn, name, template_dbname=template_db)
    janitor.init()
    yield make_conninfo(server_dsn, dbname=name)
    janitor.drop()


@pytest.fixture
def empty_dsn(server_dsn: str) -> Iterator[str]:
    """Superuser DSN of an empty database (no pgmem schema) for migration tests."""
    name = f"pgmem_empty_{uuid.uuid4().hex[:12]}"
    janitor = _janitor(server_dsn, name)
    janitor.init()
    yield make_conninfo(server_dsn, dbname=name)
    janitor.drop()


@pytest.fixture
def admin(dsn: str) -> Iterator[psycopg.Connection]:
    """A superuser connection (bypasses RLS) in autocommit mode."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Names unique to this test run, for cluster-wide objects such as roles."""
    suffix = uuid.uuid4().hex[:8]
    return lambda base: f"{base}_{suffix}"


@pytest.fixture
def tenant_login(
    admin: psycopg.Connection, dsn: str, unique: Callable[[str], str]
) -> Iterator[Callable[[str], psycopg.Connection]]:
    """Creates a tenant with its own login role and returns a connection as that role."""
    opened: list[psycopg.Connection] = []

    def login(tenant: str) -> psycopg.Connection:
        role = unique(f"{TEST_ROLE_PREFIX}_{tenant}")
        password = uuid.uuid4().hex
        admin.execute("select pgmem.create_tenant(%s)", (tenant,))
        admin.execute("select pgmem.create_tenant_login(%s, %s, %s)", (tenant, password, role))
        conn = psycopg.connect(make_conninfo(dsn, user=role, password=password), autocommit=True)
        opened.append(conn)
        return conn

    yield login
    for conn in opened:
        conn.close()


@pytest.fixture
def login_role(
    admin: psycopg.Connection, dsn: str, unique: Callable[[str], str]
) -> Iterator[Callable[[str], psycopg.Connection]]:
    """Creates a login role that is a member of the given group role and connects as it."""
    opened: list[psycopg.Connection] = []

    def login(member_of: str) -> psycopg.Connection:
        role = unique(f"{TEST_ROLE_PREFIX}_{member_of}")
        password = uuid.uuid4().hex
        admin.execute(
            psycopg.sql.SQL("create role {} login password {} in role {}").format(
                psycopg.sql.Identifier(role),
                psycopg.sql.Literal(password),
                psycopg.sql.Identifier(member_of),
            )
        )
        conn = psycopg.connect(make_conninfo(dsn, user=role, password=password), autocommit=True)
        opened.append(conn)
        return conn

    yield login
    for conn in opened:
        conn.close()


@dataclass(frozen=True)
class Db:
    dsn: str
    admin: psycopg.Connection  # superuser, autocommit: sees every tenant


@dataclass(frozen=True)
class Tenant:
    name: str
    conn: psycopg.Connection  # the tenant's own login role, autocommit
    dsn: str  # for more sessions as that role


def add_crowd(db: Db, tenant: str, about: str, rows: int = 4000) -> None:
    """A subject 'crowd' of ``rows`` memories for ``tenant``, each holding the word
    ``about`` (the test's own subject shares it, so matching text is everywhere), and
    fresh statistics: the average subject is then most of the table, as for a tenant
    with few subjects."""
    db.admin.execute(
        "insert into pgmem.subjects (tenant_id, subject) values (%s, 'crowd')", (tenant,)
    )
    db.admin.execute(
        """insert into pgmem.memories (tenant_id, subject, kind, content)
           select %s, 'crowd', 'episodic', 'crowd note ' || i || ' about the ' || %s
           from generate_series(1, %s) i""",
        (tenant, about, rows),
    )
    db.admin.execute("analyze pgmem.memories")


def memories_scans(conn: psycopg.Connection) -> tuple[int, bool] | None:
    """Sequential scans of pgmem.memories in this session's transaction, and whether
    an index of it was read."""
    return conn.execute(
        "select seq_scan, idx_scan > 0 from pg_catalog.pg_stat_xact_user_tables"
        " where relid = 'pgmem.memories'::regclass"
    ).fetchone()


@pytest.fixture(scope="module")
def db(server_dsn: str, template_db: str) -> Iterator[Db]:
    """One migrated database for a whole module whose tests each work in tenants of
    their own (cloning a database per test would cost more than such tests)."""
    name = f"pgmem_test_{uuid.uuid4().hex[:12]}"
    janitor = _janitor(server_dsn, name, template_dbname=template_db)
    janitor.init()
    dsn = make_conninfo(server_dsn, dbname=name)
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            yield Db(dsn, admin)
    finally:
        janitor.drop()


@pytest.fixture
def new_tenant(db: Db) -> Iterator[Callable[[], Tenant]]:
    """Creates a fresh tenant of the module's database with a login role, connected as it."""
    opened: list[psycopg.Connection] = []

    def create() -> Tenant:
        suffix = uuid.uuid4().hex[:10]
        name, role, password = f"t{suffix}", f"{TEST_ROLE_PREFIX}_m{suffix}", uuid.uuid4().hex
        db.admin.execute("select pgmem.create_tenant(%s)", (name,))
        db.admin.execute("select pgmem.create_tenant_login(%s, %s, %s)", (name, password, role))
        dsn = make_conninfo(db.dsn, user=role, password=password)
        conn = psycopg.connect(dsn, autocommit=True)
        opened.append(conn)
        return Tenant(name, conn, dsn)

    yield create
    for conn in opened:
        conn.close()


def settle_cron_runs(conn: psycopg.Connection, jobid: int) -> None:
    """Let a pg_cron run of ``jobid`` still in flight finish (up to 10 s): a job's
    transaction commits what it writes before pg_cron records how the run ended."""
    for _ in range(20):
        running = conn.execute(
            "select count(*) from cron.job_run_details"
            " where jobid = %s and status in ('starting', 'running')",
            (jobid,),
        ).fetchone()
        if running == (0,):
            return
        time.sleep(0.5)
