-- End-user binding: one connection, one end user, enforced by row-level
-- security as the tenant is (README "One end user per connection").
--
-- An app that hands a connection to one end user (an agent's SQL tool, a
-- per-user worker) calls pgmem.bind_subject('alice'): from then on that
-- backend sees and writes only alice's rows (and reads the shared subjects
-- it was bound with), whatever SQL it runs, until the connection closes.
-- The binding is kept in an owner-only table keyed by the backend (its pid
-- and start time), not in a setting: a setting can be changed by whoever
-- holds the connection, a row in pgmem._subject_bindings cannot. Off by
-- default (pgmem.enable_subject_binding turns it on for a database); an
-- unbound connection sees the whole tenant either way.

create or replace function pgmem._backend_start()
returns timestamptz
language sql
stable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pg_catalog.pg_stat_get_backend_start(b.id)
    from pg_catalog.pg_stat_get_backend_idset() as b(id)
    where pg_catalog.pg_stat_get_backend_pid(b.id) = pg_catalog.pg_backend_pid()
$$;

comment on function pgmem._backend_start() is
    'When this backend started: with its pid, what tells it from a later backend given the same pid (internal).';

create or replace function pgmem._binding()
returns pgmem._subject_bindings
-- plpgsql for its cached plan: every statement under a binding policy asks.
language plpgsql
stable
-- security definer: pgmem._subject_bindings is readable by its owner only,
-- so no connection can read, or forge, another's binding.
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_row pgmem._subject_bindings;
    v_start timestamptz;
begin
    -- The unbound case, nearly every connection: one probe of a tiny index.
    select b.* into v_row from pgmem._subject_bindings as b where b.pid = pg_catalog.pg_backend_pid();
    if v_row.pid is null then
        return null;
    end if;
    -- A dead backend's row that had this pid binds nothing. When the start
    -- cannot be read (pgmem_admin without pg_read_all_stats) the row holds:
    -- in doubt, bound rather than open.
    v_start := pgmem._backend_start();
    if v_start is not null and v_row.backend_start is distinct from v_start then
        return null;
    end if;
    return v_row;
end
$$;

comment on function pgmem._binding() is
    'This backend''s end-user binding (pgmem.bind_subject), or NULL (internal, owner rights).';

create or replace function pgmem.bound_subject()
returns text
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select (pgmem._binding()).subject
$$;

comment on function pgmem.bound_subject() is
    'The end user this connection is bound to (pgmem.bind_subject), or NULL when it is not bound.';

create or replace function pgmem._bound_subjects(p_shared boolean)
returns text[]
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- A service member may bind a tenant with SET in a later transaction:
    -- bound for another tenant than the one it acts for now, it reaches nothing.
    select case when b.tenant_id is distinct from pgmem.current_tenant() then '{}'::text[]
                when p_shared then b.subject || b.shared_subjects
                else array[b.subject] end
    from pgmem._binding() as b
    where b.subject is not null
$$;

comment on function pgmem._bound_subjects(boolean) is
    'The subjects a bound connection reaches: with p_shared what it may read (its subject and the shared subjects it was bound with), else what it may write (its subject); none while it acts for another tenant; NULL when unbound (internal: the subject_binding policies).';

create or replace function pgmem._bind_backend(p_tenant text, p_subject text, p_shared_subjects text[])
returns text
language plpgsql
volatile
-- security definer: only the owner writes pgmem._subject_bindings. Called
-- directly, it checks all that pgmem.bind_subject would: the tenant is one
-- the session may act for, and the session cannot step outside the policies.
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_bound pgmem._subject_bindings := pgmem._binding();
    v_shared text[] := coalesce(p_shared_subjects, '{}');
