"""Rule-based fact extraction for Chinese and English, no model needed.

How a conversation is read:

1. Only messages from the extracted roles (the user, by default) yield facts; the
   others are context (an assistant asking "which language?" makes the reply
   "German" about the reply language). A message that looks like prompt injection is
   rejected whole (:mod:`.safety`).
2. A message is split into sentences (``。！？.!?;；`` and newlines), a sentence into
   clauses (commas, and "and/but" or "但/不过" before a new subject). A clause that
   drops its subject ("…，在腾讯工作", "… and work at SAP") inherits the sentence's
   first person. A clause holding only a time ("每天早上9点，…", "Next Friday, …") or
   a condition is carried into the next one (:mod:`.text`).
3. Small talk and questions are skipped; a question may still ask for a setting
   ("can you switch to dark mode?").
4. Each clause goes through the rule families in order; the first family that
   recognises the clause gives its fact(s):

   - settings: theme, reply language, units, tone, answer length… (:mod:`.setting_rules`)
   - length limits: "报告不要超过500字", "keep answers under 200 words"
   - identity: name, age, home, employer, job, diet, allergies… (:mod:`.identity_rules`)
   - decisions: "我们决定用PostgreSQL做数据库", "we went with Vercel for hosting"
   - likes and dislikes: "我讨厌香菜", "I'm a big fan of jazz"
   - routines: "每天早上9点提醒我喝水", "I go to the gym every Monday"
   - dated commitments and events: "next Friday I have a dentist appointment"
   - possessions, people, tools: "I have two kids", "我老婆是老师", "I use vim"
   - habits: "I always…", "我习惯…"
   - standing instructions: "never use jargon", "以后不要再推荐川菜了"

   A sentence that asks outright to be remembered ("remember that…", "记住…") is
   kept even when no family recognises it.
5. A clause no rule recognises is a *leftover*: the hybrid extractor asks the LLM
   only when there are leftovers.

Kinds: likes, dislikes, habits and settings are ``preference``; identity and lasting
facts ``semantic``; events, appointments and dated decisions ``episodic``; how to
answer, limits, routines and standing instructions ``procedural``. Triples follow
the slot conventions of :mod:`.facts`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from pgmem.extract.answer_rules import answer_fact, is_short_answer, last_question
from pgmem.extract.facts import USER, Fact, Kind, Message, Rejected, Triple, dedupe, has_cjk
from pgmem.extract.identity_rules import PROFESSIONS_ZH_RE, identity_facts
from pgmem.extract.lexicon import (
    DATE_RE,
    FREQUENCY_RE,
    PAST_PARTICIPLES,
    PERSISTENT_RE,
    PROFESSIONS_EN,
    RELATIONS_EN,
    RELATIONS_ZH,
    SURNAMES_ZH,
    cn_number,
    importance,
    one_off,
    words,
)
from pgmem.extract.safety import injection_reason
from pgmem.extract.setting_rules import SettingContext, setting_facts, topics_in
from pgmem.extract.text import (
    EN_ADVERBS,
    REQUEST_RE,
    clean_value,
    first_person_verb,
    instruction_statement,
    is_fragment,
    is_question,
    is_small_talk,
    split_marked_clauses,
    split_sentences,
    tense,
    third_person,
)

__all__ = [
    "RuleOutcome",
    "extract_with_rules",
    "is_small_talk",
    "split_sentences",
]

# ------------------------------------------------------------------ length limits

_LENGTH_UNITS = (
    r"words?|characters?|chars?|letters?|pages?|lines?|sentences?|paragraphs?|bullet\s+points?"
    r"|bullets?|items?|minutes?|tokens?|个字|个词|字|词|页|行|段|句|条|分钟|点"
)
_ZH_MAX_RE = re.compile(
    r"^(?P<topic>[^，,。]{0,12}?)\s*(?:都|请|最好)?\s*(?:不要|不能|不得|别|不可以|请勿|切勿|不许|不超|禁止)"
    r"(?:超过|多于|超出|大于|高于)\s*(?P<n>\d+|[一二三四五六七八九十两百千万]+)\s*(?P<unit>"
    + _LENGTH_UNITS
    + r")"
    r"|^(?P<topic2>[^，,。]{0,12}?)\s*(?:控制在|限制在|保持在|限定在|压缩到|缩短到|不超过|最多|至多)\s*"
    r"(?P<n2>\d+|[一二三四五六七八九十两百千万]+)\s*(?P<unit2>" + _LENGTH_UNITS + r")",
    re.I,
)
_ZH_MIN_RE = re.compile(
    r"^(?P<topic>[^，,。]{0,12}?)\s*(?:至少|不少于|不低于|最少)\s*(?:要)?\s*"
    r"(?P<n>\d+|[一二三四五六七八九十两百千万]+)\s*(?P<unit>" + _LENGTH_UNITS + r")"
)
# What an English length limit can be about; without one it must open the clause
# ("No more than 3 bullet points"), so "I ran under 5 minutes" is no constraint.
_EN_OUTPUT = (
    r"(?:(?:the|your|all|each|every|my|our|any)\s+)?(?:answers?|responses?|replies|reply|summar(?:y|ies)"
    r"|reports?|emails?|messages?|explanations?|descriptions?|posts?|articles?|essays?|paragraphs?|code"
    r"|output|it|them|everything|titles?|headlines?|tweets?|bios?|abstracts?|notes?|comments?"
    r"|commit\s+messages?|slides?|letters?|captions?|translations?|stories|story|scripts?|speech(?:es)?)"
)
_EN_MAX_RE = re.compile(
    rf"(?:^|\b)(?:(?:please\s+)?(?:keep|limit|cap)\s+(?P<topic>{_EN_OUTPUT})\s+(?:to\s+)?(?:under|below|within"
    r"|at\s+most|less\s+than|no\s+more\s+than|no\s+longer\s+than|fewer\s+than|shorter\s+than|to)"
    rf"|(?P<topic2>{_EN_OUTPUT})\s+(?:should|must|shall|can|may)\s*(?:not|never|n't)\s+"
    r"(?:exceed|be\s+(?:longer|more)\s+than|go\s+over|have\s+more\s+than)"
    rf"|(?P<topic4>{_EN_OUTPUT})\s+(?:shouldn't|mustn't|can't|cannot)\s+(?:exceed|be\s+longer\s+than|be\s+more\s+than)"
    rf"|(?P<topic3>{_EN_OUTPUT})\s+(?:of\s+|in\s+|with\s+)?(?:no\s+more\s+than|at\s+most|max(?:imum)?|under|up\s+to"
    r"|less\s+than|fewer\s+than)"
    r"|^(?:please\s+)?(?:use\s+|write\s+|give\s+me\s+)?(?:no\s+more\s+than|at\s+most|max(?:imum)?|up\s+to|under|fewer\s+than))"
    r"\s+(?P<n>\d+)\s*(?P<unit>" + _LENGTH_UNITS + r")\b",
    re.I,
)
_EN_MIN_RE = re.compile(
    rf"(?:(?P<topic>{_EN_OUTPUT})\s+(?:should|must)\s+(?:be\s+|have\s+)?|^(?:please\s+)?(?:use\s+|write\s+)?)"
    r"(?:at\s+least|no\s+(?:less|fewer)\s+than|minimum(?:\s+of)?)\s+(?P<n>\d+)\s*(?P<unit>"
    + _LENGTH_UNITS
    + r")\b",
    re.I,
)


def _length_topic(raw: str | None, cjk: bool) -> str:
    topic = (raw or "").strip()
    topic = re.sub(r"^(?:please|the|your|all|each|every|my|it|them|and)\s+", "", topic, flags=re.I)
    topic = re.sub(r"^(?:请|你的|你|我的|所有的?|每个|每次的?|以后的?|以后|都)+", "", topic)
    topic = re.sub(r"(?:都|的|要|也|请|最好)$", "", topic).strip()
    topic = re.sub(r"\s+(?:to|under|at)$", "", topic, flags=re.I).strip()
    if not topic or topic.lower() in ("it", "them", "that", "this", "keep", "be"):
        return "回答" if cjk else "answers"
    return topic if cjk else topic.lower()


def _length_facts(clause: str) -> list[Fact]:
    cjk = has_cjk(clause)
    for pattern, predicate in (
        (_ZH_MAX_RE, "max_length"),
        (_ZH_MIN_RE, "min_length"),
        (_EN_MAX_RE, "max_length"),
        (_EN_MIN_RE, "min_length"),
    ):
        m = pattern.search(clause)
        if not m:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v is not None}
        number = cn_number(groups.get("n") or groups.get("n2") or "")
        unit = re.sub(r"\s+", " ", groups.get("unit") or groups.get("unit2") or "")
        if number is None or not unit:
            continue
        raw_topic = next(
            (groups[k] for k in ("topic", "topic2", "topic3", "topic4") if k in groups), ""
        )
        topic = _length_topic(raw_topic, cjk)
        if not cjk and number != 1 and not unit.endswith("s"):
            unit += "s"
        obj = f"{number}{unit}" if cjk else f"{number} {unit}"
        if cjk:
            content = f"用户要求：{topic}{'不超过' if predicate == 'max_length' else '至少'}{obj}"
        else:
            bound = "at most" if predicate == "max_length" else "at least"
            content = f"User wants {topic} to be {bound} {obj}"
        return [
            Fact(content, "procedural", importance("constraint", clause), (topic, predicate, obj))
        ]
    return []


# ------------------------------------------------------------------ decisions


_ZH_DECISION_RE = re.compile(
    r"^(?:我|我们|咱们|大家)?(?:已经|最终|最后|终于|刚刚?|都)?"
    r"(?P<verb>决定了?|选择了?|选了|选定了?|确定了|确认了|敲定了?|定了|拍板了?|采用了?|改用了?)(?P<v>.+)$"
    r"|^(?:那|那么)?(?:就|还是|统一)(?P<verb2>用|选|定)(?P<v2>.+?)吧?$"
    # "数据库就用MySQL吧": a purpose, then the choice
    r"|^(?P<topic>[\u4e00-\u9fffA-Za-z0-9]{1,10}?)(?:就|还是|统一|改)(?:用|选|定)(?P<v3>.+?)吧?$"
)
# "用X做Y" / "X作为Y": X chosen for purpose Y.
_ZH_CHOICE_FOR_RE = re.compile(
    r"^(?:用|使用|采用)?(?P<x>[^，,。]+?)(?:来|作为|当作?|做)(?P<y>[^，,。]+)$"
)
_EN_DECISION_RE = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have)?\s+(?:finally\s+|just\s+|already\s+|now\s+|eventually\s+)?"
    r"(?:decided|chose|chosen|picked|selected|settled\s+on|opted\s+for|went\s+with|agreed"
    r"|confirmed|committed\s+to)\b(?:\s+(?:to|on|that|upon))?\s*(?P<v>.*)$"
    r"|\b(?:i|we)(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to|'m\s+going\s+to"
    r"|\s+am\s+going\s+to)\s+(?:go\s+with|stick\s+with)\s+(?P<v2>.+)$"
    r"|^let's\s+(?P<lets>go\s+with|use|stick\s+with|pick|choose)\s+(?P<v3>.+)$"
    r"|\b(?:the\s+|our\s+|my\s+)?(?:final\s+)?decision\s+is\s+(?P<v4>.+)$",
    re.I,
)
# "use X for Y" / "go with X as Y".
_EN_CHOICE_FOR_RE = re.compile(
    r"^(?:to\s+)?(?:use|using|adopt|go\s+with|switch\s+to)\s+(?P<x>.+?)\s+(?:for|as)\s+"
    r"(?:the\s+|our\s+|my\s+)?(?P<y>.+)$",
    re.I,
)


def _choice_triple(purpose: str, choice: str) -> Triple | None:
    # Not clean_value: "React and TypeScript" is one choice, not "React" and chatter. A
    # time ("for backend work last year") says when, not what for.
    purpose = DATE_RE.sub("", purpose)
    purpose, choice = (re.sub(r"[\s.!?…。！？吧,，]+$", "", t).strip() for t in (purpose, choice))
    if not purpose or not choice:
        return None
    return (USER, f"choice_for:{purpose.lower()}", choice)


def _decision_facts(clause: str) -> list[Fact]:
    """A decision: "我们决定用PostgreSQL做数据库", "We went with Vercel for hosting"."""
    triple: Triple | None = None
    if has_cjk(clause):
        m = _ZH_DECISION_RE.match(clause)
        if not m:
            return []
        value = (m.group("v") or m.group("v2") or m.group("v3") or "").strip()
        if not value or re.match(r"^(?:一下|下|吗|了吗|好了吗|不了|不下来)", value):
            return []
        topic = m.group("topic")
        if topic and not re.match(r"^(?:我|你|他|她|我们|每|今|明|昨)", topic):
            triple = _choice_triple(topic, value)
        elif cm := _ZH_CHOICE_FOR_RE.match(value):
            triple = _choice_triple(cm.group("y"), cm.group("x"))
        content = third_person(clause)
    else:
        m = _EN_DECISION_RE.search(clause)
        if not m:
            return []
        value = (m.group("v") or m.group("v2") or m.group("v3") or m.group("v4") or "").strip()
        if len(value) < 2:
            return []
        if m.group("lets"):
            value = f"{m.group('lets')} {value}"
        if cm := _EN_CHOICE_FOR_RE.match(value):
            triple = _choice_triple(cm.group("y"), cm.group("x"))
        content = third_person(clause)
        if m.group("lets"):
            content = f"User decided to {value}"
    kind: Kind = "episodic" if DATE_RE.search(clause) else "semantic"
    return [Fact(content, kind, importance("decision", clause), triple)]


# ------------------------------------------------------------------ likes and dislikes

_EN_LIKE_VERBS = (
    r"(?P<pos>like|love|enjoy|adore|prefer|dig|fancy|appreciate)"
    r"|(?P<neg>hate|dislike|detest|loathe|despise|can't\s+stand|cannot\s+stand|can\s+not\s+stand"
    r"|don't\s+like|do\s+not\s+like|dont\s+like|don't\s+love|don't\s+enjoy|do\s+not\s+enjoy"
    r"|don't\s+care\s+for|can't\s+bear|am\s+not\s+a\s+fan\s+of|hate\s+it\s+when)"
)
_EN_LIKE_RE = re.compile(
    rf"\b(?:i|we)\s+(?:(?:{EN_ADVERBS}|kind\s+of|kinda|sort\s+of|do|also|really)\s+)*(?:{_EN_LIKE_VERBS})\s+(?P<obj>.+)",
    re.I,
)
_EN_FAN_RE = re.compile(
    r"\bi(?:'m|\s+am)\s+(?P<not>not\s+)?(?:really\s+|so\s+|very\s+|totally\s+)?(?:a\s+(?:big\s+|huge\s+)?fan\s+of"
    r"|fond\s+of|into|obsessed\s+with|crazy\s+about|keen\s+on|passionate\s+about|interested\s+in)\s+(?P<obj>.+)",
    re.I,
)
_EN_FOOD_RE = re.compile(
    r"\bi\s+(?:(?:don't|do\s+not|never|can't|cannot|can\s+not|won't)\s+)(?P<verb>eat|drink)\s+(?P<obj>.+)",
    re.I,
)
_ZH_LIKE_RE = re.compile(
    r"(?:^|我们|我)(?:真的|很|非常|特别|超级?|最|比较|挺|也|还|一直|都|向来|从小就?|就|更|蛮|相当|十分|其实|确实"
    r"|本来就?|平时|一般|通常|经常|最近|现在|一向|越来越)*"
    r"(?P<verb>不太喜欢|不喜欢|不爱|讨厌|厌恶|反感|受不了|忍不了|烦|不感冒|喜欢|喜爱|爱|热爱|偏好|偏爱|钟爱|迷上了?|爱上了?)"
    r"(?P<obj>.+)$"
)
_ZH_INTEREST_RE = re.compile(
    r"我(?:对|对于)(?P<obj>[^，,。]{1,20}?)(?:很|非常|特别|比较|挺|有点|一点)?(?P<verb>不感兴趣|没兴趣|没有兴趣|感兴趣|有兴趣|着迷)"
)
_ZH_FOOD_RE = re.compile(
    r"^(?:我|我们)(?:从来|从|基本|一般)?(?P<verb>不吃|不喝|不能吃|不能喝|吃不了|喝不了)(?P<obj>[^，,。]{1,20})"
)
PRONOUN_OBJECT_RE = re.compile(
    r"^(?:you|it|that|this|these|those|them|him|her|to\s+(?:know|ask|see|say|thank|help|have|get|be))\b"
    r"|^(?:你|您|它|这个|那个|这样|那样|他|她|的|了|吗|呢|一下)",
    re.I,
)


def _item_key(obj: str) -> str:
    """The thing liked, stripped of articles and light verbs, so that "I love drinking
    coffee" and "I hate coffee" share one ``opinion_of:`` slot."""
    item = obj.strip().lower()
    item = re.sub(
        r"^(?:to\s+)?(?:eat(?:ing)?|drink(?:ing)?|watch(?:ing)?|play(?:ing)?|listen(?:ing)?\s+to"
        r"|read(?:ing)?|hav(?:e|ing)|us(?:e|ing)|go(?:ing)?\s+to)\s+",
        "",
        item,
    )
    item = re.sub(r"^(?:to\s+)", "", item)
    item = re.sub(r"^(?:the|a|an|some|my|any|all|most)\s+", "", item)
    item = re.sub(r"^(?:吃|喝|看|听|玩|打|用|去|读|逛|做)(?=..)", "", item)
    # When or how often is part of the statement, not of the thing liked.
    item = re.sub(
        r"\s+(?:in\s+the\s+(?:morning|evening|afternoon)|at\s+(?:night|work|home)|on\s+weekends"
        r"|every\s+\w+|each\s+\w+|(?:when|while|before|after|whenever)\s.*)$",
        "",
        item,
    )
    return re.sub(r"\s+", " ", item).strip()


