"""Who the user is: name, age, home, work, diet and health, family status, and the
general "my X is Y" / "我的X是Y" attribute. Single-valued attributes carry a slot
triple with a predicate from :data:`pgmem.extract.facts.STABLE_PREDICATES` where one
fits, so that "I moved to Lisbon" supersedes "I live in Paris"."""

from __future__ import annotations

import re

from pgmem.extract.facts import (
    STABLE_PREDICATES,
    USER,
    Fact,
    Kind,
    Triple,
    has_cjk,
    normalize_predicate,
)
from pgmem.extract.lexicon import (
    DEMONYMS,
    PLACES_ZH,
    PROFESSIONS_EN,
    RELATIONS_EN,
    RELATIONS_ZH,
    SURNAMES_ZH,
    cn_number,
    importance,
    words,
)
from pgmem.extract.text import article, clean_value, is_fragment, third_person

__all__ = ["PROFESSIONS_ZH_RE", "identity_facts"]

PROFESSIONS_ZH_RE = re.compile(
    r"(?:工程师|程序员|设计师|产品经理|项目经理|经理|总监|主管|主任|老师|教师|教授|讲师|医生|医师|护士|律师"
    r"|会计师?|记者|编辑|作家|司机|厨师|学生|研究生|博士生?|硕士生?|本科生|大学生|高中生|初中生|小学生"
    r"|分析师|科学家|研究员|架构师|顾问|销售|运营|创始人|老板|CEO|CTO|CFO|实习生|公务员|警察|军人|农民"
    r"|工人|画家|音乐家|摄影师|翻译|主播|博主|店主|自由职业者|程序猿|码农|开发者?|测试|产品|前端|后端"
    r"|全栈|职员|员工|店员|技术员|研究生|律师|药剂师|咨询师|营养师|心理咨询师|建筑师|飞行员|空姐|导游"
    r"|客服|HR|人事|行政|财务|法务|运维|数据分析师|算法工程师|交易员|投资人|创业者|退休人员|家庭主妇"
    r"|全职妈妈|全职爸爸|(?<!会)员|(?<!老)师)$"
)
_PLACE_SUFFIX_ZH_RE = re.compile(r"(?:省|市|县|区|州|国|镇|村|岛)$")
_ORG_SUFFIX_ZH_RE = re.compile(
    r"(?:公司|集团|银行|大学|学院|医院|研究所|研究院|实验室|中心|科技|网络|工作室|学校|中学|小学|事务所|工厂|厂"
    r"|部门|局|部|委|报社|电视台|杂志社|基金|资本|证券|保险)$"
)
_DIETS = {
    "vegetarian": ("vegetarian", "素食者"),
    "vegan": ("vegan", "纯素食者"),
    "pescatarian": ("pescatarian", "鱼素者"),
    "halal": ("halal", "清真饮食者"),
    "kosher": ("kosher", "犹太洁食者"),
    "gluten_free": ("gluten-free", "无麸质饮食者"),
}
_DIET_EN_RE = re.compile(
    r"\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been)\s+(?:a\s+|an\s+|strictly\s+|fully\s+)?(?P<d>vegetarian|vegan|pescatarian"
    r"|gluten[\s-]free)\b|\bi\s+(?:only\s+)?eat\s+(?P<d2>halal|kosher)\b|\bi\s+(?:eat|follow)\s+a\s+"
    r"(?P<d3>vegetarian|vegan|pescatarian|gluten[\s-]free|halal|kosher)\s+diet\b",
    re.I,
)
_DIET_ZH_RE = re.compile(
    r"我(?:是|是个|是一个|是一名)?(?P<d>素食者|素食主义者|吃素的?|纯素食?者|吃全素|吃清真|只吃清真)"
)
# "my X is Y" keys that are not facts about the user ("my question is…").
_GENERIC_KEY_SKIP = words(
    """question questions point problem issue guess bad pleasure fault concern mistake apologies
    bet understanding thought thoughts idea request turn answer reply concern point worry doubt
    last final first next only main honest opinion take feeling sense impression hope wish
    apology suggestion recommendation feedback"""
)
_GENERIC_KEY_SKIP_ZH = words(
    """问题 意思 想法 错 看法 建议 疑问 感觉 回答 理解 需求 要求 猜测 天 天哪 妈呀 意见"""
)
# Keys whose values come in several at once; a triple would make each supersede the last.
_MULTI_VALUED_KEYS = words(
    """hobby hobbies interest interests skill skills pet pets kid kids child children friend
    friends sibling siblings language languages 爱好 兴趣 兴趣爱好 技能 宠物 孩子 朋友 兄弟姐妹"""
)
_TRANSIENT_VALUES_RE = re.compile(
    r"^(?:broken|dead|not\s+working|slow|down|gone|lost|fine|ok|okay|good|great|bad|busy|tired"
    r"|sick|better|worse|here|there|back|done|ready|late|wrong|right|correct|empty|full|off|on)$"
    r"|^(?:坏了|没电了|丢了|好了|不好|很好|挺好|还行|没了)$",
    re.I,
)

