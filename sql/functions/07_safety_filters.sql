-- Safety filters of the write path: the functions that apply the rules of
-- pgmem.safety_rules() (05_safety.sql), each rule's expression only where
-- its gate (06_safety_gates.sql) lets a text through.
--   * folding: pgmem._safety_fold applies fold steps in order, and
--     pgmem._safety_clean gives the text as pgmem stores it.
--   * prompt injection: pgmem._detect_injection_many (a batch) and
--     pgmem.detect_injection (one text) name the first rule a text matches,
--     in any of its views: folded, loose, and the decoded base64 runs, the
--     percent-decoded, ROT13 and reversed text, and the text with each word
--     reversed in its place.
--   * secrets and personal data: pgmem._redact_many (a batch, with the
--     kinds replaced), pgmem.redact (one text), pgmem._redacted and
--     pgmem._redact_objects (triple objects, read with their predicate as
--     label) replace matches by "[REDACTED:<kind>]". A rule with luhn set
--     replaces only the matches whose check digits hold
--     (pgmem._replace_checked: pgmem._luhn_valid, pgmem._iban_valid).
-- The rules' columns are read once a session (pgmem._safety_column, called
-- in the callers' declarations), not queried for every text.

-- Replaced by the four-argument form below (one fold engine for every view).
drop function if exists pgmem._safety_fold(text);

-- The rules' columns as constant arrays: called with constant arguments in
-- a plpgsql declaration, it runs once a session, where reading
-- pgmem.safety_rules() in each call cost ~0.5 ms (a single remember read
-- the rules six times).
create or replace function pgmem._safety_column(p_category text, p_kind text, p_column text)
returns text[]
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pg_catalog.array_agg(case p_column when 'rule' then r.rule
                                              when 'kind' then r.kind
                                              when 'pattern' then r.pattern
                                              when 'replacement' then r.replacement
                                              -- A character map without an ASCII character says
                                              -- so: pgmem._safety_fold skips it for ASCII text.
                                              when 'flags' then case when r.flags = 'translate'
                                                                      and r.pattern operator(pg_catalog.!~) '[\x01-\x7F]'
                                                                     then 'translate non-ascii'
                                                                     else r.flags end
                                              when 'luhn' then r.luhn::text end
                                order by r.rule_order)
    from pgmem.safety_rules() as r
    where r.category = p_category and (p_kind is null or r.kind = p_kind)
$$;

comment on function pgmem._safety_column(text, text, text) is
    'One column (rule, kind, pattern, replacement, flags or luhn) of the rules of pgmem.safety_rules() of a category (and kind, unless NULL), in rule order; flags of a character map holding no ASCII character read ''translate non-ascii'' (internal).';

create or replace function pgmem._safety_fold(p_text text, p_patterns text[], p_replacements text[], p_flags text[])
returns text
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_text text := p_text;
    v_i integer;
    -- Whether the text is plain ASCII: a byte a character.
    v_ascii boolean := pg_catalog.octet_length(p_text) = pg_catalog.length(p_text);
begin
    for v_i in 1 .. coalesce(pg_catalog.cardinality(p_patterns), 0) loop
        if p_flags[v_i] in ('translate', 'translate non-ascii') then
            -- translate() compares every character of the text with every one
            -- of the map (60-100 us a map on a conversation turn); a map that
            -- holds no ASCII character (pgmem._safety_column says which, once
            -- a session) leaves ASCII text as it is.
            continue when v_ascii and p_flags[v_i] = 'translate non-ascii';
            v_text := pg_catalog.translate(v_text, p_patterns[v_i], p_replacements[v_i]);
        else
            v_text := pg_catalog.regexp_replace(v_text, p_patterns[v_i], p_replacements[v_i], p_flags[v_i]);
        end if;
        v_ascii := pg_catalog.octet_length(v_text) = pg_catalog.length(v_text);
    end loop;
    return v_text;
end
$$;

comment on function pgmem._safety_fold(text, text[], text[], text[]) is
    'Applies fold steps of pgmem.safety_rules (character maps or regexp replacements) in order (internal).';

