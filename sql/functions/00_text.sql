-- Text helpers: normalization for exact-duplicate detection and full-text
-- search that works for Chinese (and other CJK text) as well as English.
--
-- PostgreSQL's default parser does not split Chinese: a whole run of Han
-- characters becomes one token, so a query word never matches inside it.
-- CJK runs are indexed as overlapping character bigrams (the approach of
-- Lucene's CJKAnalyzer), everything else goes through the 'english'
-- configuration (stemming, stop words). Both functions are immutable:
-- memories.fts and memories.content_hash hold their results (kept by the
-- trigger pgmem._memories_text), so changing their bodies requires a
-- migration that recomputes those columns.

-- _normalize, _content_hash: no SET clause, every name qualified, so they
-- are inlined where they are called (per pair of the contradiction rules,
-- per row written); a SET clause made each call switch search_path.
create or replace function pgmem._normalize(p_content text)
returns text
language sql
immutable strict parallel safe
security invoker
as $$
    -- Case, white space and punctuation (ASCII and CJK) do not make a new fact.
    select pg_catalog.btrim(pg_catalog.regexp_replace(
        pg_catalog.regexp_replace(pg_catalog.lower(p_content),
                                  '[[:punct:]。，、；：？！“”‘’（）《》【】…—～·「」『』]+', ' ', 'g'),
        '\s+', ' ', 'g'))
$$;

comment on function pgmem._normalize(text) is
    'Lower-cases, folds white space and drops punctuation: two contents with the same result are the same fact.';

create or replace function pgmem._content_hash(p_content text)
returns text
language sql
immutable strict parallel safe
security invoker
as $$
    select pg_catalog.md5(pgmem._normalize(p_content))
$$;

comment on function pgmem._content_hash(text) is
    'md5 of the normalized content; memories.content_hash, used for exact-duplicate detection.';

-- A store item's content_hash is its key's, not its text's: the unique index
-- of active contents (memories_active_content) then holds one active item
-- per key, and no item meets another memory, item or not, as a duplicate.
-- The prefix keeps it apart from every md5 of a content.
create or replace function pgmem._item_hash(p_key text)
returns text
language sql
immutable strict parallel safe
security invoker
as $$
    select 'key:' || pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(p_key, 'UTF8')), 'hex')
$$;

comment on function pgmem._item_hash(text) is
    'memories.content_hash of a store item: ''key:'' and the sha256 of its key (internal; pgmem.put_items).';

-- plpgsql, not sql: a SQL function with a FROM clause is never inlined, and
-- then parses and plans its body again in every statement that calls it;
-- plpgsql keeps the plan for the session.
create or replace function pgmem._cjk_bigrams(p_text text)
returns text
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- A byte a character: no CJK character (nor the regular expression
    -- below run, which would take one of the 32 a backend keeps compiled).
    if pg_catalog.octet_length(p_text) = pg_catalog.length(p_text) then
        return '';
    end if;
    -- Han, Hiragana/Katakana and Hangul runs become space-separated
    -- overlapping bigrams; a run of one character stays a unigram.
    return (select coalesce(pg_catalog.string_agg(pg_catalog.substr(m.run, i.pos, 2), ' ' order by m.n, i.pos), '')
    from (
        select r[1] as run, row_number() over () as n
        from pg_catalog.regexp_matches(p_text, '[㐀-䶿一-鿿豈-﫿぀-ヿ가-힯]+', 'g') as r
    ) as m
    cross join lateral pg_catalog.generate_series(1, greatest(pg_catalog.length(m.run) - 1, 1)) as i(pos));
end
$$;

comment on function pgmem._cjk_bigrams(text) is
    'Overlapping character bigrams of every CJK run in the text, space-separated (for full-text search).';

-- _tsv and _query_terms: no SET clause, every name qualified, so they are
-- inlined into the statements that call them (each memory written, each
-- recall) instead of parsed again in each.
create or replace function pgmem._tsv(p_content text)
returns tsvector
language sql
immutable strict parallel safe
security invoker
as $$
    -- Text of a byte a character holds no CJK run to take out.
    select pg_catalog.to_tsvector('pg_catalog.english'::pg_catalog.regconfig,
               case when pg_catalog.octet_length(p_content) operator(pg_catalog.=) pg_catalog.length(p_content)
                    then p_content
                    else pg_catalog.regexp_replace(p_content, '[㐀-䶿一-鿿豈-﫿぀-ヿ가-힯]+', ' ', 'g') end)
        operator(pg_catalog.||)
           pg_catalog.to_tsvector('pg_catalog.simple'::pg_catalog.regconfig, pgmem._cjk_bigrams(p_content))
$$;

comment on function pgmem._tsv(text) is
    'Full-text vector of a memory: English words stemmed, CJK text as character bigrams.';

-- Whether a memory of this source is an episode rather than a fact: a stated
-- turn is the record of what was said, a store item an app's state. No
-- contradiction rule compares one, so it holds no contradiction features, and
-- no profile shows one. An episode and a fact with the same content are two
-- memories: the unique index memories_active_content holds one active row
-- per content among episodes and one among facts, with this test written
-- out as its fourth column (source in ('turn', 'store')), which must list
-- the same sources. SQL without a SET clause, so a query inlines it.
create or replace function pgmem._episode_source(p_source text)
returns boolean
language sql
immutable parallel safe
security invoker
as $$
    select p_source operator(pg_catalog.=) any (array['turn', 'store']::pg_catalog.text[])
$$;

comment on function pgmem._episode_source(text) is
    'Whether a memory of this source (turn, store) is an episode, never a fact: it holds no contradiction features and no profile line, and meets only episodes as the same content (internal).';

