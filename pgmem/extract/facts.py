"""What fact extraction returns, and the normalisation both extractors share.

A :class:`Fact` is one standalone statement for ``pgmem.remember``. Its optional
subject-predicate-object ``triple`` names a *slot*: the database treats two facts with
the same subject and predicate but different objects as a contradiction and supersedes
the older one. So a predicate must only be shared by facts that exclude each other:

- single-valued attributes use a stable snake_case English predicate from
  :data:`STABLE_PREDICATES` (``theme``, ``employer``…) with a canonical lowercase
  English object where the value is an enumeration (``dark``, ``metric``,
  ``english``), so "深色" and "dark mode" land on the same value;
- liking or disliking one thing uses ``opinion_of:<thing>`` with object ``likes`` or
  ``dislikes``: liking cats does not supersede liking dogs, hating coffee does
  supersede liking coffee;
- picking a tool or option for a purpose uses ``choice_for:<purpose>``.

Rules and the LLM prompt both follow this, and LLM triples are passed through
:func:`normalize_triple` so that the two sources agree.
"""

# Chinese text and curly quotes appear on purpose.

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = [
    "KINDS",
    "STABLE_PREDICATES",
    "USER",
    "ExtractionResult",
    "Fact",
    "Kind",
    "Message",
    "Rejected",
    "Source",
    "Triple",
    "as_messages",
    "content_key",
    "dedupe",
    "has_cjk",
    "merge_sources",
    "normalize_predicate",
    "normalize_triple",
]

Kind: TypeAlias = Literal["preference", "semantic", "episodic", "procedural"]
Source: TypeAlias = Literal["rule", "llm"]
Triple: TypeAlias = tuple[str, str, str]
Message: TypeAlias = dict[str, str]

# The memory kinds (pgmem.kinds() in sql/functions/08_kinds.sql; tests/test_kinds.py
# holds this tuple equal to it) that extraction produces; "manual"/"sql" sources and
# other kinds are written by callers directly.
KINDS: tuple[Kind, ...] = ("preference", "semantic", "episodic", "procedural")
# The triple subject for facts about the person talking to the agent.
USER = "user"

# Single-valued slots and the canonical objects of the enumerated ones. The LLM prompt
# lists them, and rules emit exactly these, so a change in either source supersedes.
STABLE_PREDICATES: Mapping[str, str] = {
    "name": "full or given name",
    "preferred_name": "what the user wants to be called",
    "surname": "family name",
    "age": "age in years",
    "birthday": "date of birth",
    "lives_in": "city or place the user lives in now",
    "work_city": "city the user works in",
    "hometown": "where the user comes from",
    "nationality": "nationality",
    "employer": "company or organisation the user works for",
    "job_title": "job title or occupation",
    "field": "industry or field of work",
    "email": "email address",
    "phone": "phone number",
    "timezone": "time zone",
    "diet": "vegetarian | vegan | pescatarian | halal | kosher | gluten_free",
    "language": "reply language, lowercase English name (english, chinese, …)",
    "theme": "dark | light | system",
    "units": "metric | imperial",
    "temperature_unit": "celsius | fahrenheit",
    "tone": "formal | casual | friendly | professional | humorous",
    "answer_length": "short | detailed",
    "format": "markdown | plain_text | bullet_points | table",
    "emoji": "yes | no",
}

