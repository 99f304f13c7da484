"""pgmem on a real local Citus cluster: a coordinator and two workers.

The module builds its own cluster (pgmem.citus, as `pgmem db start --citus 2`
does) in a folder of its own, on PGMEM_PORT + 1 (coordinator) and the two
ports after it (workers), migrates it (`pgmem migrate` distributes by tenant)
and drives the same SQL API through the coordinator that the rest of the
suite drives on one server. Without Citus installed (`make citus`) the module
is reported as skipped with that reason in the run summary (pytest -ra).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from conftest import raises_sqlstate, settle_cron_runs
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from pgmem import citus, server
from pgmem.cli.app import app
from pgmem.config import Config
from pgmem.worker import Worker

try:
    _CITUS_LIB = server._pkglibdir(server.find_binaries().bindir) / "citus.so"
except server.ServerError:
    _CITUS_LIB = None
if _CITUS_LIB is None or not _CITUS_LIB.is_file():
    pytest.skip(
        "CITUS NOT INSTALLED: the Citus cluster tests did not run; `make citus` installs it "
        "from the vendored source (CI does)",
        allow_module_level=True,
    )

WORKERS = 2
# pg_cron starts a job at the next minute boundary.
CRON_TICK_WAIT = 75


@pytest.fixture(scope="module")
def cluster() -> Iterator[Config]:
    base = Config.from_env()
    if base.dsn:
        pytest.skip("PGMEM_DSN is set: this module builds its own local Citus cluster")
    home = Path("/var/tmp") / f"pgmem-citus-test-{base.port + 1}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    home.chmod(0o755)
    config = replace(base, home=home, port=base.port + 1, dsn=None)
    try:
        citus.start(config, WORKERS)
        citus.upgrade(server.dsn(config))
        yield config
    finally:
        citus.stop(config)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def coordinator(cluster: Config) -> str:
    return server.dsn(cluster)


@pytest.fixture
def admin(coordinator: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(coordinator, autocommit=True) as conn:
        yield conn


@pytest.fixture
def tenant(admin: psycopg.Connection) -> Iterator[str]:
    name = f"t{uuid.uuid4().hex[:10]}"
    admin.execute("select pgmem.create_tenant(%s)", (name,))
    yield name
    admin.execute(
        "select pgmem.drop_tenant(t.tenant_id) from pgmem.tenants as t where t.tenant_id = %s",
        (name,),
    )


@pytest.fixture
def service(admin: psycopg.Connection, coordinator: str) -> Iterator[str]:
    """A pgmem_service login (TCP, password) on the coordinator; its DSN."""
    role, password = f"pgmem_svc_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    admin.execute(f"create role {role} login password '{password}' in role pgmem_service")
    port = psycopg.conninfo.conninfo_to_dict(coordinator)["port"]
    yield make_conninfo(host="127.0.0.1", port=port, dbname="pgmem", user=role, password=password)
    admin.execute(f"drop role {role}")


def bound(dsn: str, tenant: str) -> psycopg.Connection:
    """A connection whose every transaction is bound to tenant (pgmem.set_tenant)."""
    conn = psycopg.connect(dsn)
    conn.execute("select pgmem.set_tenant(%s)", (tenant,))
    return conn


# -- layout -------------------------------------------------------------------


def test_tenant_tables_are_distributed_and_colocated_globals_are_reference(
    admin: psycopg.Connection,
) -> None:
    rows = admin.execute(
        "select c.relname, p.partmethod, p.repmodel, p.colocationid"
        " from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid"
        " where c.relnamespace = 'pgmem'::regnamespace order by 1"
    ).fetchall()
    kinds = {name: (method, model) for name, method, model, _ in rows}
    distributed = {"subjects", "memories", "memory_links", "memory_events", "inbox"} | {
        "sessions",
        "session_messages",
        "session_summaries",
        "tasks",
        "task_steps",
        "reembed_vectors",
        "memory_decay",
        "memory_accesses",
    }
    assert {n for n, k in kinds.items() if k[0] == "h"} == distributed
    assert {n for n, k in kinds.items() if k == ("n", "t")} == {
        "tenants",
        "settings",
        "_tenant_logins",
    }
    assert len({c for n, _, _, c in rows if n in distributed}) == 1  # one colocation group
    nodes = admin.execute(
        "select count(*) filter (where groupid <> 0), count(*) filter (where groupid = 0)"
        " from pg_dist_node where isactive"
    ).fetchone()
    assert nodes == (WORKERS, 1)
    # Every worker holds shards of the memories table.
    per_node = admin.execute(
        "select nodeport, count(*) from citus_shards"
        " where table_name = 'pgmem.memories'::regclass group by 1"
    ).fetchall()
    assert len(per_node) == WORKERS and all(count > 0 for _, count in per_node)
    # Distributing again changes nothing.
    again = admin.execute("select table_name, distribution from pgmem.distribute()").fetchall()
    assert len(again) == len(distributed) + 3  # and tenants, settings, _tenant_logins


def test_single_tenant_query_touches_exactly_one_worker(
    admin: psycopg.Connection, tenant: str
) -> None:
    plan = "\n".join(
        row[0]
        for row in admin.execute(
            "explain select * from pgmem.memories where tenant_id = %s and subject = 'alice'",
            (tenant,),
        ).fetchall()
    )
    assert "Task Count: 1" in plan
    assert plan.count("->  Task") == 1


# -- the SQL API through the coordinator -----------------------------------------


def test_remember_recall_context_erase(
    admin: psycopg.Connection, service: str, tenant: str
) -> None:
    with bound(service, tenant) as conn:
        first = conn.execute(
            "select action, memory_id from pgmem.remember('alice', 'Alice prefers the dark theme',"
            " p_kind => 'preference', p_triple_subject => 'alice', p_triple_predicate => 'theme',"
            " p_triple_object => 'dark')"
        ).fetchone()
        second = conn.execute(
            "select action, memory_id from pgmem.remember('alice',"
            " 'Alice switched to the light theme', p_kind => 'preference',"
            " p_triple_subject => 'alice', p_triple_predicate => 'theme',"
            " p_triple_object => 'light')"
        ).fetchone()
        again = conn.execute(
            "select action from pgmem.remember('alice', 'Alice switched to the light theme')"
        ).fetchone()
        conn.execute("select pgmem.remember('alice', 'Alice works in Shanghai')")
        conn.commit()
    assert first is not None and first[0] == "inserted"
    assert second is not None and second[0] == "superseded"
    assert again == ("reinforced",)
    with bound(service, tenant) as conn:
        # pgmem._recall plans per call on Citus; what it sets for that ends
        # with the call (a session setting of the caller's stays as it was).
        conn.execute("set plan_cache_mode = force_custom_plan")
        hits = conn.execute(
            "select memory_id, content from pgmem.recall('alice', 'which theme?', p_k => 5)"
        ).fetchall()
        settings = conn.execute(
            "select current_setting('plan_cache_mode'), current_setting('enable_seqscan')"
        ).fetchone()
        assert settings == ("force_custom_plan", "on")
        context = conn.execute(
            "select pgmem.context('alice', 'what does alice like?', p_token_budget => 300)"
        ).fetchone()
        statuses = dict(
            conn.execute(
                "select memory_id, status from pgmem.memories where subject = 'alice'"
            ).fetchall()
        )
        links = conn.execute("select count(*) from pgmem.memory_links").fetchone()
        conn.commit()
    assert hits[0] == (second[1], "Alice switched to the light theme")
    assert context is not None and "light theme" in context[0] and "dark theme" not in context[0]
    assert statuses[first[1]] == "superseded" and statuses[second[1]] == "active"
    assert links == (1,)
    with bound(service, tenant) as conn:
        erased = conn.execute("select pgmem.erase_subject('alice')").fetchone()
        # On Citus the erasure's owner-rights deletes hold the tenant's shards for
        # the rest of the transaction (docs/scaling.md): read back in the next one.
        conn.commit()
    with bound(service, tenant) as conn:
        left = conn.execute("select count(*) from pgmem.memories").fetchone()
        events = conn.execute(
            "select event, subject from pgmem.memory_events order by event_id"
        ).fetchall()
        conn.commit()
    assert erased == (3,) and left == (0,)
    assert events == [("erase", None)]


def test_reads_and_edits_through_the_coordinator(service: str, tenant: str) -> None:
    with bound(service, tenant) as conn:
        row = conn.execute(
            "select memory_id from pgmem.remember('kate', 'Kate likes tea')"
        ).fetchone()
        assert row is not None
        (mid,) = row
        assert conn.execute("select content from pgmem.get_memory(%s)", (mid,)).fetchone() == (
            "Kate likes tea",
        )
        assert conn.execute("select count(*) from pgmem.list_memories('kate')").fetchone() == (1,)
        assert conn.execute("select pgmem.count_memories('kate')").fetchone() == (1,)
        assert conn.execute("select count(*) from pgmem.export_memories('kate')").fetchone() == (1,)
        # The change stream on the coordinator: the workers' events as they stand.
        changes = conn.execute("select event, new_content from pgmem.changes('0/0', 'kate')")
        assert changes.fetchall() == [("insert", "Kate likes tea")]
        assert conn.execute("select pgmem.change_position() <> '0/0'").fetchone() == (True,)
        conn.execute("select pgmem.pin(%s)", (mid,))
        conn.execute("select pgmem.update_memory(%s, 'Kate likes green tea')", (mid,))
        conn.execute("select pgmem.forget(%s)", (mid,))
        events = conn.execute("select event from pgmem.history(%s)", (mid,)).fetchall()
        subject = conn.execute("select count(*) from pgmem.subject_events('kate')").fetchone()
        conn.commit()
    assert [e for (e,) in events] == ["insert", "pin", "update", "delete"]
    assert subject == (4,)


def test_recall_accesses_are_counted_and_folded_through_the_coordinator(
    admin: psycopg.Connection, service: str, tenant: str
) -> None:
    with bound(service, tenant) as conn:
        row = conn.execute(
            "select memory_id from pgmem.remember('lena', 'Lena rows on the lake')"
        ).fetchone()
        assert row is not None
        (mid,) = row
        for _ in range(2):
            conn.execute("select count(*) from pgmem.recall('lena', 'rowing lake')")
        conn.execute("select pgmem.context('lena', 'rowing lake')")
        conn.commit()
    with bound(service, tenant) as conn:
        # Every read counts the accesses the fold has not written yet.
        read = {
            "get": conn.execute("select access_count from pgmem.get_memory(%s)", (mid,)),
            "list": conn.execute("select access_count from pgmem.list_memories('lena')"),
            "export": conn.execute("select access_count from pgmem.export_memories('lena')"),
            "stats": conn.execute("select accesses from pgmem.memory_stats where subject = 'lena'"),
            "recall": conn.execute(
                "select access_count from pgmem.recall('lena', 'rowing', p_reinforce => false)"
            ),
        }
        counts = {name: [r[0] for r in cursor.fetchall()] for name, cursor in read.items()}
        stored = conn.execute("select access_count from pgmem.memories").fetchall()
        conn.commit()
    assert counts == {name: [3] for name in read}, counts
    assert stored == [(0,)]
    run = admin.execute("select status, counts from pgmem.run_job('accesses')").fetchone()
    assert run == ("ok", {"folded": 1}), run
    with bound(service, tenant) as conn:
        assert conn.execute("select access_count from pgmem.memories").fetchall() == [(3,)]
        assert conn.execute("select count(*) from pgmem.memory_accesses").fetchone() == (0,)
        conn.commit()


def test_remember_many_through_the_coordinator(service: str, tenant: str) -> None:
    items = [
        {"content": "Bob plays chess"},
        {"content": "Bob plays chess"},
        {"content": "Bob lives in Lyon", "kind": "semantic"},
    ]
    with bound(service, tenant) as conn:
        actions = conn.execute(
            "select action from pgmem.remember_many(%s::jsonb, 'bob') order by item",
            (json.dumps(items),),
        ).fetchall()
        active = conn.execute(
            "select count(*) from pgmem.memories where status = 'active'"
        ).fetchone()
        conn.commit()
    assert [a for (a,) in actions] == ["inserted", "reinforced", "inserted"]
    assert active == (2,)


# -- isolation ------------------------------------------------------------------


def test_a_tenant_login_on_the_coordinator_is_confined_to_its_tenant(
    admin: psycopg.Connection, coordinator: str, service: str, tenant: str
) -> None:
    other = f"o{uuid.uuid4().hex[:10]}"
    admin.execute("select pgmem.create_tenant(%s)", (other,))
    try:
        with bound(service, other) as conn:
            conn.execute("select pgmem.remember('carol', 'Carol keeps bees')")
            conn.commit()
        role, password = f"pgmem_t_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
        admin.execute("select pgmem.create_tenant_login(%s, %s, %s)", (tenant, password, role))
        login = make_conninfo(service, user=role, password=password)
        with psycopg.connect(login, autocommit=True) as conn:
            conn.execute("select pgmem.remember('dave', 'Dave likes tea')")
            seen = conn.execute(
                "select tenant_id, count(*) from pgmem.memories group by 1"
            ).fetchall()
            assert seen == [(tenant, 1)]
            # Naming the other tenant finds nothing; rebinding is ignored or refused.
            assert conn.execute(
                "select count(*) from pgmem.memories where tenant_id = %s", (other,)
            ).fetchone() == (0,)
            conn.execute(psycopg.sql.SQL("set pgmem.tenant = {}").format(other))
            assert conn.execute("select pgmem.current_tenant()").fetchone() == (tenant,)
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("select pgmem.set_tenant(%s)", (other,))
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                conn.execute(
                    "insert into pgmem.subjects (tenant_id, subject) values (%s, 'x')", (other,)
                )
            # Moving a row to another tenant: Citus refuses to change the
            # distribution column before row-level security is even asked.
            with pytest.raises(
                (psycopg.errors.InsufficientPrivilege, psycopg.errors.FeatureNotSupported)
            ):
                conn.execute("update pgmem.memories set tenant_id = %s", (other,))
        # The other tenant's rows are intact.
        with bound(service, other) as conn:
            assert conn.execute("select count(*) from pgmem.memories").fetchone() == (1,)
            conn.commit()
        admin.execute("select pgmem.drop_tenant(%s)", (tenant,))
        assert (
            admin.execute("select 1 from pg_roles where rolname = %s", (role,)).fetchone() is None
        )
    finally:
        admin.execute("select pgmem.drop_tenant(%s)", (other,))


def test_unbound_service_sees_nothing_and_cannot_write(service: str, tenant: str) -> None:
    with bound(service, tenant) as conn:
        conn.execute("select pgmem.remember('erin', 'Erin runs marathons')")
        conn.commit()
    with psycopg.connect(service, autocommit=True) as conn:
        assert conn.execute("select count(*) from pgmem.memories").fetchone() == (0,)
        with pytest.raises(psycopg.Error) as info:
            conn.execute("select pgmem.remember('erin', 'something')")
        assert info.value.sqlstate == "PM001"


def test_end_user_binding_is_refused_and_leaves_no_policies(
    admin: psycopg.Connection, service: str, tenant: str
) -> None:
    """Binding is for a single node: its policies would run on the workers, whose
    backends are not the coordinator's; pgmem.distribute drops them."""
    assert admin.execute(
        "select count(*) from pg_policies where schemaname = 'pgmem'"
        " and qual like '%_bound_subjects%'"
    ).fetchone() == (0,)
    with bound(service, tenant) as conn, raises_sqlstate("PM005"):
        conn.execute("select pgmem.bind_subject('erin')")