_NAME_STOP = re.compile(
    r"^(?:back|later|tomorrow|when|if|at|on|in|now|sometime|anytime|maybe|asap|again|soon)\b", re.I
)


def _name_value(raw: str) -> str | None:
    value = clean_value(raw)
    value = re.sub(r"(?:就行了?|就好了?|就可以了?|即可|好了)$", "", value).strip()
    value = re.split(r"\s+(?:and|but|from|i|i'm)\b", value, maxsplit=1, flags=re.I)[0].strip()
    if not value or len(value.split()) > 4 or len(value) > 40:
        return None
    if value.isascii() and value == value.lower():
        value = value.title()
    return value


def _fact(content: str, kind: Kind, base: str, clause: str, triple: Triple | None = None) -> Fact:
    if triple is not None and triple[1] in _SLOT_VALUE_SHAPES:
        value = _SLOT_VALUE_SHAPES[triple[1]](triple[2])
        triple = None if not value else (triple[0], triple[1], value)
    return Fact(content, kind, importance(base, clause), triple)


def _employer(value: str) -> str:
    """The organisation alone: "Stripe working on payments" is Stripe, "Google as a data
    engineer in Zurich" Google, "一家银行" a bank (银行)."""
    value = re.split(r"\s+(?:as|in|on|doing|where|with|[a-z]+ing)\b", value, maxsplit=1)[0]
    return re.sub(r"^(?:一家|这家|那家|一个|某家)(?=..)", "", value).strip()


def _work_place(value: str) -> str:
    """Home, or a named place: "home on Mondays" and "home some days" name no one place
    to work, so they fill no slot."""
    if value.lower() in ("home", "家", "家里"):
        return "home"
    named = all(word[:1].isupper() for word in value.split())
    return value if has_cjk(value) or (value and named) else ""


# One-valued slots whose value is cut to its shape before it fills the slot (an empty
# result: the fact keeps its words, without a triple that could supersede another).
_SLOT_VALUE_SHAPES = {"employer": _employer, "work_city": _work_place}


