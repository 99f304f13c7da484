"""Time expressions in English and Chinese: resolved at write, turned into windows in questions.

One parser, two uses:

* **At write** (:func:`resolve`): a fact saying "next Friday I fly to Berlin" or
  "我老婆下周过生日" is stored with the absolute date beside the words, "next Friday
  (2026-12-04)", "下周（2026-12-07/2026-12-13）", resolved against the turn's
  ``occurred_at`` in the subject's time zone (``pgmem.time_zone(subject)``). A past event
  moves the fact's valid time back to the day it happened; a future one gives the date
  after which an appointment-like fact may expire.
* **In questions** (:func:`period`, :func:`window`): "what did I do last week?",
  "去年五月", "in May 2023", "two days ago" become ``[since, until)`` for ``pgmem.recall``
  and ``pgmem.context``, relative to a ``now`` and the same time zone.

Conventions: a week runs Monday to Sunday (ISO 8601, and 周一…周日 in Chinese);
"next Friday"/"last Friday" is the first Friday after/before today (the reading most
speakers mean when the day is this week or the next), "this Friday" the Friday of this
week, while 下周五/上周五 is the Friday of the next/previous week (Chinese says which week).
A month without a year ("in June", "五月") names no period: a conversation's
"June" can be any year's. All periods are whole local days, half-open ``[start, end)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "MONTHS",
    "WINDOW_AFTER",
    "WINDOW_BEFORE",
    "Mention",
    "Resolved",
    "Span",
    "explicit_period",
    "find",
    "period",
    "resolve",
    "strip",
    "time_zone",
    "widen",
    "window",
]

MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}
_WEEKDAYS = {
    name: number
    for number, name in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}  # fmt: skip
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "1": 0,
                "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}  # fmt: skip

# A conversation mentions an event a little after it happens ("last week I went
# camping"), and a question may date an event by the turn that reports it: a question's
# window opens a week before the named period and closes two weeks after it. Round
# numbers, not fitted to any benchmark's answers (docs/eval.md).
WINDOW_BEFORE = timedelta(days=7)
WINDOW_AFTER = timedelta(days=14)


@dataclass(frozen=True, slots=True)
class Span:
    """Whole local days ``[start, end)``, and how a reader would write them."""

    start: date
    end: date
    unit: str  # day, days, month, year: how the label is written

    @property
    def label(self) -> str:
        """``2026-12-04``, ``2026-11-23/2026-11-29`` (ISO 8601 interval), ``2026-11``, ``2025``."""
        if self.unit == "year":
            return f"{self.start.year:04d}"
        if self.unit == "month":
            return f"{self.start.year:04d}-{self.start.month:02d}"
        last = self.end - timedelta(days=1)
        if last == self.start:
            return self.start.isoformat()
        return f"{self.start.isoformat()}/{last.isoformat()}"

    def bounds(self, tz: tzinfo) -> tuple[datetime, datetime]:
        """The span as aware datetimes: local midnight to local midnight."""
        return (
            datetime.combine(self.start, time(), tzinfo=tz),
            datetime.combine(self.end, time(), tzinfo=tz),
        )


@dataclass(frozen=True, slots=True)
class Mention:
    """A time expression found in a text: where, what it said, the days it names."""

    start: int
    end: int
    text: str
    span: Span
    relative: bool  # True when its meaning depends on today (an explicit date does not)


@dataclass(frozen=True, slots=True)
class Resolved:
    """A fact's text with its relative dates resolved (see :func:`resolve`)."""

    content: str
    mentions: tuple[Mention, ...]
    # The start of the day a past event happened (before occurred_at), else None.
    valid_from: datetime | None
    # The end of the last day a future event names (after occurred_at's day), else None.
    event_end: datetime | None


def time_zone(name: str | None) -> tzinfo:
    """A time zone by IANA name (``Asia/Shanghai``); UTC for None or ``UTC``."""
    if name is None or name.upper() in {"UTC", "Z", "ETC/UTC"}:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r} (an IANA name like 'Europe/Berlin')") from exc