# -- concurrency -----------------------------------------------------------------


def test_eight_writers_on_one_subject_leave_no_twins(service: str, tenant: str) -> None:
    """Eight sessions remember the same fact for one subject at once, through the
    coordinator: the per-subject lock lives on the worker holding the tenant."""
    barrier = threading.Barrier(8)
    actions: list[str] = []
    errors: list[BaseException] = []

    def write() -> None:
        try:
            with bound(service, tenant) as conn:
                barrier.wait(timeout=30)
                row = conn.execute(
                    "select action from pgmem.remember('frank', 'Frank drinks green tea')"
                ).fetchone()
                conn.commit()
                assert row is not None
                actions.append(row[0])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(actions) == ["inserted"] + ["reinforced"] * 7
    with bound(service, tenant) as conn:
        row = conn.execute(
            "select count(*), max(access_count) from pgmem.memories where subject = 'frank'"
        ).fetchone()
        conn.commit()
    assert row == (1, 7)


# -- worker and jobs ---------------------------------------------------------------


def test_worker_drains_a_tenant_inbox_through_the_coordinator(service: str, tenant: str) -> None:
    with bound(service, tenant) as conn:
        conn.execute(
            "select pgmem.enqueue('gina', %s::jsonb)",
            (json.dumps([{"role": "user", "content": "I live in Porto."}]),),
        )
        conn.commit()
    worker = Worker(service, tenant=tenant, llm=None)
    stats = worker.run(once=True)
    assert stats.done == 1 and stats.failed == 0
    with bound(service, tenant) as conn:
        contents = conn.execute(
            "select content from pgmem.memories where subject = 'gina'"
        ).fetchall()
        pending = conn.execute(
            "select count(*) from pgmem.inbox where status = 'pending'"
        ).fetchone()
        conn.commit()
    assert pending == (0,)
    assert any("Porto" in content for (content,) in contents)