def _identity_facts_en(clause: str) -> list[Fact]:
    c = clause
    m = re.search(
        r"\b(?:my\s+(?:full\s+|first\s+|real\s+)?name\s+is|my\s+name's|i(?:'m|\s+am)\s+called|the\s+name's)\s+(?P<v>.+)",
        c,
        re.I,
    )
    if m and (name := _name_value(m.group("v"))):
        return [_fact(f"User's name is {name}", "semantic", "name", c, (USER, "name", name))]
    m = re.search(
        r"\b(?:please\s+|you\s+can\s+|just\s+|you\s+may\s+)?call\s+me\s+(?P<v>.+)", c, re.I
    )
    # "don't call me Bob" is an instruction, not a name.
    if m and re.search(r"\b(?:don't|do\s+not|never|stop)\s+(?:\w+\s+)?$", c[: m.start()], re.I):
        m = None
    if m and not _NAME_STOP.match(m.group("v")) and (name := _name_value(m.group("v"))):
        return [
            _fact(
                f"User wants to be called {name}",
                "preference",
                "preferred_name",
                c,
                (USER, "preferred_name", name),
            )
        ]
    m = re.search(
        r"\bi(?:'m|\s+am)\s+(?P<v>\d{1,3})(?:\s*(?:years?|yrs?)(?:\s+old)?|\s*y/?o)?\s*$", c, re.I
    ) or re.search(r"\bi\s+(?:just\s+)?turned\s+(?P<v>\d{1,3})\b", c, re.I)
    if m:
        age = m.group("v")
        return [_fact(f"User is {age} years old", "semantic", "age", c, (USER, "age", age))]
    m = _DIET_EN_RE.search(c)
    if m:
        raw = (m.group("d") or m.group("d2") or m.group("d3")).lower()
        key = "gluten_free" if raw.startswith("gluten") else raw
        label = _DIETS[key][0]
        return [
            _fact(
                f"User is {label}" if key not in ("halal", "kosher") else f"User eats {label}",
                "semantic",
                "diet",
                c,
                (USER, "diet", key),
            )
        ]
    m = re.search(
        r"\bi(?:'m|\s+am)\s+(?:severely\s+|very\s+|highly\s+)?allergic\s+to\s+(?P<v>.+)|\bi\s+have\s+(?:an?\s+|a\s+severe\s+)?(?P<v2>[\w\s-]{1,30}?)\s+allergy\b",
        c,
        re.I,
    )
    if m:
        thing = clean_value(m.group("v") or m.group("v2"))
        if thing:
            return [_fact(f"User is allergic to {thing}", "semantic", "allergy", c)]
    # employer, optionally with a title: "I work at Acme (as a data scientist)"
    m = (
        re.search(
            r"\bi\s+(?:currently\s+|now\s+|still\s+|also\s+)?(?:work|am\s+working|'m\s+working)\s+(?:at|for)\s+"
            r"(?P<org>.+?)(?:\s+as\s+(?:an?\s+)?(?P<title>.+))?$",
            c,
            re.I,
        )
        or re.search(
            r"(?i:\bi(?:'ve|\s+have)?\s+(?:just\s+|recently\s+)?(?:joined|started\s+(?:a\s+new\s+job\s+|working\s+)?at))\s+"
            r"(?P<org>[A-Z].*?)(?i:\s+as\s+(?:an?\s+)?(?P<title>.+))?$",
            c,
        )
        or re.search(
            r"\bi(?:'m|\s+am)\s+employed\s+(?:at|by)\s+(?P<org>.+?)(?:\s+as\s+(?:an?\s+)?(?P<title>.+))?$",
            c,
            re.I,
        )
    )
    if m:
        facts: list[Fact] = []
        org = clean_value(m.group("org"))
        org = re.sub(r"\s+(?:now|currently|these\s+days)$", "", org, flags=re.I)
        if org:
            facts.append(
                _fact(f"User works at {org}", "semantic", "employer", c, (USER, "employer", org))
            )
        title = clean_value(m.group("title") or "")
        if title:
            facts.append(
                _fact(
                    f"User works as {article(title)} {title}",
                    "semantic",
                    "job_title",
                    c,
                    (USER, "job_title", title.lower()),
                )
            )
        if facts:
            return facts
    m = re.search(
        r"\bi\s+(?:currently\s+|now\s+)?work\s+as\s+(?:an?\s+)?(?P<title>.+?)(?:\s+(?:at|for)\s+(?P<org>.+))?$",
        c,
        re.I,
    )
    if m:
        facts = []
        title = clean_value(m.group("title"))
        if title:
            facts.append(
                _fact(
                    f"User works as {article(title)} {title}",
                    "semantic",
                    "job_title",
                    c,
                    (USER, "job_title", title.lower()),
                )
            )
        org = clean_value(m.group("org") or "")
        if org:
            facts.append(
                _fact(f"User works at {org}", "semantic", "employer", c, (USER, "employer", org))
            )
        if facts:
            return facts
    m = re.search(
        r"\bi\s+(?:currently\s+|now\s+|mostly\s+)?work\s+(?:remotely\s+)?from\s+(?P<v>.+)", c, re.I
    )
    if m and (place := clean_value(m.group("v"))):
        place = "home" if place.lower() in ("home", "my home") else place
        return [
            _fact(
                f"User works from {place}", "semantic", "work_city", c, (USER, "work_city", place)
            )
        ]
    m = re.search(r"\bi\s+(?:currently\s+|now\s+)?work\s+in\s+(?P<v>.+)", c, re.I)
    if m and (place := clean_value(m.group("v"))):
        if place[:1].isupper() and not place.isupper():
            return [
                _fact(
                    f"User works in {place}", "semantic", "work_city", c, (USER, "work_city", place)
                )
            ]
        return [
            _fact(f"User works in {place}", "semantic", "field", c, (USER, "field", place.lower()))
        ]
    m = re.search(
        r"\bi\s+(?:currently\s+|now\s+|still\s+)?(?:live|reside)\s+(?:in|at)\s+(?P<v>.+)"
        r"|\bi(?:'m|\s+am)\s+(?:currently\s+|now\s+)?(?:living|based|located|staying)\s+(?:in|at|out\s+of)\s+(?P<v5>.+)"
        r"|\bi(?:'ve|\s+have)?\s+(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)\s+to\s+(?P<v2>.+)",
        c,
        re.I,
    )
    if m:
        place = clean_value(m.group("v") or m.group("v2") or m.group("v5"))
        place = re.sub(r"^the\s+(?=[a-z])", "", place)
        place = re.sub(r"\s+(?:now|last\s+\w+|recently|with\s+.*|for\s+.*)$", "", place, flags=re.I)
        if place:
            return [
                _fact(
                    f"User lives in {place}", "semantic", "lives_in", c, (USER, "lives_in", place)
                )
            ]
    m = re.search(
        r"\bi(?:'m|\s+am)\s+(?:originally\s+)?from\s+(?P<v>.+)|\bi\s+(?:originally\s+)?come\s+from\s+(?P<v2>.+)|\bi\s+was\s+born\s+in\s+(?P<v3>[A-Z].+)",
        c,
        re.I,
    )
    if m:
        place = clean_value(m.group("v") or m.group("v2") or m.group("v3"))
        if place and not re.match(r"^\d", place):
            return [
                _fact(f"User is from {place}", "semantic", "hometown", c, (USER, "hometown", place))
            ]
    m = re.search(r"\bi(?:'m|\s+am)\s+(?P<v>[a-z]+)\s*$", c, re.I)
    if m and m.group("v").lower() in DEMONYMS:
        nationality = m.group("v").capitalize()
        return [
            _fact(
                f"User is {nationality}",
                "semantic",
                "nationality",
                c,
                (USER, "nationality", nationality.lower()),
            )
        ]
    m = re.search(r"\bi(?:'m|\s+am)\s+(?:an?\s+)(?P<np>.+)", c, re.I)
    if m:
        np = clean_value(m.group("np"))
        np = re.sub(r"\s+(?:there|here|now|too|as\s+well|by\s+trade)$", "", np, flags=re.I)
        parts = re.split(r"\s+(at|for|in|from|with)\s+", np, maxsplit=1, flags=re.I)
        title = parts[0].strip()
        head = title.split()[-1].lower() if title else ""
        if head in PROFESSIONS_EN or head.rstrip("s") in PROFESSIONS_EN:
            facts = [
                _fact(
                    f"User is {article(title)} {title}",
                    "semantic",
                    "job_title",
                    c,
                    (USER, "job_title", title.lower()),
                )
            ]
            if len(parts) == 3 and parts[1].lower() in ("at", "for") and (org := parts[2].strip()):
                facts.append(
                    _fact(
                        f"User works at {org}", "semantic", "employer", c, (USER, "employer", org)
                    )
                )
            if len(parts) == 3 and parts[1].lower() == "from" and (place := parts[2].strip()):
                facts.append(
                    _fact(
                        f"User is from {place}",
                        "semantic",
                        "hometown",
                        c,
                        (USER, "hometown", place),
                    )
                )
            return facts
        if (
            title
            and len(title.split()) <= 6
            and not re.match(r"(?:bit|little|lot)\b", title, re.I)
            and not re.search(r"\b(?:fan|lover|fond)\s+of\b", np, re.I)
        ):
            return [_fact(f"User is {article(np)} {np}", "semantic", "identity", c)]
    m = re.search(
        r"(?i:\bi(?:'m|\s+am))\s+(?P<v>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})\s*[.!]?\s*$", c
    )
    if (
        m
        and m.group("v").lower() not in DEMONYMS
        and m.group("v").lower() not in ("ok", "okay", "fine", "good", "back", "here", "sorry")
    ):
        name = m.group("v")
        return [_fact(f"User's name is {name}", "semantic", "name", c, (USER, "name", name))]
    m = re.search(
        r"\bi(?:'m|\s+am)\s+(?:now\s+|currently\s+|happily\s+|recently\s+)?(?P<v>married|single|divorced"
        r"|engaged|widowed|separated|retired|unemployed|self-employed|between\s+jobs)\b",
        c,
        re.I,
    )
    if m:
        status = m.group("v").lower()
        slot = "marital_status" if status in _MARITAL else "employment_status"
        return [_fact(third_person(c), "semantic", "identity", c, (USER, slot, status))]
    m = re.search(
        r"\bi(?:'m|\s+am|'ve\s+been|\s+have\s+been)\s+(?:currently\s+|now\s+|still\s+)?(?:learning|studying"
        r"|taking\s+(?:a\s+)?(?:class|course)\s+(?:in|on))\s+(?P<v>.+)",
        c,
        re.I,
    )
    if m and clean_value(m.group("v")):
        return [_fact(third_person(c), "semantic", "identity", c)]
    m = re.search(
        r"^my\s+(?P<k>[a-z][a-z'\- ]{0,30}?)\s+(?P<cop>is|are|was|'s)\s+(?P<v>.+)", c, re.I
    )
    if m:
        return _attribute_fact_en(m.group("k"), m.group("cop"), m.group("v"), c)
    return []


