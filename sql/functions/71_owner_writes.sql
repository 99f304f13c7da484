-- Deletes on tenant tables run with the owner's rights: app roles hold no
-- DELETE (nor table-level UPDATE) privilege, because either one lets a role
-- LOCK TABLE … IN ACCESS EXCLUSIVE MODE and stall every tenant.
-- These helpers are security definer (owner pgmem_admin, which bypasses RLS),
-- so each first checks that the session may act for the tenant it is asked
-- to touch: a tenant login role for its own tenant, a pgmem_service member
-- for the tenant it bound with pgmem.set_tenant(), a superuser, BYPASSRLS or
-- pgmem_admin session for any. The check reads session_user: inside a
-- definer function current_user is the owner.

create or replace function pgmem._session_may_act_for(p_tenant text)
returns boolean
-- plpgsql for its cached plan: as a SQL function with a SET clause it was
-- planned again at every call (~0.1 ms of every write).
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return coalesce((select r.rolsuper or r.rolbypassrls from pg_catalog.pg_roles as r
                     where r.rolname = session_user), false)
        or pg_catalog.pg_has_role(session_user, 'pgmem_admin', 'MEMBER')
        or (p_tenant is not null
            and (pgmem._login_tenant(session_user) = p_tenant
                 or (pg_catalog.pg_has_role(session_user, 'pgmem_service', 'MEMBER')
                     and pg_catalog.current_setting('pgmem.tenant', true) = p_tenant)));
end
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