def test_links_and_consolidation_through_the_coordinator(
    admin: psycopg.Connection, service: str, tenant: str
) -> None:
    """Links at write, the consolidate job over every tenant and the worker's insight
    all run on the tenant's shard through the coordinator."""
    with bound(service, tenant) as conn:
        for i in range(3):
            # No vectors yet: the shared entity (the lido) is what clusters them.
            conn.execute(
                "select pgmem.remember('kim', %s, p_kind => 'episodic', p_session_id => 's',"
                " p_triple_subject => 'user', p_triple_predicate => %s,"
                " p_triple_object => 'the lido', p_now => now() - interval '10 days')",
                (f"Swam {i + 1} km at the lido", f"swim_{i + 1}"),
            )
        links = conn.execute(
            "select count(*) from pgmem.memory_links where link_type = 'same_entity'"
        ).fetchone()
        conn.commit()
    assert links == (3,)
    row = admin.execute("select status, counts from pgmem.run_job('consolidate')").fetchone()
    assert row is not None and row[0] == "ok" and row[1] == {"subjects": 1}, row
    stats = Worker(service, tenant=tenant, llm=None).run(once=True)
    assert stats.done == 1 and stats.failed == 0
    with bound(service, tenant) as conn:
        derived = conn.execute(
            "select count(*) from pgmem.memory_links where link_type = 'derived_from'"
        ).fetchone()
        lowered = conn.execute(
            "select count(*) from pgmem.memories where kind = 'episodic' and importance = 0.25"
        ).fetchone()
        conn.commit()
    assert derived == (3,) and lowered == (3,)


