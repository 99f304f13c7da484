"""Time zones for time expressions.

Relative dates ("next Friday", 下周三) are resolved at write against the turn's time,
and times in questions ("last week", 昨天) become recall windows, in the day of a
time zone: the subject's own when it has one, else its tenant's (default UTC).

- settings.time_zone: the tenant's IANA zone name ('UTC' by default); the CHECK asks
  PostgreSQL's own zone database (timezone() raises 22023 for an unknown name).
- subjects.time_zone: a subject's own zone, NULL to follow the tenant; app roles may
  update it (pgmem.set_time_zone), as they may insert subjects.
- settings.appointment_grace: how long after the last day a future fact names ("next
  Friday I fly to Berlin") it expires; a day keeps "how was the flight?" answerable.

Revision ID: 0011
Revises: 0010 (0005 on main; re-chained after merging m-truth's 0008)
Create Date: 2026-12-01
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
alter table pgmem.settings
    add column time_zone text not null default 'UTC'
        check (pg_catalog.timezone(time_zone, timestamptz '2000-01-01 00:00+00') is not null);
alter table pgmem.settings
    add column appointment_grace interval not null default '1 day'
        check (appointment_grace >= interval '0');
alter table pgmem.subjects
    add column time_zone text
        check (time_zone is null
               or pg_catalog.timezone(time_zone, timestamptz '2000-01-01 00:00+00') is not null);
grant update (time_zone) on pgmem.subjects to pgmem_app;
"""
    )
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
revoke update (time_zone) on pgmem.subjects from pgmem_app;
alter table pgmem.subjects drop column time_zone;
alter table pgmem.settings drop column appointment_grace, drop column time_zone;
"""
    )
    op.execute("reset role")
