"""The trust boundary of 0002 for the session and task tables of 0003.

0003 gave pgmem_app table-level UPDATE and DELETE on sessions,
session_messages, session_summaries, tasks and task_steps again, so a tenant
could `LOCK TABLE pgmem.session_messages IN ACCESS EXCLUSIVE MODE` and stall
every tenant's appends, and a direct INSERT skipped append_message's checks.
As 0002 did for the long-term tables:

- App roles lose table-level UPDATE and DELETE on the five tables and get
  UPDATE on the columns the session and task functions write. Turns
  (session_messages), summary versions and recorded steps are append-only
  for them. Deletes (turn retention, clearing a finished or expired task's
  steps) go through owner-rights helpers that check the caller's tenant
  (sql/functions/71_owner_writes.sql); erase_subject already cascades from
  subjects with the owner's rights.
- Row triggers (bodies in sql/functions/70_guards_triggers.sql) give direct writes
  the write path's checks: a session's agent id gets the 256-character
  limit of the other tables; turns get role, emptiness, max_turn_bytes,
  metadata size, redaction and their token count; tasks and steps get size
  limits on their text and JSON.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

LAYER_TABLES = ("sessions", "session_messages", "session_summaries", "tasks", "task_steps")

# Columns an app role may update, per table: what append_message, close_session,
# claim_folds, save_summary, expire_sessions, set_task, record_step, fail_step,
# finish_task and expire_tasks write (ON CONFLICT DO UPDATE included). tenant_id
# is listed so that moving a row meets row-level security's WITH CHECK, as 0002.
UPDATABLE = {
    "sessions": "tenant_id, agent_id, status, next_seq, summarized_through, unsummarized_turns, "
    "unsummarized_tokens, fold_lease_until, last_active_at, closed_at",
    "tasks": "tenant_id, plan, current_step, status, variables, retries, expires_at, outcome, learned_rule, "
    "memory_id, updated_at, finished_at",
}

# Replaced by sql/functions/70_guards_triggers.sql at the end of the same migration;
# CREATE TRIGGER needs them to exist first.
STUB = """
create or replace function pgmem.{name}() returns trigger
language plpgsql security invoker set search_path = pg_catalog, pg_temp
as $$ begin return new; end $$;
"""

TRIGGERS = {
    "sessions": "_sessions_guard",
    "session_messages": "_session_messages_guard",
    "tasks": "_tasks_guard",
    "task_steps": "_task_steps_guard",
}


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    for table in LAYER_TABLES:
        op.execute(f"revoke update, delete on pgmem.{table} from pgmem_app")
    for table, columns in UPDATABLE.items():
        op.execute(f"grant update ({columns}) on pgmem.{table} to pgmem_app")
    for table, function in TRIGGERS.items():
        op.execute(STUB.format(name=function))
        op.execute(
            f"create trigger {table}_guard before insert or update on pgmem.{table}"
            f" for each row execute function pgmem.{function}()"
        )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    for table, function in TRIGGERS.items():
        op.execute(f"drop trigger {table}_guard on pgmem.{table}")
        op.execute(f"drop function pgmem.{function}()")
    for table, columns in UPDATABLE.items():
        op.execute(f"revoke update ({columns}) on pgmem.{table} from pgmem_app")
    # As 0003 granted them.
    op.execute(
        "grant update, delete on pgmem.sessions, pgmem.session_messages, pgmem.tasks to pgmem_app"
    )
    op.execute("grant delete on pgmem.session_summaries, pgmem.task_steps to pgmem_app")
    op.execute("reset role")