def test_stated_turns_are_linked_by_the_links_job_through_the_coordinator(
    admin: psycopg.Connection, service: str, tenant: str
) -> None:
    """A stated turn's write marks its subject on the tenant's shard; the links job,
    run over every tenant from the coordinator, links the turns and clears the mark."""
    with bound(service, tenant) as conn:
        for text in ("Landed in Porto", "The hotel faces the river"):
            conn.execute(
                "select pgmem.remember('lea', %s, p_kind => 'episodic', p_source => 'turn',"
                " p_session_id => 'trip')",
                (text,),
            )
        links = conn.execute("select count(*) from pgmem.memory_links").fetchone()
        conn.commit()
    assert links == (0,)
    row = admin.execute("select status, counts from pgmem.run_job('links')").fetchone()
    assert row is not None and row[0] == "ok", row
    assert row[1]["episodes"] >= 2 and row[1]["links"] >= 1, row
    with bound(service, tenant) as conn:
        links = conn.execute(
            "select count(*) from pgmem.memory_links where link_type = 'same_session'"
        ).fetchone()
        pending = conn.execute(
            "select links_pending_from from pgmem.subjects where subject = 'lea'"
        ).fetchone()
        conn.commit()
    assert links == (1,) and pending == (None,)


def test_a_fact_beside_its_turn_through_the_coordinator(service: str, tenant: str) -> None:
    """The unique index of active contents (one episode and one fact per content)
    on the shards: a fact its turn says word for word is a memory of its own, and
    each is found again by its own kind."""
    with bound(service, tenant) as conn:
        actions = [
            conn.execute(
                "select action from pgmem.remember('ivy', 'Ivy is allergic to shellfish',"
                " p_source => %s)",
                (source,),
            ).fetchone()
            for source in ("turn", "rule", "rule", "turn")
        ]
        rows = conn.execute(
            "select source from pgmem.memories where subject = 'ivy' and status = 'active'"
            " order by source"
        ).fetchall()
        conn.commit()
    assert actions == [("inserted",), ("inserted",), ("reinforced",), ("reinforced",)]
    assert rows == [("rule",), ("turn",)]


