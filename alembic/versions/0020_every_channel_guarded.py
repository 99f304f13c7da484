"""Guards on the channels that had none: session summaries, blank subjects.

- session_summaries gets a row trigger (body in sql/functions/70_guards_triggers.sql):
  a summary is size-checked, redacted, and a line the injection rules flag
  is withheld, for every writer, as the other layers' text is.
- subjects refuses a subject with no visible character (a zero-width space
  passed the blank check); NOT VALID, so an upgrade never fails on an old row.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03
"""

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# Replaced by sql/functions/70_guards_triggers.sql at the end of the same migration.
STUB = """
create or replace function pgmem._session_summaries_guard() returns trigger
language plpgsql security invoker set search_path = pg_catalog, pg_temp
as $$ begin return new; end $$;
"""
VISIBLE = (
    "check (pg_catalog.regexp_replace(subject,"
    " '[[:space:]\\u00ad\\u180e\\u200b-\\u200f\\u2028-\\u202f\\u2060-\\u2064\\ufeff]', '', 'g') <> '')"
)


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(STUB)
    op.execute(
        "create trigger session_summaries_guard before insert or update on pgmem.session_summaries"
        " for each row execute function pgmem._session_summaries_guard()"
    )
    op.execute(f"alter table pgmem.subjects add constraint subjects_visible {VISIBLE} not valid")
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("alter table pgmem.subjects drop constraint subjects_visible")
    op.execute("drop trigger session_summaries_guard on pgmem.session_summaries")
    op.execute("drop function pgmem._session_summaries_guard()")
    op.execute("reset role")
