"""A watchdog that ends a tenant session idle in a transaction past its limit.

A tenant's login role gets idle_in_transaction_session_timeout as a default,
which the tenant may change (ALTER ROLE itself, or SET): an open transaction
left idle then held back VACUUM of every tenant's dead rows. The limit is now
the server's: settings.max_idle_in_transaction (not writable by tenants), and
a 'watchdog' maintenance job, every minute under pg_cron, terminates a tenant
login's backend idle in a transaction for longer. pgmem_admin, the job's
owner, is made a member of pg_signal_backend (which may signal only
non-superuser backends) and pg_read_all_stats (to see their state) when a
superuser migrates.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03
"""

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

JOB_LOCK = """
alter table pgmem._job_locks drop constraint _job_locks_job_check;
alter table pgmem._job_locks add constraint _job_locks_job_check check (job in ({jobs}));
"""
JOBS = "'archive', 'decay', 'capacity', 'purge', 'sessions', 'consolidate'"

SIGNAL = """
do $$
begin
    if (select r.rolsuper from pg_catalog.pg_roles as r where r.rolname = current_user) then
        grant pg_signal_backend, pg_read_all_stats to pgmem_admin;
    else
        raise notice 'pgmem_admin is not made a member of pg_signal_backend (needs a superuser): '
                     'the watchdog job can see idle tenant transactions but not end them';
    end if;
end
$$;
"""


def upgrade() -> None:
    op.execute(SIGNAL)
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        alter table pgmem.settings
            add column max_idle_in_transaction interval not null default '60 seconds'
                check (max_idle_in_transaction > interval '0');
        """
    )
    op.execute(JOB_LOCK.format(jobs=JOBS + ", 'watchdog'"))
    op.execute("insert into pgmem._job_locks (job) values ('watchdog')")
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute("delete from pgmem.job_runs where job = 'watchdog'")
    op.execute("delete from pgmem._job_locks where job = 'watchdog'")
    op.execute(JOB_LOCK.format(jobs=JOBS))
    op.execute("alter table pgmem.settings drop column max_idle_in_transaction")
    op.execute("reset role")
    op.execute(
        "do $$ begin if (select rolsuper from pg_roles where rolname = current_user) then"
        " revoke pg_signal_backend, pg_read_all_stats from pgmem_admin; end if; end $$"
    )