def test_store_items_through_the_coordinator(service: str, tenant: str) -> None:
    """The LangGraph store on the shards: a put with a vector and without, a put of
    the same key again (the conflict path), a read that refreshes a time to live,
    and a delete."""
    vector = "[" + ",".join(["0.1"] * 384) + "]"
    theme = {"key": "theme", "value": {"mode": "dark"}, "embedding": vector}
    later = [{"key": "theme", "value": {"mode": "light"}}, {"key": "lang", "value": {"v": "de"}}]
    draft = {"key": "draft", "value": {"n": 1}, "ttl": 60}
    put = "select action from pgmem.put_items('ivy', %s::jsonb)"
    with bound(service, tenant) as conn:
        actions = [
            [r[0] for r in conn.execute(put, (json.dumps(items),)).fetchall()]
            for items in ([theme], later, [draft])
        ]
        values = conn.execute(
            "select key, value from pgmem.get_items('ivy', p_refresh => true) order by key"
        ).fetchall()
        deleted = conn.execute(
            "select key from pgmem.delete_items('ivy', array['draft'])"
        ).fetchall()
        left = conn.execute("select key from pgmem.get_items('ivy') order by key").fetchall()
        conn.commit()
    assert actions == [["inserted"], ["updated", "inserted"], ["inserted"]]
    assert values == [("draft", {"n": 1}), ("lang", {"v": "de"}), ("theme", {"mode": "light"})]
    assert deleted == [("draft",)] and left == [("lang",), ("theme",)]


