"""Foundation: roles, extensions, the pgmem schema, tenant tables with forced RLS.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from pathlib import Path

from alembic import context, op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The functions this revision needs before its tables, frozen as they were then.
FUNCTIONS = Path(__file__).with_name("0001_foundation_functions.sql")

# Tables whose rows belong to one tenant: RLS enabled and FORCED on each.
TENANT_TABLES = (
    "tenants",
    "settings",
    "subjects",
    "memories",
    "memory_links",
    "memory_events",
    "inbox",
)

ROLES = """
do $$
begin
    -- Cluster-wide roles, shared by every database that installs pgmem.
    if not exists (select from pg_roles where rolname = 'pgmem_admin') then
        -- BYPASSRLS: owner, migrations and cross-tenant maintenance jobs.
        create role pgmem_admin nologin bypassrls;
    end if;
    if not exists (select from pg_roles where rolname = 'pgmem_app') then
        create role pgmem_app nologin;
    end if;
    if not exists (select from pg_roles where rolname = 'pgmem_readonly') then
        create role pgmem_readonly nologin;
    end if;
    if not exists (select from pg_roles where rolname = 'pgmem_service') then
        create role pgmem_service nologin;
    end if;
    if not pg_has_role(current_user, 'pgmem_admin', 'MEMBER') then
        execute format('grant pgmem_admin to %I', current_user);
    end if;
end
$$;
-- A service binds tenants per transaction and otherwise acts as the app.
grant pgmem_app to pgmem_service;
"""

EXTENSIONS = """
create extension if not exists vector;
create extension if not exists btree_gin;
do $$
begin
    if (select n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace
        where e.extname = 'vector') <> 'public' then
        raise exception 'pgmem expects the vector extension in schema public'
            using hint = 'ALTER EXTENSION vector SET SCHEMA public;';
    end if;
    -- pg_cron lives in one database per cluster (cron.database_name).
    if current_setting('cron.database_name', true) = current_database() then
        create extension if not exists pg_cron;
    else
        raise notice 'pg_cron is not available in database "%" (cron.database_name = %): '
                     'scheduled maintenance is off; run `pgmem maintain` from your own scheduler',
                     current_database(), coalesce(current_setting('cron.database_name', true), 'unset');
    end if;
end
$$;
"""

TABLES = """
create table pgmem.tenants (
    tenant_id    text primary key
                 constraint tenants_id_format check (tenant_id ~ '^[a-z0-9][a-z0-9_-]{{0,62}}$'),
    display_name text,
    created_at   timestamptz not null default now()
);

-- Role-to-tenant map for login roles: looked up by role, so role_name leads.
create table pgmem._tenant_logins (
    role_name name primary key,
    tenant_id text not null references pgmem.tenants on delete cascade
);
create index _tenant_logins_tenant on pgmem._tenant_logins (tenant_id);