def _opinion_fact(clause: str, obj: str, positive: bool, *, base: str = "opinion") -> list[Fact]:
    obj = clean_value(obj)
    obj = re.sub(
        r"\s+(?:a\s+lot|very\s+much|so\s+much|too|as\s+well|the\s+most|more\s+than\s+anything|in\s+general"
        r"|now|lately|recently|these\s+days|nowadays)$",
        "",
        obj,
        flags=re.I,
    )
    if not obj or PRONOUN_OBJECT_RE.match(obj):
        return []
    prefer_over = re.split(
        r"\s+(?:over|rather\s+than|instead\s+of|more\s+than|to)\s+", obj, maxsplit=1, flags=re.I
    )
    item = _item_key(prefer_over[0] if re.search(r"\bprefer\b", clause, re.I) else obj)
    if not item:
        return []
    triple: Triple | None = None
    # A long object is a whole situation ("it when people are late"), not one thing.
    if len(item) <= 40 and len(item.split()) <= 5:
        triple = (USER, f"opinion_of:{item}", "likes" if positive else "dislikes")
    return [Fact(third_person(clause), "preference", importance(base, clause), triple)]


def _opinion_facts(clause: str) -> list[Fact]:
    if has_cjk(clause):
        m = _ZH_INTEREST_RE.search(clause)
        if m:
            return _opinion_fact(
                clause, m.group("obj"), m.group("verb") in ("感兴趣", "有兴趣", "着迷")
            )
        m = _ZH_FOOD_RE.search(clause)
        if m:
            return _opinion_fact(clause, m.group("obj"), False)
        m = _ZH_LIKE_RE.search(clause)
        if m:
            obj = m.group("obj")
            if obj.startswith("的"):  # "我最喜欢的…" is an attribute, handled elsewhere
                return []
            verb = m.group("verb")
            positive = not (
                verb.startswith(("不", "讨厌", "厌恶", "反感", "受不了", "忍不了", "烦"))
            )
            return _opinion_fact(clause, obj, positive)
        return []
    if re.match(r"^(?:if|whether|unless|what)\b", clause, re.I):
        return []
    m = _EN_FAN_RE.search(clause)
    if m:
        return _opinion_fact(clause, m.group("obj"), m.group("not") is None)
    m = _EN_FOOD_RE.search(clause)
    if m:
        return _opinion_fact(clause, m.group("obj"), False)
    m = _EN_LIKE_RE.search(clause)
    if m:
        obj = re.sub(r"^it\s+when\s+", "", m.group("obj"), flags=re.I)
        return _opinion_fact(clause, obj, m.group("pos") is not None)
    return []