def test_lifecycle_jobs_run_from_the_coordinator(
    admin: psycopg.Connection, service: str, tenant: str
) -> None:
    """Every maintenance job, run over all tenants from the coordinator (as pg_cron
    runs them), does its work on the tenant's shard and records an ok run."""

    def run(job: str, offset: str = "0") -> dict[str, int]:
        row = admin.execute(
            "select status, counts, message from pgmem.run_job(%s, now() + %s::interval)",
            (job, offset),
        ).fetchone()
        assert row is not None and row[0] == "ok", row
        return dict(row[1])

    def statuses(subject: str) -> list[str]:
        rows = admin.execute(
            "select status from pgmem.memories where tenant_id = %s and subject = %s"
            " order by memory_id",
            (tenant, subject),
        ).fetchall()
        return [status for (status,) in rows]

    admin.execute("select pgmem.set_tenant(%s, false)", (tenant,))
    admin.execute(
        "update pgmem.settings set capacity_per_subject = 1 where tenant_id = %s", (tenant,)
    )
    admin.execute(
        "insert into pgmem.subjects (tenant_id, subject) values (%s, 'hank'), (%s, 'ivy')",
        (tenant, tenant),
    )
    admin.execute(
        "insert into pgmem.memories (tenant_id, subject, kind, content, importance,"
        " last_accessed_at) values (%s, 'hank', 'episodic', 'Hank went hiking', 0.8,"
        " now() - interval '60 days')",
        (tenant,),
    )
    assert run("decay")["decayed"] >= 1
    effective = admin.execute(
        "select effective_importance from pgmem.memory_decay where tenant_id = %s", (tenant,)
    ).fetchone()
    assert effective is not None and effective[0] < 0.8

    # A year later Hank's episode has decayed below the archive threshold.
    assert run("archive", "365 days")["weak"] >= 1
    assert statuses("hank") == ["archived"]

    # Two memories over a cap of one: the weaker, never recalled one goes.
    admin.execute(
        "insert into pgmem.memories (tenant_id, subject, kind, content, importance)"
        " values (%s, 'ivy', 'semantic', 'Ivy reads poetry', 0.9),"
        " (%s, 'ivy', 'semantic', 'Ivy owns a kayak', 0.1)",
        (tenant, tenant),
    )
    assert run("capacity")["evicted_active"] >= 1
    assert statuses("ivy") == ["active", "deleted"]
    evicted = admin.execute(
        "select count(*) from pgmem.memory_events where tenant_id = %s and event = 'evict'",
        (tenant,),
    ).fetchone()
    assert evicted == (1,)

    # Past the purge grace both the archived and the evicted memory are gone.
    assert run("purge", "400 days")["memories"] >= 2
    assert statuses("hank") == [] and statuses("ivy") == ["active"]

    # An idle session is closed and an expired task cancelled.
    with bound(service, tenant) as conn:
        conn.execute(
            "select pgmem.append_message('ivy', 's1', 'user', 'hello', p_extract => false)"
        )
        conn.execute(
            "select pgmem.start_task('ivy', 'plan a trip', %s, 's1', p_ttl => '1 hour')",
            (json.dumps(["pick a date", "book"]),),
        )
        conn.commit()
    counts = run("sessions", "2 days")
    assert counts["closed"] >= 1 and counts["expired_tasks"] >= 1
    session = admin.execute(
        "select status from pgmem.sessions where tenant_id = %s", (tenant,)
    ).fetchone()
    task = admin.execute(
        "select status, outcome from pgmem.tasks where tenant_id = %s", (tenant,)
    ).fetchone()
    assert session == ("closed",) and task == ("cancelled", "expired")