create or replace function pgmem._safety_clean(p_text text)
returns text
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    -- The 'stored' folds, read once a session.
    v_patterns text[] := pgmem._safety_column('fold', 'stored', 'pattern');
    v_replacements text[] := pgmem._safety_column('fold', 'stored', 'replacement');
    v_flags text[] := pgmem._safety_column('fold', 'stored', 'flags');
begin
    -- The text as it is stored: invisible characters removed, full-width
    -- forms and exotic spaces folded.
    return pgmem._safety_fold(p_text, v_patterns, v_replacements, v_flags);
end
$$;

comment on function pgmem._safety_clean(text) is
    'Text as pgmem stores it: invisible characters removed, full-width forms and exotic spaces folded to ASCII (internal).';

-- What a text must hold for its ROT13, reversed or word-reversed view to
-- pass the 'decoded' prefilter, as one expression on the text itself: the
-- prefilter's words rotated and written backwards, and for a phrase ("you
-- are") each of its words backwards (a word-reversed text holds each one
-- reversed, in some order). Most text holds none, and its three views
-- (~0.1 ms a text) are not built. NULL when the prefilter is not a plain
-- alternation of words: then every view is built.
create or replace function pgmem._hidden_prefilter()
returns text
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select case when p.pattern operator(pg_catalog.~) '^[A-Za-z ]+(\|[A-Za-z ]+)*$' then
               (select pg_catalog.string_agg(distinct x.literal, '|')
                from pg_catalog.unnest(pg_catalog.string_to_array(p.pattern, '|')) as a(alternative)
                cross join lateral (
                    select pgmem._safety_fold(a.alternative, pgmem._safety_column('fold', 'rot13', 'pattern'),
                                              pgmem._safety_column('fold', 'rot13', 'replacement'),
                                              pgmem._safety_column('fold', 'rot13', 'flags'))
                    union all
                    select pg_catalog.reverse(a.alternative)
                    union all
                    select pg_catalog.reverse(w.word)
                    from pg_catalog.unnest(pg_catalog.string_to_array(a.alternative, ' ')) as w(word)
                    where w.word <> '') as x(literal))
           end
    from (select (pgmem._safety_column('prefilter', 'decoded', 'pattern'))[1] as pattern) as p
$$;

comment on function pgmem._hidden_prefilter() is
    'A necessary condition, as an expression on a text, for its ROT13, reversed or word-reversed view to pass the decoded prefilter of pgmem.safety_rules(); NULL when that prefilter is not a plain alternation of words (internal; pgmem._detect_injection_many).';

create or replace function pgmem._detect_injection_many(p_contents text[])
returns table(item integer, rule text)
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
-- The rules are read once a session; each item then costs only the regular
-- expressions (no query per item). item = position in p_contents.
-- Views of one text, each matched against every rule: the folded text,
-- its loose view, and the same two for the decoded text of every base64
-- run (16+ characters) that decodes to UTF-8, for the percent-decoded text,
-- the text rotated by ROT13 and, for Latin-script text, the text reversed
-- and the text with each word reversed in its place.
declare
    -- The rules, read once a session.
    v_prefilter text := (pgmem._safety_column('prefilter', 'injection', 'pattern'))[1];
    v_decoded_prefilter text := (pgmem._safety_column('prefilter', 'decoded', 'pattern'))[1];
    v_hidden_prefilter text := pgmem._hidden_prefilter();
    v_rules text[] := pgmem._safety_column('injection', null, 'rule');
    v_patterns text[] := pgmem._safety_column('injection', null, 'pattern');
    v_stored_p text[] := pgmem._safety_column('fold', 'stored', 'pattern');
    v_stored_r text[] := pgmem._safety_column('fold', 'stored', 'replacement');
    v_stored_f text[] := pgmem._safety_column('fold', 'stored', 'flags');
    v_inj_p text[] := pgmem._safety_column('fold', 'injection', 'pattern');
    v_inj_r text[] := pgmem._safety_column('fold', 'injection', 'replacement');
    v_inj_f text[] := pgmem._safety_column('fold', 'injection', 'flags');
    v_loose_p text[] := pgmem._safety_column('fold', 'loose', 'pattern');
    v_loose_r text[] := pgmem._safety_column('fold', 'loose', 'replacement');
    v_loose_f text[] := pgmem._safety_column('fold', 'loose', 'flags');
    v_rot13_p text[] := pgmem._safety_column('fold', 'rot13', 'pattern');
    v_rot13_r text[] := pgmem._safety_column('fold', 'rot13', 'replacement');
    v_rot13_f text[] := pgmem._safety_column('fold', 'rot13', 'flags');
    v_text text;
    v_views text[];
    v_sources text[];
    v_source text;
    v_run text;
    v_decoded text;
    v_view text;
    v_loose text;
    v_r integer;
    v_items integer[] := '{}';     -- the views of all texts, flattened: whose text each is
    v_texts text[] := '{}';
    v_found text[];                -- per text: the first rule it breaks
    v_k integer;
    -- Each injection rule's gate (pgmem._safety_gates), a constant, and each
    -- view's lower-cased text and ASCII digits for it.
    v_gates text[] := pgmem._safety_gates('injection');
    v_lowers text[] := '{}';
    v_digits integer[] := '{}';