# ------------------------------------------------------------------ routines, commitments, habits

_USER_SUBJECT_RE = re.compile(r"\b(?:i|i'm|i've|i'll|we|we're|we'll|my|our|me|us)\b|我|咱们", re.I)
_OTHER_SUBJECT_RE = re.compile(
    r"^(?:he|she|they|it|you|his|her|their|他|她|它|他们|她们|你|您)\b", re.I
)
_REMIND_RE = re.compile(r"\bremind\s+(?:me|us)\b|提醒我|叫我|喊我", re.I)
_COMMITMENT_RE = re.compile(
    r"\b(?:i|we)(?:'ll|\s+will|\s+have\s+to|\s+need\s+to|\s+must|\s+should|'m\s+going\s+to|\s+am\s+going\s+to"
    r"|\s+are\s+going\s+to|'re\s+going\s+to|\s+plan\s+to|\s+promised\s+to|\s+have\s+(?:an?\s+|my\s+|our\s+)?"
    r"|'ve\s+got\s+(?:an?\s+)?|\s+got\s+(?:an?\s+)?|(?:'m|\s+am|\s+are|'re)\s+\w+ing)\b"
    r"|\b(?:meeting|appointment|interview|exam|test|deadline|flight|trip|call|presentation|demo|launch"
    r"|release|dinner|lunch|party|wedding|birthday|surgery|review|due|standup|stand-up|class|lecture)\b"
    r"|要|得|需要|必须|会|打算|计划|准备|约了|约好|有(?:个|一个)?(?:会|约|面试|考试|课|航班|饭局|聚会|活动|安排)|交|截止|到期|出差|去|开会|面试|考试|汇报|上线|发布|航班"
    r"|飞|见|参加|回|开始|结束|搬",
    re.I,
)
_PAST_EVENT_RE = re.compile(
    r"\b(?:i|we)\s+(?:just\s+)?(?:went|visited|met|bought|started|finished|moved|had|got|saw|attended"
    r"|flew|drove|traveled|travelled|graduated|married|quit|left|joined|won|lost|completed|launched|shipped)\b"
    r"|我(?:们)?\S{0,4}(?:去了|见了|买了|参加了|完成了|开始了|搬了|毕业了|结婚了|辞职了|回了|看了|做了)",
    re.I,
)


