"""A memory change stream: a notification per tenant, and a publication.

Every change of a memory is already a row of pgmem.memory_events (append-only).
This makes the stream consumable:

- pgmem._change_channels: each tenant's notification channel, a name made of
  random hex (owner only). LISTEN takes any name, so the name is the secret: a
  tenant learns its own from pgmem.change_channel() and no other.
- memory_events_notify: after each statement that adds events, one
  pg_notify on the channel of each tenant concerned (that asked for one), the
  payload its newest event_id. Listeners read the events themselves, under
  row-level security (pgmem.changes).
- memory_events.xact: the transaction that recorded the event (xid8; NULL for
  events older than this revision). Event ids are drawn when a row is
  inserted, not when it commits, so a reader that follows ids alone misses an
  event whose transaction commits after a later one's; pgmem.changes follows
  (xact, event_id) and stops at the oldest transaction still running, so a
  consumer sees every event once, in an order no later commit goes back on.
  Index memory_events_stream serves it.
- Publication pgmem_changes: the inserts of pgmem.memory_events, for logical
  replication (every tenant's: a replication consumer is an administrator's).
  Created when the migrating role may create publications and the database is
  not distributed by Citus; a per-tenant one filters rows (README).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-04
"""

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

PUBLICATION = """
do $$
begin
    if exists (select from pg_catalog.pg_extension where extname = 'citus') then
        raise notice 'publication pgmem_changes not created: on Citus, consume the shards'' changes';
    elsif pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE') then
        create publication pgmem_changes for table pgmem.memory_events with (publish = 'insert');
    else
        raise notice 'publication pgmem_changes not created: % may not create publications here', current_user;
    end if;
end
$$;
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        create table pgmem._change_channels (
            -- No foreign key to tenants: on Citus this table stays on the
            -- coordinator, beside the reference table (pgmem.drop_tenant
            -- deletes a tenant's row).
            tenant_id text primary key,
            channel   text not null
                      default 'pgmem_changes_' || pg_catalog.md5(pg_catalog.gen_random_uuid()::text)
        );
        revoke all on pgmem._change_channels from public, pgmem_app, pgmem_service, pgmem_readonly;
        -- Row-level security with no policy, as for every table keyed by tenant:
        -- only the owner (BYPASSRLS) reads it.
        alter table pgmem._change_channels enable row level security, force row level security;
        -- No default for the rows already there (a volatile default would
        -- rewrite the table), then the default for every new one.
        alter table pgmem.memory_events add column xact xid8;
        alter table pgmem.memory_events alter column xact set default pg_catalog.pg_current_xact_id();
        create index memory_events_stream on pgmem.memory_events (tenant_id, xact, event_id);
        comment on column pgmem.memory_events.xact is
            'The transaction that recorded the event (NULL before revision 0026): pgmem.changes reads events in (xact, event_id) order, up to the oldest transaction still running.';
        comment on table pgmem._change_channels is
            'Each tenant''s notification channel for memory changes, a random name (owner only; pgmem.change_channel).';
        """
    )
    op.execute("reset role")
    # The trigger's function is created with the other functions, after the
    # revisions: the trigger is created here, checked when it first fires.
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        create or replace function pgmem._notify_changes() returns trigger
        language plpgsql as $$ begin return null; end $$;
        create trigger memory_events_notify after insert on pgmem.memory_events
            referencing new table as added
            for each statement execute function pgmem._notify_changes();
        """
    )
    op.execute("reset role")
    op.execute(PUBLICATION)


def downgrade() -> None:
    op.execute("drop publication if exists pgmem_changes")
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        drop trigger memory_events_notify on pgmem.memory_events;
        drop function pgmem._notify_changes();
        drop table pgmem._change_channels;
        drop index pgmem.memory_events_stream;
        alter table pgmem.memory_events drop column xact;
        """
    )
    op.execute("reset role")