# "my X is Y" names a slot only when X is an attribute ("my email", "my favorite
# color"); "my wife is allergic to…" says something about the wife, not a value.
_ATTRIBUTE_KEY_RE = re.compile(
    r"^(?:favorite|preferred)\b|\b(?:name|email|e-mail|address|number|phone|birthday|birth\s+date"
    r"|color|food|dish|drink|movie|film|book|song|band|artist|team|sport|game|city|town|hometown"
    r"|job|company|employer|school|university|college|major|title|role|position|model|car|size"
    r"|type|language|timezone|time\s+zone|nickname|username|handle|id|age|goal|plan|dream|budget"
    r"|deadline|schedule|shift|height|weight|salary|rent|occupation|profession|website|blog"
    r"|account|zip|postcode|diet|allergy|religion|pronouns|motto|password\s+hint|anniversary)$",
    re.I,
)


def _is_attribute_key(key: str) -> bool:
    return (
        _ATTRIBUTE_KEY_RE.search(key) is not None or normalize_predicate(key) in STABLE_PREDICATES
    )


def _relation_key(key: str, relations: frozenset[str]) -> bool:
    """Whether "my X" / "我的X" is a person or pet ("sister", "best friend", "大学同学"):
    "my boss is a lawyer" tells about the boss, and is left to the relation rule. An
    attribute of the user's own that is also a relation word ("my company") stays."""
    if _is_attribute_key(key):
        return False
    if key.isascii():  # "older sister", "cat luna"
        return key.split()[-1] in relations or key.split()[0] in relations
    return any(key.endswith(r) for r in relations)


