"""Text handling shared by the rules: sentences and clauses, small talk, questions,
and rewriting a first-person clause into a standalone statement about the user."""

from __future__ import annotations

import re
from collections.abc import Callable

from pgmem.extract.facts import has_cjk
from pgmem.extract.lexicon import IRREGULAR_PAST, MODALS, SMALL_TALK

__all__ = [
    "EN_ADVERBS",
    "REQUEST_RE",
    "article",
    "clean_value",
    "instruction_statement",
    "is_question",
    "is_small_talk",
    "split_clauses",
    "split_sentences",
    "third_person",
]

# ------------------------------------------------------------------ sentences and clauses

_ABBREVIATIONS = ("e.g.", "i.e.", "mr.", "mrs.", "ms.", "dr.", "prof.", "st.", "vs.", "etc.")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[。！？!?；;…])|(?<=\.)(?=\s)|\n+")


def split_sentences(text: str) -> list[str]:
    """Sentences, each keeping its final punctuation (a "?" decides questions)."""
    pieces = [p.strip() for p in _SENTENCE_SPLIT_RE.split(text)]
    sentences: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        if sentences and sentences[-1].lower().endswith(_ABBREVIATIONS):
            sentences[-1] = f"{sentences[-1]} {piece}"
        elif sentences and not re.search(r"[\w\u3400-\u9fff]", piece):
            sentences[-1] += piece  # stray punctuation ("?!") belongs to the sentence
        else:
            sentences.append(piece)
    return sentences


# English verbs that start a clause whose subject was dropped: "… and work at SAP".
_EN_CARRY_VERBS = (
    r"work|live|like|love|hate|prefer|enjoy|moved|study|dislike|have|use|need|want|am|was"
    r"|never|always|usually|also|can't|don't|do|plan|play|speak"
)
_CLAUSE_SPLIT_RE = re.compile(
    r"[，,]\s*"
    r"|\s+(?:but|and|so|while|whereas)\s+(?=(?:i|i'm|i've|i'd|i'll|my|we|we're|we've)\b)"
    rf"|\s+(?:and|but)\s+(?=(?:also\s+|still\s+)?(?:{_EN_CARRY_VERBS})\b)"
    r"|(?:但是|但|不过|可是|而且|并且)(?=我|不|也|更|还|最|却)",
    re.IGNORECASE,
)
_EN_FILLER_RE = re.compile(
    r"^(?:(?:well|so|oh|ok|okay|also|and|but|btw|by\s+the\s+way|actually|honestly|basically"
    r"|anyway|anyways|um+|uh+|hmm+|yeah|fyi|just\s+so\s+you\s+know|for\s+the\s+record|plus"
    r"|p\.?s\.?|alright|right|oh\s+and|one\s+more\s+thing|in\s+fact|to\s+be\s+honest"
    r"|tbh|lol|i\s+think|i\s+guess|i\s+suppose|i\s+believe|maybe)\b[\s,:\-]*"
    r"|(?:please\s+)?(?:remember|note|keep\s+in\s+mind)(?:\s+that\b|\s*:)[\s,:\-]*)+",
    re.IGNORECASE,
)
_ZH_FILLER_RE = re.compile(
    r"^(?:嗯+|哦+|噢+|啊+|呃+|那个|这个|对了|另外|还有|其实|然后|所以|但是|但|不过|可是|而且|并且|好的"
    r"|好吧|顺便说一下|顺便说|顺便|话说|说实话|老实说|总之|反正|是的|对(?=[，,。！!\s])|嗯嗯|OK|ok|哈哈+|我觉得|我认为|我猜"
    r"|请记住|记住|请注意|注意)"
    r"[\s，,:：、]*"
)
_ZH_CARRY_START_RE = re.compile(
    r"^(?:在|住|是|喜欢|不喜欢|讨厌|叫|今年|有|习惯|偏好|偏爱|爱|来自|从事|做|负责|每天|每周|平时|一般"
    r"|不吃|不喝|不能|也|还|更|最|目前|现在|已经|刚|打算|计划|准备|明天|下周|决定|不|很|非常|特别|对)"
)
_EN_CARRY_START_RE = re.compile(rf"^(?:{_EN_CARRY_VERBS})\b", re.IGNORECASE)
_ZH_FIRST_PERSON_START_RE = re.compile(r"^(?:我们|我|咱们|本人)")
_EN_FIRST_PERSON_START_RE = re.compile(r"^(?:i|i'm|i've|i'd|i'll|we|we're|my)\b", re.IGNORECASE)


# A comma piece that is only a capitalised name or two continues the previous clause.
_EN_PLACE_TAIL_RE = re.compile(r"^(?!I\b)[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,2}[.!]?$")


def _strip_fillers(clause: str) -> str:
    previous = None
    clause = clause.strip()
    while previous != clause:
        previous = clause
        clause = _ZH_FILLER_RE.sub("", clause).strip()
        clause = _EN_FILLER_RE.sub("", clause).strip()
    return clause