begin
    if not exists (select from pg_catalog.unnest(p_contents) as c(content) where c.content is not null) then
        return;  -- nothing to read (a batch pgmem._vouch checked already)
    end if;
    item := 0;
    foreach v_text in array coalesce(p_contents, '{}') loop
        item := item + 1;
        continue when v_text is null;
        v_text := pgmem._safety_fold(v_text, v_stored_p, v_stored_r, v_stored_f);
        v_sources := array[v_text];
        for v_run in
            select m.m[1] from pg_catalog.regexp_matches(v_text, '(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{16,})=*', 'g') as m(m)
        loop
            continue when pg_catalog.length(v_run) % 4 = 1;
            begin
                v_decoded := pg_catalog.convert_from(
                    pg_catalog.decode(v_run || pg_catalog.repeat('=', (4 - pg_catalog.length(v_run) % 4) % 4), 'base64'),
                    'UTF8');
                v_sources := v_sources || pgmem._safety_fold(v_decoded, v_stored_p, v_stored_r, v_stored_f);
            exception when others then
                null;  -- not base64 of UTF-8 text: nothing hidden in it
            end;
        end loop;
        -- Text hidden by a reversible transform: percent-encoding, ROT13,
        -- written backwards (Latin script only: reversed CJK text is read
        -- by no rule, and would double the work on every Chinese text).
        if v_text OPERATOR(pg_catalog.~) '%[0-9A-Fa-f]{2}' then
            begin
                select pg_catalog.convert_from(pg_catalog.string_agg(
                           case when m.m[1] is not null then pg_catalog.decode(pg_catalog.substr(m.m[1], 2), 'hex')
                                else pg_catalog.convert_to(m.m[2], 'UTF8') end, ''::bytea order by m.i), 'UTF8')
                into v_decoded
                from pg_catalog.regexp_matches(v_text, '(%[0-9A-Fa-f]{2})|([^%]+|%)', 'g') with ordinality as m(m, i);
                v_sources := v_sources || pgmem._safety_fold(v_decoded, v_stored_p, v_stored_r, v_stored_f);
            exception when others then
                null;  -- not percent-encoded UTF-8 text
            end;
        end if;
        -- (A dotted or dotless i is matched by i or I under a Turkic
        -- collation in a view, but not by their rotated letters in the text:
        -- such a text builds its views whatever the expression says.)
        if v_text OPERATOR(pg_catalog.~) '[A-Za-z]'
           and (v_hidden_prefilter is null or v_text OPERATOR(pg_catalog.~*) v_hidden_prefilter
                or pg_catalog.strpos(v_text, 'İ') > 0 or pg_catalog.strpos(v_text, 'ı') > 0) then
            v_decoded := pgmem._safety_fold(v_text, v_rot13_p, v_rot13_r, v_rot13_f);
            if v_decoded OPERATOR(pg_catalog.~*) v_decoded_prefilter then
                v_sources := v_sources || v_decoded;
            end if;
            if v_text OPERATOR(pg_catalog.!~) '[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]' then
                v_decoded := pg_catalog.reverse(v_text);
                if v_decoded OPERATOR(pg_catalog.~*) v_decoded_prefilter then
                    v_sources := v_sources || v_decoded;
                end if;
                -- Each word written backwards in its place ("erongi lla
                -- suoiverp"): the whole text reversed reads its words in
                -- reverse order, which no rule reads.
                if pg_catalog.strpos(v_text, ' ') > 0 then
                    select pg_catalog.string_agg(pg_catalog.reverse(w.w), ' ' order by w.i)
                    into v_decoded
                    from pg_catalog.unnest(pg_catalog.string_to_array(v_text, ' ')) with ordinality as w(w, i);
                    if v_decoded OPERATOR(pg_catalog.~*) v_decoded_prefilter then
                        v_sources := v_sources || v_decoded;
                    end if;
                end if;
            end if;
        end if;
        v_views := '{}';
        foreach v_source in array v_sources loop
            v_view := pgmem._safety_fold(pg_catalog.normalize(v_source, 'NFKC'), v_inj_p, v_inj_r, v_inj_f);
            v_loose := pgmem._safety_fold(v_view, v_loose_p, v_loose_r, v_loose_f);
            -- A loose view equal to its view (a fifth of conversation
            -- turns) would only be read by every rule again.
            v_views := v_views || v_view || case when v_loose <> v_view then array[v_loose] else '{}' end;
        end loop;
        foreach v_view in array v_views loop
            if v_view OPERATOR(pg_catalog.~*) v_prefilter then
                v_items := v_items || item;
                v_texts := v_texts || v_view;
                v_lowers := v_lowers || pg_catalog.lower(v_view);
                v_digits := v_digits || pgmem._ascii_digits(v_view);
            end if;
        end loop;
    end loop;
    -- Rule by rule over every view, not text by text: a backend keeps 32
    -- compiled expressions, fewer than the rules and folds together, so
    -- text by text each text compiled most rules again.
    v_found := pg_catalog.array_fill(null::text, array[item]);
    for v_r in 1 .. coalesce(pg_catalog.cardinality(v_patterns), 0) loop
        for v_k in 1 .. pg_catalog.cardinality(v_texts) loop
            if v_found[v_items[v_k]] is null
               and pgmem._gate_open(v_gates[v_r], v_lowers[v_k], v_digits[v_k])
               and v_texts[v_k] OPERATOR(pg_catalog.~*) v_patterns[v_r] then
                v_found[v_items[v_k]] := v_rules[v_r];
            end if;
        end loop;
    end loop;
    return query
        select f.item::integer, f.rule
        from pg_catalog.unnest(v_found) with ordinality as f(rule, item)
        where f.rule is not null
        order by f.item;
end
$$;

comment on function pgmem._detect_injection_many(text[]) is
    'For each element of p_contents that matches an injection rule: its position and the rule (internal; see pgmem.detect_injection).';

-- How long a text is for the injection probe's gate: its characters, a CJK
-- one (kana, hanzi, hangul) counting as four, so eight words weigh about the
-- same in any script (pgmem.lab.probe.probe_length in Python).
create or replace function pgmem._probe_length(p_text text)
returns integer
language sql
immutable parallel safe
security invoker
as $$
    -- operator(...) binds left to right whatever the operator: parenthesised.
    select pg_catalog.char_length(p_text)
           operator(pg_catalog.+) (3 operator(pg_catalog.*)
                                   pg_catalog.regexp_count(p_text, '[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]'))
$$;

comment on function pgmem._probe_length(text) is
    'A text''s length as the injection probe''s gate measures it: characters, a CJK one counting as four (internal).';

-- The injection probe (pgmem._injection_probe, 05_safety_probe.sql) on the
-- embeddings of a batch: what the rules miss when an attack is worded
-- otherwise or in another language, the probe reads from what the text
-- means. Only vectors of the model the probe was trained for, and of its
-- dimension, and texts of the probe's least length: a short text says too
-- little for it, and is left to the rules. No probe for p_model (or no
-- model): nothing flagged.
drop function if exists pgmem._detect_injection_probe(text, public.vector[]);
create or replace function pgmem._detect_injection_probe(p_model text, p_embeddings public.vector[],
                                                         p_contents text[])
returns table(item integer, rule text)
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select e.i::integer, 'embedding_probe'::text
    from pgmem._injection_probe(p_model) as p
    cross join pg_catalog.unnest(p_embeddings) with ordinality as e(embedding, i)
    where e.embedding is not null
      and public.vector_dims(e.embedding) operator(pg_catalog.=) public.vector_dims(p.weights)
      and pgmem._probe_length(p_contents[e.i]) operator(pg_catalog.>=) p.min_length
      -- bias + embedding·weights, the logit (<#> is the negative inner product)
      and p.bias operator(pg_catalog.-) (e.embedding operator(public.<#>) p.weights)
          operator(pg_catalog.>=) p.cutoff
$$;

comment on function pgmem._detect_injection_probe(text, public.vector[], text[]) is
    'For each embedding of p_embeddings (of model p_model) whose text in p_contents is long enough (pgmem._probe_length) and that the model''s injection probe (pgmem._injection_probe) scores at or above its cut-off: its position and the rule embedding_probe (internal; pgmem._check_texts).';

create or replace function pgmem.detect_injection(p_content text)
returns text
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return (select d.rule from pgmem._detect_injection_many(array[p_content]) as d);
end
$$;

comment on function pgmem.detect_injection(text) is
    'Name of the first prompt-injection rule (pgmem.safety_rules) the text matches, or NULL when it is clean. pgmem.remember rejects such text.';

create or replace function pgmem._luhn_valid(p_digits text)
returns boolean
-- plpgsql for its cached plan: as a SQL function with a SET clause it was
-- planned again at every call (~0.1 ms for each number redaction looks at).
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Luhn (ISO/IEC 7812-1): from the right, double every second digit.
    return (
        select pg_catalog.length(d.s) between 13 and 19
           and (select pg_catalog.sum(case when (pg_catalog.length(d.s) - i.pos) % 2 = 1
                                           then (x.v * 2) / 10 + (x.v * 2) % 10
                                           else x.v end) % 10 = 0
                from pg_catalog.generate_series(1, pg_catalog.length(d.s)) as i(pos)
                cross join lateral (select pg_catalog.substr(d.s, i.pos, 1)::integer as v) as x)
        from (select pg_catalog.regexp_replace(p_digits, '[^0-9]', '', 'g') as s) as d);
end
$$;

comment on function pgmem._luhn_valid(text) is
    'True when the digits of the text (separators ignored) are 13-19 long and pass the Luhn check (internal).';

-- ISO 13616: the country and check digits moved to the end, letters as
-- 10..35, the number mod 97 is 1. Numeric holds the up to 70 digits.
create or replace function pgmem._iban_valid(p_text text)
returns boolean
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_iban text := pg_catalog.upper(pg_catalog.regexp_replace(p_text, '[^A-Za-z0-9]', '', 'g'));
    v_digits text;
begin
    if pg_catalog.length(v_iban) not between 15 and 34 or v_iban !~ '^[A-Z]{2}[0-9]{2}[A-Z0-9]+$' then
        return false;
    end if;
    v_iban := pg_catalog.substr(v_iban, 5) || pg_catalog.left(v_iban, 4);
    select pg_catalog.string_agg(case when c.ch between 'A' and 'Z' then (pg_catalog.ascii(c.ch) - 55)::text else c.ch end,
                                 '' order by c.i)
    into v_digits
    from pg_catalog.unnest(pg_catalog.string_to_array(v_iban, null)) with ordinality as c (ch, i);
    return pg_catalog.mod(v_digits::numeric, 97) = 1;
end
$$;

comment on function pgmem._iban_valid(text) is
    'True when the text (separators ignored) is an IBAN of 15-34 characters whose mod-97 check (ISO 13616) holds (internal).';

-- Before IBANs it knew only the Luhn check.
drop function if exists pgmem._replace_luhn(text, text, text, text);

create or replace function pgmem._replace_checked(p_text text, p_pattern text, p_replacement text, p_flags text, p_kind text)
returns text
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_result text := p_text;
    v_match text;
begin
    -- regexp_replace cannot test each match: replace the ones whose check
    -- digits hold (capture group 1 of the pattern) one by one: mod 97 for
    -- an IBAN, Luhn for a card number.
    for v_match in select m.m[1] from pg_catalog.regexp_matches(p_text, p_pattern, p_flags) as m(m) loop
        if p_kind = 'iban' then
            -- The last groups of an IBAN may hold letters, so the match can
            -- run on into the words after it ("… 0130 00 OK", "… please"):
            -- drop trailing groups until the check holds or none is left.
            while not pgmem._iban_valid(v_match) and pg_catalog.strpos(v_match, ' ') > 0 loop
                v_match := pg_catalog.regexp_replace(v_match, ' +[^ ]*$', '');
            end loop;
        end if;
        if (case p_kind when 'iban' then pgmem._iban_valid(v_match) else pgmem._luhn_valid(v_match) end) then
            v_result := pg_catalog.replace(v_result, v_match, p_replacement);
        end if;
    end loop;
    return v_result;
end
$$;

comment on function pgmem._replace_checked(text, text, text, text, text) is
    'Replaces the matches of a number pattern whose check digits hold: mod 97 for p_kind iban, Luhn otherwise (internal; used for rules with luhn = true).';

create or replace function pgmem._redact_many(p_contents text[])
returns table(item integer, content text, kinds text[])
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
-- Like _detect_injection_many: the rules are read once a session. Returns
-- one row per element of p_contents, in order.
declare
    -- The rules, read once a session.
    v_prefilter text := (pgmem._safety_column('prefilter', 'secret', 'pattern'))[1];
    v_kinds text[] := pgmem._safety_column('secret', null, 'kind');
    v_patterns text[] := pgmem._safety_column('secret', null, 'pattern');
    v_replacements text[] := pgmem._safety_column('secret', null, 'replacement');
    v_flags text[] := pgmem._safety_column('secret', null, 'flags');
    v_luhn boolean[] := pgmem._safety_column('secret', null, 'luhn')::boolean[];
    v_fold_patterns text[] := pgmem._safety_column('fold', 'stored', 'pattern');
    v_fold_replacements text[] := pgmem._safety_column('fold', 'stored', 'replacement');
    v_fold_flags text[] := pgmem._safety_column('fold', 'stored', 'flags');
    v_n integer := coalesce(pg_catalog.cardinality(v_patterns), 0);
    v_new text;
    v_r integer;
    -- Each secret rule's gate (pgmem._safety_gates): a constant.
    v_gates text[] := pgmem._safety_gates('secret');
    v_lower text;
    v_digits integer;
begin
    item := 0;
    foreach content in array coalesce(p_contents, '{}') loop
        item := item + 1;
        kinds := '{}';
        if content is null then
            return next;
            continue;
        end if;
        -- What is stored is the folded text: a secret split by a zero-width
        -- character or written in full-width digits is one secret.
        content := pgmem._safety_fold(content, v_fold_patterns, v_fold_replacements, v_fold_flags);
        if content OPERATOR(pg_catalog.~*) v_prefilter then
            v_lower := pg_catalog.lower(content);
            v_digits := pgmem._ascii_digits(content);
            for v_r in 1 .. v_n loop
                -- A text failing the rule's gate cannot match: its expression
                -- is not even compiled.
                continue when not pgmem._gate_open(v_gates[v_r], v_lower, v_digits);
                if not v_luhn[v_r] then
                    v_new := pg_catalog.regexp_replace(content, v_patterns[v_r], v_replacements[v_r], v_flags[v_r]);
                elsif (case when pg_catalog.strpos(v_flags[v_r], 'i') > 0 then content OPERATOR(pg_catalog.~*) v_patterns[v_r]
                            else content OPERATOR(pg_catalog.~) v_patterns[v_r] end) then
                    v_new := pgmem._replace_checked(content, v_patterns[v_r], v_replacements[v_r], v_flags[v_r], v_kinds[v_r]);
                else
                    continue;
                end if;
                if v_new is distinct from content then
                    content := v_new;
                    v_lower := pg_catalog.lower(content);
                    v_digits := pgmem._ascii_digits(content);
                    if not v_kinds[v_r] = any (kinds) then
                        kinds := kinds || v_kinds[v_r];
                    end if;
                end if;
            end loop;
        end if;
        return next;
    end loop;
end
$$;

comment on function pgmem._redact_many(text[]) is
    'pgmem.redact over an array, with the kinds of data replaced in each item (internal; pgmem.remember records the kinds, never the values).';

-- plpgsql for its cached plan: a SQL function holding a subquery is never
-- inlined, and its statement would be planned at every call. Each distinct
-- text is redacted once: a batch's session ids, agents and predicates
-- repeat, and a session id's digit sent each one through the secret rules
-- (~0.1 ms a row).
create or replace function pgmem._redacted(p_texts text[])
returns text[]
language plpgsql
stable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_distinct text[] := array(select distinct t.t from pg_catalog.unnest(p_texts) as t(t) where t.t is not null);
begin
    return array(select r.content
                 from pg_catalog.unnest(p_texts) with ordinality as t(t, i)
                 left join (select v_distinct[d.item] as t, d.content from pgmem._redact_many(v_distinct) as d) as r
                        on r.t = t.t
                 order by t.i);
end
$$;

comment on function pgmem._redacted(text[]) is
    'The redacted form of each element of p_texts, in order, NULL for NULL, each distinct text redacted once (pgmem._redact_many without the kinds; internal).';

create or replace function pgmem._redact_objects(p_predicates text[], p_objects text[])
returns table(item integer, object text, kinds text[])
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- A triple's object is redacted with its predicate as the label, so that
    -- (user, password, hunter2) loses "hunter2" just as "password: hunter2"
    -- does, and (user, phone, 13812345678) loses the number.
    return query
        select r.item,
               case when pg_catalog.starts_with(r.content, l.label) then pg_catalog.substr(r.content, pg_catalog.length(l.label) + 1)
                    else pgmem.redact(l.object) end,
               r.kinds
        from pgmem._redact_many(array(
                 select coalesce(x.predicate, '') || ': ' || x.object
                 from rows from (pg_catalog.unnest(p_predicates), pg_catalog.unnest(p_objects))
                      with ordinality as x(predicate, object, i)
                 order by x.i)) as r
        join (select x.i::integer as i, coalesce(x.predicate, '') || ': ' as label, x.object
              from rows from (pg_catalog.unnest(p_predicates), pg_catalog.unnest(p_objects))
                   with ordinality as x(predicate, object, i)) as l on l.i = r.item
        order by r.item;
end
$$;

comment on function pgmem._redact_objects(text[], text[]) is
    'Redacts triple objects (pgmem.redact rules), each read with its predicate as label: one row per element, in order (internal).';

create or replace function pgmem.redact(p_content text)
returns text
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return (select r.content from pgmem._redact_many(array[p_content]) as r);
end
$$;

comment on function pgmem.redact(text) is
    'The text with secrets and personal data replaced by [REDACTED:<kind>] (kinds: phone, email, id_card, ssn, passport, bank_card, password, pin, api_key, token, private_key, address; rules in pgmem.safety_rules). pgmem.remember applies it before storing.';