# Slots whose value must have a particular shape before "my X is Y" fills them.
_NAMED_VALUE_PREDICATES = frozenset(
    {"employer", "lives_in", "hometown", "work_city", "nationality"}
)


def _slot_value_en(predicate: str, value: str) -> str | None:
    """The object "my X is Y" gives slot ``predicate``, or None when Y is no value for it
    ("my job is a nightmare", "my company is a startup", "my car is new")."""
    bare = re.sub(r"^(?:an?|the)\s+", "", value, flags=re.I)
    if predicate == "job_title":
        head = bare.split()[-1].lower() if bare else ""
        return (
            bare.lower() if head in PROFESSIONS_EN or head.rstrip("s") in PROFESSIONS_EN else None
        )
    if predicate in _NAMED_VALUE_PREDICATES:
        return value if value[:1].isupper() else None
    return None if is_fragment(bare) else bare


def _attribute_fact_en(key: str, copula: str, raw_value: str, clause: str) -> list[Fact]:
    key = re.sub(r"\s+", " ", key.strip().lower())
    if len(key.split()) > 3 or key in _GENERIC_KEY_SKIP or key.split()[0] in _GENERIC_KEY_SKIP:
        return []
    if _relation_key(key, RELATIONS_EN):
        return []
    value = clean_value(raw_value)
    if not value or _TRANSIENT_VALUES_RE.match(value) or len(value) > 80:
        return []
    key = key.replace("favourite", "favorite").replace("colour", "color")
    if re.match(r"(?:on|at|in|from|under|inside|near|with|by)\s", value, re.I):
        if not re.search(r"\b(?:birthday|anniversary|deadline|date|day)$", key):
            return []  # "my code is in the src folder": where something is, not a value
        value = re.sub(r"^(?:on|at|in)\s+", "", value, flags=re.I)
    kind: Kind = "preference" if re.search(r"\b(?:favorite|preferred)\b", key) else "semantic"
    triple: Triple | None = None
    plural = copula.lower() == "are" or key in _MULTI_VALUED_KEYS
    if copula.lower() in ("is", "'s") and not plural and _is_attribute_key(key):
        predicate = normalize_predicate(key)
        obj = _slot_value_en(predicate, value)
        triple = None if obj is None else (USER, predicate, obj)
    verb = "are" if copula.lower() == "are" else ("was" if copula.lower() == "was" else "is")
    return [_fact(f"User's {key} {verb} {value}", kind, "attribute", clause, triple)]


