"""Every statement the client (:mod:`pgmem.client`) and the memory CLI verbs run, by name.

The engine is the ``pgmem.*`` SQL functions; these statements only call them, or read
the views that row-level security already confines to the bound tenant. View reads
still name the tenant (``tenant_id = (select pgmem._require_tenant())``): a superuser
or pgmem_admin bypasses RLS, so without it a service connection bound with
``pgmem.set_tenant`` would read every tenant's rows. With no tenant bound,
``pgmem._require_tenant()`` fails with PM001 and says how to bind one.

Optional filters are written as ``(%(x)s::type is null or …)`` so each statement is
one fixed text: nothing is assembled from strings at run time. Embeddings travel as
``float8[]`` and are cast in SQL (``::real[]`` for the write path; recall's go through
``pgmem.query_vector``, which refuses NaN or out-of-range values with PM015-PM017 before
pgvector's cast could), so no pgvector adapter has to be registered on a caller's connection.
They are sent in binary (``%(embedding)b``): as text, psycopg formats a list element by
element in Python, ~1 ms for 384 floats on every search (docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Final

from psycopg import sql

__all__ = [
    "ARCHIVE_BACKLOG",
    "BIND_TENANT",
    "BIND_TENANT_MODEL",
    "BIND_TENANT_SESSION",
    "CANCEL_REEMBED",
    "CAPACITY_USAGE",
    "CHANGES",
    "CHANGE_CHANNEL",
    "CHANGE_POSITION",
    "CHECK_CONTENT_SIZE",
    "CONTEXT",
    "COUNT_EXPORT",
    "DELETE_ITEMS",
    "ENQUEUE",
    "ENTITIES",
    "ERASE_SUBJECT",
    "EXPORT_MEMORIES",
    "FORGET",
    "GET_ITEMS",
    "GET_MEMORY",
    "HISTORY",
    "INJECTION_RULE",
    "KEEP",
    "LISTEN",
    "LIST_MEMORIES",
    "MEMORY_LINKS",
    "MEMORY_STATS",
    "PIN",
    "PROFILE",
    "PUT_ITEMS",
    "RECALL",
    "REEMBED_STATUS",
    "REMEMBER_MANY",
    "SET_PROFILE",
    "SET_TIME_ZONE",
    "START_REEMBED",
    "SUBJECT_EVENTS",
    "TENANT_DIMS",
    "TIME_POLICY",
    "TIME_ZONE",
    "UPDATE_MEMORY",
    "USE_EMBEDDING_MODEL",
]

# The one tenant binding (client, worker, CLI): pgmem.bind_tenant binds it for a
# pgmem_service member and otherwise returns the login's own tenant to compare.
BIND_TENANT: Final = "select pgmem.bind_tenant(%(tenant)s) as tenant"
# The same for the whole session, with the embedding model when the client has
# one (below): once per pooled connection of a client that always acts for one
# tenant. On a Citus coordinator a session-level setting does
# not reach the shards' sessions (only SET LOCAL does: citus.propagate_set_commands
# = local), so there the client binds in every transaction as well (session_wide).
BIND_TENANT_SESSION: Final = """
select b.tenant,
       case when %(model)s::text is not null then pgmem.use_embedding_model(%(model)s, false) end
           as embedding_model,
       not exists (select from pg_catalog.pg_extension as e where e.extname = 'citus')
           as session_wide
from pgmem.bind_tenant(%(tenant)s, false) as b(tenant)
"""
# The same binding, and the embedding model of the vectors the transaction passes
# (pgmem.use_embedding_model: recorded as the tenant's when it has none; vectors of
# another model are refused with PM025). FROM runs first: the tenant is bound.
BIND_TENANT_MODEL: Final = """
select b.tenant, pgmem.use_embedding_model(%(model)s) as embedding_model
from pgmem.bind_tenant(%(tenant)s) as b(tenant)
"""
# A tenant login role is bound already: only the model.
USE_EMBEDDING_MODEL: Final = (
    "select pgmem.use_embedding_model(%(model)s, %(local)s) as embedding_model"
)

TENANT_DIMS: Final = """
select s.embedding_dims, s.embedding_model
from pgmem.settings as s
where s.tenant_id = (select pgmem._require_tenant())
"""

# ------------------------------------------------------------ embedding model

START_REEMBED: Final = "select pgmem.start_reembed(%(model)s, %(batch)s) as jobs"
REEMBED_STATUS: Final = "select * from pgmem.reembed_status()"
CANCEL_REEMBED: Final = "select pgmem.cancel_reembed() as cancelled"

# ------------------------------------------------------------------------ writes

REMEMBER_MANY: Final = """
select r.item, r.action, r.memory_id, r.related_id, r.similarity
from pgmem.remember_many(p_items => %(items)s, p_subject => %(subject)s) as r
order by r.item
"""

ENQUEUE: Final = """
select pgmem.enqueue(
    p_subject => %(subject)s,
    p_messages => %(messages)s,
    p_session_id => %(session_id)s,
    p_agent_id => %(agent_id)s,
    p_metadata => %(metadata)s,
    p_occurred_at => %(occurred_at)s,
    p_confidence => %(confidence)s::float8,
    p_expires_at => %(expires_at)s
) as inbox_id
"""

UPDATE_MEMORY: Final = """
select m.memory_id, m.subject, m.kind, m.content, m.importance, m.status, m.pinned,
       m.triple_subject, m.triple_predicate, m.triple_object, m.metadata,
       m.embedding is not null as embedded, m.updated_at