-- Per-tenant policy. The '_default' row holds the defaults; a new tenant
-- gets a copy of it (trigger on tenants). Defaults and where they come from:
--   weights 0.6/0.2/0.1 relevance/importance/recency and a small access
--   boost follow the Generative Agents retrieval score (Park et al. 2023),
--   with relevance weighted first because recall is query-driven and
--   recency a tie-breaker: at 0.2 with a 7-day half-life it buried every
--   episode older than a few weeks (LoCoMo R@5 0.46 vs 0.58, docs/eval.md);
--   half-lives: episodes 30 days, facts 90, preferences 180, procedures 365
--   (episodic detail fades fastest, habits and how-tos slowest);
--   w_vector 0.5: share of cosine similarity (vs. query-term coverage) in
--   relevance; 0.3-0.6 score alike on LoCoMo (docs/eval.md), 0.5 sits mid-plateau;
--   duplicate 0.95 / merge 0.85 cosine, usual near-duplicate bands for
--   sentence embeddings.
create table pgmem.settings (
    tenant_id             text primary key
                          check (tenant_id = '_default' or tenant_id ~ '^[a-z0-9][a-z0-9_-]{{0,62}}$'),
    embedding_model       text not null default 'all-MiniLM-L6-v2',
    embedding_dims        integer not null default {dims} check (embedding_dims between 1 and 16000),
    default_importance    real not null default 0.5 check (default_importance between 0 and 1),
    max_content_bytes     integer not null default 16384 check (max_content_bytes between 1 and 1048576),
    w_relevance           real not null default 0.6 check (w_relevance >= 0),
    w_importance          real not null default 0.2 check (w_importance >= 0),
    w_recency             real not null default 0.1 check (w_recency >= 0),
    w_access              real not null default 0.05 check (w_access >= 0),
    w_vector              real not null default 0.5 check (w_vector between 0 and 1),
    half_life_episodic    interval not null default '30 days' check (half_life_episodic > interval '0'),
    half_life_semantic    interval not null default '90 days' check (half_life_semantic > interval '0'),
    half_life_preference  interval not null default '180 days' check (half_life_preference > interval '0'),
    half_life_procedural  interval not null default '365 days' check (half_life_procedural > interval '0'),
    duplicate_threshold   real not null default 0.95,
    merge_threshold       real not null default 0.85,
    archive_threshold     real not null default 0.05 check (archive_threshold between 0 and 1),
    capacity_per_subject  integer not null default 2000 check (capacity_per_subject > 0),
    purge_grace           interval not null default '7 days' check (purge_grace >= interval '0'),
    ripple_damping        real not null default 0.5 check (ripple_damping > 0 and ripple_damping <= 1),
    candidate_pool        integer not null default 100 check (candidate_pool between 1 and 10000),
    exact_scan_limit      integer not null default 20000 check (exact_scan_limit >= 0),
    updated_at            timestamptz not null default now(),
    constraint settings_weights_positive check (w_relevance + w_importance + w_recency > 0),
    constraint settings_thresholds_ordered
        check (0 < merge_threshold and merge_threshold <= duplicate_threshold and duplicate_threshold <= 1)
);
insert into pgmem.settings (tenant_id) values ('_default');

-- One row per (tenant, subject): the per-subject lock that serializes
-- writers, and the root every row about a subject cascades from (erase).
create table pgmem.subjects (
    tenant_id  text not null default pgmem.current_tenant() references pgmem.tenants on delete cascade,
    subject    text not null check (length(subject) between 1 and 256),
    created_at timestamptz not null default now(),
    primary key (tenant_id, subject)
);

create table pgmem.memories (
    tenant_id            text not null default pgmem.current_tenant(),
    memory_id            bigint generated always as identity,
    subject              text not null,
    agent_id             text,
    session_id           text,
    kind                 text not null check (kind in ('episodic', 'semantic', 'preference', 'procedural')),
    content              text not null check (btrim(content) <> ''),
    content_hash         text generated always as (pgmem._content_hash(content)) stored,
    embedding            public.vector({dims}),
    fts                  tsvector generated always as (pgmem._tsv(content)) stored,
    importance           real not null default 0.5 check (importance between 0 and 1),
    effective_importance real check (effective_importance between 0 and 1),
    confidence           real not null default 1 check (confidence between 0 and 1),
    source               text not null default 'sql'
                         check (source in ('rule', 'llm', 'manual', 'sql', 'import')),
    triple_subject       text,
    triple_predicate     text,
    triple_object        text,
    valid_from           timestamptz not null default now(),
    valid_to             timestamptz,
    status               text not null default 'active'
                         check (status in ('active', 'superseded', 'merged', 'archived', 'deleted')),
    status_changed_at    timestamptz not null default now(),
    pinned               boolean not null default false,
    access_count         integer not null default 0 check (access_count >= 0),
    last_accessed_at     timestamptz not null default now(),
    expires_at           timestamptz,
    metadata             jsonb not null default '{{}}' check (jsonb_typeof(metadata) = 'object'),
    created_at           timestamptz not null default now(),
    updated_at           timestamptz not null default now(),
    primary key (tenant_id, memory_id),
    foreign key (tenant_id, subject) references pgmem.subjects on delete cascade,
    constraint memories_triple_complete
        check (num_nulls(triple_subject, triple_predicate, triple_object) in (0, 3)),
    constraint memories_valid_range check (valid_to is null or valid_to >= valid_from)
)
-- Room on each page for HOT updates: decay and recall rewrite unindexed
-- columns (effective_importance, last_accessed_at, access_count), and a
-- non-HOT update re-inserts the row into every index, HNSW included. 90
-- leaves one spare row of ~2 KB (with a 384-d embedding) per page.
with (fillfactor = 90);
-- Exact duplicates cannot be active twice, whatever the writers do.
create unique index memories_active_content on pgmem.memories (tenant_id, subject, content_hash)
    where status = 'active';
