-- Deletes on tenant tables run with the owner's rights: app roles hold no
-- DELETE (nor table-level UPDATE) privilege, because either one lets a role
-- LOCK TABLE … IN ACCESS EXCLUSIVE MODE and stall every tenant (issue 8).
-- These helpers are security definer (owner pgmem_admin, which bypasses RLS),
-- so each first checks that the session may act for the tenant it is asked
-- to touch: a tenant login role for its own tenant, a pgmem_service member
-- for the tenant it bound with pgmem.set_tenant(), a superuser, BYPASSRLS or
-- pgmem_admin session for any. The check reads session_user: inside a
-- definer function current_user is the owner.

create or replace function pgmem._session_may_act_for(p_tenant text)
returns boolean
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select coalesce((select r.rolsuper or r.rolbypassrls from pg_catalog.pg_roles as r
                     where r.rolname = session_user), false)
        or pg_catalog.pg_has_role(session_user, 'pgmem_admin', 'MEMBER')
        or (p_tenant is not null
            and (pgmem._login_tenant(session_user) = p_tenant
                 or (pg_catalog.pg_has_role(session_user, 'pgmem_service', 'MEMBER')
                     and pg_catalog.current_setting('pgmem.tenant', true) = p_tenant)))
$$;

comment on function pgmem._session_may_act_for(text) is
    'True when the session (session_user) may act for p_tenant (NULL: every tenant): its login binding, its set_tenant() binding, or a superuser/BYPASSRLS/pgmem_admin session (internal; the owner-rights helpers check it).';

create or replace function pgmem._require_session_for(p_tenant text)
returns void
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    if not pgmem._session_may_act_for(p_tenant) then
        raise exception 'session role % may not act for tenant %', session_user, coalesce(p_tenant, '(every tenant)')
            using errcode = '42501', hint = 'Call pgmem.erase_subject() or pgmem.purge(), which pass the bound tenant.';
    end if;
end
$$;

comment on function pgmem._require_session_for(text) is
    'Raises 42501 unless the session may act for p_tenant (internal).';

create or replace function pgmem._delete_subject(p_tenant text, p_subject text)
returns void
language plpgsql
volatile
-- security definer: app roles hold no DELETE privilege (see the header).
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform pgmem._require_session_for(p_tenant);
    if p_tenant is null then
        return;
    end if;
    delete from pgmem.subjects as s where s.tenant_id = p_tenant and s.subject = p_subject;
end
$$;

comment on function pgmem._delete_subject(text, text) is
    'Deletes a subject row (its memories, links, events and inbox rows cascade) with the owner''s rights, for a session that may act for the tenant (internal; pgmem.erase_subject).';

create or replace function pgmem._purge_rows(
    p_tenant text,
    p_now timestamptz,
    out memories bigint,
    out inbox bigint
)
language plpgsql
volatile
-- security definer: app roles hold no DELETE privilege, and history
-- (memory_events) is append-only for them while purge scrubs it.
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform pgmem._require_session_for(p_tenant);
    -- The grace period runs from status_changed_at: until then an archived
    -- or deleted memory can still be restored or inspected. Links go with
    -- the memory (foreign keys cascade); its history stays, scrubbed of
    -- content (forgetting must forget), plus a purge event that keeps none.
    with due as (
        select m.tenant_id, m.memory_id, m.subject, m.status, m.kind, m.status_changed_at
        from pgmem.memories as m
        join pgmem.settings as s on s.tenant_id = m.tenant_id
        where m.status in ('archived', 'deleted')
          and m.status_changed_at < p_now - s.purge_grace
          and (p_tenant is null or m.tenant_id = p_tenant)
        for update of m skip locked
    ),
    purged as (
        delete from pgmem.memories as m
        using due as d
        where m.tenant_id = d.tenant_id and m.memory_id = d.memory_id
        returning d.*
    ),
    scrubbed as (
        update pgmem.memory_events as e
        set old_content = null, new_content = null
        from purged as p
        where e.tenant_id = p.tenant_id and e.memory_id = p.memory_id
          and (e.old_content is not null or e.new_content is not null)
        returning 1
    ),
    logged as (
        insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, created_at)
        select p.tenant_id, p.memory_id, p.subject, 'purge',
               pg_catalog.jsonb_build_object('from', p.status, 'kind', p.kind,
                                             'status_changed_at', p.status_changed_at,
                                             'scrubbed_events', (select pg_catalog.count(*) from scrubbed)),
               p_now
        from purged as p
    )
    select pg_catalog.count(*) into memories from purged;

    -- Finished inbox rows keep the worker's result for the grace; failed
    -- ones (with the redacted turn) for settings.failed_retention.
    with done as (
        -- The cut-offs in a subquery: Citus refuses a DELETE whose own
        -- conditions call a STABLE function (timestamptz - interval) on columns.
        delete from pgmem.inbox as i
        using (select st.tenant_id, p_now - st.purge_grace as done_before,
                      p_now - st.failed_retention as failed_before
               from pgmem.settings as st) as s
        where s.tenant_id = i.tenant_id
          and ((i.status = 'done' and coalesce(i.finished_at, i.created_at) < s.done_before)
               or (i.status = 'failed' and coalesce(i.finished_at, i.created_at) < s.failed_before))
          and (p_tenant is null or i.tenant_id = p_tenant)
        returning 1
    )
    select pg_catalog.count(*) into inbox from done;
end
$$;

comment on function pgmem._purge_rows(text, timestamptz) is
    'The deletes of pgmem.purge with the owner''s rights, for a session that may act for the tenant (NULL: every tenant, owner sessions only): due memories go, their events lose content, done and expired failed inbox rows go (internal).';
