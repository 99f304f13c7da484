-- Contradictions without triples. A new fact's close neighbours among the
-- subject's active memories (cosine >= settings.conflict_threshold, or a
-- shared term, or the same one-valued attribute) are compared with it by
-- bilingual rules, pgmem.contradiction(old, new), one of:
--   'number'   the same words around other numbers, of a quantity (age,
--              budget, weight…) or said as a change:
--              "I am 30" / "I am 31", "我今年30岁" / "我今年31岁"
--   'negation' the same statement with the other polarity: "likes coffee" /
--              "no longer likes coffee", "我喜欢咖啡" / "我不喜欢咖啡了"
--   'antonym'  the same statement with one word of an antonym pair swapped:
--              "likes dark mode" / "now prefers light mode", 深色 / 浅色
--   'change'   a change marker (moved to, switched to, now, 搬到, 改成, 换成…)
--              and the same one-valued attribute (where one lives, works)
--              with another value: "lives in Hangzhou" / "moved to
--              Shanghai", "我住在杭州" / "我搬到上海了"
-- The words are data, in pgmem.conflict_vocabulary(), the one source.
-- Neighbours within conflict_threshold that no rule decides are left to the
-- worker's LLM judge (a 'judge' job), whose decision pgmem.resolve_conflict
-- applies. A rule hit is decided at once, under the subject's lock, before
-- the duplicate check: a contradicting near-duplicate is never absorbed.
-- Those judge jobs, the neighbour scan that feeds the rules and the
-- decisions applied to a contradiction are in 13_conflict_decisions.sql;
-- the confidence a supersession needs is in 13_confidence.sql.
--
-- The same features serve the duplicate check (12_remember.sql, step 4):
-- a statement stands for another only when it covers it (pgmem._covers).

create or replace function pgmem.conflict_vocabulary()
returns table(category text, name text, pattern text, partner text)
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Patterns are PostgreSQL regular expressions matched against lower-cased
    -- text (\m, \M: word boundaries; Chinese has none, so its words stand alone).
    values
        -- A statement of the other polarity. "n't" is spelled "not" first.
        ('negation', 'en', '\m(not|never|no longer|anymore|stopped|quit|gave up)\M', null::text),
        ('negation', 'zh', '不|没有|没|别再|戒了', null),
        -- A new value for something said before.
        ('change', 'en', '\m(no longer|now|nowadays|these days|switched to|switched|moved to|moved|'
                         'relocated to|changed to|instead|from now on)\M', null),
        ('change', 'zh', '不再|改成|改为|换成|换了|搬到|搬去|搬家到|搬家|跳槽到|跳槽|现在|如今|从今以后', null),
        -- One-valued attributes: a change of value replaces the old one.
        ('attribute', 'residence', '\m(lives?|living|lived|resides?|residing) in\M|\mmoved to\M|\mrelocated to\M'
                                   '|住在|住|搬到|搬去|搬家到|搬家|定居|家在', null),
        ('attribute', 'employer', '\mworks? (at|for)\M|\mworking (at|for)\M|\mjoined\M|\memployed (at|by)\M'
                                  -- 在<employer>工作: the words around the name, not the name
                                  '|在(?=\S{1,12}(工作|上班))|(?<=在\S{1,12})(工作|上班)|入职|跳槽到', null),
        -- Quantities a person has one of at a time: another number replaces it
        -- ("fact number 3" and "fact number 6" are two facts, "30 years old"
        -- and "31 years old" one).
        ('quantity', 'en', '\m(age[ds]?|aged|years? old|birthday|born|budget|salary|income|rent|weight|weighs|'
                           'height|tall|kg|lbs|pounds|cm|price|costs?|paid|pays|owes?|wakes? up|bedtime|'
                           'phone number|room number|floor)\M', null),
        ('quantity', 'zh', '岁|年龄|生日|出生|预算|工资|月薪|年薪|收入|房租|体重|身高|公斤|斤|厘米|米|价格|多少钱|元|块|'
                           '起床|睡觉|号码|楼', null),
        -- Antonym pairs: one of them in each fact, the rest alike.
        ('antonym', 'theme', '\mdark\M', '\mlight\M'),
        ('antonym', '主题', '深色|暗色|黑色', '浅色|亮色|白色'),
        ('antonym', 'temperature', '\m(hot|warm)\M', '\m(cold|cool|iced)\M'),
        ('antonym', '温度', '热|温', '冷|冰'),
        ('antonym', 'time of day', '\m(early|morning)\M', '\m(late|night|evening)\M'),
        ('antonym', '早晚', '早起|早上|早晨', '晚睡|晚上|熬夜|夜里'),
        ('antonym', 'length', '\m(short|brief|concise)\M', '\m(long|detailed|lengthy)\M'),
        ('antonym', '长短', '简短|简洁|简单', '详细|详尽'),
        ('antonym', 'tone', '\mformal\M', '\m(casual|informal)\M'),
        ('antonym', '语气', '正式', '随意|轻松'),
        ('antonym', 'units', '\mmetric\M', '\mimperial\M'),
        ('antonym', 'scale', '\mcelsius\M', '\mfahrenheit\M'),
        ('antonym', 'marital', '\mmarried\M', '\m(single|divorced)\M'),
        ('antonym', '婚姻', '已婚|结婚了', '单身|离婚'),
        ('antonym', 'sweetness', '\msweet\M', '\m(savory|savoury|salty)\M'),
        ('antonym', '口味', '甜', '咸|辣'),
        ('antonym', 'mind', '\mintrovert(ed)?\M', '\mextrovert(ed)?\M'),
        ('antonym', '性格', '内向', '外向')
