-- The memory change stream. Every change of a memory is a row of
-- pgmem.memory_events; a tenant reads its own with pgmem.changes (row-level
-- security), and is woken by a notification on its own channel
-- (pgmem.change_channel: a random name, so no other tenant can LISTEN to it)
-- after each statement that adds its events. On Citus the events are
-- written on the workers, whose notifications reach no coordinator session:
-- there a consumer polls pgmem.changes.

create or replace function pgmem._notify_changes()
returns trigger
language plpgsql
volatile
-- security definer: the channels are the owner's, read for the tenants
-- whose events the statement added.
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Not on a Citus worker, which holds no channels (nor their table).
    if pg_catalog.to_regclass('pgmem._change_channels') is null then
        return null;
    end if;
    perform pg_catalog.pg_notify(c.channel, a.last::text)
    from (select x.tenant_id, pg_catalog.max(x.event_id) as last from added as x group by x.tenant_id) as a
    join pgmem._change_channels as c on c.tenant_id = a.tenant_id;
    return null;
end
$$;

comment on function pgmem._notify_changes() is
    'Statement trigger on pgmem.memory_events: notifies each tenant''s change channel (one that asked for one) of the newest event_id the statement added (internal).';

create or replace function pgmem._change_channel(p_tenant text)
returns text
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_channel text;
begin
    perform pgmem._require_session_for(p_tenant);
    insert into pgmem._change_channels (tenant_id) values (p_tenant) on conflict do nothing;
    select c.channel into v_channel from pgmem._change_channels as c where c.tenant_id = p_tenant;
    return v_channel;
end
$$;

comment on function pgmem._change_channel(text) is
    'pgmem.change_channel for p_tenant, which the session must be able to act for (internal).';

create or replace function pgmem.change_channel()
returns text
language sql
volatile
security invoker
as $$
    select pgmem._change_channel(pgmem._require_tenant())
$$;

comment on function pgmem.change_channel() is
    'The bound tenant''s notification channel for memory changes (made at the first call): LISTEN to it, and after each statement that records changes a notification carries the newest event_id; read the events with pgmem.changes. The name is random: no other tenant can know it.';

-- Where a reader of the stream stands: after the event at (xact, event_id),
-- written "xact/event_id" (0/0: the start). Event ids are drawn at insert,
-- not at commit, so events are read in (xact, event_id) order and only those
-- of transactions older than every one still running: any event that
-- becomes visible later belongs to a newer transaction, and sorts after the
-- position already reached. Nothing is missed, nothing read twice.
create or replace function pgmem.changes(p_after text default '0/0', p_subject text default null,
                                         p_limit integer default 100)
returns table(stream_position text, event_id bigint, memory_id bigint, subject text, event text, actor text,
              old_content text, new_content text, details jsonb, created_at timestamptz)
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- A variable, not a subquery: Citus routes the statement to the tenant's
    -- shard by it.
    v_tenant text := pgmem._require_tenant();
    v_xact xid8;
    v_event bigint;
    -- The oldest transaction still running: events of older ones are final.
    v_horizon xid8 := pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot());
begin
    if p_after is null or p_after !~ '^[0-9]{1,20}/[0-9]{1,19}$' then
        raise exception 'p_after must be a position such as ''0/0'' (the start) or one pgmem.changes returned, not %',
                        coalesce(pg_catalog.quote_literal(p_after), 'NULL')
            using errcode = 'PM021', hint = 'Pass the position of the last event you read.';
    end if;
    if p_limit is null or p_limit not between 1 and 10000 then
        raise exception 'p_limit must be 1 to 10000, not %', coalesce(p_limit::text, 'NULL')
            using errcode = 'PM021', hint = 'Read the stream a page at a time.';
    end if;
    -- On Citus the events' transactions are the workers', which the
    -- coordinator's snapshot cannot order: there the stream is read as it
    -- stands (docs/scaling.md).
    if pgmem._distributed() then
        v_horizon := null;
    end if;
    v_xact := pg_catalog.split_part(p_after, '/', 1)::xid8;
    v_event := pg_catalog.split_part(p_after, '/', 2)::bigint;
    return query
    select coalesce(e.xact, '0'::xid8)::text || '/' || e.event_id::text, e.event_id, e.memory_id, e.subject,
           e.event, e.actor, e.old_content, e.new_content, e.details, e.created_at
    from pgmem.memory_events as e
    where e.tenant_id = v_tenant
      and (coalesce(e.xact, '0'::xid8), e.event_id) > (v_xact, v_event)
      and (v_horizon is null or coalesce(e.xact, '0'::xid8) < v_horizon)
      and (p_subject is null or e.subject = p_subject)
    order by coalesce(e.xact, '0'::xid8), e.event_id
    limit p_limit;
end
$$;

comment on function pgmem.changes(text, text, integer) is
    'The bound tenant''s memory events after position p_after (''0/0'': from the start), of one subject or all, at most p_limit (1-10000), each with its stream_position: the change stream pgmem watch follows. Only events of transactions older than every one still running are returned, in (transaction, event) order: a reader that passes the last position back misses none and reads none twice.';

create or replace function pgmem.change_position()
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_horizon xid8 := case when not pgmem._distributed()
                           then pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()) end;
begin
    return coalesce((select coalesce(e.xact, '0'::xid8)::text || '/' || e.event_id::text
                     from pgmem.memory_events as e
                     where e.tenant_id = v_tenant
                       and (v_horizon is null or coalesce(e.xact, '0'::xid8) < v_horizon)
                     order by coalesce(e.xact, '0'::xid8) desc, e.event_id desc
                     limit 1), '0/0');
end
$$;

comment on function pgmem.change_position() is
    'The stream position of the bound tenant''s newest final event (''0/0'' for none): pgmem.changes after it returns only what is recorded from now on.';
