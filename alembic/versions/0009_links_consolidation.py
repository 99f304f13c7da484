"""Association links at write and consolidation into insights.

- settings: how many association links (same_session, same_entity) one memory
  may hold, how many ripple rows a recall adds, and the consolidation policy
  (which episodes are old enough, how similar a cluster's members must be and
  how close in time, the smallest and largest cluster, and what happens to
  the sources: importance lowered by a factor, or archived).
- A 'consolidate' maintenance job (pgmem._job_locks) and a 'consolidate'
  inbox job: pg_cron marks the subjects that are due, the worker writes the
  insights (sql/functions/32_consolidate.sql, pgmem/consolidate.py).

No new table: links and insights live in memory_links and memories.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# Defaults, and where they come from:
#   max_links_per_memory 8: one turn yields 1-5 facts (pgmem/extract), so a
#     fact keeps its turn-mates and a few facts about the same entities;
#     ripple reads every link of every hit, so the bound is also its fan-out.
#   ripple_limit 3: linked rows are context, not the answer; more
#     than a few crowd the direct hits out of a prompt.
#   consolidate_after 7 days: an episode is left alone while it is still
#     the recent detail a conversation refers back to.
#   consolidate_similarity 0.75: between merge_threshold (0.85, the same
#     fact) and unrelated text (~0.3 for all-MiniLM-L6-v2): same topic.
#   consolidate_window 30 days: episodes a month apart are one habit, not
#     one event, only when they also share an entity or high similarity.
#   consolidate_min_sources 3 / max_sources 20: fewer than three episodes
#     are not a pattern; an insight over more than twenty is too coarse.
#   consolidate_sources 'lower', consolidate_importance 0.5: sources stay
#     findable at half their importance unless the tenant asks for archival.
SETTINGS_COLUMNS = """
alter table pgmem.settings
    add column max_links_per_memory integer not null default 8 check (max_links_per_memory between 0 and 100),
    add column ripple_limit integer not null default 3 check (ripple_limit between 0 and 1000),
    add column consolidate_after interval not null default '7 days' check (consolidate_after >= interval '0'),
    add column consolidate_similarity real not null default 0.75
        check (consolidate_similarity > 0 and consolidate_similarity <= 1),
    add column consolidate_window interval not null default '30 days' check (consolidate_window >= interval '0'),
    add column consolidate_min_sources integer not null default 3 check (consolidate_min_sources between 2 and 1000),
    add column consolidate_max_sources integer not null default 20 check (consolidate_max_sources between 2 and 1000),
    add column consolidate_sources text not null default 'lower' check (consolidate_sources in ('lower', 'archive')),
    add column consolidate_importance real not null default 0.5 check (consolidate_importance between 0 and 1),
    add constraint settings_consolidate_sources_ordered
        check (consolidate_min_sources <= consolidate_max_sources);
"""

JOB_LOCK = """
alter table pgmem._job_locks drop constraint _job_locks_job_check;
alter table pgmem._job_locks add constraint _job_locks_job_check check (job in ({jobs}));
"""

INBOX_JOBS = """
alter table pgmem.inbox drop constraint inbox_job_check;
alter table pgmem.inbox add constraint inbox_job_check check (job in ({jobs}));
"""

# Functions of sql/functions/32_consolidate.sql: they read the columns
# dropped below, so they go with them. The 6-argument cron_plan/schedule of
# 40_jobs.sql are replaced by the 5-argument forms when sql/ is re-applied.
FUNCTIONS = (
    "_entities",
    "_link_at_write",
    "_consolidation_pool",
    "consolidation_clusters",
    "consolidate",
    "mark_consolidation",
)


def upgrade() -> None:
    op.execute("set local role pgmem_admin")
    op.execute(SETTINGS_COLUMNS)
    op.execute(
        JOB_LOCK.format(jobs="'archive', 'decay', 'capacity', 'purge', 'sessions', 'consolidate'")
    )
    op.execute("insert into pgmem._job_locks (job) values ('consolidate')")
    op.execute(INBOX_JOBS.format(jobs="'turn', 'embed', 'merge', 'judge', 'consolidate'"))
    op.execute("reset role")


def downgrade() -> None:
    op.execute("set local role pgmem_admin")
    names = ", ".join(f"'{name}'" for name in FUNCTIONS)
    op.execute(
        f"""
do $$
declare
    v_fn regprocedure;
begin
    for v_fn in select p.oid::regprocedure from pg_catalog.pg_proc as p
                where p.pronamespace = 'pgmem'::regnamespace and p.proname in ({names}) loop
        execute 'drop function ' || v_fn::text;
    end loop;
end
$$;
"""
    )
    op.execute("delete from pgmem.inbox where job = 'consolidate'")
    op.execute(INBOX_JOBS.format(jobs="'turn', 'embed', 'merge', 'judge'"))
    op.execute("delete from pgmem._job_locks where job = 'consolidate'")
    op.execute(JOB_LOCK.format(jobs="'archive', 'decay', 'capacity', 'purge', 'sessions'"))
    op.execute(
        """
alter table pgmem.settings
    drop constraint settings_consolidate_sources_ordered,
    drop column max_links_per_memory, drop column ripple_limit, drop column consolidate_after,
    drop column consolidate_similarity, drop column consolidate_window, drop column consolidate_min_sources,
    drop column consolidate_max_sources, drop column consolidate_sources, drop column consolidate_importance;
"""
    )
    op.execute("reset role")