def _schedule_facts(clause: str) -> list[Fact]:
    m = FREQUENCY_RE.search(clause)
    if not m:
        return []
    rest = DATE_RE.sub("", clause[: m.start()] + " " + clause[m.end() :])
    rest = re.sub(
        r"\b(?:at|on|in|the|morning|evening|night|afternoon)\b|早上|上午|中午|下午|晚上|凌晨|傍晚|都|的",
        "",
        rest,
        flags=re.I,
    )
    if len(re.sub(r"[\W_\d]", "", rest)) < 2 or _OTHER_SUBJECT_RE.match(clause):
        return []
    if not (_USER_SUBJECT_RE.search(clause) or _REMIND_RE.search(clause) or m.start() <= 2):
        return []
    base = "commitment" if _REMIND_RE.search(clause) else "routine"
    return [Fact(third_person(clause), "procedural", importance(base, clause), None)]


# "I need a recipe for dinner tonight" asks for something; it is no appointment.
_REQUEST_FOR_RE = re.compile(
    r"\b(?:i|we)\s+(?:need|want|would\s+like|'d\s+like|am\s+looking\s+for|'m\s+looking\s+for"
    r"|are\s+looking\s+for)\s+(?!to\b)|\b(?:can|could|would)\s+you\b|\bhelp\s+me\b"
    r"|^(?:我|我们)?(?:想要|需要)(?!去|在|参加)|帮我|给我|能不能|可以帮",
    re.I,
)


# An event as the clause's subject: "Dinner with Priya is on Thursday", "The exam is…".
_EVENT_SUBJECT_RE = re.compile(
    r"^(?:(?:the|my|our|a|an)\s+)?(?:[\w-]+\s+)?(?:meeting|appointment|interview|exam|test|deadline"
    r"|flight|trip|call|presentation|demo|launch|release|dinner|lunch|breakfast|brunch|party|wedding"
    r"|birthday|surgery|review|standup|stand-up|class|lecture|concert|game|match|visit|check-?up"
    r"|session|conference|workshop|ceremony|reunion|shift|recital|due)\b",
    re.I,
)


def _event_fact(clause: str, content: str | None = None, *, said_past: bool = False) -> Fact:
    """A dated or past event: an appointment unless the clause tells it as past."""
    when = tense(clause)
    past = when == "past" or (said_past and when is None)
    return Fact(
        content or third_person(clause),
        "episodic",
        importance("event" if past else "commitment", clause),
        None,
        past=past,
    )


def _dated_facts(clause: str) -> list[Fact]:
    if not DATE_RE.search(clause) or _OTHER_SUBJECT_RE.match(clause):
        return []
    if _REQUEST_FOR_RE.search(clause) and not _REMIND_RE.search(clause):
        return []
    if _REMIND_RE.search(clause) or (
        _COMMITMENT_RE.search(clause)
        and (
            _USER_SUBJECT_RE.search(clause)
            or has_cjk(clause)
            or _EVENT_SUBJECT_RE.match(clause)
            or re.search(
                r"\b(?:meeting|appointment|interview|exam|deadline|flight|due|launch|release)\b",
                clause,
                re.I,
            )
        )
    ):
        return [_event_fact(clause)]
    if _PAST_EVENT_RE.search(clause):
        return [_event_fact(clause, said_past=True)]
    return []


_POSSESSION_SKIP_RE = re.compile(
    r"\b(?:question|questions|idea|ideas|problem|problems|issue|issues|doubt|suggestion|request"
    r"|feeling|bit|lot|minute|moment|sec|second|chance|look|try|go|point|favou?r|quick|few\s+things"
    r"|thought|concern)\b|问题|想法|建议|疑问|点|事|请求|感觉|主意|小问题",
    re.I,
)
_EN_POSSESSION_RE = re.compile(
    r"^i\s+(?:have|'ve\s+got|have\s+got|own)\s+(?P<obj>(?:a|an|one|two|three|four|five|six|\d+|several"
    r"|many|some)\s+.+)",
    re.I,
)
_ZH_POSSESSION_RE = re.compile(
    r"^(?:我|我们|我家)有(?P<obj>(?:一|两|二|三|四|五|六|七|八|九|十|几|\d+)(?:个|只|条|辆|套|位|名|台|部|本"
    r"|家|间|匹|头|盆|对|双)?.+)"
)


def _possession_facts(clause: str) -> list[Fact]:
    m = (_ZH_POSSESSION_RE if has_cjk(clause) else _EN_POSSESSION_RE).search(clause)
    if not m or _POSSESSION_SKIP_RE.search(m.group("obj")[:12]):
        return []
    return [Fact(third_person(clause), "semantic", importance("identity", clause), None)]


def _alternation(items: Iterable[str]) -> str:
    """A regex alternation, longest first so that "姐姐" wins over "姐"."""
    return "|".join(re.escape(i) for i in sorted(items, key=len, reverse=True))


_RELATIONS_EN = _alternation(RELATIONS_EN)
_RELATIONS_ZH = _alternation(RELATIONS_ZH)
_EN_RELATION_RE = re.compile(
    r"^(?:my|our)\s+(?:(?:little|older|younger|big|baby|elder|eldest|youngest|new|old|best|late|twin)"
    rf"\s+)?(?:{_RELATIONS_EN})\b(?-i:\s+[A-Z][a-z]+)?(?:\s+\([^)]*\))?"
    r"\s+(?P<rest>(?!is\s+here|is\s+calling|says|said|asked|told|wants\s+to\s+know)\w.+)",
    re.I,
)
_ZH_RELATION_RE = re.compile(
    rf"^我(?:的|们的?|家的?)?(?:{_RELATIONS_ZH})(?P<rest>(?!说|问|让|叫我|圈|们说)\S.+)"
)
_EN_TOOL_RE = re.compile(
    r"^(?:i|we)(?:'re|\s+are|'m|\s+am)?\s+(?:mainly\s+|mostly\s+|primarily\s+|now\s+|currently\s+"
    r"|still\s+)?(?:use|using|code\s+in|coding\s+in|program\s+in|drive|run|running|work\s+with"
    r"|working\s+with|write\s+in|build\s+with|building\s+with)\s+(?P<obj>[^,]{2,60})$",
    re.I,
)
_ZH_TOOL_RE = re.compile(
    r"^(?:我|我们)(?:主要|平时|一般|现在|目前|日常|工作中|一直)?(?:用的是|在用|使用|用)(?P<obj>[^，,。了]{2,20})$"
)
# "… React for the frontend", "…用PostgreSQL做数据库": a choice for a purpose.
_EN_TOOL_FOR_RE = re.compile(r"^(?P<x>.+?)\s+(?:for|as)\s+(?:the\s+|our\s+|my\s+)?(?P<y>.+)$", re.I)
_ZH_TOOL_FOR_RE = re.compile(r"^(?P<x>[^，,。]+?)(?:来|作为|当作?|做)(?P<y>[^，,。]+)$")


def _relation_facts(clause: str) -> list[Fact]:
    """Facts about the user's people, pets and team: "my wife works at…", "我老婆是老师".

    No triple: what a relative is or does fills none of the user's slots, and a slot of
    the relative's own ("my boss is from Shanghai", "my boss is a lawyer") would need a
    precise pattern for each attribute, or two facts about one person would supersede
    each other."""
    m = (_ZH_RELATION_RE if has_cjk(clause) else _EN_RELATION_RE).search(clause)
    if not m or len(re.sub(r"[\W_]", "", m.group("rest"))) < 2:
        return []
    content = third_person(clause)
    if has_cjk(clause):
        content = re.sub(r"^用户(?:的|团队|家的?)?", "用户的", content)
    if DATE_RE.search(clause) or tense(clause) == "past":
        # "my boss wants the slides by Friday" is an event
        return [_event_fact(clause, content)]
    return [Fact(content, "semantic", importance("identity", clause), None)]


