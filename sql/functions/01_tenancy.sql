-- Tenancy: which tenant the current role acts for, and tenant administration.
--
-- A tenant is bound in one of two ways:
--   (a) a per-tenant login role (pgmem.create_tenant_login) — the binding
--       comes from the role's identity, so it cannot be changed from SQL;
--   (b) a member of pgmem_service calls pgmem.set_tenant() per transaction.
-- Every tenant table has row-level security FORCED with policies on
-- tenant_id = (select pgmem.current_tenant()).

create or replace function pgmem._login_tenant(p_role name)
returns text
-- plpgsql, not sql: every statement under a tenant policy reads this, ~20
-- per recall. A SQL function that cannot be inlined (this one is a definer)
-- parses and plans its body again in each statement; plpgsql keeps the plan
-- for the session.
language plpgsql
stable strict
-- security definer: pgmem._tenant_logins is readable by its owner only, so
-- a tenant role cannot list or alter the role-to-tenant map. The caller
-- must be able to act as p_role, so it cannot ask for other roles.
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return (select l.tenant_id
            from pgmem._tenant_logins as l
            where l.role_name = p_role
              and pg_catalog.pg_has_role(session_user, p_role, 'MEMBER'));
end
$$;

comment on function pgmem._login_tenant(name) is
    'Tenant bound to a per-tenant login role, or NULL (internal; the caller must be able to act as that role).';

-- No SET clause, every name qualified: PostgreSQL inlines it into the
-- row-level security policies and the statements that call it. With a SET
-- clause each call switched search_path (~60 us a call on a slow day), and a
-- remember runs ~100 statements that read it.
create or replace function pgmem.current_tenant()
returns text
language sql
stable parallel safe
security invoker
as $$
    select coalesce(
        pgmem._login_tenant(current_user),
        case when pg_catalog.pg_has_role(current_user, 'pgmem_service', 'MEMBER')
             then nullif(pg_catalog.current_setting('pgmem.tenant', true), '')
        end)
$$;

comment on function pgmem.current_tenant() is
    'The tenant the current role acts for: its login binding, else (pgmem_service members only) the tenant set by pgmem.set_tenant(); NULL when none.';

create or replace function pgmem._bypasses_rls()
returns boolean
-- plpgsql for its cached plan, as _login_tenant: every write statement's
-- tenant trigger asks.
language plpgsql
stable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return coalesce((select r.rolsuper or r.rolbypassrls from pg_catalog.pg_roles as r
                     where r.rolname = current_user), false);
end
$$;

comment on function pgmem._bypasses_rls() is
    'True for superusers and BYPASSRLS roles (pgmem_admin), which work across tenants.';

create or replace function pgmem._require_tenant()
returns text
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem.current_tenant();
begin
    if v_tenant is null then
        raise exception 'no pgmem tenant is bound to this session'
            using errcode = 'PM001',
                  hint = 'Connect as the tenant''s login role, or as a pgmem_service member call '
                         'pgmem.set_tenant(''<tenant>'') in this transaction.';
    end if;
    -- set_config('pgmem.tenant', …) by a service member skips set_tenant's
    -- check: check here too, once per call of a write or recall.
    if not exists (select from pgmem.tenants as t where t.tenant_id = v_tenant) then
        raise exception 'unknown pgmem tenant: %', v_tenant
            using errcode = 'PM002', hint = 'Bind an existing tenant with pgmem.set_tenant().';
    end if;
    return v_tenant;
end
$$;

comment on function pgmem._require_tenant() is
    'The bound tenant, or error PM001 naming the fix when none is bound.';

create or replace function pgmem._require_tenant_trigger()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Without a tenant, RLS would silently match nothing: say why instead.
    if not pgmem._bypasses_rls() then
        perform pgmem._require_tenant();
    end if;
    return null;
end
$$;

comment on function pgmem._require_tenant_trigger() is
    'Statement trigger on tenant tables: a write with no tenant bound fails with PM001 instead of touching nothing.';

