"""Text handling shared by the rules: sentences and clauses, small talk, questions,
and rewriting a first-person clause into a standalone statement about the user."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from pgmem.extract.facts import has_cjk
from pgmem.extract.lexicon import (
    FUTURE_TIME_RE,
    IRREGULAR_PAST,
    MODALS,
    PAST_PARTICIPLES,
    PAST_TIME_RE,
    RELATIONS_ZH,
    SMALL_TALK,
    words,
)

__all__ = [
    "EN_ADVERBS",
    "REQUEST_RE",
    "Clause",
    "article",
    "as_first_person",
    "clean_value",
    "first_person_verb",
    "instruction_statement",
    "is_fragment",
    "is_question",
    "is_small_talk",
    "split_clauses",
    "split_marked_clauses",
    "split_sentences",
    "tense",
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
    r"^(?:嗯+|哦+|噢+|啊+|呃+|(?:那个|这个)(?=[，,\s…]|$)|对了|另外|还有|其实|然后|所以|但是|但|不过|可是|而且|并且|好的"
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
# "我有一只猫，叫咪咪", "看了一部电影，叫…": the name belongs to what the clause before
# brought in (a number and a measure word), not to the user.
_ZH_INTRODUCES_RE = re.compile(
    r"(?:[一两二三四五六七八九十几]|\d)+(?:个|只|条|位|名|辆|部|本|家|匹|头|盆|套|首|篇|款|台|间)"
)
# "Sarah, my roommate, is…": the apposition is part of the subject, not a clause.
_EN_APPOSITION_RE = re.compile(
    r"\b(?P<name>[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?),\s+(?P<what>(?:my|our|his|her|their)\s+[^,]{1,30}?),\s+"
)


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


class Clause(str):
    """A clause, and what of it was said: a first-person subject may have been carried
    over from the clause before ("…，在腾讯工作" read as "我在腾讯工作")."""

    said: str = ""

    @property
    def carried(self) -> bool:
        return self.said != str(self)


def _clause(text: str, said: str | None = None) -> Clause:
    clause = Clause(text)
    clause.said = text if said is None else said
    return clause


def split_marked_clauses(sentence: str) -> list[Clause]:
    """Clauses with fillers stripped, "the user"/"用户" as subject read as the first
    person, and a dropped first-person subject restored (and marked ``carried``)."""
    clauses: list[Clause] = []
    first_person_zh = first_person_en = None
    sentence = _EN_APPOSITION_RE.sub(r"\g<name> (\g<what>) ", as_first_person(sentence))
    for raw in _CLAUSE_SPLIT_RE.split(sentence):
        clause = as_first_person(_strip_fillers(raw))
        if not clause:
            continue
        if clauses and _EN_PLACE_TAIL_RE.match(clause):
            last = clauses[-1]  # "Austin, Texas" is one place
            clauses[-1] = _clause(f"{last}, {clause}", f"{last.said}, {clause}")
            continue
        zh_subject = _ZH_FIRST_PERSON_START_RE.match(clause)
        en_subject = _EN_FIRST_PERSON_START_RE.match(clause)
        if zh_subject:
            first_person_zh = "我们" if zh_subject.group(0) in ("我们", "咱们") else "我"
        elif en_subject:
            first_person_en = "We" if en_subject.group(0).lower().startswith("we") else "I"
        elif (
            first_person_zh
            and _ZH_CARRY_START_RE.match(clause)
            and not (clause.startswith("叫") and clauses and _ZH_INTRODUCES_RE.search(clauses[-1]))
        ):
            clauses.append(_clause(first_person_zh + clause, clause))
            continue
        elif first_person_en and _EN_CARRY_START_RE.match(clause):
            clauses.append(_clause(f"{first_person_en} {clause}", clause))
            continue
        elif first_person_en == "I" and re.match(r"^an?\s", clause, re.I):
            clauses.append(_clause(f"I'm {clause}", clause))  # apposition: "I'm Sarah, a teacher"
            continue
        clauses.append(_clause(clause))
    return clauses


def split_clauses(sentence: str) -> list[str]:
    """Clauses with fillers stripped and a dropped first-person subject restored."""
    return [str(c) for c in split_marked_clauses(sentence)]


# ------------------------------------------------------------------ "the user" as subject

# "user experience", "用户体验": the word names a thing, not the person.
_EN_USER_NOUN_RE = re.compile(
    r"^(?:experience|interface|guide|manual|data|accounts?|base|stor(?:y|ies)|research|testing"
    r"|feedback|agent|id|name|input|session|settings|profile|table|model|group|count|growth"
    r"|flow|journey|needs|story|role|permissions?|ids?)\b",
    re.IGNORECASE,
)
_EN_USER_SUBJECT_RE = re.compile(
    r"^(?:the\s+)?user(?P<poss>'s|’s)?\s+(?P<rest>\S.*)$", re.IGNORECASE
)
_ZH_USER_SUBJECT_RE = re.compile(
    r"^(?:该|这位|这个)?用户(?P<poss>的)?(?![名体界数量群端协反需画增留隐信手指中账们])"
)
_EN_BASE_FORMS = {"is": "am", "has": "have", "does": "do", "doesn't": "don't", "isn't": "am not"}
_EN_BASE_FORMS |= {"hasn't": "haven't", "was": "was", "wasn't": "wasn't"}
_EN_CARRY_BASES = words(
    "work live like love hate prefer enjoy study have use need want plan play speak own drive"
)


_EN_I_THIRD_PERSON_RE = re.compile(
    r"^I\s+(?:[a-z]+ly\s+|now\s+|still\s+|also\s+)*(?P<verb>[a-z]+s)\b"
)


def first_person_verb(verb: str) -> str:
    """The first-person form of a third-person verb: "likes" -> "like", "is" -> "am"."""
    low = verb.lower()
    if low in _EN_BASE_FORMS:
        return _EN_BASE_FORMS[low]
    if low in MODALS or not low.endswith("s") or low.endswith("ss") or len(low) < 3:
        return verb
    if low.endswith("ies") and len(low) > 4:
        return verb[:-3] + "y"
    if re.search(r"(?:sh|ch|x|z|ss|o)es$", low):
        return verb[:-2]
    return verb[:-1]


def as_first_person(clause: str) -> str:
    """A clause about "the user" ("The user likes dark mode", "用户每天骑车上班") as the
    user would say it, so that every rule reads both alike."""
    if has_cjk(clause):
        m = _ZH_USER_SUBJECT_RE.match(clause)
        if not m or len(clause) <= m.end():
            return clause
        return ("我的" if m.group("poss") else "我") + clause[m.end() :]
    said_i = _EN_I_THIRD_PERSON_RE.match(clause)
    if said_i and first_person_verb(said_i.group("verb")).lower() in _EN_CARRY_BASES:
        # "I now prefers light mode": the verb agrees with "I" as the rules expect.
        verb = first_person_verb(said_i.group("verb"))
        return clause[: said_i.start("verb")] + verb + clause[said_i.end("verb") :]
    m = _EN_USER_SUBJECT_RE.match(clause)
    if not m or (not m.group("poss") and _EN_USER_NOUN_RE.match(m.group("rest"))):
        return clause
    rest = m.group("rest")
    if m.group("poss"):
        return f"My {rest}"
    head, _, tail = rest.partition(" ")
    adverbs = ""
    while head.lower() in _SINGLE_ADVERBS and tail:
        adverbs += head + " "
        head, _, tail = tail.partition(" ")
    # "The user lives in Paris and works at SAP": the second verb has the same subject.
    tail = re.sub(
        r"\b(and|but|or)\s+([a-z]+)\b",
        lambda a: (
            f"{a.group(1)} {first_person_verb(a.group(2))}"
            if first_person_verb(a.group(2)).lower() in _EN_CARRY_BASES
            else a.group(0)
        ),
        tail,
    )
    return f"I {adverbs}{first_person_verb(head)} {tail}".strip()


# ------------------------------------------------------------------ tense

_EN_FUTURE_GRAMMAR_RE = re.compile(
    r"\b(?:will|shall|won't|gonna|about\s+to|plan(?:ning)?\s+to|intend(?:ing)?\s+to"
    r"|going\s+to\s+(?!(?:the|a|an|my|our|his|her|their|school|work|bed|church|class)\b))\b|'ll\b",
    re.IGNORECASE,
)
_ZH_FUTURE_GRAMMAR_RE = re.compile(
    r"(?<![需重主只想不])要(?![求是紧不])|(?<![开机社学体约聚晚宴舞大不])会(?![议员计话])|将(?:要|会)"
    r"|打算|计划|准备|快要|就要|即将|马上"
)
# Aspect: 了 and 过 after a verb, 已经, 刚; not 为了, 了解, 不过, 过敏, 过几天…
_ZH_PAST_ASPECT_RE = re.compile(
    r"[\u4e00-\u9fff](?<![为除算])了(?![解不])|[\u4e00-\u9fff](?<![不经超难通度])过(?![来去年敏期几日])"
    r"|已经|刚刚|刚(?![才好])|曾"
)
_EN_SUBJECT_WORDS = words("i we they he she you it user")
_EN_POSSESSIVES = words("my our his her their")
# Present forms that look like a past one ("I read every night", "we set goals").
_EN_AMBIGUOUS_PAST = words("read set put let cut hit cost bet spread shut")


def _en_past_verb(tokens: list[str], j: int) -> bool:
    """Whether the verb at ``tokens[j]`` (after a subject and any adverbs) is past."""
    while j < len(tokens) and tokens[j].lower() in _SINGLE_ADVERBS:
        j += 1
    if j >= len(tokens):
        return False
    verb = tokens[j].lower()
    after = [t.lower() for t in tokens[j + 1 : j + 3]]
    if verb in ("was", "were", "had", "did", "didn't", "wasn't", "weren't", "hadn't"):
        return True
    if verb in ("have", "has", "haven't", "hasn't") and after:
        participle = after[0]
        ongoing = participle == "been" and len(after) > 1 and after[1].endswith("ing")
        return not ongoing and (participle in PAST_PARTICIPLES or _regular_past(participle))
    if verb in IRREGULAR_PAST and verb not in _EN_AMBIGUOUS_PAST:
        return True
    return _regular_past(verb)


def _regular_past(word: str) -> bool:
    return len(word) > 3 and word.endswith("ed") and not word.endswith("eed")


# "I've lived here for ten years", "since 2019": a perfect that still holds.
_EN_ONGOING_RE = re.compile(
    r"\b(?:since|for\s+(?:(?:the\s+)?(?:last|past)\s+)?(?:\w+\s+)?(?:years?|months?|weeks?|days?"
    r"|ages|a\s+while|long|decades?))\b",
    re.IGNORECASE,
)


def _en_is_past(clause: str) -> bool:
    if _EN_ONGOING_RE.search(clause) and re.search(r"\b(?:have|has)\b|['’]ve\b", clause, re.I):
        return False
    tokens = re.findall(r"[A-Za-z]+(?:['’][a-z]+)?", clause)
    for i, token in enumerate(tokens):
        low = token.lower().replace("’", "'")
        base, _, contraction = low.partition("'")
        if low in _EN_POSSESSIVES:
            if _en_past_verb(tokens, i + 2):
                return True  # "my sister moved…"
        elif base in _EN_SUBJECT_WORDS or (token[:1].isupper() and low not in _SINGLE_ADVERBS):
            if contraction == "ve":
                tokens_after = ["have", *tokens[i + 1 :]]
                if _en_past_verb(tokens_after, 0):
                    return True
            elif contraction == "d" and i + 1 < len(tokens):
                nxt = tokens[i + 1].lower()
                if (nxt in PAST_PARTICIPLES and nxt not in IRREGULAR_PAST) or _regular_past(nxt):
                    return True  # "I'd finished", not "I'd like"
            elif not contraction and _en_past_verb(tokens, i + 1):
                return True
    return False


def tense(clause: str) -> Literal["past", "future"] | None:
    """Whether the clause tells of something already past or still to come; None for
    the present, or when it says both ("yesterday I booked a flight for next Friday")."""
    past_time = PAST_TIME_RE.search(clause) is not None
    future_time = FUTURE_TIME_RE.search(clause) is not None
    if past_time or future_time:
        return None if past_time and future_time else ("past" if past_time else "future")
    if has_cjk(clause):
        if _ZH_FUTURE_GRAMMAR_RE.search(clause):
            return "future"
        return "past" if _ZH_PAST_ASPECT_RE.search(clause) else None
    if _EN_FUTURE_GRAMMAR_RE.search(clause):
        return "future"
    return "past" if _en_is_past(clause) else None


# ------------------------------------------------------------------ fragments

# What a triple's object must not start with: a particle or aspect marker (住着…, 了…),
# a measure word without its number (个律师), a degree adverb (挺舒服的).
_ZH_FRAGMENT_RE = re.compile(
    r"^(?:[着了过的得地所把被给也都还就才又再没别个]|很|挺|太|更|最|非常|特别|比较|有点|相当|十分|超级?"
    r"|蛮|真|不太|不是很|不)|的$"
)
_EN_FRAGMENT_RE = re.compile(
    r"^(?:very|really|so|too|quite|pretty|super|extremely|kind\s+of|sort\s+of|a\s+bit|a\s+little"
    r"|not|always|never|still|also|just|to|of|for|with|at|in|on|from|by|about|into|and|or|but"
    r"|than|that|which|who)\b",
    re.IGNORECASE,
)
_EN_ADJECTIVES = words(
    """new old big small good bad great nice fine awesome amazing terrible awful horrible cool
    fun boring busy happy sad hard easy cheap expensive young little large tiny huge long short
    slow fast quick nice lovely pretty ugly smart stupid weird strange funny crazy perfect
    broken dead alive sick tired ok okay free full empty open closed ready late early far near
    important interesting annoying exciting stressful hot cold warm cute sweet strict kind mean
    rich poor loud quiet safe dangerous clean dirty healthy fresh"""
)
_EN_ADJECTIVE_SUFFIX_RE = re.compile(r"^[a-z]{3,}(?:ful|ous|less|ish|able|ible)$")


def is_fragment(value: str, *, one_character: bool = False) -> bool:
    """Whether ``value`` is not a whole noun phrase, so it must not be a triple's object:
    one character (unless ``one_character``: "猫" is a whole thing to like), a piece
    starting with a particle or aspect marker, an adjective phrase ("挺舒服的", "boring")."""
    value = value.strip()
    if not one_character and len(value) < 2 and not value.isdigit():
        return True
    if has_cjk(value):
        return _ZH_FRAGMENT_RE.search(value) is not None
    if not re.search(r"\w", value):
        return True
    if _EN_FRAGMENT_RE.match(value):
        return True
    low = value.lower()
    return low in _EN_ADJECTIVES or _EN_ADJECTIVE_SUFFIX_RE.match(low) is not None


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
_SINGLE_ADVERBS = frozenset(a for a in EN_ADVERBS.split("|") if a.isalpha()) - {"do", "does"}


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
# "We" is the user's team only where the clause is about work; elsewhere ("we adopted
# a beagle", "我们去了西湖") it is the user with people the fact need not name.
_EN_WORK_RE = re.compile(
    r"\b(?:team|company|startup|project|product|app|service|codebase|code|repo|stack|backend"
    r"|frontend|database|db|api|server|deploy\w*|releas\w*|ship(?:s|ped|ping)?|launch\w*|sprint"
    r"|standup|customers?|clients?|users|roadmap|framework|library|migrat\w*|production|staging"
    r"|pipeline|office|department|engineering|kubernetes|docker|cloud|aws|gcp|azure|vendor"
    r"|budget|quarter|okrs?|postgres\w*|mysql|react|typescript|vercel|heroku|ci)\b",
    re.IGNORECASE,
)
_ZH_WORK_RE = re.compile(
    r"公司|团队|项目|产品|上线|发布|代码|部署|数据库|客户|开会|需求|部门|技术|架构|框架|服务器|版本|迭代"
    r"|前端|后端|接口|测试|运维|系统|方案"
)
_EN_WE_AS_I: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bwe\s+are\b|\bwe're\b", re.I), "I am"),
    (re.compile(r"\bwe\s+were\b", re.I), "I was"),
    (re.compile(r"\bwe've\b", re.I), "I've"),
    (re.compile(r"\bwe'll\b", re.I), "I'll"),
    (re.compile(r"\bwe'd\b", re.I), "I'd"),
    (re.compile(r"\bwe\b", re.I), "I"),
    (re.compile(r"\bus\b"), "me"),
    (re.compile(r"\bourselves\b", re.I), "myself"),
)
# 我们家, 我们公司: the user's household or company, not "用户团队家".
_ZH_OUR_GROUP_RE = re.compile(
    r"(?:我们|咱们)(?=公司|团队|部门|小组|组里|项目组|学校|班|单位|老板|领导)"
)
_ZH_WE_RE = re.compile(r"我们|咱们")
_ZH_MY_RELATION_RE = re.compile(
    "我(?=(?:" + "|".join(sorted(RELATIONS_ZH - {"公司", "团队"}, key=len, reverse=True)) + "))"
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
        text = _ZH_OUR_GROUP_RE.sub("我的", text)
        text = _ZH_MY_RELATION_RE.sub("我的", text)  # 接我妈 → 接用户的妈
        if not _ZH_WORK_RE.search(text):
            text = _ZH_WE_RE.sub("我", text)
        for zh_pattern, zh_replacement in _ZH_PRONOUN_RULES:
            text = zh_pattern.sub(zh_replacement, text)
        return text
    text = _TRAILING_EN_RE.sub("", clause.strip())
    if not _EN_WORK_RE.search(text):
        for we, as_i in _EN_WE_AS_I:
            text = we.sub(as_i, text)
    for pattern, replacement in _EN_PRONOUN_RULES:
        text = pattern.sub(replacement, text)
    text = re.sub(r"^the user(?='s\b|\b)", "User", text)
    first = re.search(r"\b(?:the user|User)\b(?!'s)", text)
    if first:
        # "User takes the user's coffee black" reads better with a pronoun.
        head, tail = text[: first.end()], text[first.end() :]
        text = head + re.sub(r"\bthe user's(?! team)\b", "their", tail)
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
