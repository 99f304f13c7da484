"""Every statement the client (:mod:`pgmem.client`) and the memory CLI verbs run, by name.

The engine is the ``pgmem.*`` SQL functions; these statements only call them, or read
the tables and views that row-level security already confines to the bound tenant.
Reads still name the tenant (``m.tenant_id = (select pgmem._require_tenant())``): a
superuser or pgmem_admin bypasses RLS, so without it a service connection bound with
``pgmem.set_tenant`` would read every tenant's rows, and the predicate lets the planner
use the primary keys, which lead with ``tenant_id``. With no tenant bound,
``pgmem._require_tenant()`` fails with PM001 and says how to bind one.

Optional filters are written as ``(%(x)s::type is null or …)`` so each statement is
one fixed text: nothing is assembled from strings at run time. Embeddings travel as
``float8[]`` and are cast in SQL (``::real[]`` for the write path, ``::public.vector``
for recall), so no pgvector adapter has to be registered on a caller's connection.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ARCHIVE_BACKLOG",
    "BIND_TENANT",
    "CAPACITY_USAGE",
    "CONTEXT",
    "COUNT_EXPORT",
    "ENQUEUE",
    "ERASE_SUBJECT",
    "EXPORT_MEMORIES",
    "FORGET",
    "GET_MEMORY",
    "HISTORY",
    "LIST_MEMORIES",
    "MEMORY_STATS",
    "PIN",
    "RECALL",
    "REMEMBER_MANY",
    "SUBJECT_EVENTS",
    "TENANT_DIMS",
    "UPDATE_MEMORY",
]

# A pgmem_service member (superusers count) binds the tenant for this transaction;
# any other role is bound by its login already, and the client compares the answer
# with the tenant it was asked for.
BIND_TENANT: Final = """
select case when pg_catalog.pg_has_role(current_user, 'pgmem_service', 'MEMBER')
            then pgmem.set_tenant(%(tenant)s)
            else pgmem.current_tenant()
       end as tenant,
       pg_catalog.pg_has_role(current_user, 'pgmem_service', 'MEMBER') as can_bind
"""

TENANT_DIMS: Final = """
select s.embedding_dims, s.embedding_model
from pgmem.settings as s
where s.tenant_id = (select pgmem._require_tenant())
"""

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
    p_occurred_at => %(occurred_at)s
) as inbox_id
"""

UPDATE_MEMORY: Final = """
select m.memory_id, m.subject, m.kind, m.content, m.importance, m.status, m.pinned,
       m.triple_subject, m.triple_predicate, m.triple_object, m.metadata,
       m.embedding is not null as embedded, m.updated_at
from pgmem.update_memory(
    p_memory_id => %(memory_id)s,
    p_content => %(content)s,
    p_embedding => %(embedding)s::real[],
    p_importance => %(importance)s::real,
    p_kind => %(kind)s,
    p_metadata => %(metadata)s,
    p_triple_subject => %(triple_subject)s,
    p_triple_predicate => %(triple_predicate)s,
    p_triple_object => %(triple_object)s
) as m
"""

FORGET: Final = "select pgmem.forget(%(memory_id)s) as changed"

PIN: Final = "select pgmem.pin(%(memory_id)s, %(pinned)s) as changed"

ERASE_SUBJECT: Final = "select pgmem.erase_subject(%(subject)s) as memories"

# ------------------------------------------------------------------------- reads

RECALL: Final = """
select r.memory_id, r.content, r.kind, r.score, r.relevance, r.importance, r.recency,
       r.access_boost, r.similarity, r.text_match, r.hops, r.via_memory_id, r.via_link,
       r.session_id, r.status, r.pinned, r.access_count, r.last_accessed_at, r.created_at,
       r.valid_from, r.valid_to, r.metadata
from pgmem.recall(
    p_subject => %(subject)s,
    p_query => %(query)s,
    p_embedding => %(embedding)s::real[]::public.vector,
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
    p_reinforce => %(reinforce)s
) as r
"""

