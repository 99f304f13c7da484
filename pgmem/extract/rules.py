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
from dataclasses import dataclass, field

from pgmem.extract.facts import USER, Fact, Kind, Message, Rejected, Triple, dedupe, has_cjk
from pgmem.extract.identity_rules import identity_facts
from pgmem.extract.lexicon import (
    DATE_RE,
    FREQUENCY_RE,
    PERSISTENT_RE,
    cn_number,
    importance,
    one_off,
)
from pgmem.extract.safety import injection_reason
from pgmem.extract.setting_rules import SettingContext, setting_facts, topics_in
from pgmem.extract.text import (
    EN_ADVERBS,
    REQUEST_RE,
    clean_value,
    instruction_statement,
    is_question,
    is_small_talk,
    split_clauses,
    split_sentences,
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
    # Not clean_value: "React and TypeScript" is one choice, not "React" and chatter.
    purpose, choice = (re.sub(r"[\s.!?…。！？吧]+$", "", t).strip() for t in (purpose, choice))
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
            or re.search(
                r"\b(?:meeting|appointment|interview|exam|deadline|flight|due|launch|release)\b",
                clause,
                re.I,
            )
        )
    ):
        if _PAST_EVENT_RE.search(clause) or re.search(
            r"\b(?:yesterday|last\s+\w+|ago)\b|昨天|前天|上周|上个月|去年", clause, re.I
        ):
            return [Fact(third_person(clause), "episodic", importance("event", clause), None)]
        return [Fact(third_person(clause), "episodic", importance("commitment", clause), None)]
    if _PAST_EVENT_RE.search(clause):
        return [Fact(third_person(clause), "episodic", importance("event", clause), None)]
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


_RELATIONS_EN = (
    r"wife|husband|partner|spouse|son|daughter|kids?|children|child|baby|mom|mum|mother|dad|father"
    r"|parents|brother|sister|siblings|boyfriend|girlfriend|fianc[eé]e?|boss|manager|cat|dog|pets?"
    r"|friend|best\s+friend|roommate|team|company|colleague|coworker|co-worker|family|grandma|grandpa"
    r"|grandmother|grandfather|uncle|aunt|cousin"
)
_EN_RELATION_RE = re.compile(
    rf"^(?:my|our)\s+(?:(?:little|older|younger|big|baby|elder|eldest|youngest|new|old)\s+)?(?:{_RELATIONS_EN})\b"
    r"(?:\s+[A-Z][a-z]+)?\s+(?P<rest>(?!is\s+here|is\s+calling|says|said|asked|told)\w.+)",
    re.I,
)
_ZH_RELATION_RE = re.compile(
    r"^我(?:的|们)?(?:老婆|老公|妻子|丈夫|太太|爱人|儿子|女儿|孩子|宝宝|爸爸|妈妈|父亲|母亲|爸妈|父母|哥哥|姐姐"
    r"|弟弟|妹妹|男朋友|女朋友|男友|女友|对象|未婚妻|未婚夫|老板|领导|上司|同事|室友|猫|狗|宠物|团队|公司|家人"
    r"|爷爷|奶奶|外公|外婆)(?P<rest>(?!说|问|让|叫我)\S.+)"
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
    """Facts about the user's people, pets and team: "my wife works at…", "我老婆是老师"."""
    m = (_ZH_RELATION_RE if has_cjk(clause) else _EN_RELATION_RE).search(clause)
    if not m or len(re.sub(r"[\W_]", "", m.group("rest"))) < 2:
        return []
    content = third_person(clause)
    if has_cjk(clause):
        content = re.sub(r"^用户(?:的|团队)?", "用户的", content)
    if DATE_RE.search(clause):  # "my boss wants the slides by Friday" is an event
        return [Fact(content, "episodic", importance("commitment", clause), None)]
    return [Fact(content, "semantic", importance("identity", clause), None)]


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
    _opinion_facts,
    _schedule_facts,
    _dated_facts,
    _possession_facts,
    _relation_facts,
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
            return facts
    return []


# The user asks outright for something to be remembered: even if no rule knows the
# phrasing, the statement is kept as a fact.
_REMEMBER_RE = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep\s+in\s+mind|don't\s+forget|do\s+not\s+forget)(?:\s+that\b|\s*:)"
    r"|^(?:请)?(?:记住|记一下|记好|注意|别忘了|不要忘了)",
    re.I,
)


def _sentence_facts(sentence: str, context: SettingContext) -> tuple[list[Fact], list[str]]:
    question = is_question(sentence)
    request = bool(REQUEST_RE.search(sentence))
    explicit = _REMEMBER_RE.match(sentence.strip()) is not None
    facts: list[Fact] = []
    leftovers: list[str] = []
    pending = ""  # a time or condition waiting for the clause it belongs to
    for clause in split_clauses(sentence):
        if is_small_talk(clause):
            continue
        candidate = (
            f"{pending}{'，' if has_cjk(pending + clause) else ', '}{clause}" if pending else clause
        )
        found = _clause_facts(candidate, context, question=question, request=request)
        context.current |= topics_in(clause)
        if not found and explicit and not question and len(re.sub(r"[\W_]", "", candidate)) >= 4:
            found = [Fact(third_person(candidate), "semantic", importance("explicit", candidate))]
        if found:
            facts.extend(found)
            pending = ""
            continue
        if pending:
            leftovers.append(pending)
            pending = ""
        if (
            not question
            and (
                DATE_RE.search(clause)
                or FREQUENCY_RE.search(clause)
                or _CONDITION_RE.match(clause)
                or PERSISTENT_RE.search(clause)  # "From now on, …"
            )
            and len(clause) <= 40
        ):
            pending = clause
        elif not question:
            leftovers.append(clause)
    if pending:
        leftovers.append(pending)
    return facts, leftovers


def extract_with_rules(
    messages: Sequence[Message], *, roles: Iterable[str] = ("user",)
) -> RuleOutcome:
    """Facts the rules find in ``messages`` (already normalised by ``as_messages``)."""
    wanted = {r.lower() for r in roles}
    outcome = RuleOutcome()
    context = SettingContext()
    for index, message in enumerate(messages):
        role, content = message["role"], message["content"]
        reason = injection_reason(content)
        if reason is not None:
            outcome.rejected_indexes.add(index)
            if role in wanted:
                outcome.rejected.append(Rejected(content, f"prompt injection: {reason}", index))
            continue
        context.current = set()
        if role in wanted:
            for sentence in split_sentences(content):
                if is_small_talk(sentence):
                    continue
                facts, leftovers = _sentence_facts(sentence, context)
                outcome.facts.extend(facts)
                outcome.leftovers.extend(leftovers)
        context.recent.append(topics_in(content) | context.current)
    outcome.facts = dedupe(outcome.facts)
    return outcome