$$;

comment on function pgmem.conflict_vocabulary() is
    'The words of the offline contradiction rules, the one source: negation markers, change markers, one-valued attributes, quantities and antonym pairs (category, name, pattern, partner), as PostgreSQL regular expressions over lower-cased text, English and Chinese.';

create or replace function pgmem._conflict_text(p_text text)
returns text
language sql
immutable strict parallel safe
security invoker
as $$
    -- Lower case, "don't"/"can’t" as "do not"/"can not", and dislike/hate as
    -- "not like" (讨厌 as 不喜欢): polarity has one spelling per language.
    -- (No SET clause, every name qualified: inlined where it is called.)
    select pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
               pg_catalog.replace(pg_catalog.lower(p_text), '’', ''''),
               'n''t\M', ' not', 'g'),
               '\m(dislike[sd]?|disliking|hate[sd]?|hating|detest[sd]?|can not stand)\M', 'not like', 'g'),
               '讨厌|不爱', '不喜欢', 'g')
$$;

comment on function pgmem._conflict_text(text) is
    'A fact as the contradiction rules read it: lower case, contractions and dislike words spelled as a negation of like (internal).';

-- Replaced by one expression in pgmem._conflict_terms.
drop function if exists pgmem._conflict_markers();

create or replace function pgmem._conflict_terms(p_text text, p_drop text[] default '{}')
returns text[]
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_text text := pgmem._conflict_text(p_text);
    v_pattern text;
begin
    -- What a fact says once its polarity, change markers and the words in
    -- p_drop (patterns) are taken out: the terms recall would match
    -- (pgmem._tsv: English stems, CJK bigrams), with liking spelled one way
    -- and the speaker left out. Each removed part becomes a space, so both
    -- facts of a pair are cut at the same places.
    foreach v_pattern in array p_drop
    loop
        v_text := pg_catalog.regexp_replace(v_text, v_pattern, ' ', 'g');
    end loop;
    -- The change patterns before the negation ones, as one expression (a
    -- backend keeps 32 compiled, and the write path uses more): at one place
    -- the longest wins, so 不再 is a change marker before 不 is a negation.
    -- (Constant calls of immutable functions: planned once a session.)
    v_text := pg_catalog.regexp_replace(
                  v_text, pgmem._conflict_pattern('change') || '|' || pgmem._conflict_pattern('negation'), ' ', 'g');
    v_text := pg_catalog.regexp_replace(v_text,
                  '\m(prefers?|preferred|preferring|loves?|loved|loving|enjoys?|enjoyed|enjoying|likes?|liked'
                  '|liking|wants?|wanted|fond of|favou?rites?|is into|into)\M', ' like ', 'g');
    v_text := pg_catalog.regexp_replace(v_text, '更喜欢|最喜欢|喜欢|偏好|更爱|最爱|爱', ' 喜欢 ', 'g');
    v_text := pg_catalog.regexp_replace(v_text,
                  '\m(the user|user|i|i''m|im|me|my|mine|he|she|they|his|her|their|them)\M'
                  '|我们|我的|我|他们|她们|他|她|用户|把|了|吧|呢|啊|呀|哦|的', ' ', 'g');
    return coalesce(pg_catalog.tsvector_to_array(pgmem._tsv(v_text)), '{}');
end
$$;

comment on function pgmem._conflict_terms(text, text[]) is
    'The terms of a fact without its polarity, change markers, speaker and the patterns in p_drop, liking spelled one way: what two facts must share to contradict each other (internal).';

-- Before it took the smallest set that may count as the same statement, it had two arguments.
drop function if exists pgmem._terms_alike(text[], text[]);

create or replace function pgmem._terms_alike(p_a text[], p_b text[], p_min integer)
returns boolean
language sql
immutable strict parallel safe
security invoker
as $$
    -- The same statement: the same terms, or one within the other with at
    -- least p_min terms and at most two more. "drinks coffee" and "no longer
    -- drinks coffee every day" are about one thing; "drinks tea every morning"
    -- and "no longer drinks coffee every morning" about two, and "Thanks!" is
    -- within too many long sentences to contradict any of them. No SET
    -- clause and qualified operators: inlined into the rules that call it.
    select pg_catalog.cardinality(p_a) operator(pg_catalog.>) 0
           and pg_catalog.cardinality(p_b) operator(pg_catalog.>) 0
           and (p_a operator(pg_catalog.@>) p_b and p_b operator(pg_catalog.@>) p_a
                or (least(pg_catalog.cardinality(p_a), pg_catalog.cardinality(p_b)) operator(pg_catalog.>=) p_min
                    and pg_catalog.abs(pg_catalog.cardinality(p_a) operator(pg_catalog.-) pg_catalog.cardinality(p_b))
                        operator(pg_catalog.<=) 2
                    and (p_a operator(pg_catalog.<@) p_b or p_b operator(pg_catalog.<@) p_a)))
$$;

comment on function pgmem._terms_alike(text[], text[], integer) is
    'Whether two term sets say the same thing: equal, or one within the other with at least p_min terms and at most two more (internal).';

-- Evidence for a duplicate, beside similarity: cosine alone cannot tell "likes
-- tea" from "likes coffee" (multilingual-e5-small scores them 0.93). One
-- statement covers another when it holds each of the other's terms (English
-- stems, CJK bigrams, numbers: pgmem._conflict_terms) with the same polarity,
-- and says "now" or "no longer" if the other does: dropping the covered one
-- then loses no word of what was said.
create or replace function pgmem._covers(p_terms text[], p_marks text[], p_other_terms text[], p_other_marks text[])
returns boolean
language sql
immutable parallel safe
security invoker
as $$
    -- No SET clause and qualified operators: inlined where it is called.
    select coalesce(pg_catalog.cardinality(p_other_terms) operator(pg_catalog.>) 0
                    and p_terms operator(pg_catalog.@>) p_other_terms
                    and ('negative' operator(pg_catalog.=) any (p_marks))
                        operator(pg_catalog.=) ('negative' operator(pg_catalog.=) any (p_other_marks))
                    and (not 'change' operator(pg_catalog.=) any (p_other_marks)
                         or 'change' operator(pg_catalog.=) any (p_marks)),
                    false)
$$;

comment on function pgmem._covers(text[], text[], text[], text[]) is
    'Whether a statement (its pgmem._conflict_terms and _conflict_marks) says all another does: every term of the other, the same polarity, a change marker if the other has one (internal).';

-- Whether the slot value p_part is part of p_whole ("London" of "Hackney,
-- East London", 北京 of 北京海淀区五道口附近, "Dishoom" of "Dishoom in
-- Covent Garden"): whole words for spaced text, characters for CJK.
create or replace function pgmem._value_within(p_part text, p_whole text)
returns boolean
language sql
immutable strict parallel safe
security invoker
as $$
    -- No SET clause and qualified operators: inlined where it is called.
    select pgmem._normalize(p_part) operator(pg_catalog.<>) ''
           and pgmem._normalize(p_part) operator(pg_catalog.<>) pgmem._normalize(p_whole)
           and case when pgmem._normalize(p_part) operator(pg_catalog.~) '[\u3400-\u9fff]'
                    then pg_catalog.strpos(pgmem._normalize(p_whole), pgmem._normalize(p_part))
                         operator(pg_catalog.>) 0
                    else pg_catalog.strpos(' ' operator(pg_catalog.||) pgmem._normalize(p_whole)
                                               operator(pg_catalog.||) ' ',
                                           ' ' operator(pg_catalog.||) pgmem._normalize(p_part)
                                               operator(pg_catalog.||) ' ') operator(pg_catalog.>) 0
               end
$$;

comment on function pgmem._value_within(text, text) is
    'Whether slot value p_part is a proper part of p_whole once normalized: whole words, or characters for CJK text (internal; a refined slot value is no contradiction).';


create or replace function pgmem._coverage(p_new_terms text[], p_new_marks text[], p_old_terms text[],
                                           p_old_marks text[])
returns text
language sql
immutable parallel safe
security invoker
as $$
    -- No SET clause and qualified operators: inlined where it is called.
    select case when pgmem._covers(p_old_terms, p_old_marks, p_new_terms, p_new_marks)
                then case when pgmem._covers(p_new_terms, p_new_marks, p_old_terms, p_old_marks) then 'both'
                          else 'old' end
                when pgmem._covers(p_new_terms, p_new_marks, p_old_terms, p_old_marks) then 'new'
           end
$$;

comment on function pgmem._coverage(text[], text[], text[], text[]) is
    'Which of a new and a stored statement covers the other (pgmem._covers): both, old (the stored one says all the new one does), new, or NULL for neither (internal).';

create or replace function pgmem._conflict_pattern(p_category text)
returns text
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- One regular expression matching any pattern (or antonym partner) of a
    -- category of pgmem.conflict_vocabulary().
    select pg_catalog.string_agg('(' || x.pattern || ')', '|')
    from pgmem.conflict_vocabulary() as v
    cross join lateral (values (v.pattern), (v.partner)) as x(pattern)
    where v.category = p_category and x.pattern is not null
$$;

comment on function pgmem._conflict_pattern(text) is
    'Any pattern (or antonym partner) of one category of pgmem.conflict_vocabulary(), as one regular expression (internal).';

-- What the rules read of one fact, computed once per fact: its terms
-- (pgmem._conflict_terms) and its marks, labels of what the rules look for:
--   negative             a negation marker
--   change               a change marker ("moved to", 现在…)
--   digits, quantity     a number; a quantity word (age, budget, 岁…)
--   attribute:<name>     a one-valued attribute (residence, employer)
--   antonym, antonym:<name>  a word of an antonym pair (either side), and which pair
-- pgmem.memories stores both (conflict_terms, conflict_marks, kept by the
-- row trigger memories_text), so a pair of a new fact and a stored one is
-- judged from arrays: a regular expression runs only for the rare pair of
-- two antonym words or two attribute values. Rows written before alembic
-- 0012 hold NULL there and are read with the text (the same result).
-- Compiling a regular expression costs far more than matching it (the
-- antonym alternation ~4 ms, an injection rule up to ~5 ms), and a backend
-- keeps only 32 compiled: the write path uses more, so each write compiled
-- most of its expressions again. A plain word list has a cheaper necessary
-- condition: one of its words occurs in the text (LIKE, nothing compiled).
create or replace function pgmem._like_words(p_pattern text)
returns text[]
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_body text := pg_catalog.replace(pg_catalog.replace(p_pattern, '\m', ''), '\M', '');
    v_special text;
    v_branch text;
    v_cut integer;
    v_word text;
    v_likes text[] := '{}';
begin
    -- LIKE patterns ('%word%'), one of which every match of p_pattern
    -- contains: the leading word of each branch, up to its first group or
    -- optional character. NULL for a pattern that is not such a word list
    -- (classes, wildcards, escapes, lookaround): no shortcut is known for it.
    foreach v_special in array array['.', '*', '+', '[', ']', '{', '}', '\', '^', '$', '(?'] loop
        if pg_catalog.strpos(v_body, v_special) > 0 then
            return null;
        end if;
    end loop;
    foreach v_branch in array pg_catalog.string_to_array(v_body, '|') loop
        v_branch := pg_catalog.ltrim(v_branch, '(');
        v_cut := least(nullif(pg_catalog.strpos(v_branch, '('), 0), nullif(pg_catalog.strpos(v_branch, ')'), 0),
                       nullif(pg_catalog.strpos(v_branch, '?'), 0));
        v_word := case when v_cut is null then v_branch else pg_catalog.substr(v_branch, 1, v_cut - 1) end;
        if pg_catalog.substr(v_branch, v_cut, 1) = '?' then
            v_word := pg_catalog.left(v_word, -1);  -- "lives?": "live"
        end if;
        if v_word = '' then
            return null;
        end if;
        v_likes := v_likes || ('%' || pg_catalog.replace(pg_catalog.replace(v_word, '%', '\%'), '_', '\_') || '%');
    end loop;
    return v_likes;
end
$$;

comment on function pgmem._like_words(text) is
    'LIKE patterns one of which every match of a plain word-list regular expression contains (its branches'' leading words), NULL when the pattern is not such a list (internal; a cheap test before the expression).';

create or replace function pgmem._conflict_likes(p_category text)
returns text[]
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- pgmem._like_words of every pattern (and partner) of a category, NULL
    -- when one of them has none.
    select case when pg_catalog.bool_and(w.likes is not null)
                then pg_catalog.array_agg(l.like_pattern) end
    from pgmem.conflict_vocabulary() as v
    cross join lateral (values (v.pattern), (v.partner)) as x(pattern)
    cross join lateral (select pgmem._like_words(x.pattern) as likes) as w
    left join lateral pg_catalog.unnest(w.likes) as l(like_pattern) on true
    where v.category = p_category and x.pattern is not null
$$;

comment on function pgmem._conflict_likes(text) is
    'The LIKE patterns of one category of pgmem.conflict_vocabulary() (pgmem._like_words of each), NULL when a pattern of it has none (internal).';

-- It returned a record (names, patterns, likes), which PostgreSQL never
-- folds into a constant: it ran again for every text (~0.6 ms).
drop function if exists pgmem._antonym_likes();
create or replace function pgmem._antonym_likes()
returns text[]
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- One row per antonym pair: its name, one expression for both words,
    -- and its LIKE patterns joined by a line feed (NULL: none known for a
    -- word of the pair, so the expression is always tried).
    select pg_catalog.array_agg(array[v.name, '(' || v.pattern || ')|(' || v.partner || ')',
                                      pg_catalog.array_to_string(pgmem._like_words(v.pattern)
                                                                 || pgmem._like_words(v.partner), E'\n')
                                      || case when pgmem._like_words(v.pattern) is null
                                                   or pgmem._like_words(v.partner) is null then null else '' end]
                                order by v.name)
    from pgmem.conflict_vocabulary() as v
    where v.category = 'antonym'
$$;

comment on function pgmem._antonym_likes() is
    'The antonym pairs of pgmem.conflict_vocabulary() as a two-dimensional array, a row [name, expression, LIKE patterns joined by line feeds or NULL] per pair (internal; pgmem._conflict_marks).';

create or replace function pgmem._conflict_marks(p_content text)
returns text[]
language plpgsql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_text text := pgmem._conflict_text(p_content);
    v_marks text[] := '{}';
    v_digits boolean := pg_catalog.strpos(pg_catalog.translate(v_text, '123456789', '000000000'), '0') > 0;
    -- Constant calls of immutable functions: evaluated once a session.
    v_negation text[] := pgmem._conflict_likes('negation');
    v_change text[] := pgmem._conflict_likes('change');
    v_attribute text[] := pgmem._conflict_likes('attribute');
    v_antonyms text[] := pgmem._antonym_likes();
    v_i integer;
begin
    -- Each category is one regular expression, tried only when one of its
    -- words occurs (pgmem._like_words; a category with a pattern that is
    -- no word list is always tried); a category's own patterns are read
    -- only for a text that matched one of them.
    if (v_negation is null or v_text like any (v_negation)) and v_text ~ pgmem._conflict_pattern('negation') then
        v_marks := v_marks || 'negative'::text;
    end if;
    if (v_change is null or v_text like any (v_change)) and v_text ~ pgmem._conflict_pattern('change') then
        v_marks := v_marks || 'change'::text;
    end if;
    if v_digits then
        v_marks := v_marks || 'digits'::text;
        if v_text ~ pgmem._conflict_pattern('quantity') then
            v_marks := v_marks || 'quantity'::text;
        end if;
    end if;
    if (v_attribute is null or v_text like any (v_attribute)) and v_text ~ pgmem._conflict_pattern('attribute') then
        v_marks := v_marks || array(select 'attribute:' || v.name from pgmem.conflict_vocabulary() as v
                                    where v.category = 'attribute' and v_text ~ v.pattern order by v.name);
    end if;
    -- Antonyms pair by pair: the words of a few pairs occur in a text, and
    -- one small expression each is cheap to compile where the alternation
    -- of all 36 words was not.
    for v_i in 1 .. coalesce(pg_catalog.array_length(v_antonyms, 1), 0) loop
        if (v_antonyms[v_i][3] is null
            or v_text like any (pg_catalog.string_to_array(v_antonyms[v_i][3], E'\n')))
           and v_text ~ v_antonyms[v_i][2] then
            if not 'antonym' = any (v_marks) then
                v_marks := v_marks || 'antonym'::text;
            end if;
            v_marks := v_marks || ('antonym:' || v_antonyms[v_i][1]);
        end if;
    end loop;
    return v_marks;
end
$$;

comment on function pgmem._conflict_marks(text) is
    'What the contradiction rules look for in a fact, as labels: negative, change, digits, quantity, attribute:<name>, antonym and antonym:<name> (pgmem.conflict_vocabulary()); stored in pgmem.memories.conflict_marks (internal).';

-- No SET clause on purpose (as pgmem._decayed): a function with SET is
-- never inlined, and this one runs for every candidate pair. The body names
-- the schema of every operator instead, so the caller's search_path cannot
-- change what it means.
create or replace function pgmem._may_contradict(p_old_marks text[], p_new_marks text[])
returns boolean
language sql
immutable parallel safe
security invoker
as $$
    -- Whether any rule can call the pair a contradiction, from the marks
    -- alone: the other polarity, a change word in the newer fact, antonym
    -- words in both, or numbers in both. Most pairs have none of these.
    -- Unknown marks (NULL) may.
    select coalesce(('negative' operator(pg_catalog.=) any (p_old_marks))
                        operator(pg_catalog.<>) ('negative' operator(pg_catalog.=) any (p_new_marks))
                    or 'change' operator(pg_catalog.=) any (p_new_marks)
                    or ('antonym' operator(pg_catalog.=) any (p_old_marks)
                        and 'antonym' operator(pg_catalog.=) any (p_new_marks))
                    or ('digits' operator(pg_catalog.=) any (p_old_marks)
                        and 'digits' operator(pg_catalog.=) any (p_new_marks)),
                    true)
$$;

comment on function pgmem._may_contradict(text[], text[]) is
    'Whether a rule of pgmem.contradiction can hold for a pair with these marks (pgmem._conflict_marks, older fact first): the cheap test before the rules (internal).';

create or replace function pgmem._contradiction(
    p_old text,
    p_old_terms text[],
    p_old_marks text[],
    p_new text,
    p_new_terms text[],
    p_new_marks text[]
)
returns text
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
declare
    v_old_negative boolean := 'negative' = any (p_old_marks);
    v_new_negative boolean := 'negative' = any (p_new_marks);
    v_new_change boolean := 'change' = any (p_new_marks);
    v_numbers boolean;
    v_number constant text := '[0-9]+([.:/-][0-9]+)*';
    v_old text;
    v_new text;
    v_old_terms text[];
    v_new_terms text[];
    v_rule record;
    v_found text;
begin
    if p_old is null or p_new is null then
        return null;
    end if;
    -- Most pairs carry nothing any rule looks for: their marks say so.
    if not pgmem._may_contradict(p_old_marks, p_new_marks) then
        return null;
    end if;
    v_numbers := 'digits' = any (p_old_marks) and 'digits' = any (p_new_marks)
                 and (v_new_change or 'quantity' = any (p_new_marks));

    -- number: the same words around other numbers, of a quantity or said as a change.
    if v_numbers
       and pg_catalog.array_to_string(p_old_terms, ' ') is distinct from pg_catalog.array_to_string(p_new_terms, ' ')
       and array(select pg_catalog.regexp_replace(t, v_number, '#', 'g') from pg_catalog.unnest(p_old_terms) as t
                 order by 1)
           = array(select pg_catalog.regexp_replace(t, v_number, '#', 'g') from pg_catalog.unnest(p_new_terms) as t
                   order by 1) then
        v_found := 'number';
    -- negation: the same statement, the other polarity.
    elsif v_old_negative <> v_new_negative and pgmem._terms_alike(p_old_terms, p_new_terms, 2) then
        v_found := 'negation';
    end if;

    -- antonym: one word of a pair in each fact, the rest alike, same polarity.
    -- Only the pairs both facts name are read, with the text.
    if v_found is null and v_old_negative = v_new_negative
       and exists (select from pg_catalog.unnest(p_new_marks) as k
                   where k like 'antonym:%' and k = any (p_old_marks)) then
        v_old := pgmem._conflict_text(p_old);
        v_new := pgmem._conflict_text(p_new);
        for v_rule in
            select v.pattern, v.partner from pgmem.conflict_vocabulary() as v
            where v.category = 'antonym' and 'antonym:' || v.name = any (p_old_marks)
              and 'antonym:' || v.name = any (p_new_marks)
              and ((v_old ~ v.pattern and v_new ~ v.partner and not v_old ~ v.partner and not v_new ~ v.pattern)
                   or (v_old ~ v.partner and v_new ~ v.pattern and not v_old ~ v.pattern and not v_new ~ v.partner))
        loop
            if pgmem._terms_alike(pgmem._conflict_terms(p_old, array[v_rule.pattern, v_rule.partner]),
                                  pgmem._conflict_terms(p_new, array[v_rule.pattern, v_rule.partner]), 1) then
                v_found := 'antonym';
                exit;
            end if;
        end loop;
    end if;

    -- change: a change marker, and another value of the same one-valued
    -- attribute. Only the attributes both facts name are read, with the text.
    if v_found is null and v_new_change
       and exists (select from pg_catalog.unnest(p_new_marks) as k
                   where k like 'attribute:%' and k = any (p_old_marks)) then
        for v_rule in
            select v.pattern from pgmem.conflict_vocabulary() as v
            where v.category = 'attribute' and 'attribute:' || v.name = any (p_old_marks)
              and 'attribute:' || v.name = any (p_new_marks)
        loop
            v_old_terms := pgmem._conflict_terms(p_old, array[v_rule.pattern]);
            v_new_terms := pgmem._conflict_terms(p_new, array[v_rule.pattern]);
            if pg_catalog.cardinality(v_old_terms) > 0 and pg_catalog.cardinality(v_new_terms) > 0
               and not (v_old_terms <@ v_new_terms or v_new_terms <@ v_old_terms) then
                v_found := 'change';
                exit;
            end if;
        end loop;
    end if;
    -- The same statement twice is no contradiction (asked last: two
    -- normalizations cost more than the rules, which most pairs fail).
    if v_found is not null and pgmem._normalize(p_old) = pgmem._normalize(p_new) then
        return null;
    end if;
    return v_found;
end
$$;

comment on function pgmem._contradiction(text, text[], text[], text, text[], text[]) is
    'pgmem.contradiction for two facts whose terms and marks (pgmem._conflict_terms, pgmem._conflict_marks) are known already, e.g. stored ones (internal).';

create or replace function pgmem.contradiction(p_old text, p_new text)
returns text
language sql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    select pgmem._contradiction(p_old, pgmem._conflict_terms(p_old), pgmem._conflict_marks(p_old),
                                p_new, pgmem._conflict_terms(p_new), pgmem._conflict_marks(p_new))
$$;

comment on function pgmem.contradiction(text, text) is
    'Whether p_new contradicts p_old by the offline rules, and by which: number, negation, antonym or change (see sql/functions/13_conflict.sql and pgmem.conflict_vocabulary()); NULL when no rule says so. E.g. pgmem.contradiction(''User likes dark mode'', ''User now prefers light mode'') = ''antonym''.';