def split_clauses(sentence: str) -> list[str]:
    """Clauses with fillers stripped and a dropped first-person subject restored."""
    clauses: list[str] = []
    first_person_zh = first_person_en = None
    for raw in _CLAUSE_SPLIT_RE.split(sentence):
        clause = _strip_fillers(raw)
        if not clause:
            continue
        if clauses and _EN_PLACE_TAIL_RE.match(clause):
            clauses[-1] = f"{clauses[-1]}, {clause}"  # "Austin, Texas" is one place
            continue
        zh_subject = _ZH_FIRST_PERSON_START_RE.match(clause)
        en_subject = _EN_FIRST_PERSON_START_RE.match(clause)
        if zh_subject:
            first_person_zh = "我们" if zh_subject.group(0) in ("我们", "咱们") else "我"
        elif en_subject:
            first_person_en = "We" if en_subject.group(0).lower().startswith("we") else "I"
        elif first_person_zh and _ZH_CARRY_START_RE.match(clause):
            clause = first_person_zh + clause
        elif first_person_en and _EN_CARRY_START_RE.match(clause):
            clause = f"{first_person_en} {clause}"
        elif first_person_en == "I" and re.match(r"^an?\s", clause, re.I):
            clause = f"I'm {clause}"  # apposition: "I'm Sarah, a teacher"
        clauses.append(clause)
    return clauses


# ------------------------------------------------------------------ small talk and questions

_SMALL_TALK_PHRASES = sorted(SMALL_TALK, key=len, reverse=True)  # longest first

_SMALL_TALK_RE = re.compile(
    r"^(?:[\W_]*(?:"
    + "|".join(re.escape(t) for t in _SMALL_TALK_PHRASES)
    # laughter and hesitation of any length, and emoji
    + r"|(?:ha)+h?|(?:he)+h?|(?:lo)+l|h+m+|u+m+|哈+|嗯+|呵+|嘿+|嘻+|啊+|哦+"
    + r"|[\U0001F300-\U0001FAFF\u2600-\u27BF])"
    + r")+[\W_]*$",
    re.IGNORECASE,
)


def is_small_talk(text: str) -> bool:
    """Greetings, thanks, acknowledgements and laughter, alone or strung together."""
    stripped = text.strip()
    if not stripped:
        return True
    # Small talk is short; the bound also keeps the regex's backtracking cheap.
    return len(stripped) <= 60 and _SMALL_TALK_RE.match(stripped) is not None


_EN_QUESTION_START_RE = re.compile(
    r"^(?:do|does|did|can|could|would|will|should|is|are|am|was|were|have|has|may|shall)"
    r"\s+(?:you|i|we|it|they|he|she|there|this|that|my|your)\b",
    re.IGNORECASE,
)
_ZH_QUESTION_RE = re.compile(
    r"(?:吗|么|呢|嘛)[啊呀]?[\s。.]*$|是不是|能不能|可不可以|要不要|有没有|会不会|对不对|好不好|行不行"
)
# A question can still ask for a setting: "can you reply in English?", "能不能用深色主题？"
REQUEST_RE = re.compile(
    r"^(?:can|could|would|will)\s+you\b|^please\b|\bplease\s*\??$|^(?:how|what)\s+about\b"
    r"|能不能|能否|可以|可不可以|麻烦|帮我|请|好不好|行不行|吧",
    re.IGNORECASE,
)


def is_question(sentence: str) -> bool:
    s = sentence.strip()
    return (
        s.endswith(("?", "？"))
        or _EN_QUESTION_START_RE.match(s) is not None
        or _ZH_QUESTION_RE.search(s) is not None
    )


# ------------------------------------------------------------------ third person

EN_ADVERBS = (
    r"really|also|always|usually|normally|often|never|rarely|seldom|still|just|only|actually"
    r"|generally|typically|mostly|sometimes|absolutely|definitely|totally|truly|genuinely"
    r"|especially|particularly|currently|now|recently|already|finally|kinda|totally|mainly"
    r"|strongly|much|even|do|does|kind\s+of|sort\s+of|very\s+much|tend\s+to"
)


def _conjugate(verb: str) -> str:
    """Third person singular of a present-tense verb; past tenses and modals unchanged."""
    low = verb.lower()
    special = {
        "have": "has",
        "do": "does",
        "go": "goes",
        "am": "is",
        "be": "is",
        "don't": "doesn't",
        "haven't": "hasn't",
        "aren't": "isn't",
    }
    if low in special:
        return special[low]
    if low in MODALS or low in IRREGULAR_PAST or not low.isalpha():
        return verb
    if low.endswith("ed") and not low.endswith("eed") and low not in ("embed", "shred", "wed"):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _subject_verb(subject: str, adverbs: str, verb: str) -> str:
    """ "I really like" -> "the user really likes"; "I do like" -> "the user does like"."""
    emphatic = re.search(r"\bdo\b", adverbs, re.I) is not None
    adverbs = re.sub(r"\bdo\b", "does", adverbs, flags=re.I)
    head = "the user " if subject.lower() == "i" else "the user's team "
    return head + adverbs + (verb if emphatic else _conjugate(verb))


