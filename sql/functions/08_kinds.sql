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

create or replace function pgmem._half_lives(p_settings pgmem.settings)
returns table(kind text, half_life interval)
language sql
stable parallel safe
security invoker
as $$
    -- The settings column named by pgmem.kinds(); stable, not immutable:
    -- interval text depends on IntervalStyle. The row becomes jsonb once.
    select k.kind, (s.settings operator(pg_catalog.->>) k.half_life_setting)::pg_catalog.interval
    from (select pg_catalog.to_jsonb(p_settings) as settings) as s
    cross join pgmem.kinds() as k
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
