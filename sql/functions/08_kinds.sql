-- Memory kinds: the one definition. Write (PM013), recall (p_kinds, the
-- recency half-life), context (section order and heading) and lifecycle
-- (pgmem._decay_policy) all read pgmem.kinds(); Python's
-- pgmem.extract.KINDS is checked against it by tests/test_kinds.py.
--
-- Adding a kind: a row here, plus a migration that widens the CHECK on
-- pgmem.memories.kind and adds its settings column half_life_<kind>
-- (tests/test_kinds.py fails until all three agree), plus the docs.

-- kinds() and _half_lives() have no SET clause and name nothing unqualified,
-- so PostgreSQL inlines them into the statements that read them; a SQL
-- function it cannot inline parses and plans its body again in every
-- statement that calls it.
create or replace function pgmem.kinds()
returns table(kind text, section integer, heading text, half_life_setting text)
language sql
immutable parallel safe
security invoker
as $$
    values ('preference', 1, 'Preferences', 'half_life_preference'),
           ('semantic', 2, 'Facts', 'half_life_semantic'),
           ('episodic', 3, 'Episodes', 'half_life_episodic'),
           ('procedural', 4, 'Procedures', 'half_life_procedural')
$$;

comment on function pgmem.kinds() is
    'The memory kinds: name, section order and heading in pgmem.context, and the pgmem.settings column holding the kind''s half-life (recency in recall, decay in maintenance).';

-- Each kind's half-life: the settings column pgmem.kinds() names, read
-- directly. The body is written here from pgmem.kinds(), whenever these files
-- are applied: picking the column by name at run time (the row as jsonb)
-- cost ~0.3 ms of every recall.
do $$
begin
    execute pg_catalog.format(
        $f$create or replace function pgmem._half_lives(p_settings pgmem.settings)
           returns table(kind text, half_life interval)
           language sql
           stable parallel safe
           security invoker
           as %L$f$,
        (select 'select h.kind, h.half_life from (values '
                || pg_catalog.string_agg(pg_catalog.format('(%L, p_settings.%I)', k.kind, k.half_life_setting),
                                         ', ' order by k.n)
                || ') as h(kind, half_life)'
         from pgmem.kinds() with ordinality as k(kind, section, heading, half_life_setting, n)));
end
$$;

comment on function pgmem._half_lives(pgmem.settings) is
    'Each memory kind''s half-life in one tenant''s settings row (internal).';

create or replace function pgmem._kind_list()
returns text
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pg_catalog.string_agg(k.kind, ', ' order by k.section) from pgmem.kinds() as k
$$;

comment on function pgmem._kind_list() is
    'The memory kinds as one comma-separated text, for error hints (internal).';