# ------------------------------------------------------------------ switching tools

_EN_SWITCH_RE = re.compile(
    r"^(?:i|we)(?:'ve|\s+have)?\s+(?:(?:just|recently|finally|now|already|also|eventually)\s+)*"
    r"(?:(?:switched|migrated)\s+(?:over\s+|back\s+)?(?:from\s+(?P<old>.+?)\s+)?to"
    r"|(?:moved|changed|converted|went)\s+(?:over\s+|back\s+)?from\s+(?P<old2>.+?)\s+to"
    r"|(?:replaced|swapped)\s+(?P<old3>.+?)\s+(?:with|for))\s+(?P<new>.+)$",
    re.I,
)
_ZH_SWITCH_RE = re.compile(
    r"^(?:我|我们|咱们)?(?:已经|最近|刚|终于|也|都)?"
    r"(?:把(?P<old>[^，,。]+?)|从(?P<old2>[^，,。]+?))?"
    r"(?:换成|改成|换为|改为|替换成|换到|升级到|升级成|切换到|切到|迁移到|迁到|转到)了?(?P<new>[^，,。]+)$"
)


def _bare(clause: str) -> str:
    """The clause without the sentence's final punctuation, for patterns anchored at its end."""
    return re.sub(r"[\s。．.!！?？…~～]+$", "", clause)


def _switch_facts(clause: str) -> list[Fact]:
    """A change of tool or option: "I switched from Vim to Emacs", "我把Windows换成了Mac".

    A triple only when the purpose is said ("… to Postgres for the database"): the
    editor, OS or stack a bare switch is about is a guess."""
    cjk = has_cjk(clause)
    m = (_ZH_SWITCH_RE if cjk else _EN_SWITCH_RE).match(_bare(clause))
    if not m or (cjk and not (m.group("old") or m.group("old2"))):
        return []  # "换成了…" without what it replaced is too vague to be a switch
    new = clean_value(m.group("new"))
    if not new or PRONOUN_OBJECT_RE.match(new):
        return []
    purpose = (_ZH_TOOL_FOR_RE if cjk else _EN_TOOL_FOR_RE).match(new)
    triple = _choice_triple(purpose.group("y"), purpose.group("x")) if purpose else None
    return [Fact(third_person(clause), "semantic", importance("decision", clause), triple)]


# ------------------------------------------------------------------ other people by name

_SURNAMES = "".join(sorted(SURNAMES_ZH))
_ZH_TITLES = r"老师|医生|大夫|教授|总|经理|师傅|阿姨|叔叔|先生|女士|小姐|同学|主任"
# Words that start with a surname but name no one ("周末", "马上", "方便").
_ZH_NAME_STOP = words(
    """周末 周一 周二 周三 周四 周五 周六 周日 马上 方便 方法 方向 方案 方面 高兴 高中 高考
    黄金 白天 金额 程序 江湖 石头 钟头 段落 任何 任务 于是 余额 叶子 龙虾 雷达 汤圆 白色
    黄色 金融 平时 林业 王者 孔子 曹操 江南 何时 何况 许多 许久 谢谢 夏天 秋天 向来 毛病
    邓丽 白领 高铁 龙头 钱包 万一"""
)
_ZH_PERSON_RE = re.compile(
    rf"^(?P<name>[小老阿][{_SURNAMES}]|[{_SURNAMES}](?:{_ZH_TITLES})|[{_SURNAMES}][\u4e00-\u9fff]{{1,2}}?)"
    r"(?P<rest>是(?:我|我们)的?[\u4e00-\u9fff]{0,4}(?:" + _RELATIONS_ZH + r")$"
    r"|是(?:一名|一个|一位|个|名|位)?(?P<job>[^，,。]{1,12})$"
    r"|在[^，,。]{1,15}?(?:工作|上班|读书|上学|读|教书|开|当|做|实习|住)"
    r"|(?:住在|来自|教|会说|(?:很|非常|特别|最)?(?:喜欢|爱|讨厌))[^，,。]{1,20}"
    r"|(?:已经|刚|今年|去年)?(?:结婚|离婚|退休|怀孕|毕业|辞职|跳槽|出国|生了)[^，,。]{0,12})$"
)
_EN_NAME_STOP = words(
    """the this that these those there here it he she they you we i my our your his her their
    what when where why how who which if so and but or then today tomorrow yesterday tonight
    next last every each dinner lunch breakfast please thanks hi hello hey monday tuesday
    wednesday thursday friday saturday sunday january february march april may june july
    august september october november december christmas easter python java rust go react
    english chinese german french spanish japanese google apple amazon microsoft"""
)
_EN_PERSON_RE = re.compile(
    r"^(?P<name>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
    r"(?P<about>\s+\((?:my|our|his|her|their)\s+[^)]+\)|\s+from\s+[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?)?"
    r"\s+(?P<rest>\S.*)$"
)
_EN_PERSON_PREDICATE_RE = re.compile(
    rf"^(?:(?:is|was)\s+(?:(?:my|our)\s+(?:[\w-]+\s+)?(?:{_RELATIONS_EN})\b"
    rf"|an?\s+(?:[\w-]+\s+){{0,2}}(?:{'|'.join(sorted(PROFESSIONS_EN))})\b|allergic\b|born\b"
    r"|(?:getting\s+|now\s+)?(?:married|engaged|divorced|pregnant|retired|retiring|moving|visiting"
    r"|graduating|joining|starting|studying|learning|teaching|expecting)\b|from\s+[A-Z])"
    r"|(?:works|worked)\s+(?:as|at|for|in)\b|(?:lives|lived)\s+in\b|moved\s+to\b"
    r"|(?:teaches|taught|studies|studied|speaks|coaches)\b"
    r"|(?:likes|loves|hates|enjoys|prefers|dislikes|adores)\b"
    r"|(?:got|gets|is\s+getting)\s+(?:married|engaged|divorced|promoted|hired|fired)\b"
    r"|(?:graduated|retired|joined|quit)\b"
    r"|(?:has|had)\s+(?:an?|two|three|four|\d+)\s+(?:\w+\s+)?(?:kids?|children|sons?|daughters?"
    r"|dogs?|cats?|brothers?|sisters?|baby)\b)",
    re.I,
)
# Slots a named person has as the user does; their triples take the name as subject.
_PERSON_PREDICATES = frozenset(
    {"job_title", "employer", "lives_in", "work_city", "hometown", "age", "nationality", "field"}
    | {"diet", "marital_status", "employment_status"}
)


def _person_facts(clause: str) -> list[Fact]:
    """Statements about someone named: "Alice is a nurse", "Jenny is my manager",
    "张伟是我的同事". The triple, where a precise pattern gives one, is the name's
    ("Alice", "job_title", "nurse"), never the user's."""
    cjk = has_cjk(clause)
    if cjk:
        m = _ZH_PERSON_RE.match(_bare(clause))
        if not m or m.group("name") in _ZH_NAME_STOP:
            return []
        if m.group("job") and not PROFESSIONS_ZH_RE.search(m.group("job")):
            return []  # "黄山是个好地方": no one's job
        name, as_user = m.group("name"), "我" + m.group("rest")
    else:
        m = _EN_PERSON_RE.match(_bare(clause))
        if not m or m.group("name").split()[0].lower() in _EN_NAME_STOP:
            return []
        rest = m.group("rest")
        if not (
            _EN_PERSON_PREDICATE_RE.match(rest) or (m.group("about") and len(rest.split()) >= 2)
        ):
            return []
        name = m.group("name")
        verb, _, tail = rest.partition(" ")
        as_user = f"I {first_person_verb(verb)} {tail}"
    triple: Triple | None = None
    kind: Kind = "semantic"
    for fact in identity_facts(as_user) + _opinion_facts(as_user):
        if fact.triple is None:
            continue
        predicate = fact.triple[1]
        if predicate in _PERSON_PREDICATES or predicate.startswith("opinion_of:"):
            triple, kind = (name, predicate, fact.triple[2]), fact.kind
            break
    content = third_person(clause)
    if DATE_RE.search(clause) and triple is None:
        return [_event_fact(clause, content)]
    return [Fact(content, kind, importance("identity", clause), triple)]