# ------------------------------------------------------------------ calendar


def _day(d: date) -> Span:
    return Span(d, d + timedelta(days=1), "day")


def _week(d: date, weeks: int = 0) -> Span:
    monday = d - timedelta(days=d.weekday()) + timedelta(weeks=weeks)
    return Span(monday, monday + timedelta(days=7), "days")


def _weekend(d: date, weeks: int = 0) -> Span:
    saturday = d - timedelta(days=d.weekday()) + timedelta(weeks=weeks, days=5)
    return Span(saturday, saturday + timedelta(days=2), "days")


def _month(year: int, month: int, months: int = 0) -> Span:
    index = year * 12 + month - 1 + months
    year, month = divmod(index, 12)
    start = date(year, month + 1, 1)
    end = date(year + (month + 1) // 12, (month + 1) % 12 + 1, 1)
    return Span(start, end, "month")


def _year(year: int) -> Span:
    return Span(date(year, 1, 1), date(year + 1, 1, 1), "year")


def _shift(d: date, amount: int, unit: str) -> date:
    """``d`` moved by ``amount`` days, weeks, months or years (a missing day clamps to the
    month's last: one month after 31 January is the last day of February)."""
    if unit == "day":
        return d + timedelta(days=amount)
    if unit == "week":
        return d + timedelta(weeks=amount)
    months = amount * (12 if unit == "year" else 1)
    first = _month(d.year, d.month, months)
    return min(
        first.start.replace(day=1) + timedelta(days=d.day - 1), first.end - timedelta(days=1)
    )


def _zh_number(text: str) -> int | None:
    """Digits or Chinese numerals up to 99 (三, 十二, 二十, 两)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        t = _ZH_DIGITS.get(tens, -1) if tens else 1
        o = _ZH_DIGITS.get(ones, -1) if ones else 0
        return None if t < 0 or o < 0 else t * 10 + o
    return _ZH_DIGITS.get(text) if len(text) == 1 else None


def _en_number(text: str) -> int | None:
    text = text.lower()
    return int(text) if text.isdigit() else _EN_NUMBERS.get(text)


def _unit(word: str) -> str:
    """English or Chinese unit word → day, week, month or year."""
    word = word.lower().rstrip("s")
    return _UNITS.get(word, word)


# --------------------------------------------------------------------- rules

# A rule: a pattern, and what a match names given today (None: not a date after all).
_Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], Span | None], bool]

_MONTH = "(" + "|".join(MONTHS) + ")"
_WEEKDAY = "(" + "|".join(_WEEKDAYS) + ")"
_EN_N = r"(\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_ZH_N = r"([0-9]{1,3}|[一二两三四五六七八九十]{1,3})"
_ZH_WEEK = r"(?:周|星期|礼拜)"
_ZH_WEEK_PREFIX = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_ZH_DAYS = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "昨晚": -1, "今天": 0, "今日": 0,
            "今晚": 0, "今早": 0, "明天": 1, "明日": 1, "明晚": 1, "明早": 1, "后天": 2,
            "大后天": 3}  # fmt: skip
_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "个星期": "week",
          "个礼拜": "week", "个月": "month", "月": "month", "年": "year"}  # fmt: skip
_ZH_YEARS = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}


def _relative_weekday(direction: str, weekday: int, today: date) -> Span:
    if direction == "this":
        return _day(today - timedelta(days=today.weekday() - weekday))
    if direction in {"next", "coming"}:
        return _day(today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1))
    return _day(today - timedelta(days=(today.weekday() - weekday - 1) % 7 + 1))  # last, past


def _relative_period(direction: str, unit: str, today: date) -> Span:
    step = {"this": 0, "next": 1, "coming": 1, "last": -1, "past": -1}[direction]
    if unit == "week":
        return _week(today, step)
    if unit == "weekend":
        return _weekend(today, step)
    if unit == "month":
        return _month(today.year, today.month, step)
    return _year(today.year + step)


def _explicit_day(year: int, month: int, day: int) -> Span | None:
    try:
        return _day(date(year, month, day))
    except ValueError:  # "31 June": no such day
        return None


def _zh_year(text: str, today: date) -> int:
    return int(text[:-1]) if text[:-1].isdigit() else today.year + _ZH_YEARS[text]


def _zh_month_day(m: re.Match[str], today: date) -> Span | None:
    year = _zh_year(m[1], today)
    month = _zh_number(m[2])
    if month is None or not 1 <= month <= 12:
        return None
    if m[3] is None:
        return _month(year, month)
    day = _zh_number(m[3])
    return None if day is None else _explicit_day(year, month, day)


def _ago(m: re.Match[str], today: date, sign: int) -> Span | None:
    amount = _en_number(m[1])
    return None if amount is None else _day(_shift(today, sign * amount, _unit(m[2])))


def _zh_ago(m: re.Match[str], today: date) -> Span | None:
    amount = _zh_number(m[1])
    if amount is None:
        return None
    sign = -1 if m[3].endswith("前") else 1
    return _day(_shift(today, sign * amount, _unit(m[2])))


def _zh_weekday(m: re.Match[str], today: date) -> Span:
    week = _week(today, _ZH_WEEK_PREFIX[m[1] or "这"])
    return _day(week.start + timedelta(days=_ZH_WEEKDAYS[m[2]]))


def _zh_week(m: re.Match[str], today: date) -> Span:
    step = _ZH_WEEK_PREFIX[m[1] or "这"]
    return _weekend(today, step) if m[2] else _week(today, step)


def _last_month_name(m: re.Match[str], today: date) -> Span:
    """ "last May": the latest May before this month; "next May" the first after it."""
    month = MONTHS[m[2].lower()]
    if m[1].lower() in {"last", "past"}:
        year = today.year if month < today.month else today.year - 1
    else:
        year = today.year if month > today.month else today.year + 1
    return _month(year, month)


_I = re.IGNORECASE
_DAY = timedelta(days=1)
_RULES: Sequence[_Rule] = (
    # English, relative to today.
    (
        re.compile(r"\bthe\s+day\s+after\s+tomorrow\b", _I),
        lambda m, t: _day(t + timedelta(2)),
        True,
    ),
    (
        re.compile(r"\bthe\s+day\s+before\s+yesterday\b", _I),
        lambda m, t: _day(t - timedelta(2)),
        True,
    ),
    (
        re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", _I),
        lambda m, t: _day(t),
        True,
    ),
    (re.compile(r"\b(?:yesterday|last\s+night)\b", _I), lambda m, t: _day(t - timedelta(1)), True),
    (re.compile(r"\btomorrow\b", _I), lambda m, t: _day(t + timedelta(1)), True),
    (
        re.compile(rf"\b(next|last|this|coming|past)\s+{_WEEKDAY}\b", _I),
        lambda m, t: _relative_weekday(m[1].lower(), _WEEKDAYS[m[2].lower()], t),
        True,
    ),
    (
        re.compile(r"\b(next|last|this|coming|past)\s+(week|weekend|month|year)\b", _I),
        lambda m, t: _relative_period(m[1].lower(), m[2].lower(), t),
        True,
    ),
    (re.compile(rf"\b(last|past|next)\s+{_MONTH}\b(?!,?\s+\d)", _I), _last_month_name, True),
    (
        re.compile(rf"\bin\s+{_EN_N}\s+(day|week|month|year)s?\b", _I),
        lambda m, t: _ago(m, t, 1),
        True,
    ),
    (
        re.compile(rf"\b{_EN_N}\s+(day|week|month|year)s?\s+ago\b", _I),
        lambda m, t: _ago(m, t, -1),
        True,
    ),
    (
        re.compile(rf"\b{_EN_N}\s+(day|week|month|year)s?\s+from\s+now\b", _I),
        lambda m, t: _ago(m, t, 1),
        True,
    ),
    # English, explicit ("on 3 June, 2023", "on May 3, 2023", "in December 2023", "in 2022").
    (
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH},?\s+(\d{{4}})\b", _I),
        lambda m, t: _explicit_day(int(m[3]), MONTHS[m[2].lower()], int(m[1])),
        False,
    ),
    (
        re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", _I),
        lambda m, t: _explicit_day(int(m[3]), MONTHS[m[1].lower()], int(m[2])),
        False,
    ),
    (
        re.compile(rf"\b{_MONTH},?\s+(\d{{4}})\b", _I),
        lambda m, t: _month(int(m[2]), MONTHS[m[1].lower()]),
        False,
    ),
    (re.compile(r"\b(?:in|during|of)\s+(\d{4})\b", _I), lambda m, t: _year(int(m[1])), False),
    # Chinese. Longest first is the scanner's job (see find), not the order here.
    (
        re.compile("|".join(sorted(_ZH_DAYS, key=len, reverse=True))),
        lambda m, t: _day(t + timedelta(days=_ZH_DAYS[m[0]])),
        True,
    ),
    (
        re.compile(rf"(前年|去年|今年|明年|后年)\s*{_ZH_N}月(?:份)?(?:{_ZH_N}[日号])?"),
        _zh_month_day,
        True,
    ),
    (re.compile(rf"(\d{{4}}年)\s*{_ZH_N}月(?:份)?(?:{_ZH_N}[日号])?"), _zh_month_day, False),
    (
        re.compile("前年|去年|今年|明年|后年"),
        lambda m, t: _year(t.year + _ZH_YEARS[m[0]]),
        True,
    ),
    (
        re.compile(r"(\d{4})年(?![0-9一二两三四五六七八九十]{1,3}月)"),
        lambda m, t: _year(int(m[1])),
        False,
    ),
    # 每周一 is every Monday, not this one.
    (
        re.compile(rf"(?<!每)(上上|下下|上|下|这|本)?个?{_ZH_WEEK}([一二三四五六日天1-7])"),
        _zh_weekday,
        True,
    ),
    (re.compile(rf"(上上|下下|上|下|这|本)个?{_ZH_WEEK}(末)?"), _zh_week, True),
    (re.compile("(?<!每)周末"), lambda m, t: _weekend(t), True),
    (
        re.compile("(上上|下下|上|下|这|本)个?月(?!份?[0-9一二两三四五六七八九十]{1,3}[日号])"),
        lambda m, t: _month(t.year, t.month, _ZH_WEEK_PREFIX[m[1]]),
        True,
    ),
    (
        re.compile(rf"{_ZH_N}\s*(天|日|周|个星期|个礼拜|星期|个月|年)(以前|之前|前|以后|之后|后)"),
        _zh_ago,
        True,
    ),
)


def find(text: str, today: date) -> list[Mention]:
    """The time expressions of ``text``, left to right; where two overlap, the longer wins
    (下周三 over 下周, "the day after tomorrow" over "tomorrow"), and a date that does not
    exist ("31 June, 2023") names nothing rather than its month."""
    found: list[tuple[int, int, str, Span | None, bool]] = []
    for pattern, name, relative in _RULES:
        for m in pattern.finditer(text):
            found.append((m.start(), m.end(), m[0], name(m, today), relative))
    found.sort(key=lambda x: (x[0] - x[1], x[0]))
    kept: list[tuple[int, int, str, Span | None, bool]] = []
    for candidate in found:
        if all(candidate[1] <= k[0] or candidate[0] >= k[1] for k in kept):
            kept.append(candidate)
    return [
        Mention(start, end, words, span, relative)
        for start, end, words, span, relative in sorted(kept)
        if span is not None
    ]


# --------------------------------------------------------------------- write

_CJK = re.compile("[\u3400-\u9fff]")
# Already resolved: "next Friday (2026-12-04)" written back by an LLM or by us before.
_LABELLED = re.compile(r"\s*[（(]\d{4}(?:-\d{2}){0,2}")


def resolve(content: str, occurred_at: datetime, tz: tzinfo) -> Resolved:
    """``content`` with each relative date followed by its absolute date, as of
    ``occurred_at`` in ``tz``: "next Friday (2026-12-04)", "明天（2026-12-02）".

    ``valid_from``: when every date it names lies before the day of ``occurred_at``,
    the start of the earliest (the fact became true then). ``event_end``: when one lies
    after that day, the end of the latest (an appointment is over by then)."""
    local = occurred_at.astimezone(tz)
    today = local.date()
    mentions = [m for m in find(content, today) if m.relative]
    if not mentions:
        return Resolved(content, (), None, None)
    parts: list[str] = []
    position = 0
    for m in mentions:
        parts.append(content[position : m.end])
        if not _LABELLED.match(content, m.end):
            wide = _CJK.search(m.text) is not None
            parts.append(f"（{m.span.label}）" if wide else f" ({m.span.label})")
        position = m.end
    parts.append(content[position:])
    valid_from = event_end = None
    if all(m.span.end <= today for m in mentions):
        valid_from = min(m.span.start for m in mentions)
    latest = max(m.span.end for m in mentions)
    if latest > today + timedelta(days=1):
        event_end = datetime.combine(latest, time(), tzinfo=tz)
    return Resolved(
        "".join(parts),
        tuple(mentions),
        datetime.combine(valid_from, time(), tzinfo=tz) if valid_from else None,
        event_end,
    )


def strip(text: str, today: date) -> str:
    """``text`` without its relative time expressions ("Lisbon 3 days ago" → "Lisbon"):
    for a triple's parts, whose date the content and the valid time carry instead."""
    kept, position = [], 0
    for m in find(text, today):
        if m.relative:
            kept.append(text[position : m.start])
            position = m.end
    kept.append(text[position:])
    return re.sub(r"\s+", " ", "".join(kept)).strip(" ,;")


# ------------------------------------------------------------------- queries


def period(question: str, now: datetime, tz: tzinfo = UTC) -> tuple[datetime, datetime] | None:
    """The period the first time expression of ``question`` names, as ``[start, end)``
    in ``tz`` (relative ones as of ``now``), or None when it names none. A relative
    mention of the day it is asked (today, tonight, 今天) names no period.

    >>> [d.date().isoformat() for d in period("我上周去了哪儿?", datetime(2026, 12, 1, tzinfo=UTC))]
    ['2026-11-23', '2026-11-30']
    """
    today = now.astimezone(tz).date()
    # "今天/today/tonight" in a question is the moment it is asked ("我今天又想吃冰淇淋了，
    # 上次吃的是什么口味？"), not a range to search: recency already favours today.
    mentions = [
        m
        for m in find(question, today)
        if not (m.relative and m.span.start == today and m.span.end == today + timedelta(days=1))
    ]
    return mentions[0].span.bounds(tz) if mentions else None


def explicit_period(question: str, tz: tzinfo = UTC) -> tuple[datetime, datetime] | None:
    """The period the first explicit date of ``question`` names ("in July 2023", "on 3
    June, 2023", "2023年5月"); relative times ("last week") name none.

    >>> [d.date().isoformat() for d in explicit_period("What did she do in July 2023?")]
    ['2023-07-01', '2023-08-01']
    """
    # today only matters to relative mentions, which are dropped.
    mentions = [m for m in find(question, date(2000, 1, 1)) if not m.relative]
    return mentions[0].span.bounds(tz) if mentions else None


def widen(bounds: tuple[datetime, datetime] | None) -> tuple[datetime, datetime] | None:
    """A period as a recall window: from WINDOW_BEFORE before it to WINDOW_AFTER after."""
    if bounds is None:
        return None
    return bounds[0] - WINDOW_BEFORE, bounds[1] + WINDOW_AFTER


def window(question: str, now: datetime, tz: tzinfo = UTC) -> tuple[datetime, datetime] | None:
    """``pgmem.recall``'s ``p_since``/``p_until`` for a question: its period, widened."""
    return widen(period(question, now, tz))