create or replace function pgmem.set_tenant(p_tenant text, p_local boolean default true)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if not pg_catalog.pg_has_role(current_user, 'pgmem_service', 'MEMBER') then
        raise exception 'role % may not choose a pgmem tenant', current_user
            using errcode = '42501',
                  hint = 'Only members of pgmem_service bind tenants; a tenant login role is bound already.';
    end if;
    if p_tenant is null or not exists (select from pgmem.tenants as t where t.tenant_id = p_tenant) then
        raise exception 'unknown pgmem tenant: %', coalesce(p_tenant, 'NULL')
            using errcode = 'PM002', hint = 'Create it with pgmem.create_tenant() or `pgmem tenant create`.';
    end if;
    if p_local then
        -- A SET LOCAL statement rather than set_config(): on a Citus coordinator
        -- (citus.propagate_set_commands = local) it also reaches the worker
        -- sessions of this transaction, whose row-level security reads it.
        execute pg_catalog.format('set local pgmem.tenant = %L', p_tenant);
    else
        perform pg_catalog.set_config('pgmem.tenant', p_tenant, false);
    end if;
    return p_tenant;
end
$$;

comment on function pgmem.set_tenant(text, boolean) is
    'Binds a tenant for the rest of the transaction (p_local => false: the session). Only pgmem_service members may call it.';

create or replace function pgmem.bind_tenant(p_tenant text, p_local boolean default true)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- The one binding every client uses: a pgmem_service member (superusers
    -- count) binds p_tenant; any other role is bound by its login already,
    -- and the caller compares the answer with the tenant it asked for.
    if pg_catalog.pg_has_role(current_user, 'pgmem_service', 'MEMBER') then
        return pgmem.set_tenant(p_tenant, p_local);
    end if;
    return pgmem.current_tenant();
end
$$;

comment on function pgmem.bind_tenant(text, boolean) is
    'Binds p_tenant for a pgmem_service member (as pgmem.set_tenant); for any other role returns the tenant its login is bound to (NULL if none), which the caller compares with the one it wanted.';

create or replace function pgmem._tenants_sync_settings()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- A new tenant starts from a copy of the defaults row; its settings
    -- leave with it (settings has no foreign key: the defaults row is not a tenant).
    if tg_op = 'INSERT' then
        insert into pgmem.settings
        select (pg_catalog.jsonb_populate_record(d, pg_catalog.jsonb_build_object('tenant_id', new.tenant_id))).*
        from pgmem.settings as d
        where d.tenant_id = '_default'
        on conflict (tenant_id) do nothing;
        return new;
    end if;
    delete from pgmem.settings as s where s.tenant_id = old.tenant_id;
    return old;
end
$$;

comment on function pgmem._tenants_sync_settings() is
    'Trigger function of revision 0001 (copies the _default settings row for a new tenant, removes it with the tenant); '
    'revision 0004 drops the trigger: pgmem.create_tenant and pgmem.drop_tenant do it.';

create or replace function pgmem.create_tenant(p_tenant text, p_display_name text default null)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if p_tenant is null or p_tenant !~ '^[a-z0-9][a-z0-9_-]{0,62}$' then
        raise exception 'invalid tenant name: %', coalesce(p_tenant, 'NULL')
            using errcode = 'PM003',
                  hint = 'Use 1 to 63 characters: lower-case letters, digits, _ and -, starting with a letter or digit.';
    end if;
    insert into pgmem.tenants (tenant_id, display_name) values (p_tenant, p_display_name)
    on conflict (tenant_id) do update set display_name = coalesce(excluded.display_name, pgmem.tenants.display_name);
    -- The tenant starts from a copy of the defaults row. Done here, not by a
    -- trigger on tenants: Citus runs no trigger that writes another table
    -- (revision 0004, docs/scaling.md).
    insert into pgmem.settings
    select (pg_catalog.jsonb_populate_record(d, pg_catalog.jsonb_build_object('tenant_id', p_tenant))).*
    from pgmem.settings as d
    where d.tenant_id = '_default'
    on conflict (tenant_id) do nothing;
    return p_tenant;
end
$$;

comment on function pgmem.create_tenant(text, text) is
    'Creates a tenant (idempotent) with a copy of the default settings. Needs pgmem_admin rights.';

