"""Kept memories: application state that maintenance leaves alone.

- memories.kept: a memory an application keeps as state (the LangGraph
  store's items, pgmem.keep) never decays, is never archived, expired or
  evicted, and does not count towards settings.capacity_per_subject. Unlike
  a pinned memory it is not part of the core profile: it is kept, not
  shown in every prompt.
- memory_events.event gains keep and unkeep (pgmem.keep's history).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04
"""

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

EVENTS = (
    "'insert', 'reinforce', 'deduplicate', 'merge', 'supersede', 'archive', 'restore', "
    "'delete', 'erase', 'pin', 'unpin', 'update', 'reject', 'purge', 'embed', 'evict', 'conflict'"
)


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        f"""
        alter table pgmem.memories add column kept boolean not null default false;
        comment on column pgmem.memories.kept is
            'Application state (pgmem.keep; the LangGraph store''s items): never decayed, archived, expired or evicted, and not counted towards capacity_per_subject.';
        grant update (kept) on pgmem.memories to pgmem_app;
        alter table pgmem.memory_events
            drop constraint memory_events_event_check,
            add constraint memory_events_event_check
                check (event = any (array[{EVENTS}, 'keep', 'unkeep']));
        """
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        f"""
        delete from pgmem.memory_events where event in ('keep', 'unkeep');
        alter table pgmem.memory_events
            drop constraint memory_events_event_check,
            add constraint memory_events_event_check check (event = any (array[{EVENTS}]));
        alter table pgmem.memories drop column kept;
        """
    )
    op.execute("reset role")
