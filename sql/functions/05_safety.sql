-- Safety filters of the write path, in SQL so that writes made straight
-- from SQL are protected exactly like writes from the Python layer.
--
-- Two jobs, one list of rules (pgmem.safety_rules()):
--   * prompt injection: text that tries to steer the model that will later
--     read it back ("ignore previous instructions", "忽略以上", "reveal the
--     system prompt", "developer mode"…) is never stored as a memory.
--     pgmem.detect_injection() names the rule that matched; pgmem.remember
--     answers 'rejected' and records only the rule and a hash of the text.
--   * secrets and personal data: phone numbers, e-mail addresses, Chinese
--     resident ID numbers, bank-card numbers, passwords, API keys and long
--     random tokens are replaced by "[REDACTED:<kind>]" before storage
--     (pgmem.redact()); pgmem.remember records which kinds it redacted,
--     never the values.
--
-- The rules are deliberately conservative about numbers: years, dates,
-- times, prices, quantities and short ids never match. A bare 13-19 digit
-- run counts as a bank card only when it passes the Luhn check (a run that
-- follows a "card number"/"卡号" label is redacted regardless). Patterns use
-- explicit ASCII classes and look-arounds instead of \m, \M and \d, whose
-- meaning depends on the database locale, so results are the same on every
-- installation (the functions are declared immutable).
--
-- Known limits, by choice: detection matches phrases, not intent, so a
-- paraphrased injection can pass and a fact that merely quotes one of
-- these phrases is rejected; base64 tokens are caught from 32 characters
-- of one run without '/' (paths and URLs stay readable) unless a label
-- ("token:", "api_key=", "Bearer") announces them; digits are matched in
-- ASCII only (full-width digits are not redacted).

create or replace function pgmem.safety_rules()
returns table(
    rule_order integer,
    rule text,
    category text,
    kind text,
    pattern text,
    replacement text,
    flags text,
    luhn boolean
)
-- plpgsql, not sql: its plan is cached for the session, while a non-inlined
-- SQL function is parsed and planned again at every call (per memory).
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- category 'prefilter': a cheap test every rule of that category
    -- needs to pass (a secret needs a digit, an @ or a key word; an
    -- injection needs one of its verbs), so ordinary text skips the rest.
    -- category 'injection': matched case-insensitively against the text
    -- folded by pgmem._safety_fold (NFKC, no zero-width characters).
    -- category 'secret': applied in rule_order with regexp_replace(…, flags)
    -- (flags 'g' where letter case carries meaning); the order matters: labelled
    -- secrets before the generic token rules, ID numbers and phones before
    -- bank cards so one number is named once.
    return query
    select r.*
    from (values
        (1, 'secret_candidates', 'prefilter', 'secret',
         '[0-9@]|pass|pwd|密码|口令|密碼|bearer|private key|sk-|akia|asia|agpa|aida|aroa|gh[pousr]_|github_pat_|xox|aiza|eyj',
         null::text, 'i', false),
        (2, 'injection_candidates', 'prefilter', 'injection',
         'ignore|disregard|forget|override|bypass|skip|you\s+are\s+now|from\s+now\s+on|reveal|show|print|repeat|output'
         || '|display|leak|expose|dump|disclose|tell\s+me|give\s+me|mode|jail|anything'
         || '|忽略|无视|忽视|理会|管|忘记|忘掉|你现在|从现在|泄露|透露|显示|输出|告诉我|打印|展示|给我看|重复|开发者|越狱',
         null, 'i', false),
        (10, 'ignore_instructions', 'injection', null::text,
         '(?<![a-z])(ignore|disregard|forget|override|bypass|skip)\s+((all|any|every|of|the|your|my|these|those)\s+){0,3}'
         || '(previous|prior|above|earlier|preceding|former|foregoing|original|initial|system)\s+'
         || '(instructions?|prompts?|rules?|directions?|directives?|guidelines?|messages?|commands?|context|constraints?)',
         null, 'i', false),
        (11, 'disregard_above', 'injection', null,
         '(?<![a-z])(ignore|disregard|forget)\s+((all|everything|anything|the|of)\s+){0,3}(above|foregoing)(?![a-z])',
         null, 'i', false),
        (12, 'ignore_instructions_zh', 'injection', null,
         '(忽略|无视|忽视|不要理会|别理会|不要管|别管|忘记|忘掉)\s*(掉|你|一下)?\s*'
         || '(之前|以前|先前|此前|前面|上面|上述|以上|刚才|所有|全部|一切)[^。！？!?\n]{0,8}'
         || '(指令|指示|提示|命令|规则|设定|要求|约束|限制)'
         || '|(忽略|无视|忽视)\s*(掉)?\s*(以上|上面|上述)',
         null, 'i', false),
        (13, 'role_override', 'injection', null,
         '(?<![a-z])you\s+are\s+now\s+(a|an|the|my|in|no\s+longer|free|unrestricted|unfiltered|uncensored|jailbroken|dan|'
         || 'acting|going\s+to|called|named|playing)(?![a-z])'
         || '|(?<![a-z])from\s+now\s+on,?\s+you\s+(are|will|must|shall)(?![a-z])'
         || '|你现在(是|就是|扮演|成为)|从现在(开始|起)[，,]?\s*你(是|将|要|就是|必须)',
         null, 'i', false),
        (14, 'reveal_system_prompt', 'injection', null,
         '(?<![a-z])(reveal|show|print|repeat|output|display|leak|expose|dump|disclose|tell\s+me|give\s+me)(?![a-z])'
         || '[^.!?\n]{0,40}(system|initial|hidden|original|secret)\s+(prompt|instructions?)'
         || '|(泄露|透露|显示|输出|告诉我|打印|展示|给我看|重复)[^。！？!?\n]{0,10}(系统提示|系统指令|系统消息|初始指令|提示词)',
         null, 'i', false),
        (15, 'jailbreak', 'injection', null,
         '(?<![a-z])(developer|dev|god|dan)\s+mode(?![a-z])|(?<![a-z])jail\s*-?\s*break|(?<![a-z])do\s+anything\s+now(?![a-z])'
         || '|开发者模式|越狱',
         null, 'i', false),

        (100, 'private_key', 'secret', 'private_key',
         '-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*(-----END [A-Z ]*PRIVATE KEY-----)?',
         '[REDACTED:private_key]', 'g', false),
        -- Labelled secrets keep their label: "password: [REDACTED:password]".
        (110, 'password', 'secret', 'password',
         '((?<![a-z])(password|passwd|passphrase|passcode|pwd)\s*(is|was|=|:|：)\s*'
         || '|(密码|口令|密碼)\s*(是|为|為|：|:|=)\s*)[^\s,;，。；、！!？?）)]+',
         '\1[REDACTED:password]', 'gi', false),
        -- A labelled key needs a digit in its value: "the secret is love" stays.
        (120, 'labelled_key', 'secret', 'api_key',
         '((?<![a-z])(api[_ -]?key|apikey|secret[_ -]?(access[_ -]?)?key|access[_ -]?key|access[_ -]?token|auth[_ -]?token'
         || '|client[_ -]?secret|token|secret)\s*(is|=|:|：)\s*|(密钥|秘钥|令牌)\s*(是|为|：|:|=)\s*)'
         || '(?=[^\s,;，。；、]*[0-9])[^\s,;，。；、]{8,}',
         '\1[REDACTED:api_key]', 'gi', false),
        (121, 'bearer_token', 'secret', 'api_key',
         '((?<![a-z])bearer\s+)[A-Za-z0-9._~+/-]{16,}=*',
         '\1[REDACTED:api_key]', 'gi', false),
        -- Vendor formats: OpenAI/Anthropic sk-…, AWS access key ids, GitHub
        -- tokens, Slack xox…, Google AIza…, JSON Web Tokens.
        (122, 'vendor_key', 'secret', 'api_key',
         '(?<![A-Za-z0-9_-])(sk-(proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}'
         || '|(AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Za-z0-9])'
         || '|(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}'
         || '|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}'
         || '|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})',
         '[REDACTED:api_key]', 'g', false),
        -- Unlabelled random strings: 32+ hex digits with at least one digit,
        -- or 32+ base64/url-safe characters mixing digits, lower and upper
        -- case (words, slugs and paths do not).
        (130, 'random_token', 'secret', 'token',
         '(?<![A-Za-z0-9])(?=[A-Za-z]*[0-9])[0-9a-fA-F]{32,}(?![A-Za-z0-9])'
         || '|(?<![A-Za-z0-9+_-])(?=[A-Za-z0-9+_-]*[0-9])(?=[A-Za-z0-9+_-]*[a-z])(?=[A-Za-z0-9+_-]*[A-Z])'
         || '[A-Za-z0-9+_-]{32,}={0,2}',
         '[REDACTED:token]', 'g', false),
        (140, 'email', 'secret', 'email',
         '[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}',
         '[REDACTED:email]', 'gi', false),
        -- Resident identity card of the PRC: 6-digit region, birth date
        -- 18xx-20xx, 3-digit sequence, check digit or X.
        (150, 'cn_id_card', 'secret', 'id_card',
         '(?<![0-9A-Za-z])[1-9][0-9]{5}(18|19|20)[0-9]{2}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])[0-9]{3}[0-9Xx]'
         || '(?![0-9A-Za-z])',
         '[REDACTED:id_card]', 'g', false),
        -- Mainland mobile 1[3-9]x xxxx xxxx (optionally +86/0086, spaced or
        -- dashed); international numbers with a leading +; North American
        -- numbers with separators, (415) 555-2671; Chinese landlines with an
        -- area code, 010-12345678. Bare digit runs without + or separators
        -- are not phones.
        (160, 'phone', 'secret', 'phone',
         '(?<![0-9])((\+|00)86[ -]?)?1[3-9][0-9]([ -]?[0-9]{4}){2}(?![0-9])'
         || '|(?<![0-9A-Za-z+])\+[1-9][0-9]{0,2}[ .-]?(\(?[0-9]{1,4}\)?[ .-]?){1,4}[0-9]{2,4}(?![0-9])'
         || '|(?<![0-9])(\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[.-])[0-9]{3}[.-][0-9]{4}(?![0-9])'
         || '|(?<![0-9])0[1-9][0-9]{1,2}-[0-9]{7,8}(?![0-9])',
         '[REDACTED:phone]', 'g', false),
        (170, 'labelled_card', 'secret', 'bank_card',
         '(((?<![a-z])card\s*(number|no\.?|num|#)?|卡号|银行卡号?|信用卡号?|储蓄卡号?|借记卡号?)\s*(is|:|：|是|为)?\s*)'
         || '[0-9]([ -]?[0-9]){12,18}(?![0-9])',
         '\1[REDACTED:bank_card]', 'gi', false),
        -- 13-19 digits, plain or in groups of four; replaced only if
        -- Luhn-valid (capture group 1 is the number).
        (171, 'bank_card', 'secret', 'bank_card',
         '(?<![0-9])([0-9]{13,19}|[0-9]{4}([ -][0-9]{4}){2,3}([ -][0-9]{1,3})?)(?![0-9])',
         '[REDACTED:bank_card]', 'g', true)
    ) as r(rule_order, rule, category, kind, pattern, replacement, flags, luhn)
    order by r.rule_order;
end
$$;

comment on function pgmem.safety_rules() is
    'The safety rules of the write path, in the order they apply: injection phrases (text matching one is not stored) and secret/personal-data patterns (redacted to [REDACTED:<kind>]). Used by pgmem.detect_injection and pgmem.redact.';

create or replace function pgmem._safety_fold(p_text text)
returns text
language sql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- NFKC turns full-width and other look-alike forms into plain ones
    -- ("ｉｇｎｏｒｅ" → "ignore"); zero-width characters and soft hyphens are
    -- a common way to split a phrase so that it no longer matches.
    select pg_catalog.regexp_replace(pg_catalog.normalize(p_text, 'NFKC'),
                                     '[\u00AD\u180E\u200B-\u200F\u2060-\u2064\uFEFF]', '', 'g')
$$;

comment on function pgmem._safety_fold(text) is
    'Text as injection detection sees it: NFKC-normalized, zero-width characters removed (internal).';

create or replace function pgmem._detect_injection_many(p_contents text[])
returns table(item integer, rule text)
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
-- A batch reads the rules once; each item then costs only the regular
-- expressions (no query per item). item = position in p_contents.
declare
    v_prefilter text;
    v_rules text[];
    v_patterns text[];
    v_n integer;
    v_text text;
    v_r integer;
begin
    select pg_catalog.min(r.pattern) filter (where r.category = 'prefilter'),
           pg_catalog.array_agg(r.rule order by r.rule_order) filter (where r.category = 'injection'),
           pg_catalog.array_agg(r.pattern order by r.rule_order) filter (where r.category = 'injection')
    into v_prefilter, v_rules, v_patterns
    from pgmem.safety_rules() as r
    where r.category = 'injection' or (r.category = 'prefilter' and r.kind = 'injection');
    v_n := pg_catalog.cardinality(v_patterns);
    item := 0;
    foreach v_text in array coalesce(p_contents, '{}') loop
        item := item + 1;
        continue when v_text is null;
        v_text := pgmem._safety_fold(v_text);
        continue when v_text OPERATOR(pg_catalog.!~*) v_prefilter;
        for v_r in 1 .. v_n loop
            if v_text OPERATOR(pg_catalog.~*) v_patterns[v_r] then
                rule := v_rules[v_r];
                return next;
                exit;
            end if;
        end loop;
    end loop;
end
$$;

comment on function pgmem._detect_injection_many(text[]) is
    'For each element of p_contents that matches an injection rule: its position and the rule (internal; see pgmem.detect_injection).';

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
language sql
immutable strict parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
    -- Luhn (ISO/IEC 7812-1): from the right, double every second digit.
    select pg_catalog.length(d.s) between 13 and 19
       and (select pg_catalog.sum(case when (pg_catalog.length(d.s) - i.pos) % 2 = 1
                                       then (x.v * 2) / 10 + (x.v * 2) % 10
                                       else x.v end) % 10 = 0
            from pg_catalog.generate_series(1, pg_catalog.length(d.s)) as i(pos)
            cross join lateral (select pg_catalog.substr(d.s, i.pos, 1)::integer as v) as x)
    from (select pg_catalog.regexp_replace(p_digits, '[^0-9]', '', 'g') as s) as d
$$;

comment on function pgmem._luhn_valid(text) is
    'True when the digits of the text (separators ignored) are 13-19 long and pass the Luhn check (internal).';

create or replace function pgmem._replace_luhn(p_text text, p_pattern text, p_replacement text, p_flags text)
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
    -- regexp_replace cannot test each match: replace the Luhn-valid ones
    -- (capture group 1 of the pattern) one by one.
    for v_match in select m.m[1] from pg_catalog.regexp_matches(p_text, p_pattern, p_flags) as m(m) loop
        if pgmem._luhn_valid(v_match) then
            v_result := pg_catalog.replace(v_result, v_match, p_replacement);
        end if;
    end loop;
    return v_result;
end
$$;

comment on function pgmem._replace_luhn(text, text, text, text) is
    'Replaces the matches of a card-number pattern that pass the Luhn check (internal; used for rules with luhn = true).';

create or replace function pgmem._redact_many(p_contents text[])
returns table(item integer, content text, kinds text[])
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
-- Like _detect_injection_many: the rules are read once per call. Returns
-- one row per element of p_contents, in order.
declare
    v_prefilter text;
    v_kinds text[];
    v_patterns text[];
    v_replacements text[];
    v_flags text[];
    v_luhn boolean[];
    v_n integer;
    v_new text;
    v_r integer;
begin
    select pg_catalog.min(r.pattern) filter (where r.category = 'prefilter'),
           pg_catalog.array_agg(r.kind order by r.rule_order) filter (where r.category = 'secret'),
           pg_catalog.array_agg(r.pattern order by r.rule_order) filter (where r.category = 'secret'),
           pg_catalog.array_agg(r.replacement order by r.rule_order) filter (where r.category = 'secret'),
           pg_catalog.array_agg(r.flags order by r.rule_order) filter (where r.category = 'secret'),
           pg_catalog.array_agg(r.luhn order by r.rule_order) filter (where r.category = 'secret')
    into v_prefilter, v_kinds, v_patterns, v_replacements, v_flags, v_luhn
    from pgmem.safety_rules() as r
    where r.category = 'secret' or (r.category = 'prefilter' and r.kind = 'secret');
    v_n := pg_catalog.cardinality(v_patterns);
    item := 0;
    foreach content in array coalesce(p_contents, '{}') loop
        item := item + 1;
        kinds := '{}';
        if content OPERATOR(pg_catalog.~*) v_prefilter then
            for v_r in 1 .. v_n loop
                if not v_luhn[v_r] then
                    v_new := pg_catalog.regexp_replace(content, v_patterns[v_r], v_replacements[v_r], v_flags[v_r]);
                elsif content OPERATOR(pg_catalog.~) v_patterns[v_r] then
                    v_new := pgmem._replace_luhn(content, v_patterns[v_r], v_replacements[v_r], v_flags[v_r]);
                else
                    continue;
                end if;
                if v_new is distinct from content then
                    content := v_new;
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
    'The text with secrets and personal data replaced by [REDACTED:<kind>] (kinds: phone, email, id_card, bank_card, password, api_key, token, private_key; rules in pgmem.safety_rules). pgmem.remember applies it before storing.';