create or replace function pgmem._erase_subject_rows(p_tenant text, p_subject text, p_now timestamptz)
returns jsonb
language plpgsql
volatile
-- security definer: app roles hold no DELETE privilege (see the header).
-- The lock, the counts, the delete and the tombstone are all here, with one
-- role's rights: on Citus a transaction that modified a shard as the tenant
-- role cannot go on to touch it as the owner (another connection), so
-- nothing of the erasure may run as the caller.
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_counts jsonb;
begin
    perform pgmem._require_session_for(p_tenant);
    perform pgmem._require_subject(p_tenant, array[p_subject]);
    if p_tenant is null then
        return null;
    end if;
    perform from pgmem.subjects as s
    where s.tenant_id = p_tenant and s.subject = p_subject
    for update;
    if not found then
        return null;
    end if;
    select pg_catalog.jsonb_build_object(
               'memories', (select pg_catalog.count(*) from pgmem.memories as m
                            where m.tenant_id = p_tenant and m.subject = p_subject),
               'events', (select pg_catalog.count(*) from pgmem.memory_events as e
                          where e.tenant_id = p_tenant and e.subject = p_subject),
               'inbox', (select pg_catalog.count(*) from pgmem.inbox as i
                         where i.tenant_id = p_tenant and i.subject = p_subject))
    into v_counts;
    -- Every row about the subject hangs off its subjects row (foreign keys
    -- ON DELETE CASCADE): memories, their links in both directions, events,
    -- inbox jobs, sessions and tasks go with it. The memories' decay rows
    -- and the accesses not folded yet have no foreign key (alembic 0015,
    -- 0036): they go first.
    delete from pgmem.memory_decay as d
    using pgmem.memories as m
    where m.tenant_id = p_tenant and m.subject = p_subject
      and d.tenant_id = m.tenant_id and d.memory_id = m.memory_id;
    delete from pgmem.memory_accesses as a where a.tenant_id = p_tenant and a.subject = p_subject;
    delete from pgmem.subjects as s where s.tenant_id = p_tenant and s.subject = p_subject;
    -- The tombstone names neither the subject nor any content: only that an
    -- erasure happened, when, by whom (the session's role) and how much it removed.
    insert into pgmem.memory_events (tenant_id, memory_id, subject, event, details, actor, created_at)
    values (p_tenant, null, null, 'erase', v_counts, session_user, p_now);
    return v_counts;
end
$$;

comment on function pgmem._erase_subject_rows(text, text, timestamptz) is
    'Locks, counts and deletes a subject row (its memories, links, events, inbox rows, sessions and tasks cascade) and writes the content-free erase tombstone, with the owner''s rights, for a session that may act for the tenant; NULL when the subject is unknown (internal; pgmem.erase_subject).';

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
    perform pgmem._require_unbound('pgmem.purge');
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
    -- Decay rows whose memory is gone: the ones just purged, and any a
    -- decay racing an erasure wrote (memory_decay has no foreign key,
    -- alembic 0015).
    delete from pgmem.memory_decay as d
    where (p_tenant is null or d.tenant_id = p_tenant)
      and not exists (select from pgmem.memories as m
                      where m.tenant_id = d.tenant_id and m.memory_id = d.memory_id);

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
    'The deletes of pgmem.purge with the owner''s rights, for a session that may act for the tenant (NULL: every tenant, owner sessions only): due memories go with their memory_decay rows (and any orphaned one), their events lose content, done and expired failed inbox rows go (internal).';

-- The deletes of the session and task layers (revision 0005 revoked DELETE
-- on their tables from the app roles, as 0002 did for the long-term ones).

create or replace function pgmem._delete_closed_turns(p_tenant text, p_now timestamptz)
returns bigint
language plpgsql
volatile
-- security definer: app roles hold no DELETE privilege (see the header).
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_count bigint;
begin
    perform pgmem._require_session_for(p_tenant);
    perform pgmem._require_unbound('pgmem.expire_sessions');
    -- Turns go after the retention; the session row and its summaries stay
    -- until the subject is erased.
    with gone as (
        delete from pgmem.session_messages as m
        using pgmem.sessions as s,
              -- The cut-off in a subquery: Citus refuses a STABLE expression on a
              -- column in a DELETE's own WHERE (docs/scaling.md).
              (select x.tenant_id, p_now - x.session_retention as closed_before
               from pgmem.settings as x) as st
        where s.tenant_id = m.tenant_id and s.subject = m.subject and s.session_id = m.session_id
          and st.tenant_id = s.tenant_id and s.status = 'closed'
          and s.closed_at < st.closed_before
          and (p_tenant is null or m.tenant_id = p_tenant)
        returning 1
    )
    select pg_catalog.count(*) into v_count from gone;
    return v_count;
end
$$;

comment on function pgmem._delete_closed_turns(text, timestamptz) is
    'Deletes the turns of sessions closed longer than the tenant''s session_retention before p_now, with the owner''s rights, for a session that may act for the tenant (NULL: every tenant, owner sessions only); returns how many (internal; pgmem.expire_sessions).';

-- What forget leaves nowhere: the forgotten texts' copies outside
-- pgmem.memories. A turn said in a session rests in session_messages (the
-- window), in the inbox job that carried it to the worker, and in the
-- session's extractive summaries (a line per turn that left the window,
-- "- user (turn N): ...", and "- fact: ..." lines). Each copy becomes the
-- marker [forgotten]. An LLM summary paraphrases and cannot be matched;
-- it is left as written (docs say so).
create or replace function pgmem._scrub_forgotten(p_tenant text, p_subject text, p_texts text[])
returns bigint
language plpgsql
volatile
-- security definer: app roles hold no UPDATE on session_messages or
-- session_summaries (see the header).
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_texts text[];
    v_seqs jsonb;
    v_scrubbed bigint;
    v_more bigint;