def _tool_facts(clause: str) -> list[Fact]:
    """Tools and stacks in use: "I use vim", "we're using React for the frontend"."""
    cjk = has_cjk(clause)
    m = (_ZH_TOOL_RE if cjk else _EN_TOOL_RE).search(clause)
    if not m or PRONOUN_OBJECT_RE.match(m.group("obj")) or one_off(clause):
        return []
    purpose = (_ZH_TOOL_FOR_RE if cjk else _EN_TOOL_FOR_RE).match(m.group("obj"))
    triple = _choice_triple(purpose.group("y"), purpose.group("x")) if purpose else None
    return [Fact(third_person(clause), "semantic", importance("identity", clause), triple)]


_EN_HABIT_RE = re.compile(
    r"\bi\s+(?:always|usually|normally|often|never|rarely|seldom|typically|generally|tend\s+to|habitually"
    r"|mostly|regularly|frequently|sometimes)\s+(?P<rest>.+)",
    re.I,
)
_ZH_HABIT_RE = re.compile(
    r"^(?:我|我们)(?:平时|一般|通常|总是|经常|往往|一向|向来|从来不|从来|从不|习惯于?|习惯了|基本上?|每次都|老是|常常)(?P<rest>.+)"
)


def _habit_facts(clause: str) -> list[Fact]:
    m = _ZH_HABIT_RE.search(clause) if has_cjk(clause) else _EN_HABIT_RE.search(clause)
    if not m or len(m.group("rest").strip()) < 2:
        return []
    return [Fact(third_person(clause), "preference", importance("habit", clause), None)]


# ------------------------------------------------------------------ standing instructions

_STYLE_RE = re.compile(
    r"\b(?:emojis?|markdown|jargon|bullet\s*points?|tables?|code\s+blocks?|slang|abbreviations?"
    r"|exclamation|headings?|citations?|sources|links|disclaimers?|apolog\w*|caveats?|examples?)\b"
    r"|表情|术语|缩写|感叹号|标题|引用|来源|链接|免责声明|道歉|例子|示例|代码块|英文缩写",
    re.I,
)
_IMPERATIVE_START_RE = re.compile(
    r"^(?:please\s+)?(?:don't|do\s+not|never|always|use|avoid|keep|make|reply|respond|answer|write|call"
    r"|address|include|add|show|format|cite|give|stop|remember|be|try|put|list|explain|summari[sz]e|translate"
    r"|mention|refer|speak|talk|send|remind|ask|check|double[\s-]check|start|end|sign|prefer|skip|no)\b"
    r"|^(?:请|不要|别|每次|以后|今后|回答|回复|记得|务必|千万|永远|总是|一律|所有|始终|默认|不许|禁止|不准|必须|一定要|要)",
    re.I,
)
_NEGATIVE_IMPERATIVE_RE = re.compile(
    r"^(?:please\s+)?(?:don't|do\s+not|never|avoid|stop|no)\b|^(?:请)?(?:不要|别|不许|禁止|不准)",
    re.I,
)


def _instruction_facts(clause: str) -> list[Fact]:
    if not _IMPERATIVE_START_RE.match(clause) or one_off(clause):
        return []
    if not (
        PERSISTENT_RE.search(clause)
        or _STYLE_RE.search(clause)
        or _NEGATIVE_IMPERATIVE_RE.match(clause)
    ):
        return []  # a one-off task ("write me a poem") is not a memory
    if len(re.sub(r"[\W_]", "", clause)) < 4:
        return []
    return [
        Fact(instruction_statement(clause), "procedural", importance("instruction", clause), None)
    ]


# ------------------------------------------------------------------ plain statements

# What may come before the subject: a time or a topic ("Next Friday I…", "这个小区我…"),
# not a condition, a question or another person.
_EN_STATEMENT_RE = re.compile(
    r"^(?P<pre>(?:[\w'-]+,?\s+){0,5}?)(?P<subj>i|we)(?P<aux>'m|'re|'ve|'d|'ll|\s+am|\s+are|\s+was"
    r"|\s+were|\s+have|\s+has|\s+had|\s+will|\s+would)?\s+(?P<rest>\S.*)$",
    re.I,
)
_EN_PRE_STOP_RE = re.compile(
    r"\b(?:if|unless|whether|what|how|why|who|which|where|you|he|she|they|it|maybe|perhaps"
    r"|please|can|could|would|should|do|does|did)\b",
    re.I,
)
# Verbs that report a thought, a wish or a request, not a fact: "I think…", "I need…".
_EN_HEDGE_RE = re.compile(
    r"^(?:think|thought|guess|suppose|believe|wonder|wondered|wondering|know|knew|mean|meant|see"
    r"|agree|disagree|understand|hope|wish|want|wanted|need|needed|would|could|should|might|may"
    r"|can|can't|cannot|must|feel|felt|apologi[sz]e|appreciate|bet|assume|imagine|doubt|forgot"
    r"|remember|like|love|hate|prefer|don't\s+(?:know|think|understand|get|care|mind|remember)"
    r"|didn't\s+(?:know|mean|understand|get)|do|did|got\s+(?:it|that|this)|gotta|just\s+wanted"
    r"|meant)\b",
    re.I,
)
_EN_EMPTY_OBJECT_RE = re.compile(
    r"^(?:(?:it|that|this|them|so|too|again|now|here|there|much|a\s+lot|well|you|one|anything"
    r"|something|everything|nothing|back|out|up|down|off|in|on|away|home|already|yet|either"
    r"|though|lol|haha)\b[\s,.!?]*)*$",
    re.I,
)
_EN_AT_HAND_RE = re.compile(r"\b(?:you|your|yours)\b", re.I)
# Progressives that tell a thought or a moment, not something lasting or planned.
_EN_PROGRESSIVE_STOP_RE = re.compile(
    r"^(?:wondering|thinking|asking|kidding|joking|trying\s+to\s+(?:understand|figure)|looking\s+for"
    r"|going\s+to\s+(?:ask|bed|sleep)|heading|leaving|getting\s+ready|on\s+my\s+way"
    r"|(?:eating|having|grabbing)\s+(?:lunch|dinner|breakfast|a\s+snack|coffee)"
    r"|working\s+on\s+(?:it|this|that)|curious|just|not\s+sure|sure|sorry|glad|happy|afraid)\b",
    re.I,
)
# Lasting conditions said with "I'm": the few adjectives that describe a person, not a mood.
_EN_CONDITIONS_RE = re.compile(
    r"^(?:(?:also|still|now)\s+)?(?:pregnant|left-handed|right-handed|colou?r-?blind|diabetic|deaf"
    r"|blind|autistic|dyslexic|lactose[\s-]intolerant|introverted|extroverted|asthmatic|epileptic"
    r"|short-?sighted|near-?sighted|hard\s+of\s+hearing|an?\s+only\s+child|bilingual|trilingual)\b",
    re.I,
)
_ZH_STATEMENT_RE = re.compile(
    r"^(?P<pre>[^，,。我]{0,8}?)(?P<subj>我们|咱们|我家|我|本人)(?P<rest>[^，,。]{2,})$"
)
_ZH_PRE_STOP_RE = re.compile(
    r"你|您|他|她|它|如果|要是|假如|怎么|什么|为什么|哪|谁|吗|是不是|请|能"
)
_ZH_HEDGE_RE = re.compile(
    r"^(?:也|都|还|就|又)?(?:是|不是|想|希望|需要|觉得|认为|以为|猜|估计|怀疑|好奇|知道|不知道|明白|懂|同意"
    r"|不同意|清楚|不清楚|记得|忘了|一样|没事|没问题|还好|先|试试|看看|想想|来|马上|这就|现在就|错了|搞定"
    r"|随便|无所谓|可以|能|会不会|要不要|在想|在问|在考虑|问|说|跟你|给你|对你|帮|感觉|有点|很|挺|非常"
    r"|特别|太|比较|真|超|蛮|好|不太|不是很|有(?:一个|个)?(?:问题|疑问|想法|建议)|喜欢|爱|讨厌"
    r"|要(?=[一两几个杯份张点])|[累饿困渴烦急忙晕冷热疼](?:了|死|坏|得))"
)
# Words that point at the conversation or the text at hand, not at the user's life.
_ZH_AT_HAND_RE = re.compile(r"你|您|这段|这句|这篇|下面|上面|刚才|以下|一下|再说|重写|一遍|翻译")