_MARITAL = frozenset({"married", "single", "divorced", "engaged", "widowed", "separated"})
_ZH_NAME_VALUE = r"(?P<v>[\u4e00-\u9fff·]{1,6}|[A-Za-z][A-Za-z .'\-]{0,30})"


def _place_or_org_zh(text: str) -> str:
    """'place' for a city, country or home; 'org' otherwise (a company, school…)."""
    if _ORG_SUFFIX_ZH_RE.search(text):
        return "org"
    if text in PLACES_ZH or _PLACE_SUFFIX_ZH_RE.search(text):
        return "place"
    return "org"


def _identity_facts_zh(clause: str) -> list[Fact]:
    c = clause
    m = (
        re.search(r"(?:我|本人)的?(?:名字|姓名|全名)(?:是|叫)" + _ZH_NAME_VALUE, c)
        or re.search(r"(?:^|[^叫])我叫(?:做)?(?!了|过|着|他|她|你|它)" + _ZH_NAME_VALUE, c)
        or re.search(r"^本人" + _ZH_NAME_VALUE + "$", c)
    )
    if m:
        name = clean_value(m.group("v"))
        if name:
            return [_fact(f"用户的名字是{name}", "semantic", "name", c, (USER, "name", name))]
    m = re.search(
        r"(?:你|您)?(?:可以|就|以后|请)?(?:叫|称呼)我(?!去|来|起|做|帮|一声|过去|回|吃|上|下|的)"
        + _ZH_NAME_VALUE,
        c,
    )
    if m and re.search(r"(?:别|不要|不用|不许|别再|不要再)$", c[: m.start()]):
        m = None  # "别叫我先生" is an instruction, not a name
    if m and (preferred := _name_value(m.group("v"))):
        return [
            _fact(
                f"用户希望被称为{preferred}",
                "preference",
                "preferred_name",
                c,
                (USER, "preferred_name", preferred),
            )
        ]
    m = re.search(r"我姓(?P<v>[\u4e00-\u9fff]{1,2})(?:$|[，,。]|名)", c)
    if m:
        return [
            _fact(
                f"用户姓{m.group('v')}", "semantic", "attribute", c, (USER, "surname", m.group("v"))
            )
        ]
    m = re.search(
        r"我(?:今年|现在|已经|快)?(?P<v>\d{1,3}|[一二三四五六七八九十两百]+)(?:周)?岁(?:了|啦|半)?(?=$|[，,。！!])",
        c,
    )
    if m and (age := cn_number(m.group("v"))) is not None:
        return [_fact(f"用户{age}岁", "semantic", "age", c, (USER, "age", str(age)))]
    m = _DIET_ZH_RE.search(c)
    if m:
        key = (
            "halal"
            if "清真" in m.group("d")
            else ("vegan" if "纯素" in m.group("d") or "全素" in m.group("d") else "vegetarian")
        )
        return [_fact(f"用户是{_DIETS[key][1]}", "semantic", "diet", c, (USER, "diet", key))]
    m = re.search(r"(?:^|我)对(?P<v>[^，,。]{1,20}?)(?:严重|有点|很|非常)?过敏", c)
    if m:
        return [_fact(f"用户对{m.group('v')}过敏", "semantic", "allergy", c)]
    # at an organisation, with an optional role: 我在腾讯工作 / 我在北京的一家公司当工程师
    m = re.search(
        r"我(?:现在|目前|之前|一直|已经|刚|还)?(?:在|于)(?P<org>[^，,。]{1,30}?)(?:工作|上班|任职|就职|供职|打工|实习|做事)",
        c,
    )
    if m:
        org = clean_value(m.group("org"))
        if org in ("家", "家里"):
            return [_fact("用户在家工作", "semantic", "work_city", c, (USER, "work_city", "home"))]
        if _place_or_org_zh(org) == "place":
            return [_fact(f"用户在{org}工作", "semantic", "work_city", c, (USER, "work_city", org))]
        return [_fact(f"用户在{org}工作", "semantic", "employer", c, (USER, "employer", org))]
    m = re.search(
        r"我(?:现在|目前)?(?:在|于)(?P<org>[^，,。]{1,30}?)(?:当|做|担任|任)(?P<title>[^，,。]{1,15})",
        c,
    )
    if m:
        org, title = clean_value(m.group("org")), clean_value(m.group("title"))
        facts = []
        if org:
            facts.append(
                _fact(f"用户在{org}工作", "semantic", "employer", c, (USER, "employer", org))
            )
        if title:
            facts.append(
                _fact(
                    f"用户的职业是{title}", "semantic", "job_title", c, (USER, "job_title", title)
                )
            )
        return facts
    m = re.search(
        r"我(?:已经|刚|最近|今年)?(?:加入了?|入职了?|跳槽到了?|跳槽去了?)(?P<org>[^，,。]{1,30})", c
    )
    if m and (org := clean_value(m.group("org"))):
        return [_fact(f"用户在{org}工作", "semantic", "employer", c, (USER, "employer", org))]
    m = re.search(
        r"我(?:现在|目前|一直|还|也)?(?:住在|居住在|生活在|定居在|住|定居于?)(?P<v>[^，,。]{1,20})"
        r"|我(?:已经|刚|最近|今年)?(?:从[^，,。]{1,12}?)?(?:搬到了?|搬去了?|搬家到了?)(?P<v2>[^，,。]{1,20})"
        r"|我家(?:住)?在(?P<v3>[^，,。]{1,20})"
        r"|我(?:现在|目前)?在(?P<v4>[^，,。]{1,20}?)(?:生活|定居|居住)",
        c,
    )
    if m:
        place = clean_value(m.group("v") or m.group("v2") or m.group("v3") or m.group("v4"))
        place = re.sub(r"(?:了|啦|住|这边|那边)$", "", place)
        if place:
            return [_fact(f"用户住在{place}", "semantic", "lives_in", c, (USER, "lives_in", place))]
    m = re.search(
        r"我(?:来自|是从)(?P<v>[^，,。]{1,20}?)(?:来的)?$|我的?(?:老家|家乡)(?:是|在)(?P<v2>[^，,。]{1,20})",
        c,
    )
    if m and (place := re.sub(r"的$", "", clean_value(m.group("v") or m.group("v2")))):
        return [_fact(f"用户来自{place}", "semantic", "hometown", c, (USER, "hometown", place))]
    m = re.search(r"我是(?P<v>[\u4e00-\u9fff]{2,6}?)人$", c)
    if m and _place_or_org_zh(m.group("v")) == "place":
        place = m.group("v")
        return [_fact(f"用户来自{place}", "semantic", "hometown", c, (USER, "hometown", place))]
    m = re.search(r"我(?:是)?(?:做|搞|从事)(?P<v>[^，,。]{1,12}?)(?:的|行业|工作|方面的?工作)$", c)
    if m and (field_ := clean_value(m.group("v"))):
        return [_fact(f"用户从事{field_}", "semantic", "field", c, (USER, "field", field_))]
    m = re.search(r"我是(?P<org>[^，,。]{1,20}?)的(?P<title>[^，,。]{1,12})$", c)
    if m and PROFESSIONS_ZH_RE.search(m.group("title")):
        org, title = m.group("org"), clean_value(m.group("title"))
        return [
            _fact(f"用户在{org}工作", "semantic", "employer", c, (USER, "employer", org)),
            _fact(f"用户的职业是{title}", "semantic", "job_title", c, (USER, "job_title", title)),
        ]
    m = re.search(r"我(?:是|当)(?:一名|一个|一位|个|名|位)?(?P<v>[^，,。]{1,15}?)$", c)
    if m:
        value = clean_value(m.group("v"))
        if not value or re.match(
            r"^(?:说|想|来|在|不是|觉得|要|问|因为|为了|不|真|挺|很|有点)", value
        ):
            return []
        if PROFESSIONS_ZH_RE.search(value) and value not in ("会员", "成员"):
            return [
                _fact(
                    f"用户的职业是{value}", "semantic", "job_title", c, (USER, "job_title", value)
                )
            ]
        if re.fullmatch(r"[\u4e00-\u9fff]{2,3}", value) and value[0] in SURNAMES_ZH:
            return [_fact(f"用户的名字是{value}", "semantic", "name", c, (USER, "name", value))]
        if len(value) >= 2:
            return [_fact(f"用户是{value}", "semantic", "identity", c)]
    m = re.search(r"我(?:正在|在|最近在|目前在|一直在)(?:学|学习|自学|考)(?P<v>[^，,。]{1,20})", c)
    if m:
        return [_fact(third_person(c), "semantic", "identity", c)]
    m = re.search(r"我(?:已经|刚)?(?P<v>结婚了|已婚|单身|离婚了|离异|订婚了|退休了|失业了)", c)
    if m:
        v = m.group("v").rstrip("了")
        status = {
            "结婚": "married",
            "已婚": "married",
            "单身": "single",
            "离婚": "divorced",
            "离异": "divorced",
            "订婚": "engaged",
            "退休": "retired",
            "失业": "unemployed",
        }[v]
        slot = "marital_status" if status in _MARITAL else "employment_status"
        return [_fact(third_person(c), "semantic", "identity", c, (USER, slot, status))]
    m = (
        re.search(
            r"我的(?P<k>[\u4e00-\u9fffA-Za-z]{1,8}?)(?P<cop>是|叫|为)(?P<v>[^，,。]{1,60})", c
        )
        or re.search(r"我(?P<k>最喜欢的[\u4e00-\u9fff]{1,6}?)(?P<cop>是)(?P<v>[^，,。]{1,30})", c)
        # "我生日是…" drops the 的 before the few nouns that are always the user's own
        or re.search(rf"我(?P<k>{_OWN_ATTRIBUTES_ZH})(?P<cop>是|为)(?P<v>[^，,。]{{1,60}})", c)
    )
    if m:
        return _attribute_fact_zh(m.group("k"), m.group("cop"), m.group("v"), c)
    return []


