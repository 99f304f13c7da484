"""What a `pgmem worker --once` run has ahead of it, for its progress bars
(:mod:`pgmem.cli.worker`): inbox jobs due now and active memories without a vector,
for one tenant or (NULL) every tenant the connection's role may see."""

from __future__ import annotations

from typing import Final

BACKLOG: Final = """
select (select pg_catalog.count(*) from pgmem.inbox as i
        where i.status = 'pending' and i.available_at <= pg_catalog.now()
          and (%(tenant)s::text is null or i.tenant_id = %(tenant)s::text)) as jobs,
       (select pg_catalog.count(*) from pgmem.memories as m
        where m.status = 'active' and m.embedding is null
          and (%(tenant)s::text is null or m.tenant_id = %(tenant)s::text)) as unembedded
"""