CONTEXT: Final = """
select pgmem.context(
    p_subject => %(subject)s,
    p_query => %(query)s,
    p_embedding => %(embedding)s::real[]::public.vector,
    p_token_budget => %(token_budget)s,
    p_k => %(k)s,
    p_kinds => %(kinds)s::text[],
    p_session_id => %(session_id)s,
    p_as_of => %(as_of)s,
    p_min_score => %(min_score)s,
    p_hops => %(hops)s,
    p_reinforce => %(reinforce)s
) as context
"""

GET_MEMORY: Final = """
select m.memory_id, m.subject, m.agent_id, m.session_id, m.kind, m.content, m.importance,
       m.effective_importance, m.confidence, m.source, m.triple_subject, m.triple_predicate,
       m.triple_object, m.valid_from, m.valid_to, m.status, m.status_changed_at, m.pinned,
       m.access_count, m.last_accessed_at, m.expires_at, m.metadata, m.created_at, m.updated_at,
       m.embedding is not null as embedded
from pgmem.memories as m
where m.tenant_id = (select pgmem._require_tenant()) and m.memory_id = %(memory_id)s
"""

# Newest first; statuses NULL means every status.
LIST_MEMORIES: Final = """
select m.memory_id, m.subject, m.agent_id, m.session_id, m.kind, m.content, m.importance,
       m.effective_importance, m.source, m.triple_subject, m.triple_predicate, m.triple_object,
       m.valid_from, m.valid_to, m.status, m.pinned, m.access_count, m.last_accessed_at,
       m.metadata, m.created_at, m.updated_at
from pgmem.memories as m
where m.tenant_id = (select pgmem._require_tenant())
  and (%(subject)s::text is null or m.subject = %(subject)s::text)
  and (%(statuses)s::text[] is null or m.status = any (%(statuses)s::text[]))
  and (%(kinds)s::text[] is null or m.kind = any (%(kinds)s::text[]))
  and (%(session_id)s::text is null or m.session_id = %(session_id)s::text)
  and (%(agent_id)s::text is null or m.agent_id = %(agent_id)s::text)
  and (%(metadata)s::jsonb is null or m.metadata @> %(metadata)s::jsonb)
order by m.memory_id desc
limit %(limit)s offset %(offset)s
"""

# History outlives a purged memory (memory_events has no foreign key to it).
HISTORY: Final = """
select e.event_id, e.memory_id, e.subject, e.event, e.actor, e.old_content, e.new_content,
       e.details, e.created_at
from pgmem.memory_events as e
where e.tenant_id = (select pgmem._require_tenant()) and e.memory_id = %(memory_id)s
order by e.created_at, e.event_id
"""

# Events about a subject that are not tied to one memory's history view, e.g.
# the 'reject' events of prompt-injection text (which keep no content).
SUBJECT_EVENTS: Final = """
select e.event_id, e.memory_id, e.event, e.actor, e.details, e.created_at
from pgmem.memory_events as e
where e.tenant_id = (select pgmem._require_tenant()) and e.subject = %(subject)s
  and (%(event)s::text is null or e.event = %(event)s)
order by e.created_at, e.event_id
"""

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
select pg_catalog.count(*) as memories
from pgmem.memories as m
where m.tenant_id = (select pgmem._require_tenant())
  and (%(subject)s::text is null or m.subject = %(subject)s::text)
  and (%(statuses)s::text[] is null or m.status = any (%(statuses)s::text[]))
"""

# Everything needed to rebuild a memory elsewhere, in id order (the order it was
# written, so an import replays supersessions in the same order).
EXPORT_MEMORIES: Final = """
select m.memory_id, m.subject, m.agent_id, m.session_id, m.kind, m.content,
       m.embedding::real[] as embedding, m.importance, m.effective_importance, m.confidence,
       m.source, m.triple_subject, m.triple_predicate, m.triple_object, m.valid_from,
       m.valid_to, m.status, m.status_changed_at, m.pinned, m.access_count,
       m.last_accessed_at, m.expires_at, m.metadata, m.created_at, m.updated_at
from pgmem.memories as m
where m.tenant_id = (select pgmem._require_tenant())
  and (%(subject)s::text is null or m.subject = %(subject)s::text)
  and (%(statuses)s::text[] is null or m.status = any (%(statuses)s::text[]))
order by m.memory_id
"""