# "是个律师", "是一辆白色的丰田": the measure word is not part of the value.
_ZH_MEASURE_RE = re.compile(
    r"^(?:(?:[一两二三四五六七八九十几]|\d+)(?:个|名|位|只|辆|台|部|本|家|条|件|套|座|所)|个)(?=..)"
)


_OWN_ATTRIBUTES_ZH = (
    r"生日|邮箱|电话号码|电话|手机号码|手机号|手机|微信号|微信|老家|家乡"
    r"|职业|星座|血型|身高|体重|时区|国籍"
)


def _attribute_fact_zh(key: str, copula: str, raw_value: str, clause: str) -> list[Fact]:
    if key in _GENERIC_KEY_SKIP_ZH:
        return []
    if copula != "叫" and _relation_key(key, RELATIONS_ZH):
        return []  # "我的领导是上海人" is about the boss: the relation rule's
    value = clean_value(raw_value)
    if not value or _TRANSIENT_VALUES_RE.match(value):
        return []
    kind: Kind = "preference" if "喜欢" in key or "偏好" in key else "semantic"
    predicate = f"{key}的名字" if copula == "叫" and key not in ("名字", "姓名") else key
    obj = _ZH_MEASURE_RE.sub("", value)
    stable = normalize_predicate(predicate)
    if stable == "job_title" and not PROFESSIONS_ZH_RE.search(obj):
        obj = ""  # "我的工作是写代码" says what, not which job title
    triple = (
        None if key in _MULTI_VALUED_KEYS or not obj or is_fragment(obj) else (USER, stable, obj)
    )
    owner = "用户" if key.startswith("最") else "用户的"  # "用户最喜欢的电影", not "用户的最…"
    return [_fact(f"{owner}{key}{copula}{value}", kind, "attribute", clause, triple)]


def identity_facts(clause: str) -> list[Fact]:
    return _identity_facts_zh(clause) if has_cjk(clause) else _identity_facts_en(clause)
