"""Every statement of the LoCoMo retrieval eval (:mod:`pgmem.lab.eval`, ``pgmem eval``), by name."""

from __future__ import annotations

from typing import Final

from psycopg import sql

# The embedder's model, for this session and (the first time) as the tenant's, so that
# recall and the write path read that model's calibrations.
DECLARE_MODEL: Final = "select pgmem.use_embedding_model(%(model)s, false) as model"
STAGE_TURNS: Final = """
create temporary table _eval_turns (
    subject    text not null,
    session_id text not null,
    session_no integer not null,
    seq        integer not null,
    dia_id     text not null,
    speaker    text not null,
    content    text not null,
    at         timestamptz not null,
    embedding  public.vector,
    memory_id  bigint
) on commit drop
"""
COPY_TURNS: Final = """
copy _eval_turns (subject, session_id, session_no, seq, dia_id, speaker, content, at, embedding)
from stdin
"""
INSERT_SUBJECTS: Final = """
insert into pgmem.subjects (subject, created_at)
select t.subject, min(t.at) from _eval_turns as t group by t.subject
on conflict do nothing
"""
# One memory per distinct content (pgmem keeps one active row per content
# hash and subject); identical turns share it and all their dia_ids. Rows go
# in conversation order so memory ids follow the dialogue. Every timestamp is
# the session's date: recency is measured in the conversation's own time.
INSERT_MEMORIES: Final = """
insert into pgmem.memories (
    subject, session_id, kind, content, embedding, source,
    valid_from, created_at, updated_at, last_accessed_at, status_changed_at, metadata)
select f.subject, f.session_id, 'episodic', f.content, f.embedding, 'import',
       f.at, f.at, f.at, f.at, f.at,
       pg_catalog.jsonb_build_object(
           'dataset', 'locomo', 'dia_id', f.dia_ids[1], 'dia_ids', pg_catalog.to_jsonb(f.dia_ids),
           'speaker', f.speaker, 'session', f.session_no)
from (
    select distinct on (t.subject, pgmem._content_hash(t.content))
           t.*,
           pg_catalog.array_agg(t.dia_id) over (
               partition by t.subject, pgmem._content_hash(t.content)
               order by t.session_no, t.seq
               rows between unbounded preceding and unbounded following) as dia_ids
    from _eval_turns as t
    order by t.subject, pgmem._content_hash(t.content), t.session_no, t.seq
) as f
order by f.subject, f.session_no, f.seq
"""
MAP_TURNS: Final = """
update _eval_turns as t
set memory_id = m.memory_id
from pgmem.memories as m
where m.subject = t.subject
  and m.status = 'active'
  and m.content_hash = pgmem._content_hash(t.content)
"""
# Neighbouring turns of a session, linked both ways: ripple recall follows
# them from a found turn to the ones around it.
INSERT_LINKS: Final = """
insert into pgmem.memory_links (from_id, to_id, link_type, created_at)
select e.from_id, e.to_id, 'same_session', e.at
from (
    select a.memory_id as from_id, b.memory_id as to_id, b.at
    from _eval_turns as a
    join _eval_turns as b
      on b.subject = a.subject and b.session_no = a.session_no and b.seq = a.seq + 1
    union all
    select b.memory_id, a.memory_id, b.at
    from _eval_turns as a
    join _eval_turns as b
      on b.subject = a.subject and b.session_no = a.session_no and b.seq = a.seq + 1
) as e
where e.from_id <> e.to_id
on conflict do nothing
"""
# Ripple over the links pgmem's write path makes (pgmem._link_at_write: same_session
# by similarity, same_entity by triple), instead of INSERT_LINKS, for
# `pgmem eval locomo --links write`. Memory ids follow the dialogue, so each turn
# links as if written in conversation order.
LINK_AT_WRITE: Final = """
select pgmem._link_at_write(
    pgmem.current_tenant(),
    array(select distinct t.memory_id from _eval_turns as t order by t.memory_id),
    (select max(t.at) from _eval_turns as t))
"""
# Consolidation eval (`pgmem eval consolidation`): active memories, and what the
# insights cover. An insight answers for its sources' turns: its dia_ids are theirs.
COUNT_ACTIVE: Final = """
select count(*) as active from pgmem.memories where status = 'active'
"""
CREDIT_INSIGHTS: Final = """
update pgmem.memories as m
set metadata = m.metadata || jsonb_build_object('dia_ids', s.dia_ids)
from (
    select l.from_id, jsonb_agg(d.dia_id order by d.dia_id) as dia_ids
    from pgmem.memory_links as l
    join pgmem.memories as src on src.memory_id = l.to_id
    cross join lateral jsonb_array_elements_text(src.metadata -> 'dia_ids') as d(dia_id)
    where l.link_type = 'derived_from'
    group by l.from_id
) as s
where m.memory_id = s.from_id
"""
INSERT_EVENTS: Final = """
insert into pgmem.memory_events (memory_id, subject, event, new_content, details, created_at)
select m.memory_id, m.subject, 'insert', m.content,
       pg_catalog.jsonb_build_object('source', 'pgmem eval locomo'), m.created_at
from pgmem.memories as m
where m.memory_id in (select t.memory_id from _eval_turns as t)
"""
COUNT_INGESTED: Final = """
select (select count(*) from pgmem.memories) as memories,
       (select count(*) from pgmem.memory_links) as links
"""
# Reference baselines: plain PostgreSQL ranking over the same rows, with no
# pgmem scoring. They are what the engine's modes are compared against.
BASELINE_TEXT: Final = """
select m.metadata
from pgmem.memories as m, pgmem._tsq(%(query)s) as q
where m.subject = %(subject)s and m.status = 'active' and m.fts @@ q
order by pg_catalog.ts_rank(m.fts, q) desc, m.memory_id
limit %(k)s
"""
# "+ 0" keeps the planner off the HNSW index: an approximate scan filtered to
# one subject afterwards can return fewer than k rows. A subject is small, so
# the exact scan is the true cosine ranking.
BASELINE_VECTOR: Final = """
select m.metadata
from pgmem.memories as m
where m.subject = %(subject)s and m.status = 'active' and m.embedding is not null
order by (m.embedding operator(public.<=>) %(embedding)s::public.vector) + 0, m.memory_id
limit %(k)s
"""
BASELINE_RRF: Final = """
with q as (select pgmem._tsq(%(query)s) as q),
text_ranked as (
    select r.metadata, r.memory_id,
           pg_catalog.row_number() over (order by r.rank desc, r.memory_id) as pos
    from (
        select m.metadata, m.memory_id,
               pg_catalog.ts_rank(m.fts, q.q) as rank
        from pgmem.memories as m, q
        where m.subject = %(subject)s and m.status = 'active' and m.fts @@ q.q
        order by rank desc, m.memory_id
        limit %(pool)s
    ) as r
),
vector_ranked as (
    select r.metadata, r.memory_id,
           pg_catalog.row_number() over (order by r.distance, r.memory_id) as pos
    from (
        select m.metadata, m.memory_id,
               (m.embedding operator(public.<=>) %(embedding)s::public.vector) + 0 as distance
        from pgmem.memories as m
        where m.subject = %(subject)s and m.status = 'active' and m.embedding is not null
        order by distance, m.memory_id
        limit %(pool)s
    ) as r
)
select pg_catalog.min(u.metadata::text)::jsonb as metadata
from (select * from text_ranked union all select * from vector_ranked) as u
group by u.memory_id
order by pg_catalog.sum(1.0 / (%(rrf_k)s + u.pos)) desc, u.memory_id
limit %(k)s
"""
# The engine's ranking, as an application calls it. reinforce => false: a
# question must not change the ranking of the next one; p_now is the day
# after the conversation's last session.
RECALL: Final = """
select r.metadata, r.hops
from pgmem.recall(
    %(subject)s,
    p_query => %(query)s,
    p_embedding => %(embedding)s::public.vector,
    p_k => %(k)s,
    p_since => %(since)s,
    p_until => %(until)s,
    p_hops => %(hops)s,
    p_reinforce => false,
    p_now => %(now)s) as r
order by r.score desc, r.memory_id desc
"""
SETTINGS_COLUMNS: Final = """
select a.attname::text
from pg_catalog.pg_attribute as a
where a.attrelid = 'pgmem.settings'::regclass and a.attnum > 0 and not a.attisdropped
  and a.attname not in ('tenant_id', 'updated_at')
order by a.attnum
"""
SETTINGS_OF_TENANT: Final = "select * from pgmem.settings where tenant_id = %(tenant)s"
# The floor pgmem eval floor measures by default: the model's and the tenant's text floor.
RELEVANCE_FLOOR: Final = """
select pgmem.model_relevance_floor(%(model)s) as model_floor, s.min_text_match as text_floor,
       s.relative_floor
from pgmem.settings as s
where s.tenant_id = %(tenant)s
"""
# pgmem eval floor: a subject's core profile, and the context block an app gets.
PROFILE_OF: Final = "select p.memory_id, p.content from pgmem.profile(%(subject)s, %(now)s) as p"
CONTEXT: Final = """
select pgmem.context(%(subject)s, p_query => %(query)s, p_embedding => %(embedding)s::public.vector,
                     p_reinforce => false, p_now => %(now)s) as block
"""
ANALYZE_TURNS: Final = "analyze _eval_turns"
ANALYZE_MEMORIES_AND_LINKS: Final = "analyze pgmem.memories, pgmem.memory_links"
UPDATE_SETTINGS: Final = sql.SQL(
    "update pgmem.settings set {}, updated_at = pg_catalog.now() where tenant_id = {}"
)
# The write-path eval (pgmem.lab.write_path): what a tenant holds once its turns went
# through Memory.add and the worker. Row-level security scopes each to the bound tenant.
ACTIVE_HOLDINGS: Final = """
select m.subject, m.metadata, pgmem._normalize(m.content) as normalized
from pgmem.memories as m
where m.status = 'active'
"""
NORMALIZE_TEXTS: Final = """
select pgmem._normalize(t.text) as normalized
from pg_catalog.unnest(%(texts)s::text[]) with ordinality as t(text, n)
order by t.n
"""
MEMORIES_BY_STATUS: Final = """
select m.status as key, pg_catalog.count(*) as n
from pgmem.memories as m group by m.status order by m.status
"""
MEMORIES_BY_SOURCE: Final = """
select m.source as key, pg_catalog.count(*) as n
from pgmem.memories as m group by m.source order by m.source
"""
INBOX_BY_JOB: Final = """
select i.job || ' ' || i.status as key, pg_catalog.count(*) as n
from pgmem.inbox as i group by i.job, i.status order by i.job, i.status
"""
# Jobs not yet done or failed for good, and the seconds until the first is due
# (a failed attempt waits out its backoff).
INBOX_PENDING: Final = """
select pg_catalog.count(*) as pending,
       extract(epoch from pg_catalog.min(i.available_at) - pg_catalog.now()) as due_in
from pgmem.inbox as i
where i.status = 'pending'
"""
# The pair corpus (pgmem.lab.pairs): two statements of one subject through remember,
# the evidence beside similarity, and the decision replayed over a threshold grid.
MODEL_THRESHOLDS: Final = """
select t.duplicate_threshold as dup, t.merge_threshold as merge
from pgmem.model_thresholds(%(model)s) as t
"""
PAIR_REMEMBER: Final = """
select r.action
from pgmem.remember(p_subject => %(subject)s, p_content => %(content)s,
                    p_embedding => %(embedding)s::real[], p_kind => %(kind)s,
                    p_triple_subject => %(ts)s, p_triple_predicate => %(tp)s,
                    p_triple_object => %(to)s, p_source => 'rule',
                    p_valid_from => %(at)s, p_now => %(at)s) as r
"""
PAIR_EVIDENCE: Final = """
select pgmem._coverage(pgmem._conflict_terms(%(b)s), pgmem._conflict_marks(%(b)s),
                       pgmem._conflict_terms(%(a)s), pgmem._conflict_marks(%(a)s)) as covered
"""
PAIR_REPLAY: Final = """
select d.dup, g.merge,
       array(select pgmem._write_action(x.settings, false, null::text, o.similarity, o.covered)
             from rows from (pg_catalog.unnest(%(similarity)s::real[]),
                             pg_catalog.unnest(%(covered)s::text[]))
                  with ordinality as o(similarity, covered, n)
             order by o.n) as actions
from pgmem.settings as s
cross join pg_catalog.unnest(%(grid)s::real[]) as d(dup)
cross join pg_catalog.unnest(%(grid)s::real[]) as g(merge)
cross join lateral (
    select pg_catalog.jsonb_populate_record(
               s, pg_catalog.jsonb_build_object('duplicate_threshold', d.dup,
                                                'merge_threshold', g.merge)) as settings
) as x
where s.tenant_id = %(tenant)s and g.merge <= d.dup
order by d.dup, g.merge
"""
