"""Statements of the agent integrations: ``pgmem mcp`` and the LangGraph store
(:mod:`pgmem.integrations`). Everything else they run is the client's
(:mod:`pgmem.queries.client`), through :class:`pgmem.Memory`."""

from __future__ import annotations

from typing import Final

__all__ = ["CURRENT_TENANT", "ITEM_NAMESPACES", "MCP_TOKEN"]

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
