"""Every statement of the real-text benchmark (:mod:`pgmem.lab.bench_real`,
``pgmem bench --data locomo``), by name.

The plain pgvector baseline is what other memory libraries do: one table
(tenant, subject, content, embedding) with a btree on (tenant, subject) and an
exact cosine top-10 within the subject. The tenant and its subjects are created
with :mod:`pgmem.queries.bench_layers`' statements.
"""

from __future__ import annotations

from typing import Final

# The run's unique LoCoMo turns with their vectors (embedded once per run).
STAGE_TURNS: Final = """
create table public.bench_turns (
    turn_no   integer primary key,
    content   text not null,
    embedding public.vector(384) not null
)
"""
COPY_TURNS: Final = "copy public.bench_turns (turn_no, content, embedding) from stdin"
# Subject s holds per_subject consecutive unique turns starting where its
# conversation (s mod conversations) starts, running into the next one; row i
# belongs to subject i mod subjects, so a subject's rows spread over the heap
# as an app writing for many users at once leaves them. No effective
# importance is precomputed: the first decay pass finds every row new.
GENERATE_MEMORIES: Final = """
insert into pgmem.memories (tenant_id, subject, kind, content, embedding, importance, source,
                            created_at, valid_from, updated_at, last_accessed_at,
                            status_changed_at)
select %(tenant)s, pg_catalog.format('user-%%s', d.s), 'episodic', d.content, d.embedding, 0.5,
       'import', d.at, d.at, d.at, d.at, d.at
from (
    -- Turns that differ only in case or spacing are one memory (content_hash).
    select distinct on (x.s, pgmem._content_hash(t.content)) x.i, x.s, x.at, t.content,
           t.embedding
    from (
        select i, i %% %(subjects)s as s, i / %(subjects)s as j,
               %(now)s - (i %% 997) * interval '9 hours' as at
        from generate_series(0, %(subjects)s * %(per_subject)s - 1) as i
    ) as x
    join public.bench_turns as t
      on t.turn_no = ((%(starts)s::integer[])[1 + x.s %% %(conversations)s] + x.j) %% %(turns)s
    order by x.s, pgmem._content_hash(t.content), x.i
) as d
order by d.i
"""
CREATE_BASELINE: Final = """
create table public.baseline_memories (
    id        bigint generated always as identity primary key,
    tenant    text not null,
    subject   text not null,
    content   text not null,
    embedding public.vector(384) not null
)
"""
# The baseline runs as the application role too.
GRANT_BASELINE: Final = "grant select, insert on public.baseline_memories to pgmem_service"
# The same rows, in the same heap order.
FILL_BASELINE: Final = """
insert into public.baseline_memories (tenant, subject, content, embedding)
select m.tenant_id, m.subject, m.content, m.embedding
from pgmem.memories as m
order by m.memory_id
"""
INDEX_BASELINE: Final = (
    "create index baseline_memories_subject on public.baseline_memories (tenant, subject)"
)
VACUUM_BASELINE: Final = "vacuum (analyze) public.baseline_memories"
# Bytes per memory: pgmem's memories table with its indexes, events and the
# inbox (whole relations with TOAST and indexes); the baseline table likewise.
SIZES: Final = """
select pg_catalog.pg_table_size('pgmem.memories') as table_bytes,
       pg_catalog.pg_indexes_size('pgmem.memories') as index_bytes,
       pg_catalog.pg_total_relation_size('pgmem.memory_events') as event_bytes,
       pg_catalog.pg_total_relation_size('pgmem.inbox') as inbox_bytes,
       (select pg_catalog.count(*) from pgmem.memories) as memories,
       (select pg_catalog.count(*) from pgmem.memory_events) as events,
       (select pg_catalog.count(*) from pgmem.inbox) as inbox,
       pg_catalog.pg_total_relation_size('public.baseline_memories') as baseline_bytes,
       (select pg_catalog.count(*) from public.baseline_memories) as baseline_rows
"""
# The stored effective importances (one row per memory decay has written:
# all of them after a first pass over old imports).
DECAY_SIZE: Final = "select pg_catalog.pg_total_relation_size('pgmem.memory_decay') as bytes"
RECALL_EXPLAIN: Final = """
explain (analyze, timing off, summary on, format json)
select * from pgmem.recall(%(subject)s, %(text)s, %(embedding)s::public.vector, p_k => 10,
                           p_reinforce => true)
"""
# What an application sends: one statement, tenant bound on the session.
RECALL: Final = """
select r.memory_id, r.content, r.score
from pgmem.recall(%(subject)s, %(text)s, %(embedding)s::public.vector, p_k => 10,
                  p_reinforce => true) as r
"""
BASELINE_SEARCH_EXPLAIN: Final = """
explain (analyze, timing off, summary on, format json)
select b.id, b.content, b.embedding operator(public.<=>) %(embedding)s::public.vector as distance
from public.baseline_memories as b
where b.tenant = %(tenant)s and b.subject = %(subject)s
order by b.embedding operator(public.<=>) %(embedding)s::public.vector
limit 10
"""
BASELINE_SEARCH: Final = """
select b.id, b.content, b.embedding operator(public.<=>) %(embedding)s::public.vector as distance
from public.baseline_memories as b
where b.tenant = %(tenant)s and b.subject = %(subject)s
order by b.embedding operator(public.<=>) %(embedding)s::public.vector
limit 10
"""
REMEMBER: Final = """
select r.action
from pgmem.remember(p_subject => %(subject)s, p_content => %(content)s,
                    p_embedding => %(embedding)s::real[], p_kind => 'episodic',
                    p_source => 'import') as r
"""
# A stated turn as the worker stores it: the episode facts are derived from
# (source 'turn': only an exact repeat matches it), in its session.
LINK_EPISODES: Final = "select episodes from pgmem.link_episodes()"
REMEMBER_EPISODE_EXPLAIN: Final = """
explain (analyze, timing off, summary on, format json)
select r.action
from pgmem.remember(p_subject => %(subject)s, p_content => %(content)s,
                    p_embedding => %(embedding)s::real[], p_kind => 'episodic',
                    p_source => 'turn', p_session_id => %(session_id)s) as r
"""
BASELINE_INSERT_EXPLAIN: Final = """
explain (analyze, timing off, summary on, format json)
insert into public.baseline_memories (tenant, subject, content, embedding)
values (%(tenant)s, %(subject)s, %(content)s, %(embedding)s::public.vector)
"""
BASELINE_INSERT: Final = """
insert into public.baseline_memories (tenant, subject, content, embedding)
values (%(tenant)s, %(subject)s, %(content)s, %(embedding)s::public.vector)
returning id
"""
# One statement per batch. (unnest of several arrays is syntax of FROM: it cannot
# be schema-qualified.)
BASELINE_INSERT_MANY: Final = """
insert into public.baseline_memories (tenant, subject, content, embedding)
select %(tenant)s, u.subject, u.content, u.embedding::public.vector
from unnest(%(subjects)s::text[], %(contents)s::text[], %(embeddings)s::text[])
     as u(subject, content, embedding)
"""