begin
    perform pgmem._require_session_for(p_tenant);
    if p_tenant is null then
        raise exception 'no pgmem tenant to bind an end user of' using errcode = 'PM001';
    end if;
    if p_subject is null or pg_catalog.btrim(p_subject) = '' or pg_catalog.length(p_subject) > 256 then
        raise exception 'p_subject must be 1 to 256 characters, not blank'
            using errcode = 'PM005', hint = 'Bind the end user this connection serves, usually the user id.';
    end if;
    if pg_catalog.cardinality(v_shared) > 64
       or exists (select from pg_catalog.unnest(v_shared) as s(subject)
                  where s.subject is null or pg_catalog.btrim(s.subject) = '' or pg_catalog.length(s.subject) > 256) then
        raise exception 'p_shared_subjects must hold at most 64 subjects of 1 to 256 characters'
            using errcode = 'PM005';
    end if;
    if v_bound.subject is not null then
        if v_bound.subject = p_subject and v_bound.tenant_id = p_tenant
           and v_bound.shared_subjects @> v_shared and v_bound.shared_subjects <@ v_shared then
            return p_subject;  -- the same binding again
        end if;
        raise exception 'this connection is bound to end user % already', v_bound.subject
            using errcode = 'PM005',
                  hint = 'A binding lasts as long as the connection: open a new connection for another end user.';
    end if;
    -- The policies bind pgmem_app's members. A session that can SET ROLE to a
    -- role they do not bind (one bypassing row-level security, the owner, the
    -- DBAs' pgmem_readonly) could step out of them: session_user, not
    -- current_user, and every role it may become.
    if exists (select from pg_catalog.pg_roles as r
               where pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')
                 and (r.rolsuper or r.rolbypassrls or r.rolname in ('pgmem_admin', 'pgmem_readonly'))) then
        raise exception 'role % can act outside row-level security: a subject binding would not hold', session_user
            using errcode = 'PM005',
                  hint = 'Bind on a connection of a tenant login role or a pgmem_service member that is neither '
                         'a superuser nor a member of pgmem_admin or pgmem_readonly.';
    end if;
    if pgmem._distributed() then
        raise exception 'subject bindings are not available on Citus'
            using errcode = 'PM005',
                  hint = 'Policies run on the worker nodes, which do not see the coordinator''s backend.';
    end if;
    if not pgmem._subject_binding_enabled() then
        raise exception 'end-user binding is off in this database'
            using errcode = 'PM005',
                  hint = 'An administrator turns it on with pgmem.enable_subject_binding(); its policies '
                         'then cost every statement of every application role.';
    end if;
    if pgmem._backend_start() is null then
        raise exception 'cannot tell this backend from a later one with its pid'
            using errcode = 'PM005',
                  hint = 'pgmem_admin needs pg_read_all_stats: run pgmem migrate as a superuser.';
    end if;
    -- Rows of backends that are gone, then this backend's row.
    delete from pgmem._subject_bindings as b
    where not exists (select from pg_catalog.pg_stat_get_backend_idset() as i(id)
                      where pg_catalog.pg_stat_get_backend_pid(i.id) = b.pid
                        and pg_catalog.pg_stat_get_backend_start(i.id) = b.backend_start);
    insert into pgmem._subject_bindings (pid, backend_start, tenant_id, subject, shared_subjects)
    values (pg_catalog.pg_backend_pid(), pgmem._backend_start(), p_tenant, p_subject,
            (select coalesce(pg_catalog.array_agg(distinct s.subject), '{}')
             from pg_catalog.unnest(v_shared) as s(subject) where s.subject <> p_subject))
    on conflict (pid) do update
        set backend_start = excluded.backend_start, tenant_id = excluded.tenant_id,
            subject = excluded.subject, shared_subjects = excluded.shared_subjects, bound_at = pg_catalog.now();
    return p_subject;
end
$$;

comment on function pgmem._bind_backend(text, text, text[]) is
    'Records this backend''s binding to end user p_subject of p_tenant, after pgmem.bind_subject''s checks (internal, owner rights).';

create or replace function pgmem.bind_subject(p_subject text, p_shared_subjects text[] default '{}')
returns text
language sql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- The tenant as the caller's role sees it, which the policies compare with.
    select pgmem._bind_backend(pgmem._require_tenant(), p_subject, p_shared_subjects)
$$;

comment on function pgmem.bind_subject(text, text[]) is
    'Binds this connection to one end user of the bound tenant, for as long as the connection lives: row-level security then shows and lets it write only p_subject''s rows, and read those of p_shared_subjects. One-way: another subject needs another connection (PM005); binding the same again is a no-op. Refused for roles that bypass row-level security and on Citus (PM005).';

create or replace function pgmem._require_subject(p_tenant text, p_subjects text[])
returns void
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_subject text;
    v_tenant text;
    v_other text;
begin
    -- On Citus this runs on the workers too, which have no bindings (nor
    -- their table): bind_subject refuses there, so nothing is bound.
    if pgmem._distributed() then
        return;
    end if;
    select b.subject, b.tenant_id into v_subject, v_tenant from pgmem._binding() as b;
    if v_subject is null then
        return;
    end if;
    select s.subject into v_other from pg_catalog.unnest(p_subjects) as s(subject)
    where s.subject is distinct from v_subject limit 1;
    if found or v_tenant is distinct from p_tenant then
        raise exception 'this connection is bound to end user % of tenant %; % of tenant % is out of its reach',
                        v_subject, v_tenant, coalesce(v_other, v_subject), coalesce(p_tenant, 'NULL')
            using errcode = 'PM004',
                  hint = 'pgmem.bind_subject binds a connection to one end user for its lifetime: '
                         'open another connection for another one.';
    end if;
end
$$;

comment on function pgmem._require_subject(text, text[]) is
    'Error PM004 when this connection is bound to an end user and is asked to write for another subject or tenant: a clear error where row-level security would give a bare policy violation, and the check of the owner-rights functions, which row-level security does not reach (internal).';

create or replace function pgmem._require_unbound(p_what text)
returns void
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_subject text;
begin
    if pgmem._distributed() then
        return;  -- nothing is bound on Citus (see pgmem._require_subject)
    end if;
    v_subject := pgmem.bound_subject();
    if v_subject is not null then
        raise exception '% acts on the whole tenant; this connection is bound to end user %', p_what, v_subject
            using errcode = 'PM004', hint = 'Run tenant-wide work on a connection that is not bound to an end user.';
    end if;
end
$$;

comment on function pgmem._require_unbound(text) is
    'Error PM004 on a connection bound to an end user: for tenant-wide work (purges, re-embedding) (internal).';


drop function if exists pgmem._subject_binding_check(text, text, text);
create or replace function pgmem._subject_binding_check(p_table text, p_shared boolean, p_key text default null)
returns text
language sql
immutable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Unbound (pgmem._bound_subjects is NULL) the first arm holds and the row
    -- is not looked at; bound, its subject, or that of the memory or task it
    -- hangs off, must be one of them.
    select pg_catalog.format('((select pgmem._bound_subjects(%1$L)) is null or ', p_shared)
        || case when p_table in ('memory_links', 'memory_decay', 'reembed_vectors', 'task_steps') then
               pg_catalog.format(
                   'exists (select from pgmem.%1$I as p where p.tenant_id = %2$I.tenant_id and p.%3$I = %2$I.%4$I '
                   'and p.subject = any ((select pgmem._bound_subjects(%5$L))::text[]))',
                   case when p_table = 'task_steps' then 'tasks' else 'memories' end, p_table,
                   case when p_table = 'task_steps' then 'task_id' else 'memory_id' end,
                   coalesce(p_key, case when p_table = 'memory_links' then 'from_id'
                                        when p_table = 'task_steps' then 'task_id' else 'memory_id' end),
                   p_shared)
           else pg_catalog.format('subject = any ((select pgmem._bound_subjects(%1$L))::text[])', p_shared) end
        || ')'
$$;

comment on function pgmem._subject_binding_check(text, boolean, text) is
    'The expression of a subject_binding policy of p_table: unbound, true; bound, the row''s subject (or its memory''s or task''s, through p_key) is one the connection reaches (pgmem._bound_subjects(p_shared)) (internal).';

-- The binding narrows each subject-bearing table's tenant_isolation policy
-- itself: reads see the bound subject and its shared subjects, writes only
-- the bound subject; for pgmem_app (tenant logins and pgmem_service
-- members), not for pgmem_readonly, whose DBAs inspect everything. Not a
-- restrictive policy of its own: a second policy puts the tenant check on
-- a later security level, where its non-leakproof pgmem.current_tenant()
-- is evaluated for every row instead of once (recall 3x slower at 10k). The
-- binding is read once a statement (an initplan); unbound, the first arm
-- is true and ends the test. Rows without a subject of their own are
-- reached through their memory or task. Not on Citus, which refuses
-- subqueries in policies (pgmem.distribute restores the plain ones).
create or replace function pgmem._subject_binding_policies(p_create boolean)
returns void
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_table text;
    v_read text;
    v_write text;
begin
    foreach v_table in array array['subjects', 'memories', 'memory_events', 'inbox', 'sessions',
                                     'session_messages', 'session_summaries', 'tasks',
                                     'memory_links', 'memory_decay', 'reembed_vectors', 'task_steps',
                                     'memory_accesses'] loop
        -- A downgrade passes through revisions older than some of these tables.
        if pg_catalog.to_regclass(pg_catalog.format('pgmem.%I', v_table)) is null then
            continue;
        end if;
        v_read := 'tenant_id = pgmem.current_tenant()';
        v_write := v_read;
        if p_create then
            v_read := v_read || ' and ' || pgmem._subject_binding_check(v_table, true);
            -- An access is recorded of what the connection reads, a shared
            -- subject's memory too: an account of reading, not a write to it.
            v_write := v_write || ' and ' || pgmem._subject_binding_check(v_table, v_table = 'memory_accesses');
            if v_table = 'memory_links' then
                -- A link is written from one's own memory to one in reach.
                v_read := v_read || ' and ' || pgmem._subject_binding_check(v_table, true, 'to_id');
                v_write := v_write || ' and ' || pgmem._subject_binding_check(v_table, true, 'to_id');
            end if;
        end if;
        execute pg_catalog.format('alter policy tenant_isolation on pgmem.%I using (%s) with check (%s)',
                                  v_table, v_read, v_write);
        -- An UPDATE touches only rows the connection may write: a shared
        -- subject's rows are passed over (recall's reinforcement of them), not
        -- refused. Restrictive and for UPDATE alone, so reads plan as above.
        execute pg_catalog.format('drop policy if exists subject_binding_update on pgmem.%I', v_table);
        if p_create then
            execute pg_catalog.format('create policy subject_binding_update on pgmem.%I as restrictive '
                                      'for update to pgmem_app using (%s)', v_table, v_write);
        end if;
    end loop;
