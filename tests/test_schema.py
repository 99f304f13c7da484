"""Migrations: up, down and up again; offline SQL equals the online run;
the declared conventions (RLS forced, tenant_id first, comments) hold."""

from __future__ import annotations

import psycopg
import pytest

from pgmem import schema

# Everything a DBA or an attacker could tell apart between two databases:
# columns, constraints, indexes, policies, grants, functions, triggers, views.
SNAPSHOT = """
select 'column' as kind, format('%s.%s %s %s %s %s', c.relname, a.attname,
       format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
       a.attgenerated) as item
from pg_attribute a join pg_class c on c.oid = a.attrelid
left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
where c.relnamespace = 'pgmem'::regnamespace and a.attnum > 0 and not a.attisdropped
union all
select 'relation', format('%s %s rls=%s force=%s acl=%s owner=%s', c.relname, c.relkind,
       c.relrowsecurity, c.relforcerowsecurity, c.relacl, c.relowner::regrole)
from pg_class c where c.relnamespace = 'pgmem'::regnamespace
union all
select 'constraint', format('%s %s %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
from pg_constraint where connamespace = 'pgmem'::regnamespace
union all
select 'index', pg_get_indexdef(indexrelid) from pg_index i join pg_class c on c.oid = i.indexrelid
where c.relnamespace = 'pgmem'::regnamespace
union all
select 'policy', format('%s %s %s %s %s %s', tablename, policyname, cmd, roles, qual, with_check)
from pg_policies where schemaname = 'pgmem'
union all
select 'function', format('%s(%s) %s secdef=%s vol=%s config=%s acl=%s owner=%s src=%s', proname,
       pg_get_function_identity_arguments(oid), pg_get_function_result(oid), prosecdef, provolatile,
       proconfig, proacl, proowner::regrole, md5(prosrc))
from pg_proc where pronamespace = 'pgmem'::regnamespace
union all
select 'trigger', pg_get_triggerdef(t.oid) from pg_trigger t join pg_class c on c.oid = t.tgrelid
where c.relnamespace = 'pgmem'::regnamespace and not t.tgisinternal
union all
select 'view', format('%s %s', c.relname, pg_get_viewdef(c.oid)) from pg_class c
where c.relnamespace = 'pgmem'::regnamespace and c.relkind in ('v', 'm')
union all
select 'comment', format('%s %s', objoid::regprocedure, description) from pg_description
where classoid = 'pg_proc'::regclass
  and objoid in (select oid from pg_proc where pronamespace = 'pgmem'::regnamespace)
union all
select 'schema', format('%s owner=%s acl=%s', nspname, nspowner::regrole, nspacl) from pg_namespace
where nspname = 'pgmem'
order by 1, 2
"""


