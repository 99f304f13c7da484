"""A stated turn's association links are made after its write, by a job.

A new memory is linked to the active memories of its session and to those
naming one of its entities (pgmem._link_at_write). For a stated turn that
read every turn of its session and their links: 0.4-1.2 ms of a 4-6 ms write
at sessions of 25 turns, ~1.1 ms more at 150-200. An episode's links are
needed only by ripple recall, so they can wait: the write path now records the
subject's oldest unlinked episode in pgmem.subjects.links_pending_from, and
pgmem.link_episodes (the 'links' maintenance job, every minute under pg_cron,
and the worker after each batch) links them in the order they were written.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-07
"""

from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

JOB_LOCK = """
alter table pgmem._job_locks drop constraint _job_locks_job_check;
alter table pgmem._job_locks add constraint _job_locks_job_check check (job in ({jobs}));
"""
JOBS = "'archive', 'decay', 'capacity', 'purge', 'sessions', 'consolidate', 'watchdog'"


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(
        """
        alter table pgmem.subjects add column links_pending_from bigint;
        comment on column pgmem.subjects.links_pending_from is
            'The subject''s oldest episode whose association links are still to be made (pgmem.link_episodes); NULL: none.';
        create index subjects_links_pending on pgmem.subjects (tenant_id, subject)
            where links_pending_from is not null;
        grant update (links_pending_from) on pgmem.subjects to pgmem_app;
        """
    )
    op.execute(JOB_LOCK.format(jobs=JOBS + ", 'links'"))
    op.execute("insert into pgmem._job_locks (job) values ('links')")
    op.execute("reset role")


UNSCHEDULE = """
do $$
begin
    if pg_catalog.to_regclass('cron.job') is not null then
        perform cron.unschedule(j.jobid) from cron.job as j
        where j.jobname = 'pgmem-links' and j.database = pg_catalog.current_database();
    end if;
end
$$;
"""


def downgrade() -> None:
    # The job would fail every minute on a schema that no longer knows it.
    op.execute(UNSCHEDULE)
    op.execute("set local role pgmem_admin")
    op.execute("delete from pgmem.job_runs where job = 'links'")
    op.execute("delete from pgmem._job_locks where job = 'links'")
    op.execute(JOB_LOCK.format(jobs=JOBS))
    op.execute(
        """
        revoke update (links_pending_from) on pgmem.subjects from pgmem_app;
        drop index pgmem.subjects_links_pending;
        alter table pgmem.subjects drop column links_pending_from;
        """
    )
    op.execute("reset role")
