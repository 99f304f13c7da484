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
begin
    return coalesce(
        (select s.time_zone from pgmem.subjects as s where s.tenant_id = v_tenant and s.subject = p_subject),
        (select st.time_zone from pgmem.settings as st
         where st.tenant_id in (v_tenant, '_default')
         order by st.tenant_id = '_default'
         limit 1),
        'UTC');
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
    insert into pgmem.subjects as s (tenant_id, subject, time_zone)
    values (v_tenant, p_subject, p_time_zone)
    on conflict (tenant_id, subject) do update set time_zone = excluded.time_zone;
    return pgmem.time_zone(p_subject);
end
$$;

comment on function pgmem.set_time_zone(text, text) is
    'Sets p_subject''s own time zone (an IANA name; NULL: follow the tenant''s settings.time_zone) and returns the zone now in effect. PM010 bad subject, PM110 unknown zone.';