_EN_PRONOUN_RULES: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"\bi\s+am\b|\bi'm\b|\bim\b(?=\s)", re.I), "the user is"),
    (re.compile(r"\bi\s+was\b", re.I), "the user was"),
    (re.compile(r"\bi've\b|\bive\b(?=\s)", re.I), "the user has"),
    (re.compile(r"\bi\s+(?:do\s+not|don't|dont)\b", re.I), "the user does not"),
    (re.compile(r"\bi\s+(?:did\s+not|didn't)\b", re.I), "the user did not"),
    (re.compile(r"\bi\s+(?:cannot|can't|can\s+not)\b", re.I), "the user cannot"),
    (re.compile(r"\bi'd\b", re.I), "the user would"),
    (re.compile(r"\bi'll\b", re.I), "the user will"),
    (re.compile(r"\bwe\s+are\b|\bwe're\b", re.I), "the user's team is"),
    (re.compile(r"\bwe've\b", re.I), "the user's team has"),
    (re.compile(r"\bwe'll\b", re.I), "the user's team will"),
    (re.compile(r"\bwe\s+(?:do\s+not|don't)\b", re.I), "the user's team does not"),
    (
        re.compile(rf"\b(i|we)\s+((?:(?:{EN_ADVERBS})\s+)*)([a-z]+(?:n't)?)(?![\w'])", re.I),
        lambda m: _subject_verb(m.group(1), m.group(2), m.group(3)),
    ),
    (re.compile(r"\bmy\b", re.I), "the user's"),
    (re.compile(r"\bour\b", re.I), "the user's"),
    (re.compile(r"\bmine\b", re.I), "the user's"),
    (re.compile(r"\bmyself\b", re.I), "the user"),
    (re.compile(r"\bme\b", re.I), "the user"),
    (re.compile(r"\bus\b"), "the user's team"),  # lowercase only: "US" is a country
)
_ZH_PRONOUN_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"我们|咱们"), "用户团队"),
    (re.compile(r"本人|我"), "用户"),
    (re.compile(r"您|你"), "助手"),
)
_TRAILING_EN_RE = re.compile(
    r"[\s,;:.!?…]*(?:\b(?:please|pls|thanks|thank\s+you|thx)\b[\s,.!]*)*$", re.I
)
_TRAILING_ZH_RE = re.compile(r"[吧啊呀哦哈嘛啦喔哟噢\s，,。.！!~～]+$")


def _finish(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text[:1].upper() + text[1:] if text else text


def third_person(clause: str) -> str:
    """The clause as a standalone statement about the user, in the clause's language."""
    if has_cjk(clause):
        text = _TRAILING_ZH_RE.sub("", clause.strip())
        for zh_pattern, zh_replacement in _ZH_PRONOUN_RULES:
            text = zh_pattern.sub(zh_replacement, text)
        return text
    text = _TRAILING_EN_RE.sub("", clause.strip())
    for pattern, replacement in _EN_PRONOUN_RULES:
        text = pattern.sub(replacement, text)
    text = re.sub(r"^the user(?='s\b|\b)", "User", text)
    if text.startswith("User "):
        # "User takes the user's coffee black" reads better with a pronoun.
        text = "User " + re.sub(r"\bthe user's(?! team)\b", "their", text[5:])
    return _finish(text)


def instruction_statement(clause: str) -> str:
    """A standing instruction phrased so it still reads right out of context."""
    if has_cjk(clause):
        text = third_person(clause)
        return text if text.startswith("用户") else f"用户要求：{text}"
    text = _TRAILING_EN_RE.sub("", clause.strip())
    text = re.sub(r"^please\s+", "", text, flags=re.I)
    for pattern, replacement in _EN_PRONOUN_RULES:
        text = pattern.sub(replacement, text)
    text = re.sub(r"\byour\b", "the assistant's", text, flags=re.I)
    text = re.sub(r"\byou\b", "the assistant", text, flags=re.I)
    if re.match(r"^the user\b", text):
        return _finish(re.sub(r"^the user", "User", text))
    return f"User instruction: {text[:1].lower() + text[1:]}"


def clean_value(value: str) -> str:
    """A captured name, place or thing without trailing chatter and punctuation."""
    value = re.split(
        r"\s+(?:and|but|because|since|though|although|so|which|who|where|when|as\s+well"
        r"|by\s+the\s+way|btw|right\s+now|these\s+days|nowadays|anymore|for\s+now|too)\b"
        r"|[;:()（）；：]|因为|所以|但是|不过|而且",
        value,
        maxsplit=1,
        flags=re.I,
    )[0]
    value = _TRAILING_ZH_RE.sub("", value.strip()) if has_cjk(value) else value
    value = re.sub(r"[\s.!?…。！？~～\"'“”‘’]+$", "", value)
    return re.sub(r"^[\s\"'“”‘’]+", "", value).strip()


def article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"