from pgmem.update_memory(
    p_memory_id => %(memory_id)s,
    p_content => %(content)s,
    p_embedding => %(embedding)b::real[],
    p_importance => pgmem._importance_arg(%(importance)s::float8),
    p_kind => %(kind)s,
    p_metadata => %(metadata)s,
    p_triple_subject => %(triple_subject)s,
    p_triple_predicate => %(triple_predicate)s,
    p_triple_object => %(triple_object)s
) as m
"""

FORGET: Final = "select pgmem.forget(%(memory_id)s) as changed"

PIN: Final = "select pgmem.pin(%(memory_id)s, %(pinned)s) as changed"
KEEP: Final = "select pgmem.keep(%(memory_id)s, %(kept)s) as changed"

ERASE_SUBJECT: Final = "select pgmem.erase_subject(%(subject)s) as memories"

SET_PROFILE: Final = "select pgmem.set_profile(%(memory_id)s, %(member)s) as changed"

PROFILE: Final = "select * from pgmem.profile(%(subject)s)"

# ------------------------------------------------------------------------- reads

RECALL: Final = """
select r.memory_id, r.content, r.kind, r.score, r.relevance, r.importance, r.recency,
       r.access_boost, r.similarity, r.text_match, r.hops, r.via_memory_id, r.via_link,
       r.session_id, r.status, r.pinned, r.access_count, r.last_accessed_at, r.created_at,
       r.valid_from, r.valid_to, r.metadata, r.subject
from pgmem.recall(
    p_subject => %(subject)s,
    p_query => %(query)s,
    p_embedding => pgmem.query_vector(%(embedding)b::float8[]),
    p_k => %(k)s,
    p_kinds => %(kinds)s::text[],
    p_session_id => %(session_id)s,
    p_since => %(since)s,
    p_until => %(until)s,
    p_as_of => %(as_of)s,
    p_metadata => %(metadata)s::jsonb,
    p_min_score => %(min_score)s,
    p_mmr_lambda => %(mmr_lambda)s,
    p_hops => %(hops)s,
    p_reinforce => %(reinforce)s,
    p_now => %(now)s,
    p_agent_id => %(agent_id)s,
    p_shared_subjects => %(shared_subjects)s::text[]
) as r
"""

CONTEXT: Final = """
select pgmem.context(
    p_subject => %(subject)s,
    p_query => %(query)s,
    p_embedding => pgmem.query_vector(%(embedding)b::float8[]),
    p_token_budget => %(token_budget)s,
    p_k => %(k)s,
    p_kinds => %(kinds)s::text[],
    p_session_id => %(session_id)s,
    p_as_of => %(as_of)s,
    p_min_score => %(min_score)s,
    p_hops => %(hops)s,
    p_reinforce => %(reinforce)s,
    p_now => %(now)s,
    p_since => %(since)s,
    p_until => %(until)s,
    p_agent_id => %(agent_id)s,
    p_shared_subjects => %(shared_subjects)s::text[]
) as context
"""

# The zone a subject's relative dates and question times are read in (26_time_zone.sql).
TIME_ZONE: Final = "select pgmem.time_zone(%(subject)s) as time_zone"

# What resolving a turn's relative dates needs: the zone and how long an appointment
# outlives its day (settings.appointment_grace, revision 0011); and which of the
# turns are scoped to now, with the end of the subject's day (pgmem.now_scoped).
TIME_POLICY: Final = """
select pgmem.time_zone(%(subject)s) as time_zone, s.appointment_grace,
       (select coalesce(pg_catalog.jsonb_object_agg(n.ordinality, n.expires_at), '{}')
        from pgmem.now_scoped(%(subject)s, %(turns)s::text[], %(at)s) as n) as scoped
from pgmem.settings as s
where s.tenant_id in ((select pgmem._require_tenant()), '_default')
order by s.tenant_id = '_default'
limit 1
"""

# The size limit checked before texts are embedded: PM012 as the write would raise it.
CHECK_CONTENT_SIZE: Final = """
select pgmem._check_memory_content(
    %(bytes)s, (pgmem._byte_limits(pgmem._require_tenant())).max_content_bytes, null)