def _statement_kind(clause: str) -> tuple[Kind, str, bool]:
    """kind, importance base and ``past`` for a statement no family classified."""
    when = tense(clause)
    if when == "past":
        return "episodic", "event", True
    if DATE_RE.search(clause):
        return "episodic", "commitment", False
    return "semantic", "statement", False


def _statement_en(clause: str) -> bool:
    m = _EN_STATEMENT_RE.match(clause)
    if not m or _EN_PRE_STOP_RE.search(m.group("pre")) or _EN_AT_HAND_RE.search(clause):
        return False
    aux = (m.group("aux") or "").strip().lower()
    rest = m.group("rest")
    words_ = rest.split()
    while words_ and words_[0].lower() in _STATEMENT_ADVERBS:
        words_ = words_[1:]
    if not words_:
        return False
    rest = " ".join(words_)
    dated = DATE_RE.search(clause) is not None
    if aux in ("'d", "would"):
        return False
    if aux in ("'ll", "will"):
        # "I'll be in Tokyo next week" is a plan; "I'll check" is not
        verb, object_ = words_[0], " ".join(words_[1:])
        return dated and not _EN_HEDGE_RE.match(verb) and not _EN_EMPTY_OBJECT_RE.match(object_)
    if aux in ("'m", "'re", "am", "are"):
        first = words_[0].lower()
        if _EN_PROGRESSIVE_STOP_RE.match(rest):
            return False
        if _EN_CONDITIONS_RE.match(rest):
            return True
        if first == "not":
            words_ = words_[1:]
            first = words_[0].lower() if words_ else ""
        progressive = first.endswith("ing") and len(first) > 4
        located = dated and first in ("in", "at", "on", "off", "away", "out", "back", "home")
        return (progressive or located) and not _EN_EMPTY_OBJECT_RE.match(" ".join(words_[1:]))
    if aux in ("was", "were"):
        first = words_[0].lower()
        participle = first in PAST_PARTICIPLES or (first.endswith("ed") and len(first) > 3)
        return (participle or dated) and not _EN_PROGRESSIVE_STOP_RE.match(rest)
    if aux in ("'ve", "have", "has", "had"):
        first = words_[0].lower()
        if first == "to" and not dated:
            return False  # "I have to go"
        if _POSSESSION_SKIP_RE.search(" ".join(words_[:3])) or first in ("no", "got"):
            return False
        return not _EN_EMPTY_OBJECT_RE.match(rest)
    verb, object_ = words_[0], " ".join(words_[1:])
    if _EN_HEDGE_RE.match(rest) or not verb.isalpha():
        return False
    return bool(object_) and not _EN_EMPTY_OBJECT_RE.match(object_)


def _statement_zh(clause: str) -> bool:
    m = _ZH_STATEMENT_RE.match(clause)
    if not m or _ZH_PRE_STOP_RE.search(m.group("pre")) or _ZH_AT_HAND_RE.search(clause):
        return False
    rest = re.sub(
        r"^(?:现在|目前|最近|平时|一直|已经|刚刚?|也|还|都|今天|今年)+", "", m.group("rest")
    )
    if m.group("subj") == "我家":
        rest = re.sub(r"^的", "", rest)
    return len(re.sub(r"[\W_]", "", rest)) >= 3 and not _ZH_HEDGE_RE.match(rest)


def _statement_facts(clause: str) -> list[Fact]:
    """A plain first-person statement no family recognised, kept as said: "next Friday
    I fly to Berlin", "We adopted a beagle named Max", "我上周末去钓鱼了". Never a triple;
    thoughts, wishes, moods, requests and remarks about the conversation are skipped."""
    if _REQUEST_FOR_RE.search(clause) or REQUEST_RE.match(clause) or _CONDITION_RE.match(clause):
        return []
    undated = DATE_RE.sub(" ", clause)
    if one_off(undated):
        return []
    if not (_statement_zh(_bare(clause)) if has_cjk(clause) else _statement_en(_bare(clause))):
        return []
    kind, base, past = _statement_kind(clause)
    return [Fact(third_person(clause), kind, importance(base, clause), None, past=past)]


_STATEMENT_ADVERBS = frozenset(
    [
        "really",
        "also",
        "always",
        "usually",
        "normally",
        "often",
        "never",
        "rarely",
        "still",
        "just",
        "only",
        "actually",
        "generally",
        "typically",
        "mostly",
        "sometimes",
        "definitely",
        "finally",
        "recently",
        "already",
        "currently",
        "now",
        "eventually",
        "then",
    ]
)


# ------------------------------------------------------------------ driver


@dataclass
class RuleOutcome:
    facts: list[Fact] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    # Clauses from the extracted roles that no rule recognised: what an LLM could add.
    leftovers: list[str] = field(default_factory=list)
    # Message indexes refused by the safety filter, kept out of any LLM prompt too.
    rejected_indexes: set[int] = field(default_factory=set)


_CLAUSE_RULES: tuple[Callable[[str], list[Fact]], ...] = (
    _length_facts,
    identity_facts,
    _decision_facts,
    _switch_facts,
    _opinion_facts,
    _schedule_facts,
    _dated_facts,
    _possession_facts,
    _relation_facts,
    _person_facts,
    _tool_facts,
    _habit_facts,
    _instruction_facts,
)
_CONDITION_RE = re.compile(
    r"^(?:when|whenever|if|once|after|before)\b|^(?:每当|当|如果|要是|假如)", re.I
)


def _clause_facts(
    clause: str, context: SettingContext, *, question: bool, request: bool
) -> list[Fact]:
    facts = setting_facts(clause, context)
    if facts or question:
        return facts if (not question or request) else []
    for rule in _CLAUSE_RULES:
        facts = rule(clause)
        if facts:
            return [_checked(f, clause) for f in facts]
    return []


