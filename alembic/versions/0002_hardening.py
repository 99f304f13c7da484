"""Hardening the trust boundary.

- App roles lose table-level UPDATE and DELETE on the tenant tables: with
  them any tenant could `LOCK TABLE … IN ACCESS EXCLUSIVE MODE` and stall every
  other tenant. They keep INSERT (at most ROW EXCLUSIVE, which blocks no reader
  or writer) and get UPDATE on the columns only (column privileges allow
  UPDATE and SELECT … FOR UPDATE, but not LOCK TABLE). Deletes go through
  owner-rights functions that check the caller's tenant (pgmem.erase_subject,
  pgmem.purge).
- Row triggers on memories, memory_events and inbox (bodies in
  sql/functions/70_guards_triggers.sql): a direct write gets the write path's checks.
- pgmem._job_locks: the maintenance lock is a row lock in a table only its
  owner can touch, not an advisory key any role can compute and hold.
- settings.failed_retention: how long failed inbox jobs are kept.
- Embeddings whose norm makes cosine similarity degenerate in single
  precision are cleared (the worker embeds those memories again).
- Tenant login roles get lock_timeout/statement_timeout/idle-in-transaction
  defaults.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Columns an app role may update, per table (generated and identity columns
# cannot be updated anyway). tenant_id is listed so that an attempt to move a
# row meets row-level security's WITH CHECK, as before, not a privilege error.
UPDATABLE = {
    "subjects": "tenant_id, created_at",
    "memories": "tenant_id, subject, agent_id, session_id, kind, content, embedding, importance, effective_importance, "
    "confidence, source, triple_subject, triple_predicate, triple_object, valid_from, valid_to, status, "
    "status_changed_at, pinned, access_count, last_accessed_at, expires_at, metadata, created_at, updated_at",
    "memory_links": "tenant_id, weight, created_at",
    "inbox": "tenant_id, job, subject, session_id, agent_id, payload, status, attempts, last_error, available_at, "
    "created_at, finished_at",
}

# The trigger functions are replaced by sql/functions/70_guards_triggers.sql at
# the end of the same migration; CREATE TRIGGER needs them to exist first.
STUB = """
create or replace function pgmem.{name}() returns trigger
language plpgsql security invoker set search_path = pg_catalog, pg_temp
as $$ begin return new; end $$;
"""

TIMEOUTS = """
do $$
declare
    v_role name;
begin
    for v_role in select l.role_name from pgmem._tenant_logins as l
                  join pg_catalog.pg_roles as r on r.rolname = l.role_name loop
        execute format('alter role %I {action} lock_timeout {lock}', v_role);
        execute format('alter role %I {action} statement_timeout {statement}', v_role);
        execute format('alter role %I {action} idle_in_transaction_session_timeout {idle}', v_role);
    end loop;
end
$$;
"""


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    for table, columns in UPDATABLE.items():
        op.execute(f"revoke update, delete on pgmem.{table} from pgmem_app")
        op.execute(f"grant update ({columns}) on pgmem.{table} to pgmem_app")
    for name in ("_memories_guard", "_memory_events_guard", "_inbox_guard"):
        op.execute(STUB.format(name=name))
    op.execute(
        """
create trigger memories_guard before insert or update on pgmem.memories
    for each row execute function pgmem._memories_guard();
create trigger memory_events_guard before insert on pgmem.memory_events
    for each row execute function pgmem._memory_events_guard();
create trigger inbox_guard before insert or update on pgmem.inbox
    for each row execute function pgmem._inbox_guard();

-- One row per maintenance job; run_job locks it FOR UPDATE SKIP LOCKED.
-- No privilege for anyone but the owner: no tenant can hold it.
create table pgmem._job_locks (
    job text primary key check (job in ('archive', 'decay', 'capacity', 'purge'))
);
insert into pgmem._job_locks (job) values ('archive'), ('decay'), ('capacity'), ('purge');

-- Failed jobs keep the turn (redacted) for inspection and retry, not forever.
alter table pgmem.settings
    add column failed_retention interval not null default '30 days'
        check (failed_retention > interval '0');

-- Degenerate vectors (norm outside [1e-15, 1e15]) matched every later fact as
-- a duplicate; the worker embeds these memories again.
update pgmem.memories set embedding = null
where embedding is not null
  and (public.vector_norm(embedding) not between 1e-15 and 1e15
       or public.vector_norm(embedding) = 'NaN'::double precision);
"""
    )
    op.execute("reset role")
    # ALTER ROLE needs CREATEROLE, which pgmem_admin does not have.
    op.execute(
        TIMEOUTS.format(action="set", lock="= ''5s''", statement="= ''60s''", idle="= ''60s''")
    )


def downgrade() -> None:
    op.execute(TIMEOUTS.format(action="reset", lock="", statement="", idle=""))
    op.execute("set local role pgmem_admin")
    op.execute(
        """
alter table pgmem.settings drop column failed_retention;
drop table pgmem._job_locks;
drop trigger inbox_guard on pgmem.inbox;
drop trigger memory_events_guard on pgmem.memory_events;
drop trigger memories_guard on pgmem.memories;
"""
    )
    for table, columns in UPDATABLE.items():
        op.execute(f"revoke update ({columns}) on pgmem.{table} from pgmem_app")
        op.execute(f"grant update, delete on pgmem.{table} to pgmem_app")
    op.execute("reset role")
