"""Every statement the administration verbs of the CLI run (``pgmem tenant``,
``pgmem maintain``/``schedule``/``jobs``, ``pgmem demo``), by name. They need a
pgmem_admin member or a superuser."""

from __future__ import annotations

from typing import Final

# ----------------------------------------------------------------------- tenants

CREATE_TENANT: Final = "select pgmem.create_tenant(%(tenant)s, %(display_name)s)"
CREATE_TENANT_LOGIN: Final = (
    "select pgmem.create_tenant_login(%(tenant)s, %(password)s, %(role)s) as role"
)
TENANT_SUMMARY: Final = "select * from pgmem.tenant_summary()"
TENANT_EXISTS: Final = "select exists (select from pgmem.tenants where tenant_id = %(tenant)s)"
DROP_TENANT: Final = "select pgmem.drop_tenant(%(tenant)s) as memories"

# ------------------------------------------------------------------- maintenance

JOB_NAMES: Final = "select pgmem._job_names() as jobs"
# p_now NULL would mean "no clock", so an absent --now becomes now(). again: whether to
# run it once more, in a new transaction (pgmem._run_again; %(runs)s so far).
RUN_JOB: Final = """
select r.*, pgmem._run_again(r.job, r.status, r.counts, %(runs)s) as again
from pgmem.run_job(%(job)s, coalesce(%(now)s::timestamptz, now()), %(tenant)s) as r
"""
MAINTAIN: Final = "select * from pgmem.maintain()"
CRON_PLAN: Final = "select job, schedule from pgmem.cron_plan()"
SCHEDULE: Final = (
    "select job, jobname, schedule, command, jobid"
    " from pgmem.schedule(%s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
UNSCHEDULE: Final = "select pgmem.unschedule() as removed"
HAS_PG_CRON: Final = "select exists (select from pg_extension where extname = 'pg_cron') as here"
SCHEDULED_JOBS: Final = "select * from pgmem.scheduled_jobs()"
RECENT_RUNS: Final = """
select run_id, job, tenant_id, status, counts, message, started_at, duration_ms
from pgmem.job_runs
where %(job)s::text is null or job = %(job)s
order by run_id desc
limit %(limit)s
"""
# The demo's short-term memory step: a small window, so its chat overflows it.
SET_WINDOW_TURNS: Final = (
    "update pgmem.settings set window_turns = %(turns)s where tenant_id = %(tenant)s"
)

# Bearer tokens of pgmem mcp over HTTP (sql/functions/77_mcp_tokens.sql).
CREATE_MCP_TOKEN: Final = (
    "select pgmem.create_mcp_token(%(tenant)s, %(label)s, %(subject)s) as token"
)
MCP_TOKENS: Final = "select * from pgmem.mcp_tokens(%(tenant)s)"
REVOKE_MCP_TOKEN: Final = "select pgmem.revoke_mcp_token(%(tenant)s, %(label)s) as revoked"