end
$$;

comment on function pgmem._subject_binding_policies(boolean) is
    'Sets the tenant_isolation policy of every subject-bearing table: with p_create, narrowed to what a bound connection reaches (what enforces pgmem.bind_subject); without, the tenant check alone (internal; pgmem.enable_subject_binding, migrations, pgmem.distribute).';

create or replace function pgmem._subject_binding_enabled()
returns boolean
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select exists (select from pg_catalog.pg_policies as p
                   where p.schemaname = 'pgmem' and p.tablename = 'memories'
                     and p.policyname = 'tenant_isolation' and p.qual like '%pgmem._bound_subjects%')
$$;

comment on function pgmem._subject_binding_enabled() is
    'Whether end-user binding is on in this database: the tenant_isolation policies check the binding (internal; pgmem.enable_subject_binding).';

-- Off by default: the binding costs every statement of every application
-- role a look at it (docs/benchmarks.md), which a database that binds no
-- end user should not pay.
create or replace function pgmem.enable_subject_binding(p_on boolean default true)
returns boolean
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_on is null then
        raise exception 'p_on must be true or false' using errcode = 'null_value_not_allowed';
    end if;
    if p_on and pgmem._distributed() then
        raise exception 'subject bindings are not available on Citus'
            using errcode = 'PM005',
                  hint = 'Policies run on the worker nodes, which do not see the coordinator''s backend.';
    end if;
    perform pgmem._subject_binding_policies(p_on);
    if not p_on then
        -- Off, no binding holds: neither the policies nor the functions' checks.
        delete from pgmem._subject_bindings;
    end if;
    return p_on;
end
$$;

comment on function pgmem.enable_subject_binding(boolean) is
    'Turns end-user binding (pgmem.bind_subject) on for this database (p_on => false: off, and every binding is dropped): narrows the tenant_isolation policies of the subject-bearing tables to the bound subject, or restores them. Administrators only (the tables'' owner). Off by default: it costs every statement of every application role a look at the binding. PM005 on Citus.';

-- The policies are created again from the definitions above when binding is
-- on, so a migration brings them up to date; a database with binding off
-- stays without them.
select pgmem._subject_binding_policies(true) where pgmem._subject_binding_enabled() and not pgmem._distributed();
