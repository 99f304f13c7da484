"""Statements of the agent integrations: ``pgmem mcp`` and the LangGraph store
(:mod:`pgmem.integrations`). Everything else they run is the client's
(:mod:`pgmem.queries.client`), through :class:`pgmem.Memory`."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CURRENT_TENANT",
    "ITEM_NAMESPACES",
    "JOB_STATUS",
    "LIST_SUBJECTS",
    "MCP_TOKEN",
    "QUEUE_HEALTH",
]

# The tenant a connection acts for after binding (NULL: none); the MCP server refuses
# to start without one.
CURRENT_TENANT: Final = "select pgmem.current_tenant() as tenant"

# Subjects holding live store items, under a dotted namespace prefix (LangGraph
# forbids '.' inside a namespace label, so the dotted form of a namespace is
# unambiguous).
ITEM_NAMESPACES: Final = """
select distinct m.subject
from pgmem.memories as m
where m.tenant_id = (select pgmem._require_tenant())
  and m.status = 'active' and m.source = 'store'
  and (m.expires_at is null or m.expires_at > pg_catalog.now())
  and (%(prefix)s::text is null
       or m.subject = %(prefix)s::text
       or pg_catalog.left(m.subject, pg_catalog.length(%(prefix)s::text) + 1)
          = %(prefix)s::text || '.')
order by m.subject
"""

# What a bearer token of pgmem mcp acts for (no row: unknown, revoked, or of a tenant
# this session may not act for).
MCP_TOKEN: Final = "select * from pgmem.mcp_token(%(token)s)"

# list_users: the tenant's subjects holding active memories (or the one fixed subject).
LIST_SUBJECTS: Final = """
select m.subject as user, pg_catalog.count(*) as memories,
       pg_catalog.max(m.updated_at) as last_changed
from pgmem.memories as m
where m.tenant_id = (select pgmem._require_tenant()) and m.status = 'active'
  and (%(subject)s::text is null or m.subject = %(subject)s::text)
group by m.subject
order by last_changed desc, m.subject
limit %(limit)s offset %(offset)s
"""

# job_status: one queued job of the tenant (of the fixed subject only, when there is one).
JOB_STATUS: Final = """
select i.inbox_id, i.job, i.subject as user, i.session_id, i.status, i.attempts, i.last_error,
       i.created_at, i.finished_at
from pgmem.inbox as i
where i.tenant_id = (select pgmem._require_tenant()) and i.inbox_id = %(inbox_id)s
  and (%(subject)s::text is null or i.subject = %(subject)s::text)
"""

# health: the tenant's queue.
QUEUE_HEALTH: Final = """
select pg_catalog.count(*) filter (where i.status = 'pending') as queued_jobs,
       pg_catalog.count(*) filter (where i.status = 'failed') as failed_jobs,
       pg_catalog.min(i.created_at) filter (where i.status = 'pending') as oldest_queued
from pgmem.inbox as i
where i.tenant_id = (select pgmem._require_tenant())
"""