@pytest.mark.slow
def test_pg_cron_on_the_coordinator_really_ticks(admin: psycopg.Connection) -> None:
    """pg_cron (cron.database_name = pgmem on the coordinator) starts the decay job
    at a real minute tick and the run is recorded in job_runs (whether the job
    itself does its work on Citus is test_lifecycle_jobs_run_from_the_coordinator's)."""
    before = admin.execute("select coalesce(max(run_id), 0) from pgmem.job_runs").fetchone()
    command = admin.execute("select command from pgmem.cron_plan() where job = 'decay'").fetchone()
    assert before is not None and command is not None
    jobid = admin.execute(
        "select cron.schedule('pgmem-citus-test', '* * * * *', %s)", (command[0],)
    ).fetchone()
    assert jobid is not None
    try:
        deadline = time.monotonic() + CRON_TICK_WAIT
        run = None
        while run is None and time.monotonic() < deadline:
            time.sleep(1)
            run = admin.execute(
                "select status, message from pgmem.job_runs where job = 'decay' and run_id > %s",
                (before[0],),
            ).fetchone()
    finally:
        admin.execute("select cron.unschedule(%s)", (jobid[0],))
        # The job's transaction commits its job_runs row before pg_cron
        # records how the command ended.
        settle_cron_runs(admin, jobid[0])
    details = admin.execute(
        "select status, return_message from cron.job_run_details where jobid = %s order by runid",
        (jobid[0],),
    ).fetchall()
    assert run is not None, f"no run recorded within {CRON_TICK_WAIT} s (cron: {details})"
    assert [status for status, _ in details][:1] == ["succeeded"]


# -- tenant administration and per-node view ----------------------------------------


