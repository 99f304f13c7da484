-- Safety filters of the write path, in SQL so that writes made straight
-- from SQL are protected exactly like writes from the Python layer. One list
-- of rules, pgmem.safety_rules(), is the only source: the Python pre-filter
-- (pgmem/extract/safety.py) runs an exported copy of it, and a test runs
-- both on the safety corpus (pgmem/safety_corpus.jsonl) and asserts the same
-- verdicts. `pgmem eval safety` prints recall per class and the false
-- positive rates on that corpus.
--
-- Three jobs:
--   * folding (category 'fold'): invisible characters (zero-width, joiners,
--     bidi controls) are removed and full-width digits, letters and the
--     symbols of addresses and numbers, and exotic spaces, become ASCII
--     before anything is matched; this folded text is what gets stored.
--     Full-width CJK punctuation (，：；！？（）) is kept. Injection
--     detection folds further: NFKC, Cyrillic/Greek look-alikes to Latin,
--     traditional to simplified Chinese; and it tries a loose view too
--     (leetspeak digits to letters, separators between words to spaces,
--     spaced-out letters joined) and the text of base64 runs.
--   * prompt injection (category 'injection'): text that tries to steer the
--     model that will later read it back is never stored as a memory.
--     Rules need instruction-like context (a verb aimed at the model's
--     instructions, a role change of "you", a request for the system prompt)
--     so that "developer mode on my Android phone" or "ignore previous
--     messages about the meeting time" stay ordinary facts.
--     pgmem.detect_injection() names the rule that matched; pgmem.remember
--     answers 'rejected' and records only the rule and a hash of the text.
--   * secrets and personal data (category 'secret'): phones, e-mail
--     addresses, ID card, passport and social security numbers, bank cards,
--     passwords and PINs, API keys, tokens, private keys and street
--     addresses are replaced by "[REDACTED:<kind>]" before storage
--     (pgmem.redact()); pgmem.remember records which kinds, never the values.
--
-- Numbers stay conservative: years, dates, times, prices, quantities, GPS
-- coordinates, git/SHA-256 digests (40 or 64 hex digits) and short ids never
-- match. A bare 13-19 digit run counts as a bank card only when it passes the
-- Luhn check (a labelled one is redacted regardless), an IBAN only when its
-- mod-97 check holds (column luhn: the match's check digits decide). Patterns use explicit
-- classes and look-arounds instead of \m, \M and \d, whose meaning depends on
-- the database locale, and stay within what both PostgreSQL and Python
-- regular expressions read alike (no \b, fixed-width look-behind only).
--
-- Known limits, by choice: detection matches phrasings, not intent, so an
-- injection worded unlike every rule can pass (the corpus measures how
-- often), and a street address is recognised in its usual English form
-- (number, capitalised name, street type) and Chinese form (…路/街/道 + 号).

-- Replaced by the four-argument form below (one fold engine for every view).
drop function if exists pgmem._safety_fold(text);

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
-- SQL function is parsed and planned again at every call (per batch).
language plpgsql
immutable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    -- category 'prefilter': a cheap test every rule of that category needs
    -- to pass (a secret needs a digit, an @ or a key word; an injection one
    -- of its words), so ordinary text skips the rest.
    -- category 'fold', in rule_order; flags 'translate' = a character map
    -- (pattern -> replacement, character by character), else
    -- regexp_replace(text, pattern, replacement, flags). kind says which
    -- view: 'stored' (the text that is redacted and stored), 'injection'
    -- (after NFKC, what injection rules see), 'loose' (a second injection view).
    -- category 'injection': matched case-insensitively against each view.
    -- category 'secret': applied in rule_order with regexp_replace(…, flags)
    -- (flags 'g' where letter case carries meaning); the order matters:
    -- labelled secrets before the generic token rules, ID numbers and phones
    -- before bank cards so one number is named once.
    return query
    select r.*
    from (values
        (1, 'secret_candidates', 'prefilter', 'secret',
         '[0-9@]|pass|pwd|密码|口令|密碼|bearer|private key|sk-|akia|asia|agpa|aida|aroa|gh[pousr]_|github_pat_|xox|aiza|eyj'
         || '|[ ([{]at[ )\]}]|パスワード|暗証番号|contrase|mot de passe|senha'
         || '|[sprk]k_|whsec_|hf_|glpat-|npm_|sg\.',
         null::text, 'i', false),
        (2, 'injection_candidates', 'prefilter', 'injection',
         'ignore|disregard|forget|override|bypass|skip|neglect|discard|abandon|throw|aside|attention|mind|stop|follow|obey'
         || '|longer|you|new|instruction|rule|prompt|reveal|show|print|repeat|output|display|leak|expose|dump|disclose'
         || '|tell|give|mode|jail|anything|act|behave|respond|pretend|system|inst|sys|safety|content|security|moderation'
         || '|忽略|无视|忽视|理会|管|忘记|忘掉|抛开|丢弃|遵守|遵循|听从|服从|你|从现在|泄露|透露|显示|输出|告诉|打印|展示|给我看|重复'
         || '|发给|说出|开发者|越狱|模式|扮演|绕过|解除|跳过|作废|无效|失效|不算'
         || '|call|use|invoke|run|execute|trigger|curl|rm |remember|note|memori|store|save|add|write|record|keep|put|update|change'
         || '|modify|overwrite|rewrite|from now|dear|hey|hello|ai|llm|gpt|ignora|olvid|descarta|omite|sigas|ignorier|vergiss'
         || '|vergessen|missachte|oublie|ahora|bist|maintenant|désormais|muestra|revela|dime|imprime|enséñame|repite|zeig|gib'
         || '|verrate|nenne|wiederhole|affiche|montre|révèle|donne|répète|以后|记住|牢记|致|给',
         null, 'i', false),

        -- What a text undone from ROT13 or reversal must hold to be read at
        -- all: ordinary text so transformed is gibberish, and reading it with
        -- every rule would double the cost of every write.
        (91, 'decoded_candidates', 'prefilter', 'decoded',
         'ignor|instruc|prompt|system|previous|disregard|forget|reveal|jailbreak|you are|rules|password|admin'
         || '|delete|unrestricted|restriction|dan',
         null, 'i', false),
        -- Invisible characters: soft hyphen, combining grapheme joiner,
        -- zero-width spaces and joiners, bidi marks, embeddings, overrides
        -- and isolates, invisible operators, variation selectors, BOM. A
        -- map to nothing (deleted), not a regular expression: ASCII text
        -- skips it, and it takes none of the 32 compiled expressions a
        -- backend keeps.
        (3, 'invisible', 'fold', 'stored',
         (select pg_catalog.string_agg(pg_catalog.chr(c.c), '' order by c.c)
          from (select pg_catalog.unnest(array[173, 847, 1564, 4447, 4448, 6068, 6069, 12644, 65279, 65440])
                union all select pg_catalog.generate_series(6155, 6158)     -- U+180B-U+180E
                union all select pg_catalog.generate_series(8203, 8207)     -- U+200B-U+200F
                union all select pg_catalog.generate_series(8234, 8238)     -- U+202A-U+202E
                union all select pg_catalog.generate_series(8288, 8303)     -- U+2060-U+206F
                union all select pg_catalog.generate_series(65024, 65039)   -- U+FE00-U+FE0F
               ) as c(c)),
         '', 'translate', false),
        -- Full-width ASCII (except the CJK punctuation ，：；！？（） that
        -- Chinese text uses as such), exotic spaces and hyphens.
        (4, 'width', 'fold', 'stored',
         (select pg_catalog.string_agg(pg_catalog.chr(c), '' order by c) from pg_catalog.generate_series(65281, 65374) as c
          where c not in (65281, 65288, 65289, 65292, 65306, 65307, 65311))
         || pg_catalog.chr(160) || pg_catalog.chr(5760)
         || (select pg_catalog.string_agg(pg_catalog.chr(c), '' order by c) from pg_catalog.generate_series(8192, 8202) as c)
         || pg_catalog.chr(8239) || pg_catalog.chr(8287) || pg_catalog.chr(12288) || pg_catalog.chr(8232) || pg_catalog.chr(8233)
         || pg_catalog.chr(8208) || pg_catalog.chr(8209) || pg_catalog.chr(8722),
         (select pg_catalog.string_agg(pg_catalog.chr(c - 65248), '' order by c) from pg_catalog.generate_series(65281, 65374) as c
          where c not in (65281, 65288, 65289, 65292, 65306, 65307, 65311))
         || pg_catalog.repeat(' ', 18) || '---',
         'translate', false),
        -- Cyrillic and Greek letters that look like Latin ones.
        (5, 'confusable', 'fold', 'injection',
         'аеорсухіѕјԁӏһԛԝкмнтвАВЕКМНОРСТХУІЅЈαεορικντυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ',
         'aeopcyxisjdlhqwkmhtbabekmhopctxyisjaeopikvtuxabezhikmnoptyx',
         'translate', false),
        -- Traditional characters of the injection vocabulary.
        (6, 'traditional', 'fold', 'injection',
         '無視說顯統現開發獄則規設請訴將從們麼這個對話讓為應該詞洩輸聽權閉關濾過審復隱內據碼機記憶觸條須於與當後並時還戶進沒啟換舊變繞約給別會務廢數樣嗎護號證帳歷專業員級線處',
         '无视说显统现开发狱则规设请诉将从们么这个对话让为应该词泄输听权闭关滤过审复隐内据码机记忆触条须于与当后并时还户进没启换旧变绕约给别会务废数样吗护号证帐历专业员级线处',
         'translate', false),
        -- The loose view: leetspeak digits to letters, separators between
        -- words to spaces, s p a c e d letters joined.
        -- ROT13: injection rules also read the text rotated back, a view of
        -- its own (benign text rotated is gibberish no rule reads).
        (90, 'rot13', 'fold', 'rot13',
         'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
         'NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm', 'translate', false),
        (7, 'leet', 'fold', 'loose', '013457@$', 'oieastas', 'translate', false),
        (8, 'separators', 'fold', 'loose', '[._*|~+/\\=-]+', ' ', 'g', false),
        (9, 'spaced_letters', 'fold', 'loose', '(?<![a-z])([a-z]) +(?=[a-z](?![a-z]))', '\1', 'gi', false),

        (10, 'ignore_instructions', 'injection', null::text,
         '(?<![a-z])(ignore|disregard|forget|override|bypass|skip|neglect|discard|drop|abandon|throw\s*(out|away)|set\s*aside'
         || '|pay\s*no\s*attention\s*to|never\s*mind|stop\s*(following|obeying)|(do\s*not|don''?t|no\s*longer)\s*(follow|obey))\s*'
         || '((all|any|every|of|the|these|those|my)\s*){0,3}'
         || '((your|ur)\s*((previous|prior|above|earlier|preceding|former|original|initial|system|old|existing|safety)\s*)?'
         || '|(previous|prior|above|earlier|preceding|former|foregoing|original|initial|system|old|existing|safety)\s*)'
         || '(messages?\s*and\s*)?(instructions?|prompts?|rules?|directions?|directives?|guidelines?|commands?|constraints?'
         || '|limitations?|restrictions?|programming|guardrails?)(?![a-z])'
         || '|(?<![a-z])(ignore|disregard|forget|override|set\s*aside|throw\s*out|stop\s*(following|obeying))\s*((all|any|every|of|the|these|those)\s*){0,3}'
         || '(instructions?|prompts?|rules?|directions?|guidelines?|commands?)\s*(above|before|so\s*far|you\s*(received|got|have\s*received)|you\s*(were|have\s*been|''ve\s*been|got)\s*(given|told))'
         || '|(?<![a-z])(ignore|disregard|forget|set\s*aside|throw\s*out)\s*(everything|all|anything)\s*(that\s*)?you\s*'
         || '(were|have\s*been|''ve\s*been)\s*(told|given|instructed|taught)',
         null, 'i', false),
        (11, 'disregard_above', 'injection', null,
         '(?<![a-z])(ignore|disregard|forget)\s*((all|everything|anything|the|of|your)\s*){0,3}(above|foregoing|prior|previous|earlier)'
         || '\s*($|[.,!;:]|and\s|then\s|instead)',
         null, 'i', false),
        (12, 'ignore_instructions_zh', 'injection', null,
         '(忽略|无视|忽视|不要理会|别理会|不用理会|不要管|别管|不用再?管|别再管|忘记|忘掉|抛开|丢弃|跳过'
         || '|(不要再?|别再?|不再|不用再?)(遵守|遵循|听从|服从|执行))\s*(掉|一下)?\s*(你的|你)?\s*'
         || '(之前|以前|先前|此前|前面|上面|上述|以上|刚才|所有|全部|一切|原来|原有|原先|原本|系统|任何)[^。！？!?\n]{0,8}'
         || '(指令|指示|提示|命令|规则|设定|要求|约束|限制|安全策略)'
         || '|(忽略|无视|忽视)\s*(掉)?\s*(以上|上面|上述|之前|前面)\s*(的)?\s*(所有|全部|一切)?\s*(内容)?\s*($|[，,。.!！;；]|并|然后|吧|直接)'
         || '|(之前|以前|先前|前面|上面|以上|原来)(说)?(的)?(所有|全部|一切)?(指令|指示|规则|设定|要求)(全部|都|已经|一律)?(作废|无效|失效|不算|取消)',
         null, 'i', false),
        (13, 'role_override', 'injection', null,
         '(?<![a-z])(you\s*are|you''?re|u\s*r)\s*now\s*(dan|an?\s*(unrestricted|unfiltered|uncensored|jailbroken|evil|rogue)'
         || '|unrestricted|unfiltered|uncensored|jailbroken|free\s*(from|of)|no\s*longer|in\s*(developer|dev|dan|god|jailbreak|unrestricted)\s*mode'
         || '|going\s*to\s*(act|pretend|ignore|answer|respond)|acting\s*as|my\s*(slave|servant|puppet))(?![a-z])'
         || '|(?<![a-z])you\s*are\s*no\s*longer\s*(bound|restricted|limited|an?\s*(ai|assistant|language\s*model|chatbot)|chatgpt|claude|gpt)'
         || '|(?<![a-z])from\s*now\s*on,?\s*you\s*(are|''re|will\s*be)\s*(now\s*)?(dan|an?\s*(unrestricted|unfiltered|uncensored|jailbroken|evil|ai|assistant|chatbot)'
         || '|no\s*longer|free|my)(?![a-z])'
         || '|(?<![a-z])from\s*now\s*on,?\s*you\s*(will|shall|must|should|are\s*going\s*to)\s*(only\s*)?'
         || '(answer|respond|reply|act|behave|pretend|speak|talk|obey|ignore|roleplay)(?![a-z])'
         || '|(?<![a-z])(act|behave|respond|roleplay)\s*as\s*(if\s*you\s*(are|were)\s*)?(an?\s*)?(unrestricted|unfiltered|uncensored|jailbroken|evil|dan)(?![a-z])'
         || '|(?<![a-z])pretend\s*(that\s*)?(you\s*are|you''re|to\s*be)\s.{0,40}(no|without)\s*(any\s*)?(rules|restrictions|limits|filters|guidelines)'
         || '|你现在(是|就是|扮演|成为|变成)[^。！？!?\n]{0,12}(没有|不受|无|不再受)[^。！？!?\n]{0,6}(限制|约束|规则|审查|过滤)'
         || '|你现在(是|就是|扮演|成为|变成)\s*(dan|一个?(越狱|不受限|无限制))'
         || '|从现在(开始|起)[，,]?\s*你(就)?(是|将是|将扮演|要扮演|扮演|不再|没有)'
         || '|扮演[^。！？!?\n]{0,10}(没有|不受|无)(任何)?[^。！？!?\n]{0,4}(限制|约束|规则|审查)'
         || '|你不再受[^。！？!?\n]{0,6}(限制|约束|规则)',
         null, 'i', false),
        (14, 'reveal_system_prompt', 'injection', null,
         '(?<![a-z])(reveal|show|print|repeat|output|display|leak|expose|dump|disclose|tell\s*me|give\s*me|what\s*(were|are|is))'
         || '[^.!?\n]{0,40}(system|initial|hidden|original|secret|first)\s*(prompt|instructions?)'
         || '|(?<![a-z])(repeat|print|output)\s*(the\s*)?(text|words|everything)\s*above'
         || '|(泄露|透露|显示|输出|告诉我|打印|展示|给我看|重复|发给我|说出)[^。！？!?\n]{0,10}(系统提示|系统指令|系统消息|初始指令|提示词|隐藏指令|系统设定)'
         || '|把[^。！？!?\n]{0,6}(系统提示|系统指令|初始指令|提示词|隐藏指令|系统设定)[^。！？!?\n]{0,4}(告诉|发给|给|说给|输出|显示|透露|泄露)',
         null, 'i', false),
        (15, 'jailbreak', 'injection', null,
         '(^|[.!?\n:;]\s*)(please\s*)?(now\s*)?(enable|enter|activate|switch\s*(to|into)|turn\s*on|go\s*into|engage|unlock)\s*(the\s*)?'
         || '(developer|dev|god|dan|jailbreak|unrestricted)\s*mode(?!\s*(on|in|for|of)\s*(my|the|your|this|a)?\s*[a-z]*\s*'
         || '(phone|device|android|iphone|tablet|laptop|computer|pc|console|game|app|browser|tv|watch|car))'
         || '|(?<![a-z])(dan|jailbreak)\s*mode(?![a-z])'
         || '|(?<![a-z])jail\s*-?\s*break(?!(s|ed|ing|er|ers)?\s*(my|his|her|their|our|an?|the|this|that)?\s*(old\s*|new\s*)?'
         || '(iphone|phone|ipad|ios|android|device|console|switch|ps[0-9]|psp|kindle|router|tv|watch|car|tablet))'
         || '|(?<![a-z])do\s*anything\s*now\s*[:(-]|broken\s*free\s*of\s*the\s*(typical\s*)?confines'
         || '|(^|[。！？!?\n，,：:\s])(请|现在)?(进入|开启|启用|打开|切换到|激活)(开发者|越狱|上帝|dan|无限制|调试)模式'
         || '|越狱模式|(帮你|让你|对你|给你)越狱',
         null, 'i', false),
        (16, 'fake_role_tag', 'injection', null,
         '<\|?\s*(system|im_start|im_end)|\[\s*/?\s*(system|inst)\s*\]|<<\s*/?\s*sys\s*>>'
         || '|(^|\n)\s*(system|assistant)\s*:\s*(ignore|you|forget|new|reveal|from|override|disregard|always|never|do\s*not|don''?t)',
         null, 'i', false),
        (17, 'safety_bypass', 'injection', null,
         '(?<![a-z])(bypass|disable|override|turn\s*off|ignore|skip|remove|deactivate|circumvent|get\s*around)\s*'
         || '((your|the|all|any|of)\s*)*(safety|content|security|moderation|ethical|ethics)\s*'
         || '(filters?|rules|guidelines|polic(y|ies)|restrictions|checks|guardrails|settings|limits|protocols)'
         || '|绕过[^。！？!?\n]{0,6}(安全|审查|限制|过滤|规则)|解除[^。！？!?\n]{0,6}(限制|封印|审查|约束)'
         || '|跳过[^。！？!?\n]{0,4}(安全|审查)(限制|检查|规则|策略)?',
         null, 'i', false),
        (18, 'new_instructions', 'injection', null,
         '(?<![a-z])(your|the)\s*new\s*(instructions|rules|task|directive|orders)\s*(are|is|:)'
         || '|(?<![a-z])new\s*system\s*(instructions?|prompt|rules?|policy)\s*:'
         || '|(?<![a-z])(previous|prior|earlier|above|old|original)\s*(instructions|rules|guidelines|directives)\s*'
         || '(are\s*(now\s*)?(void|cancell?ed|obsolete|invalid|revoked)|no\s*longer\s*apply|(do|does)\s*not\s*apply)'
         || '|你的新(任务|指令|规则|设定)(是|为|：|:)',
         null, 'i', false),
        -- Tools turned against the user: a tool, function or command the
        -- model is told to run on everything, to an outside address, or
        -- without the user's consent ("call the restaurant tool" stays).
        (19, 'tool_hijack', 'injection', null,
         '(?<![a-z])(call|use|invoke|run|execute|trigger)\s*(the\s*|your\s*)?[a-z0-9_.-]*\s*(tool|function|api|plugin|action|command)s?(?![a-z])'
         || '[^.!?\n]{0,80}((?<![a-z])without\s*(asking|telling|informing|notifying|confirming|confirmation|permission|consent|the\s*user)'
         || '|(?<![a-z])all\s*(of\s*)?(the\s*)?(user''?s\s*|users''?\s*|their\s*|his\s*|her\s*)?(messages|emails|mails|files|data|contacts|history|passwords|credentials|documents|memories)'
         || '|(?<![a-z])(the\s*)?(whole|entire)\s*(home|disk|drive|directory|database|folder|system|account|inbox|mailbox)'
         || '|(?<![a-z])(to|at)\s*[a-z0-9._%+-]+@[a-z0-9-]+|(?<![a-z])(silently|secretly|immediately))'
         || '|(?<![a-z])(execute|run)\s*(the\s*)?(following|this|these)\s*(shell\s*|bash\s*|system\s*|terminal\s*)?(commands?|code|script)\s*(immediately|now|:)'
         || '|(?<![a-z])curl\s[^|\n]{1,80}\|\s*(ba|z)?sh(?![a-z])|(?<![a-z])rm\s+-rf\s+[/~]',
         null, 'i', false),
        -- Memory poisoning: standing orders planted for later turns and other
        -- users ("from now on always tell users that…", "remember that the
        -- admin said…", "store this as a permanent rule"). A user's own
        -- wishes ("from now on call me Sam") are not aimed at others.
        (20, 'memory_poisoning', 'injection', null,
         '(?<![a-z])from\s*now\s*on,?\s*(you\s*(must|should|will|shall)\s*)?(always|never)\s*'
         || '(tell|say\s*to|answer|respond\s*to|reply\s*to|recommend\s*to|claim\s*to|inform|warn|assure|mention\s*to)\s*'
         || '(all\s*|other\s*|the\s*)?(users|everyone|anyone|people|customers|visitors|clients)'
         || '|(?<![a-z])(remember|note|memori[sz]e|keep\s*in\s*mind|never\s*forget)\s*(that\s*)?(the\s*|your\s*)?'
         || '(admin|administrator|admins|developers?|system|owner|operator|creator|openai|anthropic|security\s*team|it\s*department|ceo)\s*'
         || '(said|says|has\s*said|told|wants|requires|instructed|ordered|has\s*(authori[sz]ed|approved|allowed)|authori[sz]ed|approved|allowed)'
         || '|(?<![a-z])(store|save|add|write|record|keep|put)\s*(this|the\s*following|that)\s*(as|in|into|to)\s*(a\s*|an\s*|your\s*)?'
         || '(permanent|core|persistent|long[ -]*term|system|standing)\s*(rule|instruction|memory|directive|policy|order)'
         || '|(?<![a-z])(update|change|modify|overwrite|rewrite)\s*your\s*(core\s*)?(memory|memories|instructions|rules|system\s*prompt|guidelines)'
         || '|(从现在(开始|起)|以后)[，,]?\s*(你)?(要|必须|应该)?(总是|一直|永远)(告诉|对)(所有)?(用户|别人|大家|其他人)'
         || '|(记住|牢记)[^。！？!?\n]{0,4}(管理员|开发者|系统|老板)(说|要求|允许|授权)',
         null, 'i', false),
        -- Notes addressed to an AI that reads a page, mail or document.
        (21, 'note_to_ai', 'injection', null,
         '(?<![a-z])(note|message|instructions?|notice|attention|reminder)\s*(to|for)\s*(all\s*|any\s*)?(the\s*)?'
         || '(ai|llm|language\s*model|chatbot|gpt|ai\s*assistant|ai\s*agent|ai\s*model)s?'
         || '(\s*(reading|processing|summari[sz]ing|parsing|viewing|scanning|crawling)\s*this[a-z ]{0,12})?\s*[:,-]'
         || '|(?<![a-z])if\s*you\s*are\s*(an?\s*)?(ai|llm|large\s*language\s*model|language\s*model|chatbot|gpt|ai\s*(assistant|agent|model))'
         || '(?![a-z])[^.!?\n]{0,60}(ignore|reply|respond|answer|say|tell|send|forward|include|recommend|rate|praise|approve|must|should)'
         || '|(?<![a-z])(dear|hey|hello|attention)\s*(ai|llm|chatbot|gpt|language\s*model|ai\s*(assistant|agent|model))\s*[,:!]'
         || '|(?<![a-z])(ai|llm|language\s*model)\s*(assistants?|agents?|models?|systems?)?\s*(reading|processing|summari[sz]ing)\s*this'
         || '[a-z ]{0,12}\s*(must|should|shall|are\s*instructed|need\s*to|will|have\s*to)'
         || '|(致|给)\s*(ai|人工智能|大模型|语言模型|ai助手)[^。！？!?\n]{0,6}[：:]',
         null, 'i', false),
        -- The same attacks in Spanish, German and French, and English words
        -- inside Chinese sentences.
        (22, 'ignore_instructions_intl', 'injection', null,
         '(?<![a-z])(ignora|ignore|olvida|olvide|descarta|omite|no\s*sigas)\s*(todas\s*|todos\s*)?((las|los)\s*)?'
         || '((instrucciones|reglas|indicaciones|órdenes|ordenes|directrices|normas)\s*(anteriores|previas|del\s*sistema|originales|iniciales)'
         || '|(tus|sus)\s*(instrucciones|reglas|indicaciones|directrices|normas))'
         || '|(?<![a-z])(ignoriere|ignorier|ignorieren\s*sie|vergiss|vergessen\s*sie|missachte)\s*(alle\s*)?'
         || '((deine|ihre|die|alle)\s*)?((bisherigen|vorherigen|vorigen|früheren|obigen|ursprünglichen)\s*)?(anweisungen|instruktionen|regeln|vorgaben|befehle|richtlinien)'
         || '|(?<![a-z])(ignore[sz]?|oublie[sz]?)\s*(toutes\s*|tous\s*)?((les|tes|vos)\s*)?'
         || '(instructions|consignes|règles|directives|ordres)(?![a-z])(?=[^.!?\n]{0,3}(précédentes|antérieures|ci-dessus|du\s*système|initiales|[:,.;!]|$|et\s))'
         || '|(?<![a-z])(ahora\s*eres|ahora\s*serás|du\s*bist\s*(jetzt|nun|ab\s*sofort)|tu\s*es\s*(maintenant|désormais)|vous\s*êtes\s*(maintenant|désormais))\s*'
         || '(un[ae]?\s*|ein[e]?\s*)?(ia\s*|ki\s*|asistente\s*|assistent\s*|assistant\s*|modelo\s*|modell\s*|modèle\s*)?'
         || '(sin|ohne|sans)\s*(restricciones|límites|limites|reglas|filtros|einschränkungen|grenzen|regeln|filter|restrictions|règles|filtres)'
         || '|(?<![a-z])(muestra|revela|dime|imprime|enséñame|repite)[^.!?\n]{0,20}(prompt|instrucciones)\s*(del|de)\s*sistema'
         || '|(?<![a-z])(zeige?|gib|verrate|nenne|wiederhole)[^.!?\n]{0,20}(system-?\s*prompt|systemanweisungen|anfangsanweisungen)'
         || '|(?<![a-z])(affiche|montre|révèle|donne|répète)[^.!?\n]{0,20}(prompt|instructions)\s*(du\s*)?système'
         || '|(ignore|disregard|forget|忽略|无视|忽视|忘记|忘掉)\s*(掉)?\s*(所有|全部|一切|all)?\s*(的)?\s*'
         || '(之前|以前|先前|前面|上面|以上|previous|prior|above|earlier)\s*(的)?\s*(所有|全部|all)?\s*(的)?\s*'
         || '(instructions?|prompts?|rules|指令|指示|规则|提示词?|设定)'
         || '|(告诉我|显示|输出|打印|泄露|透露|给我看|发给我)[^。！？!?\n]{0,10}system\s*prompt',
         null, 'i', false),

        (100, 'private_key', 'secret', 'private_key',
         '-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*(-----END [A-Z ]*PRIVATE KEY-----)?',
         '[REDACTED:private_key]', 'g', false),
        -- IBANs: country, two check digits, 11-30 capitals and digits (bank
        -- codes may hold letters, the account digits follow), plain or in
        -- groups of four; replaced only if the ISO 13616 mod-97 check holds
        -- (capture group 1), before any phone, card or ID rule reads its digits.
        (102, 'iban', 'secret', 'iban',
         '(?<![A-Za-z0-9])([A-Z]{2}[0-9]{2}(\s?[A-Z0-9]{4})?(\s?[0-9]{4}){2}(\s?[A-Z0-9]{4}){0,5}(\s?[A-Z0-9]{1,3})?)(?![A-Za-z0-9])',
         '[REDACTED:iban]', 'g', true),
        -- Labelled secrets keep their label: "password: [REDACTED:password]".
        -- After "is/was/:" any word counts (a password can be "love"), except
        -- words that describe the password ("is wrong", "is required").
        (110, 'password', 'secret', 'password',
         '((?<![a-z])(password|pass\s+word|passwd|passphrase|passcode|pwd|pw|passwort|kennwort|contrase(ñ|n)a|mot\s+de\s+passe|senha)'
         || '(\s+(for|für|de|del|du|pour)\s+(the\s+|my\s+|mein(e|em)?\s+|la\s+|le\s+|el\s+|mi\s+|mon\s+|ma\s+)?[a-z0-9-]+)?'
         || '(''s|\s*(is|was|=|:|：|-|ist|lautet|es|est|era|était|é))\s*)'
         || '(?!(not|too|wrong|incorrect|correct|expired|required|changed|reset|the|a|an|weak|strong|saved|stored|empty|case|policy'
         || '|manager|field|length|protected|sent|set|missing|invalid|valid|ok|fine)(?![a-z-]))[^\s,;，。；、！!？?）)]+',
         '\1[REDACTED:password]', 'gi', false),
        -- "password hunter2": no separator, so the value needs a digit or symbol.
        (111, 'password_bare', 'secret', 'password',
         '((?<![a-z])(password|passwd|passcode|pwd)\s+)(?=[^\s,;，。]*[0-9!@#$%^&*])[^\s,;，。；、！!？?）)]{4,}',
         '\1[REDACTED:password]', 'gi', false),
        -- 密码abc123 / 密码是abc123: a password written after the Chinese
        -- label is ASCII ("密码忘了" stays).
        (112, 'password_zh', 'secret', 'password',
         '((密码|口令|密碼|パスワード|暗証番号)\s*(是|为|為|：|:|=|は)?\s*)[A-Za-z0-9!@#$%^&*_+=~-]{3,}',
         '\1[REDACTED:password]', 'g', false),
        (115, 'pin', 'secret', 'pin',
         '((?<![a-z])(pin(-?\s*code|-?\s*nummer|\s*number|码|碼)?|(code|c(ó|o)digo)\s+pin)(\s+(for|de|del|der|of)\s+(the\s+|my\s+|la\s+|el\s+|mi\s+|ma\s+|meiner\s+)?[a-z]+)?'
         || '\s*(is|was|:|：|=|是|为|ist|lautet|es|est|era)?\s*)[0-9]{4,8}(?![0-9])',
         '\1[REDACTED:pin]', 'gi', false),
        -- A labelled key needs a digit in its value: "the secret is love" stays.
        (120, 'labelled_key', 'secret', 'api_key',
         '((?<![a-z])(api[_ -]?key|apikey|secret[_ -]?(access[_ -]?)?key|access[_ -]?key|access[_ -]?token|auth[_ -]?token'
         || '|client[_ -]?secret|token|secret)\s*(is|=|:|：)?\s*|(密钥|秘钥|令牌)\s*(是|为|：|:|=)?\s*)'
         || '(?=[^\s,;，。；、]*[0-9])[^\s,;，。；、]{8,}',
         '\1[REDACTED:api_key]', 'gi', false),
        (121, 'bearer_token', 'secret', 'api_key',
         '((?<![a-z])bearer\s+)[A-Za-z0-9._~+/-]{16,}=*',
         '\1[REDACTED:api_key]', 'gi', false),
        -- Vendor formats: OpenAI/Anthropic sk-…, Stripe sk_/pk_/rk_ live/test
        -- and whsec_, AWS access key ids, GitHub, GitLab, npm, Hugging Face,
        -- SendGrid, Slack xox…, Google AIza…, JSON Web Tokens.
        (122, 'vendor_key', 'secret', 'api_key',
         '(?<![A-Za-z0-9_-])(sk-(proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}'
         || '|[sprk]k_(live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{16,}'
         || '|(AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Za-z0-9])'
         || '|(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}'
         || '|npm_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,}|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}'
         || '|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,}'
         || '|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})',
         '[REDACTED:api_key]', 'g', false),
        -- Unlabelled random strings: 32+ base64/url-safe characters mixing
        -- digits, lower and upper case (words, slugs and paths do not), and
        -- 40-character AWS-style secret keys that may contain '/' or '+'.
        -- An unlabelled hex string is not one of them: UUIDs without dashes,
        -- MD5 and SHA digests and git commit ids are identifiers that apps
        -- put in session ids, metadata and store keys (a hex secret is
        -- caught by its label or its provider prefix above).
        (130, 'random_token', 'secret', 'token',
         '(?<![A-Za-z0-9+_-])(?=[A-Za-z0-9+_-]*[0-9])(?=[A-Za-z0-9+_-]*[a-z])(?=[A-Za-z0-9+_-]*[A-Z])'
         || '[A-Za-z0-9+_-]{32,}={0,2}'
         || '|(?<![A-Za-z0-9/+])(?=[A-Za-z0-9/+]*[0-9])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])',
         '[REDACTED:token]', 'g', false),
        -- ASCII addresses, and internationalised ones (accented, Cyrillic,
        -- Greek or CJK local part and domain); a CJK local part must start
        -- after a space, a colon or the start of the text.
        (140, 'email', 'secret', 'email',
         '([A-Za-z0-9._%+\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF-]+|(?<![^\s:：(])[\u4e00-\u9fff]{1,8})'
         || '@[A-Za-z0-9\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF\u4e00-\u9fff-]+(\.[A-Za-z0-9\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF\u4e00-\u9fff-]+)*'
         || '\.[A-Za-z\u00C0-\u024F\u0400-\u04FF\u4e00-\u9fff]{2,}',
         '[REDACTED:email]', 'gi', false),
        -- Addresses spelled out against scrapers: "carol dot smith at gmail
        -- dot com", "dave(at)example(dot)org", "erik [at] web [dot] de".
        (141, 'email_spelled', 'secret', 'email',
         '(?<![a-z0-9])[a-z0-9][a-z0-9_%+-]*((\s*(\.|\(dot\)|\[dot\]|\{dot\})\s*|\s+dot\s+)[a-z0-9_%+-]+)*'
         || '(\s*(\(at\)|\[at\]|\{at\})\s*|\s+at\s+)'
         || '[a-z0-9-]+((\s*(\.|\(dot\)|\[dot\]|\{dot\})\s*|\s+dot\s+)[a-z0-9-]+)*'
         || '(\s*(\(dot\)|\[dot\]|\{dot\})\s*|\s+dot\s+)(com|org|net|edu|gov|io|de|fr|es|it|nl|cn|uk|jp|co|info|me|ai|ch|at)(?![a-z])',
         '[REDACTED:email]', 'gi', false),
        -- Resident identity card of the PRC: 6-digit region, birth date
        -- 18xx-20xx, 3-digit sequence, check digit or X; spaced or dashed;
        -- the 15-digit first-generation form (yymmdd); 4-4-4-4-2 groups.
        (150, 'cn_id_card', 'secret', 'id_card',
         '(?<![0-9A-Za-z])[1-9][0-9]{5}[ .-]?(18|19|20)[0-9]{2}[ .-]?(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])[ .-]?[0-9]{3}[0-9Xx](?![0-9A-Za-z])'
         || '|(?<![0-9A-Za-z])[1-9][0-9]{5}[ .-]?[0-9]{2}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])[ .-]?[0-9]{3}(?![0-9A-Za-z])'
         || '|(?<![0-9A-Za-z])[1-9][0-9]{3}([ .-][0-9]{4}){3}[ .-][0-9][0-9Xx](?![0-9A-Za-z])',
         '[REDACTED:id_card]', 'g', false),
        -- US social security numbers: AAA-GG-SSSS (not 000, 666, 9xx), or
        -- any 9 digits after an SSN label.
        (152, 'ssn', 'secret', 'ssn',
         '(((?<![a-z])(ssn|social\s*security(\s*(number|no\.?|#))?)\s*(is|:|：|=|#)?\s*)[0-9]{3}[ .-]?[0-9]{2}[ .-]?[0-9]{4}(?![0-9]))'
         || '|(?<![0-9-])(?!000|666|9[0-9]{2})[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}(?![0-9-])',
         '[REDACTED:ssn]', 'gi', false),
        (155, 'passport', 'secret', 'passport',
         '((?<![a-z])(passport|reisepass|pasaporte|passeport|passaporte)(-?\s*(number|nummer|no\.?|nr\.?|n°|n\.?º|#|num|número|numéro))?'
         || '|(n(ú|u)mero\s+de\s+pasaporte|num(é|e)ro\s+de\s+passeport)|护照(号码|号)?|護照(號碼|號)?|パスポート(番号)?)\s*(is|:|：|=|是|为|ist|lautet|es|est|は)?\s*'
         || '([A-Za-z]{0,3}\s?[0-9]{4}\s?[0-9]{2,5}(?![0-9])|(?=[A-Za-z0-9]{0,8}[0-9])(?=[A-Za-z0-9]{0,8}[A-Za-z])[A-Za-z0-9]{8,9}(?![A-Za-z0-9]))',
         '[REDACTED:passport]', 'gi', false),
        -- Mainland mobile 1[3-9]x xxxx xxxx (optionally +86/0086/(+86),
        -- spaced, dotted or dashed); international numbers with a leading +
        -- or 00; North American numbers with separators, (415) 555-2671;
        -- landlines with an area code, 010-12345678, (021) 6123 4567;
        -- Taiwanese mobiles 09xx-xxx-xxx; and any 7+ digit number after a
        -- phone label. Bare digit runs without a label, + or separators are
        -- not phones, nor are landline-shaped runs inside a longer token of
        -- ASCII letters and digits (hex ids, hashes).
        (160, 'phone', 'secret', 'phone',
         '(?<![0-9])((\+|00)?86[ .-]?|\(\+?86\)[ .-]?)?1[3-9][0-9]([ .-]?[0-9]{4}){2}(?![0-9])'
         || '|(?<![0-9A-Za-z+])(\+|00)[1-9][0-9]{0,2}[ .-]?(\(?[0-9]{1,4}\)?[ .-]?){1,4}[0-9]{2,5}(?![0-9])'
         || '|(?<![0-9A-Za-z])(\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[.-])[0-9]{3}[.-][0-9]{4}(?![0-9A-Za-z])'
         || '|(?<![0-9A-Za-z])(\(0[1-9][0-9]{1,2}\)|0[1-9][0-9]{1,2})[ -]?[0-9]{3,4}[ -]?[0-9]{4}(?![0-9A-Za-z])'
         || '|(?<![0-9A-Za-z])09[0-9]{2}[ -]?[0-9]{3}[ -]?[0-9]{3}(?![0-9A-Za-z])',
         '[REDACTED:phone]', 'g', false),
        (161, 'labelled_phone', 'secret', 'phone',
         '(((?<![a-z])(phone|tel|telephone|mobile|cell|call\s*me(\s*(at|on))?|text\s*me(\s*(at|on))?|whatsapp|my\s*number\s*is|phone\s*number)'
         || '|电话|手机号?码?|联系方式|座机|号码)\s*(is|:|：|是|为)?\s*)\+?[0-9(][0-9 ().-]{5,}[0-9](?![0-9])',
         '\1[REDACTED:phone]', 'gi', false),
        (170, 'labelled_card', 'secret', 'bank_card',
         '(((?<![a-z])(card|visa|mastercard|amex)\s*(number|no\.?|num|#)?|卡号|[银信储借工资]{0,2}[行用蓄记]?卡号?)\s*(is|:|：|是|为)?\s*)'
         || '[0-9]([ .-]?[0-9]){12,18}(?![0-9])',
         '\1[REDACTED:bank_card]', 'gi', false),
        -- 13-19 digits, plain or in groups of four (spaces, dashes or dots)
        -- or Amex 4-6-5; replaced only if Luhn-valid (capture group 1).
        (171, 'bank_card', 'secret', 'bank_card',
         '(?<![0-9])([0-9]{13,19}|[0-9]{4}([ .-][0-9]{4}){2,3}([ .-][0-9]{1,3})?|[0-9]{4}[ .-][0-9]{6}[ .-][0-9]{5})(?![0-9])',
         '[REDACTED:bank_card]', 'g', true),
        -- Street addresses: "221B Baker Street", "1600 Pennsylvania Avenue NW";
        -- "建国路88号", "世纪大道100号2栋301室", "…小区3栋".
        (180, 'address', 'secret', 'address',
         '(?<![0-9A-Za-z])[0-9]{1,5}[A-Za-z]?(\s+[A-Z][a-z]+\.?){1,3}\s+(Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln'
         || '|Drive|Dr|Way|Court|Ct|Place|Pl|Terrace|Parkway|Pkwy|Highway|Hwy|Loop|Square|Sq|Close|Crescent)\.?(\s+(NW|NE|SW|SE|N|S|E|W))?(?![A-Za-z])'
         || '|[\u4e00-\u9fff]{1,4}(路|街|大道|大街|巷|弄|胡同|道)([东西南北中]?段)?[0-9]{1,5}(号|號|弄)([0-9]{1,5}(号|號))?'
         || '([\u4e00-\u9fffA-Za-z]{0,10}[0-9A-Za-z]{1,5}(栋|幢|座|号楼|单元|层|楼|室))*'
         -- German: "Lindenstraße 23, 50674 Köln", "Berliner Allee 104", "Am Waldrand 7, 80331 München".
         || '|(?<![A-Za-zÄÖÜäöüß])(([A-ZÄÖÜ][a-zäöüß]+\s)?(Straße|Strasse|Weg|Gasse|Platz|Allee|Ring|Damm|Ufer|Chaussee)'
         || '|[A-ZÄÖÜ][a-zäöüß-]*(straße|strasse|str\.|weg|gasse|platz|allee|ring|damm|ufer|chaussee))\s*[0-9]{1,4}\s?[a-z]?(?![0-9A-Za-z])'
         || '(,?\s*[0-9]{5}\s+[A-ZÄÖÜ][a-zäöüß]+)?'
         || '|(?<![A-Za-z])Am\s[A-ZÄÖÜ][a-zäöüß]+\s[0-9]{1,4}[a-z]?,?\s*[0-9]{5}\s+[A-ZÄÖÜ][a-zäöüß]+'
         -- French: "14 rue des Lilas, 69003 Lyon".
         || '|(?<![0-9])[0-9]{1,4}(\s?(bis|ter))?,?\s+([Rr]ue|[Aa]venue|[Bb]oulevard|[Pp]lace|[Aa]llée|[Ii]mpasse|[Cc]hemin|[Qq]uai)\s+'
         || '(de\s|du\s|des\s|la\s|l''|d'')*([A-ZÀ-Ý][a-zà-ÿ''-]+\s?){1,4}(,?\s*[0-9]{5}\s+[A-ZÀ-Ý][a-zà-ÿ-]+)?'
         -- Spanish: "Calle de Alcalá 48", "C/ Mayor 5, 28013 Madrid".
         || '|(?<![A-Za-z])([Cc]alle|C/|[Aa]venida|Avda\.?|[Pp]laza|[Pp]aseo|[Cc]arrer)\s+(de\s+(la\s+|los\s+|las\s+)?|del\s+)?'
         || '([A-ZÁÉÍÓÚÑ][a-záéíóúñ]+\s?){1,3},?\s*(n\.?º\s*)?[0-9]{1,4}(?![0-9])(,?\s*[0-9]{5}\s+[A-ZÁÉÍÓÚ][a-záéíóúñ]+)?'
         -- Japanese: "大阪府大阪市北区梅田3-1-3", "東京都渋谷区神南1丁目19-11", "新宿区西新宿2-8-1".
         || '|[\u4e00-\u9fff]{1,3}[都道府県][\u4e00-\u9fff\u3040-\u30ff]{1,12}[0-9]{1,4}(丁目|-)[0-9]{1,4}(番地?|-)?([0-9]{1,4}号?)?'
         || '|[\u4e00-\u9fff]{1,4}[区市][\u4e00-\u9fff\u3040-\u30ff]{1,8}[0-9]{1,4}(丁目|-)[0-9]{1,4}(番地?|-)?([0-9]{1,4}号?)?'
         || '|[\u4e00-\u9fff]{2,8}(小区|花园|公寓|大厦|园区|南区|北区|新村|苑)[0-9]{1,4}(栋|幢|号楼|座)([0-9]{1,5}(室|号))?',
         '[REDACTED:address]', 'g', false)
    ) as r(rule_order, rule, category, kind, pattern, replacement, flags, luhn)
    order by r.rule_order;
end
$$;

comment on function pgmem.safety_rules() is
    'The safety rules of the write path, in the order they apply: folds (invisible characters, full-width forms, look-alikes), injection phrasings (text matching one is not stored) and secret/personal-data patterns (redacted to [REDACTED:<kind>]). Used by pgmem.detect_injection, pgmem.redact and, exported, by the Python pre-filter.';

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
            if v_chars[v_i + 1] = '?' then
                v_e := v_chars[v_i + 2];
                if v_e = ':' then
                    v_i := v_i + 2;
                elsif v_e in ('=', '!') then
                    v_look[v_top] := true; v_i := v_i + 2;
                elsif v_e = '<' and v_chars[v_i + 3] in ('=', '!') then
                    v_look[v_top] := true; v_i := v_i + 3;
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
            v_min[v_top] := least(v_min[v_top], v_digits[v_top]);
            v_best[v_top] := null; v_digits[v_top] := 0;
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
    digits := least(v_min[1], v_digits[1]);
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
    -- One row per rule of the category, in rule order: the least number of
    -- ASCII digits a match holds, then the LIKE patterns of which the
    -- lower-cased text holds one ('%' for a rule without any), each row
    -- padded with its own last pattern to the longest.
    with gates as (
        select r.rule_order, g.digits, coalesce(g.likes, array['%']) as likes
        from pgmem.safety_rules() as r
        cross join lateral pgmem._regex_gate(r.pattern, r.flags) as g
        where r.category = p_category
    ),
    width as (select pg_catalog.max(pg_catalog.cardinality(g.likes)) as n from gates as g)
    select pg_catalog.array_agg(
               array[g.digits::text] || g.likes
               || pg_catalog.array_fill(g.likes[pg_catalog.cardinality(g.likes)],
                                        array[w.n - pg_catalog.cardinality(g.likes)])
               order by g.rule_order)
    from gates as g cross join width as w
$$;

comment on function pgmem._derive_safety_gates(text) is
    'The gates of one category of pgmem.safety_rules(), a row [least ASCII digits, LIKE patterns...] per rule in rule order, derived from the rules'' patterns by pgmem._regex_gate (internal; pgmem._safety_gates holds them as constants).';

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
    'The gates of one category of pgmem.safety_rules(), a row [least ASCII digits, LIKE patterns...] per rule in rule order: pgmem._derive_safety_gates''s, as constants written when the SQL files are applied (internal; pgmem._redact_many and pgmem._detect_injection_many test them before a rule''s expression).';

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

create or replace function pgmem._gate_open(p_gates text[], p_rule integer, p_lower text, p_digits integer)
returns boolean
language sql
immutable parallel safe
security invoker
as $$
    -- Rule p_rule's gate of pgmem._safety_gates, for a text given
    -- lower-cased and with its pgmem._ascii_digits: false means it cannot
    -- match the rule.
    select p_digits operator(pg_catalog.>=) (p_gates[p_rule][1])::integer
           and p_lower operator(pg_catalog.~~) any (p_gates[p_rule:p_rule][2:])
$$;

comment on function pgmem._gate_open(text[], integer, text, integer) is
    'Whether a text, given lower-cased and with its ASCII digits, passes rule p_rule''s gate of pgmem._safety_gates (internal; false: the rule cannot match it).';

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
-- the text rotated by ROT13 and, for Latin-script text, the text reversed.
declare
    -- The rules, read once a session.
    v_prefilter text := (pgmem._safety_column('prefilter', 'injection', 'pattern'))[1];
    v_decoded_prefilter text := (pgmem._safety_column('prefilter', 'decoded', 'pattern'))[1];
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
        if v_text OPERATOR(pg_catalog.~) '[A-Za-z]' then
            v_decoded := pgmem._safety_fold(v_text, v_rot13_p, v_rot13_r, v_rot13_f);
            if v_decoded OPERATOR(pg_catalog.~*) v_decoded_prefilter then
                v_sources := v_sources || v_decoded;
            end if;
            v_decoded := pg_catalog.reverse(v_text);
            if v_text OPERATOR(pg_catalog.!~) '[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]'
               and v_decoded OPERATOR(pg_catalog.~*) v_decoded_prefilter then
                v_sources := v_sources || v_decoded;
            end if;
        end if;
        v_views := '{}';
        foreach v_source in array v_sources loop
            v_view := pgmem._safety_fold(pg_catalog.normalize(v_source, 'NFKC'), v_inj_p, v_inj_r, v_inj_f);
            v_views := v_views || v_view || pgmem._safety_fold(v_view, v_loose_p, v_loose_r, v_loose_f);
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
               and pgmem._gate_open(v_gates, v_r, v_lowers[v_k], v_digits[v_k])
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
                continue when not pgmem._gate_open(v_gates, v_r, v_lower, v_digits);
                if not v_luhn[v_r] then
                    v_new := pg_catalog.regexp_replace(content, v_patterns[v_r], v_replacements[v_r], v_flags[v_r]);
                elsif content OPERATOR(pg_catalog.~) v_patterns[v_r] then
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
-- inlined, and its statement would be planned at every call.
create or replace function pgmem._redacted(p_texts text[])
returns text[]
language plpgsql
stable parallel safe
security invoker
set search_path = pg_catalog, pg_temp
as $$
begin
    return array(select r.content from pgmem._redact_many(p_texts) as r order by r.item);
end
$$;

comment on function pgmem._redacted(text[]) is
    'The redacted form of each element of p_texts, in order, NULL for NULL (pgmem._redact_many without the kinds; internal).';

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
