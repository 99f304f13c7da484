-- Time zones: the day a relative date ("tomorrow", 下周三) or a time in a
-- question ("last week", 昨天) names depends on where the subject lives.
-- pgmem.timeexpr (Python) does the calendar; the database keeps the zone: a
-- subject's own (pgmem.subjects.time_zone) or else its tenant's
-- (pgmem.settings.time_zone, 'UTC' by default; revision 0011).
--
-- plpgsql, not sql: these files are applied after every revision, also
-- before 0011 adds the columns, and a SQL function's body is checked when it
-- is created.

create or replace function pgmem.time_zone(p_subject text default null)
returns text
language plpgsql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
    v_zone text;
begin
    -- Two statements, not one: on Citus a query joining the subject's shard with
    -- the settings reference table runs on the shard's node, and is refused when
    -- the transaction changed settings there with owner rights
    -- (pgmem._record_embedding_model).
    v_zone := (select s.time_zone from pgmem.subjects as s where s.tenant_id = v_tenant and s.subject = p_subject);
    if v_zone is null then
        v_zone := (select st.time_zone from pgmem.settings as st
                   where st.tenant_id in (v_tenant, '_default')
                   order by st.tenant_id = '_default'
                   limit 1);
    end if;
    return coalesce(v_zone, 'UTC');
end
$$;

comment on function pgmem.time_zone(text) is
    'The IANA time zone relative dates of p_subject are resolved in: the subject''s own (pgmem.set_time_zone), else the tenant''s settings.time_zone (default UTC).';

create or replace function pgmem.set_time_zone(p_subject text, p_time_zone text)
returns text
language plpgsql
volatile
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenant text := pgmem._require_tenant();
begin
    if p_subject is null or pg_catalog.btrim(p_subject) = '' or pg_catalog.length(p_subject) > 256 then
        raise exception 'p_subject must be 1 to 256 characters, not blank'
            using errcode = 'PM010', hint = 'The subject is whom the memory is about, usually the user id.';
    end if;
    if p_time_zone is not null then
        begin
            perform pg_catalog.timezone(p_time_zone, pg_catalog.now());
        exception when invalid_parameter_value then
            raise exception 'unknown time zone "%"', p_time_zone
                using errcode = 'PM110',
                      hint = 'Use an IANA name such as Europe/Berlin or Asia/Shanghai (pg_timezone_names), or NULL for the tenant''s.';
        end;
    end if;
    perform pgmem._require_subject(v_tenant, array[p_subject]);
    insert into pgmem.subjects as s (tenant_id, subject, time_zone)
    values (v_tenant, p_subject, p_time_zone)
    on conflict (tenant_id, subject) do update set time_zone = excluded.time_zone;
    return pgmem.time_zone(p_subject);
end
$$;

comment on function pgmem.set_time_zone(text, text) is
    'Sets p_subject''s own time zone (an IANA name; NULL: follow the tenant''s settings.time_zone) and returns the zone now in effect. PM010 bad subject, PM110 unknown zone.';

-- A turn scoped to now ("today", "this time", "for now", 今天, 这次, 暂时)
-- states a wish for the moment, not a standing fact: what is extracted
-- from it expires with the subject's day and never retires the standing
-- fact (the prompt still lets it win while it is in the window).
create or replace function pgmem._now_scope_pattern()
returns text
language sql
immutable parallel safe
security invoker
as $$
    select '\m(for )?(today|tonight)\M|\mthis (time|once|evening|afternoon|morning)\M|\mfor (now|the moment|the time being)\M'
           '|\mjust (for )?(now|today)\M|今天|今晚|这次|这一次|这回|暂时|临时|眼下'
$$;

comment on function pgmem._now_scope_pattern() is
    'The words that scope a turn to now (today, this time, for now, 今天, 这次, 暂时…), a regular expression over lower-cased text (internal).';

create or replace function pgmem.now_scoped(p_subject text, p_texts text[], p_at timestamptz default null)
returns table (ordinality integer, expires_at timestamptz)
language sql
stable
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- The end of the subject's day at p_at, for each text scoped to now.
    select t.n::integer,
           (pg_catalog.date_trunc('day', coalesce(p_at, pg_catalog.now()) at time zone z.zone) + interval '1 day')
               at time zone z.zone
    from pg_catalog.unnest(p_texts) with ordinality as t(text, n)
    cross join (select pgmem.time_zone(p_subject) as zone) as z
    where pg_catalog.lower(t.text) operator(pg_catalog.~) pgmem._now_scope_pattern()
$$;

comment on function pgmem.now_scoped(text, text[], timestamptz) is
    'For each of p_texts scoped to now (today, this time, for now, 今天, 这次, 暂时…) its position and the end of p_subject''s day at p_at (its time zone): when what is extracted from it expires. The write path stores such facts without retiring the standing ones.';