def _checked(fact: Fact, clause: str) -> Fact:
    """The fact without a triple whose object is a fragment ("住着挺舒服的" as a place,
    "个律师" as a job): a wrong value in a slot would supersede the right one. The
    statement is kept, worded as the user said it; and a past-tense clause marks it
    ``past``."""
    past = fact.past or tense(clause) == "past"
    if fact.triple is not None and _fragment_triple(fact.triple):
        return Fact(third_person(clause), fact.kind, fact.importance, None, past=past)
    triple = fact.triple
    if triple is not None and triple[1] != "birthday":
        # "I started at Stripe in May": the slot holds "Stripe"; the content keeps "in May".
        obj = re.sub(rf"(?:\s*,?\s*(?:{DATE_RE.pattern}))+$", "", triple[2], flags=re.I).strip()
        if obj and obj != triple[2] and not is_fragment(obj):
            triple = (triple[0], triple[1], obj)
    if past == fact.past and triple == fact.triple:
        return fact
    return replace(fact, past=past, triple=triple)


def _fragment_triple(triple: Triple) -> bool:
    _, predicate, obj = triple
    if predicate == "surname":
        return not re.fullmatch(r"[\u3400-\u9fff]{1,2}|[A-Za-z][\w'-]+", obj)  # 王 is a surname
    if predicate.startswith(("opinion_of:", "choice_for:")):
        thing = predicate.partition(":")[2]
        return is_fragment(thing, one_character=True) or (
            predicate.startswith("choice_for:") and is_fragment(obj, one_character=True)
        )
    return is_fragment(obj)


# The user asks outright for something to be remembered: even if no rule knows the
# phrasing, the statement is kept as a fact.
_REMEMBER_RE = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep\s+in\s+mind|don't\s+forget|do\s+not\s+forget)(?:\s+that\b|\s*:)"
    r"|^(?:请)?(?:记住|记一下|记好|注意|别忘了|不要忘了)",
    re.I,
)


# A clause that addresses the assistant or asks for something continues no statement.
_NOT_A_CONTINUATION_RE = re.compile(
    r"\b(?:you|your|can|could|would|please|let's|thanks|thank)\b|你|您|请|帮我|麻烦|谢谢", re.I
)


@dataclass
class _Read:
    """A fact of the sentence being read, and the clause it was worded from."""

    fact: Fact
    source: str

    def continues_with(self, clause: str) -> bool:
        """Whether ``clause`` ("…，钓了三条鲫鱼", "…，他很擅长Python") belongs to this
        fact: the fact tells a statement (not a standing instruction, limit or routine,
        nor a slot in canonical words such as "用户的名字是张三"), and the clause adds
        information rather than addressing the assistant."""
        fact = self.fact
        return (
            fact.kind != "procedural"
            and (fact.triple is None or fact.content == third_person(self.source))
            and len(re.sub(r"[\W_]", "", clause)) >= 2
            and not _NOT_A_CONTINUATION_RE.search(clause)
            and not _IMPERATIVE_START_RE.match(clause)
        )

    def extended(self, clause: str) -> _Read:
        added = third_person(clause)
        if not has_cjk(clause) and clause[:1].islower():
            added = added[:1].lower() + added[1:]  # third_person capitalises a statement
        joined = f"{self.source}{'，' if has_cjk(self.source + clause) else ', '}{clause}"
        fact = self.fact
        kind = "episodic" if DATE_RE.search(clause) and fact.kind == "semantic" else fact.kind
        content = f"{fact.content}{'，' if has_cjk(fact.content + added) else ', '}{added}"
        past = fact.past or tense(clause) == "past"
        return _Read(replace(fact, content=content, kind=kind, past=past), joined)


def _may_lead(clause: str) -> bool:
    """A time or condition that may belong to the clause after it ("每天早上9点，…")."""
    return len(clause) <= 40 and bool(
        DATE_RE.search(clause)
        or FREQUENCY_RE.search(clause)
        or _CONDITION_RE.match(clause)
        or PERSISTENT_RE.search(clause)  # "From now on, …"
    )


def _join(pending: str, clause: str) -> str:
    return f"{pending}{'，' if has_cjk(pending + clause) else ', '}{clause}" if pending else clause


def _sentence_facts(sentence: str, context: SettingContext) -> tuple[list[Fact], list[str]]:
    """Facts and leftovers of one sentence.

    Each clause goes to the families (:data:`_CLAUSE_RULES`). One they do not recognise
    is, in order: a plain statement of its own subject, kept as said
    (:func:`_statement_facts`); a time or condition kept for the next clause; a
    continuation of the fact before it ("我上周末去钓鱼了，钓了三条鲫鱼" is one fact);
    a statement with the subject it inherited. A clause only kept as said is a leftover
    too, for an LLM to read closer."""
    question = is_question(sentence)
    request = bool(REQUEST_RE.search(sentence))
    explicit = _REMEMBER_RE.match(sentence.strip()) is not None
    read: list[_Read] = []
    leftovers: list[str] = []
    pending = ""  # a time or condition waiting for the clause it belongs to
    for clause in split_marked_clauses(sentence):
        if is_small_talk(clause):
            continue
        candidate = _join(pending, clause)
        found = _clause_facts(candidate, context, question=question, request=request)
        context.current |= topics_in(clause)
        if not found and explicit and not question and len(re.sub(r"[\W_]", "", candidate)) >= 4:
            found = [
                _checked(
                    Fact(third_person(candidate), "semantic", importance("explicit", candidate)),
                    candidate,
                )
            ]
        if found:
            read += [_Read(f, candidate) for f in found]
            pending = ""
            continue
        if question:
            if pending:
                leftovers.append(pending)
                pending = ""
            continue
        said = [] if clause.carried else _statement_facts(candidate)
        if not said and not pending and _may_lead(clause):
            pending = clause
            continue
        if said:
            read += [_Read(f, candidate) for f in said]
        elif read and read[-1].continues_with(_join(pending, clause.said)):
            read[-1] = read[-1].extended(_join(pending, clause.said))
        elif said := _statement_facts(candidate) if clause.carried else []:
            read += [_Read(f, candidate) for f in said]
        else:
            if pending:
                leftovers.append(pending)
                pending = ""
            if _may_lead(clause):
                pending = clause
            else:
                leftovers.append(clause)
            continue
        leftovers.append(candidate)
        pending = ""
    if pending:
        if read and read[-1].continues_with(pending):
            read[-1] = read[-1].extended(pending)  # "…, on Tuesday." said last
        leftovers.append(pending)
    return [r.fact for r in read], leftovers


def extract_with_rules(
    messages: Sequence[Message], *, roles: Iterable[str] = ("user",)
) -> RuleOutcome:
    """Facts the rules find in ``messages`` (already normalised by ``as_messages``)."""
    wanted = {r.lower() for r in roles}
    outcome = RuleOutcome()
    context = SettingContext()
    question: str | None = None  # what the assistant asked just before
    for index, message in enumerate(messages):
        role, content = message["role"], message["content"]
        reason = injection_reason(content)
        if reason is not None:
            outcome.rejected_indexes.add(index)
            if role in wanted:
                outcome.rejected.append(Rejected(content, f"prompt injection: {reason}", index))
            question = None
            continue
        context.current = set()
        if role in wanted:
            facts, leftovers = [], []
            for sentence in split_sentences(content):
                if is_small_talk(sentence):
                    continue
                found, left = _sentence_facts(sentence, context)
                facts.extend(found)
                leftovers.extend(left)
            if question is not None and is_short_answer(content) and not is_small_talk(content):
                # The reply completes the question: a recognised shape says it better
                # than a bare setting read off the question's words.
                answer, shaped = answer_fact(question, content)
                if shaped or not facts:
                    facts, leftovers = [answer], []
            outcome.facts.extend(facts)
            outcome.leftovers.extend(leftovers)
        if role == "assistant":
            question = last_question(content)
        elif role != "tool":
            question = None
        context.recent.append(topics_in(content) | context.current)
    outcome.facts = dedupe(outcome.facts)
    return outcome