# Spellings of a slot that an LLM (or a user's "my X is Y") produces, mapped to the
# stable predicate. Keys are already normalised (casefolded, spaces as underscores).
_PREDICATE_ALIASES: Mapping[str, str] = {
    "first_name": "name",
    "full_name": "name",
    "real_name": "name",
    "名字": "name",
    "姓名": "name",
    "全名": "name",
    "nickname": "preferred_name",
    "call_me": "preferred_name",
    "preferred_name_to_be_called": "preferred_name",
    "昵称": "preferred_name",
    "last_name": "surname",
    "family_name": "surname",
    "姓": "surname",
    "年龄": "age",
    "date_of_birth": "birthday",
    "birth_date": "birthday",
    "生日": "birthday",
    "city": "lives_in",
    "location": "lives_in",
    "lives": "lives_in",
    "lives_at": "lives_in",
    "live_in": "lives_in",
    "residence": "lives_in",
    "home_city": "lives_in",
    "current_city": "lives_in",
    "居住地": "lives_in",
    "城市": "lives_in",
    "所在城市": "lives_in",
    "home_town": "hometown",
    "from": "hometown",
    "origin": "hometown",
    "is_from": "hometown",
    "birthplace": "hometown",
    "老家": "hometown",
    "家乡": "hometown",
    "籍贯": "hometown",
    "国籍": "nationality",
    "company": "employer",
    "works_at": "employer",
    "works_for": "employer",
    "work_at": "employer",
    "workplace": "employer",
    "organization": "employer",
    "organisation": "employer",
    "公司": "employer",
    "单位": "employer",
    "job": "job_title",
    "title": "job_title",
    "occupation": "job_title",
    "profession": "job_title",
    "role": "job_title",
    "position": "job_title",
    "works_as": "job_title",
    "工作": "job_title",
    "职业": "job_title",
    "职位": "job_title",
    "岗位": "job_title",
    "industry": "field",
    "行业": "field",
    "email_address": "email",
    "e-mail": "email",
    "mail": "email",
    "邮箱": "email",
    "电子邮件": "email",
    "邮件地址": "email",
    "phone_number": "phone",
    "mobile": "phone",
    "cell": "phone",
    "电话": "phone",
    "手机": "phone",
    "手机号": "phone",
    "电话号码": "phone",
    "手机号码": "phone",
    "time_zone": "timezone",
    "时区": "timezone",
    "dietary_preference": "diet",
    "饮食": "diet",
    "preferred_language": "language",
    "reply_language": "language",
    "response_language": "language",
    "answer_language": "language",
    "communication_language": "language",
    "语言": "language",
    "ui_theme": "theme",
    "preferred_theme": "theme",
    "color_scheme": "theme",
    "colour_scheme": "theme",
    "appearance": "theme",
    "display_mode": "theme",
    "主题": "theme",
    "unit_system": "units",
    "measurement_units": "units",
    "preferred_units": "units",
    "单位制": "units",
    "temperature_units": "temperature_unit",
    "temperature_scale": "temperature_unit",
    "tone_of_voice": "tone",
    "writing_style": "tone",
    "communication_style": "tone",
    "语气": "tone",
    "response_length": "answer_length",
    "reply_length": "answer_length",
    "answer_style": "answer_length",
    "verbosity": "answer_length",
    "回答长度": "answer_length",
    "output_format": "format",
    "response_format": "format",
    "格式": "format",
    "emojis": "emoji",
    "use_emoji": "emoji",
    "表情": "emoji",
}

_USER_ALIASES = frozenset(
    {"user", "the user", "the_user", "i", "me", "myself", "用户", "我", "本人", "该用户"}
)

_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True, slots=True)
class Fact:
    """One statement to remember about the user."""

    content: str
    kind: Kind
    importance: float  # 0..1; the database scales recall by it
    triple: Triple | None = None
    source: Source = "rule"
    # How sure the source is, 0..1: an LLM's self-rating; None for the database's
    # default by source (settings.confidence_rule, confidence_llm).
    confidence: float | None = None
    # The statement reports something that already happened ("this weekend we visited
    # grandma", "我周末去钓鱼了"): a date in it says when, never a day it is waiting for,
    # even when the date's span reaches past the turn (this weekend, 今年). False when
    # the source does not say, so such a fact is read as before.
    past: bool = False

    def __post_init__(self) -> None:
        # Facts cross into SQL, where CHECK constraints would reject these anyway;
        # failing here points at the extractor instead of the database.
        if not self.content.strip():
            raise ValueError("a fact needs content")
        if self.kind not in KINDS:
            raise ValueError(f"unknown memory kind {self.kind!r}; expected one of {KINDS}")
        if not 0.0 <= self.importance <= 1.0:
            raise ValueError(f"importance must be within 0..1, not {self.importance}")
        if self.triple is not None and (
            len(self.triple) != 3 or not all(isinstance(p, str) and p for p in self.triple)
        ):
            raise ValueError(f"a triple is three non-empty strings, not {self.triple!r}")
        if self.confidence is not None and not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be within 0..1, not {self.confidence}")
        if not isinstance(self.past, bool):
            raise ValueError(f"past is True or False, not {self.past!r}")
        if self.source not in ("rule", "llm"):
            raise ValueError(f"source must be 'rule' or 'llm', not {self.source!r}")


@dataclass(frozen=True, slots=True)
class Rejected:
    """Text refused by the safety filter; the caller records it as a rejected event."""

    text: str
    reason: str
    message_index: int | None = None  # position in the input; None for LLM output


