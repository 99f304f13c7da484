-- Who may execute what, in one place. Applied last, after every function
-- of sql/ exists, at the end of every migration.
--
-- Functions run as their caller (security invoker) with row-level security,
-- so what a role may do is decided by the tables' policies, not by which
-- functions it can call. Applications get the whole API and the internal
-- helpers it calls; administration (tenants, cross-tenant maintenance, the
-- pg_cron jobs) stays with pgmem_admin, the owner, and its members.

revoke all on all functions in schema pgmem from public;

grant execute on all functions in schema pgmem to pgmem_app;

revoke execute on function
    pgmem.create_tenant(text, text),
    pgmem.create_tenant_login(text, text, name),
    pgmem.drop_tenant(text),
    pgmem.tenant_summary(),
    pgmem._job_names(),
    pgmem._job_lock_holder(text),
    pgmem._run_again(text, text, jsonb, integer),
    pgmem._require_cron(text),
    -- security definer: bypasses RLS to cover every tenant.
    pgmem.run_job(text, timestamptz, text),
    pgmem.maintain(timestamptz, text),
    pgmem.end_idle_transactions(text),
    -- the policies of the whole database, for everyone.
    pgmem.enable_subject_binding(boolean),
    -- bearer tokens of pgmem mcp: administrators make, list and revoke them.
    pgmem.create_mcp_token(text, text, text),
    pgmem.revoke_mcp_token(text, text),
    pgmem.mcp_tokens(text),
    pgmem.cron_plan(text, text, text, text, text, text, text, text, text),
    pgmem.schedule(text, text, text, text, text, text, text, text, text),
    pgmem.unschedule(),
    pgmem.scheduled_jobs()
from pgmem_app;

-- DBAs: what the views call, and what is scheduled.
grant execute on function
    pgmem._decayed(real, double precision, timestamptz, timestamptz),
    pgmem._decay_step(),
    pgmem.cron_plan(text, text, text, text, text, text, text, text, text),
    pgmem.scheduled_jobs()
to pgmem_readonly;

-- reshape: the kinds (08_kinds.sql); pgmem._decay_policy, under the DBA views, reads them.
grant execute on function
    pgmem.kinds(),
    pgmem._half_lives(pgmem.settings)
to pgmem_readonly;

-- pgmem.doctor reads pg_cron's tables through pgmem.scheduled_jobs: for
-- operators and DBAs, not for applications.
revoke execute on function pgmem.doctor(text, integer, interval) from pgmem_app;
grant execute on function pgmem.doctor(text, integer, interval) to pgmem_readonly;
-- Procedures are outside "all functions": PUBLIC keeps EXECUTE unless revoked.
revoke all on procedure pgmem.run_scheduled_job(text) from public;
-- Citus (90_citus.sql): distributing is for whoever migrates (a superuser);
-- the per-node view is for administrators and DBAs, who read every tenant.
revoke execute on function
    pgmem.distribute(),
    pgmem.node_distribution(),
    pgmem.move_tenant(text, text, integer)
from pgmem_app;
grant execute on function pgmem.node_distribution(), pgmem._require_citus() to pgmem_readonly;
-- The job runner's work (40_jobs.sql) is administration, as pgmem.run_job is.
revoke execute on function
    pgmem._job_counts(text, timestamptz, text),
    pgmem._job_tenants(text)
from pgmem_app;
-- r-embed (66_models.sql): re-embed jobs are queued by pgmem.start_reembed and
-- pgmem.stage_reembed (owner rights), never directly by applications.
revoke execute on function pgmem._queue_reembed(text, text, integer) from pgmem_app;
