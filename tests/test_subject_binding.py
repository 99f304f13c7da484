"""End-user binding: a connection bound with pgmem.bind_subject sees and writes only
its end user's rows (and reads the shared subjects it was bound with), whatever SQL
it runs, enforced by row-level security as the tenant is.

Every probe runs as a tenant's real login role (or a pgmem_service member) against
the tables, the views and the reading functions; a second subject's rows are put
in every table first, so a probe that sees nothing proves something."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from conftest import TEST_ROLE_PREFIX, Db, Tenant, raises_sqlstate
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgmem import Memory

SUBJECT_TABLES = [
    "subjects",
    "memories",
    "memory_events",
    "inbox",
    "sessions",
    "session_messages",
    "session_summaries",
    "tasks",
    "memory_accesses",
]
# Tables whose rows hang off a memory or a task, and how to tell whose they are.
CHILD_TABLES = {
    "memory_links": "from_id in (select memory_id from pgmem.memories where subject = %(s)s)"
    " or to_id in (select memory_id from pgmem.memories where subject = %(s)s)",
    "memory_decay": "memory_id in (select memory_id from pgmem.memories where subject = %(s)s)",
    "reembed_vectors": "memory_id in (select memory_id from pgmem.memories where subject = %(s)s)",
    "task_steps": "task_id in (select task_id from pgmem.tasks where subject = %(s)s)",
}


def bind(conn: psycopg.Connection, subject: str, shared: list[str] | None = None) -> None:
    conn.execute("select pgmem.bind_subject(%s, %s)", (subject, shared or []))


def fill(t: Tenant, db: Db, subject: str, words: str) -> list[int]:
    """Rows of ``subject`` in every subject-bearing table of tenant ``t``; returns
    the ids of its two memories."""
    ids = [
        int(
            t.conn.execute(
                "select memory_id from pgmem.remember(%s, %s)", (subject, f"{words} fact {n}")
            ).fetchone()[0]  # type: ignore[index]
        )
        for n in (1, 2)
    ]
    t.conn.execute(
        "select pgmem.enqueue(%s, %s)",
        (subject, json.dumps([{"role": "user", "content": f"{words} said something"}])),
    )
    t.conn.execute("select pgmem.append_message(%s, 's1', 'user', %s)", (subject, f"{words} hi"))
    t.conn.execute(
        "select pgmem.save_summary(%s, 's1', 1, 1, %s, 'extractive')", (subject, f"{words} summary")
    )
    task = t.conn.execute(
        "select pgmem.start_task(%s, %s, '[\"one\"]')", (subject, f"{words} task")
    ).fetchone()[0]  # type: ignore[index]
    t.conn.execute("select pgmem.record_step(%s, 1, %s)", (task, f"{words} step"))
    t.conn.execute("select count(*) from pgmem.recall(%s, %s)", (subject, f"{words} fact"))
    db.admin.execute(
        "insert into pgmem.memory_links (tenant_id, from_id, to_id, link_type)"
        " values (%s, %s, %s, 'same_entity')",
        (t.name, ids[0], ids[1]),
    )
    db.admin.execute(
        "insert into pgmem.memory_decay (tenant_id, memory_id, effective_importance, decayed_at)"
        " values (%s, %s, 0.5, now())",
        (t.name, ids[0]),
    )
    db.admin.execute(
        "insert into pgmem.reembed_vectors (tenant_id, memory_id, model, content_hash, embedding)"
        " values (%s, %s, 'm', '\\x00', '[1,0,0]')",
        (t.name, ids[0]),
    )
    return ids


def rows_of(conn: psycopg.Connection, table: str, subject: str) -> int:
    where = CHILD_TABLES.get(table, "subject = %(s)s")
    row = conn.execute(f"select count(*) from pgmem.{table} where {where}", {"s": subject})
    return int(row.fetchone()[0])  # type: ignore[index]


def other_connection(t: Tenant) -> psycopg.Connection:
    return psycopg.connect(t.dsn, autocommit=True)


@pytest.fixture(autouse=True)
def binding_on(db: Db) -> None:
    """End-user binding is off by default; these tests turn it on for the module's
    database (test_binding_is_off_until_an_administrator_turns_it_on checks the default)."""
    db.admin.execute("select pgmem.enable_subject_binding()")


@pytest.fixture
def alice_and_bob(new_tenant: Callable[[], Tenant], db: Db) -> tuple[Tenant, list[int], list[int]]:
    t = new_tenant()
    return t, fill(t, db, "alice", "Alice"), fill(t, db, "bob", "Bob")


@pytest.mark.parametrize("table", SUBJECT_TABLES + list(CHILD_TABLES))
def test_a_bound_connection_sees_only_its_end_user_in_every_table(
    alice_and_bob: tuple[Tenant, list[int], list[int]], db: Db, table: str
) -> None:
    t, _, _ = alice_and_bob
    # The tenant holds both subjects' rows, and an unbound connection sees them.
    assert rows_of(t.conn, table, "bob") > 0
    assert rows_of(t.conn, table, "alice") > 0
    bind(t.conn, "alice")
    assert rows_of(t.conn, table, "bob") == 0
    assert rows_of(t.conn, table, "alice") > 0
    # Nor by another path to the same rows: a count of the whole table.
    total = t.conn.execute(f"select count(*) from pgmem.{table}").fetchone()[0]  # type: ignore[index]
    assert total == rows_of(t.conn, table, "alice")


def test_views_and_reading_functions_show_nothing_of_another_end_user(
    alice_and_bob: tuple[Tenant, list[int], list[int]],
) -> None:
    t, alice_ids, bob_ids = alice_and_bob
    bind(t.conn, "alice")
    c = t.conn
    assert c.execute("select * from pgmem.recall('bob', 'Bob fact')").fetchall() == []
    assert (
        c.execute(
            "select * from pgmem.recall('alice', 'fact', p_shared_subjects => '{bob}')"
        ).fetchall()
        != []
    )
    assert all(
        r[0] == "alice"
        for r in c.execute(
            "select subject from pgmem.recall('alice', 'fact', p_shared_subjects => '{bob}')"
        )
    )
    assert c.execute("select * from pgmem.profile('bob')").fetchall() == []
    assert c.execute("select * from pgmem.history(%s)", (bob_ids[0],)).fetchall() == []
    assert c.execute("select * from pgmem.history(%s)", (alice_ids[0],)).fetchall() != []
    assert c.execute("select * from pgmem.list_memories('bob')").fetchall() == []
    context = c.execute("select pgmem.context('bob', 'Bob fact')").fetchone()[0]  # type: ignore[index]
    assert "Bob" not in json.dumps(context)
    prompt = c.execute("select pgmem.prompt('bob', 's1', 'Bob fact')").fetchone()[0]  # type: ignore[index]
    assert "Bob" not in prompt
    assert "Alice" in c.execute("select pgmem.prompt('alice', 's1', 'fact')").fetchone()[0]  # type: ignore[index]
    assert {r[0] for r in c.execute("select subject from pgmem.memory_stats")} == {"alice"}


def test_writes_for_another_end_user_are_refused_by_name(
    alice_and_bob: tuple[Tenant, list[int], list[int]], db: Db
) -> None:
    t, _, bob_ids = alice_and_bob
    bind(t.conn, "alice")
    c = t.conn
    refused_by_name = [
        "select pgmem.remember('bob', 'Bob now owns a canoe')",
        'select pgmem.remember_many(\'[{"subject": "alice", "content": "Alice sings"},'
        ' {"subject": "bob", "content": "Bob has a cat"}]\')',
        'select pgmem.enqueue(\'bob\', \'[{"role": "user", "content": "I moved"}]\')',
        "select pgmem.append_message('bob', 's1', 'user', 'I moved to Rome')",
        "select pgmem.append_message('bob', 's2', 'user', 'a new session')",
        "select pgmem.start_task('bob', 'another task', '[\"one\"]')",
        "select pgmem.set_time_zone('bob', 'Europe/Rome')",
        "select pgmem.erase_subject('bob')",
        # Tenant-wide work is for unbound connections.
        "select pgmem.purge()",
        "select pgmem.expire_sessions()",
        "select pgmem.start_reembed('other-model')",
    ]
    for statement in refused_by_name:
        with raises_sqlstate("PM004"):
            c.execute(statement)
    # Direct SQL: row-level security refuses the row.
    for statement in [
        "insert into pgmem.memories (subject, kind, content) values ('bob', 'semantic', 'Bob x')",
        "insert into pgmem.subjects (subject) values ('carol')",
        "insert into pgmem.session_summaries (subject, session_id, from_seq, through_seq, summary,"
        " method) values ('bob', 's1', 5, 5, 'forged', 'extractive')",
    ]:
        with raises_sqlstate("42501"):
            c.execute(statement)
    # Rows it cannot see, it cannot change: nothing happens to bob's.
    with pytest.raises(psycopg.Error):
        c.execute("select pgmem.forget(%s)", (bob_ids[0],))
    c.execute("update pgmem.memories set importance = 0.01 where subject = 'bob'")
    assert db.admin.execute(
        "select count(*) from pgmem.memories where tenant_id = %s and subject = 'bob'"
        " and status = 'active' and importance <> 0.01",
        (t.name,),
    ).fetchone() == (2,)
    # Its own end user's memory is written as always.
    c.execute("select pgmem.remember('alice', 'Alice moved to Lisbon')")
    c.execute("select pgmem.append_message('alice', 's1', 'user', 'Lisbon is sunny')")
    assert rows_of(c, "memories", "alice") == 3


def test_a_binding_is_one_way_and_lasts_the_connection(
    alice_and_bob: tuple[Tenant, list[int], list[int]],
) -> None:
    t, _, _ = alice_and_bob
    bind(t.conn, "alice")
    bind(t.conn, "alice")  # the same binding again: a no-op
    assert t.conn.execute("select pgmem.bound_subject()").fetchone() == ("alice",)
    for subject, shared in [("bob", []), ("alice", ["team:x"])]:
        with raises_sqlstate("PM005"):
            bind(t.conn, subject, shared)
    # Not in a transaction that rolls back: the binding holds after it.
    with pytest.raises(psycopg.Error), t.conn.transaction():
        t.conn.execute("select 1/0")
    t.conn.execute("reset all")
    t.conn.execute("discard all")
    assert t.conn.execute("select pgmem.bound_subject()").fetchone() == ("alice",)
    assert rows_of(t.conn, "memories", "bob") == 0
    # A new connection of the same role starts unbound.
    with other_connection(t) as fresh:
        assert fresh.execute("select pgmem.bound_subject()").fetchone() == (None,)
        assert rows_of(fresh, "memories", "bob") == 2


def test_a_binding_cannot_be_read_or_forged(
    alice_and_bob: tuple[Tenant, list[int], list[int]], db: Db
) -> None:
    t, _, _ = alice_and_bob
    with other_connection(t) as other:
        bind(other, "alice")
        for statement in [
            "select * from pgmem._subject_bindings",
            "delete from pgmem._subject_bindings",
            "update pgmem._subject_bindings set subject = 'bob'",
            "insert into pgmem._subject_bindings (pid, backend_start, tenant_id, subject)"
            " values (pg_backend_pid(), now(), 'x', 'bob')",
        ]:
            with raises_sqlstate("42501"):
                t.conn.execute(statement)
            with raises_sqlstate("42501"):
                other.execute(statement)
        assert other.execute("select pgmem.bound_subject()").fetchone() == ("alice",)


def test_a_dead_backends_binding_does_not_bind_a_later_one_with_its_pid(
    alice_and_bob: tuple[Tenant, list[int], list[int]], db: Db
) -> None:
    t, _, _ = alice_and_bob
    pid = t.conn.execute("select pg_backend_pid()").fetchone()[0]  # type: ignore[index]
    # What a binding left by a backend that had this pid before looks like.
    db.admin.execute(
        "insert into pgmem._subject_bindings (pid, backend_start, tenant_id, subject)"
        " values (%s, now() - interval '1 day', %s, 'alice')",
        (pid, t.name),
    )
    try:
        assert t.conn.execute("select pgmem.bound_subject()").fetchone() == (None,)
        assert rows_of(t.conn, "memories", "bob") == 2
        bind(t.conn, "bob")  # and binding replaces it
        assert rows_of(t.conn, "memories", "alice") == 0
    finally:
        db.admin.execute("delete from pgmem._subject_bindings where pid = %s", (pid,))


def test_shared_subjects_are_readable_not_writable(
    new_tenant: Callable[[], Tenant], db: Db
) -> None:
    t = new_tenant()
    fill(t, db, "alice", "Alice")
    fill(t, db, "team:x", "Team")
    fill(t, db, "bob", "Bob")
    bind(t.conn, "alice", ["team:x"])
    subjects = {
        r[0]
        for r in t.conn.execute(
            "select subject from pgmem.recall('alice', 'fact', p_shared_subjects => '{team:x,bob}')"
        )
    }
    assert subjects == {"alice", "team:x"}
    # Reading a shared subject's memories counts as their access: recorded
    # under their subject, folded into them.
    team = t.conn.execute(
        "select memory_id from pgmem.memories where subject = 'team:x'"
    ).fetchall()
    accessed = "select access_count from pgmem.get_memory(%s)"
    counts = [t.conn.execute(accessed, r).fetchone()[0] for r in team]  # type: ignore[index]
    assert max(counts) >= 2, counts  # filled with a recall of its own, and the one above
    assert rows_of(t.conn, "memory_accesses", "team:x") > 0
    with raises_sqlstate("42501"):
        t.conn.execute(
            "insert into pgmem.memory_accesses (subject, memory_ids, accessed_at)"
            " values ('bob', '{1}', now())"
        )
    # A row naming a memory of a subject out of reach counts for nothing.
    of_bob = (
        "select memory_id, access_count from pgmem.memories"
        " where tenant_id = %s and subject = 'bob' order by 1"
    )
    db.admin.execute("select pgmem.fold_accesses(%s)", (t.name,))
    bob = db.admin.execute(of_bob, (t.name,)).fetchall()
    t.conn.execute(
        "insert into pgmem.memory_accesses (subject, memory_ids, accessed_at)"
        " values ('alice', %s, now())",
        ([r[0] for r in bob],),
    )
    db.admin.execute("select pgmem.fold_accesses(%s)", (t.name,))
    assert db.admin.execute(of_bob, (t.name,)).fetchall() == bob
    assert [t.conn.execute(accessed, r).fetchone()[0] for r in team] == counts  # type: ignore[index]
    assert rows_of(t.conn, "memories", "team:x") == 2
    assert rows_of(t.conn, "memory_links", "team:x") == 1
    with raises_sqlstate("PM004"):
        t.conn.execute("select pgmem.remember('team:x', 'Team moved the standup')")
    with raises_sqlstate("42501"):
        t.conn.execute(
            "insert into pgmem.memories (subject, kind, content)"
            " values ('team:x', 'semantic', 'forged')"
        )


@pytest.mark.parametrize("subject", ["", "   ", None, "x" * 257])
def test_a_bad_subject_is_refused(new_tenant: Callable[[], Tenant], subject: str | None) -> None:
    t = new_tenant()
    with raises_sqlstate("PM005"):
        t.conn.execute("select pgmem.bind_subject(%s)", (subject,))
    with raises_sqlstate("PM005"):
        t.conn.execute("select pgmem.bind_subject('alice', %s)", ([subject],))
    assert t.conn.execute("select pgmem.bound_subject()").fetchone() == (None,)


@pytest.fixture
def service_login(db: Db) -> Iterator[Callable[[], psycopg.Connection]]:
    """Connections of new pgmem_service members to the module's database."""
    opened: list[psycopg.Connection] = []

    def login() -> psycopg.Connection:
        role, password = f"{TEST_ROLE_PREFIX}_s{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
        db.admin.execute(
            sql.SQL("create role {} login password {} in role pgmem_service").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        opened.append(
            psycopg.connect(make_conninfo(db.dsn, user=role, password=password), autocommit=True)
        )
        return opened[-1]

    yield login
    for conn in opened:
        conn.close()


def test_no_tenant_no_binding(service_login: Callable[[], psycopg.Connection]) -> None:
    conn = service_login()
    with raises_sqlstate("PM001"):
        conn.execute("select pgmem.bind_subject('alice')")


def test_roles_that_can_step_outside_row_level_security_may_not_bind(
    db: Db, new_tenant: Callable[[], Tenant], service_login: Callable[[], psycopg.Connection]
) -> None:
    t = new_tenant()
    db.admin.execute("select pgmem.set_tenant(%s, false)", (t.name,))
    try:
        with raises_sqlstate("PM005"):
            db.admin.execute("select pgmem.bind_subject('alice')")
    finally:
        db.admin.execute("reset pgmem.tenant")
    # A service member that can also become the DBAs' role would leave the
    # policies behind with SET ROLE.
    conn = service_login()
    role = conn.execute("select current_user").fetchone()[0]  # type: ignore[index]
    db.admin.execute(f'grant pgmem_readonly to "{role}"')
    conn.execute("select pgmem.set_tenant(%s, false)", (t.name,))
    with raises_sqlstate("PM005"):
        conn.execute("select pgmem.bind_subject('alice')")


def test_a_service_member_bound_for_one_tenant_sees_nothing_of_another(
    db: Db, new_tenant: Callable[[], Tenant], service_login: Callable[[], psycopg.Connection]
) -> None:
    a, b = new_tenant(), new_tenant()
    fill(a, db, "alice", "Alice")
    fill(b, db, "alice", "Other")
    conn = service_login()
    conn.execute("select pgmem.set_tenant(%s, false)", (a.name,))
    bind(conn, "alice")
    assert rows_of(conn, "memories", "alice") == 2
    # Later, the session acts for tenant b (SET needs no function).
    conn.execute(f"set pgmem.tenant = '{b.name}'")
    for table in SUBJECT_TABLES + list(CHILD_TABLES):
        assert conn.execute(f"select count(*) from pgmem.{table}").fetchone() == (0,), table
    with raises_sqlstate("PM004"):
        conn.execute("select pgmem.remember('alice', 'Other likes jazz')")
    with raises_sqlstate("42501"):
        conn.execute(
            "insert into pgmem.memories (subject, kind, content) values ('alice', 'semantic', 'x')"
        )


def test_the_python_client_on_a_bound_connection(
    alice_and_bob: tuple[Tenant, list[int], list[int]],
) -> None:
    t, _, _ = alice_and_bob
    with other_connection(t) as conn:
        bind(conn, "alice")
        memory = Memory(conn=conn, embedder=False, llm=False)
        assert list(memory.search("Bob fact", user_id="bob")) == []
        assert {r["subject"] for r in memory.search("fact", user_id="alice")} == {"alice"}
        with pytest.raises(psycopg.Error) as info:
            memory.add("I have a dog named Rex", user_id="bob")
        assert info.value.sqlstate == "PM004"
        memory.add("I have a dog named Rex", user_id="alice")
        assert rows_of(conn, "memories", "alice") >= 3


def test_binding_is_off_until_an_administrator_turns_it_on(
    dsn: str, tenant_login: Callable[[str], psycopg.Connection]
) -> None:
    """A fresh database (the test's own clone, not the module's) has policies that
    check the tenant alone: nothing costs a statement, and bind_subject says how to
    turn binding on."""
    conn = tenant_login("acme")
    with psycopg.connect(dsn, autocommit=True) as admin:
        assert admin.execute(
            "select count(*) from pg_policies where qual like '%_bound_subjects%'"
            " and policyname = 'tenant_isolation'"
        ).fetchone() == (0,)
        with raises_sqlstate("PM005"):
            conn.execute("select pgmem.bind_subject('alice')")
        # Only administrators switch it.
        with raises_sqlstate("42501"):
            conn.execute("select pgmem.enable_subject_binding()")
        admin.execute("select pgmem.enable_subject_binding()")
        assert admin.execute(
            "select count(*) from pg_policies where qual like '%_bound_subjects%'"
            " and policyname = 'tenant_isolation'"
        ).fetchone() == (13,)
        conn.execute("select pgmem.remember('bob', 'Bob owns a kayak')")
        bind(conn, "alice")
        assert rows_of(conn, "memories", "bob") == 0
        # Off again: the policies go and so does every binding.
        admin.execute("select pgmem.enable_subject_binding(false)")
        assert conn.execute("select pgmem.bound_subject()").fetchone() == (None,)
        assert rows_of(conn, "memories", "bob") == 1