create index memories_subject on pgmem.memories (tenant_id, subject, status, kind);
create index memories_triple on pgmem.memories (tenant_id, subject, triple_subject, triple_predicate)
    where status = 'active' and triple_predicate is not null;
create index memories_status_age on pgmem.memories (tenant_id, status, status_changed_at);
-- Memories written without a vector, for the worker's embed pass (small:
-- rows leave it once embedded).
create index memories_unembedded on pgmem.memories (tenant_id, memory_id)
    where status = 'active' and embedding is null;
create index memories_expiry on pgmem.memories (tenant_id, expires_at)
    where status = 'active' and expires_at is not null;
create index memories_fts on pgmem.memories using gin (tenant_id, subject, fts) where status = 'active';
-- HNSW takes one column: it cannot lead with tenant_id (recall filters
-- tenant and subject; small subjects are scanned exactly instead).
create index memories_embedding on pgmem.memories using hnsw (embedding public.vector_cosine_ops)
    where status = 'active';

create table pgmem.memory_links (
    tenant_id  text not null default pgmem.current_tenant(),
    from_id    bigint not null,
    to_id      bigint not null,
    link_type  text not null
               check (link_type in ('same_session', 'derived_from', 'same_entity', 'supersedes', 'merged_into')),
    weight     real not null default 1 check (weight > 0 and weight <= 1),
    created_at timestamptz not null default now(),
    primary key (tenant_id, from_id, link_type, to_id),
    foreign key (tenant_id, from_id) references pgmem.memories on delete cascade,
    foreign key (tenant_id, to_id) references pgmem.memories on delete cascade,
    constraint memory_links_no_loop check (from_id <> to_id)
);
create index memory_links_to on pgmem.memory_links (tenant_id, to_id);

-- Append-only history. memory_id has no foreign key: history outlives a
-- purged memory. subject is NULL only on the tombstone of an erased subject.
create table pgmem.memory_events (
    tenant_id   text not null default pgmem.current_tenant() references pgmem.tenants on delete cascade,
    event_id    bigint generated always as identity,
    memory_id   bigint,
    subject     text,
    event       text not null check (event in ('insert', 'reinforce', 'deduplicate', 'merge', 'supersede',
                                               'archive', 'restore', 'delete', 'erase', 'pin', 'unpin',
                                               'update', 'reject', 'purge', 'embed', 'evict')),
    actor       text not null default current_user,
    old_content text,
    new_content text,
    details     jsonb not null default '{{}}',
    created_at  timestamptz not null default now(),
    primary key (tenant_id, event_id),
    foreign key (tenant_id, subject) references pgmem.subjects on delete cascade
);
create index memory_events_memory on pgmem.memory_events (tenant_id, memory_id);
create index memory_events_subject on pgmem.memory_events (tenant_id, subject, created_at);

