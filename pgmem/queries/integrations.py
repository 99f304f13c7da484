"""Statements of the agent integrations: ``pgmem mcp`` and the LangGraph store
(:mod:`pgmem.integrations`). Everything else they run is the client's
(:mod:`pgmem.queries.client`), through :class:`pgmem.Memory`."""

from __future__ import annotations

from typing import Final

__all__ = ["CURRENT_TENANT", "LANGGRAPH_NAMESPACES", "LOCK_LANGGRAPH_NAMESPACES"]

# The tenant a connection acts for after binding (NULL: none); the MCP server refuses
# to start without one.
CURRENT_TENANT: Final = "select pgmem.current_tenant() as tenant"

# Subjects holding LangGraph store items (metadata key langgraph_keys; a memory merged
# into a near-duplicate keeps its items), under a dotted namespace prefix (LangGraph
# forbids '.' inside a namespace label, so the dotted form of a namespace is unambiguous).
LANGGRAPH_NAMESPACES: Final = """
select distinct m.subject
from pgmem.memories as m
where m.tenant_id = (select pgmem._require_tenant())
  and m.status in ('active', 'merged')
  and m.metadata ? 'langgraph_keys'
  and (%(prefix)s::text is null
       or m.subject = %(prefix)s::text
       or pg_catalog.left(m.subject, pg_catalog.length(%(prefix)s::text) + 1)
          = %(prefix)s::text || '.')
order by m.subject
"""

# A store write looks for the memory holding a key, then writes: without this lock two
# sessions putting the same key at once would each find none and both insert. It is
# the row lock every write about a subject takes (pgmem._lock_subjects: the tenant's
# own subjects rows, in subject order, to the end of the transaction), so no other
# tenant can take it, as any role could an advisory key.
LOCK_LANGGRAPH_NAMESPACES: Final = """
select pgmem._lock_subjects((select pgmem._require_tenant()), %(subjects)s::text[],
                            pg_catalog.now())
"""