create or replace function pgmem.create_tenant_login(
    p_tenant text,
    p_password text,
    p_role name default null
)
returns name
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- Opaque by default: role names are visible to every role (pg_roles), so
    -- a name made of the tenant's would let any tenant list the others.
    v_role name := coalesce(p_role, ('pgmem_t_' || pg_catalog.left(
                                         pg_catalog.replace(pg_catalog.gen_random_uuid()::text, '-', ''), 16))::name);
begin
    if not exists (select from pgmem.tenants as t where t.tenant_id = p_tenant) then
        raise exception 'unknown pgmem tenant: %', p_tenant
            using errcode = 'PM002', hint = 'Create it first with pgmem.create_tenant().';
    end if;
    if exists (select from pg_catalog.pg_roles as r where r.rolname = v_role) then
        -- Never bind an existing role: it may carry rights of its own.
        raise exception 'role % already exists', v_role
            using errcode = '42710', hint = 'Choose another role name, or drop the tenant login first.';
    end if;
    -- Table rights come from pgmem_app; the binding comes from _tenant_logins.
    -- Timeouts by default: a tenant session that waits on a lock
    -- or sits idle in a transaction gives up instead of queueing others.
    execute pg_catalog.format('create role %I login password %L in role pgmem_app', v_role, p_password);
    execute pg_catalog.format('alter role %I set lock_timeout = ''5s''', v_role);
    execute pg_catalog.format('alter role %I set statement_timeout = ''60s''', v_role);
    execute pg_catalog.format('alter role %I set idle_in_transaction_session_timeout = ''60s''', v_role);
    insert into pgmem._tenant_logins (role_name, tenant_id) values (v_role, p_tenant);
    return v_role;
end
$$;

comment on function pgmem.create_tenant_login(text, text, name) is
    'Creates a login role bound to one tenant (default name pgmem_t_ and 16 random hex digits, which say nothing of the tenant; returned): it may run any SQL and still sees only its tenant''s rows.';

create or replace function pgmem.drop_tenant(p_tenant text)
returns bigint
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_memories bigint;
    v_role name;
begin
    select pg_catalog.count(*) into v_memories from pgmem.memories as m where m.tenant_id = p_tenant;
    for v_role in select l.role_name from pgmem._tenant_logins as l where l.tenant_id = p_tenant loop
        execute pg_catalog.format('drop role if exists %I', v_role);
    end loop;
    -- Foreign keys cascade from tenants to every tenant table but
    -- memory_decay and memory_accesses, which have none (alembic 0015, 0036).
    delete from pgmem.memory_decay as d where d.tenant_id = p_tenant;
    delete from pgmem.memory_accesses as a where a.tenant_id = p_tenant;
    delete from pgmem.tenants as t where t.tenant_id = p_tenant;
    if not found then
        raise exception 'unknown pgmem tenant: %', p_tenant using errcode = 'PM002';
    end if;
    -- settings has no foreign key (the defaults row is not a tenant).
    delete from pgmem.settings as s where s.tenant_id = p_tenant;
    -- Nor has the change channel (it stays on a Citus coordinator).
    delete from pgmem._change_channels as c where c.tenant_id = p_tenant;
    return v_memories;
end
$$;

comment on function pgmem.drop_tenant(text) is
    'Removes a tenant, every row it owns in every pgmem table and its login roles; returns how many memories went. Needs pgmem_admin rights.';


create or replace function pgmem.tenant_summary()
returns table (tenant_id text, display_name text, login_roles name[], subjects bigint,
               active_memories bigint, created_at timestamptz)
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Row-level security applies: an app role sees its own tenant only.
    select t.tenant_id, t.display_name,
           coalesce((select pg_catalog.array_agg(l.role_name order by l.role_name)
                     from pgmem._tenant_logins as l where l.tenant_id = t.tenant_id), '{}'),
           (select pg_catalog.count(*) from pgmem.subjects as s where s.tenant_id = t.tenant_id),
           (select pg_catalog.count(*) from pgmem.memories as m
            where m.tenant_id = t.tenant_id and m.status = 'active'),
           t.created_at
    from pgmem.tenants as t
    order by t.tenant_id
$$;

comment on function pgmem.tenant_summary() is
    'One row per visible tenant: login roles, subjects and active memories. Login roles need read access to pgmem._tenant_logins (admins).';
