"""Every statement of the scale benchmark (:mod:`pgmem.lab.bench`, ``pgmem bench``), by name."""

from __future__ import annotations

from typing import Final

from psycopg import sql

SETUP_TOPICS: Final = """
create table public.bench_topics as
select t, public.l2_normalize(array(
           select random() * 2 - 1 from generate_series(1, %(dims)s) where t >= 0
       )::public.vector) as center
from generate_series(0, %(topics)s - 1) as t
"""
SETUP_NOISE: Final = """
create table public.bench_noise as
select n, array(
           select (random() * 2 - 1) * %(noise)s from generate_series(1, %(dims)s) where n >= 0
       )::public.vector as v
from generate_series(0, %(pool)s - 1) as n
"""
CREATE_TENANTS: Final = """
select pgmem.create_tenant(%(tenant)s), pgmem.create_tenant(pg_catalog.format('bench-small-%%s', i))
from generate_series(1, %(small_tenants)s) as i
"""
CREATE_SUBJECTS: Final = """
insert into pgmem.subjects (tenant_id, subject)
select %(tenant)s, pg_catalog.format('user-%%s', s) from generate_series(0, %(subjects)s - 1) as s
union all
select pg_catalog.format('bench-small-%%s', i), pg_catalog.format('user-%%s', j)
from generate_series(1, %(small_tenants)s) as i, generate_series(0, 1) as j
"""
SECONDARY_INDEXES: Final = """
select c.relname as name, pg_catalog.pg_get_indexdef(i.indexrelid) as definition
from pg_catalog.pg_index as i
join pg_catalog.pg_class as c on c.oid = i.indexrelid
where i.indrelid = 'pgmem.memories'::regclass and not i.indisprimary
order by c.relname
"""
# Subject s draws its topics from (s * 37 + j) % 256, j < 20; row i of the
# big tenant belongs to subject i % subjects, so a subject's rows spread
# over the whole heap. Small tenants are numbered after the big subjects.
GENERATE_MEMORIES: Final = """
insert into pgmem.memories (tenant_id, subject, kind, content, embedding, importance,
                            access_count, last_accessed_at, created_at, valid_from, session_id,
                            source)
select r.tenant_id, r.subject, r.kind, r.content, r.embedding, r.importance,
       r.access_count, r.last_accessed_at, r.created_at, r.created_at, r.session_id, 'import'
from (
    select g.tenant_id, g.subject,
           case when g.r_kind < 0.4 then 'semantic' when g.r_kind < 0.7 then 'episodic'
                when g.r_kind < 0.9 then 'preference' else 'procedural' end as kind,
           pg_catalog.format('memory %%s of %%s on topic%%s: w%%s w%%s w%%s', g.i, g.subject,
                             g.topic, g.topic * 8 + g.w1, g.topic * 8 + g.w2, g.w3) as content,
           public.l2_normalize(t.center operator(public.+) n1.v operator(public.+) n2.v)
               as embedding,
           (0.1 + 0.9 * g.r_importance)::real as importance,
           (g.r_access ^ 3 * 30)::integer as access_count,
           %(now)s - g.r_age * interval '400 days' * g.r_last as last_accessed_at,
           %(now)s - g.r_age * interval '400 days' as created_at,
           pg_catalog.format('session-%%s', g.i / 20) as session_id
    from (
        select x.*,
               (x.subject_no * 37
                + (random() * %(topics_per_subject)s)::integer %% %(topics_per_subject)s
               ) %% %(topics)s as topic,
               (random() * 7)::integer as w1, (random() * 7)::integer as w2,
               (random() * 2000)::integer as w3,
               random() as r_kind, random() as r_importance, random() as r_access,
               random() as r_age, random() as r_last,
               (random() * (%(pool)s - 1))::integer as a,
               (random() * (%(pool)s - 1))::integer as b
        from (
            select i, %(tenant)s as tenant_id,
                   pg_catalog.format('user-%%s', i %% %(subjects)s) as subject,
                   i %% %(subjects)s as subject_no
            from generate_series(0, %(subjects)s * %(per_subject)s - 1) as i
            union all
            select %(subjects)s * %(per_subject)s + i,
                   pg_catalog.format('bench-small-%%s', 1 + i %% %(small_tenants)s),
                   pg_catalog.format('user-%%s', i / %(small_tenants)s %% 2),
                   %(subjects)s + i %% (2 * %(small_tenants)s)
            from generate_series(0, %(small_tenants)s * %(small_size)s - 1) as i
        ) as x
    ) as g
    join public.bench_topics as t on t.t = g.topic
    join public.bench_noise as n1 on n1.n = g.a
    join public.bench_noise as n2 on n2.n = g.b
) as r
"""
# What the hourly decay job would have stored by now: the engine's own
# formula and per-kind rate (30_lifecycle.sql).
GENERATE_DECAY: Final = """
insert into pgmem.memory_decay (tenant_id, memory_id, effective_importance, decayed_at)
select m.tenant_id, m.memory_id,
       pgmem._decayed(m.importance, p.decay_per_second, m.last_accessed_at, %(now)s), %(now)s
from pgmem.memories as m
join pgmem._decay_policy as p on p.tenant_id = m.tenant_id and p.kind = m.kind
"""
# A memory's bytes: its row and index entries, and its stored effective
# importance (pgmem.memory_decay).
SIZES: Final = """
select pg_catalog.pg_table_size('pgmem.memories')
           + pg_catalog.pg_table_size('pgmem.memory_decay') as table_bytes,
       pg_catalog.pg_indexes_size('pgmem.memories')
           + pg_catalog.pg_indexes_size('pgmem.memory_decay') as index_bytes,
       (select pg_catalog.count(*) from pgmem.memories) as memories,
       (select pg_catalog.count(distinct tenant_id) from pgmem.memories) as tenants,
       (select pg_catalog.count(*) from pgmem.subjects) as subjects
"""
# The pgvector baseline's table with its index (pgmem.queries.bench_real), per row.
BASELINE_SIZE: Final = """
select pg_catalog.pg_total_relation_size('public.baseline_memories') as bytes,
       (select pg_catalog.count(*) from public.baseline_memories) as rows
"""
INDEX_SIZES: Final = """
select c.relname as name, pg_catalog.pg_relation_size(i.indexrelid) as bytes
from pg_catalog.pg_index as i
join pg_catalog.pg_class as c on c.oid = i.indexrelid
where i.indrelid = 'pgmem.memories'::regclass
order by c.relname
"""
# A query asks a subject about one of its topics: an embedding near the
# topic's centre and two of its words.
QUERIES: Final = """
select pg_catalog.format('user-%%s', q.s) as subject,
       pg_catalog.format('w%%s topic%%s', t.t * 8 + q.w, t.t) as text,
       public.l2_normalize(t.center operator(public.+) n.v)::text as embedding
from (
    select (random() * (%(subjects)s - 1))::integer as s,
           (random() * (%(topics_per_subject)s - 1))::integer as j,
           (random() * 7)::integer as w, (random() * (%(pool)s - 1))::integer as a, g
    from generate_series(1, %(n)s) as g
) as q
join public.bench_topics as t on t.t = (q.s * 37 + q.j) %% %(topics)s
join public.bench_noise as n on n.n = q.a
order by q.g
"""
RECALL: Final = """
explain (analyze, timing off, summary on, format json)
select * from pgmem.recall(%(subject)s, %(text)s, %(embedding)s::public.vector, p_k => 10,
                           p_reinforce => %(reinforce)s)
"""
RECALL_IDS: Final = """
select r.memory_id
from pgmem.recall(%(subject)s, %(text)s, %(embedding)s::public.vector, p_k => 10,
                  p_reinforce => false, p_now => %(now)s) as r
"""
# The same scoring over every active memory of the subject, ordered as
# pgmem.recall orders (score as real, then memory_id), with the query terms
# weighted by recall's own helpers (pgmem._query_terms, pgmem._term_weight)
# over the subject's active memories, and each row's text_match found here,
# one term at a time.
EXACT_IDS: Final = """
with terms as (
    select l.position, l.lexeme, pgmem._tsquery_lexeme(l.lexeme)::tsquery as query
    from pg_catalog.unnest(pgmem._query_terms(%(text)s)) with ordinality as l(lexeme, position)
),
subject as (
    select m.memory_id, m.fts
    from pgmem.memories as m
    where m.tenant_id = %(tenant)s and m.subject = %(subject)s and m.status = 'active'
),
weights as (
    select t.query, pgmem._term_weight(c.n, c.df) as weight
    from terms as t
    join (select t.position, pg_catalog.count(*) as n,
                 pg_catalog.count(*) filter (where s.fts @@ t.query) as df
          from terms as t cross join subject as s
          group by t.position) as c on c.position = t.position
),
-- Each row's share of the query's term weight (recall's text_match).
matched as (
    select s.memory_id,
           (select coalesce(pg_catalog.sum(w.weight) filter (where s.fts @@ w.query), 0)
                   / pg_catalog.sum(w.weight)
            from weights as w)::real as text_match
    from subject as s
)
select r.memory_id
from pgmem.settings as s
cross join lateral pgmem._half_life_seconds(s) as h
-- Recall counts the accesses not folded yet; so does the exact ranking.
cross join lateral pgmem._pending_accesses(s.tenant_id, array[%(subject)s::text]) as a
cross join lateral pgmem._recall_rows(
    s.tenant_id, s, array[%(subject)s::text],
    array(select x.memory_id from matched as x order by x.memory_id),
    case when exists (select from terms)
         then array(select x.text_match from matched as x order by x.memory_id) end,
    %(embedding)s::public.halfvec,
    %(now)s, %(now)s, null, null, null, null, null, null, h.kinds, h.seconds,
    a.subjects, a.memory_ids, a.accesses, a.last_accessed_at) as r
where s.tenant_id = %(tenant)s
order by pgmem._score(s, r.relevance, r.base_score) desc, r.memory_id desc
limit 10
"""
# New memories for existing subjects, with precomputed embeddings.
REMEMBER_ITEMS: Final = """
select pg_catalog.jsonb_build_object(
           'subject', pg_catalog.format('user-%%s', q.s),
           'content', pg_catalog.format('new memory %%s of user-%%s on topic%%s: w%%s',
                                        q.g, q.s, t.t, t.t * 8 + q.w),
           'embedding', public.l2_normalize(
               t.center operator(public.+) n1.v operator(public.+) n2.v)::text,
           'kind', 'semantic',
           'importance', 0.5,
           'source', 'import') as item
from (
    select (random() * (%(subjects)s - 1))::integer as s,
           (random() * (%(topics_per_subject)s - 1))::integer as j,
           (random() * 7)::integer as w, (random() * (%(pool)s - 1))::integer as a,
           (random() * (%(pool)s - 1))::integer as b, g
    from generate_series(1, %(n)s) as g
) as q
join public.bench_topics as t on t.t = (q.s * 37 + q.j) %% %(topics)s
join public.bench_noise as n1 on n1.n = q.a
join public.bench_noise as n2 on n2.n = q.b
order by q.g
"""
REMEMBER_MANY: Final = """
select r.action, pg_catalog.count(*) as n
from pgmem.remember_many(%(items)s) as r
group by r.action
"""
DECAY: Final = "select pgmem.decay(%(now)s) as n"
ARCHIVE: Final = "select a.weak + a.expired as n from pgmem.archive(%(now)s) as a"
MACHINE: Final = """
select pg_catalog.current_setting('server_version') as postgres,
       (select e.extversion from pg_catalog.pg_extension as e
        where e.extname = 'vector') as pgvector,
       pg_catalog.current_setting('shared_buffers') as shared_buffers,
       pg_catalog.current_setting('work_mem') as work_mem,
       pg_catalog.current_setting('maintenance_work_mem') as maintenance_work_mem,
       pg_catalog.current_setting('max_parallel_maintenance_workers') as parallel_maintenance,
       pg_catalog.current_setting('synchronous_commit') as synchronous_commit
"""
FUNCTION_EXISTS: Final = """
select exists (select from pg_catalog.pg_proc as p
               where p.pronamespace = 'pgmem'::regnamespace and p.proname = %(name)s) as present
"""
VECTOR_AVAILABLE: Final = (
    "select e.default_version from pg_catalog.pg_available_extensions as e where e.name = 'vector'"
)
SET_SEED: Final = "select pg_catalog.setseed(%s)"
JIT_OFF: Final = "set jit = off"
DROP_INDEX: Final = sql.SQL("drop index pgmem.{}")
# Index builds from scratch get the memory they need; reset afterwards.
RAISE_MAINTENANCE_WORK_MEM: Final = "set maintenance_work_mem = '4GB'"
RESET_MAINTENANCE_WORK_MEM: Final = "reset maintenance_work_mem"
VACUUM_MEMORIES: Final = "vacuum (analyze) pgmem.memories"
