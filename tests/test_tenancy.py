"""Row-level security: a tenant sees, changes and inserts only its own rows,
whatever SQL it runs; without a tenant nothing is visible or writable."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest
from psycopg import errors

Login = Callable[[str], psycopg.Connection]

# One row per tenant in every tenant table; memory ids are fixed per tenant.
SEED = """
insert into pgmem.subjects (tenant_id, subject) values (%(t)s, 'alice');
insert into pgmem.memories (tenant_id, memory_id, subject, kind, content)
    overriding system value values (%(t)s, %(id)s, 'alice', 'semantic', 'fact of ' || %(t)s),
                                   (%(t)s, %(id)s + 1, 'alice', 'episodic', 'event of ' || %(t)s);
insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type)
    values (%(t)s, %(id)s, %(id)s + 1, 'same_session');
insert into pgmem.memory_events (tenant_id, memory_id, subject, event)
    values (%(t)s, %(id)s, 'alice', 'insert');
insert into pgmem.inbox (tenant_id, job, subject) values (%(t)s, 'turn', 'alice');
"""

TABLES = ["tenants", "settings", "subjects", "memories", "memory_links", "memory_events", "inbox"]
WRITABLE = ["subjects", "memories", "memory_links", "inbox"]


@pytest.fixture
def two_tenants(
    admin: psycopg.Connection, tenant_login: Login
) -> tuple[psycopg.Connection, psycopg.Connection]:
    a = tenant_login("acme")
    b = tenant_login("bravo")
    for tenant, first_id in (("acme", 100), ("bravo", 200)):
        for statement in SEED.strip().split(";\n"):
            admin.execute(statement, {"t": tenant, "id": first_id})
    return a, b


def tenants_seen(conn: psycopg.Connection, table: str) -> set[str]:
    return {r[0] for r in conn.execute(f"select tenant_id from pgmem.{table}")}


@pytest.mark.parametrize("table", TABLES)
def test_login_role_sees_only_its_tenant(two_tenants: tuple, table: str) -> None:
    a, b = two_tenants
    assert tenants_seen(a, table) - {"_default"} == {"acme"}
    assert tenants_seen(b, table) - {"_default"} == {"bravo"}


@pytest.mark.parametrize("table", WRITABLE)
def test_login_role_cannot_change_other_tenants_rows(
    two_tenants: tuple, admin: psycopg.Connection, table: str
) -> None:
    a, _ = two_tenants
    before = admin.execute(
        f"select count(*) from pgmem.{table} where tenant_id = 'bravo'"
    ).fetchone()
    assert (
        a.execute(
            f"update pgmem.{table} set tenant_id = tenant_id where tenant_id = 'bravo'"
        ).rowcount
        == 0
    )
    # App roles hold no DELETE privilege at all (it would allow LOCK TABLE);
    # deletes go through owner-rights functions that check the tenant.
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute(f"delete from pgmem.{table} where tenant_id = 'bravo'")
    after = admin.execute(
        f"select count(*) from pgmem.{table} where tenant_id = 'bravo'"
    ).fetchone()
    assert before == after


@pytest.mark.parametrize(
    "statement",
    [
        "insert into pgmem.subjects (tenant_id, subject) values ('bravo', 'mallory')",
        "insert into pgmem.memories (tenant_id, subject, kind, content)"
        " values ('bravo', 'alice', 'semantic', 'x')",
        "insert into pgmem.memory_events (tenant_id, subject, event)"
        " values ('bravo', 'alice', 'insert')",
        "insert into pgmem.inbox (tenant_id, job) values ('bravo', 'turn')",
        "update pgmem.memories set tenant_id = 'bravo'",
    ],
)
def test_login_role_cannot_write_into_another_tenant(two_tenants: tuple, statement: str) -> None:
    a, _ = two_tenants
    with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
        a.execute(statement)


def test_login_role_inserts_into_its_own_tenant_by_default(two_tenants: tuple) -> None:
    a, _ = two_tenants
    a.execute("insert into pgmem.subjects (subject) values ('carol')")
    assert a.execute("select tenant_id from pgmem.subjects where subject = 'carol'").fetchone() == (
        "acme",
    )


def test_login_role_cannot_rebind_itself(two_tenants: tuple) -> None:
    a, _ = two_tenants
    a.execute("set pgmem.tenant = 'bravo'")
    assert tenants_seen(a, "memories") == {"acme"}
    with pytest.raises(errors.InsufficientPrivilege, match="may not choose"):
        a.execute("select pgmem.set_tenant('bravo')")
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute("insert into pgmem._tenant_logins values (current_user, 'bravo')")
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute("update pgmem._tenant_logins set tenant_id = 'bravo'")
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute("select pgmem.create_tenant('evil')")
    # Dropping to the group role unbinds: nothing visible, writes refused.
    a.execute("set role pgmem_app")
    assert tenants_seen(a, "memories") == set()
    with pytest.raises(psycopg.Error) as exc:
        a.execute("insert into pgmem.subjects (subject) values ('x')")
    assert exc.value.sqlstate == "PM001"


def test_history_is_append_only_for_the_app(two_tenants: tuple) -> None:
    a, _ = two_tenants
    assert a.execute("select count(*) from pgmem.memory_events").fetchone() == (1,)
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute("update pgmem.memory_events set event = 'delete'")
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute("delete from pgmem.memory_events")
    with pytest.raises(errors.InsufficientPrivilege):
        a.execute("truncate pgmem.memory_events")


def test_no_tenant_bound_sees_nothing_and_cannot_write(
    two_tenants: tuple, login_role: Login
) -> None:
    service = login_role("pgmem_service")
    for table in ["subjects", "memories", "memory_links", "memory_events", "inbox"]:
        assert tenants_seen(service, table) == set()
    with pytest.raises(psycopg.Error) as exc:
        service.execute("insert into pgmem.subjects (subject) values ('x')")
    assert exc.value.sqlstate == "PM001"
    assert "set_tenant" in (exc.value.diag.message_hint or "")
    with pytest.raises(psycopg.Error) as exc:
        service.execute("update pgmem.memories set pinned = true")
    assert exc.value.sqlstate == "PM001"
    # App roles hold no DELETE privilege at all (it would allow LOCK TABLE);
    # erase/purge delete for them.
    with pytest.raises(errors.InsufficientPrivilege):
        service.execute("delete from pgmem.memories")


def test_service_binds_a_tenant_per_transaction(two_tenants: tuple, login_role: Login) -> None:
    service = login_role("pgmem_service")
    with service.transaction():
        service.execute("select pgmem.set_tenant('bravo')")
        assert tenants_seen(service, "memories") == {"bravo"}
        service.execute("insert into pgmem.subjects (subject) values ('dave')")
    # The binding ended with the transaction.
    assert tenants_seen(service, "memories") == set()
    with pytest.raises(psycopg.Error) as exc:
        service.execute("select pgmem.set_tenant('nobody')")
    assert exc.value.sqlstate == "PM002"


def test_plain_app_role_cannot_bind_a_tenant(two_tenants: tuple, login_role: Login) -> None:
    app = login_role("pgmem_app")
    app.execute("set pgmem.tenant = 'acme'")
    assert tenants_seen(app, "memories") == set()
    with pytest.raises(errors.InsufficientPrivilege):
        app.execute("select pgmem.set_tenant('acme')")


def test_readonly_reads_everything_and_writes_nothing(
    two_tenants: tuple, login_role: Login
) -> None:
    ro = login_role("pgmem_readonly")
    assert tenants_seen(ro, "memories") == {"acme", "bravo"}
    for statement in [
        "insert into pgmem.subjects (tenant_id, subject) values ('acme', 'x')",
        "update pgmem.memories set importance = 1",
        "delete from pgmem.memory_events",
    ]:
        with pytest.raises(errors.InsufficientPrivilege):
            ro.execute(statement)
    with pytest.raises(errors.InsufficientPrivilege):
        ro.execute("select * from pgmem._tenant_logins")


def test_drop_tenant_removes_every_row_and_its_login(
    two_tenants: tuple, admin: psycopg.Connection
) -> None:
    role = admin.execute(
        "select role_name from pgmem._tenant_logins where tenant_id = 'acme'"
    ).fetchone()
    assert admin.execute("select pgmem.drop_tenant('acme')").fetchone() == (2,)
    for table in TABLES:
        assert "acme" not in tenants_seen(admin, table)
        assert "bravo" in tenants_seen(admin, table)
    assert admin.execute("select count(*) from pg_roles where rolname = %s", role).fetchone() == (
        0,
    )
    with pytest.raises(psycopg.Error) as exc:
        admin.execute("select pgmem.drop_tenant('acme')")
    assert exc.value.sqlstate == "PM002"


@pytest.mark.parametrize("name", ["", "Upper", "-lead", "has space", "x" * 64, "_default"])
def test_invalid_tenant_names_are_refused(admin: psycopg.Connection, name: str) -> None:
    with pytest.raises(psycopg.Error) as exc:
        admin.execute("select pgmem.create_tenant(%s)", (name,))
    assert exc.value.sqlstate == "PM003"


def test_new_tenant_gets_default_settings(admin: psycopg.Connection) -> None:
    admin.execute("select pgmem.create_tenant('fresh')")
    same = admin.execute(
        """
        select (to_jsonb(t) - 'tenant_id' - 'updated_at')
               = (to_jsonb(d) - 'tenant_id' - 'updated_at')
        from pgmem.settings t, pgmem.settings d
        where t.tenant_id = 'fresh' and d.tenant_id = '_default'
        """
    ).fetchone()
    assert same == (True,)
    # The thresholds are the embedding model's unless a tenant sets its own.
    row = admin.execute(
        "select duplicate_threshold, merge_threshold from pgmem.settings where tenant_id = 'fresh'"
    ).fetchone()
    assert row == (None, None)
    with pytest.raises(errors.CheckViolation):
        admin.execute(
            "update pgmem.settings set duplicate_threshold = 0.9, merge_threshold = 0.99"
            " where tenant_id = 'fresh'"
        )


def test_a_default_login_role_name_says_nothing_of_its_tenant(
    admin: psycopg.Connection,
) -> None:
    admin.execute("select pgmem.create_tenant('northwind')")
    (role,) = admin.execute("select pgmem.create_tenant_login('northwind', 'pw-7c1e')").fetchone()
    try:
        assert role.startswith("pgmem_t_") and "northwind" not in role
        assert len(role) == len("pgmem_t_") + 16
    finally:
        admin.execute(f'drop role "{role}"')
