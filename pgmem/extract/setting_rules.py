"""Setting-like preferences: theme, reply language, units, tone, answer length,
format, emoji (the user's settings, not a tenant's ``pgmem.settings``).

A setting is recognised by one of its values ("深色", "dark mode", "metric", "简短"…)
plus a word that says what is being set ("主题", "theme", "answers"…), found in the
clause or in the two messages before it. An ambiguous value ("dark", "浅色") counts
only with that word nearby, or when it is all the clause says besides choice words
("还是浅色吧", "light, please"). Every setting is one slot: subject "user", a stable
predicate, a canonical lowercase English value, so a change in either language
supersedes the old value. Negation picks the opposite of a two-valued setting
("turn off dark mode" → light) and "not X" otherwise.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from pgmem.extract.facts import USER, Fact, Kind, has_cjk
from pgmem.extract.lexicon import importance, one_off

__all__ = ["SettingContext", "setting_facts", "topics_in"]


@dataclass(frozen=True)
class _Value:
    value: str  # canonical object, lowercase English
    label_en: str
    label_zh: str
    strong: str | None = None  # unambiguous mentions
    weak: str | None = None  # mentions that need the setting's topic nearby
    implied: str | None = None  # phrasings that set the value by themselves


@dataclass(frozen=True)
class _Setting:
    predicate: str
    kind: Kind
    topic: str
    values: tuple[_Value, ...]
    opposite: dict[str, str] = field(default_factory=dict)


_LANGUAGES: tuple[tuple[str, str, str, str], ...] = (
    # value, English label, Chinese label, mentions
    (
        "traditional chinese",
        "Traditional Chinese",
        "繁体中文",
        r"traditional\s+chinese|繁体中文|繁體中文|繁体",
    ),
    ("cantonese", "Cantonese", "粤语", r"cantonese|粤语|广东话"),
    ("chinese", "Chinese", "中文", r"chinese|mandarin|简体中文|中文|汉语|普通话|国语"),
    ("english", "English", "英文", r"english|英文|英语"),
    ("japanese", "Japanese", "日语", r"japanese|日语|日文"),
    ("korean", "Korean", "韩语", r"korean|韩语|韩文"),
    ("french", "French", "法语", r"french|法语|法文"),
    ("german", "German", "德语", r"german|德语|德文"),
    ("spanish", "Spanish", "西班牙语", r"spanish|西班牙语|西语"),
    ("russian", "Russian", "俄语", r"russian|俄语|俄文"),
    ("portuguese", "Portuguese", "葡萄牙语", r"portuguese|葡萄牙语"),
    ("italian", "Italian", "意大利语", r"italian|意大利语"),
    ("arabic", "Arabic", "阿拉伯语", r"arabic|阿拉伯语"),
)

_SETTINGS: tuple[_Setting, ...] = (
    _Setting(
        "theme",
        "preference",
        r"\b(?:theme|mode|skin|colou?r\s*scheme|appearance|ui|interface)\b|主题|模式|皮肤|配色|外观|界面|背景|风格",
        (
            _Value(
                "dark",
                "dark theme",
                "深色主题",
                strong=r"\bdark\s*(?:mode|theme|skin)\b|\bnight\s*mode\b|深色(?:模式|主题)|暗色(?:模式|主题)"
                r"|暗黑模式|夜间模式|黑暗模式|黑色主题|暗黑主题",
                weak=r"\bdark(?:er)?\b|深色|暗色|黑色|暗黑|深一点",
            ),
            _Value(
                "light",
                "light theme",
                "浅色主题",
                strong=r"\blight\s*(?:mode|theme|skin)\b|\bday\s*mode\b|浅色(?:模式|主题)|亮色(?:模式|主题)"
                r"|日间模式|白天模式|白色主题|明亮主题",
                weak=r"\blight(?:er)?\b|\bbright\b|浅色|亮色|白色|明亮|浅一点",
            ),
            _Value(
                "system",
                "the system theme",
                "跟随系统的主题",
                strong=r"\b(?:system|auto(?:matic)?)\s*(?:mode|theme)\b|跟随系统|自动模式",
            ),
        ),
        {"dark": "light", "light": "dark"},
    ),
    _Setting(
        "language",
        "preference",
        r"\b(?:reply|replies|respond|responses?|answers?|language|communicate|converse|chat)\b"
        r"|\b(?:talk|speak|write)\s+(?:to|with)\s+(?:me|us)\b"
        r"|语言|回答|回复|答复|交流|沟通|对话|聊天|(?:跟|和|对)我(?:说|讲)|用\S{0,6}(?:说|讲|写)",
        tuple(
            _Value(
                value,
                f"replies in {en}",
                f"用{zh}回复",
                weak=rf"\b(?:{pattern})\b" if pattern.isascii() else pattern,
            )
            for value, en, zh, pattern in _LANGUAGES
        ),
    ),
    _Setting(
        "units",
        "preference",
        r"\b(?:units?|measurements?|system)\b|单位|度量|计量|制",
        (
            _Value("metric", "metric units", "公制单位", strong=r"\bmetric\b|公制|米制|国际单位"),
            _Value(
                "imperial",
                "imperial units",
                "英制单位",
                strong=r"\bimperial\b|\bus\s+customary\b|英制",
            ),
        ),
        {"metric": "imperial", "imperial": "metric"},
    ),
    _Setting(
        "temperature_unit",
        "preference",
        r"\b(?:temperatures?|temps?|degrees?)\b|温度|气温",
        (
            _Value(
                "celsius",
                "temperatures in Celsius",
                "摄氏温度",
                strong=r"\bcelsius\b|\bcentigrade\b|摄氏",
            ),
            _Value(
                "fahrenheit",
                "temperatures in Fahrenheit",
                "华氏温度",
                strong=r"\bfahrenheit\b|华氏",
            ),
        ),
        {"celsius": "fahrenheit", "fahrenheit": "celsius"},
    ),
    _Setting(
        "tone",
        "procedural",
        r"\b(?:tone|style|voice|manner|register|talk|speak|write|sound)\b|语气|口吻|风格|语调|说话|措辞|文风",
        (
            _Value("formal", "a formal tone", "正式的语气", weak=r"\bformal\b|正式|书面|严肃"),
            _Value(
                "casual",
                "a casual tone",
                "随意的语气",
                weak=r"\b(?:casual|informal|relaxed|laid[\s-]back|chill|conversational)\b|随意|随便|轻松|口语化|非正式|活泼",
            ),
            _Value(
                "friendly",
                "a friendly tone",
                "友好的语气",
                weak=r"\b(?:friendly|warm)\b|友好|亲切|温和|热情",
            ),
            _Value(
                "professional", "a professional tone", "专业的语气", weak=r"\bprofessional\b|专业"
            ),
            _Value(
                "humorous",
                "a humorous tone",
                "幽默的语气",
                weak=r"\b(?:humorous|funny|playful|witty)\b|幽默|风趣|俏皮",
            ),
        ),
        {"formal": "casual", "casual": "formal"},
    ),
    _Setting(
        "answer_length",
        "procedural",
        r"\b(?:answers?|replies|reply|responses?|explanations?|summar(?:y|ies)|output|messages?)\b"
        r"|回答|回复|答案|解释|说明|总结|输出|篇幅|字数|长度|说话",
        (
            _Value(
                "short",
                "short answers",
                "简短的回答",
                weak=r"\b(?:short|shorter|brief|briefer|concise|succinct|terse|to\s+the\s+point)\b"
                r"|简短|简洁|简明|精简|简单|短一点|短一些|短点|言简意赅",
                implied=r"\b(?:keep\s+it\s+(?:short|brief)|be\s+(?:brief|concise|succinct))\b"
                r"|(?:don't|do\s+not|stop|less|no|without)\s+(?:be\s+)?(?:so\s+)?(?:verbose|long[\s-]winded"
                r"|wordy|rambl\w*)|(?:don't|do\s+not)\s+(?:make\s+(?:it|them|answers|replies)\s+|be\s+|write\s+)?"
                r"(?:too|so)\s+long|\bnot\s+too\s+long"
                r"|(?:不要|别|少|不用)(?:写得?|说得?|回答得?)?(?:那么|太|这么)?(?:长|啰嗦|啰唆|废话|冗长|长篇大论)",
            ),
            _Value(
                "detailed",
                "detailed answers",
                "详细的回答",
                weak=r"\b(?:detailed|longer|thorough|in[\s-]depth|comprehensive|elaborate|verbose)\b"
                r"|详细|详尽|具体|深入|全面|长一点|展开",
            ),
        ),
        {"short": "detailed", "detailed": "short"},
    ),
    _Setting(
        "format",
        "procedural",
        r"\b(?:format|formatting|layout|answers?|replies|responses?|output)\b|格式|排版|形式|回答|回复|输出",
        (
            _Value("markdown", "Markdown formatting", "Markdown格式", strong=r"\bmarkdown\b"),
            _Value("plain_text", "plain text", "纯文本", strong=r"\bplain[\s-]*text\b|纯文本"),
            _Value(
                "bullet_points",
                "bullet points",
                "分点列出",
                strong=r"\bbullet(?:ed)?[\s-]*(?:points?|lists?)\b|\bbullets\b|分点|要点形式|列表形式",
            ),
            _Value(
                "table",
                "tables",
                "表格",
                strong=r"\bin\s+(?:a\s+)?tables?\b|表格形式|用表格",
                weak=r"\btables?\b|表格",
            ),
        ),
    ),
    _Setting(
        "emoji",
        "procedural",
        r"\bemojis?\b|\bemoticons?\b|表情",
        (
            _Value(
                "no",
                "no emoji",
                "不使用表情符号",
                implied=r"(?:don't|do\s+not|never|no|stop|avoid|without|less)\s+(?:\w+\s+){0,2}(?:emojis?|emoticons?)"
                r"|(?:不要|别|不用|不许|少用|禁止|不需要)\S{0,6}(?:表情|emoji)",
            ),
            _Value(
                "yes",
                "emoji",
                "使用表情符号",
                implied=r"(?:use|add|include|with|more|love)\s+(?:\w+\s+){0,2}(?:emojis?|emoticons?)"
                r"|(?:多用|加|用|加点|加上|多加)\S{0,4}(?:表情|emoji)",
            ),
        ),
        {"no": "yes", "yes": "no"},
    ),
)

_COMPILED_SETTINGS: list[
    tuple[
        _Setting,
        re.Pattern[str],
        list[tuple[_Value, re.Pattern[str] | None, re.Pattern[str] | None, re.Pattern[str] | None]],
    ]
] = [
    (
        s,
        re.compile(s.topic, re.I),
        [
            (
                v,
                re.compile(v.strong, re.I) if v.strong else None,
                re.compile(v.weak, re.I) if v.weak else None,
                re.compile(v.implied, re.I) if v.implied else None,
            )
            for v in s.values
        ],
    )
    for s in _SETTINGS
]

# Words that say the user is choosing, wanting or switching something.
_CHOICE_RE = re.compile(
    r"\b(?:like|love|prefer|want|wanna|need|use|using|switch|change|set|go\s+with|stick\s+with"
    r"|make\s+it|turn\s+on|enable|please|pls|keep|let's|lets|rather|default|always|only"
    r"|back\s+to|try|give\s+me|show\s+me|reply|respond|answer|write|talk|speak|be|make|more|less"
    r"|favou?rite|choose|pick|i'll\s+take|go\s+for|sounds\s+good|better|nicer|easier\s+on)\b"
    r"|喜欢|偏好|偏爱|习惯|想要|想用|要|用|改成|改为|改回|换成|换回|换到|换为|切换|切到|切回|设置|设成"
    r"|设为|设定|调成|调到|调为|还是|就|选|开启|打开|启用|请|默认|以后|都|回答|回复|说|讲|写|来|一点|一些"
    r"|舒服|好看|顺眼|更好",
    re.I,
)
# Words that reject the value they come before: a negation ("don't like dark mode",
# "不要深色") or the losing side of a comparison ("over light mode", "比起浅色", "从深色").
_REJECT_RE = re.compile(
    r"\b(?:don't|do\s+not|dont|not|no|never|stop|hate|dislike|turn\s+off|disable|avoid|without"
    r"|instead\s+of|rather\s+than|over|than|from)\b|不要|不想|不喜欢|讨厌|别|关掉|关闭|关了|禁用|不用|不需要"
    r"|受不了|而不是|而非|不是|比起|相比|与其|从",
    re.I,
)
# After these a value is the target of a change: "from dark to light", "改成浅色".
_TARGET_RE = re.compile(r"(?:\bto|\binto|成|为|到)\s*$", re.I)
# Filler that may surround a bare value ("light, please", "还是浅色吧").
_BARE_VALUE_NOISE_RE = re.compile(
    r"\b(?:i|i'd|i'll|i'm|me|my|the|a|an|it|one|please|pls|thanks|just|then|ok|okay|sure"
    r"|let's|lets|go|with|take|use|want|prefer|like|love|switch|change|set|to|back|actually"
    r"|instead|mode|theme|version|option|is|fine|good|better|would|be|rather|make|using|turn"
    r"|maybe|think|more|less|a\s+bit|little|very|so|too)\b|那么|这么|太|那样"
    r"|还是|就|吧|用|要|换成|改成|换|改|成|选|我|请|那|好了|好|嗯|算了|一点|一些|点|呢|啊|呀|的|模式|主题"
    r"|想要|比较|觉得|更|喜欢|偏好|默认|设置为|设置|切换到|切换|切到|回到|改回|换回|调成",
    re.I,
)
# Between a rejecting word and the value it rejects: "don't reply in Spanish".
_REJECT_GAP_RE = re.compile(
    r"\b(?:in|reply|replies|respond|answer|write|speak|talk|you|your|use|using|want|like|the|a|an"
    r"|be|so|too|that|turn|switch|to|with|any|more)\b|回答|回复|说|讲|写|你|用|要|那么|这么|太|再",
    re.I,
)
# "be more casual", "make it shorter": a value right after these is being chosen.
_INTENSIFIER_AROUND = (
    r"(?:\b(?:be|more|less|sound|stay|keep\s+it|make\s+it|bit|little|very)\s+"
    r"(?:a\s+bit\s+|a\s+little\s+|more\s+|less\s+|very\s+)?)"
)


@dataclass
class SettingContext:
    """Setting topics mentioned in the last two messages and earlier in this one."""

    recent: deque[set[str]] = field(default_factory=lambda: deque(maxlen=2))
    current: set[str] = field(default_factory=set)

    def topics(self) -> set[str]:
        found = set(self.current)
        for topics in self.recent:
            found |= topics
        return found


def topics_in(text: str) -> set[str]:
    return {s.predicate for s, topic_re, _ in _COMPILED_SETTINGS if topic_re.search(text)}


def _residue(clause: str, spans: list[tuple[int, int]]) -> int:
    """How much a clause says besides the setting's values and choice or rejection
    words: English words plus CJK characters. 0 means the clause is only a choice
    between values ("还是浅色吧", "light, please", "从深色改成浅色")."""
    rest, previous = [], 0
    for start, end in sorted(spans):
        rest.append(clause[previous:start])
        previous = max(previous, end)
    rest.append(clause[previous:])
    text = _BARE_VALUE_NOISE_RE.sub(" ", _REJECT_RE.sub(" ", " ".join(rest)))
    return len(re.findall(r"[A-Za-z0-9]+", text)) + len(re.findall(r"[\u3400-\u9fff]", text))


def _rejects(window: str) -> bool:
    """Whether the text before a value rejects it: a rejecting word followed only by
    filler ("don't like the ", "turn off "), so "not sure about dark mode" does not."""
    matches = list(_REJECT_RE.finditer(window))
    if not matches:
        return False
    last = matches[-1]
    gap = _REJECT_GAP_RE.sub(" ", _BARE_VALUE_NOISE_RE.sub(" ", window[last.end() :]))
    return not re.search(r"[\w\u3400-\u9fff]", gap)


def setting_facts(clause: str, context: SettingContext) -> list[Fact]:
    facts: list[Fact] = []
    if one_off(clause):
        return facts  # "make it shorter", "用英文再说一遍": about this answer only
    cjk = has_cjk(clause)
    recent_topics = context.topics()
    chooses = _CHOICE_RE.search(clause) is not None
    for setting, topic_re, values in _COMPILED_SETTINGS:
        implied = next((v for v, _, _, imp in values if imp and imp.search(clause)), None)
        if implied is not None:
            facts.append(_setting_fact(setting, implied.value, False, clause, cjk))
            continue
        topic_here = topic_re.search(clause) is not None
        topic_before = setting.predicate in recent_topics
        found: list[tuple[int, int, _Value, bool]] = []  # start, end, value, needs a topic
        for value, strong_re, weak_re, _ in values:
            for pattern, needs_topic in ((strong_re, False), (weak_re, True)):
                if pattern is not None:
                    found.extend(
                        (m.start(), m.end(), value, needs_topic) for m in pattern.finditer(clause)
                    )
        if not found:
            continue
        residue = _residue(clause, [(start, end) for start, end, _, _ in found])
        # A reply to a question about this setting ("light", "深色的那个"), or a clause
        # that is nothing but a strong value ("Dark mode.").
        bare_reply = topic_before and residue <= (3 if cjk else 1)
        # Every acceptable mention of a value: (start, end, value, is_bare_reply).
        mentions: list[tuple[int, int, _Value, bool]] = []
        for start, end, value, needs_topic in found:
            if needs_topic and not (
                topic_here
                or bare_reply
                or residue == 0
                or re.search(_INTENSIFIER_AROUND + r"$", clause[:start], re.I)
                or re.match(r"\s*(?:一点|一些|点儿?|些)", clause[end:])
            ):
                continue
            mentions.append((start, end, value, bare_reply or (not needs_topic and residue == 0)))
        if not mentions:
            continue
        mentions.sort(key=lambda t: (t[0], -(t[1] - t[0])))
        chosen: tuple[int, _Value, bool, bool] | None = None  # score, value, negated, bare
        previous_end = 0
        for start, end, value, bare_reply in mentions:
            if start < previous_end:
                continue  # inside a longer mention already counted
            window = clause[previous_end:start]
            negated = _rejects(window)
            score = -2 if negated else (3 if _TARGET_RE.search(window) else 1)
            if chosen is None or score > chosen[0]:
                chosen = (score, value, negated, bare_reply)
            previous_end = end
        if chosen is None:
            continue
        _, value, negated, bare_reply = chosen
        if not (chooses or bare_reply or negated):
            continue  # a mention, not a choice: "the dark mode bug is fixed"
        if negated and value.value in setting.opposite:
            facts.append(_setting_fact(setting, setting.opposite[value.value], False, clause, cjk))
        else:
            facts.append(_setting_fact(setting, value.value, negated, clause, cjk))
    return facts


def _setting_fact(setting: _Setting, value: str, negated: bool, clause: str, cjk: bool) -> Fact:
    label = next(v for v in setting.values if v.value == value)
    if cjk:
        content = f"用户不想要{label.label_zh}" if negated else f"用户偏好{label.label_zh}"
    else:
        content = (
            f"User does not want {label.label_en}" if negated else f"User prefers {label.label_en}"
        )
    obj = f"not {value}" if negated else value
    return Fact(
        content, setting.kind, importance("setting", clause), (USER, setting.predicate, obj)
    )