"""

# Which injection rule a text breaks, for a rejected write's reason.
INJECTION_RULE: Final = "select pgmem.detect_injection(%(content)s) as rule"

SET_TIME_ZONE: Final = "select pgmem.set_time_zone(%(subject)s, %(time_zone)s) as time_zone"

GET_MEMORY: Final = "select m.* from pgmem.get_memory(%(memory_id)s) as m"

# Newest first; statuses NULL means every status.
LIST_MEMORIES: Final = """
select m.*
from pgmem.list_memories(
    p_subject => %(subject)s::text,
    p_statuses => %(statuses)s::text[],
    p_kinds => %(kinds)s::text[],
    p_session_id => %(session_id)s::text,
    p_agent_id => %(agent_id)s::text,
    p_metadata => %(metadata)s::jsonb,
    p_limit => %(limit)s,
    p_offset => %(offset)s
) as m
"""

HISTORY: Final = "select e.* from pgmem.history(%(memory_id)s) as e"

SUBJECT_EVENTS: Final = (
    "select e.* from pgmem.subject_events(%(subject)s::text, %(event)s::text) as e"
)

# pgmem.memory_stats has one row per (subject, kind, status); summed here per kind
# and status, for the whole tenant or one subject.
MEMORY_STATS: Final = """
select s.kind, s.status,
       pg_catalog.sum(s.memories)::bigint as memories,
       pg_catalog.count(*) as subjects,
       pg_catalog.sum(s.pinned)::bigint as pinned,
       (pg_catalog.sum(s.avg_importance * s.memories) / pg_catalog.sum(s.memories))::real
           as avg_importance,
       (pg_catalog.sum(s.avg_effective_importance * s.memories) / pg_catalog.sum(s.memories))::real
           as avg_effective_importance,
       pg_catalog.sum(s.accesses)::bigint as accesses,
       pg_catalog.min(s.oldest) as oldest,
       pg_catalog.max(s.newest) as newest,
       pg_catalog.max(s.last_accessed_at) as last_accessed_at
from pgmem.memory_stats as s
where s.tenant_id = (select pgmem._require_tenant())
  and (%(subject)s::text is null or s.subject = %(subject)s::text)
group by s.kind, s.status
order by s.kind, s.status
"""

ARCHIVE_BACKLOG: Final = """
select b.active, b.due_archive_weak, b.due_archive_expired, b.archived, b.deleted, b.due_purge,
       b.oldest_archived_at, b.next_purge_at
from pgmem.archive_backlog as b
where b.tenant_id = (select pgmem._require_tenant())
"""

CAPACITY_USAGE: Final = """
select c.subject, c.held, c.active, c.archived, c.pinned, c.capacity, c.used, c.over_by
from pgmem.capacity_usage as c
where c.tenant_id = (select pgmem._require_tenant())
  and (%(subject)s::text is null or c.subject = %(subject)s::text)
order by c.used desc, c.subject
limit %(limit)s
"""

# ------------------------------------------------------------------------ export

COUNT_EXPORT: Final = """
select pgmem.count_memories(%(subject)s::text, %(statuses)s::text[]) as memories
"""

# Id order: the order memories were written (an import replays supersessions).
EXPORT_MEMORIES: Final = """
select m.* from pgmem.export_memories(%(subject)s::text, %(statuses)s::text[]) as m
"""

# ------------------------------------------------------------------------ store items

PUT_ITEMS: Final = "select * from pgmem.put_items(%(subject)s, %(items)s)"

DELETE_ITEMS: Final = "select * from pgmem.delete_items(%(subject)s, %(keys)s::text[])"

GET_ITEMS: Final = """
select * from pgmem.get_items(%(subject)s, %(keys)s::text[], %(memory_ids)s::bigint[],
                              %(limit)s::integer, %(offset)s, %(refresh)s)
"""

# ------------------------------------------------------------------------ change stream

CHANGE_CHANNEL: Final = "select pgmem.change_channel() as channel"

# Memory.watch listens on the channel pgmem.change_channel named.
LISTEN: Final = sql.SQL("listen {}")

CHANGE_POSITION: Final = "select pgmem.change_position() as position"

CHANGES: Final = """
select * from pgmem.changes(%(after)s::text, %(subject)s::text, %(limit)s::integer)
"""

# ------------------------------------------------------------------------ graph

ENTITIES: Final = "select * from pgmem.entities(%(subject)s, %(limit)s)"

MEMORY_LINKS: Final = "select * from pgmem.memory_links_of(%(memory_id)s)"