def test_node_distribution_and_tenant_drop(admin: psycopg.Connection, service: str) -> None:
    names = [f"n{uuid.uuid4().hex[:8]}" for _ in range(6)]
    for name in names:
        admin.execute("select pgmem.create_tenant(%s)", (name,))
        with bound(service, name) as conn:
            conn.execute("select pgmem.remember('ivy', 'Ivy reads poetry')")
            conn.commit()
    try:
        rows = admin.execute("select * from pgmem.node_distribution()").fetchall()
        assert len(rows) == WORKERS
        total = admin.execute("select count(*) from pgmem.memories").fetchone()
        assert total is not None and sum(r[4] for r in rows) == total[0]
        assert (
            sum(r[2] for r in rows)
            == admin.execute("select count(*) from pgmem.tenants").fetchone()[0]
        )
    finally:
        for name in names:
            assert admin.execute("select pgmem.drop_tenant(%s)", (name,)).fetchone() == (1,)
    left = admin.execute(
        "select count(*) from pgmem.memories where tenant_id = any(%s)", (names,)
    ).fetchone()
    assert left == (0,)
    assert admin.execute(
        "select count(*) from pgmem.settings where tenant_id = any(%s)", (names,)
    ).fetchone() == (0,)


def test_move_tenant_gives_it_a_shard_of_its_own_on_another_worker(
    admin: psycopg.Connection, service: str, tenant: str
) -> None:
    with bound(service, tenant) as conn:
        conn.execute("select pgmem.remember('jack', 'Jack collects stamps')")
        conn.commit()
    total = admin.execute("select count(*) from pgmem.memories").fetchone()
    source = admin.execute(
        "select nodename, nodeport from citus_shards where shardid ="
        " get_shard_id_for_distribution_column('pgmem.memories', %s::text)",
        (tenant,),
    ).fetchone()
    assert source is not None
    target = admin.execute(
        "select nodename, nodeport from pg_dist_node"
        " where groupid <> 0 and (nodename, nodeport) <> (%s, %s) limit 1",
        source,
    ).fetchone()
    assert target is not None
    _shard, _, _, moved = admin.execute(
        "select * from pgmem.move_tenant(%s, %s, %s)", (tenant, *target)
    ).fetchone()
    assert moved is True
    placed = admin.execute(
        "select nodename, nodeport, shardminvalue = shardmaxvalue from citus_shards"
        " join pg_dist_shard using (shardid) where shardid ="
        " get_shard_id_for_distribution_column('pgmem.memories', %s::text)",
        (tenant,),
    ).fetchone()
    assert placed == (*target, True)
    # Moving it again changes nothing; no row was lost or duplicated anywhere.
    again = admin.execute("select moved from pgmem.move_tenant(%s, %s, %s)", (tenant, *target))
    assert again.fetchone() == (False,)
    assert admin.execute("select count(*) from pgmem.memories").fetchone() == total
    with bound(service, tenant) as conn:
        hits = conn.execute("select content from pgmem.recall('jack', 'stamps')").fetchall()
        conn.commit()
    assert hits == [("Jack collects stamps",)]


def test_cli_db_status_lists_every_node(cluster: Config) -> None:
    env = {"PGMEM_HOME": str(cluster.home), "PGMEM_PORT": str(cluster.port)}
    result = CliRunner().invoke(app, ["db", "status"], env={**os.environ, **env})
    assert result.exit_code == 0, result.output
    for index in range(1, WORKERS + 1):
        assert f"citus worker-{index}: running" in result.output


def test_memory_pool_binds_per_call_on_the_coordinator(service: str, tenant: str) -> None:
    """A session-level binding does not reach the shards: Memory's own pool binds the
    tenant in every call's transaction on Citus, and writes and reads still work."""
    from pgmem import Memory

    with Memory(service, tenant=tenant, embedder=False, llm=False) as memory:
        memory.add("I live in Porto", user_id="gina", infer=False)
        assert [r["content"] for r in memory.get_all("gina")] == ["I live in Porto"]
        assert [r["content"] for r in memory.search("Porto", "gina")] == ["I live in Porto"]
        assert memory._session_wide is False