@dataclass(slots=True)
class ExtractionResult:
    facts: list[Fact] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    # Set when an LLM was asked but its answer could not be used, so the facts are the
    # rules' alone; the worker logs it with the batch.
    fallback_reason: str | None = None


def has_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None


def as_messages(messages_or_text: str | Iterable[Mapping[str, object] | str]) -> list[Message]:
    """Plain text is one user message; a missing role means the user."""
    if isinstance(messages_or_text, str):
        return [{"role": "user", "content": messages_or_text}]
    messages: list[Message] = []
    for item in messages_or_text:
        if isinstance(item, str):
            messages.append({"role": "user", "content": item})
            continue
        if not isinstance(item, Mapping):
            raise TypeError(f"a message is a mapping with role and content, not {item!r}")
        content = item.get("content")
        role = str(item.get("role") or "user").strip().lower()
        messages.append({"role": role, "content": "" if content is None else str(content)})
    return messages


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def normalize_predicate(predicate: str) -> str:
    """Casefolded snake_case, with known spellings mapped to :data:`STABLE_PREDICATES`."""
    folded = _fold(predicate)
    prefix, sep, rest = folded.partition(":")
    if sep and prefix.strip() in ("opinion_of", "choice_for"):
        rest = re.sub(r"\s+", " ", rest).strip()
        return f"{prefix.strip()}:{rest}"
    key = re.sub(r"['’]s\b", "", folded)
    key = re.sub(r"[\s\-]+", "_", key).strip("_")
    return _PREDICATE_ALIASES.get(key, key)


def normalize_triple(triple: Sequence[object] | None) -> Triple | None:
    if triple is None or len(triple) != 3:
        return None
    parts = [str(p).strip() if p is not None else "" for p in triple]
    if not all(parts):
        return None
    subject, predicate, obj = parts
    if _fold(subject) in _USER_ALIASES:
        subject = USER
    return (subject, normalize_predicate(predicate), obj)


def triple_key(triple: Triple | None) -> tuple[str, str, str] | None:
    if triple is None:
        return None
    subject, predicate, obj = triple
    return (_fold(subject), normalize_predicate(predicate), _fold(obj))


_KEY_PREFIX_RE = re.compile(r"^(?:the\s+user(?:'s)?|user(?:'s)?|用户的?)\s*")
_KEY_DROP_RE = re.compile(r"[^\w\u3400-\u9fff]+")


def content_key(content: str) -> str:
    """Content compared for duplicates: case, spacing, punctuation and a leading
    "User"/"用户" do not count, since the two extractors phrase the subject differently."""
    folded = _KEY_PREFIX_RE.sub("", _fold(content))
    return _KEY_DROP_RE.sub("", folded)


def dedupe(facts: Iterable[Fact]) -> list[Fact]:
    """Facts in order, without repeats from one extractor.

    A fact with a triple repeats only if its slot (subject, predicate) currently holds
    the same object: "dark", "light", "dark" keeps all three, since each changes the
    slot and the database must see them in order. A fact without a triple repeats if
    its normalised content was seen before.
    """
    slots: dict[tuple[str, str], str] = {}
    seen_content: set[str] = set()
    kept: list[Fact] = []
    for fact in facts:
        key = triple_key(fact.triple)
        content = content_key(fact.content)
        if key is not None and (key[0], key[1]) in slots:
            duplicate = slots[(key[0], key[1])] == key[2]
        else:
            duplicate = content in seen_content
        if duplicate:
            continue
        if key is not None:
            slots[(key[0], key[1])] = key[2]
        seen_content.add(content)
        kept.append(fact)
    return kept


def merge_sources(rule_facts: Sequence[Fact], llm_facts: Iterable[Fact]) -> list[Fact]:
    """Rule facts, then the LLM facts that add something.

    An LLM fact is dropped when its normalised content or its triple matches a rule
    fact, and also when a rule fact already fills its slot with another object: the
    rules read that slot's statements in message order, and an LLM value appended
    after them could be the older one and wrongly supersede the newer.
    """
    rule_content = {content_key(f.content) for f in rule_facts}
    rule_slots = {key[:2] for f in rule_facts if (key := triple_key(f.triple)) is not None}
    extra: list[Fact] = []
    for fact in dedupe(llm_facts):
        key = triple_key(fact.triple)
        if content_key(fact.content) in rule_content or (key is not None and key[:2] in rule_slots):
            continue
        extra.append(fact)
    return [*rule_facts, *extra]
