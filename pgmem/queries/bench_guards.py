"""Statements of the guard-trigger benchmark (:mod:`pgmem.lab.guard_bench`), by name."""

from __future__ import annotations

from typing import Final

# One statement per round: each turn through pgmem.remember (text only, no vector), as
# the tenant's app role, so the round's time is the write path's and not the network's.
REMEMBER_ROUND: Final = """
select pg_catalog.count(*) as writes
from rows from (pg_catalog.unnest(%(subjects)s::text[]), pg_catalog.unnest(%(contents)s::text[]))
    as t(subject, content)
cross join lateral pgmem.remember(t.subject, t.content) as r
"""
# The row triggers of alembic revision 0002 that pgmem.remember's writes fire (the inbox
# guard is not on this path). Table owner only: the benchmark's admin connection.
DISABLE_GUARDS: Final = """
alter table pgmem.memories disable trigger memories_guard;
alter table pgmem.memory_events disable trigger memory_events_guard
"""
ENABLE_GUARDS: Final = """
alter table pgmem.memories enable trigger memories_guard;
alter table pgmem.memory_events enable trigger memory_events_guard
"""