-- Work for the Python worker: conversation turns to extract, memories to
-- embed, near-duplicates to merge. Claimed with FOR UPDATE SKIP LOCKED.
create table pgmem.inbox (
    tenant_id    text not null default pgmem.current_tenant() references pgmem.tenants on delete cascade,
    inbox_id     bigint generated always as identity,
    job          text not null check (job in ('turn', 'embed', 'merge')),
    subject      text,
    session_id   text,
    agent_id     text,
    payload      jsonb not null default '{{}}' check (jsonb_typeof(payload) = 'object'),
    status       text not null default 'pending' check (status in ('pending', 'done', 'failed')),
    attempts     integer not null default 0 check (attempts >= 0),
    last_error   text,
    available_at timestamptz not null default now(),
    created_at   timestamptz not null default now(),
    finished_at  timestamptz,
    primary key (tenant_id, inbox_id),
    foreign key (tenant_id, subject) references pgmem.subjects on delete cascade
);
create index inbox_pending on pgmem.inbox (tenant_id, available_at) where status = 'pending';

-- What each maintenance run did: cluster-wide, written by the job runner.
create table pgmem.job_runs (
    run_id      bigint generated always as identity primary key,
    job         text not null,
    tenant_id   text,
    status      text not null check (status in ('ok', 'skipped', 'failed')),
    counts      jsonb not null default '{{}}',
    message     text,
    started_at  timestamptz not null,
    finished_at timestamptz not null,
    duration_ms double precision generated always as
                (extract(epoch from finished_at - started_at) * 1000) stored
);
create index job_runs_job on pgmem.job_runs (job, started_at desc);

create trigger tenants_sync_settings after insert or delete on pgmem.tenants
    for each row execute function pgmem._tenants_sync_settings();
"""

GRANTS = """
grant usage on schema pgmem to pgmem_app, pgmem_readonly, pgmem_service;
grant select on all tables in schema pgmem to pgmem_readonly;
revoke select on pgmem._tenant_logins from pgmem_readonly;
grant select on pgmem.tenants, pgmem.settings to pgmem_app;
grant select, insert, update, delete on pgmem.subjects, pgmem.memories, pgmem.memory_links, pgmem.inbox
    to pgmem_app;
-- History is append-only for applications.
grant select, insert on pgmem.memory_events to pgmem_app;
"""


def _policies(table: str) -> str:
    is_tenant = "tenant_id = (select pgmem.current_tenant())"
    visible = f"{is_tenant} or tenant_id = '_default'" if table == "settings" else is_tenant
    sql = f"""
alter table pgmem.{table} enable row level security;
alter table pgmem.{table} force row level security;
create policy tenant_isolation on pgmem.{table} to pgmem_app
    using ({visible}) with check ({is_tenant});
create policy readonly_inspection on pgmem.{table} for select to pgmem_readonly using (true);
"""
    if table == "tenants":
        sql += "create policy service_lists_tenants on pgmem.tenants for select to pgmem_service using (true);\n"
    if table not in ("tenants", "settings"):
        sql += f"""create trigger {table}_require_tenant before insert or update or delete on pgmem.{table}
    for each statement execute function pgmem._require_tenant_trigger();
"""
    return sql


def upgrade() -> None:
    dims = int(context.config.attributes.get("dims", 384))
    op.execute(ROLES)
    op.execute(EXTENSIONS)
    op.execute("create schema pgmem authorization pgmem_admin")
    # Everything below belongs to pgmem_admin, not to whoever migrates.
    op.execute("set local role pgmem_admin")
    # Table defaults and generated columns call these functions, so they come
    # first; sql/ re-applies them (CREATE OR REPLACE) at the end of every run.
    # The revision runs its own frozen copy, never the live sql/functions files.
    op.execute("set local check_function_bodies = off")
    op.execute(FUNCTIONS.read_text())
    op.execute(TABLES.format(dims=dims))
    for table in TENANT_TABLES:
        op.execute(_policies(table))
    op.execute(GRANTS)
    op.execute("reset role")


def downgrade() -> None:
    op.execute("drop schema if exists pgmem cascade")
    op.execute(
        """
do $$
declare
    v_job bigint;
begin
    if to_regclass('cron.job') is not null then
        for v_job in select jobid from cron.job where jobname like 'pgmem-%' loop
            perform cron.unschedule(v_job);
        end loop;
    end if;
end
$$;
"""
    )