def snapshot(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(SNAPSHOT).fetchall()


def test_up_down_up_gives_the_same_database(empty_dsn: str, dsn: str) -> None:
    schema.upgrade(empty_dsn)
    first = snapshot(empty_dsn)
    assert first == snapshot(dsn), "a fresh migration differs from the test template"
    schema.downgrade(empty_dsn, "base")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute("select to_regnamespace('pgmem')").fetchone() == (None,)
    assert schema.current_revision(empty_dsn) is None
    schema.upgrade(empty_dsn)
    assert snapshot(empty_dsn) == first
    assert schema.current_revision(empty_dsn) == schema.status(empty_dsn)["head"]


def test_stored_effective_importance_moves_to_memory_decay_and_back(empty_dsn: str) -> None:
    """Revision 0015 carries each stored effective importance from the memory row into
    pgmem.memory_decay (NULL: no row), and its downgrade carries it back."""
    schema.upgrade(empty_dsn, "0014")
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute("insert into pgmem.tenants (tenant_id) values ('acme')")
        conn.execute("insert into pgmem.subjects (tenant_id, subject) values ('acme', 'alice')")
        decayed, fresh = (
            conn.execute(
                "insert into pgmem.memories (tenant_id, subject, kind, content, importance,"
                " effective_importance) values ('acme', 'alice', 'episodic', %s, 0.5, %s)"
                " returning memory_id",
                (content, value),
            ).fetchone()[0]  # type: ignore[index]
            for content, value in (("decayed once", 0.3), ("never decayed", None))
        )
    schema.upgrade(empty_dsn)
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute(
            "select tenant_id, memory_id, effective_importance from pgmem.memory_decay"
        ).fetchall() == [("acme", decayed, pytest.approx(0.3))]
        assert conn.execute(
            "select count(*) from pg_attribute where attrelid = 'pgmem.memories'::regclass"
            " and attname = 'effective_importance' and not attisdropped"
        ).fetchone() == (0,)
    schema.downgrade(empty_dsn, "0014")
    with psycopg.connect(empty_dsn) as conn:
        assert conn.execute(
            "select memory_id, effective_importance from pgmem.memories order by memory_id"
        ).fetchall() == [(decayed, pytest.approx(0.3)), (fresh, None)]
        assert conn.execute("select to_regclass('pgmem.memory_decay')").fetchone() == (None,)
        # The view DBAs read still works, on the column again.
        assert conn.execute(
            "select avg_effective_importance from pgmem.memory_stats"
        ).fetchone() == (pytest.approx(0.4),)


def test_reviewed_sql_builds_the_same_database(empty_dsn: str, dsn: str) -> None:
    """`pgmem migrate --sql` is what a DBA reviews: applied by hand it must match."""
    script = schema.upgrade_sql()
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        conn.execute(script.encode())
    assert snapshot(empty_dsn) == snapshot(dsn)
    assert schema.current_revision(empty_dsn) == schema.current_revision(dsn)


def test_dims_are_fixed_by_the_first_migration(empty_dsn: str) -> None:
    schema.upgrade(empty_dsn, dims=1536)
    with psycopg.connect(empty_dsn) as conn:
        column = conn.execute(
            "select format_type(atttypid, atttypmod) from pg_attribute "
            "where attrelid = 'pgmem.memories'::regclass and attname = 'embedding'"
        ).fetchone()
    assert column == ("halfvec(1536)",)
    assert schema.installed_dims(empty_dsn) == 1536
    schema.upgrade(empty_dsn, dims=1536)  # same size again: harmless
    with pytest.raises(schema.SchemaError, match="1536-dimensional"):
        schema.upgrade(empty_dsn, dims=384)


def test_every_tenant_table_forces_rls_and_leads_with_tenant(admin: psycopg.Connection) -> None:
    tables = admin.execute(
        """
        select c.relname, c.relrowsecurity, c.relforcerowsecurity
        from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attname = 'tenant_id'
        where c.relnamespace = 'pgmem'::regnamespace and c.relkind = 'r'
          -- Owner-only tables keyed by role or backend, not tenant rows.
          and c.relname not in ('_tenant_logins', '_subject_bindings', 'job_runs')
        """
    ).fetchall()
    assert {t for t, _, _ in tables} == {
        "tenants",
        "settings",
        "subjects",
        "memories",
        "memory_links",
        "memory_events",
        "inbox",
        "sessions",
        "session_messages",
        "session_summaries",
        "tasks",
        "task_steps",
        "reembed_vectors",
        "memory_decay",
        "memory_accesses",
        "_change_channels",
        "_mcp_tokens",
    }
    assert all(rls and forced for _, rls, forced in tables), tables
    # tenant_id leads every index of a tenant table, except HNSW (one column only).
    offenders = admin.execute(
        """
        select indexrelid::regclass::text
        from pg_index i join pg_class c on c.oid = i.indrelid
        join pg_class ic on ic.oid = i.indexrelid join pg_am am on am.oid = ic.relam
        where c.relnamespace = 'pgmem'::regnamespace
          and c.relname not in ('_tenant_logins', '_subject_bindings', 'job_runs', '_job_locks')
          -- A bearer token is looked up by its hash, before any tenant is known.
          and indexrelid::regclass::text <> 'pgmem._mcp_tokens_pkey'
          and am.amname <> 'hnsw'
          and (select attname from pg_attribute where attrelid = c.oid and attnum = i.indkey[0])
              <> 'tenant_id'
        """
    ).fetchall()
    assert offenders == []


def test_every_public_function_is_documented(admin: psycopg.Connection) -> None:
    undocumented = admin.execute(
        """
        select p.oid::regprocedure::text from pg_proc p
        where p.pronamespace = 'pgmem'::regnamespace
          and obj_description(p.oid, 'pg_proc') is null
        """
    ).fetchall()
    assert undocumented == []


@pytest.mark.parametrize(
    ("content", "query", "matches"),
    [
        ("The user prefers a dark theme in the editor", "which themes does the user prefer?", True),
        ("The user prefers a dark theme in the editor", "favourite pizza topping", False),
        ("用户喜欢深色主题", "深色", True),
        ("用户喜欢深色主题", "喜欢什么主题", True),
        ("用户喜欢深色主题", "浅色背景", False),
        ("我住在上海,周末喜欢跑步", "上海", True),
        ("Meeting with 张伟 in 北京 next Friday", "北京 meeting", True),
        ("Meeting with 张伟 in 北京 next Friday", "上海", False),
    ],
)
def test_full_text_search_in_english_and_chinese(
    admin: psycopg.Connection, content: str, query: str, matches: bool
) -> None:
    row = admin.execute("select pgmem._tsv(%s) @@ pgmem._tsq(%s)", (content, query)).fetchone()
    assert row == (matches,)


@pytest.mark.parametrize(
    ("lexemes", "query"),
    [
        (["self-driv", "bob.smith@example.com"], "'self-driv' | 'bob.smith@example.com'"),
        (["o'brien", "c\\d", "x y", "p:*", "!&"], "'o''brien' | 'c\\\\d' | 'x y' | 'p:*' | '!&'"),
    ],
)
def test_terms_query_takes_each_lexeme_whole(
    admin: psycopg.Connection, lexemes: list[str], query: str
) -> None:
    row = admin.execute(
        "select pgmem._terms_query(%(l)s)::text,"
        " (select pg_catalog.bool_and(pg_catalog.array_to_tsvector(array[l])"
        "                             @@ pgmem._terms_query(array[l]))"
        "  from pg_catalog.unnest(%(l)s::text[]) as l)",
        {"l": lexemes},
    ).fetchone()
    assert row == (query, True)


def test_normalized_content_ignores_case_space_and_punctuation(admin: psycopg.Connection) -> None:
    row = admin.execute(
        "select pgmem._content_hash(%s) = pgmem._content_hash(%s), "
        "pgmem._content_hash(%s) = pgmem._content_hash(%s)",
        ("I like  Dark themes!", "i like dark themes", "我喜欢深色主题。", "我喜欢浅色主题"),
    ).fetchone()
    assert row == (True, False)


def test_execute_rights_follow_the_grants_file(admin: psycopg.Connection) -> None:
    def executable_by(role: str) -> set[str]:
        return {
            r[0]
            for r in admin.execute(
                "select p.proname from pg_proc p where p.pronamespace = 'pgmem'::regnamespace"
                " and has_function_privilege(%s, p.oid, 'execute')",
                (role,),
            )
        }

    assert executable_by("public") == set()
    app = executable_by("pgmem_app")
    assert {"remember", "recall", "context", "forget", "erase_subject", "enqueue", "decay"} <= app
    admin_only = {"create_tenant", "drop_tenant", "run_job", "maintain", "schedule", "unschedule"}
    assert app & admin_only == set()
    assert executable_by("pgmem_readonly") & {"remember", "forget", "run_job"} == set()