-- memories.content_hash and memories.fts were stored generated columns until
-- revision 0007. PostgreSQL 15 recomputes every stored generated column on
-- every UPDATE of a row, whatever it sets: each access_count + 1 of recall's
-- reinforcement and each rescoring by decay ran _tsv and _content_hash again
-- (~0.25 ms a row), and a recomputed tsvector that had been stored compressed
-- no longer equals the old one byte for byte, which ruled out a HOT update
-- (the row went into every index again, HNSW included). The trigger
-- memories_text (BEFORE INSERT OR UPDATE OF content, content_hash, fts)
-- computes them when the content is written only; it fires after
-- memories_guard (triggers fire in name order), so from the redacted content,
-- as the generated columns did.
create or replace function pgmem._memories_text()
returns trigger
language plpgsql
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Set whatever the statement gave: the columns follow the content only.
    new.content_hash := case when new.item_key is null then pgmem._content_hash(new.content)
                             else pgmem._item_hash(new.item_key) end;
    new.fts := pgmem._tsv(new.content);
    -- What the contradiction rules read of it (13_conflict.sql), once: a new
    -- row the owner gives them for keeps them (pgmem._store_memories, with
    -- the features pgmem._vouch computed of that very text); any other
    -- write gets them computed, whatever it gave. A stated turn or a store
    -- item holds none: the rules never compare one (pgmem._neighbours). The
    -- trigger fires on a change of source too, so they follow it.
    if pgmem._episode_source(new.source) then
        new.conflict_terms := null;
        new.conflict_marks := null;
    elsif tg_op <> 'INSERT' or new.conflict_terms is null or new.conflict_marks is null
          or not pgmem._bypasses_rls() then
        new.conflict_terms := pgmem._conflict_terms(new.content);
        new.conflict_marks := pgmem._conflict_marks(new.content);
    end if;
    return new;
end
$$;

comment on function pgmem._memories_text() is
    'Row trigger on pgmem.memories: content_hash (a store item''s: its key''s), fts, conflict_terms and conflict_marks from the content (none for a stated turn or store item), when a row is inserted or its content written; an INSERT by a superuser or BYPASSRLS role (pgmem._store_memories) that supplies both features keeps them (internal).';

create or replace function pgmem._tsquery_lexeme(p_lexeme text)
returns text
language sql
immutable strict parallel safe
security invoker
as $$
    -- A lexeme quoted for tsquery input (quotes and backslashes doubled),
    -- which takes it whole. to_tsquery would parse it again: a compound
    -- lexeme such as 'self-driv' (from "self-driving") became the phrase
    -- 'self-driv' <-> 'self' <-> 'driv', and no memory holds 'driv' (its
    -- "driving" stems to 'drive'), so the term never matched. No SET clause
    -- and qualified operators: inlined where it is called.
    select '''' operator(pg_catalog.||)
           pg_catalog.replace(pg_catalog.replace(p_lexeme, '\', '\\'), '''', '''''')
           operator(pg_catalog.||) ''''
$$;

comment on function pgmem._tsquery_lexeme(text) is
    'A lexeme as tsquery input that matches it whole, as a memory''s fts holds it (not parsed again): cast it to tsquery (internal).';

-- plpgsql, not sql: a SQL function with a SET clause is planned at every
-- call; recall builds its query with this one.
create or replace function pgmem._terms_query(p_lexemes text[])
returns tsquery
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- Any matching term counts (OR): ranking, not the query, decides order.
    return (select coalesce(pg_catalog.string_agg(pgmem._tsquery_lexeme(l.lexeme), ' | '), '')::pg_catalog.tsquery
            from pg_catalog.unnest(p_lexemes) as l(lexeme));
end
$$;

comment on function pgmem._terms_query(text[]) is
    'OR-query over the given lexemes, each matched whole (pgmem._tsquery_lexeme).';

create or replace function pgmem._tsq(p_query text)
returns tsquery
language sql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Lexemes already normalized by _tsv, matched whole.
    select pgmem._terms_query(pg_catalog.tsvector_to_array(pgmem._tsv(p_query)))
$$;

comment on function pgmem._tsq(text) is
    'OR-query over the terms of a search text, tokenized exactly as memories are (see pgmem._tsv).';

create or replace function pgmem._query_terms(p_query text)
returns text[]
language sql
immutable parallel safe
security invoker
as $$
    -- NULL for no query, a blank one or one of stop words only: nothing to match on.
    select case when pg_catalog.btrim(coalesce(p_query, '')) operator(pg_catalog.<>) '' then
               nullif(pg_catalog.tsvector_to_array(pgmem._tsv(p_query)), '{}'::pg_catalog.text[])
           end
$$;

comment on function pgmem._query_terms(text) is
    'The terms recall matches a search text on (its lexemes, as pgmem._tsv tokenizes memories); NULL when none.';

create or replace function pgmem._term_weight(p_n bigint, p_df bigint)
returns real
language sql
immutable strict parallel safe
security invoker
as $$
    -- BM25's idf: a rare word ("violin") counts for more than one in half the
    -- subject's memories (a speaker's name). No SET clause and qualified
    -- operators: inlined where it is called.
    select pg_catalog.ln(1 operator(pg_catalog.+)
                         ((p_n operator(pg_catalog.+) 1)::double precision
                          operator(pg_catalog./) (p_df operator(pg_catalog.+) 1)))::real
$$;

comment on function pgmem._term_weight(bigint, bigint) is
    'Weight of a query term in recall: ln(1 + (N + 1) / (df + 1)), N rows searched, df of them holding the term.';
