"""Short answers to the assistant's question, stored as the fact they complete.

"German" alone says nothing; after "Which language should the report be in?" it says
"User wants the report in German". :func:`answer_fact` reads a user's short reply
against the question the assistant asked just before it: a few question shapes are
rewritten into a statement (English and Chinese), and any other question still gives a
fact that keeps both ("User's answer to "How many nights?": 5"), so the answer is never
lost for want of a rule.
"""

from __future__ import annotations

import re

from pgmem.extract.facts import USER, Fact, Kind, has_cjk

__all__ = ["answer_fact", "is_short_answer", "last_question"]

# A reply this short is an answer, not a statement of its own.
_MAX_WORDS = 6
_MAX_CJK_CHARS = 16

_QUESTION_RE = re.compile(r"[^.!?。！？\n]*[?？]")
_TRAILING_RE = re.compile(r"[\s.!。！?？,，]+$")

# "Which language should the report be in?", "What format do you want the summary in?"
_WANT_RE = re.compile(
    r"^(?:and\s+|so\s+)?(?:which|what)\s+(?P<noun>[a-z][a-z -]{0,30}?)\s+"
    r"(?:should|shall|will|would|do\s+you\s+want|would\s+you\s+like)\s+"
    r"(?:i\s+(?:write|make|send|put)\s+)?(?P<det>the|your|this|that|my)\s+"
    r"(?P<thing>[a-z][a-z -]{0,30}?)"
    r"(?:\s+to)?(?:\s+be)?(?:\s+(?P<prep>in|on|at|for|to|by))?$",
    re.I,
)
# "What is your budget?", "What's your favourite colour?"
_YOUR_RE = re.compile(
    r"^(?:and\s+|so\s+)?what(?:'s|’s|\s+is|\s+are)\s+your\s+(?P<thing>[a-z][a-z -]{0,40})$", re.I
)
# "Do you prefer tea or coffee?", "Would you like the window or the aisle?"
_CHOICE_RE = re.compile(
    r"^(?:and\s+|so\s+)?(?:do|would)\s+you\s+(?:prefer|like|want)\s+(?P<a>.+?)\s+or\s+(?P<b>.+)$",
    re.I,
)
# 你/您 as the subject of the question: the user.
_YOU_ZH_RE = re.compile(r"你们|您|你")
# The asked-for slot: a question word, with the measure word or noun it asks about.
_SLOT_ZH_RE = re.compile(
    r"哪里|哪儿|(?:什么|哪种|哪个|哪一个|哪些|哪家|哪位)(?:样的|样)?[\u3400-\u9fff]{0,2}|多少|几|谁"
)
_SLOT_PLACE_ZH_RE = re.compile(r"哪里|哪儿")
_PARTICLES_ZH_RE = re.compile(r"[呢吗吧啊呀]+$")
# Politeness around an answer is not part of it: "PDF, please", "德语吧".
_POLITE_RE = re.compile(
    r"^(?:(?:um+|uh|oh|well|ok(?:ay)?|sure|yes|yeah),?\s+)+|[,\s]*\b(?:please|thanks|thank\s+you)\b[.!]*$"
    r"|^请|[吧呀啊哦呢]+$",
    re.I,
)


def last_question(text: str) -> str | None:
    """The last question an assistant turn asks, or None."""
    questions = _QUESTION_RE.findall(text)
    return questions[-1].strip() if questions else None


def is_short_answer(text: str) -> bool:
    """Whether a reply is short enough to be an answer rather than a statement."""
    body = _TRAILING_RE.sub("", text.strip())
    if not body or body.endswith(("?", "？")):
        return False
    if has_cjk(body):
        return len(re.sub(r"\s", "", body)) <= _MAX_CJK_CHARS
    return len(body.split()) <= _MAX_WORDS


def _key(text: str) -> str:
    return re.sub(r"[^0-9a-z\u3400-\u9fff]+", "_", text.casefold()).strip("_")


def answer_fact(question: str, answer: str) -> tuple[Fact, bool]:
    """The fact a short answer completes, and whether a question shape was recognised
    (False: the generic "answer to" fact)."""
    asked = _TRAILING_RE.sub("", question.strip())
    said = _TRAILING_RE.sub("", _POLITE_RE.sub("", _TRAILING_RE.sub("", answer.strip())))
    if has_cjk(asked):
        return _answer_zh(asked, said)
    return _answer_en(asked, said)


def _answer_en(asked: str, said: str) -> tuple[Fact, bool]:
    want = _WANT_RE.match(asked)
    if want:
        thing = want["thing"].strip()
        prep = want["prep"] or "as"
        content = f"User wants the {thing} {prep} {said}"
        predicate = _key(f"{thing} {want['noun']}")
        return Fact(content, "preference", 0.7, (USER, predicate, said.casefold())), True
    your = _YOUR_RE.match(asked)
    if your:
        thing = your["thing"].strip()
        content = f"User's {thing} is {said}"
        return Fact(content, "semantic", 0.6, (USER, _key(thing), said.casefold())), True
    choice = _CHOICE_RE.match(asked)
    if choice:
        return Fact(f"User prefers {said}", "preference", 0.6), True
    return Fact(f'User\'s answer to "{asked}?": {said}', "semantic", 0.5), False


def _answer_zh(asked: str, said: str) -> tuple[Fact, bool]:
    body = _PARTICLES_ZH_RE.sub("", asked)
    slot = _SLOT_ZH_RE.search(body)
    if slot is None:
        return Fact(f"用户对“{asked}？”的回答：{said}", "semantic", 0.5), False
    # A place answer keeps what the question says around it: 你在哪里工作 → 用户在上海工作.
    filled = body[: slot.start()] + said + body[slot.end() :]
    if _YOU_ZH_RE.search(filled):
        content = _YOU_ZH_RE.sub("用户", filled, count=1)
    elif _SLOT_PLACE_ZH_RE.fullmatch(slot.group()):
        content = "用户说" + filled
    else:
        content = "用户希望" + filled
    kind: Kind = "preference" if re.search(r"希望|想|要|喜欢|偏好|用", body) else "semantic"
    predicate = _key(_YOU_ZH_RE.sub("", body[: slot.start()] + body[slot.end() :])) or None
    triple = (USER, predicate, said) if predicate else None
    return Fact(content, kind, 0.6, triple), True
