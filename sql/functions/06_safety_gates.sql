-- Gates of the safety rules of 05_safety.sql.
--
-- Cheap necessary conditions for the rules' expressions. Compiling a regular
-- expression costs far more than matching it, and a backend keeps only 32
-- compiled (PostgreSQL's regexp cache): with the 18 secret rules on top of
-- the injection rules, folds and text helpers, a single remember of a text
-- holding a digit compiled most of its expressions again (~40 ms instead of
-- ~4). Each rule gets a gate from its own pattern, tested without any
-- expression: one of the literal strings every match contains occurs in the
-- text (LIKE on the lower-cased text), and the text holds at least as many
-- ASCII digits as every match does. A text failing the gate cannot match,
-- so the expression is not even compiled.
--
-- pgmem._regex_gate reads a rule's gate off its pattern; the gates of every
-- rule are derived once, whenever these files are applied, and written into
-- pgmem._safety_gates as constants, which the filters of
-- 07_safety_filters.sql test (pgmem._gate_open) before a rule's expression.

create or replace function pgmem._gate_better(p_a text, p_b text)
returns text
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_a text[];
    v_b text[];
    v_a_short integer;
    v_b_short integer;
begin
    -- Of two sets of literals (strings separated by U+0001, NULL: none),
    -- the more selective: the longer shortest string, then fewer strings.
    if p_a is null or p_b is null then
        return coalesce(p_a, p_b);
    end if;
    v_a := pg_catalog.string_to_array(p_a, pg_catalog.chr(1));
    v_b := pg_catalog.string_to_array(p_b, pg_catalog.chr(1));
    select pg_catalog.min(pg_catalog.length(x)) into v_a_short from pg_catalog.unnest(v_a) as x;
    select pg_catalog.min(pg_catalog.length(x)) into v_b_short from pg_catalog.unnest(v_b) as x;
    if v_a_short > v_b_short
       or (v_a_short = v_b_short and pg_catalog.cardinality(v_a) <= pg_catalog.cardinality(v_b)) then
        return p_a;
    end if;
    return p_b;
end
$$;

comment on function pgmem._gate_better(text, text) is
    'The more selective of two literal sets of pgmem._regex_gate (internal).';

create or replace function pgmem._regex_gate(p_pattern text, p_flags text, out likes text[], out digits integer)
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- One frame per open group, the top-level expression first. A set of
    -- literals is kept as one text, its strings separated by U+0001; NULL:
    -- no literal is known to occur (the branch can match without one).
    v_sep constant text := pg_catalog.chr(1);
    v_best text[] := array[null];      -- best set of the current branch
    v_digits integer[] := array[0];    -- digits every match of the branch holds
    v_run text[] := array[''];         -- literal characters just read
    v_union text[] := array[''];       -- union of the finished branches
    v_dead boolean[] := array[false];  -- a finished branch had no set
    v_min integer[] := array[null];    -- least digits of the finished branches
    v_look boolean[] := array[false];  -- a lookaround: matches nothing itself
    v_ahead boolean[] := array[false]; -- a positive one: the text holds what it reads
    v_floor integer[] := array[0];     -- digits a positive lookaround of the branch read
    v_top integer := 1;
    -- The pattern's characters: indexing text by position would scan it
    -- from the start each time.
    v_chars text[] := pg_catalog.string_to_array(p_pattern, null);
    v_len integer := pg_catalog.cardinality(v_chars);
    v_i integer := 1;
    v_c text;
    v_e text;
    v_j integer;
    v_quant integer;   -- the least repetition of the quantifier after an atom
    v_repeat boolean;  -- it may repeat the atom
    v_set text;        -- what a closed group requires
    v_count integer;
    v_class text;
    v_strings text[];
begin
    digits := 0;
    if p_pattern is null or pg_catalog.ltrim(coalesce(p_flags, ''), 'gi') <> '' then
        return;  -- unknown flags (expanded syntax, newline modes): no gate
    end if;
    while v_i <= v_len loop
        v_c := v_chars[v_i];
        v_set := null;
        v_count := 0;
        v_class := null;
        if v_c = '(' then
            -- A group ends the literal run before it.
            v_best[v_top] := pgmem._gate_better(v_best[v_top], nullif(v_run[v_top], ''));
            v_run[v_top] := '';
            v_top := v_top + 1;
            v_best[v_top] := null; v_digits[v_top] := 0; v_run[v_top] := ''; v_union[v_top] := '';
            v_dead[v_top] := false; v_min[v_top] := null; v_look[v_top] := false;
            v_ahead[v_top] := false; v_floor[v_top] := 0;
            if v_chars[v_i + 1] = '?' then
                v_e := v_chars[v_i + 2];
                if v_e = ':' then
                    v_i := v_i + 2;
                elsif v_e in ('=', '!') then
                    v_look[v_top] := true; v_ahead[v_top] := v_e = '='; v_i := v_i + 2;
                elsif v_e = '<' and v_chars[v_i + 3] in ('=', '!') then
                    v_look[v_top] := true; v_ahead[v_top] := v_chars[v_i + 3] = '='; v_i := v_i + 3;
                else
                    likes := null; return;  -- embedded options or unknown syntax
                end if;
            end if;
            v_i := v_i + 1;
            continue;
        elsif v_c = '|' or v_c = ')' then
            v_best[v_top] := pgmem._gate_better(v_best[v_top], nullif(v_run[v_top], ''));
            v_run[v_top] := '';
            if v_best[v_top] is null then
                v_dead[v_top] := true;
            else
                v_union[v_top] := v_union[v_top] || v_sep || v_best[v_top];
            end if;
            -- A positive lookaround reads the text the branch matches in, so
            -- its digits are the text's too, but it may read the same ones
            -- as the branch: the greater of the two, not their sum.
            v_min[v_top] := least(v_min[v_top], greatest(v_digits[v_top], v_floor[v_top]));
            v_best[v_top] := null; v_digits[v_top] := 0; v_floor[v_top] := 0;
            v_i := v_i + 1;
            if v_c = '|' then
                continue;
            end if;
            if v_top = 1 then
                likes := null; digits := 0; return;  -- unbalanced
            end if;
            -- A closed group: an atom requiring its branches' union.
            if not v_look[v_top] and not v_dead[v_top] then
                v_set := pg_catalog.ltrim(v_union[v_top], v_sep);
            end if;
            v_count := case when v_look[v_top] then 0 else v_min[v_top] end;
            v_top := v_top - 1;
            -- (Unless a quantifier follows it, which could make it optional.)
            if v_ahead[v_top + 1] and coalesce(v_chars[v_i], '') not in ('?', '*', '{') then
                v_floor[v_top] := greatest(v_floor[v_top], v_min[v_top + 1]);
            end if;
        elsif v_c = '[' then
            -- A bracket expression: one character of a set, a digit when
            -- the set holds ASCII digits only.
            v_j := v_i + 1;
            if v_chars[v_j] = '^' then v_j := v_j + 1; end if;
            if v_chars[v_j] = ']' then v_j := v_j + 1; end if;
            while v_j <= v_len and v_chars[v_j] <> ']' loop
                if v_chars[v_j] = '\' then
                    v_j := v_j + 1;
                elsif v_chars[v_j] || v_chars[v_j + 1] in ('[:', '[.', '[=') then
                    v_j := pg_catalog.strpos(pg_catalog.array_to_string(v_chars[v_j + 2:], ''),
                                             v_chars[v_j + 1] || ']') + v_j + 2;
                end if;
                v_j := v_j + 1;
            end loop;
            if v_j > v_len then
                likes := null; digits := 0; return;
            end if;
            v_class := pg_catalog.array_to_string(v_chars[v_i + 1:v_j - 1], '');
            v_count := case when v_class operator(pg_catalog.~) '^([0-9](-[0-9])?)+$' then 1 else 0 end;
            v_class := '';  -- no literal
            v_i := v_j + 1;
        elsif v_c = '\' then
            v_e := v_chars[v_i + 1];
            v_i := v_i + 2;
            if v_e operator(pg_catalog.~) '^[A-Za-z0-9]$' then
                if v_e in ('m', 'M', 'y', 'Y', 'A', 'Z') then
                    -- Zero-width: ends the literal run.
                    v_best[v_top] := pgmem._gate_better(v_best[v_top], nullif(v_run[v_top], ''));
                    v_run[v_top] := '';
                    continue;
                elsif v_e not in ('d', 'D', 's', 'S', 'w', 'W') then
                    likes := null; digits := 0; return;  -- \u, \x, back references...
                end if;
                v_class := '';  -- a class of characters (\d counts no ASCII digit)
            else
                v_class := v_e;  -- an escaped character stands for itself
            end if;
        elsif v_c = '.' then
            v_class := '';
            v_i := v_i + 1;
        elsif v_c in ('^', '$') then
            v_best[v_top] := pgmem._gate_better(v_best[v_top], nullif(v_run[v_top], ''));
            v_run[v_top] := '';
            v_i := v_i + 1;
            continue;
        elsif v_c in ('*', '+', '?', '{') then
            likes := null; digits := 0; return;  -- a quantifier of nothing
        else
            v_class := v_c;
            v_i := v_i + 1;
        end if;
        -- The atom just read (a group: v_set, v_count; a character: v_class,
        -- '' when not a literal) and the quantifier after it.
        v_quant := 1;
        v_repeat := false;
        v_e := v_chars[v_i];
        if v_e in ('*', '?') then
            v_quant := 0; v_i := v_i + 1;
        elsif v_e = '+' then
            v_repeat := true; v_i := v_i + 1;
        elsif v_e = '{' then
            v_j := pg_catalog.strpos(pg_catalog.array_to_string(v_chars[v_i:], ''), '}');
            v_e := pg_catalog.array_to_string(v_chars[v_i + 1:v_i + v_j - 2], '');
            if v_j = 0 or not v_e operator(pg_catalog.~) '^[0-9]+(,[0-9]*)?$' then
                likes := null; digits := 0; return;
            end if;
            v_quant := pg_catalog.split_part(v_e, ',', 1)::integer;
            v_repeat := true;
            v_i := v_i + v_j;
        end if;
        if v_chars[v_i] = '?' and (v_quant <> 1 or v_repeat) then
            v_i := v_i + 1;  -- non-greedy
        end if;
        if v_class is null then  -- a group
            if v_quant > 0 then
                v_best[v_top] := pgmem._gate_better(v_best[v_top], v_set);
                v_digits[v_top] := v_digits[v_top] + v_count * v_quant;
            end if;
        elsif v_class = '' then  -- a character of a class
            v_best[v_top] := pgmem._gate_better(v_best[v_top], nullif(v_run[v_top], ''));
            v_run[v_top] := '';
            v_digits[v_top] := v_digits[v_top] + v_count * v_quant;
        elsif v_quant = 0 then  -- an optional literal ends the run before it
            v_best[v_top] := pgmem._gate_better(v_best[v_top], nullif(v_run[v_top], ''));
            v_run[v_top] := '';
        else
            v_run[v_top] := v_run[v_top] || v_class;
            if v_class between '0' and '9' then
                v_digits[v_top] := v_digits[v_top] + v_quant;
            end if;
            if v_repeat then
                -- Repeated: the run up to one of it, then a new run from it.
                v_best[v_top] := pgmem._gate_better(v_best[v_top], v_run[v_top]);
                v_run[v_top] := v_class;
            end if;
        end if;
    end loop;
    if v_top <> 1 then
        likes := null; digits := 0; return;  -- unbalanced
    end if;
    v_best[1] := pgmem._gate_better(v_best[1], nullif(v_run[1], ''));
    if v_best[1] is null then
        v_dead[1] := true;
    else
        v_union[1] := v_union[1] || v_sep || v_best[1];
    end if;
    digits := least(v_min[1], greatest(v_digits[1], v_floor[1]));
    if not v_dead[1] then
        v_strings := pg_catalog.string_to_array(pg_catalog.ltrim(v_union[1], v_sep), v_sep);
        likes := array(select distinct '%' || pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
                                          pg_catalog.lower(s.s), '\', '\\'), '%', '\%'), '_', '\_') || '%'
                       from pg_catalog.unnest(v_strings) as s(s)
                       order by 1);
    end if;
end
$$;

comment on function pgmem._regex_gate(text, text) is
    'A cheap necessary condition for a match of the regular expression p_pattern (flags g and i only): LIKE patterns one of which the lower-cased text contains (NULL: none known) and the least number of ASCII digits it holds (internal).';

create or replace function pgmem._derive_safety_gates(p_category text)
returns text[]
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- One gate per rule of the category, in rule order, as one text whose
    -- fields are separated by U+0001: the least number of ASCII digits a
    -- match holds, then the LIKE patterns of which the lower-cased text
    -- holds one ('%' for a rule without any). One text a rule, not a row of
    -- a two-dimensional array: such an array is rectangular (a row of the
    -- secret rules holds one to a hundred patterns, so most rows were
    -- padded), and a test of one row sliced it out of all the others: 5.5 us
    -- a gate, 1.1 us as one text.
    select pg_catalog.array_agg(
               pg_catalog.array_to_string(array[g.digits::text] || coalesce(g.likes, array['%']), pg_catalog.chr(1))
               order by r.rule_order)
    from pgmem.safety_rules() as r
    cross join lateral pgmem._regex_gate(r.pattern, r.flags) as g
    where r.category = p_category
$$;

comment on function pgmem._derive_safety_gates(text) is
    'The gates of one category of pgmem.safety_rules(), one text per rule in rule order (the least ASCII digits, then LIKE patterns, separated by U+0001), derived from the rules'' patterns by pgmem._regex_gate (internal; pgmem._safety_gates holds them as constants).';

-- The gates as constants, derived here once, whenever these files are
-- applied. Deriving them takes ~25 ms a category, and the callers' DECLARE
-- (plpgsql, folded when planned) made every new session pay it, and pay it
-- again once its first temporary table changed what pg_temp names in their
-- search_path, which re-plans them: ~50 of the ~140 ms of a session's first
-- remember. No SET clause and every name qualified: the call is inlined.
do $$
begin
    execute pg_catalog.format(
        $f$create or replace function pgmem._safety_gates(p_category text)
           returns pg_catalog.text[]
           language sql
           immutable parallel safe
           security invoker
           as %L$f$,
        (select 'select case p_category '
                || pg_catalog.string_agg(pg_catalog.format('when %L then %L::pg_catalog.text[]', c.category,
                                                           pgmem._derive_safety_gates(c.category)),
                                         ' ' order by c.category)
                || ' end'
         from (select distinct r.category from pgmem.safety_rules() as r) as c));
end
$$;

comment on function pgmem._safety_gates(text) is
    'The gates of one category of pgmem.safety_rules(), one text per rule in rule order (the least ASCII digits, then LIKE patterns, separated by U+0001): pgmem._derive_safety_gates''s, as constants written when the SQL files are applied (internal; pgmem._redact_many and pgmem._detect_injection_many test them before a rule''s expression).';

-- _ascii_digits and _gate_open: no SET clause, every name qualified, so
-- they are inlined into the loops of _redact_many and _detect_injection_many.
create or replace function pgmem._ascii_digits(p_text text)
returns integer
language sql
immutable parallel safe
security invoker
as $$
    select pg_catalog.length(p_text) operator(pg_catalog.-)
           pg_catalog.length(pg_catalog.translate(p_text, '0123456789', ''))
$$;

comment on function pgmem._ascii_digits(text) is
    'How many ASCII digits the text holds (internal; what the gates of pgmem._safety_gates count).';

drop function if exists pgmem._gate_open(text[], integer, text, integer);
create or replace function pgmem._gate_open(p_gate text, p_lower text, p_digits integer)
returns boolean
language sql
immutable parallel safe
security invoker
as $$
    -- A rule's gate of pgmem._safety_gates, for a text given lower-cased
    -- and with its pgmem._ascii_digits: false means it cannot match the rule.
    select p_digits operator(pg_catalog.>=) pg_catalog.split_part(p_gate, pg_catalog.chr(1), 1)::integer
           and p_lower operator(pg_catalog.~~) any ((pg_catalog.string_to_array(p_gate, pg_catalog.chr(1)))[2:])
$$;

comment on function pgmem._gate_open(text, text, integer) is
    'Whether a text, given lower-cased and with its ASCII digits, passes a rule''s gate (an element of pgmem._safety_gates) (internal; false: the rule cannot match it).';