begin
    perform pgmem._require_session_for(p_tenant);
    perform pgmem._require_subject(p_tenant, array[p_subject]);
    v_texts := array(select distinct pg_catalog.btrim(t.text) from pg_catalog.unnest(p_texts) as t (text)
                     where pg_catalog.btrim(t.text) <> '');
    if v_texts = '{}' then
        return 0;
    end if;
    with scrubbed as (
        update pgmem.session_messages as m
        set content = '[forgotten]', metadata = '{}'
        where m.tenant_id = p_tenant and m.subject = p_subject and pg_catalog.btrim(m.content) = any (v_texts)
        returning m.session_id, m.seq
    )
    select coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(c.session_id, c.seq)), '[]'), pg_catalog.count(*)
    into v_seqs, v_scrubbed
    from scrubbed as c;
    -- Extractive summary lines of those turns, and any line quoting a text.
    update pgmem.session_summaries as s
    set summary = (select pg_catalog.string_agg(
                              case when exists (select from pg_catalog.jsonb_array_elements(v_seqs) as q (v)
                                                where q.v ->> 0 = s.session_id
                                                  and l.line ~ ('^- [a-z]+ \(turn ' || (q.v ->> 1) || '\):'))
                                     or exists (select from pg_catalog.unnest(v_texts) as t (text)
                                                where pg_catalog.strpos(l.line, t.text) > 0)
                                   then '- [forgotten]' else l.line end,
                              E'\n' order by l.i)
                   from pg_catalog.unnest(pg_catalog.string_to_array(s.summary, E'\n')) with ordinality as l (line, i))
    where s.tenant_id = p_tenant and s.subject = p_subject and s.method = 'extractive'
      and (exists (select from pg_catalog.jsonb_array_elements(v_seqs) as q (v)
                   where q.v ->> 0 = s.session_id and (q.v ->> 1)::bigint between s.from_seq and s.through_seq)
           or exists (select from pg_catalog.unnest(v_texts) as t (text) where pg_catalog.strpos(s.summary, t.text) > 0));
    get diagnostics v_more = row_count;
    v_scrubbed := v_scrubbed + v_more;
    -- The queued turns that carried them (done ones wait for purge).
    update pgmem.inbox as i
    set payload = pg_catalog.jsonb_set(i.payload, '{messages}',
                      (select pg_catalog.jsonb_agg(
                                  case when pg_catalog.btrim(e.msg ->> 'content') = any (v_texts)
                                       then e.msg || '{"content": "[forgotten]"}' else e.msg end
                                  order by e.i)
                       from pg_catalog.jsonb_array_elements(i.payload -> 'messages') with ordinality as e (msg, i)))
    where i.tenant_id = p_tenant and i.subject = p_subject and i.job = 'turn'
      and pg_catalog.jsonb_typeof(i.payload -> 'messages') = 'array'
      and exists (select from pg_catalog.jsonb_array_elements(i.payload -> 'messages') as e (msg)
                  where pg_catalog.btrim(e.msg ->> 'content') = any (v_texts));
    get diagnostics v_more = row_count;
    return v_scrubbed + v_more;
end
$$;

comment on function pgmem._scrub_forgotten(text, text, text[]) is
    'Replaces the copies of forgotten texts of p_subject outside pgmem.memories with [forgotten]: session turns, the lines of extractive summaries that quote them, and the messages of inbox turn jobs; returns how many rows changed. Owner rights, for a session that may act for p_tenant (internal; pgmem.forget).';

create or replace function pgmem._clear_task_steps(p_tenants text[], p_task_ids bigint[])
returns bigint
language plpgsql
volatile
-- security definer: app roles hold no DELETE privilege (see the header).
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text;
    v_ids bigint[];
    v_deleted bigint;
    v_count bigint := 0;
begin
    -- Parallel arrays: task p_task_ids[i] of tenant p_tenants[i]. One delete
    -- per tenant, the tenant in a variable (Citus routes it to one shard).
    for v_tenant, v_ids in
        select k.tenant_id, pg_catalog.array_agg(k.task_id)
        from rows from (pg_catalog.unnest(p_tenants), pg_catalog.unnest(p_task_ids)) as k(tenant_id, task_id)
        group by k.tenant_id
    loop
        perform pgmem._require_session_for(v_tenant);
        perform pgmem._require_subject(v_tenant, array(select t.subject from pgmem.tasks as t
                                                       where t.tenant_id = v_tenant and t.task_id = any (v_ids)));
        delete from pgmem.task_steps as s where s.tenant_id = v_tenant and s.task_id = any (v_ids);
        get diagnostics v_deleted = row_count;
        v_count := v_count + v_deleted;
    end loop;
    return v_count;
end
$$;

comment on function pgmem._clear_task_steps(text[], bigint[]) is
    'Deletes the recorded steps of tasks (p_task_ids[i] of tenant p_tenants[i]) with the owner''s rights, for a session that may act for each tenant; returns how many (internal; pgmem.finish_task, pgmem.expire_tasks).';
