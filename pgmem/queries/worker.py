"""Every statement the worker (:mod:`pgmem.worker`) runs, by name."""

from __future__ import annotations

from typing import Final

# pgmem.enqueue notifies this channel (sql/functions/60_queue.sql).
CHANNEL: Final = "pgmem_inbox"


SESSION: Final = """
select current_user as role, pgmem._bypasses_rls() as bypasses_rls,
       pg_has_role(current_user, 'pgmem_service', 'MEMBER') as can_bind,
       pgmem.current_tenant() as bound_tenant
"""
DROP_TO_SERVICE: Final = "set role pgmem_service"
LISTEN: Final = f"listen {CHANNEL}"
CLAIM_JOBS: Final = "select * from pgmem.claim_jobs(%(limit)s, p_model => %(model)s)"
FINISH_JOB: Final = "select pgmem.finish_job(%(tenant)s, %(inbox_id)s, %(result)s)"
FAIL_JOB: Final = (
    "select pgmem.fail_job(%(tenant)s, %(inbox_id)s, %(error)s, %(max_attempts)s) as status"
)
LOAD_MEMORIES: Final = """
select m.memory_id, m.content, m.status
from pgmem.memories as m
where m.tenant_id = %(tenant)s and m.memory_id = any(%(ids)s::bigint[])
"""
# A re-embed job's vectors (sql/functions/66_models.sql): staged, and swapped in with
# the tenant's model by the job that stages the last one.
STAGE_REEMBED: Final = """
select pgmem.stage_reembed(%(model)s::text, %(ids)s::bigint[], %(embeddings)b::real[]) as state
"""
MERGE: Final = """
select r.action, r.keep_id, r.other_id, r.content_changed
from pgmem.merge(%(keep_id)s::bigint, %(other_id)s::bigint, %(content)s::text,
                 %(embedding)s::real[]) as r
"""
CLAIM_UNEMBEDDED: Final = "select * from pgmem.claim_unembedded(%(limit)s, %(model)s)"
SET_EMBEDDING: Final = (
    "select pgmem.set_embedding(%(memory_id)s::bigint, %(embedding)s::real[], %(model)s::text)"
)
# A job's budget in the database (pgmem.worker's job_timeout): local to the batch
# transaction, and undone with the job's savepoint if the job fails.
SET_STATEMENT_TIMEOUT: Final = (
    "select pg_catalog.set_config('statement_timeout', %(timeout)s, true)"
)
# Which row a merge without an LLM keeps: the newer, if the confidence rule lets it.
MERGE_KEEPER: Final = (
    "select pgmem.merge_keeper(%(stored_id)s::bigint, %(new_id)s::bigint) as keep_id"
)
RESOLVE_CONFLICT: Final = """
select r.action, r.memory_id, r.other_id
from pgmem.resolve_conflict(%(memory_id)s::bigint, %(other_id)s::bigint, %(decision)s::text,
                            %(content)s::text, null::real[], %(labels)s::jsonb) as r
"""
# Consolidation (sql/functions/32_consolidate.sql, pgmem/consolidate.py).
CONSOLIDATION_CLUSTERS: Final = """
select c.cluster, c.memory_ids, c.contents, c.first_at, c.last_at, c.digest
from pgmem.consolidation_clusters(%(subject)s, %(now)s::timestamptz) as c
"""
CONSOLIDATE: Final = """
select r.action, r.insight_id, r.sources, r.source_action
from pgmem.consolidate(%(subject)s, %(source_ids)s::bigint[], %(content)s, %(embedding)s::real[],
                       %(method)s, %(now)s::timestamptz) as r
"""

LINK_EPISODES: Final = """
select subjects, episodes, links
from pgmem.link_episodes(p_tenant => %(tenant)s, p_subjects => %(subjects)s::text[])
"""
